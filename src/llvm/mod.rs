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
//! - `extract_definitions`: the shim builds a new module in the source
//!   module's context (cloning bodies, mapping references to fresh
//!   declarations); the result is owned by the returned `Module`, which
//!   borrows the same context as the source, so it cannot outlive it.
//! - `run_clang_frontend`: the shim (shim/frontend.cpp) builds its own
//!   driver, diagnostics engine and compiler instance on the calling
//!   thread and keeps nothing after it returns; the argument strings only
//!   need to live for the call. Its outputs are malloc'd by the shim and
//!   freed by `repocc_frontend_free` once copied. Clang's process-wide
//!   state (LLVM's option registry, plugins, timers) is never touched: the
//!   shim declines such units.
//! - `run_clang_link`: as `run_clang_frontend`, with clang's driver only;
//!   the shim starts the linker (a child process it waits for) and writes
//!   clang's diagnostics to stderr itself; `declined` is null or a static
//!   string of the shim's.
//! - `FrontendModule`: the shim builds clang's module in a context made
//!   here (with its diagnostic sink, as `with_diagnostic_sink` makes one)
//!   and hands the module over; the module is disposed of before its
//!   context, the sink after it, or all are left to the exit. clang puts
//!   its own diagnostic handler on the context while it generates code and
//!   puts ours back; the shim resets the rest of the context's state clang
//!   set (value names, ODR uniquing, hotness) and never hands over a
//!   module whose context would keep clang's optimization-record stream.
//! - `with_diagnostic_sink`: LLVM keeps the sink's address in the context
//!   and calls the handler from the thread using that context; the sink is
//!   created before the context and dropped after it (or neither is ever
//!   dropped, when the exit reclaims them), so the address stays valid for
//!   every call.
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
//! - `remove_file_on_interrupt` and the rest of the interrupt table: the
//!   shim copies the path (LLVM's list and its own table own their
//!   copies), installs its SIGINT/SIGTERM/SIGHUP handler once (never over
//!   an ignored signal), and the handler only calls unlink, rmdir,
//!   sigaction and raise, all async-signal-safe.
//! - `ObjectEmitter`: the shim's legacy pass manager holds the target
//!   machine's pointer, so the emitter borrows the machine; it is used
//!   from one thread (raw pointer: not `Send`), on one module at a time,
//!   each alive for its run; the bytes it returns live in its own buffer
//!   until the next run and are copied out at once.
//! - `FreedUnlessExiting`: the value it holds is dropped exactly once, by
//!   its own `Drop`, or never (the process exits first); nothing else can
//!   reach the inner value to drop it.

mod ffi;

use ffi::*;
use std::ffi::{c_char, c_int, CString};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

use std::ffi::c_void;
use std::sync::Mutex;

use inkwell::context::Context;
use inkwell::targets::TargetMachine;
use llvm_sys::core::{
    LLVMContextSetDiagnosticHandler, LLVMDisposeMessage, LLVMGetDiagInfoDescription,
    LLVMGetDiagInfoSeverity,
};
use llvm_sys::prelude::LLVMDiagnosticInfoRef;
use llvm_sys::LLVMDiagnosticSeverity;

/// The codegen options clang sets that LLVMCreateTargetMachine leaves at
/// their defaults (see shim/repocc_shim.h).
pub type ShimTargetOptions = ffi::RepoccTargetOptions;

/// What clang's frontend did in this process.
pub enum InProcessFrontend {
    /// It ran: clang's exit code, the bitcode (on success) and everything
    /// clang printed.
    Ran {
        status: i32,
        /// Empty when the module was asked for.
        bitcode: Vec<u8>,
        /// The module (on success), when it was asked for.
        module: Option<FrontendModule>,
        diagnostics: Vec<u8>,
    },
    /// It declined before anything ran, for this reason: clang must run as
    /// a process.
    Declined(String),
}

/// A driver command line as the shim takes it: the compiler's path, the
/// program name and the arguments as C strings; or which of them holds a
/// NUL byte.
struct DriverCommand {
    path: CString,
    prog: CString,
    args: Vec<CString>,
}

impl DriverCommand {
    fn new(
        clang_path: &std::path::Path,
        prog_name: &str,
        args: &[String],
    ) -> Result<DriverCommand, &'static str> {
        use std::os::unix::ffi::OsStrExt;
        let c = |bytes: &[u8]| CString::new(bytes).ok();
        let (Some(path), Some(prog)) = (
            c(clang_path.as_os_str().as_bytes()),
            c(prog_name.as_bytes()),
        ) else {
            return Err("a NUL byte in the compiler's path");
        };
        let args = args
            .iter()
            .map(|a| c(a.as_bytes()))
            .collect::<Option<Vec<CString>>>()
            .ok_or("a NUL byte in an argument")?;
        Ok(DriverCommand { path, prog, args })
    }

    /// The arguments as the pointers the shim reads (alive with `self`).
    fn arg_pointers(&self) -> Vec<*const c_char> {
        self.args.iter().map(|s| s.as_ptr()).collect()
    }
}

/// Links as `prog_name ARGS` would (`args` naming only objects, archives
/// and libraries), with clang-19's driver in this process: it starts the
/// linker with `environment`, and prints and cleans up after a failed link
/// as clang does. `Ok(exit code)`, or `Err(why)` when the driver declined
/// before anything ran (the caller then runs clang).
pub fn run_clang_link(
    clang_path: &std::path::Path,
    prog_name: &str,
    args: &[String],
    environment: &[(std::ffi::OsString, std::ffi::OsString)],
) -> Result<i32, String> {
    use std::os::unix::ffi::OsStrExt;
    let command = DriverCommand::new(clang_path, prog_name, args)?;
    let env = environment
        .iter()
        .map(|(k, v)| CString::new([k.as_bytes(), b"=", v.as_bytes()].concat()).ok())
        .collect::<Option<Vec<CString>>>()
        .ok_or("a NUL byte in the environment")?;
    let ptrs = command.arg_pointers();
    let mut env_ptrs: Vec<*const c_char> = env.iter().map(|s| s.as_ptr()).collect();
    env_ptrs.push(std::ptr::null());
    let mut declined: *const c_char = std::ptr::null();
    // SAFETY: every pointer refers to a NUL-terminated string owned above
    // and alive for the call, the environment list ends with a null
    // pointer, and `declined` is set by the shim to null or to a static
    // string.
    let code = unsafe {
        repocc_link_run(
            command.path.as_ptr(),
            command.prog.as_ptr(),
            ptrs.as_ptr(),
            ptrs.len(),
            env_ptrs.as_ptr(),
            &mut declined,
        )
    };
    if declined.is_null() {
        Ok(code)
    } else {
        // SAFETY: a static, NUL-terminated string of the shim's.
        Err(unsafe { std::ffi::CStr::from_ptr(declined) }
            .to_string_lossy()
            .into_owned())
    }
}

