//! One fragment's debug info cut out of an object compiled for many
//! fragments, each a compile unit of its own (`carve`'s debug half).
//!
//! LLVM gives every compile unit of a module its own DIEs and line table,
//! but one abbreviation table, one string offsets table, one address
//! table and one table each of location and range lists for all of them,
//! and makes each type unit once, with the line table of the unit that
//! named the type first. A fragment's debug sections are therefore not a
//! slice of the whole object's: here they are written anew from what its
//! compile unit and the type units it reaches hold, in an order decided
//! by those contents alone, so that a fragment gets the same bytes
//! whatever it was compiled with (invariant 4), and the same from an
//! object holding it alone:
//!
//! - the DIEs of the compile unit, then of its type units in the order
//!   their signatures are first met (breadth first), each unit's DIEs in
//!   their order, references inside a unit moved with their DIEs;
//! - abbreviations numbered in the order DIEs first use them, string,
//!   address, list and file indices in the order the walk first meets
//!   them; an index's form (`DW_FORM_strx1`…`4`, `DW_FORM_addrx1`…`4`, a
//!   file's `DW_FORM_data1`…`4`) is the smallest that holds it, as LLVM
//!   chooses;
//! - a root's `DW_AT_addr_base`, `DW_AT_loclists_base` and
//!   `DW_AT_rnglists_base` only where the fragment has such a table (the
//!   whole object's units name the module's tables whether they use them
//!   or not);
//! - one line table: the unit's header and program, the program's files
//!   renumbered (a sequence that relies on file 1 gets a
//!   `DW_LNS_set_file` when file 1 is another now), every other byte of
//!   the program as compiled (`debug_lines` patches its padded line
//!   advances later); the files of the type units' declarations join it,
//!   found by their names in the line table of the unit that made them
//!   (their MD5 from whichever table has one).
//!
//! Anything not understood returns a `Decline` for that fragment, which is
//! then compiled as a module of its own and carved from that object, so
//! that it is carved from the same contents either way, or stored as
//! compiled when it declines there too (decided by the fragment alone).
//! Only DWARF 5 as LLVM writes it for ELF64 little-endian: 32-bit units,
//! indexed strings, addresses and lists.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;

use super::dwarf::{form, form_size, list_entry, unit_extent, Operation};
use super::elf::{c_str, u32_at, u64_at, Input, Rela, EM_AARCH64, SHT_GROUP};
use super::leb128::{read_sleb, read_uleb, uleb_padded, write_uleb};
use super::Decline;

/// A debug section of the fragment's object.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum Part {
    Abbrev,
    Info,
    /// The n-th type unit, a `.debug_info` of its own in a COMDAT group.
    TypeUnit(usize),
    StrOffsets,
    Str,
    Addr,
    Loclists,
    Rnglists,
    Line,
    LineStr,
}

impl Part {
    pub(super) fn name(self) -> &'static [u8] {
        match self {
            Part::Abbrev => b".debug_abbrev",
            Part::Info | Part::TypeUnit(_) => b".debug_info",
            Part::StrOffsets => b".debug_str_offsets",
            Part::Str => b".debug_str",
            Part::Addr => b".debug_addr",
            Part::Loclists => b".debug_loclists",
            Part::Rnglists => b".debug_rnglists",
            Part::Line => b".debug_line",
            Part::LineStr => b".debug_line_str",
        }
    }

    /// Whether it is a section of NUL-terminated strings.
    pub(super) fn strings(self) -> bool {
        matches!(self, Part::Str | Part::LineStr)
    }
}

/// What a relocation of a fragment's debug section points at.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target {
    /// A symbol of the whole object (code or data the fragment holds).
    Input { sym: usize, addend: i64 },
    /// A place in another of the fragment's debug sections.
    Own { part: Part, addend: i64 },
    /// A place in a section of the whole object the fragment holds.
    InputSection { section: usize, addend: i64 },
}

/// Where the carver puts a section of the whole object: the section that
/// starts its run in the composed object (the fragment's sections of one
/// name, laid one after another), and its offset from there; `None`
/// where that is not known.
pub(super) type Place<'p> = dyn Fn(usize) -> Option<(usize, u64)> + 'p;

#[derive(Clone, Copy, Debug)]
pub(super) struct Reloc {
    pub offset: u64,
    pub r_type: u32,
    pub target: Target,
}

/// One debug section of a fragment.
pub(super) struct Section {
    pub part: Part,
    pub bytes: Vec<u8>,
    pub relocs: Vec<Reloc>,
    /// A type unit's signature (its COMDAT group's name, in decimal).
    pub signature: Option<u64>,
}

/// An abbreviation: tag, children, and (name, form, implicit constant).
type AbbrevDecl = (u64, bool, Vec<(u64, u64, i64)>);

/// One attribute as read: name, form, where its value is and its size,
/// and an implicit constant.
#[derive(Clone, Copy)]
struct RawAttr {
    name: u64,
    form: u64,
    at: usize,
    size: usize,
    implicit: i64,
}

enum Entry {
    /// The end of a DIE's children.
    Null,
    Die {
        at: usize,
        tag: u64,
        children: bool,
        attrs: Vec<RawAttr>,
    },
}

/// One unit of a `.debug_info` section, read.
struct Unit {
    section: usize,
    at: usize,
    end: usize,
    /// `DW_UT_compile` (1) or `DW_UT_type` (2).
    kind: u8,
    address_size: u8,
    signature: u64,
    type_offset: u64,
    /// Where its first DIE (the root) is.
    entries_start: usize,
    entries: Vec<Entry>,
}

/// A line table's header as read: its fixed fields (from minimum
/// instruction length to the standard opcode lengths), its files as
/// (directory, name), where its program is.
struct LineTable {
    fixed: Vec<u8>,
    opcode_base: u8,
    files: Vec<(Vec<u8>, Vec<u8>)>,
    /// Each file's MD5, when the table has them.
    md5: Option<Vec<[u8; 16]>>,
    dir0: Vec<u8>,
    /// The entry formats: (content, form), as the table declares them.
    dir_format: Vec<(u64, u64)>,
    file_format: Vec<(u64, u64)>,
    program: std::ops::Range<usize>,
}

const DW_AT_DECL_FILE: u64 = 0x3a;
const DW_AT_CALL_FILE: u64 = 0x58;
const DW_AT_STMT_LIST: u64 = 0x10;
const DW_AT_STR_OFFSETS_BASE: u64 = 0x72;
const DW_AT_ADDR_BASE: u64 = 0x73;
const DW_AT_RNGLISTS_BASE: u64 = 0x74;
const DW_AT_LOCLISTS_BASE: u64 = 0x8c;
const DW_AT_LOCATION: u64 = 0x02;
const DW_AT_RANGES: u64 = 0x55;
const DW_AT_LOW_PC: u64 = 0x11;
const DW_AT_HIGH_PC: u64 = 0x12;

/// The whole object's debug info, read once for all its fragments.
pub(super) struct DebugIndex<'a> {
    input: &'a Input<'a>,
    abbrevs: HashMap<u64, AbbrevDecl>,
    sections: HashMap<&'static [u8], usize>,
    /// Relocations of each debug section, by offset.
    relocs: HashMap<usize, HashMap<u64, Rela>>,
    units: Vec<Unit>,
    /// The compile units (indices into `units`).
    compile_units: Vec<usize>,
    type_units: HashMap<u64, usize>,
    /// Signatures of more than one type unit, with all of them.
    ambiguous: HashMap<u64, Vec<usize>>,
    /// Each compile unit's sections its addresses point into.
    unit_sections: Vec<HashSet<usize>>,
    /// For each section, the compile units whose addresses point into it
    /// (a batch of thousands of fragments asked every unit for each).
    units_of_section: HashMap<usize, Vec<usize>>,
    /// Some compile unit has no address: which fragment it belongs to
    /// is not known.
    unowned: bool,
    /// The relocation type of a 32-bit section offset.
    offset_reloc: u32,
    /// The offsets of each debug section's relocations, sorted.
    reloc_offsets: HashMap<usize, Vec<u64>>,
    lines: HashMap<usize, LineTable>,
    /// The MD5 of each file (directory, name) some line table gives one.
    md5: HashMap<(Vec<u8>, Vec<u8>), [u8; 16]>,
}

fn no(what: &'static str) -> Decline {
    Decline(what)
}

