//! Composition in process: the fragments of a unit combined into one ELF
//! relocatable object, as `ld.lld -r` would, with the definitions that
//! were internal in the source made local symbols again, as `llvm-objcopy
//! --localize-symbols` would — without starting either process or writing
//! a temporary file (a unit paid about 60 ms of CPU for the two, DESIGN.md
//! "many small units").
//!
//! What it handles is what LLVM's code generator writes for a fragment on
//! ELF64 little-endian targets (x86-64, AArch64): data, BSS, note, init/fini
//! array and unwind sections; RELA relocations; COMDAT groups; the address
//! significance table; one symbol table. Sections with the same name,
//! type, flags and entry size are concatenated in fragment order (each
//! aligned), except the members of a COMDAT group, which stay sections of
//! their own; relocations move with their section (against a section
//! symbol, the addend moves too). A global symbol defined in one fragment
//! and referenced by others becomes one symbol. The empty local symbols
//! that stand for the fragments' file symbols (see `split`) are left out.
//!
//! Anything else — another class or byte order, REL relocations, extended
//! section numbering, `SHF_LINK_ORDER` or compressed sections, a section
//! type not listed, a symbol defined twice — returns `None`, and the
//! caller composes with the external tools as before: never a wrong
//! object, at worst a slower one.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::debug_compose::{AbbrevUnions, DebugSections, StringTables};
use super::elf::*;
use super::leb128::read_uleb;
use super::Decline;

/// The name of the labels that mark shared constants' pieces (see
/// `Composer::finish`): a temporary label, as clang's constant labels.
const CONSTANT_LABEL: &[u8] = b".Lrepocc.constant";

/// What identifies a section of private read-only data — bytes,
/// alignment and relocations, each by the global symbol it names — when
/// it is one: a table the optimizer made (a switch's lookup table), in
/// `.rodata` or `.data.rel.ro`, not mergeable, outside any group, with no
/// symbol of its own. clang's ConstantMerge keeps one of identical such
/// tables (unnamed_addr: their addresses mean nothing); each function's
/// fragment brings its own. A relocation to a section or a local symbol
/// (a jump table's targets, a name that is only the fragment's) makes it
/// unique: `None`.
fn private_data_key(input: &Input, i: usize) -> Option<Vec<u8>> {
    let s = input.shdrs.get(i)?;
    let name = c_str(input.shstrtab, s.name)?;
    let read_only = name.starts_with(b".rodata") || name.starts_with(b".data.rel.ro");
    if s.sh_type != SHT_PROGBITS
        || !read_only
        || s.flags & (SHF_MERGE | SHF_GROUP | SHF_EXECINSTR) != 0
        || (s.flags & SHF_WRITE != 0 && !name.starts_with(b".data.rel.ro"))
        || input
            .syms
            .iter()
            .skip(1)
            .any(|y| y.shndx as usize == i && y.info & 0xf != STT_SECTION)
    {
        return None;
    }
    let mut key = Vec::new();
    key.extend_from_slice(&s.align.to_le_bytes());
    key.extend_from_slice(&s.size.to_le_bytes());
    key.extend_from_slice(slice(input.data, s.offset, s.size)?);
    for r in input
        .shdrs
        .iter()
        .filter(|r| r.sh_type == SHT_RELA && r.info as usize == i)
    {
        for e in input.relas(r)? {
            let sym = input.syms.get(e.sym)?;
            let bind = sym.info >> 4;
            let target = c_str(input.strtab, sym.name)?;
            if bind == STB_LOCAL || target.is_empty() {
                return None;
            }
            // Offset, type and addend; the symbol by its name (its index
            // is the part's own).
            key.extend_from_slice(&e.offset.to_le_bytes());
            key.extend_from_slice(&e.r_type.to_le_bytes());
            key.extend_from_slice(&e.addend.to_le_bytes());
            key.extend_from_slice(&(target.len() as u64).to_le_bytes());
            key.extend_from_slice(target);
        }
    }
    Some(key)
}

/// `object` with its `.eh_frame` aligned as its records are (4 bytes)
/// where the section says more: `ld.lld -r` (composing's fallback) places
/// each part's section at the section's alignment, and a carved
/// fragment's records end at any 4-byte boundary, so a part aligned to 8
/// after one would leave a gap — a zero word, read as the section's end
/// (GNU ld: "error in .eh_frame; no .eh_frame_hdr table will be created").
pub fn unwind_aligned_to_records(object: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut patched: Option<Vec<u8>> = None;
    if let (Some(input), Some(shoff)) = (parse(object), u64_at(object, 0x28)) {
        for (i, s) in input.shdrs.iter().enumerate() {
            let unwind = c_str(input.shstrtab, s.name) == Some(&b".eh_frame"[..]);
            if !unwind || s.align <= UNWIND_RECORD_ALIGN || s.size % UNWIND_RECORD_ALIGN != 0 {
                continue;
            }
            let at = shoff as usize + i * 64 + 0x30;
            let out = patched.get_or_insert_with(|| object.to_vec());
            if let Some(field) = out.get_mut(at..at + 8) {
                field.copy_from_slice(&UNWIND_RECORD_ALIGN.to_le_bytes());
            }
        }
    }
    match patched {
        Some(bytes) => std::borrow::Cow::Owned(bytes),
        None => std::borrow::Cow::Borrowed(object),
    }
}

fn is_data_type(t: u32, machine: u16) -> bool {
    matches!(
        t,
        SHT_PROGBITS
            | SHT_NOBITS
            | SHT_NOTE
            | SHT_INIT_ARRAY
            | SHT_FINI_ARRAY
            | SHT_PREINIT_ARRAY
            | SHT_LLVM_LINKER_OPTIONS
    ) || (t == SHT_X86_64_UNWIND && machine == EM_X86_64)
}

/// The most constraining of two ELF visibilities (internal, hidden,
/// protected, default).
fn merge_visibility(a: u8, b: u8) -> u8 {
    let rank = |v: u8| match v & 3 {
        1 => 0, // internal
        2 => 1, // hidden
        3 => 2, // protected
        _ => 3, // default
    };
    let v = if rank(a) <= rank(b) { a & 3 } else { b & 3 };
    (a & !3) | v
}

/// Combines `objects` into one relocatable object with the symbols named
/// in `locals` (where defined) local. `None`: not a case handled here.
#[cfg(test)]
pub fn combine(objects: &[&[u8]], locals: &[String], unnamed: &[String]) -> Option<Vec<u8>> {
    combine_filling(objects, locals, unnamed, &[], CodeFill::Trap).ok()
}

/// How the gaps an alignment leaves between pieces of x86-64 code are
/// filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeFill {
    /// One-byte traps (`int3`), as lld pads between input sections.
    #[cfg_attr(not(test), allow(dead_code))]
    Trap,
    /// NOPs as LLVM's assembler pads between the functions of one section,
    /// each at most this many bytes (the subtarget's longest, see
    /// `llvm::max_nop_bytes`): a fragment compiled alone with other
    /// functions (its local helpers) holds such padding, and the same
    /// functions carved apart and composed must get the same bytes.
    Nops(u8),
}

impl CodeFill {
    /// `len` bytes of padding.
    fn bytes(self, len: usize) -> Vec<u8> {
        match self {
            // No assembler backend to ask (`max_nop_bytes` gave 0): traps.
            CodeFill::Trap | CodeFill::Nops(0) => vec![0xcc; len],
            CodeFill::Nops(max) => x86_nops(len, usize::from(max)),
        }
    }
}

