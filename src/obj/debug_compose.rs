//! The debug sections of one fragment, as the composer (`combine`)
//! takes them (analysed by `DebugSections::of`, numbered by `finish` once
//! every fragment of the composition is known). Every fragment of a unit with debug info is a compile unit
//! of its own with its own tables (string offsets, abbreviations, line
//! table), and each lists what all of its type units need; the composer
//! keeps each type unit once (per signature), so most of those entries are
//! for units it leaves out. Here each fragment keeps what its kept units
//! use:
//!
//! - `.debug_str` and `.debug_line_str`: each string once in the composed
//!   object, for the relocations that name it (interned by `combine`);
//! - the string offsets table: a table shared with the fragments before
//!   and after it, while every string index fits its field (see
//!   `StringTables`), else only the entries kept units use, in order; the
//!   units' string indices renumbered in place either way;
//! - the abbreviation table: the one table of every declaration the
//!   composed object's kept DIEs use (see `AbbrevUnion`), else only the
//!   declarations its own kept DIEs use; numbered in the order of their
//!   contents (DIE codes rewritten in place);
//! - the line table: only the file entries kept DIEs name or rows use,
//!   renumbered in order, in DIEs and `DW_LNS_set_file` operands.
//!
//! Rewritten values keep their size (a smaller index fits the same form; a
//! ULEB128 value is padded to its length), so no DIE moves. A DIE's code is
//! never padded: LLVM's reader finds the first attribute from the length
//! of the code's value, so codes are renumbered only where every one keeps
//! its length. Anything not understood leaves the section as it is.

use rustc_hash::FxHashMap as HashMap;

use super::elf::{
    c_str, slice, u32_at, Input, SHF_MERGE, SHF_STRINGS, SHN_LORESERVE, SHN_UNDEF, SHT_PROGBITS,
    SHT_RELA, STT_SECTION,
};
use super::leb128::{read_uleb, uleb_padded, write_uleb};

/// How one fragment's debug sections are composed (see the module's
/// comment).
pub(super) struct DebugSections {
    /// Input sections whose strings are interned.
    pub(super) merged: Vec<bool>,
    /// Section symbols of those sections → the section.
    pub(super) section_symbols: HashMap<usize, usize>,
    /// The `.debug_str_offsets` section and, for each entry a kept unit
    /// uses, its offset → its offset in the composed table; `None`: all
    /// are kept where they are.
    pub(super) live_offsets: Option<(usize, HashMap<u64, u64>)>,
    /// Sections composed from rewritten bytes: the compacted string
    /// offsets table, and the units whose string indices were renumbered.
    pub(super) rewritten: HashMap<usize, Vec<u8>>,
    /// Values rewritten in place in sections (section, offset, bytes).
    pub(super) patches: Vec<(usize, usize, Vec<u8>)>,
    /// The line table, when file entries no kept unit or row uses were
    /// left out of it: the ranges they had.
    pub(super) line_files: Option<(usize, Vec<std::ops::Range<u64>>)>,
    /// The abbreviation section, when it is one table that only the kept
    /// units use: rewritten with the declarations they use, and shared
    /// with every other fragment whose table is the same bytes.
    pub(super) shared_abbrevs: Option<usize>,
    /// The declarations the kept units use, until `finish` numbers them.
    used_abbrevs: Option<UsedAbbrevs>,
    /// The string indices the kept units use, until `finish` numbers them.
    used_strings: Option<UsedStrings>,
    /// The string offsets section, when it is a table objects share, and
    /// which of the composition's tables (see `StringTables`).
    pub(super) shared_strings: Option<(usize, usize)>,
}

/// The string indices one object's kept units use.
struct UsedStrings {
    /// The `.debug_str_offsets` section.
    table: usize,
    uses: Vec<StringUse>,
    /// The table's header, when it is one contribution, the whole
    /// section, at the base every unit names (see `one_contribution`).
    header: Option<[u8; 8]>,
    /// With `header`, and where each used entry names a merged debug
    /// string: that string, by the entry's offset.
    named: Option<HashMap<u64, Vec<u8>>>,
}

impl UsedStrings {
    /// The string each use names, and the largest index its field holds.
    fn each(&self) -> Option<Vec<(&[u8], u64)>> {
        let named = self.named.as_ref()?;
        self.uses
            .iter()
            .map(|u| {
                let string = named.get(&u.base.checked_add(u.index.checked_mul(4)?)?)?;
                let bits = if u.uleb { 7 * u.size } else { 8 * u.size };
                let largest = if bits >= 64 {
                    u64::MAX
                } else {
                    (1u64 << bits) - 1
                };
                Some((string.as_slice(), largest))
            })
            .collect()
    }
}

