//! Compile units merged once an object is composed. Every fragment of a
//! unit with debug info is compiled as a compile unit of its own: a unit
//! header, a root DIE, a line table and an address table, and the
//! relocations they carry (about 360 bytes a fragment in the object, where
//! clang's object has one of each for the whole unit). Here runs of
//! consecutive compile units of the composed object that share their
//! abbreviation and string offsets tables and say the same of the unit
//! (producer, language, name, directory) become one compile unit:
//!
//! - `.debug_info`: one header and root DIE (those of the first member
//!   with code; its range widened to the run's code, which is one range
//!   of one section, in the members' order), then every member's
//!   children; references inside a unit move with it;
//! - `.debug_addr`: the members' address tables one after another, their
//!   indices (`DW_FORM_addrx*`, `DW_OP_addrx`, `DW_OP_constx`) moved up;
//! - `.debug_line`: the first member's line table with the directories and
//!   files of the others appended, then every member's line program, its
//!   `DW_LNS_set_file` operands (and the default file each sequence starts
//!   with) renumbered, as are `DW_AT_decl_file` and `DW_AT_call_file`.
//!
//! Values rewritten inside DIEs keep their size, so that no DIE moves
//! (a ULEB128 is padded to its length): a run ends where an index would
//! outgrow its field. A unit with anything else (range or location lists,
//! references across units, an expression operation not listed here, an
//! indirect form) stays as it is, and the whole object does if a
//! relocation points into a table that would go away. Type units are not
//! touched; they name the line table of the unit they came with, which
//! keeps its place and its file numbers.

use std::collections::HashMap;
use std::ops::Range;

use super::dwarf::{form_size, form_value, read_abbrevs, uleb_padded, unit_extent, Abbrev};
use super::relocatable::{
    read_uleb, u16_at, u32_at, write_uleb, Content, OutRela, OutSection, SymRef, SHF_GROUP,
};

const DW_AT_STMT_LIST: u64 = 0x10;
const DW_AT_LOW_PC: u64 = 0x11;
const DW_AT_HIGH_PC: u64 = 0x12;
const DW_AT_DECL_FILE: u64 = 0x3a;
const DW_AT_RANGES: u64 = 0x55;
const DW_AT_CALL_FILE: u64 = 0x58;
const DW_AT_STR_OFFSETS_BASE: u64 = 0x72;
const DW_AT_ADDR_BASE: u64 = 0x73;
const DW_AT_RNGLISTS_BASE: u64 = 0x74;
const DW_AT_LOCLISTS_BASE: u64 = 0x8c;

const DW_FORM_ADDR: u64 = 0x01;
const DW_FORM_BLOCK2: u64 = 0x03;
const DW_FORM_BLOCK4: u64 = 0x04;
const DW_FORM_DATA2: u64 = 0x05;
const DW_FORM_DATA4: u64 = 0x06;
const DW_FORM_BLOCK: u64 = 0x09;
const DW_FORM_BLOCK1: u64 = 0x0a;
const DW_FORM_DATA1: u64 = 0x0b;
const DW_FORM_UDATA: u64 = 0x0f;
const DW_FORM_REF4: u64 = 0x13;
const DW_FORM_SEC_OFFSET: u64 = 0x17;
const DW_FORM_EXPRLOC: u64 = 0x18;
const DW_FORM_ADDRX: u64 = 0x1b;

const DW_LNCT_DIRECTORY_INDEX: u64 = 0x2;
const DW_LNS_SET_FILE: u8 = 4;
const DW_LNS_FIXED_ADVANCE_PC: u8 = 9;
const DW_LNE_END_SEQUENCE: u8 = 1;

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

    fn put_u32(&mut self, at: usize, v: u32) -> Option<()> {
        self.data
            .get_mut(at..at + 4)?
            .copy_from_slice(&v.to_le_bytes());
        Some(())
    }

    /// Writes `v` into a field of `size` bytes at `at`: a ULEB128 padded
    /// to its length, or a little-endian number.
    fn put_field(&mut self, at: usize, size: usize, uleb: bool, v: u64) -> Option<()> {
        if !fits(v, size, uleb) {
            return None;
        }
        let bytes = if uleb {
            uleb_padded(v, size)
        } else {
            v.to_le_bytes()[..size].to_vec()
        };
        self.data.get_mut(at..at + size)?.copy_from_slice(&bytes);
        Some(())
    }
}

