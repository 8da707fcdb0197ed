//! ELF64 relocatable objects as bytes (little endian; x86-64 and
//! AArch64): the reader (`parse`, bounds-checked accessors), the writer
//! (`write`, from sections, symbols and relocations described by value)
//! and the constants every object stage shares. No LLVM, no repository:
//! `combine`, `carve`, `unwind` and the DWARF stages are built on it.
//!
//! Objects are read with the `object` crate's ELF reader into this
//! module's model (`Input`: section headers, symbols, RELA entries, group
//! members). They are written by hand: the crate's builder (0.40) refuses
//! `SHT_GROUP` and `SHT_LLVM_ADDRSIG` sections, which every C++ fragment
//! and every clang object carry, and its low-level writer would lay the
//! same bytes out in another order (section data, then headers), so every
//! composed object would change for no gain.

use super::leb128::write_uleb;
use rustc_hash::FxHashMap as HashMap;

use object::elf::{FileHeader64, Rela64, Sym64};
use object::read::elf::{FileHeader as _, Rela as _, SectionHeader as _, Sym as _};
use object::LittleEndian;

/// How `.eh_frame` records are aligned (LLVM pads each to 4 bytes, the
/// section's last to the section's alignment).
pub(super) const UNWIND_RECORD_ALIGN: u64 = 4;
/// The alignment of clang's `.eh_frame` on the 64-bit targets composed.
pub(super) const EH_FRAME_ALIGN: u64 = 8;
pub(super) const SHT_PROGBITS: u32 = object::elf::SHT_PROGBITS.0;
pub(super) const SHT_SYMTAB: u32 = object::elf::SHT_SYMTAB.0;
pub(super) const SHT_STRTAB: u32 = object::elf::SHT_STRTAB.0;
pub(super) const SHT_RELA: u32 = object::elf::SHT_RELA.0;
pub(super) const SHT_NOTE: u32 = object::elf::SHT_NOTE.0;
pub(super) const SHT_NOBITS: u32 = object::elf::SHT_NOBITS.0;
pub(super) const SHT_INIT_ARRAY: u32 = object::elf::SHT_INIT_ARRAY.0;
pub(super) const SHT_FINI_ARRAY: u32 = object::elf::SHT_FINI_ARRAY.0;
pub(super) const SHT_PREINIT_ARRAY: u32 = object::elf::SHT_PREINIT_ARRAY.0;
pub(super) const SHT_GROUP: u32 = object::elf::SHT_GROUP.0;
pub(super) const SHT_LLVM_ADDRSIG: u32 = 0x6fff_4c03; // LLVM's own (`object` lacks it)
/// `.linker-options` (clang emits it, empty, for C++20 units).
pub(super) const SHT_LLVM_LINKER_OPTIONS: u32 = 0x6fff_4c01; // LLVM's own (`object` lacks it)
pub(super) const SHT_X86_64_UNWIND: u32 = object::elf::SHT_X86_64_UNWIND.0;
pub(super) const SHF_EXECINSTR: u64 = object::elf::SHF_EXECINSTR.0;
pub(super) const GRP_COMDAT: u32 = object::elf::GRP_COMDAT.0;
pub(super) const SHF_INFO_LINK: u64 = object::elf::SHF_INFO_LINK.0;
pub(super) const SHF_LINK_ORDER: u64 = object::elf::SHF_LINK_ORDER.0;
pub(super) const SHF_GROUP: u64 = object::elf::SHF_GROUP.0;
pub(super) const SHF_COMPRESSED: u64 = object::elf::SHF_COMPRESSED.0;
pub(super) const SHF_EXCLUDE: u64 = object::elf::SHF_EXCLUDE.0;
pub(super) const SHN_UNDEF: u16 = object::elf::SHN_UNDEF.0;
pub(super) const SHN_LORESERVE: u16 = object::elf::SHN_LORESERVE;
pub(super) const SHN_ABS: u16 = object::elf::SHN_ABS.0;
pub(super) const SHN_COMMON: u16 = object::elf::SHN_COMMON.0;
pub(super) const STB_LOCAL: u8 = object::elf::STB_LOCAL.0;
pub(super) const STB_GLOBAL: u8 = object::elf::STB_GLOBAL.0;
pub(super) const STB_WEAK: u8 = object::elf::STB_WEAK.0;
pub(super) const STT_NOTYPE: u8 = object::elf::STT_NOTYPE.0;
pub(super) const STT_SECTION: u8 = object::elf::STT_SECTION.0;
pub(super) const STT_OBJECT: u8 = object::elf::STT_OBJECT.0;
pub(super) const STT_FUNC: u8 = object::elf::STT_FUNC.0;
pub(super) const STT_FILE: u8 = object::elf::STT_FILE.0;
pub(super) const STT_TLS: u8 = object::elf::STT_TLS.0;
pub(super) const STT_GNU_IFUNC: u8 = object::elf::STT_GNU_IFUNC.0;
pub(super) const SHT_REL: u32 = object::elf::SHT_REL.0;
pub(super) const SHF_WRITE: u64 = object::elf::SHF_WRITE.0;
pub(super) const SHF_ALLOC: u64 = object::elf::SHF_ALLOC.0;
pub(super) const SHF_MERGE: u64 = object::elf::SHF_MERGE.0;
pub(super) const SHF_STRINGS: u64 = object::elf::SHF_STRINGS.0;
pub(super) const R_X86_64_64: u32 = object::elf::R_X86_64_64.0;
pub(super) const R_X86_64_PC32: u32 = object::elf::R_X86_64_PC32.0;
pub(super) const R_X86_64_PLT32: u32 = object::elf::R_X86_64_PLT32.0;
pub(super) const R_AARCH64_ABS64: u32 = object::elf::R_AARCH64_ABS64.0;
pub(super) const EM_X86_64: u16 = object::elf::EM_X86_64.0;
pub(super) const EM_AARCH64: u16 = object::elf::EM_AARCH64.0;

