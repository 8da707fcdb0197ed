//! The one place with unsafe LLVM calls that inkwell does not wrap: the C++
//! shim (shim/, its C interface in shim/repocc_shim.h), LLVM's
//! command-line option parser, its fatal-error handler and diagnostics.
//!
//! One file per job, each beside the shim file of the same job:
//! `target` (codegen options, the object emitter, LLVM's options and fatal
//! errors), `frontend` (clang's driver and frontend in process, the
//! diagnostic sink), `extract` (fragments, the unit's shared debug types),
//! `queries` (what inkwell cannot ask, small edits), `debug_info` (relative
//! lines, debug units, type identity), `batch` (debug fragments linked
//! into one module), `passes` (the pipeline with its
//! hooks, stored bodies), `interrupts` (files removed on a signal),
//! `memory` (what the exit reclaims) and `startup` (LLVM's static
//! initializers, run when first needed). `ffi` holds the declarations build.rs
//! generates from the header. Each file states the invariants of its calls.

mod batch;
mod debug_info;
mod extract;
mod ffi;
mod frontend;
mod interrupts;
mod memory;
mod passes;
mod queries;
mod startup;
mod target;

pub use batch::*;
pub use debug_info::*;
pub use extract::*;
pub use frontend::*;
pub use interrupts::*;
pub use memory::*;
pub use passes::*;
pub use queries::*;
pub use startup::*;
pub use target::*;

#[cfg(test)]
mod tests;
