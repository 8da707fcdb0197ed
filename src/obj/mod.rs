//! The object layer: ELF relocatable objects and their DWARF as bytes. No
//! LLVM, no repository, nothing above it: the pipeline hands it objects
//! and gets objects back.
//!
//! - [`elf`]: the ELF model, its reader and writer, shared constants.
//! - [`combine`]: a unit's fragments combined into one object, as `ld.lld
//!   -r` would (composing), with the DWARF of the parts merged through
//!   [`debug_compose`], [`debug_units`] and [`debug_tables`] and unwind
//!   records through [`unwind`], its constructor and destructor tables
//!   placed by [`structor_order`].
//! - [`carve`]: one object compiled for many fragments cut into one object
//!   per fragment, each fragment's debug info written anew by
//!   [`debug_carve`].
//! - [`dwarf`]: reading DWARF units, abbreviations and forms;
//!   [`debug_widen`]: a fragment's one-byte string indices made two;
//!   [`debug_lines`]: moving a fragment's relative lines into place.
//!
//! Imports point down only: `elf` ← `dwarf`, `unwind` ← the DWARF stages ←
//! `combine`, `carve` (checked by `scripts/check-layers.py`).

/// Why the object layer declined an input: not a case it handles. The
/// caller takes its slower path (`ld.lld -r` for composing, a module per
/// fragment for carving) and the statistics count the decline with this
/// reason, so that a decline is never silent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decline(pub &'static str);

impl std::fmt::Display for Decline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

pub mod carve;
pub mod combine;
pub mod debug_carve;
pub mod debug_compose;
pub mod debug_fold;
pub mod debug_lines;
pub mod debug_tables;
pub mod debug_units;
pub mod debug_widen;
pub mod dwarf;
pub mod elf;
mod leb128;
pub mod structor_order;
pub mod unwind;
