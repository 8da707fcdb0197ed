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

use crate::config::{self, Config};
use crate::pipeline::frontend::{self, Clang, Diagnostics, RealClang};
use crate::pipeline::{self, PipelineOptions};
use crate::repo::size;
use crate::repo::stats::{self, key, Counters};
use plan::{CompilePlan, LinkArg, Plan, TempObjects};
use toolchain::{DriverKind, RECURSION_GUARD};

/// The command to re-run if LLVM hits a fatal error mid-pipeline.
static FALLBACK_COMMAND: OnceLock<(PathBuf, Vec<OsString>)> = OnceLock::new();

fn on_llvm_fatal_error(reason: &str) -> ! {
    eprintln!("repocc: warning: LLVM error ({reason}); compiling with clang instead");
    if let Some((clang, args)) = FALLBACK_COMMAND.get() {
        let err = Command::new(clang)
            .args(args)
            .env(RECURSION_GUARD, "1")
            .exec();
        eprintln!("repocc: error: running {}: {err}", clang.display());
    }
    std::process::exit(1)
}

fn warn(msg: &str) {
    eprintln!("repocc: warning: {msg}");
}

/// Runs one compiler invocation. `argv0` chooses C or C++; `args` are the
/// arguments after it. Returns the exit code (or never returns, when the
/// invocation is handed to clang with exec).
pub fn run(argv0: &str, mut args: Vec<OsString>) -> i32 {
    if std::env::var_os(RECURSION_GUARD).is_some() {
        eprintln!(
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
            eprintln!("repocc: error: {e:#}");
            return 1;
        }
    };
    let _ = FALLBACK_COMMAND.set((clang.clone(), args.clone()));
    let repo_dir = cfg.repo_dir();
    let record = |c: &Counters| {
        if cfg.stats {
            let _ = stats::record(&repo_dir, c);
        }
    };

    let passthrough = |reason: &str| -> i32 {
        let mut c = Counters::default();
        c.add(key::PASSTHROUGH, 1);
        c.add_reason(reason);
        record(&c);
        exec_clang(&clang, &args)
    };

    if !drive_it {
        return passthrough("launcher for a compiler other than clang-19");
    }
    if cfg.disable {
        return passthrough("repocc disabled by configuration");
    }
    let Some(utf8): Option<Vec<String>> =
        args.iter().map(|a| a.to_str().map(String::from)).collect()
    else {
        return passthrough("non-UTF-8 argument");
    };
    let expanded = response::expand(&utf8);
    let split = args::split(&expanded);
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let temps = LazyTemps::default();
    match plan::plan(&split, &cwd, &temps) {
        Plan::Passthrough(reason) => passthrough(&reason),
        Plan::LinkOnly => {
            let mut c = Counters::default();
            c.add(key::LINKS, 1);
            record(&c);
            exec_clang(&clang, &args)
        }
        Plan::Compile(p) => {
            let real = RealClang { path: clang };
            let (code, counters) = execute(&p, &real, &cfg, &expanded);
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
    eprintln!("repocc: error: running {}: {err}", clang.display());
    1
}

/// Temporary objects of a compile-and-link, named like clang's
/// (`$TMPDIR/<stem>-XXXXXX.o`) and removed when the invocation ends.
#[derive(Default)]
struct LazyTemps {
    files: std::sync::Mutex<Vec<tempfile::TempPath>>,
}

impl TempObjects for LazyTemps {
    fn object_path(&self, index: usize, source: &str) -> PathBuf {
        let stem = Path::new(source)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "unit".into());
        let made = tempfile::Builder::new()
            .prefix(&format!("{stem}-"))
            .suffix(".o")
            .rand_bytes(6)
            .tempfile();
        match made {
            Ok(f) => {
                let path = f.into_temp_path();
                let p = path.to_path_buf();
                if let Ok(mut files) = self.files.lock() {
                    files.push(path);
                }
                p
            }
            Err(_) => {
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
    fallback: bool,
    frontend_error: bool,
}

/// Whether we add `-fcolor-diagnostics` when capturing clang's stderr: our
/// stderr is a colour terminal (ccache's rule) and the user chose nothing.
fn force_color(args: &[String]) -> bool {
    let user_chose = args.iter().any(|a| {
        a.starts_with("-fcolor-diagnostics")
            || a.starts_with("-fno-color-diagnostics")
            || a.starts_with("-fdiagnostics-color")
            || a.starts_with("-fno-diagnostics-color")
    });
    !user_chose
        && std::io::stderr().is_terminal()
        && std::env::var("TERM").is_ok_and(|t| t != "dumb")
}

/// Compiles every unit (in parallel), prints diagnostics in unit order,
/// links if asked. Returns the exit code and the statistics increments.
fn execute(p: &CompilePlan, clang: &dyn Clang, cfg: &Config, args: &[String]) -> (i32, Counters) {
    pipeline::merge::configure_llvm(cfg.fragments, cfg.fragments && cfg.debug_fragments);
    crate::llvm_shim::install_fatal_error_handler(on_llvm_fatal_error);
    let diagnostics = if p.units.len() == 1 {
        Diagnostics::Inherit
    } else {
        Diagnostics::Capture {
            force_color: force_color(args),
        }
    };
    let options = PipelineOptions {
        merge_functions: cfg.merge_functions,
        fragments: cfg.fragments,
        debug_fragments: cfg.debug_fragments,
        jobs: cfg.jobs(),
        repo_dir: cfg.repo_dir(),
        digest_report: std::env::var_os("REPOCC_DIGEST_REPORT").is_some(),
    };
    let scratch = tempfile::Builder::new()
        .prefix("repocc-dep-")
        .tempdir()
        .ok();
    let tokens = jobs::Tokens::from_env();
    let timings = std::env::var_os("REPOCC_TIMINGS").is_some();

    let compile_one = |(n, unit): (usize, &plan::UnitPlan)| -> UnitResult {
        let _token = tokens.acquire();
        let discard = if unit.discard_dependency_file {
            scratch.as_ref().map(|d| d.path().join(format!("{n}.d")))
        } else {
            None
        };
        compile_unit(
            unit,
            p,
            clang,
            &options,
            diagnostics,
            discard.as_deref(),
            timings,
        )
    };

    let results: Vec<UnitResult> = if p.units.len() == 1 {
        vec![compile_one((0, &p.units[0]))]
    } else {
        let threads = cfg.jobs().min(p.units.len()).max(1);
        match rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .stack_size(16 << 20)
            .build()
        {
            Ok(pool) => pool.install(|| p.units.par_iter().enumerate().map(compile_one).collect()),
            Err(_) => p.units.iter().enumerate().map(compile_one).collect(),
        }
    };

    let mut counters = Counters::default();
    let mut status = 0;
    let mut err = std::io::stderr().lock();
    for r in &results {
        let _ = err.write_all(&r.stderr);
        if r.compiled {
            counters.add(key::COMPILES, 1);
            if let Some(rep) = &r.report {
                counters.add(key::DEFINITIONS_TOTAL, rep.definitions);
                counters.add(key::DEFINITIONS_COMPILED, rep.definitions_compiled);
                counters.add(key::DEFINITIONS_PRUNED, rep.definitions_pruned);
                counters.add(key::FRAGMENTS_STORED, rep.fragments_stored);
                counters.add(key::CORRUPT_ENTRIES, rep.corrupt_entries);
                if rep.debug_unit_without_repository {
                    counters.add(key::DEBUG_UNITS_WHOLE, 1);
                }
            }
        }
        if r.fallback {
            counters.add(key::FALLBACKS, 1);
        }
        if r.frontend_error {
            counters.add(key::COMPILE_ERRORS, 1);
        }
        if status == 0 && r.status != 0 {
            status = r.status;
        }
    }
    drop(err);

    // What this invocation stored counts towards the size limit; passing it
    // evicts (best effort, like the statistics: never a failed build).
    let bytes_stored: u64 = results
        .iter()
        .filter_map(|r| r.report.as_ref())
        .map(|r| r.bytes_stored)
        .sum();
    let _ = size::account_and_maybe_evict(&cfg.repo_dir(), bytes_stored, cfg.max_size_bytes());

    if status == 0 {
        if let Some(link) = &p.link {
            counters.add(key::LINKS, 1);
            let link_args: Vec<OsString> = link
                .args
                .iter()
                .map(|a| match a {
                    LinkArg::Plain(s) => OsString::from(s),
                    LinkArg::UnitObject(n) => p.units[*n].output.clone().into_os_string(),
                })
                .collect();
            status = match Command::new(clang.path())
                .args(&link_args)
                .env(RECURSION_GUARD, "1")
                .status()
            {
                Ok(s) => frontend::exit_code(&s),
                Err(e) => {
                    eprintln!("repocc: error: running {}: {e}", clang.path().display());
                    1
                }
            };
        }
    }
    (status, counters)
}

/// One unit: frontend, then the pipeline; on a pipeline failure, a plain
/// clang compile of the unit with one warning line.
fn compile_unit(
    unit: &plan::UnitPlan,
    p: &CompilePlan,
    clang: &dyn Clang,
    options: &PipelineOptions,
    diagnostics: Diagnostics,
    discard_dep: Option<&Path>,
    timings: bool,
) -> UnitResult {
    let start = Instant::now();
    let fe_args = frontend::frontend_args(unit, p.codegen.opt, discard_dep);
    let fe = match clang.run_frontend(&fe_args, diagnostics) {
        Ok(fe) => fe,
        Err(e) => {
            return UnitResult {
                status: 1,
                report: None,
                stderr: format!("repocc: error: {e:#}\n").into_bytes(),
                compiled: false,
                fallback: false,
                frontend_error: false,
            }
        }
    };
    let mut stderr = fe.stderr.unwrap_or_default();
    if fe.status != 0 {
        return UnitResult {
            status: fe.status,
            report: None,
            stderr,
            compiled: false,
            fallback: false,
            frontend_error: true,
        };
    }
    let frontend_time = start.elapsed();

    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        pipeline::compile_bitcode(&fe.bitcode, &unit.source, &p.codegen, options, &unit.output)
    }))
    .unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        Err(anyhow!("internal error: {what}"))
    });

    match result {
        Ok(report) => {
            for w in &report.warnings {
                let line = format!("repocc: warning: {w}\n");
                emit(&mut stderr, diagnostics, line.as_bytes());
            }
            let t = &report.times;
            if timings {
                let line = format!(
                    "repocc: timings {}: frontend {:.3}s mem2reg {:.3}s metadata {:.3}s optimize {:.3}s merge {:.3}s codegen {:.3}s write {:.3}s store {:.3}s\n",
                    unit.source,
                    frontend_time.as_secs_f64(),
                    t.parse_and_mem2reg.as_secs_f64(),
                    t.metadata.as_secs_f64(),
                    t.optimize.as_secs_f64(),
                    t.merge.as_secs_f64(),
                    t.codegen.as_secs_f64(),
                    t.write.as_secs_f64(),
                    t.store.as_secs_f64()
                );
                emit(&mut stderr, diagnostics, line.as_bytes());
            }
            UnitResult {
                status: 0,
                report: Some(report.clone()),
                stderr,
                compiled: true,
                fallback: false,
                frontend_error: false,
            }
        }
        Err(e) => {
            // A diagnostic from LLVM's backend is the user's to see, in
            // clang's words: clang redoes the unit with warnings on and no
            // line from repocc. Any other failure is repocc's: one line,
            // and clang's warnings (already shown) are not repeated.
            let backend = e.downcast_ref::<pipeline::BackendDiagnostic>().is_some();
            if !backend {
                let line = format!(
                    "repocc: warning: {:#}; compiling {} with clang instead\n",
                    e, unit.source
                );
                emit(&mut stderr, diagnostics, line.as_bytes());
            }
            let status = match plain_compile(clang.path(), unit, diagnostics, !backend) {
                Ok((status, text)) => {
                    stderr.extend_from_slice(&text);
                    status
                }
                Err(e) => {
                    emit(
                        &mut stderr,
                        diagnostics,
                        format!("repocc: error: {e:#}\n").as_bytes(),
                    );
                    1
                }
            };
            UnitResult {
                status,
                report: None,
                stderr,
                compiled: false,
                fallback: true,
                frontend_error: false,
            }
        }
    }
}

