//! Fragments: a module with the bodies of named definitions, and the
//! debug types the fragments of one unit share.
//!
//! Invariants, per call:
//! - `extract_definitions`: the shim builds a new module in the source
//!   module's context (cloning bodies, mapping references to fresh
//!   declarations); the result is owned by the returned `Module`, which
//!   borrows the same context as the source, so it cannot outlive it.

use std::ffi::{c_char, c_int, CString};

use super::ffi::*;

/// What the fragments of one unit learn about its debug metadata for the
/// next one (the nodes no fragment copies or rebases; see the shim's
/// `RepoccSharedTypes`), so that each fragment's extraction and rebase walk
/// only what is its own. Made per unit, used in its context only (the
/// thread that extracts), dropped before the context.
///
/// With full debug info, fragments hold the unit's types as stubs (see
/// [`StubKind`]), and the glue holds them whole (see [`retain_unit_types`]).
pub struct SharedTypes(pub(super) *mut RepoccSharedTypes);

impl SharedTypes {
    pub fn new(module: &inkwell::module::Module) -> Self {
        // SAFETY: the shim reads the module's compile units and allocates
        // an empty set; freed once, in `drop`.
        SharedTypes(unsafe { repocc_shared_types_new(module.as_mut_ptr()) })
    }
}

/// How a unit's fragments hold its debug types (see [`SharedTypes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StubKind {
    /// Whole (no debug info, line tables only, or a mix of languages).
    None,
    /// C: file-scope structs, unions and enums as stubs of their type
    /// units (tag, name, size, identifier); the glue holds them whole.
    CRecords,
    /// C++: classes, structs and unions with an ODR identifier as
    /// declarations (tag, name, scope chain, identifier), as clang emits a
    /// class another unit defines; the glue holds every complete one.
    CxxDecls,
}

/// How the unit's fragments hold its types (see [`StubKind`]).
pub fn stubs_unit_types(module: &inkwell::module::Module) -> StubKind {
    // SAFETY: reads the module's compile units only.
    match unsafe { repocc_stubs_unit_types(module.as_mut_ptr()) } {
        1 => StubKind::CRecords,
        2 => StubKind::CxxDecls,
        _ => StubKind::None,
    }
}

/// Where fragments hold stubs of the unit's types, makes its compile units
/// retain every file-scope struct, union and enum the definitions reach,
/// so that the glue holds each whole. Run before pruning: the list must
/// not depend on what the repository holds. Returns how many were added.
pub fn retain_unit_types(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive and not being iterated; the shim replaces
    // the retained-types list of the module's own compile units (distinct
    // nodes of this module) and reads everything else.
    unsafe { repocc_retain_unit_types(module.as_mut_ptr()) }
}

/// In a C++ unit with full debug info, makes each member function
/// declaration that only its class's member list names a distinct node;
/// run once, before the unit's fragments are extracted, and returns how
/// many. LLVM uniques a member declaration by a hash of its linkage name
/// and its class's identifier alone, so the copies of one class's members
/// that fragments make (a class without an identifier is copied into each
/// fragment that reaches it) all collide, and extraction was quadratic in
/// the fragments reaching a class. A distinct node is copied without a
/// lookup; the fragments hold the same nodes where they held them (see
/// the shim's `repocc_distinct_member_declarations` for which stay).
pub fn distinct_member_declarations(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive and nothing else walks or changes its
    // metadata meanwhile (called in the unit's thread before extraction);
    // the shim creates new distinct nodes and changes only the member-list
    // operand of distinct classes that this module's metadata reaches.
    unsafe { repocc_distinct_member_declarations(module.as_mut_ptr()) }
}

impl Drop for SharedTypes {
    fn drop(&mut self) {
        // SAFETY: made by `repocc_shared_types_new`, freed only here.
        unsafe { repocc_shared_types_free(self.0) }
    }
}

/// How an extracted module gets its metadata.
#[derive(Clone, Copy)]
enum ExtractedMetadata<'a> {
    /// Copies (a fragment's own compile unit), types shared with the unit
    /// where nothing under them changes (`SharedTypes`: what earlier
    /// fragments of the same unit found).
    Own(Option<&'a SharedTypes>),
    /// The unit's nodes themselves wherever they reach no global value.
    Unit,
}

fn extract<'ctx>(
    module: &inkwell::module::Module<'ctx>,
    names: &[&str],
    with_module_asm: bool,
    metadata: ExtractedMetadata,
) -> inkwell::module::Module<'ctx> {
    let owned: Vec<CString> = names.iter().filter_map(|n| CString::new(*n).ok()).collect();
    let ptrs: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    let (shared, share_metadata) = match metadata {
        ExtractedMetadata::Own(shared) => (shared.map_or(std::ptr::null_mut(), |s| s.0), 0),
        ExtractedMetadata::Unit => (std::ptr::null_mut(), 1),
    };
    // SAFETY: see the module invariants; `ptrs` points into `owned`, alive
    // for the call; the returned module is new and owned by the wrapper.
    unsafe {
        let raw = repocc_extract_definitions(
            module.as_mut_ptr(),
            ptrs.as_ptr(),
            ptrs.len(),
            c_int::from(with_module_asm),
            shared,
            share_metadata,
        );
        inkwell::module::Module::new(raw)
    }
}

/// A new module (same context) with the bodies of the named definitions and
/// declarations of what they reference. Names not defined in `module` are
/// skipped. `with_module_asm` copies the module-level inline assembly.
/// `shared`: what earlier fragments of the same unit (same module) found.
pub fn extract_definitions<'ctx>(
    module: &inkwell::module::Module<'ctx>,
    names: &[&str],
    with_module_asm: bool,
    shared: Option<&SharedTypes>,
) -> inkwell::module::Module<'ctx> {
    extract(
        module,
        names,
        with_module_asm,
        ExtractedMetadata::Own(shared),
    )
}

/// As [`extract_definitions`], but the module refers to `module`'s own
/// metadata nodes wherever they reach no global value (see the shim's
/// `shareUnitMetadata`), its compile unit included, instead of copies
/// that would stay in the context for the rest of the compile; to be
/// written with [`shared_bitcode`] and dropped while `module` waits.
pub fn extract_definitions_sharing_metadata<'ctx>(
    module: &inkwell::module::Module<'ctx>,
    names: &[&str],
) -> inkwell::module::Module<'ctx> {
    extract(module, names, false, ExtractedMetadata::Unit)
}

/// The bitcode of a module from [`extract_definitions_sharing_metadata`],
/// its compile unit without the unit-wide lists (as a fragment's).
pub fn shared_bitcode(
    module: &inkwell::module::Module,
) -> inkwell::memory_buffer::MemoryBuffer<'static> {
    // SAFETY: the module is live; its compile unit is the unit's, which
    // the shim changes and restores within the call, on this thread, while
    // the unit is not otherwise used (the caller holds it borrowed). The
    // returned buffer is new and owned by the wrapper.
    unsafe {
        inkwell::memory_buffer::MemoryBuffer::new(repocc_write_shared_bitcode(module.as_mut_ptr()))
    }
}