impl<'a> DebugIndex<'a> {
    /// Reads the debug info of `input` (its relocations by section in
    /// `relas`); `Ok(None)` when it has none.
    pub(super) fn of(
        input: &'a Input<'a>,
        relas: &[Vec<Rela>],
        machine: u16,
    ) -> Result<Option<Self>, Decline> {
        let mut sections: HashMap<&'static [u8], usize> = HashMap::default();
        let mut infos = Vec::new();
        let mut grouped = HashSet::default();
        for s in input.shdrs.iter().filter(|s| s.sh_type == SHT_GROUP) {
            grouped.extend(input.group(s).ok_or(no("debug: a group"))?.1);
        }
        for (i, s) in input.shdrs.iter().enumerate().skip(1) {
            let name = c_str(input.shstrtab, s.name).ok_or(no("debug: a section name"))?;
            const NAMES: [&[u8]; 9] = [
                b".debug_abbrev",
                b".debug_str_offsets",
                b".debug_str",
                b".debug_addr",
                b".debug_loclists",
                b".debug_rnglists",
                b".debug_line",
                b".debug_line_str",
                b".debug_info",
            ];
            if name == b".debug_info" {
                infos.push(i);
                if !grouped.contains(&i) && sections.insert(b".debug_info", i).is_some() {
                    return Err(no("debug: two sections of compile units"));
                }
                continue;
            }
            if let Some(n) = NAMES.iter().find(|n| **n == name) {
                if sections.insert(n, i).is_some() {
                    return Err(no("debug: a debug section twice"));
                }
            } else if name.starts_with(b".debug_") || name == b".debug_types" {
                return Err(no("debug: a debug section not handled"));
            }
        }
        if infos.is_empty() {
            return Ok(None);
        }
        let abbrev = *sections
            .get(&b".debug_abbrev"[..])
            .ok_or(no("debug: no abbreviations"))?;
        let abbrev_bytes = input
            .bytes(&input.shdrs[abbrev])
            .ok_or(no("debug: abbreviations"))?;
        let abbrevs = read_abbrev_table(abbrev_bytes).ok_or(no("debug: abbreviations"))?;
        let mut relocs: HashMap<usize, HashMap<u64, Rela>> = HashMap::default();
        for &i in infos.iter().chain(sections.values()) {
            let by_offset = relas[i].iter().map(|r| (r.offset, *r)).collect();
            relocs.insert(i, by_offset);
        }
        let reloc_offsets = (relocs.iter())
            .map(|(&s, by)| {
                let mut v: Vec<u64> = by.keys().copied().collect();
                v.sort_unstable();
                (s, v)
            })
            .collect();
        let mut index = DebugIndex {
            reloc_offsets,
            input,
            abbrevs,
            sections,
            relocs,
            units: Vec::new(),
            compile_units: Vec::new(),
            type_units: HashMap::default(),
            ambiguous: HashMap::default(),
            unit_sections: Vec::new(),
            units_of_section: HashMap::default(),
            unowned: false,
            offset_reloc: if machine == EM_AARCH64 { 258 } else { 10 },
            lines: HashMap::default(),
            md5: HashMap::default(),
        };
        for &i in &infos {
            let bytes = input.bytes(&input.shdrs[i]).ok_or(no("debug: units"))?;
            let mut at = 0;
            while at < bytes.len() {
                let unit = index
                    .read_unit(i, bytes, at)
                    .ok_or(no("debug: a unit not understood"))?;
                at = unit.end;
                match unit.kind {
                    1 if index.sections.get(&b".debug_info"[..]) == Some(&i) => {
                        index.compile_units.push(index.units.len())
                    }
                    2 if grouped.contains(&i) => {
                        // Two types of one identifier, each made a unit
                        // (see `carve_unit`).
                        let at = index.units.len();
                        if let Some(first) = index.type_units.insert(unit.signature, at) {
                            (index.ambiguous.entry(unit.signature))
                                .or_insert_with(|| vec![first])
                                .push(at);
                        }
                    }
                    _ => return Err(no("debug: a unit in a section not its kind's")),
                }
                index.units.push(unit);
            }
        }
        for u in 0..index.units.len() {
            if let Some(at) = index.stmt_list(u).ok_or(no("debug: a line table"))? {
                let at = usize::try_from(at).map_err(|_| no("debug: a line table"))?;
                if !index.lines.contains_key(&at) {
                    let table = index
                        .read_line_table(at)
                        .ok_or(no("debug: a line table not understood"))?;
                    index.lines.insert(at, table);
                }
            }
        }
        for t in index.lines.values() {
            if let Some(sums) = &t.md5 {
                for (f, sum) in t.files.iter().zip(sums) {
                    index.md5.entry(f.clone()).or_insert(*sum);
                }
            }
        }
        for n in 0..index.compile_units.len() {
            let u = index.compile_units[n];
            let found = index
                .address_sections(u)
                .ok_or(no("debug: a compile unit's addresses"))?;
            index.unowned |= found.is_empty();
            for &section in &found {
                index.units_of_section.entry(section).or_default().push(n);
            }
            index.unit_sections.push(found);
        }
        Ok(Some(index))
    }

