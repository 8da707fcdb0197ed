//! Moving a fragment's debug lines to where its definition now is.
//!
//! A fragment compiled with debug info is stored with the lines of its
//! unit's source file made relative, so that it does not change when lines
//! are added above it; when it is composed, `place_relative_lines` puts the
//! absolute lines back, in place, in a copy of its object. Two kinds of
//! lines are relative, each to its own point:
//!
//! - what belongs to a definition (its subprogram, scopes, variables,
//!   locations, a global variable's own node; see `digest`'s
//!   `definition_level`), in the leader's own file: relative to the
//!   leader's line, `RELATIVE_LINE_BASE + line - own line`;
//! - everything else declared at file level of the unit's source file
//!   (types, typedefs, declarations): relative to the unit's
//!   *anchor*, the first line of the file that any of those is on,
//!   `ANCHOR_LINE_BASE + line - anchor`. These are the same in every
//!   fragment of the unit (they are rebased once, in the unit's module), so
//!   fragments share them instead of copying the types they reach, and a
//!   line added inside one function moves no type that another fragment
//!   refers to.
//!
//! - what belongs to another definition of the unit's source whose code
//!   the fragment holds inlined (a static function inlined into the
//!   leader, its scopes, variables and locations): relative to that
//!   definition's own line, with the definition's index in the fragment's
//!   list of them (see `split::Fragment::inlined`), `DEFINITION_LINE_BASE +
//!   index * DEFINITION_LINE_SPAN + DEFINITION_LINE_SPAN / 2 + line -
//!   definition's line`. So an inliner does not change when lines are
//!   added between it and what it inlined.
//!
//! Lines in other files (an inlined header function, a header's types) stay
//! as they are. Where the placing happens:
//!
//! - the line program (`.debug_line`): a relative line is never reached by
//!   a special opcode from an absolute one or one of the other kind (they
//!   are more than 2^27 apart), so only `DW_LNS_advance_line` operands that
//!   cross between them change; the new operand is written as a padded
//!   SLEB128 of the original length (a valid encoding every consumer
//!   reads), so no offset in the section moves;
//! - the DIEs (`.debug_info`, type units included): `DW_AT_decl_line` and
//!   `DW_AT_call_line` values at or above the threshold, which LLVM writes
//!   as `DW_FORM_data4` (the smallest form that holds them), patched in
//!   place.
//!
//! Nothing else in DWARF holds a line. Anything not understood (DWARF64, a
//! form this does not know, a relative line in a form that cannot be
//! patched in place, a program whose registers cross the threshold by a
//! special opcode, a line relative to a point the caller did not give)
//! returns `None`: the fragment must then not be stored with relative
//! lines.

use super::dwarf::{form_value, ObjectDwarf, DW_FORM_IMPLICIT_CONST};
use super::elf::{c_str, parse, slice, u32_at};
use super::leb128::{read_sleb, read_uleb, write_sleb_padded};
use crate::support::line_bases::*;

/// Which point a stored line is relative to (0: none, it is absolute; 1:
/// the leader's line; 2: the unit's anchor; 3 + i: the `i`th inlined
/// definition's line).
fn line_kind(line: i64) -> u64 {
    if line < RELATIVE_LINE_THRESHOLD as i64 {
        0
    } else if line < ANCHOR_LINE_THRESHOLD as i64 {
        1
    } else if line < DEFINITION_LINE_BASE as i64 {
        2
    } else {
        3 + (line as u64 - DEFINITION_LINE_BASE) / DEFINITION_LINE_SPAN
    }
}

/// The points a fragment's relative lines are placed on: where its
/// definition (none for the glue), the unit's anchor and the definitions it
/// holds inlined code of now are.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinePoints<'a> {
    pub own: Option<u64>,
    pub anchor: Option<u64>,
    /// By index (see `DEFINITION_LINE_BASE`).
    pub inlined: &'a [u64],
}

