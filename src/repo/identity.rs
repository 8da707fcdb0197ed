//! The identity of an executable: a digest of its bytes, mixed into every
//! repository key so that a different repocc build (or a different clang)
//! never reuses what another one stored — whether or not a commit
//! remembered to bump a format version.
//!
//! Hashing a 90 MB binary costs tens of milliseconds, so (as sccache does
//! for compilers) the digest is cached in the repository,
//! `<dir>/identity/<digest of the path>`, and reused while the file's
//! device, inode, size, modification and change times are those recorded.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::fsx::{self, RepoDir};

const CACHE_DIR: &str = "identity";

/// What a cached digest was computed from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    path: String,
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

#[derive(Serialize, Deserialize)]
struct Cached {
    stamp: Stamp,
    digest: String,
}

fn stamp(path: &Path, m: &std::fs::Metadata) -> Stamp {
    Stamp {
        path: path.display().to_string(),
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    }
}

/// The digest (hex) of the executable at `path`, cached under `repo` when
/// one is given.
pub fn executable_digest(path: &Path, repo: Option<&Path>) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    let stamp = stamp(path, &meta);
    let name = blake3::hash(stamp.path.as_bytes()).to_hex()[..32].to_string();
    let dir = repo.and_then(|r| RepoDir::open_path(r, &[CACHE_DIR], true).ok().flatten());
    if let Some(dir) = &dir {
        if let Ok((bytes, _)) = dir.read_regular(&name, 1 << 16) {
            if let Ok(c) = serde_json::from_slice::<Cached>(&bytes) {
                if c.stamp == stamp {
                    return Ok(c.digest);
                }
            }
        }
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update_reader(std::io::BufReader::with_capacity(1 << 20, &file))?;
    let digest = hasher.finalize().to_hex().to_string();
    // A file that changed while it was read gets no cache entry.
    if let (Some(dir), Ok(after)) = (&dir, std::fs::metadata(path)) {
        if crate::repo::identity::stamp(path, &after) == stamp {
            let cached = Cached {
                stamp,
                digest: digest.clone(),
            };
            if let Ok(bytes) = serde_json::to_vec(&cached) {
                let _ = dir.write_atomic(&name, &bytes, fsx::file_mode());
            }
        }
    }
    Ok(digest)
}

/// The identity of the running repocc: its version and the digest of its
/// executable (the version alone when the executable cannot be read).
pub fn repocc_identity(repo: Option<&Path>) -> String {
    let digest = std::env::current_exe()
        .and_then(|exe| executable_digest(&exe, repo))
        .unwrap_or_else(|_| "unreadable".into());
    format!("{} {digest}", env!("CARGO_PKG_VERSION"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_follows_the_bytes_and_the_cache_follows_the_file() {
        let d = tempfile::tempdir().unwrap();
        let repo = d.path().join("repo");
        let exe = d.path().join("tool");
        std::fs::write(&exe, b"first version").unwrap();
        let a = executable_digest(&exe, Some(&repo)).unwrap();
        assert_eq!(a, blake3::hash(b"first version").to_hex().to_string());
        assert_eq!(executable_digest(&exe, Some(&repo)).unwrap(), a, "cached");
        // One byte appended: a new size, a new digest.
        std::fs::write(&exe, b"first version!").unwrap();
        let b = executable_digest(&exe, Some(&repo)).unwrap();
        assert_ne!(a, b);
        assert_eq!(b, executable_digest(&exe, None).unwrap());
    }
}
