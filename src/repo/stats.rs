//! Statistics counters, shared by concurrent invocations.
//!
//! Counters live in `<dir>/stats/<shard>.json`, 16 shards chosen by process
//! id so that parallel `make -j` compiles rarely contend. An update takes an
//! exclusive lock on `<shard>.lock`, reads the shard, adds, writes a
//! temporary file and renames it over the shard: a crash loses at most that
//! invocation's increments, never the file. Statistics are best effort: any
//! I/O problem is ignored (a build never fails because of them).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::fsx::{self, RepoDir};

const SHARDS: u32 = 16;

/// Shards of a counter directory: the statistics take 16; the size
/// ledger (`size`, one update per invocation) needs one, and every shard
/// is two files in the user's repository.
fn shards_of(sub: &str) -> u32 {
    if sub == "stats" {
        SHARDS
    } else {
        1
    }
}

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
    /// Of those, definitions this unit's previous compile did not store:
    /// another unit stored them (a template instance, an inline function).
    pub const DEFINITIONS_SHARED: &str = "definitions_shared";
    /// Fragments written to the repository.
    pub const FRAGMENTS_STORED: &str = "fragments_stored";
    /// Function bodies the optimizer took from the repository as an
    /// earlier compile's inliner left them (no simplification ran on them).
    pub const BODIES_REUSED: &str = "bodies_reused";
    /// Repository entries that failed verification (and were recompiled).
    pub const CORRUPT_ENTRIES: &str = "corrupt_entries";
    /// Units whose object `obj::combine` declined to compose (`ld.lld -r`
    /// and `llvm-objcopy` did it: other bytes, slower), and fragments
    /// `obj::carve` declined to cut out (each compiled as a module of its
    /// own). The reasons are listed with the others.
    pub const COMPOSE_DECLINES: &str = "compose_declines";
    pub const CARVE_DECLINES: &str = "carve_declines";
    /// Units with debug info compiled whole, without the repository
    /// (`debug_fragments` off).
    pub const DEBUG_UNITS_WHOLE: &str = "debug_units_whole";
    /// C units at -O0 without debug info compiled whole, without the
    /// repository (`fragments` "auto").
    pub const C_O0_UNITS_WHOLE: &str = "c_o0_units_whole";
    /// Units whose frontend had run when the pipeline could not finish,
    /// taken from a stored clang object (see `pipeline::clang_units`).
    pub const CLANG_UNITS_REUSED: &str = "clang_units_reused";
    /// Units whose result the unit cache had (nothing compiled).
    pub const UNIT_HITS: &str = "unit_hits";
    /// Units the unit cache looked up and did not have.
    pub const UNIT_MISSES: &str = "unit_misses";
    /// What the units served by the unit cache took to compile when they
    /// were recorded, plus an estimate for the definitions reused from the
    /// repository (`UnitReport::estimated_ms_saved`), in milliseconds.
    pub const COMPILE_MS_SAVED: &str = "compile_ms_saved";

    /// The remote tier (`remote_storage`): entries the
    /// remote had (verified) and did not have, failed requests, entries
    /// that failed verification, round trips, bytes as sent (compressed)
    /// and as entries (uncompressed), and the time compiles waited on it.
    pub const REMOTE_HITS: &str = "remote_hits";
    pub const REMOTE_MISSES: &str = "remote_misses";
    pub const REMOTE_ERRORS: &str = "remote_errors";
    pub const REMOTE_CORRUPT: &str = "remote_corrupt";
    pub const REMOTE_ROUND_TRIPS: &str = "remote_round_trips";
    pub const REMOTE_BYTES_READ: &str = "remote_bytes_read";
    pub const REMOTE_BYTES_WRITTEN: &str = "remote_bytes_written";
    pub const REMOTE_RAW_BYTES_READ: &str = "remote_raw_bytes_read";
    pub const REMOTE_RAW_BYTES_WRITTEN: &str = "remote_raw_bytes_written";
    pub const REMOTE_WAIT_MS: &str = "remote_wait_ms";

    /// Every counter, in the order `--show-stats` prints them (a fresh
    /// repository shows each at 0).
    pub const ALL: &[&str] = &[
        COMPILES,
        PASSTHROUGH,
        FALLBACKS,
        LINKS,
        COMPILE_ERRORS,
        DEFINITIONS_TOTAL,
        DEFINITIONS_COMPILED,
        DEFINITIONS_PRUNED,
        DEFINITIONS_SHARED,
        FRAGMENTS_STORED,
        BODIES_REUSED,
        CORRUPT_ENTRIES,
        COMPOSE_DECLINES,
        CARVE_DECLINES,
        DEBUG_UNITS_WHOLE,
        C_O0_UNITS_WHOLE,
        CLANG_UNITS_REUSED,
        UNIT_HITS,
        UNIT_MISSES,
        COMPILE_MS_SAVED,
        REMOTE_HITS,
        REMOTE_MISSES,
        REMOTE_ERRORS,
        REMOTE_CORRUPT,
        REMOTE_ROUND_TRIPS,
        REMOTE_BYTES_READ,
        REMOTE_BYTES_WRITTEN,
        REMOTE_RAW_BYTES_READ,
        REMOTE_RAW_BYTES_WRITTEN,
        REMOTE_WAIT_MS,
    ];
}

