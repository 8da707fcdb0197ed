//! What inkwell cannot ask of a module or value (COMDATs, users, block
//! addresses, inlined sizes, a fragment's reach, aliases) and small edits
//! (declarations, function order, local names).

use inkwell::targets::TargetMachine;
use std::ffi::{c_char, CString};

use super::ffi::*;

fn value_name(v: llvm_sys::prelude::LLVMValueRef) -> String {
    let mut len = 0usize;
    // SAFETY: `v` is a live value; LLVM returns a pointer to `len` bytes
    // owned by the value.
    unsafe {
        let p = llvm_sys::core::LLVMGetValueName2(v, &mut len);
        String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned()
    }
}

/// The COMDAT group name of the global named `name`, if it has one.
pub fn comdat_of(module: &inkwell::module::Module, name: &str) -> Option<String> {
    let cname = CString::new(name).ok()?;
    // SAFETY: the module is alive; the name pointer returned by the shim
    // points into the comdat, owned by the module, and is copied at once.
    unsafe {
        let m = module.as_mut_ptr();
        let mut v = llvm_sys::core::LLVMGetNamedFunction(m, cname.as_ptr());
        if v.is_null() {
            v = llvm_sys::core::LLVMGetNamedGlobal(m, cname.as_ptr());
        }
        if v.is_null() {
            return None;
        }
        let mut len = 0usize;
        let p = repocc_comdat_name(v, &mut len);
        if p.is_null() {
            return None;
        }
        Some(String::from_utf8_lossy(std::slice::from_raw_parts(p as *const u8, len)).into_owned())
    }
}

/// One entry of `llvm.global_ctors` or `llvm.global_dtors`.
struct StructorEntry {
    /// Whether it is a destructor entry.
    destructor: bool,
    priority: u64,
    /// The name of its key, if it has one.
    key: Option<String>,
}

/// The module's constructor entries, then its destructor entries, each
/// list in its own order.
fn structor_entries(module: &inkwell::module::Module) -> Vec<StructorEntry> {
    let mut entries = Vec::new();
    for (destructor, list) in [(false, "llvm.global_ctors"), (true, "llvm.global_dtors")] {
        let Some(global) = module.get_global(list) else {
            continue;
        };
        use inkwell::values::AsValueRef;
        // SAFETY: reads the operands of a live global's initializer (an
        // array of `{ i32, ptr, ptr }` structs, as the verifier requires)
        // without changing anything; names are copied at once.
        unsafe {
            use llvm_sys::core::*;
            let init = LLVMGetInitializer(global.as_value_ref());
            if init.is_null() || LLVMIsAConstantArray(init).is_null() {
                continue;
            }
            for i in 0..LLVMGetNumOperands(init).max(0) as u32 {
                let entry = LLVMGetOperand(init, i);
                if entry.is_null() || LLVMGetNumOperands(entry) < 3 {
                    continue;
                }
                let priority = LLVMGetOperand(entry, 0);
                let priority = if priority.is_null() || LLVMIsAConstantInt(priority).is_null() {
                    u64::from(u16::MAX)
                } else {
                    LLVMConstIntGetZExtValue(priority)
                };
                let key = LLVMGetOperand(entry, 2);
                let key =
                    (!key.is_null() && !LLVMIsAGlobalValue(key).is_null()).then(|| value_name(key));
                entries.push(StructorEntry {
                    destructor,
                    priority,
                    key,
                });
            }
        }
    }
    entries
}

/// The keys of the module's constructor and destructor entries (a C++
/// inline variable's or a template's static data member's dynamic
/// initializer is keyed by the variable): such an entry is emitted with
/// its key, in the key's COMDAT group (see `extract_definitions`).
pub fn structor_keys(module: &inkwell::module::Module) -> std::collections::HashSet<String> {
    (structor_entries(module).into_iter())
        .filter_map(|e| e.key)
        .collect()
}

