//! Widening a fragment's one-byte string indices, once, when the fragment
//! is compiled.
//!
//! LLVM names a compile unit's first 256 strings with `DW_FORM_strx1`, and a
//! fragment seldom has more. When an object is composed, fragments share
//! string offsets tables (`debug_compose::StringTables`), but a one-byte
//! index can only name one of a table's first 256 strings: a C++ object
//! then needs about one table for every seven fragments, each repeating
//! the common strings with a relocation of 24 bytes per entry (fmt's
//! `ostream-test.o` had 25,858 entries where clang's has 6,995). Here every
//! `DW_FORM_strx1` of a fragment becomes `DW_FORM_strx2` (the same index,
//! one byte wider), so that every fragment of an object joins one table.
//!
//! The DIEs move, so everything that names a place in `.debug_info` moves
//! with them: unit lengths, a type unit's type offset, references inside a
//! unit (`DW_FORM_ref*`, `DW_AT_sibling`), the base types that typed DWARF
//! expressions name (`DW_OP_convert` and the like, in DIEs and location
//! lists; LLVM pads those ULEB128 operands, so they are rewritten in place)
//! and the relocations of `.debug_info`. An object with anything else (an
//! indirect form, a reference across units, an expression operation not
//! listed, a relocation or symbol pointing into `.debug_info`, more than
//! one abbreviation table) is left as LLVM wrote it: it composes as
//! before, with a table of its own.
//!
//! This runs before a fragment is stored and before its object is
//! composed, cold or warm, so the bytes stored and the bytes a cold
//! compile composes are the same.

use rustc_hash::FxHashMap as HashMap;

use super::dwarf::{
    abbrev_declarations, expression_operands, form, form_value, list_entry, unit_extent,
    write_field, ObjectDwarf,
};
use super::elf::{c_str, parse, u32_at, Input, SHT_RELA, STT_SECTION};
use super::leb128::read_uleb;

/// Widens `object`'s one-byte string indices in place of it; leaves it as
/// it is when it has none or anything is not understood.
pub fn widen_string_indices(object: &mut Vec<u8>) {
    if let Some(widened) = widened(object) {
        *object = widened;
    }
}

/// Where each DIE-relative value found in `.debug_info` lies.
struct Found {
    /// Offsets of `DW_FORM_strx1` values.
    strx1: Vec<usize>,
    /// Unit-relative references: (unit, value offset, size, form).
    refs: Vec<(usize, usize, usize, u64)>,
    /// `DW_FORM_exprloc` contents: (unit, contents range).
    expressions: Vec<(usize, std::ops::Range<usize>)>,
}

