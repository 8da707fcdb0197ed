//! What an interrupt (SIGINT, SIGTERM, SIGHUP) removes before the process
//! dies of it. The mechanism is LLVM's signal handling (`llvm`: its
//! list of files, the shim's of directories), which sits above this
//! layer; `main` installs it here once, first thing, so that
//! [`super::temporaries`] can use it and depend on nothing of the crate.
//! Without an installation (unit tests), nothing is registered.

use std::path::Path;
use std::sync::OnceLock;

/// The signal machinery's four calls.
pub struct InterruptHooks {
    /// Removes the file on an interrupt.
    pub remove_file: fn(&Path),
    /// Takes the file off that list again.
    pub keep_file: fn(&Path),
    /// Removes the (emptied) directory on an interrupt; `false` when its
    /// list is full.
    pub remove_directory: fn(&Path) -> bool,
    /// Takes the directory off that list again.
    pub keep_directory: fn(&Path),
}

static HOOKS: OnceLock<InterruptHooks> = OnceLock::new();

/// Installs the machinery (the first installation stays).
pub fn install(hooks: InterruptHooks) {
    let _ = HOOKS.set(hooks);
}

pub(super) fn remove_file(path: &Path) {
    if let Some(h) = HOOKS.get() {
        (h.remove_file)(path)
    }
}

pub(super) fn keep_file(path: &Path) {
    if let Some(h) = HOOKS.get() {
        (h.keep_file)(path)
    }
}

pub(super) fn remove_directory(path: &Path) -> bool {
    HOOKS.get().is_some_and(|h| (h.remove_directory)(path))
}

pub(super) fn keep_directory(path: &Path) {
    if let Some(h) = HOOKS.get() {
        (h.keep_directory)(path)
    }
}
