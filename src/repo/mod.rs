//! The repository directory: the fragment store (`store`), the statistics
//! counters (`stats`) and the size accounting that lets builds evict
//! (`size`).

pub mod size;
pub mod stats;
pub mod store;
