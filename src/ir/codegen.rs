//! Stage 6, code generation: the unit's module to an ELF relocatable
//! object in memory, with the TargetMachine built in `canonical`.

use anyhow::{anyhow, Result};
use inkwell::memory_buffer::MemoryBuffer;

use super::canonical::Unit;

pub fn emit_object(unit: &Unit) -> Result<MemoryBuffer<'static>> {
    crate::llvm::emit_object(&unit.target_machine, &unit.module)
        .map_err(|e| anyhow!("generating code for {}: {e}", unit.source_name))
}