fn widened(object: &[u8]) -> Option<Vec<u8>> {
    let input = parse(object)?;
    let named = |name: &[u8]| -> Vec<usize> {
        (0..input.shdrs.len())
            .filter(|&i| c_str(input.shstrtab, input.shdrs[i].name) == Some(name))
            .collect()
    };
    let abbrev_sections = named(b".debug_abbrev");
    let [abbrev] = abbrev_sections[..] else {
        return None;
    };
    let abbrev_bytes = input.bytes(&input.shdrs[abbrev])?;
    let widened_abbrevs = widen_abbrevs(abbrev_bytes)?;
    let infos = named(b".debug_info");
    let loclists = named(b".debug_loclists");
    if infos.is_empty() || loclists.len() > 1 || !named(b".debug_types").is_empty() {
        return None;
    }
    // Nothing may point into `.debug_info` from outside it.
    for s in &input.syms {
        if infos.contains(&(s.shndx as usize)) && (s.value != 0 || s.info & 0xf != STT_SECTION) {
            return None; // not a section symbol
        }
    }
    let rela_of = |target: usize| {
        (0..input.shdrs.len())
            .find(|&r| input.shdrs[r].sh_type == SHT_RELA && input.shdrs[r].info as usize == target)
    };
    for r in 0..input.shdrs.len() {
        let h = &input.shdrs[r];
        if h.sh_type != SHT_RELA || infos.contains(&(h.info as usize)) {
            continue;
        }
        for e in input.relas(h)? {
            if infos.contains(&(input.syms.get(e.sym)?.shndx as usize)) {
                return None;
            }
        }
    }

    let dwarf = ObjectDwarf::new(&input);
    let mut replaced: HashMap<usize, Vec<u8>> = HashMap::default();
    // The compile units: (section, offset). Location lists name base types
    // of the one compile unit.
    let mut compile_units = Vec::new();
    let mut lists_moved = false;
    for &info in &infos {
        let section = input.bytes(&input.shdrs[info])?;
        let found = find(&dwarf, info, section)?;
        let units = unit_starts(section)?;
        let moved = Moved {
            expansions: found.strx1,
        };
        let mut out = moved.widen(section);
        for &(unit, end) in &units {
            let at = moved.moved(unit);
            let length = u32::try_from(moved.moved(end) - at - 4).ok()?;
            out[at..at + 4].copy_from_slice(&length.to_le_bytes());
            match *section.get(unit + 6)? {
                2 => {
                    // a type unit: its type's offset, from the unit
                    let v = u64::from(u32_at(section, unit as u64 + 20)?);
                    let nv = moved.relative(unit, v)?;
                    out[at + 20..at + 24].copy_from_slice(&u32::try_from(nv).ok()?.to_le_bytes());
                }
                1 => compile_units.push((info, unit)),
                _ => return None,
            }
        }
        for &(unit, at, size, f) in &found.refs {
            let value = form_value(f, section.get(at..at + size)?)?;
            let nv = moved.relative(unit, value)?;
            write_in_place(&mut out[moved.moved(at)..], f, size, nv)?;
        }
        for (unit, range) in &found.expressions {
            for (at, size) in expression_refs(section.get(range.clone())?, range.start)? {
                let value = read_uleb(section.get(at..at + size)?)?.0;
                let nv = moved.relative(*unit, value)?;
                write_in_place(&mut out[moved.moved(at)..], form::UDATA, size, nv)?;
            }
        }
        if compile_units.len() > 1 {
            return None;
        }
        if let Some(r) = rela_of(info) {
            let h = &input.shdrs[r];
            let mut bytes = input.bytes(h)?.to_vec();
            for (k, e) in input.relas(h)?.enumerate() {
                let at = usize::try_from(e.offset).ok()?;
                if at >= section.len() {
                    return None;
                }
                let new = moved.moved(at) as u64;
                bytes[k * 24..k * 24 + 8].copy_from_slice(&new.to_le_bytes());
            }
            replaced.insert(r, bytes);
        }
        if let Some(&(_, unit)) = compile_units.iter().find(|c| c.0 == info) {
            if let Some(&lists) = loclists.first() {
                lists_moved = true;
                let bytes = input.bytes(&input.shdrs[lists])?;
                let patched = rewrite_location_lists(bytes, |v| moved.relative(unit, v))?;
                replaced.insert(lists, patched);
            }
        }
        replaced.insert(info, out);
    }
    if !lists_moved && !loclists.is_empty() {
        return None;
    }
    replaced.insert(abbrev, widened_abbrevs);
    with_sections(&input, &replaced)
}

