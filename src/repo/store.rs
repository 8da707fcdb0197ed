//! The fragment store: a content-addressed directory of entries keyed by a
//! definition's final digest.
//!
//! Layout: `<dir>/v1/fragments/<first two hex digits>/<64 hex digits>`.
//! Each entry is self-describing and verified on every read:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `RPCCFRAG` |
//! | 4 | format version (little endian) |
//! | 1 | kind: 0 object code, 1 "the optimizer deleted this definition", 2 a whole unit's object compiled by clang, 3 "this unit needs clang" |
//! | 1 | flags: bit 0, the body (metadata length, metadata, payload) is one zstd frame |
//! | 2 | reserved (zero) |
//! | 32 | the digest the entry is stored under |
//! | 32 | blake3 of the version, kind, flags, reserved bytes and digest above and of everything after the header |
//! | 8 | length of the metadata (little endian) |
//! | n | metadata (JSON, written by the pipeline) |
//! | rest | payload (an ELF relocatable object for kind 0) |
//!
//! The body (the last three rows) is stored compressed when zstd makes it
//! smaller ([`ZSTD_LEVEL`]): objects are mostly zeros, relocations and
//! names, and the repository is the user's disk (issue 42). The checksum
//! covers the bytes as stored, so a damaged frame is found before it is
//! decompressed, and decompression is bounded by [`MAX_ENTRY_BYTES`].
//!
//! A compile that stores several entries at once writes them as one
//! *pack* (`put_many`): one file holding the entries back to back behind a
//! table of contents, given every entry's name by a hard link. Creating
//! inodes is what a file per entry cost (on ext4, allocating an inode near
//! recently deleted ones reads their inode blocks: 1.5–3 s of system time
//! in a cold lua build), while a link is only a directory entry. A pack
//! is laid out as
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `RPCCPACK` |
//! | 4 | pack format version (little endian) |
//! | 4 | number of entries `n` (at most [`PACK_MAX_ENTRIES`]) |
//! | 48 × n | per entry: its digest, offset and length in the file (u64 LE) |
//! | rest | the entries, each exactly as a file of its own would hold it |
//!
//! so a reader opens the entry's name, reads the table, finds its digest
//! and verifies that entry alone; names of one pack share the pack's
//! modification time (least-recently-used order is per pack) and its size
//! is divided among them when the repository is measured.
//!
//! All access goes through `fsx` (no symlink inside the repository is
//! followed; what is not a regular file at an entry's place is removed and
//! counted as corrupt; reads are bounded by [`MAX_ENTRY_BYTES`]).
//! Writes go to a temporary file in the entry's directory and are renamed
//! into place, so readers see a whole entry or none; no fsync is needed
//! because a torn entry fails its checksum and reads as a miss. A corrupt
//! entry is removed when met. Reads refresh the modification time, which
//! is what least-recently-used eviction sorts by. Concurrent writers of one
//! key write equivalent entries (the key is a digest of the content's
//! inputs), so the last rename winning is harmless; no lock is taken on the
//! hot path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use super::fsx::{self, ReadError, RepoDir};
use super::storage::{Corruption, Entry, EntryInfo, EntryKind, FragmentDigest, Lookup, StoreError};

const MAGIC: &[u8; 8] = b"RPCCFRAG";
/// Bump when the entry layout or the meaning of a payload changes.
/// (3: the checksum covers the header's kind, which version 2 left
/// unchecked: one flipped bit made a stored object read as "deleted".
/// 4: compressed bodies.)
pub const FORMAT_VERSION: u32 = 4;
/// zstd's level for entry bodies: level 1 compresses objects at several
/// hundred MB/s, a small part of a fragment's code generation.
const ZSTD_LEVEL: i32 = 1;
/// Bodies shorter than this are stored as they are (a frame's own header
/// would eat what it saves).
const COMPRESS_FROM: usize = 128;
const FLAG_COMPRESSED: u8 = 1;
const HEADER_LEN: usize = 8 + 4 + 4 + 32 + 32 + 8;

const PACK_MAGIC: &[u8; 8] = b"RPCCPACK";
const PACK_VERSION: u32 = 1;
const PACK_HEADER_LEN: usize = 16;
const PACK_RECORD_LEN: usize = 32 + 8 + 8;
/// Entries per pack: its table (48 bytes each) is read whole on a lookup.
pub const PACK_MAX_ENTRIES: usize = 128;
/// Bytes of entries per pack; a larger entry is stored in a file of its own.
const PACK_MAX_BYTES: usize = 4 << 20;
/// What a lookup reads first: the table of a full pack and, often, the
/// entry itself.
const FIRST_READ: usize = 64 << 10;

pub struct Store {
    /// The repository directory (the user's path).
    repo: PathBuf,
    /// `<repo>/v1/fragments`, for messages.
    root: PathBuf,
    /// The fragments directory, once opened.
    opened: OnceLock<RepoDir>,
}

/// Counts from [`Store::verify_all`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: u64,
    pub removed: Vec<(PathBuf, String)>,
}

/// A regular file in a shard directory.
struct StoredFile {
    name: String,
    size: u64,
    modified: SystemTime,
}

pub fn encode(digest: &FragmentDigest, entry: &Entry) -> Vec<u8> {
    let mut body = Vec::with_capacity(8 + entry.metadata.len() + entry.payload.len());
    body.extend_from_slice(&(entry.metadata.len() as u64).to_le_bytes());
    body.extend_from_slice(&entry.metadata);
    body.extend_from_slice(&entry.payload);
    let mut flags = 0;
    if body.len() >= COMPRESS_FROM {
        if let Ok(z) = zstd::bulk::compress(&body, ZSTD_LEVEL) {
            if z.len() < body.len() {
                body = z;
                flags |= FLAG_COMPRESSED;
            }
        }
    }
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(entry.kind.byte());
    out.extend_from_slice(&[flags, 0, 0]);
    out.extend_from_slice(&digest.0);
    let checksum = entry_checksum(&out[8..48], &body);
    out.extend_from_slice(checksum.as_bytes());
    // The metadata length is the first 8 bytes of the (uncompressed) body.
    out.extend_from_slice(&body);
    out
}

