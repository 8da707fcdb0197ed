//! DWARF reading shared by the composer's debug-info passes (`debug_lines`,
//! the string pass of `combine`, `debug_units`, `debug_widen`): unit
//! headers, abbreviations, the sizes of attribute forms, the operands of
//! expressions that name an index or a DIE, and a walk over every attribute of every DIE
//! of a `.debug_info` (or DWARF 4 `.debug_types`) section of a relocatable
//! object, with the relocations that hold a value in such an object
//! resolved on request.
//!
//! Only 32-bit DWARF, versions 2 to 5, as LLVM writes it; anything else
//! (DWARF64, a form not listed, a unit type not listed) is `None` and the
//! caller leaves the object as it is.
//!
//! Constants come from gimli (LEB128 from `leb128`); the walk is written here
//! because its callers patch fields in place and need what gimli's reader
//! does not hand out: the byte offset and encoded width of every attribute
//! value and abbreviation entry, and DIEs visited without building a tree.

use super::elf::{c_str, slice, u16_at, u32_at, Input, SHT_RELA};
use super::leb128::{read_sleb, read_uleb, uleb_padded};

pub(super) const DW_FORM_INDIRECT: u64 = form::INDIRECT;
pub(super) const DW_FORM_IMPLICIT_CONST: u64 = form::IMPLICIT_CONST;

/// The attribute forms, from gimli's constants, as the `u64` values the
/// abbreviation tables are read into (match patterns need constants).
pub(super) mod form {
    pub const ADDR: u64 = gimli::DW_FORM_addr.0 as u64;
    pub const BLOCK2: u64 = gimli::DW_FORM_block2.0 as u64;
    pub const BLOCK4: u64 = gimli::DW_FORM_block4.0 as u64;
    pub const DATA2: u64 = gimli::DW_FORM_data2.0 as u64;
    pub const DATA4: u64 = gimli::DW_FORM_data4.0 as u64;
    pub const DATA8: u64 = gimli::DW_FORM_data8.0 as u64;
    pub const STRING: u64 = gimli::DW_FORM_string.0 as u64;
    pub const BLOCK: u64 = gimli::DW_FORM_block.0 as u64;
    pub const BLOCK1: u64 = gimli::DW_FORM_block1.0 as u64;
    pub const DATA1: u64 = gimli::DW_FORM_data1.0 as u64;
    pub const FLAG: u64 = gimli::DW_FORM_flag.0 as u64;
    pub const SDATA: u64 = gimli::DW_FORM_sdata.0 as u64;
    pub const STRP: u64 = gimli::DW_FORM_strp.0 as u64;
    pub const UDATA: u64 = gimli::DW_FORM_udata.0 as u64;
    pub const REF_ADDR: u64 = gimli::DW_FORM_ref_addr.0 as u64;
    pub const REF1: u64 = gimli::DW_FORM_ref1.0 as u64;
    pub const REF2: u64 = gimli::DW_FORM_ref2.0 as u64;
    pub const REF4: u64 = gimli::DW_FORM_ref4.0 as u64;
    pub const REF8: u64 = gimli::DW_FORM_ref8.0 as u64;
    pub const REF_UDATA: u64 = gimli::DW_FORM_ref_udata.0 as u64;
    pub const INDIRECT: u64 = gimli::DW_FORM_indirect.0 as u64;
    pub const SEC_OFFSET: u64 = gimli::DW_FORM_sec_offset.0 as u64;
    pub const EXPRLOC: u64 = gimli::DW_FORM_exprloc.0 as u64;
    pub const FLAG_PRESENT: u64 = gimli::DW_FORM_flag_present.0 as u64;
    pub const STRX: u64 = gimli::DW_FORM_strx.0 as u64;
    pub const ADDRX: u64 = gimli::DW_FORM_addrx.0 as u64;
    pub const REF_SUP4: u64 = gimli::DW_FORM_ref_sup4.0 as u64;
    pub const STRP_SUP: u64 = gimli::DW_FORM_strp_sup.0 as u64;
    pub const DATA16: u64 = gimli::DW_FORM_data16.0 as u64;
    pub const LINE_STRP: u64 = gimli::DW_FORM_line_strp.0 as u64;
    pub const REF_SIG8: u64 = gimli::DW_FORM_ref_sig8.0 as u64;
    pub const IMPLICIT_CONST: u64 = gimli::DW_FORM_implicit_const.0 as u64;
    pub const LOCLISTX: u64 = gimli::DW_FORM_loclistx.0 as u64;
    pub const RNGLISTX: u64 = gimli::DW_FORM_rnglistx.0 as u64;
    pub const REF_SUP8: u64 = gimli::DW_FORM_ref_sup8.0 as u64;
    pub const STRX1: u64 = gimli::DW_FORM_strx1.0 as u64;
    pub const STRX2: u64 = gimli::DW_FORM_strx2.0 as u64;
    pub const STRX3: u64 = gimli::DW_FORM_strx3.0 as u64;
    pub const STRX4: u64 = gimli::DW_FORM_strx4.0 as u64;
    pub const ADDRX1: u64 = gimli::DW_FORM_addrx1.0 as u64;
    pub const ADDRX2: u64 = gimli::DW_FORM_addrx2.0 as u64;
    pub const ADDRX3: u64 = gimli::DW_FORM_addrx3.0 as u64;
    pub const ADDRX4: u64 = gimli::DW_FORM_addrx4.0 as u64;