/// The module's constructor and destructor entries in the order the code
/// generator writes them: constructors, then destructors, each by
/// priority and then as listed (as LLVM's `AsmPrinter` emits them), as
/// (destructor, priority, key; `""` for an entry without one), each once,
/// where it first comes. An entry with a key gets a table section of its
/// own, in the key's group; those of one priority without a key share
/// one. The linker runs a unit's entries in the order of those sections
/// in its object, and C++17 orders inline variables' initializers by it,
/// so the composer places them in this order (`obj::structor_order`).
pub fn structor_order(module: &inkwell::module::Module) -> Vec<(bool, u64, String)> {
    let mut entries = structor_entries(module);
    entries.sort_by_key(|e| (e.destructor, e.priority));
    let mut seen = std::collections::HashSet::new();
    (entries.into_iter())
        .map(|e| (e.destructor, e.priority, e.key.unwrap_or_default()))
        .filter(|entry| seen.insert(entry.clone()))
        .collect()
}

/// The function whose block addresses the initializer of the global
/// variable `global` takes, if any.
pub fn blockaddress_function(global: &inkwell::values::GlobalValue) -> Option<String> {
    use inkwell::values::AsValueRef;
    // SAFETY: `global` is a live global of a live module; the result is a
    // function of the same module, read at once.
    unsafe {
        let f = repocc_blockaddress_function(global.as_value_ref());
        (!f.is_null()).then(|| value_name(f))
    }
}

/// Marks constant the internal global variables nothing in `module`
/// writes (GlobalOpt's test); returns how many.
pub fn mark_unwritten_statics_constant(module: &inkwell::module::Module) -> u32 {
    // SAFETY: `module` is a live module; only its globals' flags change.
    unsafe { repocc_mark_unwritten_statics_constant(module.as_mut_ptr()) }
}

/// Whether a call in `function`'s module names it as its callee (a place
/// the inliner could copy its body to).
pub fn is_called(function: &inkwell::values::FunctionValue) -> bool {
    use inkwell::values::AsValueRef;
    // SAFETY: `function` is a live function of a live module.
    unsafe { repocc_is_called(function.as_value_ref()) != 0 }
}

/// Whether `function` has exactly one use, a direct call from another
/// function, and nothing (`noinline`, `optnone`, varargs) keeps it from
/// being inlined there.
pub fn has_one_call_site(function: &inkwell::values::FunctionValue) -> bool {
    use inkwell::values::AsValueRef;
    // SAFETY: `function` is a live function of a live module.
    unsafe { repocc_has_one_call_site(function.as_value_ref()) != 0 }
}

/// The instructions of `function` once the `alwaysinline` functions it
/// calls are inlined into it (each counted once).
pub fn inlined_size(function: &inkwell::values::FunctionValue) -> usize {
    use inkwell::values::AsValueRef;
    // SAFETY: `function` is a live function of a live module.
    unsafe { repocc_inlined_size(function.as_value_ref()) }
}

/// Who uses a global, as [`user_functions`] tells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Users {
    /// Something other than a function's code (an initializer, an alias).
    NotOnlyCode,
    /// No function but itself.
    Nothing,
    /// One function other than itself (or, asked with `initializers`, one
    /// global variable whose initializer holds it), by name.
    One(String),
    /// Several functions.
    Several,
}

/// Which functions (other than `global` itself) use `global` in their code:
/// call it, load or store it, take its address. With `initializers`, a
/// global variable whose initializer holds it (a table of string literals)
/// counts as a user too, by its name; LLVM's own (`llvm.used`) do not.
pub fn user_functions(global: &inkwell::values::GlobalValue, initializers: bool) -> Users {
    use inkwell::values::AsValueRef;
    let mut sole = std::ptr::null_mut();
    // SAFETY: `global` is a live global of a live module; `sole` is set to
    // a function or global variable of the same module or null, read at
    // once.
    unsafe {
        match repocc_user_functions(global.as_value_ref(), &mut sole, initializers as i32) {
            -1 => Users::NotOnlyCode,
            0 => Users::Nothing,
            1 if !sole.is_null() => Users::One(value_name(sole)),
            _ => Users::Several,
        }
    }
}