/// Tables of the strings the composed object's units name through string
/// indices, each shared by the units of several objects where every index
/// still fits its field: object by object, in order, each object's
/// strings join the current table while all its indices fit (a `strx1`
/// index names one of the first 256), and a new table starts where they
/// would not. Objects next to each other (a unit's definitions in source
/// order) name many of the same strings. A fragment's indices are two
/// bytes wide (`debug_widen`), so its object joins any table of fewer
/// than 65,536 strings: one table serves a unit's fragments.
pub(super) struct StringTables {
    tables: Vec<StringTable>,
    /// Each object's table, by the object's position.
    of_object: Vec<Option<usize>>,
}

/// One shared table of strings: its entries, in order.
pub(super) struct StringTable {
    /// Where it is among the composition's tables.
    pub(super) id: usize,
    strings: Vec<Vec<u8>>,
    index: HashMap<Vec<u8>, u64>,
}

impl StringTable {
    fn new(id: usize) -> StringTable {
        StringTable {
            id,
            strings: Vec::new(),
            index: HashMap::default(),
        }
    }

    /// Adds the strings of one object's uses if every index fits.
    fn join(&mut self, uses: &[(&[u8], u64)]) -> bool {
        let mut new: Vec<&[u8]> = uses
            .iter()
            .map(|u| u.0)
            .filter(|s| !self.index.contains_key(*s))
            .collect();
        new.sort_unstable();
        new.dedup();
        let next = self.strings.len() as u64;
        let fits = uses.iter().all(|&(s, largest)| {
            let k = self
                .index
                .get(s)
                .copied()
                .or_else(|| new.binary_search(&s).ok().map(|k| next + k as u64));
            k.is_some_and(|k| k <= largest)
        });
        if fits {
            for s in new {
                self.index.insert(s.to_vec(), self.strings.len() as u64);
                self.strings.push(s.to_vec());
            }
        }
        fits
    }
}

impl StringTables {
    pub(super) fn of(objects: &[&DebugSections]) -> StringTables {
        let mut tables = vec![StringTable::new(0)];
        let mut of_object = Vec::with_capacity(objects.len());
        for o in objects {
            let Some(uses) = o.used_strings.as_ref().and_then(UsedStrings::each) else {
                of_object.push(None);
                continue;
            };
            let mut current = tables.len() - 1;
            if !tables[current].join(&uses) {
                if tables[current].strings.is_empty() {
                    of_object.push(None);
                    continue;
                }
                tables.push(StringTable::new(tables.len()));
                current += 1;
                if !tables[current].join(&uses) {
                    of_object.push(None);
                    continue;
                }
            }
            of_object.push(Some(current));
        }
        StringTables { tables, of_object }
    }

    /// The table the object at `position` shares, if any.
    pub(super) fn of_object(&self, position: usize) -> Option<&StringTable> {
        self.tables.get((*self.of_object.get(position)?)?)
    }
}

/// The abbreviation declarations one object's kept units use, and where
/// their DIEs name them.
struct UsedAbbrevs {
    /// The object's abbreviation section (one table, at offset 0).
    section: usize,
    /// The declarations without their codes (tag, children, attributes),
    /// in the order of their contents.
    bodies: Vec<Vec<u8>>,
    /// Each declaration's code and whole bytes in the object's table.
    original: Vec<(u64, Vec<u8>)>,
    /// Every kept DIE: (section, offset, ULEB128 length of its code, its
    /// declaration's index in `bodies`).
    dies: Vec<(usize, usize, usize, usize)>,
}

/// The abbreviation declarations a run of a composition's objects uses:
/// one table their units share, where every DIE's code keeps its length
/// (see `DebugSections::finish`). A declaration that DIEs name with
/// one-byte codes (a fragment's first 127) is numbered from 1, one they
/// name with two-byte codes from 128, each in the order of their contents
/// (one named both ways is in the table twice). Objects join the table in
/// order while it holds at most 127 declarations named with one byte; then
/// a new one starts (C++ fragments use more between them than one table
/// can number so).
pub(super) struct AbbrevUnion {
    /// (the length of the code DIEs name it with, its body), in code order.
    declarations: Vec<(usize, Vec<u8>)>,
    /// Each declaration's code.
    codes: Vec<u64>,
}

