//! Compile units merged once an object is composed. Every fragment of a
//! unit with debug info is compiled as a compile unit of its own: a unit
//! header, a root DIE, a line table, address, location list and range
//! list tables, and the relocations they carry (about 360 bytes a
//! fragment in the object, where clang's object has one of each for the
//! whole unit). Here runs of consecutive compile units of the composed
//! object that share their abbreviation and string offsets tables and say
//! the same of the unit (producer, language, directory) become one
//! compile unit:
//!
//! - the name: a fragment's compile unit names no source file (it may have
//!   been stored by another unit), the glue's does, and the glue comes
//!   first: the merged root takes the name of the run's first member;
//! - `.debug_info`: one header and root DIE (a member's, preferably one
//!   whose root names every table the run has), its range widened to the
//!   run's code where that is one range of one section, in the members'
//!   order, else listing the members' ranges as clang's root does for
//!   code in several sections; a root that lists ranges or lacks a table's
//!   base is written anew (`RewrittenRoot`); then every member's children;
//!   references inside a unit move with it;
//! - `.debug_addr`, `.debug_loclists`, `.debug_rnglists`: the members'
//!   tables one after another (the lists' offsets recomputed, the address
//!   indices in them moved up), and the indices DIEs hold
//!   (`DW_FORM_addrx*`, `DW_OP_addrx`, `DW_OP_constx`, `DW_FORM_loclistx`,
//!   `DW_FORM_rnglistx`) moved up in place; the base types that typed
//!   expressions name (`DW_OP_convert` and the like, in DIEs and location
//!   lists: offsets in the unit, which LLVM pads to four bytes) move with
//!   their member;
//! - `.debug_line`: the first member's line table with the directories and
//!   files of the others appended, then every member's line program, its
//!   `DW_LNS_set_file` operands (and the default file each sequence starts
//!   with) renumbered, as are `DW_AT_decl_file` and `DW_AT_call_file`.
//!
//! Values rewritten inside DIEs keep their size, so that no DIE moves
//! (a ULEB128 is padded to its length): a run ends where an index would
//! outgrow its field. A unit with anything else (references across units,
//! an expression operation or list entry not listed here, a base type
//! named in fewer than four bytes, an indirect form) stays as it is, and the whole
//! object does if a relocation points into a table that would go away.
//! Type units are not touched; they name the line table of the unit they
//! came with, which keeps its place and its file numbers.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::ops::Range;

use super::dwarf::{
    fits, form, form_size, form_value, list_entry, read_abbrevs, unit_extent, write_field, Abbrev,
    ListEntry,
};
use super::elf::{u16_at, u32_at, Content, OutRela, OutSection, SymRef, SHF_GROUP};
use super::leb128::{read_uleb, uleb_padded, write_uleb};

const DW_AT_NAME: u64 = gimli::DW_AT_name.0 as u64;
const DW_AT_COMP_DIR: u64 = gimli::DW_AT_comp_dir.0 as u64;
const DW_AT_STMT_LIST: u64 = gimli::DW_AT_stmt_list.0 as u64;
const DW_AT_LOW_PC: u64 = gimli::DW_AT_low_pc.0 as u64;
const DW_AT_HIGH_PC: u64 = gimli::DW_AT_high_pc.0 as u64;
const DW_AT_DECL_FILE: u64 = gimli::DW_AT_decl_file.0 as u64;
const DW_AT_RANGES: u64 = gimli::DW_AT_ranges.0 as u64;
const DW_AT_CALL_FILE: u64 = gimli::DW_AT_call_file.0 as u64;
const DW_AT_STR_OFFSETS_BASE: u64 = gimli::DW_AT_str_offsets_base.0 as u64;
const DW_AT_ADDR_BASE: u64 = gimli::DW_AT_addr_base.0 as u64;
const DW_AT_RNGLISTS_BASE: u64 = gimli::DW_AT_rnglists_base.0 as u64;
const DW_AT_LOCLISTS_BASE: u64 = gimli::DW_AT_loclists_base.0 as u64;

const DW_FORM_ADDR: u64 = gimli::DW_FORM_addr.0 as u64;
const DW_FORM_BLOCK2: u64 = gimli::DW_FORM_block2.0 as u64;
const DW_FORM_BLOCK4: u64 = gimli::DW_FORM_block4.0 as u64;
const DW_FORM_DATA2: u64 = gimli::DW_FORM_data2.0 as u64;
const DW_FORM_DATA4: u64 = gimli::DW_FORM_data4.0 as u64;
const DW_FORM_BLOCK: u64 = gimli::DW_FORM_block.0 as u64;
const DW_FORM_BLOCK1: u64 = gimli::DW_FORM_block1.0 as u64;
const DW_FORM_DATA1: u64 = gimli::DW_FORM_data1.0 as u64;
const DW_FORM_UDATA: u64 = gimli::DW_FORM_udata.0 as u64;
const DW_FORM_REF4: u64 = gimli::DW_FORM_ref4.0 as u64;
const DW_FORM_SEC_OFFSET: u64 = gimli::DW_FORM_sec_offset.0 as u64;
const DW_FORM_EXPRLOC: u64 = gimli::DW_FORM_exprloc.0 as u64;
const DW_FORM_ADDRX: u64 = gimli::DW_FORM_addrx.0 as u64;
const DW_FORM_LOCLISTX: u64 = gimli::DW_FORM_loclistx.0 as u64;
const DW_FORM_RNGLISTX: u64 = gimli::DW_FORM_rnglistx.0 as u64;

const DW_LNCT_DIRECTORY_INDEX: u64 = gimli::DW_LNCT_directory_index.0 as u64;
const DW_LNS_SET_FILE: u8 = gimli::DW_LNS_set_file.0;
const DW_LNS_FIXED_ADVANCE_PC: u8 = gimli::DW_LNS_fixed_advance_pc.0;
const DW_LNE_END_SEQUENCE: u8 = gimli::DW_LNE_end_sequence.0;

/// One output section as it was, its relocations by offset.
struct Old<'a> {
    data: &'a [u8],
    relas: &'a [OutRela],
    /// (offset, index in `relas`), sorted.
    by_offset: Vec<(u64, usize)>,
}

impl<'a> Old<'a> {
    fn of(s: &'a OutSection) -> Option<Old<'a>> {
        let Content::Data(data) = &s.content else {
            return None;
        };
        let mut by_offset: Vec<(u64, usize)> = s
            .relas
            .iter()
            .enumerate()
            .map(|(i, r)| (r.offset, i))
            .collect();
        by_offset.sort_unstable();
        Some(Old {
            data,
            relas: &s.relas,
            by_offset,
        })
    }

    fn within(&self, r: Range<usize>) -> impl Iterator<Item = &OutRela> + '_ {
        let from = self.by_offset.partition_point(|&(o, _)| o < r.start as u64);
        self.by_offset[from..]
            .iter()
            .take_while(move |&&(o, _)| o < r.end as u64)
            .map(|&(_, i)| &self.relas[i])
    }

    /// The relocation of the field at `offset`: (symbol, addend).
    fn relocated(&self, offset: usize) -> Option<(Option<SymRef>, i64)> {
        let r = self.within(offset..offset + 1).next()?;
        (r.offset == offset as u64).then_some((r.sym, r.addend))
    }
}

/// A section being written, with its relocations.
#[derive(Default)]
struct New {
    data: Vec<u8>,
    relas: Vec<OutRela>,
}

impl New {
    /// Appends `old`'s bytes in `r`, and the relocations in them; returns
    /// where they start.
    fn copy(&mut self, old: &Old, r: Range<usize>) -> Option<usize> {
        let at = self.data.len();
        self.data.extend_from_slice(old.data.get(r.clone())?);
        for rel in old.within(r.clone()) {
            self.relas.push(OutRela {
                offset: rel.offset - r.start as u64 + at as u64,
                sym: rel.sym,
                r_type: rel.r_type,
                addend: rel.addend,
            });
        }
        Some(at)
    }

    /// Appends what `other` holds.
    fn append(&mut self, other: New) {
        let at = self.data.len() as u64;
        self.data.extend_from_slice(&other.data);
        self.relas.extend(other.relas.into_iter().map(|r| OutRela {
            offset: r.offset + at,
            ..r
        }));
    }

    fn put_u32(&mut self, at: usize, v: u32) -> Option<()> {
        self.data
            .get_mut(at..at + 4)?
            .copy_from_slice(&v.to_le_bytes());
        Some(())
    }

    /// Writes `v` into a field of `size` bytes at `at`: a ULEB128 padded
    /// to its length, or a little-endian number.
    fn put_field(&mut self, at: usize, size: usize, uleb: bool, v: u64) -> Option<()> {
        write_field(self.data.get_mut(at..at.checked_add(size)?)?, uleb, v)
    }

    /// Sets the addend of the relocation at `at`.
    fn set_addend(&mut self, at: usize, addend: i64) -> Option<()> {
        let r = self.relas.iter_mut().find(|r| r.offset == at as u64)?;
        r.addend = addend;
        Some(())
    }
}

/// A value inside a DIE that the merge may rewrite: where, its size, its
/// value, and whether it is a ULEB128.
#[derive(Clone, Copy)]
struct Field {
    at: usize,
    size: usize,
    value: u64,
    uleb: bool,
}

/// The tables a unit names by index from a base attribute.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Addr,
    Loc,
    Rng,
}

const KINDS: [Kind; 3] = [Kind::Addr, Kind::Loc, Kind::Rng];

impl Kind {
    fn section(self) -> &'static [u8] {
        match self {
            Kind::Addr => b".debug_addr",
            Kind::Loc => b".debug_loclists",
            Kind::Rng => b".debug_rnglists",
        }
    }

    /// The base attribute of a unit's root that names its table.
    fn base_attribute(self) -> u64 {
        match self {
            Kind::Addr => DW_AT_ADDR_BASE,
            Kind::Loc => DW_AT_LOCLISTS_BASE,
            Kind::Rng => DW_AT_RNGLISTS_BASE,
        }
    }

    /// The size of a contribution's header: length, version, address and
    /// segment selector sizes, and for lists the count of offsets.
    fn header(self) -> usize {
        match self {
            Kind::Addr => 8,
            Kind::Loc | Kind::Rng => 12,
        }
    }
}

/// One contribution to an address or list section.
struct Contribution {
    start: usize,
    /// Where the base attribute points: the addresses, or the offsets.
    base: usize,
    /// Addresses, or offsets of lists.
    count: u64,
    end: usize,
    /// Lists this module cannot rewrite (see `rewrite_lists`).
    opaque: bool,
}

