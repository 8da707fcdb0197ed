//! The storage interface in front of the repository: what the pipeline
//! needs of wherever entries live — get, put, remove, iterate — with a typed
//! error. The file store (`store::Store`) is the first implementation; a
//! second tier (a shared server) is another implementation, or a wrapper
//! that reads through to it, and the pipeline does not change.
//!
//! Every implementation keeps the store's contract: a `get` returns an
//! entry only after verifying it against its key and checksum (a bad one
//! is `Corrupt`, never a hit), a `put` is atomic (readers see the whole
//! entry or none), and concurrent writers of one key are harmless (equal
//! keys mean equivalent entries).

use std::fmt;
use std::path::PathBuf;

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
    /// Object code for a definition no other unit is expected to hold: no
    /// member is an inline function or a template instance (`linkonce`).
    /// Read as [`EntryKind::Object`]; stored compressed against its unit's
    /// object where the pack holds one (`repo::dictionary`), which a unit
    /// reading a shared instance from another's pack should not pay for.
    UnitObject,
    /// The optimizer deleted the definition (fully inlined or dead).
    Deleted,
    /// A whole unit's object, compiled by clang after the pipeline gave up
    /// on the unit (see `pipeline::clang_units`).
    ClangObject,
    /// The unit goes to clang, whose compile printed diagnostics (so its
    /// object cannot be replayed without them).
    ClangOnly,
    /// The unit cache's manifest of a unit: which files it read, and the
    /// results for each version of them (see `unit_cache::manifest`).
    UnitManifest,
    /// A unit's finished result: object, dependency file and diagnostics.
    UnitResult,
    /// The digests of a unit's last compile, for `REPOCC_EXPLAIN` (see
    /// `pipeline::explain`).
    History,
    /// clang's include search list for a set of options (see
    /// `unit_cache::search`).
    SearchList,
    /// That clang compiled a unit with these arguments (empty; see
    /// `pipeline::clang_units`).
    ClangUnitHint,
    /// Where a function's body after the inliner is stored: which
    /// [`EntryKind::Bodies`] entry, under which name (see
    /// `ir::bodies`).
    BodyIndex,
    /// Function bodies after the inliner, as compressed bitcode (see
    /// `ir::bodies`).
    Bodies,
}

impl EntryKind {
    pub(super) fn byte(self) -> u8 {
        match self {
            EntryKind::Object => 0,
            EntryKind::Deleted => 1,
            EntryKind::ClangObject => 2,
            EntryKind::ClangOnly => 3,
            EntryKind::UnitManifest => 4,
            EntryKind::UnitResult => 5,
            EntryKind::History => 6,
            EntryKind::SearchList => 7,
            EntryKind::ClangUnitHint => 8,
            EntryKind::BodyIndex => 9,
            EntryKind::Bodies => 10,
            EntryKind::UnitObject => 11,
        }
    }

    /// Whether the entry holds a fragment's object code.
    pub fn is_object(self) -> bool {
        matches!(self, EntryKind::Object | EntryKind::UnitObject)
    }

    /// The kind a stored byte names ([`EntryKind::byte`]).
    pub(super) fn of_byte(b: u8) -> Option<EntryKind> {
        Some(match b {
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
            11 => EntryKind::UnitObject,
            _ => return None,
        })
    }
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
    /// The directories a write went into kept being removed while it ran
    /// (`--clear` beside the build): nothing stored, nothing to say.
    RemovedMeanwhile { path: PathBuf },
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
            StoreError::RemovedMeanwhile { path } => {
                write!(f, "repository {} was removed while written", path.display())
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
    /// Something other than a regular file at the entry's place.
    NotRegular(String),
    /// Larger than any entry repocc writes.
    TooLarge,
}

/// The outcome of a lookup.
#[derive(Debug)]
pub enum Lookup {
    Hit(Entry),
    Miss,
    /// The entry existed but failed verification; it has been removed.
    Corrupt(Corruption),
}

/// Counts from eviction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EvictReport {
    pub entries_before: u64,
    pub bytes_before: u64,
    pub removed: u64,
    pub bytes_after: u64,
}

/// One stored entry, as listed by `Store::entries`.
#[cfg(test)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    pub key: FragmentDigest,
    pub bytes: u64,
    /// When it was last used (least-recently-used order).
    pub last_used: std::time::SystemTime,
}

pub trait Storage: Sync {
    /// Reads and verifies the entry under `key`.
    fn get(&self, key: &FragmentDigest) -> Result<Lookup, StoreError>;
    /// As [`Storage::get`], from this machine's store only: for what only
    /// matters here (a unit's history), never worth a round trip.
    fn get_local(&self, key: &FragmentDigest) -> Result<Lookup, StoreError> {
        self.get(key)
    }
    /// Says that `keys` are about to be read (a unit's fragments): a tier
    /// behind a network asks for them in one round trip.
    fn prefetch(&self, keys: &[FragmentDigest]) {
        let _ = keys;
    }
    /// Stores `entry` under `key`; returns the bytes written.
    fn put(&self, key: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError>;
    /// Stores several entries (a compile's new fragments) at once; returns
    /// the bytes written. Of entries with the same key, the last is stored.
    fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        items.iter().map(|(k, e)| self.put(k, e)).sum()
    }
    /// Removes the entry under `key` (missing is not an error).
    fn remove(&self, key: &FragmentDigest) -> Result<(), StoreError>;
}