/// The shared abbreviation tables of a composition, and which each object
/// uses.
pub(super) struct AbbrevUnions {
    tables: Vec<AbbrevUnion>,
    of_object: Vec<Option<usize>>,
}

impl AbbrevUnions {
    pub(super) fn of(objects: &[&DebugSections]) -> AbbrevUnions {
        let mut tables = Vec::new();
        let mut of_object = Vec::with_capacity(objects.len());
        let mut current: std::collections::BTreeSet<(usize, Vec<u8>)> = Default::default();
        let flush = |current: &mut std::collections::BTreeSet<(usize, Vec<u8>)>,
                     tables: &mut Vec<AbbrevUnion>| {
            if !current.is_empty() {
                tables.push(AbbrevUnion::numbered(std::mem::take(current)));
            }
        };
        for o in objects {
            let Some(used) = o.used_abbrevs.as_ref() else {
                of_object.push(None);
                continue;
            };
            let mut named: Vec<(usize, usize)> = used
                .dies
                .iter()
                .map(|&(_, _, len, body)| (len, body))
                .collect();
            named.sort_unstable();
            named.dedup();
            // Past two-byte codes, or more one-byte ones than any table
            // holds: the object's own table.
            if named.iter().any(|&(len, _)| len > 2)
                || named.iter().filter(|&&(len, _)| len == 1).count() > 127
            {
                of_object.push(None);
                continue;
            }
            let new: Vec<(usize, Vec<u8>)> = named
                .iter()
                .map(|&(len, body)| (len, used.bodies[body].clone()))
                .filter(|d| !current.contains(d))
                .collect();
            let short = |set: &std::collections::BTreeSet<(usize, Vec<u8>)>| {
                set.iter().filter(|(len, _)| *len == 1).count()
            };
            let joined_short = short(&current) + new.iter().filter(|(len, _)| *len == 1).count();
            let joined_all = current.len() + new.len();
            if joined_short > 127 || joined_all - joined_short > 16384 - 128 {
                flush(&mut current, &mut tables);
                current.extend(
                    named
                        .iter()
                        .map(|&(len, body)| (len, used.bodies[body].clone())),
                );
            } else {
                current.extend(new);
            }
            of_object.push(Some(tables.len()));
        }
        flush(&mut current, &mut tables);
        AbbrevUnions { tables, of_object }
    }

    pub(super) fn of_object(&self, position: usize) -> Option<&AbbrevUnion> {
        self.tables.get((*self.of_object.get(position)?)?)
    }
}

impl AbbrevUnion {
    fn numbered(declarations: std::collections::BTreeSet<(usize, Vec<u8>)>) -> AbbrevUnion {
        let declarations: Vec<(usize, Vec<u8>)> = declarations.into_iter().collect();
        let mut next = [0u64, 1, 128];
        let codes = declarations
            .iter()
            .map(|(len, _)| {
                let code = next[*len];
                next[*len] += 1;
                code
            })
            .collect();
        AbbrevUnion {
            declarations,
            codes,
        }
    }

    /// The code of the declaration `body` that a DIE names with a code of
    /// `len` bytes.
    fn code(&self, len: usize, body: &[u8]) -> Option<u64> {
        self.declarations
            .binary_search_by(|(l, b)| (*l, b.as_slice()).cmp(&(len, body)))
            .ok()
            .map(|k| self.codes[k])
    }
}

