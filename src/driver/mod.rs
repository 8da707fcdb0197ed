//! The compiler driver: what happens to one `repocc ...` invocation.
//!
//! Reading guide, in the order data flows:
//! - [`response`]: `@file` expansion;
//! - [`args`]: the option table and the split into options and inputs;
//! - [`plan`]: classification — compile N units, link only, or passthrough —
//!   and the per-unit frontend arguments, output paths and link command;
//! - [`toolchain`]: finding clang-19 (never repocc itself);
//! - [`jobs`]: jobserver tokens for parallel units;
//! - this file: executing the plan — units through [`crate::pipeline`] in
//!   parallel, diagnostics in order, fallback to plain clang, the link, and
//!   the statistics.

pub mod args;
pub mod jobs;
pub mod plan;
pub mod response;
pub mod toolchain;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use rayon::prelude::*;

use crate::config::{self, Config, Switch};
use crate::ir::frontend::{self, Clang, RealClang};
use crate::pipeline::{self, PipelineOptions};
use crate::repo::size;
use crate::repo::stats::{self, key, Category, Counters, Reason};
use plan::{CompilePlan, LinkArg, Plan, TempObjects};
use toolchain::{DriverKind, RECURSION_GUARD};

/// The command to re-run if LLVM hits a fatal error mid-pipeline.
static FALLBACK_COMMAND: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();
/// Where the fatal-error handler records its fallback (statistics on).
static STATS_REPO: OnceLock<PathBuf> = OnceLock::new();

fn on_llvm_fatal_error(reason: &str) -> ! {
    say!("repocc: warning: LLVM error ({reason}); compiling with clang instead");
    if let Some(repo) = STATS_REPO.get() {
        let mut c = Counters::default();
        c.add(key::FALLBACKS, 1);
        c.add_reason(&Reason::new(Category::LlvmFatalError, reason));
        let _ = stats::record(repo, &c);
    }
    if let Some((clang, args)) = FALLBACK_COMMAND.get() {
        // exec keeps no destructor: repocc's temporaries go first.
        crate::llvm::remove_interrupt_files();
        let err = Command::new(clang)
            .args(args)
            .env(RECURSION_GUARD, "1")
            .exec();
        say!("repocc: error: running {}: {err}", clang.display());
    }
    std::process::exit(1)
}

fn warn(msg: &str) {
    say!("repocc: warning: {msg}");
}

/// Runs one compiler invocation. `argv0` chooses C or C++; `args` are the
/// arguments after it. Returns the exit code (or never returns, when the
/// invocation is handed to clang with exec).
///
/// Long on purpose: the checks an invocation goes through before it is compiled
/// (recursion, launcher form, disable, non-UTF-8, response files, the plan),
/// each one early return, in the order clang and ccache make them.
pub fn run(argv0: &str, mut args: Vec<OsString>) -> i32 {
    invocation_start();
    if config::switches().recursion {
        say!(
            "repocc: error: recursive invocation: the compiler repocc runs started repocc \
             again (check REPOCC_CLANG / the clang key of the configuration)"
        );
        return 1;
    }
    let loaded = config::load();
    for w in &loaded.warnings {
        warn(w);
    }
    let cfg = loaded.config;
    let kind = DriverKind::from_argv0(argv0);

    // Launcher form: `repocc clang-19 -c x.c` (CMAKE_<LANG>_COMPILER_LAUNCHER).
    let mut compiler_name = match kind {
        DriverKind::C => cfg.clang.clone(),
        DriverKind::Cxx => cfg.clangxx.clone(),
    };
    let mut drive_it = true;
    if let Some(first) = args.first().and_then(|a| a.to_str()).map(str::to_string) {
        if !first.starts_with('-') && toolchain::is_clang_name(&first) {
            compiler_name = first;
            args.remove(0);
        } else if !first.starts_with('-') && toolchain::is_other_compiler_name(&first) {
            compiler_name = first;
            args.remove(0);
            drive_it = false;
        }
    }
    // A launcher given repocc itself as the compiler: drop the repetition.
    while let Some(first) = args.first().and_then(|a| a.to_str()) {
        let base = Path::new(first).file_name().and_then(|b| b.to_str());
        if matches!(base, Some("repocc") | Some("repocc++")) {
            args.remove(0);
        } else {
            break;
        }
    }

    let clang = match toolchain::resolve_compiler(&compiler_name) {
        Ok(p) => p,
        Err(e) => {
            say!("repocc: error: {e:#}");
            return 1;
        }
    };
    let _ = FALLBACK_COMMAND.set((clang.clone(), args.clone()));
    // The repository, if there is one this user alone can write (see
    // `repo::trust`); without it, statistics are not kept either.
    let repo = cfg.usable_repo_dir();
    let stats_repo = repo.as_ref().ok().filter(|_| cfg.stats).cloned();
    if let Some(r) = &stats_repo {
        let _ = STATS_REPO.set(r.clone());
    }
    let record = |c: &Counters| {
        if let Some(r) = &stats_repo {
            let _ = stats::record(r, c);
        }
    };

    let passthrough = |reason: Reason| -> i32 {
        let mut c = Counters::default();
        c.add(key::PASSTHROUGH, 1);
        c.add_reason(&reason);
        record(&c);
        exec_clang(&clang, &args)
    };

    if !drive_it {
        return passthrough(Reason::new(Category::OtherCompiler, compiler_name));
    }
    if cfg.disable {
        return passthrough(Reason::new(Category::Disabled, "disable = true"));
    }
    let Some(utf8): Option<Vec<String>> =
        args.iter().map(|a| a.to_str().map(String::from)).collect()
    else {
        return passthrough(Reason::new(
            Category::NonUtf8Argument,
            "an argument is not UTF-8",
        ));
    };
    let expanded = match response::expand(&utf8) {
        Ok(e) => e,
        Err(reason) => return passthrough(reason),
    };
    let split = args::split(&expanded);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let temps = LazyTemps::default();
    match plan::plan(&split, &cwd, &temps) {
        Plan::Passthrough(reason) => passthrough(reason),
        Plan::LinkOnly => {
            let mut c = Counters::default();
            c.add(key::LINKS, 1);
            record(&c);
            crate::support::temporaries::sweep_killed_scratch_once(SCRATCH_PREFIX);
            // clang's driver in this process when it can: the process
            // clang would add to every link (about 35 ms of start-up) is
            // left out.
            crate::llvm::initialize();
            if let Some(code) =
                in_process_clang(&clang).and_then(|c| c.link_in_process(&expanded).ok())
            {
                return code;
            }
            exec_clang(&clang, &args)
        }
        Plan::Compile(_) if temps.failed.load(std::sync::atomic::Ordering::Relaxed) => passthrough(
            Reason::new(Category::OutputLocation, "no temporary file for an object"),
        ),
        Plan::Compile(p) => {
            let repo = match repo {
                Ok(r) => Some(r),
                Err(why) => {
                    if cfg.fragments != Switch::Off {
                        warn(&why);
                    }
                    None
                }
            };
            // clang-19's frontend in this process where it can be, the
            // process otherwise.
            let in_process = in_process_clang(&clang);
            let process = RealClang { path: clang };
            let runner: &dyn Clang = match &in_process {
                Some(c) => c,
                None => &process,
            };
            let (code, counters) = execute(&p, runner, &cfg, &expanded, repo.as_deref());
            record(&counters);
            code
        }
    }
}

