//! The repository directory: the fragment store (`store`), the statistics
//! counters (`stats`) and the size accounting that lets builds evict
//! (`size`).

pub mod fsx;
pub mod identity;
pub mod remote;
pub mod size;
pub mod stats;
pub mod storage;
pub mod store;
pub mod tiered;
pub mod trust;