/// The checksum of an entry: every byte of it but the magic and the
/// checksum itself. A header field left out is one a flipped bit can change
/// unseen (the kind turns an object into a deletion).
fn entry_checksum(header: &[u8], body: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(header);
    hasher.update(body);
    hasher.finalize()
}

pub fn decode(digest: &FragmentDigest, bytes: &[u8]) -> Result<Entry, Corruption> {
    if bytes.len() < HEADER_LEN {
        return Err(Corruption::TooShort);
    }
    if &bytes[..8] != MAGIC {
        return Err(Corruption::BadMagic);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(Corruption::OtherVersion(version));
    }
    let flags = bytes[13];
    if flags & !FLAG_COMPRESSED != 0 || bytes[14..16] != [0, 0] {
        return Err(Corruption::BadKind(bytes[12]));
    }
    let kind = match bytes[12] {
        0 => EntryKind::Object,
        1 => EntryKind::Deleted,
        2 => EntryKind::ClangObject,
        3 => EntryKind::ClangOnly,
        4 => EntryKind::UnitManifest,
        5 => EntryKind::UnitResult,
        6 => EntryKind::History,
        7 => EntryKind::SearchList,
        8 => EntryKind::ClangUnitHint,
        9 => EntryKind::BodyIndex,
        10 => EntryKind::Bodies,
        k => return Err(Corruption::BadKind(k)),
    };
    if bytes[16..48] != digest.0 {
        return Err(Corruption::WrongDigest);
    }
    let stored = &bytes[80..];
    if entry_checksum(&bytes[8..48], stored).as_bytes() != &bytes[48..80] {
        return Err(Corruption::BadChecksum);
    }
    let decompressed;
    let body = if flags & FLAG_COMPRESSED != 0 {
        decompressed =
            super::decompress_bounded(stored, MAX_ENTRY_BYTES).ok_or(Corruption::BadLength)?;
        &decompressed[..]
    } else {
        stored
    };
    if body.len() < 8 {
        return Err(Corruption::BadLength);
    }
    let meta_len = u64::from_le_bytes(body[..8].try_into().expect("8 bytes")) as usize;
    if meta_len > body.len() - 8 {
        return Err(Corruption::BadLength);
    }
    Ok(Entry {
        kind,
        metadata: body[8..8 + meta_len].to_vec(),
        payload: body[8 + meta_len..].to_vec(),
    })
}

/// One pack holding `entries` (each already encoded, with its digest).
fn encode_pack(entries: &[(FragmentDigest, Vec<u8>)]) -> Vec<u8> {
    let table_end = PACK_HEADER_LEN + PACK_RECORD_LEN * entries.len();
    let total = table_end + entries.iter().map(|(_, e)| e.len()).sum::<usize>();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(PACK_MAGIC);
    out.extend_from_slice(&PACK_VERSION.to_le_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    let mut offset = table_end as u64;
    for (d, e) in entries {
        out.extend_from_slice(&d.0);
        out.extend_from_slice(&offset.to_le_bytes());
        out.extend_from_slice(&(e.len() as u64).to_le_bytes());
        offset += e.len() as u64;
    }
    for (_, e) in entries {
        out.extend_from_slice(e);
    }
    out
}

/// Where the entry `d` is in a pack of `size` bytes that starts with
/// `head`: its offset and length.
fn find_in_pack(d: &FragmentDigest, head: &[u8], size: u64) -> Result<(u64, u64), Corruption> {
    if head.len() < PACK_HEADER_LEN {
        return Err(Corruption::TooShort);
    }
    let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
    if version != PACK_VERSION {
        return Err(Corruption::OtherVersion(version));
    }
    let count = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")) as usize;
    let table_end = PACK_HEADER_LEN + PACK_RECORD_LEN * count;
    if count > PACK_MAX_ENTRIES || head.len() < table_end {
        return Err(Corruption::BadLength);
    }
    let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
    for record in (PACK_HEADER_LEN..table_end).step_by(PACK_RECORD_LEN) {
        if head[record..record + 32] != d.0 {
            continue;
        }
        let (offset, len) = (u64_at(record + 32), u64_at(record + 40));
        let in_file = offset
            .checked_add(len)
            .is_some_and(|end| offset >= table_end as u64 && end <= size);
        if !in_file || len > MAX_ENTRY_BYTES {
            return Err(Corruption::BadLength);
        }
        return Ok((offset, len));
    }
    // A name that its file does not hold.
    Err(Corruption::WrongDigest)
}

/// Whether a failed `link` means the file system cannot give the pack
/// another name (no hard links, a link limit), rather than a failure any
/// write would meet.
fn cannot_link(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|code| {
        [
            Errno::PERM,
            Errno::OPNOTSUPP,
            Errno::MLINK,
            Errno::XDEV,
            Errno::NOSYS,
        ]
        .iter()
        .any(|errno| errno.raw_os_error() == code)
    })
}

/// Why [`load`] found no entry.
enum LoadError {
    Missing,
    Corrupt(Corruption),
    Io(std::io::Error),
}

