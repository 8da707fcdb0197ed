//! Stage 6, one code generation per unit: the fragments carved out of one
//! object. Compiling each fragment as a module of its own costs a code
//! generation pipeline, an object writer and a section table per fragment
//! (1.67x the whole module's code generation on lua's lapi.c); here the
//! unit's new fragments are compiled together, with a section per function
//! and per datum, and each fragment's object is cut out of that one object
//! by section, symbol and relocation.
//!
//! A fragment's object holds the sections defining its members, every
//! section those reach through relocations to local symbols (the
//! optimizer's local helpers: switch tables, specialized clones — copied
//! into each fragment that uses them, as the per-fragment compile does),
//! its own pieces of the shared mergeable constant and string sections,
//! its functions' unwind records (CIE and FDEs, `.eh_frame` rebuilt) with
//! what C++ exceptions add to them — the LSDA (`.gcc_except_table.f`),
//! the exception type stubs it names (pieces of `.data`, as constants
//! are) and the personality routine's pointer (`DW.ref.__gxx_personality_v0`,
//! a COMDAT datum each fragment holds, as compiled alone) —, its COMDAT
//! groups and the address-significance entries of what it refers to. A reference to another fragment's definition becomes an undefined
//! symbol. Everything is laid out in the order the fragment's own members
//! reach it, so a fragment's bytes do not depend on what else was
//! compiled with it (invariant 4: the same definitions give the same
//! object, whatever the repository held).
//!
//! Without `-ffunction-sections`/`-fdata-sections` the per-symbol section
//! names are renamed back to those clang would use (`.text.f` → `.text`,
//! `.text.unlikely.f` → `.text.unlikely.`), so the composed object has
//! clang's sections.
//!
//! Anything not understood — a section that would be lost or shared (two
//! functions in one named section, as clang puts C++ global initializers
//! in `.text.startup` at `-O0`), another class or byte order — returns
//! `None`, and the caller compiles that fragment as a module of its own.
//! (Until C++ unwind records were carved, every function with a landing
//! pad was: code generation of a C++ unit at `-O0` cost 2.3x clang's.)

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::VecDeque;

use super::debug_carve::{DebugIndex, Part, Target};
use super::Decline;

use super::elf::{
    c_str, parse, slice, u16_at, u32_at, write, Content, Input, Member, OutRela, OutSection,
    OutSym, Rela, SymRef, EM_AARCH64, EM_X86_64, GRP_COMDAT, R_AARCH64_ABS64, R_X86_64_64,
    SHF_ALLOC, SHF_EXECINSTR, SHF_GROUP, SHF_LINK_ORDER, SHF_MERGE, SHF_STRINGS, SHN_ABS,
    SHN_COMMON, SHN_LORESERVE, SHN_UNDEF, SHT_GROUP, SHT_LLVM_ADDRSIG, SHT_NOBITS, SHT_PROGBITS,
    SHT_REL, SHT_RELA, SHT_STRTAB, SHT_SYMTAB, SHT_X86_64_UNWIND, STB_GLOBAL, STB_LOCAL, STB_WEAK,
    STT_FUNC, STT_NOTYPE, STT_OBJECT, STT_SECTION, STT_TLS, UNWIND_RECORD_ALIGN,
};

/// How the per-symbol sections of the whole-unit object are named in the
/// fragments: as compiled (`true`), or as clang names them without
/// `-ffunction-sections` (functions, jump tables) or `-fdata-sections`
/// (variables), or with `-fno-unique-section-names`.
#[derive(Clone, Copy, Debug)]
pub struct SectionNaming {
    pub function_sections: bool,
    pub data_sections: bool,
    pub unique_section_names: bool,
}

impl SectionNaming {
    /// Whether clang gives a function's (or a datum's) section its
    /// symbol's name.
    fn own_section(&self, is_function: bool) -> bool {
        self.unique_section_names
            && if is_function {
                self.function_sections
            } else {
                self.data_sections
            }
    }
}

/// Section name prefixes clang uses without a trailing dot when it does not
/// give each symbol a section of its own.
const PLAIN_PREFIXES: &[&[u8]] = &[
    b".text",
    b".rodata",
    b".data",
    b".bss",
    b".tdata",
    b".tbss",
    b".data.rel.ro",
    b".data.rel",
    b".data.rel.local",
    b".data.rel.ro.local",
    b".ltext",
    b".ldata",
    b".lbss",
    b".lrodata",
    b".ldata.rel.ro",
    b".ldata.rel",
    b".ldata.rel.local",
    b".ldata.rel.ro.local",
    b".gcc_except_table",
];

/// Prefixes of function sections besides those of `PLAIN_PREFIXES`:
/// with the definition's name after them, a section of its own.
const TEXT_PREFIXES: &[&[u8]] = &[
    b".text.unlikely",
    b".text.hot",
    b".text.startup",
    b".text.exit",
    b".text.split",
];

/// One record of `.eh_frame`.
struct UnwindRecord {
    start: u64,
    len: u64,
    /// For an FDE: the start of its CIE, and its relocation (the
    /// function's address).
    fde: Option<(u64, Rela)>,
    /// Its other relocations: a CIE's personality routine, an FDE's
    /// LSDA (C++ exceptions).
    others: Vec<Rela>,
}

/// The whole object, indexed for carving.
struct Whole<'a> {
    input: Input<'a>,
    machine: u16,
    e_flags: u32,
    relas: Vec<Vec<Rela>>,
    group_of: Vec<Option<usize>>,
    symbols_in: Vec<Vec<usize>>,
    global_named: HashMap<&'a [u8], usize>,
    /// Names of the functions defined, global or local.
    function_named: HashSet<&'a [u8]>,
    /// Sections shared by all functions, taken piece by piece: mergeable
    /// constant pools and strings, and the exception type stubs.
    shared: Vec<bool>,
    /// Which of the shared sections is the exception type stubs' `.data`:
    /// a pointer to a type's `typeinfo` per 8 bytes, each with its
    /// relocation (a call site's catch clause names the type through it).
    stubs: Vec<bool>,
    eh_frame: Option<usize>,
    unwind: Vec<UnwindRecord>,
    /// Unwind record by where it starts.
    unwind_at: HashMap<u64, usize>,
    fdes_of: HashMap<usize, Vec<usize>>,
    /// Whether the object has an address-significance table.
    addrsig: bool,
}

/// Long on purpose: one pass each over sections, symbols, unwind records and
/// stubs, in that order, each reading what the one before built; all of it ends
/// in the one `Indexed` value.
fn index(data: &[u8]) -> Option<Whole<'_>> {
    let input = parse(data)?;
    let machine = u16_at(data, 18)?;
    if !matches!(machine, EM_X86_64 | EM_AARCH64) {
        return None;
    }
    let e_flags = u32_at(data, 0x30)?;
    let n = input.shdrs.len();
    let symtab = input.shdrs.iter().position(|s| s.sh_type == SHT_SYMTAB)?;
    let mut relas = vec![Vec::new(); n];
    let mut group_of = vec![None; n];
    let mut shared = vec![false; n];
    let mut eh_frame = None;
    let mut addrsig = false;
    for (i, s) in input.shdrs.iter().enumerate().skip(1) {
        let name = c_str(input.shstrtab, s.name)?;
        match s.sh_type {
            SHT_REL => return None,
            SHT_RELA => {
                if s.link as usize != symtab {
                    return None;
                }
                relas.get_mut(s.info as usize)?.extend(input.relas(s)?);
            }
            SHT_GROUP => {
                for m in input.group(s)?.1 {
                    *group_of.get_mut(m)? = Some(i);
                }
            }
            SHT_LLVM_ADDRSIG => addrsig = true,
            _ if name == b".eh_frame" && matches!(s.sh_type, SHT_PROGBITS | SHT_X86_64_UNWIND) => {
                eh_frame = Some(i)
            }
            _ => {}
        }
    }
    for (i, s) in input.shdrs.iter().enumerate().skip(1) {
        if s.flags & SHF_MERGE != 0 && s.flags & SHF_ALLOC != 0 && group_of[i].is_none() {
            if s.entsize == 0 || s.sh_type != SHT_PROGBITS {
                return None;
            }
            shared[i] = true;
        }
    }
    let mut symbols_in = vec![Vec::new(); n];
    let mut global_named = HashMap::default();
    let mut function_named = HashSet::default();
    for (k, sym) in input.syms.iter().enumerate().skip(1) {
        if sym.shndx != SHN_UNDEF && sym.shndx < SHN_LORESERVE {
            symbols_in.get_mut(sym.shndx as usize)?.push(k);
            if sym.info & 0xf == STT_FUNC {
                function_named.insert(c_str(input.strtab, sym.name)?);
            }
        }
        if sym.info >> 4 != STB_LOCAL && sym.shndx != SHN_UNDEF {
            global_named.insert(c_str(input.strtab, sym.name)?, k);
        }
    }
    let mut unwind = Vec::new();
    let mut fdes_of: HashMap<usize, Vec<usize>> = HashMap::default();
    if let Some(e) = eh_frame {
        let h = input.shdrs[e];
        let bytes = slice(data, h.offset, h.size)?;
        let mut by_offset: HashMap<u64, Rela> = HashMap::default();
        for r in &relas[e] {
            by_offset.insert(r.offset, *r);
        }
        let mut offsets: Vec<u64> = by_offset.keys().copied().collect();
        offsets.sort();
        let mut at = 0u64;
        let mut claimed = 0usize;
        while at < bytes.len() as u64 {
            let len = u64::from(u32_at(bytes, at)?);
            if len == 0xffff_ffff || len == 0 {
                return None;
            }
            let total = len.checked_add(4)?;
            let id = u32_at(bytes, at + 4)?;
            let inside = &offsets[offsets.partition_point(|&o| o < at)
                ..offsets.partition_point(|&o| o < at + total)];
            claimed += inside.len();
            let fde = if id == 0 {
                None
            } else {
                let cie = (at + 4).checked_sub(u64::from(id))?;
                let r = *by_offset.get(&(at + 8))?;
                let sym = input.syms.get(r.sym)?;
                if sym.shndx == SHN_UNDEF || sym.shndx >= SHN_LORESERVE {
                    return None;
                }
                fdes_of
                    .entry(sym.shndx as usize)
                    .or_default()
                    .push(unwind.len());
                Some((cie, r))
            };
            let others = inside
                .iter()
                .filter(|&&o| fde.is_none() || o != at + 8)
                .map(|o| by_offset[o])
                .collect();
            unwind.push(UnwindRecord {
                start: at,
                len: total,
                fde,
                others,
            });
            at += total;
        }
        // Every relocation belongs to a record.
        if claimed != relas[e].len() {
            return None;
        }
    }
    let mut stubs = vec![false; n];
    for i in 1..n {
        if is_type_stubs(&input, &relas[i], &symbols_in[i], i, group_of[i].is_some()) {
            shared[i] = true;
            stubs[i] = true;
        }
    }
    Some(Whole {
        input,
        machine,
        e_flags,
        relas,
        group_of,
        symbols_in,
        global_named,
        function_named,
        shared,
        stubs,
        eh_frame,
        unwind_at: (unwind.iter().enumerate())
            .map(|(n, r)| (r.start, n))
            .collect(),
        unwind,
        fdes_of,
        addrsig,
    })
}

