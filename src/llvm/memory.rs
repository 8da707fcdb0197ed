//! Memory the process exit reclaims: a unit's modules and contexts are not
//! freed one by one when the process is about to end.
//!
//! Invariants, per call:
//! - `FreedUnlessExiting`: the value it holds is dropped exactly once, by
//!   its own `Drop`, or never (the process exits first); nothing else can
//!   reach the inner value to drop it.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};

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

pub(super) fn exit_reclaims_memory() -> bool {
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