    fn bytes_of(&self, section: usize) -> Option<&'a [u8]> {
        self.input.bytes(self.input.shdrs.get(section)?)
    }

    fn named(&self, name: &'static [u8]) -> Option<usize> {
        self.sections.get(name).copied()
    }

    fn reloc(&self, section: usize, offset: u64) -> Option<&Rela> {
        self.relocs.get(&section)?.get(&offset)
    }

    /// The section and offset a 32-bit field at `offset` of `section`
    /// points to through its relocation (against a section symbol).
    fn pointed(&self, section: usize, offset: u64) -> Option<(usize, u64)> {
        let r = self.reloc(section, offset)?;
        let sym = self.input.syms.get(r.sym)?;
        let at = u64::try_from(r.addend.checked_add(sym.value as i64)?).ok()?;
        Some((sym.shndx as usize, at))
    }

    /// Reads the unit at `at` of `.debug_info` section `section`.
    fn read_unit(&self, section: usize, bytes: &[u8], at: usize) -> Option<Unit> {
        let (end, version) = unit_extent(bytes, at)?;
        if version != 5 {
            return None;
        }
        let kind = *bytes.get(at + 6)?;
        let address_size = *bytes.get(at + 7)?;
        // The abbreviations: the one table, at its start.
        let field = at as u64 + 8;
        match self.reloc(section, field) {
            Some(_) => {
                let (s, o) = self.pointed(section, field)?;
                if Some(s) != self.named(b".debug_abbrev") || o != 0 {
                    return None;
                }
            }
            None if u32_at(bytes, field)? == 0 => {}
            None => return None,
        }
        let (signature, type_offset, mut p) = match kind {
            1 => (0, 0, at + 12),
            2 => (
                u64_at(bytes, at as u64 + 12)?,
                u64::from(u32_at(bytes, at as u64 + 20)?),
                at + 24,
            ),
            _ => return None,
        };
        let entries_start = p;
        let mut entries = Vec::new();
        while p < end {
            let (code, used) = read_uleb(bytes.get(p..end)?)?;
            let die_at = p;
            p += used;
            if code == 0 {
                entries.push(Entry::Null);
                continue;
            }
            let (tag, children, decl) = self.abbrevs.get(&code)?;
            let mut attrs = Vec::with_capacity(decl.len());
            for &(name, f, implicit) in decl {
                if f == form::INDIRECT {
                    return None;
                }
                let size = form_size(f, bytes.get(p..end)?, address_size as usize, 5)?;
                attrs.push(RawAttr {
                    name,
                    form: f,
                    at: p,
                    size,
                    implicit,
                });
                p += size;
            }
            entries.push(Entry::Die {
                at: die_at,
                tag: *tag,
                children: *children,
                attrs,
            });
        }
        (p == end).then_some(Unit {
            section,
            at,
            end,
            kind,
            address_size,
            signature,
            type_offset,
            entries_start,
            entries,
        })
    }

    /// The sections compile unit `u`'s addresses point into: its
    /// addresses' relocations, direct or through the address table, in
    /// DIEs, expressions and lists, and its line program's.
    fn address_sections(&self, u: usize) -> Option<HashSet<usize>> {
        let unit = &self.units[u];
        let bytes = self.bytes_of(unit.section)?;
        let bases = self.bases(u)?;
        let mut found = HashSet::default();
        let note = |this: &Self, index: u64, found: &mut HashSet<usize>| -> Option<()> {
            let addr = this.named(b".debug_addr")?;
            let at = bases.addr? + index * 8;
            let r = this.reloc(addr, at)?;
            found.insert(this.input.syms.get(r.sym)?.shndx as usize);
            Some(())
        };
        let mut lists = Vec::new();
        let mut stmt = None;
        for e in &unit.entries {
            let Entry::Die { attrs, .. } = e else {
                continue;
            };
            for a in attrs {
                let v = bytes.get(a.at..a.at + a.size)?;
                match a.form {
                    form::ADDRX | form::ADDRX1 | form::ADDRX2 | form::ADDRX3 | form::ADDRX4 => {
                        note(self, index_value(a.form, v)?, &mut found)?
                    }
                    form::ADDR => {
                        // (a root with ranges has a low address of 0, no
                        // relocation)
                        if let Some(r) = self.reloc(unit.section, a.at as u64) {
                            found.insert(self.input.syms.get(r.sym)?.shndx as usize);
                        }
                    }
                    form::EXPRLOC => {
                        let (len, used) = read_uleb(v)?;
                        let e = v.get(used..used + usize::try_from(len).ok()?)?;
                        for i in expression_indices(e)? {
                            note(self, i, &mut found)?;
                        }
                    }
                    form::LOCLISTX => lists.push((false, self.list_at(false, &bases, v)?)),
                    form::RNGLISTX => lists.push((true, self.list_at(true, &bases, v)?)),
                    form::SEC_OFFSET if a.name == DW_AT_STMT_LIST => {
                        stmt = Some(self.pointed(unit.section, a.at as u64)?.1)
                    }
                    form::SEC_OFFSET if matches!(a.name, DW_AT_LOCATION | DW_AT_RANGES) => {
                        let ranges = a.name == DW_AT_RANGES;
                        let (s, o) = self.pointed(unit.section, a.at as u64)?;
                        if Some(s) != self.named(list_section(ranges)) {
                            return None;
                        }
                        lists.push((ranges, o));
                    }
                    _ => {}
                }
            }
        }
        for (ranges, at) in lists {
            let section = self.named(list_section(ranges))?;
            let b = self.bytes_of(section)?;
            let mut p = usize::try_from(at).ok()?;
            loop {
                let entry = *b.get(p)?;
                p += 1;
                let shape = list_entry(ranges, entry)?;
                for _ in 0..shape.indices {
                    let (i, used) = read_uleb(b.get(p..)?)?;
                    p += used;
                    note(self, i, &mut found)?;
                }
                for _ in 0..shape.others {
                    p += read_uleb(b.get(p..)?)?.1;
                }
                if shape.fixed > 0 {
                    let r = self.reloc(section, p as u64)?;
                    found.insert(self.input.syms.get(r.sym)?.shndx as usize);
                    p += shape.fixed;
                }
                if shape.location {
                    let (len, used) = read_uleb(b.get(p..)?)?;
                    let e = b.get(p + used..p + used + usize::try_from(len).ok()?)?;
                    for i in expression_indices(e)? {
                        note(self, i, &mut found)?;
                    }
                    p += used + e.len();
                }
                if entry == 0 {
                    break;
                }
            }
        }
        if let Some(at) = stmt {
            let line = self.named(b".debug_line")?;
            let table = self.lines.get(&usize::try_from(at).ok()?)?;
            let program = table.program.clone();
            let b = self.bytes_of(line)?;
            for (at, _) in program_addresses(b, program, table.opcode_base)? {
                let r = self.reloc(line, at as u64)?;
                found.insert(self.input.syms.get(r.sym)?.shndx as usize);
            }
        }
        Some(found)
    }

    fn read_line_table(&self, at: usize) -> Option<LineTable> {
        let line = self.named(b".debug_line")?;
        let b = self.bytes_of(line)?;
        let (end, version) = unit_extent(b, at)?;
        if version != 5 || *b.get(at + 6)? != 8 || *b.get(at + 7)? != 0 {
            return None;
        }
        let header_length = u32_at(b, at as u64 + 8)? as usize;
        let program_at = (at + 12).checked_add(header_length)?;
        let mut p = at + 12;
        // minimum_instruction_length .. line_range, opcode_base, lengths
        let opcode_base = *b.get(p + 5)?;
        let fixed_len = 6 + usize::from(opcode_base).checked_sub(1)?;
        let fixed = b.get(p..p + fixed_len)?.to_vec();
        p += fixed_len;
        let read_format = |p: &mut usize| -> Option<Vec<(u64, u64)>> {
            let count = *b.get(*p)?;
            *p += 1;
            let mut f = Vec::new();
            for _ in 0..count {
                let (c, used) = read_uleb(b.get(*p..)?)?;
                *p += used;
                let (fm, used) = read_uleb(b.get(*p..)?)?;
                *p += used;
                f.push((c, fm));
            }
            Some(f)
        };
        let line_str = self.named(b".debug_line_str");
        // An entry: (path, directory index, MD5).
        type Read = (Vec<u8>, u64, Option<[u8; 16]>);
        let read_entry = |p: &mut usize, format: &[(u64, u64)]| -> Option<Read> {
            let mut path = None;
            let mut dir = 0;
            let mut md5 = None;
            for &(content, fm) in format {
                let size = form_size(fm, b.get(*p..)?, 8, 5)?;
                let v = b.get(*p..*p + size)?;
                match (content, fm) {
                    (1, form::LINE_STRP) => {
                        let (s, o) = self.pointed(line, *p as u64)?;
                        if Some(s) != line_str {
                            return None;
                        }
                        let strings = self.bytes_of(s)?;
                        path = Some(c_str(strings, u32::try_from(o).ok()?)?.to_vec());
                    }
                    (1, form::STRING) => path = Some(v[..v.len() - 1].to_vec()),
                    (2, form::UDATA | form::DATA1 | form::DATA2) => {
                        dir = match fm {
                            form::UDATA => read_uleb(v)?.0,
                            _ => le_value(v),
                        }
                    }
                    (5, form::DATA16) => md5 = Some(v.try_into().ok()?),
                    _ => return None,
                }
                *p += size;
            }
            Some((path?, dir, md5))
        };
        let dir_format = read_format(&mut p)?;
        let (count, used) = read_uleb(b.get(p..)?)?;
        p += used;
        let mut dirs = Vec::new();
        for _ in 0..count {
            dirs.push(read_entry(&mut p, &dir_format)?.0);
        }
        let file_format = read_format(&mut p)?;
        let (count, used) = read_uleb(b.get(p..)?)?;
        p += used;
        let mut files = Vec::new();
        let mut md5 = Vec::new();
        let with_md5 = file_format.iter().any(|&(c, _)| c == 5);
        for _ in 0..count {
            let (name, dir, sum) = read_entry(&mut p, &file_format)?;
            files.push((dirs.get(usize::try_from(dir).ok()?)?.clone(), name));
            md5.extend(sum);
        }
        if with_md5 && md5.len() != files.len() {
            return None;
        }
        if p != program_at {
            return None;
        }
        Some(LineTable {
            fixed,
            opcode_base,
            files,
            md5: with_md5.then_some(md5),
            dir0: dirs.first()?.clone(),
            dir_format,
            file_format,
            program: program_at..end,
        })
    }

    /// Where compile unit `u`'s tables start: (string offsets, addresses,
    /// location lists, range lists), from its root's base attributes.
    fn bases(&self, u: usize) -> Option<Bases> {
        let unit = &self.units[u];
        let mut bases = Bases::default();
        let Some(Entry::Die { attrs, .. }) = unit.entries.first() else {
            return Some(bases);
        };
        for a in attrs {
            let (slot, name): (&mut Option<u64>, &'static [u8]) = match a.name {
                DW_AT_STR_OFFSETS_BASE => (&mut bases.str_offsets, b".debug_str_offsets"),
                DW_AT_ADDR_BASE => (&mut bases.addr, b".debug_addr"),
                DW_AT_LOCLISTS_BASE => (&mut bases.loclists, b".debug_loclists"),
                DW_AT_RNGLISTS_BASE => (&mut bases.rnglists, b".debug_rnglists"),
                _ => continue,
            };
            if a.form != form::SEC_OFFSET {
                return None;
            }
            let (s, o) = self.pointed(unit.section, a.at as u64)?;
            if Some(s) != self.named(name) {
                return None;
            }
            *slot = Some(o);
        }
        Some(bases)
    }

    /// The offset (in its section) of the list that index value `v` (a
    /// `DW_FORM_loclistx`/`rnglistx`) names.
    fn list_at(&self, ranges: bool, bases: &Bases, v: &[u8]) -> Option<u64> {
        let base = if ranges {
            bases.rnglists
        } else {
            bases.loclists
        }?;
        let b = self.bytes_of(self.named(list_section(ranges))?)?;
        let i = read_uleb(v)?.0;
        let offset = u64::from(u32_at(b, base.checked_add(i.checked_mul(4)?)?)?);
        base.checked_add(offset)
    }

    /// The compile unit of the fragment whose code and data are the
    /// sections `taken`: `Ok(None)` when it has none, a `Decline` when
    /// that cannot be told. A unit may also name the sections `shared`
    /// says all fragments share, taken piece by piece (a static constant
    /// or a literal in a mergeable pool): its addresses there follow the
    /// fragment's own pieces (see `carve`'s `target`).
    pub(super) fn unit_of(
        &self,
        taken: &HashSet<usize>,
        shared: &[bool],
    ) -> Result<Option<usize>, Decline> {
        let mut found = None;
        // The units that share a section with the fragment, in order.
        let mut sharing: Vec<usize> = (taken.iter())
            .filter_map(|s| self.units_of_section.get(s))
            .flatten()
            .copied()
            .collect();
        sharing.sort_unstable();
        sharing.dedup();
        for n in sharing {
            let sections = &self.unit_sections[n];
            let own = |s: &usize| taken.contains(s) || shared.get(*s).copied().unwrap_or(false);
            if !sections.iter().all(own) {
                return Err(no("debug: a compile unit names another fragment's code"));
            }
            if found.replace(n).is_some() {
                return Err(no("debug: two compile units for one fragment"));
            }
        }
        if found.is_none() && self.unowned {
            return Err(no("debug: a compile unit of no known fragment"));
        }
        Ok(found)
    }

    /// The debug sections of compile unit `n` (of `unit_of`) and the type
    /// units it reaches, written anew (see the module comment).
    pub(super) fn carve_unit(&self, n: usize, place: &Place) -> Result<Vec<Section>, Decline> {
        let u = self.compile_units[n];
        let mut w = Writer::new(self);
        let bases = self.bases(u).ok_or(no("debug: a unit's tables"))?;
        let stmt = (self.stmt_list(u).flatten())
            .ok_or(no("debug: a compile unit without a line table"))?;
        let own = usize::try_from(stmt)
            .ok()
            .and_then(|at| self.lines.get(&at))
            .ok_or(no("debug: a line table"))?;
        w.seed_files(own);
        let cu = w
            .unit(self, u, &bases, Some(stmt), Some(place))
            .ok_or(no(w.why))?;
        let program = w.program(self, own).ok_or(no("debug: the line program"))?;
        let mut type_units = Vec::new();
        while let Some(signature) = w.queue.pop_front() {
            let t = match self.ambiguous.get(&signature) {
                // Two types of one identifier that are not one node: a
                // class whose template argument is a type local to a
                // fragment's function (a lambda's), with that fragment's
                // lines. Each was made a unit by the compile unit of the
                // fragment whose node it is, as alone, and names that
                // unit's line table; a fragment with no such unit among
                // them (its node another's) is carved from an object of
                // its own.
                Some(all) => {
                    let mut own = (all.iter().copied())
                        .filter(|&t| self.stmt_list(t).flatten() == Some(stmt));
                    match (own.next(), own.next()) {
                        (Some(t), None) => t,
                        _ => return Err(no("debug: two type units of one signature")),
                    }
                }
                None => *self
                    .type_units
                    .get(&signature)
                    .ok_or(no("debug: a type unit the object lacks"))?,
            };
            let bases = self.bases(t).ok_or(no("debug: a type unit's tables"))?;
            let tu_stmt = self
                .stmt_list(t)
                .ok_or(no("debug: a type unit's line table"))?;
            let (bytes, relocs) = w
                .unit(self, t, &bases, tu_stmt, None)
                .ok_or(no("debug: a type unit's DIEs"))?;
            type_units.push((signature, bytes, relocs));
        }
        w.finish(self, own, cu, program, type_units)
            .ok_or(no("debug: writing the sections"))
    }

    /// The offset in `.debug_line` of unit `u`'s line table, if it names one.
    fn stmt_list(&self, u: usize) -> Option<Option<u64>> {
        let unit = &self.units[u];
        let Some(Entry::Die { attrs, .. }) = unit.entries.first() else {
            return Some(None);
        };
        for a in attrs {
            if a.name == DW_AT_STMT_LIST {
                let (s, o) = self.pointed(unit.section, a.at as u64)?;
                return (Some(s) == self.named(b".debug_line") && a.form == form::SEC_OFFSET)
                    .then_some(Some(o));
            }
        }
        Some(None)
    }
}

