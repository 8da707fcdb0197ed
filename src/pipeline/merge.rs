//! Stage 5, function merging: LLVM's MergeFunctions after optimization.
//! Equal functions are folded; the survivor's duplicate becomes an alias
//! when its address is not significant (`unnamed_addr`, and linkage that
//! allows it — the reference's condition), otherwise a thunk that tail-calls
//! the survivor. Skipped at -O0, like every other optimization.

use anyhow::{anyhow, Result};
use inkwell::passes::PassBuilderOptions;

use super::canonical::Unit;
use crate::driver::plan::{CodegenSettings, OptLevel};
use crate::llvm_shim;

/// LLVM options merging needs; must be set before any unit is compiled.
pub fn configure_llvm() {
    llvm_shim::parse_llvm_options(&["-mergefunc-use-aliases"]);
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