impl DebugSections {
    pub(super) fn of(input: &Input, in_group: &[bool], dropped: &[bool]) -> DebugSections {
        let n = input.shdrs.len();
        let name = |i: usize| c_str(input.shstrtab, input.shdrs[i].name).unwrap_or_default();
        let relocated: rustc_hash::FxHashSet<usize> = input
            .shdrs
            .iter()
            .filter(|s| s.sh_type == SHT_RELA)
            .map(|s| s.info as usize)
            .collect();
        let mut merged: Vec<bool> = (0..n)
            .map(|i| {
                let s = &input.shdrs[i];
                matches!(name(i), b".debug_str" | b".debug_line_str")
                    && s.sh_type == SHT_PROGBITS
                    && s.flags & (SHF_MERGE | SHF_STRINGS) == SHF_MERGE | SHF_STRINGS
                    && s.entsize == 1
                    && !in_group[i]
                    && !relocated.contains(&i)
            })
            .collect();
        let mut section_symbols = HashMap::default();
        for (k, sym) in input.syms.iter().enumerate().skip(1) {
            let Some(&is_merged) = merged.get(sym.shndx as usize) else {
                continue;
            };
            if !is_merged || sym.shndx == SHN_UNDEF || sym.shndx >= SHN_LORESERVE {
                continue;
            }
            if sym.info & 0xf == STT_SECTION && sym.value == 0 {
                section_symbols.insert(k, sym.shndx as usize);
            } else {
                // A symbol inside: its section is concatenated as it is.
                merged[sym.shndx as usize] = false;
            }
        }
        section_symbols.retain(|_, s| merged[*s]);
        let mut strings = DebugSections {
            merged,
            section_symbols,
            live_offsets: None,
            rewritten: HashMap::default(),
            patches: Vec::new(),
            line_files: None,
            shared_abbrevs: None,
            used_abbrevs: None,
            used_strings: None,
            shared_strings: None,
        };
        if let Some(uses) = string_uses(input, dropped) {
            strings.used_abbrevs = used_abbrevs(input, &uses, in_group, &relocated);
            strings.prune_files(input, &uses);
            strings.used_strings = Some(strings.used_strings(input, uses));
        }
        strings
    }

