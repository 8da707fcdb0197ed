//! Debug fragments linked into one module (the shim's batch.cpp): the
//! calls and their invariants. What the batch is for, and why it is built
//! so, is in batch.cpp's top comment and docs/performance.md ("Debug
//! fragments from one code generation").

use std::ffi::{c_char, CStr, CString};

use inkwell::context::Context;
use inkwell::module::Module;

use super::ffi::{
    repocc_batch_declaration_conflicts, repocc_batch_linker_free, repocc_batch_linker_new,
    repocc_debug_compile_directory, repocc_debug_types_unshareable, repocc_link_fragment,
    repocc_share_debug_types_by_identifier, RepoccBatchLinker,
};

/// Debug types with an identifier read into `context` from now on are one
/// node per identifier (LLVM's ODR type map), as the fragments of a unit
/// share them in the unit's context. Call before reading any module into
/// it.
pub fn share_debug_types_by_identifier(context: &Context) {
    // SAFETY: the context is alive; the map only changes how later reads
    // unique types.
    unsafe { repocc_share_debug_types_by_identifier(context.raw()) }
}

/// Whether `module` holds two debug types of one identifier: each would be
/// a type unit of one signature, which carving declines, in a batch as
/// alone.
pub fn debug_types_unshareable(module: &Module) -> bool {
    // SAFETY: the module is alive; the shim only reads it.
    unsafe { repocc_debug_types_unshareable(module.as_mut_ptr()) != 0 }
}

/// The directory of `module`'s compile unit (`None`: it has none). A
/// batch holds the fragments of one directory (see shim/batch.cpp).
pub fn debug_compile_directory(module: &Module) -> Option<String> {
    let mut len = 0usize;
    // SAFETY: the module is alive; the pointer, when not null, is to `len`
    // bytes of a string of its context, copied at once.
    unsafe {
        let p = repocc_debug_compile_directory(module.as_mut_ptr(), &mut len);
        if p.is_null() {
            return None;
        }
        Some(String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned())
    }
}

/// The linker of one batch module: fragments moved into it one after
/// another (see shim/batch.cpp: one linker for all, not one each).
pub struct BatchLinker<'m, 'ctx> {
    raw: *mut RepoccBatchLinker,
    _batch: std::marker::PhantomData<&'m Module<'ctx>>,
}

impl<'m, 'ctx> BatchLinker<'m, 'ctx> {
    /// A linker into `batch`, which must outlive it (the borrow says so).
    pub fn new(batch: &'m Module<'ctx>) -> Self {
        // SAFETY: the module is alive while the linker is (borrowed for
        // `'m`); the linker only keeps a pointer to it.
        let raw = unsafe { repocc_batch_linker_new(batch.as_mut_ptr()) };
        BatchLinker {
            raw,
            _batch: std::marker::PhantomData,
        }
    }

    /// Whether `fragment` declares a library function the batch declares
    /// already with other debug info: the fragment would have to take the
    /// batch's (a declaration is one per module) or rename its own, which
    /// the code generator knows by name. Such a fragment is compiled
    /// alone.
    pub fn declaration_conflicts(&self, fragment: &Module<'ctx>) -> bool {
        // SAFETY: the linker, its batch and `fragment` are alive; the shim
        // only reads them.
        unsafe { repocc_batch_declaration_conflicts(self.raw, fragment.as_mut_ptr()) != 0 }
    }

    /// Moves `fragment` (in the batch's context) into the batch with its
    /// definitions renamed with `suffix` (and the declarations whose debug
    /// info differs from the batch's, see shim/batch.cpp), after what the batch holds and
    /// in their own order; `fragment` is consumed either way.
    pub fn link(&mut self, fragment: Module<'ctx>, suffix: &str) -> Result<(), String> {
        let suffix = CString::new(suffix).map_err(|e| e.to_string())?;
        let source = fragment.as_mut_ptr();
        // The shim takes the module over (and frees it), so inkwell must not.
        std::mem::forget(fragment);
        let mut error: *mut c_char = std::ptr::null_mut();
        // SAFETY: the linker and its batch are alive, `source` is in the
        // batch's context and owned by nothing else now; `error` is set
        // only to a message made by LLVMCreateMessage, freed below.
        let linked = unsafe { repocc_link_fragment(self.raw, source, suffix.as_ptr(), &mut error) };
        if linked != 0 {
            return Ok(());
        }
        let message = if error.is_null() {
            "the linker refused the fragment".to_string()
        } else {
            // SAFETY: a NUL-terminated message made by LLVMCreateMessage.
            let text = unsafe { CStr::from_ptr(error) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: made by LLVMCreateMessage, not used after.
            unsafe { llvm_sys::core::LLVMDisposeMessage(error) };
            text
        };
        Err(message)
    }
}

impl Drop for BatchLinker<'_, '_> {
    fn drop(&mut self) {
        // SAFETY: made by repocc_batch_linker_new, freed once.
        unsafe { repocc_batch_linker_free(self.raw) }
    }
}
