//! The LLVM IR stages of one unit, in flow order: [`frontend`] (clang-19
//! emits the unit's IR), [`canonical`] (mem2reg, names, statics made hidden
//! external: the form digests are made of), [`digest`] (a digest per
//! definition and the graph of what reaches what), [`optimize`] (the
//! user's `-O` pipeline, its functions in [`call_order`], with [`bodies`] stored for the context),
//! [`merge`] (function merging) and [`codegen`]; [`settings`] holds what
//! the user's flags ask of them. The pipeline runs them; they know nothing
//! of it.

pub mod bodies;
pub mod call_order;
pub mod canonical;
pub mod codegen;
pub mod digest;
pub mod frontend;
pub mod merge;
pub mod optimize;
pub mod settings;
