//! Where a stored fragment's relative debug lines sit: the convention the
//! IR side (`digest`, the shim's line rebasing) writes lines in and the
//! object side (`obj::debug_lines`) reads them back by. Lines this high
//! never occur in a real source; see `obj::debug_lines` for the whole
//! scheme.

/// Where a fragment's own-file lines sit while it is stored: line `l` of
/// the source, in a definition that starts at line `d`, is `BASE + l - d`.
pub const RELATIVE_LINE_BASE: u64 = 1 << 28;
/// Lines at or above this are relative; real sources stay far below it
/// (a unit with a line this high is not stored with relative lines).
pub const RELATIVE_LINE_THRESHOLD: u64 = 1 << 27;
/// Where a unit's file-level lines sit while stored: line `l` of the
/// source, in a unit whose anchor is `a` (never above `l`), is
/// `ANCHOR_LINE_BASE + l - a`.
pub const ANCHOR_LINE_BASE: u64 = 1 << 30;
/// Relative lines at or above this are relative to the anchor; below it,
/// to the leader's line.
pub const ANCHOR_LINE_THRESHOLD: u64 = 1 << 29;

/// Where the lines of inlined definitions sit while stored (see the
/// module's comment); at or above it, a line is relative to one of them.
pub const DEFINITION_LINE_BASE: u64 = 1 << 31;
/// The range of lines of one inlined definition, centred on its line.
pub const DEFINITION_LINE_SPAN: u64 = 1 << 22;
/// How many inlined definitions a fragment can hold lines of.
pub const MAX_INLINED_DEFINITIONS: u64 =
    (u32::MAX as u64 + 1 - DEFINITION_LINE_BASE) / DEFINITION_LINE_SPAN;
