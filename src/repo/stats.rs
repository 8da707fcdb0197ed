//! Statistics counters, shared by concurrent invocations.
//!
//! Counters live in `<dir>/stats/<shard>.json`, 16 shards chosen by process
//! id so that parallel `make -j` compiles rarely contend. An update takes an
//! exclusive lock on `<shard>.lock`, reads the shard, adds, writes a
//! temporary file and renames it over the shard: a crash loses at most that
//! invocation's increments, never the file. Statistics are best effort: any
//! I/O problem is ignored (a build never fails because of them).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

const SHARDS: u32 = 16;

/// Counter names (stable: `--show-stats --format json` prints them).
pub mod key {
    /// Translation units compiled through the pipeline.
    pub const COMPILES: &str = "compiles";
    /// Invocations run by clang with the original arguments.
    pub const PASSTHROUGH: &str = "passthrough";
    /// Units the pipeline gave up on and compiled with plain clang.
    pub const FALLBACKS: &str = "fallbacks";
    /// Link-only invocations (run by clang unchanged).
    pub const LINKS: &str = "links";
    /// Units whose frontend reported errors (the user's code).
    pub const COMPILE_ERRORS: &str = "compile_errors";
    /// Functions and global variables defined in the units compiled.
    pub const DEFINITIONS_TOTAL: &str = "definitions_total";
    /// Definitions code-generated (not taken from the repository).
    pub const DEFINITIONS_COMPILED: &str = "definitions_compiled";
    /// Definitions whose code came from the repository.
    pub const DEFINITIONS_PRUNED: &str = "definitions_pruned";
    /// Fragments written to the repository.
    pub const FRAGMENTS_STORED: &str = "fragments_stored";
    /// Repository entries that failed verification (and were recompiled).
    pub const CORRUPT_ENTRIES: &str = "corrupt_entries";
    /// Units with debug info compiled whole, without the repository
    /// (`debug_fragments` off).
    pub const DEBUG_UNITS_WHOLE: &str = "debug_units_whole";
}

/// A set of counter increments, plus per-reason counts for passthrough and
/// fallbacks.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counters {
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    #[serde(default)]
    pub reasons: BTreeMap<String, u64>,
}

impl Counters {
    pub fn add(&mut self, key: &str, n: u64) {
        *self.counters.entry(key.to_string()).or_default() += n;
    }

    pub fn add_reason(&mut self, reason: &str) {
        *self.reasons.entry(reason.to_string()).or_default() += 1;
    }

    pub fn get(&self, key: &str) -> u64 {
        self.counters.get(key).copied().unwrap_or(0)
    }

    fn merge(&mut self, other: &Counters) {
        for (k, v) in &other.counters {
            *self.counters.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.reasons {
            *self.reasons.entry(k.clone()).or_default() += v;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty() && self.reasons.is_empty()
    }
}

/// Opens (creating it if needed) a file used only for its advisory lock.
pub(crate) fn open_lock_file(path: &Path) -> Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

fn stats_dir(repo: &Path) -> PathBuf {
    repo.join("stats")
}

/// Adds `delta` to the shared counters. Errors are returned for tests; the
/// driver ignores them.
pub fn record(repo: &Path, delta: &Counters) -> Result<()> {
    record_in(&stats_dir(repo), delta)
}

/// Adds `delta` to the sharded counters kept in `dir` (the statistics, or
/// another ledger such as the repository's size accounting).
pub fn record_in(dir: &Path, delta: &Counters) -> Result<()> {
    if delta.is_empty() {
        return Ok(());
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let shard = std::process::id() % SHARDS;
    let lock_path = dir.join(format!("{shard}.lock"));
    let lock = open_lock_file(&lock_path)?;
    lock.lock()
        .with_context(|| format!("locking {}", lock_path.display()))?;
    let path = dir.join(format!("{shard}.json"));
    let mut current = read_shard(&path);
    current.merge(delta);
    let mut tmp = tempfile::Builder::new().prefix(".stats").tempfile_in(dir)?;
    tmp.write_all(&serde_json::to_vec(&current)?)?;
    tmp.persist(&path)
        .with_context(|| format!("writing {}", path.display()))?;
    drop(lock);
    Ok(())
}

fn read_shard(path: &Path) -> Counters {
    fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The sum over all shards.
pub fn read(repo: &Path) -> Counters {
    read_in(&stats_dir(repo))
}

/// The sum over the shards kept in `dir`.
pub fn read_in(dir: &Path) -> Counters {
    let mut total = Counters::default();
    let Ok(entries) = fs::read_dir(dir) else {
        return total;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.extension().and_then(|e| e.to_str()) == Some("json") {
            total.merge(&read_shard(&p));
        }
    }
    total
}

/// Resets every counter.
pub fn zero(repo: &Path) -> Result<()> {
    zero_in(&stats_dir(repo))
}

/// Resets the counters kept in `dir`.
pub fn zero_in(dir: &Path) -> Result<()> {
    for shard in 0..SHARDS {
        let lock_path = dir.join(format!("{shard}.lock"));
        let path = dir.join(format!("{shard}.json"));
        if !path.exists() {
            continue;
        }
        let lock = open_lock_file(&lock_path)?;
        lock.lock()?;
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_read_zero() {
        let d = tempfile::tempdir().unwrap();
        let mut c = Counters::default();
        c.add(key::COMPILES, 2);
        c.add_reason("unknown option --x");
        record(d.path(), &c).unwrap();
        record(d.path(), &c).unwrap();
        let r = read(d.path());
        assert_eq!(r.get(key::COMPILES), 4);
        assert_eq!(r.reasons["unknown option --x"], 2);
        zero(d.path()).unwrap();
        assert!(read(d.path()).is_empty());
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let d = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let mut c = Counters::default();
                        c.add(key::PASSTHROUGH, 1);
                        record(d.path(), &c).unwrap();
                    }
                });
            }
        });
        assert_eq!(read(d.path()).get(key::PASSTHROUGH), 200);
    }

    #[test]
    fn unwritable_directory_is_an_error_not_a_panic() {
        let r = record(Path::new("/proc/repocc-no"), &{
            let mut c = Counters::default();
            c.add(key::COMPILES, 1);
            c
        });
        assert!(r.is_err());
    }
}