impl LinePoints<'_> {
    /// Where a stored `line` is; `None`: relative to a point not given, or
    /// placed below line 1.
    fn place(&self, line: u64) -> Option<u64> {
        let (base, point) = match line_kind(i64::try_from(line).ok()?) {
            0 => return Some(line),
            1 => (RELATIVE_LINE_BASE, self.own?),
            2 => (ANCHOR_LINE_BASE, self.anchor?),
            k => {
                let index = k - 3;
                let base =
                    DEFINITION_LINE_BASE + index * DEFINITION_LINE_SPAN + DEFINITION_LINE_SPAN / 2;
                (base, *self.inlined.get(usize::try_from(index).ok()?)?)
            }
        };
        let placed = (line as i64)
            .checked_sub(base as i64)?
            .checked_add(i64::try_from(point).ok()?)?;
        u64::try_from(placed).ok().filter(|&l| l >= 1)
    }
}

const DW_AT_DECL_LINE: u64 = gimli::DW_AT_decl_line.0 as u64;
const DW_AT_CALL_LINE: u64 = gimli::DW_AT_call_line.0 as u64;
const DW_FORM_DATA4: u64 = gimli::DW_FORM_data4.0 as u64;
const DW_FORM_DATA8: u64 = gimli::DW_FORM_data8.0 as u64;

/// What `place_relative_lines` changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinesPlaced {
    /// `DW_LNS_advance_line` operands rewritten.
    pub line_advances: usize,
    /// `DW_AT_decl_line` / `DW_AT_call_line` values rewritten.
    pub attributes: usize,
}

/// Where an object's relative lines are, found by walking its DWARF once
/// (`find_relative_lines`): enough to place them again, as often as the
/// fragment is composed, without the walk (`place_found_lines`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelativeLines {
    /// Line-program advances between lines of different kinds (absolute,
    /// or relative to different points): offset in the object, operand
    /// length, the line before and the line after.
    advances: Vec<[u64; 4]>,
    /// Line attributes holding relative lines: offset in the object, size,
    /// the value.
    attributes: Vec<[u64; 3]>,
}

impl RelativeLines {
    /// As small numbers (for a repository entry): the advances' count,
    /// then per advance its offset (from the previous place's, zigzag),
    /// operand length and the line before, then per attribute its offset
    /// and size. The rest (an advance's delta, an attribute's value) is in
    /// the object itself: `from_words` reads it back.
    pub fn to_words(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(1 + 3 * self.advances.len() + 2 * self.attributes.len());
        out.push(self.advances.len() as u64);
        let mut previous = 0u64;
        let mut offset = |at: u64| {
            let step = (at as i64).wrapping_sub(previous as i64);
            previous = at;
            ((step << 1) ^ (step >> 63)) as u64
        };
        for &[at, len, from, _] in &self.advances {
            out.extend([offset(at), len, from]);
        }
        for &[at, size, _] in &self.attributes {
            out.extend([offset(at), size]);
        }
        out
    }

    /// The places `words` (from `to_words`) name in `object`, with what
    /// `object` holds there; `None` when they do not make sense for it.
    pub fn from_words(words: &[u64], object: &[u8]) -> Option<RelativeLines> {
        let (&count, rest) = words.split_first()?;
        let split = usize::try_from(count).ok()?.checked_mul(3)?;
        if split > rest.len() || (rest.len() - split) % 2 != 0 {
            return None;
        }
        let (advances, attributes) = rest.split_at(split);
        let mut previous = 0u64;
        let mut offset = |zigzag: u64| {
            let step = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
            previous = (previous as i64)
                .checked_add(step)
                .and_then(|a| u64::try_from(a).ok())?;
            Some(previous)
        };
        let mut found = RelativeLines::default();
        for c in advances.chunks_exact(3) {
            let (at, len, from) = (offset(c[0])?, c[1], c[2]);
            let start = usize::try_from(at).ok()?;
            let field = object.get(start..start.checked_add(usize::try_from(len).ok()?)?)?;
            let (delta, used) = read_sleb(field)?;
            if used as u64 != len {
                return None;
            }
            let to = u64::try_from(i64::try_from(from).ok()?.checked_add(delta)?).ok()?;
            found.advances.push([at, len, from, to]);
        }
        for c in attributes.chunks_exact(2) {
            let (at, size) = (offset(c[0])?, c[1]);
            let start = usize::try_from(at).ok()?;
            let value = match size {
                4 => u64::from(u32::from_le_bytes(
                    object.get(start..start.checked_add(4)?)?.try_into().ok()?,
                )),
                8 => u64::from_le_bytes(object.get(start..start.checked_add(8)?)?.try_into().ok()?),
                _ => return None,
            };
            if value < RELATIVE_LINE_THRESHOLD {
                return None;
            }
            found.attributes.push([at, size, value]);
        }
        Some(found)
    }
}