/// `len` bytes of x86 NOPs, written as LLVM's X86 assembler backend writes
/// them (`writeNopData`): instructions of at most `max` bytes, the longest
/// first; one longer than 10 bytes is the 10-byte NOP behind `0x66`
/// prefixes.
fn x86_nops(len: usize, max: usize) -> Vec<u8> {
    const NOPS: [&[u8]; 10] = [
        &[0x90],
        &[0x66, 0x90],
        &[0x0f, 0x1f, 0x00],
        &[0x0f, 0x1f, 0x40, 0x00],
        &[0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00],
        &[0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00],
        &[0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x66, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
        &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00],
    ];
    let max = max.max(1);
    let mut out = Vec::with_capacity(len);
    let mut left = len;
    while left > 0 {
        let this = left.min(max);
        let prefixes = this.saturating_sub(10);
        out.extend(std::iter::repeat_n(0x66, prefixes));
        out.extend_from_slice(NOPS[this - prefixes - 1]);
        left -= this;
    }
    out
}

/// Whether objects for the target `triple` are the ones composed here:
/// ELF64 little-endian x86-64 and AArch64 (not x32, ILP32 or big-endian
/// AArch64).
pub fn composes_for_triple(triple: &str) -> bool {
    let mut parts = triple.split('-');
    let arch = parts.next().unwrap_or("");
    let environment_32 = parts.any(|p| p.ends_with("x32") || p.ends_with("ilp32"));
    matches!(arch, "x86_64" | "aarch64" | "arm64") && !environment_32
}

/// [`combine`], with code padded as `fill` says and the constructor and
/// destructor tables last, in the order of `structors` (one
/// `structor_order::table_entry` each; none moved when it is empty); the
/// reason when the objects are not a case handled here.
pub fn combine_filling(
    objects: &[&[u8]],
    locals: &[String],
    unnamed: &[String],
    structors: &[String],
    fill: CodeFill,
) -> Result<Vec<u8>, Decline> {
    let inputs: Vec<Input> = (objects.iter())
        .map(|o| parse(o))
        .collect::<Option<_>>()
        .ok_or(Decline("a part that is not an object read here"))?;
    let first = inputs.first().ok_or(Decline("no parts"))?;
    let machine = u16_at(first.data, 18).ok_or(Decline("a truncated ELF header"))?;
    let e_flags = u32_at(first.data, 0x30).ok_or(Decline("a truncated ELF header"))?;
    if !matches!(machine, EM_X86_64 | EM_AARCH64) {
        return Err(Decline("a machine other than x86-64 and AArch64"));
    }
    if inputs
        .iter()
        .any(|input| u16_at(input.data, 18) != Some(machine))
    {
        return Err(Decline("parts of different machines"));
    }
    // The composed object's table says which symbols are address-
    // significant only if every part's did.
    let every_part_has_addrsig = inputs
        .iter()
        .all(|input| input.shdrs.iter().any(|s| s.sh_type == SHT_LLVM_ADDRSIG));
    // How each part's debug sections are composed is known before the
    // first is placed: the parts' units share one abbreviation table.
    let plans = plan_parts(&inputs).ok_or(Decline("a part's groups or debug sections"))?;
    let debug: Vec<&DebugSections> = plans.iter().map(|p| &p.debug).collect();
    let abbrevs = AbbrevUnions::of(&debug);
    let string_tables = StringTables::of(&debug);
    let mut composer = Composer::new(machine, fill, structors);
    for (position, (input, mut plan)) in inputs.iter().zip(plans).enumerate() {
        plan.debug.finish(
            input,
            abbrevs.of_object(position),
            string_tables.of_object(position),
        );
        (composer.add_part(input, &plan))
            .ok_or(Decline("a part's sections, symbols or relocations"))?;
    }
    (composer.finish(first.data, e_flags, locals, unnamed, every_part_has_addrsig))
        .ok_or(Decline("the composed object's symbols or layout"))
}

/// What is known of one part before any is placed.
struct PartPlan {
    /// Which sections belong to a group: those stay unmerged.
    in_group: Vec<bool>,
    /// Sections of a COMDAT group whose signature an earlier part's group
    /// already had — a type unit of debug info, the
    /// `DW.ref.__gxx_personality_v0` every C++ fragment with exceptions
    /// defines — are left out, as `ld -r` keeps one group per signature;
    /// their global symbols are the kept group's.
    dropped: Vec<bool>,
    /// How its debug sections are composed.
    debug: DebugSections,
}

/// Each part's groups and debug sections, in order.
fn plan_parts(inputs: &[Input]) -> Option<Vec<PartPlan>> {
    let mut comdat_groups_seen: HashSet<Vec<u8>> = HashSet::default();
    let mut plans = Vec::with_capacity(inputs.len());
    for input in inputs {
        let n = input.shdrs.len();
        let mut in_group = vec![false; n];
        let mut dropped = vec![false; n];
        for (g, s) in (input.shdrs.iter().enumerate()).filter(|(_, s)| s.sh_type == SHT_GROUP) {
            let (flags, members) = input.group(s)?;
            for &m in &members {
                *in_group.get_mut(m)? = true;
            }
            let comdat = flags & GRP_COMDAT != 0;
            let signature = (input.syms.get(s.info as usize))
                .and_then(|sym| c_str(input.strtab, sym.name))
                .filter(|name| !name.is_empty());
            if let (true, Some(signature)) = (comdat, signature) {
                if !comdat_groups_seen.insert(signature.to_vec()) {
                    dropped[g] = true;
                    for m in members {
                        dropped[m] = true;
                    }
                }
            }
        }
        let debug = DebugSections::of(input, &in_group, &dropped);
        plans.push(PartPlan {
            in_group,
            dropped,
            debug,
        });
    }
    Some(plans)
}

/// Where one part's sections and symbols landed.
struct Placement {
    /// Data sections: where each lands (output section, offset).
    placed: Vec<Option<(usize, u64)>>,
    /// Sections placed where an earlier part's identical one is: their
    /// relocations are that one's.
    placed_on_earlier: Vec<bool>,
    /// Its groups: (input index, output index).
    groups: Vec<(usize, usize)>,
    /// Input symbol → output symbol and what to add to a relocation's
    /// addend against it (a section symbol of a merged section).
    map: Vec<Option<(SymRef, i64)>>,
}

/// The composed object under construction, part by part.
struct Composer {
    machine: u16,
    fill: CodeFill,
    sections: Vec<OutSection>,
    /// (name, type, flags, entry size) → the output section merging them.
    merged: HashMap<(Vec<u8>, u32, u64, u64), usize>,
    locals: Vec<OutSym>,
    /// Output section → its section symbol (a local).
    section_symbol: HashMap<usize, usize>,
    globals: Vec<OutSym>,
    global_index: HashMap<Vec<u8>, usize>,
    addrsig: Vec<SymRef>,
    addrsig_seen: HashSet<SymRef>,
    /// Debug string sections merged string by string (see
    /// `DebugStrings`): output section → where each string is.
    interned: HashMap<usize, HashMap<Vec<u8>, u64>>,
    /// Abbreviation tables kept once: (output section, bytes) → offset.
    shared_tables: HashMap<(usize, Vec<u8>), u64>,
    /// Private read-only data kept once (see `private_data_key`):
    /// (output section, key) → offset.
    private_data: HashMap<(usize, Vec<u8>), u64>,
    /// Where each shared string offsets table is: its id → (output
    /// section, offset).
    string_tables_at: HashMap<usize, (usize, u64)>,
    /// Entries of the shared string offsets table already relocated (by an
    /// earlier part whose units name the same string).
    shared_entries: HashSet<(usize, u64)>,
    /// Each structor table's rank, by its `structor_order::table_entry`;
    /// empty: the tables stay where they are.
    structor_ranks: HashMap<Vec<u8>, usize>,
    /// Output structor table → its rank (the lowest of what went in).
    structor_rank: HashMap<usize, usize>,
}