/// An address or list section of the composed object.
struct Indexed<'a> {
    kind: Kind,
    index: usize,
    sym: Option<SymRef>,
    old: Old<'a>,
    contributions: Vec<Contribution>,
    /// Contribution by its base.
    at: HashMap<i64, usize>,
}

/// One compile unit of the composed `.debug_info`.
struct Unit {
    start: usize,
    end: usize,
    /// Whether it can be a member of a run at all.
    mergeable: bool,
    abbrevs: (Option<SymRef>, i64),
    strings: Option<(Option<SymRef>, i64)>,
    /// The root's attributes that say what unit it is (producer, language,
    /// directory...): name, form and bytes.
    identity: Vec<(u64, u64, Vec<u8>)>,
    /// The root's `DW_AT_name` (a string index): form, bytes and where.
    name: Option<(u64, Vec<u8>, usize)>,
    /// The root's `DW_AT_comp_dir`: form and bytes. A fragment that names
    /// no file of the unit has none (see `repocc_extract_definitions`).
    comp_dir: Option<(u64, Vec<u8>)>,
    root_at: usize,
    root_end: usize,
    root_children: bool,
    /// The root's abbreviation code, and its attributes: name, form,
    /// implicit value, where and how long.
    root_code: u64,
    root_attrs: Vec<(u64, u64, i64, usize, usize)>,
    /// The children's bytes, without the root's terminating zero.
    children: Range<usize>,
    /// The line table's offset (`DW_AT_stmt_list`) and where the field is.
    line: Option<(i64, usize)>,
    /// Per kind: the table's base and where the field is.
    bases: [Option<(i64, usize)>; 3],
    /// The root's `DW_AT_low_pc` index (an `addrx`) and `DW_AT_high_pc`.
    low_pc: Option<Field>,
    high_pc: Option<Field>,
    /// Its code: (section symbol, start, end).
    code: Option<(Option<SymRef>, i64, i64)>,
    refs: Vec<usize>,
    /// The base types its children's expressions name.
    type_refs: Vec<Field>,
    /// Per kind: the indices its children hold.
    uses: [Vec<Field>; 3],
    file_uses: Vec<Field>,
}

/// One line table of `.debug_line` (DWARF 5).
struct LineTable {
    start: usize,
    end: usize,
    /// From `minimum_instruction_length` to the end of the standard opcode
    /// lengths: what tables must share to be merged.
    params: Range<usize>,
    opcode_base: u8,
    dir_format: Range<usize>,
    dir_fields: Vec<(u64, u64)>,
    dirs: Vec<Range<usize>>,
    file_format: Range<usize>,
    file_fields: Vec<(u64, u64)>,
    files: Vec<Range<usize>>,
    program: Range<usize>,
}

/// What identifies a directory or file entry: each field's relocation
/// (an interned string) or bytes.
type EntryKey = Vec<(u64, Option<SymRef>, i64, Vec<u8>)>;

/// A run being formed.
struct Run {
    members: Vec<usize>,
    /// Per kind, per member: the first index of its entries in the run's
    /// table; and per kind the entries so far.
    offsets: [Vec<u64>; 3],
    totals: [u64; 3],
    /// The member whose root the merged unit has (see `choose_donor`).
    donor: Option<usize>,
    /// The run's code so far: section symbol, start, end.
    code: Option<(Option<SymRef>, i64, i64)>,
    /// The index of the run's first address (its code's start) in the
    /// merged address table.
    low_pc: Option<u64>,
    /// Each member's code: its address's index in the merged table, and
    /// its length; and whether they are one range of one section, in
    /// order (else the merged root lists them, see `RewrittenRoot`).
    ranges: Vec<(u64, u64)>,
    one_range: bool,
    /// The head line table, and the entries appended to it: (table, entry)
    /// and, for a file, its directory in the merged table.
    head: usize,
    dirs: Vec<(usize, usize)>,
    dir_keys: HashMap<EntryKey, u64>,
    files: Vec<(usize, usize, u64)>,
    file_keys: HashMap<EntryKey, u64>,
    /// Per member: its file numbers in the merged table, and its line table.
    file_maps: Vec<Vec<u64>>,
    member_tables: Vec<usize>,
}

/// The plain (not grouped) output section called `name`.
fn plain(sections: &[OutSection], name: &[u8]) -> Option<usize> {
    sections
        .iter()
        .position(|s| s.name == name && s.flags & SHF_GROUP == 0)
}

/// Merges the compile units of a composed object where it can (see the
/// module's comment); `section_symbol`: each output section's symbol.
pub(super) fn merge_compile_units(
    sections: &mut [OutSection],
    section_symbol: &HashMap<usize, usize>,
) {
    let Some(merged) = merged_sections(sections, section_symbol) else {
        return;
    };
    for (index, new) in merged.sections {
        sections[index].content = Content::Data(new.data);
        sections[index].relas = new.relas;
    }
    for s in sections.iter_mut() {
        for r in s.relas.iter_mut() {
            if let Some(&a) = r.sym.and_then(|s| merged.moved.get(&(s, r.addend))) {
                r.addend = a;
            }
        }
    }
}

/// What `merged_sections` makes.
struct Merged {
    /// New contents of output sections, by index.
    sections: Vec<(usize, New)>,
    /// Relocation addends that move: (section symbol, old addend) → new.
    moved: HashMap<(SymRef, i64), i64>,
}

/// The composed object's debug sections this module reads.
struct Debug<'a> {
    info: Old<'a>,
    line: Old<'a>,
    line_tables: Vec<LineTable>,
    line_at: HashMap<i64, usize>,
    indexed: Vec<Option<Indexed<'a>>>,
    /// Whether a merged root can list its code's ranges: the object has a
    /// range list section to put them in.
    root_ranges: bool,
}

impl Debug<'_> {
    fn table(&self, kind: Kind) -> Option<&Indexed<'_>> {
        self.indexed[kind as usize].as_ref()
    }

    /// The contribution of `kind` unit `unit` names.
    fn contribution(&self, kind: Kind, unit: &Unit) -> Option<&Contribution> {
        let t = self.table(kind)?;
        let (base, _) = unit.bases[kind as usize]?;
        t.contributions.get(*t.at.get(&base)?)
    }
}

/// The new `.debug_info`, `.debug_line` and index tables, or `None`
/// where nothing is merged.
fn merged_sections(
    sections: &[OutSection],
    section_symbol: &HashMap<usize, usize>,
) -> Option<Merged> {
    let read = DebugSectionsRead::of(sections, section_symbol)?;
    let debug = &read.debug;
    let abbrev_tables = read.abbrev_tables()?;
    let mut units = Vec::new();
    let mut at = 0;
    while at < debug.info.data.len() {
        let unit = read_unit(debug, at, &abbrev_tables, read.line_sym)?;
        at = unit.end;
        units.push(unit);
    }
    let runs = form_runs(debug, &units);
    if runs.is_empty() {
        return None;
    }
    let roles = Roles::of(debug, &units, &runs)?;
    let mut out = Merged {
        sections: Vec::new(),
        moved: HashMap::default(),
    };
    let rewritten_roots = out.rewritten_roots(&read, &units, &runs, &abbrev_tables, sections)?;
    let starts: Vec<Vec<u64>> = (runs.iter().zip(&rewritten_roots))
        .map(|(run, root)| children_starts(run, &units, root.as_ref()))
        .collect::<Option<_>>()?;
    let run_bases = out.indexed_tables(debug, &units, &runs, &roles, &starts)?;
    let named_from_outside: HashSet<i64> = (sections.iter().enumerate())
        .filter(|&(i, _)| i != read.info_index)
        .flat_map(|(_, s)| &s.relas)
        .filter(|r| r.sym.is_some() && r.sym == read.line_sym)
        .map(|r| r.addend)
        .collect();
    out.line_tables(&read, &runs, &roles, &named_from_outside)?;
    let mut new_info = New::default();
    for (u, unit) in units.iter().enumerate() {
        match roles.run_of_unit.get(&u) {
            Some(&r) if runs[r].members[0] == u => {
                let head_line = debug.line_tables[runs[r].head].start as i64;
                merged_unit(
                    &debug.info,
                    &units,
                    &runs[r],
                    &run_bases[r],
                    head_line,
                    Layout {
                        rewritten_root: rewritten_roots[r].as_ref(),
                        starts: &starts[r],
                    },
                    &mut new_info,
                )?;
            }
            Some(_) => continue,
            None => {
                new_info.copy(&debug.info, unit.start..unit.end)?;
            }
        }
    }
    out.sections.push((read.info_index, new_info));
    out.check_relocations(sections, &read)?;
    Some(out)
}

/// The composed object's debug sections, located and read.
struct DebugSectionsRead<'a> {
    debug: Debug<'a>,
    abbrev: Old<'a>,
    info_index: usize,
    line_index: usize,
    abbrev_index: usize,
    line_sym: Option<SymRef>,
    abbrev_sym: Option<SymRef>,
    /// Output section → its section symbol.
    section_symbol: &'a HashMap<usize, usize>,
}

impl<'a> DebugSectionsRead<'a> {
    fn of(
        sections: &'a [OutSection],
        section_symbol: &'a HashMap<usize, usize>,
    ) -> Option<DebugSectionsRead<'a>> {
        let info_index = plain(sections, b".debug_info")?;
        let line_index = plain(sections, b".debug_line")?;
        let abbrev_index = plain(sections, b".debug_abbrev")?;
        let sym = |s: usize| section_symbol.get(&s).map(|&l| SymRef::Local(l));
        let (info_sym, line_sym, abbrev_sym) =
            (sym(info_index), sym(line_index), sym(abbrev_index));
        // Nothing may point into `.debug_info` itself: its units move.
        if info_sym.is_some()
            && (sections.iter()).any(|s| s.relas.iter().any(|r| r.sym == info_sym))
        {
            return None;
        }
        let line = Old::of(&sections[line_index])?;
        let line_tables = line_tables(line.data)?;
        let line_at = (line_tables.iter().enumerate())
            .map(|(i, t)| (t.start as i64, i))
            .collect();
        let mut indexed = Vec::new();
        for kind in KINDS {
            indexed.push(match plain(sections, kind.section()) {
                Some(index) => {
                    let old = Old::of(&sections[index])?;
                    let contributions = contributions(kind, &old)?;
                    let at = (contributions.iter().enumerate())
                        .map(|(i, c)| (c.base as i64, i))
                        .collect();
                    Some(Indexed {
                        kind,
                        index,
                        sym: sym(index),
                        old,
                        contributions,
                        at,
                    })
                }
                None => None,
            });
        }
        let root_ranges = indexed[Kind::Rng as usize]
            .as_ref()
            .is_some_and(|t| t.sym.is_some());
        Some(DebugSectionsRead {
            debug: Debug {
                info: Old::of(&sections[info_index])?,
                line,
                line_tables,
                line_at,
                indexed,
                root_ranges,
            },
            abbrev: Old::of(&sections[abbrev_index])?,
            info_index,
            line_index,
            abbrev_index,
            line_sym,
            abbrev_sym,
            section_symbol,
        })
    }

    fn sym(&self, section: usize) -> Option<SymRef> {
        self.section_symbol.get(&section).map(|&l| SymRef::Local(l))
    }

    /// The abbreviation tables the units name, by offset, read once each.
    fn abbrev_tables(&self) -> Option<HashMap<i64, Vec<Abbrev>>> {
        let info = &self.debug.info;
        let mut tables: HashMap<i64, Vec<Abbrev>> = HashMap::default();
        let mut at = 0;
        while at < info.data.len() {
            let (end, _) = unit_extent(info.data, at)?;
            let offset = match info.relocated(at + 8) {
                Some((sym, addend)) if sym == self.abbrev_sym => addend,
                Some(_) => return None,
                None => i64::from(u32_at(info.data, at as u64 + 8)?),
            };
            if let std::collections::hash_map::Entry::Vacant(e) = tables.entry(offset) {
                e.insert(read_abbrevs(
                    self.abbrev.data.get(usize::try_from(offset).ok()?..)?,
                )?);
            }
            at = end;
        }
        Some(tables)
    }
}