/// Turns the definition named `name` into a declaration (a no-op for
/// names that are not definitions of `module`).
pub fn make_declaration(module: &inkwell::module::Module, name: &str) {
    let Ok(cname) = CString::new(name) else {
        return;
    };
    // SAFETY: the module is alive and not being iterated by the caller; the
    // shim only changes the named global in place.
    unsafe {
        let m = module.as_mut_ptr();
        let mut v = llvm_sys::core::LLVMGetNamedFunction(m, cname.as_ptr());
        if v.is_null() {
            v = llvm_sys::core::LLVMGetNamedGlobal(m, cname.as_ptr());
        }
        if !v.is_null() {
            repocc_make_declaration(v);
        }
    }
}

/// The global that keeps functions used (see [`anchor_uses`]).
const USE_ANCHOR: &str = "repocc.uses";

/// Gives each named function one use, from the initializer of a hidden
/// constant array that nothing else refers to, until
/// [`remove_use_anchor`]. Passes ask whether a function is used at all
/// (dead-argument elimination leaves the arguments of a function without
/// uses alone, and otherwise drops its unused arguments' debug values and
/// `noundef`): a recompiled function whose users were all pruned must
/// look used, as in a cold compile.
pub fn anchor_uses(module: &inkwell::module::Module, names: &[&str]) {
    let pointers: Vec<inkwell::values::PointerValue> = names
        .iter()
        .filter_map(|n| module.get_function(n))
        .map(|f| f.as_global_value().as_pointer_value())
        .collect();
    if pointers.is_empty() || module.get_global(USE_ANCHOR).is_some() {
        return;
    }
    let ptr = module
        .get_context()
        .ptr_type(inkwell::AddressSpace::default());
    let array = ptr.const_array(&pointers);
    let anchor = module.add_global(array.get_type(), None, USE_ANCHOR);
    anchor.set_initializer(&array);
    anchor.set_constant(true);
    anchor.set_linkage(inkwell::module::Linkage::External);
    anchor.set_visibility(inkwell::GlobalVisibility::Hidden);
}

/// Whether anything in its module uses `global` (a function or variable;
/// constants left unused by a pruned initializer do not count; they are
/// removed).
pub fn is_used(global: &impl inkwell::values::AsValueRef) -> bool {
    // SAFETY: the global is alive in a module of this thread; the shim
    // only removes constants nothing uses.
    unsafe { repocc_is_used(global.as_value_ref()) != 0 }
}

/// Removes what [`anchor_uses`] added.
pub fn remove_use_anchor(module: &inkwell::module::Module) {
    if let Some(anchor) = module.get_global(USE_ANCHOR) {
        // SAFETY: nothing refers to the anchor (it is this module's own,
        // and no pass takes the address of a global to keep it).
        unsafe { anchor.delete() };
    }
}

/// `(global, user)` for every named global value (functions, variables
/// and aliases, defined or declared) and every global value that refers
/// to it: the function an instruction using it belongs to, or the variable
/// or alias whose initializer holds it (through constant expressions).
pub fn global_users(module: &inkwell::module::Module) -> Vec<(String, String)> {
    // SAFETY: the module is alive and not modified during the call.
    unsafe { user_pairs(module, repocc_global_users) }
}

/// What a fragment of the definitions `members` refers to and marks
/// address-significant, as compiling it extracted alone would have it
/// (see the shim's `repocc_fragment_reach`), without extracting it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FragmentReach {
    /// The symbols it would declare, sorted.
    pub references: Vec<String>,
    /// The symbols with a use in it whose address is significant.
    pub address_significant: std::collections::HashSet<String>,
    /// Its functions' basic blocks, plus one.
    pub weight: u64,
}