/// Reads and verifies the entry `d` stored as `name` in `shard`: a file of
/// its own or one entry of a pack. Returns it with the open file.
fn load(
    shard: &RepoDir,
    name: &str,
    d: &FragmentDigest,
) -> Result<(Entry, std::fs::File), LoadError> {
    use std::os::unix::fs::FileExt;
    let (mut file, size) = match shard.open_regular(name) {
        Ok(x) => x,
        Err(ReadError::Missing) => return Err(LoadError::Missing),
        Err(ReadError::NotRegular(kind)) => {
            return Err(LoadError::Corrupt(Corruption::NotRegular(format!(
                "{kind:?}"
            ))))
        }
        Err(ReadError::TooLarge(_)) => return Err(LoadError::Corrupt(Corruption::TooLarge)),
        Err(ReadError::Io(e)) => return Err(LoadError::Io(e)),
    };
    let mut head = vec![0u8; size.min(FIRST_READ as u64) as usize];
    let read = read_at_full(&file, &mut head, 0).map_err(LoadError::Io)?;
    head.truncate(read);
    let entry = if head.starts_with(PACK_MAGIC) {
        let (offset, len) = find_in_pack(d, &head, size).map_err(LoadError::Corrupt)?;
        let (offset, len) = (offset as usize, len as usize);
        let bytes = if offset + len <= head.len() {
            head[offset..offset + len].to_vec()
        } else {
            let mut bytes = vec![0u8; len];
            file.read_exact_at(&mut bytes, offset as u64)
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::UnexpectedEof => LoadError::Corrupt(Corruption::BadLength),
                    _ => LoadError::Io(e),
                })?;
            bytes
        };
        decode(d, &bytes)
    } else {
        if size > MAX_ENTRY_BYTES {
            return Err(LoadError::Corrupt(Corruption::TooLarge));
        }
        if head.len() as u64 == size {
            decode(d, &head)
        } else {
            let bytes = match fsx::read_at_most(&mut file, size, MAX_ENTRY_BYTES) {
                Ok(b) => b,
                Err(ReadError::TooLarge(_)) => {
                    return Err(LoadError::Corrupt(Corruption::TooLarge))
                }
                Err(ReadError::Io(e)) => return Err(LoadError::Io(e)),
                Err(_) => return Err(LoadError::Missing),
            };
            decode(d, &bytes)
        }
    };
    match entry {
        Ok(e) => Ok((e, file)),
        Err(c) => Err(LoadError::Corrupt(c)),
    }
}