/// What each unit and table becomes: (run, first of the run?).
struct Roles {
    run_of_unit: HashMap<usize, usize>,
    /// Per kind of index table: contribution → role.
    tables: Vec<HashMap<usize, (usize, bool)>>,
    /// Line table → role.
    lines: HashMap<usize, (usize, bool)>,
}

impl Roles {
    fn of(debug: &Debug, units: &[Unit], runs: &[Run]) -> Option<Roles> {
        let mut roles = Roles {
            run_of_unit: HashMap::default(),
            tables: vec![HashMap::default(); 3],
            lines: HashMap::default(),
        };
        for (r, run) in runs.iter().enumerate() {
            let mut seen = [false; 3];
            for &m in &run.members {
                roles.run_of_unit.insert(m, r);
                for kind in KINDS {
                    let Some(t) = debug.table(kind) else { continue };
                    let Some((base, _)) = units[m].bases[kind as usize] else {
                        continue;
                    };
                    let c = *t.at.get(&base)?;
                    let first = !std::mem::replace(&mut seen[kind as usize], true);
                    if roles.tables[kind as usize].insert(c, (r, first)).is_some() {
                        return None;
                    }
                }
                let t = *debug.line_at.get(&units[m].line?.0)?;
                if roles.lines.insert(t, (r, t == run.head)).is_some() {
                    return None;
                }
            }
        }
        Some(roles)
    }
}

impl Merged {
    /// The address, location list and range list tables: a run's
    /// contributions merged into one, the others copied. Per run and
    /// kind: the old base of the merged table.
    fn indexed_tables(
        &mut self,
        debug: &Debug,
        units: &[Unit],
        runs: &[Run],
        roles: &Roles,
        starts: &[Vec<u64>],
    ) -> Option<Vec<[Option<i64>; 3]>> {
        let mut run_bases: Vec<[Option<i64>; 3]> = vec![[None; 3]; runs.len()];
        for kind in KINDS {
            let Some(t) = debug.table(kind) else { continue };
            let mut out = New::default();
            for (c, contribution) in t.contributions.iter().enumerate() {
                let new_base = match roles.tables[kind as usize].get(&c) {
                    Some(&(_, false)) => continue,
                    Some(&(r, true)) => {
                        run_bases[r][kind as usize] = Some(contribution.base as i64);
                        merged_table(debug, t, &runs[r], units, &starts[r], &mut out)?
                    }
                    None => {
                        let start = out.copy(&t.old, contribution.start..contribution.end)?;
                        start + (contribution.base - contribution.start)
                    }
                };
                if let Some(s) = t.sym {
                    self.moved
                        .insert((s, contribution.base as i64), new_base as i64);
                }
            }
            if kind == Kind::Rng {
                // Roots that list their ranges, in runs without a table of
                // range lists: one each, named by a placeholder addend.
                for (r, run) in runs.iter().enumerate() {
                    if run.one_range || run_bases[r][Kind::Rng as usize].is_some() {
                        continue;
                    }
                    let base = new_range_table(run, &mut out)?;
                    let placeholder = -1 - r as i64;
                    self.moved.insert((t.sym?, placeholder), base as i64);
                    run_bases[r][Kind::Rng as usize] = Some(placeholder);
                }
            }
            self.sections.push((t.index, out));
        }
        Some(run_bases)
    }

    /// Declarations for the roots that list their ranges, added to their
    /// abbreviation tables (which move what follows them); per run, its
    /// root's, if it lists them.
    fn rewritten_roots(
        &mut self,
        read: &DebugSectionsRead,
        units: &[Unit],
        runs: &[Run],
        abbrev_tables: &HashMap<i64, Vec<Abbrev>>,
        sections: &[OutSection],
    ) -> Option<Vec<Option<RewrittenRoot>>> {
        let (debug, abbrev) = (&read.debug, &read.abbrev);
        let mut rewritten_roots: Vec<Option<RewrittenRoot>> = Vec::new();
        let mut additions: HashMap<i64, Vec<u8>> = HashMap::default();
        let mut next_code: HashMap<i64, u64> = HashMap::default();
        let mut declared: HashMap<(i64, u64, bool, Vec<Kind>), u64> = HashMap::default();
        for run in runs {
            let d = &units[run.donor?];
            let ranges = !run.one_range;
            // A root listing ranges names a range list (and its base).
            let added: Vec<Kind> = (KINDS.iter().copied())
                .filter(|&k| {
                    let needed = run.totals[k as usize] > 0 || (ranges && k == Kind::Rng);
                    needed && d.bases[k as usize].is_none()
                })
                .collect();
            if !ranges && added.is_empty() {
                rewritten_roots.push(None);
                continue;
            }
            let table_at = d.abbrevs.1;
            let table = abbrev_tables.get(&table_at)?;
            let key = (table_at, d.root_code, ranges, added.clone());
            let code = match declared.get(&key) {
                Some(&code) => code,
                None => {
                    let next = next_code
                        .entry(table_at)
                        .or_insert_with(|| table.iter().map(|a| a.code).max().unwrap_or(0) + 1);
                    let code = *next;
                    *next += 1;
                    let decl = table.iter().find(|a| a.code == d.root_code)?;
                    additions
                        .entry(table_at)
                        .or_default()
                        .extend(rewritten_declaration(code, decl, ranges, &added));
                    declared.insert(key, code);
                    code
                }
            };
            let stmt_list = d.line?.1;
            let r_type = debug.info.within(stmt_list..stmt_list + 1).next()?.r_type;
            let added_bases = (added.iter())
                .map(|&k| Some((k, debug.table(k)?.sym)))
                .collect::<Option<_>>()?;
            rewritten_roots.push(Some(RewrittenRoot {
                code,
                list_index: ranges.then_some(run.totals[Kind::Rng as usize]),
                added_bases,
                r_type,
            }));
        }
        if additions.is_empty() {
            return Some(rewritten_roots);
        }
        if !abbrev.relas.is_empty() {
            return None;
        }
        // Each table's additions go before its terminating zero; what
        // follows moves.
        let mut at_end: Vec<(usize, Vec<u8>)> = Vec::new();
        for (table_at, bytes) in additions {
            let from = usize::try_from(table_at).ok()?;
            let (_, end) = super::dwarf::abbrev_declarations(abbrev.data.get(from..)?)?;
            at_end.push((from + end - 1, bytes));
        }
        at_end.sort_unstable();
        let mut out = New::default();
        let mut from = 0;
        for (at, bytes) in &at_end {
            out.data.extend_from_slice(abbrev.data.get(from..*at)?);
            out.data.extend_from_slice(bytes);
            from = *at;
        }
        out.data.extend_from_slice(abbrev.data.get(from..)?);
        let abbrev_sym = read.abbrev_sym?;
        for r in sections.iter().flat_map(|s| &s.relas) {
            if r.sym == Some(abbrev_sym) {
                let shift: usize = (at_end.iter())
                    .filter(|(at, _)| (*at as i64) < r.addend)
                    .map(|(_, b)| b.len())
                    .sum();
                self.moved
                    .insert((abbrev_sym, r.addend), r.addend + shift as i64);
            }
        }
        self.sections.push((read.abbrev_index, out));
        Some(rewritten_roots)
    }

    /// The line tables: a run's merged into one, the others copied.
    /// `named_from_outside`: the starts of the tables that relocations
    /// outside the compile units name (type units' `DW_AT_stmt_list`).
    fn line_tables(
        &mut self,
        read: &DebugSectionsRead,
        runs: &[Run],
        roles: &Roles,
        named_from_outside: &HashSet<i64>,
    ) -> Option<()> {
        let debug = &read.debug;
        let mut new_line = New::default();
        let mut run_line_start = vec![0; runs.len()];
        for (t, table) in debug.line_tables.iter().enumerate() {
            let start = match roles.lines.get(&t) {
                Some(&(_, false)) => continue,
                Some(&(r, true)) => {
                    run_line_start[r] = merged_line_table(
                        &debug.line,
                        &debug.line_tables,
                        &runs[r],
                        &mut new_line,
                    )?;
                    run_line_start[r]
                }
                None => new_line.copy(&debug.line, table.start..table.end)?,
            };
            if let Some(s) = read.line_sym {
                self.moved.insert((s, table.start as i64), start as i64);
            }
        }
        // A member's table may still be named (by a type unit that came
        // with the member). Where its files keep their numbers in the
        // merged table, that is the table now; else its header stays, with
        // no program, for the type unit's file numbers to index.
        for (r, run) in runs.iter().enumerate() {
            for (&t, files) in run.member_tables.iter().zip(&run.file_maps) {
                let Some(s) = read.line_sym else { continue };
                let table = &debug.line_tables[t];
                let start = table.start as i64;
                if self.moved.contains_key(&(s, start)) {
                    continue;
                }
                let same_numbers = files.iter().enumerate().all(|(i, &n)| n == i as u64);
                let at = if same_numbers {
                    run_line_start[r]
                } else if named_from_outside.contains(&start) {
                    header_only(&debug.line, table, &mut new_line)?
                } else {
                    continue;
                };
                self.moved.insert((s, start), at as i64);
            }
        }
        self.sections.push((read.line_index, new_line));
        Some(())
    }

