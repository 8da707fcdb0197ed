//! Units whose arguments map the checkout away: with
//! `-ffile-prefix-map=OLD=NEW` (or `-fdebug-prefix-map` and
//! `-fmacro-prefix-map` with the same `OLD`), where `OLD` holds the working
//! directory, clang's object does not name `OLD` — so a unit compiled in
//! another checkout of the same sources (another machine, another
//! directory) may use the result. This module maps `OLD` (the *base*) out
//! of what the unit cache keys and stores, and back in on a hit:
//!
//! - in the key, `OLD` in the arguments and the working directory becomes
//!   a placeholder byte (where the working directory lies in the checkout
//!   still counts);
//! - the manifest records files inside the checkout relative to the
//!   working directory (which `getcwd` gives without symlinks, so `..`
//!   from it is lexical);
//! - the stored dependency file and diagnostics hold the placeholder, and
//!   a hit puts the current checkout back;
//! - an object that names `OLD` anyway is not recorded (the unit cache
//!   then stays per checkout for that unit).

use super::CachedResult;

/// What stands for the checkout in keys and stored text. Text that holds
/// it already is not mapped (nothing could tell the two apart).
const PLACEHOLDER: char = '\u{1}';

/// The checkout directory the arguments map away, if one holds `cwd`.
pub fn mapped_base(args: &[String], cwd: &str) -> Option<String> {
    let olds = |flag: &str| -> Vec<&str> {
        args.iter()
            .filter_map(|a| a.strip_prefix(flag))
            .filter_map(|m| m.split_once('=').map(|(old, _)| old))
            .collect()
    };
    let file = olds("-ffile-prefix-map=");
    let debug = olds("-fdebug-prefix-map=");
    let mac = olds("-fmacro-prefix-map=");
    let both = debug.iter().filter(|d| mac.contains(d)).copied();
    file.into_iter()
        .chain(both)
        .map(|old| old.trim_end_matches('/'))
        .filter(|old| old.starts_with('/') && !old.is_empty() && !old.contains(PLACEHOLDER))
        .filter(|old| inside(cwd, old))
        // The longest: the mapping that decides what the object names.
        .max_by_key(|old| old.len())
        .map(str::to_string)
}

/// Whether `path` is `base` or inside it.
fn inside(path: &str, base: &str) -> bool {
    path.strip_prefix(base)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// `text` with each occurrence of `base` that ends a path component
/// replaced by the placeholder.
pub fn map(text: &str, base: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(base) {
        let after = &rest[at + base.len()..];
        out.push_str(&rest[..at]);
        if after.is_empty() || after.starts_with(['/', '=', ':', ' ', '\n', '\'', '"']) {
            out.push(PLACEHOLDER);
        } else {
            out.push_str(base);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// [`map`] of bytes; `None` when they hold the placeholder already, are
/// not UTF-8, or name `base` where it does not end a component (another
/// checkout would see this one's name).
pub fn map_bytes(bytes: &[u8], base: &str) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(bytes).ok()?;
    if text.contains(PLACEHOLDER) {
        return None;
    }
    let mapped = map(text, base);
    (!mapped.contains(base)).then(|| mapped.into_bytes())
}

fn unmap_bytes(bytes: Vec<u8>, base: &str) -> Vec<u8> {
    match String::from_utf8(bytes) {
        Ok(text) => text.replace(PLACEHOLDER, base).into_bytes(),
        Err(e) => e.into_bytes(),
    }
}

/// A stored result with the current checkout put back.
pub fn unmap_result(mut r: CachedResult, base: Option<&str>) -> CachedResult {
    if let Some(base) = base {
        r.stderr = unmap_bytes(std::mem::take(&mut r.stderr), base);
        r.dep_file = r.dep_file.map(|d| unmap_bytes(d, base));
    }
    r
}

/// `path` relative to `cwd` when it is an absolute path inside `base`
/// (which holds `cwd`); otherwise as it is.
pub fn relative(path: &str, cwd: &str, base: &str) -> String {
    if !inside(path, base) {
        return path.to_string();
    }
    let target: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let from: Vec<&str> = cwd.split('/').filter(|c| !c.is_empty()).collect();
    let common = target.iter().zip(&from).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&target[common..]);
    if parts.is_empty() {
        ".".to_string()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_base_is_a_mapped_directory_that_holds_the_working_directory() {
        let cwd = "/src/a/build";
        assert_eq!(
            mapped_base(&args(&["-ffile-prefix-map=/src/a=.", "-c", "x.c"]), cwd),
            Some("/src/a".into())
        );
        assert_eq!(
            mapped_base(
                &args(&[
                    "-fdebug-prefix-map=/src/a/=x",
                    "-fmacro-prefix-map=/src/a/=x"
                ]),
                cwd
            ),
            Some("/src/a".into())
        );
        // Only one of the two, another directory, a prefix of a name.
        assert_eq!(
            mapped_base(&args(&["-fdebug-prefix-map=/src/a=."]), cwd),
            None
        );
        assert_eq!(
            mapped_base(&args(&["-ffile-prefix-map=/other=."]), cwd),
            None
        );
        assert_eq!(
            mapped_base(&args(&["-ffile-prefix-map=/src/a/bu=."]), cwd),
            None
        );
        assert_eq!(mapped_base(&args(&["-ffile-prefix-map=/=."]), cwd), None);
    }

    #[test]
    fn mapping_replaces_whole_components_and_round_trips() {
        let b = "/src/a";
        assert_eq!(map("-I/src/a/include", b), "-I\u{1}/include");
        assert_eq!(
            map("-ffile-prefix-map=/src/a=.", b),
            "-ffile-prefix-map=\u{1}=."
        );
        assert_eq!(map("/src/ab/x.c", b), "/src/ab/x.c");
        let dep = b"x.o: /src/a/x.c /src/a/inc/x.h /usr/include/stdio.h\n";
        let mapped = map_bytes(dep, b).unwrap();
        assert!(!String::from_utf8_lossy(&mapped).contains("/src/a/"));
        let r = CachedResult {
            compile_ms: 0,
            object: Vec::new(),
            dep_file: Some(mapped.clone()),
            stderr: mapped,
        };
        let back = unmap_result(r, Some("/home/b/co"));
        assert_eq!(
            back.dep_file.unwrap(),
            b"x.o: /home/b/co/x.c /home/b/co/inc/x.h /usr/include/stdio.h\n"
        );
        assert!(map_bytes(b"\x01", b).is_none());
        assert!(map_bytes(b"see /src/a, twice", b).is_none());
    }

    #[test]
    fn paths_inside_the_checkout_become_relative_to_the_working_directory() {
        let (b, cwd) = ("/src/a", "/src/a/build");
        assert_eq!(relative("/src/a/x.c", cwd, b), "../x.c");
        assert_eq!(relative("/src/a/build/g.h", cwd, b), "g.h");
        assert_eq!(relative("/src/a/build", cwd, b), ".");
        assert_eq!(
            relative("/usr/include/stdio.h", cwd, b),
            "/usr/include/stdio.h"
        );
        assert_eq!(relative("inc/x.h", cwd, b), "inc/x.h");
        assert_eq!(relative("", cwd, b), "");
    }
}