impl Composer {
    fn new(machine: u16, fill: CodeFill, structors: &[String]) -> Composer {
        Composer {
            machine,
            fill,
            sections: Vec::new(),
            merged: HashMap::default(),
            locals: Vec::new(),
            section_symbol: HashMap::default(),
            globals: Vec::new(),
            global_index: HashMap::default(),
            addrsig: Vec::new(),
            addrsig_seen: HashSet::default(),
            interned: HashMap::default(),
            shared_tables: HashMap::default(),
            private_data: HashMap::default(),
            string_tables_at: HashMap::default(),
            shared_entries: HashSet::default(),
            structor_ranks: (structors.iter().enumerate())
                .map(|(rank, key)| (key.as_bytes().to_vec(), rank))
                .collect(),
            structor_rank: HashMap::default(),
        }
    }

    /// Adds one part: its sections, symbols, relocations, address
    /// significance and groups.
    fn add_part(&mut self, input: &Input, plan: &PartPlan) -> Option<()> {
        let n = input.shdrs.len();
        let mut part = Placement {
            placed: vec![None; n],
            placed_on_earlier: vec![false; n],
            groups: Vec::new(),
            map: vec![None; input.syms.len()],
        };
        for (i, s) in input.shdrs.iter().enumerate().skip(1) {
            if plan.dropped[i] {
                continue;
            }
            if s.flags & (SHF_LINK_ORDER | SHF_COMPRESSED) != 0 {
                return None;
            }
            match s.sh_type {
                SHT_GROUP => {
                    self.sections.push(OutSection {
                        name: c_str(input.shstrtab, s.name)?.to_vec(),
                        sh_type: SHT_GROUP,
                        flags: s.flags,
                        align: 4,
                        entsize: 4,
                        content: Content::Bss(0), // filled once symbols are mapped
                        relas: Vec::new(),
                    });
                    let o = self.sections.len() - 1;
                    part.groups.push((i, o));
                    // LLVM defines a group's signature symbol in the group
                    // section itself when nothing else defines it (the
                    // type units of debug info): a local there too.
                    part.placed[i] = Some((o, 0));
                }
                t if is_data_type(t, self.machine) => {
                    part.placed[i] = Some(self.place_section(input, plan, &mut part, i)?);
                }
                SHT_RELA | SHT_SYMTAB | SHT_STRTAB | SHT_LLVM_ADDRSIG => {}
                _ => return None,
            }
        }
        for k in 1..input.syms.len() {
            part.map[k] = self.map_symbol(input, plan, &part, k)?;
        }
        for s in input.shdrs.iter() {
            match s.sh_type {
                SHT_RELA if plan.dropped.get(s.info as usize) == Some(&true) => {}
                SHT_RELA => self.move_relocations(input, plan, &part, s)?,
                SHT_LLVM_ADDRSIG => self.take_address_significance(input, plan, &part, s)?,
                _ => {}
            }
        }
        self.rank_structor_tables(input, &part)?;
        for &(gi, go) in &part.groups {
            let s = &input.shdrs[gi];
            let (flag, group) = input.group(s)?;
            let (signature, _) = part.map.get(s.info as usize).copied().flatten()?;
            let mut members = Vec::new();
            for m in group {
                let h = input.shdrs.get(m)?;
                members.push(if h.sh_type == SHT_RELA {
                    Member::RelaOf(part.placed.get(h.info as usize).copied().flatten()?.0)
                } else {
                    Member::Section(part.placed.get(m).copied().flatten()?.0)
                });
            }
            self.sections[go].content = Content::Group {
                flag,
                signature,
                members,
            };
        }
        Some(())
    }

    /// Records the rank of each constructor or destructor table of the
    /// part: its group's key's, or that of the entries without a key.
    fn rank_structor_tables(&mut self, input: &Input, part: &Placement) -> Option<()> {
        if self.structor_ranks.is_empty() {
            return Some(());
        }
        let mut key_of: HashMap<usize, &[u8]> = HashMap::default();
        for &(gi, _) in &part.groups {
            let s = &input.shdrs[gi];
            let sym = input.syms.get(s.info as usize)?;
            let signature = c_str(input.strtab, sym.name)?;
            for m in input.group(s)?.1 {
                key_of.insert(m, signature);
            }
        }
        for (i, s) in input.shdrs.iter().enumerate() {
            if !super::structor_order::is_structor_table(s.sh_type) {
                continue;
            }
            let Some((o, _)) = part.placed.get(i).copied().flatten() else {
                continue;
            };
            let key = key_of.get(&i).copied().unwrap_or(b"");
            let entry = super::structor_order::entry_of(c_str(input.shstrtab, s.name)?, key);
            let rank = self
                .structor_ranks
                .get(&entry)
                .copied()
                .unwrap_or(usize::MAX);
            let at = self.structor_rank.entry(o).or_insert(rank);
            *at = (*at).min(rank);
        }
        Some(())
    }