pub(super) fn rd<const N: usize>(b: &[u8], at: u64) -> Option<[u8; N]> {
    let at = usize::try_from(at).ok()?;
    b.get(at..at.checked_add(N)?)?.try_into().ok()
}
pub(super) fn u16_at(b: &[u8], at: u64) -> Option<u16> {
    rd::<2>(b, at).map(u16::from_le_bytes)
}
pub(super) fn u32_at(b: &[u8], at: u64) -> Option<u32> {
    rd::<4>(b, at).map(u32::from_le_bytes)
}
pub(super) fn u64_at(b: &[u8], at: u64) -> Option<u64> {
    rd::<8>(b, at).map(u64::from_le_bytes)
}
pub(super) fn slice(b: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    let off = usize::try_from(off).ok()?;
    let len = usize::try_from(len).ok()?;
    b.get(off..off.checked_add(len)?)
}
pub(super) fn c_str(table: &[u8], at: u32) -> Option<&[u8]> {
    let rest = table.get(at as usize..)?;
    Some(&rest[..rest.iter().position(|&c| c == 0)?])
}

#[derive(Clone, Copy)]
pub(super) struct Shdr {
    pub(super) name: u32,
    pub(super) sh_type: u32,
    pub(super) flags: u64,
    pub(super) offset: u64,
    pub(super) size: u64,
    pub(super) link: u32,
    pub(super) info: u32,
    pub(super) align: u64,
    pub(super) entsize: u64,
}

#[derive(Clone, Copy)]
pub(super) struct Sym {
    pub(super) name: u32,
    pub(super) info: u8,
    pub(super) other: u8,
    pub(super) shndx: u16,
    pub(super) value: u64,
    pub(super) size: u64,
}

/// One input object, parsed and checked.
pub(super) struct Input<'a> {
    pub(super) data: &'a [u8],
    pub(super) shdrs: Vec<Shdr>,
    pub(super) shstrtab: &'a [u8],
    pub(super) strtab: &'a [u8],
    pub(super) syms: Vec<Sym>,
}

