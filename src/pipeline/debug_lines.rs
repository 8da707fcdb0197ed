//! Moving a fragment's debug lines to where its definition now is.
//!
//! A fragment compiled with debug info is to be stored with the lines of
//! its own source file *relative* to its definition: `RELATIVE_LINE_BASE +
//! (line - own line)`, while lines in other files (an inlined header
//! function) stay as they are. Such a fragment does not change when lines
//! are added above it; when it is composed, `place_relative_lines` puts
//! the absolute lines back, in place, in a copy of its object:
//!
//! - the line program (`.debug_line`): a relative line is never reached by
//!   a special opcode from an absolute one (the two are more than 2^27
//!   apart), so only `DW_LNS_advance_line` operands that cross between the
//!   two change; the new operand is written as a padded SLEB128 of the
//!   original length (a valid encoding every consumer reads), so no offset
//!   in the section moves;
//! - the DIEs (`.debug_info`, type units included): `DW_AT_decl_line` and
//!   `DW_AT_call_line` values at or above the threshold, which LLVM writes
//!   as `DW_FORM_data4` (the smallest form that holds them), patched in
//!   place.
//!
//! Nothing else in DWARF holds a line. Anything not understood (DWARF64, a
//! form this does not know, a relative line in a form that cannot be
//! patched in place, a program whose registers cross the threshold by a
//! special opcode) returns `None`: the fragment must then not be stored
//! with relative lines.

use super::relocatable::{c_str, parse, read_uleb, slice, u16_at, u32_at, u64_at, SHT_RELA};

/// Where a fragment's own-file lines sit while it is stored: line `l` of
/// the source, in a definition that starts at line `d`, is `BASE + l - d`.
pub const RELATIVE_LINE_BASE: u64 = 1 << 28;
/// Lines at or above this are relative; real sources stay far below it
/// (a unit with a line this high is not stored with relative lines).
pub const RELATIVE_LINE_THRESHOLD: u64 = 1 << 27;

const DW_AT_DECL_LINE: u64 = 0x3b;
const DW_AT_CALL_LINE: u64 = 0x59;
const DW_FORM_DATA4: u64 = 0x06;
const DW_FORM_DATA8: u64 = 0x07;
const DW_FORM_INDIRECT: u64 = 0x16;
const DW_FORM_IMPLICIT_CONST: u64 = 0x21;

/// What `place_relative_lines` changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinesPlaced {
    /// `DW_LNS_advance_line` operands rewritten.
    pub line_advances: usize,
    /// `DW_AT_decl_line` / `DW_AT_call_line` values rewritten.
    pub attributes: usize,
}

/// A copy of the relocatable `object` with every relative line placed for
/// a definition that now starts at `own_line`; `None`: not understood.
pub fn place_relative_lines(object: &[u8], own_line: u64) -> Option<(Vec<u8>, LinesPlaced)> {
    let input = parse(object)?;
    let place = |line: u64| -> Option<u64> {
        if line < RELATIVE_LINE_THRESHOLD {
            return Some(line);
        }
        let placed = (line as i64)
            .checked_sub(RELATIVE_LINE_BASE as i64)?
            .checked_add(i64::try_from(own_line).ok()?)?;
        u64::try_from(placed).ok().filter(|&l| l >= 1)
    };
    let mut out = object.to_vec();
    let mut done = LinesPlaced::default();
    let name_of = |i: usize| c_str(input.shstrtab, input.shdrs[i].name);
    let abbrev_sections: Vec<usize> = (0..input.shdrs.len())
        .filter(|&i| name_of(i) == Some(b".debug_abbrev"))
        .collect();
    for (i, s) in input.shdrs.iter().enumerate() {
        let Some(name) = name_of(i) else { continue };
        let start = usize::try_from(s.offset).ok()?;
        let len = usize::try_from(s.size).ok()?;
        let range = start..start.checked_add(len)?;
        if name == b".debug_line" {
            let section = out.get_mut(range)?;
            done.line_advances += place_in_line_programs(section, &place)?;
        } else if name == b".debug_info" || name == b".debug_types" {
            // Where each unit's abbreviations are: in an object, the
            // header's offset field is a relocation against .debug_abbrev.
            let relas = input
                .shdrs
                .iter()
                .find(|r| r.sh_type == SHT_RELA && r.info as usize == i);
            let abbrev_at = |field: u64| -> Option<(usize, u64)> {
                let in_place = u64::from(u32_at(object, s.offset + field)?);
                let Some(r) = relas else {
                    return Some((*abbrev_sections.first()?, in_place));
                };
                let table = slice(object, r.offset, r.size)?;
                for e in table.chunks_exact(24) {
                    if u64_at(e, 0)? != field {
                        continue;
                    }
                    let sym = input.syms.get((u64_at(e, 8)? >> 32) as usize)?;
                    let section = sym.shndx as usize;
                    if !abbrev_sections.contains(&section) {
                        return None;
                    }
                    let at = (u64_at(e, 16)? as i64).checked_add(sym.value as i64)?;
                    return Some((section, u64::try_from(at).ok()?));
                }
                Some((*abbrev_sections.first()?, in_place))
            };
            let abbrevs = |section: usize, at: u64| -> Option<&[u8]> {
                let h = input.shdrs.get(section)?;
                slice(object, h.offset, h.size)?.get(usize::try_from(at).ok()?..)
            };
            let section = out.get_mut(range)?;
            let types = name == b".debug_types";
            done.attributes += place_in_units(section, types, &abbrev_at, &abbrevs, &place)?;
        }
    }
    Some((out, done))
}

