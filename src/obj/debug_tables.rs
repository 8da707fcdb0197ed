//! One abbreviation table and one string offsets table for every unit of
//! a composed object, as clang's own object has (its compile unit and its
//! type units share both). The composer (`debug_compose`) shares tables
//! between fragments only where every DIE keeps its size, so a C++ object
//! composed of many batches keeps one table of each per batch or so (fmt's
//! `ostream-test.o` at `-O2 -g`: 20 abbreviation tables holding 2,607
//! declarations where clang's one holds 351, and 8,582 string offsets,
//! each with its relocation, for clang's 6,967). Here the DIEs are written
//! again, and move:
//!
//! - every declaration the DIEs use once, numbered by how many DIEs use it
//!   (the commonest get one-byte codes);
//! - every string the units index once, numbered by how many attributes
//!   name it, each named with the smallest `DW_FORM_strx*` its index fits;
//! - the references inside a unit (`DW_FORM_ref*`), the base types that
//!   typed expressions name (in DIEs, and in the unit's location lists,
//!   where LLVM pads them to four bytes), a type unit's type offset, and
//!   the relocations of `.debug_info`, moved with the DIEs; the units'
//!   `DW_AT_str_offsets_base` and abbreviation offsets name the one table;
//! - before that, the copies inside each compile unit folded
//!   (`debug_fold`): only the DIEs it keeps are written, and what named a
//!   dropped one names the one kept for it;
//! - each fragment's compile unit named after the object's first (the
//!   glue's, which names the unit's source file), in its root and in its
//!   line table's file 0 (`name_fragment_units`).
//!
//! Anything not understood — a unit that is not DWARF 5, a reference that
//! is not unit-relative with a fixed size, an indirect form, a relocation
//! that names `.debug_info` or a table from anywhere else — leaves the
//! object as it is.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::debug_fold::{fold, Folded, Node};
use super::dwarf::{
    expression_operands, fits, form, form_size, form_value, list_entry, read_abbrevs, write_field,
};
use super::elf::{c_str, u16_at, u32_at, Content, OutRela, OutSection, SymRef, SHF_GROUP};
use super::leb128::{read_uleb, write_sleb, write_uleb};

const DW_AT_STR_OFFSETS_BASE: u64 = gimli::DW_AT_str_offsets_base.0 as u64;
const DW_AT_LOCLISTS_BASE: u64 = gimli::DW_AT_loclists_base.0 as u64;
const DW_AT_SIBLING: u64 = gimli::DW_AT_sibling.0 as u64;
const DW_AT_DECLARATION: u64 = gimli::DW_AT_declaration.0 as u64;
const DW_AT_NAME: u64 = gimli::DW_AT_name.0 as u64;
const DW_TAG_NAMESPACE: u64 = gimli::DW_TAG_namespace.0 as u64;
/// Classes, structures and unions: as declarations, containers of the
/// member declarations a fragment names (see `debug_fold`).
const CLASS_TAGS: [u64; 3] = [
    gimli::DW_TAG_class_type.0 as u64,
    gimli::DW_TAG_structure_type.0 as u64,
    gimli::DW_TAG_union_type.0 as u64,
];
const DW_UT_COMPILE: u8 = gimli::DW_UT_compile.0;
const DW_UT_TYPE: u8 = gimli::DW_UT_type.0;
const DW_UT_PARTIAL: u8 = gimli::DW_UT_partial.0;

/// Makes the units of the composed object `sections` share one
/// abbreviation table and one string offsets table (see the module's
/// comment); `section_symbol`: each output section's symbol.
pub(super) fn share_tables(sections: &mut [OutSection], section_symbol: &HashMap<usize, usize>) {
    let Some(shared) = shared_tables(sections, section_symbol) else {
        return;
    };
    if let Some(name) = &shared.unit_name {
        name_fragment_lines(sections, section_symbol, name);
    }
    for (index, data, relas) in shared.sections {
        sections[index].content = Content::Data(data);
        sections[index].relas = relas;
    }
    for (index, at, bytes) in shared.patches {
        if let Content::Data(d) = &mut sections[index].content {
            d[at..at + bytes.len()].copy_from_slice(&bytes);
        }
    }
}

/// What `shared_tables` makes: sections written anew (index, bytes,
/// relocations) and values rewritten in place (section, offset, bytes).
struct Shared {
    sections: Vec<(usize, Vec<u8>, Vec<OutRela>)>,
    patches: Vec<(usize, usize, Vec<u8>)>,
    /// The unit's name, where fragments' compile units now bear it.
    unit_name: Option<Vec<u8>>,
}

fn data(s: &OutSection) -> Option<&[u8]> {
    match &s.content {
        Content::Data(d) => Some(d),
        _ => None,
    }
}

fn plain(sections: &[OutSection], name: &[u8]) -> Option<usize> {
    sections
        .iter()
        .position(|s| s.name == name && s.flags & SHF_GROUP == 0)
}

/// A string as the string offsets table names it: the relocation of its
/// entry (symbol, type, addend).
type StringKey = (Option<SymRef>, u32, i64);

/// An abbreviation declaration without its code: the tag, whether it has
/// children, and its attributes (name, form, implicit constant).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Declaration {
    tag: u64,
    children: bool,
    attributes: Vec<(u64, u64, i64)>,
}

impl Declaration {
    fn write(&self, code: u64, out: &mut Vec<u8>) {
        write_uleb(out, code);
        write_uleb(out, self.tag);
        out.push(u8::from(self.children));
        for &(name, form, implicit) in &self.attributes {
            write_uleb(out, name);
            write_uleb(out, form);
            if form == form::IMPLICIT_CONST {
                write_sleb(out, implicit);
            }
        }
        out.extend_from_slice(&[0, 0]);
    }
}