/// Replaces this process with clang and the original arguments (exit code,
/// signals and output are then clang's own).
fn exec_clang(clang: &Path, args: &[OsString]) -> i32 {
    let err = Command::new(clang)
        .args(args)
        .env(RECURSION_GUARD, "1")
        .exec();
    say!("repocc: error: running {}: {err}", clang.display());
    1
}

/// Temporary objects of a compile-and-link, named like clang's
/// (`$TMPDIR/<stem>-XXXXXX.o`) and removed when the invocation ends.
#[derive(Default)]
struct LazyTemps {
    files: std::sync::Mutex<Vec<crate::support::temporaries::TemporaryPath>>,
    /// One could not be made (`$TMPDIR` missing or full): clang, run
    /// instead, reports it in its own words.
    failed: std::sync::atomic::AtomicBool,
}

impl TempObjects for LazyTemps {
    fn object_path(&self, index: usize, source: &str) -> PathBuf {
        let stem = Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "unit".into());
        let made = crate::support::temporaries::TemporaryPath::create(
            tempfile::Builder::new()
                .prefix(&format!("{stem}-"))
                .suffix(".o")
                .rand_bytes(6),
        );
        match made {
            Ok(path) => {
                let p = path.path().to_path_buf();
                if let Ok(mut files) = self.files.lock() {
                    files.push(path);
                }
                p
            }
            Err(_) => {
                self.failed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                std::env::temp_dir().join(format!("repocc-{}-{index}-{stem}.o", std::process::id()))
            }
        }
    }
}

/// The outcome of one unit.
struct UnitResult {
    status: i32,
    /// The pipeline's report, when the pipeline compiled the unit.
    report: Option<pipeline::UnitReport>,
    stderr: Vec<u8>,
    compiled: bool,
    /// clang compiled the unit after its frontend ran, for this reason.
    fallback: Option<Reason>,
    /// The unit's object came from a clang compile the repository
    /// remembered.
    clang_unit_reused: bool,
    frontend_error: bool,
    /// Why clang compiled the unit whole (no repository use), if it did.
    whole: Option<Whole>,
    /// What the unit cache did for the unit.
    unit_cache: UnitCacheUse,
    /// The compile wrote the header list it was given.
    headers_listed: bool,
    /// `REPOCC_TIMINGS` and `REPOCC_EXPLAIN` lines (printed after the
    /// diagnostics, never part of a recorded result).
    notes: String,
}

/// What the unit cache did for a unit.
enum UnitCacheUse {
    /// Not in use (no repository, `unit_cache` off).
    Off,
    /// A hit; the recorded compile took this long (ms).
    Hit(u64),
    /// A miss; the result was recorded, or why not.
    Miss {
        corrupt: bool,
        not_recorded: Option<String>,
    },
    /// The unit cannot be cached, for this reason.
    NotCached(String),
}

impl UnitResult {
    fn failed(status: i32, stderr: Vec<u8>, frontend_error: bool) -> UnitResult {
        UnitResult {
            status,
            report: None,
            stderr,
            compiled: false,
            fallback: None,
            clang_unit_reused: false,
            frontend_error,
            whole: None,
            unit_cache: UnitCacheUse::Off,
            headers_listed: false,
            notes: String::new(),
        }
    }
}

/// Whether we add `-fcolor-diagnostics` when capturing clang's stderr: the
/// user chose nothing and clang, writing to our stderr, would colour (a
/// terminal whose `TERM` LLVM's `terminalHasColors` accepts).
fn force_color(args: &[String]) -> bool {
    let user_chose = args.iter().any(|a| {
        a.starts_with("-fcolor-diagnostics")
            || a.starts_with("-fno-color-diagnostics")
            || (a.starts_with("-fdiagnostics-color") && a != "-fdiagnostics-color=auto")
            || a.starts_with("-fno-diagnostics-color")
    });
    !user_chose
        && std::io::stderr().is_terminal()
        && std::env::var("TERM").is_ok_and(|t| term_has_colors(&t))
}

/// LLVM's `terminalHasColors` (Support/Unix/Process.inc).
fn term_has_colors(term: &str) -> bool {
    matches!(term, "ansi" | "cygwin" | "linux")
        || ["screen", "xterm", "vt100", "rxvt"]
            .iter()
            .any(|p| term.starts_with(p))
        || term.contains("color")
}

/// clang-19 in this process, unless `REPOCC_EXTERNAL_FRONTEND` asks for
/// the process (see `frontend::InProcessClang::for_compiler`).
fn in_process_clang(clang: &Path) -> Option<frontend::InProcessClang> {
    if crate::config::switches().external_frontend {
        return None;
    }
    frontend::InProcessClang::for_compiler(clang)
}

/// Whether C units are compiled whole, without the repository: at -O0
/// without debug info (`fragments` "auto") clang's compile costs less than
/// the repository's (the frontend is most of it, and C has no template
/// instance to share).
fn c_units_whole(cfg: &Config, p: &CompilePlan) -> bool {
    cfg.fragments == Switch::Auto && !p.debug_any && p.codegen.opt == plan::OptLevel::O0
}