/// Reads `data` as an ELF64 little-endian relocatable object, through the
/// `object` crate's ELF reader (headers, section table, symbol table, all
/// bounds-checked). `None` for anything else, and for an object with one
/// symbol table too many or too few, or with extended section numbering
/// (65,280 sections or more: the model holds 16-bit section indices).
pub(super) fn parse(data: &[u8]) -> Option<Input<'_>> {
    let header = FileHeader64::<LittleEndian>::parse(data).ok()?;
    let e = header.endian().ok()?;
    if header.e_type(e) != object::elf::ET_REL {
        return None;
    }
    let sections = header.sections(e, data).ok()?;
    if sections.is_empty() || sections.len() >= usize::from(SHN_LORESERVE) {
        return None;
    }
    let shdrs: Vec<Shdr> = sections
        .iter()
        .map(|h| Shdr {
            name: h.sh_name(e),
            sh_type: h.sh_type(e).0,
            flags: h.sh_flags(e).0,
            offset: h.sh_offset(e),
            size: h.sh_size(e),
            link: h.sh_link(e),
            info: h.sh_info(e),
            align: h.sh_addralign(e),
            entsize: h.sh_entsize(e),
        })
        .collect();
    let shstrndx = header.shstrndx(e, data).ok()? as usize;
    let sh = shdrs.get(shstrndx)?;
    let shstrtab = slice(data, sh.offset, sh.size)?;
    let mut symtabs = shdrs.iter().filter(|s| s.sh_type == SHT_SYMTAB);
    let symtab = *symtabs.next()?;
    if symtabs.next().is_some() || symtab.entsize != 24 {
        return None;
    }
    let strtab_hdr = shdrs.get(symtab.link as usize)?;
    let strtab = slice(data, strtab_hdr.offset, strtab_hdr.size)?;
    let table = slice(data, symtab.offset, symtab.size)?;
    let syms = object::pod::slice_from_all_bytes::<Sym64<LittleEndian>>(table)
        .ok()?
        .iter()
        .map(|y| Sym {
            name: y.st_name(e),
            info: y.st_info().0,
            other: y.st_other().0,
            shndx: y.st_shndx(e).0,
            value: y.st_value(e),
            size: y.st_size(e),
        })
        .collect();
    Some(Input {
        data,
        shdrs,
        shstrtab,
        strtab,
        syms,
    })
}

/// One relocation with an addend, as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rela {
    pub(super) offset: u64,
    /// The symbol's index in the object's symbol table.
    pub(super) sym: usize,
    pub(super) r_type: u32,
    pub(super) addend: i64,
}

impl<'a> Input<'a> {
    /// The bytes of section `s` in the file (`None` when they lie outside
    /// it).
    pub(super) fn bytes(&self, s: &Shdr) -> Option<&'a [u8]> {
        slice(self.data, s.offset, s.size)
    }

    /// The entries of the `SHT_RELA` section `s`; `None` unless its entries
    /// are ELF64's 24 bytes and fill it exactly.
    pub(super) fn relas(&self, s: &Shdr) -> Option<impl Iterator<Item = Rela> + 'a> {
        if s.entsize != 24 {
            return None;
        }
        let e = LittleEndian;
        let entries =
            object::pod::slice_from_all_bytes::<Rela64<LittleEndian>>(self.bytes(s)?).ok()?;
        Some(entries.iter().map(move |r| Rela {
            offset: r.r_offset(e),
            sym: r.r_sym(e, false) as usize,
            r_type: r.r_type(e, false).0,
            addend: r.r_addend(e),
        }))
    }

    /// The `SHT_GROUP` section `s`: its flags word (`GRP_COMDAT`) and the
    /// indices of its member sections.
    pub(super) fn group(&self, s: &Shdr) -> Option<(u32, Vec<usize>)> {
        let words =
            object::pod::slice_from_all_bytes::<object::U32<LittleEndian>>(self.bytes(s)?).ok()?;
        let (flags, members) = words.split_first()?;
        Some((
            flags.get(LittleEndian),
            members
                .iter()
                .map(|m| m.get(LittleEndian) as usize)
                .collect(),
        ))
    }
}

/// Where an output symbol lives before final indices are known.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum SymRef {
    Local(usize),
    Global(usize),
}

#[derive(Clone)]
pub(super) struct OutSym {
    pub(super) name: Vec<u8>,
    pub(super) info: u8,
    pub(super) other: u8,
    /// `None`: undefined, absolute or common (kept in `special`).
    pub(super) section: Option<usize>,
    pub(super) special: u16,
    pub(super) value: u64,
    pub(super) size: u64,
}

pub(super) struct OutRela {
    pub(super) offset: u64,
    pub(super) sym: Option<SymRef>,
    pub(super) r_type: u32,
    pub(super) addend: i64,
}