/// Reads a signed LEB128: the value and the bytes it took.
fn read_sleb(b: &[u8]) -> Option<(i64, usize)> {
    let mut v = 0i64;
    let mut shift = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= i64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            if shift < 64 && byte & 0x40 != 0 {
                v |= -1i64 << shift;
            }
            return Some((v, i + 1));
        }
    }
    None
}

/// `v` as a signed LEB128 of exactly `out.len()` bytes (continuation bits
/// on all but the last); `None` if it does not fit.
fn write_sleb_padded(out: &mut [u8], v: i64) -> Option<()> {
    let bits = 7 * out.len() as u32;
    if bits < 64 {
        let limit = 1i64 << (bits - 1);
        if v < -limit || v >= limit {
            return None;
        }
    }
    let last = out.len().checked_sub(1)?;
    let mut rest = v;
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = (rest & 0x7f) as u8 | if i < last { 0x80 } else { 0 };
        rest >>= 7;
    }
    Some(())
}

/// Rewrites the line advances of every line program in `section`; the
/// number rewritten.
fn place_in_line_programs(section: &mut [u8], place: &dyn Fn(u64) -> Option<u64>) -> Option<usize> {
    let mut changed = 0;
    let mut unit = 0usize;
    while unit < section.len() {
        let length = u32_at(section, unit as u64)?;
        if length >= 0xffff_fff0 {
            return None; // DWARF64 or reserved
        }
        let end = unit.checked_add(4)?.checked_add(length as usize)?;
        if end > section.len() {
            return None;
        }
        let version = u16_at(section, unit as u64 + 4)?;
        let mut at = unit + 6;
        match version {
            5 => at += 2, // address size, segment selector size
            2..=4 => {}
            _ => return None,
        }
        let header_length = u32_at(section, at as u64)? as usize;
        at += 4;
        let program = at.checked_add(header_length)?;
        at += 1; // minimum instruction length
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
        let mut line: i64 = 1;
        let mut pc = program;
        while pc < end {
            let op = section[pc];
            pc += 1;
            if op >= opcode_base {
                let after = line + line_base + (i64::from(op - opcode_base) % line_range);
                if (line >= RELATIVE_LINE_THRESHOLD as i64)
                    != (after >= RELATIVE_LINE_THRESHOLD as i64)
                {
                    return None;
                }
                line = after;
                continue;
            }
            match op {
                0 => {
                    let (len, used) = read_uleb(section.get(pc..end)?)?;
                    pc += used;
                    let sub = *section.get(pc)?;
                    pc = pc.checked_add(usize::try_from(len).ok()?)?;
                    if sub == 1 {
                        line = 1; // DW_LNE_end_sequence resets the registers
                    }
                }
                3 => {
                    let (delta, used) = read_sleb(section.get(pc..end)?)?;
                    let target = line.checked_add(delta)?;
                    let old_from = place(u64::try_from(line).ok()?)? as i64;
                    let old_to = place(u64::try_from(target).ok()?)? as i64;
                    let new_delta = old_to - old_from;
                    if new_delta != delta {
                        write_sleb_padded(section.get_mut(pc..pc + used)?, new_delta)?;
                        changed += 1;
                    }
                    line = target;
                    pc += used;
                }
                9 => pc += 2, // DW_LNS_fixed_advance_pc: a uhalf
                _ => {
                    for _ in 0..*lengths.get(op as usize - 1)? {
                        pc += read_uleb(section.get(pc..end)?)?.1;
                    }
                }
            }
        }
        if pc != end {
            return None;
        }
        unit = end;
    }
    Some(changed)
}

