//! The files and directories an interrupt removes (LLVM's signal handling
//! and the shim's table).
//!
//! Invariants, per call:
//! - `remove_file_on_interrupt` and the rest of the interrupt table: the
//!   shim copies the path (LLVM's list and its own table own their
//!   copies), installs its SIGINT/SIGTERM/SIGHUP handler once (never over
//!   an ignored signal), and the handler only calls unlink, rmdir,
//!   sigaction and raise, all async-signal-safe.

use std::ffi::CString;

use super::ffi::*;

/// Puts `file` on the list of files an interrupt (SIGINT, SIGTERM,
/// SIGHUP) removes before the process dies of it: LLVM's, which removes
/// regular files only.
pub fn remove_file_on_interrupt(file: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = file.as_os_str().as_bytes();
    // SAFETY: the shim copies the `len` bytes; see the module comment.
    unsafe { repocc_remove_file_on_interrupt(bytes.as_ptr().cast(), bytes.len()) }
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