#[derive(Default)]
struct Bases {
    str_offsets: Option<u64>,
    addr: Option<u64>,
    loclists: Option<u64>,
    rnglists: Option<u64>,
}

fn list_section(ranges: bool) -> &'static [u8] {
    if ranges {
        b".debug_rnglists"
    } else {
        b".debug_loclists"
    }
}

/// A little-endian number of up to 8 bytes.
fn le_value(v: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = v.len().min(8);
    b[..n].copy_from_slice(&v[..n]);
    u64::from_le_bytes(b)
}

/// The value of an index form (`DW_FORM_strx*`, `addrx*`).
fn index_value(f: u64, v: &[u8]) -> Option<u64> {
    if form::is_uleb(f) {
        Some(read_uleb(v)?.0)
    } else {
        Some(le_value(v))
    }
}

/// The abbreviation table at the start of `b`, by code.
fn read_abbrev_table(b: &[u8]) -> Option<HashMap<u64, AbbrevDecl>> {
    let mut out = HashMap::default();
    let mut p = 0;
    loop {
        let (code, used) = read_uleb(b.get(p..)?)?;
        p += used;
        if code == 0 {
            return Some(out);
        }
        let (tag, used) = read_uleb(b.get(p..)?)?;
        p += used;
        let children = *b.get(p)? == 1;
        p += 1;
        let mut attrs = Vec::new();
        loop {
            let (name, used) = read_uleb(b.get(p..)?)?;
            p += used;
            let (f, used) = read_uleb(b.get(p..)?)?;
            p += used;
            if name == 0 && f == 0 {
                break;
            }
            let mut implicit = 0;
            if f == form::IMPLICIT_CONST {
                let (v, used) = read_sleb(b.get(p..)?)?;
                p += used;
                implicit = v;
            }
            attrs.push((name, f, implicit));
        }
        if out.insert(code, (tag, children, attrs)).is_some() {
            return None;
        }
    }
}

/// A compile unit root's range list, if every range is in one run of
/// sections (see `Place`) and the root's low address is a plain 0: the
/// run's first section, the lowest and highest offsets in the run, and the
/// relocation type of an address.
fn root_span(
    ix: &DebugIndex,
    unit: &Unit,
    bases: &Bases,
    attrs: &[RawAttr],
    place: &Place,
) -> Option<(usize, u64, u64, u32)> {
    let bytes = ix.bytes_of(unit.section)?;
    let low_is_zero = attrs.iter().any(|a| {
        a.name == DW_AT_LOW_PC
            && a.form == form::ADDR
            && ix.reloc(unit.section, a.at as u64).is_none()
            && bytes
                .get(a.at..a.at + a.size)
                .is_some_and(|v| le_value(v) == 0)
    });
    let ranges = attrs.iter().find(|a| a.name == DW_AT_RANGES)?;
    if !low_is_zero {
        return None;
    }
    let at = match ranges.form {
        form::RNGLISTX => {
            ix.list_at(true, bases, bytes.get(ranges.at..ranges.at + ranges.size)?)?
        }
        form::SEC_OFFSET => ix.pointed(unit.section, ranges.at as u64)?.1,
        _ => return None,
    };
    let list = ix.named(b".debug_rnglists")?;
    let b = ix.bytes_of(list)?;
    let addr = ix.named(b".debug_addr")?;
    // An address entry: (section, offset in it, relocation type).
    let entry = |i: u64| -> Option<(usize, u64, u32)> {
        let r = ix.reloc(addr, bases.addr?.checked_add(i.checked_mul(8)?)?)?;
        let sym = ix.input.syms.get(r.sym)?;
        let off = u64::try_from(r.addend.checked_add(sym.value as i64)?).ok()?;
        Some((sym.shndx as usize, off, r.r_type))
    };
    let mut p = usize::try_from(at).ok()?;
    let uleb = |p: &mut usize| -> Option<u64> {
        let (v, used) = read_uleb(b.get(*p..)?)?;
        *p += used;
        Some(v)
    };
    let mut base = None;
    let mut run: Option<(usize, u64, u64, u32)> = None;
    loop {
        let kind = *b.get(p)?;
        p += 1;
        let (section, start, end, r_type) = match kind {
            0 => break,
            1 => {
                base = Some(entry(uleb(&mut p)?)?);
                continue;
            }
            3 => {
                let (s, off, r) = entry(uleb(&mut p)?)?;
                let len = uleb(&mut p)?;
                (s, off, off.checked_add(len)?, r)
            }
            4 => {
                let (s, off, r) = base?;
                let (a, e) = (uleb(&mut p)?, uleb(&mut p)?);
                (s, off.checked_add(a)?, off.checked_add(e)?, r)
            }
            _ => return None,
        };
        let (first, at) = place(section)?;
        let (lo, hi) = (at.checked_add(start)?, at.checked_add(end)?);
        run = match run {
            None => Some((first, lo, hi, r_type)),
            Some((f, l, h, r)) if f == first => Some((f, l.min(lo), h.max(hi), r)),
            Some(_) => return None,
        };
    }
    run
}

/// The address indices (`DW_OP_addrx`, `DW_OP_constx`) expression `e`
/// names.
fn expression_indices(e: &[u8]) -> Option<Vec<u64>> {
    let mut found = Vec::new();
    rewrite_expression(e, &mut |op, v| {
        if op == Operand::Index {
            found.push(v);
        }
        Some(v)
    })?;
    Some(found)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operand {
    /// An address index.
    Index,
    /// A base type: a DIE's offset in the unit.
    Type,
}

/// Expression `e` written again with its address indices and base types
/// replaced by `map` (an index as the shortest ULEB128, a base type
/// padded to its length as compiled); `None` for an operation not listed
/// (`dwarf::operation`) or an address (it needs its relocation).
fn rewrite_expression(
    e: &[u8],
    map: &mut dyn FnMut(Operand, u64) -> Option<u64>,
) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(e.len());
    let mut p = 0;
    while p < e.len() {
        let op = e[p];
        out.push(op);
        p += 1;
        match super::dwarf::operation(e, p, op)? {
            Operation::Bytes(n) => {
                out.extend_from_slice(e.get(p..p.checked_add(n)?)?);
                p += n;
            }
            Operation::Address => return None,
            Operation::Index => {
                let (v, used) = read_uleb(e.get(p..)?)?;
                write_uleb(&mut out, map(Operand::Index, v)?);
                p += used;
            }
            Operation::Nested => {
                let (len, used) = read_uleb(e.get(p..)?)?;
                let len = usize::try_from(len).ok()?;
                let inner = e.get(p + used..(p + used).checked_add(len)?)?;
                let inner = rewrite_expression(inner, map)?;
                write_uleb(&mut out, inner.len() as u64);
                out.extend_from_slice(&inner);
                p += used + len;
            }
            Operation::Typed { before, sized } => {
                out.extend_from_slice(e.get(p..p.checked_add(before)?)?);
                p += before;
                let (v, used) = read_uleb(e.get(p..)?)?;
                let nv = map(Operand::Type, v)?;
                if !super::dwarf::fits(nv, used, true) {
                    return None;
                }
                out.extend_from_slice(&uleb_padded(nv, used));
                p += used;
                if sized {
                    let n = *e.get(p)? as usize;
                    out.extend_from_slice(e.get(p..p.checked_add(1 + n)?)?);
                    p += 1 + n;
                }
            }
        }
    }
    Some(out)
}

/// The `DW_LNE_set_address` operands of the line program in `range` of
/// `b`: (offset, size).
fn program_addresses(
    b: &[u8],
    range: std::ops::Range<usize>,
    opcode_base: u8,
) -> Option<Vec<(usize, usize)>> {
    let mut found = Vec::new();
    walk_program(b, range, opcode_base, &mut |op| {
        if let ProgramOp::SetAddress(at, size) = op {
            found.push((at, size));
        }
    })?;
    Some(found)
}

/// One operation of a line program, as `walk_program` meets it.
enum ProgramOp {
    /// Copied as it is: (start, end).
    Bytes(usize, usize),
    /// A row is emitted (a special opcode, `DW_LNS_copy`,
    /// `DW_LNE_end_sequence`), then the bytes (start, end).
    Row(usize, usize, bool),
    /// `DW_LNS_set_file` with its file.
    SetFile(u64),
    /// `DW_LNE_set_address`: where its operand is and its size.
    SetAddress(usize, usize),
}