    /// Places data section `i` of `input`: merged into the output section
    /// of its name (a group's member stays a section of its own), or onto
    /// what an earlier part already placed there (shared string offsets
    /// and abbreviation tables, the linker options, identical private
    /// tables); where it lands.
    ///
    /// Long on purpose: one match over the kinds of section a part holds (code
    /// and data, merged strings, DWARF tables placed once, linker options,
    /// private tables), each arm a few lines.
    fn place_section(
        &mut self,
        input: &Input,
        plan: &PartPlan,
        part: &mut Placement,
        i: usize,
    ) -> Option<(usize, u64)> {
        let s = input.shdrs[i];
        let t = s.sh_type;
        let strings = &plan.debug;
        let name = c_str(input.shstrtab, s.name)?.to_vec();
        let align = s.align.max(1);
        if !align.is_power_of_two() {
            return None;
        }
        let key = (name.clone(), t, s.flags, s.entsize);
        let existing = if plan.in_group[i] {
            None
        } else {
            self.merged.get(&key).copied()
        };
        let out = match existing {
            Some(o) => o,
            None => {
                self.sections.push(OutSection {
                    name,
                    sh_type: t,
                    flags: s.flags,
                    align,
                    entsize: s.entsize,
                    content: if t == SHT_NOBITS {
                        Content::Bss(0)
                    } else {
                        Content::Data(Vec::new())
                    },
                    relas: Vec::new(),
                });
                let o = self.sections.len() - 1;
                if !plan.in_group[i] {
                    self.merged.insert(key, o);
                }
                o
            }
        };
        let sec = &mut self.sections[out];
        sec.align = sec.align.max(align);
        if strings.merged[i] {
            // Its strings arrive with the relocations that refer to them.
            self.interned.entry(out).or_default();
            return Some((out, 0));
        }
        // A string offsets table an earlier fragment shares.
        let shared_strings = strings.shared_strings.filter(|&(t, _)| t == i);
        let earlier = shared_strings.and_then(|(_, id)| self.string_tables_at.get(&id));
        if let Some(&at) = earlier.filter(|&&(o, _)| o == out) {
            return Some(at);
        }
        // An abbreviation table another fragment already has.
        let shared = (strings.shared_abbrevs)
            .filter(|&a| a == i)
            .and_then(|a| strings.rewritten.get(&a));
        if let Some(&at) = shared.and_then(|table| self.shared_tables.get(&(out, table.clone()))) {
            return Some((out, at));
        }
        // The linker options are the module's: every part of a unit that
        // has them has the same, kept once.
        if t == SHT_LLVM_LINKER_OPTIONS {
            let bytes = slice(input.data, s.offset, s.size)?;
            if let Content::Data(d) = &sec.content {
                if bytes.is_empty() || d.as_slice() == bytes {
                    return Some((out, 0));
                }
            }
        }
        // A table an earlier part has, byte for byte.
        let private_key = if plan.in_group[i] {
            None
        } else {
            private_data_key(input, i)
        };
        if let Some(key) = &private_key {
            if let Some(&at) = self.private_data.get(&(out, key.clone())) {
                part.placed_on_earlier[i] = true;
                return Some((out, at));
            }
        }
        // Padding in x86-64 code as `fill` says (see `CodeFill`), zeros
        // elsewhere.
        let code = self.machine == EM_X86_64 && sec.flags & SHF_EXECINSTR != 0;
        // Unwind records are 4-byte aligned and must follow one another
        // without a gap (a zero word reads as the end of the section),
        // whatever the section's alignment; `unwind::pad_to_alignment`
        // ends the section as LLVM does.
        let align = if sec.name == b".eh_frame" {
            align.min(UNWIND_RECORD_ALIGN)
        } else if s.size == 0 {
            // An empty section (every object has a `.text`) adds no
            // padding: placed last, it would pad the section's end,
            // depending on which parts came from the repository.
            1
        } else {
            align
        };
        let at = match &mut sec.content {
            Content::Data(d) => {
                let at = (d.len() as u64).next_multiple_of(align);
                let gap = at as usize - d.len();
                if code {
                    d.extend_from_slice(&self.fill.bytes(gap));
                } else {
                    d.resize(at as usize, 0);
                }
                match strings.rewritten.get(&i) {
                    Some(bytes) => d.extend_from_slice(bytes),
                    None => d.extend_from_slice(slice(input.data, s.offset, s.size)?),
                }
                at
            }
            Content::Bss(size) => {
                let at = size.next_multiple_of(align);
                *size = at.checked_add(s.size)?;
                at
            }
            Content::Group { .. } => return None,
        };
        if let Some(table) = shared {
            self.shared_tables.insert((out, table.clone()), at);
        }
        if let Some((_, id)) = shared_strings {
            self.string_tables_at.insert(id, (out, at));
        }
        if let Some(key) = private_key {
            self.private_data.insert((out, key), at);
        }
        Some((out, at))
    }

    /// The output symbol input symbol `k` becomes (`Some(None)`: none, as
    /// the fragments' unnamed file symbols and the locals of a left-out
    /// group); `None`: a symbol not handled here (defined twice, another
    /// binding, a special section).
    fn map_symbol(
        &mut self,
        input: &Input,
        plan: &PartPlan,
        part: &Placement,
        k: usize,
    ) -> Option<Option<(SymRef, i64)>> {
        let sym = input.syms[k];
        let name = c_str(input.strtab, sym.name)?;
        let (bind, kind) = (sym.info >> 4, sym.info & 0xf);
        let section = match sym.shndx {
            SHN_UNDEF | SHN_ABS | SHN_COMMON => None,
            s if s >= SHN_LORESERVE => return None,
            // Defined in a left-out group: a global is the kept group's
            // definition; nothing kept refers to a local (a reference
            // would find no mapping and decline).
            s if plan.dropped.get(s as usize) == Some(&true) => {
                let global = (self.global_index.get(name))
                    .filter(|_| bind == STB_GLOBAL || bind == STB_WEAK);
                return Some(global.map(|&g| (SymRef::Global(g), 0)));
            }
            s => Some(part.placed.get(s as usize).copied().flatten()?),
        };
        if kind == STT_SECTION {
            let (out, at) = section?;
            let locals = &mut self.locals;
            let local = *self.section_symbol.entry(out).or_insert_with(|| {
                locals.push(OutSym {
                    name: Vec::new(),
                    info: STT_SECTION,
                    other: 0,
                    section: Some(out),
                    special: 0,
                    value: 0,
                    size: 0,
                });
                locals.len() - 1
            });
            return Some(Some((SymRef::Local(local), at as i64 + sym.value as i64)));
        }
        let out_sym = OutSym {
            name: name.to_vec(),
            info: sym.info,
            other: sym.other,
            section: section.map(|(o, _)| o),
            special: if section.is_some() { 0 } else { sym.shndx },
            value: sym.value + section.map_or(0, |(_, at)| at),
            size: sym.size,
        };
        if bind == STB_LOCAL {
            // The fragments' unnamed file symbols (see `split`).
            if name.is_empty() && kind == STT_NOTYPE && sym.shndx == SHN_ABS {
                return Some(None);
            }
            self.locals.push(out_sym);
            return Some(Some((SymRef::Local(self.locals.len() - 1), 0)));
        }
        if bind != STB_GLOBAL && bind != STB_WEAK {
            return None;
        }
        let g = match self.global_index.get(name) {
            None => {
                self.globals.push(out_sym);
                self.global_index
                    .insert(name.to_vec(), self.globals.len() - 1);
                self.globals.len() - 1
            }
            Some(&g) => {
                let old = &mut self.globals[g];
                let old_defined = old.section.is_some() || old.special != SHN_UNDEF;
                let new_defined = sym.shndx != SHN_UNDEF;
                let other = merge_visibility(old.other, sym.other);
                match (old_defined, new_defined) {
                    (true, true) => return None,
                    (false, true) => *old = out_sym,
                    (false, false) if bind == STB_GLOBAL => old.info = sym.info,
                    _ => {}
                }
                old.other = other;
                g
            }
        };
        Some(Some((SymRef::Global(g), 0)))
    }