/// Why an invocation was passed to clang or a unit fell back to it: a fixed
/// category (what the statistics count by) and the detail of this case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub category: Category,
    pub detail: String,
}

impl Reason {
    pub fn new(category: Category, detail: impl Into<String>) -> Reason {
        Reason {
            category,
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.category.key(), self.detail)
    }
}

/// The fixed reasons. Passthrough: the whole invocation ran clang with the
/// original arguments. Fallback: a unit's frontend ran, then clang compiled
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    /// A mode or option repocc leaves to clang (`-E`, `-flto`, ...).
    UnsupportedOption,
    /// An option that is not in repocc's table.
    UnknownOption,
    /// An option value clang rejects or repocc does not model.
    InvalidValue,
    /// An input language repocc leaves to clang (or an unknown `-x`).
    InputLanguage,
    /// Input from stdin or output to stdout.
    StandardStream,
    /// A missing input file (clang reports it).
    MissingInput,
    /// An output location clang must report (unwritable, a directory).
    OutputLocation,
    /// A command line without sources to compile, or with outputs repocc
    /// cannot name (`-c` with linker inputs, `-o` with several outputs).
    CommandLine,
    /// Preprocessed and unpreprocessed sources in one invocation (clang's
    /// unused-argument warnings depend on the mix).
    MixedInputs,
    /// A response file clang must report (recursive, too large).
    ResponseFile,
    /// An argument that is not UTF-8.
    NonUtf8Argument,
    /// `disable` is set.
    Disabled,
    /// A launcher for a compiler other than clang-19.
    OtherCompiler,
    /// LLVM reported an error or warning while optimizing or generating
    /// code: clang compiled the unit so that the user sees its words.
    BackendDiagnostic,
    /// The pipeline failed on a unit clang's frontend accepted.
    PipelineError,
    /// LLVM stopped with a fatal error; clang compiled the invocation.
    LlvmFatalError,
    /// The unit cache was not used for a unit (an option it cannot see
    /// through, an environment variable).
    UnitNotCached,
    /// A unit compiled after a unit cache miss was not recorded (a file
    /// changed during the compile, `__TIME__`, ...).
    UnitNotRecorded,
    /// `obj::combine` declined a unit's object (see `COMPOSE_DECLINES`).
    ComposeDeclined,
    /// `obj::carve` declined a fragment (see `CARVE_DECLINES`).
    CarveDeclined,
}