/// The abbreviation table at `at` of the section `b`, by code.
fn read_table(b: &[u8], at: usize) -> Option<HashMap<u64, Declaration>> {
    let mut out = HashMap::default();
    for a in read_abbrevs(b.get(at..)?)? {
        let declaration = Declaration {
            tag: a.tag,
            children: a.children,
            attributes: a.attributes,
        };
        if out.insert(a.code, declaration).is_some() {
            return None; // a code declared twice
        }
    }
    Some(out)
}

/// One attribute value as read: where it is in its unit, its size, and
/// what the rewrite does with it.
struct Value {
    at: usize,
    size: usize,
    what: Rewrite,
}

enum Rewrite {
    Copy,
    /// A string index: the string it names.
    String(usize),
    /// A reference inside the unit: the offset it names.
    Reference(u64),
    /// An expression: its typed operands (offset in the value, size,
    /// the base type it names).
    Typed(Vec<(usize, usize, u64)>),
}

/// One DIE (or null entry, `declaration: None`) as read.
struct Entry {
    at: usize,
    declaration: Option<usize>,
    values: Vec<Value>,
}

/// One unit as read from a `.debug_info` section.
struct Unit {
    section: usize,
    start: usize,
    /// Its header's length (12, or 24 for a type unit).
    header: usize,
    entries: Vec<Entry>,
    /// A type unit's type offset.
    type_offset: Option<u64>,
    /// Its location lists' base (the addend of `DW_AT_loclists_base`).
    loclists_base: Option<i64>,
    /// The entries to write, in order (`None`: a null entry), and each
    /// dropped entry → the entry that stands for it: a compile unit's
    /// copies folded (`debug_fold`), or every entry as read.
    written: Folded,
}

/// The bytes a relocation adds to a DIE's key (see `debug_fold::Node`).
fn relocation_key(r: &OutRela, key: &mut Vec<u8>) {
    let (kind, index) = match r.sym {
        Some(SymRef::Local(i)) => (1u8, i),
        Some(SymRef::Global(i)) => (2, i),
        None => (0, 0),
    };
    key.push(kind);
    key.extend_from_slice(&(index as u64).to_le_bytes());
    key.extend_from_slice(&r.r_type.to_le_bytes());
    key.extend_from_slice(&r.addend.to_le_bytes());
}

/// Everything read: the units, the declarations they use (the commonest
/// first, see `numbered`) and the strings they name.
struct Read {
    units: Vec<Unit>,
    declarations: Vec<Declaration>,
    strings: Vec<StringKey>,
}

/// Indices that put the most used first, ties in the order first met.
fn numbered(uses: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..uses.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(uses[i]), i));
    let mut number = vec![0; uses.len()];
    for (n, &i) in order.iter().enumerate() {
        number[i] = n;
    }
    number
}

fn strx_form(index: usize) -> (u64, usize) {
    match index {
        0..=0xff => (form::STRX1, 1),
        0x100..=0xffff => (form::STRX2, 2),
        0x1_0000..=0xff_ffff => (form::STRX3, 3),
        _ => (form::STRX4, 4),
    }
}

/// The composed object's sections this module rewrites, and what a read
/// of its units needs of them.
struct Tables<'a> {
    abbrev: usize,
    str_offsets: usize,
    loclists: Option<usize>,
    infos: Vec<usize>,
    abbrev_sym: SymRef,
    offsets_sym: SymRef,
    loclists_sym: Option<SymRef>,
    abbrev_bytes: &'a [u8],
    offsets_bytes: &'a [u8],
    /// Each string offsets entry's string.
    string_at: HashMap<u64, StringKey>,
    /// `.debug_str`: its symbol and bytes.
    strings: Option<(SymRef, &'a [u8])>,
}

impl<'a> Tables<'a> {
    /// The tables of `sections`; `None` when one is missing or something
    /// outside `.debug_info` names what moves.
    fn of(sections: &'a [OutSection], section_symbol: &HashMap<usize, usize>) -> Option<Self> {
        let symbol = |i: usize| section_symbol.get(&i).map(|&l| SymRef::Local(l));
        let abbrev = plain(sections, b".debug_abbrev")?;
        let str_offsets = plain(sections, b".debug_str_offsets")?;
        let loclists = plain(sections, b".debug_loclists");
        let infos: Vec<usize> = (0..sections.len())
            .filter(|&i| sections[i].name == b".debug_info")
            .collect();
        if !sections[abbrev].relas.is_empty() {
            return None;
        }
        let abbrev_sym = symbol(abbrev)?;
        let offsets_sym = symbol(str_offsets)?;
        let info_syms: HashSet<SymRef> = infos.iter().filter_map(|&i| symbol(i)).collect();
        let info_set: HashSet<usize> = infos.iter().copied().collect();
        for (i, s) in sections.iter().enumerate() {
            let inside = info_set.contains(&i);
            for r in &s.relas {
                let Some(sym) = r.sym else { continue };
                if info_syms.contains(&sym)
                    || (!inside && (sym == abbrev_sym || sym == offsets_sym))
                {
                    return None;
                }
            }
        }
        Some(Tables {
            abbrev,
            str_offsets,
            loclists,
            abbrev_sym,
            offsets_sym,
            loclists_sym: loclists.and_then(symbol),
            abbrev_bytes: data(&sections[abbrev])?,
            offsets_bytes: data(&sections[str_offsets])?,
            string_at: (sections[str_offsets].relas.iter())
                .map(|r| (r.offset, (r.sym, r.r_type, r.addend)))
                .collect(),
            strings: plain(sections, b".debug_str")
                .and_then(|s| Some((symbol(s)?, data(&sections[s])?))),
            infos,
        })
    }

    /// The bytes of the string `key` names, if it is in `.debug_str`.
    fn string(&self, key: StringKey) -> Option<&'a [u8]> {
        let (symbol, text) = self.strings?;
        if key.0 != Some(symbol) {
            return None;
        }
        c_str(text, u32::try_from(key.2).ok()?)
    }
}