    /// The forms whose value is an unsigned LEB128.
    pub fn is_uleb(form: u64) -> bool {
        matches!(form, UDATA | REF_UDATA | STRX | ADDRX | LOCLISTX | RNGLISTX)
    }
}

/// One abbreviation: its code, its tag and its attributes (name, form,
/// and the value of a `DW_FORM_implicit_const`).
pub(super) struct Abbrev {
    pub(super) code: u64,
    pub(super) tag: u64,
    /// DW_CHILDREN_yes.
    pub(super) children: bool,
    pub(super) attributes: Vec<(u64, u64, i64)>,
}

/// The abbreviation table at the start of `b`.
pub(super) fn read_abbrevs(mut b: &[u8]) -> Option<Vec<Abbrev>> {
    let mut out = Vec::new();
    loop {
        let (code, used) = read_uleb(b)?;
        b = b.get(used..)?;
        if code == 0 {
            return Some(out);
        }
        let (tag, used) = read_uleb(b)?;
        let children = *b.get(used)? == 1;
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
            let mut implicit = 0;
            if form == DW_FORM_IMPLICIT_CONST {
                let (value, used) = read_sleb(b)?;
                b = b.get(used..)?;
                implicit = value;
            }
            attributes.push((name, form, implicit));
        }
        out.push(Abbrev {
            code,
            tag,
            children,
            attributes,
        });
    }
}

/// Abbreviation declarations: each code with the range of its bytes.
pub(super) type Declarations = Vec<(u64, std::ops::Range<usize>)>;

/// The declarations of the abbreviation table at the start of `b`, and
/// where the table ends (after its terminating zero).
pub(super) fn abbrev_declarations(b: &[u8]) -> Option<(Declarations, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let start = at;
        let (code, used) = read_uleb(b.get(at..)?)?;
        at += used;
        if code == 0 {
            return Some((out, at));
        }
        at += read_uleb(b.get(at..)?)?.1 + 1; // the tag, DW_CHILDREN_*
        loop {
            let (name, used) = read_uleb(b.get(at..)?)?;
            at += used;
            let (form, used) = read_uleb(b.get(at..)?)?;
            at += used;
            if form == DW_FORM_IMPLICIT_CONST {
                at += read_sleb(b.get(at..)?)?.1;
            }
            if name == 0 && form == 0 {
                break;
            }
        }
        out.push((code, start..at));
    }
}