    /// Every relocation into the rebuilt tables must name the start of a
    /// table that stays.
    fn check_relocations(&self, sections: &[OutSection], read: &DebugSectionsRead) -> Option<()> {
        let abbrevs_moved = (self.sections.iter()).any(|(index, _)| *index == read.abbrev_index);
        let targets: Vec<SymRef> = [
            Some(read.line_index),
            abbrevs_moved.then_some(read.abbrev_index),
        ]
        .into_iter()
        .chain(
            read.debug
                .indexed
                .iter()
                .map(|t| t.as_ref().map(|t| t.index)),
        )
        .flatten()
        .filter_map(|s| read.sym(s))
        .collect();
        for (i, s) in sections.iter().enumerate() {
            let relas = match self.sections.iter().find(|(index, _)| *index == i) {
                Some((_, new)) => &new.relas,
                None => &s.relas,
            };
            for r in relas {
                if let Some(sym) = r.sym.filter(|s| targets.contains(s)) {
                    self.moved.get(&(sym, r.addend))?;
                }
            }
        }
        Some(())
    }
}

/// The runs of units to merge, each with two or more members and a donor.
fn form_runs(debug: &Debug, units: &[Unit]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut current: Option<Run> = None;
    for (u, unit) in units.iter().enumerate() {
        if current
            .as_mut()
            .is_some_and(|run| join(run, u, units, debug))
        {
            continue;
        }
        runs.extend(current.take());
        if !unit.mergeable {
            continue;
        }
        let Some(&head) = unit.line.and_then(|(l, _)| debug.line_at.get(&l)) else {
            continue;
        };
        let mut run = Run {
            members: Vec::new(),
            offsets: Default::default(),
            totals: [0; 3],
            donor: None,
            code: None,
            low_pc: None,
            ranges: Vec::new(),
            one_range: true,
            head,
            dirs: Vec::new(),
            dir_keys: HashMap::default(),
            files: Vec::new(),
            file_keys: HashMap::default(),
            file_maps: Vec::new(),
            member_tables: Vec::new(),
        };
        let t = &debug.line_tables[head];
        for d in 0..t.dirs.len() {
            run.dir_keys
                .entry(entry_key(&debug.line, t, d, None, &[]))
                .or_insert(d as u64);
        }
        let identity: Vec<u64> = (0..t.dirs.len() as u64).collect();
        for f in 0..t.files.len() {
            run.file_keys
                .entry(entry_key(&debug.line, t, f, Some(()), &identity))
                .or_insert(f as u64);
        }
        if join(&mut run, u, units, debug) {
            current = Some(run);
        }
    }
    runs.extend(current.take());
    runs.retain_mut(|run| run.members.len() > 1 && choose_donor(run, units));
    runs
}

/// The member whose root the merged unit keeps: the first whose root has
/// children and a range if the run has code, and of those the first with
/// the base of every table the run has (else the root is written anew
/// with the bases it lacks, see `RewrittenRoot`). `false` when none has.
fn choose_donor(run: &mut Run, units: &[Unit]) -> bool {
    let comp_dir = run
        .members
        .first()
        .and_then(|&f| units[f].comp_dir.as_ref());
    let candidate = |m: &usize| {
        let unit = &units[*m];
        // The merged root says the run's directory.
        unit.comp_dir.as_ref() == comp_dir
            && unit.root_children
            && (run.code.is_none() || (unit.low_pc.is_some() && unit.high_pc.is_some()))
    };
    let every_base = |m: &usize| {
        (KINDS.iter())
            .all(|&k| run.totals[k as usize] == 0 || units[*m].bases[k as usize].is_some())
    };
    run.donor = (run.members.iter().copied())
        .filter(candidate)
        .find(every_base)
        .or_else(|| run.members.iter().copied().find(candidate));
    let Some(d) = run.donor else { return false };
    if !run.one_range {
        return true; // the root is written anew (see `RewrittenRoot`)
    }
    // The root's low_pc names the run's first address.
    match (units[d].low_pc, run.low_pc) {
        (Some(f), Some(v)) => fits(v, f.size, f.uleb),
        (None, None) => true,
        _ => false,
    }
}

/// Tries to add unit `u` to `run`: it must say the same of the unit as the
/// run's members, share its tables, and every index it holds must fit its
/// field once moved.
///
/// Long on purpose: each test that can keep a unit out of a run is a few lines
/// and they must run in this order (what the unit says, its tables, then
/// whether every index fits once moved).
fn join(run: &mut Run, u: usize, units: &[Unit], debug: &Debug) -> bool {
    let unit = &units[u];
    if !unit.mergeable {
        return false;
    }
    if let Some(&first) = run.members.first() {
        let f = &units[first];
        if f.abbrevs != unit.abbrevs || f.strings != unit.strings || f.identity != unit.identity {
            return false;
        }
        // A member without a directory takes the run's; one with another
        // ends it.
        if unit.comp_dir.is_some() && unit.comp_dir != f.comp_dir {
            return false;
        }
        // The merged root takes the first member's name, in its own field.
        let shape = |u: &Unit| u.name.as_ref().map(|(form, b, _)| (*form, b.len()));
        if shape(f) != shape(unit) {
            return false;
        }
    }
    let line = &debug.line;
    let Some(&t) = unit.line.and_then(|(l, _)| debug.line_at.get(&l)) else {
        return false;
    };
    let (table, head) = (&debug.line_tables[t], &debug.line_tables[run.head]);
    if line.data.get(table.params.clone()) != line.data.get(head.params.clone())
        || table.dir_fields != head.dir_fields
        || table.file_fields != head.file_fields
        || line.data.get(table.start + 4..table.start + 8)
            != line.data.get(head.start + 4..head.start + 8)
    {
        return false;
    }
    // Directories and files, as they would be numbered.
    let (dir_map, new_dirs, pending_dir_keys) = number_entries(
        table.dirs.len(),
        &run.dir_keys,
        (head.dirs.len() + run.dirs.len()) as u64,
        |d| entry_key(line, table, d, None, &[]),
    );
    let (file_map, new_files, pending_file_keys) = number_entries(
        table.files.len(),
        &run.file_keys,
        (head.files.len() + run.files.len()) as u64,
        |f| entry_key(line, table, f, Some(()), &dir_map),
    );
    // A directory index written in a fixed-size form must fit it.
    let dir_form = table
        .file_fields
        .iter()
        .find(|(c, _)| *c == DW_LNCT_DIRECTORY_INDEX)
        .map(|&(_, f)| f);
    let dir_fits = |v: u64| match dir_form {
        Some(DW_FORM_DATA1) => v < 0x100,
        Some(DW_FORM_DATA2) => v < 0x1_0000,
        Some(DW_FORM_UDATA) | None => true,
        Some(_) => false,
    };
    if !dir_map.iter().all(|&d| dir_fits(d)) {
        return false;
    }
    let file_fits = unit.file_uses.iter().all(|f| {
        file_map
            .get(f.value as usize)
            .is_some_and(|&n| fits(n, f.size, f.uleb))
    });
    if !file_fits {
        return false;
    }
    // Indices into the address and list tables.
    let mut counts = [0u64; 3];
    for kind in KINDS {
        let k = kind as usize;
        let uses = &unit.uses[k];
        let count = match unit.bases[k] {
            Some(_) => match debug.contribution(kind, unit) {
                Some(c) if !c.opaque => c.count,
                _ => return false,
            },
            None if uses.is_empty() && (kind != Kind::Addr || unit.low_pc.is_none()) => 0,
            None => return false,
        };
        let offset = run.totals[k];
        let low_pc = unit.low_pc.filter(|_| kind == Kind::Addr);
        if !uses
            .iter()
            .chain(low_pc.iter())
            .all(|f| fits(f.value + offset, f.size, f.uleb))
        {
            return false;
        }
        counts[k] = count;
    }
    // Code: one range of one section, in order, or else ranges the
    // merged root lists.
    if let Some((sym, start, end)) = unit.code {
        let in_order = run.code.is_none_or(|(s, _, e)| s == sym && start >= e);
        if !in_order && !debug.root_ranges {
            return false;
        }
        let Some(low) = unit.low_pc else { return false };
        let index = low.value + run.totals[Kind::Addr as usize];
        match run.code {
            Some((s, first, _)) if in_order && run.one_range => run.code = Some((s, first, end)),
            Some(_) => run.one_range = false,
            None => {
                run.code = Some((sym, start, end));
                run.low_pc = Some(index);
            }
        }
        run.ranges
            .push((index, u64::try_from(end - start).unwrap_or(0)));
    }
    run.dirs.extend(new_dirs.into_iter().map(|d| (t, d)));
    run.dir_keys.extend(pending_dir_keys);
    for f in new_files {
        let dir = dir_index(line, table, f).and_then(|d| dir_map.get(d as usize).copied());
        run.files.push((t, f, dir.unwrap_or(0)));
    }
    run.file_keys.extend(pending_file_keys);
    run.file_maps.push(file_map);
    for kind in KINDS {
        let k = kind as usize;
        run.offsets[k].push(run.totals[k]);
        run.totals[k] += counts[k];
    }
    run.members.push(u);
    run.member_tables.push(t);
    true
}

/// Writes the merged table of `run` in `t` (addresses, or lists with their
/// offsets); returns its base.
fn merged_table(
    debug: &Debug,
    t: &Indexed,
    run: &Run,
    units: &[Unit],
    starts: &[u64],
    out: &mut New,
) -> Option<usize> {
    let kind = t.kind;
    let k = kind as usize;
    let of = |m: usize| debug.contribution(kind, &units[m]);
    let first = run.members.iter().find_map(|&m| of(m))?;
    let start = out.copy(&t.old, first.start..first.start + kind.header())?;
    let base = out.data.len();
    if kind == Kind::Addr {
        for &m in &run.members {
            if let Some(c) = of(m) {
                out.copy(&t.old, c.base..c.end)?;
            }
        }
    } else {
        // The offsets, filled in once the lists are placed; a root that
        // lists its ranges has the last list.
        let root_list = kind == Kind::Rng && !run.one_range;
        let total = run.totals[k] + u64::from(root_list);
        out.put_u32(start + 8, u32::try_from(total).ok()?)?;
        out.data.resize(base + 4 * usize::try_from(total).ok()?, 0);
        let mut offsets = Vec::new();
        for (i, &m) in run.members.iter().enumerate() {
            let Some(c) = of(m) else { continue };
            let addr_offset = run.offsets[Kind::Addr as usize][i];
            let lists = c.base + 4 * usize::try_from(c.count).ok()?..c.end;
            let unit = &units[m];
            let moved = Moved {
                addr_offset,
                unit_base: unit.low_pc.map(|f| f.value + addr_offset),
                children: Some((
                    (unit.children.start - unit.start) as u64,
                    (unit.children.end - unit.start) as u64,
                    starts[i],
                )),
            };
            let placed = rewrite_lists(&t.old, kind, lists, c.base, &moved, out, base)?;
            for j in 0..c.count {
                let old = u64::from(u32_at(t.old.data, (c.base as u64) + 4 * j)?);
                offsets.push(*placed.get(&old)?);
            }
        }
        if root_list {
            offsets.push((out.data.len() - base) as u64);
            root_range_list(run, out);
        }
        for (j, o) in offsets.into_iter().enumerate() {
            out.put_u32(base + 4 * j, u32::try_from(o).ok()?)?;
        }
    }
    let length = u32::try_from(out.data.len() - start - 4).ok()?;
    out.put_u32(start, length)?;
    Some(base)
}

