//! The one place with unsafe LLVM calls that inkwell does not wrap: the C++
//! shim's TargetMachine option setter (shim/repocc_shim.cpp), LLVM's
//! command-line option parser, and the fatal-error handler.
//!
//! Invariants, per call:
//! - `set_target_options`: `tm` is a live `TargetMachine` created by inkwell
//!   in this thread; the shim writes plain bit-fields of its `Options` before
//!   any code generation, and keeps no pointer.
//! - `parse_llvm_options`: LLVM's `cl::ParseCommandLineOptions` mutates
//!   process-wide state and must run once, before any pass runs; `Once`
//!   guarantees both (it is called before units are compiled).
//! - `install_fatal_error_handler`: the handler runs on whatever thread LLVM
//!   fails in and must not return into LLVM; it calls a Rust function that
//!   never returns (it re-runs the whole invocation through clang).

use std::ffi::{c_char, c_int, CString};
use std::sync::Once;

use inkwell::targets::TargetMachine;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShimTargetOptions {
    pub function_sections: c_int,
    pub data_sections: c_int,
    pub unique_section_names: c_int,
    pub emit_addrsig: c_int,
    pub use_init_array: c_int,
    pub emit_call_site_info: c_int,
    pub debugger_tuning_gdb: c_int,
}

extern "C" {
    fn repocc_set_target_options(
        tm: llvm_sys::target_machine::LLVMTargetMachineRef,
        opts: *const ShimTargetOptions,
    );
    #[cfg(test)]
    fn repocc_get_target_options(
        tm: llvm_sys::target_machine::LLVMTargetMachineRef,
        out: *mut ShimTargetOptions,
    );
}

/// Sets the codegen options clang sets and the C API cannot.
pub fn set_target_options(tm: &TargetMachine, opts: &ShimTargetOptions) {
    // SAFETY: see the module invariants; `tm` outlives the call.
    unsafe { repocc_set_target_options(tm.as_mut_ptr(), opts) }
}

/// Reads them back (tests).
#[cfg(test)]
pub fn get_target_options(tm: &TargetMachine) -> ShimTargetOptions {
    let mut out = ShimTargetOptions::default();
    // SAFETY: as above; `out` is a valid, writable struct of the C layout.
    unsafe { repocc_get_target_options(tm.as_mut_ptr(), &mut out) };
    out
}

/// Passes options to LLVM's option parser, once per process.
pub fn parse_llvm_options(options: &[&str]) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let owned: Vec<CString> = std::iter::once("repocc")
            .chain(options.iter().copied())
            .map(|s| CString::new(s).expect("no NUL in option"))
            .collect();
        let ptrs: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
        // SAFETY: `ptrs` points into `owned`, alive for the call; the
        // overview string is a valid C string.
        unsafe {
            llvm_sys::support::LLVMParseCommandLineOptions(
                ptrs.len() as c_int,
                ptrs.as_ptr(),
                c"repocc".as_ptr(),
            )
        }
    });
}

static mut FATAL_HOOK: Option<fn(&str) -> !> = None;

extern "C" fn on_llvm_fatal_error(reason: *const c_char) {
    let text = if reason.is_null() {
        String::from("unknown LLVM error")
    } else {
        // SAFETY: LLVM passes a NUL-terminated string valid for the call.
        unsafe { std::ffi::CStr::from_ptr(reason) }
            .to_string_lossy()
            .into_owned()
    };
    // SAFETY: FATAL_HOOK is written once, before any LLVM work starts, and
    // only read afterwards.
    let hook = unsafe { *std::ptr::addr_of!(FATAL_HOOK) };
    match hook {
        Some(f) => f(&text),
        None => std::process::abort(),
    }
}

/// Routes LLVM's fatal errors (which would otherwise exit the process) to
/// `hook`. Call once, before any LLVM work.
pub fn install_fatal_error_handler(hook: fn(&str) -> !) {
    // SAFETY: called before LLVM work starts, from the main thread.
    unsafe {
        FATAL_HOOK = Some(hook);
        llvm_sys::error_handling::LLVMInstallFatalErrorHandler(Some(on_llvm_fatal_error));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetTriple};
    use inkwell::OptimizationLevel;

    #[test]
    fn target_options_round_trip() {
        Target::initialize_native(&InitializationConfig::default()).unwrap();
        let triple = TargetTriple::create("x86_64-pc-linux-gnu");
        let target = Target::from_triple(&triple).unwrap();
        let tm = target
            .create_target_machine(
                &triple,
                "x86-64",
                "",
                OptimizationLevel::Default,
                RelocMode::PIC,
                CodeModel::Default,
            )
            .unwrap();
        let before = get_target_options(&tm);
        assert_eq!(before.use_init_array, 0, "C API default differs from clang");
        let want = ShimTargetOptions {
            function_sections: 1,
            data_sections: 1,
            unique_section_names: 0,
            emit_addrsig: 1,
            use_init_array: 1,
            emit_call_site_info: 1,
            debugger_tuning_gdb: 1,
        };
        set_target_options(&tm, &want);
        assert_eq!(get_target_options(&tm), want);
    }
}
