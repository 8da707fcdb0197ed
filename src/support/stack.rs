//! Room on the stack for a unit's compile. Clang's frontend, LLVM's
//! debug-info emission and repocc's own walks of a unit's metadata all
//! recurse as deep as the code is nested: a type of 10,000 pointer levels
//! (gcc's `limits-pointer.c` torture test) made the digests' walk of its
//! debug types overflow the usual 8 MiB, where clang-19 compiles it. A
//! unit therefore runs on as much stack as the frontend's own thread gets.

/// The stack a unit's compile runs on, the main thread's and the code
/// generation workers' included: more only costs address space.
pub const UNIT_STACK_BYTES: usize = 64 << 20;

/// Runs `f` right here when this is the process's main thread and its
/// stack may grow to [`UNIT_STACK_BYTES`] (the soft limit raised if need
/// be, as clang's cc1 raises it, and put back after); gives `f` back
/// otherwise. Raising the soft limit only lets the stack grow: Linux keeps
/// at least 128 MiB free below it. A process that never started a thread
/// keeps glibc's single-threaded allocator paths, which the whole compile
/// of the unit then uses: the frontend on a thread of its own cost about
/// 2% of a lua unit's time.
pub fn on_main_thread<R, F: FnOnce() -> R>(f: F) -> Result<R, F> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    if std::thread::current().name() != Some("main") {
        return Err(f);
    }
    let wanted = UNIT_STACK_BYTES as u64;
    let before = getrlimit(Resource::Stack);
    let enough = |limit: Option<u64>| limit.is_none_or(|n| n >= wanted);
    if enough(before.current) {
        return Ok(f());
    }
    if !enough(before.maximum) {
        return Err(f);
    }
    let raised = Rlimit {
        current: Some(wanted),
        maximum: before.maximum,
    };
    if setrlimit(Resource::Stack, raised).is_err() {
        return Err(f);
    }
    let result = f();
    // Children (a linker, a fallback clang) get the user's limit.
    let _ = setrlimit(Resource::Stack, before);
    Ok(result)
}

/// Runs `f` with [`UNIT_STACK_BYTES`] of stack: on the main thread where
/// its limit allows (see [`on_main_thread`]), else on a thread of its own
/// when called from the main thread; another thread is one of repocc's
/// workers, made with that much.
pub fn with_unit_stack<R: Send, F: FnOnce() -> R + Send + Copy>(f: F) -> R {
    let f = match on_main_thread(f) {
        Ok(result) => return result,
        Err(f) => f,
    };
    if std::thread::current().name() != Some("main") {
        return f();
    }
    let ran = on_thread_of_its_own("unit", f);
    match ran {
        Ok(Ok(result)) => result,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        // No thread to be had: the stack there is.
        Err(_) => f(),
    }
}

/// Runs `f` on a new thread named `name` with [`UNIT_STACK_BYTES`] of
/// stack and waits for it: the outer error when no thread could be had,
/// the inner one when `f` panicked (each caller decides what either means).
pub fn on_thread_of_its_own<R: Send, F: FnOnce() -> R + Send>(
    name: &str,
    f: F,
) -> std::io::Result<std::thread::Result<R>> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name(name.into())
            .stack_size(UNIT_STACK_BYTES)
            .spawn_scoped(scope, f)
            .map(|thread| thread.join())
    })
}