/// A merged root written anew with a declaration added to the unit's
/// abbreviation table (`code`: the donor's, changed):
///
/// - where the run's code is in several ranges it lists them, as clang's
///   root does for a unit whose code is in several sections:
///   `DW_AT_low_pc` an address of 0 and `DW_AT_ranges` a range list
///   index in place of `DW_AT_high_pc`;
/// - the base of each table the run has and the donor's root does not
///   name (a fragment's root names only the tables it has) is added,
///   relocated as its `DW_AT_stmt_list` is.
struct RewrittenRoot {
    code: u64,
    /// The index of the root's range list, where it lists ranges.
    list_index: Option<u64>,
    /// The bases added, with their table's section symbol.
    added_bases: Vec<(Kind, Option<SymRef>)>,
    r_type: u32,
}

/// The declaration of a [`RewrittenRoot`] made from the donor's `decl`.
fn rewritten_declaration(code: u64, decl: &Abbrev, ranges: bool, added: &[Kind]) -> Vec<u8> {
    const DW_TAG_COMPILE_UNIT: u64 = gimli::DW_TAG_compile_unit.0 as u64;
    let mut out = Vec::new();
    write_uleb(&mut out, code);
    write_uleb(&mut out, DW_TAG_COMPILE_UNIT);
    out.push(1); // DW_CHILDREN_yes
    let attribute = |out: &mut Vec<u8>, name: u64, form: u64, implicit: i64| {
        write_uleb(out, name);
        write_uleb(out, form);
        if form == super::dwarf::DW_FORM_IMPLICIT_CONST {
            write_sleb(out, implicit);
        }
    };
    for &(name, form, implicit) in &decl.attributes {
        match name {
            DW_AT_LOW_PC if ranges => attribute(&mut out, DW_AT_LOW_PC, DW_FORM_ADDR, 0),
            DW_AT_HIGH_PC if ranges => attribute(&mut out, DW_AT_RANGES, DW_FORM_RNGLISTX, 0),
            _ => attribute(&mut out, name, form, implicit),
        }
    }
    for kind in added {
        attribute(&mut out, kind.base_attribute(), DW_FORM_SEC_OFFSET, 0);
    }
    out.extend_from_slice(&[0, 0]);
    out
}

/// Writes a signed LEB128.
fn write_sleb(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
        out.push(if done { byte } else { byte | 0x80 });
        if done {
            return;
        }
    }
}

/// The range list of a merged root whose code is in several ranges: each
/// member's code by its address's index and its length.
fn root_range_list(run: &Run, out: &mut New) {
    const DW_RLE_STARTX_LENGTH: u8 = gimli::DW_RLE_startx_length.0;
    for &(index, length) in &run.ranges {
        out.data.push(DW_RLE_STARTX_LENGTH);
        write_uleb(&mut out.data, index);
        write_uleb(&mut out.data, length);
    }
    out.data.push(0); // DW_RLE_end_of_list
}

/// A contribution of its own to `.debug_rnglists` for a merged root that
/// lists its ranges when none of its members had one; returns its base.
fn new_range_table(run: &Run, out: &mut New) -> Option<usize> {
    let start = out.data.len();
    out.data.extend_from_slice(&[0, 0, 0, 0, 5, 0, 8, 0]); // length, version 5, 8-byte addresses
    out.data.extend_from_slice(&1u32.to_le_bytes()); // one offset
    let base = out.data.len();
    out.data.extend_from_slice(&4u32.to_le_bytes()); // the list, after it
    root_range_list(run, out);
    out.put_u32(start, u32::try_from(out.data.len() - start - 4).ok()?)?;
    Some(base)
}

/// How a member's lists change in the merged table: its address indices
/// move up by `addr_offset`, and a list whose offsets are relative to the
/// unit's base address (its `DW_AT_low_pc`, no longer the merged unit's)
/// starts with that address, `unit_base` in the merged address table.
struct Moved {
    addr_offset: u64,
    unit_base: Option<u64>,
    /// Where the unit's children were and are: (old start, old end, new
    /// start), offsets in the unit, for the base types expressions name;
    /// `None`: they stay.
    children: Option<(u64, u64, u64)>,
}

impl Moved {
    /// The new offset of a base type at `v` in the unit (0, the generic
    /// type, stays).
    fn base_type(&self, v: u64) -> Option<u64> {
        match self.children {
            Some((old_first, old_end, new_first)) if v != 0 => (old_first..old_end)
                .contains(&v)
                .then(|| v - old_first + new_first),
            _ => Some(v),
        }
    }
}

/// Appends the lists in `lists` (of a contribution whose offsets start at
/// `base`) as `moved` says; returns where each list went: offset from
/// `base` → offset from `new_base`. `None` for an entry or operation not
/// listed here.
fn rewrite_lists(
    old: &Old,
    kind: Kind,
    lists: Range<usize>,
    base: usize,
    moved: &Moved,
    out: &mut New,
    new_base: usize,
) -> Option<HashMap<u64, u64>> {
    const BASE_ADDRESSX: u8 = 1;
    const OFFSET_PAIR: u8 = 4;
    let addr_offset = moved.addr_offset;
    let mut has_base = false;
    let b = old.data;
    let mut placed = HashMap::default();
    let mut at = lists.start;
    let mut list_start = true;
    let uleb = |at: &mut usize| -> Option<u64> {
        let (v, used) = read_uleb(b.get(*at..)?)?;
        *at += used;
        Some(v)
    };
    while at < lists.end {
        if list_start {
            placed.insert((at - base) as u64, (out.data.len() - new_base) as u64);
            has_base = false;
        }
        let entry = *b.get(at)?;
        at += 1;
        let base_entry = entry == BASE_ADDRESSX
            || (kind, entry) == (Kind::Loc, 6)
            || (kind, entry) == (Kind::Rng, 5);
        has_base |= base_entry;
        if entry == OFFSET_PAIR && !has_base {
            out.data.push(BASE_ADDRESSX);
            write_uleb(&mut out.data, moved.unit_base?);
            has_base = true;
        }
        out.data.push(entry);
        list_start = entry == 0; // end_of_list
        let ListEntry {
            indices,
            others,
            fixed,
            location,
        } = list_entry(kind == Kind::Rng, entry)?;
        if fixed > 0 {
            out.copy(old, at..at + fixed)?;
            at += fixed;
        }
        for _ in 0..indices {
            let v = uleb(&mut at)?;
            write_uleb(&mut out.data, v + addr_offset);
        }
        for _ in 0..others {
            let v = uleb(&mut at)?;
            write_uleb(&mut out.data, v);
        }
        if location {
            let len = usize::try_from(uleb(&mut at)?).ok()?;
            let e = at..at.checked_add(len)?;
            at = e.end;
            let mut expression = New::default();
            let mut from = e.start;
            let found = expression_indices(b.get(e.clone())?, e.start)?;
            let mut fields: Vec<(Field, bool)> = (found.indices.into_iter().map(|f| (f, false)))
                .chain(found.types.into_iter().map(|f| (f, true)))
                .collect();
            fields.sort_unstable_by_key(|(f, _)| f.at);
            for (f, base_type) in fields {
                expression.copy(old, from..f.at)?;
                if base_type {
                    // Padded as LLVM writes it (four bytes), so that it
                    // fits any place in a merged unit.
                    let v = moved.base_type(f.value)?;
                    if f.size < 4 || !fits(v, f.size, true) {
                        return None;
                    }
                    expression.data.extend_from_slice(&uleb_padded(v, f.size));
                } else {
                    write_uleb(&mut expression.data, f.value + addr_offset);
                }
                from = f.at + f.size;
            }
            expression.copy(old, from..e.end)?;
            write_uleb(&mut out.data, expression.data.len() as u64);
            out.append(expression);
        }
        if at > lists.end {
            return None;
        }
    }
    Some(placed)
}

/// How a run's merged unit is laid out: its root, if it lists the run's
/// ranges, and where each member's children start (`children_starts`).
struct Layout<'a> {
    rewritten_root: Option<&'a RewrittenRoot>,
    starts: &'a [u64],
}

/// Where each member's children start in the merged unit of `run` (see
/// `merged_unit`): after the header and the root, one after another.
fn children_starts(run: &Run, units: &[Unit], root: Option<&RewrittenRoot>) -> Option<Vec<u64>> {
    let d = &units[run.donor?];
    let uleb_size = |v: u64| {
        let mut b = Vec::new();
        write_uleb(&mut b, v);
        b.len()
    };
    let root_size = match root {
        None => d.root_end - d.root_at,
        Some(rr) => {
            let attributes: usize = (d.root_attrs.iter())
                .map(|&(name, _, _, _, size)| match (name, rr.list_index) {
                    (DW_AT_LOW_PC, Some(_)) => 8,
                    (DW_AT_HIGH_PC, Some(index)) => uleb_size(index),
                    _ => size,
                })
                .sum();
            uleb_size(rr.code) + attributes + 4 * rr.added_bases.len()
        }
    };
    let mut at = (12 + root_size) as u64;
    let mut starts = Vec::with_capacity(run.members.len());
    for &m in &run.members {
        starts.push(at);
        at += units[m].children.len() as u64;
    }
    Some(starts)
}