    /// The relocations of relocation section `s`, moved with the section
    /// they apply to.
    fn move_relocations(
        &mut self,
        input: &Input,
        plan: &PartPlan,
        part: &Placement,
        s: &Shdr,
    ) -> Option<()> {
        let target = s.info as usize;
        let (out, at) = part.placed.get(target).copied().flatten()?;
        if part.placed_on_earlier[target] {
            return Some(());
        }
        let strings = &plan.debug;
        let table = input.relas(s)?;
        let live = strings.live_offsets.as_ref().filter(|l| l.0 == target);
        let line_table = strings.line_files.as_ref().filter(|l| l.0 == target);
        let shared_table = strings.shared_strings.is_some_and(|(t, _)| t == target);
        for e in table {
            let (sym_index, r_type) = (e.sym, e.r_type);
            let mut r_offset = e.offset;
            // An entry of the string offsets no unit kept uses goes; a
            // kept one may move up.
            if let Some((_, live)) = live {
                match live.get(&r_offset) {
                    Some(&moved) => r_offset = moved,
                    None => continue,
                }
            }
            // An entry of the shared table: relocated once.
            if shared_table && !self.shared_entries.insert((out, r_offset + at)) {
                continue;
            }
            // In a line table some file entries left: what was in them
            // goes, what followed moves up.
            if let Some((_, removed)) = line_table {
                if removed.iter().any(|r| r.contains(&r_offset)) {
                    continue;
                }
                r_offset -= (removed.iter())
                    .filter(|r| r.end <= r_offset)
                    .map(|r| r.end - r.start)
                    .sum::<u64>();
            }
            let (sym, delta) = if sym_index == 0 {
                (None, 0)
            } else {
                let (r, d) = part.map.get(sym_index).copied().flatten()?;
                (Some(r), d)
            };
            let mut addend = e.addend.checked_add(delta)?;
            if let Some(&from) = strings.section_symbols.get(&sym_index) {
                // A merged string: the one it names, interned.
                if !is_absolute(self.machine, r_type) {
                    return None;
                }
                addend = self.intern_string(input, part, from, addend)? as i64;
            }
            self.sections[out].relas.push(OutRela {
                offset: r_offset + at,
                sym,
                r_type,
                addend,
            });
        }
        Some(())
    }

    /// Where the string at `offset` of merged string section `from` is in
    /// its output section (added there the first time).
    fn intern_string(
        &mut self,
        input: &Input,
        part: &Placement,
        from: usize,
        offset: i64,
    ) -> Option<u64> {
        let h = &input.shdrs[from];
        let bytes = slice(input.data, h.offset, h.size)?;
        let string = c_str(bytes, u32::try_from(offset).ok()?)?;
        let (target, _) = part.placed.get(from).copied().flatten()?;
        let table = self.interned.get_mut(&target)?;
        Some(match table.get(string) {
            Some(&o) => o,
            None => {
                let Content::Data(d) = &mut self.sections[target].content else {
                    return None;
                };
                let o = d.len() as u64;
                d.extend_from_slice(string);
                d.push(0);
                table.insert(string.to_vec(), o);
                o
            }
        })
    }

    /// The symbols address-significance section `s` lists, once each.
    fn take_address_significance(
        &mut self,
        input: &Input,
        plan: &PartPlan,
        part: &Placement,
        s: &Shdr,
    ) -> Option<()> {
        let mut bytes = slice(input.data, s.offset, s.size)?;
        while !bytes.is_empty() {
            let (v, used) = read_uleb(bytes)?;
            bytes = &bytes[used..];
            let index = usize::try_from(v).ok()?;
            // A local of a left-out group is gone.
            let Some((r, _)) = part.map.get(index).copied().flatten() else {
                let sym = input.syms.get(index)?;
                if plan.dropped.get(sym.shndx as usize) == Some(&true) {
                    continue;
                }
                return None;
            };
            if self.addrsig_seen.insert(r) {
                self.addrsig.push(r);
            }
        }
        Some(())
    }

    /// The composed object: compile units and unwind records merged, the
    /// private constants and `locals` made local.
    fn finish(
        mut self,
        first: &[u8],
        e_flags: u32,
        locals: &[String],
        unnamed: &[String],
        with_addrsig: bool,
    ) -> Option<Vec<u8>> {
        // One compile unit where the fragments of a unit had one each.
        super::debug_units::merge_compile_units(&mut self.sections, &self.section_symbol);
        // One abbreviation table and one string offsets table for them all.
        super::debug_tables::share_tables(&mut self.sections, &self.section_symbol);
        self.share_unwind_entries();

        // The private constants (`unnamed`) are local `.L` symbols, as in
        // clang's object: GNU ld and lld leave `.L` symbols of merged
        // string sections out of what they link, so a debugger shows no
        // `<.rc.…>` symbol after a string pointer.
        let unnamed: HashSet<&[u8]> = unnamed.iter().map(|l| l.as_bytes()).collect();
        for g in self.globals.iter_mut() {
            if g.section.is_some() && unnamed.contains(g.name.as_slice()) {
                g.name.splice(0..0, b".L".iter().copied());
            }
        }

        // The carver marks where each shared constant starts with an
        // unnamed symbol (`carve`); named as clang's constant labels are
        // (`.LCPI…`), GNU ld and lld leave them out of programs as they do
        // clang's, where unnamed ones filled a program's symbol table
        // (799 in lua's at `-O2`, 5.6% of the file).
        for l in self.locals.iter_mut() {
            let merged = l
                .section
                .and_then(|s| self.sections.get(s))
                .is_some_and(|s| s.flags & SHF_MERGE != 0);
            if l.name.is_empty() && l.info & 0xf == STT_NOTYPE && merged {
                l.name = CONSTANT_LABEL.to_vec();
            }
        }

        // Symbols named in `locals` that are defined here become local.
        let wanted: HashSet<&[u8]> = locals.iter().map(|l| l.as_bytes()).collect();
        let localize = |s: &OutSym| {
            s.section.is_some()
                && (wanted.contains(s.name.as_slice())
                    || s.name
                        .strip_prefix(b".L")
                        .is_some_and(|n| unnamed.contains(n)))
        };
        if self.machine == EM_X86_64 {
            resolve_local_calls(&mut self.sections, &self.locals, &self.globals, &localize);
        }
        if !self.structor_ranks.is_empty() {
            super::structor_order::place_structors_last(
                &mut self.sections,
                &mut self.locals,
                &mut self.globals,
                &self.structor_rank,
            );
        }
        write(
            first,
            self.machine,
            e_flags,
            &self.sections,
            &self.locals,
            &self.globals,
            &localize,
            with_addrsig.then_some(&self.addrsig[..]),
        )
    }

    /// One CIE where the fragments repeat it (see `unwind`), unless a
    /// symbol or a relocation elsewhere points into the section.
    fn share_unwind_entries(&mut self) {
        for o in 0..self.sections.len() {
            if self.sections[o].name != b".eh_frame" {
                continue;
            }
            let defines = (self.locals.iter().chain(&self.globals))
                .any(|s| s.section == Some(o) && s.info & 0xf != STT_SECTION);
            let section_symbol = self.section_symbol.get(&o).map(|&l| SymRef::Local(l));
            let referred = section_symbol.is_some()
                && (self.sections.iter().enumerate())
                    .any(|(j, sec)| j != o && sec.relas.iter().any(|r| r.sym == section_symbol));
            if !defines && !referred {
                super::unwind::share_cies(&mut self.sections[o]);
                super::unwind::pad_to_alignment(&mut self.sections[o], EH_FRAME_ALIGN);
            }
        }
    }
}

