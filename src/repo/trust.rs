//! Who may write the repository. Fragments become code in the user's
//! programs and an entry's checksum has no secret, so a repository that
//! another user can write is one they can put code into. As git does with
//! `safe.directory`, repocc uses a repository only if the directory, and
//! each parent up to the first one owned by root, is owned by the user and
//! not writable by group or others — unless the configuration names it as
//! shared on purpose (`shared_dir`).
//!
//! A repository that does not exist yet is judged by its nearest existing
//! parent: repocc creates the rest with mode 0700.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Write permission for group or others.
const WRITABLE_BY_OTHERS: u32 = 0o022;
const STICKY: u32 = 0o1000;

/// Why a repository is not trusted (one line for the warning).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted(pub String);

impl std::fmt::Display for Untrusted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks `repo` for the user `uid`. `shared` is the configured shared
/// repository, trusted as it is.
pub fn check(repo: &Path, uid: u32, shared: Option<&Path>) -> Result<(), Untrusted> {
    if let Some(shared) = shared {
        if same_directory(repo, shared) {
            return Ok(());
        }
    }
    // The nearest existing directory, with symlinks resolved: the real
    // directories are what others could write.
    let mut existing = repo.to_path_buf();
    let mut repo_exists = true;
    let canonical = loop {
        match existing.canonicalize() {
            Ok(c) => break c,
            Err(_) => {
                repo_exists = false;
                match existing.parent() {
                    Some(p) if !p.as_os_str().is_empty() => existing = p.to_path_buf(),
                    _ => break std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/")),
                }
            }
        }
    };
    let mut dir: Option<&Path> = Some(&canonical);
    // The repository itself must be the user's, whoever owns it; its
    // parents are checked up to the first one owned by root.
    let mut is_repository = repo_exists;
    while let Some(d) = dir {
        let m = std::fs::metadata(d)
            .map_err(|e| Untrusted(format!("cannot inspect {}: {e}", d.display())))?;
        let mode = m.mode();
        if m.uid() == 0 && !is_repository {
            // The first root-owned parent ends the walk; it must not let
            // others replace what is in it (a sticky bit, as /tmp's, holds).
            if mode & 0o002 != 0 && mode & STICKY == 0 {
                return Err(Untrusted(format!("{} is writable by others", d.display())));
            }
            return Ok(());
        }
        if m.uid() != uid {
            return Err(Untrusted(format!(
                "{} is owned by user {} (not {uid})",
                d.display(),
                m.uid()
            )));
        }
        let sticky_parent = mode & STICKY != 0 && !is_repository;
        if mode & WRITABLE_BY_OTHERS != 0 && !sticky_parent {
            return Err(Untrusted(format!(
                "{} is writable by {} (mode {:o})",
                d.display(),
                if mode & 0o002 != 0 {
                    "others"
                } else {
                    "its group"
                },
                mode & 0o7777
            )));
        }
        is_repository = false;
        dir = d.parent();
    }
    Ok(())
}

fn same_directory(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

/// The home directory of `uid` from `/etc/passwd` (when `HOME` is unset).
pub fn home_of(uid: u32) -> Option<PathBuf> {
    let bytes = super::fsx::read_bounded(Path::new("/etc/passwd"), 16 << 20).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    text.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 7 && f[2].parse::<u32>().ok() == Some(uid) && f[5].starts_with('/'))
            .then(|| PathBuf::from(f[5]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn writable_by_others_is_untrusted_unless_shared() {
        let d = tempfile::tempdir().unwrap();
        let uid = crate::repo::fsx::current_uid();
        let repo = d.path().join("repo");
        std::fs::create_dir(&repo).unwrap();
        chmod(&repo, 0o700);
        chmod(d.path(), 0o700);
        assert_eq!(check(&repo, uid, None), Ok(()));
        assert_eq!(check(&repo.join("not/yet"), uid, None), Ok(()));
        chmod(&repo, 0o777);
        let err = check(&repo, uid, None).unwrap_err();
        assert!(err.0.contains("writable by others"), "{err}");
        assert_eq!(check(&repo, uid, Some(&repo)), Ok(()));
        chmod(&repo, 0o770);
        assert!(check(&repo, uid, None).unwrap_err().0.contains("group"));
        chmod(&repo, 0o700);
        // A parent others can write is as bad as the directory itself.
        chmod(d.path(), 0o777);
        assert!(check(&repo, uid, None).is_err());
        chmod(d.path(), 0o700);
    }

    #[test]
    fn owned_by_another_user_is_untrusted() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let uid = crate::repo::fsx::current_uid();
        let err = check(d.path(), uid.wrapping_add(1), None).unwrap_err();
        assert!(err.0.contains("owned by user"), "{err}");
    }

    #[test]
    fn home_comes_from_passwd() {
        assert_eq!(home_of(0), Some(PathBuf::from("/root")));
    }
}