/// Size of one exception type stub: a pointer.
const STUB_SIZE: u64 = 8;

/// Whether section `i` is where the code generator put the exception
/// type stubs of the functions' LSDAs (`.L_ZTIi.DW.stub`, private labels
/// in plain `.data`, after all functions): nothing but pointers, each
/// with its relocation and no symbol of its own. With a section per datum
/// nothing else lands in plain `.data`.
fn is_type_stubs(
    input: &Input,
    relas: &[Rela],
    symbols: &[usize],
    i: usize,
    grouped: bool,
) -> bool {
    let s = input.shdrs[i];
    c_str(input.shstrtab, s.name) == Some(b".data")
        && s.sh_type == SHT_PROGBITS
        && !grouped
        && s.size.is_multiple_of(STUB_SIZE)
        && relas.len() as u64 == s.size / STUB_SIZE
        && relas.iter().all(|r| {
            r.offset.is_multiple_of(STUB_SIZE) && matches!(r.r_type, R_X86_64_64 | R_AARCH64_ABS64)
        })
        && symbols
            .iter()
            .all(|&k| input.syms[k].info & 0xf == STT_SECTION)
}

/// Whether section `i` of the whole object is something a fragment must
/// claim (code or data), as opposed to bookkeeping every object has.
fn is_content(w: &Whole, i: usize) -> bool {
    let s = &w.input.shdrs[i];
    s.flags & SHF_ALLOC != 0
        && !w.shared[i]
        && Some(i) != w.eh_frame
        && !matches!(
            s.sh_type,
            SHT_RELA | SHT_SYMTAB | SHT_STRTAB | SHT_GROUP | SHT_LLVM_ADDRSIG
        )
}

/// One fragment to cut out: its members, and the symbols whose address is
/// significant in it (what LLVM would list compiling the fragment alone:
/// the whole object's table depends on the other fragments).
pub struct FragmentSpec {
    pub members: Vec<String>,
    pub address_significant: std::collections::HashSet<String>,
    /// What the fragment's definitions were renamed with in the whole
    /// object (debug fragments linked into one module, see
    /// `llvm::BatchLinker`; `members` name them so): taken off again
    /// wherever a name ends with it (symbols, sections, groups).
    pub suffix: String,
}

/// Cuts `whole` (one object holding the definitions of all `fragments`,
/// compiled with a section per function and datum) into one object per
/// fragment. `None` for a fragment: it has something not handled here
/// (decided by the fragment alone, so that it is compiled the other way
/// whatever it was compiled with); `None` for all: the object is not one
/// handled here (the reason why).
/// The decline for an object of another class, byte order or machine
/// than carving reads (ELF64 little-endian, x86-64 or AArch64): whatever
/// it holds, so a fragment of it would decline alone as well.
pub const FOREIGN_OBJECT: Decline =
    Decline("carving: not an ELF64 little-endian x86-64 or AArch64 object");