pub fn fragment_reach(module: &inkwell::module::Module, members: &[String]) -> FragmentReach {
    let names: Vec<CString> = members
        .iter()
        .filter_map(|m| CString::new(m.as_str()).ok())
        .collect();
    let pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
    // SAFETY: the module is alive and not modified during the call; the
    // names outlive it; the shim returns a string from LLVMCreateMessage,
    // copied and disposed of here.
    let text = unsafe {
        let raw = repocc_fragment_reach(module.as_mut_ptr(), pointers.as_ptr(), pointers.len());
        let text = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
        llvm_sys::core::LLVMDisposeMessage(raw);
        text
    };
    let mut reach = FragmentReach::default();
    for line in text.lines() {
        match line.split_once('\t') {
            Some(("R", name)) => reach.references.push(name.to_string()),
            Some(("S", name)) => {
                reach.address_significant.insert(name.to_string());
            }
            Some(("W", n)) => reach.weight = n.parse().unwrap_or(1),
            _ => {}
        }
    }
    reach.references.sort();
    reach.references.dedup();
    reach
}

/// Whether `function` has a body: its first block, where
/// `count_basic_blocks` walks every block of the function (sqlite3's
/// largest have thousands, asked about once per stage).
pub fn has_body(function: &inkwell::values::FunctionValue) -> bool {
    function.get_first_basic_block().is_some()
}

/// The module's text, as `Module::print_to_string` gives it except that
/// unnamed blocks whose address is taken print as `repocc.addr.N` (N their
/// position in their function): printed by number, every block address in
/// a global's initializer made LLVM's writer number its whole function
/// again (see the shim). The module is left as it was.
pub fn print_module(module: &inkwell::module::Module) -> String {
    // SAFETY: the module is alive and this thread's; the shim names blocks,
    // prints, takes the names away again, and returns a string from
    // LLVMCreateMessage, copied and disposed of here.
    unsafe {
        let raw = repocc_print_module(module.as_mut_ptr());
        let text = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
        llvm_sys::core::LLVMDisposeMessage(raw);
        text
    }
}

/// Calls a shim function that lists `name\tuser` lines.
///
/// # Safety
/// The module must be alive and not modified during the call; `shim` must
/// return a string from LLVMCreateMessage (copied and disposed of here).
unsafe fn user_pairs(
    module: &inkwell::module::Module,
    shim: unsafe extern "C" fn(llvm_sys::prelude::LLVMModuleRef) -> *mut c_char,
) -> Vec<(String, String)> {
    let raw = shim(module.as_mut_ptr());
    let text = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
    llvm_sys::core::LLVMDisposeMessage(raw);
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .map(|(f, u)| (f.to_string(), u.to_string()))
        .collect()
}

/// Orders the module's functions by name (see the shim): the always-inliner's
/// result then does not depend on the order clang emitted them in.
pub fn sort_functions_by_name(module: &inkwell::module::Module) {
    // SAFETY: the module is alive and nothing iterates its functions
    // meanwhile; the shim only moves functions within the module's list.
    unsafe { repocc_sort_functions_by_name(module.as_mut_ptr()) }
}

/// Puts the module's functions named in `names` first, in that order, the
/// others after them in the order they were in.
pub fn order_functions(module: &inkwell::module::Module, names: &[&str]) {
    let owned: Vec<CString> = names.iter().filter_map(|n| CString::new(*n).ok()).collect();
    let ptrs: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: the module is alive and nothing iterates its functions
    // meanwhile; the shim only moves functions within the module's list;
    // `ptrs` points into `owned`, alive for the call.
    unsafe { repocc_order_functions(module.as_mut_ptr(), ptrs.as_ptr(), ptrs.len()) }
}