/// The size of an attribute value of `form` at the start of `b` (DWARF32).
pub(super) fn form_size(form: u64, b: &[u8], address_size: usize, version: u16) -> Option<usize> {
    let leb = |b: &[u8]| read_uleb(b).map(|(_, n)| n);
    let block =
        |b: &[u8]| read_uleb(b).and_then(|(len, n)| n.checked_add(usize::try_from(len).ok()?));
    use form::*;
    Some(match form {
        ADDR => address_size,
        BLOCK2 => 2 + u16_at(b, 0)? as usize,
        BLOCK4 => 4 + u32_at(b, 0)? as usize,
        DATA2 | REF2 | STRX2 | ADDRX2 => 2,
        DATA4 | STRP | REF4 | SEC_OFFSET | REF_SUP4 | STRP_SUP | LINE_STRP => 4,
        DATA8 | REF8 | REF_SIG8 | REF_SUP8 => 8,
        STRING => b.iter().position(|&c| c == 0)? + 1,
        BLOCK | EXPRLOC => block(b)?,
        BLOCK1 => 1 + *b.first()? as usize,
        DATA1 | FLAG | REF1 | STRX1 | ADDRX1 => 1,
        SDATA | UDATA | REF_UDATA | STRX | ADDRX | LOCLISTX | RNGLISTX => leb(b)?,
        REF_ADDR if version <= 2 => address_size,
        REF_ADDR => 4,
        STRX3 | ADDRX3 => 3,
        STRX4 | ADDRX4 => 4,
        FLAG_PRESENT | IMPLICIT_CONST => 0,
        DATA16 => 16,
        _ => return None,
    })
}

/// The unit (of `.debug_info` or `.debug_line`) whose header is at `unit`:
/// where it ends, and its version. `None` for DWARF64 or a unit that runs
/// past the section.
pub(super) fn unit_extent(section: &[u8], unit: usize) -> Option<(usize, u16)> {
    let length = u32_at(section, unit as u64)?;
    if length >= 0xffff_fff0 {
        return None; // DWARF64 or reserved
    }
    let end = unit.checked_add(4)?.checked_add(length as usize)?;
    if end > section.len() {
        return None;
    }
    Some((end, u16_at(section, unit as u64 + 4)?))
}

/// The unsigned value of an attribute of `form` at the start of `b`, for
/// the constant, index and offset forms (`None` for the others).
pub(super) fn form_value(form: u64, b: &[u8]) -> Option<u64> {
    let bytes = |n: usize| -> Option<u64> {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b.get(..n)?);
        Some(u64::from_le_bytes(v))
    };
    use form::*;
    match form {
        DATA1 | REF1 | STRX1 | ADDRX1 => bytes(1),
        DATA2 | REF2 | STRX2 | ADDRX2 => bytes(2),
        STRX3 | ADDRX3 => bytes(3),
        DATA4 | STRP | REF4 | SEC_OFFSET | LINE_STRP | STRX4 | ADDRX4 => bytes(4),
        DATA8 | REF8 => bytes(8),
        f if form::is_uleb(f) => read_uleb(b).map(|(v, _)| v),
        _ => None,
    }
}

/// One attribute met by `walk_units`.
pub(super) struct Attribute {
    /// The offset of its unit's header in the section.
    pub unit: usize,
    pub name: u64,
    pub form: u64,
    /// Where its value is in the section, and its size.
    pub at: usize,
    pub size: usize,
    /// The value of a `DW_FORM_implicit_const`.
    pub implicit: i64,
}

/// Where a unit's abbreviations are, given the offset of its header's
/// abbreviation-offset field: (section index, offset in it).
pub(super) type AbbrevAt<'a> = dyn Fn(u64) -> Option<(usize, u64)> + 'a;
/// The bytes of an abbreviation section from an offset on.
pub(super) type AbbrevBytes<'a, 'b> = dyn Fn(usize, u64) -> Option<&'b [u8]> + 'a;

/// One DIE met by `walk_units`, before its attributes.
pub(super) struct Die {
    /// Its abbreviation code, and where that is in the section (offset,
    /// ULEB128 length).
    pub code: u64,
    pub at: usize,
    pub size: usize,
    /// Where its unit's abbreviations are (section index, offset).
    pub abbrevs: (usize, u64),
}

