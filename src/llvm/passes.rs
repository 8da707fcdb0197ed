//! The optimization pipeline with repocc's hooks, and stored bodies put in
//! place before the inliner.
//!
//! Invariants, per call:
//! - `run_pipeline_with_hooks`: the shim runs the new pass manager on the
//!   module (as `LLVMRunPasses`) and calls `hook` on this thread: at the
//!   optimizer's start from inside a module pass, where the hook may
//!   change the module through inkwell (the shim then clears every cached
//!   analysis); with `inliner_hooks`, also from the pass instrumentation
//!   right before and right after the inliner. Before it, the hook may
//!   only replace bodies (`substitute_bodies`, which marks them; the shim
//!   then drops what the function analyses cached for them and the call
//!   graph); after it, only read. A panic in the hook is caught before it
//!   reaches C++ and reported as an error.
//! - `substitute_bodies`: each blob is read lazily into a module of the
//!   shim's own in the unit's context, dropped before the call returns;
//!   every global value a copied body names is mapped to the unit's (or a
//!   declaration added), and every metadata node to the unit's (or a new
//!   node in the context), so nothing in the unit refers into that module.

use inkwell::targets::TargetMachine;
use std::ffi::c_void;
use std::ffi::{c_char, c_int, CString};

use super::ffi::*;

/// How the optimization pipeline is tuned (LLVM's `PipelineTuningOptions`
/// that clang sets from the command line).
pub type PipelineTuning = super::ffi::RepoccTuning;

/// Runs `pipeline` (e.g. `default<O2>`) on `module`, calling `hook` where
/// the module optimization half of LLVM's default pipeline starts (after
/// inlining and function simplification, before vectorization and the
/// late passes).
pub fn run_pipeline_with_hooks(
    module: &inkwell::module::Module,
    machine: &TargetMachine,
    pipeline: &str,
    tuning: &PipelineTuning,
    inliner_hooks: bool,
    hook: &mut dyn FnMut(HookPoint),
) -> Result<(), String> {
    struct HookState<'a> {
        hook: &'a mut dyn FnMut(HookPoint),
        panicked: bool,
    }
    extern "C" fn call_hook(
        ctx: *mut c_void,
        point: c_int,
        _module: llvm_sys::prelude::LLVMModuleRef,
    ) {
        // SAFETY: `ctx` is the `HookState` below, alive and not otherwise
        // borrowed while the shim runs the pipeline.
        let state = unsafe { &mut *(ctx as *mut HookState) };
        let point = match point {
            0 => HookPoint::BeforeInliner,
            1 => HookPoint::AfterInliner,
            _ => HookPoint::OptimizerEarly,
        };
        let hook = &mut state.hook;
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(point))).is_err() {
            state.panicked = true;
        }
    }
    let pipeline = CString::new(pipeline).map_err(|_| "a NUL byte in the pipeline".to_string())?;
    let mut state = HookState {
        hook,
        panicked: false,
    };
    // SAFETY: the module and target machine are live inkwell objects; the
    // strings and `tuning` outlive the call; `call_hook` gets back the
    // pointer to `state` given here.
    let error = unsafe {
        repocc_run_pipeline(
            module.as_mut_ptr(),
            machine.as_mut_ptr(),
            pipeline.as_ptr(),
            tuning,
            Some(call_hook),
            c_int::from(inliner_hooks),
            &mut state as *mut HookState as *mut c_void,
        )
    };
    if !error.is_null() {
        // SAFETY: a non-null error from the shim is owned here; its message
        // is copied, then disposed of by LLVM's own function.
        let text = unsafe {
            let message = llvm_sys::error::LLVMGetErrorMessage(error);
            let text = std::ffi::CStr::from_ptr(message)
                .to_string_lossy()
                .into_owned();
            llvm_sys::error::LLVMDisposeErrorMessage(message);
            text
        };
        return Err(text);
    }
    if state.panicked {
        return Err("the pipeline's hook panicked".into());
    }
    Ok(())
}

/// Where [`run_pipeline_with_hooks`] calls its hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookPoint {
    /// Right before the inliner (with `inliner_hooks`): the time to put
    /// stored bodies in place ([`substitute_bodies`]).
    BeforeInliner,
    /// Right after the inliner and function simplification (with
    /// `inliner_hooks`): every body is as a later compile may reuse it.
    AfterInliner,
    /// The start of the module optimization half.
    OptimizerEarly,
}

/// One function whose body [`substitute_bodies`] puts in place.
pub struct BodyRequest<'a> {
    pub name: &'a str,
    /// Which of the blobs holds its body.
    pub source: usize,
    /// Functions of the same group are replaced all or none: those that
    /// reach one another, which the optimizer simplifies together.
    pub group: usize,
}

/// Replaces the bodies of the requested functions of `module` with those
/// of the same names in `blobs` (bitcode of modules [`extract_definitions`]
/// made in earlier compiles, after the inliner), and marks them so that no
/// optional pass runs on them until the inliner is done. Call it only from
/// the [`HookPoint::BeforeInliner`] hook. With debug info, each body's
/// metadata becomes the module's, its lines moved as the digests allow
/// (`anchor`: the unit's anchor, when its digests hold file-level lines
/// relative to one; each blob says its own in `repocc.anchor`).
/// Returns, for each request, whether its body was replaced: one stays
/// when its blob lacks it, its type differs, it names what the module
/// lacks or debug metadata the module has no node for, and then so does
/// every other function of its group.
pub fn substitute_bodies(
    module: &inkwell::module::Module,
    blobs: &[&[u8]],
    requests: &[BodyRequest],
    anchor: Option<u64>,
) -> Vec<bool> {
    let owned: Vec<CString> = requests
        .iter()
        .map(|r| CString::new(r.name).unwrap_or_default())
        .collect();
    let names: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    let sources: Vec<usize> = requests.iter().map(|r| r.source).collect();
    let groups: Vec<usize> = requests.iter().map(|r| r.group).collect();
    let blob_ptrs: Vec<*const c_char> = blobs.iter().map(|b| b.as_ptr() as *const c_char).collect();
    let blob_lens: Vec<usize> = blobs.iter().map(|b| b.len()).collect();
    let mut done = vec![0u8; requests.len()];
    // SAFETY: see the module invariants; the blobs, `names` (into
    // `owned`), `sources`, `groups` and `done` outlive the call, and each
    // has one element per blob or per request as the shim reads them; the
    // shim reads the blobs into modules of its own, dropped before it
    // returns, and ignores a source index out of range.
    unsafe {
        repocc_substitute_bodies(
            module.as_mut_ptr(),
            blob_ptrs.as_ptr(),
            blob_lens.as_ptr(),
            blobs.len(),
            names.as_ptr(),
            sources.as_ptr(),
            groups.as_ptr(),
            requests.len(),
            anchor.is_some().into(),
            anchor.unwrap_or(0),
            done.as_mut_ptr(),
        );
    }
    done.into_iter().map(|d| d != 0).collect()
}