/// Whether `v` fits a field of `size` bytes (a ULEB128 of that length, or
/// a little-endian number).
fn fits(v: u64, size: usize, uleb: bool) -> bool {
    let bits = if uleb { 7 * size } else { 8 * size };
    bits >= 64 || v < (1u64 << bits)
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

/// One compile unit of the composed `.debug_info`.
struct Unit {
    start: usize,
    end: usize,
    /// Whether it can be a member of a run at all.
    mergeable: bool,
    abbrevs: (Option<SymRef>, i64),
    strings: Option<(Option<SymRef>, i64)>,
    /// The root's attributes that say what unit it is (producer, language,
    /// name, directory...): name, form and bytes.
    identity: Vec<(u64, u64, Vec<u8>)>,
    root_at: usize,
    root_end: usize,
    root_children: bool,
    /// The children's bytes, without the root's terminating zero.
    children: Range<usize>,
    /// The line table's offset (`DW_AT_stmt_list`) and where the field is.
    line: Option<(i64, usize)>,
    /// The address table's offset (`DW_AT_addr_base`) and where the field is.
    addr: Option<(i64, usize)>,
    /// The root's `DW_AT_low_pc` index (an `addrx`) and `DW_AT_high_pc`.
    low_pc: Option<Field>,
    high_pc: Option<Field>,
    /// Its code: (section symbol, start, end).
    code: Option<(Option<SymRef>, i64, i64)>,
    refs: Vec<usize>,
    addr_uses: Vec<Field>,
    file_uses: Vec<Field>,
}

/// One contribution to `.debug_addr`.
struct AddrTable {
    start: usize,
    entries: Range<usize>,
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
    /// Per member: the first index of its addresses in the run's table.
    addr_offsets: Vec<u64>,
    addr_total: u64,
    /// The member whose root the merged unit has (see `merged_sections`).
    donor: Option<usize>,
    code_end: Option<(Option<SymRef>, i64)>,
    /// The head line table, and the entries appended to it: (table, entry)
    /// and, for a file, its directory in the merged table.
    head: usize,
    dirs: Vec<(usize, usize)>,
    dir_keys: HashMap<EntryKey, u64>,
    files: Vec<(usize, usize, u64)>,
    file_keys: HashMap<EntryKey, u64>,
    /// Per member: its file numbers in the merged table.
    file_maps: Vec<Vec<u64>>,
    /// Per member: its line table.
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
    /// New contents of output sections (`.debug_info`, `.debug_addr`,
    /// `.debug_line`), by index.
    sections: Vec<(usize, New)>,
    /// Relocation addends that move: (section symbol, old addend) → new.
    moved: HashMap<(SymRef, i64), i64>,
}

/// The new `.debug_info`, `.debug_addr` and `.debug_line`, or `None`
/// where nothing is merged.
fn merged_sections(
    sections: &[OutSection],
    section_symbol: &HashMap<usize, usize>,
) -> Option<Merged> {
    let info_index = plain(sections, b".debug_info")?;
    let line_index = plain(sections, b".debug_line")?;
    let abbrev_index = plain(sections, b".debug_abbrev")?;
    let addr_index = plain(sections, b".debug_addr");
    let sym = |s: usize| section_symbol.get(&s).map(|&l| SymRef::Local(l));
    let (info_sym, line_sym, abbrev_sym) = (sym(info_index), sym(line_index), sym(abbrev_index));
    let addr_sym = addr_index.and_then(sym);
    // Nothing may point into `.debug_info` itself: its units move.
    if info_sym.is_some()
        && sections
            .iter()
            .any(|s| s.relas.iter().any(|r| r.sym == info_sym))
    {
        return None;
    }
    let info = Old::of(&sections[info_index])?;
    let line = Old::of(&sections[line_index])?;
    let abbrev = Old::of(&sections[abbrev_index])?;
    let addr = match addr_index {
        Some(a) => Some(Old::of(&sections[a])?),
        None => None,
    };
    let addr_tables = match &addr {
        Some(a) => addr_tables(a.data)?,
        None => Vec::new(),
    };
    let line_tables = line_tables(line.data)?;
    // The abbreviation tables the units name, read once each.
    let mut abbrev_tables: HashMap<i64, Vec<Abbrev>> = HashMap::new();
    let mut at = 0;
    while at < info.data.len() {
        let (end, _) = unit_extent(info.data, at)?;
        let offset = match info.relocated(at + 8) {
            Some((sym, addend)) if sym == abbrev_sym => addend,
            Some(_) => return None,
            None => i64::from(u32_at(info.data, at as u64 + 8)?),
        };
        if let std::collections::hash_map::Entry::Vacant(e) = abbrev_tables.entry(offset) {
            e.insert(read_abbrevs(
                abbrev.data.get(usize::try_from(offset).ok()?..)?,
            )?);
        }
        at = end;
    }
    let mut units = Vec::new();
    let mut at = 0;
    while at < info.data.len() {
        let unit = read_unit(
            &info,
            at,
            &abbrev_tables,
            (line_sym, addr_sym),
            addr.as_ref(),
            &addr_tables,
        )?;
        at = unit.end;
        units.push(unit);
    }

    // Runs of units.
    let addr_table_at: HashMap<i64, usize> = addr_tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.entries.start as i64, i))
        .collect();
    let line_table_at: HashMap<i64, usize> = line_tables
        .iter()
        .enumerate()
        .map(|(i, t)| (t.start as i64, i))
        .collect();
    let mut runs: Vec<Run> = Vec::new();
    let mut current: Option<Run> = None;
    for (u, unit) in units.iter().enumerate() {
        let joined = current.as_mut().is_some_and(|run| {
            join(
                run,
                u,
                &units,
                &line,
                &line_tables,
                &line_table_at,
                &addr_tables,
                &addr_table_at,
            )
        });
        if joined {
            continue;
        }
        if let Some(run) = current.take() {
            if run.members.len() > 1 {
                runs.push(run);
            }
        }
        if !unit.mergeable {
            continue;
        }
        let Some(&head) = unit.line.and_then(|(l, _)| line_table_at.get(&l)) else {
            continue;
        };
        let mut run = Run {
            members: Vec::new(),
            addr_offsets: Vec::new(),
            addr_total: 0,
            donor: None,
            code_end: None,
            head,
            dirs: Vec::new(),
            dir_keys: HashMap::new(),
            files: Vec::new(),
            file_keys: HashMap::new(),
            file_maps: Vec::new(),
            member_tables: Vec::new(),
        };
        let t = &line_tables[head];
        for d in 0..t.dirs.len() {
            run.dir_keys
                .entry(entry_key(&line, t, d, None, &[]))
                .or_insert(d as u64);
        }
        let identity: Vec<u64> = (0..t.dirs.len() as u64).collect();
        for f in 0..t.files.len() {
            run.file_keys
                .entry(entry_key(&line, t, f, Some(()), &identity))
                .or_insert(f as u64);
        }
        if join(
            &mut run,
            u,
            &units,
            &line,
            &line_tables,
            &line_table_at,
            &addr_tables,
            &addr_table_at,
        ) {
            current = Some(run);
        }
    }
    if let Some(run) = current.take() {
        if run.members.len() > 1 {
            runs.push(run);
        }
    }
    // The root the merged unit keeps: the first member's with code (its
    // range is widened to the run's), else the first with addresses.
    for run in runs.iter_mut() {
        let has = |f: &dyn Fn(&Unit) -> bool| run.members.iter().copied().find(|&m| f(&units[m]));
        run.donor = has(&|u| u.code.is_some())
            .or_else(|| has(&|u| u.addr.is_some()))
            .or(run.members.first().copied());
    }
    runs.retain(|r| {
        r.donor.is_some_and(|d| {
            units[d].root_children && (units[d].addr.is_some() || r.addr_total == 0)
        })
    });
    if runs.is_empty() {
        return None;
    }

    // What each unit, address table and line table becomes.
    let mut run_of_unit: HashMap<usize, usize> = HashMap::new();
    let mut first_addr_of_run: Vec<Option<usize>> = Vec::new();
    let mut addr_role: HashMap<usize, (usize, bool)> = HashMap::new(); // table → (run, first)
    let mut line_role: HashMap<usize, (usize, bool)> = HashMap::new();
    for (r, run) in runs.iter().enumerate() {
        let mut first_addr = None;
        for &m in &run.members {
            run_of_unit.insert(m, r);
            if let Some(&t) = units[m].addr.and_then(|(a, _)| addr_table_at.get(&a)) {
                let first = first_addr.is_none();
                first_addr.get_or_insert(t);
                if addr_role.insert(t, (r, first)).is_some() {
                    return None;
                }
            }
            let t = line_table_at.get(&units[m].line?.0)?;
            if line_role.insert(*t, (r, *t == run.head)).is_some() {
                return None;
            }
        }
        first_addr_of_run.push(first_addr);
    }
    let mut remap: HashMap<(SymRef, i64), i64> = HashMap::new();

    // .debug_addr
    let new_addr = match (&addr, addr_sym) {
        (Some(old), _) => {
            let mut out = New::default();
            for (t, table) in addr_tables.iter().enumerate() {
                match addr_role.get(&t) {
                    Some(&(_, false)) => continue,
                    Some(&(r, true)) => {
                        let start = out.copy(old, table.start..table.start + 8)?;
                        let entries_at = out.data.len();
                        for &m in &runs[r].members {
                            if let Some(&mt) =
                                units[m].addr.and_then(|(a, _)| addr_table_at.get(&a))
                            {
                                out.copy(old, addr_tables[mt].entries.clone())?;
                            }
                        }
                        let length = u32::try_from(out.data.len() - start - 4).ok()?;
                        out.put_u32(start, length)?;
                        if let Some(s) = addr_sym {
                            remap.insert((s, table.entries.start as i64), entries_at as i64);
                        }
                    }
                    None => {
                        let start = out.copy(old, table.start..table.entries.end)?;
                        if let Some(s) = addr_sym {
                            remap.insert((s, table.entries.start as i64), (start + 8) as i64);
                        }
                    }
                }
            }
            Some(out)
        }
        (None, _) => None,
    };

    // .debug_line
    let mut new_line = New::default();
    for (t, table) in line_tables.iter().enumerate() {
        match line_role.get(&t) {
            Some(&(_, false)) => continue,
            Some(&(r, true)) => {
                let start = merged_line_table(&line, &line_tables, &runs[r], &mut new_line)?;
                if let Some(s) = line_sym {
                    remap.insert((s, table.start as i64), start as i64);
                }
            }
            None => {
                let start = new_line.copy(&line, table.start..table.end)?;
                if let Some(s) = line_sym {
                    remap.insert((s, table.start as i64), start as i64);
                }
            }
        }
    }

    // .debug_info
    let mut new_info = New::default();
    for (u, unit) in units.iter().enumerate() {
        match run_of_unit.get(&u) {
            Some(&r) if runs[r].members[0] == u => {
                let first_addr = first_addr_of_run[r].map(|t| addr_tables[t].entries.start as i64);
                let head_line = line_tables[runs[r].head].start as i64;
                merged_unit(
                    &info,
                    &units,
                    &runs[r],
                    first_addr,
                    head_line,
                    &mut new_info,
                )?;
            }
            Some(_) => continue,
            None => {
                new_info.copy(&info, unit.start..unit.end)?;
            }
        }
    }

    // Every relocation into the line and address tables must name the
    // start of a table that stays.
    let targets = [line_sym, addr_sym];
    let rebuilt = [&new_info.relas, &new_line.relas];
    let addr_relas = new_addr.as_ref().map(|n| &n.relas);
    for (i, s) in sections.iter().enumerate() {
        let relas: &Vec<OutRela> = if i == info_index {
            rebuilt[0]
        } else if i == line_index {
            rebuilt[1]
        } else if Some(i) == addr_index {
            addr_relas?
        } else {
            &s.relas
        };
        for r in relas {
            if let Some(sym) = r.sym.filter(|s| targets.contains(&Some(*s))) {
                remap.get(&(sym, r.addend))?;
            }
        }
    }
    let mut rebuilt = vec![(info_index, new_info), (line_index, new_line)];
    if let (Some(index), Some(new)) = (addr_index, new_addr) {
        rebuilt.push((index, new));
    }
    Some(Merged {
        sections: rebuilt,
        moved: remap,
    })
}