/// One abbreviation: its attributes' (name, form) and whether it has
/// children.
struct Abbrev {
    code: u64,
    attributes: Vec<(u64, u64)>,
}

fn read_abbrevs(mut b: &[u8]) -> Option<Vec<Abbrev>> {
    let mut out = Vec::new();
    loop {
        let (code, used) = read_uleb(b)?;
        b = b.get(used..)?;
        if code == 0 {
            return Some(out);
        }
        let (_tag, used) = read_uleb(b)?;
        b = b.get(used + 1..)?; // the tag, then DW_CHILDREN_yes/no
        let mut attributes = Vec::new();
        loop {
            let (name, used) = read_uleb(b)?;
            b = b.get(used..)?;
            let (form, used) = read_uleb(b)?;
            b = b.get(used..)?;
            if name == 0 && form == 0 {
                break;
            }
            if form == DW_FORM_IMPLICIT_CONST {
                // The value lives here, shared by every DIE: a line there
                // could not be placed per fragment.
                let (value, used) = read_sleb(b)?;
                b = b.get(used..)?;
                if matches!(name, DW_AT_DECL_LINE | DW_AT_CALL_LINE)
                    && value >= RELATIVE_LINE_THRESHOLD as i64
                {
                    return None;
                }
            }
            attributes.push((name, form));
        }
        out.push(Abbrev { code, attributes });
    }
}

/// The size of an attribute value of `form` at the start of `b` (DWARF32).
fn form_size(form: u64, b: &[u8], address_size: usize, version: u16) -> Option<usize> {
    let leb = |b: &[u8]| read_uleb(b).map(|(_, n)| n);
    let block =
        |b: &[u8]| read_uleb(b).and_then(|(len, n)| n.checked_add(usize::try_from(len).ok()?));
    Some(match form {
        0x01 => address_size,                                      // addr
        0x03 => 2 + u16_at(b, 0)? as usize,                        // block2
        0x04 => 4 + u32_at(b, 0)? as usize,                        // block4
        0x05 => 2,                                                 // data2
        0x06 | 0x0e | 0x17 | 0x13 | 0x1c | 0x1d | 0x1f => 4, // data4 strp sec_offset ref4 ref_sup4 strp_sup line_strp
        0x07 | 0x14 | 0x20 | 0x24 => 8,                      // data8 ref8 ref_sig8 ref_sup8
        0x08 => b.iter().position(|&c| c == 0)? + 1,         // string
        0x09 | 0x18 => block(b)?,                            // block, exprloc
        0x0a => 1 + *b.first()? as usize,                    // block1
        0x0b | 0x0c | 0x11 | 0x25 | 0x29 => 1,               // data1 flag ref1 strx1 addrx1
        0x0d | 0x0f | 0x15 | 0x1a | 0x1b | 0x22 | 0x23 => leb(b)?, // sdata udata ref_udata strx addrx loclistx rnglistx
        0x10 => {
            if version <= 2 {
                address_size
            } else {
                4
            }
        } // ref_addr
        0x12 | 0x26 | 0x2a => 2,                                   // ref2 strx2 addrx2
        0x27 | 0x2b => 3,                                          // strx3 addrx3
        0x28 | 0x2c => 4,                                          // strx4 addrx4
        0x19 | 0x21 => 0,                                          // flag_present, implicit_const
        0x1e => 16,                                                // data16
        _ => return None,
    })
}