fn shared_tables(
    sections: &[OutSection],
    section_symbol: &HashMap<usize, usize>,
) -> Option<Shared> {
    let tables = Tables::of(sections, section_symbol)?;
    let mut reader = Reader {
        tables: &tables,
        read: Read {
            units: Vec::new(),
            declarations: Vec::new(),
            strings: Vec::new(),
        },
        declaration_index: HashMap::default(),
        string_index: HashMap::default(),
        relocated_values: 0,
    };
    let mut abbrev_tables: HashMap<i64, HashMap<u64, Declaration>> = HashMap::default();
    for &s in &tables.infos {
        let b = data(&sections[s])?;
        let relas: HashMap<u64, &OutRela> =
            sections[s].relas.iter().map(|r| (r.offset, r)).collect();
        if relas.len() != sections[s].relas.len() {
            return None;
        }
        let mut at = 0;
        while at < b.len() {
            let header = UnitHeader::read(b, at, &relas, tables.abbrev_sym)?;
            let table = match abbrev_tables.entry(header.table) {
                std::collections::hash_map::Entry::Occupied(t) => t.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let at = usize::try_from(header.table).ok()?;
                    v.insert(read_table(tables.abbrev_bytes, at)?)
                }
            };
            reader.relocated_values += 1;
            let unit = reader.unit(s, &b[..header.end], &relas, &header, table)?;
            reader.read.units.push(unit);
            at = header.end;
        }
    }
    // Every relocation of `.debug_info` is at a value read (or a header's
    // table offset), so that it can move with it.
    let relocations: usize = (tables.infos.iter())
        .map(|&s| sections[s].relas.len())
        .sum();
    if reader.relocated_values != relocations || reader.read.units.is_empty() {
        return None;
    }
    let unit_name = name_fragment_units(&mut reader.read, &tables);
    let mut shared = write_shared(sections, &reader.read, &tables)?;
    shared.unit_name = unit_name;
    Some(shared)
}

/// The name the extraction gives a fragment's compile unit
/// (shim/extract.cpp): no source file, as the fragment may have been
/// stored by another unit.
const FRAGMENT_UNIT_NAME: &[u8] = b"<repocc fragment>";

/// Names every fragment's compile unit after the object's first compile
/// unit, the glue's, which names the unit's source file, as clang's one
/// compile unit does: gdb takes a unit's language from its name
/// (`info frame` in a function of a fragment's unit said "source language
/// unknown"). Returns that name, for the line tables
/// (`name_fragment_lines`); `None` when the first unit is a fragment's
/// too, or its name is not a string of `.debug_str`.
fn name_fragment_units(read: &mut Read, tables: &Tables) -> Option<Vec<u8>> {
    let compile_units = || (0..read.units.len()).filter(|&u| read.units[u].type_offset.is_none());
    let first = compile_units().next()?;
    let (_, unit_name) = root_name(read, first)?;
    let bytes = tables.string(read.strings[unit_name])?;
    if bytes == FRAGMENT_UNIT_NAME {
        return None;
    }
    let fragments: Vec<(usize, usize)> = compile_units()
        .filter_map(|u| {
            let (k, n) = root_name(read, u)?;
            (tables.string(read.strings[n]) == Some(FRAGMENT_UNIT_NAME)).then_some((u, k))
        })
        .collect();
    for (u, k) in fragments {
        read.units[u].entries[0].values[k].what = Rewrite::String(unit_name);
    }
    Some(bytes.to_vec())
}

/// The root's `DW_AT_name` of unit `u` as read: the value's place among
/// the root's values, and the string's number.
fn root_name(read: &Read, u: usize) -> Option<(usize, usize)> {
    let root = read.units[u].entries.first()?;
    let attributes = &read.declarations[root.declaration?].attributes;
    let k = attributes
        .iter()
        .position(|&(name, _, _)| name == DW_AT_NAME)?;
    match root.values.get(k)?.what {
        Rewrite::String(n) => Some((k, n)),
        _ => None,
    }
}

/// Points the line tables' file names that are a fragment's compile unit
/// name (each fragment's file 0) at `unit_name` in `.debug_line_str`,
/// where the glue's line table names it; nothing when it is not there.
fn name_fragment_lines(
    sections: &mut [OutSection],
    section_symbol: &HashMap<usize, usize>,
    unit_name: &[u8],
) {
    let (Some(line), Some(strings)) = (
        plain(sections, b".debug_line"),
        plain(sections, b".debug_line_str"),
    ) else {
        return;
    };
    let Some(&symbol) = section_symbol.get(&strings) else {
        return;
    };
    let Some(text) = data(&sections[strings]) else {
        return;
    };
    let Some(named) = string_offset(text, unit_name) else {
        return;
    };
    let named = named as i64;
    let moved: Vec<usize> = (sections[line].relas.iter().enumerate())
        .filter(|(_, r)| r.sym == Some(SymRef::Local(symbol)))
        .filter(|(_, r)| {
            u32::try_from(r.addend).ok().and_then(|at| c_str(text, at)) == Some(FRAGMENT_UNIT_NAME)
        })
        .map(|(i, _)| i)
        .collect();
    for i in moved {
        sections[line].relas[i].addend = named;
    }
}

/// Where `s` is a whole string of a string section.
fn string_offset(text: &[u8], s: &[u8]) -> Option<usize> {
    let mut at = 0;
    while at < text.len() {
        let end = at + memchr::memchr(0, &text[at..])?;
        if &text[at..end] == s {
            return Some(at);
        }
        at = end + 1;
    }
    None
}

/// A unit's header as read.
struct UnitHeader {
    start: usize,
    end: usize,
    unit_type: u8,
    address_size: usize,
    /// Its length (12, or 24 for a type unit).
    length: usize,
    /// Its abbreviation table's offset (the relocation's addend).
    table: i64,
    type_offset: Option<u64>,
}