/// The abbreviation table with every `DW_FORM_strx1` made
/// `DW_FORM_strx2` (one byte each, so nothing in it moves); `None` when
/// there is none, when it is not one table filling the section, or when a
/// form is indirect.
fn widen_abbrevs(b: &[u8]) -> Option<Vec<u8>> {
    let (declarations, end) = abbrev_declarations(b)?;
    if end != b.len() {
        return None;
    }
    let mut out = b.to_vec();
    let mut any = false;
    for (_, range) in declarations {
        let mut at = range.start;
        at += read_uleb(b.get(at..)?)?.1; // the code
        at += read_uleb(b.get(at..)?)?.1 + 1; // the tag, DW_CHILDREN_*
        loop {
            let (name, used) = read_uleb(b.get(at..)?)?;
            at += used;
            let (f, used) = read_uleb(b.get(at..)?)?;
            if name == 0 && f == 0 {
                break;
            }
            match f {
                form::STRX1 => {
                    out[at] = form::STRX2 as u8;
                    any = true;
                }
                form::INDIRECT => return None,
                _ => {}
            }
            at += used;
            if f == form::IMPLICIT_CONST {
                at += super::leb128::read_sleb(b.get(at..)?)?.1;
            }
        }
    }
    any.then_some(out)
}

/// Every unit of a `.debug_info` section: (start, end).
fn unit_starts(section: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut units = Vec::new();
    let mut at = 0;
    while at < section.len() {
        let (end, version) = unit_extent(section, at)?;
        if version != 5 {
            return None;
        }
        units.push((at, end));
        at = end;
    }
    Some(units)
}

/// The string indices, references and expressions of section `info`.
fn find(dwarf: &ObjectDwarf, info: usize, section: &[u8]) -> Option<Found> {
    let mut found = Found {
        strx1: Vec::new(),
        refs: Vec::new(),
        expressions: Vec::new(),
    };
    dwarf.walk(
        info,
        &mut |a| {
            match a.form {
                form::STRX1 => found.strx1.push(a.at),
                form::REF1 | form::REF2 | form::REF4 | form::REF8 | form::REF_UDATA => {
                    found.refs.push((a.unit, a.at, a.size, a.form))
                }
                form::EXPRLOC => {
                    let (_, used) = read_uleb(section.get(a.at..)?)?;
                    found.expressions.push((a.unit, a.at + used..a.at + a.size));
                }
                form::REF_ADDR | form::REF_SUP4 | form::REF_SUP8 | form::INDIRECT => return None,
                _ => {}
            }
            Some(())
        },
        &mut |_| Some(()),
    )?;
    Some(found)
}

/// Where old offsets of a `.debug_info` section go once every value at
/// `expansions` (sorted) takes one byte more.
struct Moved {
    expansions: Vec<usize>,
}

impl Moved {
    /// The new offset of old offset `at`.
    fn moved(&self, at: usize) -> usize {
        at + self.expansions.partition_point(|&q| q < at)
    }

    /// A unit-relative value `v` of the unit at `unit`, moved.
    fn relative(&self, unit: usize, v: u64) -> Option<u64> {
        let target = unit.checked_add(usize::try_from(v).ok()?)?;
        Some((self.moved(target) - self.moved(unit)) as u64)
    }

    /// The section with a zero byte after each one-byte index (its value's
    /// high byte, little-endian).
    fn widen(&self, section: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(section.len() + self.expansions.len());
        let mut from = 0;
        for &q in &self.expansions {
            out.extend_from_slice(&section[from..=q]);
            out.push(0);
            from = q + 1;
        }
        out.extend_from_slice(&section[from..]);
        out
    }
}

/// Writes `value` over a field of `form` and `size` at the start of `out`,
/// in the same number of bytes (a ULEB128 padded); `None` if it does not
/// fit.
fn write_in_place(out: &mut [u8], f: u64, size: usize, value: u64) -> Option<()> {
    write_field(out.get_mut(..size)?, form::is_uleb(f), value)
}

/// The base types the DWARF expression `e` (at `at` in its section) names,
/// as (offset, ULEB128 length); `None` when it has an operation not
/// listed in `dwarf::expression_operands` (one that names a DIE another
/// way: `DW_OP_call*`, `DW_OP_implicit_pointer`).
fn expression_refs(e: &[u8], at: usize) -> Option<Vec<(usize, usize)>> {
    let found = expression_operands(e, at)?;
    Some(found.types.iter().map(|o| (o.at, o.size)).collect())
}

