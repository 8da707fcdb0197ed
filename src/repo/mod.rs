//! The repository directory: statistics now; the fragment store, index and
//! eviction arrive with the program repository.

pub mod stats;
