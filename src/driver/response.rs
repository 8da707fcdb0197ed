//! `@file` response files, expanded the way clang does on Linux (GNU
//! tokenization: whitespace separates, `'`/`"` quote, `\` escapes; nested
//! response files are expanded too). A file that cannot be read is left as
//! the literal argument, so clang reports it; a recursive one, or one that
//! expands without bound, hands the command line to clang (which reports
//! it at once).

use std::path::{Path, PathBuf};

use crate::repo::fsx::{self, ReadError};
use crate::repo::stats::{Category, Reason};

const MAX_DEPTH: usize = 16;
/// Largest response file read (clang has no limit; repocc hands bigger
/// ones to clang).
const MAX_FILE_BYTES: u64 = 64 << 20;
/// Most arguments an expansion may produce before repocc hands the
/// command line to clang (a response file that names another several
/// times grows exponentially).
const MAX_ARGS: usize = 1 << 20;

/// Expands response files. A recursive one (a file that includes itself,
/// directly or not), or one that expands past the bounds above, is an
/// error with the reason: clang must see the original command line and
/// report it in its words.
pub fn expand(args: &[String]) -> Result<Vec<String>, Reason> {
    let mut out = Vec::with_capacity(args.len());
    let mut chain = Vec::new();
    expand_into(args, &mut out, &mut chain)?;
    Ok(out)
}

fn expand_into(
    args: &[String],
    out: &mut Vec<String>,
    chain: &mut Vec<PathBuf>,
) -> Result<(), Reason> {
    for a in args {
        if out.len() > MAX_ARGS {
            return Err(Reason::new(
                Category::ResponseFile,
                format!("more than {MAX_ARGS} arguments after expansion"),
            ));
        }
        let Some(path) = a.strip_prefix('@').filter(|p| !p.is_empty()) else {
            out.push(a.clone());
            continue;
        };
        let path = Path::new(path);
        let canonical = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if chain.contains(&canonical) {
            return Err(Reason::new(
                Category::ResponseFile,
                format!("recursive expansion of {}", path.display()),
            ));
        }
        if chain.len() >= MAX_DEPTH {
            return Err(Reason::new(
                Category::ResponseFile,
                format!("response files nested deeper than {MAX_DEPTH}"),
            ));
        }
        match fsx::read_bounded(path, MAX_FILE_BYTES) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
                chain.push(canonical);
                expand_into(&tokenize_gnu(&text), out, chain)?;
                chain.pop();
            }
            Err(ReadError::TooLarge(n)) => {
                return Err(Reason::new(
                    Category::ResponseFile,
                    format!("{} is too large ({n} bytes)", path.display()),
                ))
            }
            // A file that cannot be read stays the literal argument, so
            // that clang reports it.
            Err(_) => out.push(a.clone()),
        }
    }
    Ok(())
}

/// GNU-style command-line tokenization (llvm::cl::TokenizeGNUCommandLine).
pub fn tokenize_gnu(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
                in_token = true;
            }
            '\'' | '"' => {
                in_token = true;
                while let Some(n) = chars.next() {
                    if n == c {
                        break;
                    }
                    if n == '\\' && c == '"' {
                        if let Some(e) = chars.next() {
                            cur.push(e);
                        }
                        continue;
                    }
                    cur.push(n);
                }
            }
            c if c.is_whitespace() => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            c => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if in_token {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_quotes_and_escapes() {
        assert_eq!(
            tokenize_gnu("-DA=\"x y\" 'b c' d\\ e\n-O2"),
            vec!["-DA=x y", "b c", "d e", "-O2"]
        );
        assert_eq!(tokenize_gnu("  "), Vec::<String>::new());
        assert_eq!(tokenize_gnu("''"), vec![""]);
    }

    #[test]
    fn expands_nested_files_and_keeps_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("inner.rsp");
        std::fs::write(&inner, "-DINNER").unwrap();
        let outer = dir.path().join("outer.rsp");
        std::fs::write(&outer, format!("-c @{}", inner.display())).unwrap();
        let args = vec![
            format!("@{}", outer.display()),
            "@/no/such/file".to_string(),
        ];
        assert_eq!(
            expand(&args).unwrap(),
            vec!["-c", "-DINNER", "@/no/such/file"]
        );
    }

    #[test]
    fn recursive_and_exploding_files_are_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, format!("@{0} @{0} @{0}", a.display())).unwrap();
        let t = std::time::Instant::now();
        let err = expand(&[format!("@{}", a.display())]).unwrap_err();
        assert!(err.detail.contains("recursive"), "{err}");
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        // b -> c -> b, and a file naming a chain of others 4 times each.
        let (b, c) = (dir.path().join("b"), dir.path().join("c"));
        std::fs::write(&b, format!("-O2 @{}", c.display())).unwrap();
        std::fs::write(&c, format!("@{}", b.display())).unwrap();
        assert!(expand(&[format!("@{}", b.display())]).is_err());
        let mut prev = dir.path().join("leaf");
        std::fs::write(&prev, "-DX ".repeat(100)).unwrap();
        for n in 0..12 {
            let next = dir.path().join(format!("level{n}"));
            std::fs::write(&next, format!("@{0} @{0} @{0} @{0}", prev.display())).unwrap();
            prev = next;
        }
        let err = expand(&[format!("@{}", prev.display())]).unwrap_err();
        assert!(err.detail.contains("arguments"), "{err}");
        // The same file twice side by side is not recursion.
        let ok = dir.path().join("ok");
        std::fs::write(&ok, "-DOK").unwrap();
        let two = format!("@{}", ok.display());
        assert_eq!(expand(&[two.clone(), two]).unwrap(), vec!["-DOK", "-DOK"]);
    }
}