/// Reads into `buf` from `offset` until it is full or the file ends;
/// returns how much was read.
fn read_at_full(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    use std::os::unix::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Largest entry a read accepts (a bigger file is not one of ours).
pub const MAX_ENTRY_BYTES: u64 = 256 << 20;

/// Temporary files younger than this may belong to a running compile.
const TEMPORARY_GRACE: Duration = Duration::from_secs(3600);

fn is_shard_name(name: &str) -> bool {
    name.len() == 2
        && name
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

impl Store {
    /// The store under the repository directory `dir` (nothing is created
    /// until the first write).
    pub fn new(dir: &Path) -> Store {
        Store {
            repo: dir.to_path_buf(),
            root: dir.join("v1").join("fragments"),
            opened: OnceLock::new(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The fragments directory (`create`: made if missing). A `v1` or
    /// `fragments` that is not a real directory is removed when `create`
    /// is set (it is inside the repository) and reported otherwise.
    fn fragments(&self, create: bool) -> std::io::Result<Option<&RepoDir>> {
        if let Some(d) = self.opened.get() {
            return Ok(Some(d));
        }
        match self.open_fragments(create)? {
            Some(dir) => Ok(Some(self.opened.get_or_init(|| dir))),
            None => Ok(None),
        }
    }

    /// `v1/fragments`, opened from the root now (see [`Store::fragments`]
    /// for the one kept open).
    fn open_fragments(&self, create: bool) -> std::io::Result<Option<RepoDir>> {
        let Some(root) = RepoDir::open_root(&self.repo, create)? else {
            return Ok(None);
        };
        let mut dir = root;
        for name in ["v1", "fragments"] {
            let sub = match dir.subdir(name, create) {
                Err(e) if create && e.kind() == std::io::ErrorKind::NotADirectory => {
                    dir.remove(name)?;
                    dir.subdir(name, create)?
                }
                other => other?,
            };
            match sub {
                Some(s) => dir = s,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    fn shard_and_name(d: &FragmentDigest) -> (String, String) {
        let hex = d.to_hex();
        (hex[..2].to_string(), hex)
    }

    #[cfg(test)]
    fn path_of(&self, d: &FragmentDigest) -> PathBuf {
        let (shard, name) = Store::shard_and_name(d);
        self.root.join(shard).join(name)
    }

    /// Reads and verifies an entry. A corrupt entry, or anything at its
    /// place that is not a regular file (or a shard that is not a real
    /// directory), is removed and reported as corrupt: a miss.
    pub fn get(&self, d: &FragmentDigest) -> Result<Lookup, StoreError> {
        let (shard_name, name) = Store::shard_and_name(d);
        let unreadable = |source| StoreError::Unreadable {
            path: self.root.join(&shard_name).join(&name),
            source,
        };
        let fragments = match self.fragments(false) {
            Ok(Some(f)) => f,
            Ok(None) => return Ok(Lookup::Miss),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                return Ok(Lookup::Miss);
            }
            Err(e) => return Err(unreadable(e)),
        };
        let shard = match fragments.subdir(&shard_name, false) {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(Lookup::Miss),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                let _ = fragments.remove(&shard_name);
                return Ok(Lookup::Corrupt(Corruption::NotADirectory));
            }
            Err(e) => return Err(unreadable(e)),
        };
        match load(&shard, &name, d) {
            Ok((entry, file)) => {
                // Least-recently-used order, refreshed at most hourly (a
                // failure only costs eviction order).
                let stale = file
                    .metadata()
                    .and_then(|m| m.modified())
                    .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(3600))
                    .unwrap_or(true);
                if stale {
                    let _ = file.set_modified(SystemTime::now());
                }
                Ok(Lookup::Hit(entry))
            }
            Err(LoadError::Missing) => Ok(Lookup::Miss),
            Err(LoadError::Io(e)) => Err(unreadable(e)),
            Err(LoadError::Corrupt(c)) => {
                // Only this name goes: the pack's other entries are checked
                // on their own.
                let _ = shard.remove(&name);
                Ok(Lookup::Corrupt(c))
            }
        }
    }

    /// Whether a regular file stands at the entry's place (not verified:
    /// a cheap test before asking another tier).
    pub fn contains(&self, d: &FragmentDigest) -> bool {
        let (shard_name, name) = Store::shard_and_name(d);
        let Ok(Some(fragments)) = self.fragments(false) else {
            return false;
        };
        let Ok(Some(shard)) = fragments.subdir(&shard_name, false) else {
            return false;
        };
        matches!(shard.kind_of(&name), Ok(Some(fsx::Kind::Regular)))
    }

    /// Stores an entry atomically; returns the bytes written. Whatever is
    /// in the way inside the repository (a symlinked shard, a directory
    /// where the entry goes) is removed, never written through.
    pub fn put(&self, d: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        let encoded = [(*d, encode(d, entry))];
        self.writing(&mut None, |f| self.write_loose(f, &encoded))
    }

    /// The shard directory `shard_name` of `fragments`, created if
    /// missing; a shard that is not a real directory (a symlink, a file) is
    /// removed first.
    fn shard_for_writing(fragments: &RepoDir, shard_name: &str) -> std::io::Result<RepoDir> {
        let shard = match fragments.subdir(shard_name, true) {
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                fragments.remove(shard_name)?;
                fragments.subdir(shard_name, true)
            }
            other => other,
        }?;
        Ok(shard.expect("created when missing"))
    }

    /// Runs `write` in the fragments directory kept open, or in `fresh`
    /// once one was needed: a directory the write used went away meanwhile
    /// (`--clear` beside the build renames `fragments` away and removes it;
    /// eviction may empty a shard), and the write failed with "No such
    /// file or directory". Then it runs again (up to 3 times) in the
    /// directory now at the path, opened anew: the one kept open may be
    /// the renamed one, still there while it is being removed. Removed
    /// every time: `RemovedMeanwhile` (the entries would be gone anyway).
    fn writing(
        &self,
        fresh: &mut Option<RepoDir>,
        write: impl Fn(&RepoDir) -> Result<u64, StoreError>,
    ) -> Result<u64, StoreError> {
        let unwritable = |source| StoreError::Unwritable {
            path: self.root.clone(),
            source,
        };
        let mut runs = 0;
        loop {
            let result = match fresh.as_ref() {
                Some(dir) => write(dir),
                None => write(
                    self.fragments(true)
                        .map_err(unwritable)?
                        .expect("created when missing"),
                ),
            };
            match result {
                Err(StoreError::Unwritable { path, source })
                    if source.kind() == std::io::ErrorKind::NotFound =>
                {
                    if runs == 3 {
                        return Err(StoreError::RemovedMeanwhile { path });
                    }
                    runs += 1;
                    *fresh = Some(
                        self.open_fragments(true)
                            .map_err(unwritable)?
                            .expect("created when missing"),
                    );
                }
                other => return other,
            }
        }
    }

    /// Stores several entries (a compile's new fragments): packs of up to
    /// [`PACK_MAX_ENTRIES`] entries, one file each, every entry reachable
    /// under its own name (see the module comment); an entry alone or too
    /// large for a pack gets a file of its own. Returns the bytes written.
    /// Of entries with the same key, the last is stored.
    pub fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        let mut last_of: std::collections::HashMap<FragmentDigest, usize> =
            std::collections::HashMap::new();
        for (i, (d, _)) in items.iter().enumerate() {
            last_of.insert(*d, i);
        }
        let mut written = 0;
        let mut fresh = None;
        let mut pack: Vec<(FragmentDigest, Vec<u8>)> = Vec::new();
        let mut pack_bytes = 0;
        for (i, (d, entry)) in items.iter().enumerate() {
            if last_of.get(d) != Some(&i) {
                continue;
            }
            let encoded = encode(d, entry);
            if encoded.len() > PACK_MAX_BYTES {
                let loose = [(*d, encoded)];
                written += self.writing(&mut fresh, |f| self.write_loose(f, &loose))?;
                continue;
            }
            if pack.len() == PACK_MAX_ENTRIES || pack_bytes + encoded.len() > PACK_MAX_BYTES {
                let full = std::mem::take(&mut pack);
                written += self.writing(&mut fresh, |f| self.write_pack(f, &full))?;
                pack_bytes = 0;
            }
            pack_bytes += encoded.len();
            pack.push((*d, encoded));
        }
        written += self.writing(&mut fresh, |f| self.write_pack(f, &pack))?;
        Ok(written)
    }

    /// Writes one pack and links every entry's name to it.
    fn write_pack(
        &self,
        fragments: &RepoDir,
        entries: &[(FragmentDigest, Vec<u8>)],
    ) -> Result<u64, StoreError> {
        let [(first, _), _, ..] = entries else {
            return self.write_loose(fragments, entries);
        };
        let (first_shard_name, _) = Store::shard_and_name(first);
        let unwritable = |shard: &str, source| StoreError::Unwritable {
            path: self.root.join(shard),
            source,
        };
        let home = Store::shard_for_writing(fragments, &first_shard_name)
            .map_err(|e| unwritable(&first_shard_name, e))?;
        let pack = encode_pack(entries);
        let body = home
            .write_temporary(&pack, fsx::file_mode())
            .map_err(|e| unwritable(&first_shard_name, e))?;
        let mut result = Ok(pack.len() as u64);
        for (i, (d, _)) in entries.iter().enumerate() {
            let (shard_name, name) = Store::shard_and_name(d);
            let linked = if shard_name == first_shard_name {
                home.link_into(&body, &home, &name)
            } else {
                Store::shard_for_writing(fragments, &shard_name)
                    .and_then(|shard| home.link_into(&body, &shard, &name))
            };
            match linked {
                Ok(()) => {}
                // A file system without hard links (or with a link limit):
                // the rest get files of their own.
                Err(e) if cannot_link(&e) => {
                    result = self.write_loose(fragments, &entries[i..]);
                    break;
                }
                Err(e) => {
                    result = Err(unwritable(&shard_name, e));
                    break;
                }
            }
        }
        // The body's temporary name goes; the entries' names keep the file.
        let _ = home.remove(&body);
        result
    }

    /// Writes already encoded entries as files of their own, atomically.
    /// Whatever is in the way inside the repository (a symlinked shard, a
    /// directory where the entry goes) is removed, never written through.
    fn write_loose(
        &self,
        fragments: &RepoDir,
        entries: &[(FragmentDigest, Vec<u8>)],
    ) -> Result<u64, StoreError> {
        let mut written = 0;
        for (d, encoded) in entries {
            let (shard_name, name) = Store::shard_and_name(d);
            let unwritable = |source| StoreError::Unwritable {
                path: self.root.join(&shard_name),
                source,
            };
            let shard = Store::shard_for_writing(fragments, &shard_name).map_err(unwritable)?;
            if let Ok(Some(fsx::Kind::Directory)) = shard.kind_of(&name) {
                shard.remove(&name).map_err(unwritable)?;
            }
            written += shard
                .write_atomic(&name, encoded, fsx::file_mode())
                .map_err(unwritable)?;
        }
        Ok(written)
    }

    /// Removes the entry under `d` (whatever is at its place).
    pub fn remove(&self, d: &FragmentDigest) -> Result<(), StoreError> {
        let (shard_name, name) = Store::shard_and_name(d);
        let unwritable = |source| StoreError::Unwritable {
            path: self.root.join(&shard_name),
            source,
        };
        let Some(fragments) = self.fragments(false).map_err(unwritable)? else {
            return Ok(());
        };
        match fragments.subdir(&shard_name, false) {
            Ok(Some(shard)) => shard.remove(&name).map_err(unwritable),
            Ok(None) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => Ok(()),
            Err(e) => Err(unwritable(e)),
        }
    }

    /// Every regular file in the shards (entries and temporaries).
    fn stored_files(&self) -> Vec<StoredFile> {
        let mut out = Vec::new();
        let Ok(Some(fragments)) = self.fragments(false) else {
            return out;
        };
        let Ok(shards) = fragments.list() else {
            return out;
        };
        for s in shards {
            if s.kind != fsx::Kind::Directory {
                continue;
            }
            let Ok(Some(shard)) = fragments.subdir(&s.name, false) else {
                continue;
            };
            for f in shard.list().unwrap_or_default() {
                if f.kind == fsx::Kind::Regular {
                    out.push(StoredFile {
                        name: f.name,
                        // A pack's names share its bytes.
                        size: f.size.div_ceil(f.links.max(1)),
                        modified: f.modified,
                    });
                }
            }
        }
        out
    }

    /// Total bytes and number of entries.
    pub fn size(&self) -> (u64, u64) {
        let e = self.stored_files();
        (e.iter().map(|f| f.size).sum(), e.len() as u64)
    }

    /// Checks every entry; removes and reports the bad ones: entries that
    /// fail verification, anything that is not a regular file (symlinks,
    /// FIFOs, devices, directories — removed, never followed), shards that
    /// are not real directories, and temporary files older than an hour.
    pub fn verify_all(&self) -> VerifyReport {
        let mut report = VerifyReport::default();
        self.verify_bookkeeping(&mut report);
        let fragments = match self.fragments(false) {
            Ok(Some(f)) => f,
            Ok(None) => return report,
            Err(e) => {
                // `v1` or `fragments` is not a real directory: remove it
                // (the link itself, never what it points to).
                if let Some(bad) = self.remove_bad_top_level() {
                    report.checked += 1;
                    report.removed.push((bad, e.to_string()));
                }
                return report;
            }
        };
        let shards = fragments.list().unwrap_or_default();
        for s in shards {
            let path = fragments.path().join(&s.name);
            if s.kind != fsx::Kind::Directory || !is_shard_name(&s.name) {
                report.checked += 1;
                let _ = fragments.remove(&s.name);
                let why = if s.kind == fsx::Kind::Directory {
                    "not a shard directory".to_string()
                } else {
                    format!("not a directory ({:?})", s.kind)
                };
                report.removed.push((path, why));
                continue;
            }
            let Ok(Some(shard)) = fragments.subdir(&s.name, false) else {
                continue;
            };
            for f in shard.list().unwrap_or_default() {
                let path = shard.path().join(&f.name);
                if sweep_temporary(&shard, &f, &mut report) {
                    continue;
                }
                report.checked += 1;
                let problem = match FragmentDigest::from_hex(&f.name) {
                    _ if f.kind != fsx::Kind::Regular => {
                        Some(format!("not a regular file ({:?})", f.kind))
                    }
                    Some(d) if f.name.starts_with(&s.name) => match load(&shard, &f.name, &d) {
                        Ok(_) | Err(LoadError::Missing) => None,
                        Err(LoadError::Corrupt(c)) => Some(format!("{c:?}")),
                        Err(LoadError::Io(e)) => Some(e.to_string()),
                    },
                    _ => Some("not an entry name".to_string()),
                };
                if let Some(p) = problem {
                    let _ = shard.remove(&f.name);
                    report.removed.push((path, p));
                }
            }
        }
        report
    }

    /// The repository's own records beside the entries: the statistics
    /// (`stats/`), the size ledger (`size/`) and the cached identities
    /// (`identity/`). Each must be a real directory of regular files, its
    /// JSON files parse and the measured size is a number; what is not is
    /// removed (a symlinked `stats` lost every count, silently), and the
    /// next compile writes it anew.
    fn verify_bookkeeping(&self, report: &mut VerifyReport) {
        let Ok(Some(root)) = RepoDir::open_root(&self.repo, false) else {
            return;
        };
        for name in ["stats", "size", "identity"] {
            let path = root.path().join(name);
            let dir = match root.subdir(name, false) {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => {
                    report.checked += 1;
                    if root.remove(name).is_ok() {
                        report.removed.push((path, e.to_string()));
                    }
                    continue;
                }
            };
            for f in dir.list().unwrap_or_default() {
                if sweep_temporary(&dir, &f, report) {
                    continue;
                }
                report.checked += 1;
                let problem = if f.kind != fsx::Kind::Regular {
                    Some(format!("not a regular file ({:?})", f.kind))
                } else if f.name.ends_with(".lock") {
                    None
                } else {
                    let json = name == "identity" || f.name.ends_with(".json");
                    let measured = name == "size" && f.name == "measured";
                    match dir.read_regular(&f.name, 1 << 20) {
                        Err(e) => Some(format!("{e:?}")),
                        Ok((bytes, _)) if json => {
                            serde_json::from_slice::<serde_json::Value>(&bytes)
                                .err()
                                .map(|e| format!("not JSON: {e}"))
                        }
                        Ok((bytes, _)) if measured => std::str::from_utf8(&bytes)
                            .ok()
                            .and_then(|t| t.trim().parse::<u64>().ok())
                            .is_none()
                            .then(|| "not a size".to_string()),
                        Ok(_) => None,
                    }
                };
                if let Some(p) = problem {
                    if dir.remove(&f.name).is_ok() {
                        report.removed.push((dir.path().join(&f.name), p));
                    }
                }
            }
        }
    }

    /// Removes a `v1` or `v1/fragments` that is not a real directory;
    /// returns its path.
    fn remove_bad_top_level(&self) -> Option<PathBuf> {
        let mut dir = RepoDir::open_root(&self.repo, false).ok()??;
        for name in ["v1", "fragments"] {
            match dir.kind_of(name) {
                Ok(Some(fsx::Kind::Directory)) => dir = dir.subdir(name, false).ok()??,
                Ok(Some(_)) => {
                    let path = dir.path().join(name);
                    return dir.remove(name).ok().map(|()| path);
                }
                _ => return None,
            }
        }
        None
    }

    /// Removes every entry.
    pub fn clear(&self) -> std::io::Result<()> {
        match RepoDir::open_path(&self.repo, &[], false)? {
            Some(repo) => match repo.subdir("v1", false) {
                Ok(Some(v1)) => Store::clear_fragments(&v1),
                Ok(None) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => repo.remove("v1"),
                Err(e) => Err(e),
            },
            None => Ok(()),
        }
    }
}

/// Whether `f` (listed in `dir`) is a temporary file of a write; one older
/// than [`TEMPORARY_GRACE`] (a write a kill left, not one in flight) is
/// removed and reported.
fn sweep_temporary(dir: &RepoDir, f: &fsx::Listed, report: &mut VerifyReport) -> bool {
    if !f.name.starts_with(".tmp") || f.kind != fsx::Kind::Regular {
        return false;
    }
    let age = SystemTime::now()
        .duration_since(f.modified)
        .unwrap_or_default();
    if age > TEMPORARY_GRACE && dir.remove(&f.name).is_ok() {
        report
            .removed
            .push((dir.path().join(&f.name), "stale temporary file".into()));
    }
    true
}

impl Store {
    /// Removes `fragments` from `v1` while builds may be writing to it: the
    /// directory is first renamed out of their way (a build then makes a
    /// new one), and what a build that had it open still writes into the
    /// old one is removed on the next pass (a directory that was not empty
    /// failed `--clear` with "Directory not empty" beside builds).
    fn clear_fragments(v1: &RepoDir) -> std::io::Result<()> {
        let aside = format!(".cleared-{}", std::process::id());
        let gone = match v1.rename("fragments", &aside) {
            Ok(()) => aside.as_str(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            // Not renamable (a file in the way of `aside`...): in place.
            Err(_) => "fragments",
        };
        let mut passes = 0;
        loop {
            match v1.remove(gone) {
                Err(e)
                    if passes < 20
                        && e.raw_os_error() == Some(rustix::io::Errno::NOTEMPTY.raw_os_error()) =>
                {
                    passes += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }
}

/// Parses sizes such as `500M`, `10G`, `1.5GiB`, `123456` (bytes). Units
/// are powers of 1024, as ccache's `--max-size` with binary suffixes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return None,
    };
    let bytes = num * mult as f64;
    (num.is_finite() && num >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// Parses ages such as `3600`, `90s`, `30m`, `12h`, `7d`.
pub fn parse_age(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().ok()?;
    let unit_secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return None,
    };
    // An age beyond any file's (more than 10,000 years) is refused rather
    // than wrapped into a small one.
    let secs = n
        .checked_mul(unit_secs)
        .filter(|s| *s <= 10_000 * 365 * 86400)?;
    Some(Duration::from_secs(secs))
}

impl super::storage::Storage for Store {
    fn get(&self, key: &FragmentDigest) -> Result<Lookup, StoreError> {
        Store::get(self, key)
    }

    fn put(&self, key: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        Store::put(self, key, entry)
    }

    fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        Store::put_many(self, items)
    }

    fn remove(&self, key: &FragmentDigest) -> Result<(), StoreError> {
        Store::remove(self, key)
    }

    fn entries(&self) -> Vec<EntryInfo> {
        self.stored_files()
            .into_iter()
            .filter_map(|f| {
                Some(EntryInfo {
                    key: FragmentDigest::from_hex(&f.name)?,
                    bytes: f.size,
                    last_used: f.modified,
                })
            })
            .collect()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;

    fn digest(n: u8) -> FragmentDigest {
        FragmentDigest(*blake3::hash(&[n]).as_bytes())
    }

    /// `len` bytes zstd cannot shrink (an entry stored as it is).
    pub(crate) fn noise(seed: u8, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        blake3::Hasher::new()
            .update(&[seed])
            .finalize_xof()
            .fill(&mut out);
        out
    }

    fn entry(payload: &[u8]) -> Entry {
        Entry {
            kind: EntryKind::Object,
            metadata: br#"{"symbols":["f"]}"#.to_vec(),
            payload: payload.to_vec(),
        }
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Miss));
        s.put(&digest(1), &entry(b"\x7fELF...")).unwrap();
        match s.get(&digest(1)).unwrap() {
            Lookup::Hit(e) => assert_eq!(e, entry(b"\x7fELF...")),
            other => panic!("{other:?}"),
        }
        let deleted = Entry {
            kind: EntryKind::Deleted,
            metadata: vec![],
            payload: vec![],
        };
        s.put(&digest(2), &deleted).unwrap();
        assert!(
            matches!(s.get(&digest(2)).unwrap(), Lookup::Hit(e) if e.kind == EntryKind::Deleted)
        );
    }

    #[test]
    fn the_storage_interface_lists_and_removes() {
        use crate::repo::storage::Storage;
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let storage: &dyn Storage = &s;
        for i in 0..3 {
            storage.put(&digest(i), &entry(&[i; 10])).unwrap();
        }
        let mut keys: Vec<FragmentDigest> = storage.entries().into_iter().map(|e| e.key).collect();
        keys.sort();
        let mut want = vec![digest(0), digest(1), digest(2)];
        want.sort();
        assert_eq!(keys, want);
        storage.remove(&digest(1)).unwrap();
        storage.remove(&digest(1)).unwrap();
        assert!(matches!(storage.get(&digest(1)).unwrap(), Lookup::Miss));
        assert_eq!(storage.entries().len(), 2);
    }

    #[test]
    fn a_pack_holds_many_entries_under_their_own_names() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let items: Vec<(FragmentDigest, Entry)> =
            (0..40).map(|i| (digest(i), entry(&[i; 300]))).collect();
        let written = s.put_many(&items).unwrap();
        for (k, e) in &items {
            match s.get(k).unwrap() {
                Lookup::Hit(got) => assert_eq!(&got, e),
                other => panic!("{k:?}: {other:?}"),
            }
            // One file under every name: no inode per entry.
            assert_eq!(fs::metadata(s.path_of(k)).unwrap().nlink(), 40);
        }
        // The names share the pack's bytes; no temporary is left.
        let (bytes, count) = s.size();
        assert_eq!(count, 40);
        assert!(
            bytes >= written && bytes < written + 40,
            "{bytes} vs {written}"
        );
        assert!(s.stored_files().iter().all(|f| !f.name.starts_with(".tmp")));
        assert_eq!(s.verify_all().removed, vec![]);
        // Removing one name leaves the others readable.
        s.remove(&digest(3)).unwrap();
        assert!(matches!(s.get(&digest(3)).unwrap(), Lookup::Miss));
        assert!(matches!(s.get(&digest(4)).unwrap(), Lookup::Hit(_)));
        // A key the pack does not hold, linked to it, is corrupt.
        fs::hard_link(s.path_of(&digest(5)), s.path_of(&digest(200))).unwrap_or_else(|_| {
            fs::create_dir_all(s.path_of(&digest(200)).parent().unwrap()).unwrap();
            fs::hard_link(s.path_of(&digest(5)), s.path_of(&digest(200))).unwrap();
        });
        assert!(matches!(
            s.get(&digest(200)).unwrap(),
            Lookup::Corrupt(Corruption::WrongDigest)
        ));
        assert!(!s.path_of(&digest(200)).exists());
    }

    #[test]
    fn without_hard_links_entries_get_files_of_their_own() {
        use std::io::Error;
        // What `write_pack` falls back to when the file system refuses a
        // second name for the pack.
        for code in [
            rustix::io::Errno::PERM,
            rustix::io::Errno::MLINK,
            rustix::io::Errno::OPNOTSUPP,
        ] {
            assert!(cannot_link(&Error::from_raw_os_error(code.raw_os_error())));
        }
        assert!(!cannot_link(&Error::from_raw_os_error(
            rustix::io::Errno::NOSPC.raw_os_error()
        )));
        assert!(!cannot_link(&Error::other("other")));
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let items: Vec<(FragmentDigest, Vec<u8>)> = (0..3)
            .map(|i| (digest(i), encode(&digest(i), &entry(&[i; 50]))))
            .collect();
        s.write_loose(s.fragments(true).unwrap().unwrap(), &items)
            .unwrap();
        for i in 0..3 {
            assert!(matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(e) if e == entry(&[i; 50])));
            assert!(fs::read(s.path_of(&digest(i))).unwrap().starts_with(MAGIC));
        }
    }

    #[test]
    fn a_damaged_pack_entry_costs_that_entry_only() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let items: Vec<(FragmentDigest, Entry)> = (0..4)
            .map(|i| (digest(i), entry(&noise(i, 1000))))
            .collect();
        s.put_many(&items).unwrap();
        let path = s.path_of(&digest(2));
        let mut bytes = fs::read(&path).unwrap();
        // The third entry's payload: the table says where it is.
        let record = PACK_HEADER_LEN
            + PACK_RECORD_LEN * items.iter().position(|(k, _)| *k == digest(2)).unwrap();
        let offset = u64::from_le_bytes(bytes[record + 32..record + 40].try_into().unwrap());
        bytes[offset as usize + 500] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            s.get(&digest(2)).unwrap(),
            Lookup::Corrupt(Corruption::BadChecksum)
        ));
        for i in [0, 1, 3] {
            assert!(matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(_)), "{i}");
        }
        // A truncated pack: entries past the end are corrupt, not errors.
        let f = fs::OpenOptions::new()
            .write(true)
            .open(s.path_of(&digest(0)))
            .unwrap();
        f.set_len(PACK_HEADER_LEN as u64 + 10).unwrap();
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Corrupt(_)));
        assert_eq!(s.verify_all().removed.len(), 2);
    }

    #[test]
    fn packing_replaces_what_is_in_the_way_without_following_it() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        // An old entry, a symlink and a directory at three of the names.
        s.put(&digest(0), &entry(b"old")).unwrap();
        let target = outside.path().join("precious");
        fs::write(&target, b"keep").unwrap();
        for i in [1, 2] {
            fs::create_dir_all(s.path_of(&digest(i)).parent().unwrap()).unwrap();
        }
        std::os::unix::fs::symlink(&target, s.path_of(&digest(1))).unwrap();
        fs::create_dir(s.path_of(&digest(2))).unwrap();
        // Duplicates: the last entry of a key is the one stored.
        let mut items: Vec<(FragmentDigest, Entry)> =
            (0..5).map(|i| (digest(i), entry(&[i; 64]))).collect();
        items.push((digest(4), entry(b"last")));
        s.put_many(&items).unwrap();
        for i in 0..4 {
            assert!(matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(e) if e == entry(&[i; 64])));
        }
        assert!(matches!(s.get(&digest(4)).unwrap(), Lookup::Hit(e) if e == entry(b"last")));
        assert_eq!(fs::read(&target).unwrap(), b"keep");
        // A single entry, and one too large for a pack, get files of their own.
        s.put_many(&[(digest(9), entry(b"alone"))]).unwrap();
        let big = noise(7, PACK_MAX_BYTES + 1);
        s.put_many(&[(digest(10), entry(&big)), (digest(11), entry(b"x"))])
            .unwrap();
        for i in [9, 10, 11] {
            assert!(fs::read(s.path_of(&digest(i))).unwrap().starts_with(MAGIC));
            assert!(matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(_)));
        }
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        // Every bit: one flipped bit of the kind once read an object as a
        // deletion (a flip of bit 6 only, as this test did, never did).
        let d = digest(3);
        let bytes = encode(&d, &entry(b"payload bytes"));
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    decode(&d, &bad).is_err(),
                    "flip of bit {bit} at {i} not detected"
                );
            }
        }
        assert!(decode(&d, &bytes[..bytes.len() - 1]).is_err());
        assert!(
            decode(&digest(4), &bytes).is_err(),
            "entry under another key"
        );
    }

    /// A body zstd shrinks is stored compressed, reads back whole, and a
    /// flipped bit in the frame is found by the checksum before the frame
    /// is decompressed.
    #[test]
    fn compressible_bodies_are_stored_compressed() {
        let d = digest(5);
        let object = entry(&[&[0u8; 3000][..], b"code", &[0u8; 3000]].concat());
        let bytes = encode(&d, &object);
        assert!(bytes.len() < 500, "{} bytes stored", bytes.len());
        assert_eq!(bytes[13], FLAG_COMPRESSED);
        assert_eq!(decode(&d, &bytes).unwrap(), object);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(&d, &bad).is_err(), "flip at {i} not detected");
        }
        // What zstd cannot shrink is stored as it is.
        let random = entry(&noise(1, 4000));
        let stored = encode(&d, &random);
        assert_eq!(stored[13], 0);
        assert_eq!(decode(&d, &stored).unwrap(), random);
    }

    #[test]
    fn corrupt_entries_read_as_corrupt_and_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        s.put(&digest(5), &entry(b"abc")).unwrap();
        let path = s.path_of(&digest(5));
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(matches!(
            s.get(&digest(5)).unwrap(),
            Lookup::Corrupt(Corruption::BadChecksum)
        ));
        assert!(!path.exists());
    }

    #[test]
    fn verify_all_reports_and_removes_bad_entries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        for i in 0..5 {
            s.put(&digest(i), &entry(&[i; 100])).unwrap();
        }
        let bad = s.path_of(&digest(2));
        fs::write(&bad, b"garbage").unwrap();
        let r = s.verify_all();
        assert_eq!(r.checked, 5);
        assert_eq!(r.removed.len(), 1);
        assert_eq!(r.removed[0].0, bad);
        assert_eq!(s.verify_all().removed.len(), 0);
    }

    #[test]
    fn eviction_removes_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        // Old enough that a read refreshes the time (reads refresh hourly).
        let base = SystemTime::now() - Duration::from_secs(10 * 3600);
        for i in 0..10u8 {
            s.put(&digest(i), &entry(&[i; 1000])).unwrap();
            let f = fs::File::options()
                .write(true)
                .open(s.path_of(&digest(i)))
                .unwrap();
            f.set_modified(base + Duration::from_secs(i as u64))
                .unwrap();
        }
        // Reading entry 0 makes it the most recently used.
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)));
        let (total, n) = s.size();
        assert_eq!(n, 10);
        let r = crate::repo::storage::evict_to(&s, total / 2);
        assert!(r.bytes_after <= total / 2);
        assert!(
            matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)),
            "recently used entry evicted"
        );
        assert!(
            matches!(s.get(&digest(1)).unwrap(), Lookup::Miss),
            "oldest entry kept"
        );
        let r = crate::repo::storage::evict_older_than(&s, Duration::from_secs(3600));
        assert!(r.removed >= 1);
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)));
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        std::thread::scope(|scope| {
            for t in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..50u8 {
                        s.put(&digest(i), &entry(&[i; 4096])).unwrap();
                        match s.get(&digest((i + t) % 50)).unwrap() {
                            Lookup::Hit(e) => assert_eq!(e.payload, vec![(i + t) % 50; 4096]),
                            Lookup::Miss => {}
                            Lookup::Corrupt(c) => panic!("torn read: {c:?}"),
                        }
                    }
                });
            }
        });
        assert_eq!(s.verify_all().removed.len(), 0);
    }

    #[test]
    fn unwritable_repository_is_an_error() {
        let s = Store::new(Path::new("/proc/repocc-store"));
        assert!(matches!(
            s.put(&digest(1), &entry(b"x")),
            Err(StoreError::Unwritable { .. })
        ));
    }

    #[test]
    fn sizes_and_ages_parse() {
        assert_eq!(parse_size("10G"), Some(10 << 30));
        assert_eq!(parse_size("500M"), Some(500 << 20));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_age("7d"), Some(Duration::from_secs(7 * 86400)));
        assert_eq!(parse_age("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_age("1w"), None);
        assert_eq!(parse_age("99999999999999999d"), None, "overflow");
        assert_eq!(parse_age("213503982334601d"), None, "overflow");
        assert_eq!(parse_size("99999999999999999999T"), None);
        assert_eq!(
            FragmentDigest::from_hex(&digest(9).to_hex()),
            Some(digest(9))
        );
    }
}
