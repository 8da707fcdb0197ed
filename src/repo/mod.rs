//! The repository directory: the fragment store (`store`) and the
//! statistics counters (`stats`).

pub mod stats;
// The pipeline's prune, store and compose stages (in progress) use the
// rest of the store API; the admin commands use it already.
#[allow(dead_code)]
pub mod store;