/// Tries to add unit `u` to `run`: it must say the same of the unit as the
/// run's members, share its tables, and every index it holds must fit its
/// field once moved.
#[allow(clippy::too_many_arguments)]
fn join(
    run: &mut Run,
    u: usize,
    units: &[Unit],
    line: &Old,
    line_tables: &[LineTable],
    line_table_at: &HashMap<i64, usize>,
    addr_tables: &[AddrTable],
    addr_table_at: &HashMap<i64, usize>,
) -> bool {
    let unit = &units[u];
    if !unit.mergeable {
        return false;
    }
    if let Some(&first) = run.members.first() {
        let f = &units[first];
        if f.abbrevs != unit.abbrevs || f.strings != unit.strings || f.identity != unit.identity {
            return false;
        }
    }
    let Some(&t) = unit.line.and_then(|(l, _)| line_table_at.get(&l)) else {
        return false;
    };
    let (table, head) = (&line_tables[t], &line_tables[run.head]);
    if line.data.get(table.params.clone()) != line.data.get(head.params.clone())
        || table.dir_fields != head.dir_fields
        || table.file_fields != head.file_fields
        || line.data.get(table.start + 4..table.start + 8)
            != line.data.get(head.start + 4..head.start + 8)
    {
        return false;
    }
    // Directories and files, as they would be numbered.
    let mut new_dirs = Vec::new();
    let mut dir_map = Vec::with_capacity(table.dirs.len());
    let mut next_dir = (head.dirs.len() + run.dirs.len()) as u64;
    let mut pending_dir_keys: HashMap<EntryKey, u64> = HashMap::new();
    for d in 0..table.dirs.len() {
        let key = entry_key(line, table, d, None, &[]);
        let n = match run.dir_keys.get(&key).or(pending_dir_keys.get(&key)) {
            Some(&n) => n,
            None => {
                let n = next_dir;
                next_dir += 1;
                pending_dir_keys.insert(key, n);
                new_dirs.push(d);
                n
            }
        };
        dir_map.push(n);
    }
    let mut new_files = Vec::new();
    let mut file_map = Vec::with_capacity(table.files.len());
    let mut next_file = (head.files.len() + run.files.len()) as u64;
    let mut pending_file_keys: HashMap<EntryKey, u64> = HashMap::new();
    for f in 0..table.files.len() {
        let key = entry_key(line, table, f, Some(()), &dir_map);
        let n = match run.file_keys.get(&key).or(pending_file_keys.get(&key)) {
            Some(&n) => n,
            None => {
                let n = next_file;
                next_file += 1;
                pending_file_keys.insert(key, n);
                new_files.push(f);
                n
            }
        };
        file_map.push(n);
    }
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
    // Addresses.
    let table_entries = match unit.addr.map(|(a, _)| addr_table_at.get(&a)) {
        Some(Some(&a)) => ((addr_tables[a].entries.len()) / 8) as u64,
        Some(None) => return false,
        None if unit.addr_uses.is_empty() && unit.low_pc.is_none() => 0,
        None => return false,
    };
    let offset = run.addr_total;
    if !unit
        .addr_uses
        .iter()
        .chain(unit.low_pc.iter())
        .all(|f| fits(f.value + offset, f.size, f.uleb))
    {
        return false;
    }
    // Code: one range of one section, in order.
    if let Some((sym, start, end)) = unit.code {
        match run.code_end {
            Some((s, e)) if s != sym || start < e => return false,
            _ => {}
        }
        run.code_end = Some((sym, end));
    }
    run.dirs.extend(new_dirs.into_iter().map(|d| (t, d)));
    run.dir_keys.extend(pending_dir_keys);
    for f in new_files {
        let dir = dir_index(line, table, f).and_then(|d| dir_map.get(d as usize).copied());
        run.files.push((t, f, dir.unwrap_or(0)));
    }
    run.file_keys.extend(pending_file_keys);
    run.file_maps.push(file_map);
    run.addr_offsets.push(offset);
    run.addr_total += table_entries;
    run.members.push(u);
    run.member_tables.push(t);
    true
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
            let end = at + 1 + used + usize::try_from(len).ok()?;
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

/// The merged compile unit of `run`: the donor's header and root, then
/// every member's children.
fn merged_unit(
    info: &Old,
    units: &[Unit],
    run: &Run,
    first_addr: Option<i64>,
    head_line: i64,
    out: &mut New,
) -> Option<()> {
    let d = &units[run.donor?];
    let donor_offset = run.addr_offsets[run.members.iter().position(|&m| Some(m) == run.donor)?];
    let start = out.copy(info, d.start..d.start + 12)?;
    let root = out.copy(info, d.root_at..d.root_end)?;
    let moved = |at: usize| at - d.root_at + root;
    if let (Some((sym, code_start, _)), Some((end_sym, code_end))) = (d.code, run.code_end) {
        let high = d.high_pc?;
        if sym != end_sym {
            return None;
        }
        out.put_field(
            moved(high.at),
            high.size,
            high.uleb,
            u64::try_from(code_end - code_start).ok()?,
        )?;
        let low = d.low_pc?;
        out.put_field(moved(low.at), low.size, low.uleb, low.value + donor_offset)?;
    }
    let set_addend = |out: &mut New, at: usize, addend: i64| -> Option<()> {
        let r = out.relas.iter_mut().find(|r| r.offset == at as u64)?;
        r.addend = addend;
        Some(())
    };
    set_addend(out, moved(d.line?.1), head_line)?;
    if let Some((_, at)) = d.addr {
        set_addend(out, moved(at), first_addr?)?;
    }
    for (k, &m) in run.members.iter().enumerate() {
        let unit = &units[m];
        let block = out.copy(info, unit.children.clone())?;
        let moved = |at: usize| at - unit.children.start + block;
        let old_first = (unit.children.start - unit.start) as u64;
        let old_end = (unit.children.end - unit.start) as u64;
        let new_first = (block - start) as u64;
        for &at in &unit.refs {
            let v = u64::from(u32_at(info.data, at as u64)?);
            if v < old_first || v >= old_end {
                return None;
            }
            out.put_u32(moved(at), u32::try_from(v - old_first + new_first).ok()?)?;
        }
        let offset = run.addr_offsets[k];
        if offset > 0 {
            for f in &unit.addr_uses {
                out.put_field(moved(f.at), f.size, f.uleb, f.value + offset)?;
            }
        }
        for f in &unit.file_uses {
            let n = *run.file_maps[k].get(f.value as usize)?;
            if n != f.value {
                out.put_field(moved(f.at), f.size, f.uleb, n)?;
            }
        }
    }
    out.data.push(0); // the root's children end
    let length = u32::try_from(out.data.len() - start - 4).ok()?;
    out.put_u32(start, length)
}

/// Reads the compile unit at `at`, with the abbreviation tables by
/// offset and the symbols of the line and address sections.
fn read_unit(
    info: &Old,
    at: usize,
    abbrev_tables: &HashMap<i64, Vec<Abbrev>>,
    (line_sym, addr_sym): (Option<SymRef>, Option<SymRef>),
    addr: Option<&Old>,
    addr_tables: &[AddrTable],
) -> Option<Unit> {
    let data = info.data;
    let (end, version) = unit_extent(data, at)?;
    let mut unit = Unit {
        start: at,
        end,
        mergeable: false,
        abbrevs: (None, 0),
        strings: None,
        identity: Vec::new(),
        root_at: at + 12,
        root_end: at + 12,
        root_children: false,
        children: end..end,
        line: None,
        addr: None,
        low_pc: None,
        high_pc: None,
        code: None,
        refs: Vec::new(),
        addr_uses: Vec::new(),
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
    let mut first = true;
    while p < end {
        let (code, used) = read_uleb(data.get(p..end)?)?;
        if code == 0 {
            p += used;
            continue;
        }
        let abbrev = table.iter().find(|a| a.code == code)?;
        p += used;
        for &(name, form, _) in &abbrev.attributes {
            if form == 0x16 {
                return Some(unit); // DW_FORM_indirect
            }
            let size = form_size(form, data.get(p..end)?, 8, 5)?;
            let bytes = data.get(p..p + size)?;
            let value = form_value(form, bytes);
            let uleb = matches!(form, 0x0f | 0x15 | 0x1a | 0x1b | 0x22 | 0x23);
            let field = value.map(|value| Field {
                at: p,
                size,
                value,
                uleb,
            });
            if first {
                match name {
                    DW_AT_STMT_LIST => match info.relocated(p) {
                        Some((sym, addend)) if sym == line_sym && sym.is_some() => {
                            unit.line = Some((addend, p))
                        }
                        _ => mergeable = false,
                    },
                    DW_AT_ADDR_BASE => match info.relocated(p) {
                        Some((sym, addend)) if sym == addr_sym && sym.is_some() => {
                            unit.addr = Some((addend, p))
                        }
                        _ => mergeable = false,
                    },
                    DW_AT_STR_OFFSETS_BASE => unit.strings = info.relocated(p),
                    DW_AT_LOW_PC if form == DW_FORM_ADDRX => unit.low_pc = field,
                    // No code: an address 0 nothing relocates.
                    DW_AT_LOW_PC if form == DW_FORM_ADDR && info.relocated(p).is_none() => {}
                    DW_AT_HIGH_PC if form == DW_FORM_DATA4 => unit.high_pc = field,
                    DW_AT_LOW_PC | DW_AT_HIGH_PC | DW_AT_RANGES | DW_AT_RNGLISTS_BASE
                    | DW_AT_LOCLISTS_BASE => mergeable = false,
                    _ if info.relocated(p).is_some() => mergeable = false,
                    _ => unit.identity.push((name, form, bytes.to_vec())),
                }
            } else {
                match form {
                    DW_FORM_REF4 => unit.refs.push(p),
                    0x10 | 0x11 | 0x12 | 0x14 | 0x15 | 0x22 | 0x23 | DW_FORM_SEC_OFFSET => {
                        mergeable = false
                    }
                    DW_FORM_ADDRX | 0x29..=0x2c => unit.addr_uses.extend(field),
                    DW_FORM_EXPRLOC | DW_FORM_BLOCK | DW_FORM_BLOCK1 | DW_FORM_BLOCK2
                    | DW_FORM_BLOCK4 => {
                        let header = size - block_length(form, bytes)?;
                        match expression_indices(bytes.get(header..)?, p + header) {
                            Some(found) => unit.addr_uses.extend(found),
                            None => mergeable = false,
                        }
                    }
                    _ => {}
                }
                if matches!(name, DW_AT_DECL_FILE | DW_AT_CALL_FILE) {
                    match (form, field) {
                        (
                            DW_FORM_DATA1 | DW_FORM_DATA2 | DW_FORM_DATA4 | DW_FORM_UDATA,
                            Some(f),
                        ) => unit.file_uses.push(f),
                        _ => mergeable = false,
                    }
                }
                if name == DW_AT_RANGES {
                    mergeable = false;
                }
            }
            p += size;
        }
        if first {
            first = false;
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
    if let (Some(low), Some(high)) = (unit.low_pc, unit.high_pc) {
        let (table_at, _) = unit.addr?;
        let entry = table_at.checked_add(8 * i64::try_from(low.value).ok()?)?;
        let entry = usize::try_from(entry).ok()?;
        let inside = addr_tables.iter().any(|t| t.entries.contains(&entry));
        let (sym, addend) = addr?.relocated(entry)?;
        if !inside || sym.is_none() {
            return Some(unit);
        }
        unit.code = Some((sym, addend, addend + i64::try_from(high.value).ok()?));
    } else if unit.low_pc.is_some() || unit.high_pc.is_some() {
        mergeable = false;
    }
    unit.mergeable = mergeable && unit.line.is_some();
    Some(unit)
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

/// The address indices (`DW_OP_addrx`, `DW_OP_constx`) of the DWARF
/// expression `e` (at `at` in the section); `None` when it has an
/// operation not listed here.
fn expression_indices(e: &[u8], at: usize) -> Option<Vec<Field>> {
    let mut found = Vec::new();
    let mut p = 0;
    let leb = |p: usize| read_uleb(e.get(p..)?).map(|(_, n)| n);
    while p < e.len() {
        let op = e[p];
        p += 1;
        p += match op {
            0xa1 | 0xa2 => {
                // DW_OP_addrx, DW_OP_constx
                let (value, used) = read_uleb(e.get(p..)?)?;
                found.push(Field {
                    at: at + p,
                    size: used,
                    value,
                    uleb: true,
                });
                used
            }
            0x03 => 8,                                                         // addr
            0x06 | 0x12..=0x14 | 0x16..=0x22 | 0x24..=0x27 | 0x29..=0x2e => 0, // stack and arithmetic
            0x30..=0x6f => 0,                                                  // lit, reg
            0x96 | 0x97 | 0x9b | 0x9c | 0x9f | 0xe0 => 0, // nop, push_object_address, form_tls_address, call_frame_cfa, stack_value, GNU_push_tls_address
            0x08 | 0x09 | 0x15 | 0x94 | 0x95 => 1,        // const1, pick, deref_size, xderef_size
            0x0a | 0x0b | 0x28 | 0x2f | 0x98 => 2,        // const2, bra, skip, call2
            0x0c | 0x0d | 0x99 => 4,                      // const4, call4
            0x0e | 0x0f => 8,                             // const8
            0x10 | 0x11 | 0x23 | 0x70..=0x8f | 0x90 | 0x91 | 0x93 | 0xa8 | 0xa9 => leb(p)?, // constu, consts, plus_uconst, breg, regx, fbreg, piece, convert, reinterpret
            0x92 | 0x9d => {
                // bregx, bit_piece: two LEB128s
                let first = leb(p)?;
                first + leb(p + first)?
            }
            0x9e => {
                // implicit_value: a length, then that many bytes
                let (len, used) = read_uleb(e.get(p..)?)?;
                used + usize::try_from(len).ok()?
            }
            _ => return None,
        };
        if p > e.len() {
            return None;
        }
    }
    Some(found)
}

/// A line table header's directory or file entries: the bytes of their
/// format, its fields (content type, form), and each entry's bytes.
type Entries = (Range<usize>, Vec<(u64, u64)>, Vec<Range<usize>>);

/// The contributions of `.debug_addr` (DWARF 5, 8-byte addresses).
fn addr_tables(data: &[u8]) -> Option<Vec<AddrTable>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let (end, version) = unit_extent(data, at)?;
        if version != 5
            || *data.get(at + 6)? != 8
            || *data.get(at + 7)? != 0
            || (end - at - 8) % 8 != 0
        {
            return None;
        }
        out.push(AddrTable {
            start: at,
            entries: at + 8..end,
        });
        at = end;
    }
    Some(out)
}

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

    use super::super::relocatable::combine;
    use super::super::relocatable::tests::{compile, dump, succeed};

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

    #[test]
    fn a_units_fragments_become_one_compile_unit() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let parts: Vec<Vec<u8>> = (1..=3)
            .map(|p| compile(d, "unit.c", SOURCE, &["-g", "-O0", &format!("-DPART={p}")]))
            .collect();
        let objects: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let composed = combine(&objects, &[], &[]).expect("combined");
        let path = d.join("composed.o");
        std::fs::write(&path, &composed).unwrap();
        let verify = Command::new("llvm-dwarfdump-19")
            .arg("--verify")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            verify.status.success(),
            "{}",
            String::from_utf8_lossy(&verify.stdout)
        );
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
}
