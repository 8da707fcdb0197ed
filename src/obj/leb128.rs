//! LEB128, the variable-length integers of DWARF and of LLVM's own
//! sections (`.llvm_addrsig`), in one place: read, written as compactly as
//! possible, or padded to the width of a field rewritten in place (which
//! no crate writes: the bytes around the field must not move).
//!
//! The readers are not gimli's: gimli refuses a ten-byte value whose last
//! byte carries bits past 64, and such bytes are met in clang's objects
//! (placing the debug lines of csmith seed 8910074's `main`: refused, the
//! unit went to clang and its `-g` code moved). Here the bits past 64 are
//! dropped and the length is right, as LLVM's own `decodeULEB128` reads
//! them.

/// An unsigned LEB128 at the start of `b`: the value and the bytes it took.
pub(super) fn read_uleb(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// A signed LEB128 at the start of `b`: the value and the bytes it took.
pub(super) fn read_sleb(b: &[u8]) -> Option<(i64, usize)> {
    let mut v = 0i64;
    let mut shift = 0;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= i64::from(byte & 0x7f) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            if shift < 64 && byte & 0x40 != 0 {
                v |= -1i64 << shift;
            }
            return Some((v, i + 1));
        }
    }
    None
}

/// Appends `v` as an unsigned LEB128 of as few bytes as it takes. (gimli's
/// writer needs its `write` feature and its dependencies for these lines.)
pub(super) fn write_uleb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

/// `value` as an unsigned LEB128 of exactly `size` bytes (continuation bits
/// on all but the last), for a field rewritten in place; the caller knows
/// it fits (a smaller value than the field held).
pub(super) fn uleb_padded(value: u64, size: usize) -> Vec<u8> {
    let mut field = vec![0u8; size];
    let mut rest = value;
    for (k, byte) in field.iter_mut().enumerate() {
        *byte = (rest & 0x7f) as u8 | if k + 1 < size { 0x80 } else { 0 };
        rest >>= 7;
    }
    field
}

/// `v` as a signed LEB128 of exactly `out.len()` bytes (continuation bits
/// on all but the last); `None` if it does not fit.
pub(super) fn write_sleb_padded(out: &mut [u8], v: i64) -> Option<()> {
    let bits = 7 * out.len() as u32;
    if bits < 64 {
        let limit = 1i64 << (bits - 1);
        if v < -limit || v >= limit {
            return None;
        }
    }
    let last = out.len().checked_sub(1)?;
    let mut rest = v;
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = (rest & 0x7f) as u8 | if i < last { 0x80 } else { 0 };
        rest >>= 7;
    }
    Some(())
}

/// Appends `v` as the shortest SLEB128.
pub(super) fn write_sleb(out: &mut Vec<u8>, mut v: i64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
        if done {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ten-byte value with bits past 64 (met where an operand is only
    /// skipped): its length is read, its high bits dropped.
    #[test]
    fn overlong_values_keep_their_length() {
        let b = [162, 230, 161, 217, 136, 222, 151, 186, 136, 127, 143];
        assert_eq!(read_uleb(&b), Some((9832588273676481314, 10)));
        assert_eq!(read_sleb(&b).map(|(_, n)| n), Some(10));
    }

    #[test]
    fn leb128_values_read_back() {
        for (bytes, value) in [
            (&[0x02][..], 2i64),
            (&[0x7e], -2),
            (&[0xff, 0x00], 127),
            (&[0x81, 0x7f], -127),
            (&[0x80, 0x01], 128),
            (&[0x80, 0x7f], -128),
        ] {
            assert_eq!(read_sleb(bytes), Some((value, bytes.len())), "{bytes:?}");
        }
        assert_eq!(read_sleb(&[0x80, 0x80]), None, "runs past the end");
        // A value written into a wider field reads back, in that width.
        for (value, size) in [(0u64, 1), (5, 3), (300, 2), (300, 4), (1 << 20, 4)] {
            let field = uleb_padded(value, size);
            assert_eq!(field.len(), size);
            assert_eq!(read_uleb(&field), Some((value, size)), "{value} in {size}");
        }
    }
}