/// Compiles every unit (in parallel), prints diagnostics in unit order,
/// links if asked. Returns the exit code and the statistics increments.
///
/// Long on purpose: the invocation's steps in the order the user sees them
/// (compile, report in unit order, link, count), each a call; what stays inline
/// is the bookkeeping that joins them.
fn execute(
    p: &CompilePlan,
    clang: &dyn Clang,
    cfg: &Config,
    args: &[String],
    repo: Option<&Path>,
) -> (i32, Counters) {
    let fragments = cfg.fragments != Switch::Off && repo.is_some();
    let c_units_whole = fragments && c_units_whole(cfg, p);
    // Only units with debug info are concerned (the unit cache's key of
    // the others stays what it was).
    let debug_fragments =
        p.debug_any && (cfg.debug_fragments).applies(p.codegen.opt != plan::OptLevel::O0);
    // Type units hold C's types (C++ fragments declare classes instead);
    // with them LLVM also gives each compile unit of a module its own
    // copy of the other types, as `debug_batch` needs for C++ too.
    // LLVM is set up when a unit first needs it (`LlvmSetup`): a unit
    // cache hit never does.
    let llvm = LlvmSetup {
        repository: fragments,
        debug_types: fragments && debug_fragments,
    };
    crate::llvm::install_fatal_error_handler(on_llvm_fatal_error);
    let unit_cache_on = cfg.unit_cache && repo.is_some();
    let identity = if fragments || unit_cache_on {
        crate::repo::identity::repocc_identity(repo)
    } else {
        String::new()
    };
    let options = PipelineOptions {
        merge_functions: cfg.merge_functions,
        fragments,
        debug_fragments,
        context_bodies: cfg.context_bodies,
        jobs: cfg.jobs(),
        digest_report: crate::config::switches().digest_report,
        explain: crate::config::switches().explain,
        key: pipeline::key::KeyContext::new(identity, &p.codegen),
    };
    let force_color = force_color(args);
    // The repository, when the pipeline uses it; clang's identity goes into
    // the keys of units clang compiles (see `pipeline::clang_units`).
    let file_store = repo.filter(|_| fragments || unit_cache_on).map(|r| {
        let clang_identity = crate::repo::identity::executable_digest(clang.path(), Some(r))
            .unwrap_or_else(|_| clang.path().display().to_string());
        (crate::repo::store::Store::for_invocation(r), clang_identity)
    });
    // The remote tier, read through behind the local store.
    let remote = file_store
        .as_ref()
        .and_then(|_| cfg.remote())
        .and_then(
            |settings| match crate::repo::remote::Remote::new(settings) {
                Ok(r) => Some(r),
                Err(why) => {
                    say!("repocc: warning: remote storage: {why}; going on without it");
                    None
                }
            },
        );
    let tiered = file_store
        .as_ref()
        .zip(remote.as_ref())
        .map(|((store, _), remote)| crate::repo::tiered::Tiered::new(store, remote));
    let storage: Option<(&dyn crate::repo::storage::Storage, &str)> =
        file_store.as_ref().map(|(store, clang_identity)| {
            let s: &dyn crate::repo::storage::Storage = match &tiered {
                Some(t) => t,
                None => store,
            };
            (s, clang_identity.as_str())
        });
    let repository = storage
        .filter(|_| fragments)
        .map(|(storage, clang_identity)| UnitRepository {
            storage,
            clang_identity,
        });
    let scratch = crate::support::temporaries::ScratchDir::new(SCRATCH_PREFIX);
    let unit_cache = storage
        .filter(|_| unit_cache_on)
        .map(|(storage, clang_identity)| crate::unit_cache::UnitCache {
            storage,
            key: options.key.unit_identity(),
            clang: clang.path(),
            clang_identity,
            config: serde_json::json!({
                "fragments": cfg.fragments.to_value(),
                "merge_functions": cfg.merge_functions,
                "debug_fragments": debug_fragments,
                "no_carve": crate::config::switches().no_carve,
            })
            .to_string(),
            cwd: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            force_color,
            start: invocation_start(),
            composer: Some(pipeline::compose::compose_for_recipe),
        });
    let tokens = jobs::Tokens::from_env();
    let timings = crate::config::switches().timings;

    let compile_one = |(n, unit): (usize, &plan::UnitPlan)| -> UnitResult {
        let _token = tokens.acquire();
        let files = ScratchFiles {
            dir: &scratch,
            unit: n,
            discard_dependency_file: unit.discard_dependency_file,
        };
        let cx = UnitContext {
            llvm: &llvm,
            options: &options,
            repository,
            c_units_whole,
            force_color,
            timings,
        };
        match &unit_cache {
            Some(uc) => compile_unit_cached(unit, p, clang, &cx, uc, &files),
            None => compile_unit(unit, p, clang, &cx, files.discarded_dep().as_deref(), None),
        }
    };

    let results = compile_all(&p.units, cfg.jobs(), compile_one);

    let (mut status, mut counters) = report_units(&results, clang);

    // The remote's writes are waited for here, after every unit's output
    // is written.
    if let Some(r) = &remote {
        r.finish();
        counters.merge(&r.stats.counters());
    }

    let written = (file_store.as_ref()).map_or(0, |(store, _)| write_stored(store, &results));

    if let Some(repo) = repo {
        account_size(repo, written, cfg);
    }

    if status == 0 {
        if let Some(link) = &p.link {
            counters.add(key::LINKS, 1);
            crate::support::temporaries::sweep_killed_scratch_once(SCRATCH_PREFIX);
            llvm.ensure();
            status = run_link(p, link, clang);
        }
    }
    (status, counters)
}

/// Adds what this invocation wrote to the repository's size and evicts
/// past the limit. Best effort, like the statistics: never a failed build.
fn account_size(repo: &Path, written: u64, cfg: &Config) {
    let cleanup = size::account_and_maybe_evict(repo, written, cfg.max_size_bytes());
    // A first measurement (a new repository) that removed nothing is not
    // an eviction.
    if let Ok(size::Cleanup::Done(r)) = &cleanup {
        if r.removed > 0 && crate::config::switches().explain {
            eprintln!(
                "repocc: explain: the repository passed its size limit: \
                 {} entries evicted, {} bytes left of {}",
                r.removed, r.bytes_after, r.bytes_before
            )
        }
    }
}

/// Writes what the units stored (and what the remote tier copied into the
/// local store) as one pack, before the size is accounted; returns the
/// bytes it takes, all that this invocation adds to the repository (a
/// failed write costs later compiles, never this one: one warning, as a
/// failed store always gave).
fn write_stored(store: &crate::repo::store::Store, results: &[UnitResult]) -> u64 {
    match store.flush() {
        Ok(bytes) => return bytes,
        Err(crate::repo::storage::StoreError::RemovedMeanwhile { .. }) => {}
        // A part of the repository another user could write is said once
        // per invocation: a unit that read it has said it.
        Err(e)
            if untrusted_cause(&e.to_string()).is_some()
                && (results.iter())
                    .any(|r| String::from_utf8_lossy(&r.stderr).contains(": not used")) => {}
        Err(e) => say!("repocc: warning: {e}; nothing stored"),
    }
    0
}

