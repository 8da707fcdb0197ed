//! Stage 6, code generation: the unit's module to an ELF relocatable
//! object in memory, with the TargetMachine built in `canonical`.

use anyhow::{anyhow, Result};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::targets::FileType;

use super::canonical::Unit;

pub fn emit_object(unit: &Unit) -> Result<MemoryBuffer<'static>> {
    unit.target_machine
        .write_to_memory_buffer(&unit.module, FileType::Object)
        .map_err(|e| anyhow!("generating code for {}: {e}", unit.source_name))
}