/// Writes a line now (inherited stderr) or into the captured text.
fn emit(captured: &mut Vec<u8>, diagnostics: Diagnostics, line: &[u8]) {
    match diagnostics {
        Diagnostics::Inherit => {
            let _ = std::io::stderr().write_all(line);
        }
        Diagnostics::Capture { .. } => captured.extend_from_slice(line),
    }
}

/// The fallback: clang compiles the unit to its output by itself. When the
/// frontend's warnings were already shown, `-w` keeps them from appearing
/// twice.
fn plain_compile(
    clang: &Path,
    unit: &plan::UnitPlan,
    diagnostics: Diagnostics,
    suppress_warnings: bool,
) -> Result<(i32, Vec<u8>)> {
    let mut cmd = Command::new(clang);
    cmd.args(&unit.frontend_args)
        .arg("-c")
        .arg("-o")
        .arg(&unit.output)
        .env(RECURSION_GUARD, "1");
    if suppress_warnings {
        cmd.arg("-w");
    }
    let out = match diagnostics {
        Diagnostics::Inherit => {
            let s = cmd.status().context("running clang")?;
            return Ok((frontend::exit_code(&s), Vec::new()));
        }
        Diagnostics::Capture { .. } => cmd.output().context("running clang")?,
    };
    Ok((frontend::exit_code(&out.status), out.stderr))
}