/// A copy of the relocatable `object` with every relative line placed on
/// `points`; `None`: not understood, or a line relative to a point not
/// given.
pub fn place_relative_lines(object: &[u8], points: LinePoints) -> Option<(Vec<u8>, LinesPlaced)> {
    place_found_lines(object, &find_relative_lines(object)?, points)
}

/// Where `object`'s relative lines are; `None`: not understood (see the
/// module's comment).
pub fn find_relative_lines(object: &[u8]) -> Option<RelativeLines> {
    let input = parse(object)?;
    let mut found = RelativeLines::default();
    let dwarf = ObjectDwarf::new(&input);
    for (i, s) in input.shdrs.iter().enumerate() {
        let Some(name) = c_str(input.shstrtab, s.name) else {
            continue;
        };
        if !matches!(name, b".debug_line" | b".debug_info" | b".debug_types") {
            // Not read: a `.bss` has a size but no bytes in the file.
            continue;
        }
        let start = u64::try_from(usize::try_from(s.offset).ok()?).ok()?;
        let section = slice(object, s.offset, s.size)?;
        if name == b".debug_line" {
            for [at, len, from, to] in relative_advances(section)? {
                found.advances.push([start + at, len, from, to]);
            }
        } else if name == b".debug_info" || name == b".debug_types" {
            dwarf.walk(
                i,
                &mut |a| {
                    if !matches!(a.name, DW_AT_DECL_LINE | DW_AT_CALL_LINE) {
                        return Some(());
                    }
                    let value = if a.form == DW_FORM_IMPLICIT_CONST {
                        // Shared by every DIE of the abbreviation: a
                        // relative line there could not be placed.
                        u64::try_from(a.implicit).unwrap_or(0)
                    } else {
                        form_value(a.form, section.get(a.at..)?).unwrap_or(0)
                    };
                    if value >= RELATIVE_LINE_THRESHOLD {
                        if !matches!(a.form, DW_FORM_DATA4 | DW_FORM_DATA8) {
                            return None;
                        }
                        found
                            .attributes
                            .push([start + a.at as u64, a.size as u64, value]);
                    }
                    Some(())
                },
                &mut |_| Some(()),
            )?;
        }
    }
    Some(found)
}

/// A copy of `object` with the relative lines `found` says it has placed
/// on `points`; `None` when a line is relative to a point not given, or
/// `found` does not describe `object` (each place is checked to hold what
/// it says: then `place_relative_lines` is the way).
pub fn place_found_lines(
    object: &[u8],
    found: &RelativeLines,
    points: LinePoints,
) -> Option<(Vec<u8>, LinesPlaced)> {
    let mut out = object.to_vec();
    let mut done = LinesPlaced::default();
    for &[at, len, from, to] in &found.advances {
        let (at, len) = (usize::try_from(at).ok()?, usize::try_from(len).ok()?);
        let field = out.get_mut(at..at.checked_add(len)?)?;
        let delta = i64::try_from(to).ok()? - i64::try_from(from).ok()?;
        if read_sleb(field) != Some((delta, len)) {
            return None;
        }
        let placed = points.place(to)? as i64 - points.place(from)? as i64;
        if placed != delta {
            write_sleb_padded(field, placed)?;
            done.line_advances += 1;
        }
    }
    for &[at, size, value] in &found.attributes {
        let at = usize::try_from(at).ok()?;
        let placed = points.place(value)?;
        match size {
            4 => {
                let field = out.get_mut(at..at.checked_add(4)?)?;
                if u64::from(u32::from_le_bytes(field.try_into().ok()?)) != value {
                    return None;
                }
                field.copy_from_slice(&u32::try_from(placed).ok()?.to_le_bytes());
            }
            8 => {
                let field = out.get_mut(at..at.checked_add(8)?)?;
                if u64::from_le_bytes(field.try_into().ok()?) != value {
                    return None;
                }
                field.copy_from_slice(&placed.to_le_bytes());
            }
            _ => return None,
        }
        done.attributes += 1;
    }
    Some((out, done))
}