/// Fills in, and drops the relocations of, the PC-relative references in
/// code to a local symbol in the same section — a call from one fragment
/// to a static function another fragment defines, composed into one
/// `.text` — as clang's assembler resolves them in its own object: nothing
/// the linker does can separate the two, and nothing can interpose a local
/// symbol. References to global symbols stay (a shared library's may be
/// interposed), as do those to other sections.
fn resolve_local_calls(
    sections: &mut [OutSection],
    locals: &[OutSym],
    globals: &[OutSym],
    localize: &dyn Fn(&OutSym) -> bool,
) {
    for (o, section) in sections.iter_mut().enumerate() {
        if section.flags & SHF_EXECINSTR == 0 {
            continue;
        }
        let Content::Data(data) = &mut section.content else {
            continue;
        };
        section.relas.retain(|r| {
            if !matches!(r.r_type, R_X86_64_PC32 | R_X86_64_PLT32) {
                return true;
            }
            let target = match r.sym {
                Some(SymRef::Local(l)) => &locals[l],
                Some(SymRef::Global(g)) if localize(&globals[g]) => &globals[g],
                _ => return true,
            };
            if target.section != Some(o) || matches!(target.info & 0xf, STT_GNU_IFUNC | STT_TLS) {
                return true;
            }
            let value = (target.value as i64)
                .checked_add(r.addend)
                .and_then(|v| v.checked_sub(r.offset as i64))
                .and_then(|v| i32::try_from(v).ok());
            let field = usize::try_from(r.offset)
                .ok()
                .and_then(|at| data.get_mut(at..at.checked_add(4)?));
            match (value, field) {
                (Some(v), Some(field)) => {
                    field.copy_from_slice(&v.to_le_bytes());
                    false
                }
                _ => true,
            }
        });
    }
}