/// Every unit compiled by `compile_one`: on `jobs` threads where there are
/// several.
fn compile_all(
    units: &[plan::UnitPlan],
    jobs: crate::config::Jobs,
    compile_one: impl Fn((usize, &plan::UnitPlan)) -> UnitResult + Sync + Send,
) -> Vec<UnitResult> {
    use crate::support::stack;
    if units.len() == 1 {
        // What is left to do after the unit (composing, a link) needs none
        // of its AST or IR.
        crate::llvm::leave_unit_memory_to_exit();
        return vec![stack::with_unit_stack(|| compile_one((0, &units[0])))];
    }
    let threads = jobs.get().min(units.len()).max(1);
    match rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(stack::UNIT_STACK_BYTES)
        .build()
    {
        Ok(pool) => pool.install(|| units.par_iter().enumerate().map(&compile_one).collect()),
        Err(_) => units.iter().enumerate().map(&compile_one).collect(),
    }
}

/// Prints each unit's diagnostics, in unit order (a driver diagnostic
/// once), and counts what each unit did; the first failing unit's exit
/// code.
fn report_units(results: &[UnitResult], clang: &dyn Clang) -> (i32, Counters) {
    let mut counters = Counters::default();
    let mut status = 0;
    let mut err = std::io::stderr().lock();
    let mut driver_lines = DriverDiagnostics::new(clang.path());
    for r in results {
        let _ = err.write_all(&driver_lines.first_time(&r.stderr));
        let _ = err.write_all(r.notes.as_bytes());
        r.count(&mut counters);
        if status == 0 && r.status != 0 {
            status = r.status;
        }
    }
    (status, counters)
}

impl UnitResult {
    /// Adds what this unit did to the statistics.
    fn count(&self, counters: &mut Counters) {
        let r = self;
        match &r.unit_cache {
            UnitCacheUse::Off => {}
            UnitCacheUse::Hit(ms) => {
                counters.add(key::UNIT_HITS, 1);
                counters.add(key::COMPILE_MS_SAVED, *ms);
            }
            UnitCacheUse::Miss {
                corrupt,
                not_recorded,
            } => {
                counters.add(key::UNIT_MISSES, 1);
                if *corrupt {
                    counters.add(key::CORRUPT_ENTRIES, 1);
                }
                if let Some(why) = not_recorded {
                    counters.add_reason(&Reason::new(Category::UnitNotRecorded, why.clone()));
                }
            }
            UnitCacheUse::NotCached(why) => {
                counters.add_reason(&Reason::new(Category::UnitNotCached, why.clone()))
            }
        }
        if r.compiled {
            counters.add(key::COMPILES, 1);
            if let Some(rep) = &r.report {
                counters.add(key::DEFINITIONS_TOTAL, rep.definitions);
                counters.add(key::DEFINITIONS_COMPILED, rep.definitions_compiled);
                counters.add(key::DEFINITIONS_PRUNED, rep.definitions_pruned);
                counters.add(key::DEFINITIONS_SHARED, rep.definitions_shared);
                counters.add(key::COMPILE_MS_SAVED, rep.estimated_ms_saved());
                counters.add(key::FRAGMENTS_STORED, rep.fragments_stored);
                counters.add(key::BODIES_REUSED, rep.bodies_reused);
                counters.add(key::CORRUPT_ENTRIES, rep.corrupt_entries);
                if let Some(why) = &rep.compose_declined {
                    counters.add(key::COMPOSE_DECLINES, 1);
                    counters.add_reason(&Reason::new(Category::ComposeDeclined, why.to_string()));
                }
                counters.add(key::CARVE_DECLINES, rep.carve_declined.len() as u64);
                for why in &rep.carve_declined {
                    counters.add_reason(&Reason::new(Category::CarveDeclined, why.to_string()));
                }
                if rep.debug_unit_without_repository {
                    counters.add(key::DEBUG_UNITS_WHOLE, 1);
                }
            }
        }
        if let Some(reason) = &r.fallback {
            counters.add(key::FALLBACKS, 1);
            counters.add_reason(reason);
        }
        if r.clang_unit_reused {
            counters.add(key::CLANG_UNITS_REUSED, 1);
        }
        match r.whole.filter(|_| r.status == 0) {
            Some(Whole::DebugInfo) => counters.add(key::DEBUG_UNITS_WHOLE, 1),
            Some(Whole::COptZero) => counters.add(key::C_O0_UNITS_WHOLE, 1),
            None => {}
        }
        if r.frontend_error {
            counters.add(key::COMPILE_ERRORS, 1);
        }
    }
}

/// Links the units' objects (and the rest of the command line): in
/// process where clang's driver can, else clang as a process; its exit
/// code.
fn run_link(p: &CompilePlan, link: &plan::LinkPlan, clang: &dyn Clang) -> i32 {
    let link_args: Vec<OsString> = (link.args.iter())
        .map(|a| match a {
            LinkArg::Plain(s) => OsString::from(s),
            LinkArg::UnitObject(n) => p.units[*n].output.clone().into_os_string(),
        })
        .collect();
    let in_process = (link_args.iter())
        .map(|a| a.to_str().map(String::from))
        .collect::<Option<Vec<String>>>()
        .ok_or_else(|| String::from("a path is not UTF-8"))
        .and_then(|args| clang.link_in_process(&args));
    match in_process {
        Ok(code) => code,
        Err(_) => match Command::new(clang.path())
            .args(&link_args)
            .env(RECURSION_GUARD, "1")
            .status()
        {
            Ok(s) => frontend::exit_code(&s),
            Err(e) => {
                say!("repocc: error: running {}: {e}", clang.path().display());
                1
            }
        },
    }
}

/// clang's driver prints a diagnostic about the command line (`clang-19:
/// warning: -lm: 'linker' input unused`) once per invocation; each unit's
/// frontend prints it again. Lines that start with the driver's name are
/// printed the first time only.
struct DriverDiagnostics {
    prefix: Vec<u8>,
    seen: std::collections::HashSet<Vec<u8>>,
}

impl DriverDiagnostics {
    fn new(clang: &Path) -> DriverDiagnostics {
        let name = clang
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        DriverDiagnostics {
            prefix: format!("{name}: ").into_bytes(),
            seen: Default::default(),
        }
    }

    /// `text` without the driver lines already printed.
    fn first_time(&mut self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        for line in text.split_inclusive(|&b| b == b'\n') {
            if line.starts_with(&self.prefix) && !self.seen.insert(line.to_vec()) {
                continue;
            }
            out.extend_from_slice(line);
        }
        out
    }
}