impl Category {
    /// The key in the statistics (stable).
    pub fn key(self) -> &'static str {
        match self {
            Category::UnsupportedOption => "passthrough: unsupported option",
            Category::UnknownOption => "passthrough: unknown option",
            Category::InvalidValue => "passthrough: invalid option value",
            Category::InputLanguage => "passthrough: input language",
            Category::StandardStream => "passthrough: stdin or stdout",
            Category::MissingInput => "passthrough: missing input",
            Category::OutputLocation => "passthrough: output location",
            Category::CommandLine => "passthrough: command line without compilable units",
            Category::MixedInputs => "passthrough: preprocessed and unpreprocessed sources",
            Category::ResponseFile => "passthrough: response file",
            Category::NonUtf8Argument => "passthrough: non-UTF-8 argument",
            Category::Disabled => "passthrough: disabled by configuration",
            Category::OtherCompiler => "passthrough: launcher for another compiler",
            Category::BackendDiagnostic => "fallback: backend diagnostic",
            Category::PipelineError => "fallback: pipeline error",
            Category::LlvmFatalError => "fallback: LLVM fatal error",
            Category::UnitNotCached => "unit cache: not used",
            Category::UnitNotRecorded => "unit cache: not recorded",
            Category::ComposeDeclined => "decline: composing (ld.lld -r instead)",
            Category::CarveDeclined => "decline: carving (a module per fragment instead)",
        }
    }
}

/// Most distinct details kept per reason (the most recent).
const MAX_DETAILS: usize = 5;

/// How often a reason occurred, and its latest distinct details.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(from = "ReasonRepr")]
pub struct ReasonCount {
    pub count: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

/// Shards written before reasons had details held a bare count.
#[derive(Deserialize)]
#[serde(untagged)]
enum ReasonRepr {
    Count(u64),
    Full {
        count: u64,
        #[serde(default)]
        details: Vec<String>,
    },
}

impl From<ReasonRepr> for ReasonCount {
    fn from(r: ReasonRepr) -> ReasonCount {
        match r {
            ReasonRepr::Count(count) => ReasonCount {
                count,
                details: Vec::new(),
            },
            ReasonRepr::Full { count, details } => ReasonCount { count, details },
        }
    }
}

impl ReasonCount {
    fn add(&mut self, other: &ReasonCount) {
        self.count = self.count.saturating_add(other.count);
        for d in &other.details {
            self.details.retain(|x| x != d);
            self.details.push(d.clone());
        }
        let excess = self.details.len().saturating_sub(MAX_DETAILS);
        self.details.drain(..excess);
    }
}

/// A set of counter increments, plus per-reason counts for passthrough and
/// fallbacks. Counters saturate; they never wrap.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Counters {
    #[serde(default)]
    pub counters: BTreeMap<String, u64>,
    #[serde(default)]
    pub reasons: BTreeMap<String, ReasonCount>,
}

impl Counters {
    pub fn add(&mut self, key: &str, n: u64) {
        let c = self.counters.entry(key.to_string()).or_default();
        *c = c.saturating_add(n);
    }

    pub fn add_reason(&mut self, reason: &Reason) {
        let mut detail = reason.detail.clone();
        if detail.len() > 200 {
            let mut cut = 200;
            while !detail.is_char_boundary(cut) {
                cut -= 1;
            }
            detail.truncate(cut);
        }
        self.reasons
            .entry(reason.category.key().to_string())
            .or_default()
            .add(&ReasonCount {
                count: 1,
                details: vec![detail],
            });
    }

    pub fn get(&self, key: &str) -> u64 {
        self.counters.get(key).copied().unwrap_or(0)
    }

    pub fn merge(&mut self, other: &Counters) {
        for (k, v) in &other.counters {
            self.add(k, *v);
        }
        for (k, v) in &other.reasons {
            self.reasons.entry(k.clone()).or_default().add(v);
        }
    }

    pub fn is_empty(&self) -> bool {
        self.counters.is_empty() && self.reasons.is_empty()
    }
}

/// Largest shard file read (a shard holds a few dozen counters).
const MAX_SHARD_BYTES: u64 = 1 << 20;

/// Adds `delta` to the shared counters. Errors are returned for tests; the
/// driver ignores them.
pub fn record(repo: &Path, delta: &Counters) -> Result<()> {
    record_in(repo, STATS_DIR, delta)
}

/// The statistics' directory name inside the repository.
const STATS_DIR: &str = "stats";

