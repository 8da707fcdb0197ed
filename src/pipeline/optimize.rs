//! Stage 4, optimization: the new pass manager's `default<On>` pipeline with
//! the pass-builder options clang derives from the command line
//! (vectorizers, unrolling and interleaving, call-graph profile).

use anyhow::{anyhow, Result};
use inkwell::passes::PassBuilderOptions;

use super::canonical::Unit;
use crate::driver::plan::CodegenSettings;

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

pub fn run(unit: &Unit, settings: &CodegenSettings) -> Result<()> {
    unit.module
        .run_passes(
            settings.opt.pipeline(),
            &unit.target_machine,
            pass_builder_options(settings),
        )
        .map_err(|e| anyhow!("optimizing {}: {e}", unit.source_name))
}