/// `.debug_loclists` with the base types its expressions name moved by
/// `moved` (in place, padded); `None` for anything not understood.
fn rewrite_location_lists(b: &[u8], moved: impl Fn(u64) -> Option<u64>) -> Option<Vec<u8>> {
    let mut out = b.to_vec();
    let mut unit = 0;
    while unit < b.len() {
        let (end, version) = unit_extent(b, unit)?;
        if version != 5 || *b.get(unit + 6)? != 8 {
            return None;
        }
        let count = u32_at(b, unit as u64 + 8)? as usize;
        let mut at = (unit + 12).checked_add(count.checked_mul(4)?)?;
        let uleb = |at: &mut usize| -> Option<u64> {
            let (v, used) = read_uleb(b.get(*at..end)?)?;
            *at += used;
            Some(v)
        };
        while at < end {
            let entry = *b.get(at)?;
            at += 1;
            let shape = list_entry(false, entry)?;
            let location = shape.location;
            at += shape.fixed;
            for _ in 0..shape.indices + shape.others {
                uleb(&mut at)?;
            }
            if location {
                let len = usize::try_from(uleb(&mut at)?).ok()?;
                let e = at..at.checked_add(len)?;
                for (p, size) in expression_refs(b.get(e.clone())?, e.start)? {
                    let value = read_uleb(b.get(p..p + size)?)?.0;
                    write_in_place(&mut out[p..], form::UDATA, size, moved(value)?)?;
                }
                at = e.end;
            }
            if at > end {
                return None;
            }
        }
        unit = end;
    }
    Some(out)
}

