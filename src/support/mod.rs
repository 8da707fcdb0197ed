//! What every layer may use, depending on nothing of the crate: atomic
//! output (`output`), temporary files and directories (`temporaries`)
//! and what an interrupt removes (`interrupts`), the relative-line
//! convention (`line_bases`), room on the stack for a unit (`stack`).

pub mod interrupts;
pub mod line_bases;
pub mod output;
pub mod stack;
pub mod temporaries;

/// The effective user id of this process.
pub fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Set in the environment of every compiler repocc runs; finding it set at
/// start-up means the "compiler" ran repocc again (read in
/// `config::Switches`).
pub const RECURSION_GUARD: &str = "REPOCC_RECURSION_GUARD";

/// Has clang append every header it opens (system headers included,
/// whatever the `-M` options) to `list`, one path per line: the driver's
/// `CC_PRINT_HEADERS` interface, which passes `-header-include-file` and
/// `-sys-header-deps` to the compiler proper. (Here because the frontend
/// and the unit cache both start clang with it.)
pub fn list_headers(cmd: &mut std::process::Command, list: &std::path::Path) {
    cmd.env("CC_PRINT_HEADERS", "1")
        .env("CC_PRINT_HEADERS_FILE", list);
}