/// The repository as the units of an invocation use it.
#[derive(Clone, Copy)]
struct UnitRepository<'a> {
    storage: &'a dyn crate::repo::storage::Storage,
    /// clang's executable digest, for the keys of units clang compiles.
    clang_identity: &'a str,
}

/// LLVM's static initializers run and its options set for this
/// invocation's compiles: when a unit first needs LLVM (or clang in this
/// process), from whichever thread, once (`llvm::initialize`, and the
/// options' own `Once`).
struct LlvmSetup {
    repository: bool,
    debug_types: bool,
}

impl LlvmSetup {
    fn ensure(&self) {
        crate::llvm::initialize();
        crate::ir::merge::configure_llvm(self.repository, self.debug_types);
    }
}

/// What every unit of an invocation shares.
struct UnitContext<'a> {
    llvm: &'a LlvmSetup,
    options: &'a PipelineOptions,
    /// The repository, when one is in use.
    repository: Option<UnitRepository<'a>>,
    /// C units are compiled whole (`fragments` "auto" at -O0 without
    /// debug info).
    c_units_whole: bool,
    /// Our stderr is a colour terminal and the user chose nothing.
    force_color: bool,
    timings: bool,
}

/// When this invocation started (files modified after it changed during
/// the compile). Taken once, before any unit runs.
/// Read from the coarse clock, the one the kernel stamps files with: a
/// file modified after this moment has a time at or after it.
fn invocation_start() -> std::time::SystemTime {
    static START: OnceLock<std::time::SystemTime> = OnceLock::new();
    *START.get_or_init(|| {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::RealtimeCoarse);
        std::time::UNIX_EPOCH
            + std::time::Duration::new(
                t.tv_sec.max(0) as u64,
                t.tv_nsec.clamp(0, 999_999_999) as u32,
            )
    })
}

/// The names of invocations' scratch directories in `$TMPDIR`
/// (`repocc-dep-<pid>.<random>`).
const SCRATCH_PREFIX: &str = "repocc-dep-";

/// A unit's files in the invocation's scratch directory, which is made
/// only when a unit asks for one (a unit cache hit asks for none).
struct ScratchFiles<'a> {
    dir: &'a crate::support::temporaries::ScratchDir,
    /// The unit's index in the plan, which names its files.
    unit: usize,
    /// The unit's dependency file is not wanted (clang writes one for the
    /// unit cache's recording).
    discard_dependency_file: bool,
}

impl ScratchFiles<'_> {
    /// Where clang writes a dependency file nobody asked for; `None`
    /// where the unit's own is wanted or the directory could not be made
    /// (the compile then writes none).
    fn discarded_dep(&self) -> Option<PathBuf> {
        (self.discard_dependency_file)
            .then(|| self.dir.file(&format!("{}.d", self.unit)).ok())
            .flatten()
    }

    /// Where clang lists the headers the unit reads.
    fn header_list(&self) -> Result<PathBuf, String> {
        self.dir.file(&format!("{}.headers", self.unit))
    }
}

/// One unit through the unit cache: a hit writes the stored result; a
/// miss compiles (clang listing the headers it reads) and records.
///
/// Long on purpose: a hit, a miss and the recording after it read the same key,
/// the same header list and the same statistics; apart, each would take them
/// all as arguments.
fn compile_unit_cached(
    unit: &plan::UnitPlan,
    p: &CompilePlan,
    clang: &dyn Clang,
    cx: &UnitContext,
    uc: &crate::unit_cache::UnitCache,
    files: &ScratchFiles,
) -> UnitResult {
    let start = Instant::now();
    // The digest report is printed by the pipeline, which a hit skips.
    let prepared = if config::switches().digest_report {
        Err("REPOCC_DIGEST_REPORT is set".to_string())
    } else {
        uc.prepare(
            &unit.frontend_args,
            !unit.discard_dependency_file,
            p.debug_any,
        )
    };
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(why) => return compile_uncached(unit, p, clang, cx, files, &why),
    };
    let mut corrupt = false;
    let mut try_preprocessor = false;
    let mut miss_reason = String::from("writing the stored result failed");
    match uc.lookup(&prepared) {
        crate::unit_cache::Found::Hit(hit) => {
            if uc.write_hit(&prepared, &unit.output, &hit).is_ok() {
                return UnitResult {
                    unit_cache: UnitCacheUse::Hit(hit.compile_ms),
                    notes: if cx.timings {
                        format!(
                            "repocc: timings {}: unit cache hit {:.3}s\n",
                            unit.source,
                            start.elapsed().as_secs_f64()
                        )
                    } else {
                        String::new()
                    },
                    ..UnitResult::failed(0, hit.stderr, false)
                };
            }
        }
        crate::unit_cache::Found::Corrupt => {
            corrupt = true;
            miss_reason = "its entry was corrupt (removed)".into();
        }
        crate::unit_cache::Found::Miss(why) => miss_reason = why,
        crate::unit_cache::Found::Changed(why, layout_only) => {
            // Preprocessing costs a pass over every header: worth it where
            // only comments or layout changed (the preprocessed text may be
            // one recorded), not where tokens did.
            try_preprocessor = !p.debug_any && layout_only;
            miss_reason = if layout_only {
                why
            } else {
                format!("{why}, beyond comments and layout")
            };
        }
    }
    // Not a hit: what follows may preprocess or compile in this process,
    // and clang lists the headers it reads in a scratch file.
    cx.llvm.ensure();
    let header_list = match files.header_list() {
        Ok(list) => list,
        Err(why) => return compile_uncached(unit, p, clang, cx, files, &why),
    };
    let header_list = header_list.as_path();
    let discard_dep = files.discarded_dep();
    let mut recorded = crate::unit_cache::RecordedUnit {
        source: &unit.source,
        output: &unit.output,
        search_options: &unit.search_options,
        include_search_options: &unit.include_search_options,
        language: unit.language,
        headers_listed: false,
    };
    let preprocessed_key = if try_preprocessor {
        match preprocessor_mode(uc, &prepared, &mut recorded, header_list, cx, &miss_reason) {
            Ok(key) => key,
            Err(hit) => return *hit,
        }
    } else {
        None
    };
    // clang appends to the list: start from nothing, unless preprocessor
    // mode made it.
    let list = if preprocessed_key.is_some() {
        None
    } else {
        let _ = std::fs::remove_file(header_list);
        Some(header_list)
    };
    let compile_start = Instant::now();
    let mut r = compile_unit(unit, p, clang, cx, discard_dep.as_deref(), list);
    // Where the compile could not list them (clang as a process on an
    // -MMD unit), recording lists them by preprocessing.
    recorded.headers_listed |= r.headers_listed;
    let compile_ms = compile_start.elapsed().as_millis() as u64;
    let mut not_recorded = None;
    // repocc's own warnings (a repository it could not write, a fallback)
    // describe this compile, not the unit: a replay would repeat them.
    let own_warning = r
        .stderr
        .split(|&b| b == b'\n')
        .any(|line| line.starts_with(b"repocc: "));
    if r.status == 0 && own_warning {
        not_recorded = Some(format!("{}: repocc printed a warning", unit.source));
    } else if r.status == 0 {
        let record_start = Instant::now();
        let compiled = crate::unit_cache::Compiled {
            stderr: &r.stderr,
            compile_ms,
            result_key: preprocessed_key,
            recipe: r.report.as_ref().and_then(|report| report.recipe.as_ref()),
        };
        let recorded_result = uc.record(&prepared, &recorded, header_list, &compiled);
        if let Err(why) = recorded_result {
            not_recorded = Some(format!("{}: {why}", unit.source));
        }
        if cx.timings {
            r.notes += &format!(
                "repocc: timings {}: unit cache record {:.3}s\n",
                unit.source,
                record_start.elapsed().as_secs_f64()
            );
        }
    }
    if cx.options.explain {
        let mut line = format!(
            "repocc: explain {}: unit cache miss: {miss_reason}",
            unit.source
        );
        if let Some(why) = &not_recorded {
            line.push_str(&format!("; not recorded: {why}"));
        }
        r.notes.insert_str(0, &(line + "\n"));
    }
    r.unit_cache = UnitCacheUse::Miss {
        corrupt,
        not_recorded,
    };
    r
}

