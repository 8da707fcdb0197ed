//! LLVM's and clang's static initializers, run when LLVM is first needed
//! instead of before `main` (see shim/startup.cpp and build.rs): a unit
//! cache hit never needs them.
//!
//! Invariant: [`initialize`] has returned before anything calls into LLVM
//! or clang — their command-line options, pass registrations and target
//! tables are set up by those initializers, and an option read before its
//! constructor ran would read zeros. The driver calls it before every path
//! but a unit cache hit's look-up (which uses the store, the unit cache and
//! the object layer: none of them names LLVM, as `scripts/check-layers.py`
//! checks), and LLVM's entry points call it too: the options' parser
//! (`parse_llvm_options`), the targets' set-up (`ir::canonical`) and
//! clang's driver in process (`run_clang_frontend`, `run_clang_link`).

use std::sync::Once;

use super::ffi::repocc_run_deferred_initializers;

/// Runs the deferred static initializers, once per process; later calls
/// (from any thread) return after the first has finished.
pub fn initialize() {
    static DONE: Once = Once::new();
    // SAFETY: the shim calls each function the linker put in the
    // `repocc_llvm_init` section, in link order, as the C library would
    // have before `main`; `Once` runs them exactly once, and every other
    // caller waits until they have run.
    DONE.call_once(|| unsafe { repocc_run_deferred_initializers() });
}

/// A context for a unit test, made after [`initialize`] has run, as the
/// driver makes its contexts (the test harness, like the executable,
/// leaves LLVM's initializers to it).
#[cfg(test)]
pub fn test_context() -> inkwell::context::Context {
    initialize();
    inkwell::context::Context::create()
}

/// An x86-64 Linux target machine at `opt`, with the C API's options, for
/// unit tests.
#[cfg(test)]
pub fn test_x86_64_machine(opt: inkwell::OptimizationLevel) -> inkwell::targets::TargetMachine {
    use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetTriple};
    Target::initialize_native(&InitializationConfig::default()).unwrap();
    let triple = TargetTriple::create("x86_64-pc-linux-gnu");
    Target::from_triple(&triple)
        .unwrap()
        .create_target_machine(
            &triple,
            "x86-64",
            "",
            opt,
            RelocMode::PIC,
            CodeModel::Default,
        )
        .unwrap()
}