/// Gives each function a copy of the local tables of pointers to local
/// constants it shares with other functions (identical tables that
/// ConstantMerge made one), so that LLVM's relative lookup table
/// converter, which takes only a table with one use, decides each
/// function's alone; the number of copies made.
pub fn split_shared_lookup_tables(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive and nothing iterates its globals
    // meanwhile; the shim adds globals and repoints instructions' operands.
    unsafe { repocc_split_shared_lookup_tables(module.as_mut_ptr()) }
}

/// Names the lookup tables the optimizer made for one function by that
/// function alone, where LLVM numbered them with the module's counter (see
/// the shim); how many names changed.
pub fn number_lookup_tables(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive and nothing iterates its globals
    // meanwhile; the shim only renames globals and functions.
    unsafe { repocc_number_lookup_tables(module.as_mut_ptr()) }
}

/// Takes the location from the debug records that name a local definition
/// their own function's code does not use (see the shim): whether the unit
/// still has such a local depends on what else is compiled. How many
/// records changed.
pub fn kill_debug_only_local_references(module: &inkwell::module::Module) -> u32 {
    // SAFETY: the module is alive and nothing iterates its functions
    // meanwhile; the shim only changes debug records' operands.
    unsafe { repocc_kill_debug_only_local_references(module.as_mut_ptr()) }
}

/// The names of the module's functions, in its order.
pub fn function_order(module: &inkwell::module::Module) -> Vec<String> {
    module
        .get_functions()
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect()
}

/// Lays out the local helpers a fragment's module holds besides its
/// `members` (functions by name, variables by name but for pooled
/// constants) in the order the carver gives the same fragment's sections
/// (see `carve`), so that a fragment compiled as a module of its own, as
/// with debug info, holds its code and data in the same places.
pub fn order_local_definitions(
    module: &inkwell::module::Module,
    tm: &TargetMachine,
    members: &[&str],
) {
    let owned: Vec<CString> = members
        .iter()
        .filter_map(|n| CString::new(*n).ok())
        .collect();
    let ptrs: Vec<*const c_char> = owned.iter().map(|s| s.as_ptr()).collect();
    // SAFETY: the module and machine are alive and nothing iterates the
    // module meanwhile; the shim only moves definitions within its lists;
    // `ptrs` points into `owned`, alive for the call.
    unsafe {
        repocc_order_local_definitions(
            module.as_mut_ptr(),
            tm.as_mut_ptr(),
            ptrs.as_ptr(),
            ptrs.len(),
        )
    }
}

/// Every alias of the module: its name, the global object it points into
/// (`None` when it is not based on one), and its printed form.
pub fn aliases(module: &inkwell::module::Module) -> Vec<(String, Option<String>, String)> {
    let mut out = Vec::new();
    // SAFETY: walks the module's alias list without modifying it; the
    // printed text is copied and disposed of at once.
    unsafe {
        let mut a = llvm_sys::core::LLVMGetFirstGlobalAlias(module.as_mut_ptr());
        while !a.is_null() {
            let base = repocc_alias_base_object(a);
            let raw = llvm_sys::core::LLVMPrintValueToString(a);
            let text = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
            llvm_sys::core::LLVMDisposeMessage(raw);
            out.push((
                value_name(a),
                (!base.is_null()).then(|| value_name(base)),
                text,
            ));
            a = llvm_sys::core::LLVMGetNextGlobalAlias(a);
        }
    }
    out
}

/// Whether the module has an ifunc (`__attribute__((ifunc))`, or the
/// dispatcher of `target_clones`): its resolver must stay a definition
/// beside it, which fragments do not keep (see `pipeline::run_stages`).
pub fn has_ifuncs(module: &inkwell::module::Module) -> bool {
    // SAFETY: reads the head of the module's ifunc list; the module is alive.
    unsafe { !llvm_sys::core::LLVMGetFirstGlobalIFunc(module.as_mut_ptr()).is_null() }
}