/// The file table of a line table section holding one DWARF 5 line table.
pub(super) struct FileTable {
    /// The byte range of each file entry.
    pub entries: Vec<std::ops::Range<usize>>,
    /// Where the file count is (offset, ULEB128 length).
    pub count: (usize, usize),
    /// Every `DW_LNS_set_file` operand: (offset, ULEB128 length, file).
    pub set_file: Vec<(usize, usize, u64)>,
}

/// Reads the file table and the file operands of `section`, when it is one
/// DWARF 5 line table (32-bit) and its program is understood.
pub(super) fn file_table(section: &[u8]) -> Option<FileTable> {
    use super::dwarf::form_size;
    let p = line_program(section, 0)?;
    if p.version != 5 || p.end != section.len() {
        return None;
    }
    let address_size = *section.get(6)? as usize;
    let mut at = p.tables;
    // Directory formats and entries, then file formats and entries.
    let mut entries = Vec::new();
    let mut count_at = (0, 0);
    for table in 0..2 {
        let format_count = *section.get(at)? as usize;
        at += 1;
        let mut formats = Vec::with_capacity(format_count);
        for _ in 0..format_count {
            let (_content, used) = read_uleb(section.get(at..)?)?;
            at += used;
            let (form, used) = read_uleb(section.get(at..)?)?;
            at += used;
            formats.push(form);
        }
        let (count, used) = read_uleb(section.get(at..)?)?;
        if table == 1 {
            count_at = (at, used);
        }
        at += used;
        for _ in 0..count {
            let start = at;
            for &form in &formats {
                at += form_size(form, section.get(at..)?, address_size, 5)?;
            }
            if table == 1 {
                entries.push(start..at);
            }
        }
    }
    if at != p.program {
        return None;
    }
    let mut set_file = Vec::new();
    decode_ops(section, &p, &mut |op| {
        if let LineOp::SetFile { at, len, file } = op {
            set_file.push((at, len, file));
        }
        Some(())
    })?;
    Some(FileTable {
        entries,
        count: count_at,
        set_file,
    })
}

/// The line advances of every line program in `section` between lines of
/// different kinds: (offset in the section, operand length, line before,
/// line after); `None` when a special opcode crosses kinds.
fn relative_advances(section: &[u8]) -> Option<Vec<[u64; 4]>> {
    let mut found = Vec::new();
    let mut unit = 0usize;
    while unit < section.len() {
        let p = line_program(section, unit)?;
        let mut line: i64 = 1;
        decode_ops(section, &p, &mut |op| {
            match op {
                LineOp::Special(advance) => {
                    let after = line + advance;
                    if line_kind(line) != line_kind(after) {
                        return None;
                    }
                    line = after;
                }
                LineOp::AdvanceLine { at, len, delta } => {
                    let target = line.checked_add(delta)?;
                    if line_kind(line) != line_kind(target) {
                        found.push([
                            at as u64,
                            len as u64,
                            u64::try_from(line).ok()?,
                            u64::try_from(target).ok()?,
                        ]);
                    }
                    line = target;
                }
                // DW_LNE_end_sequence resets the registers.
                LineOp::EndSequence => line = 1,
                LineOp::SetFile { .. } => {}
            }
            Some(())
        })?;
        unit = p.end;
    }
    Some(found)
}

/// What decoding one line program needs of its header.
struct LineProgram {
    version: u16,
    /// Where the unit ends, and where its opcodes start.
    end: usize,
    program: usize,
    line_base: i64,
    line_range: i64,
    opcode_base: u8,
    /// Operand counts of the standard opcodes.
    lengths: Vec<u8>,
    /// Where the directory and file tables start (after `lengths`).
    tables: usize,
}

