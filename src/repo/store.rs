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
//! | 1 | kind: 0 object code, 1 "the optimizer deleted this definition" |
//! | 3 | reserved (zero) |
//! | 32 | the digest the entry is stored under |
//! | 32 | blake3 of everything after the header |
//! | 8 | length of the metadata (little endian) |
//! | n | metadata (JSON, written by the pipeline) |
//! | rest | payload (an ELF relocatable object for kind 0) |
//!
//! Writes go to a temporary file in the entry's directory and are renamed
//! into place, so readers see a whole entry or none; no fsync is needed
//! because a torn entry fails its checksum and reads as a miss. A corrupt
//! entry is removed when met. Reads refresh the modification time, which
//! is what least-recently-used eviction sorts by. Concurrent writers of one
//! key write equivalent entries (the key is a digest of the content's
//! inputs), so the last rename winning is harmless; no lock is taken on the
//! hot path.

use std::fmt;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

const MAGIC: &[u8; 8] = b"RPCCFRAG";
/// Bump when the entry layout or the meaning of a payload changes.
pub const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 4 + 32 + 32 + 8;

/// The key of a fragment: a definition's final digest.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FragmentDigest(pub [u8; 32]);

impl FragmentDigest {
    pub fn to_hex(self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn from_hex(s: &str) -> Option<FragmentDigest> {
        if s.len() != 64 {
            return None;
        }
        let mut out = [0u8; 32];
        for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
            let hex = std::str::from_utf8(chunk).ok()?;
            out[i] = u8::from_str_radix(hex, 16).ok()?;
        }
        Some(FragmentDigest(out))
    }
}

impl fmt::Debug for FragmentDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", &self.to_hex()[..16])
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Object code for the definition.
    Object,
    /// The optimizer deleted the definition (fully inlined or dead).
    Deleted,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    pub metadata: Vec<u8>,
    pub payload: Vec<u8>,
}

/// What can go wrong with the store; every variant names the path.
#[derive(Debug)]
pub enum StoreError {
    /// The repository directory cannot be created or written.
    Unwritable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Reading failed for a reason other than a missing entry.
    Unreadable {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Unwritable { path, source } => {
                write!(f, "repository {} is not writable: {source}", path.display())
            }
            StoreError::Unreadable { path, source } => {
                write!(
                    f,
                    "cannot read repository entry {}: {source}",
                    path.display()
                )
            }
        }
    }
}

impl std::error::Error for StoreError {}

/// Why an entry was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Corruption {
    TooShort,
    BadMagic,
    OtherVersion(u32),
    BadKind(u8),
    WrongDigest,
    BadLength,
    BadChecksum,
}

/// The outcome of a lookup.
#[derive(Debug)]
pub enum Lookup {
    Hit(Entry),
    Miss,
    /// The entry existed but failed verification; it has been removed.
    Corrupt(Corruption),
}

pub struct Store {
    root: PathBuf,
}

/// Counts from [`Store::verify_all`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: u64,
    pub removed: Vec<(PathBuf, String)>,
}

/// Counts from eviction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictReport {
    pub entries_before: u64,
    pub bytes_before: u64,
    pub removed: u64,
    pub bytes_after: u64,
}

impl EvictReport {
    /// The report before anything is removed.
    fn before(entries: &[(PathBuf, u64, SystemTime)]) -> EvictReport {
        let total: u64 = entries.iter().map(|(_, s, _)| s).sum();
        EvictReport {
            entries_before: entries.len() as u64,
            bytes_before: total,
            removed: 0,
            bytes_after: total,
        }
    }
}

