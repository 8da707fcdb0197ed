//! The identity of an executable: a digest of its bytes, mixed into every
//! repository key so that a different repocc build (or a different clang)
//! never reuses what another one stored — whether or not a commit
//! remembered to bump a format version.
//!
//! Hashing a 90 MB binary costs tens of milliseconds, so (as sccache does
//! for compilers) the digest is cached in the repository,
//! `<dir>/identity/<digest of the path>`, and reused while the file's
//! device, inode, size, modification and change times are those recorded.
//!
//! repocc itself needs no hashing: build.rs links it with
//! `--build-id=sha1`, the linker's digest of the whole output, which the
//! running process reads from its own ELF notes in three small reads, and
//! its size joins it (bytes appended after the link change the identity
//! too; a byte patched in place after the link does not — every real
//! rebuild changes the build ID). Hashing its 145 MB cost about 110 ms of
//! CPU in the first compile(s) of every new repository — with `make -j2`,
//! twice.

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

/// The identity of the running repocc: its version and its build ID, or
/// the digest of its executable where it has none (the version alone when
/// the executable cannot be read).
pub fn repocc_identity(repo: Option<&Path>) -> String {
    // `/proc/self/exe` is the file this process runs, even when the path
    // it was started from has been replaced since.
    let running = std::fs::File::open("/proc/self/exe").ok();
    if let Some(running) = &running {
        if let (Some(id), Ok(meta)) = (gnu_build_id(running), running.metadata()) {
            return format!(
                "{} build-id {id} size {}",
                env!("CARGO_PKG_VERSION"),
                meta.len()
            );
        }
    }
    let digest = std::env::current_exe()
        .and_then(|exe| executable_digest(&exe, repo))
        .unwrap_or_else(|_| "unreadable".into());
    format!("{} {digest}", env!("CARGO_PKG_VERSION"))
}

/// Largest note segment read: build IDs sit in a few dozen bytes of notes.
const MAX_NOTES: u64 = 64 << 10;

/// The GNU build ID (hex) of a 64-bit little-endian ELF file, from its
/// `PT_NOTE` segments; `None` for anything else, or an ID shorter than 16
/// bytes (too short to stand for the file's contents).
fn gnu_build_id(file: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let u16_at = |b: &[u8], o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |b: &[u8], o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |b: &[u8], o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let mut header = [0u8; 64];
    file.read_exact_at(&mut header, 0).ok()?;
    // ELF magic, ELFCLASS64, ELFDATA2LSB.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let (phoff, phentsize, phnum) = (
        u64_at(&header, 32)?,
        u16_at(&header, 54)? as usize,
        u16_at(&header, 56)? as usize,
    );
    if phentsize != 56 || phnum == 0 || phnum > 256 {
        return None;
    }
    let mut table = vec![0u8; phentsize * phnum];
    file.read_exact_at(&mut table, phoff).ok()?;
    for ph in table.chunks_exact(phentsize) {
        const PT_NOTE: u32 = 4;
        let (offset, size) = (u64_at(ph, 8)?, u64_at(ph, 32)?);
        if u32_at(ph, 0)? != PT_NOTE || size > MAX_NOTES {
            continue;
        }
        let mut notes = vec![0u8; size as usize];
        file.read_exact_at(&mut notes, offset).ok()?;
        let mut at = 0usize;
        // Each note: name size, descriptor size, type, then the name and
        // the descriptor, each padded to 4 bytes.
        while at + 12 <= notes.len() {
            let name_size = u32_at(&notes, at)? as usize;
            let desc_size = u32_at(&notes, at + 4)? as usize;
            let kind = u32_at(&notes, at + 8)?;
            let name_at = at + 12;
            let desc_at = name_at.checked_add(name_size.checked_add(3)? & !3)?;
            let end = desc_at.checked_add(desc_size.checked_add(3)? & !3)?;
            const NT_GNU_BUILD_ID: u32 = 3;
            if kind == NT_GNU_BUILD_ID
                && notes.get(name_at..name_at + name_size)? == b"GNU\0"
                && desc_size >= 16
            {
                let id = notes.get(desc_at..desc_at + desc_size)?;
                return Some(id.iter().map(|b| format!("{b:02x}")).collect());
            }
            at = end;
        }
    }
    None
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

    /// A minimal ELF64 file: header, one `PT_NOTE` program header, notes.
    fn elf_with_notes(notes: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[..6].copy_from_slice(b"\x7fELF\x02\x01");
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        f[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        f[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let mut ph = vec![0u8; 56];
        ph[..4].copy_from_slice(&4u32.to_le_bytes());
        ph[8..16].copy_from_slice(&120u64.to_le_bytes());
        ph[32..40].copy_from_slice(&(notes.len() as u64).to_le_bytes());
        f.extend(ph);
        f.extend(notes);
        f
    }

    fn note(name: &[u8], kind: u32, desc: &[u8]) -> Vec<u8> {
        let mut n = Vec::new();
        n.extend((name.len() as u32).to_le_bytes());
        n.extend((desc.len() as u32).to_le_bytes());
        n.extend(kind.to_le_bytes());
        n.extend(name);
        n.resize(n.len().next_multiple_of(4), 0);
        n.extend(desc);
        n.resize(n.len().next_multiple_of(4), 0);
        n
    }

    #[test]
    fn build_id_is_read_from_the_notes() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("exe");
        let id: Vec<u8> = (1..=20).collect();
        // An ABI tag note first, as GNU ld writes it, then the build ID.
        let mut notes = note(
            b"GNU\0",
            1,
            &[0, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0],
        );
        notes.extend(note(b"GNU\0", 3, &id));
        std::fs::write(&path, elf_with_notes(&notes)).unwrap();
        let read = gnu_build_id(&std::fs::File::open(&path).unwrap());
        assert_eq!(
            read.as_deref(),
            Some("0102030405060708090a0b0c0d0e0f1011121314")
        );
        // Too short to stand for the contents, another owner, truncated
        // notes, not ELF: no build ID.
        for notes in [
            note(b"GNU\0", 3, &id[..8]),
            note(b"Go\0\0", 3, &id),
            note(b"GNU\0", 3, &id)[..20].to_vec(),
        ] {
            std::fs::write(&path, elf_with_notes(&notes)).unwrap();
            assert_eq!(gnu_build_id(&std::fs::File::open(&path).unwrap()), None);
        }
        std::fs::write(&path, b"#!/bin/sh\n").unwrap();
        assert_eq!(gnu_build_id(&std::fs::File::open(&path).unwrap()), None);
    }

    #[test]
    fn the_running_executable_has_a_build_id() {
        // Debian's linker adds one by default; repocc's own link asks for
        // it (build.rs), so its identity never hashes the executable.
        let exe = std::fs::File::open("/proc/self/exe").unwrap();
        let id = gnu_build_id(&exe).expect("a build ID");
        let size = exe.metadata().unwrap().len();
        assert!(repocc_identity(None).ends_with(&format!("build-id {id} size {size}")));
    }
}