/// Places the line attributes of every unit in a `.debug_info` (or DWARF
/// 4 `.debug_types`, `types`) section;
/// the number placed. `abbrev_at(field)`: the abbreviation section and
/// offset a unit header's field (at `field` in the section) names.
fn place_in_units<'a>(
    section: &mut [u8],
    types: bool,
    abbrev_at: &dyn Fn(u64) -> Option<(usize, u64)>,
    abbrevs: &dyn Fn(usize, u64) -> Option<&'a [u8]>,
    place: &dyn Fn(u64) -> Option<u64>,
) -> Option<usize> {
    let mut changed = 0;
    let mut unit = 0usize;
    while unit < section.len() {
        let length = u32_at(section, unit as u64)?;
        if length >= 0xffff_fff0 {
            return None;
        }
        let end = unit.checked_add(4)?.checked_add(length as usize)?;
        if end > section.len() {
            return None;
        }
        let version = u16_at(section, unit as u64 + 4)?;
        let (field, address_size, mut at) = match version {
            5 => {
                let unit_type = *section.get(unit + 6)?;
                let extra = match unit_type {
                    1 | 3 => 0,  // compile, partial
                    2 | 6 => 12, // type, split type: signature, type offset
                    4 | 5 => 8,  // skeleton, split compile: DWO id
                    _ => return None,
                };
                (
                    unit + 8,
                    *section.get(unit + 7)? as usize,
                    unit + 12 + extra,
                )
            }
            // DWARF 4's .debug_types units: signature and type offset.
            2..=4 => (
                unit + 6,
                *section.get(unit + 10)? as usize,
                unit + 11 + if types { 12 } else { 0 },
            ),
            _ => return None,
        };
        let (abbrev_section, abbrev_offset) = abbrev_at(field as u64)?;
        let table = read_abbrevs(abbrevs(abbrev_section, abbrev_offset)?)?;
        while at < end {
            let (code, used) = read_uleb(section.get(at..end)?)?;
            at += used;
            if code == 0 {
                continue;
            }
            let abbrev = table.iter().find(|a| a.code == code)?;
            for &(name, declared) in &abbrev.attributes {
                let mut form = declared;
                while form == DW_FORM_INDIRECT {
                    let (f, used) = read_uleb(section.get(at..end)?)?;
                    at += used;
                    form = f;
                }
                let size = form_size(form, section.get(at..end)?, address_size, version)?;
                if matches!(name, DW_AT_DECL_LINE | DW_AT_CALL_LINE) {
                    let value = match form {
                        DW_FORM_DATA4 => u64::from(u32_at(section, at as u64)?),
                        DW_FORM_DATA8 => u64_at(section, at as u64)?,
                        0x0b => u64::from(*section.get(at)?),
                        0x05 => u64::from(u16_at(section, at as u64)?),
                        0x0f => read_uleb(section.get(at..end)?)?.0,
                        _ => 0,
                    };
                    if value >= RELATIVE_LINE_THRESHOLD {
                        let placed = place(value)?;
                        match form {
                            DW_FORM_DATA4 => section
                                .get_mut(at..at + 4)?
                                .copy_from_slice(&u32::try_from(placed).ok()?.to_le_bytes()),
                            DW_FORM_DATA8 => section
                                .get_mut(at..at + 8)?
                                .copy_from_slice(&placed.to_le_bytes()),
                            _ => return None,
                        }
                        changed += 1;
                    }
                }
                at += size;
            }
        }
        if at != end {
            return None;
        }
        unit = end;
    }
    Some(changed)
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
        let out = Command::new("llvm-dwarfdump-19")
            .arg(what)
            .arg(&o)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
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
            let (placed, done) = place_relative_lines(&object, 500).unwrap();
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
            let rows: Vec<u64> = lines
                .lines()
                .filter(|l| l.starts_with("0x0000"))
                .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
                .collect();
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
        let (placed, done) = place_relative_lines(&object, 500).unwrap();
        assert_eq!(done, LinesPlaced::default());
        assert_eq!(placed, object);
    }
}