pub(super) enum Member {
    Section(usize),
    RelaOf(usize),
}

pub(super) enum Content {
    Data(Vec<u8>),
    Bss(u64),
    Group {
        flag: u32,
        signature: SymRef,
        members: Vec<Member>,
    },
}

pub(super) struct OutSection {
    pub(super) name: Vec<u8>,
    pub(super) sh_type: u32,
    pub(super) flags: u64,
    pub(super) align: u64,
    pub(super) entsize: u64,
    pub(super) content: Content,
    pub(super) relas: Vec<OutRela>,
}

impl OutSection {
    fn size(&self) -> u64 {
        match &self.content {
            Content::Data(d) => d.len() as u64,
            Content::Bss(n) => *n,
            Content::Group { members, .. } => 4 + 4 * members.len() as u64,
        }
    }
}

/// The signatures of the COMDAT groups of debug info (type units: a
/// `.debug_info` or `.debug_types` member) an object has; `None` when it
/// is not an object this module reads.
pub fn debug_type_groups(object: &[u8]) -> Option<Vec<Vec<u8>>> {
    let input = parse(object)?;
    let mut out = Vec::new();
    for s in input.shdrs.iter().filter(|s| s.sh_type == SHT_GROUP) {
        let (flags, members) = input.group(s)?;
        if flags & GRP_COMDAT == 0 {
            continue;
        }
        let mut debug = false;
        for m in members {
            let member = input.shdrs.get(m)?;
            let name = c_str(input.shstrtab, member.name)?;
            debug |= name == b".debug_info" || name == b".debug_types";
        }
        if debug {
            let sym = input.syms.get(s.info as usize)?;
            out.push(c_str(input.strtab, sym.name)?.to_vec());
        }
    }
    Some(out)
}

/// Turns the (empty) STT_FILE symbol LLVM writes into every object into an
/// untyped local symbol. A fragment may be reused by any unit, so it cannot
/// name a source file; and a second file symbol in the composed object
/// would make tools such as GNU ld give up attributing global symbols to
/// the unit's file. Edits the symbol table in place; an object this module
/// does not read is left as it is.
pub fn unname_file_symbols(object: &mut [u8]) {
    let Some(input) = parse(object) else {
        return;
    };
    let Some(symtab) = input.shdrs.iter().find(|s| s.sh_type == SHT_SYMTAB) else {
        return;
    };
    let files: Vec<usize> = (input.syms.iter().enumerate())
        .filter(|(_, s)| s.info & 0xf == STT_FILE)
        .map(|(i, _)| symtab.offset as usize + i * 24 + 4)
        .collect();
    for at in files {
        object[at] &= 0xf0;
    }
}

/// A string table under construction.
/// One string table for symbol and section names (`.strtab`, as LLVM
/// writes it): each name once, and a name that ends another one (a
/// function's name and its section's, `.text.` and `.rela.text.` before
/// it) held as that one's tail.
struct Strings {
    bytes: Vec<u8>,
    at: HashMap<Vec<u8>, u32>,
}

impl Strings {
    fn of<'n>(names: impl Iterator<Item = &'n [u8]>) -> Self {
        let mut names: Vec<&[u8]> = names.filter(|n| !n.is_empty()).collect();
        // Read backwards, in descending order: every name that ends
        // others comes right after one of them.
        names.sort_unstable_by(|a, b| b.iter().rev().cmp(a.iter().rev()));
        names.dedup();
        let mut bytes = vec![0];
        let mut at = HashMap::with_capacity_and_hasher(names.len(), Default::default());
        let mut previous: Option<(&[u8], u32)> = None;
        for name in names {
            let offset = match previous {
                Some((p, o)) if p.ends_with(name) => o + (p.len() - name.len()) as u32,
                _ => {
                    let o = bytes.len() as u32;
                    bytes.extend_from_slice(name);
                    bytes.push(0);
                    o
                }
            };
            at.insert(name.to_vec(), offset);
            previous = Some((name, offset));
        }
        Strings { bytes, at }
    }

    /// A name's offset; every name was given to `of`.
    fn get(&self, s: &[u8]) -> u32 {
        if s.is_empty() {
            return 0;
        }
        self.at.get(s).copied().unwrap_or(0)
    }
}