/// Runs clang-19's driver and compiler proper in this process on `args`
/// (as `prog_name ARGS`), with `clang_path` the compiler's resolved
/// executable; `header_list` as `CC_PRINT_HEADERS_FILE`. With
/// `want_module`, clang's module is handed over in a context of its own
/// (see [`FrontendModule`]) instead of written as bitcode.
pub fn run_clang_frontend(
    clang_path: &std::path::Path,
    prog_name: &str,
    args: &[String],
    header_list: Option<&std::path::Path>,
    want_module: bool,
) -> InProcessFrontend {
    use std::os::unix::ffi::OsStrExt;
    let command = match DriverCommand::new(clang_path, prog_name, args) {
        Ok(command) => command,
        Err(why) => return InProcessFrontend::Declined(why.into()),
    };
    let list = match header_list.map(|l| CString::new(l.as_os_str().as_bytes()).ok()) {
        Some(None) => {
            return InProcessFrontend::Declined("a NUL byte in the header list's path".into())
        }
        Some(Some(l)) => Some(l),
        None => None,
    };
    let ptrs = command.arg_pointers();
    let mut out = ffi::RepoccFrontendOutput {
        status: -1,
        module: std::ptr::null_mut(),
        bitcode: std::ptr::null_mut(),
        bitcode_len: 0,
        diagnostics: std::ptr::null_mut(),
        diagnostics_len: 0,
        declined: std::ptr::null(),
    };
    // SAFETY: every pointer refers to a NUL-terminated string owned above
    // and alive for the call; `out` is a valid, initialized struct the shim
    // overwrites. The buffers it returns are read once, then freed by the
    // shim's own free function (they were malloc'd there). The module it
    // returns is in `home`'s context, and `home` takes it over.
    let home = want_module.then(FrontendModule::home);
    unsafe {
        repocc_frontend_run(
            command.path.as_ptr(),
            command.prog.as_ptr(),
            ptrs.as_ptr(),
            ptrs.len(),
            list.as_ref().map_or(std::ptr::null(), |l| l.as_ptr()),
            c_int::from(exit_reclaims_memory()),
            home.as_ref()
                .map_or(std::ptr::null_mut(), |h| h.context.raw()),
            &mut out,
        );
        let take = |p: *mut c_char, len: usize| {
            if p.is_null() {
                Vec::new()
            } else {
                std::slice::from_raw_parts(p as *const u8, len).to_vec()
            }
        };
        let result = if out.status < 0 {
            let why = if out.declined.is_null() {
                String::from("declined")
            } else {
                std::ffi::CStr::from_ptr(out.declined)
                    .to_string_lossy()
                    .into_owned()
            };
            InProcessFrontend::Declined(why)
        } else {
            InProcessFrontend::Ran {
                status: out.status,
                bitcode: take(out.bitcode, out.bitcode_len),
                module: home
                    .filter(|_| !out.module.is_null())
                    .map(|h| h.holding(out.module)),
                diagnostics: take(out.diagnostics, out.diagnostics_len),
            }
        };
        repocc_frontend_free(&mut out);
        result
    }
}

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

/// What the fragments of one unit learn about its debug metadata for the
/// next one (the nodes no fragment copies or rebases; see the shim's
/// `RepoccSharedTypes`), so that each fragment's extraction and rebase walk
/// only what is its own. Made per unit, used in its context only (the
/// thread that extracts), dropped before the context.
///
/// With full debug info, fragments hold the unit's types as stubs (see
/// [`StubKind`]), and the glue holds them whole (see [`retain_unit_types`]).
pub struct SharedTypes(*mut RepoccSharedTypes);

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
    /// One function other than itself, by name.
    One(String),
    /// Several functions.
    Several,
}

