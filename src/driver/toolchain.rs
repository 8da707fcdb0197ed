//! Finding the real compiler: `clang-19`/`clang++-19` on PATH by default,
//! overridden by the configuration (`clang`, `clangxx` keys and the
//! `REPOCC_CLANG`/`REPOCC_CLANGXX` variables) or by the launcher form
//! (`repocc clang-19 -c x.c`). repocc never picks itself: a candidate that
//! resolves to the running executable (symlinks included) is skipped, as
//! ccache does, and an environment guard stops a loop that slips through.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Set in the environment of every compiler repocc runs; finding it set at
/// start-up means the "compiler" ran repocc again.
pub use crate::config::RECURSION_GUARD;

/// Which driver the user asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriverKind {
    C,
    Cxx,
}

impl DriverKind {
    /// `repocc++`, `c++`, `clang++`...: the C++ driver.
    pub fn from_argv0(argv0: &str) -> DriverKind {
        let base = Path::new(argv0)
            .file_name()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if base.contains("++") {
            DriverKind::Cxx
        } else {
            DriverKind::C
        }
    }
}

/// True if `path` is this very executable (after resolving symlinks).
pub fn is_self(path: &Path) -> bool {
    let (Ok(me), Ok(other)) = (
        std::env::current_exe().and_then(|p| p.canonicalize()),
        path.canonicalize(),
    ) else {
        return false;
    };
    if me == other {
        return true;
    }
    // A hard link or copy of repocc under another name.
    same_file(&me, &other)
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

/// Resolves `name` (a path, or a program name searched on PATH) to a
/// compiler that is not repocc itself.
pub fn resolve_compiler(name: &str) -> Result<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        if !p.exists() {
            bail!("compiler {name} does not exist");
        }
        if is_self(&p) {
            bail!("compiler {name} is repocc itself");
        }
        return Ok(p);
    }
    let candidates =
        which::which_all(name).with_context(|| format!("cannot find {name} on PATH"))?;
    for c in candidates {
        if !is_self(&c) {
            return Ok(c);
        }
    }
    bail!("cannot find {name} on PATH (only repocc itself is there)")
}

/// Whether a launcher argument (`repocc clang-19 ...`) names a compiler
/// repocc can drive.
pub fn is_clang_name(name: &str) -> bool {
    let base = Path::new(name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = base.strip_suffix("++").unwrap_or(&base).to_string();
    let base = base.replace("++-", "-");
    base == "clang" || base == "clang-19" || base.ends_with("-clang") || base.ends_with("-clang-19")
}

/// Whether a launcher argument names some other compiler repocc only runs.
pub fn is_other_compiler_name(name: &str) -> bool {
    let base = Path::new(name)
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    ["cc", "c++", "gcc", "g++", "clang", "clang++"]
        .iter()
        .any(|c| {
            base == *c || base.starts_with(&format!("{c}-")) || base.ends_with(&format!("-{c}"))
        })
        || base.starts_with("clang")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_kind_from_name() {
        assert_eq!(DriverKind::from_argv0("/usr/bin/repocc++"), DriverKind::Cxx);
        assert_eq!(DriverKind::from_argv0("repocc"), DriverKind::C);
        assert_eq!(DriverKind::from_argv0("c++"), DriverKind::Cxx);
    }

    #[test]
    fn clang_names() {
        assert!(is_clang_name("clang-19"));
        assert!(is_clang_name("/usr/bin/clang++-19"));
        assert!(is_clang_name("clang++"));
        assert!(is_clang_name("x86_64-linux-gnu-clang-19"));
        assert!(!is_clang_name("gcc"));
        assert!(!is_clang_name("clang-14"));
        assert!(is_other_compiler_name("gcc-12"));
        assert!(is_other_compiler_name("clang-14"));
        assert!(!is_other_compiler_name("a.c"));
    }

    #[test]
    fn never_resolves_to_itself() {
        let me = std::env::current_exe().unwrap();
        assert!(is_self(&me));
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("clang-19");
        std::os::unix::fs::symlink(&me, &link).unwrap();
        assert!(is_self(&link));
        assert!(resolve_compiler(link.to_str().unwrap()).is_err());
    }
}
