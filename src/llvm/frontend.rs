//! clang in this process: its driver for links, its frontend for a unit's
//! module, its whole compile for a unit compiled whole, and the diagnostic
//! sink every context of repocc's has.
//!
//! Invariants, per call:
//! - `run_clang_frontend`: the shim (shim/frontend.cpp) builds its own
//!   driver, diagnostics engine and compiler instance on the calling
//!   thread and keeps nothing after it returns; the argument strings only
//!   need to live for the call. Its outputs are malloc'd by the shim and
//!   freed by `repocc_frontend_free` once copied. Clang's process-wide
//!   state (LLVM's option registry, plugins, timers) is never touched: the
//!   shim declines such units.
//! - `run_clang_compile_object`: as `run_clang_frontend`; clang's compiler
//!   proper creates, writes and renames the output file itself. LLVM's
//!   option registry is process-wide, so the caller runs it only while
//!   repocc has set no option there (`llvm_options_set`): the code
//!   generation is then clang's own.
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

use inkwell::context::Context;
use llvm_sys::core::{
    LLVMContextSetDiagnosticHandler, LLVMDisposeMessage, LLVMGetDiagInfoDescription,
    LLVMGetDiagInfoSeverity,
};
use llvm_sys::prelude::LLVMDiagnosticInfoRef;
use llvm_sys::LLVMDiagnosticSeverity;
use std::ffi::c_void;
use std::ffi::{c_char, c_int, CString};
use std::mem::ManuallyDrop;
use std::sync::Mutex;

use super::ffi::*;
use super::memory::exit_reclaims_memory;

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
        /// A header list was asked for and clang wrote it whole (a full
        /// `$TMPDIR` leaves part of it: not the unit's whole list).
        headers_listed: bool,
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
    super::startup::initialize();
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
    let produce = if want_module {
        Produce::Module
    } else {
        Produce::Bitcode
    };
    run_clang(clang_path, prog_name, args, header_list, produce)
}

/// Compiles a whole unit (`args` ending in `-c -o FILE`) as the clang-19
/// executable would, its driver and compiler proper in this process:
/// clang writes the object (or removes its temporary on errors). `Ran`
/// holds the status and diagnostics only.
pub fn run_clang_compile_object(
    clang_path: &std::path::Path,
    prog_name: &str,
    args: &[String],
    header_list: Option<&std::path::Path>,
) -> InProcessFrontend {
    run_clang(clang_path, prog_name, args, header_list, Produce::Object)
}

/// What clang in this process is asked for.
#[derive(Clone, Copy, PartialEq)]
enum Produce {
    Bitcode,
    Module,
    Object,
}

fn run_clang(
    clang_path: &std::path::Path,
    prog_name: &str,
    args: &[String],
    header_list: Option<&std::path::Path>,
    produce: Produce,
) -> InProcessFrontend {
    use std::os::unix::ffi::OsStrExt;
    super::startup::initialize();
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
    let mut out = super::ffi::RepoccFrontendOutput {
        status: -1,
        module: std::ptr::null_mut(),
        bitcode: std::ptr::null_mut(),
        bitcode_len: 0,
        diagnostics: std::ptr::null_mut(),
        diagnostics_len: 0,
        declined: std::ptr::null(),
        header_list_failed: 0,
    };
    // SAFETY: every pointer refers to a NUL-terminated string owned above
    // and alive for the call; `out` is a valid, initialized struct the shim
    // overwrites. The buffers it returns are read once, then freed by the
    // shim's own free function (they were malloc'd there). The module it
    // returns is in `home`'s context, and `home` takes it over.
    let home = (produce == Produce::Module).then(FrontendModule::home);
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
            c_int::from(produce == Produce::Object),
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
                headers_listed: list.is_some() && out.header_list_failed == 0,
            }
        };
        repocc_frontend_free(&mut out);
        result
    }
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