/// Definitions the code generator adds to a module (no IR definition is
/// theirs, so no fragment has them as members), each a COMDAT definition
/// that a fragment referring to it holds a copy of, as compiled alone:
/// the personality routine's pointer (`DW.ref.__gxx_personality_v0`) and
/// the indirect-branch thunks of `-mretpoline` (`__llvm_retpoline_r11`),
/// `-mlvi-cfi` and AArch64's `-mharden-sls=blr`. (The thunks were lost:
/// the fragment kept a weak undefined reference, and the program jumped
/// to address 0.)
fn made_by_code_generator(name: &[u8]) -> bool {
    const PREFIXES: [&[u8]; 4] = [
        b"DW.ref.",
        b"__llvm_retpoline_",
        b"__llvm_lvi_thunk_",
        b"__llvm_slsblr_thunk_",
    ];
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The decline for an object with a section ordered by another
/// (`SHF_LINK_ORDER`: `-fpatchable-function-entry`'s table of patchable
/// entries, one per function, each linked to its function's section):
/// carving, which takes what a fragment's members reach, would lose it.
/// A fragment's own module has one too, so it would decline alone as well.
pub const LINKED_SECTIONS: Decline =
    Decline("carving: a section linked to another (-fpatchable-function-entry)");

/// Whether every fragment of the object that gave `decline` would decline
/// alone as well: not worth a module of its own to carve from.
pub fn declines_every_fragment(decline: Decline) -> bool {
    decline == FOREIGN_OBJECT || decline == LINKED_SECTIONS
}

/// The object of the one fragment `whole` was compiled for (a module of
/// its own), carved as from any object.
pub fn carve_alone(
    whole: &[u8],
    fragment: &FragmentSpec,
    naming: SectionNaming,
) -> Result<Vec<u8>, Decline> {
    carve(whole, &[fragment], naming)?.remove(0)
}

pub fn carve(
    whole: &[u8],
    fragments: &[&FragmentSpec],
    naming: SectionNaming,
) -> Result<Vec<Result<Vec<u8>, Decline>>, Decline> {
    let carvable = whole.get(..4) == Some(b"\x7fELF".as_slice())
        && whole.get(4..6) == Some([2u8, 1].as_slice())
        && u16_at(whole, 18).is_some_and(|m| matches!(m, EM_X86_64 | EM_AARCH64));
    if !carvable {
        return Err(FOREIGN_OBJECT);
    }
    let w = index(whole).ok_or(Decline("an object carving cannot index"))?;
    if w.input.shdrs.iter().any(|s| s.flags & SHF_LINK_ORDER != 0) {
        return Err(LINKED_SECTIONS);
    }
    let debug = DebugIndex::of(&w.input, &w.relas, w.machine)?;
    let mut claimed = vec![false; w.input.shdrs.len()];
    let mut out = Vec::with_capacity(fragments.len());
    for spec in fragments {
        let mut b = Builder::new(&w, spec, naming);
        let mut object = b.build(debug.as_ref());
        // Laid out again in the order the fragment's own module has them,
        // where the order its code reached them differs.
        if object.is_ok() {
            let order = b.canonical_order(spec);
            if !order
                .iter()
                .eq(b.order.iter().filter(|&&i| w.group_of[i].is_none()))
            {
                b = Builder::new(&w, spec, naming);
                b.laid_out = order;
                object = b.build(debug.as_ref());
            }
        }
        if object.is_ok() {
            for &i in b.out_of.keys() {
                claimed[i] = true;
            }
        } else {
            // Compiled on its own instead: its definitions are not lost.
            for m in &spec.members {
                if let Some(&k) = w.global_named.get(m.as_bytes()) {
                    let section = w.input.syms[k].shndx as usize;
                    if let Some(c) = claimed.get_mut(section) {
                        *c = true;
                    }
                }
            }
        }
        out.push(object);
    }
    // Nothing may be lost: every member's code or data is somewhere.
    // (Sections of local helpers are copied where used; what the code
    // generator adds, such as `DW.ref.__gxx_personality_v0`, comes with
    // the fragments that refer to it, see `made_by_code_generator`.)
    let members: HashSet<&[u8]> = fragments
        .iter()
        .flat_map(|f| f.members.iter().map(|m| m.as_bytes()))
        .collect();
    for (i, s) in w.input.shdrs.iter().enumerate().skip(1) {
        let defines_member = w.symbols_in[i].iter().any(|&k| {
            let sym = w.input.syms[k];
            sym.info >> 4 != STB_LOCAL
                && c_str(w.input.strtab, sym.name).is_some_and(|n| members.contains(n))
        });
        if is_content(&w, i) && s.size > 0 && defines_member && !claimed[i] {
            return Err(super::Decline("a member's section no fragment claimed"));
        }
    }
    Ok(out)
}

/// One fragment's object under construction.
struct Builder<'w, 'a> {
    w: &'w Whole<'a>,
    members: HashSet<&'w [u8]>,
    address_significant: &'w std::collections::HashSet<String>,
    suffix: &'w [u8],
    naming: SectionNaming,
    sections: Vec<OutSection>,
    /// Input section → output section.
    out_of: HashMap<usize, usize>,
    order: Vec<usize>,
    queue: VecDeque<usize>,
    locals: Vec<OutSym>,
    section_symbol: HashMap<usize, usize>,
    globals: Vec<OutSym>,
    /// Input symbol → output symbol, for named symbols.
    symbol_of: HashMap<usize, SymRef>,
    /// (input section, start) → (output section, local symbol, start there).
    pieces: HashMap<(usize, u64), (usize, usize, u64)>,
    /// Shared input section → its output section.
    pool_of: HashMap<usize, usize>,
    /// The COMDAT groups it takes, in order.
    groups: Vec<usize>,
    /// Input sections to include first, in this order (see
    /// `canonical_order`).
    laid_out: Vec<usize>,
}

impl<'w, 'a> Builder<'w, 'a> {
    fn new(w: &'w Whole<'a>, spec: &'w FragmentSpec, naming: SectionNaming) -> Self {
        Builder {
            w,
            members: spec.members.iter().map(|m| m.as_bytes()).collect(),
            address_significant: &spec.address_significant,
            suffix: spec.suffix.as_bytes(),
            naming,
            sections: Vec::new(),
            out_of: HashMap::default(),
            order: Vec::new(),
            queue: VecDeque::new(),
            locals: Vec::new(),
            section_symbol: HashMap::default(),
            globals: Vec::new(),
            symbol_of: HashMap::default(),
            pieces: HashMap::default(),
            pool_of: HashMap::default(),
            groups: Vec::new(),
            laid_out: Vec::new(),
        }
    }

    /// The sections `build` took, in the order the fragment compiled as a
    /// module of its own (with debug info) lays them out (see the shim's
    /// `repocc_order_local_definitions`): the code generator emits
    /// functions in module order, each with its jump tables and exception
    /// tables, and the variables after all functions, in module order;
    /// the module holds the members in the order given, then the local
    /// helpers by name. The order in which the code reaches them (its
    /// relocations, as `build` finds them) is another, and a fragment
    /// with helpers would otherwise lay them out differently with `-g`
    /// than without. Pieces of shared pools are not sections here: they
    /// keep the order the code refers to them in, as the module's pooled
    /// constants keep theirs. Nor are sections of COMDAT groups, which
    /// have names of their own and come with their group.
    fn canonical_order(&self, spec: &FragmentSpec) -> Vec<usize> {
        let position: HashMap<&[u8], usize> = (spec.members.iter().enumerate())
            .map(|(n, m)| (m.as_bytes(), n))
            .collect();
        let mut keyed: Vec<_> = (self.order.iter().enumerate())
            .filter(|(_, &i)| self.w.group_of[i].is_none())
            .map(|(found, &i)| {
                let owner = self.owner_of(i);
                let code = self.w.input.shdrs[i].flags & SHF_EXECINSTR != 0
                    || self.w.function_named.contains(owner);
                let member = position.get(owner).copied().unwrap_or(usize::MAX);
                let owner = self.plain(owner);
                ((!code, member, owner, found), i)
            })
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, i)| i).collect()
    }

    /// The definition input section `i` belongs to: the symbol defined in
    /// it, or the one its name carries (a jump table's `.rodata.f`, a
    /// private datum's `.rodata..Lname`, an exception table's
    /// `.gcc_except_table.f`).
    fn owner_of(&self, i: usize) -> &'a [u8] {
        let w = self.w;
        let defined = (w.symbols_in[i].iter())
            .map(|&k| w.input.syms[k])
            // Not a label (an LSDA's `GCC_except_table<n>`).
            .filter(|sym| matches!(sym.info & 0xf, STT_FUNC | STT_OBJECT | STT_TLS))
            .min_by_key(|sym| sym.value)
            .and_then(|sym| c_str(w.input.strtab, sym.name))
            .filter(|n| !n.is_empty());
        if let Some(name) = defined {
            return name;
        }
        let name = c_str(w.input.shstrtab, w.input.shdrs[i].name).unwrap_or_default();
        if let Some(at) = name.windows(3).position(|w| w == b"..L") {
            return &name[at + 3..];
        }
        (PLAIN_PREFIXES.iter().chain(TEXT_PREFIXES))
            .filter_map(|p| name.strip_prefix(*p)?.strip_prefix(b"."))
            .min_by_key(|rest| rest.len())
            .unwrap_or(name)
    }

    /// `name` without the fragment's suffix.
    fn plain<'n>(&self, name: &'n [u8]) -> &'n [u8] {
        if self.suffix.is_empty() {
            return name;
        }
        name.strip_suffix(self.suffix).unwrap_or(name)
    }

    fn name_of(&self, k: usize) -> Option<&'a [u8]> {
        c_str(self.w.input.strtab, self.w.input.syms.get(k)?.name)
    }

    fn build(&mut self, debug: Option<&DebugIndex>) -> Result<Vec<u8>, Decline> {
        let w = self.w;
        // The members, in the order given; a COMDAT group comes whole.
        let mut names: Vec<&[u8]> = self.members.iter().copied().collect();
        names.sort();
        let mut roots: Vec<usize> = Vec::new();
        for name in names {
            let Some(&k) = w.global_named.get(name) else {
                continue; // not in the object (nothing to emit)
            };
            let sym = w.input.syms[k];
            let section = sym.shndx as usize;
            if sym.shndx == SHN_COMMON {
                self.define_global(k, None, sym.value)
                    .ok_or(Decline("carving: a common symbol"))?;
                continue;
            }
            if sym.shndx == SHN_ABS || sym.shndx >= SHN_LORESERVE {
                return Err(Decline("carving: an absolute or reserved member symbol"));
            }
            if let Some(g) = w.group_of[section] {
                roots.extend(
                    self.take_group(g)
                        .ok_or(Decline("carving: a member's COMDAT group"))?,
                );
            } else if w.shared[section] {
                // A member inside a constant pool: a piece with its symbol.
                let (out, _, at) = (self.piece(section, sym.value, Some(sym.size)))
                    .ok_or(Decline("carving: a member inside a constant pool"))?;
                self.define_global(k, Some(out), at)
                    .ok_or(Decline("carving: a member inside a constant pool"))?;
                continue;
            }
            roots.push(section);
        }
        for i in std::mem::take(&mut self.laid_out) {
            self.include(i)
                .ok_or(Decline("carving: a section laid out"))?;
        }
        for r in roots {
            self.include(r)
                .ok_or(Decline("carving: a member's section"))?;
        }
        while let Some(i) = self.queue.pop_front() {
            self.copy_section(i)
                .ok_or(Decline("carving: a section or its relocations"))?;
        }
        // The unwind records bring the LSDAs (members of their function's
        // group) and the personality routine's pointer.
        self.unwind_records()
            .ok_or(Decline("carving: unwind records"))?;
        while let Some(i) = self.queue.pop_front() {
            self.copy_section(i)
                .ok_or(Decline("carving: what unwind records bring"))?;
        }
        if let Some(debug) = debug {
            self.debug_sections(debug)?;
            while let Some(i) = self.queue.pop_front() {
                self.copy_section(i)
                    .ok_or(Decline("carving: what debug info names"))?;
            }
        }
        for g in self.groups.clone() {
            self.group(g).ok_or(Decline("carving: a COMDAT group"))?;
        }
        self.align_like_one_section();
        if self.sections.is_empty() && self.globals.is_empty() {
            // Nothing of this fragment reached the object.
            return write(
                w.input.data,
                w.machine,
                w.e_flags,
                &[],
                &[],
                &[],
                &|_| false,
                w.addrsig.then_some(&[][..]),
            )
            .ok_or(Decline("carving: writing the fragment"));
        }
        self.sections.push(OutSection {
            name: b".note.GNU-stack".to_vec(),
            sh_type: SHT_PROGBITS,
            flags: 0,
            align: 1,
            entsize: 0,
            content: Content::Data(Vec::new()),
            relas: Vec::new(),
        });
        let significant = |s: &OutSym| {
            w.addrsig
                && std::str::from_utf8(&s.name).is_ok_and(|n| self.address_significant.contains(n))
        };
        let addrsig: Vec<SymRef> = (self.locals.iter().enumerate())
            .filter(|(_, s)| significant(s))
            .map(|(i, _)| SymRef::Local(i))
            .chain(
                (self.globals.iter().enumerate())
                    .filter(|(_, s)| significant(s))
                    .map(|(i, _)| SymRef::Global(i)),
            )
            .collect();
        write(
            w.input.data,
            w.machine,
            w.e_flags,
            &self.sections,
            &self.locals,
            &self.globals,
            &|_| false,
            w.addrsig.then_some(&addrsig[..]),
        )
        .ok_or(Decline("carving: writing the fragment"))
    }

    /// The fragment's debug sections (see `debug_carve`), after its code
    /// and data: those of the compile unit whose addresses are all in
    /// sections it took, and the type units that unit reaches, each in a
    /// COMDAT group named by its signature.
    fn debug_sections(&mut self, debug: &DebugIndex) -> Result<(), Decline> {
        let taken: HashSet<usize> = self.out_of.keys().copied().collect();
        let Some(unit) = debug.unit_of(&taken, &self.w.shared)? else {
            return Ok(());
        };
        // Where the fragment's code lands once composed: sections of one
        // name (`.text`, as the user compiles) one after another, each at
        // its alignment.
        let input_of: HashMap<usize, usize> = self.out_of.iter().map(|(&i, &o)| (o, i)).collect();
        // (name, type, flags, entry size) → (first section, end so far).
        type Run<'s> = (&'s [u8], u32, u64, u64);
        let mut runs: HashMap<Run, (usize, u64)> = HashMap::default();
        let mut place_of: HashMap<usize, (usize, u64)> = HashMap::default();
        for (o, s) in self.sections.iter().enumerate() {
            let Some(&i) = input_of.get(&o) else { continue };
            if self.w.group_of[i].is_some() {
                continue;
            }
            let size = match &s.content {
                Content::Data(d) => d.len() as u64,
                Content::Bss(n) => *n,
                Content::Group { .. } => continue,
            };
            let run = runs
                .entry((&s.name, s.sh_type, s.flags, s.entsize))
                .or_insert((i, 0));
            let at = run.1.next_multiple_of(s.align.max(1));
            run.1 = at + size;
            place_of.insert(i, (run.0, at));
        }
        let place = |i: usize| place_of.get(&i).copied();
        let parts = debug.carve_unit(unit, &place)?;
        let first = self.sections.len();
        let out_of: HashMap<Part, usize> = (parts.iter().enumerate())
            .map(|(k, p)| (p.part, first + k))
            .collect();
        let mut relocs = Vec::with_capacity(parts.len());
        for p in parts {
            let strings = p.part.strings();
            self.sections.push(OutSection {
                name: p.part.name().to_vec(),
                sh_type: SHT_PROGBITS,
                flags: if strings {
                    SHF_MERGE | SHF_STRINGS
                } else if p.signature.is_some() {
                    SHF_GROUP
                } else {
                    0
                },
                align: 1,
                entsize: u64::from(strings),
                content: Content::Data(p.bytes),
                relas: Vec::new(),
            });
            relocs.push((p.relocs, p.signature));
        }
        let failed = Decline("carving: a debug relocation");
        for (k, (list, signature)) in relocs.into_iter().enumerate() {
            let o = first + k;
            let mut out = Vec::with_capacity(list.len());
            for r in list {
                let (sym, addend) = match r.target {
                    Target::Input { sym, addend } => self.target(sym, addend).ok_or(failed)?,
                    Target::Own { part, addend } => {
                        let section = *out_of.get(&part).ok_or(failed)?;
                        (SymRef::Local(self.section_symbol_of(section)), addend)
                    }
                    Target::InputSection { section, addend } => {
                        let o = *self.out_of.get(&section).ok_or(failed)?;
                        (SymRef::Local(self.section_symbol_of(o)), addend)
                    }
                };
                out.push(OutRela {
                    offset: r.offset,
                    sym: Some(sym),
                    r_type: r.r_type,
                    addend,
                });
            }
            self.sections[o].relas = out;
            if let Some(signature) = signature {
                let group = self.sections.len();
                self.locals.push(OutSym {
                    name: signature.to_string().into_bytes(),
                    info: STT_NOTYPE,
                    other: 0,
                    section: Some(group),
                    special: 0,
                    value: 0,
                    size: 0,
                });
                let signature = SymRef::Local(self.locals.len() - 1);
                self.sections.push(OutSection {
                    name: b".group".to_vec(),
                    sh_type: SHT_GROUP,
                    flags: 0,
                    align: 4,
                    entsize: 4,
                    content: Content::Group {
                        flag: GRP_COMDAT,
                        signature,
                        members: vec![Member::Section(o), Member::RelaOf(o)],
                    },
                    relas: Vec::new(),
                });
            }
        }
        Ok(())
    }

    /// Gives the first (non-empty) of the sections that composing puts
    /// into one output section the alignment of all of them. Compiled as a
    /// module of its own (with debug info), the fragment has one section
    /// where it has several here (its jump tables and a constant, both in
    /// `.rodata`), aligned as its most aligned content; composed, that one
    /// starts at such a boundary, and the pieces after it at the offsets
    /// they have in it. So do these now, and `-g` moves nothing.
    fn align_like_one_section(&mut self) {
        let w = self.w;
        let apart: HashSet<usize> = (self.pool_of.values().copied())
            .chain(
                (self.out_of.iter())
                    .filter(|(&i, _)| w.group_of[i].is_some())
                    .map(|(_, &o)| o),
            )
            .collect();
        // (name, type, flags, entry size) → (first section, alignment).
        type Run<'s> = (&'s [u8], u32, u64, u64);
        let mut first: HashMap<Run, (usize, u64)> = HashMap::default();
        for (o, s) in self.sections.iter().enumerate() {
            let size = match &s.content {
                Content::Data(d) => d.len() as u64,
                Content::Bss(n) => *n,
                _ => 0,
            };
            if size == 0 || apart.contains(&o) {
                continue;
            }
            let run = first
                .entry((&s.name, s.sh_type, s.flags, s.entsize))
                .or_insert((o, 0));
            run.1 = run.1.max(s.align);
        }
        let raised: Vec<(usize, u64)> = first.into_values().collect();
        for (o, align) in raised {
            self.sections[o].align = align;
        }
    }

    /// Takes COMDAT group `g` (once): the sections it holds, but for
    /// relocations, to include.
    fn take_group(&mut self, g: usize) -> Option<Vec<usize>> {
        if self.groups.contains(&g) {
            return Some(Vec::new());
        }
        self.groups.push(g);
        let w = self.w;
        let h = w.input.shdrs[g];
        let mut sections = Vec::new();
        for m in w.input.group(&h)?.1 {
            if w.input.shdrs.get(m)?.sh_type != SHT_RELA {
                sections.push(m);
            }
        }
        Some(sections)
    }

    /// Includes input section `i` (once): an output section is reserved now,
    /// filled when its turn in the queue comes.
    fn include(&mut self, i: usize) -> Option<usize> {
        if let Some(&o) = self.out_of.get(&i) {
            return Some(o);
        }
        let w = self.w;
        let s = w.input.shdrs.get(i)?;
        if !is_content(w, i) {
            return None;
        }
        // A section holding another fragment's definition cannot be copied.
        for &k in &w.symbols_in[i] {
            let sym = w.input.syms[k];
            if sym.info >> 4 != STB_LOCAL && !self.members.contains(self.name_of(k)?) {
                return None;
            }
        }
        // Only the fragment's own COMDAT groups: another group's local
        // symbols cannot be referred to from outside it.
        if let Some(g) = w.group_of[i] {
            if !self.group_is_ours(g) {
                return None;
            }
        }
        let name = self.output_name(i)?;
        self.sections.push(OutSection {
            name,
            sh_type: s.sh_type,
            flags: s.flags,
            align: s.align.max(1),
            entsize: s.entsize,
            content: Content::Bss(0),
            relas: Vec::new(),
        });
        let o = self.sections.len() - 1;
        self.out_of.insert(i, o);
        self.order.push(i);
        self.queue.push_back(i);
        Some(o)
    }

    /// Whether some member of this fragment lives in group `g`.
    fn group_is_ours(&self, g: usize) -> bool {
        let w = self.w;
        let h = w.input.shdrs[g];
        let Some((_, members)) = w.input.group(&h) else {
            return false;
        };
        members.into_iter().any(|m| {
            w.symbols_in.get(m).is_some_and(|ks| {
                ks.iter()
                    .any(|&k| self.name_of(k).is_some_and(|n| self.members.contains(n)))
            })
        })
    }

    /// The name section `i` gets in the fragment (see the module comment),
    /// without the fragment's suffix.
    fn output_name(&self, i: usize) -> Option<Vec<u8>> {
        let name = self.suffixed_output_name(i)?;
        Some(self.plain(&name).to_vec())
    }

    fn suffixed_output_name(&self, i: usize) -> Option<Vec<u8>> {
        let w = self.w;
        let name = c_str(w.input.shstrtab, w.input.shdrs[i].name)?;
        if w.group_of[i].is_some() {
            return Some(name.to_vec());
        }
        // A private datum's own section (`.rodata..Lswitch.table.f`,
        // `.data.rel.ro..Lswitch.table.g.1262`): its symbol is not in the
        // symbol table, and its name carries the optimizer's numbering of
        // this build. Without sections per datum clang puts it in the
        // plain section (`.rodata`), and so does the fragment: its bytes
        // then do not depend on what else the build numbered first. With
        // them, it keeps its name, as in clang's object.
        if let Some(at) = name.windows(3).position(|w| w == b"..L") {
            let prefix = &name[..at];
            let executable = w.input.shdrs[i].flags & SHF_EXECINSTR != 0;
            if self.naming.own_section(executable) {
                return Some(name.to_vec());
            }
            if PLAIN_PREFIXES.contains(&prefix) {
                return Some(prefix.to_vec());
            }
        }
        let mut candidates: Vec<(&[u8], bool)> = w.symbols_in[i]
            .iter()
            .filter_map(|&k| {
                let sym = w.input.syms[k];
                let n = c_str(w.input.strtab, sym.name)?;
                (sym.info & 0xf != STT_SECTION && !n.is_empty())
                    .then_some((n, sym.info & 0xf == STT_FUNC))
            })
            .collect();
        // A jump table's section is named after its function.
        let owner = self.owner_of(i);
        if w.function_named.contains(owner) {
            candidates.push((owner, true));
        }
        for (suffix, is_function) in candidates {
            let Some(prefix) = name.strip_suffix(suffix).and_then(|p| p.strip_suffix(b".")) else {
                continue;
            };
            if self.naming.own_section(is_function) || prefix.is_empty() {
                return Some(name.to_vec());
            }
            let mut renamed = prefix.to_vec();
            if !PLAIN_PREFIXES.contains(&prefix) {
                renamed.push(b'.');
            }
            return Some(renamed);
        }
        Some(name.to_vec())
    }

    /// Copies input section `i`'s bytes, symbols and relocations.
    fn copy_section(&mut self, i: usize) -> Option<()> {
        let w = self.w;
        let o = self.out_of[&i];
        let s = w.input.shdrs[i];
        self.sections[o].content = if s.sh_type == SHT_NOBITS {
            Content::Bss(s.size)
        } else {
            Content::Data(slice(w.input.data, s.offset, s.size)?.to_vec())
        };
        for &k in &w.symbols_in[i] {
            let sym = w.input.syms[k];
            let name = self.name_of(k)?;
            if sym.info & 0xf == STT_SECTION {
                continue;
            }
            if sym.info >> 4 == STB_LOCAL {
                // Temporary labels are not kept (references to them become
                // section-relative, as the assembler makes them), nor an
                // LSDA's label: `GCC_except_table<n>` is numbered by the
                // function's place in the module.
                if !name.starts_with(b".L")
                    && !name.starts_with(b"GCC_except_table")
                    && !name.is_empty()
                {
                    self.locals.push(OutSym {
                        name: self.plain(name).to_vec(),
                        info: sym.info,
                        other: sym.other,
                        section: Some(o),
                        special: 0,
                        value: sym.value,
                        size: sym.size,
                    });
                    self.symbol_of
                        .insert(k, SymRef::Local(self.locals.len() - 1));
                }
            } else {
                self.define_global(k, Some(o), sym.value)?;
            }
        }
        let mut relas = Vec::with_capacity(w.relas[i].len());
        for &r in &w.relas[i] {
            relas.push(self.relocation(r)?);
        }
        self.sections[o].relas = relas;
        Some(())
    }

    /// A member's global symbol, defined in output section `section`.
    fn define_global(&mut self, k: usize, section: Option<usize>, value: u64) -> Option<()> {
        let sym = self.w.input.syms[k];
        let name = self.name_of(k)?;
        if !self.members.contains(name) {
            return None;
        }
        if let Some(SymRef::Global(g)) = self.symbol_of.get(&k) {
            let g = &mut self.globals[*g];
            g.section = section;
            g.value = value;
            return Some(());
        }
        self.globals.push(OutSym {
            name: self.plain(name).to_vec(),
            info: sym.info,
            other: sym.other,
            section,
            special: if section.is_some() { 0 } else { sym.shndx },
            value,
            size: sym.size,
        });
        self.symbol_of
            .insert(k, SymRef::Global(self.globals.len() - 1));
        Some(())
    }

    /// The output form of relocation `r`.
    fn relocation(&mut self, r: Rela) -> Option<OutRela> {
        if r.sym == 0 {
            return Some(OutRela {
                offset: r.offset,
                sym: None,
                r_type: r.r_type,
                addend: r.addend,
            });
        }
        let (target, addend) = self.target(r.sym, r.addend)?;
        Some(OutRela {
            offset: r.offset,
            sym: Some(target),
            r_type: r.r_type,
            addend,
        })
    }

    /// What a reference to input symbol `k` with `addend` becomes.
    fn target(&mut self, k: usize, addend: i64) -> Option<(SymRef, i64)> {
        let w = self.w;
        let sym = *w.input.syms.get(k)?;
        let bind = sym.info >> 4;
        if let Some(&r) = self.symbol_of.get(&k) {
            return Some((r, addend));
        }
        let name = self.name_of(k)?;
        if bind != STB_LOCAL {
            if made_by_code_generator(name) && sym.shndx != SHN_UNDEF && sym.shndx < SHN_LORESERVE {
                // Each fragment holds its own, as compiled alone, and
                // linkers keep one.
                self.members.insert(name);
                let section = sym.shndx as usize;
                if let Some(g) = w.group_of[section] {
                    for m in self.take_group(g)? {
                        self.include(m)?;
                    }
                }
                let o = self.include(section)?;
                self.define_global(k, Some(o), sym.value)?;
                return Some((self.symbol_of[&k], addend));
            }
            if self.members.contains(name) {
                // A member not reached yet (its section comes later).
                let section = sym.shndx as usize;
                if w.shared.get(section).copied().unwrap_or(false) {
                    let (out, _, at) = self.piece(section, sym.value, Some(sym.size))?;
                    self.define_global(k, Some(out), at)?;
                } else if sym.shndx == SHN_COMMON {
                    self.define_global(k, None, sym.value)?;
                } else {
                    let o = self.include(section)?;
                    self.define_global(k, Some(o), sym.value)?;
                }
                return Some((self.symbol_of[&k], addend));
            }
            // Another fragment's definition, or an undefined symbol.
            let undefined_bind = if bind == STB_WEAK {
                STB_WEAK
            } else {
                STB_GLOBAL
            };
            // An undefined symbol is untyped, unless thread-local (the
            // linker checks that TLS references meet a TLS definition).
            let kind = if sym.info & 0xf == STT_TLS {
                STT_TLS
            } else {
                STT_NOTYPE
            };
            let info = if sym.shndx == SHN_UNDEF {
                sym.info
            } else {
                (undefined_bind << 4) | kind
            };
            self.globals.push(OutSym {
                name: self.plain(name).to_vec(),
                info,
                other: sym.other,
                section: None,
                special: SHN_UNDEF,
                value: 0,
                size: 0,
            });
            let r = SymRef::Global(self.globals.len() - 1);
            self.symbol_of.insert(k, r);
            return Some((r, addend));
        }
        if sym.shndx == SHN_UNDEF || sym.shndx >= SHN_LORESERVE {
            return None;
        }
        let section = sym.shndx as usize;
        let is_section = sym.info & 0xf == STT_SECTION;
        if w.shared[section] {
            let start = if is_section {
                u64::try_from(addend).ok()?
            } else {
                sym.value
            };
            let size = (!is_section && sym.size > 0).then_some(sym.size);
            let (_, local, _) = self.piece(section, start, size)?;
            // The piece's symbol stands where the piece starts; the
            // reference keeps its distance from it.
            let piece_start = self.piece_input_start(section, start) as i64;
            let new_addend = if is_section {
                addend - piece_start
            } else {
                addend + start as i64 - piece_start
            };
            return Some((SymRef::Local(local), new_addend));
        }
        let o = self.include(section)?;
        let s = self.section_symbol_of(o);
        let value = if is_section { 0 } else { sym.value as i64 };
        Some((SymRef::Local(s), addend + value))
    }

    fn section_symbol_of(&mut self, o: usize) -> usize {
        *self.section_symbol.entry(o).or_insert_with(|| {
            self.locals.push(OutSym {
                name: Vec::new(),
                info: STT_SECTION,
                other: 0,
                section: Some(o),
                special: 0,
                value: 0,
                size: 0,
            });
            self.locals.len() - 1
        })
    }

    /// Relocations `relas` of bytes that started at `from` in the whole
    /// object (an unwind record, a stub), for their copy at `to`.
    fn moved_relocations(&mut self, relas: &[Rela], from: u64, to: u64) -> Option<Vec<OutRela>> {
        relas
            .iter()
            .map(|&r| {
                let mut out = self.relocation(r)?;
                out.offset = to + (r.offset - from);
                Some(out)
            })
            .collect()
    }

    /// The size of one entry of shared section `i` (a constant, a stub).
    fn entry_size(&self, i: usize) -> u64 {
        if self.w.stubs[i] {
            STUB_SIZE
        } else {
            self.w.input.shdrs[i].entsize
        }
    }

    /// Where the piece holding `offset` of shared section `i` starts.
    fn piece_input_start(&self, i: usize, offset: u64) -> u64 {
        let s = self.w.input.shdrs[i];
        if s.flags & SHF_STRINGS != 0 {
            offset
        } else {
            offset - offset % self.entry_size(i)
        }
    }

    /// The piece of shared section `i` at `offset` (a constant: one entry;
    /// a string: up to and including its terminator, or `size` bytes), in
    /// this fragment's copy of the section: (output section, its local
    /// symbol, offset there).
    fn piece(&mut self, i: usize, offset: u64, size: Option<u64>) -> Option<(usize, usize, u64)> {
        let w = self.w;
        let start = self.piece_input_start(i, offset);
        if let Some(&p) = self.pieces.get(&(i, start)) {
            return Some(p);
        }
        let s = w.input.shdrs[i];
        let data = slice(w.input.data, s.offset, s.size)?;
        let rest = data.get(usize::try_from(start).ok()?..)?;
        let len = if s.flags & SHF_STRINGS != 0 {
            match size.filter(|&n| n > 0) {
                Some(n) => n,
                None => {
                    let unit = usize::try_from(s.entsize).ok()?;
                    let end = rest
                        .chunks(unit)
                        .position(|c| c.len() == unit && c.iter().all(|&b| b == 0))?;
                    ((end + 1) * unit) as u64
                }
            }
        } else {
            self.entry_size(i)
        };
        let bytes = rest.get(..usize::try_from(len).ok()?)?;
        // A constant pool's alignment is its most aligned constant's, which
        // depends on what else was compiled with the fragment (a 4-byte
        // `char` array alone is in a `.rodata.cst4` of alignment 1): a
        // constant's piece takes the pool's entry size instead. (Strings
        // of another alignment have a section of their own.)
        let align = if s.flags & SHF_STRINGS == 0 && !w.stubs[i] {
            s.entsize.max(1)
        } else {
            s.align.max(1)
        };
        let out = match self.pool_of.get(&i) {
            Some(&o) => o,
            None => {
                self.sections.push(OutSection {
                    name: c_str(w.input.shstrtab, s.name)?.to_vec(),
                    sh_type: s.sh_type,
                    flags: s.flags,
                    align,
                    entsize: s.entsize,
                    content: Content::Data(Vec::new()),
                    relas: Vec::new(),
                });
                let o = self.sections.len() - 1;
                self.pool_of.insert(i, o);
                o
            }
        };
        let Content::Data(d) = &mut self.sections[out].content else {
            return None;
        };
        let at = (d.len() as u64).next_multiple_of(align);
        d.resize(at as usize, 0);
        d.extend_from_slice(bytes);
        // A constant's piece is plain bytes; a stub's relocation comes
        // with it.
        let inside: Vec<Rela> = (w.relas[i].iter())
            .filter(|r| r.offset >= start && r.offset < start + len)
            .copied()
            .collect();
        if !inside.is_empty() && !w.stubs[i] {
            return None;
        }
        let moved = self.moved_relocations(&inside, start, at)?;
        self.sections[out].relas.extend(moved);
        self.locals.push(OutSym {
            name: Vec::new(),
            info: STT_NOTYPE,
            other: 0,
            section: Some(out),
            special: 0,
            value: at,
            size: 0,
        });
        let p = (out, self.locals.len() - 1, at);
        self.pieces.insert((i, start), p);
        Some(p)
    }

    /// The output form of group section `g`.
    fn group(&mut self, g: usize) -> Option<()> {
        let w = self.w;
        let h = w.input.shdrs[g];
        let (flag, group) = w.input.group(&h)?;
        let (signature, _) = self.target(h.info as usize, 0)?;
        let mut members = Vec::new();
        for m in group {
            let sh = w.input.shdrs.get(m)?;
            members.push(if sh.sh_type == SHT_RELA {
                Member::RelaOf(*self.out_of.get(&(sh.info as usize))?)
            } else {
                Member::Section(*self.out_of.get(&m)?)
            });
        }
        self.sections.push(OutSection {
            name: c_str(w.input.shstrtab, h.name)?.to_vec(),
            sh_type: SHT_GROUP,
            flags: h.flags & !SHF_GROUP,
            align: 4,
            entsize: 4,
            content: Content::Group {
                flag,
                signature,
                members,
            },
            relas: Vec::new(),
        });
        Some(())
    }

    /// `.eh_frame` for the fragment's code: each included section's FDEs in
    /// order, each preceded by its CIE the first time.
    fn unwind_records(&mut self) -> Option<()> {
        let w = self.w;
        let Some(e) = w.eh_frame else {
            return Some(());
        };
        let h = w.input.shdrs[e];
        let bytes = slice(w.input.data, h.offset, h.size)?;
        let mut data: Vec<u8> = Vec::new();
        let mut relas = Vec::new();
        let mut cie_at: HashMap<u64, u64> = HashMap::default();
        for i in self.order.clone() {
            if self.w.input.shdrs[i].flags & SHF_EXECINSTR == 0 {
                continue;
            }
            for &n in w.fdes_of.get(&i).map(Vec::as_slice).unwrap_or(&[]) {
                let record = &w.unwind[n];
                let (cie, rela) = record.fde?;
                let cie_out = match cie_at.get(&cie) {
                    Some(&c) => c,
                    None => {
                        let c = &w.unwind[*w.unwind_at.get(&cie)?];
                        if c.fde.is_some() {
                            return None;
                        }
                        let at = data.len() as u64;
                        let record = bytes.get(c.start as usize..(c.start + c.len) as usize)?;
                        data.extend_from_slice(&padded(record)?);
                        relas.extend(self.moved_relocations(&c.others, c.start, at)?);
                        cie_at.insert(cie, at);
                        at
                    }
                };
                let at = data.len() as u64;
                // Without the padding its place in the whole object gave it
                // (`padded` pads it again as for any place but the last).
                let nops = super::unwind::trailing_nops(bytes, record.start)?;
                let end = (record.start + record.len).checked_sub(nops)?;
                let mut fde = bytes.get(record.start as usize..end as usize)?.to_vec();
                let pointer = u32::try_from(at + 4 - cie_out).ok()?;
                fde[4..8].copy_from_slice(&pointer.to_le_bytes());
                data.extend_from_slice(&padded(&fde)?);
                let mut r = self.relocation(Rela {
                    offset: at + 8,
                    ..rela
                })?;
                r.offset = at + 8;
                relas.push(r);
                relas.extend(self.moved_relocations(&record.others, record.start, at)?);
            }
        }
        if data.is_empty() {
            return Some(());
        }
        self.sections.push(OutSection {
            name: b".eh_frame".to_vec(),
            sh_type: h.sh_type,
            flags: h.flags,
            // The records' alignment: `ld.lld -r` (composing's fallback)
            // leaves no gap between fragments then either.
            align: h.align.clamp(1, UNWIND_RECORD_ALIGN),
            entsize: h.entsize,
            content: Content::Data(data),
            relas,
        });
        Some(())
    }
}