fn walk_program(
    b: &[u8],
    range: std::ops::Range<usize>,
    opcode_base: u8,
    visit: &mut dyn FnMut(ProgramOp),
) -> Option<()> {
    let mut p = range.start;
    let end = range.end;
    let leb = |p: usize| read_uleb(b.get(p..end)?).map(|(_, n)| n);
    while p < end {
        let op = *b.get(p)?;
        let start = p;
        p += 1;
        match op {
            0 => {
                let (len, used) = read_uleb(b.get(p..end)?)?;
                p += used;
                let body = p;
                let len = usize::try_from(len).ok()?;
                let sub = *b.get(body)?;
                p = body.checked_add(len).filter(|&e| e <= end)?;
                match sub {
                    1 => visit(ProgramOp::Row(start, p, true)),
                    2 => {
                        visit(ProgramOp::Bytes(start, body + 1));
                        visit(ProgramOp::SetAddress(body + 1, len - 1));
                    }
                    4 => visit(ProgramOp::Bytes(start, p)),
                    _ => return None,
                }
            }
            1 => visit(ProgramOp::Row(start, p, false)),
            4 => {
                let (f, used) = read_uleb(b.get(p..end)?)?;
                p += used;
                visit(ProgramOp::SetFile(f));
            }
            2 | 3 | 5 | 12 => {
                // advance_pc, advance_line (signed, its bytes kept), column, isa
                p += leb(p)?;
                visit(ProgramOp::Bytes(start, p));
            }
            9 => {
                p += 2;
                visit(ProgramOp::Bytes(start, p));
            }
            6 | 7 | 8 | 10 | 11 => visit(ProgramOp::Bytes(start, p)),
            o if o >= opcode_base => visit(ProgramOp::Row(start, p, false)),
            _ => return None,
        }
    }
    (p == end).then_some(())
}

/// Bytes written for the fragment (a list, a line program) with the
/// input relocations they carry, at offsets in them.
type Piece = (Vec<u8>, Vec<(u64, Rela)>);

/// A file as the walk names it: (directory, name, whether it was file 0
/// of its table).
type FileKey = (Vec<u8>, Vec<u8>, bool);

/// The fragment's debug sections under construction.
struct Writer {
    abbrevs: Vec<u8>,
    abbrev_of: HashMap<AbbrevDecl, u64>,
    str_data: Vec<u8>,
    str_at: HashMap<Vec<u8>, u64>,
    /// String offsets table: offsets into `str_data`.
    strx: Vec<u64>,
    strx_of: HashMap<u64, u64>,
    line_str: Vec<u8>,
    line_str_at: HashMap<Vec<u8>, u64>,
    /// The address table: input relocations, by input index.
    addrs: Vec<(Target, u32)>,
    addr_of: HashMap<(u64, u64), u64>,
    /// The lists, each as (bytes, relocations at offsets in them).
    loclists: Vec<Piece>,
    loclist_of: HashMap<u64, u64>,
    rnglists: Vec<Piece>,
    rnglist_of: HashMap<u64, u64>,
    files: Vec<FileKey>,
    file_of: HashMap<FileKey, u64>,
    queue: VecDeque<u64>,
    queued: HashSet<u64>,
    /// Base types that location lists name: (list, offset in it, size,
    /// the DIE's offset in the input's section).
    list_types: Vec<(usize, usize, usize, usize)>,
    /// The compile unit's DIEs: input offset → output offset.
    cu_moved: HashMap<usize, usize>,
    offset_reloc: u32,
    /// Why writing failed, where it says.
    why: &'static str,
}

/// What writing one unit's DIEs reads.
struct UnitInput<'i, 'a> {
    ix: &'i DebugIndex<'a>,
    unit: &'i Unit,
    bytes: &'a [u8],
    bases: &'i Bases,
    /// The line table its file attributes index.
    table: Option<&'i LineTable>,
    /// The root's code as one span (see `root_span`).
    span: Option<(usize, u64, u64, u32)>,
    uses: TablesUsed,
}

/// Which tables a unit's attributes index: they decide its root's base
/// attributes.
#[derive(Clone, Copy, Default)]
struct TablesUsed {
    addr: bool,
    loclists: bool,
    rnglists: bool,
}

/// The tables `unit` (in `bytes`) uses; with `span`, its root's range
/// list is not one (it becomes a high address).
fn tables_used(unit: &Unit, bytes: &[u8], span: bool) -> Option<TablesUsed> {
    let mut uses = TablesUsed::default();
    for (n, e) in unit.entries.iter().enumerate() {
        let Entry::Die { attrs, .. } = e else {
            continue;
        };
        for a in attrs {
            if n == 0 && span && a.name == DW_AT_RANGES {
                continue;
            }
            match a.form {
                form::ADDRX | form::ADDRX1 | form::ADDRX2 | form::ADDRX3 | form::ADDRX4 => {
                    uses.addr = true
                }
                form::LOCLISTX => uses.loclists = true,
                form::RNGLISTX => uses.rnglists = true,
                form::SEC_OFFSET if a.name == DW_AT_LOCATION => uses.loclists = true,
                form::SEC_OFFSET if a.name == DW_AT_RANGES => uses.rnglists = true,
                form::EXPRLOC => {
                    let v = bytes.get(a.at..a.at + a.size)?;
                    let (len, used) = read_uleb(v)?;
                    let e = v.get(used..used + usize::try_from(len).ok()?)?;
                    uses.addr |= !expression_indices(e)?.is_empty();
                }
                _ => {}
            }
        }
    }
    uses.addr |= uses.loclists || uses.rnglists;
    Some(uses)
}

/// A reference to a DIE of the same unit, patched once every DIE is
/// placed: where (in the unit, or in a DIE's values while it is written),
/// its size, whether ULEB128, and the input offset of the DIE.
struct Patch {
    at: usize,
    size: usize,
    uleb: bool,
    target: usize,
}

/// One DIE's attribute values as written, with the relocations and
/// references at offsets in them.
#[derive(Default)]
struct DieValues {
    bytes: Vec<u8>,
    relocs: Vec<Reloc>,
    patches: Vec<Patch>,
}

impl DieValues {
    /// Index `n` in the smallest of `forms` (1, 2, 3, 4 bytes); its form.
    fn index(&mut self, n: u64, forms: [u64; 4]) -> u64 {
        let (f, size) = smallest(n, forms);
        self.bytes.extend_from_slice(&n.to_le_bytes()[..size]);
        f
    }

    /// A 4-byte offset into the fragment's own `part`.
    fn offset(&mut self, part: Part, addend: i64, r_type: u32) {
        let at = self.bytes.len() as u64;
        self.relocs.push(own_reloc(part, at, addend, r_type));
        self.bytes.extend_from_slice(&[0, 0, 0, 0]);
    }

    /// A reference of `size` bytes at the current end to the input DIE at
    /// `target`.
    fn patch(&mut self, size: usize, uleb: bool, target: usize) {
        self.patches.push(Patch {
            at: self.bytes.len(),
            size,
            uleb,
            target,
        });
    }
}

/// A relocation at `offset` to `addend` in the fragment's own `part`.
fn own_reloc(part: Part, offset: u64, addend: i64, r_type: u32) -> Reloc {
    Reloc {
        offset,
        r_type,
        target: Target::Own { part, addend },
    }
}

impl Writer {
    fn new(ix: &DebugIndex) -> Self {
        Writer {
            abbrevs: Vec::new(),
            abbrev_of: HashMap::default(),
            str_data: Vec::new(),
            str_at: HashMap::default(),
            strx: Vec::new(),
            strx_of: HashMap::default(),
            line_str: Vec::new(),
            line_str_at: HashMap::default(),
            addrs: Vec::new(),
            addr_of: HashMap::default(),
            loclists: Vec::new(),
            loclist_of: HashMap::default(),
            rnglists: Vec::new(),
            rnglist_of: HashMap::default(),
            files: Vec::new(),
            file_of: HashMap::default(),
            queue: VecDeque::new(),
            queued: HashSet::default(),
            list_types: Vec::new(),
            cu_moved: HashMap::default(),
            why: "debug: the compile unit's DIEs",
            offset_reloc: ix.offset_reloc,
        }
    }

    /// File 0 of the fragment's table is its own table's file 0.
    fn seed_files(&mut self, own: &LineTable) {
        if let Some((dir, name)) = own.files.first() {
            let key = (dir.clone(), name.clone(), true);
            self.file_of.insert(key.clone(), 0);
            self.files.push(key);
        }
    }

    fn file(&mut self, table: &LineTable, input: u64) -> Option<u64> {
        let (dir, name) = table.files.get(usize::try_from(input).ok()?)?;
        let key = (dir.clone(), name.clone(), input == 0);
        if let Some(&n) = self.file_of.get(&key) {
            return Some(n);
        }
        let n = self.files.len() as u64;
        self.files.push(key.clone());
        self.file_of.insert(key, n);
        Some(n)
    }

    fn string(&mut self, s: &[u8]) -> u64 {
        if let Some(&at) = self.str_at.get(s) {
            return at;
        }
        let at = self.str_data.len() as u64;
        self.str_data.extend_from_slice(s);
        self.str_data.push(0);
        self.str_at.insert(s.to_vec(), at);
        at
    }

    fn line_string(&mut self, s: &[u8]) -> u64 {
        if let Some(&at) = self.line_str_at.get(s) {
            return at;
        }
        let at = self.line_str.len() as u64;
        self.line_str.extend_from_slice(s);
        self.line_str.push(0);
        self.line_str_at.insert(s.to_vec(), at);
        at
    }

    fn string_index(&mut self, s: &[u8]) -> u64 {
        let at = self.string(s);
        if let Some(&i) = self.strx_of.get(&at) {
            return i;
        }
        let i = self.strx.len() as u64;
        self.strx.push(at);
        self.strx_of.insert(at, i);
        i
    }

    /// The new index of the address at `index` of the input table whose
    /// entries start at `base`.
    fn address(&mut self, ix: &DebugIndex, base: u64, index: u64) -> Option<u64> {
        let key = (base, index);
        if let Some(&i) = self.addr_of.get(&key) {
            return Some(i);
        }
        let addr = ix.named(b".debug_addr")?;
        let r = *ix.reloc(addr, base.checked_add(index.checked_mul(8)?)?)?;
        let i = self.addrs.len() as u64;
        let target = Target::Input {
            sym: r.sym,
            addend: r.addend,
        };
        self.addrs.push((target, r.r_type));
        self.addr_of.insert(key, i);
        Some(i)
    }

