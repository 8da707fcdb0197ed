//! Stage 5, function merging: LLVM's MergeFunctions after optimization,
//! for units compiled whole (without the repository). Equal functions are
//! folded: the duplicate's callers are redirected to the survivor, and the
//! duplicate becomes an alias when its address is not significant
//! (`unnamed_addr`, and linkage that allows it — the reference's
//! condition), otherwise a thunk that tail-calls the survivor. Skipped at
//! -O0, like every other optimization.
//!
//! Repository compiles do not merge: a merge folds a function into an
//! equal one of the same unit, so a fragment's bytes (a thunk, or callers
//! redirected to the twin) would depend on what else its unit holds, not
//! only on what its digest covers. A template instance stored by a unit
//! that had no twin for it would be reused where a cold compile had merged
//! it, and the object would differ (invariant 4).

use anyhow::{anyhow, Result};
use inkwell::passes::PassBuilderOptions;

use super::canonical::Unit;
use crate::ir::settings::{CodegenSettings, OptLevel};
use crate::llvm;

static DEBUG_TYPE_UNITS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether code generation emits debug types with identifiers as type
/// units (see [`configure_llvm`]).
pub fn debug_type_units() -> bool {
    DEBUG_TYPE_UNITS.load(std::sync::atomic::Ordering::Relaxed)
}

/// LLVM options the pipeline needs; must be set before any unit is
/// compiled. `repository`: repository mode, where merged duplicates stay
/// thunks (otherwise they become aliases where allowed). `debug_types`:
/// debug types with identifiers are emitted as type units (one copy per
/// object instead of one per fragment; see `llvm::
/// identify_debug_types`).
pub fn configure_llvm(repository: bool, debug_types: bool) {
    DEBUG_TYPE_UNITS.store(debug_types, std::sync::atomic::Ordering::Relaxed);
    let mut options = Vec::new();
    if !repository {
        options.push("-mergefunc-use-aliases");
    }
    if debug_types {
        options.push("-generate-type-units");
    }
    llvm::parse_llvm_options(&options);
}

pub fn run(unit: &Unit, settings: &CodegenSettings) -> Result<()> {
    if settings.opt == OptLevel::O0 {
        return Ok(());
    }
    unit.module
        .run_passes(
            "mergefunc",
            &unit.target_machine,
            PassBuilderOptions::create(),
        )
        .map_err(|e| anyhow!("merging functions in {}: {e}", unit.source_name))
}
