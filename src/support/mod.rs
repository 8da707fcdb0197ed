//! Small things every layer may use, depending on nothing of the crate.

pub mod line_bases;