    fn abbrev(&mut self, tag: u64, children: bool, attrs: Vec<(u64, u64, i64)>) -> u64 {
        let key = (tag, children, attrs);
        if let Some(&c) = self.abbrev_of.get(&key) {
            return c;
        }
        let code = self.abbrev_of.len() as u64 + 1;
        write_uleb(&mut self.abbrevs, code);
        write_uleb(&mut self.abbrevs, key.0);
        self.abbrevs.push(u8::from(children));
        for &(name, f, implicit) in &key.2 {
            write_uleb(&mut self.abbrevs, name);
            write_uleb(&mut self.abbrevs, f);
            if f == form::IMPLICIT_CONST {
                super::leb128::write_sleb(&mut self.abbrevs, implicit);
            }
        }
        self.abbrevs.extend_from_slice(&[0, 0]);
        self.abbrev_of.insert(key, code);
        code
    }

    /// A list of the input (at `at` of its section) written again: its
    /// new index.
    fn list(
        &mut self,
        ix: &DebugIndex,
        ranges: bool,
        at: u64,
        addr_base: u64,
        unit_at: usize,
    ) -> Option<u64> {
        let of = if ranges {
            &self.rnglist_of
        } else {
            &self.loclist_of
        };
        if let Some(&i) = of.get(&at) {
            return Some(i);
        }
        let section = ix.named(list_section(ranges))?;
        let b = ix.bytes_of(section)?;
        let mut out = Vec::new();
        let mut relocs = Vec::new();
        let mut p = usize::try_from(at).ok()?;
        loop {
            let entry = *b.get(p)?;
            out.push(entry);
            p += 1;
            let shape = list_entry(ranges, entry)?;
            for _ in 0..shape.indices {
                let (i, used) = read_uleb(b.get(p..)?)?;
                p += used;
                let n = self.address(ix, addr_base, i)?;
                write_uleb(&mut out, n);
            }
            for _ in 0..shape.others {
                let used = read_uleb(b.get(p..)?)?.1;
                out.extend_from_slice(b.get(p..p + used)?);
                p += used;
            }
            if shape.fixed > 0 {
                // An address (and a length): the first eight bytes relocated.
                let r = *ix.reloc(section, p as u64)?;
                relocs.push((out.len() as u64, r));
                out.extend_from_slice(b.get(p..p + shape.fixed)?);
                p += shape.fixed;
            }
            if shape.location {
                let (len, used) = read_uleb(b.get(p..)?)?;
                let e = b.get(p + used..p + used + usize::try_from(len).ok()?)?;
                let rewritten = rewrite_expression(e, &mut |op, v| match op {
                    Operand::Index => self.address(ix, addr_base, v),
                    Operand::Type => Some(v),
                })?;
                write_uleb(&mut out, rewritten.len() as u64);
                // Base types name DIEs of the compile unit, whose new
                // offsets are known once it is written.
                let list = if ranges {
                    usize::MAX
                } else {
                    self.loclists.len()
                };
                let found = super::dwarf::expression_operands(&rewritten, out.len())?;
                for o in found.types {
                    let target = unit_at.checked_add(usize::try_from(o.value).ok()?)?;
                    self.list_types.push((list, o.at, o.size, target));
                }
                out.extend_from_slice(&rewritten);
                p += used + e.len();
            }
            if entry == 0 {
                break;
            }
        }
        let (lists, of) = if ranges {
            (&mut self.rnglists, &mut self.rnglist_of)
        } else {
            (&mut self.loclists, &mut self.loclist_of)
        };
        let i = lists.len() as u64;
        lists.push((out, relocs));
        of.insert(at, i);
        Some(i)
    }

