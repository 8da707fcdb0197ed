//! The repository directory: the fragment store (`store`) and the
//! statistics counters (`stats`).

pub mod stats;
pub mod store;