/// A unit compiled without the unit cache, which could not take it (`why`).
fn compile_uncached(
    unit: &plan::UnitPlan,
    p: &CompilePlan,
    clang: &dyn Clang,
    cx: &UnitContext,
    files: &ScratchFiles,
    why: &str,
) -> UnitResult {
    UnitResult {
        unit_cache: UnitCacheUse::NotCached(format!("{}: {why}", unit.source)),
        ..compile_unit(unit, p, clang, cx, files.discarded_dep().as_deref(), None)
    }
}

/// ccache's preprocessor mode, where only comments or layout changed: the
/// preprocessed text's key, and `Err` with the unit's result where it was
/// a hit (written to the unit's output).
fn preprocessor_mode(
    uc: &crate::unit_cache::UnitCache,
    prepared: &crate::unit_cache::Prepared,
    recorded: &mut crate::unit_cache::RecordedUnit,
    header_list: &Path,
    cx: &UnitContext,
    miss_reason: &str,
) -> Result<Option<crate::repo::storage::FragmentDigest>, Box<UnitResult>> {
    let Some((key, hit)) = uc.preprocess(prepared, recorded, header_list) else {
        return Ok(None);
    };
    recorded.headers_listed = true;
    if let Some(hit) = hit {
        if uc.write_hit(prepared, recorded.output, &hit).is_ok() {
            // Best effort: a hit not recorded is looked up the longer way.
            let _ = uc.record_preprocessed_hit(prepared, recorded, header_list, &key);
            let mut notes = String::new();
            if cx.options.explain {
                notes = format!(
                    "repocc: explain {}: unit cache hit in preprocessor mode ({miss_reason})\n",
                    recorded.source
                );
            }
            return Err(Box::new(UnitResult {
                unit_cache: UnitCacheUse::Hit(hit.compile_ms),
                notes,
                ..UnitResult::failed(0, hit.stderr, false)
            }));
        }
    }
    Ok(Some(key))
}

/// One unit: frontend, then the pipeline; on a pipeline failure, a plain
/// clang compile of the unit with one warning line.
///
/// Long on purpose: frontend, key, pipeline and fallback share the unit's plan
/// and its notes; the steps are calls (run_pipeline, unit_notes,
/// Fallback::compile), what stays is their order.
fn compile_unit(
    unit: &plan::UnitPlan,
    p: &CompilePlan,
    clang: &dyn Clang,
    cx: &UnitContext,
    discard_dep: Option<&Path>,
    header_list: Option<&Path>,
) -> UnitResult {
    cx.llvm.ensure();
    if let Some(why) = compiled_whole(unit, p, cx) {
        let mut process_reason = None;
        let (status, stderr, headers_listed) = match whole_compile(
            clang,
            unit,
            cx,
            discard_dep,
            header_list,
            &mut process_reason,
        ) {
            Ok(r) => r,
            Err(e) => (1, format!("repocc: error: {e:#}\n").into_bytes(), false),
        };
        let notes = match process_reason.filter(|_| cx.options.explain) {
            Some(why) => format!(
                "repocc: explain {}: compiled whole by clang as a process: {why}\n",
                unit.source
            ),
            None => String::new(),
        };
        return UnitResult {
            whole: Some(why),
            headers_listed,
            notes,
            ..UnitResult::failed(status, stderr, status != 0)
        };
    }
    let start = Instant::now();
    let fe_args = frontend::frontend_args(&unit.frontend_args, p.codegen.opt, discard_dep);
    // clang's module itself where clang runs in this process: no bitcode
    // written and read back.
    let mut fe = match clang.run_frontend(&fe_args, cx.force_color, header_list, true) {
        Ok(fe) => fe,
        Err(e) => {
            crate::support::output::remove_failed_output(&unit.output);
            return UnitResult::failed(1, format!("repocc: error: {e:#}\n").into_bytes(), false);
        }
    };
    let mut stderr = std::mem::take(&mut fe.stderr);
    if fe.status != 0 {
        // As clang's driver: a failed compile leaves no stale object.
        crate::support::output::remove_failed_output(&unit.output);
        return UnitResult::failed(fe.status, stderr, true);
    }
    let frontend_time = start.elapsed();
    let mut explain_frontend = String::new();
    if let Some(why) = fe.process_reason.as_ref().filter(|_| cx.options.explain) {
        explain_frontend = format!(
            "repocc: explain {}: clang's frontend ran as a process: {why}\n",
            unit.source
        );
    }

    // A unit clang compiled before, remembered by the repository.
    // Only a unit with a hint can be remembered: the others' keys (their
    // bitcode) are not worth writing (see `clang_units`).
    let key_start = Instant::now();
    let hint = cx.repository.map(|r| {
        let hint = cx
            .options
            .key
            .clang_unit_hint(r.clang_identity, &unit.frontend_args);
        (r, hint)
    });
    let clang_unit = hint
        .filter(|(r, hint)| pipeline::clang_units::hinted(r.storage, hint))
        .map(|(r, _)| (r.storage, clang_unit_key(unit, r, cx, &fe)));
    let remembered = match &clang_unit {
        Some((storage, key)) => pipeline::clang_units::lookup(*storage, key),
        None => pipeline::clang_units::Remembered::Nothing,
    };
    let key_time = key_start.elapsed();
    let result = match remembered {
        pipeline::clang_units::Remembered::Object(object) => {
            match crate::support::output::write_output(&unit.output, &object) {
                Ok(()) => {
                    return UnitResult {
                        headers_listed: fe.headers_listed,
                        clang_unit_reused: true,
                        ..UnitResult::failed(0, stderr, false)
                    }
                }
                Err(e) => Err(e),
            }
        }
        pipeline::clang_units::Remembered::ClangOnly => Err(anyhow::Error::new(
            pipeline::BackendDiagnostic("remembered from an earlier compile".into()),
        )),
        pipeline::clang_units::Remembered::Nothing => {
            let ir = match fe.module.take() {
                Some(module) => pipeline::FrontendIr::Module(module),
                None => pipeline::FrontendIr::Bitcode(&fe.bitcode),
            };
            run_pipeline(ir, unit, p, cx)
        }
    };

    match result {
        Ok(report) => {
            append_warnings(&mut stderr, &report.warnings);
            let notes = unit_notes(
                unit,
                cx,
                explain_frontend,
                [frontend_time, key_time],
                &report,
            );
            UnitResult {
                headers_listed: fe.headers_listed,
                notes,
                report: Some(report),
                compiled: true,
                ..UnitResult::failed(0, stderr, false)
            }
        }
        Err(e) => {
            let fallback = Fallback {
                unit,
                clang,
                cx,
                fe_args: &fe_args,
                discard_dep,
                header_list,
                clang_unit: clang_unit.map(|(_, key)| key),
                hint,
            };
            UnitResult {
                headers_listed: fe.headers_listed,
                ..fallback.compile(e, stderr)
            }
        }
    }
}