/// Whether a relocation type writes its symbol's value plus addend as is
/// (what references to debug strings use).
fn is_absolute(machine: u16, r_type: u32) -> bool {
    match machine {
        EM_X86_64 => matches!(r_type, 1 | 10), // R_X86_64_64, R_X86_64_32
        EM_AARCH64 => matches!(r_type, 257 | 258), // R_AARCH64_ABS64, ABS32
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn composed_targets_are_elf64_little_endian_x86_64_and_aarch64() {
        for t in ["x86_64-pc-linux-gnu", "aarch64-unknown-linux-gnu"] {
            assert!(super::composes_for_triple(t), "{t}");
        }
        for t in [
            "i386-pc-linux-gnu",
            "x86_64-pc-linux-gnux32",
            "aarch64_be-linux-gnu",
        ] {
            assert!(!super::composes_for_triple(t), "{t}");
        }
    }

    /// Code padding is the NOPs LLVM's assembler writes (as read back from
    /// objects clang-19 wrote: 13 and 14 bytes with a 15-byte maximum, one
    /// instruction behind `0x66` prefixes; with a 10-byte maximum, two).
    #[test]
    fn code_padding_is_the_assemblers_nops() {
        let cs_nopw: &[u8] = &[0x66, 0x2e, 0x0f, 0x1f, 0x84, 0, 0, 0, 0, 0];
        let prefixed = |n: usize| [vec![0x66; n], cs_nopw.to_vec()].concat();
        assert_eq!(CodeFill::Nops(15).bytes(13), prefixed(3));
        assert_eq!(CodeFill::Nops(15).bytes(14), prefixed(4));
        assert_eq!(
            CodeFill::Nops(10).bytes(13),
            [cs_nopw.to_vec(), vec![0x0f, 0x1f, 0x00]].concat()
        );
        assert_eq!(CodeFill::Nops(15).bytes(1), [0x90]);
        assert_eq!(CodeFill::Nops(15).bytes(31).len(), 31);
        assert_eq!(CodeFill::Trap.bytes(3), [0xcc; 3]);
    }
    use std::path::Path;
    use std::process::Command;

    /// Runs `cmd`, failing the test with its stderr if it fails; its
    /// stderr.
    pub(crate) fn succeed(cmd: &mut Command) -> String {
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    }

    pub(crate) fn compile(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Vec<u8> {
        let src = dir.join(name);
        std::fs::write(&src, source).unwrap();
        let obj = dir.join(format!("{name}.o"));
        let clang = if name.ends_with(".cc") {
            "clang++-19"
        } else {
            "clang-19"
        };
        succeed(
            Command::new(clang)
                .args(["-O2", "-c", "-o"])
                .arg(&obj)
                .args(flags)
                .arg(&src),
        );
        std::fs::read(obj).unwrap()
    }

    fn link_and_run(dir: &Path, objects: &[&Path], cxx: bool) -> String {
        let exe = dir.join("prog");
        succeed(
            Command::new(if cxx { "clang++-19" } else { "clang-19" })
                .arg("-o")
                .arg(&exe)
                .args(objects),
        );
        let run = Command::new(&exe).output().unwrap();
        assert!(run.status.success());
        String::from_utf8(run.stdout).unwrap()
    }

    /// The relocations readelf lists of `r_type` in the relocation
    /// sections of `object` whose names start with `section`.
    fn relocation_lines(object: &Path, section: &str, r_type: &str) -> Vec<String> {
        let out = Command::new("readelf")
            .arg("-rW")
            .arg(object)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        text.split("Relocation section")
            .filter(|s| s.contains(&format!("'{section}")))
            .flat_map(|s| s.lines())
            .filter(|l| l.contains(r_type))
            .map(str::to_string)
            .collect()
    }

    /// `source` compiled with `-g` and `flags` (the optimization level
    /// first) as `count` fragments (`-DPART=1`...), and the object composed
    /// of them (verified by llvm-dwarfdump): the parts, and where the
    /// composed object is.
    pub(crate) fn compose_parts(
        d: &std::path::Path,
        name: &str,
        source: &str,
        flags: &[&str],
        count: usize,
    ) -> (Vec<Vec<u8>>, std::path::PathBuf) {
        let parts: Vec<Vec<u8>> = (1..=count)
            .map(|p| {
                let part = format!("-DPART={p}");
                let mut all = vec!["-g"];
                all.extend_from_slice(flags);
                all.push(&part);
                compile(d, name, source, &all)
            })
            .collect();
        let objects: Vec<&[u8]> = parts.iter().map(|p| p.as_slice()).collect();
        let composed = combine(&objects, &[], &[]).expect("combined");
        let path = d.join("composed.o");
        std::fs::write(&path, &composed).unwrap();
        dump(&path, "--verify");
        (parts, path)
    }

    /// What `llvm-dwarfdump-19 what` prints of `object`; it must succeed
    /// (`--verify` reports on stdout, other failures on stderr).
    pub(crate) fn dump(object: &Path, what: &str) -> String {
        let out = Command::new("llvm-dwarfdump-19")
            .arg(what)
            .arg(object)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }

    fn assert_dwarf_verifies(object: &Path) {
        dump(object, "--verify");
    }

    fn symbol_binding(object: &Path, name: &str) -> String {
        let out = Command::new("readelf")
            .arg("-sW")
            .arg(object)
            .output()
            .unwrap();
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .map(|l| l.split_whitespace().nth(4).unwrap_or("").to_string())
            .unwrap_or_default()
    }

    #[test]
    fn combined_objects_link_and_run_with_statics_local_again() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // `counter` stands for a static the canonical stage made hidden
        // external: local again after combining, two units keep their own.
        let a = compile(
            d,
            "a.c",
            "__attribute__((visibility(\"hidden\"))) int counter;\n\
             static const char *names[] = {\"zero\", \"one\", \"two\"};\n\
             const char *name_of(int i) { return names[i % 3]; }\n\
             int bump_a(void) { return ++counter; }\n",
            &["-fPIC"],
        );
        let b = compile(
            d,
            "b.c",
            "#include <stdio.h>\n\
             const char *name_of(int i); int bump_a(void);\n\
             int bump_b(void);\n\
             int main(void) { bump_a(); bump_a(); bump_b();\n\
               printf(\"%s %d\\n\", name_of(bump_a()), bump_b()); return 0; }\n",
            &["-fPIC"],
        );
        let c = compile(
            d,
            "c.c",
            "__attribute__((visibility(\"hidden\"))) int counter;\n\
             int bump_b(void) { return counter += 10; }\n",
            &["-fPIC"],
        );
        let ab = combine(&[&a, &b], &["counter".to_string()], &[]).expect("combined");
        let c_local = combine(&[&c], &["counter".to_string()], &[]).expect("localized");
        let (ab_path, c_path) = (d.join("ab.o"), d.join("c_local.o"));
        std::fs::write(&ab_path, &ab).unwrap();
        std::fs::write(&c_path, &c_local).unwrap();
        assert_eq!(symbol_binding(&ab_path, "counter"), "LOCAL");
        assert_eq!(symbol_binding(&ab_path, "name_of"), "GLOBAL");
        // Without localizing, the two `counter`s would be one symbol
        // defined twice (a link error); local, each unit keeps its own.
        assert_eq!(link_and_run(d, &[&ab_path, &c_path], false), "zero 20\n");
    }

    #[test]
    fn calls_to_statics_in_the_same_section_are_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // `scale` stands for a static the canonical stage made hidden
        // external, defined by one fragment and called by another.
        let a = compile(
            d,
            "a.c",
            "__attribute__((visibility(\"hidden\"), noinline)) int scale(int x) { return x * 3 + 1; }\n",
            &["-fPIC"],
        );
        let b = compile(
            d,
            "b.c",
            "#include <stdio.h>\n\
             int scale(int x);\n\
             __attribute__((noinline)) int shown(int x) { return scale(x) + scale(x + 1); }\n\
             int main(void) { printf(\"%d\\n\", shown(4)); return 0; }\n",
            &["-fPIC"],
        );
        let calls = |object: &Path, target: &str| {
            relocation_lines(object, ".rela.text", "R_X86_64_PLT32")
                .iter()
                .filter(|l| l.split_whitespace().nth(4) == Some(target))
                .count()
        };
        let b_path = d.join("b1.o");
        std::fs::write(&b_path, &b).unwrap();
        assert_eq!(calls(&b_path, "scale"), 2);
        let ab = combine(&[&a, &b], &["scale".to_string()], &[]).expect("combined");
        let ab_path = d.join("ab.o");
        std::fs::write(&ab_path, &ab).unwrap();
        // Local and in the same `.text`: resolved, as clang's assembler
        // does; the calls to global `shown` and `printf` stay.
        assert_eq!(symbol_binding(&ab_path, "scale"), "LOCAL");
        assert_eq!(calls(&ab_path, "scale"), 0);
        assert_eq!(calls(&ab_path, "shown"), 1);
        assert_eq!(calls(&ab_path, "printf"), 1);
        assert_eq!(link_and_run(d, &[&ab_path], false), "29\n");
        // Not made local: the relocations stay.
        let kept = combine(&[&a, &b], &[], &[]).expect("combined");
        let kept_path = d.join("kept.o");
        std::fs::write(&kept_path, &kept).unwrap();
        assert_eq!(calls(&kept_path, "scale"), 2);
        assert_eq!(link_and_run(d, &[&kept_path], false), "29\n");
    }

    #[test]
    fn address_significance_tables_say_what_the_parts_said() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let a = compile(d, "a.c", "int f(int x) { return x + 1; }\n", &[]);
        let b = compile(
            d,
            "b.c",
            "int f(int);\nint g(int x) { return f(x) * 2; }\n",
            &[],
        );
        let taken = compile(d, "t.c", "int f(int);\nint (*p)(int) = f;\n", &[]);
        let without = compile(d, "w.c", "int h(int x) { return x; }\n", &["-fno-addrsig"]);
        let table = |object: &[u8], name: &str| -> Option<String> {
            let path = d.join(name);
            std::fs::write(&path, object).unwrap();
            let sections = Command::new("readelf")
                .arg("-SW")
                .arg(&path)
                .output()
                .unwrap();
            if !String::from_utf8_lossy(&sections.stdout).contains(".llvm_addrsig") {
                return None;
            }
            let out = Command::new("llvm-readobj-19")
                .arg("--addrsig")
                .arg(&path)
                .output()
                .unwrap();
            Some(String::from_utf8(out.stdout).unwrap())
        };
        // Nothing's address taken: an empty table, not none (lld would take
        // every symbol as address-significant and fold nothing).
        let ab = combine(&[&a, &b], &[], &[]).expect("combined");
        let ab_table = table(&ab, "ab.o").expect("a table");
        assert!(!ab_table.contains("Sym:"), "{ab_table}");
        let at = combine(&[&a, &taken], &[], &[]).expect("combined");
        let at_table = table(&at, "at.o").expect("a table");
        assert!(at_table.contains("Sym: f"), "{at_table}");
        // A part without a table: none for the whole.
        let aw = combine(&[&a, &without], &[], &[]).expect("combined");
        assert_eq!(table(&aw, "aw.o"), None);
    }

    #[test]
    fn unnamed_constants_become_local_labels() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // `text` stands for a private string constant the canonical stage
        // named `.rc.…` and made hidden external; `user` refers to it from
        // another fragment.
        let a = compile(
            d,
            "a.c",
            "__attribute__((visibility(\"hidden\"))) const char text[] = \"seven\";\n",
            &["-fPIC"],
        );
        let b = compile(
            d,
            "b.c",
            "#include <stdio.h>\n\
             extern __attribute__((visibility(\"hidden\"))) const char text[];\n\
             int main(void) { printf(\"%s\\n\", text); return 0; }\n",
            &["-fPIC"],
        );
        let text = "text".to_string();
        let ab = combine(
            &[&a, &b],
            std::slice::from_ref(&text),
            std::slice::from_ref(&text),
        )
        .expect("combined");
        let path = d.join("ab.o");
        std::fs::write(&path, &ab).unwrap();
        assert_eq!(symbol_binding(&path, ".Ltext"), "LOCAL");
        assert_eq!(symbol_binding(&path, "text"), "");
        assert_eq!(link_and_run(d, &[&path], false), "seven\n");
    }

    #[test]
    fn type_units_are_kept_once_per_signature() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let header = "struct shared { int a; double b; };\n";
        let flags = ["-g", "-fdebug-types-section"];
        // C++: clang gives C types no identifier, so only C++ ones become
        // type units without repocc's own identifiers.
        let a = compile(
            d,
            "a.cc",
            &format!("{header}int first(struct shared *s) {{ return s->a; }}\n"),
            &flags,
        );
        let b = compile(
            d,
            "b.cc",
            &format!("{header}double second(struct shared *s) {{ return s->b; }}\n"),
            &flags,
        );
        let groups = |object: &Path| {
            let out = Command::new("readelf")
                .arg("-gW")
                .arg(object)
                .output()
                .unwrap();
            String::from_utf8(out.stdout)
                .unwrap()
                .lines()
                .filter(|l| l.starts_with("COMDAT group section"))
                .count()
        };
        let (a_path, ab_path) = (d.join("a1.o"), d.join("ab.o"));
        std::fs::write(&a_path, &a).unwrap();
        let ab = combine(&[&a, &b], &[], &[]).expect("combined");
        std::fs::write(&ab_path, &ab).unwrap();
        // The struct's type unit once, as `ld -r` would keep it.
        assert!(groups(&a_path) >= 1);
        assert_eq!(groups(&ab_path), groups(&a_path));
        assert_dwarf_verifies(&ab_path);
        // Each debug string once; the string offsets of the left-out type
        // unit lost their relocations, the kept units' names still read.
        let strings = |object: &[u8]| -> Vec<Vec<u8>> {
            let input = parse(object).unwrap();
            let h = input
                .shdrs
                .iter()
                .find(|h| c_str(input.shstrtab, h.name) == Some(b".debug_str"))
                .unwrap();
            let bytes = slice(object, h.offset, h.size).unwrap();
            bytes.split(|&c| c == 0).map(<[u8]>::to_vec).collect()
        };
        let merged = strings(&ab);
        let mut unique = merged.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(merged.len(), unique.len(), "{merged:?}");
        let separate = strings(&a).len() + strings(&b).len();
        assert!(merged.len() < separate, "{} of {separate}", merged.len());
        let relocations = |object: &Path| {
            relocation_lines(object, ".rela.debug_str_offsets", "R_X86_64_32").len()
        };
        let b_path = d.join("b1.o");
        std::fs::write(&b_path, &b).unwrap();
        assert!(relocations(&ab_path) < relocations(&a_path) + relocations(&b_path));
        let info = Command::new("llvm-dwarfdump-19")
            .args([
                "--debug-info",
                "--name=first",
                "--name=second",
                "--name=shared",
            ])
            .arg(&ab_path)
            .output()
            .unwrap();
        let info = String::from_utf8_lossy(&info.stdout);
        for name in ["\"first\"", "\"second\"", "\"shared\""] {
            assert!(info.contains(name), "{name} in {info}");
        }
    }

    #[test]
    fn composed_units_share_one_abbreviation_and_string_offsets_table() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // Different kinds of DIEs: parameters, locals and a lexical block
        // in one; a global variable and an enumeration in the other.
        let a = compile(
            d,
            "a.c",
            "int first(int n) { int s = 0; for (int i = 0; i < n; i++) { int t = i * 2; s += t; } return s; }\n",
            &["-g", "-O0"],
        );
        let b = compile(
            d,
            "b.c",
            "enum colour { RED, GREEN }; enum colour second_colour = GREEN;\n",
            &["-g", "-O0"],
        );
        let ab = combine(&[&a, &b], &[], &[]).expect("combined");
        let ab_path = d.join("ab.o");
        std::fs::write(&ab_path, &ab).unwrap();
        let declarations =
            |abbrevs: &str| abbrevs.lines().filter(|l| l.contains("DW_TAG_")).count();
        let abbrevs = dump(&ab_path, "--debug-abbrev");
        assert_eq!(
            abbrevs.matches("Abbrev table for offset").count(),
            1,
            "{abbrevs}"
        );
        let (a_path, b_path) = (d.join("a1.o"), d.join("b1.o"));
        std::fs::write(&a_path, &a).unwrap();
        std::fs::write(&b_path, &b).unwrap();
        let (in_a, in_b) = (
            declarations(&dump(&a_path, "--debug-abbrev")),
            declarations(&dump(&b_path, "--debug-abbrev")),
        );
        // The union: more than either has, less than both (the compile
        // units' and base types' declarations are the same).
        let union = declarations(&abbrevs);
        assert!(
            union > in_a.max(in_b) && union < in_a + in_b,
            "{union} of {in_a} + {in_b}"
        );
        // One string offsets table too: each string once, relocated once.
        let offsets = dump(&ab_path, "--debug-str-offsets");
        assert_eq!(offsets.matches("Contribution").count(), 1, "{offsets}");
        let entries = |dump: &str| dump.lines().filter(|l| l.contains('"')).count();
        let table = entries(&offsets);
        let mut names: Vec<&str> = offsets
            .lines()
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), table, "{offsets}");
        let (of_a, of_b) = (
            entries(&dump(&a_path, "--debug-str-offsets")),
            entries(&dump(&b_path, "--debug-str-offsets")),
        );
        assert!(table < of_a + of_b, "{table} of {of_a} + {of_b}");
        let relocations = relocation_lines(&ab_path, ".rela.debug_str_offsets", "R_X86_64_32");
        assert_eq!(relocations.len(), table, "{relocations:?}");
        // Sharing their tables, the two units become one, named as the
        // first (composed units come from one source: a fragment's unit
        // names none, the glue's comes first).
        let info = dump(&ab_path, "--debug-info");
        assert_eq!(info.matches("DW_TAG_compile_unit").count(), 1, "{info}");
        assert_eq!(info.matches("abbr_offset = 0x0000").count(), 1, "{info}");
        assert_eq!(
            info.matches("DW_AT_str_offsets_base\t(0x00000008)").count(),
            1,
            "{info}"
        );
        let unit_named = |file: &str| {
            info.lines()
                .any(|l| l.contains("DW_AT_name") && l.ends_with(&format!("/{file}\")")))
        };
        assert!(unit_named("a.c") && !unit_named("b.c"), "{info}");
        for name in ["\"first\"", "\"t\"", "\"second_colour\"", "\"GREEN\""] {
            assert!(info.contains(name), "{name} in {info}");
        }
        assert_dwarf_verifies(&ab_path);
    }

    #[test]
    fn comdat_groups_stay_groups() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let inline = "inline int twice(int x) { static int calls; ++calls; return 2 * x + calls - calls; }\n";
        let a = compile(
            d,
            "a.cc",
            &format!("{inline}__attribute__((noinline)) int via_a(int x) {{ return twice(x); }}\n"),
            &["-O0"],
        );
        let b = compile(
            d,
            "b.cc",
            &format!(
                "#include <cstdio>\n{inline}int via_a(int);\n\
                 int main() {{ std::printf(\"%d %d\\n\", via_a(3), twice(4)); }}\n"
            ),
            &["-O0"],
        );
        let other = compile(
            d,
            "other.cc",
            "int thrice(int x) { return 3 * x; }\n",
            &["-O0"],
        );
        // Fragments of one unit: the inline function's group and its
        // caller in one, another function in the other.
        let combined = combine(&[&a, &other], &[], &[]).expect("combined");
        let path = d.join("a_other.o");
        std::fs::write(&path, &combined).unwrap();
        let b_path = d.join("b.cc.o");
        std::fs::write(&b_path, &b).unwrap();
        let groups = Command::new("readelf")
            .arg("-gW")
            .arg(&path)
            .output()
            .unwrap();
        let groups = String::from_utf8(groups.stdout).unwrap();
        // `twice` and its static, each a COMDAT group the linker folds
        // with b's copies.
        assert_eq!(
            groups.matches("COMDAT group section").count(),
            2,
            "{groups}"
        );
        assert_eq!(link_and_run(d, &[&path, &b_path], true), "6 8\n");
    }

    #[test]
    fn what_it_does_not_handle_is_declined() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let x86_32 = compile(d, "m32.c", "int f(int x) { return x + 1; }\n", &["-m32"]);
        assert!(
            combine(&[&x86_32], &[], &[]).is_none(),
            "ELF32 goes to the tools"
        );
        assert!(combine(&[b"not an object"], &[], &[]).is_none());
        let ok = compile(d, "ok.c", "int g(int x) { return x * 3; }\n", &[]);
        let mut truncated = ok.clone();
        truncated.truncate(ok.len() / 2);
        assert!(combine(&[&truncated], &[], &[]).is_none());
        assert!(combine(&[&ok], &[], &[]).is_some());
        // The same symbol defined twice is the linker's to report.
        assert!(combine(&[&ok, &ok], &[], &[]).is_none());
    }
}