impl UnitHeader {
    /// The header at `at` of `b` (DWARF 5, 32-bit, a compile, partial or
    /// type unit whose table offset is relocated against `abbrev_sym`).
    fn read(
        b: &[u8],
        at: usize,
        relas: &HashMap<u64, &OutRela>,
        abbrev_sym: SymRef,
    ) -> Option<UnitHeader> {
        let length = u32_at(b, at as u64)? as usize;
        if length >= 0xffff_fff0 {
            return None;
        }
        let end = at.checked_add(4 + length).filter(|&e| e <= b.len())?;
        if u16_at(b, at as u64 + 4)? != 5 {
            return None;
        }
        let unit_type = *b.get(at + 6)?;
        let header = match unit_type {
            DW_UT_COMPILE | DW_UT_PARTIAL => 12,
            DW_UT_TYPE => 24,
            _ => return None,
        };
        let table_field = relas.get(&(at as u64 + 8))?;
        if table_field.sym != Some(abbrev_sym) {
            return None;
        }
        let type_offset = if unit_type == DW_UT_TYPE {
            Some(u64::from(u32_at(b, at as u64 + 20)?))
        } else {
            None
        };
        Some(UnitHeader {
            start: at,
            end,
            unit_type,
            address_size: *b.get(at + 7)? as usize,
            length: header,
            table: table_field.addend,
            type_offset,
        })
    }
}

/// Reading every unit of the object: what was read, and how it is
/// numbered so far.
struct Reader<'t, 'a> {
    tables: &'t Tables<'a>,
    read: Read,
    declaration_index: HashMap<Declaration, usize>,
    string_index: HashMap<StringKey, usize>,
    /// Relocations met at values and headers (all must be).
    relocated_values: usize,
}

/// What one unit's read has found out about it so far.
struct UnitRead {
    /// Its string offsets base (`DW_AT_str_offsets_base`'s addend).
    strings_base: Option<u64>,
    /// Whether it has `DW_AT_sibling` (a reference to wherever the next
    /// sibling lands): such a unit is not folded.
    has_sibling: bool,
    loclists_base: Option<i64>,
}

impl Reader<'_, '_> {
    /// The unit with header `header` in `b` (its section, up to the
    /// unit's end).
    fn unit(
        &mut self,
        section: usize,
        b: &[u8],
        relas: &HashMap<u64, &OutRela>,
        header: &UnitHeader,
        table: &HashMap<u64, Declaration>,
    ) -> Option<Unit> {
        let at = header.start;
        let root = at + header.length;
        let mut found = UnitRead {
            // The root names the string offsets base after strings it
            // indexes (the producer, the name).
            strings_base: root_strings_base(
                b,
                root,
                table,
                header.address_size,
                relas,
                self.tables.offsets_sym,
            )?,
            has_sibling: false,
            loclists_base: None,
        };
        let mut entries = Vec::new();
        // What `debug_fold` compares of each entry.
        let mut nodes: Vec<Option<Node>> = Vec::new();
        let mut p = root;
        while p < b.len() {
            let (entry, node, next) = self.entry(b, p, header, table, relas, &mut found)?;
            entries.push(entry);
            nodes.push(node);
            p = next;
        }
        let written = (header.unit_type != DW_UT_TYPE && !found.has_sibling)
            .then(|| fold(&nodes))
            .flatten()
            .unwrap_or_else(|| Folded {
                order: (entries.iter().enumerate())
                    .map(|(i, e)| e.declaration.map(|_| i))
                    .collect(),
                redirect: HashMap::default(),
            });
        Some(Unit {
            section,
            start: at,
            header: header.length,
            entries,
            type_offset: header.type_offset,
            loclists_base: found.loclists_base,
            written,
        })
    }

    /// The entry at `p` of its unit: as read, as `debug_fold` compares it
    /// (`None` for a null entry), and where the next starts.
    fn entry(
        &mut self,
        b: &[u8],
        mut p: usize,
        header: &UnitHeader,
        table: &HashMap<u64, Declaration>,
        relas: &HashMap<u64, &OutRela>,
        found: &mut UnitRead,
    ) -> Option<(Entry, Option<Node>, usize)> {
        let die_at = p;
        let at = die_at - header.start;
        let (code, used) = read_uleb(b.get(p..)?)?;
        p += used;
        if code == 0 {
            let null = Entry {
                at,
                declaration: None,
                values: Vec::new(),
            };
            return Some((null, None, p));
        }
        let old = table.get(&code)?;
        let mut new = old.clone();
        let mut values = Vec::with_capacity(old.attributes.len());
        let mut key = Vec::new();
        let mut refs = Vec::new();
        let mut declared = false;
        for (k, &(name, f, _)) in old.attributes.iter().enumerate() {
            if f == form::INDIRECT || f == form::REF_ADDR || f == form::REF_UDATA {
                return None;
            }
            let size = form_size(f, b.get(p..)?, header.address_size, 5)?;
            let value = b.get(p..p + size)?;
            let rela = relas.get(&(p as u64)).copied();
            if rela.is_some() {
                self.relocated_values += 1;
            }
            let what = self.value(f, value, found.strings_base)?;
            if let Rewrite::String(n) = what {
                new.attributes[k].1 = strx_form(n).0; // renumbered when written
            }
            let offsets_sym = Some(self.tables.offsets_sym);
            if name == DW_AT_STR_OFFSETS_BASE {
                if die_at != header.start + header.length {
                    return None; // only the root's is read
                }
            } else if rela.is_some_and(|r| r.sym == offsets_sym) {
                return None;
            }
            if name == DW_AT_LOCLISTS_BASE {
                let r = rela?;
                if r.sym != self.tables.loclists_sym || r.sym.is_none() {
                    return None;
                }
                found.loclists_base = Some(r.addend);
            }
            found.has_sibling |= name == DW_AT_SIBLING;
            declared |= name == DW_AT_DECLARATION;
            fold_key(&what, value, rela, &mut key, &mut refs);
            values.push(Value {
                at: p - header.start,
                size,
                what,
            });
            p += size;
        }
        let next = self.read.declarations.len();
        let d = *self.declaration_index.entry(new.clone()).or_insert(next);
        if d == next {
            self.read.declarations.push(new);
        }
        key.splice(0..0, (d as u64).to_le_bytes());
        let node = Node {
            at: at as u64,
            children: old.children,
            key,
            refs,
            container: old.tag == DW_TAG_NAMESPACE || (declared && CLASS_TAGS.contains(&old.tag)),
        };
        let entry = Entry {
            at,
            declaration: Some(d),
            values,
        };
        Some((entry, Some(node), p))
    }