/// The merged compile unit of `run`: the donor's header and root, then
/// every member's children. `bases`: per kind, the old base of the run's
/// merged table; `head_line`: the old offset of its line table.
fn merged_unit(
    info: &Old,
    units: &[Unit],
    run: &Run,
    bases: &[Option<i64>; 3],
    head_line: i64,
    layout: Layout,
    out: &mut New,
) -> Option<()> {
    let Layout {
        rewritten_root,
        starts,
    } = layout;
    let d = &units[run.donor?];
    let start = out.copy(info, d.start..d.start + 12)?;
    // Where the donor's root attributes went.
    let mut placed: HashMap<usize, usize> = HashMap::default();
    let one_range = match rewritten_root {
        None => {
            let root = out.copy(info, d.root_at..d.root_end)?;
            for &(_, _, _, at, _) in &d.root_attrs {
                placed.insert(at, at - d.root_at + root);
            }
            true
        }
        Some(rr) => {
            write_uleb(&mut out.data, rr.code);
            for &(name, _, _, at, size) in &d.root_attrs {
                match (name, rr.list_index) {
                    (DW_AT_LOW_PC, Some(_)) => out.data.extend_from_slice(&[0; 8]),
                    (DW_AT_HIGH_PC, Some(index)) => write_uleb(&mut out.data, index),
                    _ => {
                        placed.insert(at, out.copy(info, at..at + size)?);
                    }
                }
            }
            for &(kind, sym) in &rr.added_bases {
                let at = out.data.len();
                out.data.extend_from_slice(&[0; 4]);
                out.relas.push(OutRela {
                    offset: at as u64,
                    sym,
                    r_type: rr.r_type,
                    addend: bases[kind as usize]?,
                });
            }
            rr.list_index.is_none()
        }
    };
    if let Some((_, code_start, code_end)) = run.code.filter(|_| one_range) {
        let high = d.high_pc?;
        let length = u64::try_from(code_end - code_start).ok()?;
        out.put_field(placed[&high.at], high.size, high.uleb, length)?;
        let low = d.low_pc?;
        out.put_field(placed[&low.at], low.size, low.uleb, run.low_pc?)?;
    }
    if let (Some((_, first, _)), Some((_, _, at))) = (&units[*run.members.first()?].name, &d.name) {
        let at = *placed.get(at)?;
        out.data
            .get_mut(at..at + first.len())?
            .copy_from_slice(first);
    }
    out.set_addend(*placed.get(&d.line?.1)?, head_line)?;
    for kind in KINDS {
        if let Some((_, at)) = d.bases[kind as usize] {
            out.set_addend(*placed.get(&at)?, bases[kind as usize]?)?;
        }
    }
    for (i, &m) in run.members.iter().enumerate() {
        let unit = &units[m];
        let block = out.copy(info, unit.children.clone())?;
        let moved = |at: usize| at - unit.children.start + block;
        let old_first = (unit.children.start - unit.start) as u64;
        let old_end = (unit.children.end - unit.start) as u64;
        let new_first = (block - start) as u64;
        // Location lists moved the base types they name here.
        if starts.get(i) != Some(&new_first) {
            return None;
        }
        for &at in &unit.refs {
            let v = u64::from(u32_at(info.data, at as u64)?);
            if v < old_first || v >= old_end {
                return None;
            }
            out.put_u32(moved(at), u32::try_from(v - old_first + new_first).ok()?)?;
        }
        for f in &unit.type_refs {
            if f.value != 0 {
                if f.value < old_first || f.value >= old_end {
                    return None;
                }
                out.put_field(moved(f.at), f.size, true, f.value - old_first + new_first)?;
            }
        }
        for kind in KINDS {
            let offset = run.offsets[kind as usize][i];
            if offset > 0 {
                for f in &unit.uses[kind as usize] {
                    out.put_field(moved(f.at), f.size, f.uleb, f.value + offset)?;
                }
            }
        }
        for f in &unit.file_uses {
            let n = *run.file_maps[i].get(f.value as usize)?;
            if n != f.value {
                out.put_field(moved(f.at), f.size, f.uleb, n)?;
            }
        }
    }
    out.data.push(0); // the root's children end
    let length = u32::try_from(out.data.len() - start - 4).ok()?;
    out.put_u32(start, length)
}

/// Reads the compile unit at `at`, with the abbreviation tables by offset
/// and the line section's symbol.
fn read_unit(
    debug: &Debug,
    at: usize,
    abbrev_tables: &HashMap<i64, Vec<Abbrev>>,
    line_sym: Option<SymRef>,
) -> Option<Unit> {
    let info = &debug.info;
    let data = info.data;
    let (end, version) = unit_extent(data, at)?;
    let mut unit = Unit {
        start: at,
        end,
        mergeable: false,
        abbrevs: (None, 0),
        strings: None,
        identity: Vec::new(),
        comp_dir: None,
        name: None,
        root_at: at + 12,
        root_end: at + 12,
        root_children: false,
        root_code: 0,
        root_attrs: Vec::new(),
        children: end..end,
        line: None,
        bases: [None; 3],
        low_pc: None,
        high_pc: None,
        code: None,
        refs: Vec::new(),
        type_refs: Vec::new(),
        uses: Default::default(),
        file_uses: Vec::new(),
    };
    // A DWARF 5 compile unit with 8-byte addresses; anything else stays.
    if version != 5 || *data.get(at + 6)? != 1 || *data.get(at + 7)? != 8 {
        return Some(unit);
    }
    unit.abbrevs = match info.relocated(at + 8) {
        Some(relocated) => relocated,
        None => (None, i64::from(u32_at(data, at as u64 + 8)?)),
    };
    let table = abbrev_tables.get(&unit.abbrevs.1)?;
    let mut mergeable = true;
    let mut p = at + 12;
    let mut root = true;
    while p < end {
        let (code, used) = read_uleb(data.get(p..end)?)?;
        p += used;
        if code == 0 {
            continue;
        }
        let abbrev = table.iter().find(|a| a.code == code)?;
        if root {
            unit.root_code = code;
        }
        for &(name, form, implicit) in &abbrev.attributes {
            if form == 0x16 {
                return Some(unit); // DW_FORM_indirect
            }
            let size = form_size(form, data.get(p..end)?, 8, 5)?;
            if root {
                unit.root_attrs.push((name, form, implicit, p, size));
            }
            let bytes = data.get(p..p + size)?;
            let field = form_value(form, bytes).map(|value| Field {
                at: p,
                size,
                value,
                uleb: form::is_uleb(form),
            });
            let still = if root {
                unit.read_root_attribute(debug, line_sym, (name, form), p, bytes, field)?
            } else {
                unit.read_child_attribute(name, form, p, size, bytes, field)?
            };
            mergeable &= still;
            p += size;
        }
        if root {
            root = false;
            unit.root_end = p;
            unit.root_children = abbrev.children;
        }
    }
    if p != end {
        return None;
    }
    unit.children = if unit.root_children {
        if data.get(end - 1) != Some(&0) || end - 1 < unit.root_end {
            return Some(unit);
        }
        unit.root_end..end - 1
    } else {
        unit.root_end..unit.root_end
    };
    // The unit's code, from its address table.
    mergeable &= unit.find_code(debug)?;
    unit.mergeable = mergeable && unit.line.is_some();
    Some(unit)
}

impl Unit {
    /// Reads one attribute of the unit's root DIE at `p`; whether the unit
    /// may still be merged.
    fn read_root_attribute(
        &mut self,
        debug: &Debug,
        line_sym: Option<SymRef>,
        (name, form): (u64, u64),
        p: usize,
        bytes: &[u8],
        field: Option<Field>,
    ) -> Option<bool> {
        let info = &debug.info;
        let unit = self;
        let base = KINDS.iter().find(|k| k.base_attribute() == name);
        let mut mergeable = true;
        match name {
            DW_AT_STMT_LIST => match info.relocated(p) {
                Some((Some(sym), addend)) if Some(sym) == line_sym => unit.line = Some((addend, p)),
                _ => mergeable = false,
            },
            _ if base.is_some() => {
                let kind = *base?;
                let sym = debug.table(kind).and_then(|t| t.sym);
                match info.relocated(p) {
                    Some((Some(s), addend)) if Some(s) == sym => {
                        unit.bases[kind as usize] = Some((addend, p))
                    }
                    _ => mergeable = false,
                }
            }
            DW_AT_STR_OFFSETS_BASE => unit.strings = info.relocated(p),
            DW_AT_LOW_PC if form == DW_FORM_ADDRX => unit.low_pc = field,
            // No code: an address 0 nothing relocates.
            DW_AT_LOW_PC if form == DW_FORM_ADDR && info.relocated(p).is_none() => {}
            DW_AT_HIGH_PC if form == DW_FORM_DATA4 => unit.high_pc = field,
            DW_AT_LOW_PC | DW_AT_HIGH_PC | DW_AT_RANGES => mergeable = false,
            DW_AT_NAME if info.relocated(p).is_none() => {
                unit.name = Some((form, bytes.to_vec(), p))
            }
            DW_AT_COMP_DIR if info.relocated(p).is_none() => {
                unit.comp_dir = Some((form, bytes.to_vec()))
            }
            _ if info.relocated(p).is_some() => mergeable = false,
            _ => unit.identity.push((name, form, bytes.to_vec())),
        }
        Some(mergeable)
    }

    /// Reads one attribute of a DIE below the root at `p`: what it
    /// references and which indices it holds; whether the unit may still
    /// be merged.
    fn read_child_attribute(
        &mut self,
        name: u64,
        form: u64,
        p: usize,
        size: usize,
        bytes: &[u8],
        field: Option<Field>,
    ) -> Option<bool> {
        let unit = self;
        let mut mergeable = true;
        let uses = &mut unit.uses;
        match form {
            DW_FORM_REF4 => unit.refs.push(p),
            DW_FORM_ADDRX | form::ADDRX1 | form::ADDRX2 | form::ADDRX3 | form::ADDRX4 => {
                uses[Kind::Addr as usize].extend(field)
            }
            DW_FORM_LOCLISTX => uses[Kind::Loc as usize].extend(field),
            DW_FORM_RNGLISTX => uses[Kind::Rng as usize].extend(field),
            // References out of the unit, offsets into tables.
            form::REF_ADDR
            | form::REF1
            | form::REF2
            | form::REF8
            | form::REF_UDATA
            | DW_FORM_SEC_OFFSET => mergeable = false,
            DW_FORM_EXPRLOC | DW_FORM_BLOCK | DW_FORM_BLOCK1 | DW_FORM_BLOCK2 | DW_FORM_BLOCK4 => {
                let header = size - block_length(form, bytes)?;
                match expression_indices(bytes.get(header..)?, p + header) {
                    // LLVM pads a base type's offset to four bytes, room
                    // for any place in a merged unit.
                    Some(found) if found.types.iter().all(|f| f.size >= 4) => {
                        uses[Kind::Addr as usize].extend(found.indices);
                        unit.type_refs.extend(found.types);
                    }
                    _ => mergeable = false,
                }
            }
            _ => {}
        }
        if matches!(name, DW_AT_DECL_FILE | DW_AT_CALL_FILE) {
            match (form, field) {
                (DW_FORM_DATA1 | DW_FORM_DATA2 | DW_FORM_DATA4 | DW_FORM_UDATA, Some(f)) => {
                    unit.file_uses.push(f)
                }
                _ => mergeable = false,
            }
        }
        Some(mergeable)
    }