    /// Writes unit `u` (its header, DIEs and their relocations): the bytes.
    fn unit(
        &mut self,
        ix: &DebugIndex,
        u: usize,
        bases: &Bases,
        stmt: Option<u64>,
        place: Option<&Place>,
    ) -> Option<(Vec<u8>, Vec<Reloc>)> {
        let unit = &ix.units[u];
        let bytes = ix.bytes_of(unit.section)?;
        let table = match stmt {
            Some(at) => Some(ix.lines.get(&usize::try_from(at).ok()?)?),
            None => None,
        };
        // A root whose ranges all land in one run of sections once
        // composed (functions in sections of their own here, in one
        // section as the user compiles them): a low and high address, as
        // LLVM gives a compile unit whose code is one range.
        let span = match (place, unit.entries.first()) {
            (Some(place), Some(Entry::Die { attrs, .. })) => {
                root_span(ix, unit, bases, attrs, place)
            }
            _ => None,
        };
        let cx = UnitInput {
            ix,
            unit,
            bytes,
            bases,
            table,
            span,
            uses: tables_used(unit, bytes, span.is_some())?,
        };
        let mut out = vec![0, 0, 0, 0, 5, 0, unit.kind, unit.address_size];
        let mut relocs = vec![own_reloc(Part::Abbrev, 8, 0, self.offset_reloc)];
        out.extend_from_slice(&[0, 0, 0, 0]);
        if unit.kind == 2 {
            out.extend_from_slice(&unit.signature.to_le_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]); // the type's offset, below
        }
        // Input DIE offset → output offset, and the references to patch.
        let mut moved: HashMap<usize, usize> = HashMap::default();
        let mut patches: Vec<Patch> = Vec::new();
        let mut consumed = 0usize;
        for e in &unit.entries {
            let Entry::Die {
                at,
                tag,
                children,
                attrs,
            } = e
            else {
                out.push(0);
                continue;
            };
            moved.insert(*at, out.len());
            let root = *at == unit.entries_start;
            let mut decl = Vec::with_capacity(attrs.len());
            let mut values = DieValues::default();
            for a in attrs {
                if ix.reloc(unit.section, a.at as u64).is_some() {
                    consumed += 1;
                }
                if let Some((name, form)) = self.attribute(&cx, a, root, &mut values)? {
                    decl.push((name, form, a.implicit));
                }
            }
            let code = self.abbrev(*tag, *children, decl);
            write_uleb(&mut out, code);
            let base = out.len();
            relocs.extend(values.relocs.into_iter().map(|mut r| {
                r.offset += base as u64;
                r
            }));
            patches.extend(values.patches.into_iter().map(|mut p| {
                p.at += base;
                p
            }));
            out.extend_from_slice(&values.bytes);
        }
        // Every relocation of the unit was met.
        let offsets = ix.reloc_offsets.get(&unit.section)?;
        let in_unit = offsets.partition_point(|&o| o < unit.end as u64)
            - offsets.partition_point(|&o| o < unit.at as u64);
        // The header's abbreviation offset is the one not met in a DIE.
        if in_unit != consumed + 1 {
            self.why = "debug: a relocation in a DIE not understood";
            return None;
        }
        for p in patches {
            let new = *moved.get(&p.target)? as u64;
            super::dwarf::write_field(out.get_mut(p.at..p.at + p.size)?, p.uleb, new)?;
        }
        if unit.kind == 2 {
            let t = unit
                .at
                .checked_add(usize::try_from(unit.type_offset).ok()?)?;
            let new = u32::try_from(*moved.get(&t)?).ok()?;
            out[20..24].copy_from_slice(&new.to_le_bytes());
        }
        let length = u32::try_from(out.len() - 4).ok()?;
        out[0..4].copy_from_slice(&length.to_le_bytes());
        if unit.kind == 1 {
            self.cu_moved = moved;
        }
        Some((out, relocs))
    }

    /// Attribute `a` of a DIE written into `values`: its name and form as
    /// written, or `Some(None)` for one left out (the base of a table the
    /// fragment has not). `None`: the unit cannot be carved (`why` says).
    fn attribute(
        &mut self,
        cx: &UnitInput,
        a: &RawAttr,
        root: bool,
        values: &mut DieValues,
    ) -> Option<Option<(u64, u64)>> {
        let v = cx.bytes.get(a.at..a.at + a.size)?;
        self.why = "debug: the compile unit's DIEs";
        if let Some(span) = cx.span.filter(|_| root) {
            if let Some(written) = self.root_span_attribute(a, span, values) {
                return Some(Some(written));
            }
        }
        let form = match a.form {
            form::STRX
            | form::STRX1
            | form::STRX2
            | form::STRX3
            | form::STRX4
            | form::STRP
            | form::LINE_STRP => self.string_attribute(cx, a, v, values)?,
            form::ADDRX | form::ADDRX1 | form::ADDRX2 | form::ADDRX3 | form::ADDRX4 => {
                let n = self.address(cx.ix, cx.bases.addr?, index_value(a.form, v)?)?;
                if a.form == form::ADDRX {
                    write_uleb(&mut values.bytes, n);
                    form::ADDRX
                } else {
                    values.index(n, [form::ADDRX1, form::ADDRX2, form::ADDRX3, form::ADDRX4])
                }
            }
            form::ADDR => {
                match cx.ix.reloc(cx.unit.section, a.at as u64) {
                    Some(r) => {
                        values.relocs.push(Reloc {
                            offset: values.bytes.len() as u64,
                            r_type: r.r_type,
                            target: Target::Input {
                                sym: r.sym,
                                addend: r.addend,
                            },
                        });
                        values.bytes.extend_from_slice(&vec![0; a.size]);
                    }
                    // A root with ranges: a low address of 0.
                    None => values.bytes.extend_from_slice(v),
                }
                form::ADDR
            }
            form::REF1 | form::REF2 | form::REF4 | form::REF8 => {
                let target = cx.unit.at.checked_add(usize::try_from(le_value(v)).ok()?)?;
                values.patch(a.size, false, target);
                values.bytes.extend_from_slice(&vec![0; a.size]);
                a.form
            }
            form::REF_SIG8 => {
                let signature = le_value(v);
                if self.queued.insert(signature) {
                    self.queue.push_back(signature);
                }
                values.bytes.extend_from_slice(v);
                form::REF_SIG8
            }
            form::LOCLISTX | form::RNGLISTX => {
                self.why = "debug: a location or range list";
                let ranges = a.form == form::RNGLISTX;
                let at = cx.ix.list_at(ranges, cx.bases, v)?;
                let n = self.list(cx.ix, ranges, at, cx.bases.addr?, cx.unit.at)?;
                write_uleb(&mut values.bytes, n);
                a.form
            }
            form::SEC_OFFSET => {
                self.why = "debug: a section offset";
                let Some((part, addend)) = self.offset_attribute(cx, a)? else {
                    return Some(None);
                };
                values.offset(part, addend, self.offset_reloc);
                form::SEC_OFFSET
            }
            form::EXPRLOC => self.expression_attribute(cx, v, values)?,
            form::DATA1 | form::DATA2 | form::DATA4 | form::DATA8 | form::UDATA
                if matches!(a.name, DW_AT_DECL_FILE | DW_AT_CALL_FILE) =>
            {
                self.why = "debug: a file index";
                let n = self.file(cx.table?, index_value(a.form, v)?)?;
                if a.form == form::UDATA {
                    write_uleb(&mut values.bytes, n);
                    form::UDATA
                } else {
                    values.index(n, [form::DATA1, form::DATA2, 0, form::DATA4])
                }
            }
            form::DATA1
            | form::DATA2
            | form::DATA4
            | form::DATA8
            | form::DATA16
            | form::SDATA
            | form::UDATA
            | form::FLAG
            | form::FLAG_PRESENT
            | form::IMPLICIT_CONST
            | form::STRING
            | form::BLOCK
            | form::BLOCK1
            | form::BLOCK2
            | form::BLOCK4 => {
                if cx.ix.reloc(cx.unit.section, a.at as u64).is_some() {
                    return None;
                }
                values.bytes.extend_from_slice(v);
                a.form
            }
            form::REF_ADDR => {
                self.why = "debug: a reference to another compile unit";
                return None;
            }
            _ => {
                self.why = "debug: an attribute form not handled";
                return None;
            }
        };
        Some(Some((a.name, form)))
    }

    /// A string attribute (an index into the string offsets table, or an
    /// offset into the strings or line strings) written as the fragment's
    /// own; its form.
    fn string_attribute(
        &mut self,
        cx: &UnitInput,
        a: &RawAttr,
        v: &[u8],
        values: &mut DieValues,
    ) -> Option<u64> {
        if a.form == form::STRP || a.form == form::LINE_STRP {
            let (section, part) = match a.form {
                form::STRP => (&b".debug_str"[..], Part::Str),
                _ => (&b".debug_line_str"[..], Part::LineStr),
            };
            let (s, o) = cx.ix.pointed(cx.unit.section, a.at as u64)?;
            if Some(s) != cx.ix.named(section) {
                return None;
            }
            let string = c_str(cx.ix.bytes_of(s)?, u32::try_from(o).ok()?)?;
            let at = match part {
                Part::Str => self.string(string),
                _ => self.line_string(string),
            };
            values.offset(part, at as i64, self.offset_reloc);
            return Some(a.form);
        }
        self.why = "debug: a string index";
        let i = index_value(a.form, v)?;
        let so = cx.ix.named(b".debug_str_offsets")?;
        let at = cx.bases.str_offsets?.checked_add(i.checked_mul(4)?)?;
        let (s, o) = cx.ix.pointed(so, at)?;
        if Some(s) != cx.ix.named(b".debug_str") {
            return None;
        }
        let string = c_str(cx.ix.bytes_of(s)?, u32::try_from(o).ok()?)?;
        let n = self.string_index(string);
        Some(values.index(n, [form::STRX1, form::STRX2, form::STRX3, form::STRX4]))
    }

    /// A DWARF expression (`v`, with its length) with its address indices
    /// renumbered and its base types to patch once the unit is laid out.
    fn expression_attribute(
        &mut self,
        cx: &UnitInput,
        v: &[u8],
        values: &mut DieValues,
    ) -> Option<u64> {
        self.why = "debug: a DWARF expression";
        let (len, used) = read_uleb(v)?;
        let e = v.get(used..used + usize::try_from(len).ok()?)?;
        let rewritten = rewrite_expression(e, &mut |op, x| match op {
            Operand::Index => self.address(cx.ix, cx.bases.addr?, x),
            Operand::Type => Some(x),
        })?;
        write_uleb(&mut values.bytes, rewritten.len() as u64);
        let body = values.bytes.len();
        // Base types: DIEs of this unit, patched below.
        let found = super::dwarf::expression_operands(&rewritten, body)?;
        for o in found.types {
            let target = cx.unit.at.checked_add(usize::try_from(o.value).ok()?)?;
            values.patches.push(Patch {
                at: o.at,
                size: o.size,
                uleb: true,
                target,
            });
        }
        values.bytes.extend_from_slice(&rewritten);
        Some(form::EXPRLOC)
    }

    /// The root's low address and range list as a low and high address
    /// over `span` (section, low, high, relocation type); `None` for the
    /// root's other attributes.
    fn root_span_attribute(
        &mut self,
        a: &RawAttr,
        (section, low, high, r_type): (usize, u64, u64, u32),
        values: &mut DieValues,
    ) -> Option<(u64, u64)> {
        match a.name {
            DW_AT_LOW_PC => {
                let i = self.addrs.len() as u64;
                let target = Target::InputSection {
                    section,
                    addend: i64::try_from(low).ok()?,
                };
                self.addrs.push((target, r_type));
                write_uleb(&mut values.bytes, i);
                Some((a.name, form::ADDRX))
            }
            DW_AT_RANGES => {
                let len = u32::try_from(high - low).ok()?;
                values.bytes.extend_from_slice(&len.to_le_bytes());
                Some((DW_AT_HIGH_PC, form::DATA4))
            }
            _ => None,
        }
    }

    /// A section offset attribute's table and addend (see `Part`):
    /// `Some(None)` for the base of a table the fragment has not.
    fn offset_attribute(&mut self, cx: &UnitInput, a: &RawAttr) -> Option<Option<(Part, i64)>> {
        let uses = cx.uses;
        Some(Some(match a.name {
            DW_AT_STMT_LIST => (Part::Line, 0),
            DW_AT_STR_OFFSETS_BASE => (Part::StrOffsets, 8),
            DW_AT_ADDR_BASE if uses.addr => (Part::Addr, 8),
            DW_AT_LOCLISTS_BASE if uses.loclists => (Part::Loclists, 12),
            DW_AT_RNGLISTS_BASE if uses.rnglists => (Part::Rnglists, 12),
            DW_AT_ADDR_BASE | DW_AT_LOCLISTS_BASE | DW_AT_RNGLISTS_BASE => return Some(None),
            DW_AT_LOCATION | DW_AT_RANGES => {
                let ranges = a.name == DW_AT_RANGES;
                let (s, o) = cx.ix.pointed(cx.unit.section, a.at as u64)?;
                if Some(s) != cx.ix.named(list_section(ranges)) {
                    return None;
                }
                let n = self.list(cx.ix, ranges, o, cx.bases.addr?, cx.unit.at)?;
                // Its offset is known once all lists are: relative to the
                // index's slot, fixed below.
                let part = if ranges {
                    Part::Rnglists
                } else {
                    Part::Loclists
                };
                (part, -1 - n as i64)
            }
            _ => return None,
        }))
    }

    /// The compile unit's line program with its files renumbered.
    fn program(&mut self, ix: &DebugIndex, own: &LineTable) -> Option<Piece> {
        let line = ix.named(b".debug_line")?;
        let b = ix.bytes_of(line)?;
        let mut out = Vec::new();
        let mut relocs = Vec::new();
        let mut pending = true; // file 1 is the file until a set_file
        let mut failed = false;
        let mut ops = Vec::new();
        walk_program(b, own.program.clone(), own.opcode_base, &mut |op| {
            ops.push(op)
        })?;
        for op in ops {
            match op {
                ProgramOp::Bytes(s, e) => out.extend_from_slice(b.get(s..e)?),
                ProgramOp::Row(s, e, end) => {
                    if pending {
                        let n = self.file(own, 1)?;
                        if n != 1 {
                            out.push(4);
                            write_uleb(&mut out, n);
                        }
                        pending = false;
                    }
                    out.extend_from_slice(b.get(s..e)?);
                    if end {
                        pending = true;
                    }
                }
                ProgramOp::SetFile(f) => {
                    let n = self.file(own, f)?;
                    out.push(4);
                    write_uleb(&mut out, n);
                    pending = false;
                }
                ProgramOp::SetAddress(at, size) => {
                    if size != 8 {
                        failed = true;
                        break;
                    }
                    let r = *ix.reloc(line, at as u64)?;
                    relocs.push((out.len() as u64, r));
                    out.extend_from_slice(b.get(at..at + size)?);
                }
            }
        }
        (!failed).then_some((out, relocs))
    }

    /// The sections, laid out.
    fn finish(
        mut self,
        ix: &DebugIndex,
        own: &LineTable,
        cu: (Vec<u8>, Vec<Reloc>),
        program: Piece,
        type_units: Vec<(u64, Vec<u8>, Vec<Reloc>)>,
    ) -> Option<Vec<Section>> {
        // Base types named in location lists, now that the unit is laid out.
        for &(list, at, size, target) in &self.list_types {
            let new = *self.cu_moved.get(&target)? as u64;
            let (bytes, _) = self.loclists.get_mut(list)?;
            super::dwarf::write_field(bytes.get_mut(at..at + size)?, true, new)?;
        }
        let (loc_bytes, loc_relocs, loc_offsets) = lay_out_lists(&self.loclists)?;
        let (rng_bytes, rng_relocs, rng_offsets) = lay_out_lists(&self.rnglists)?;
        let (line, line_relocs) = self.line_table(ix, own, program)?;
        let section = |part, bytes, relocs| Section {
            part,
            bytes,
            relocs,
            signature: None,
        };
        let mut abbrevs = std::mem::take(&mut self.abbrevs);
        abbrevs.push(0);
        let (cu_bytes, cu_relocs) = cu;
        let mut out = vec![
            section(Part::Abbrev, abbrevs, Vec::new()),
            section(Part::Info, cu_bytes, cu_relocs),
        ];
        for (k, (signature, bytes, relocs)) in type_units.into_iter().enumerate() {
            out.push(Section {
                part: Part::TypeUnit(k),
                bytes,
                relocs,
                signature: Some(signature),
            });
        }
        if !self.strx.is_empty() {
            let (bytes, relocs) = self.string_offsets_table()?;
            out.push(section(Part::StrOffsets, bytes, relocs));
        }
        if !self.str_data.is_empty() {
            let strings = std::mem::take(&mut self.str_data);
            out.push(section(Part::Str, strings, Vec::new()));
        }
        if !self.addrs.is_empty() {
            let (bytes, relocs) = self.address_table()?;
            out.push(section(Part::Addr, bytes, relocs));
        }
        if !self.loclists.is_empty() {
            out.push(section(Part::Loclists, loc_bytes, loc_relocs));
        }
        if !self.rnglists.is_empty() {
            out.push(section(Part::Rnglists, rng_bytes, rng_relocs));
        }
        out.push(section(Part::Line, line, line_relocs));
        let line_strings = std::mem::take(&mut self.line_str);
        out.push(section(Part::LineStr, line_strings, Vec::new()));
        // Every relocation names a section the fragment has; one naming a
        // list by its place (`DW_FORM_sec_offset`) names its offset now.
        let parts: HashSet<Part> = out.iter().map(|s| s.part).collect();
        for s in &mut out {
            fix_list_offsets(&mut s.relocs, &loc_offsets, &rng_offsets)?;
            for r in &s.relocs {
                if let Target::Own { part, .. } = r.target {
                    if !parts.contains(&part) {
                        return None;
                    }
                }
            }
        }
        Some(out)
    }

    /// The fragment's line table: its own table's parameters and entry
    /// formats, the directories and files as the fragment met them (by
    /// name; a file's MD5 from whichever table of the object has it: a type
    /// unit's file may be only in the table of the unit that made it), and
    /// its line program. `None` where the table has MD5s and one is not
    /// found (the fragment is then carved from an object of its own, whose
    /// table has them all).
    fn line_table(
        &mut self,
        ix: &DebugIndex,
        own: &LineTable,
        program: Piece,
    ) -> Option<(Vec<u8>, Vec<Reloc>)> {
        if own.dir_format != [(1, form::LINE_STRP)] {
            return None;
        }
        let r32 = self.offset_reloc;
        let mut dirs: Vec<Vec<u8>> = vec![own.dir0.clone()];
        let mut dir_of: HashMap<Vec<u8>, u64> = HashMap::from_iter([(own.dir0.clone(), 0)]);
        let mut line = vec![0, 0, 0, 0, 5, 0, 8, 0, 0, 0, 0, 0];
        line.extend_from_slice(&own.fixed);
        let write_format = |line: &mut Vec<u8>, format: &[(u64, u64)]| {
            line.push(format.len() as u8);
            for &(c, f) in format {
                write_uleb(line, c);
                write_uleb(line, f);
            }
        };
        write_format(&mut line, &own.dir_format);
        let mut relocs = Vec::new();
        let mut file_entries = Vec::new();
        for (dir, name, _) in &self.files {
            let d = *dir_of.entry(dir.clone()).or_insert_with(|| {
                dirs.push(dir.clone());
                dirs.len() as u64 - 1
            });
            file_entries.push((name.clone(), d));
        }
        write_uleb(&mut line, dirs.len() as u64);
        for d in &dirs {
            let at = self.line_string(d);
            relocs.push(own_reloc(Part::LineStr, line.len() as u64, at as i64, r32));
            line.extend_from_slice(&[0, 0, 0, 0]);
        }
        write_format(&mut line, &own.file_format);
        write_uleb(&mut line, file_entries.len() as u64);
        for (k, (name, d)) in file_entries.iter().enumerate() {
            for &(content, f) in &own.file_format {
                match (content, f) {
                    (1, form::LINE_STRP) => {
                        let at = self.line_string(name);
                        relocs.push(own_reloc(Part::LineStr, line.len() as u64, at as i64, r32));
                        line.extend_from_slice(&[0, 0, 0, 0]);
                    }
                    (2, form::UDATA) => write_uleb(&mut line, *d),
                    (2, form::DATA1) => line.push(u8::try_from(*d).ok()?),
                    (2, form::DATA2) => {
                        line.extend_from_slice(&u16::try_from(*d).ok()?.to_le_bytes())
                    }
                    (5, form::DATA16) => {
                        let (dir, name, _) = &self.files[k];
                        let sum = ix.md5.get(&(dir.clone(), name.clone()))?;
                        line.extend_from_slice(sum);
                    }
                    _ => return None,
                }
            }
        }
        let header_length = u32::try_from(line.len() - 12).ok()?;
        line[8..12].copy_from_slice(&header_length.to_le_bytes());
        let program_at = line.len() as u64;
        for (o, r) in &program.1 {
            relocs.push(input_reloc(program_at + o, r));
        }
        line.extend_from_slice(&program.0);
        let length = u32::try_from(line.len() - 4).ok()?;
        line[0..4].copy_from_slice(&length.to_le_bytes());
        Some((line, relocs))
    }

    /// The string offsets table: a header, then one offset into the
    /// fragment's strings per index.
    fn string_offsets_table(&self) -> Option<(Vec<u8>, Vec<Reloc>)> {
        let mut bytes = Vec::with_capacity(8 + 4 * self.strx.len());
        let length = u32::try_from(4 + 4 * self.strx.len()).ok()?;
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(&[5, 0, 0, 0]);
        let mut relocs = Vec::with_capacity(self.strx.len());
        for &at in &self.strx {
            relocs.push(own_reloc(
                Part::Str,
                bytes.len() as u64,
                at as i64,
                self.offset_reloc,
            ));
            bytes.extend_from_slice(&[0, 0, 0, 0]);
        }
        Some((bytes, relocs))
    }

    /// The address table: a header, then one relocated address per index.
    fn address_table(&self) -> Option<(Vec<u8>, Vec<Reloc>)> {
        let mut bytes = Vec::with_capacity(8 + 8 * self.addrs.len());
        let length = u32::try_from(4 + 8 * self.addrs.len()).ok()?;
        bytes.extend_from_slice(&length.to_le_bytes());
        bytes.extend_from_slice(&[5, 0, 8, 0]);
        let mut relocs = Vec::with_capacity(self.addrs.len());
        for &(target, r_type) in &self.addrs {
            relocs.push(Reloc {
                offset: bytes.len() as u64,
                r_type,
                target,
            });
            bytes.extend_from_slice(&[0; 8]);
        }
        Some((bytes, relocs))
    }
}