/// Calls `die` for every DIE of every unit in `section` (a `.debug_info`,
/// or with `types` a DWARF 4 `.debug_types`), then `visit` for each of its
/// attributes.
pub(super) fn walk_units(
    section: &[u8],
    types: bool,
    abbrev_at: &AbbrevAt,
    abbrevs: &AbbrevBytes,
    visit: &mut dyn FnMut(&Attribute) -> Option<()>,
    die: &mut dyn FnMut(&Die) -> Option<()>,
) -> Option<()> {
    let mut unit = 0usize;
    while unit < section.len() {
        let (end, version) = unit_extent(section, unit)?;
        let (field, address_size, mut at) = match version {
            5 => {
                let extra = match *section.get(unit + 6)? {
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
            let code_at = at;
            at += used;
            if code == 0 {
                continue;
            }
            let abbrev = table.iter().find(|a| a.code == code)?;
            die(&Die {
                code,
                at: code_at,
                size: used,
                abbrevs: (abbrev_section, abbrev_offset),
            })?;
            for &(name, declared, implicit) in &abbrev.attributes {
                let mut form = declared;
                while form == DW_FORM_INDIRECT {
                    let (f, used) = read_uleb(section.get(at..end)?)?;
                    at += used;
                    form = f;
                }
                let size = form_size(form, section.get(at..end)?, address_size, version)?;
                visit(&Attribute {
                    unit,
                    name,
                    form,
                    at,
                    size,
                    implicit,
                })?;
                at += size;
            }
        }
        if at != end {
            return None;
        }
        unit = end;
    }
    Some(())
}

/// The debug sections of one relocatable object, for `walk_units`.
pub(super) struct ObjectDwarf<'o> {
    input: &'o Input<'o>,
    abbrev_sections: Vec<usize>,
}

impl<'o> ObjectDwarf<'o> {
    pub(super) fn new(input: &'o Input<'o>) -> Self {
        let abbrev_sections = (0..input.shdrs.len())
            .filter(|&i| c_str(input.shstrtab, input.shdrs[i].name) == Some(b".debug_abbrev"))
            .collect();
        ObjectDwarf {
            input,
            abbrev_sections,
        }
    }

    /// The value a relocation at `offset` of section `section` gives a
    /// field: (the section its symbol is in, symbol value + addend).
    /// `Some(None)`: no relocation there.
    pub(super) fn relocated(&self, section: usize, offset: u64) -> Option<Option<(usize, u64)>> {
        let input = self.input;
        let Some(r) = input
            .shdrs
            .iter()
            .find(|r| r.sh_type == SHT_RELA && r.info as usize == section)
        else {
            return Some(None);
        };
        for e in input.relas(r)? {
            if e.offset != offset {
                continue;
            }
            let sym = input.syms.get(e.sym)?;
            let at = e.addend.checked_add(sym.value as i64)?;
            return Some(Some((sym.shndx as usize, u64::try_from(at).ok()?)));
        }
        Some(None)
    }

    /// Walks the units of section `index` (see `walk_units`).
    pub(super) fn walk(
        &self,
        index: usize,
        visit: &mut dyn FnMut(&Attribute) -> Option<()>,
        die: &mut dyn FnMut(&Die) -> Option<()>,
    ) -> Option<()> {
        let input = self.input;
        let h = input.shdrs.get(index)?;
        let section = slice(input.data, h.offset, h.size)?;
        let types = c_str(input.shstrtab, h.name)? == b".debug_types";
        let abbrev_at = |field: u64| -> Option<(usize, u64)> {
            match self.relocated(index, field)? {
                Some((s, at)) if self.abbrev_sections.contains(&s) => Some((s, at)),
                Some(_) => None,
                None => Some((
                    *self.abbrev_sections.first()?,
                    u64::from(u32_at(section, field)?),
                )),
            }
        };
        let abbrevs = |s: usize, at: u64| -> Option<&[u8]> {
            let h = input.shdrs.get(s)?;
            slice(input.data, h.offset, h.size)?.get(usize::try_from(at).ok()?..)
        };
        walk_units(section, types, &abbrev_at, &abbrevs, visit, die)
    }
}

/// Whether `v` fits a field of `size` bytes (a ULEB128 of that length, or
/// a little-endian number).
pub(super) fn fits(v: u64, size: usize, uleb: bool) -> bool {
    let bits = if uleb { 7 * size } else { 8 * size };
    bits >= 64 || v < (1u64 << bits)
}

/// Writes `v` over the whole of `field`, in place: a ULEB128 padded to its
/// length, or a little-endian number; `None` if it does not fit.
pub(super) fn write_field(field: &mut [u8], uleb: bool, v: u64) -> Option<()> {
    let size = field.len();
    if !fits(v, size, uleb) {
        return None;
    }
    if uleb {
        field.copy_from_slice(&uleb_padded(v, size));
    } else {
        field.copy_from_slice(&v.to_le_bytes()[..size]);
    }
    Some(())
}

/// What one entry of a DWARF 5 location list (or, with `ranges`, range
/// list) holds after its kind byte, in order.
pub(super) struct ListEntry {
    /// ULEB128 address indices, then other ULEB128s (offsets, lengths).
    pub indices: usize,
    pub others: usize,
    /// Bytes of addresses.
    pub fixed: usize,
    /// A counted location expression.
    pub location: bool,
}

/// The shape of a list entry of kind `entry`; `None` for a kind not
/// listed (a vendor's).
pub(super) fn list_entry(ranges: bool, entry: u8) -> Option<ListEntry> {
    let location = !ranges;
    let (indices, others, fixed, location) = match (ranges, entry) {
        (_, 0) => (0, 0, 0, false),                     // end_of_list
        (_, 1) => (1, 0, 0, false),                     // base_addressx
        (_, 2) => (2, 0, 0, location),                  // startx_endx
        (_, 3) => (1, 1, 0, location),                  // startx_length
        (_, 4) => (0, 2, 0, location),                  // offset_pair
        (false, 5) => (0, 0, 0, true),                  // default_location
        (false, 6) | (true, 5) => (0, 0, 8, false),     // base_address
        (false, 7) | (true, 6) => (0, 0, 16, location), // start_end
        (false, 8) | (true, 7) => (0, 1, 8, location),  // start_length
        _ => return None,
    };
    Some(ListEntry {
        indices,
        others,
        fixed,
        location,
    })
}

/// A ULEB128 operand of a DWARF expression: where it is in its section,
/// its length and its value.
#[derive(Clone, Copy)]
pub(super) struct Operand {
    pub at: usize,
    pub size: usize,
    pub value: u64,
}

/// The operands of a DWARF expression that the composer moves.
#[derive(Default)]
pub(super) struct Operands {
    /// Address indices (`DW_OP_addrx`, `DW_OP_constx`).
    pub indices: Vec<Operand>,
    /// The base types typed operations name (`DW_OP_convert` and the
    /// like, GNU's too): offsets in the unit (LLVM pads them to four
    /// bytes).
    pub types: Vec<Operand>,
}

/// What follows one operation of a DWARF expression: the one table of
/// operations the composer (`expression_operands`) and the carver
/// (`debug_carve::rewrite_expression`) both walk.
pub(super) enum Operation {
    /// Operands of this many bytes, nothing in them to move.
    Bytes(usize),
    /// An address (`DW_OP_addr`): 8 bytes with a relocation.
    Address,
    /// An address index (`DW_OP_addrx`, `DW_OP_constx`), a ULEB128.
    Index,
    /// A sub-expression (`DW_OP_entry_value`, GNU's too): its length, a
    /// ULEB128, then that many bytes.
    Nested,
    /// `before` bytes, a base type (an offset in the unit, a ULEB128), and
    /// when `sized` a length byte and that many bytes (`DW_OP_convert`,
    /// `DW_OP_regval_type`, `DW_OP_deref_type`, `DW_OP_const_type`, GNU's
    /// too).
    Typed { before: usize, sized: bool },
}

/// The operation `op` whose operands start at `p` of `e`; `None` for one
/// not listed (one naming a DIE another way: `DW_OP_call*`, an implicit
/// pointer).
pub(super) fn operation(e: &[u8], p: usize, op: u8) -> Option<Operation> {
    let leb = |p: usize| read_uleb(e.get(p..)?).map(|(_, n)| n);
    Some(Operation::Bytes(match op {
        0x03 => return Some(Operation::Address),
        0xa1 | 0xa2 => return Some(Operation::Index),
        0xa3 | 0xf3 => return Some(Operation::Nested),
        // convert, reinterpret
        0xa8 | 0xa9 | 0xf7 | 0xf9 => {
            return Some(Operation::Typed {
                before: 0,
                sized: false,
            })
        }
        // regval_type: a register, a base type
        0xa5 | 0xf5 => {
            return Some(Operation::Typed {
                before: leb(p)?,
                sized: false,
            })
        }
        // deref_type: a size, a base type
        0xa6 | 0xf6 => {
            return Some(Operation::Typed {
                before: 1,
                sized: false,
            })
        }
        // const_type: a base type, a length, that many bytes
        0xa4 | 0xf4 => {
            return Some(Operation::Typed {
                before: 0,
                sized: true,
            })
        }
        0x06 | 0x12..=0x14 | 0x16..=0x22 | 0x24..=0x27 | 0x29..=0x2e => 0, // stack, arithmetic
        0x30..=0x6f => 0,                                                  // lit, reg
        0x96 | 0x97 | 0x9b | 0x9c | 0x9f | 0xe0 => 0, // nop, push_object_address, form_tls_address, call_frame_cfa, stack_value, GNU_push_tls_address
        0x08 | 0x09 | 0x15 | 0x94 | 0x95 => 1,        // const1, pick, deref_size, xderef_size
        0x0a | 0x0b | 0x28 | 0x2f => 2,               // const2, bra, skip
        0x0c | 0x0d => 4,                             // const4
        0x0e | 0x0f => 8,                             // const8
        0x10 | 0x11 | 0x23 | 0x70..=0x8f | 0x90 | 0x91 | 0x93 => leb(p)?, // constu, consts, plus_uconst, breg, regx, fbreg, piece
        0x92 | 0x9d => {
            // bregx, bit_piece: two LEB128s
            let first = leb(p)?;
            first + leb(p + first)?
        }
        0x9e => {
            // implicit_value: a length, then that many bytes
            let (len, used) = read_uleb(e.get(p..)?)?;
            used.checked_add(usize::try_from(len).ok()?)?
        }
        _ => return None,
    }))
}

/// The address indices and base types of the DWARF expression `e` (at
/// `at` in its section); `None` when it has an operation not listed in
/// `operation`.
pub(super) fn expression_operands(e: &[u8], at: usize) -> Option<Operands> {
    let mut found = Operands::default();
    let mut p = 0;
    while p < e.len() {
        let op = e[p];
        p += 1;
        let uleb_at = |p: usize| -> Option<Operand> {
            let (value, used) = read_uleb(e.get(p..)?)?;
            Some(Operand {
                at: at + p,
                size: used,
                value,
            })
        };
        let operands = match operation(e, p, op)? {
            Operation::Bytes(n) => n,
            Operation::Address => 8,
            Operation::Index => {
                let index = uleb_at(p)?;
                found.indices.push(index);
                index.size
            }
            Operation::Nested => {
                let (len, used) = read_uleb(e.get(p..)?)?;
                let len = usize::try_from(len).ok()?;
                let inner = e.get(p + used..(p + used).checked_add(len)?)?;
                let inner = expression_operands(inner, at + p + used)?;
                found.indices.extend(inner.indices);
                found.types.extend(inner.types);
                used + len
            }
            Operation::Typed { before, sized } => {
                let base = uleb_at(p + before)?;
                found.types.push(base);
                let n = before + base.size;
                if sized {
                    n + 1 + *e.get(p + n)? as usize
                } else {
                    n
                }
            }
        };
        p = p.checked_add(operands).filter(|&p| p <= e.len())?;
    }
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::obj::combine::tests::compile;
    use crate::obj::elf::parse;

    #[test]
    fn abbreviations_forms_and_unit_extents() {
        // code 1: DW_TAG_compile_unit, children, DW_AT_name/strp,
        // DW_AT_language/implicit_const 12; code 2: DW_TAG_base_type, none.
        let table = [
            1, 0x11, 1, 0x03, 0x0e, 0x13, 0x21, 12, 0, 0, //
            2, 0x24, 0, 0x0b, 0x0b, 0, 0, //
            0,
        ];
        let abbrevs = read_abbrevs(&table).unwrap();
        assert_eq!(abbrevs.len(), 2);
        assert!(abbrevs[0].children && !abbrevs[1].children);
        assert_eq!(
            abbrevs[0].attributes,
            vec![(0x03, 0x0e, 0), (0x13, 0x21, 12)]
        );
        assert!(
            read_abbrevs(&table[..table.len() - 1]).is_none(),
            "unterminated"
        );
        assert_eq!(form_size(0x08, b"abc\0rest", 8, 5), Some(4), "string");
        assert_eq!(form_size(0x0a, &[3, 1, 2, 3], 8, 5), Some(4), "block1");
        assert_eq!(form_size(0x10, &[], 8, 2), Some(8), "DWARF 2 ref_addr");
        assert_eq!(form_size(0x10, &[], 8, 4), Some(4), "ref_addr");
        assert_eq!(form_size(0x01, &[], 4, 4), Some(4), "addr");
        assert_eq!(form_size(0x99, &[], 8, 5), None, "unknown form");
        assert_eq!(form_value(0x0f, &[0x80, 0x01]), Some(128), "udata");
        assert_eq!(form_value(0x05, &[0x34, 0x12]), Some(0x1234), "data2");
        assert_eq!(form_value(0x08, b"x\0"), None, "not a number");
        let mut section = vec![8, 0, 0, 0, 5, 0, 1, 8, 0, 0, 0, 0];
        assert_eq!(unit_extent(&section, 0), Some((12, 5)));
        section[0] = 9;
        assert_eq!(unit_extent(&section, 0), None, "past the section");
        assert_eq!(
            unit_extent(&[0xff, 0xff, 0xff, 0xff, 0, 0], 0),
            None,
            "DWARF64"
        );
    }

    /// Walking clang's `.debug_info` meets every function's DIE and name,
    /// and ends exactly at each unit's end.
    #[test]
    fn walks_clangs_debug_info() {
        let dir = tempfile::tempdir().unwrap();
        let source = "struct point { int x, y; };\n\
                      static int twice(struct point p) { return 2 * (p.x + p.y); }\n\
                      int area(struct point p) { return p.x * p.y + twice(p); }\n";
        for version in ["-gdwarf-4", "-gdwarf-5"] {
            let object = compile(dir.path(), "w.c", source, &["-O1", version]);
            let input = parse(&object).unwrap();
            let info = (0..input.shdrs.len())
                .find(|&i| c_str(input.shstrtab, input.shdrs[i].name) == Some(b".debug_info"))
                .unwrap();
            let dwarf = ObjectDwarf::new(&input);
            let (mut dies, mut names, mut units) = (0, 0, std::collections::HashSet::new());
            dwarf
                .walk(
                    info,
                    &mut |a| {
                        names += usize::from(a.name == 0x03);
                        units.insert(a.unit);
                        Some(())
                    },
                    &mut |_| {
                        dies += 1;
                        Some(())
                    },
                )
                .unwrap_or_else(|| panic!("{version}: the walk declined"));
            assert_eq!(units.len(), 1, "{version}");
            // The unit, two subprograms, their parameters, the struct, its
            // members, int: each has a name.
            assert!(names >= 8, "{version}: {names} names");
            assert!(dies > names, "{version}: {dies} DIEs");
        }
    }
}