    /// The unit's code, from its address table (`code`); whether the unit
    /// may still be merged (`false`: code it cannot place).
    fn find_code(&mut self, debug: &Debug) -> Option<bool> {
        let unit = self;
        match (unit.low_pc, unit.high_pc) {
            (Some(low), Some(high)) => {
                let (Some(addr), Some(c)) = (
                    debug.table(Kind::Addr),
                    debug.contribution(Kind::Addr, unit),
                ) else {
                    return Some(false);
                };
                let entry = usize::try_from(low.value)
                    .ok()
                    .and_then(|i| i.checked_mul(8)?.checked_add(c.base));
                let Some(entry) = entry else {
                    return Some(false);
                };
                let relocated = (entry + 8 <= c.end)
                    .then(|| addr.old.relocated(entry))
                    .flatten();
                let Some((sym @ Some(_), addend)) = relocated else {
                    return Some(false);
                };
                unit.code = Some((sym, addend, addend + i64::try_from(high.value).ok()?));
                Some(true)
            }
            (None, None) => Some(true),
            _ => Some(false),
        }
    }
}

/// The length of a block form's contents (its size less its length field).
fn block_length(form: u64, bytes: &[u8]) -> Option<usize> {
    Some(match form {
        DW_FORM_EXPRLOC | DW_FORM_BLOCK => usize::try_from(read_uleb(bytes)?.0).ok()?,
        DW_FORM_BLOCK1 => *bytes.first()? as usize,
        DW_FORM_BLOCK2 => u16_at(bytes, 0)? as usize,
        DW_FORM_BLOCK4 => u32_at(bytes, 0)? as usize,
        _ => return None,
    })
}

/// What a DWARF expression holds that a merge moves (see
/// `dwarf::expression_operands`), as fields rewritten in place.
struct Expression {
    indices: Vec<Field>,
    types: Vec<Field>,
}

/// The address indices and base types of the DWARF expression `e` (at
/// `at` in its section); `None` when it has an operation not listed in
/// `dwarf::expression_operands`.
fn expression_indices(e: &[u8], at: usize) -> Option<Expression> {
    let found = super::dwarf::expression_operands(e, at)?;
    let fields = |operands: Vec<super::dwarf::Operand>| -> Vec<Field> {
        (operands.into_iter())
            .map(|o| Field {
                at: o.at,
                size: o.size,
                value: o.value,
                uleb: true,
            })
            .collect()
    };
    Some(Expression {
        indices: fields(found.indices),
        types: fields(found.types),
    })
}

/// The contributions of an address or list section (DWARF 5, 8-byte
/// addresses); `None` when it has anything else.
fn contributions(kind: Kind, old: &Old) -> Option<Vec<Contribution>> {
    let data = old.data;
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (end, version) = unit_extent(data, at)?;
        if version != 5 || *data.get(at + 6)? != 8 || *data.get(at + 7)? != 0 {
            return None;
        }
        let base = at + kind.header();
        let count = match kind {
            Kind::Addr => ((end.checked_sub(base)?) / 8) as u64,
            Kind::Loc | Kind::Rng => u64::from(u32_at(data, at as u64 + 8)?),
        };
        let opaque = match kind {
            Kind::Addr => !(end - base).is_multiple_of(8),
            Kind::Loc | Kind::Rng => {
                let lists = usize::try_from(count)
                    .ok()
                    .and_then(|n| n.checked_mul(4)?.checked_add(base))
                    .unwrap_or(usize::MAX);
                lists > end
                    || rewrite_lists(
                        old,
                        kind,
                        lists..end,
                        base,
                        &Moved {
                            addr_offset: 0,
                            unit_base: Some(0),
                            children: None,
                        },
                        &mut New::default(),
                        0,
                    )
                    .is_none()
            }
        };
        out.push(Contribution {
            start: at,
            base,
            count,
            end,
            opaque,
        });
        at = end;
    }
    Some(out)
}

/// Numbers `count` entries of a member's line table in the merged one:
/// an entry whose key the run (or an earlier entry here) has takes that
/// number, a new one the next from `next`. Returns the numbers, the new
/// entries and their keys.
fn number_entries(
    count: usize,
    known: &HashMap<EntryKey, u64>,
    mut next: u64,
    key: impl Fn(usize) -> EntryKey,
) -> (Vec<u64>, Vec<usize>, HashMap<EntryKey, u64>) {
    let mut numbers = Vec::with_capacity(count);
    let mut new = Vec::new();
    let mut new_keys: HashMap<EntryKey, u64> = HashMap::default();
    for e in 0..count {
        let key = key(e);
        let n = match known.get(&key).or(new_keys.get(&key)) {
            Some(&n) => n,
            None => {
                new_keys.insert(key, next);
                new.push(e);
                next += 1;
                next - 1
            }
        };
        numbers.push(n);
    }
    (numbers, new, new_keys)
}

/// The directory index of file entry `f` of `table`.
fn dir_index(line: &Old, table: &LineTable, f: usize) -> Option<u64> {
    let mut at = table.files.get(f)?.start;
    for &(content, form) in &table.file_fields {
        let size = form_size(form, line.data.get(at..)?, 8, 5)?;
        if content == DW_LNCT_DIRECTORY_INDEX {
            return form_value(form, line.data.get(at..)?);
        }
        at += size;
    }
    None
}

/// What identifies entry `e` of a table's directories (`file` None) or
/// files; a file's directory index is given in the merged numbering.
fn entry_key(
    line: &Old,
    table: &LineTable,
    e: usize,
    file: Option<()>,
    dir_map: &[u64],
) -> EntryKey {
    let (range, fields) = match file {
        Some(()) => (&table.files[e], &table.file_fields),
        None => (&table.dirs[e], &table.dir_fields),
    };
    let mut key = Vec::new();
    let mut at = range.start;
    for &(content, form) in fields {
        let Some(size) = line.data.get(at..).and_then(|b| form_size(form, b, 8, 5)) else {
            return vec![(u64::MAX, None, e as i64, Vec::new())];
        };
        let bytes = line.data.get(at..at + size).unwrap_or_default();
        if file.is_some() && content == DW_LNCT_DIRECTORY_INDEX {
            let d = form_value(form, bytes).and_then(|d| dir_map.get(d as usize).copied());
            key.push((content, None, d.map_or(-1, |d| d as i64), Vec::new()));
        } else if let Some((sym, addend)) = line.relocated(at) {
            key.push((content, sym, addend, Vec::new()));
        } else {
            key.push((content, None, 0, bytes.to_vec()));
        }
        at += size;
    }
    key
}

/// The merged line table of `run`: the head table's header with the
/// appended directories and files, then each member's program.
fn merged_line_table(line: &Old, tables: &[LineTable], run: &Run, out: &mut New) -> Option<usize> {
    let head = &tables[run.head];
    let start = out.copy(line, head.start..head.start + 12)?; // length, version, sizes, header length
    out.copy(line, head.params.clone())?;
    out.copy(line, head.dir_format.clone())?;
    write_uleb(&mut out.data, (head.dirs.len() + run.dirs.len()) as u64);
    for d in &head.dirs {
        out.copy(line, d.clone())?;
    }
    for &(t, d) in &run.dirs {
        out.copy(line, tables[t].dirs[d].clone())?;
    }
    out.copy(line, head.file_format.clone())?;
    write_uleb(&mut out.data, (head.files.len() + run.files.len()) as u64);
    for f in &head.files {
        out.copy(line, f.clone())?;
    }
    for &(t, f, dir) in &run.files {
        let table = &tables[t];
        let mut at = table.files[f].start;
        for &(content, form) in &table.file_fields {
            let size = form_size(form, line.data.get(at..)?, 8, 5)?;
            if content == DW_LNCT_DIRECTORY_INDEX {
                match form {
                    DW_FORM_UDATA => write_uleb(&mut out.data, dir),
                    DW_FORM_DATA1 => out.data.push(u8::try_from(dir).ok()?),
                    DW_FORM_DATA2 => out
                        .data
                        .extend_from_slice(&u16::try_from(dir).ok()?.to_le_bytes()),
                    _ => return None,
                }
            } else {
                out.copy(line, at..at + size)?;
            }
            at += size;
        }
    }
    let header_length = u32::try_from(out.data.len() - (start + 12)).ok()?;
    out.put_u32(start + 8, header_length)?;
    for (&t, files) in run.member_tables.iter().zip(&run.file_maps) {
        rewrite_program(line, &tables[t], files, out)?;
    }
    let length = u32::try_from(out.data.len() - start - 4).ok()?;
    out.put_u32(start, length)?;
    Some(start)
}

/// Appends `table`'s header alone (its directories and files, no
/// program); returns where it starts.
fn header_only(line: &Old, table: &LineTable, out: &mut New) -> Option<usize> {
    let start = out.copy(line, table.start..table.program.start)?;
    let length = u32::try_from(table.program.start - table.start - 4).ok()?;
    out.put_u32(start, length)?;
    Some(start)
}

/// Appends `table`'s line program with its files renumbered by `files`.
fn rewrite_program(line: &Old, table: &LineTable, files: &[u64], out: &mut New) -> Option<()> {
    let b = line.data;
    let lengths = b.get(table.params.end - (table.opcode_base as usize - 1)..table.params.end)?;
    let mut at = table.program.start;
    let mut sequence_start = true;
    while at < table.program.end {
        if sequence_start {
            // Each sequence starts at file 1.
            if let Some(&one) = files.get(1).filter(|&&n| n != 1) {
                out.data.push(DW_LNS_SET_FILE);
                write_uleb(&mut out.data, one);
            }
            sequence_start = false;
        }
        let op = *b.get(at)?;
        let next = if op == 0 {
            let (len, used) = read_uleb(b.get(at + 1..)?)?;
            let end = (at + 1 + used).checked_add(usize::try_from(len).ok()?)?;
            if *b.get(at + 1 + used)? == DW_LNE_END_SEQUENCE {
                sequence_start = true;
            }
            end
        } else if op >= table.opcode_base {
            at + 1
        } else if op == DW_LNS_SET_FILE {
            let (v, used) = read_uleb(b.get(at + 1..)?)?;
            out.data.push(DW_LNS_SET_FILE);
            write_uleb(&mut out.data, *files.get(usize::try_from(v).ok()?)?);
            at += 1 + used;
            continue;
        } else if op == DW_LNS_FIXED_ADVANCE_PC {
            at + 3
        } else {
            let mut p = at + 1;
            for _ in 0..*lengths.get(op as usize - 1)? {
                p += read_uleb(b.get(p..)?)?.1;
            }
            p
        };
        if next > table.program.end {
            return None;
        }
        out.copy(line, at..next)?;
        at = next;
    }
    Some(())
}

