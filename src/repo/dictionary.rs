//! A pack's dictionary: the unit's whole object, which its fragment
//! blocks are compressed against.
//!
//! A unit whose result is kept whole (more than 512 parts, or debug
//! fragments; see `unit_cache::recipe`) stores its code twice in one
//! pack: once in the object a unit cache hit writes, once cut into the
//! fragments an edit composes again. The fragments' code, data and symbol
//! names are the object's bytes, so the blocks of the unit's own
//! fragments ([`EntryKind::UnitObject`]) are compressed with the object as
//! a raw-content zstd dictionary: sqlite3.c's fragments at `-O2` took 1.12
//! MB, and take 0.53 MB (docs/performance.md). Fragments other units read
//! (inline functions, template instances, constants) are not: a unit cache
//! hit composing them would have to decompress this unit's object first.
//!
//! Which entry serves, and how it is found again, stays inside the pack:
//! the dictionary is the payload of the entry alone in the pack's first
//! block, a [`EntryKind::UnitResult`] whose payload is one zstd frame (a
//! whole object as the unit cache stores it), decompressed. A block
//! compressed against it says so in its header (`store`'s
//! `BLOCK_WITH_DICTIONARY`). Eviction removes whole packs, so a pack's
//! blocks and its dictionary go together; a damaged first block costs the
//! blocks compressed against it, which are the pack's own entries.
//!
//! The content only decides how well the fragments compress, never what
//! they decompress to: any bytes would do, so the store need not know that
//! the payload is an ELF object.

use std::sync::Arc;

use zstd::dict::{DecoderDictionary, EncoderDictionary};
use zstd::zstd_safe;

use super::storage::{Corruption, EntryKind};

/// Smallest dictionary worth its building: below it, fragments share
/// little with the object that their neighbours in the block do not give.
const MIN_DICTIONARY_BYTES: usize = 4 << 10;

/// Largest dictionary read (`store`'s largest entry).
const MAX_DICTIONARY_BYTES: u64 = 256 << 20;

/// zstd's frame magic.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xb5, 0x2f, 0xfd];

/// Whether an entry of this kind and payload can be a pack's dictionary: a
/// unit's result whose payload is one zstd frame. Such an entry gets a
/// block of its own.
pub fn can_serve(kind: Option<EntryKind>, payload: &[u8]) -> bool {
    kind == Some(EntryKind::UnitResult) && payload.starts_with(&ZSTD_MAGIC)
}

/// The dictionary such an entry gives ([`can_serve`]): its payload,
/// decompressed; `None` when it is too small to pay or not a frame that
/// says its size.
pub fn content(kind: Option<EntryKind>, payload: &[u8]) -> Option<Vec<u8>> {
    if !can_serve(kind, payload) {
        return None;
    }
    let content = super::decompress_bounded(payload, MAX_DICTIONARY_BYTES)?;
    (content.len() >= MIN_DICTIONARY_BYTES).then_some(content)
}

/// The dictionary made of a pack's first block's one entry ([`content`]).
pub fn for_decompression(
    kind: Option<EntryKind>,
    payload: &[u8],
) -> Result<Arc<DecoderDictionary<'static>>, Corruption> {
    let content = content(kind, payload).ok_or(Corruption::BadLength)?;
    Ok(Arc::new(DecoderDictionary::copy(&content)))
}

/// Compresses blocks against one dictionary (built once: indexing an
/// object of megabytes costs more than a block's compression).
pub struct BlockCompressor {
    dictionary: EncoderDictionary<'static>,
    context: zstd_safe::CCtx<'static>,
}

impl BlockCompressor {
    pub fn new(content: &[u8], level: i32) -> BlockCompressor {
        BlockCompressor {
            dictionary: EncoderDictionary::copy(content, level),
            context: zstd_safe::CCtx::create(),
        }
    }

    /// `raw` compressed against the dictionary; `None` should zstd fail.
    pub fn compress(&mut self, raw: &[u8]) -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(zstd_safe::compress_bound(raw.len()));
        (self.context)
            .compress_using_cdict(&mut out, raw, self.dictionary.as_cdict())
            .ok()?;
        Some(out)
    }
}

/// A block of `raw_len` bytes compressed against `dictionary`.
pub fn decompress(
    stored: &[u8],
    raw_len: usize,
    dictionary: &DecoderDictionary<'static>,
) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static CONTEXT: std::cell::RefCell<zstd_safe::DCtx<'static>> =
            std::cell::RefCell::new(zstd_safe::DCtx::create());
    }
    CONTEXT.with(|c| {
        let mut out = Vec::with_capacity(raw_len);
        // One-shot: the context keeps no reference to the dictionary.
        (c.borrow_mut())
            .decompress_using_ddict(&mut out, stored, dictionary.as_ddict())
            .map_err(|code| {
                std::io::Error::other(format!("zstd: {}", zstd_safe::get_error_name(code)))
            })?;
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_compressed_result_serves() {
        assert_eq!(MAX_DICTIONARY_BYTES, crate::repo::store::MAX_ENTRY_BYTES);
        let object: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let frame = zstd::bulk::compress(&object, 3).unwrap();
        let result = Some(EntryKind::UnitResult);
        assert_eq!(content(result, &frame), Some(object));
        assert!(content(Some(EntryKind::Object), &frame).is_none());
        assert!(content(result, b"\x7fELF....").is_none());
        let small = zstd::bulk::compress(b"tiny", 3).unwrap();
        assert!(content(result, &small).is_none());
    }

    #[test]
    fn blocks_round_trip_through_the_dictionary() {
        let object: Vec<u8> = (0..50_000u32)
            .flat_map(|i| (i * 7919).to_le_bytes())
            .collect();
        let mut block = Vec::new();
        for piece in object.chunks(997).step_by(3) {
            block.extend_from_slice(b"header");
            block.extend_from_slice(piece);
        }
        let mut c = BlockCompressor::new(&object, 6);
        let stored = c.compress(&block).unwrap();
        let plain = zstd::bulk::compress(&block, 6).unwrap();
        assert!(
            stored.len() * 4 < plain.len(),
            "{} against {}",
            stored.len(),
            plain.len()
        );
        let d = DecoderDictionary::copy(&object);
        assert_eq!(decompress(&stored, block.len(), &d).unwrap(), block);
        let other = DecoderDictionary::copy(&object[1..]);
        assert_ne!(decompress(&stored, block.len(), &other).ok(), Some(block));
    }
}