#[allow(clippy::too_many_arguments)]
/// Long on purpose: it lays the file out in the order the bytes go (sections,
/// the symbol and string tables, the headers, the ELF header); cut into pieces,
/// each would need the running offset and the index map of all the others.
pub(super) fn write(
    header_from: &[u8],
    machine: u16,
    e_flags: u32,
    sections: &[OutSection],
    locals: &[OutSym],
    globals: &[OutSym],
    localize: &dyn Fn(&OutSym) -> bool,
    addrsig: Option<&[SymRef]>,
) -> Option<Vec<u8>> {
    let SectionIndices {
        index,
        rela_index,
        addrsig_index,
        symtab_index,
        strtab_index,
        shnum,
    } = SectionIndices::of(sections, addrsig.is_some())?;
    let symbols = SymbolOrder::of(locals, globals, localize);
    let rela_names: Vec<Vec<u8>> = (sections.iter())
        .filter(|s| !s.relas.is_empty())
        .map(|s| [&b".rela"[..], &s.name].concat())
        .collect();
    let strtab = Strings::of(
        (symbols.order.iter().map(|s| s.name.as_slice()))
            .chain(sections.iter().map(|s| s.name.as_slice()))
            .chain(rela_names.iter().map(|n| n.as_slice()))
            .chain([&b".llvm_addrsig"[..], b".symtab", b".strtab"]),
    );
    let symtab = symbols.table(&strtab, &index, localize)?;

    let mut out = vec![0u8; 64];
    let mut headers: Vec<SectionHeader> = vec![SectionHeader::default()];
    for (i, s) in sections.iter().enumerate() {
        let (offset, link, info) = match &s.content {
            Content::Data(d) => (place(&mut out, d, s.align), 0, 0),
            Content::Bss(_) => ((out.len() as u64).next_multiple_of(s.align), 0, 0),
            Content::Group {
                flag,
                signature,
                members,
            } => {
                let mut words = flag.to_le_bytes().to_vec();
                for m in members {
                    let k = match m {
                        Member::Section(o) => index[*o],
                        Member::RelaOf(o) => rela_index[*o],
                    };
                    if k == 0 {
                        return None;
                    }
                    words.extend_from_slice(&k.to_le_bytes());
                }
                (
                    place(&mut out, &words, 4),
                    symtab_index,
                    symbols.final_of(*signature),
                )
            }
        };
        headers.push(SectionHeader {
            name: strtab.get(&s.name),
            sh_type: s.sh_type,
            flags: s.flags,
            offset,
            size: s.size(),
            link,
            info,
            align: s.align,
            entsize: s.entsize,
        });
        if !s.relas.is_empty() {
            let table = symbols.relocations(&s.relas);
            let mut rela_name = b".rela".to_vec();
            rela_name.extend_from_slice(&s.name);
            headers.push(SectionHeader {
                name: strtab.get(&rela_name),
                sh_type: SHT_RELA,
                flags: SHF_INFO_LINK | (s.flags & SHF_GROUP),
                offset: place(&mut out, &table, 8),
                size: table.len() as u64,
                link: symtab_index,
                info: index[i],
                align: 8,
                entsize: 24,
            });
        }
    }
    if let (Some(_), Some(addrsig)) = (addrsig_index, addrsig) {
        let bytes = address_significance_table(&symbols, addrsig);
        headers.push(SectionHeader {
            name: strtab.get(b".llvm_addrsig"),
            sh_type: SHT_LLVM_ADDRSIG,
            flags: SHF_EXCLUDE,
            offset: place(&mut out, &bytes, 1),
            size: bytes.len() as u64,
            link: symtab_index,
            info: 0,
            align: 1,
            entsize: 0,
        });
    }
    headers.push(SectionHeader {
        name: strtab.get(b".symtab"),
        sh_type: SHT_SYMTAB,
        flags: 0,
        offset: place(&mut out, &symtab, 8),
        size: symtab.len() as u64,
        link: strtab_index,
        info: symbols.first_global,
        align: 8,
        entsize: 24,
    });
    headers.push(SectionHeader {
        name: strtab.get(b".strtab"),
        sh_type: SHT_STRTAB,
        flags: 0,
        offset: place(&mut out, &strtab.bytes, 1),
        size: strtab.bytes.len() as u64,
        link: 0,
        info: 0,
        align: 1,
        entsize: 0,
    });
    debug_assert_eq!(headers.len() as u32, shnum);

    let shoff = place(&mut out, &[], 8);
    for h in &headers {
        h.write(&mut out);
    }
    out[..16].copy_from_slice(&identification(header_from, sections, locals, globals)?);
    out[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
    out[18..20].copy_from_slice(&machine.to_le_bytes());
    out[20..24].copy_from_slice(&1u32.to_le_bytes());
    out[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    out[0x30..0x34].copy_from_slice(&e_flags.to_le_bytes());
    out[0x34..0x36].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    out[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
    out[0x3c..0x3e].copy_from_slice(&(shnum as u16).to_le_bytes());
    out[0x3e..0x40].copy_from_slice(&(strtab_index as u16).to_le_bytes());
    Some(out)
}

const EI_OSABI: usize = 7;
const ELFOSABI_NONE: u8 = object::elf::ELFOSABI_NONE.0;
const ELFOSABI_GNU: u8 = object::elf::ELFOSABI_GNU.0;

/// The ELF identification: the first input's, with the GNU ABI where a
/// part needs it, as LLVM marks an object that has a retained section
/// (`__attribute__((retain))`), a GNU ifunc or a unique symbol: GNU ld
/// honours SHF_GNU_RETAIN only in such an object, and `--gc-sections`
/// dropped the retained definitions a fragment brought (the first part,
/// the glue, said System V).
fn identification(
    header_from: &[u8],
    sections: &[OutSection],
    locals: &[OutSym],
    globals: &[OutSym],
) -> Option<[u8; 16]> {
    let mut ident: [u8; 16] = header_from.get(..16)?.try_into().ok()?;
    if ident[EI_OSABI] == ELFOSABI_NONE && needs_gnu_abi(sections, locals, globals) {
        ident[EI_OSABI] = ELFOSABI_GNU;
    }
    Some(ident)
}

/// Whether the object uses what only the GNU ABI defines: a section
/// flagged SHF_GNU_RETAIN, an STT_GNU_IFUNC or STB_GNU_UNIQUE symbol.
fn needs_gnu_abi(sections: &[OutSection], locals: &[OutSym], globals: &[OutSym]) -> bool {
    let retain = object::elf::SHF_GNU_RETAIN.0;
    sections.iter().any(|s| s.flags & retain != 0)
        || locals.iter().chain(globals).any(|s| {
            s.info & 0xf == object::elf::STT_GNU_IFUNC.0
                || s.info >> 4 == object::elf::STB_GNU_UNIQUE.0
        })
}

/// The `.llvm_addrsig` table of `addrsig`, in symbol order: which part
/// lists a symbol first depends on which parts were stored by which unit
/// (the glue lists what its declarations' uses make significant, a
/// fragment what its own do), and the object must not (DESIGN.md,
/// invariant 4).
fn address_significance_table(symbols: &SymbolOrder, addrsig: &[SymRef]) -> Vec<u8> {
    let mut finals: Vec<u32> = addrsig.iter().map(|&r| symbols.final_of(r)).collect();
    finals.sort_unstable();
    finals.dedup();
    let mut bytes = Vec::new();
    for f in finals {
        write_uleb(&mut bytes, u64::from(f));
    }
    bytes
}

/// The final section indices: each section, then its relocations; then
/// the address-significance table, the symbol table and the string table.
struct SectionIndices {
    index: Vec<u32>,
    rela_index: Vec<u32>,
    addrsig_index: Option<u32>,
    symtab_index: u32,
    strtab_index: u32,
    /// How many sections, the null one included.
    shnum: u32,
}

impl SectionIndices {
    /// `None`: more sections than the ELF header's fields hold.
    fn of(sections: &[OutSection], with_addrsig: bool) -> Option<SectionIndices> {
        let mut index = vec![0u32; sections.len()];
        let mut rela_index = vec![0u32; sections.len()];
        let mut next = 1u32;
        for (i, s) in sections.iter().enumerate() {
            index[i] = next;
            next += 1;
            if !s.relas.is_empty() {
                rela_index[i] = next;
                next += 1;
            }
        }
        // An object without the table has every symbol address-significant
        // (lld's safe identical code folding folds none of its sections);
        // an empty table, none.
        let addrsig_index = with_addrsig.then(|| {
            next += 1;
            next - 1
        });
        let shnum = next + 2;
        if shnum >= u32::from(SHN_LORESERVE) {
            return None;
        }
        Some(SectionIndices {
            index,
            rela_index,
            addrsig_index,
            symtab_index: next,
            strtab_index: next + 1,
            shnum,
        })
    }
}

/// `bytes` appended to `out` at the next multiple of `align`; where.
fn place(out: &mut Vec<u8>, bytes: &[u8], align: u64) -> u64 {
    let at = (out.len() as u64).next_multiple_of(align.max(1));
    out.resize(at as usize, 0);
    out.extend_from_slice(bytes);
    at
}

/// One ELF64 section header.
#[derive(Default)]
struct SectionHeader {
    name: u32,
    sh_type: u32,
    flags: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

impl SectionHeader {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.name.to_le_bytes());
        out.extend_from_slice(&self.sh_type.to_le_bytes());
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes()); // sh_addr
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.link.to_le_bytes());
        out.extend_from_slice(&self.info.to_le_bytes());
        out.extend_from_slice(&self.align.to_le_bytes());
        out.extend_from_slice(&self.entsize.to_le_bytes());
    }
}