    /// Numbers the abbreviation declarations the kept units use and
    /// applies every value rewritten in place. With `union`, the units
    /// share the table of every declaration the composed object's units
    /// use (one table for the object, as clang writes one for its units)
    /// where each DIE's code keeps its length; otherwise (or where one
    /// would not) the object's own: the declarations it uses, numbered in
    /// the order of their contents, and where a code would change length
    /// there too, its codes as they are.
    ///
    /// The string indices likewise: into `string_table`, the table the
    /// object shares with others (see `StringTables`), where each index
    /// fits its field; into the object's own table of the entries it uses
    /// otherwise.
    pub(super) fn finish(
        &mut self,
        input: &Input,
        union: Option<&AbbrevUnion>,
        string_table: Option<&StringTable>,
    ) {
        if let Some(used) = self.used_abbrevs.take() {
            self.number_abbrevs(used, union);
        }
        if let Some(used) = self.used_strings.take() {
            let shared = string_table.is_some_and(|t| self.share_strings(&used, t));
            if !shared {
                self.compact(used);
            }
        }
        // The sections with values rewritten in place.
        for (section, at, bytes) in std::mem::take(&mut self.patches) {
            let copy = match self.rewritten.entry(section) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    let h = &input.shdrs[section];
                    match slice(input.data, h.offset, h.size) {
                        Some(original) => v.insert(original.to_vec()),
                        None => continue,
                    }
                }
            };
            if let Some(field) = copy.get_mut(at..at + bytes.len()) {
                field.copy_from_slice(&bytes);
            }
        }
    }

    /// Writes the abbreviation table the kept units use (see `finish`)
    /// and the DIE codes that change.
    fn number_abbrevs(&mut self, used: UsedAbbrevs, union: Option<&AbbrevUnion>) {
        let uleb_len = |v: u64| (64 - (v | 1).leading_zeros()).div_ceil(7) as usize;
        // A code keeps its length: readers (LLVM's) find a DIE's first
        // attribute from the length of its code's value, not of its bytes.
        let fits = |codes: &[u64]| {
            used.dies
                .iter()
                .all(|&(_, _, size, body)| uleb_len(codes[body]) == size)
        };
        // With the union: every DIE's code, by its declaration and length.
        let union_codes: Option<Vec<u64>> = union.and_then(|u| {
            used.dies
                .iter()
                .map(|&(_, _, len, body)| u.code(len, &used.bodies[body]))
                .collect()
        });
        let (out, die_codes) = match (union, union_codes) {
            (Some(u), Some(codes)) => {
                let mut out = Vec::new();
                for ((_, body), code) in u.declarations.iter().zip(&u.codes) {
                    write_uleb(&mut out, *code);
                    out.extend_from_slice(body);
                }
                out.push(0);
                (out, codes)
            }
            _ => {
                let own: Vec<u64> = (1..=used.bodies.len() as u64).collect();
                if !fits(&own) {
                    // The declarations as they were numbered, codes as
                    // they are.
                    self.rewritten.insert(used.section, original_abbrevs(&used));
                    self.shared_abbrevs = Some(used.section);
                    return;
                }
                let mut out = Vec::new();
                for (k, body) in used.bodies.iter().enumerate() {
                    write_uleb(&mut out, k as u64 + 1);
                    out.extend_from_slice(body);
                }
                out.push(0);
                let codes = used.dies.iter().map(|&(_, _, _, body)| own[body]).collect();
                (out, codes)
            }
        };
        for (&(die_section, at, len, _), code) in used.dies.iter().zip(die_codes) {
            debug_assert_eq!(uleb_len(code), len);
            let mut field = Vec::new();
            write_uleb(&mut field, code);
            self.patches.push((die_section, at, field));
        }
        self.rewritten.insert(used.section, out);
        self.shared_abbrevs = Some(used.section);
    }

    /// Leaves out of the object's line table (one DWARF 5 table, the whole
    /// section) the file entries that no kept unit names and no row uses:
    /// a fragment's table lists the files of all its type units' types.
    /// The kept entries are renumbered in order; file indices in DIEs and
    /// `DW_LNS_set_file` operands are rewritten in place (a smaller index
    /// fits the same form; ULEB128 padded to its length).
    fn prune_files(&mut self, input: &Input, uses: &StringUses) {
        let Some(files) = uses.files.as_ref() else {
            return;
        };
        let name = |i: usize| c_str(input.shstrtab, input.shdrs[i].name).unwrap_or_default();
        let tables: Vec<usize> = (0..input.shdrs.len())
            .filter(|&i| name(i) == b".debug_line")
            .collect();
        let [section] = tables[..] else { return };
        let h = &input.shdrs[section];
        let Some(bytes) = slice(input.data, h.offset, h.size) else {
            return;
        };
        let Some(table) = super::debug_lines::file_table(bytes) else {
            return;
        };
        // File 0 is the unit's own; 1 is the file register's start.
        let mut used: std::collections::BTreeSet<u64> = [0, 1].into();
        used.extend(files.iter().map(|f| f.index));
        used.extend(table.set_file.iter().map(|f| f.2));
        if used.iter().any(|&f| f as usize >= table.entries.len()) {
            return;
        }
        let renumbered: HashMap<u64, u64> = used
            .iter()
            .enumerate()
            .map(|(new, &old)| (old, new as u64))
            .collect();
        let removed: Vec<std::ops::Range<usize>> = table
            .entries
            .iter()
            .enumerate()
            .filter(|(i, _)| !used.contains(&(*i as u64)))
            .map(|(_, r)| r.clone())
            .collect();
        if removed.is_empty() {
            return;
        }
        let gone: usize = removed.iter().map(|r| r.len()).sum();
        let mut out = bytes.to_vec();
        for &(at, size, old) in &table.set_file {
            out[at..at + size].copy_from_slice(&uleb_padded(renumbered[&old], size));
        }
        let (at, size) = table.count;
        out[at..at + size].copy_from_slice(&uleb_padded(used.len() as u64, size));
        for (field, shrink) in [(0usize, gone), (8, gone)] {
            let Some(v) = u32_at(&out, field as u64) else {
                return;
            };
            let Some(v) = (v as usize).checked_sub(shrink) else {
                return;
            };
            out[field..field + 4].copy_from_slice(&(v as u32).to_le_bytes());
        }
        for r in removed.iter().rev() {
            out.drain(r.clone());
        }
        for f in files {
            let new = renumbered[&f.index];
            let field = if f.uleb {
                uleb_padded(new, f.size)
            } else {
                new.to_le_bytes()[..f.size].to_vec()
            };
            self.patches.push((f.section, f.at, field));
        }
        self.rewritten.insert(section, out);
        self.line_files = Some((
            section,
            removed
                .into_iter()
                .map(|r| r.start as u64..r.end as u64)
                .collect(),
        ));
    }

    /// What `finish` needs of the string indices the kept units use: the
    /// string each used entry names, where the table is one contribution
    /// at the base every unit names and its entries' relocations name
    /// merged debug strings.
    fn used_strings(&self, input: &Input, uses: StringUses) -> UsedStrings {
        let StringUses {
            table, uses, bases, ..
        } = uses;
        let header = one_contribution(input, table, &bases);
        let named = header.and_then(|_| self.entry_strings(input, table));
        UsedStrings {
            table,
            uses,
            header,
            named,
        }
    }

    /// The merged debug string each relocated entry of a string offsets
    /// table names, by the entry's offset; `None` if a relocation of the
    /// table names anything else.
    fn entry_strings(&self, input: &Input, table: usize) -> Option<HashMap<u64, Vec<u8>>> {
        let mut named = HashMap::default();
        for s in input
            .shdrs
            .iter()
            .filter(|s| s.sh_type == SHT_RELA && s.info as usize == table)
        {
            for e in input.relas(s)? {
                let (offset, addend) = (e.offset, e.addend);
                let from = *self.section_symbols.get(&e.sym)?;
                let h = &input.shdrs[from];
                let bytes = slice(input.data, h.offset, h.size)?;
                let string = c_str(bytes, u32::try_from(addend).ok()?)?;
                named.insert(offset, string.to_vec());
            }
        }
        Some(named)
    }

    /// The kept units' string indices renumbered into the composed
    /// object's shared table, if every one is there and fits its field.
    fn share_strings(&mut self, used: &UsedStrings, union: &StringTable) -> bool {
        let Some(each) = used.each() else {
            return false;
        };
        let Some(new) = each
            .iter()
            .map(|&(s, largest)| union.index.get(s).copied().filter(|&k| k <= largest))
            .collect::<Option<Vec<u64>>>()
        else {
            return false;
        };
        let Some(header) = used.header else {
            return false;
        };
        for (u, &k) in used.uses.iter().zip(&new) {
            self.patches.push((u.section, u.at, u.field(k)));
        }
        self.rewritten
            .insert(used.table, offsets_table(header, union.strings.len()));
        let live = used
            .uses
            .iter()
            .zip(&new)
            .map(|(u, &k)| (u.base + 4 * u.index, 8 + 4 * k))
            .collect();
        self.live_offsets = Some((used.table, live));
        self.shared_strings = Some((used.table, union.id));
        true
    }

    /// Keeps the entries of the string offsets table that kept units use.
    /// With one table in the object, as LLVM writes a compile unit's, the
    /// table is compacted: the used entries in their order, the units'
    /// string indices renumbered in place (a smaller index fits the same
    /// form; a ULEB128 one is padded to its length).
    fn compact(&mut self, used: UsedStrings) {
        let UsedStrings {
            table,
            uses,
            header,
            ..
        } = used;
        let entry = |base: u64, index: u64| base.checked_add(index.checked_mul(4)?);
        let mut used: Vec<(u64, u64)> = uses.iter().map(|u| (u.base, u.index)).collect();
        used.sort_unstable();
        used.dedup();
        let Some(header) = header else {
            // Only the unused entries' relocations go.
            let live = used
                .iter()
                .filter_map(|&(b, i)| entry(b, i))
                .map(|o| (o, o))
                .collect();
            self.live_offsets = Some((table, live));
            return;
        };
        let renumbered: HashMap<u64, u64> = used
            .iter()
            .enumerate()
            .map(|(new, &(_, old))| (old, new as u64))
            .collect();
        for u in &uses {
            self.patches
                .push((u.section, u.at, u.field(renumbered[&u.index])));
        }
        self.rewritten
            .insert(table, offsets_table(header, used.len()));
        let live = used
            .iter()
            .enumerate()
            .filter_map(|(new, &(b, i))| Some((entry(b, i)?, entry(8, new as u64)?)))
            .collect();
        self.live_offsets = Some((table, live));
    }
}

