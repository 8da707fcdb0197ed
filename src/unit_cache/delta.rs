//! A result's object stored as its difference from an earlier result of
//! the same unit: zstd with the earlier object as a reference prefix (what
//! `zstd --patch-from` does). An edit changes a few of a unit's functions,
//! so the new object shares almost every byte with the previous one; stored
//! whole, sqlite3.c's result at `-O2 -g` added 2.4 MB (13% of its cold
//! repository) per one-function edit, as a delta 31 KB.
//!
//! A delta names its base by result key and by the digest of the base's
//! object, and a base is always a whole object (no chains): a delta whose
//! base is gone or is not that object any more is a miss, never a wrong
//! object.

use crate::repo::storage::FragmentDigest;

/// A delta payload starts with it (a whole one with zstd's magic, or an
/// object stored before compression with ELF's).
const DELTA_MAGIC: [u8; 4] = *b"RPDZ";
/// The magic, the base's result key, the digest of the base's object.
const HEADER_LEN: usize = 4 + 32 + 32;
/// The largest window zstd decoders accept without being told: a base and
/// a new object larger than this together are stored whole.
const MAX_WINDOW_LOG: u32 = 27;

/// Whether a result's payload is a delta.
pub fn is_delta(payload: &[u8]) -> bool {
    payload.starts_with(&DELTA_MAGIC)
}

/// The result key of the base a delta payload names.
pub fn base_key(payload: &[u8]) -> Option<FragmentDigest> {
    if !is_delta(payload) {
        return None;
    }
    Some(FragmentDigest(payload.get(4..36)?.try_into().ok()?))
}

/// `object` as a delta from `base` (the object of the result `base_key`),
/// compressed at `level`; `None` when the two are too large for one window
/// or zstd fails.
pub fn encode(
    object: &[u8],
    base_key: &FragmentDigest,
    base: &[u8],
    level: i32,
) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{CCtx, CParameter};
    let window_log = (base.len() + object.len())
        .max(1 << 10)
        .next_power_of_two()
        .trailing_zeros();
    if window_log > MAX_WINDOW_LOG {
        return None;
    }
    let mut out = Vec::with_capacity(HEADER_LEN + zstd::zstd_safe::compress_bound(object.len()));
    out.extend_from_slice(&DELTA_MAGIC);
    out.extend_from_slice(&base_key.0);
    out.extend_from_slice(blake3::hash(base).as_bytes());
    let mut frame = Vec::with_capacity(zstd::zstd_safe::compress_bound(object.len()));
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(level))
        .ok()?;
    cctx.set_parameter(CParameter::WindowLog(window_log)).ok()?;
    // The base's matches are megabytes back: the fast levels' hash tables
    // alone would not find them.
    cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
        .ok()?;
    cctx.ref_prefix(base).ok()?;
    cctx.compress2(&mut frame, object).ok()?;
    out.extend_from_slice(&frame);
    Some(out)
}

/// The object a delta payload holds, given its base's object; `None` when
/// `base` is not the object the delta was made from, or the frame is
/// damaged or would exceed `limit` bytes.
pub fn decode(payload: &[u8], base: &[u8], limit: u64) -> Option<Vec<u8>> {
    use zstd::zstd_safe::{DCtx, DParameter};
    if !is_delta(payload) || payload.get(36..HEADER_LEN)? != blake3::hash(base).as_bytes() {
        return None;
    }
    let frame = &payload[HEADER_LEN..];
    let size = match zstd::zstd_safe::get_frame_content_size(frame) {
        Ok(Some(n)) if n <= limit => usize::try_from(n).ok()?,
        _ => return None,
    };
    let mut out = Vec::with_capacity(size);
    let mut dctx = DCtx::create();
    dctx.set_parameter(DParameter::WindowLogMax(MAX_WINDOW_LOG))
        .ok()?;
    dctx.ref_prefix(base).ok()?;
    dctx.decompress(&mut out, frame).ok()?;
    (out.len() == size).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An "object" of `n` pseudo-random bytes (incompressible alone).
    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn an_edit_costs_its_difference_and_needs_its_base() {
        let base = noise(3 << 20, 7);
        // A few bytes changed, a few inserted (everything after moves).
        let mut edited = base.clone();
        edited[1000..1010].copy_from_slice(b"edited!!!!");
        edited.splice(2_000_000..2_000_000, b"inserted bytes".iter().copied());
        let key = FragmentDigest([3; 32]);
        let delta = encode(&edited, &key, &base, 1).unwrap();
        assert!(delta.len() < 4096, "{} bytes", delta.len());
        assert!(is_delta(&delta));
        assert_eq!(base_key(&delta), Some(key));
        assert_eq!(decode(&delta, &base, 64 << 20).unwrap(), edited);
        // Another base (or a changed one) gives nothing, not garbage.
        let mut other = base.clone();
        other[5] ^= 1;
        assert!(decode(&delta, &other, 64 << 20).is_none());
        // Bounded, and a damaged frame is refused.
        assert!(decode(&delta, &base, 1 << 20).is_none());
        let mut damaged = delta.clone();
        damaged.truncate(delta.len() - 1);
        assert!(decode(&damaged, &base, 64 << 20).is_none());
        assert!(!is_delta(&zstd::bulk::compress(&edited, 1).unwrap()));
        assert_eq!(base_key(b"\x7fELF"), None);
    }
}