/// A line table header's directory or file entries: the bytes of their
/// format, its fields (content type, form), and each entry's bytes.
type Entries = (Range<usize>, Vec<(u64, u64)>, Vec<Range<usize>>);

/// The line tables of `.debug_line`, each with its header read (DWARF 5
/// only: anything else, and no table is merged).
fn line_tables(data: &[u8]) -> Option<Vec<LineTable>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (end, version) = unit_extent(data, at)?;
        if version != 5 || *data.get(at + 6)? != 8 {
            return None;
        }
        let program = at + 12 + u32_at(data, at as u64 + 8)? as usize;
        let opcode_base = *data.get(at + 17)?;
        if opcode_base == 0 || program > end {
            return None;
        }
        let params = at + 12..at + 18 + opcode_base as usize - 1;
        let mut p = params.end;
        let entries = |p: &mut usize| -> Option<Entries> {
            let format_start = *p;
            let count = *data.get(*p)?;
            *p += 1;
            let mut fields = Vec::new();
            for _ in 0..count {
                let (content, used) = read_uleb(data.get(*p..)?)?;
                *p += used;
                let (form, used) = read_uleb(data.get(*p..)?)?;
                *p += used;
                fields.push((content, form));
            }
            let format = format_start..*p;
            let (n, used) = read_uleb(data.get(*p..)?)?;
            *p += used;
            let mut list = Vec::new();
            for _ in 0..n {
                let start = *p;
                for &(_, form) in &fields {
                    *p += form_size(form, data.get(*p..program)?, 8, 5)?;
                }
                if *p == start {
                    return None; // entries of no bytes: a count to trust no further
                }
                list.push(start..*p);
            }
            Some((format, fields, list))
        };
        let (dir_format, dir_fields, dirs) = entries(&mut p)?;
        let (file_format, file_fields, files) = entries(&mut p)?;
        if p != program {
            return None;
        }
        out.push(LineTable {
            start: at,
            end,
            params,
            opcode_base,
            dir_format,
            dir_fields,
            dirs,
            file_format,
            file_fields,
            files,
            program: program..end,
        });
        at = end;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::super::combine::combine;
    use super::super::combine::tests::{compose_parts, dump, succeed};

    /// One source compiled as three fragments (as `split` makes them: one
    /// definition each, the same compile unit name): a function, a global
    /// variable, a function that uses it from another header line.
    const SOURCE: &str = "#include <stdio.h>\n\
        #if PART == 1\n\
        int twice(int n) {\n\
          int r = n * 2;\n\
          return r;\n\
        }\n\
        #elif PART == 2\n\
        int counter = 40;\n\
        #else\n\
        int twice(int n);\n\
        extern int counter;\n\
        int main(void) { counter += twice(1); printf(\"%d\\n\", counter); return 0; }\n\
        #endif\n";

    /// A type unit names the line table of the compile unit it came with
    /// (its files); when that unit joins a merged one and its files are
    /// renumbered there, its table's header stays for the type unit, and
    /// the units still merge.
    #[test]
    fn fragments_with_type_units_merge() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.h"), "struct A { int a; };\n").unwrap();
        std::fs::write(d.join("b.h"), "struct B { long b; };\n").unwrap();
        let source = "#if PART == 1\n#include \"a.h\"\nint fa(A *p) { return p->a; }\n\
            #else\n#include \"b.h\"\nlong fb(B *p) { return p->b; }\n#endif\n";
        let (_, path) = compose_parts(d, "unit.cc", source, &["-O0", "-fdebug-types-section"], 2);
        let info = dump(&path, "--debug-info");
        assert_eq!(info.matches("Compile Unit:").count(), 1, "{info}");
        assert_eq!(info.matches("Type Unit:").count(), 2, "{info}");
        // Each type unit's file is still its own header's.
        for (name, file) in [("\"A\"", "a.h"), ("\"B\"", "b.h")] {
            let at = info.find(&format!("DW_AT_name\t({name})")).expect(name);
            let rest = &info[at..];
            let decl = &rest[rest.find("DW_AT_decl_file").expect("decl_file")..];
            let decl = &decl[..decl.find('\n').unwrap_or(decl.len())];
            assert!(decl.contains(file), "{name}: {decl}");
        }
    }

    #[test]
    fn a_units_fragments_become_one_compile_unit() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (_, path) = compose_parts(d, "unit.c", SOURCE, &["-O0"], 3);
        let info = dump(&path, "--debug-info");
        assert_eq!(info.matches("DW_TAG_compile_unit").count(), 1, "{info}");
        assert_eq!(info.matches("Compile Unit:").count(), 1, "{info}");
        let lines = dump(&path, "--debug-line");
        assert_eq!(lines.matches("Line table prologue").count(), 1, "{lines}");
        for name in ["\"twice\"", "\"r\"", "\"counter\"", "\"main\""] {
            assert!(info.contains(name), "{name} in {info}");
        }

        // Linked, a debugger finds each function's lines, the variable's
        // address (an index moved up in the merged address table) and the
        // local's frame slot.
        let exe = d.join("prog");
        succeed(Command::new("clang-19").arg("-o").arg(&exe).arg(&path));
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&run.stdout), "42\n");
        let gdb = Command::new("gdb")
            .args(["-q", "-batch", "-nx"])
            .args(["-ex", "info line twice", "-ex", "info line main"])
            .args([
                "-ex",
                "print counter",
                "-ex",
                "break unit.c:5",
                "-ex",
                "run",
            ])
            .args(["-ex", "print r", "-ex", "bt"])
            .arg(&exe)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&gdb.stdout);
        assert!(
            out.contains("Line 3 of \"") && out.contains("Line 12 of \""),
            "{out}"
        );
        assert!(out.contains("$1 = 40"), "{out}");
        assert!(out.contains("$2 = 2"), "{out}");
        assert!(
            out.contains("in main () at ") && out.contains("unit.c:12"),
            "{out}"
        );
    }

    /// A run whose only member naming a table (here location lists) may
    /// not give the merged root (its compile unit names no directory, as
    /// a carved fragment of a header with an absolute path does not): the
    /// first member's root is written anew with the table's base added,
    /// and the units still merge.
    #[test]
    fn a_root_lacking_a_table_base_is_written_with_it() {
        let source = "extern void use(long);\n\
            #if PART == 1\n\
            int first(int n) { return n * 3; }\n\
            #else\n\
            long second(long a) { use(a); use(a + 1); return a; }\n\
            #endif\n";
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("base.c"), source).unwrap();
        let parts: Vec<Vec<u8>> = (1..=2)
            .map(|p| {
                let ir = d.join(format!("part{p}.ll"));
                succeed(
                    Command::new("clang-19")
                        .args(["-O2", "-g", "-S", "-emit-llvm", "-o"])
                        .arg(&ir)
                        .arg(format!("-DPART={p}"))
                        .arg(d.join("base.c")),
                );
                if p == 2 {
                    let text = std::fs::read_to_string(&ir).unwrap();
                    let mut out = String::new();
                    for (k, piece) in text.split("directory: \"").enumerate() {
                        if k == 0 {
                            out.push_str(piece);
                        } else {
                            out.push_str("directory: \"");
                            out.push_str(&piece[piece.find('"').unwrap()..]);
                        }
                    }
                    std::fs::write(&ir, out).unwrap();
                }
                let obj = d.join(format!("part{p}.o"));
                succeed(
                    Command::new("llc-19")
                        .args(["-O2", "-filetype=obj", "-o"])
                        .arg(&obj)
                        .arg(&ir),
                );
                std::fs::read(obj).unwrap()
            })
            .collect();
        let has = |p: usize, what: &str| {
            dump(&d.join(format!("part{p}.o")), "--debug-info").contains(what)
        };
        assert!(has(1, "DW_AT_comp_dir") && !has(2, "DW_AT_comp_dir"));
        assert!(!has(1, "DW_AT_loclists_base") && has(2, "DW_AT_loclists_base"));
        let objects: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let composed = combine(&objects, &[], &[]).expect("combined");
        let path = d.join("composed.o");
        std::fs::write(&path, &composed).unwrap();
        dump(&path, "--verify");
        let info = dump(&path, "--debug-info");
        assert_eq!(info.matches("Compile Unit:").count(), 1, "{info}");
        assert_eq!(info.matches("DW_AT_loclists_base").count(), 1, "{info}");
        // Each location list entry as before: `[low, high): operations`.
        let entries = |text: &str| {
            let mut found: Vec<String> = (text.lines())
                .filter_map(|l| l.split_once("): DW_OP").map(|(_, ops)| ops.to_string()))
                .collect();
            found.sort();
            found
        };
        let before = entries(&dump(&d.join("part2.o"), "--debug-info"));
        assert!(!before.is_empty());
        assert_eq!(entries(&info), before, "{info}");
    }

    /// Fragments whose variables' locations convert to base types
    /// (`DW_OP_convert`, in DIEs and in location lists) merge too, each
    /// conversion naming the same base type as before.
    #[test]
    fn fragments_converting_to_base_types_merge() {
        let source = "extern void use(int);\n\
            #if PART == 1\n\
            int narrow(long a) { short s = (short)a; char c = (char)(a >> 3);\n\
              use(a); use(a + 1); return 1; }\n\
            #else\n\
            long widen(unsigned char x) { int y = x; use(y); long z = (long)y * 3;\n\
              use(z); return z; }\n\
            #endif\n";
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let (parts, path) = compose_parts(d, "conv.c", source, &["-O2"], 2);
        // What each conversion names, from the parts as they were.
        // `DW_OP_convert (0x0000002b) "DW_ATE_unsigned_16"`: the name.
        let conversions = |text: &str| {
            let mut named: Vec<String> = (text.split("DW_OP_convert (").skip(1))
                .map(|rest| rest.split('"').nth(1).unwrap_or_default().to_string())
                .collect();
            named.sort();
            named
        };
        let mut before = Vec::new();
        for (k, part) in parts.iter().enumerate() {
            let path = d.join(format!("part{k}.o"));
            std::fs::write(&path, part).unwrap();
            before.extend(conversions(&dump(&path, "--debug-info")));
        }
        before.sort();
        assert!(before.len() >= 4, "{before:?}");
        let info = dump(&path, "--debug-info");
        assert_eq!(info.matches("Compile Unit:").count(), 1, "{info}");
        assert_eq!(conversions(&info), before, "{info}");
    }
}
