//! The target machine: the codegen options clang sets, the longest NOP, the
//! object emitter, LLVM's command-line options, its fatal-error handler
//! and version.
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
//! - `emit_object`, `ObjectEmitter`: each module's code generation starts
//!   by emptying the ELF lowering's `llvm.used` set (see the shim's
//!   `forgetUsedGlobals`), on the thread that owns the machine.
//! - `ObjectEmitter`: the shim's legacy pass manager holds the target
//!   machine's pointer, so the emitter borrows the machine; it is used
//!   from one thread (raw pointer: not `Send`), on one module at a time,
//!   each alive for its run; the bytes it returns live in its own buffer
//!   until the next run and are copied out at once.

use inkwell::targets::TargetMachine;
use std::ffi::{c_char, c_int, CString};
use std::sync::Once;

use super::ffi::*;

/// The codegen options clang sets that LLVMCreateTargetMachine leaves at
/// their defaults (see shim/repocc_shim.h).
pub type ShimTargetOptions = super::ffi::RepoccTargetOptions;

/// Sets the codegen options clang sets and the C API cannot.
pub fn set_target_options(tm: &TargetMachine, opts: &ShimTargetOptions) {
    // SAFETY: see the module invariants; `tm` outlives the call.
    unsafe { repocc_set_target_options(tm.as_mut_ptr(), opts) }
}

/// The longest NOP LLVM's assembler pads `module`'s code with on `tm`
/// (its functions' subtarget: 15 bytes for clang's x86-64 with
/// `tune-cpu=generic`); 0 without an assembler backend.
pub fn max_nop_bytes(tm: &TargetMachine, module: &inkwell::module::Module) -> u8 {
    // SAFETY: see the module invariants; both outlive the call.
    let n = unsafe { repocc_max_nop_bytes(tm.as_mut_ptr(), module.as_mut_ptr()) };
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// `module`'s object, as `TargetMachine::write_to_memory_buffer` makes
/// it, with what earlier modules left in the machine forgotten first: the
/// ELF lowering's set of `llvm.used` globals, which LLVM fills per module
/// and never empties (with a machine shared by many modules, a global
/// allocated where an earlier module's used one was got SHF_GNU_RETAIN).
pub fn emit_object(
    machine: &TargetMachine,
    module: &inkwell::module::Module,
) -> Result<inkwell::memory_buffer::MemoryBuffer<'static>, inkwell::support::LLVMString> {
    // SAFETY: the machine is alive and not generating code on another
    // thread (`TargetMachine` is not `Sync`); the shim empties a set of its
    // object-file lowering, which the next module's code generation fills.
    unsafe { repocc_forget_used_globals(machine.as_mut_ptr()) };
    machine.write_to_memory_buffer(module, inkwell::targets::FileType::Object)
}

/// One code generation pipeline for many modules (see the shim's
/// `RepoccObjectEmitter`): the objects of
/// `TargetMachine::write_to_memory_buffer`, byte for byte, without building
/// the target's pipeline again for every module. One per thread (it is not
/// `Send`), for the machine it borrows.
pub struct ObjectEmitter<'tm> {
    raw: std::ptr::NonNull<RepoccObjectEmitter>,
    _machine: std::marker::PhantomData<&'tm TargetMachine>,
}

impl<'tm> ObjectEmitter<'tm> {
    /// `None` if the machine cannot emit objects.
    pub fn new(machine: &'tm TargetMachine) -> Option<ObjectEmitter<'tm>> {
        // SAFETY: the machine is alive, and outlives the emitter (the
        // borrow); the shim keeps its pointer and nothing else.
        let raw = unsafe { repocc_object_emitter_new(machine.as_mut_ptr()) };
        Some(ObjectEmitter {
            raw: std::ptr::NonNull::new(raw)?,
            _machine: std::marker::PhantomData,
        })
    }

    /// The object of `module` (its data layout set to the machine's, as
    /// `write_to_memory_buffer` does). Code generation errors go to the
    /// module's context's diagnostic handler, as there.
    pub fn emit(&mut self, module: &inkwell::module::Module) -> Vec<u8> {
        let mut len = 0usize;
        // SAFETY: the emitter is alive and this thread's (`&mut self`), the
        // module too; the returned bytes are the emitter's buffer, valid
        // until its next run, and copied before this borrow ends.
        unsafe {
            let data = repocc_object_emitter_run(self.raw.as_ptr(), module.as_mut_ptr(), &mut len);
            if data.is_null() || len == 0 {
                return Vec::new();
            }
            std::slice::from_raw_parts(data.cast::<u8>(), len).to_vec()
        }
    }
}

impl Drop for ObjectEmitter<'_> {
    fn drop(&mut self) {
        // SAFETY: made by repocc_object_emitter_new, freed once, here.
        unsafe { repocc_object_emitter_free(self.raw.as_ptr()) }
    }
}

/// Reads them back (tests).
#[cfg(test)]
pub fn get_target_options(tm: &TargetMachine) -> ShimTargetOptions {
    let mut out = ShimTargetOptions::default();
    // SAFETY: as above; `out` is a valid, writable struct of the C layout.
    unsafe { repocc_get_target_options(tm.as_mut_ptr(), &mut out) };
    out
}

/// Some option was given to LLVM's parser (see [`llvm_options_set`]).
static OPTIONS_SET: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether [`parse_llvm_options`] set any LLVM option in this process:
/// code generated since is not clang's own.
pub fn llvm_options_set() -> bool {
    OPTIONS_SET.load(std::sync::atomic::Ordering::Relaxed)
}

/// Passes options to LLVM's option parser, once per process.
pub fn parse_llvm_options(options: &[&str]) {
    static ONCE: Once = Once::new();
    // The options are registered by the static initializers.
    super::startup::initialize();
    ONCE.call_once(|| {
        if !options.is_empty() {
            OPTIONS_SET.store(true, std::sync::atomic::Ordering::Relaxed);
        }
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

/// The LLVM version repocc is linked with, e.g. "19.1.7".
pub fn llvm_version() -> String {
    let (mut major, mut minor, mut patch) = (0u32, 0u32, 0u32);
    // SAFETY: the out-pointers are valid u32s for the duration of the call.
    unsafe { llvm_sys::core::LLVMGetVersion(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}
