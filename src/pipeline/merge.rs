//! Stage 5, function merging: LLVM's MergeFunctions after optimization.
//! Equal functions are folded: the duplicate's callers are redirected to
//! the survivor, and the duplicate becomes an alias when its address is
//! not significant (`unnamed_addr`, and linkage that allows it — the
//! reference's condition), otherwise a thunk that tail-calls the survivor.
//! Skipped at -O0, like every other optimization.
//!
//! In repository mode a merge makes code depend on a partner outside its
//! digest: a thunk's target, or the survivor a caller was redirected to,
//! is right only while the partner's content is what it was when they were
//! found equal. `run_tracked` reports those dependencies (every reference
//! to a function that merging added), the pipeline stores them with the
//! fragment as requirements (the partner's final digest), and pruning
//! reuses a fragment only when its requirements still hold. Duplicates
//! stay thunks there: an alias would move a definition into its partner's
//! fragment.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use anyhow::{anyhow, Result};
use inkwell::passes::PassBuilderOptions;

use super::canonical::Unit;
use crate::llvm_shim;
use crate::pipeline::settings::{CodegenSettings, OptLevel};

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
/// object instead of one per fragment; see `llvm_shim::
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
    llvm_shim::parse_llvm_options(&options);
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

/// For each definition (by name), the functions merging made it refer
/// to.
pub type MergeRequirements = BTreeMap<String, BTreeSet<String>>;

/// Merges, and returns what each definition's code now depends on.
pub fn run_tracked(unit: &Unit, settings: &CodegenSettings) -> Result<MergeRequirements> {
    if settings.opt == OptLevel::O0 {
        return Ok(MergeRequirements::new());
    }
    let before: HashSet<(String, String)> = llvm_shim::function_users(&unit.module)
        .into_iter()
        .collect();
    run(unit, settings)?;
    let mut requires = MergeRequirements::new();
    for pair in llvm_shim::function_users(&unit.module) {
        if pair.0 != pair.1 && !before.contains(&pair) {
            let (function, user) = pair;
            requires.entry(user).or_default().insert(function);
        }
    }
    Ok(requires)
}
