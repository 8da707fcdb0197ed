//! Stage 4, optimization: the new pass manager's `default<On>` pipeline with
//! the pass-builder options clang derives from the command line
//! (vectorizers, unrolling and interleaving, call-graph profile).
//!
//! The constructor list (`llvm.global_ctors`) is hidden from the optimizer
//! while it runs: GlobalOpt would otherwise evaluate constructors at compile
//! time, writing their results into the initializers of the globals they
//! store to and dropping them from the list. A global's stored fragment
//! would then hold a constructor's effect while a later build, in which the
//! constructor's body is pruned, still runs it — twice the effect for a
//! constructor such as `n++`. Constructors always run at start-up instead.

use anyhow::{anyhow, Result};
use inkwell::module::Linkage;
use inkwell::passes::PassBuilderOptions;

use super::canonical::Unit;
use crate::pipeline::settings::CodegenSettings;

pub fn pass_builder_options(settings: &CodegenSettings) -> PassBuilderOptions {
    let o = PassBuilderOptions::create();
    o.set_loop_vectorization(settings.vectorize_loops);
    o.set_loop_slp_vectorization(settings.vectorize_slp);
    o.set_loop_unrolling(settings.unroll_loops);
    o.set_loop_interleaving(settings.unroll_loops);
    o.set_call_graph_profile(true);
    o.set_merge_functions(false);
    o
}

const CTORS: &str = "llvm.global_ctors";
const HIDDEN_CTORS: &str = "repocc.hidden.global_ctors";

pub fn run(unit: &Unit, settings: &CodegenSettings) -> Result<()> {
    let ctors = unit.module.get_global(CTORS);
    if let Some(c) = ctors {
        // External while hidden, so that nothing deletes or rewrites it.
        c.set_name(HIDDEN_CTORS);
        c.set_linkage(Linkage::External);
    }
    let result = unit
        .module
        .run_passes(
            settings.opt.pipeline(),
            &unit.target_machine,
            pass_builder_options(settings),
        )
        .map_err(|e| anyhow!("optimizing {}: {e}", unit.source_name));
    if let Some(c) = unit.module.get_global(HIDDEN_CTORS) {
        c.set_linkage(Linkage::Appending);
        c.set_name(CTORS);
    }
    result
}