/// The pipeline on the frontend's IR; a panic inside it is an error of
/// this unit (the unit falls back to clang), not the invocation's end.
fn run_pipeline(
    ir: pipeline::FrontendIr,
    unit: &plan::UnitPlan,
    p: &CompilePlan,
    cx: &UnitContext,
) -> anyhow::Result<pipeline::UnitReport> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pipeline::compile_frontend_ir(
            ir,
            &unit.source,
            &p.codegen,
            cx.options,
            cx.repository.map(|r| r.storage),
            &unit.output,
        )
    }))
    .unwrap_or_else(|panic| {
        let what = (panic.downcast_ref::<String>().cloned())
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        Err(anyhow!("internal error: {what}"))
    })
}

/// The pipeline's warnings, one line each; parts of the repository another
/// user could write are said once (the first), not for each read and
/// write they refuse.
fn append_warnings(stderr: &mut Vec<u8>, warnings: &[String]) {
    let mut untrusted_said = false;
    for w in warnings {
        if untrusted_cause(w).is_some() {
            if untrusted_said {
                continue;
            }
            untrusted_said = true;
        }
        stderr.extend_from_slice(format!("repocc: warning: {w}\n").as_bytes());
    }
}

/// What `REPOCC_TIMINGS` and `REPOCC_EXPLAIN` print for a compiled unit.
fn unit_notes(
    unit: &plan::UnitPlan,
    cx: &UnitContext,
    mut notes: String,
    [frontend_time, key_time]: [std::time::Duration; 2],
    report: &pipeline::UnitReport,
) -> String {
    let t = &report.times;
    if cx.timings {
        notes += &format!(
            "repocc: timings {}: frontend {:.3}s key {:.3}s mem2reg {:.3}s metadata {:.3}s optimize {:.3}s merge {:.3}s codegen {:.3}s write {:.3}s store {:.3}s\n",
            unit.source,
            frontend_time.as_secs_f64(),
            key_time.as_secs_f64(),
            t.parse_and_mem2reg.as_secs_f64(),
            t.metadata.as_secs_f64(),
            t.optimize.as_secs_f64(),
            t.merge.as_secs_f64(),
            t.codegen.as_secs_f64(),
            t.write.as_secs_f64(),
            t.store.as_secs_f64()
        );
    }
    for line in &report.explain {
        notes.push_str(&format!("repocc: explain {}: {line}\n", unit.source));
    }
    if cx.options.explain {
        // Declines are counted in the statistics; explained, they name the
        // unit and the slower path it took.
        for (category, why) in report
            .compose_declined
            .iter()
            .map(|why| (Category::ComposeDeclined, why))
            .chain(
                report
                    .carve_declined
                    .iter()
                    .map(|why| (Category::CarveDeclined, why)),
            )
        {
            notes.push_str(&format!(
                "repocc: explain {}: {}: {why}\n",
                unit.source,
                category.key()
            ));
        }
    }
    notes
}

/// A unit the pipeline failed on, compiled by clang instead.
struct Fallback<'a> {
    unit: &'a plan::UnitPlan,
    clang: &'a dyn Clang,
    cx: &'a UnitContext<'a>,
    fe_args: &'a [String],
    /// Where the unit's dependency file goes when a later unit writes the
    /// user's (see `plain_compile_args`).
    discard_dep: Option<&'a Path>,
    header_list: Option<&'a Path>,
    /// The unit's key as a unit clang compiles, when it had a hint.
    clang_unit: Option<crate::repo::storage::FragmentDigest>,
    /// The repository and the key of the unit's hint.
    hint: Option<(UnitRepository<'a>, crate::repo::storage::FragmentDigest)>,
}