/// `input` with the contents of some sections replaced: every section's
/// bytes laid out again in their order in the file, each at its
/// alignment, then the section headers.
fn with_sections(input: &Input, replaced: &HashMap<usize, Vec<u8>>) -> Option<Vec<u8>> {
    const SHT_NOBITS: u32 = 8;
    let data = input.data;
    let shoff = u64::from_le_bytes(data.get(0x28..0x30)?.try_into().ok()?) as usize;
    let phnum = u16::from_le_bytes(data.get(0x38..0x3a)?.try_into().ok()?);
    let shentsize = u16::from_le_bytes(data.get(0x3a..0x3c)?.try_into().ok()?);
    if phnum != 0 || shentsize != 64 {
        return None;
    }
    let count = input.shdrs.len();
    let mut headers = data
        .get(shoff..shoff.checked_add(count.checked_mul(64)?)?)?
        .to_vec();
    let mut order: Vec<usize> = (1..count)
        .filter(|&i| input.shdrs[i].sh_type != SHT_NOBITS)
        .collect();
    order.sort_by_key(|&i| (input.shdrs[i].offset, i));
    let mut out = data.get(..64)?.to_vec();
    for i in order {
        let h = &input.shdrs[i];
        let bytes = match replaced.get(&i) {
            Some(b) => b.as_slice(),
            None => input.bytes(h)?,
        };
        let align = usize::try_from(h.align.max(1)).ok()?;
        out.resize(out.len().next_multiple_of(align), 0);
        let header = &mut headers[i * 64..i * 64 + 64];
        header[24..32].copy_from_slice(&(out.len() as u64).to_le_bytes());
        header[32..40].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    out.resize(out.len().next_multiple_of(8), 0);
    let at = out.len() as u64;
    out[0x28..0x30].copy_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&headers);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj::combine::tests::{compile, dump};

    /// What `llvm-dwarfdump-19` prints of the DIEs, with offsets, unit
    /// lengths and forms left out (they are what widening changes).
    fn dies(dir: &std::path::Path, object: &[u8], name: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, object).unwrap();
        dump(&path, "--verify");
        let text = dump(&path, "--debug-info") + &dump(&path, "--debug-loclists");
        let mut kept = String::new();
        for line in text.lines() {
            if line.contains("Compile Unit:")
                || line.contains("Type Unit:")
                || line.contains("file format")
            {
                continue; // the unit's length and offsets
            }
            let mut l = String::new();
            let mut rest = line;
            // Offsets (0x0000002a, a location list's `DW_OP_convert 0x2a`)
            // differ; the rest must not (DIEs name the base type too).
            while let Some(p) = (rest.find("0x000"))
                .or_else(|| rest.find("convert 0x").map(|p| p + "convert ".len()))
            {
                l.push_str(&rest[..p]);
                let tail = &rest[p + 2..];
                let n = tail
                    .find(|c: char| !c.is_ascii_hexdigit())
                    .unwrap_or(tail.len());
                l.push_str("<off>");
                rest = &tail[n..];
            }
            l.push_str(rest);
            kept.push_str(&l);
            kept.push('\n');
        }
        kept
    }

    /// A C++ unit with debug info (type units, references) and a C unit
    /// whose location lists convert to base types: after widening it has
    /// no one-byte string index, llvm-dwarfdump verifies it, and it shows
    /// the same DIEs, names and base types.
    #[test]
    fn widened_fragments_show_the_same_dies() {
        let dir = tempfile::tempdir().unwrap();
        let source = "#include <map>\n#include <string>\n\
                      struct point { int x; short y; std::string name; };\n\
                      int sum(const std::map<std::string, int> &m) { int s = 0;\n\
                        for (auto &[k, v] : m) s += v * (int)k.size(); return s; }\n\
                      long wide(point p, char c) { long v = p.x; v = v * c + (short)(p.y >> 3);\n\
                        return v + p.name.size(); }\n";
        // C at -O2: narrowed values' locations convert to base types.
        let narrowing = "extern void use(int);\n\
                         int g(long a) { short s = (short)a; char c = (char)(a >> 3);\n\
                           use(a); use(a + 1); return 1; }\n\
                         long h(unsigned char x) { int y = x; use(y); long z = (long)y * 3;\n\
                           use(z); return z; }\n";
        for (name, text, flags) in [
            ("w.cc", source, &["-O2", "-g", "-fdebug-types-section"][..]),
            ("w.cc", source, &["-O0", "-g"][..]),
            ("w.cc", source, &["-O1", "-g", "-ffunction-sections"][..]),
            ("n.c", narrowing, &["-O2", "-g"][..]),
        ] {
            let object = compile(dir.path(), name, text, flags);
            let mut widened = object.clone();
            widen_string_indices(&mut widened);
            assert_ne!(widened, object, "{flags:?}: nothing was widened");
            let before = dies(dir.path(), &object, "before.o");
            let after = dies(dir.path(), &widened, "after.o");
            assert!(after.contains(if name == "n.c" {
                "DW_OP_convert"
            } else {
                "std"
            }));
            if let Some((b, a)) = before.lines().zip(after.lines()).find(|(b, a)| b != a) {
                panic!("{flags:?}: {b:?} became {a:?}");
            }
            assert_eq!(before.lines().count(), after.lines().count(), "{flags:?}");
            let abbrevs = dump(&dir.path().join("after.o"), "--debug-abbrev");
            assert!(!abbrevs.contains("DW_FORM_strx1"), "{flags:?}");
            assert!(abbrevs.contains("DW_FORM_strx2"), "{flags:?}");
        }
    }

    /// An object without debug info is left as it is.
    #[test]
    fn objects_without_string_indices_stay() {
        let dir = tempfile::tempdir().unwrap();
        for flags in [&["-O2"][..], &["-O2", "-gdwarf-4"][..]] {
            let object = compile(dir.path(), "p.c", "int f(int x) { return x + 1; }\n", flags);
            let mut same = object.clone();
            widen_string_indices(&mut same);
            assert_eq!(same, object, "{flags:?}");
        }
    }
}