/// One use of a string index by a kept unit.
struct StringUse {
    section: usize,
    at: usize,
    size: usize,
    uleb: bool,
    base: u64,
    index: u64,
}

impl StringUse {
    /// The use's field holding string index `index` instead (a smaller
    /// index fits the same form; a ULEB128 one is padded to its length).
    fn field(&self, index: u64) -> Vec<u8> {
        if self.uleb {
            uleb_padded(index, self.size)
        } else {
            index.to_le_bytes()[..self.size].to_vec()
        }
    }
}

/// The header of string offsets table `table` when it is one
/// contribution, the whole section, at the base every unit names
/// (`bases`): the table `compact` and `share_strings` rewrite.
fn one_contribution(input: &Input, table: usize, bases: &[u64]) -> Option<[u8; 8]> {
    let h = &input.shdrs[table];
    let bytes = slice(input.data, h.offset, h.size)?;
    let whole = u64::from(u32_at(bytes, 0)?) + 4 == h.size && bases.iter().all(|&b| b == 8);
    whole.then(|| bytes.get(..8)?.try_into().ok()).flatten()
}

/// A string offsets table of `entries` entries under `header` (its
/// length rewritten), the entries zero: their relocations give them.
fn offsets_table(header: [u8; 8], entries: usize) -> Vec<u8> {
    let mut table = header.to_vec();
    table[..4].copy_from_slice(&((4 + 4 * entries) as u32).to_le_bytes());
    table.resize(8 + 4 * entries, 0);
    table
}

