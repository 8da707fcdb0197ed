//! `@file` response files, expanded the way clang does on Linux (GNU
//! tokenization: whitespace separates, `'`/`"` quote, `\` escapes; nested
//! response files are expanded too). A file that cannot be read is left as
//! the literal argument, so clang reports it.

use std::path::Path;

const MAX_DEPTH: usize = 16;

pub fn expand(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    expand_into(args, &mut out, 0);
    out
}

fn expand_into(args: &[String], out: &mut Vec<String>, depth: usize) {
    for a in args {
        match a.strip_prefix('@') {
            Some(path) if depth < MAX_DEPTH && !path.is_empty() => {
                match std::fs::read(Path::new(path)) {
                    Ok(bytes) => {
                        let text = String::from_utf8_lossy(&bytes);
                        expand_into(&tokenize_gnu(&text), out, depth + 1);
                    }
                    Err(_) => out.push(a.clone()),
                }
            }
            _ => out.push(a.clone()),
        }
    }
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
        assert_eq!(expand(&args), vec!["-c", "-DINNER", "@/no/such/file"]);
    }
}