/// Adds `delta` to the sharded counters kept in `repo/sub` (the
/// statistics, or another ledger such as the repository's size accounting).
pub fn record_in(repo: &Path, sub: &str, delta: &Counters) -> Result<()> {
    if delta.is_empty() {
        return Ok(());
    }
    let dir = RepoDir::open_path(repo, &[sub], true)
        .with_context(|| format!("opening {}", repo.join(sub).display()))?
        .context("the directory was not created")?;
    let shard = std::process::id() % shards_of(sub);
    let lock_name = format!("{shard}.lock");
    let lock = dir
        .lock_file(&lock_name)
        .with_context(|| format!("opening {}", dir.path().join(&lock_name).display()))?;
    lock.lock()
        .with_context(|| format!("locking {}", dir.path().join(&lock_name).display()))?;
    let name = format!("{shard}.json");
    let mut current = read_shard(&dir, &name);
    current.merge(delta);
    dir.write_atomic(&name, &serde_json::to_vec(&current)?, fsx::file_mode())
        .with_context(|| format!("writing {}", dir.path().join(&name).display()))?;
    drop(lock);
    Ok(())
}

fn read_shard(dir: &RepoDir, name: &str) -> Counters {
    dir.read_regular(name, MAX_SHARD_BYTES)
        .ok()
        .and_then(|(b, _)| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// The sum over all shards.
pub fn read(repo: &Path) -> Counters {
    read_in(repo, STATS_DIR)
}

/// The sum over the shards kept in `repo/sub`.
pub fn read_in(repo: &Path, sub: &str) -> Counters {
    let mut total = Counters::default();
    let Ok(Some(dir)) = RepoDir::open_path(repo, &[sub], false) else {
        return total;
    };
    for e in dir.list().unwrap_or_default() {
        if e.kind == fsx::Kind::Regular && e.name.ends_with(".json") {
            total.merge(&read_shard(&dir, &e.name));
        }
    }
    total
}

/// Resets every counter.
pub fn zero(repo: &Path) -> Result<()> {
    zero_in(repo, STATS_DIR)
}

/// Resets the counters kept in `repo/sub`.
pub fn zero_in(repo: &Path, sub: &str) -> Result<()> {
    let dir = match RepoDir::open_path(repo, &[sub], false) {
        Ok(Some(d)) => d,
        Ok(None) => return Ok(()),
        // Not a real directory (a symlink): no counters to zero, and what
        // is in the way goes (the next compile makes the directory).
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            let Some(root) = RepoDir::open_root(repo, false)? else {
                return Ok(());
            };
            return root
                .remove(sub)
                .with_context(|| format!("removing {}", repo.join(sub).display()));
        }
        Err(e) => return Err(e).with_context(|| format!("opening {}", repo.join(sub).display())),
    };
    for shard in 0..SHARDS {
        let name = format!("{shard}.json");
        if dir.kind_of(&name)?.is_none() {
            continue;
        }
        let lock = dir.lock_file(&format!("{shard}.lock"))?;
        lock.lock()?;
        dir.remove(&name)
            .with_context(|| format!("removing {}", dir.path().join(&name).display()))?;
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
        c.add_reason(&Reason::new(Category::UnknownOption, "--x"));
        record(d.path(), &c).unwrap();
        record(d.path(), &c).unwrap();
        let r = read(d.path());
        assert_eq!(r.get(key::COMPILES), 4);
        let reason = &r.reasons[Category::UnknownOption.key()];
        assert_eq!(
            (reason.count, reason.details.clone()),
            (2, vec!["--x".to_string()])
        );
        zero(d.path()).unwrap();
        assert!(read(d.path()).is_empty());
    }

    #[test]
    fn counters_saturate_and_old_shards_still_read() {
        let mut c = Counters::default();
        c.add(key::COMPILES, u64::MAX - 1);
        c.add(key::COMPILES, 5);
        assert_eq!(c.get(key::COMPILES), u64::MAX);
        let old: Counters =
            serde_json::from_str(r#"{"counters":{"compiles":3},"reasons":{"free text":2}}"#)
                .unwrap();
        assert_eq!(old.reasons["free text"].count, 2);
        let mut many = Counters::default();
        for i in 0..20 {
            many.add_reason(&Reason::new(Category::UnknownOption, format!("--o{i}")));
        }
        let r = &many.reasons[Category::UnknownOption.key()];
        assert_eq!(r.count, 20);
        assert_eq!(r.details.len(), MAX_DETAILS);
        assert_eq!(r.details.last().unwrap(), "--o19");
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