fn line_program(section: &[u8], unit: usize) -> Option<LineProgram> {
    let (end, version) = super::dwarf::unit_extent(section, unit)?;
    let mut at = unit + 6;
    match version {
        5 => at += 2, // address size, segment selector size
        2..=4 => {}
        _ => return None,
    }
    let program = (at + 4).checked_add(u32_at(section, at as u64)? as usize)?;
    at += 4 + 1; // header length, minimum instruction length
    if version >= 4 {
        at += 1; // maximum operations per instruction
    }
    at += 1; // default is_stmt
    let line_base = *section.get(at)? as i8 as i64;
    let line_range = *section.get(at + 1)? as i64;
    let opcode_base = *section.get(at + 2)?;
    if line_range == 0 || opcode_base == 0 {
        return None;
    }
    let lengths = section
        .get(at + 3..at + 3 + opcode_base as usize - 1)?
        .to_vec();
    Some(LineProgram {
        version,
        end,
        program,
        line_base,
        line_range,
        opcode_base,
        tables: at + 3 + lengths.len(),
        lengths,
    })
}

/// The opcodes of a line program that move its line or name a file.
enum LineOp {
    /// A special opcode, by this many lines.
    Special(i64),
    /// `DW_LNS_advance_line`: its operand's place and value.
    AdvanceLine {
        at: usize,
        len: usize,
        delta: i64,
    },
    /// `DW_LNS_set_file`: its operand's place and value.
    SetFile {
        at: usize,
        len: usize,
        file: u64,
    },
    EndSequence,
}