    /// What the rewrite does with a value of form `f`.
    fn value(&mut self, f: u64, value: &[u8], strings_base: Option<u64>) -> Option<Rewrite> {
        Some(match f {
            form::STRX | form::STRX1 | form::STRX2 | form::STRX3 | form::STRX4 => {
                let index = form_value(f, value)?;
                let entry = strings_base?.checked_add(index.checked_mul(4)?)?;
                if entry + 4 > self.tables.offsets_bytes.len() as u64 {
                    return None;
                }
                let key = *self.tables.string_at.get(&entry)?;
                let next = self.read.strings.len();
                let n = *self.string_index.entry(key).or_insert(next);
                if n == next {
                    self.read.strings.push(key);
                }
                Rewrite::String(n)
            }
            form::REF1 | form::REF2 | form::REF4 | form::REF8 => {
                Rewrite::Reference(form_value(f, value)?)
            }
            form::EXPRLOC => {
                let (len, used) = read_uleb(value)?;
                if used as u64 + len != value.len() as u64 {
                    return None;
                }
                let ops = expression_operands(&value[used..], used)?;
                if ops.types.is_empty() {
                    Rewrite::Copy
                } else {
                    Rewrite::Typed(ops.types.iter().map(|o| (o.at, o.size, o.value)).collect())
                }
            }
            _ => Rewrite::Copy,
        })
    }
}

/// Adds what `debug_fold` compares of one value to a DIE's `key` (the
/// references it makes to `refs`): its bytes, a string's number, a
/// relocation; a reference's value (or a typed operand's) is left out.
fn fold_key(
    what: &Rewrite,
    value: &[u8],
    rela: Option<&OutRela>,
    key: &mut Vec<u8>,
    refs: &mut Vec<u64>,
) {
    key.push(0xff);
    match what {
        Rewrite::Copy => key.extend_from_slice(value),
        Rewrite::String(n) => key.extend_from_slice(&(*n as u64).to_le_bytes()),
        Rewrite::Reference(t) => refs.push(*t),
        Rewrite::Typed(types) => {
            let mut v = value.to_vec();
            for &(o, size, t) in types {
                if t != 0 {
                    v[o..o + size].fill(0);
                    refs.push(t);
                }
            }
            key.extend_from_slice(&v);
        }
    }
    if let Some(r) = rela {
        relocation_key(r, key);
    }
}

/// The string offsets base the root DIE of a unit names (the addend of
/// its relocation), if it names one: the root starts at `at` of `b` (which
/// ends with the unit).
fn root_strings_base(
    b: &[u8],
    mut at: usize,
    table: &HashMap<u64, Declaration>,
    address_size: usize,
    relas: &HashMap<u64, &OutRela>,
    offsets_sym: SymRef,
) -> Option<Option<u64>> {
    let (code, used) = read_uleb(b.get(at..)?)?;
    at += used;
    if code == 0 {
        return Some(None);
    }
    for &(name, f, _) in &table.get(&code)?.attributes {
        if f == form::INDIRECT {
            return None;
        }
        if name == DW_AT_STR_OFFSETS_BASE {
            let r = relas.get(&(at as u64))?;
            if r.sym != Some(offsets_sym) || f != form::SEC_OFFSET {
                return None;
            }
            return Some(Some(u64::try_from(r.addend).ok()?));
        }
        at += form_size(f, b.get(at..)?, address_size, 5)?;
    }
    Some(None)
}

/// How the written units number their strings and declarations.
struct Numbering {
    /// Each string read → its index in the new table (`usize::MAX`: no
    /// written DIE names it).
    string_number: Vec<usize>,
    /// The strings read, in the new table's order.
    strings_by_number: Vec<usize>,
    /// The declarations written, with the string forms of their values.
    declarations: Vec<Declaration>,
    /// Each declaration's code, less one.
    code_number: Vec<usize>,
    /// (unit, entry) → its declaration, for the entries written.
    declaration_of: Vec<Vec<Option<usize>>>,
}

impl Numbering {
    /// Strings the written DIEs name, the commonest first; then the
    /// declarations (each takes the string forms of its values' new
    /// indices), the commonest first.
    fn of(read: &Read) -> Numbering {
        let mut string_uses = vec![0usize; read.strings.len()];
        for unit in &read.units {
            for &e in unit.written.order.iter().flatten() {
                for v in &unit.entries[e].values {
                    if let Rewrite::String(n) = v.what {
                        string_uses[n] += 1;
                    }
                }
            }
        }
        let mut strings_by_number: Vec<usize> = (0..read.strings.len())
            .filter(|&n| string_uses[n] > 0)
            .collect();
        strings_by_number.sort_by_key(|&n| (std::cmp::Reverse(string_uses[n]), n));
        let mut string_number = vec![usize::MAX; read.strings.len()];
        for (k, &n) in strings_by_number.iter().enumerate() {
            string_number[n] = k;
        }
        let mut declarations: Vec<Declaration> = Vec::new();
        let mut declaration_index: HashMap<Declaration, usize> = HashMap::default();
        let mut uses: Vec<usize> = Vec::new();
        let mut declaration_of = Vec::with_capacity(read.units.len());
        for unit in &read.units {
            let mut of_unit = vec![None; unit.entries.len()];
            for &e in unit.written.order.iter().flatten() {
                let entry = &unit.entries[e];
                let Some(d) = entry.declaration else {
                    continue;
                };
                let mut decl = read.declarations[d].clone();
                for (k, v) in entry.values.iter().enumerate() {
                    if let Rewrite::String(n) = v.what {
                        decl.attributes[k].1 = strx_form(string_number[n]).0;
                    }
                }
                let next = declarations.len();
                let f = *declaration_index.entry(decl.clone()).or_insert(next);
                if f == next {
                    declarations.push(decl);
                    uses.push(0);
                }
                uses[f] += 1;
                of_unit[e] = Some(f);
            }
            declaration_of.push(of_unit);
        }
        Numbering {
            string_number,
            strings_by_number,
            declarations,
            code_number: numbered(&uses),
            declaration_of,
        }
    }

