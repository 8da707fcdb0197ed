//! Debug metadata: relative lines (rebased in memory), debug units trimmed
//! per fragment, type identifiers, file checksums.

use std::ffi::{c_char, c_int, CString};

use super::extract::SharedTypes;
use super::ffi::*;

/// What [`rebase_relative_lines`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebased {
    /// The leader's own-file lines are relative now.
    Done,
    /// The leader has no position (no debug location or line): nothing
    /// to do, as `digest::rebase_relative_lines` would do nothing.
    NoPosition,
    /// A node of a kind the shim cannot rebuild, or lines that do not fit:
    /// the module is unchanged, and the printed text is the way.
    Unsupported,
}

/// Makes the file-level lines of the unit's source file (types,
/// typedefs, declarations; see `debug_lines`) relative to the unit's
/// `anchor` (`base + line - anchor`), in the unit's module, before its
/// fragments are extracted: what `digest` holds of them. `NoPosition`: the
/// module has no single compile unit (nothing to do); `Unsupported`: a node
/// could not be rebuilt, and the module is unchanged.
pub fn rebase_anchor_lines(module: &inkwell::module::Module, anchor: u64, base: u64) -> Rebased {
    // SAFETY: as for `rebase_relative_lines`: the module is alive and not
    // being iterated; the shim creates metadata nodes and repoints this
    // module's own references.
    match unsafe { repocc_rebase_anchor_lines(module.as_mut_ptr(), anchor, base) } {
        1 => Rebased::Done,
        0 => Rebased::NoPosition,
        _ => Rebased::Unsupported,
    }
}

/// Makes the lines of what belongs to a definition in `leader`'s own file
/// relative to its line (`RELATIVE_LINE_BASE + line - own line`), and
/// those of other definitions of the unit's source inlined into it
/// relative to theirs (`DEFINITION_LINE_BASE`..., see `debug_lines`), in a
/// fragment module, in memory: the same module as printing it,
/// `digest::rebase_relative_lines` and parsing the text back give. Nodes
/// the module shares with others (a fragment extracted in its unit's
/// context) are left as they are: what changes is copied. With `Done`, the
/// keys of the inlined definitions, by index.
///
/// `unit_source`: the path of the unit's source (`digest::ModuleDigests::
/// unit_source`), which the fragment's compile unit does not name when
/// none of its members is defined there.
pub fn rebase_relative_lines(
    module: &inkwell::module::Module,
    leader: &str,
    shared: Option<&SharedTypes>,
    unit_source: Option<&str>,
) -> (Rebased, Vec<String>) {
    use crate::support::line_bases as lines;
    let Ok(leader) = std::ffi::CString::new(leader) else {
        return (Rebased::Unsupported, Vec::new());
    };
    let Ok(unit_source) = unit_source.map(std::ffi::CString::new).transpose() else {
        return (Rebased::Unsupported, Vec::new());
    };
    let shared = shared.map_or(std::ptr::null(), |s| s.0.cast_const());
    let mut inlined: *mut c_char = std::ptr::null_mut();
    // SAFETY: the module is alive and not being iterated; the shim only
    // creates metadata nodes and repoints this module's own references
    // (attachments, records, named metadata). `leader` outlives the call;
    // `inlined` is set to null or to a message we dispose of here;
    // `unit_source` is null or outlives the call.
    let result = unsafe {
        repocc_rebase_relative_lines(
            module.as_mut_ptr(),
            leader.as_ptr(),
            lines::RELATIVE_LINE_BASE,
            shared,
            lines::DEFINITION_LINE_BASE,
            lines::DEFINITION_LINE_SPAN,
            lines::MAX_INLINED_DEFINITIONS as std::ffi::c_uint,
            unit_source
                .as_ref()
                .map_or(std::ptr::null(), |s| s.as_ptr()),
            &mut inlined,
        )
    };
    let keys = if inlined.is_null() {
        Vec::new()
    } else {
        // SAFETY: a NUL-terminated message made by LLVMCreateMessage.
        unsafe {
            let text = std::ffi::CStr::from_ptr(inlined)
                .to_string_lossy()
                .into_owned();
            llvm_sys::core::LLVMDisposeMessage(inlined);
            text.lines().map(str::to_string).collect()
        }
    };
    match result {
        1 => (Rebased::Done, keys),
        0 => (Rebased::NoPosition, Vec::new()),
        _ => (Rebased::Unsupported, Vec::new()),
    }
}

/// Trims the compile units of a fragment module to what the fragment
/// needs (the glue keeps the unit-wide lists). The module must be the only
/// user of its compile units: one parsed on its own, not one extracted in
/// the unit's context (whose compile unit it shares).
pub fn trim_debug_units(module: &inkwell::module::Module, glue: bool) {
    // SAFETY: the module is alive and not being iterated; the shim only
    // replaces operands of compile units owned by this module.
    unsafe { repocc_trim_debug_units(module.as_mut_ptr(), c_int::from(glue)) }
}

/// Notes, before the optimizer runs, the debug records of the variables
/// each carried by one definition (`(variable, carrier)`: a static only
/// it uses), so that [`keep_removed_records`] can tell, once the optimizer
/// is done, which of them it removed. Holds no record without a name.
pub fn note_carried_records(module: &inkwell::module::Module, carried: &[(String, String)]) {
    let (names, carriers): (Vec<CString>, Vec<CString>) = (carried.iter())
        .filter_map(|(v, c)| {
            Some((
                CString::new(v.as_str()).ok()?,
                CString::new(c.as_str()).ok()?,
            ))
        })
        .unzip();
    if names.is_empty() {
        return;
    }
    let names_ptrs: Vec<*const c_char> = names.iter().map(|s| s.as_ptr()).collect();
    let carriers_ptrs: Vec<*const c_char> = carriers.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: the module is alive and not being iterated; the shim adds
    // named metadata only; both arrays point into strings alive for the
    // call and are of one length.
    unsafe {
        repocc_note_carried_records(
            module.as_mut_ptr(),
            names_ptrs.as_ptr(),
            carriers_ptrs.as_ptr(),
            names_ptrs.len(),
        )
    }
}

/// After the optimizer: the records [`note_carried_records`] noted of
/// variables it removed are kept for their carriers' fragments (which
/// list them as clang's compile unit does); the note goes.
pub fn keep_removed_records(module: &inkwell::module::Module) {
    // SAFETY: the module is alive and not being iterated; the shim
    // replaces named metadata of its own only.
    unsafe { repocc_keep_removed_records(module.as_mut_ptr()) }
}

/// Gives every file-scope struct, union and enum of the module's debug
/// info a content digest as identifier, so that code generation can emit
/// it as a type unit (with `-generate-type-units`, see `merge::
/// configure_llvm`) that the linker keeps once.
pub fn identify_debug_types(module: &inkwell::module::Module) {
    // SAFETY: the module is alive and not being iterated; the shim only
    // sets the identifier operand of the module's composite type nodes
    // (distinct in C, so no other module's nodes change).
    unsafe { repocc_identify_debug_types(module.as_mut_ptr()) }
}

/// Removes the source checksums from the module's debug info (see the
/// shim); returns how many files had one.
pub fn strip_file_checksums(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive, owned by this thread's context and not
    // being iterated; the shim replaces DIFile nodes of this module's
    // context and remaps only this module's functions, globals and named
    // metadata (distinct nodes it edits belong to this module alone).
    unsafe { repocc_strip_file_checksums(module.as_mut_ptr()) }
}