/// The string indices the units an object keeps use, and their table.
struct StringUses {
    /// The `.debug_str_offsets` section.
    table: usize,
    uses: Vec<StringUse>,
    /// Every unit's `DW_AT_str_offsets_base`.
    bases: Vec<u64>,
    /// The abbreviation codes the kept units use, and the tables they
    /// name (section, offset).
    codes: rustc_hash::FxHashSet<u64>,
    abbrev_tables: rustc_hash::FxHashSet<(usize, u64)>,
    /// Every kept DIE's code: (section, offset, ULEB128 length, code).
    dies: Vec<(usize, usize, usize, u64)>,
    /// Every `DW_AT_decl_file`/`DW_AT_call_file`; `None` where one has a
    /// form not handled.
    files: Option<Vec<FileUse>>,
}

/// A file index in a kept DIE.
struct FileUse {
    section: usize,
    at: usize,
    size: usize,
    uleb: bool,
    index: u64,
}

/// The abbreviation declarations the kept units use, when the object has
/// one table (at offset 0 of its one section) and nothing else refers
/// into it: left-out type units leave theirs behind.
fn used_abbrevs(
    input: &Input,
    uses: &StringUses,
    in_group: &[bool],
    relocated: &rustc_hash::FxHashSet<usize>,
) -> Option<UsedAbbrevs> {
    let tables: Vec<&(usize, u64)> = uses.abbrev_tables.iter().collect();
    let [&(section, 0)] = tables[..] else {
        return None;
    };
    let h = &input.shdrs[section];
    if in_group[section] || relocated.contains(&section) {
        return None;
    }
    let symbols_inside = input
        .syms
        .iter()
        .any(|s| s.shndx as usize == section && s.info & 0xf != STT_SECTION);
    let bytes = slice(input.data, h.offset, h.size)?;
    let (declarations, end) = super::dwarf::abbrev_declarations(bytes)?;
    if symbols_inside || end != bytes.len() {
        return None;
    }
    let mut kept: Vec<(Vec<u8>, u64, Vec<u8>)> = declarations
        .into_iter()
        .filter(|(code, _)| uses.codes.contains(code))
        .map(|(code, range)| {
            let whole = &bytes[range];
            let body = &whole[read_uleb(whole).map_or(0, |(_, n)| n)..];
            (body.to_vec(), code, whole.to_vec())
        })
        .collect();
    kept.sort_unstable();
    let index: HashMap<u64, usize> = kept
        .iter()
        .enumerate()
        .map(|(k, (_, code, _))| (*code, k))
        .collect();
    let dies = uses
        .dies
        .iter()
        .map(|&(s, at, size, code)| Some((s, at, size, *index.get(&code)?)))
        .collect::<Option<_>>()?;
    let mut original = Vec::with_capacity(kept.len());
    let mut bodies = Vec::with_capacity(kept.len());
    for (body, code, whole) in kept {
        bodies.push(body);
        original.push((code, whole));
    }
    Some(UsedAbbrevs {
        section,
        bodies,
        original,
        dies,
    })
}

/// The table of the declarations `used` names with their own codes, in
/// the order of the codes.
fn original_abbrevs(used: &UsedAbbrevs) -> Vec<u8> {
    let mut by_code: Vec<&(u64, Vec<u8>)> = used.original.iter().collect();
    by_code.sort_unstable_by_key(|(code, _)| *code);
    let mut out: Vec<u8> = by_code
        .into_iter()
        .flat_map(|(_, whole)| whole.iter().copied())
        .collect();
    out.push(0);
    out
}