pub fn encode(digest: &FragmentDigest, entry: &Entry) -> Vec<u8> {
    let mut body = Vec::with_capacity(8 + entry.metadata.len() + entry.payload.len());
    body.extend_from_slice(&(entry.metadata.len() as u64).to_le_bytes());
    body.extend_from_slice(&entry.metadata);
    body.extend_from_slice(&entry.payload);
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(match entry.kind {
        EntryKind::Object => 0,
        EntryKind::Deleted => 1,
    });
    out.extend_from_slice(&[0, 0, 0]);
    out.extend_from_slice(&digest.0);
    out.extend_from_slice(blake3::hash(&body).as_bytes());
    // The metadata length is the first 8 bytes of the checksummed body.
    out.extend_from_slice(&body);
    out
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
    let kind = match (bytes[12], &bytes[13..16]) {
        (0, [0, 0, 0]) => EntryKind::Object,
        (1, [0, 0, 0]) => EntryKind::Deleted,
        (k, _) => return Err(Corruption::BadKind(k)),
    };
    if bytes[16..48] != digest.0 {
        return Err(Corruption::WrongDigest);
    }
    let body = &bytes[80..];
    if blake3::hash(body).as_bytes() != &bytes[48..80] {
        return Err(Corruption::BadChecksum);
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

impl Store {
    /// The store under the repository directory `dir` (nothing is created
    /// until the first write).
    pub fn new(dir: &Path) -> Store {
        Store {
            root: dir.join("v1").join("fragments"),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path_of(&self, d: &FragmentDigest) -> PathBuf {
        let hex = d.to_hex();
        self.root.join(&hex[..2]).join(hex)
    }

    /// Reads and verifies an entry; a corrupt one is removed.
    pub fn get(&self, d: &FragmentDigest) -> Result<Lookup, StoreError> {
        use std::io::Read;
        let path = self.path_of(d);
        let mut file = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lookup::Miss),
            Err(e) => return Err(StoreError::Unreadable { path, source: e }),
        };
        let mut bytes = Vec::new();
        if let Err(e) = file.read_to_end(&mut bytes) {
            return Err(StoreError::Unreadable { path, source: e });
        }
        match decode(d, &bytes) {
            Ok(entry) => {
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
            Err(c) => {
                let _ = fs::remove_file(&path);
                Ok(Lookup::Corrupt(c))
            }
        }
    }

    /// Stores an entry atomically; returns the bytes written.
    pub fn put(&self, d: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        let path = self.path_of(d);
        let dir = path.parent().expect("entry paths have a parent");
        let unwritable = |source| StoreError::Unwritable {
            path: dir.to_path_buf(),
            source,
        };
        fs::create_dir_all(dir).map_err(unwritable)?;
        let bytes = encode(d, entry);
        let mut tmp = tempfile::Builder::new()
            .prefix(".tmp")
            .tempfile_in(dir)
            .map_err(unwritable)?;
        tmp.write_all(&bytes).map_err(unwritable)?;
        tmp.persist(&path).map_err(|e| unwritable(e.error))?;
        Ok(bytes.len() as u64)
    }

    /// Every entry file with its size and modification time.
    fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let mut out = Vec::new();
        let Ok(dirs) = fs::read_dir(&self.root) else {
            return out;
        };
        for d in dirs.flatten() {
            let Ok(files) = fs::read_dir(d.path()) else {
                continue;
            };
            for f in files.flatten() {
                if let Ok(m) = f.metadata() {
                    if m.is_file() {
                        let t = m.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                        out.push((f.path(), m.len(), t));
                    }
                }
            }
        }
        out
    }

    /// Total bytes and number of entries.
    pub fn size(&self) -> (u64, u64) {
        let e = self.entries();
        (e.iter().map(|(_, s, _)| s).sum(), e.len() as u64)
    }

    /// Checks every entry; removes and reports the bad ones (and stale
    /// temporary files).
    pub fn verify_all(&self) -> VerifyReport {
        let mut report = VerifyReport::default();
        for (path, _, _) in self.entries() {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            report.checked += 1;
            let problem = match FragmentDigest::from_hex(&name) {
                None => Some("not an entry name".to_string()),
                Some(d) => match fs::read(&path) {
                    Ok(bytes) => decode(&d, &bytes).err().map(|c| format!("{c:?}")),
                    Err(e) => Some(e.to_string()),
                },
            };
            if let Some(p) = problem {
                let _ = fs::remove_file(&path);
                report.removed.push((path, p));
            }
        }
        report
    }

    /// Least-recently-used eviction down to `max_bytes` (to 90% of it, so
    /// that the next compiles do not evict again at once); 0 is no limit.
    pub fn evict_to(&self, max_bytes: u64) -> EvictReport {
        let mut entries = self.entries();
        let mut report = EvictReport::before(&entries);
        if max_bytes == 0 || report.bytes_before <= max_bytes {
            return report;
        }
        let target = max_bytes / 10 * 9;
        entries.sort_by_key(|(p, _, t)| (*t, p.clone()));
        for (path, size, _) in entries {
            if report.bytes_after <= target {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                report.removed += 1;
                report.bytes_after -= size;
            }
        }
        report
    }

    /// Removes entries not used for `age`.
    pub fn evict_older_than(&self, age: Duration) -> EvictReport {
        let now = SystemTime::now();
        let entries = self.entries();
        let mut report = EvictReport::before(&entries);
        for (path, size, t) in entries {
            if now.duration_since(t).unwrap_or_default() > age && fs::remove_file(&path).is_ok() {
                report.removed += 1;
                report.bytes_after -= size;
            }
        }
        report
    }

    /// Removes every entry.
    pub fn clear(&self) -> std::io::Result<()> {
        match fs::remove_dir_all(&self.root) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
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
    (num >= 0.0).then_some((num * mult as f64) as u64)
}

/// Parses ages such as `3600`, `90s`, `30m`, `12h`, `7d`.
pub fn parse_age(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().ok()?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        "d" => n * 86400,
        _ => return None,
    };
    Some(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> FragmentDigest {
        FragmentDigest(*blake3::hash(&[n]).as_bytes())
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
    fn every_flipped_byte_is_detected() {
        let d = digest(3);
        let bytes = encode(&d, &entry(b"payload bytes"));
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x40;
            assert!(decode(&d, &bad).is_err(), "flip at {i} not detected");
        }
        assert!(decode(&d, &bytes[..bytes.len() - 1]).is_err());
        assert!(
            decode(&digest(4), &bytes).is_err(),
            "entry under another key"
        );
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
        let r = s.evict_to(total / 2);
        assert!(r.bytes_after <= total / 2);
        assert!(
            matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)),
            "recently used entry evicted"
        );
        assert!(
            matches!(s.get(&digest(1)).unwrap(), Lookup::Miss),
            "oldest entry kept"
        );
        let r = s.evict_older_than(Duration::from_secs(3600));
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
        assert_eq!(
            FragmentDigest::from_hex(&digest(9).to_hex()),
            Some(digest(9))
        );
    }
}
