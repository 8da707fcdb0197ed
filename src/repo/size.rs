//! Size accounting and automatic eviction during builds.
//!
//! Walking the store on every compile would cost more than many compiles,
//! so (as ccache does) a compile only adds the bytes it stored to a sharded
//! ledger (`<dir>/size/<shard>.json`, the same locked shards as the
//! statistics) and compares the repository's last measured size plus the
//! bytes written since with the limit. The compile that finds the limit
//! passed takes `<dir>/size/cleanup.lock` without waiting (another compile
//! already cleaning up is enough), evicts the least recently used entries
//! down to 90% of the limit, and records the measured size. The estimate
//! errs high (an entry written twice by racing compiles counts twice), so
//! eviction can only come early, and every cleanup measures afresh.
//!
//! Pruning reads a stored fragment's bytes when it decides to reuse it, so
//! an entry evicted by a concurrent build afterwards costs nothing.

use std::path::Path;

use anyhow::{Context, Result};

use super::fsx::{self, RepoDir};
use super::stats::{self, Counters};
use super::storage::EvictReport;
use super::store::Store;

const BYTES_WRITTEN: &str = "bytes_written";
/// The ledger's directory name inside the repository.
const LEDGER: &str = "size";
const MEASURED: &str = "measured";

fn read_measured(repo: &Path) -> Option<u64> {
    let dir = RepoDir::open_path(repo, &[LEDGER], false).ok()??;
    let (bytes, _) = dir.read_regular(MEASURED, 64).ok()?;
    std::str::from_utf8(&bytes).ok()?.trim().parse().ok()
}

fn write_measured(dir: &RepoDir, bytes: u64) -> Result<()> {
    dir.write_atomic(MEASURED, bytes.to_string().as_bytes(), fsx::file_mode())
        .with_context(|| format!("writing {}", dir.path().join(MEASURED).display()))?;
    Ok(())
}

fn ledger(repo: &Path) -> Result<RepoDir> {
    RepoDir::open_path(repo, &[LEDGER], true)
        .with_context(|| format!("opening {}", repo.join(LEDGER).display()))?
        .context("the size ledger was not created")
}

/// The repository's estimated size: the last measurement plus the bytes
/// written since.
pub fn estimate(repo: &Path) -> Option<u64> {
    let written = stats::read_in(repo, LEDGER).get(BYTES_WRITTEN);
    read_measured(repo).map(|m| m.saturating_add(written))
}

/// What [`evict_if_over`] did.
#[derive(Debug)]
pub enum Cleanup {
    /// The estimate is within the limit (or there is none).
    NotNeeded,
    /// Another holder of the cleanup lock: a compile cleaning up now, or
    /// (for a moment) a child process forked while a thread of this one
    /// held the lock, which keeps it until the child's `exec`.
    Busy,
    /// Measured and evicted down to 90% of the limit (the report's
    /// `removed` may be 0: the estimate was high).
    Done(EvictReport),
}

/// Adds `bytes` just stored by a compile to the ledger.
fn account(repo: &Path, bytes: u64) -> Result<()> {
    let mut delta = Counters::default();
    delta.add(BYTES_WRITTEN, bytes);
    stats::record_in(repo, LEDGER, &delta)
}

/// Evicts when the repository's estimate has passed `max_bytes` (0: no
/// limit) and no other compile is cleaning up.
pub fn evict_if_over(repo: &Path, max_bytes: u64) -> Result<Cleanup> {
    if max_bytes == 0 {
        return Ok(Cleanup::NotNeeded);
    }
    // No measurement yet (a new repository, or one written by a repocc
    // without size accounting): measure, once, under the cleanup lock.
    let over = match estimate(repo) {
        Some(size) => size > max_bytes,
        None => true,
    };
    if !over {
        return Ok(Cleanup::NotNeeded);
    }
    let dir = ledger(repo)?;
    let lock = dir.lock_file("cleanup.lock")?;
    if lock.try_lock().is_err() {
        return Ok(Cleanup::Busy);
    }
    // Zero the ledger first: bytes written while the walk runs are counted
    // afresh (or measured by the walk, and so counted twice: early, never
    // late).
    stats::zero_in(repo, LEDGER)?;
    let report = Store::new(repo).evict_to(max_bytes);
    write_measured(&dir, report.bytes_after)?;
    drop(lock);
    Ok(Cleanup::Done(report))
}

/// Accounts for `bytes` just stored by a compile and, when the repository
/// has grown past `max_bytes` (0: no limit), evicts (see
/// [`evict_if_over`]).
pub fn account_and_maybe_evict(repo: &Path, bytes: u64, max_bytes: u64) -> Result<Cleanup> {
    if bytes == 0 {
        return Ok(Cleanup::NotNeeded);
    }
    account(repo, bytes)?;
    evict_if_over(repo, max_bytes)
}

/// Forgets the accounting (after `--clear` or a manual cleanup, which
/// measure the store themselves).
pub fn record_measured(repo: &Path, bytes: u64) -> Result<()> {
    let dir = ledger(repo)?;
    stats::zero_in(repo, LEDGER)?;
    write_measured(&dir, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::storage::{Entry, EntryKind, FragmentDigest};

    fn put(store: &Store, n: u8, len: usize) -> u64 {
        let entry = Entry {
            kind: EntryKind::Object,
            metadata: Vec::new(),
            payload: crate::repo::store::tests::noise(n, len),
        };
        store.put(&FragmentDigest([n; 32]), &entry).unwrap()
    }

    #[test]
    fn builds_evict_once_the_limit_is_passed() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        let limit = 10_000;
        let mut evictions = 0;
        for n in 0..40u8 {
            // Eviction goes by the packs' mtimes, which the kernel keeps at
            // its clock tick (up to 10 ms): one tick apart, the order is
            // the order written.
            std::thread::sleep(std::time::Duration::from_millis(11));
            let bytes = put(&store, n, 1000);
            let mut cleanup = account_and_maybe_evict(d.path(), bytes, limit).unwrap();
            // The lock is busy only while another test's child process,
            // forked as this thread held it, has not reached `exec` yet.
            while matches!(cleanup, Cleanup::Busy) {
                std::thread::sleep(std::time::Duration::from_millis(1));
                cleanup = evict_if_over(d.path(), limit).unwrap();
            }
            if matches!(&cleanup, Cleanup::Done(r) if r.removed > 0) {
                evictions += 1;
            }
            let (size, _) = store.size();
            assert!(size <= limit, "after entry {n}: {size} bytes > {limit}");
            assert!(
                estimate(d.path()).unwrap() >= size,
                "the estimate errs high"
            );
        }
        assert!(evictions >= 3, "{evictions} evictions");
        // The newest entry survived; the oldest went.
        assert!(matches!(
            store.get(&FragmentDigest([39; 32])),
            Ok(crate::repo::storage::Lookup::Hit(_))
        ));
        assert!(matches!(
            store.get(&FragmentDigest([0; 32])),
            Ok(crate::repo::storage::Lookup::Miss)
        ));
    }

    #[test]
    fn zero_means_no_limit() {
        let d = tempfile::tempdir().unwrap();
        let store = Store::new(d.path());
        for n in 0..10u8 {
            let bytes = put(&store, n, 1000);
            assert!(matches!(
                account_and_maybe_evict(d.path(), bytes, 0).unwrap(),
                Cleanup::NotNeeded
            ));
        }
        assert_eq!(store.size().1, 10);
    }
}