/// The string indices the units an object keeps use (`None`: not known;
/// every entry is kept).
fn string_uses(input: &Input, dropped: &[bool]) -> Option<StringUses> {
    const DW_AT_STR_OFFSETS_BASE: u64 = gimli::DW_AT_str_offsets_base.0 as u64;
    let n = input.shdrs.len();
    let name = |i: usize| c_str(input.shstrtab, input.shdrs[i].name).unwrap_or_default();
    let tables: Vec<usize> = (0..n)
        .filter(|&i| name(i) == b".debug_str_offsets")
        .collect();
    let [table] = tables[..] else { return None };
    // Other users of the string offsets.
    if (0..n).any(|i| matches!(name(i), b".debug_macro" | b".debug_names")) {
        return None;
    }
    let dwarf = super::dwarf::ObjectDwarf::new(input);
    let mut uses = Vec::new();
    let mut all_bases = Vec::new();
    let mut codes = rustc_hash::FxHashSet::default();
    let mut abbrev_tables = rustc_hash::FxHashSet::default();
    let mut dies = Vec::new();
    let mut files = Some(Vec::new());
    for i in (0..n).filter(|&i| !dropped[i] && name(i) == b".debug_info") {
        let h = &input.shdrs[i];
        let section = slice(input.data, h.offset, h.size)?;
        // Per unit: the string indices it uses, and its base.
        let mut found: Vec<(usize, usize, usize, u64, u64)> = Vec::new();
        let mut bases: HashMap<usize, u64> = HashMap::default();
        dwarf.walk(
            i,
            &mut |a| {
                if matches!(a.form, 0x1a | 0x25..=0x28) {
                    let index = super::dwarf::form_value(a.form, section.get(a.at..)?)?;
                    found.push((a.unit, a.at, a.size, a.form, index));
                }
                if matches!(a.name, 0x3a | 0x58) {
                    // DW_AT_decl_file, DW_AT_call_file
                    let fixed = matches!(a.form, 0x0b | 0x05 | 0x06);
                    match (fixed || a.form == 0x0f, files.as_mut()) {
                        (true, Some(f)) => {
                            let index = super::dwarf::form_value(a.form, section.get(a.at..)?)?;
                            f.push(FileUse {
                                section: i,
                                at: a.at,
                                size: a.size,
                                uleb: a.form == 0x0f,
                                index,
                            });
                        }
                        _ => files = None,
                    }
                }
                if a.name == DW_AT_STR_OFFSETS_BASE {
                    match dwarf.relocated(i, a.at as u64)? {
                        Some((s, base)) if s == table => {
                            bases.insert(a.unit, base);
                        }
                        _ => return None,
                    }
                }
                Some(())
            },
            &mut |die| {
                codes.insert(die.code);
                abbrev_tables.insert(die.abbrevs);
                dies.push((i, die.at, die.size, die.code));
                Some(())
            },
        )?;
        all_bases.extend(bases.values().copied());
        for (unit, at, size, form, index) in found {
            uses.push(StringUse {
                section: i,
                at,
                size,
                uleb: form == 0x1a,
                base: *bases.get(&unit)?,
                index,
            });
        }
    }
    Some(StringUses {
        table,
        uses,
        bases: all_bases,
        codes,
        abbrev_tables,
        dies,
        files,
    })
}

#[cfg(test)]
mod tests {
    use crate::obj::combine::combine;
    use crate::obj::combine::tests::compile;
    use crate::obj::elf::{c_str, parse, slice};

    /// Two units with debug info composed: every string of `.debug_str`
    /// once, and `llvm-dwarfdump --verify` finds nothing wrong (string
    /// offsets, abbreviation codes, line table files renumbered in place).
    #[test]
    fn composed_debug_info_verifies_with_each_string_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let header = "struct point { int x, y; };\nenum shade { light, dark };\n";
        for version in ["-gdwarf-4", "-gdwarf-5"] {
            let a = compile(
                d,
                "a.c",
                &format!("{header}int area(struct point p) {{ return p.x * p.y; }}\n"),
                &["-O1", version],
            );
            let b = compile(
                d,
                "b.c",
                &format!("{header}int darker(enum shade s, struct point *p) {{ return s == dark ? p->x : p->y; }}\n"),
                &["-O1", version],
            );
            let composed = combine(&[&a, &b], &[], &[]).expect("composed");
            let input = parse(&composed).unwrap();
            let strings = (input.shdrs.iter())
                .find(|s| c_str(input.shstrtab, s.name) == Some(b".debug_str"))
                .unwrap();
            let bytes = slice(input.data, strings.offset, strings.size).unwrap();
            let all: Vec<&[u8]> = bytes.split(|&c| c == 0).filter(|s| !s.is_empty()).collect();
            let distinct: rustc_hash::FxHashSet<&[u8]> = all.iter().copied().collect();
            assert_eq!(all.len(), distinct.len(), "{version}: a string twice");
            assert!(distinct.contains(&b"point"[..]), "{version}");
            let path = d.join(format!("composed{version}.o"));
            std::fs::write(&path, &composed).unwrap();
            let out = std::process::Command::new("llvm-dwarfdump-19")
                .arg("--verify")
                .arg(&path)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{version}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
    }
}