/// Decodes the opcodes of `p`, telling `visit` of those in `LineOp`;
/// `None` if they do not end where the unit does.
fn decode_ops(
    section: &[u8],
    p: &LineProgram,
    visit: &mut dyn FnMut(LineOp) -> Option<()>,
) -> Option<()> {
    let end = p.end;
    let mut pc = p.program;
    while pc < end {
        let op = section[pc];
        pc += 1;
        if op >= p.opcode_base {
            visit(LineOp::Special(
                p.line_base + (i64::from(op - p.opcode_base) % p.line_range),
            ))?;
            continue;
        }
        match op {
            0 => {
                let (len, used) = read_uleb(section.get(pc..end)?)?;
                pc += used;
                if *section.get(pc)? == 1 {
                    visit(LineOp::EndSequence)?;
                }
                pc = pc.checked_add(usize::try_from(len).ok()?)?;
            }
            3 => {
                let (delta, len) = read_sleb(section.get(pc..end)?)?;
                visit(LineOp::AdvanceLine { at: pc, len, delta })?;
                pc += len;
            }
            4 => {
                let (file, len) = read_uleb(section.get(pc..end)?)?;
                visit(LineOp::SetFile { at: pc, len, file })?;
                pc += len;
            }
            9 => pc += 2, // DW_LNS_fixed_advance_pc: a uhalf
            _ => {
                for _ in 0..*p.lengths.get(op as usize - 1)? {
                    pc += read_uleb(section.get(pc..end)?)?.1;
                }
            }
        }
    }
    (pc == end).then_some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn sleb_padding_round_trips() {
        for v in [
            -300i64,
            -65,
            -64,
            -1,
            0,
            1,
            63,
            64,
            1000,
            (1 << 27) + 5,
            -(1 << 28),
        ] {
            let mut b = [0u8; 5];
            write_sleb_padded(&mut b, v).unwrap();
            assert_eq!(read_sleb(&b), Some((v, 5)), "{v}");
        }
        let mut one = [0u8; 1];
        assert!(write_sleb_padded(&mut one, 64).is_none());
        assert!(write_sleb_padded(&mut one, -64).is_some());
    }

    fn at(own: Option<u64>, anchor: Option<u64>, inlined: &[u64]) -> LinePoints<'_> {
        LinePoints {
            own,
            anchor,
            inlined,
        }
    }

    /// clang's object of `source`, as `-c -g` with `flags`.
    fn object_of(dir: &std::path::Path, source: &str, flags: &[&str]) -> Vec<u8> {
        let c = dir.join("unit.c");
        let o = dir.join("unit.o");
        std::fs::write(&c, source).unwrap();
        let status = Command::new("clang-19")
            .args(flags)
            .args(["-g", "-c", "-o"])
            .arg(&o)
            .arg(&c)
            .status()
            .unwrap();
        assert!(status.success());
        std::fs::read(&o).unwrap()
    }

    fn dwarfdump(dir: &std::path::Path, object: &[u8], what: &str) -> String {
        let o = dir.join("placed.o");
        std::fs::write(&o, object).unwrap();
        super::super::combine::tests::dump(&o, what)
    }

    /// The line of each row of `llvm-dwarfdump --debug-line`'s tables.
    fn line_rows(dump: &str) -> Vec<u64> {
        dump.lines()
            .filter(|l| l.starts_with("0x0000"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect()
    }

    /// A unit whose own lines are written relative (`#line`), calling an
    /// inlined function of another file at absolute lines.
    const RELATIVE_UNIT: &str = "#line 40 \"other.h\"\n\
        static inline __attribute__((always_inline)) int twice(int v) {\n\
          return v * 2;\n\
        }\n\
        #line 268435456 \"unit.c\"\n\
        int helper(int x) {\n\
          int y = twice(x);\n\
          struct pair { int a, b; } p = { y, x };\n\
          return p.a + p.b;\n\
        }\n";

    #[test]
    fn relative_lines_are_placed_for_the_definition() {
        let dir = tempfile::tempdir().unwrap();
        for flags in [
            &["-O0"][..],
            &["-O2"],
            &["-O2", "-gdwarf-4"],
            &["-O0", "-fdebug-types-section"],
            &["-O0", "-gdwarf-4", "-fdebug-types-section"],
        ] {
            let object = object_of(dir.path(), RELATIVE_UNIT, flags);
            let (placed, done) = place_relative_lines(&object, at(Some(500), None, &[])).unwrap();
            assert!(
                done.line_advances >= 1 && done.attributes >= 2,
                "{flags:?}: {done:?}"
            );
            let verify = dwarfdump(dir.path(), &placed, "--verify");
            assert!(verify.contains("No errors."), "{flags:?}: {verify}");
            // The function is at its own line (relative 0): now line 500.
            let info = dwarfdump(dir.path(), &placed, "--debug-info");
            assert!(info.contains("DW_AT_decl_line\t(500)"), "{flags:?}: {info}");
            assert!(!info.contains("(2684355"), "{flags:?}: {info}");
            let lines = dwarfdump(dir.path(), &placed, "--debug-line");
            let rows = line_rows(&lines);
            assert!(rows.iter().all(|&l| l < 600), "{flags:?}: {rows:?}");
            assert!(
                rows.iter().any(|l| (500..=504).contains(l)),
                "{flags:?}: {rows:?}\n{lines}"
            );
            if flags[0] == "-O0" {
                assert!(
                    rows.contains(&500) && rows.contains(&502),
                    "{flags:?}: {rows:?}"
                );
                // The inlined header function keeps its absolute lines.
                assert!(rows.contains(&41), "{flags:?}: {rows:?}");
            }
        }
    }

    #[test]
    fn absolute_lines_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let object = object_of(
            dir.path(),
            "int helper(int x) {\n  int y = x * 3;\n  return y + 1;\n}\n",
            &["-O0"],
        );
        let (placed, done) = place_relative_lines(&object, at(Some(500), None, &[])).unwrap();
        assert_eq!(done, LinesPlaced::default());
        assert_eq!(placed, object);
    }

    /// A fragment of a large zero-initialized array (`.bss`, larger than
    /// the object's file) has nothing to place, which is no failure
    /// (bzip2recover.c's `char progName[2000]` made its unit fall back).
    #[test]
    fn a_bss_larger_than_the_object_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let mut object = object_of(dir.path(), "char name[20000];\n", &["-O2", "-g0"]);
        assert!(object.len() < 20000);
        let (placed, done) = place_relative_lines(&object, at(Some(1), None, &[])).unwrap();
        assert_eq!(done, LinesPlaced::default());
        assert_eq!(placed, object);
        object = object_of(dir.path(), "char name[20000];\n", &["-O2"]);
        assert!(place_relative_lines(&object, at(Some(1), None, &[])).is_some());
    }

    /// File-level lines (a struct, its members) relative to the unit's
    /// anchor, the function's relative to its own line.
    #[test]
    fn anchor_relative_lines_are_placed_for_the_unit() {
        let dir = tempfile::tempdir().unwrap();
        let src = "#line 1073741824 \"unit.c\"\n\
            struct pt {\n\
              int a;\n\
              int b;\n\
            };\n\
            #line 268435456 \"unit.c\"\n\
            int helper(struct pt *p) {\n\
              return p->a + p->b;\n\
            }\n";
        for flags in [&["-O0"][..], &["-O0", "-fdebug-types-section"]] {
            let object = object_of(dir.path(), src, flags);
            assert!(place_relative_lines(&object, at(Some(500), None, &[])).is_none());
            let (placed, done) =
                place_relative_lines(&object, at(Some(500), Some(10), &[])).unwrap();
            assert!(done.attributes >= 4, "{flags:?}: {done:?}");
            let verify = dwarfdump(dir.path(), &placed, "--verify");
            assert!(verify.contains("No errors."), "{flags:?}: {verify}");
            let info = dwarfdump(dir.path(), &placed, "--debug-info");
            for line in ["(500)", "(10)", "(11)", "(12)"] {
                assert!(
                    info.contains(&format!("DW_AT_decl_line\t{line}")),
                    "{flags:?}: {line} {info}"
                );
            }
            assert!(!info.contains("(10737"), "{flags:?}: {info}");
        }
    }

    /// Inlined definitions' lines relative to each one's own line, by
    /// index: placed on the lines given for them.
    #[test]
    fn inlined_definitions_lines_are_placed_on_theirs() {
        let dir = tempfile::tempdir().unwrap();
        let first = DEFINITION_LINE_BASE + DEFINITION_LINE_SPAN / 2;
        let second = first + DEFINITION_LINE_SPAN;
        let src = format!(
            "#line {first} \"unit.c\"\n\
            static inline __attribute__((always_inline)) int twice(int v) {{\n\
              return v * 2;\n\
            }}\n\
            #line {second} \"unit.c\"\n\
            static inline __attribute__((always_inline)) int thrice(int v) {{\n\
              return v * 3;\n\
            }}\n\
            #line 268435456 \"unit.c\"\n\
            int helper(int x) {{\n\
              int y = twice(x);\n\
              return thrice(y);\n\
            }}\n"
        );
        for flags in [&["-O0"][..], &["-O2"]] {
            let object = object_of(dir.path(), &src, flags);
            assert!(place_relative_lines(&object, at(Some(500), None, &[40])).is_none());
            let (placed, done) =
                place_relative_lines(&object, at(Some(500), None, &[40, 70])).unwrap();
            // The places found once place the same, as numbers too; they
            // do not fit another object.
            let found = find_relative_lines(&object).unwrap();
            let words = RelativeLines::from_words(&found.to_words(), &object).unwrap();
            assert_eq!(words, found);
            let again = place_found_lines(&object, &words, at(Some(500), None, &[40, 70]));
            assert_eq!(again, Some((placed.clone(), done)));
            assert!(place_found_lines(&placed, &words, at(Some(500), None, &[40, 70])).is_none());
            assert!(RelativeLines::from_words(&found.to_words(), &placed).is_none());
            assert!(RelativeLines::from_words(&[3, 1, 2], &object).is_none());
            assert!(done.attributes >= 3, "{flags:?}: {done:?}");
            let verify = dwarfdump(dir.path(), &placed, "--verify");
            assert!(verify.contains("No errors."), "{flags:?}: {verify}");
            let info = dwarfdump(dir.path(), &placed, "--debug-info");
            // At -O2, `twice` folds into the multiplication: no trace of it.
            let (decl, rows_at) = if flags[0] == "-O0" {
                (&["(500)", "(40)", "(70)"][..], &[41, 71, 501][..])
            } else {
                (&["(500)", "(70)"][..], &[71][..])
            };
            for line in decl {
                assert!(
                    info.contains(&format!("DW_AT_decl_line\t{line}")),
                    "{flags:?}: {line} {info}"
                );
            }
            let lines = dwarfdump(dir.path(), &placed, "--debug-line");
            let rows = line_rows(&lines);
            assert!(rows.iter().all(|&l| l < 600), "{flags:?}: {rows:?}");
            for line in rows_at {
                assert!(rows.contains(line), "{flags:?}: {line} {rows:?}");
            }
        }
    }
}
