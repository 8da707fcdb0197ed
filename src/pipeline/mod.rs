//! The per-translation-unit pipeline, one stage a file, in flow order:
//!
//! 1. [`frontend`]: clang-19 with the user's flags emits unoptimized bitcode
//!    (diagnostics go to the user exactly as clang prints them).
//! 2. [`canonical`]: the bitcode is read in memory into a fresh LLVM context
//!    and mem2reg runs — the canonical form the repository stages digest.
//! 3. (the program repository's metadata and pruning stages slot in here)
//! 4. [`optimize`]: the pass pipeline of the user's `-O` level.
//! 5. [`merge`]: function merging (LLVM MergeFunctions; aliases where the
//!    address is not significant, thunks otherwise).
//! 6. [`codegen`]: object code with the TargetMachine clang would build.
//! 7. [`output`]: the object is written atomically to its path.
//!
//! [`compile_unit`] runs them in order for one unit. Each unit owns its own
//! `inkwell::context::Context`; only bytes cross threads.

pub mod canonical;
pub mod codegen;
pub mod frontend;
pub mod merge;
pub mod optimize;
pub mod output;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::driver::plan::CodegenSettings;

/// Timings per stage, for `REPOCC_TIMINGS=1` and the benchmark.
#[derive(Clone, Debug, Default)]
pub struct StageTimes {
    pub parse_and_mem2reg: Duration,
    pub optimize: Duration,
    pub merge: Duration,
    pub codegen: Duration,
    pub write: Duration,
}

/// LLVM reported an error or warning while optimizing or generating code:
/// clang must compile the unit so that the user sees clang's diagnostic.
#[derive(Debug)]
pub struct BackendDiagnostic(pub String);

impl std::fmt::Display for BackendDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LLVM reported: {}", self.0)
    }
}

impl std::error::Error for BackendDiagnostic {}

/// Options of the pipeline that come from repocc's configuration.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    pub merge_functions: bool,
}

/// Runs stages 2–7 on the frontend's bitcode and writes `output`.
pub fn compile_bitcode(
    bitcode: &[u8],
    source_name: &str,
    settings: &CodegenSettings,
    options: &PipelineOptions,
    output: &Path,
) -> Result<StageTimes> {
    crate::llvm_shim::with_diagnostic_sink(|context, sink| {
        run_stages(
            context,
            sink,
            bitcode,
            source_name,
            settings,
            options,
            output,
        )
    })
}

fn run_stages(
    context: &inkwell::context::Context,
    sink: &crate::llvm_shim::DiagnosticSink,
    bitcode: &[u8],
    source_name: &str,
    settings: &CodegenSettings,
    options: &PipelineOptions,
    output: &Path,
) -> Result<StageTimes> {
    let mut times = StageTimes::default();
    let t = Instant::now();
    let unit = canonical::load(context, bitcode, source_name, settings)?;
    times.parse_and_mem2reg = t.elapsed();

    let t = Instant::now();
    optimize::run(&unit, settings)?;
    times.optimize = t.elapsed();

    let t = Instant::now();
    if options.merge_functions {
        merge::run(&unit, settings)?;
    }
    times.merge = t.elapsed();

    let t = Instant::now();
    let object = codegen::emit_object(&unit)?;
    times.codegen = t.elapsed();

    // Nothing reaches the output if LLVM complained: clang redoes the unit.
    if let Some(d) = sink.first() {
        return Err(BackendDiagnostic(d).into());
    }

    let t = Instant::now();
    output::write_atomically(output, object.as_slice())?;
    times.write = t.elapsed();
    Ok(times)
}