/// A location or range list table of `lists`: its header, the offset of
/// each list, the lists; with their relocations and each list's offset
/// from the section's start.
fn lay_out_lists(lists: &[Piece]) -> Option<(Vec<u8>, Vec<Reloc>, Vec<u64>)> {
    let n = lists.len();
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&[0, 0, 0, 0, 5, 0, 8, 0]);
    bytes.extend_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    let mut offsets = Vec::with_capacity(n);
    let mut at = 4 * n;
    for (l, _) in lists {
        offsets.push(at);
        bytes.extend_from_slice(&u32::try_from(at).ok()?.to_le_bytes());
        at += l.len();
    }
    let mut relocs = Vec::new();
    for (l, rs) in lists {
        let start = bytes.len() as u64;
        for (o, r) in rs {
            relocs.push(input_reloc(start + o, r));
        }
        bytes.extend_from_slice(l);
    }
    let length = u32::try_from(bytes.len() - 4).ok()?;
    bytes[0..4].copy_from_slice(&length.to_le_bytes());
    Some((
        bytes,
        relocs,
        offsets.iter().map(|&o| 12 + o as u64).collect(),
    ))
}

/// A relocation that named list `n` by its place (a negative addend, see
/// `offset_attribute`) names its offset in the laid-out table now.
fn fix_list_offsets(relocs: &mut [Reloc], loc_offsets: &[u64], rng_offsets: &[u64]) -> Option<()> {
    for r in relocs {
        if let Target::Own { part, addend } = &mut r.target {
            if *addend < 0 && matches!(part, Part::Loclists | Part::Rnglists) {
                let n = usize::try_from(-1 - *addend).ok()?;
                let offsets = if *part == Part::Loclists {
                    loc_offsets
                } else {
                    rng_offsets
                };
                *addend = i64::try_from(*offsets.get(n)?).ok()?;
            }
        }
    }
    Some(())
}

/// A relocation at `offset` as input relocation `r` is.
fn input_reloc(offset: u64, r: &Rela) -> Reloc {
    Reloc {
        offset,
        r_type: r.r_type,
        target: Target::Input {
            sym: r.sym,
            addend: r.addend,
        },
    }
}

/// The smallest of four forms of 1, 2, 3 and 4 bytes that holds `n` (a
/// zero form is skipped): the form and its size.
fn smallest(n: u64, forms: [u64; 4]) -> (u64, usize) {
    for (k, f) in forms.into_iter().enumerate() {
        if f != 0 && n < 1u64 << (8 * (k + 1)) {
            return (f, k + 1);
        }
    }
    (forms[3], 4)
}

#[cfg(test)]
mod tests {}