/// An unwind record padded (with `DW_CFA_nop`s, its length adjusted) to a
/// multiple of 4 bytes, as LLVM pads every record but a section's last (an
/// FDE comes without the padding it had, see `unwind::trailing_nops`):
/// composing concatenates fragments' `.eh_frame` sections at 4-byte
/// boundaries, where a gap between records would read as the zero
/// terminator. (Padded to 8, as the section's alignment would have it,
/// every FDE of a composed object was 4 bytes longer than clang's: 5% of
/// leveldb's `.eh_frame`.)
fn padded(record: &[u8]) -> Option<Vec<u8>> {
    let mut out = record.to_vec();
    out.resize(
        record.len().next_multiple_of(UNWIND_RECORD_ALIGN as usize),
        0,
    );
    let len = u32::try_from(out.len() - 4).ok()?;
    out.get_mut(..4)?.copy_from_slice(&len.to_le_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::combine::tests::{compile, dump, succeed};
    use super::*;
    use std::path::Path;
    use std::process::Command;

    /// `source` compiled as repocc compiles a unit's new fragments (`flags`
    /// come after relocatable's `-O2`, so an `-O` there wins).
    fn whole(dir: &Path, name: &str, source: &str, flags: &[&str]) -> Vec<u8> {
        let mut all = vec!["-ffunction-sections", "-fdata-sections"];
        all.extend_from_slice(flags);
        compile(dir, name, source, &all)
    }

    fn spec(members: &[&str], significant: &[&str]) -> FragmentSpec {
        FragmentSpec {
            members: members.iter().map(|m| m.to_string()).collect(),
            address_significant: significant.iter().map(|m| m.to_string()).collect(),
            suffix: String::new(),
        }
    }

    fn names(object: &Path, flag: &str) -> String {
        let out = Command::new("readelf")
            .arg(flag)
            .arg("-W")
            .arg(object)
            .output();
        String::from_utf8(out.unwrap().stdout).unwrap()
    }

    const UNIT: &str = r#"
#include <stdio.h>
__thread int per_thread = 5;
int counter;
static const char *const names[] = {"zero", "one", "two", "three"};
__attribute__((noinline)) static double scaled(double x) { return x * 3.25 + 0.5; }
double pick(double x, int k) {
  switch (k) {
  case 0: return scaled(x); case 1: return x * 7.5; case 2: return x - 0.125;
  case 3: return x / 9.75; case 4: return 2.0; default: return scaled(-x);
  }
}
const char *name_of(int i) { counter++; return names[i & 3]; }
__attribute__((cold, noinline)) void complain(const char *what) { fprintf(stderr, "bad %s\n", what); }
int main(int argc, char **argv) {
  (void)argv;
  if (argc > 5) complain("argc");
  per_thread += argc;
  printf("%s %.3f %.3f %s %d %d\n", name_of(2), pick(1.0, 0), pick(2.0, 3), name_of(7),
         counter, per_thread);
  return 0;
}
"#;

    #[test]
    fn carved_fragments_link_run_and_unwind() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let w = whole(d, "unit.c", UNIT, &["-O2", "-fPIC"]);
        let members = [
            "per_thread",
            "counter",
            "pick",
            "name_of",
            "complain",
            "main",
        ];
        let owned: Vec<FragmentSpec> = members.iter().map(|m| spec(&[m], &[])).collect();
        let specs: Vec<&FragmentSpec> = owned.iter().collect();
        let naming = SectionNaming {
            function_sections: false,
            data_sections: false,
            unique_section_names: true,
        };
        let objects: Vec<Vec<u8>> = carve(&w, &specs, naming)
            .expect("carved")
            .into_iter()
            .map(|o| o.expect("every fragment carved"))
            .collect();
        assert_eq!(objects.len(), members.len());
        let mut paths = Vec::new();
        for (m, o) in members.iter().zip(&objects) {
            let p = d.join(format!("{m}.o"));
            std::fs::write(&p, o).unwrap();
            paths.push(p);
        }
        // Sections are named as without -ffunction-sections; the cold
        // function keeps its prefix; the static helper is copied in.
        let pick = names(&paths[2], "-S");
        assert!(
            pick.contains(" .text ") && !pick.contains(".text.pick"),
            "{pick}"
        );
        assert!(pick.contains(".rodata.cst8"), "{pick}");
        assert!(names(&paths[4], "-S").contains(".text.unlikely. "));
        assert!(names(&paths[2], "-s").contains(" scaled"));
        assert!(names(&paths[0], "-S").contains(".tdata"));
        // GNU ld reads every unwind record (a gap would be an error here).
        let exe = d.join("prog");
        let stderr = succeed(
            Command::new("clang-19")
                .args(["-fuse-ld=bfd", "-Wl,--eh-frame-hdr", "-o"])
                .arg(&exe)
                .args(&paths),
        );
        assert!(!stderr.contains("eh_frame"), "{stderr}");
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(
            String::from_utf8(run.stdout).unwrap(),
            "two 3.750 0.205 three 2 6\n"
        );
        // Combined into one object, as composition does, it links too.
        let refs: Vec<&[u8]> = objects.iter().map(Vec::as_slice).collect();
        let one = super::super::combine::combine(&refs, &[], &[]).expect("combined");
        std::fs::write(d.join("one.o"), one).unwrap();
        succeed(
            Command::new("clang-19")
                .args(["-fuse-ld=bfd", "-Wl,--eh-frame-hdr", "-o"])
                .arg(d.join("prog1"))
                .arg(d.join("one.o")),
        );
        let run = Command::new(d.join("prog1")).output().unwrap();
        assert_eq!(
            String::from_utf8(run.stdout).unwrap(),
            "two 3.750 0.205 three 2 6\n"
        );
        // The constants' pieces leave no unnamed symbol in the program (a
        // linker keeps those; clang's labels are temporary ones).
        let symbols = names(&d.join("prog1"), "-s");
        let unnamed: Vec<&str> = (symbols.lines())
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() == 7 && f[3] == "NOTYPE" && f[4] == "LOCAL" && f[6] != "UND"
            })
            .collect();
        assert!(unnamed.is_empty(), "{unnamed:?}");
    }

    #[test]
    fn a_fragment_does_not_depend_on_what_was_compiled_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let g = "int g(int x) { static const double k[] = {1.5, 2.5, 3.5};\n\
                 return f(x) + (int)k[x & 1] + puts(\"g\") + puts(\"shared\"); }\n";
        let head = "int puts(const char *); int f(int);\n";
        let with_f = format!(
            "{head}int f(int x) {{ return puts(\"shared\") + puts(\"f only\") + x; }}\n{g}"
        );
        let alone = format!("{head}{g}");
        let a = whole(d, "a.c", &with_f, &["-O0", "-fPIC"]);
        let b = whole(d, "b.c", &alone, &["-O0", "-fPIC"]);
        let naming = SectionNaming {
            function_sections: false,
            data_sections: false,
            unique_section_names: true,
        };
        let from_a = carve(&a, &[&spec(&["f"], &["f"]), &spec(&["g"], &["f"])], naming).unwrap();
        let from_b = carve(&b, &[&spec(&["g"], &["f"])], naming).unwrap();
        let g_alone = from_b[0].as_ref().unwrap();
        assert_eq!(from_a[1].as_ref().unwrap(), g_alone);
        // f is an undefined, address-significant symbol of g's fragment.
        std::fs::write(d.join("g.o"), g_alone).unwrap();
        assert!(names(&d.join("g.o"), "-s").contains("UND f"));
    }

    #[test]
    fn a_fragment_does_not_depend_on_its_place_among_the_unwind_records() {
        // LLVM pads the section's last FDE to 8 bytes, the others to 4: g
        // emitted last must carve as g emitted first. (g keeps x across a
        // call: one pushed register, an FDE of 25 bytes before padding.)
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let g = "int g(int x) { return f(x) + x; }\n";
        let h = "int h(int x) { return f(x) * 3 + f(x + 1) * x; }\n";
        let head = "int f(int);\n";
        let first = whole(d, "first.c", &format!("{head}{g}{h}"), &["-O2"]);
        let last = whole(d, "last.c", &format!("{head}{h}{g}"), &["-O2"]);
        let naming = SectionNaming {
            function_sections: false,
            data_sections: false,
            unique_section_names: true,
        };
        let specs = [&spec(&["g"], &[]), &spec(&["h"], &[])];
        let from_first = carve(&first, &specs, naming).unwrap();
        let from_last = carve(&last, &specs, naming).unwrap();
        assert_eq!(
            from_first[0].as_ref().unwrap(),
            from_last[0].as_ref().unwrap()
        );
        assert_eq!(
            from_first[1].as_ref().unwrap(),
            from_last[1].as_ref().unwrap()
        );
    }

    const THROWS: &str = r#"