/// The symbol table's order: locals, localized globals, globals.
struct SymbolOrder<'s> {
    order: Vec<&'s OutSym>,
    local_final: Vec<u32>,
    global_final: Vec<u32>,
    /// The index of the first symbol that is not local.
    first_global: u32,
}

impl<'s> SymbolOrder<'s> {
    fn of(
        locals: &'s [OutSym],
        globals: &'s [OutSym],
        localize: &dyn Fn(&OutSym) -> bool,
    ) -> SymbolOrder<'s> {
        let mut order: Vec<&OutSym> = Vec::with_capacity(1 + locals.len() + globals.len());
        let mut local_final = vec![0u32; locals.len()];
        let mut global_final = vec![0u32; globals.len()];
        for (i, s) in locals.iter().enumerate() {
            order.push(s);
            local_final[i] = order.len() as u32;
        }
        for (i, s) in globals.iter().enumerate().filter(|(_, s)| localize(s)) {
            order.push(s);
            global_final[i] = order.len() as u32;
        }
        let first_global = order.len() as u32 + 1;
        for (i, s) in globals.iter().enumerate().filter(|(_, s)| !localize(s)) {
            order.push(s);
            global_final[i] = order.len() as u32;
        }
        SymbolOrder {
            order,
            local_final,
            global_final,
            first_global,
        }
    }

    fn final_of(&self, r: SymRef) -> u32 {
        match r {
            SymRef::Local(i) => self.local_final[i],
            SymRef::Global(i) => self.global_final[i],
        }
    }

    /// `.symtab`'s bytes; `index`: each output section's final index.
    fn table(
        &self,
        strtab: &Strings,
        index: &[u32],
        localize: &dyn Fn(&OutSym) -> bool,
    ) -> Option<Vec<u8>> {
        let mut symtab = vec![0u8; 24];
        for s in &self.order {
            let name = strtab.get(&s.name);
            let info = if localize(s) {
                s.info & 0xf // STB_LOCAL, same type
            } else {
                s.info
            };
            let shndx = match s.section {
                Some(o) => u16::try_from(index[o]).ok()?,
                None => s.special,
            };
            symtab.extend_from_slice(&name.to_le_bytes());
            symtab.push(info);
            symtab.push(s.other);
            symtab.extend_from_slice(&shndx.to_le_bytes());
            symtab.extend_from_slice(&s.value.to_le_bytes());
            symtab.extend_from_slice(&s.size.to_le_bytes());
        }
        Some(symtab)
    }

    /// A RELA table's bytes.
    fn relocations(&self, relas: &[OutRela]) -> Vec<u8> {
        let mut table = Vec::with_capacity(relas.len() * 24);
        for r in relas {
            let sym = r.sym.map_or(0, |s| self.final_of(s));
            table.extend_from_slice(&r.offset.to_le_bytes());
            table.extend_from_slice(&((u64::from(sym) << 32) | u64::from(r.r_type)).to_le_bytes());
            table.extend_from_slice(&r.addend.to_le_bytes());
        }
        table
    }
}