/// Whether the module's file-scope assembly gives a symbol a version
/// (`.symver name,name@@V`, as xz's liblzma does): the assembler wants the
/// versioned symbol defined in the same object, and the fragment that
/// would carry the assembly does not define it.
pub fn has_symbol_versions(module: &inkwell::module::Module) -> bool {
    let mut len = 0usize;
    // SAFETY: the module is alive; the returned text is owned by it and read
    // before anything can change it.
    let text = unsafe {
        let p = llvm_sys::core::LLVMGetModuleInlineAsm(module.as_mut_ptr(), &mut len);
        if p.is_null() {
            return false;
        }
        std::slice::from_raw_parts(p as *const u8, len)
    };
    text.windows(b".symver".len()).any(|w| w == b".symver")
}

/// Takes the name off every argument, block and instruction of `module`.
pub fn strip_local_names(module: &inkwell::module::Module) {
    // SAFETY: `module` is a live module used by this thread only; the shim
    // only renames values in it.
    unsafe { repocc_strip_local_names(module.as_mut_ptr()) }
}

/// Makes local aliases hidden external ones (inkwell has no alias API);
/// returns their names.
pub fn externalize_local_aliases(module: &inkwell::module::Module) -> Vec<String> {
    use llvm_sys::core::*;
    use llvm_sys::{LLVMLinkage, LLVMVisibility};
    let mut names = Vec::new();
    // SAFETY: the module is alive for the call; aliases are walked with
    // the module's own iterator functions and modified in place (no
    // insertion or removal while iterating).
    unsafe {
        let mut a = LLVMGetFirstGlobalAlias(module.as_mut_ptr());
        while !a.is_null() {
            let linkage = LLVMGetLinkage(a);
            if matches!(
                linkage,
                LLVMLinkage::LLVMInternalLinkage | LLVMLinkage::LLVMPrivateLinkage
            ) {
                LLVMSetLinkage(a, LLVMLinkage::LLVMExternalLinkage);
                LLVMSetVisibility(a, LLVMVisibility::LLVMHiddenVisibility);
                let mut len = 0usize;
                let p = LLVMGetValueName2(a, &mut len);
                let bytes = std::slice::from_raw_parts(p as *const u8, len);
                names.push(String::from_utf8_lossy(bytes).into_owned());
            }
            a = LLVMGetNextGlobalAlias(a);
        }
    }
    names
}

/// The metadata kind that keeps LLVM's ConstantMerge away from a global:
/// it skips every global with metadata other than `!dbg`.
const UNMERGED: &str = "repocc.unmerged";

/// Marks the constants named by their content (`.rc.…`, see `canonical`),
/// so that ConstantMerge neither merges one away nor merges another
/// constant of the same bytes into it. Merged with a constant whose
/// address is significant (a function's `static const char sep[] = ": "`),
/// such a constant loses `unnamed_addr` and moves from a mergeable string
/// section to `.rodata`: it is a fragment of its own, shared by units that
/// have no such twin, so its bytes must not depend on the rest of the unit.
/// Returns how many were marked; [`unmark_content_named_constants`] undoes it.
pub fn mark_content_named_constants(module: &inkwell::module::Module) -> usize {
    let context = module.get_context();
    let kind = context.get_kind_id(UNMERGED);
    let mut marked = 0;
    for g in module.get_globals() {
        if !g.is_declaration() && g.get_name().to_bytes().starts_with(b".rc.") {
            g.set_metadata(context.metadata_node(&[]), kind);
            marked += 1;
        }
    }
    marked
}

/// Removes what [`mark_content_named_constants`] added.
pub fn unmark_content_named_constants(module: &inkwell::module::Module) {
    use inkwell::values::AsValueRef;
    let kind = module.get_context().get_kind_id(UNMERGED);
    for g in module.get_globals() {
        // SAFETY: `g` is a live global of the module; erasing a metadata
        // attachment it may not have is a no-op.
        unsafe { llvm_sys::core::LLVMGlobalEraseMetadata(g.as_value_ref(), kind) };
    }
}
