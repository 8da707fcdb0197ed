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

use std::time::{Duration, SystemTime};

pub use super::store::{Entry, EntryKind, EvictReport, FragmentDigest, Lookup, StoreError};

/// One stored entry, as listed by [`Storage::entries`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    pub key: FragmentDigest,
    pub bytes: u64,
    /// When it was last used (least-recently-used order).
    pub last_used: SystemTime,
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
    /// Every entry.
    fn entries(&self) -> Vec<EntryInfo>;
}

impl EvictReport {
    /// The report before anything is removed.
    fn before(entries: &[EntryInfo]) -> EvictReport {
        let total: u64 = entries.iter().map(|e| e.bytes).sum();
        EvictReport {
            entries_before: entries.len() as u64,
            bytes_before: total,
            removed: 0,
            bytes_after: total,
        }
    }
}

/// Least-recently-used eviction down to `max_bytes` (to 90% of it, so that
/// the next compiles do not evict again at once); 0 is no limit.
pub fn evict_to(storage: &dyn Storage, max_bytes: u64) -> EvictReport {
    let mut entries = storage.entries();
    let mut report = EvictReport::before(&entries);
    if max_bytes == 0 || report.bytes_before <= max_bytes {
        return report;
    }
    let target = max_bytes / 10 * 9;
    entries.sort_by_key(|e| (e.last_used, e.key));
    for e in entries {
        if report.bytes_after <= target {
            break;
        }
        if storage.remove(&e.key).is_ok() {
            report.removed += 1;
            report.bytes_after = report.bytes_after.saturating_sub(e.bytes);
        }
    }
    report
}

/// Removes entries not used for `age`.
pub fn evict_older_than(storage: &dyn Storage, age: Duration) -> EvictReport {
    let now = SystemTime::now();
    let entries = storage.entries();
    let mut report = EvictReport::before(&entries);
    for e in entries {
        if now.duration_since(e.last_used).unwrap_or_default() > age
            && storage.remove(&e.key).is_ok()
        {
            report.removed += 1;
            report.bytes_after = report.bytes_after.saturating_sub(e.bytes);
        }
    }
    report
}