    /// The one abbreviation table.
    fn abbreviations(&self) -> Vec<u8> {
        let mut by_code: Vec<usize> = vec![0; self.declarations.len()];
        for (d, &n) in self.code_number.iter().enumerate() {
            by_code[n] = d;
        }
        let mut out = Vec::new();
        for (n, &d) in by_code.iter().enumerate() {
            self.declarations[d].write(n as u64 + 1, &mut out);
        }
        out.push(0);
        out
    }

    /// The one string offsets table (a contribution whose entries start
    /// at `STRINGS_BASE`), and its relocations.
    fn string_offsets(&self, read: &Read) -> Option<(Vec<u8>, Vec<OutRela>)> {
        let count = u32::try_from(self.strings_by_number.len()).ok()?;
        let mut out = Vec::with_capacity(8 + 4 * self.strings_by_number.len());
        out.extend_from_slice(&(4 + 4 * count).to_le_bytes());
        out.extend_from_slice(&5u16.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        let mut relas = Vec::with_capacity(self.strings_by_number.len());
        for &s in &self.strings_by_number {
            let (sym, r_type, addend) = read.strings[s];
            relas.push(OutRela {
                offset: out.len() as u64,
                sym,
                r_type,
                addend,
            });
            out.extend_from_slice(&[0; 4]);
        }
        Some((out, relas))
    }

    /// Appends unit `u` of `read`, written again, to `bytes` (its section's
    /// new contents) and its relocations to `relas`; returns where its
    /// DIEs went (old offset in the unit → new).
    fn write_unit(
        &self,
        u: usize,
        read: &Read,
        old_section: &OutSection,
        bytes: &mut Vec<u8>,
        relas: &mut Vec<OutRela>,
    ) -> Option<HashMap<u64, u64>> {
        let unit = &read.units[u];
        let old = data(old_section)?;
        let old_relas: HashMap<u64, &OutRela> =
            old_section.relas.iter().map(|r| (r.offset, r)).collect();
        let start = bytes.len();
        bytes.extend_from_slice(old.get(unit.start..unit.start + unit.header)?);
        // A relocation moved with its value, its addend `addend` if given.
        let moved_rela =
            |relas: &mut Vec<OutRela>, old_at: usize, new_at: usize, addend: Option<i64>| {
                if let Some(r) = old_relas.get(&(old_at as u64)) {
                    relas.push(OutRela {
                        offset: new_at as u64,
                        sym: r.sym,
                        r_type: r.r_type,
                        addend: addend.unwrap_or(r.addend),
                    });
                }
            };
        // The header's table offset: the one table, at 0.
        moved_rela(relas, unit.start + 8, start + 8, Some(0));
        bytes[start + 8..start + 12].copy_from_slice(&[0; 4]);
        let mut moves: HashMap<u64, u64> =
            HashMap::with_capacity_and_hasher(unit.entries.len(), Default::default());
        // Fields to fill once every DIE has its place: (offset in the new
        // section, size, uleb, the old unit offset it names).
        let mut fills: Vec<(usize, usize, bool, u64)> = Vec::new();
        let Folded { order, redirect } = &unit.written;
        for &written in order {
            let Some(e) = written else {
                bytes.push(0);
                continue;
            };
            let entry = &unit.entries[e];
            moves.insert(entry.at as u64, (bytes.len() - start) as u64);
            let d = self.declaration_of[u][e]?;
            write_uleb(bytes, self.code_number[d] as u64 + 1);
            let decl = &self.declarations[d];
            for (k, v) in entry.values.iter().enumerate() {
                let old_at = unit.start + v.at;
                let value = old.get(old_at..old_at + v.size)?;
                let new_at = bytes.len();
                match &v.what {
                    Rewrite::Copy => bytes.extend_from_slice(value),
                    Rewrite::String(n) => {
                        let index = self.string_number[*n];
                        let (f, size) = strx_form(index);
                        debug_assert_eq!(f, decl.attributes[k].1);
                        bytes.extend_from_slice(&(index as u64).to_le_bytes()[..size]);
                    }
                    Rewrite::Reference(target) => {
                        bytes.extend_from_slice(value);
                        fills.push((new_at, v.size, false, *target));
                    }
                    Rewrite::Typed(types) => {
                        bytes.extend_from_slice(value);
                        for &(at, size, target) in types {
                            if target != 0 {
                                fills.push((new_at + at, size, true, target));
                            }
                        }
                    }
                }
                let addend =
                    (decl.attributes[k].0 == DW_AT_STR_OFFSETS_BASE).then_some(STRINGS_BASE);
                moved_rela(relas, old_at, new_at, addend);
            }
        }
        let length = u32::try_from(bytes.len() - start - 4).ok()?;
        bytes[start..start + 4].copy_from_slice(&length.to_le_bytes());
        // A folded DIE is where the one that stands for it is.
        for (&dropped, &kept) in redirect {
            let new = *moves.get(&(unit.entries[kept].at as u64))?;
            moves.insert(unit.entries[dropped].at as u64, new);
        }
        for (at, size, uleb, target) in fills {
            let new = *moves.get(&target)?;
            write_field(bytes.get_mut(at..at + size)?, uleb, new)?;
        }
        if let Some(t) = unit.type_offset {
            let new = u32::try_from(*moves.get(&t)?).ok()?;
            bytes[start + 20..start + 24].copy_from_slice(&new.to_le_bytes());
        }
        Some(moves)
    }
}

/// Where the one string offsets table's entries start (after its header).
const STRINGS_BASE: i64 = 8;

/// The new sections from what was read (see `shared_tables`).
fn write_shared(sections: &[OutSection], read: &Read, tables: &Tables) -> Option<Shared> {
    let numbering = Numbering::of(read);
    let (offsets, offsets_relas) = numbering.string_offsets(read)?;
    let mut out: HashMap<usize, (Vec<u8>, Vec<OutRela>)> = HashMap::default();
    let mut unit_moves: Vec<HashMap<u64, u64>> = Vec::with_capacity(read.units.len());
    for (u, unit) in read.units.iter().enumerate() {
        let (bytes, relas) = out.entry(unit.section).or_default();
        let moves = numbering.write_unit(u, read, &sections[unit.section], bytes, relas)?;
        unit_moves.push(moves);
    }

    // Base types named in location lists move with their unit's DIEs.
    let mut patches = Vec::new();
    if let Some(l) = tables.loclists {
        patches = moved_list_types(data(&sections[l])?, &read.units, &unit_moves)?
            .into_iter()
            .map(|(at, bytes)| (l, at, bytes))
            .collect();
    }
    let mut shared = Shared {
        unit_name: None,
        sections: vec![
            (tables.abbrev, numbering.abbreviations(), Vec::new()),
            (tables.str_offsets, offsets, offsets_relas),
        ],
        patches,
    };
    for &s in &tables.infos {
        let (bytes, relas) = out.remove(&s).unwrap_or_default();
        shared.sections.push((s, bytes, relas));
    }
    Some(shared)
}

/// The typed operands of the location lists of `.debug_loclists` (`b`)
/// rewritten for the units' moved DIEs (`moves`, by unit): (offset,
/// bytes). `None` if a contribution with typed operands is not exactly
/// one unit's, or an entry is not understood.
fn moved_list_types(
    b: &[u8],
    units: &[Unit],
    moves: &[HashMap<u64, u64>],
) -> Option<Vec<(usize, Vec<u8>)>> {
    let mut patches = Vec::new();
    let mut at = 0usize;
    while at < b.len() {
        let length = u32_at(b, at as u64)? as usize;
        if length >= 0xffff_fff0 {
            return None;
        }
        let end = at.checked_add(4 + length).filter(|&e| e <= b.len())?;
        let entries = u32_at(b, at as u64 + 8)? as usize;
        let base = at + 12;
        let mut p = base.checked_add(entries.checked_mul(4)?)?;
        let mut found = Vec::new();
        while p < end {
            let kind = *b.get(p)?;
            p += 1;
            let shape = list_entry(false, kind)?;
            p += shape.fixed;
            for _ in 0..shape.indices + shape.others {
                p += read_uleb(b.get(p..end)?)?.1;
            }
            if shape.location {
                let (len, used) = read_uleb(b.get(p..end)?)?;
                p += used;
                let e = b.get(p..p.checked_add(usize::try_from(len).ok()?)?)?;
                found.extend(expression_operands(e, p)?.types);
                p += e.len();
            }
        }
        if p != end {
            return None;
        }
        if !found.iter().all(|o| o.value == 0) {
            let owners: Vec<usize> = (0..units.len())
                .filter(|&u| units[u].loclists_base == Some(base as i64))
                .collect();
            let [owner] = owners[..] else {
                return None;
            };
            for o in found {
                if o.value == 0 {
                    continue;
                }
                let new = *moves[owner].get(&o.value)?;
                if !fits(new, o.size, true) {
                    return None;
                }
                let mut field = vec![0; o.size];
                write_field(&mut field, true, new)?;
                patches.push((o.at, field));
            }
        }
        at = end;
    }
    Some(patches)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::process::Command;

    use super::super::combine::combine;
    use super::super::combine::tests::{compile, compose_parts, dump, succeed};

    /// Four C++ fragments with type units, each compiled alone (so each
    /// with its own abbreviation and string offsets tables, numbered its
    /// own way), composed: the object has one table of each, every string
    /// once, `llvm-dwarfdump --verify` finds nothing wrong, the DIEs name
    /// what they named, and a debugger finds the functions, arguments and
    /// types of the linked program.
    #[test]
    fn composed_units_share_one_table_of_each() {
        let source = "#include <map>\n#include <memory>\n#include <sstream>\n\
            #include <string>\n#include <vector>\n#include <cstdio>\n\
            #if PART == 1\n\
            int lookup(const std::map<std::string, int> &m, const std::string &k) {\n\
              auto it = m.find(k);\n\
              return it == m.end() ? 0 : it->second;\n\
            }\n\
            #elif PART == 2\n\
            long total(const std::vector<std::unique_ptr<long>> &v) {\n\
              long t = 0;\n\
              for (const auto &p : v) t += *p;\n\
              return t;\n\
            }\n\
            #elif PART == 3\n\
            std::string show(short x) { std::ostringstream o; o << x * 3; return o.str(); }\n\
            #else\n\
            int lookup(const std::map<std::string, int> &m, const std::string &k);\n\
            long total(const std::vector<std::unique_ptr<long>> &v);\n\
            std::string show(short x);\n\
            int main() {\n\
              std::map<std::string, int> m{{\"a\", 30}};\n\
              std::vector<std::unique_ptr<long>> v;\n\
              v.push_back(std::make_unique<long>(12));\n\
              std::printf(\"%s\\n\", show(lookup(m, \"a\") + total(v)).c_str());\n\
              return 0;\n\
            }\n\
            #endif\n";
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let flags = ["-O1", "-fdebug-types-section"];
        let (parts, path) = compose_parts(d, "tables.cc", source, &flags, 4);
        let names = |text: &str| -> BTreeSet<String> {
            (text.lines())
                .filter_map(|l| l.split_once("DW_AT_name\t(\"").map(|(_, n)| n.to_string()))
                .collect()
        };
        let mut before = BTreeSet::new();
        for (k, part) in parts.iter().enumerate() {
            let path = d.join(format!("part{k}.o"));
            std::fs::write(&path, part).unwrap();
            before.extend(names(&dump(&path, "--debug-info")));
        }
        let verify = dump(&path, "--verify");
        assert!(verify.contains("No errors."), "{verify}");
        let abbrevs = dump(&path, "--debug-abbrev");
        assert_eq!(
            abbrevs.matches("Abbrev table for offset").count(),
            1,
            "{abbrevs}"
        );
        let info = dump(&path, "--debug-info");
        assert!(info.matches("Type Unit:").count() > 10, "{info}");
        assert_eq!(names(&info), before);
        let offsets = dump(&path, "--debug-str-offsets");
        assert_eq!(offsets.matches("Contribution size").count(), 1, "{offsets}");
        let strings: Vec<&str> = (offsets.lines())
            .filter_map(|l| l.split_once(" \"").map(|(_, s)| s))
            .collect();
        let distinct: BTreeSet<&&str> = strings.iter().collect();
        assert!(
            strings.len() > 100 && distinct.len() == strings.len(),
            "{offsets}"
        );

        let exe = d.join("prog");
        succeed(Command::new("clang++-19").arg("-o").arg(&exe).arg(&path));
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&run.stdout), "126\n");
        let gdb = Command::new("gdb")
            .args(["-q", "-batch", "-nx", "-ex", "break lookup", "-ex", "run"])
            .args([
                "-ex",
                "info args",
                "-ex",
                "bt",
                "-ex",
                "ptype m",
                "-ex",
                "print k",
            ])
            .arg(&exe)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&gdb.stdout);
        assert!(out.contains("Breakpoint 1, lookup (m="), "{out}");
        assert!(out.contains("k = \"a\""), "{out}");
        assert!(out.contains("in main () at "), "{out}");
        assert!(out.contains("class std::map<std::string, int>"), "{out}");
        assert!(out.contains("$1 = \"a\""), "{out}");
    }

    /// The glue's compile unit first, then three named as the extraction
    /// names a fragment's: composed, every compile unit and every line
    /// table's file 0 bear the glue's name, and gdb knows the language of
    /// a function from a fragment (it said "source language unknown").
    #[test]
    fn fragments_units_bear_the_units_name() {
        let source = "#include <cstdio>\n\
            #if PART == 1\n\
            int twice(int x) { return x * 2; }\n\
            #elif PART == 2\n\
            __attribute__((noinline)) int thrice(int x) { return x * 3; }\n\
            #elif PART == 3\n\
            int plus(int x) { return x + 4; }\n\
            #else\n\
            int twice(int x); int thrice(int x); int plus(int x);\n\
            int main(int argc, char **) { std::printf(\"%d\\n\", plus(thrice(twice(argc)))); return 0; }\n\
            #endif\n";
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A fragment's compile unit names a file of its own (its
        // subprograms name their files), as shim/extract.cpp makes it.
        let fragment = |p: usize| -> Vec<u8> {
            let part = format!("-DPART={p}");
            let ir = compile(d, "names.cc", source, &["-g", &part, "-S", "-emit-llvm"]);
            let ir = String::from_utf8(ir).unwrap();
            let (head, tail) = ir.split_once("distinct !DICompileUnit(").unwrap();
            let (fields, rest) = tail.split_once(')').unwrap();
            let at = fields.find("file: !").unwrap() + "file: ".len();
            let end = at + fields[at..].find(',').unwrap();
            let fields = format!("{}!4242{}", &fields[..at], &fields[end..]);
            let ir = format!(
                "{head}distinct !DICompileUnit({fields}){rest}\n\
                 !4242 = !DIFile(filename: \"<repocc fragment>\", directory: \"/\")\n"
            );
            std::fs::write(d.join(format!("part{p}.ll")), ir).unwrap();
            let obj = d.join(format!("part{p}.o"));
            succeed(
                Command::new("clang++-19")
                    .args(["-c", "-o"])
                    .arg(&obj)
                    .arg(d.join(format!("part{p}.ll"))),
            );
            std::fs::read(obj).unwrap()
        };
        let mut parts = vec![compile(d, "names.cc", source, &["-g", "-DPART=4"])];
        parts.extend((1..=3).map(fragment));
        for p in &parts[1..] {
            let path = d.join("fragment.o");
            std::fs::write(&path, p).unwrap();
            assert!(dump(&path, "--debug-line").contains("<repocc fragment>"));
        }
        let objects: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let path = d.join("composed.o");
        std::fs::write(&path, combine(&objects, &[], &[]).expect("combined")).unwrap();
        let verify = dump(&path, "--verify");
        assert!(verify.contains("No errors."), "{verify}");
        let info = dump(&path, "--debug-info");
        let line = dump(&path, "--debug-line");
        assert!(info.matches("DW_TAG_compile_unit").count() >= 1, "{info}");
        for text in [&info, &line] {
            assert!(!text.contains("<repocc fragment>"), "{text}");
        }
        assert!(info.contains("names.cc\")"), "{info}");

        let exe = d.join("prog");
        succeed(Command::new("clang++-19").arg("-o").arg(&exe).arg(&path));
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&run.stdout), "10\n");
        let gdb = Command::new("gdb")
            .args(["-q", "-batch", "-nx", "-ex", "break thrice", "-ex", "run"])
            .args(["-ex", "info frame"])
            .arg(&exe)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&gdb.stdout);
        assert!(out.contains("Breakpoint 1, thrice"), "{out}");
        assert!(out.contains("source language c++"), "{out}");
    }
}