impl Fallback<'_> {
    /// Compiles the unit with clang after the pipeline failed with `e`,
    /// and remembers that clang compiles it.
    fn compile(&self, e: anyhow::Error, mut stderr: Vec<u8>) -> UnitResult {
        let (unit, clang, cx) = (self.unit, self.clang, self.cx);
        // A diagnostic from LLVM's backend, or an output directory that
        // refused the object, is the user's to see, in clang's words: clang
        // redoes the unit with warnings on and no line from repocc (clang
        // opens its output before parsing, so it prints only the error).
        // Any other failure is repocc's: one line, and clang's warnings
        // (already shown) are not repeated.
        let backend = e.downcast_ref::<pipeline::BackendDiagnostic>().is_some()
            || e.downcast_ref::<crate::support::output::OutputRefused>()
                .is_some();
        let reason = if backend {
            // clang's own compile prints everything a clang compile would,
            // the frontend's warnings included: its output replaces the
            // frontend's.
            stderr.clear();
            Reason::new(
                Category::BackendDiagnostic,
                format!("{}: {e:#}", unit.source),
            )
        } else {
            let line = format!(
                "repocc: warning: {:#}; compiling {} with clang instead\n",
                e, unit.source
            );
            stderr.extend_from_slice(line.as_bytes());
            Reason::new(Category::PipelineError, format!("{}: {e:#}", unit.source))
        };
        // The key of a unit without a hint comes from the frontend run once
        // more (before clang's compile, whose dependency file is then the
        // one left), and the unit gets its hint.
        let key_now = match (self.clang_unit, self.hint) {
            (Some(key), _) => Some(key),
            (None, Some((r, _))) => clang
                .run_frontend(self.fe_args, cx.force_color, None, true)
                .ok()
                .filter(|again| again.status == 0)
                .map(|again| clang_unit_key(unit, r, cx, &again)),
            (None, None) => None,
        };
        let status = match plain_compile(
            clang.path(),
            unit,
            cx,
            !backend,
            self.discard_dep,
            self.header_list,
        ) {
            Ok((status, text, _)) => {
                if let (Some(key), Some((r, hint)), 0) = (key_now, self.hint, status) {
                    pipeline::clang_units::remember(r.storage, &key, &unit.output, text.is_empty());
                    if self.clang_unit.is_none() {
                        pipeline::clang_units::remember_hint(r.storage, &hint);
                    }
                }
                stderr.extend_from_slice(&text);
                status
            }
            Err(e) => {
                stderr.extend_from_slice(format!("repocc: error: {e:#}\n").as_bytes());
                1
            }
        };
        UnitResult {
            fallback: Some(reason),
            ..UnitResult::failed(status, stderr, false)
        }
    }
}

/// The key under which the repository remembers a unit clang compiled
/// (see `clang_units`), from the frontend's output: a module's own bitcode
/// stands for clang's (the same module).
fn clang_unit_key(
    unit: &plan::UnitPlan,
    r: UnitRepository,
    cx: &UnitContext,
    fe: &frontend::FrontendOutput,
) -> crate::repo::storage::FragmentDigest {
    let written;
    let bitcode = match &fe.module {
        Some(module) => {
            written = module.bitcode();
            &written
        }
        None => &fe.bitcode,
    };
    cx.options
        .key
        .clang_unit_key(r.clang_identity, &unit.frontend_args, bitcode)
}

/// The fallback: clang compiles the unit to its output by itself. When the
/// frontend's warnings were already shown, `-w` keeps them from appearing
/// twice. Its stderr is captured (with colour when ours is a colour
/// terminal) so that the repository can tell a quiet compile; also whether
/// it listed the headers into `header_list`.
fn plain_compile(
    clang: &Path,
    unit: &plan::UnitPlan,
    cx: &UnitContext,
    suppress_warnings: bool,
    discard_dep: Option<&Path>,
    header_list: Option<&Path>,
) -> Result<(i32, Vec<u8>, bool)> {
    let mut cmd = Command::new(clang);
    let listed = frontend::list_headers_where_listable(&mut cmd, header_list, &unit.frontend_args);
    cmd.args(plain_compile_args(unit, cx, suppress_warnings, discard_dep))
        .env(RECURSION_GUARD, "1");
    let out = cmd.output().context("running clang")?;
    Ok((frontend::exit_code(&out.status), out.stderr, listed))
}

/// clang's arguments for compiling `unit` whole into its output.
/// A unit whose dependency file a later unit of the invocation writes
/// (`discard_dep`) writes its own elsewhere, as the frontend does.
fn plain_compile_args(
    unit: &plan::UnitPlan,
    cx: &UnitContext,
    suppress_warnings: bool,
    discard_dep: Option<&Path>,
) -> Vec<String> {
    let mut args = unit.frontend_args.clone();
    args.extend(["-c".into(), "-o".into(), unit.output.display().to_string()]);
    if let Some(dep) = discard_dep {
        args.extend(["-MF".into(), dep.display().to_string()]);
    }
    if suppress_warnings {
        args.push("-w".into());
    }
    if cx.force_color {
        args.push("-fcolor-diagnostics".into());
    }
    args
}

/// Why clang compiles a unit whole, exactly as it would without repocc,
/// where the repository would only add its own cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Whole {
    /// Debug info without `debug_fragments` (and at -O0, mem2reg's loss of
    /// variables), or in ELF32 objects (`-m32`), whose DWARF repocc's ELF
    /// code does not read.
    DebugInfo,
    /// C at -O0 without debug info (`fragments` "auto").
    COptZero,
}

fn compiled_whole(unit: &plan::UnitPlan, p: &CompilePlan, cx: &UnitContext) -> Option<Whole> {
    if cx.repository.is_none() {
        None
    } else if p.debug_any && (!cx.options.debug_fragments || !p.elf64_objects) {
        Some(Whole::DebugInfo)
    } else if cx.c_units_whole && plan::is_c(unit.language) {
        Some(Whole::COptZero)
    } else {
        None
    }
}

/// A unit compiled whole, exactly as clang would compile it: clang's
/// driver and compiler proper in this process where they can (no clang
/// process to start: about 20 ms a unit, as much as a small C unit's
/// compile at -O0), clang as a process otherwise.
/// `process_reason` says why clang ran as a process.
fn whole_compile(
    clang: &dyn Clang,
    unit: &plan::UnitPlan,
    cx: &UnitContext,
    discard_dep: Option<&Path>,
    header_list: Option<&Path>,
    process_reason: &mut Option<String>,
) -> Result<(i32, Vec<u8>, bool)> {
    // (The arguments are strings: a path that is not UTF-8 goes to clang.)
    let in_process = match unit.output.to_str() {
        Some(_) => clang.compile_in_process(
            &plain_compile_args(unit, cx, false, discard_dep),
            header_list,
        ),
        None => Err("an output path that is not UTF-8".into()),
    };
    match in_process {
        Ok((status, stderr, headers_listed)) => {
            if status != 0 {
                // As clang's driver: a failed compile leaves no stale object.
                crate::support::output::remove_failed_output(&unit.output);
            }
            Ok((status, stderr, headers_listed))
        }
        Err(why) => {
            *process_reason = Some(why);
            plain_compile(clang.path(), unit, cx, false, discard_dep, header_list)
        }
    }
}

/// The part of a repository warning that names a directory or entry
/// another user could write (`repo::fsx`'s "PATH ...: not used").
fn untrusted_cause(warning: &str) -> Option<&str> {
    let end = warning.find(": not used")?;
    let start = warning[..end].rfind(": ").map_or(0, |at| at + 2);
    Some(&warning[start..end])
}