#include <cstdio>
struct Oops { int v; };
extern "C" __attribute__((noinline)) void raise_it(int x) { if (x) throw Oops{x}; throw 7; }
extern "C" int catch_it(int x) {
  try { raise_it(x); } catch (const Oops &o) { return o.v; } catch (int i) { return -i; }
  return 0;
}
"#;

    const OTHER: &str = r#"
extern "C" int other(int x) { try { raise_it(x); } catch (long i) { return 2; } catch (...) { return 1; } return 0; }
int main() { std::printf("%d %d %d\n", catch_it(3), catch_it(0), other(0)); }
"#;

    #[test]
    fn exceptions_are_carved_and_do_not_depend_on_the_company() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let naming = SectionNaming {
            function_sections: false,
            data_sections: false,
            unique_section_names: true,
        };
        let members = [
            "raise_it",
            "catch_it",
            "other",
            "main",
            "_ZTI4Oops",
            "_ZTS4Oops",
        ];
        let owned: Vec<FragmentSpec> = members.iter().map(|m| spec(&[m], &[])).collect();
        let specs: Vec<&FragmentSpec> = owned.iter().collect();
        let w = whole(d, "all.cc", &format!("{THROWS}{OTHER}"), &["-O2", "-fPIC"]);
        let objects: Vec<Vec<u8>> = carve(&w, &specs, naming)
            .expect("carved")
            .into_iter()
            .map(|o| o.expect("every fragment carved"))
            .collect();
        let mut paths = Vec::new();
        for (m, o) in members.iter().zip(&objects) {
            let p = d.join(format!("{m}.o"));
            std::fs::write(&p, o).unwrap();
            paths.push(p);
        }
        // The LSDA comes with its function, under clang's plain name; the
        // personality routine's pointer is the fragment's own; the LSDA's
        // numbered label is not kept.
        let catch_it = names(&paths[1], "-S");
        assert!(catch_it.contains(" .gcc_except_table "), "{catch_it}");
        assert!(
            catch_it.contains("DW.ref.__gxx_personality_v0"),
            "{catch_it}"
        );
        assert!(!names(&paths[1], "-s").contains("GCC_except_table"));
        let exe = d.join("prog");
        succeed(
            Command::new("clang++-19")
                .args(["-fuse-ld=bfd", "-Wl,--eh-frame-hdr", "-o"])
                .arg(&exe)
                .args(&paths),
        );
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(String::from_utf8(run.stdout).unwrap(), "3 -7 1\n");
        // Compiled without `other` (whose catch clause names `long`: one
        // more type stub in the unit), `catch_it` is the same.
        let alone = whole(
            d,
            "alone.cc",
            &format!("{THROWS}int main() {{ return catch_it(1); }}\n"),
            &["-O2", "-fPIC"],
        );
        let from_alone = carve(&alone, &[&spec(&["catch_it"], &[])], naming).unwrap();
        assert_eq!(from_alone[0].as_ref().unwrap(), &objects[1]);
    }

    #[test]
    fn declines_what_it_does_not_handle() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let naming = SectionNaming {
            function_sections: true,
            data_sections: true,
            unique_section_names: true,
        };
        // Two functions in one named section cannot be told apart: both
        // are declined, the other one carved.
        let shared = whole(
            d,
            "t.c",
            "__attribute__((section(\".text.mine\"))) int one(int x) { return x * 3; }\n\
             __attribute__((section(\".text.mine\"))) int two(int x) { return x * 5; }\n\
             int plain(int x) { return x + 1; }\n",
            &["-O2"],
        );
        let carved = carve(
            &shared,
            &[
                &spec(&["one"], &[]),
                &spec(&["two"], &[]),
                &spec(&["plain"], &[]),
            ],
            naming,
        )
        .unwrap();
        assert!(carved[0].is_err());
        assert!(carved[1].is_err());
        assert!(carved[2].is_ok());
        // Not a recognized object: declined as a whole.
        assert!(carve(b"\x7fELF", &[&spec(&["a"], &[])], naming).is_err());
    }

    /// `sources` (name, text) compiled by clang++-19 at `-O2 -g`, each
    /// alone and all linked into one batch (each fragment's definitions
    /// with its suffix `.repocc.F<k>`), through `llc -generate-type-units`:
    /// (the batch's object, each source's object alone). `share_types`:
    /// the batch's context shares debug types by identifier.
    fn batch_and_alone(
        d: &Path,
        sources: &[(&str, &str)],
        share_types: bool,
    ) -> (Vec<u8>, Vec<Vec<u8>>) {
        use crate::llvm::{share_debug_types_by_identifier, BatchLinker};
        use inkwell::module::Module;
        let llc = |input: &Path, output: &Path| {
            succeed(
                Command::new("llc-19")
                    .args(["-O2", "-filetype=obj", "-function-sections"])
                    .args(["-data-sections", "-generate-type-units", "-o"])
                    .arg(output)
                    .arg(input),
            );
            std::fs::read(output).unwrap()
        };
        let context = crate::llvm::test_context();
        if share_types {
            share_debug_types_by_identifier(&context);
        }
        let batch = context.create_module("batch");
        let mut linker = BatchLinker::new(&batch);
        let mut alone = Vec::new();
        for (k, &(name, text)) in sources.iter().enumerate() {
            std::fs::write(d.join(name), text).unwrap();
            let bc = d.join(format!("{name}.bc"));
            succeed(
                Command::new("clang++-19")
                    .args(["-O2", "-g", "-emit-llvm", "-c", "-o"])
                    .arg(&bc)
                    .arg(d.join(name)),
            );
            alone.push(llc(&bc, &d.join(format!("{name}.o"))));
            let module = Module::parse_bitcode_from_path(&bc, &context).unwrap();
            linker.link(module, &format!(".repocc.F{k}")).unwrap();
        }
        drop(linker);
        assert!(batch.write_bitcode_to_path(d.join("batch.bc")));
        (llc(&d.join("batch.bc"), &d.join("batch.o")), alone)
    }

    /// Two fragments whose types of one identifier are two nodes (in the
    /// pipeline: a class named after a fragment's own local type, with that
    /// fragment's lines) give a batch two type units of one signature; each
    /// fragment is carved with the one its compile unit made, as alone.
    #[test]
    fn type_units_of_one_signature_are_each_fragments_own() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let sources = [
            (
                "a.cc",
                "struct S { int x; long y; };\n\
              extern \"C\" long fa(S *s) { return s->x + s->y; }\n",
            ),
            (
                "b.cc",
                "\n\n\nstruct S { int x; long y; };\n\
              extern \"C\" long fb(S *s) { return s->x * s->y; }\n",
            ),
        ];
        // No types shared by identifier: the batch holds both nodes, as a
        // worker reads it.
        let (whole, alone) = batch_and_alone(d, &sources, false);
        let shown = dump(&d.join("batch.o"), "--debug-info");
        assert_eq!(shown.matches("Type Unit:").count(), 2, "{shown}");
        let naming = SectionNaming {
            function_sections: true,
            data_sections: true,
            unique_section_names: true,
        };
        let suffixed: Vec<FragmentSpec> = ["fa", "fb"]
            .iter()
            .enumerate()
            .map(|(k, f)| FragmentSpec {
                members: vec![format!("{f}.repocc.F{k}")],
                address_significant: Default::default(),
                suffix: format!(".repocc.F{k}"),
            })
            .collect();
        let carved = carve(&whole, &suffixed.iter().collect::<Vec<_>>(), naming).unwrap();
        for (k, f) in ["fa", "fb"].iter().enumerate() {
            let from_alone = carve(&alone[k], &[&spec(&[f], &[])], naming)
                .unwrap()
                .remove(0)
                .unwrap();
            assert!(carved[k].as_ref().unwrap() == &from_alone, "{f}");
        }
    }

    /// Fragments' modules with debug info (each a compile unit, sharing
    /// C++ types through type units) compiled as one object as repocc
    /// links them, and each alone: every fragment carved from the one
    /// object has the bytes it has carved from its own object, which
    /// llvm-dwarfdump verifies and shows with the DIEs, lines and files
    /// of the fragment compiled alone.
    #[test]
    fn debug_info_is_carved_as_from_the_fragment_alone() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let header = "#pragma once\n\
            struct point { int x; double y; short tag; };\n\
            template <class T> struct box { T value; point where; box *next; };\n\
            enum class colour : unsigned char { red, green = 7 };\n";
        std::fs::write(d.join("t.h"), header).unwrap();
        let sources = [
            ("a.cc", "#include \"t.h\"\n\
              extern \"C\" int fa(point p, box<int> *b, int n) {\n\
                int s = 0;\n\
                for (int i = 0; i < n && b; ++i, b = b->next)\n\
                  s += b->value * p.x + (int)p.y;\n\
                return s + p.tag;\n}\n"),
            ("b.cc", "#include \"t.h\"\n\
              static double scale(const point *p, colour c) { return p->y * (double)c; }\n\
              extern \"C\" double fb(const point *p, int n) {\n\
                double t = 0;\n\
                for (int i = 0; i < n; ++i) t += scale(p + i, i & 1 ? colour::red : colour::green);\n\
                return t;\n}\n"),
            ("c.cc", "#include \"t.h\"\n\
              extern \"C\" long counter_c = 3;\n\
              extern \"C\" long fc(box<long> b, char c) {\n\
                long v = b.value;\n\
                if (c > 3) v *= b.where.x;\n\
                counter_c += v;\n\
                return v + c;\n}\n"),
        ];
        let (whole, alone) = batch_and_alone(d, &sources, true);
        let specs = [
            spec(&["fa"], &[]),
            spec(&["fb"], &[]),
            spec(&["fc", "counter_c"], &[]),
        ];
        // In the whole object, each fragment's definitions carry its suffix.
        let suffixed: Vec<FragmentSpec> = (specs.iter().enumerate())
            .map(|(k, s)| FragmentSpec {
                members: s
                    .members
                    .iter()
                    .map(|m| format!("{m}.repocc.F{k}"))
                    .collect(),
                address_significant: s.address_significant.clone(),
                suffix: format!(".repocc.F{k}"),
            })
            .collect();
        let naming = SectionNaming {
            function_sections: true,
            data_sections: true,
            unique_section_names: true,
        };
        let all: Vec<&FragmentSpec> = suffixed.iter().collect();
        let carved = carve(&whole, &all, naming).unwrap();
        for (k, spec) in specs.iter().enumerate() {
            let from_whole = carved[k].as_ref().unwrap();
            let from_alone = carve(&alone[k], &[spec], naming)
                .unwrap()
                .remove(0)
                .unwrap();
            let path = d.join(format!("carved{k}.o"));
            std::fs::write(&path, from_whole).unwrap();
            std::fs::write(d.join(format!("alone{k}.o")), &alone[k]).unwrap();
            let sections = names(&path, "-S");
            assert!(sections.contains(".debug_info"), "{sections}");
            dump(&path, "--verify");
            let shown = |object: &Path| {
                let text = dump(object, "--debug-info") + &dump(object, "--debug-line");
                let mut lines: Vec<String> = text
                    .lines()
                    .filter(|l| !l.contains("Unit:") && !l.contains("file format"))
                    .filter(|l| !l.contains("_base") && !l.contains("length:"))
                    .map(|l| {
                        // offsets, indices and forms differ; names, files,
                        // lines and expressions must not
                        // (address indices are numbered in the order
                        // the carver meets them, not LLVM's)
                        let mut t = match l.find("DW_OP_addrx 0x") {
                            Some(p) => l[..p + 12].to_string(),
                            None => l.to_string(),
                        };
                        while let Some(p) = t.find("0x0000") {
                            let end = t[p + 2..]
                                .find(|c: char| !c.is_ascii_hexdigit())
                                .map_or(t.len(), |e| p + 2 + e);
                            t.replace_range(p..end, "<off>");
                        }
                        // A line-table row's file index (the carver
                        // numbers files in the order it meets them; the
                        // DIEs show each file by name).
                        if t.starts_with("<off> ") {
                            let mut columns: Vec<&str> = t.split_whitespace().collect();
                            if columns.len() > 3 {
                                columns[3] = "<file>";
                            }
                            t = columns.join(" ");
                        }
                        t
                    })
                    .collect();
                lines.sort();
                lines
            };
            if from_whole != &from_alone {
                std::fs::write(d.join(format!("carved-alone{k}.o")), &from_alone).unwrap();
                let (a, b) = (shown(&path), shown(&d.join(format!("carved-alone{k}.o"))));
                let diff: Vec<_> = a.iter().filter(|l| !b.contains(l)).take(20).collect();
                panic!("fragment {k}: carved from the whole differs from alone; {diff:#?}");
            }
            let (a, b) = (shown(&path), shown(&d.join(format!("alone{k}.o"))));
            let missing: Vec<_> = b.iter().filter(|l| !a.contains(l)).take(20).collect();
            assert!(missing.is_empty(), "fragment {k}: {missing:#?}");
        }
        // Type units are the same group wherever they come from.
        let groups = names(&d.join("carved0.o"), "-g");
        assert!(groups.contains("COMDAT group"), "{groups}");
    }
}