/// Which functions (other than `global` itself) use `global` in their code:
/// call it, load or store it, take its address.
pub fn user_functions(global: &inkwell::values::GlobalValue) -> Users {
    use inkwell::values::AsValueRef;
    let mut sole = std::ptr::null_mut();
    // SAFETY: `global` is a live global of a live module; `sole` is set to
    // a function of the same module or null, read at once.
    unsafe {
        match repocc_user_functions(global.as_value_ref(), &mut sole) {
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

/// Whether anything in its module uses `function` (constants left
/// unused by a pruned initializer do not count; they are removed).
pub fn is_used(function: &inkwell::values::FunctionValue) -> bool {
    // SAFETY: the function is alive in a module of this thread; the shim
    // only removes constants nothing uses.
    use inkwell::values::AsValueRef;
    unsafe { repocc_is_used(function.as_value_ref()) != 0 }
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
pub fn rebase_relative_lines(
    module: &inkwell::module::Module,
    leader: &str,
    shared: Option<&SharedTypes>,
) -> (Rebased, Vec<String>) {
    use crate::support::line_bases as lines;
    let Ok(leader) = std::ffi::CString::new(leader) else {
        return (Rebased::Unsupported, Vec::new());
    };
    let shared = shared.map_or(std::ptr::null(), |s| s.0.cast_const());
    let mut inlined: *mut c_char = std::ptr::null_mut();
    // SAFETY: the module is alive and not being iterated; the shim only
    // creates metadata nodes and repoints this module's own references
    // (attachments, records, named metadata). `leader` outlives the call;
    // `inlined` is set to null or to a message we dispose of here.
    let result = unsafe {
        repocc_rebase_relative_lines(
            module.as_mut_ptr(),
            leader.as_ptr(),
            lines::RELATIVE_LINE_BASE,
            shared,
            lines::DEFINITION_LINE_BASE,
            lines::DEFINITION_LINE_SPAN,
            lines::MAX_INLINED_DEFINITIONS as std::ffi::c_uint,
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

/// Orders the module's functions by name (see the shim): the always-inliner's
/// result then does not depend on the order clang emitted them in.
pub fn sort_functions_by_name(module: &inkwell::module::Module) {
    // SAFETY: the module is alive and nothing iterates its functions
    // meanwhile; the shim only moves functions within the module's list.
    unsafe { repocc_sort_functions_by_name(module.as_mut_ptr()) }
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

/// Trims the compile units of a fragment module to what the fragment
/// needs (the glue keeps the unit-wide lists). The module must be the only
/// user of its compile units: one parsed on its own, not one extracted in
/// the unit's context (whose compile unit it shares).
pub fn trim_debug_units(module: &inkwell::module::Module, glue: bool) {
    // SAFETY: the module is alive and not being iterated; the shim only
    // replaces operands of compile units owned by this module.
    unsafe { repocc_trim_debug_units(module.as_mut_ptr(), c_int::from(glue)) }
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

/// Puts `file` on the list of files an interrupt (SIGINT, SIGTERM,
/// SIGHUP) removes before the process dies of it: LLVM's, which removes
/// regular files only.
pub fn remove_file_on_interrupt(file: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = file.as_os_str().as_bytes();
    // SAFETY: the shim copies the `len` bytes; see the module comment.
    unsafe { repocc_remove_file_on_interrupt(bytes.as_ptr().cast(), bytes.len()) }
}

/// Takes the name off every argument, block and instruction of `module`.
pub fn strip_local_names(module: &inkwell::module::Module) {
    // SAFETY: `module` is a live module used by this thread only; the shim
    // only renames values in it.
    unsafe { repocc_strip_local_names(module.as_mut_ptr()) }
}

/// Removes now what an interrupt would (the process is about to exec).
pub fn remove_interrupt_files() {
    // SAFETY: the shim walks its lists as the handler would.
    unsafe { repocc_remove_interrupt_files() }
}

/// Takes `file` off the interrupt's list.
pub fn keep_file_on_interrupt(file: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = file.as_os_str().as_bytes();
    // SAFETY: as `remove_file_on_interrupt`.
    unsafe { repocc_keep_file_on_interrupt(bytes.as_ptr().cast(), bytes.len()) }
}

/// Has an interrupt remove the (by then empty) directory `dir`, after the
/// files on the list; false when it cannot (the shim's table is full).
pub fn remove_directory_on_interrupt(dir: &std::path::Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: the shim copies the string; see the module comment.
    unsafe { repocc_remove_directory_on_interrupt(c.as_ptr()) != 0 }
}

/// Takes `dir` off the interrupt's list.
pub fn keep_directory_on_interrupt(dir: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    if let Ok(c) = CString::new(dir.as_os_str().as_bytes()) {
        // SAFETY: the shim only compares the string.
        unsafe { repocc_keep_directory_on_interrupt(c.as_ptr()) }
    }
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

/// Diagnostics LLVM reports while optimizing or generating code (inline
/// asm errors, `-Wframe-larger-than`, ...). Without a handler LLVM prints
/// them in its own format and exits on errors; with this sink the pipeline
/// sees them and lets clang compile the unit, so the user gets clang's text.
#[derive(Debug, Default)]
pub struct DiagnosticSink {
    pub errors: Mutex<Vec<String>>,
    pub warnings: Mutex<Vec<String>>,
}

impl DiagnosticSink {
    /// The first error or warning, if any.
    pub fn first(&self) -> Option<String> {
        let first = |m: &Mutex<Vec<String>>| m.lock().ok().and_then(|v| v.first().cloned());
        first(&self.errors).or_else(|| first(&self.warnings))
    }
}

extern "C" fn on_diagnostic(info: LLVMDiagnosticInfoRef, sink: *mut c_void) {
    // SAFETY: `sink` is the DiagnosticSink registered by
    // `with_diagnostic_sink`, alive for the context's lifetime; `info` is
    // valid for this call, and the description is freed with
    // LLVMDisposeMessage as the C API requires.
    let (sink, severity, text) = unsafe {
        let sink = &*(sink as *const DiagnosticSink);
        let severity = LLVMGetDiagInfoSeverity(info);
        let raw = LLVMGetDiagInfoDescription(info);
        let text = if raw.is_null() {
            String::new()
        } else {
            let t = std::ffi::CStr::from_ptr(raw).to_string_lossy().into_owned();
            LLVMDisposeMessage(raw);
            t
        };
        (sink, severity, text)
    };
    let list = match severity {
        LLVMDiagnosticSeverity::LLVMDSError => &sink.errors,
        LLVMDiagnosticSeverity::LLVMDSWarning => &sink.warnings,
        _ => return,
    };
    if let Ok(mut v) = list.lock() {
        v.push(text);
    }
}

/// A fresh context whose diagnostics go to `sink`.
fn context_with_sink() -> (Box<DiagnosticSink>, Context) {
    let sink = Box::new(DiagnosticSink::default());
    let context = Context::create();
    // SAFETY: see the module invariants: `sink` (boxed, so its address is
    // stable) outlives `context`; both callers drop the context first.
    unsafe {
        LLVMContextSetDiagnosticHandler(
            context.raw(),
            Some(on_diagnostic),
            &*sink as *const DiagnosticSink as *mut c_void,
        );
    }
    (sink, context)
}

/// Drops `context`, then `sink`, unless the exit will reclaim them.
fn release_context(context: Context, sink: Box<DiagnosticSink>) {
    if exit_reclaims_memory() {
        // Every type, constant and metadata node of the unit lives in the
        // context: the exit frees them faster.
        std::mem::forget(context);
        std::mem::forget(sink);
    } else {
        drop(context);
        drop(sink);
    }
}

/// Runs `f` with a fresh context whose diagnostics go to a sink.
pub fn with_diagnostic_sink<R>(f: impl FnOnce(&Context, &DiagnosticSink) -> R) -> R {
    let (sink, context) = context_with_sink();
    let result = f(&context, &sink);
    release_context(context, sink);
    result
}

/// clang's module for a unit, handed over by the in-process frontend, in a
/// context of its own whose diagnostics go to a sink (as
/// [`with_diagnostic_sink`]'s).
pub struct FrontendModule {
    module: llvm_sys::prelude::LLVMModuleRef,
    context: ManuallyDrop<Context>,
    sink: ManuallyDrop<Box<DiagnosticSink>>,
}

impl std::fmt::Debug for FrontendModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FrontendModule")
    }
}

// SAFETY: the context and module are only ever used by one thread at a
// time: the frontend's thread hands them over when it is joined.
unsafe impl Send for FrontendModule {}

impl FrontendModule {
    /// The context a module is to be made in (no module yet).
    fn home() -> FrontendModule {
        let (sink, context) = context_with_sink();
        FrontendModule {
            module: std::ptr::null_mut(),
            context: ManuallyDrop::new(context),
            sink: ManuallyDrop::new(sink),
        }
    }

    fn holding(mut self, module: llvm_sys::prelude::LLVMModuleRef) -> FrontendModule {
        self.module = module;
        self
    }

    /// The module as bitcode (for keys: not byte for byte what clang would
    /// write, but always the same for the same module).
    pub fn bitcode(&self) -> Vec<u8> {
        // SAFETY: `module` is a live module owned by `self`; the buffer is
        // copied, then disposed of as the C API requires.
        unsafe {
            let buffer = llvm_sys::bit_writer::LLVMWriteBitcodeToMemoryBuffer(self.module);
            let start = llvm_sys::core::LLVMGetBufferStart(buffer) as *const u8;
            let len = llvm_sys::core::LLVMGetBufferSize(buffer);
            let bytes = std::slice::from_raw_parts(start, len).to_vec();
            llvm_sys::core::LLVMDisposeMemoryBuffer(buffer);
            bytes
        }
    }

    /// Runs `f` on the module, named `name` (as a module parsed from a
    /// buffer of that name would be), with its context and sink; they are
    /// released afterwards (or left to the exit).
    pub fn run<R>(
        mut self,
        name: &str,
        f: impl for<'ctx> FnOnce(&'ctx Context, &DiagnosticSink, inkwell::module::Module<'ctx>) -> R,
    ) -> R {
        let raw = std::mem::replace(&mut self.module, std::ptr::null_mut());
        // SAFETY: `raw` is the module the shim built in `self.context`,
        // owned by nobody else; the Module (and whatever it is moved into)
        // cannot outlive the borrow of the context, which is released only
        // after `f` returns.
        let module = unsafe {
            llvm_sys::core::LLVMSetModuleIdentifier(raw, name.as_ptr().cast(), name.len());
            inkwell::module::Module::new(raw)
        };
        f(&self.context, &self.sink, module)
    }
}

impl Drop for FrontendModule {
    fn drop(&mut self) {
        // SAFETY: the module (if still here) and the context are owned by
        // `self` alone and dropped once, the module before its context, the
        // sink after it.
        unsafe {
            if !self.module.is_null() && !exit_reclaims_memory() {
                llvm_sys::core::LLVMDisposeModule(self.module);
            }
            let context = ManuallyDrop::take(&mut self.context);
            let sink = ManuallyDrop::take(&mut self.sink);
            release_context(context, sink);
        }
    }
}

/// How the optimization pipeline is tuned (LLVM's `PipelineTuningOptions`
/// that clang sets from the command line).
pub type PipelineTuning = ffi::RepoccTuning;

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

/// Set once the process is known to exit as soon as its one unit is done.
static EXIT_RECLAIMS_MEMORY: AtomicBool = AtomicBool::new(false);

/// Says that the process ends once the unit being compiled is done (an
/// invocation with one source, as make runs the compiler): the unit's AST
/// and IR are then left for the exit to reclaim instead of being freed
/// object by object, as clang's driver asks its compiler proper to do
/// (`-disable-free`). Freeing them took 3-4% of a lua unit's time.
pub fn leave_unit_memory_to_exit() {
    EXIT_RECLAIMS_MEMORY.store(true, Ordering::Relaxed);
}

fn exit_reclaims_memory() -> bool {
    EXIT_RECLAIMS_MEMORY.load(Ordering::Relaxed)
}

/// A value (a unit's module) dropped at the end of its scope, unless the
/// process exit will reclaim its memory (see `leave_unit_memory_to_exit`).
pub struct FreedUnlessExiting<T>(ManuallyDrop<T>);

impl<T> FreedUnlessExiting<T> {
    pub fn new(value: T) -> Self {
        FreedUnlessExiting(ManuallyDrop::new(value))
    }
}

impl<T> std::ops::Deref for FreedUnlessExiting<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> Drop for FreedUnlessExiting<T> {
    fn drop(&mut self) {
        if !exit_reclaims_memory() {
            // SAFETY: the inner value is reachable only through `self`, and
            // this is the one place that drops it, once.
            unsafe { ManuallyDrop::drop(&mut self.0) }
        }
    }
}

/// The LLVM version repocc is linked with, e.g. "19.1.7".
pub fn llvm_version() -> String {
    let (mut major, mut minor, mut patch) = (0u32, 0u32, 0u32);
    // SAFETY: the out-pointers are valid u32s for the duration of the call.
    unsafe { llvm_sys::core::LLVMGetVersion(&mut major, &mut minor, &mut patch) };
    format!("{major}.{minor}.{patch}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target, TargetTriple};
    use inkwell::OptimizationLevel;

    /// A module whose code generation fails in the backend: an inline asm
    /// instruction the assembler does not know.
    const BAD_INLINE_ASM_IR: &str = r#"
            target triple = "x86_64-pc-linux-gnu"
            define void @f() {
              call void asm sideeffect "not_an_instruction %eax", ""()
              ret void
            }"#;

    /// An x86-64 Linux target machine at `opt`, with the C API's options.
    fn x86_64_machine(opt: OptimizationLevel) -> TargetMachine {
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

    #[test]
    fn target_options_round_trip() {
        let tm = x86_64_machine(OptimizationLevel::Default);
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

    #[test]
    fn backend_errors_reach_the_sink_instead_of_exiting() {
        use inkwell::targets::FileType;
        let ir = BAD_INLINE_ASM_IR;
        let first = with_diagnostic_sink(|context, sink| {
            let module = parse(context, ir);
            let tm = x86_64_machine(OptimizationLevel::None);
            let _ = tm.write_to_memory_buffer(&module, FileType::Object);
            sink.first()
        });
        let first = first.expect("the inline asm error was not reported");
        assert!(
            first.contains("not_an_instruction") || first.contains("invalid instruction"),
            "{first}"
        );
    }

    #[test]
    fn extraction_keeps_named_bodies_and_declares_the_rest() {
        let ir = r#"
            target triple = "x86_64-pc-linux-gnu"
            $c = comdat any
            @table = hidden constant [2 x ptr] [ptr @f, ptr @g]
            @switch.table = private unnamed_addr constant [2 x i32] [i32 3, i32 4]
            @counter = hidden global i32 0, align 4
            define i32 @f(i32 %x) { %v = load i32, ptr @counter
              %r = add i32 %x, %v
              ret i32 %r }
            define linkonce_odr i32 @g() comdat($c) { %r = call i32 @f(i32 1)
              ret i32 %r }
            define i32 @unrelated() { ret i32 7 }
            define i32 @uses_private(i64 %i) { %p = getelementptr [2 x i32], ptr @switch.table, i64 0, i64 %i
              %v = load i32, ptr %p
              ret i32 %v }
            !llvm.module.flags = !{!0}
            !0 = !{i32 8, !"PIC Level", i32 2}
        "#;
        let context = Context::create();
        let buf =
            inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
        let module = context.create_module_from_ir(buf).unwrap();
        let part = extract_definitions(&module, &["g", "table"], false, None);
        part.verify().unwrap();
        let text = part.print_to_string().to_string();
        assert!(
            text.contains("define linkonce_odr i32 @g() comdat"),
            "{text}"
        );
        assert!(text.contains("declare i32 @f(i32)"), "{text}");
        assert!(text.contains("@table = hidden constant"), "{text}");
        assert!(!text.contains("unrelated"), "{text}");
        assert!(!text.contains("@counter"), "{text}");
        assert!(text.contains("PIC Level"), "{text}");
        let f = extract_definitions(&module, &["f"], false, None);
        f.verify().unwrap();
        let text = f.print_to_string().to_string();
        assert!(
            text.contains("@counter = external hidden global i32"),
            "{text}"
        );
        let p = extract_definitions(&module, &["uses_private"], false, None);
        p.verify().unwrap();
        let text = p.print_to_string().to_string();
        assert!(
            text.contains("@switch.table = private unnamed_addr constant [2 x i32] [i32 3, i32 4]"),
            "{text}"
        );
    }

    #[test]
    fn printed_block_addresses_name_their_blocks_and_leave_the_module_as_it_was() {
        // A computed goto's label table, as clang emits it (blocks unnamed).
        let ir = r#"
            @f.table = internal constant [2 x ptr] [ptr blockaddress(@f, %3), ptr blockaddress(@f, %4)]
            define i32 @f(i32 %0) {
              %2 = getelementptr [2 x ptr], ptr @f.table, i64 0, i32 %0
              %p = load ptr, ptr %2
              indirectbr ptr %p, [label %3, label %4]
            3:
              ret i32 1
            4:
              %5 = add i32 %0, 1
              ret i32 %5
            }
            define i32 @g() { ret i32 0 }
        "#;
        let context = Context::create();
        let buf =
            inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t");
        let module = context.create_module_from_ir(buf).unwrap();
        let before = module.print_to_string().to_string();
        let text = print_module(&module);
        assert!(
            text.contains(
                "[ptr blockaddress(@f, %repocc.addr.1), ptr blockaddress(@f, %repocc.addr.2)]"
            ),
            "{text}"
        );
        assert!(text.contains("\nrepocc.addr.2:"), "{text}");
        // The value the named blocks no longer number is renumbered.
        assert!(text.contains("%3 = add i32 %0, 1"), "{text}");
        assert!(text.contains("define i32 @g() {\n  ret i32 0\n}"), "{text}");
        assert_eq!(module.print_to_string().to_string(), before);
        // Printed again, the same text; and it reads back as the same code.
        assert_eq!(print_module(&module), text);
        let again = context
            .create_module_from_ir(
                inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(
                    text.as_bytes(),
                    "t",
                ),
            )
            .unwrap();
        again.verify().unwrap();
        assert_eq!(print_module(&again), text);
    }

    fn parse<'ctx>(context: &'ctx Context, ir: &str) -> inkwell::module::Module<'ctx> {
        context
            .create_module_from_ir(
                inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(
                    ir.as_bytes(),
                    "t",
                ),
            )
            .unwrap()
    }

    /// Unoptimized IR from clang-19 for `c_source` (with `flags`).
    fn clang_ir(c_source: &str, flags: &[&str]) -> String {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("t.c");
        std::fs::write(&src, c_source).unwrap();
        let out = std::process::Command::new("clang-19")
            .args(["-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm"])
            .args(["-o", "-"])
            .args(flags)
            .arg(&src)
            .output()
            .expect("clang-19");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn one_pipeline_for_many_modules_gives_each_module_its_own_object() {
        use inkwell::targets::FileType;
        let machine = |opt| {
            let tm = x86_64_machine(opt);
            set_target_options(
                &tm,
                &ShimTargetOptions {
                    function_sections: 1,
                    data_sections: 1,
                    unique_section_names: 1,
                    emit_addrsig: 1,
                    use_init_array: 1,
                    emit_call_site_info: 0,
                    debugger_tuning_gdb: 1,
                },
            );
            tm
        };
        let sources = [
            "static int twice(int x) { return 2 * x; }\n\
             int f(int x) { const char *s = \"text\"; return twice(x) + s[x & 3]; }\n",
            "#include <stdio.h>\n\
             struct point { int x, y; };\n\
             int g(struct point p, int k) {\n\
               static void *table[] = { &&a, &&b };\n\
               int r = 0;\n\
               goto *table[k & 1];\n\
             a: r = p.x; printf(\"%d\\n\", r); return r;\n\
             b: switch (p.y) { case 1: return 5; case 2: return 9; case 3: return 11; case 4: return 2; }\n\
               return r;\n\
             }\n",
        ];
        for (opt, flags) in [
            (OptimizationLevel::None, &["-O0", "-g"][..]),
            (OptimizationLevel::Default, &["-O2", "-g"][..]),
            (OptimizationLevel::Default, &["-O2"][..]),
        ] {
            let irs: Vec<String> = sources.iter().map(|s| clang_ir(s, flags)).collect();
            let tm = machine(opt);
            let alone: Vec<Vec<u8>> = irs
                .iter()
                .map(|ir| {
                    let context = Context::create();
                    let object = tm
                        .write_to_memory_buffer(&parse(&context, ir), FileType::Object)
                        .unwrap();
                    object.as_slice().to_vec()
                })
                .collect();
            assert_ne!(alone[0], alone[1]);
            // One pipeline, modules in one context and in contexts of their
            // own, in both orders and twice: every object as compiled alone.
            let mut emitter = ObjectEmitter::new(&tm).unwrap();
            let shared = Context::create();
            for i in [0, 1, 1, 0, 0, 1] {
                assert_eq!(
                    emitter.emit(&parse(&shared, &irs[i])),
                    alone[i],
                    "{flags:?} {i}"
                );
                let own = Context::create();
                assert_eq!(
                    emitter.emit(&parse(&own, &irs[i])),
                    alone[i],
                    "{flags:?} {i}"
                );
            }
        }
    }

    #[test]
    fn a_backend_error_in_one_module_leaves_the_pipeline_good_for_the_next() {
        use inkwell::targets::FileType;
        let tm = x86_64_machine(OptimizationLevel::None);
        let bad = BAD_INLINE_ASM_IR;
        let good = &clang_ir("int g(int x) { return x * 3 + 1; }\n", &["-O0", "-g"]);
        let alone = {
            let context = Context::create();
            let object = tm
                .write_to_memory_buffer(&parse(&context, good), FileType::Object)
                .unwrap();
            object.as_slice().to_vec()
        };
        let mut emitter = ObjectEmitter::new(&tm).unwrap();
        let reported = with_diagnostic_sink(|context, sink| {
            let _ = emitter.emit(&parse(context, bad));
            sink.first()
        });
        assert!(reported.is_some(), "the inline asm error was not reported");
        let clean = with_diagnostic_sink(|context, sink| {
            let object = emitter.emit(&parse(context, good));
            (object, sink.first())
        });
        assert_eq!(clean.1, None);
        assert_eq!(clean.0, alone);
    }

    const BODIES_IR: &str = r#"
        target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
        target triple = "x86_64-pc-linux-gnu"
        %struct.S = type { i32, i32 }
        define hidden i32 @sq(i32 %x) {
          %z = add i32 %x, 0
          %m = mul i32 %z, %z
          ret i32 %m
        }
        define hidden i32 @f(ptr %p) {
          %a = getelementptr %struct.S, ptr %p, i64 0, i32 1
          %v = load i32, ptr %a
          %s = call i32 @sq(i32 %v)
          %r = add i32 %s, 1
          ret i32 %r
        }
        define i32 @g(ptr %p) {
          %r = call i32 @f(ptr %p)
          %t = mul i32 %r, 2
          ret i32 %t
        }"#;

    fn plain_tuning() -> PipelineTuning {
        PipelineTuning {
            loop_vectorization: 1,
            slp_vectorization: 1,
            loop_unrolling: 1,
            loop_interleaving: 1,
            call_graph_profile: 1,
            merge_functions: 0,
        }
    }

    fn requests<'a>(r: &[(&'a str, usize, usize)]) -> Vec<BodyRequest<'a>> {
        r.iter()
            .map(|&(name, source, group)| BodyRequest {
                name,
                source,
                group,
            })
            .collect()
    }

    /// The bitcode of `names` as [`BODIES_IR`] has them, no pass run on
    /// them.
    fn raw_bodies(context: &Context, names: &[&str]) -> Vec<u8> {
        let raw = parse(context, BODIES_IR);
        extract_definitions(&raw, names, false, None)
            .write_bitcode_to_memory()
            .as_slice()
            .to_vec()
    }

    /// Runs `default<O2>` on `module`, putting the `requests` (name, blob,
    /// group) from `blob` in place right before the inliner; returns which
    /// were, and `watch`'s IR right after the inliner.
    fn run_substituting(
        module: &inkwell::module::Module,
        tm: &TargetMachine,
        blob: &[u8],
        wanted: &[(&str, usize, usize)],
        watch: &str,
    ) -> (Vec<bool>, String) {
        run_substituting_at(module, tm, blob, wanted, watch, None)
    }

    /// [`run_substituting`] with the unit's anchor.
    fn run_substituting_at(
        module: &inkwell::module::Module,
        tm: &TargetMachine,
        blob: &[u8],
        wanted: &[(&str, usize, usize)],
        watch: &str,
        anchor: Option<u64>,
    ) -> (Vec<bool>, String) {
        let mut done = Vec::new();
        let mut after_inliner = String::new();
        run_pipeline_with_hooks(
            module,
            tm,
            "default<O2>",
            &plain_tuning(),
            true,
            &mut |p| match p {
                HookPoint::BeforeInliner => {
                    done = substitute_bodies(module, &[blob], &requests(wanted), anchor)
                }
                HookPoint::AfterInliner => after_inliner = function_ir(module, watch),
                HookPoint::OptimizerEarly => {}
            },
        )
        .unwrap();
        (done, after_inliner)
    }

    /// Runs `default<O2>` on `module` and returns the bitcode of the
    /// bodies of `names` as its inliner left them (a first compile's
    /// stored bodies).
    fn bodies_after_inliner(
        module: &inkwell::module::Module,
        tm: &TargetMachine,
        names: &[&str],
    ) -> Vec<u8> {
        let mut blob = Vec::new();
        run_pipeline_with_hooks(module, tm, "default<O2>", &plain_tuning(), true, &mut |p| {
            if p == HookPoint::AfterInliner {
                let m = extract_definitions(module, names, false, None);
                blob = m.write_bitcode_to_memory().as_slice().to_vec();
            }
        })
        .unwrap();
        blob
    }

    fn function_ir(module: &inkwell::module::Module, name: &str) -> String {
        use inkwell::values::AnyValue;
        module
            .get_function(name)
            .unwrap()
            .print_to_string()
            .to_string()
    }

    #[test]
    fn stored_bodies_are_inlined_as_the_first_compile_left_them() {
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        // The first compile keeps f and sq as its inliner left them.
        let first = parse(&context, BODIES_IR);
        let blob = bodies_after_inliner(&first, &tm, &["sq", "f"]);
        assert!(!blob.is_empty());
        // A second compile of the same module takes them from the blob
        // (read into the same context: `%struct.S` is renamed there and
        // must map back) and makes the same g.
        let second = parse(&context, BODIES_IR);
        let (done, at_inliner_end) = run_substituting(
            &second,
            &tm,
            &blob,
            &[("f", 0, 0), ("sq", 0, 1), ("nosuch", 0, 2)],
            "f",
        );
        assert_eq!(done, vec![true, true, false]);
        assert_eq!(function_ir(&first, "g"), function_ir(&second, "g"));
        assert_eq!(function_ir(&first, "f"), function_ir(&second, "f"));
        assert!(!at_inliner_end.contains("%struct.S."), "{at_inliner_end}");
        // The shim's `kSubstitutedAttr` is gone once the inliner is done.
        assert!(!second
            .print_to_string()
            .to_string()
            .contains("repocc-substituted"));
    }

    #[test]
    fn no_pass_runs_on_a_stored_body_before_the_inliner_is_done() {
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        // A blob of bodies no pass ran on: sq keeps its `add i32 %x, 0`.
        let blob = raw_bodies(&context, &["sq", "f"]);
        let module = parse(&context, BODIES_IR);
        let (done, sq_after_inliner) = run_substituting(&module, &tm, &blob, &[("sq", 0, 0)], "sq");
        assert_eq!(done, vec![true]);
        assert!(
            sq_after_inliner.contains("add i32 %x, 0"),
            "{sq_after_inliner}"
        );
        // f, not taken from the blob, was simplified: sq inlined.
        assert!(!function_ir(&module, "f").contains("call"));
    }

    #[test]
    fn statics_only_a_replaced_body_called_are_deleted_with_it() {
        // helper is local and f its one caller: the first compile's
        // inliner inlines it and deletes it. In the second compile f's
        // stored body (helper already inlined) replaces f's, and helper,
        // called by nothing now, must go too: left in place, it would
        // reach dead-argument elimination, which rewrites a local function
        // without callers (and marks its debug subprogram `DW_CC_nocall`).
        const IR: &str = r#"
define internal i32 @helper(i32 %x, i32 %unused) {
  %y = mul i32 %x, 3
  ret i32 %y
}
define internal i32 @only_helper_calls(i32 %x) {
  %y = add i32 %x, 1
  ret i32 %y
}
define internal i32 @kept(i32 %x) noinline {
  %y = sub i32 %x, 1
  ret i32 %y
}
define i32 @f(i32 %a) {
  %r = call i32 @helper(i32 %a, i32 7)
  %s = call i32 @only_helper_calls(i32 %r)
  ret i32 %s
}
define i32 @g(i32 %a) {
  %r = call i32 @kept(i32 %a)
  ret i32 %r
}
"#;
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        let first = parse(&context, IR);
        let blob = bodies_after_inliner(&first, &tm, &["f"]);
        let second = parse(&context, IR);
        let mut done = Vec::new();
        let mut after_substitution = Vec::new();
        run_pipeline_with_hooks(
            &second,
            &tm,
            "default<O2>",
            &plain_tuning(),
            true,
            &mut |p| {
                if p == HookPoint::BeforeInliner {
                    done = substitute_bodies(&second, &[&blob], &requests(&[("f", 0, 0)]), None);
                    after_substitution = ["helper", "only_helper_calls", "kept", "f"]
                        .iter()
                        .map(|n| second.get_function(n).is_some())
                        .collect();
                }
            },
        )
        .unwrap();
        assert_eq!(done, vec![true]);
        // kept is still called (by g); f's stored body calls neither of
        // the others.
        assert_eq!(after_substitution, vec![false, false, true, true]);
        assert_eq!(function_ir(&first, "f"), function_ir(&second, "f"));
    }

    #[test]
    fn a_group_is_replaced_whole_or_not_at_all() {
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        // Bodies no pass ran on (see the test above), of functions that
        // use no struct type: the unit's optimizer may have dropped its
        // uses of `%struct.S` before the inliner, and a body using a type
        // the unit lacks is not put in place.
        let blob = raw_bodies(&context, &["sq", "g"]);
        // g's group also holds a function the blob lacks, and sq names a
        // blob there is not: nothing is replaced.
        let module = parse(&context, BODIES_IR);
        let (done, _) = run_substituting(
            &module,
            &tm,
            &blob,
            &[("g", 0, 7), ("nosuch", 0, 7), ("sq", 3, 8)],
            "sq",
        );
        assert_eq!(done, vec![false, false, false]);
        // Nothing was replaced, so the optimizer simplified sq as usual.
        assert!(!function_ir(&module, "sq").contains("add i32 %x, 0"));
        let again = parse(&context, BODIES_IR);
        let (done, sq_after_inliner) =
            run_substituting(&again, &tm, &blob, &[("g", 0, 7), ("sq", 0, 7)], "sq");
        assert_eq!(done, vec![true, true]);
        // Put in place: sq keeps the `add i32 %x, 0` no pass removed.
        assert!(
            sq_after_inliner.contains("add i32 %x, 0"),
            "{sq_after_inliner}"
        );
    }

    /// sq, f (a lexical block; inlines sq) and g of a C file compiled with
    /// `-g`, after mem2reg; the struct and its typedef on line 1.
    const DEBUG_BODIES_IR: &str = r#"
        target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
        target triple = "x86_64-pc-linux-gnu"
        %struct.pair = type { i32, i32 }
        define dso_local i32 @f(ptr noundef %p) !dbg !9 {
        entry:
            #dbg_value(ptr %p, !20, !DIExpression(), !24)
          %b = getelementptr inbounds %struct.pair, ptr %p, i32 0, i32 1, !dbg !25
          %0 = load i32, ptr %b, align 4, !dbg !25
            #dbg_value(i32 %0, !21, !DIExpression(), !24)
          %call = call i32 @sq(i32 noundef %0), !dbg !31
            #dbg_value(i32 %call, !22, !DIExpression(), !32)
          %add = add nsw i32 %call, 1, !dbg !33
          ret i32 %add, !dbg !34
        }
        define hidden i32 @sq(i32 noundef %x) !dbg !35 {
        entry:
            #dbg_value(i32 %x, !39, !DIExpression(), !41)
          %add = add nsw i32 %x, 0, !dbg !42
            #dbg_value(i32 %add, !40, !DIExpression(), !41)
          %mul = mul nsw i32 %add, %add, !dbg !43
          ret i32 %mul, !dbg !44
        }
        define dso_local i32 @g(ptr noundef %p) !dbg !45 {
        entry:
            #dbg_value(ptr %p, !47, !DIExpression(), !48)
          %call = call i32 @f(ptr noundef %p), !dbg !49
          %mul = mul nsw i32 %call, 2, !dbg !50
          ret i32 %mul, !dbg !51
        }
        !llvm.dbg.cu = !{!0}
        !llvm.module.flags = !{!2, !3}
        !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "Debian clang version 19.1.7 (3~deb12u1)", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, splitDebugInlining: false, nameTableKind: None)
        !1 = !DIFile(filename: "dt.c", directory: "/tmp/dx", checksumkind: CSK_MD5, checksum: "5a7e1c1c887f53d47c7ca5b5d56771eb")
        !2 = !{i32 7, !"Dwarf Version", i32 5}
        !3 = !{i32 2, !"Debug Info Version", i32 3}
        !9 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 6, type: !10, scopeLine: 6, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !19)
        !10 = !DISubroutineType(types: !11)
        !11 = !{!12, !13}
        !12 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
        !13 = !DIDerivedType(tag: DW_TAG_pointer_type, baseType: !14, size: 64)
        !14 = !DIDerivedType(tag: DW_TAG_typedef, name: "pair", file: !1, line: 1, baseType: !15)
        !15 = distinct !DICompositeType(tag: DW_TAG_structure_type, name: "pair", file: !1, line: 1, size: 64, elements: !16)
        !16 = !{!17, !18}
        !17 = !DIDerivedType(tag: DW_TAG_member, name: "a", scope: !15, file: !1, line: 1, baseType: !12, size: 32)
        !18 = !DIDerivedType(tag: DW_TAG_member, name: "b", scope: !15, file: !1, line: 1, baseType: !12, size: 32, offset: 32)
        !19 = !{!20, !21, !22}
        !20 = !DILocalVariable(name: "p", arg: 1, scope: !9, file: !1, line: 6, type: !13)
        !21 = !DILocalVariable(name: "v", scope: !9, file: !1, line: 7, type: !12)
        !22 = !DILocalVariable(name: "s", scope: !23, file: !1, line: 9, type: !12)
        !23 = distinct !DILexicalBlock(scope: !9, file: !1, line: 8, column: 3)
        !24 = !DILocation(line: 0, scope: !9)
        !25 = !DILocation(line: 7, column: 14, scope: !9)
        !31 = !DILocation(line: 9, column: 13, scope: !23)
        !32 = !DILocation(line: 0, scope: !23)
        !33 = !DILocation(line: 10, column: 14, scope: !23)
        !34 = !DILocation(line: 10, column: 5, scope: !23)
        !35 = distinct !DISubprogram(name: "sq", scope: !1, file: !1, line: 2, type: !36, scopeLine: 2, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagLocalToUnit | DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !38)
        !36 = !DISubroutineType(types: !37)
        !37 = !{!12, !12}
        !38 = !{!39, !40}
        !39 = !DILocalVariable(name: "x", arg: 1, scope: !35, file: !1, line: 2, type: !12)
        !40 = !DILocalVariable(name: "z", scope: !35, file: !1, line: 3, type: !12)
        !41 = !DILocation(line: 0, scope: !35)
        !42 = !DILocation(line: 3, column: 13, scope: !35)
        !43 = !DILocation(line: 4, column: 12, scope: !35)
        !44 = !DILocation(line: 4, column: 3, scope: !35)
        !45 = distinct !DISubprogram(name: "g", scope: !1, file: !1, line: 13, type: !10, scopeLine: 13, flags: DIFlagPrototyped | DIFlagAllCallsDescribed, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0, retainedNodes: !46)
        !46 = !{!47}
        !47 = !DILocalVariable(name: "p", arg: 1, scope: !45, file: !1, line: 13, type: !13)
        !48 = !DILocation(line: 0, scope: !45)
        !49 = !DILocation(line: 13, column: 25, scope: !45)
        !50 = !DILocation(line: 13, column: 30, scope: !45)
        !51 = !DILocation(line: 13, column: 18, scope: !45)
    "#;

    /// `ir` with every line from `from` on moved down by `by`.
    fn lines_moved(ir: &str, from: u64, by: u64) -> String {
        let mut out = String::new();
        let mut rest = ir;
        while let Some(at) = rest.find("ine: ") {
            let (head, tail) = rest.split_at(at + 5);
            out.push_str(head);
            let digits = tail.chars().take_while(char::is_ascii_digit).count();
            let n: u64 = tail[..digits].parse().unwrap();
            out.push_str(&(if n >= from { n + by } else { n }).to_string());
            rest = &tail[digits..];
        }
        out.push_str(rest);
        out
    }

    /// The blob of sq and f as `ir`'s inliner leaves them, with the anchor
    /// (line 1) as `bodies::snapshot` records it.
    fn debug_bodies_after_inliner(context: &Context, tm: &TargetMachine, ir: &str) -> Vec<u8> {
        let first = parse(context, ir);
        let mut blob = Vec::new();
        run_pipeline_with_hooks(&first, tm, "default<O2>", &plain_tuning(), true, &mut |p| {
            if p == HookPoint::AfterInliner {
                let m = extract_definitions_sharing_metadata(&first, &["sq", "f"]);
                let anchor = context.i64_type().const_int(1, false);
                m.add_global_metadata("repocc.anchor", &context.metadata_node(&[anchor.into()]))
                    .unwrap();
                blob = shared_bitcode(&m).as_slice().to_vec();
            }
        })
        .unwrap();
        blob
    }

    #[test]
    fn a_bodies_snapshot_shares_the_units_debug_info_and_leaves_the_unit_as_it_was() {
        // f's call names h in `!callees`: that node is the snapshot's own
        // (h is declared there); the rest is the unit's, compile unit
        // included, whose list of globals stays out of the bitcode.
        let ir = r#"
            target triple = "x86_64-pc-linux-gnu"
            @counter = global i32 0, !dbg !20
            define void @h() { ret void }
            define void @f(ptr %fp) !dbg !9 {
              call void %fp(), !dbg !12, !callees !13
              ret void, !dbg !12
            }
            !llvm.dbg.cu = !{!0}
            !llvm.module.flags = !{!2, !3}
            !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug, globals: !21)
            !1 = !DIFile(filename: "s.c", directory: "/tmp")
            !2 = !{i32 7, !"Dwarf Version", i32 5}
            !3 = !{i32 2, !"Debug Info Version", i32 3}
            !9 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 3, type: !10, scopeLine: 3, spFlags: DISPFlagDefinition | DISPFlagOptimized, unit: !0)
            !10 = !DISubroutineType(types: !11)
            !11 = !{null}
            !12 = !DILocation(line: 4, column: 3, scope: !9)
            !13 = !{ptr @h}
            !20 = !DIGlobalVariableExpression(var: !22, expr: !DIExpression())
            !21 = !{!20}
            !22 = distinct !DIGlobalVariable(name: "counter", scope: !0, file: !1, line: 1, type: !23, isLocal: false, isDefinition: true)
            !23 = !DIBasicType(name: "int", size: 32, encoding: DW_ATE_signed)
        "#;
        use inkwell::values::AsValueRef;
        let context = Context::create();
        let unit = parse(&context, ir);
        let before = unit.print_to_string().to_string();
        let snapshot = extract_definitions_sharing_metadata(&unit, &["f"]);
        let subprogram = |m: &inkwell::module::Module| {
            let f = m.get_function("f").unwrap();
            // SAFETY: `f` is a live function of a live module.
            unsafe { llvm_sys::debuginfo::LLVMGetSubprogram(f.as_value_ref()) }
        };
        assert!(!subprogram(&unit).is_null());
        assert_eq!(subprogram(&snapshot), subprogram(&unit));
        let bitcode = shared_bitcode(&snapshot);
        drop(snapshot);
        assert_eq!(unit.print_to_string().to_string(), before);
        let other = Context::create();
        let read = inkwell::module::Module::parse_bitcode_from_buffer(&bitcode, &other).unwrap();
        read.verify().unwrap();
        let text = read.print_to_string().to_string();
        assert!(text.contains("!callees"), "{text}");
        assert!(text.contains("declare void @h()"), "{text}");
        assert!(text.contains("!{ptr @h}"), "{text}");
        assert!(text.contains("distinct !DICompileUnit"), "{text}");
        assert!(!text.contains("globals:"), "{text}");
        assert!(!text.contains("counter"), "{text}");
    }

    /// Puts f (group 0) and sq (group 1) in place from `blob` in
    /// `module`, whose anchor is `anchor`; which were.
    fn substitute_f_and_sq(
        module: &inkwell::module::Module,
        tm: &TargetMachine,
        blob: &[u8],
        anchor: u64,
    ) -> Vec<bool> {
        let wanted = [("f", 0, 0), ("sq", 0, 1)];
        run_substituting_at(module, tm, blob, &wanted, "f", Some(anchor)).0
    }

    #[test]
    fn stored_bodies_with_debug_info_take_the_units_metadata_and_lines() {
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        let blob = debug_bodies_after_inliner(&context, &tm, DEBUG_BODIES_IR);
        // Ten lines added between sq and f: f's and g's lines move, sq's,
        // the struct's and the anchor stay. The stored f holds sq's code
        // inlined (sq's lines) in f's lexical block (f's).
        let moved = lines_moved(DEBUG_BODIES_IR, 5, 10);
        let warm = parse(&context, &moved);
        let done = substitute_f_and_sq(&warm, &tm, &blob, 1);
        assert_eq!(done, vec![true, true]);
        let cold = parse(&context, &moved);
        run_pipeline_with_hooks(
            &cold,
            &tm,
            "default<O2>",
            &plain_tuning(),
            true,
            &mut |_| {},
        )
        .unwrap();
        // One compile unit, the unit's nodes, the moved lines: what a
        // compile without stored bodies makes.
        let warm_ir = warm.print_to_string().to_string();
        assert_eq!(warm_ir, cold.print_to_string().to_string());
        assert!(warm_ir.contains("line: 19, column: 13"), "{warm_ir}");
        assert!(warm.verify().is_ok());
    }

    #[test]
    fn a_stored_body_naming_debug_info_the_unit_lacks_stays_out() {
        let context = Context::create();
        let tm = x86_64_machine(OptimizationLevel::Default);
        let blob = debug_bodies_after_inliner(&context, &tm, DEBUG_BODIES_IR);
        // f's local `v` is `w` in this unit: the stored f names a variable
        // the unit does not have. sq, a group of its own, is still taken.
        let renamed = DEBUG_BODIES_IR.replace(r#"name: "v""#, r#"name: "w""#);
        let module = parse(&context, &renamed);
        let done = substitute_f_and_sq(&module, &tm, &blob, 1);
        assert_eq!(done, vec![false, true]);
        // The file-level lines moved, but the blob's anchor did not: the
        // struct's typedef would not be the unit's.
        let moved = lines_moved(DEBUG_BODIES_IR, 1, 10);
        let module = parse(&context, &moved);
        let done = substitute_f_and_sq(&module, &tm, &blob, 1);
        assert_eq!(done, vec![false, true]);
        // With the anchor moved as well, both are.
        let module = parse(&context, &moved);
        let done = substitute_f_and_sq(&module, &tm, &blob, 11);
        assert_eq!(done, vec![true, true]);
    }
}
