//! The fragment store: a content-addressed directory of entries keyed by a
//! definition's final digest.
//!
//! Each entry, as a pack holds it ([`encode_packed`]):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | kind: 0 object code, 1 "the optimizer deleted this definition", 2 a whole unit's object compiled by clang, 3 "this unit needs clang", ... ([`EntryKind::byte`]) |
//! | 32 | the digest the entry is stored under |
//! | 4 | length of the metadata (little endian) |
//! | n | metadata (JSON, written by the pipeline) |
//! | rest | payload (an ELF relocatable object for kind 0) |
//!
//! It carries no magic, version or checksum of its own: the pack's header
//! names the version, and the compressed block the entry is in carries a
//! checksum that is verified before the block is decompressed. (A 32-byte
//! checksum per entry, which does not compress, was 5% of lua's
//! repository.) A value sent to a remote server travels alone, so it is
//! encoded with a header of its own ([`encode`]):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `RPCCFRAG` |
//! | 4 | format version (little endian) |
//! | 1 | kind |
//! | 1 | flags: bit 0, the body (metadata length, metadata, payload) is one zstd frame |
//! | 2 | reserved (zero) |
//! | 32 | the digest the entry is stored under |
//! | 32 | blake3 of the version, kind, flags, reserved bytes and digest above and of everything after the header |
//! | 8 | length of the metadata (little endian) |
//! | n | metadata |
//! | rest | payload |
//!
//! Its checksum covers the bytes as stored, so a damaged frame is found
//! before it is decompressed, and decompression is bounded by
//! [`MAX_ENTRY_BYTES`].
//!
//! Entries live in *packs*, `<dir>/v1/packs/<16 hex digits>`: one file
//! per compiler invocation holding everything it stored (a store made by
//! [`Store::for_invocation`] keeps its entries until [`Store::flush`]),
//! and `v1/index` (`index`) says in which pack, at which offset, each key
//! is. A file per entry cost an inode and a directory entry per definition
//! (about 80 names per lua unit); a pack costs one file per compile. A
//! pack is laid out as
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `RPCCPACK` |
//! | 4 | pack format version (little endian) |
//! | 4 | number of blocks |
//! | per block | its stored length (u32 LE), its raw length (u32 LE; bit 31: stored uncompressed; bit 30: compressed against the pack's dictionary, the unit's object in the first block, see `dictionary`), the first 16 bytes of blake3 of the stored bytes, the stored bytes |
//!
//! and a block, decompressed, is a run of entries, each its length (u32
//! LE) and the entry as above (about [`BLOCK_BYTES`] of them: small
//! fragment objects share most of their bytes with their neighbours),
//! so the pack alone says what it holds: the index can always be rebuilt
//! from the packs (`--verify` does), and a damaged pack costs its own
//! entries only. Least-recently-used order is per pack (its modification
//! time, refreshed at most hourly when an entry of it is read), and
//! eviction removes whole packs, reading only those it removes.
//!
//! All access goes through `fsx` (no symlink inside the repository is
//! followed; what is not a regular file where a pack goes is removed;
//! reads are bounded by [`MAX_ENTRY_BYTES`]). A pack is written to a
//! temporary file and renamed into place before the index points at it,
//! so readers see whole entries or none; no fsync is needed because a torn
//! block fails its checksum and its entries read as misses. A corrupt entry is
//! removed from the index when met. Concurrent writers of one key write
//! equivalent entries (the key is a digest of the content's inputs), so
//! the last one indexed winning is harmless; readers take no lock.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use super::dictionary;
use super::fsx::{self, ReadError, RepoDir};
use super::index::{self, Index, Location, INDEX, INDEX_LOCK};
use super::storage::{
    Corruption, Entry, EntryKind, EvictReport, FragmentDigest, Lookup, StoreError,
};

const MAGIC: &[u8; 8] = b"RPCCFRAG";
/// Bump when the entry layout or the meaning of a payload changes.
/// (3: the checksum covers the header's kind, which version 2 left
/// unchecked: one flipped bit made a stored object read as "deleted".
/// 4: compressed bodies.)
pub const FORMAT_VERSION: u32 = 4;
/// zstd's level for entry bodies: level 1 compresses objects at several
/// hundred MB/s, a small part of a fragment's code generation.
const ZSTD_LEVEL: i32 = 1;
/// Bodies shorter than this are stored as they are (a frame's own header
/// would eat what it saves).
const COMPRESS_FROM: usize = 128;
const FLAG_COMPRESSED: u8 = 1;
const HEADER_LEN: usize = 8 + 4 + 4 + 32 + 32 + 8;
/// An entry's header in a pack: kind, digest, metadata length.
const PACKED_HEADER_LEN: usize = 1 + 32 + 4;

const PACK_MAGIC: &[u8; 8] = b"RPCCPACK";
/// 3: compressed blocks of entries; the index says which block, and where
/// in it. 4: entries without a header and checksum of their own
/// ([`encode_packed`]). 5: fragment blocks compressed against the pack's
/// dictionary (`dictionary`).
const PACK_VERSION: u32 = 5;
const PACK_HEADER_LEN: usize = 16;
/// A block's stored length, raw length (and flag) and checksum.
const BLOCK_HEADER_LEN: usize = 4 + 4 + 16;
/// Entries are gathered into blocks of about this many bytes before
/// compression: a read decompresses one block (tens of microseconds), and
/// larger blocks gained under 1% on lua's repository.
const BLOCK_BYTES: usize = 32 << 10;
/// Blocks of a unit's own fragments ([`BlockClass::UnitFragments`]) are
/// larger: only the unit's next compile reads them, and it reads most of
/// them. Against sqlite3.c's object at `-O2 -g`, its own fragments (13.3
/// MB raw) took 2.63 MB in blocks of 32 KiB, 2.40 in 128 KiB, 2.24 in 512
/// KiB and 2.14 in 2 MiB (at `-O2`: 432, 406, 395 and 390 KB).
const OWN_BLOCK_BYTES: usize = 512 << 10;
/// zstd's level for blocks of fragment objects: on lua5.4's 1,319
/// fragments (1.78 MB), level 1 gave 390 KB, 3 379 KB, 6 360 KB, 9 355 KB
/// at 10, 11, 35 and 52 ms of compression for the whole build; level 6 is
/// where the gain ends for its time (decompression is the same).
const FRAGMENT_BLOCK_ZSTD_LEVEL: i32 = 6;
/// zstd's level for a unit's own fragments compressed against its object
/// (`dictionary`): against sqlite3.c's object at `-O2`, level 6 gave 406
/// KB, 9 379 KB, 12 377 KB, in 60, 110 and 160 ms.
const OWN_FRAGMENT_BLOCK_ZSTD_LEVEL: i32 = 9;
/// Largest block read (one entry of [`MAX_ENTRY_BYTES`] and its length).
const MAX_BLOCK_BYTES: u64 = MAX_ENTRY_BYTES + 4;
/// Decompressed blocks a process keeps (a compile reads its earlier
/// fragments from a few blocks in turn).
const CACHED_BLOCK_BYTES: usize = 64 << 20;
/// Bytes of one pack (the index holds 32-bit offsets); a compile that
/// stores more writes several.
const PACK_MAX_BYTES: usize = 1 << 30;
/// The packs' directory inside `v1`.
const PACKS: &str = "packs";
/// The fragment directory of repocc before packs and the index (one file
/// or link per entry), removed when an index is first made.
const OLD_FRAGMENTS: &str = "fragments";
/// Pack files a process keeps open for reading.
const OPEN_PACKS: usize = 64;
/// Packs' dictionaries a process keeps (each a copy of a unit's object).
const OPEN_DICTIONARIES: usize = 8;

pub struct Store {
    /// The repository directory (the user's path).
    repo: PathBuf,
    /// `<repo>/v1`, for messages.
    root: PathBuf,
    /// `v1` and `v1/packs`, once opened for reading.
    opened: OnceLock<(RepoDir, RepoDir)>,
    /// The index as last opened for reading.
    index: Mutex<Option<Arc<Index>>>,
    /// Packs open for reading.
    open_packs: Mutex<HashMap<u64, Arc<std::fs::File>>>,
    /// Blocks read and decompressed, by pack and offset.
    blocks: Mutex<BlockCache>,
    /// Packs' dictionaries, made for the blocks compressed against them.
    dictionaries: Mutex<HashMap<u64, Arc<zstd::dict::DecoderDictionary<'static>>>>,
    /// Entries stored but not yet written: a store made by
    /// [`Store::for_invocation`] writes everything a compiler invocation
    /// stores as one pack when it is flushed (or dropped).
    pending: Option<Mutex<Pending>>,
}

#[derive(Default)]
struct BlockCache {
    blocks: HashMap<(u64, u32), Arc<Vec<u8>>>,
    bytes: usize,
}

#[derive(Default)]
struct Pending {
    order: Vec<FragmentDigest>,
    bytes: HashMap<FragmentDigest, Vec<u8>>,
}

/// Counts from [`Store::verify_all`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyReport {
    pub checked: u64,
    pub removed: Vec<(PathBuf, String)>,
}

/// The entry as the remote tier sends it, with a header and checksum of
/// its own (see the module comment): uncompressed, since the remote tier
/// compresses the whole value (compressing the body first as well cost
/// the writer twice and saved nothing).
pub fn encode(digest: &FragmentDigest, entry: &Entry) -> Vec<u8> {
    encode_with(digest, entry, false)
}

/// The encoding, with the body compressed when zstd shrinks it if
/// `compress` (what earlier versions sent to a remote server; `decode`
/// still reads it).
fn encode_with(digest: &FragmentDigest, entry: &Entry, compress: bool) -> Vec<u8> {
    let mut body = Vec::with_capacity(8 + entry.metadata.len() + entry.payload.len());
    body.extend_from_slice(&(entry.metadata.len() as u64).to_le_bytes());
    body.extend_from_slice(&entry.metadata);
    body.extend_from_slice(&entry.payload);
    let mut flags = 0;
    if compress && body.len() >= COMPRESS_FROM {
        if let Ok(z) = zstd::bulk::compress(&body, ZSTD_LEVEL) {
            if z.len() < body.len() {
                body = z;
                flags |= FLAG_COMPRESSED;
            }
        }
    }
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.push(entry.kind.byte());
    out.extend_from_slice(&[flags, 0, 0]);
    out.extend_from_slice(&digest.0);
    let checksum = entry_checksum(&out[8..48], &body);
    out.extend_from_slice(checksum.as_bytes());
    // The metadata length is the first 8 bytes of the (uncompressed) body.
    out.extend_from_slice(&body);
    out
}

/// The checksum of an entry: every byte of it but the magic and the
/// checksum itself. A header field left out is one a flipped bit can change
/// unseen (the kind turns an object into a deletion).
fn entry_checksum(header: &[u8], body: &[u8]) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    hasher.update(header);
    hasher.update(body);
    hasher.finalize()
}

pub fn decode(digest: &FragmentDigest, bytes: &[u8]) -> Result<Entry, Corruption> {
    if bytes.len() < HEADER_LEN {
        return Err(Corruption::TooShort);
    }
    if &bytes[..8] != MAGIC {
        return Err(Corruption::BadMagic);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != FORMAT_VERSION {
        return Err(Corruption::OtherVersion(version));
    }
    let flags = bytes[13];
    if flags & !FLAG_COMPRESSED != 0 || bytes[14..16] != [0, 0] {
        return Err(Corruption::BadKind(bytes[12]));
    }
    let kind = EntryKind::of_byte(bytes[12]).ok_or(Corruption::BadKind(bytes[12]))?;
    if bytes[16..48] != digest.0 {
        return Err(Corruption::WrongDigest);
    }
    let stored = &bytes[80..];
    if entry_checksum(&bytes[8..48], stored).as_bytes() != &bytes[48..80] {
        return Err(Corruption::BadChecksum);
    }
    let decompressed;
    let body = if flags & FLAG_COMPRESSED != 0 {
        decompressed =
            super::decompress_bounded(stored, MAX_ENTRY_BYTES).ok_or(Corruption::BadLength)?;
        &decompressed[..]
    } else {
        stored
    };
    if body.len() < 8 {
        return Err(Corruption::BadLength);
    }
    let meta_len = u64::from_le_bytes(body[..8].try_into().expect("8 bytes")) as usize;
    if meta_len > body.len() - 8 {
        return Err(Corruption::BadLength);
    }
    Ok(Entry {
        kind,
        metadata: body[8..8 + meta_len].to_vec(),
        payload: body[8 + meta_len..].to_vec(),
    })
}

/// The entry as a pack holds it (see the module comment).
fn encode_packed(digest: &FragmentDigest, entry: &Entry) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(PACKED_HEADER_LEN + entry.metadata.len() + entry.payload.len());
    out.push(entry.kind.byte());
    out.extend_from_slice(&digest.0);
    // Metadata is a pipeline's JSON, far below 4 GiB (an entry is at most
    // `MAX_ENTRY_BYTES`); a longer one would read back as damaged.
    out.extend_from_slice(&(entry.metadata.len() as u32).to_le_bytes());
    out.extend_from_slice(&entry.metadata);
    out.extend_from_slice(&entry.payload);
    out
}

/// An entry of a decompressed block (its block's checksum already
/// verified), which must be stored under `digest`.
fn decode_packed(digest: &FragmentDigest, bytes: &[u8]) -> Result<Entry, Corruption> {
    if bytes.len() < PACKED_HEADER_LEN {
        return Err(Corruption::TooShort);
    }
    let kind = EntryKind::of_byte(bytes[0]).ok_or(Corruption::BadKind(bytes[0]))?;
    if bytes[1..33] != digest.0 {
        return Err(Corruption::WrongDigest);
    }
    let meta_len = u32::from_le_bytes(bytes[33..37].try_into().expect("4 bytes")) as usize;
    let body = &bytes[PACKED_HEADER_LEN..];
    if meta_len > body.len() {
        return Err(Corruption::BadLength);
    }
    Ok(Entry {
        kind,
        metadata: body[..meta_len].to_vec(),
        payload: body[meta_len..].to_vec(),
    })
}

/// The kind and payload of an entry of a pack (not verified).
fn packed_kind_and_payload(bytes: &[u8]) -> Option<(Option<EntryKind>, &[u8])> {
    let meta_len = u32::from_le_bytes(bytes.get(33..PACKED_HEADER_LEN)?.try_into().ok()?);
    let payload = bytes.get(PACKED_HEADER_LEN.checked_add(meta_len as usize)?..)?;
    Some((EntryKind::of_byte(bytes[0]), payload))
}

/// Whether an entry of a pack can be its dictionary (`dictionary`).
fn can_serve_as_dictionary(bytes: &[u8]) -> bool {
    packed_kind_and_payload(bytes).is_some_and(|(k, p)| dictionary::can_serve(k, p))
}

/// The dictionary of a pack whose first block, decompressed, is `block`:
/// made of the block's one entry.
fn dictionary_of_first_block(
    block: &[u8],
) -> Result<Arc<zstd::dict::DecoderDictionary<'static>>, Corruption> {
    let entry = entry_in_block(block, 0)?;
    if 4 + entry.len() != block.len() {
        return Err(Corruption::BadLength);
    }
    let (kind, payload) = packed_kind_and_payload(entry).ok_or(Corruption::BadLength)?;
    dictionary::for_decompression(kind, payload)
}

/// Whether an entry of a pack says the optimizer deleted its definition.
fn is_deletion(packed: &[u8]) -> bool {
    packed.first() == Some(&EntryKind::Deleted.byte())
}

/// The digest an entry of a pack names (not verified).
fn packed_digest(bytes: &[u8]) -> Option<FragmentDigest> {
    Some(FragmentDigest(bytes.get(1..33)?.try_into().ok()?))
}

/// One pack holding `entries` (each encoded by [`encode_packed`]), with
/// where each one is in it: its block's offset in the file and its own
/// offset in the block (see the module comment).
fn encode_pack(
    entries: &[(FragmentDigest, Vec<u8>)],
    pack: u64,
) -> (Vec<u8>, Vec<(FragmentDigest, Location)>) {
    let mut blocks: Vec<(BlockClass, Vec<u8>)> = Vec::new();
    let mut places = Vec::with_capacity(entries.len());
    let mut block: Vec<u8> = Vec::new();
    let mut class = BlockClass::Fragments;
    // The block that may serve as the pack's dictionary: of the entries
    // that can, the largest.
    let mut candidate: Option<(usize, usize)> = None;
    for (d, e) in entries {
        let of = BlockClass::of(e);
        let alone = can_serve_as_dictionary(e);
        if !block.is_empty()
            && (alone || block.len() + 4 + e.len() > of.block_bytes() || of != class)
        {
            blocks.push((class, std::mem::take(&mut block)));
        }
        class = of;
        places.push((*d, blocks.len(), block.len() as u32));
        block.extend_from_slice(&(e.len() as u32).to_le_bytes());
        block.extend_from_slice(e);
        if alone {
            if candidate.is_none_or(|(_, len)| e.len() > len) {
                candidate = Some((blocks.len(), e.len()));
            }
            blocks.push((class, std::mem::take(&mut block)));
        }
    }
    if !block.is_empty() {
        blocks.push((class, block));
    }
    // The dictionary goes first, and only the unit's own fragments use it:
    // a unit that reads an inline function's fragment from this pack
    // should not have to decompress this unit's object first (a unit
    // cache hit of fmt's tests, composing shared instances: 15-20 ms).
    // (The object is decompressed only for a pack that will use it.)
    let mut compressor = None;
    let wanted = blocks.iter().any(|(c, _)| *c == BlockClass::UnitFragments);
    let dictionary = candidate.filter(|_| wanted).and_then(|(at, _)| {
        let entry = blocks[at].1.get(4..)?;
        let (kind, payload) = packed_kind_and_payload(entry)?;
        Some((at, dictionary::content(kind, payload)?))
    });
    if let Some((at, content)) = dictionary {
        let first = blocks.remove(at);
        blocks.insert(0, first);
        for (_, b, _) in &mut places {
            *b = match *b {
                b if b == at => 0,
                b if b < at => b + 1,
                b => b,
            };
        }
        compressor = Some(dictionary::BlockCompressor::new(
            &content,
            BlockClass::UnitFragments.zstd_level(),
        ));
    }
    let mut out = Vec::new();
    out.extend_from_slice(PACK_MAGIC);
    out.extend_from_slice(&PACK_VERSION.to_le_bytes());
    out.extend_from_slice(&(blocks.len() as u32).to_le_bytes());
    let mut block_offsets = Vec::with_capacity(blocks.len());
    for (class, raw) in &blocks {
        block_offsets.push(out.len() as u32);
        let (stored, flag) = match (&mut compressor, class) {
            (Some(c), BlockClass::UnitFragments) => (c.compress(raw), BLOCK_WITH_DICTIONARY),
            _ => (zstd::bulk::compress(raw, class.zstd_level()).ok(), 0),
        };
        let (stored, flag) = match stored.filter(|s| s.len() < raw.len()) {
            Some(s) => (s, flag),
            None => (raw.clone(), BLOCK_RAW),
        };
        out.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        out.extend_from_slice(&(raw.len() as u32 | flag).to_le_bytes());
        out.extend_from_slice(&blake3::hash(&stored).as_bytes()[..16]);
        out.extend_from_slice(&stored);
    }
    let at = (places.into_iter())
        .map(|(d, b, inner)| {
            let location = Location {
                pack,
                offset: block_offsets[b],
                len: inner,
            };
            (d, location)
        })
        .collect();
    (out, at)
}

/// What a block holds: entries of one class share blocks, so that a read
/// of one class decompresses none of another's bytes (a unit cache hit
/// none of the fragments beside its result), damage to one stays there,
/// and each is compressed at the level its bytes pay for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum BlockClass {
    /// Fragment objects and the small records beside them (deletions,
    /// histories, the bodies' index): ELF objects of one unit share most
    /// of their bytes.
    Fragments,
    /// Fragment objects no other unit is expected to read
    /// ([`EntryKind::UnitObject`]): compressed against the pack's
    /// dictionary when it has one.
    UnitFragments,
    /// The unit cache's manifests and results, compressed already.
    UnitCache,
    /// Stored bodies: bitcode, compressed already (`ir::bodies`).
    Bodies,
}

impl BlockClass {
    fn of(entry: &[u8]) -> BlockClass {
        match entry.first().copied().and_then(EntryKind::of_byte) {
            Some(EntryKind::UnitManifest | EntryKind::UnitResult) => BlockClass::UnitCache,
            Some(EntryKind::Bodies) => BlockClass::Bodies,
            Some(EntryKind::UnitObject) => BlockClass::UnitFragments,
            _ => BlockClass::Fragments,
        }
    }

    /// How many bytes of entries a block of the class gathers.
    fn block_bytes(self) -> usize {
        match self {
            BlockClass::UnitFragments => OWN_BLOCK_BYTES,
            _ => BLOCK_BYTES,
        }
    }

    /// zstd's level: [`FRAGMENT_BLOCK_ZSTD_LEVEL`] for fragments; level 1
    /// for what is compressed already (a higher one spends time to gain
    /// nothing).
    fn zstd_level(self) -> i32 {
        match self {
            BlockClass::Fragments => FRAGMENT_BLOCK_ZSTD_LEVEL,
            BlockClass::UnitFragments => OWN_FRAGMENT_BLOCK_ZSTD_LEVEL,
            BlockClass::UnitCache | BlockClass::Bodies => 1,
        }
    }
}

/// Marks a block stored as it is (zstd did not shrink it) in its header's
/// length field.
const BLOCK_RAW: u32 = 1 << 31;
/// Marks a block compressed against the pack's dictionary (`dictionary`:
/// the first block's object) in its header's length field.
const BLOCK_WITH_DICTIONARY: u32 = 1 << 30;

/// The pack's dictionary, for a block compressed against it.
type DictionarySource<'a> =
    &'a mut dyn FnMut() -> Result<Arc<zstd::dict::DecoderDictionary<'static>>, Corruption>;

/// The block of `pack_bytes` (a whole pack, or the bytes read from
/// `offset`) at `offset`, checked and decompressed; `dictionary` gives the
/// pack's dictionary should the block need it.
fn decode_block(bytes: &[u8], dictionary: DictionarySource) -> Result<Vec<u8>, Corruption> {
    let header = bytes.get(..BLOCK_HEADER_LEN).ok_or(Corruption::TooShort)?;
    let stored_len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let raw_field = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let raw_len = (raw_field & !(BLOCK_RAW | BLOCK_WITH_DICTIONARY)) as usize;
    if raw_len as u64 > MAX_BLOCK_BYTES {
        return Err(Corruption::TooLarge);
    }
    let stored = (bytes.get(BLOCK_HEADER_LEN..BLOCK_HEADER_LEN + stored_len))
        .ok_or(Corruption::BadLength)?;
    if blake3::hash(stored).as_bytes()[..16] != header[8..24] {
        return Err(Corruption::BadChecksum);
    }
    let raw = match (
        raw_field & BLOCK_RAW != 0,
        raw_field & BLOCK_WITH_DICTIONARY != 0,
    ) {
        (true, false) => stored.to_vec(),
        (false, false) => decompress_block(stored, raw_len).map_err(|_| Corruption::BadLength)?,
        (false, true) => dictionary::decompress(stored, raw_len, &*dictionary()?)
            .map_err(|_| Corruption::BadLength)?,
        (true, true) => return Err(Corruption::BadLength),
    };
    if raw.len() != raw_len {
        return Err(Corruption::BadLength);
    }
    Ok(raw)
}

/// For the pack's first block, which no block is compressed against.
fn no_dictionary() -> Result<Arc<zstd::dict::DecoderDictionary<'static>>, Corruption> {
    Err(Corruption::BadLength)
}

/// Decompresses a block of `raw_len` bytes with this thread's context:
/// a hit composing thousands of fragments reads hundreds of blocks, and
/// making a context for each was a twentieth of its time.
fn decompress_block(stored: &[u8], raw_len: usize) -> std::io::Result<Vec<u8>> {
    thread_local! {
        static DECOMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Decompressor<'static>>> =
            const { std::cell::RefCell::new(None) };
    }
    DECOMPRESSOR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            *d = Some(zstd::bulk::Decompressor::new()?);
        }
        d.as_mut().expect("made above").decompress(stored, raw_len)
    })
}

/// The entry at `inner` in a decompressed block.
fn entry_in_block(block: &[u8], inner: u32) -> Result<&[u8], Corruption> {
    let at = inner as usize;
    let len = block.get(at..at + 4).ok_or(Corruption::BadLength)?;
    let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
    block.get(at + 4..at + 4 + len).ok_or(Corruption::BadLength)
}

/// The entries a pack says it holds: each one's digest (as its header
/// names it, not verified here) and place, with the entry's bytes. A
/// damaged block costs its own entries (reported as the error); a damaged
/// length ends the walk.
#[allow(clippy::type_complexity)]
fn pack_records(
    pack: u64,
    bytes: &[u8],
) -> (Vec<(FragmentDigest, Location, Vec<u8>)>, Option<Corruption>) {
    let mut out = Vec::new();
    if bytes.len() < PACK_HEADER_LEN {
        return (out, Some(Corruption::TooShort));
    }
    if &bytes[..8] != PACK_MAGIC {
        return (out, Some(Corruption::BadMagic));
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != PACK_VERSION {
        return (out, Some(Corruption::OtherVersion(version)));
    }
    let blocks = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
    let mut pos = PACK_HEADER_LEN;
    let mut damage = None;
    // The first block, and the dictionary made of it once a block needs it.
    let mut first: Option<Vec<u8>> = None;
    let mut made = None;
    for number in 0..blocks {
        let Some(header) = bytes.get(pos..pos + BLOCK_HEADER_LEN) else {
            return (out, Some(Corruption::BadLength));
        };
        let stored_len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
        let offset = pos as u32;
        let next = pos + BLOCK_HEADER_LEN + stored_len;
        let decoded = if number == 0 {
            decode_block(&bytes[pos..], &mut no_dictionary)
        } else {
            decode_block(&bytes[pos..], &mut || {
                if made.is_none() {
                    made = Some(dictionary_of_first_block(
                        first.as_deref().ok_or(Corruption::BadLength)?,
                    )?);
                }
                Ok(made.clone().expect("made above"))
            })
        };
        match decoded {
            Ok(raw) => {
                let mut inner = 0usize;
                while inner < raw.len() {
                    match entry_in_block(&raw, inner as u32) {
                        Ok(e) if e.len() >= PACKED_HEADER_LEN => {
                            let digest = packed_digest(e).expect("a whole header");
                            let at = Location {
                                pack,
                                offset,
                                len: inner as u32,
                            };
                            out.push((digest, at, e.to_vec()));
                            inner += 4 + e.len();
                        }
                        _ => {
                            damage = Some(Corruption::BadLength);
                            break;
                        }
                    }
                }
                if number == 0 {
                    first = Some(raw);
                }
            }
            Err(c) => damage = Some(c),
        }
        pos = next;
    }
    if pos != bytes.len() {
        damage = Some(Corruption::BadLength);
    }
    (out, damage)
}

fn pack_name(pack: u64) -> String {
    format!("{pack:016x}")
}

fn pack_of_name(name: &str) -> Option<u64> {
    let valid = name.len() == 16
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    valid
        .then(|| u64::from_str_radix(name, 16).ok())
        .flatten()
        .filter(|&p| p != 0 && p != u64::MAX)
}

/// A new pack's number: unique among writers without coordination (the
/// process, the time and a counter, hashed).
fn new_pack_number() -> u64 {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = blake3::Hasher::new();
    hasher.update(&std::process::id().to_le_bytes());
    let now = SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.update(&now.as_nanos().to_le_bytes());
    hasher.update(
        &COUNTER
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_le_bytes(),
    );
    hasher.update(&format!("{:?}", std::thread::current().id()).into_bytes());
    let n = u64::from_le_bytes(
        hasher.finalize().as_bytes()[..8]
            .try_into()
            .expect("8 bytes"),
    );
    n.clamp(1, u64::MAX - 1)
}

/// Why an entry could not be read.
enum LoadError {
    Missing,
    Corrupt(Corruption),
    Io(std::io::Error),
}

/// Largest entry a read accepts (a bigger one is not one of ours).
pub const MAX_ENTRY_BYTES: u64 = 256 << 20;

/// Temporary files younger than this may belong to a running compile.
const TEMPORARY_GRACE: Duration = Duration::from_secs(3600);

/// A pack as listed: its number, size and time (least-recently-used order).
struct ListedPack {
    pack: u64,
    size: u64,
    modified: SystemTime,
}

/// Opens `name` in `dir` as a directory, replacing whatever else is there
/// (inside the repository: a symlink or a file in the way is removed,
/// never followed).
fn subdir_for_writing(dir: &RepoDir, name: &str) -> std::io::Result<RepoDir> {
    let sub = match dir.subdir(name, true) {
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
            dir.remove(name)?;
            dir.subdir(name, true)
        }
        other => other,
    }?;
    Ok(sub.expect("created when missing"))
}

impl Store {
    /// The store under the repository directory `dir` (nothing is created
    /// until the first write); every `put` is written at once.
    pub fn new(dir: &Path) -> Store {
        Store {
            repo: dir.to_path_buf(),
            root: dir.join("v1"),
            opened: OnceLock::new(),
            index: Mutex::new(None),
            open_packs: Mutex::new(HashMap::new()),
            blocks: Mutex::new(BlockCache::default()),
            dictionaries: Mutex::new(HashMap::new()),
            pending: None,
        }
    }

    /// As [`Store::new`], for one compiler invocation: what it stores is
    /// kept (and read back) in memory and written as one pack by
    /// [`Store::flush`] — a few files per compile instead of one per entry.
    pub fn for_invocation(dir: &Path) -> Store {
        let mut store = Store::new(dir);
        store.pending = Some(Mutex::new(Pending::default()));
        store
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `v1` and `v1/packs` for reading, once they exist. Not a real
    /// directory (a symlink, a file) reads as absent; a directory that may
    /// not be used (another user's, writable by others) is an error.
    fn for_reading(&self) -> std::io::Result<Option<&(RepoDir, RepoDir)>> {
        if let Some(d) = self.opened.get() {
            return Ok(Some(d));
        }
        let absent = |e: &std::io::Error| {
            matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            )
        };
        let v1 = match RepoDir::open_path(&self.repo, &["v1"], false) {
            Ok(Some(v1)) => v1,
            Ok(None) => return Ok(None),
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        let packs = match v1.subdir(PACKS, false) {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(None),
            Err(e) if absent(&e) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some(self.opened.get_or_init(|| (v1, packs))))
    }

    /// The index for reading: the one kept open, or (`reopen`, or none
    /// kept) the file now at its place. A missing or damaged index is
    /// `None` (the next write rebuilds it); one that may not be used is an
    /// error.
    fn index(&self, v1: &RepoDir, reopen: bool) -> std::io::Result<Option<Arc<Index>>> {
        let mut kept = self.index.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = kept.as_ref() {
            if !reopen || index.is_current(v1) {
                return Ok(Some(index.clone()));
            }
        }
        *kept = match Index::open(v1, false) {
            Ok(index) => Some(Arc::new(index)),
            Err(index::OpenError::Io(e)) => return Err(e),
            Err(_) => None,
        };
        Ok(kept.clone())
    }

    /// Where the index says `d` is: a miss in a replaced index is asked
    /// again of the new one.
    fn locate(&self, v1: &RepoDir, d: &FragmentDigest) -> std::io::Result<Option<Location>> {
        self.locate_with(v1, d, Index::find)
    }

    /// [`Store::locate`] from the index file as it is now (not from a slot
    /// table read earlier, see `Index::find`).
    fn locate_now(&self, v1: &RepoDir, d: &FragmentDigest) -> std::io::Result<Option<Location>> {
        self.locate_with(v1, d, Index::find_now)
    }

    fn locate_with(
        &self,
        v1: &RepoDir,
        d: &FragmentDigest,
        find: fn(&Index, &FragmentDigest) -> std::io::Result<Option<Location>>,
    ) -> std::io::Result<Option<Location>> {
        // With none kept, `index` has just tried to open one.
        let Some(index) = self.index(v1, false)? else {
            return Ok(None);
        };
        match find(&index, d)? {
            Some(at) => Ok(Some(at)),
            None if !index.is_current(v1) => match self.index(v1, true)? {
                Some(fresh) => find(&fresh, d),
                None => Ok(None),
            },
            None => Ok(None),
        }
    }

    /// The pack `pack`, opened (and kept open) for reading; its time is
    /// refreshed when older than an hour (least-recently-used order: a
    /// failure only costs eviction order).
    fn open_pack(&self, packs: &RepoDir, pack: u64) -> Result<Arc<std::fs::File>, LoadError> {
        let mut open = self.open_packs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = open.get(&pack) {
            return Ok(f.clone());
        }
        let file = match packs.open_regular(&pack_name(pack)) {
            Ok((f, _)) => f,
            Err(ReadError::Missing) => return Err(LoadError::Missing),
            Err(ReadError::NotRegular(kind)) => {
                return Err(LoadError::Corrupt(Corruption::NotRegular(format!(
                    "{kind:?}"
                ))))
            }
            Err(ReadError::TooLarge(_)) => return Err(LoadError::Corrupt(Corruption::TooLarge)),
            Err(ReadError::Io(e)) => return Err(LoadError::Io(e)),
        };
        let stale = file
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(3600))
            .unwrap_or(true);
        if stale {
            let _ = file.set_modified(SystemTime::now());
        }
        if open.len() >= OPEN_PACKS {
            open.clear();
        }
        let file = Arc::new(file);
        open.insert(pack, file.clone());
        Ok(file)
    }

    /// The block at `at`, read, checked and decompressed (kept for the
    /// entries next to it).
    fn block(&self, packs: &RepoDir, at: Location) -> Result<Arc<Vec<u8>>, LoadError> {
        use std::os::unix::fs::FileExt;
        let key = (at.pack, at.offset);
        if let Some(b) = self
            .blocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .blocks
            .get(&key)
        {
            return Ok(b.clone());
        }
        let file = self.open_pack(packs, at.pack)?;
        let short = |e: std::io::Error| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => LoadError::Corrupt(Corruption::BadLength),
            _ => LoadError::Io(e),
        };
        let mut header = [0u8; BLOCK_HEADER_LEN];
        file.read_exact_at(&mut header, u64::from(at.offset))
            .map_err(short)?;
        let stored_len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes"));
        if u64::from(stored_len) > MAX_BLOCK_BYTES {
            return Err(LoadError::Corrupt(Corruption::TooLarge));
        }
        let mut bytes = vec![0u8; BLOCK_HEADER_LEN + stored_len as usize];
        file.read_exact_at(&mut bytes, u64::from(at.offset))
            .map_err(short)?;
        let first = u64::from(at.offset) == PACK_HEADER_LEN as u64;
        let block = if first {
            decode_block(&bytes, &mut no_dictionary)
        } else {
            decode_block(&bytes, &mut || self.dictionary(packs, at.pack))
        };
        let block = Arc::new(block.map_err(LoadError::Corrupt)?);
        let mut cache = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        if cache.bytes + block.len() > CACHED_BLOCK_BYTES {
            *cache = BlockCache::default();
        }
        cache.bytes += block.len();
        cache.blocks.insert(key, block.clone());
        Ok(block)
    }

    /// The dictionary of `pack` (its first block's object), made once.
    fn dictionary(
        &self,
        packs: &RepoDir,
        pack: u64,
    ) -> Result<Arc<zstd::dict::DecoderDictionary<'static>>, Corruption> {
        let known = (self.dictionaries.lock().unwrap_or_else(|p| p.into_inner()))
            .get(&pack)
            .cloned();
        if let Some(d) = known {
            return Ok(d);
        }
        let at = Location {
            pack,
            offset: PACK_HEADER_LEN as u32,
            len: 0,
        };
        let first = self.block(packs, at).map_err(|e| match e {
            LoadError::Corrupt(c) => c,
            _ => Corruption::BadLength,
        })?;
        let made = dictionary_of_first_block(&first)?;
        let mut all = self.dictionaries.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= OPEN_DICTIONARIES {
            all.clear();
        }
        all.insert(pack, made.clone());
        Ok(made)
    }

    /// Reads and verifies the entry `d` at `at`.
    fn load(&self, packs: &RepoDir, d: &FragmentDigest, at: Location) -> Result<Entry, LoadError> {
        let block = self.block(packs, at)?;
        let bytes = entry_in_block(&block, at.len).map_err(LoadError::Corrupt)?;
        decode_packed(d, bytes).map_err(LoadError::Corrupt)
    }

    /// Reads and verifies an entry. A corrupt one is removed from the
    /// index and reported as corrupt: a miss.
    pub fn get(&self, d: &FragmentDigest) -> Result<Lookup, StoreError> {
        if let Some(pending) = &self.pending {
            let pending = pending.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(bytes) = pending.bytes.get(d) {
                return Ok(match decode_packed(d, bytes) {
                    Ok(e) => Lookup::Hit(e),
                    Err(c) => Lookup::Corrupt(c),
                });
            }
        }
        let unreadable = |source| StoreError::Unreadable {
            path: self.root.join(INDEX),
            source,
        };
        let Some((v1, packs)) = self.for_reading().map_err(unreadable)? else {
            return Ok(Lookup::Miss);
        };
        let Some(at) = self.locate(v1, d).map_err(unreadable)? else {
            return Ok(Lookup::Miss);
        };
        let mut loaded = self.load(packs, d, at);
        if let Err(LoadError::Corrupt(_) | LoadError::Missing) = loaded {
            // Read once more before calling it corrupt or gone: a slot
            // read while another compile rewrote it (`index`), or a place
            // from a slot table read earlier (a pack evicted since), reads
            // right the second time; a damaged entry does not.
            if let Ok(Some(again)) = self.locate_now(v1, d) {
                loaded = self.load(packs, d, again);
            }
        }
        match loaded {
            Ok(entry) => Ok(Lookup::Hit(entry)),
            Err(LoadError::Missing) => Ok(Lookup::Miss),
            Err(LoadError::Io(e)) => Err(StoreError::Unreadable {
                path: packs.path().join(pack_name(at.pack)),
                source: e,
            }),
            Err(LoadError::Corrupt(c)) => {
                // Only this entry goes: the pack's others are checked on
                // their own.
                let _ = self.forget(d, Some(at.pack));
                Ok(Lookup::Corrupt(c))
            }
        }
    }

    /// Whether the index has the entry (not verified: a cheap test before
    /// asking another tier).
    pub fn contains(&self, d: &FragmentDigest) -> bool {
        if let Some(pending) = &self.pending {
            if pending
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .bytes
                .contains_key(d)
            {
                return true;
            }
        }
        matches!(self.for_reading(), Ok(Some((v1, _))) if matches!(self.locate(v1, d), Ok(Some(_))))
    }

    /// Stores an entry; returns the bytes written now (see [`Store::put_many`]).
    pub fn put(&self, d: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        self.put_many(std::slice::from_ref(&(*d, entry.clone())))
    }

    /// Stores several entries (a compile's new fragments); returns the
    /// bytes written now. Of entries with the same key, the last is stored.
    /// A store for an invocation keeps them until [`Store::flush`] (which
    /// returns what they took: 0 here); any other writes them now, as one
    /// pack.
    pub fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        let encoded: Vec<(FragmentDigest, Vec<u8>)> = items
            .iter()
            .map(|(d, e)| (*d, encode_packed(d, e)))
            .collect();
        match &self.pending {
            Some(pending) => {
                let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
                for (d, e) in encoded {
                    if pending.bytes.insert(d, e).is_none() {
                        pending.order.push(d);
                    }
                }
                Ok(0)
            }
            None => self.write_packs(dedup_last(encoded)),
        }
    }

    /// Writes what an invocation stored (see [`Store::for_invocation`]);
    /// returns the bytes it takes.
    pub fn flush(&self) -> Result<u64, StoreError> {
        let Some(pending) = &self.pending else {
            return Ok(0);
        };
        let taken = std::mem::take(&mut *pending.lock().unwrap_or_else(|p| p.into_inner()));
        let mut bytes = taken.bytes;
        let entries: Vec<(FragmentDigest, Vec<u8>)> = (taken.order.into_iter())
            .filter_map(|d| bytes.remove(&d).map(|e| (d, e)))
            .collect();
        self.write_packs(entries)
    }

    /// Writes `entries` as packs of at most [`PACK_MAX_BYTES`] and indexes
    /// them; returns the bytes they take (see [`Store::write_pack`]). A
    /// directory removed meanwhile (`--clear` beside the build) is made
    /// again once; removed again, nothing is stored and nothing said.
    fn write_packs(&self, entries: Vec<(FragmentDigest, Vec<u8>)>) -> Result<u64, StoreError> {
        let mut written = 0;
        let mut pack: Vec<(FragmentDigest, Vec<u8>)> = Vec::new();
        let mut size = PACK_HEADER_LEN;
        for (d, e) in entries {
            if !pack.is_empty() && size + 4 + e.len() > PACK_MAX_BYTES {
                written += self.write_pack_retrying(&std::mem::take(&mut pack))?;
                size = PACK_HEADER_LEN;
            }
            size += 4 + e.len();
            pack.push((d, e));
        }
        if !pack.is_empty() {
            written += self.write_pack_retrying(&pack)?;
        }
        Ok(written)
    }

    fn write_pack_retrying(
        &self,
        entries: &[(FragmentDigest, Vec<u8>)],
    ) -> Result<u64, StoreError> {
        match self.write_pack(entries) {
            Err(StoreError::Unwritable { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && self.repo.is_dir() =>
            {
                match self.write_pack(entries) {
                    Err(StoreError::Unwritable { path, source })
                        if source.kind() == std::io::ErrorKind::NotFound =>
                    {
                        Err(StoreError::RemovedMeanwhile { path })
                    }
                    other => other,
                }
            }
            other => other,
        }
    }

    /// `v1`, created if missing (a `v1` that is not a real directory is
    /// removed first: it is inside the repository).
    fn v1_for_writing(&self) -> std::io::Result<RepoDir> {
        let root = RepoDir::open_root(&self.repo, true)?.expect("created when missing");
        subdir_for_writing(&root, "v1")
    }

    /// Writes one pack into `v1/packs` (renamed into place whole) and
    /// records its entries in the index; returns the bytes they take: the
    /// pack's (compressed) bytes and the entries' share of the index,
    /// counted high (a slot of a table at least a quarter free that may
    /// have just doubled), so that the size estimate errs high as
    /// `size` wants, but by little.
    fn write_pack(&self, entries: &[(FragmentDigest, Vec<u8>)]) -> Result<u64, StoreError> {
        let unwritable = |path: PathBuf| move |source| StoreError::Unwritable { path, source };
        let v1 = self
            .v1_for_writing()
            .map_err(unwritable(self.root.clone()))?;
        let packs = subdir_for_writing(&v1, PACKS).map_err(unwritable(self.root.join(PACKS)))?;
        let pack = new_pack_number();
        let name = pack_name(pack);
        let (bytes, locations) = encode_pack(entries, pack);
        packs
            .write_atomic(&name, &bytes, fsx::file_mode())
            .map_err(unwritable(packs.path().join(&name)))?;
        // "The optimizer deleted it" is what one unit's optimizer did with
        // a definition its users let it drop (a constant whose every use
        // was folded); another unit's code for the same key serves both
        // (a deleted fragment composes only where referenced), the other
        // way round it does not: a deletion never replaces an entry.
        let deletions: std::collections::HashSet<&FragmentDigest> = (entries.iter())
            .filter(|(_, e)| is_deletion(e))
            .map(|(d, _)| d)
            .collect();
        let indexed = self.with_index(&v1, &packs, |w| {
            w.insert(&locations, &|d| deletions.contains(d), &mut |p| {
                matches!(packs.kind_of(&pack_name(p)), Ok(Some(fsx::Kind::Regular)))
            })
        });
        match indexed {
            Ok(true) => Ok(bytes.len() as u64 + entries.len() as u64 * index::BYTES_PER_ENTRY),
            // Not indexed (the lock was held too long): the pack is only
            // unused bytes; it goes now rather than at eviction.
            Ok(false) => {
                let _ = packs.remove(&name);
                Ok(0)
            }
            Err(e) => {
                let _ = packs.remove(&name);
                Err(unwritable(v1.path().join(INDEX))(e))
            }
        }
    }

    /// Runs `change` on the index, locked; a missing or damaged index is
    /// first rebuilt from the packs (and an earlier repocc's fragment
    /// directory removed). `Ok(false)` when the lock stayed taken.
    fn with_index(
        &self,
        v1: &RepoDir,
        packs: &RepoDir,
        change: impl FnOnce(&mut index::Writer) -> std::io::Result<()>,
    ) -> std::io::Result<bool> {
        let Some(locked) = index::lock(v1, index::LOCK_WAIT)? else {
            return Ok(false);
        };
        let mut old_layout = None;
        let mut writer = match locked {
            index::Locked::Ready(w) => w,
            index::Locked::Absent(absent) => {
                if absent.why.is_none() {
                    // An earlier repocc's tree may hold millions of files:
                    // renamed aside under the lock, removed after it.
                    old_layout = Store::move_aside(v1, OLD_FRAGMENTS);
                }
                let entries = Store::indexable_entries(packs, false, &mut VerifyReport::default());
                absent.create(&entries)?
            }
        };
        change(&mut writer)?;
        writer.finish()?;
        if let Some(gone) = old_layout {
            let _ = Store::remove_retrying(v1, &gone);
        }
        Ok(true)
    }

    /// Every entry the packs hold, oldest pack first (so that a newer copy
    /// of a key wins when indexed in this order). `verify`: each entry is
    /// decoded and checked, bad ones and bad packs reported (and bad packs
    /// removed) in `report`.
    fn indexable_entries(
        packs: &RepoDir,
        verify: bool,
        report: &mut VerifyReport,
    ) -> Vec<(FragmentDigest, Location)> {
        let mut listed = Store::list_packs(packs, verify.then_some(&mut *report));
        listed.sort_by_key(|p| (p.modified, p.pack));
        let mut out = Vec::new();
        for p in listed {
            let name = pack_name(p.pack);
            let path = packs.path().join(&name);
            let bytes = match packs.read_regular(&name, PACK_MAX_BYTES as u64) {
                Ok((b, _)) => b,
                Err(ReadError::Missing) => continue,
                Err(e) => {
                    if verify {
                        report.checked += 1;
                        let _ = packs.remove(&name);
                        report.removed.push((path, format!("{e:?}")));
                    }
                    continue;
                }
            };
            let (records, damage) = pack_records(p.pack, &bytes);
            if let Some(other @ Corruption::OtherVersion(_)) = &damage {
                // An earlier repocc's pack (entries of another layout): no
                // lookup can read it, so it would only take room until
                // evicted.
                let _ = packs.remove(&name);
                if verify {
                    report.checked += 1;
                    report
                        .removed
                        .push((path, format!("{other:?} (an earlier repocc's pack)")));
                }
                continue;
            }
            if verify {
                if let Some(c) = &damage {
                    report.checked += 1;
                    report.removed.push((
                        path.clone(),
                        format!("{c:?} (the entries after it are lost)"),
                    ));
                }
                if records.is_empty() {
                    let _ = packs.remove(&name);
                    continue;
                }
            }
            let places = (records.iter()).map(|(d, at, e)| (*d, *at, is_deletion(e)));
            if !verify {
                out.extend(places);
                continue;
            }
            let mut good = Vec::with_capacity(records.len());
            for (d, _, entry) in &records {
                report.checked += 1;
                match decode_packed(d, entry) {
                    Ok(_) => good.push((*d, entry.clone())),
                    Err(c) => report
                        .removed
                        .push((path.join(d.to_hex()), format!("{c:?}"))),
                }
            }
            if good.len() == records.len() && damage.is_none() {
                out.extend(places);
                continue;
            }
            // The pack written again without what was bad, under its name
            // and time (its place in least-recently-used order).
            let (rewritten, kept) = encode_pack(&good, p.pack);
            let rewrote = good.is_empty()
                || packs
                    .write_atomic(&name, &rewritten, fsx::file_mode())
                    .and_then(|_| {
                        packs
                            .open_regular(&name)
                            .map_err(|e| std::io::Error::other(format!("{e:?}")))
                    })
                    .and_then(|(f, _)| f.set_modified(p.modified))
                    .is_ok();
            if good.is_empty() || !rewrote {
                let _ = packs.remove(&name);
            } else {
                let deletions = good.iter().map(|(_, e)| is_deletion(e));
                out.extend(
                    kept.into_iter()
                        .zip(deletions)
                        .map(|((d, at), del)| (d, at, del)),
                );
            }
        }
        // Newer packs win, except that a deletion never replaces an entry
        // (see `write_pack`).
        let mut seen = std::collections::HashSet::new();
        (out.into_iter())
            .filter(|(d, _, deletion)| seen.insert(*d) || !deletion)
            .map(|(d, at, _)| (d, at))
            .collect()
    }

    /// The packs in `packs`. With a `report`, anything else found there is
    /// removed and reported (stale temporaries too).
    fn list_packs(packs: &RepoDir, mut report: Option<&mut VerifyReport>) -> Vec<ListedPack> {
        let mut out = Vec::new();
        for f in packs.list().unwrap_or_default() {
            if let Some(report) = report.as_deref_mut() {
                if sweep_temporary(packs, &f, report) {
                    continue;
                }
            }
            match pack_of_name(&f.name) {
                Some(pack) if f.kind == fsx::Kind::Regular => out.push(ListedPack {
                    pack,
                    size: f.size,
                    modified: f.modified,
                }),
                _ => {
                    if let Some(report) = report.as_deref_mut() {
                        report.checked += 1;
                        if packs.remove(&f.name).is_ok() {
                            let why = if f.kind == fsx::Kind::Regular {
                                "not a pack name".to_string()
                            } else {
                                format!("not a regular file ({:?})", f.kind)
                            };
                            report.removed.push((packs.path().join(&f.name), why));
                        }
                    }
                }
            }
        }
        out
    }

    /// Removes `d` from the index (only where it points into `pack`, when
    /// given).
    fn forget(&self, d: &FragmentDigest, pack: Option<u64>) -> std::io::Result<()> {
        let v1 = self.v1_for_writing()?;
        let packs = subdir_for_writing(&v1, PACKS)?;
        self.with_index(&v1, &packs, |w| w.remove(d, pack).map(|_| ()))?;
        // This process sees its own removal even if the index it reads
        // was replaced meanwhile.
        *self.index.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }

    /// Removes the entry under `d`.
    pub fn remove(&self, d: &FragmentDigest) -> Result<(), StoreError> {
        if let Some(pending) = &self.pending {
            let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
            if pending.bytes.remove(d).is_some() {
                pending.order.retain(|k| k != d);
            }
        }
        if !matches!(self.for_reading(), Ok(Some(_))) {
            return Ok(());
        }
        self.forget(d, None)
            .map_err(|source| StoreError::Unwritable {
                path: self.root.join(INDEX),
                source,
            })
    }

    /// Total bytes (packs and index) and the number of entries indexed:
    /// a listing of the packs, not of the entries.
    pub fn size(&self) -> (u64, u64) {
        let Some(v1) = RepoDir::open_path(&self.repo, &["v1"], false)
            .ok()
            .flatten()
        else {
            return (0, 0);
        };
        let index = Index::open(&v1, false).ok();
        let index_bytes = v1
            .list()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f.name == INDEX && f.kind == fsx::Kind::Regular)
            .map(|f| f.size)
            .sum::<u64>();
        let pack_bytes: u64 = match v1.subdir(PACKS, false) {
            Ok(Some(packs)) => Store::list_packs(&packs, None).iter().map(|p| p.size).sum(),
            _ => 0,
        };
        (pack_bytes + index_bytes, index.map_or(0, |i| i.live()))
    }

    /// Least-recently-used eviction, a pack at a time, down to 90% of
    /// `max_bytes` (so that the next compiles do not evict again at once)
    /// once the store is larger than `max_bytes`; 0 is no limit. Lists the
    /// packs and reads only those it removes.
    pub fn evict_to(&self, max_bytes: u64) -> EvictReport {
        self.evict(Eviction::DownTo(max_bytes))
    }

    /// Removes the packs not used for `age`.
    pub fn evict_older_than(&self, age: Duration) -> EvictReport {
        self.evict(Eviction::OlderThan(SystemTime::now(), age))
    }

    fn evict(&self, plan: Eviction) -> EvictReport {
        let (bytes_before, entries_before) = self.size();
        let mut report = EvictReport {
            entries_before,
            bytes_before,
            removed: 0,
            bytes_after: bytes_before,
        };
        if let Eviction::DownTo(max) = plan {
            if max == 0 || bytes_before <= max {
                return report;
            }
        }
        let Ok(Some(v1)) = RepoDir::open_path(&self.repo, &["v1"], false) else {
            return report;
        };
        let Ok(Some(packs)) = v1.subdir(PACKS, false) else {
            return report;
        };
        let mut listed = Store::list_packs(&packs, None);
        listed.sort_by_key(|p| (p.modified, p.pack));
        let mut gone = Vec::new();
        for p in listed {
            match plan {
                Eviction::DownTo(max) if report.bytes_after <= max / 10 * 9 => break,
                Eviction::OlderThan(now, age)
                    if now.duration_since(p.modified).unwrap_or_default() <= age =>
                {
                    continue
                }
                _ => {}
            }
            let name = pack_name(p.pack);
            let records = match packs.read_regular(&name, PACK_MAX_BYTES as u64) {
                Ok((bytes, _)) => pack_records(p.pack, &bytes).0,
                Err(_) => Vec::new(),
            };
            if packs.remove(&name).is_ok() {
                report.bytes_after = report.bytes_after.saturating_sub(p.size);
                gone.extend(records);
            }
        }
        if !gone.is_empty() {
            let _ = self.with_index(&v1, &packs, |w| {
                for (d, at, _) in &gone {
                    if w.remove(d, Some(at.pack))? {
                        report.removed += 1;
                    }
                }
                Ok(())
            });
        }
        report
    }

    /// Checks every entry; removes and reports the bad ones, then rebuilds
    /// the index from what the packs hold: entries that fail verification,
    /// packs that are damaged (the entries before the damage are kept),
    /// anything that is not a pack in `packs` or not the store's in `v1`
    /// (symlinks, FIFOs, directories — removed, never followed), and
    /// temporary files older than an hour.
    pub fn verify_all(&self) -> VerifyReport {
        let mut report = VerifyReport::default();
        self.verify_bookkeeping(&mut report);
        let v1 = match RepoDir::open_path(&self.repo, &["v1"], false) {
            Ok(Some(v1)) => v1,
            Ok(None) => return report,
            Err(e) => {
                // `v1` is not a real directory: remove it (the link itself,
                // never what it points to).
                if let Some(bad) = self.remove_bad_top_level() {
                    report.checked += 1;
                    report.removed.push((bad, e.to_string()));
                }
                return report;
            }
        };
        for f in v1.list().unwrap_or_default() {
            if sweep_temporary(&v1, &f, &mut report) {
                continue;
            }
            let expected = match f.name.as_str() {
                PACKS => f.kind == fsx::Kind::Directory,
                INDEX | INDEX_LOCK => f.kind == fsx::Kind::Regular,
                _ => false,
            };
            if !expected {
                report.checked += 1;
                if v1.remove(&f.name).is_ok() {
                    let why = match f.name.as_str() {
                        OLD_FRAGMENTS => "an earlier repocc's layout".to_string(),
                        PACKS => format!("not a directory ({:?})", f.kind),
                        n if n.starts_with(".cleared-") => "left by --clear".to_string(),
                        _ => format!("not part of the store ({:?})", f.kind),
                    };
                    report.removed.push((v1.path().join(&f.name), why));
                }
            }
        }
        let Ok(Some(packs)) = v1.subdir(PACKS, false) else {
            return report;
        };
        // The index is rebuilt under its lock, so that no pack written
        // meanwhile is left out.
        let Ok(Some(locked)) = index::lock(&v1, Duration::from_secs(60)) else {
            return report;
        };
        let entries = Store::indexable_entries(&packs, true, &mut report);
        let absent = match locked {
            index::Locked::Ready(w) => w.into_absent(),
            index::Locked::Absent(a) => a,
        };
        if let Ok(w) = absent.create(&entries) {
            let _ = w.finish();
        }
        report
    }

    /// The repository's own records beside the entries: the statistics
    /// (`stats/`), the size ledger (`size/`) and the cached identities
    /// (`identity/`). Each must be a real directory of regular files, its
    /// JSON files parse and the measured size is a number; what is not is
    /// removed (a symlinked `stats` lost every count, silently), and the
    /// next compile writes it anew.
    fn verify_bookkeeping(&self, report: &mut VerifyReport) {
        let Ok(Some(root)) = RepoDir::open_root(&self.repo, false) else {
            return;
        };
        for name in ["stats", "size", "identity"] {
            let path = root.path().join(name);
            let dir = match root.subdir(name, false) {
                Ok(Some(d)) => d,
                Ok(None) => continue,
                Err(e) => {
                    report.checked += 1;
                    if root.remove(name).is_ok() {
                        report.removed.push((path, e.to_string()));
                    }
                    continue;
                }
            };
            for f in dir.list().unwrap_or_default() {
                if sweep_temporary(&dir, &f, report) {
                    continue;
                }
                report.checked += 1;
                let problem = if f.kind != fsx::Kind::Regular {
                    Some(format!("not a regular file ({:?})", f.kind))
                } else if f.name.ends_with(".lock") {
                    None
                } else {
                    let json = name == "identity" || f.name.ends_with(".json");
                    let measured = name == "size" && f.name == "measured";
                    match dir.read_regular(&f.name, 1 << 20) {
                        Err(e) => Some(format!("{e:?}")),
                        Ok((bytes, _)) if json => {
                            serde_json::from_slice::<serde_json::Value>(&bytes)
                                .err()
                                .map(|e| format!("not JSON: {e}"))
                        }
                        Ok((bytes, _)) if measured => std::str::from_utf8(&bytes)
                            .ok()
                            .and_then(|t| t.trim().parse::<u64>().ok())
                            .is_none()
                            .then(|| "not a size".to_string()),
                        Ok(_) => None,
                    }
                };
                if let Some(p) = problem {
                    if dir.remove(&f.name).is_ok() {
                        report.removed.push((dir.path().join(&f.name), p));
                    }
                }
            }
        }
    }

    /// Removes a `v1` that is not a real directory; returns its path.
    fn remove_bad_top_level(&self) -> Option<PathBuf> {
        let root = RepoDir::open_root(&self.repo, false).ok()??;
        match root.kind_of("v1") {
            Ok(Some(fsx::Kind::Directory)) | Ok(None) | Err(_) => None,
            Ok(Some(_)) => {
                let path = root.path().join("v1");
                root.remove("v1").ok().map(|()| path)
            }
        }
    }

    /// Removes every entry: the packs (renamed out of the builds' way
    /// first), the index and an earlier repocc's fragments.
    pub fn clear(&self) -> std::io::Result<()> {
        match RepoDir::open_path(&self.repo, &[], false)? {
            Some(repo) => match repo.subdir("v1", false) {
                Ok(Some(v1)) => {
                    Store::clear_aside(&v1, PACKS)?;
                    Store::clear_aside(&v1, OLD_FRAGMENTS)?;
                    // Under the writers' lock: a compile that had just
                    // written a new index reopens it before letting go, and
                    // found it gone ("the index just written: Missing", a
                    // warning in the build beside `--clear`). A writer that
                    // keeps the lock past the wait (stopped, not killed)
                    // does not keep `--clear` from its work.
                    let _held = index::hold_lock(&v1, index::LOCK_WAIT).ok().flatten();
                    v1.remove(INDEX)
                }
                Ok(None) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => repo.remove("v1"),
                Err(e) => Err(e),
            },
            None => Ok(()),
        }
    }

    /// Removes the directory `name` of `v1` while builds may be writing to
    /// it: it is first renamed out of their way (a build then makes a new
    /// one), and what a build that had it open still writes into the old
    /// one is removed on the next pass (a directory that was not empty
    /// failed `--clear` with "Directory not empty" beside builds).
    fn clear_aside(v1: &RepoDir, name: &str) -> std::io::Result<()> {
        match Store::move_aside(v1, name) {
            Some(gone) => Store::remove_retrying(v1, &gone),
            None => Ok(()),
        }
    }

    /// Renames `name` of `v1` out of the builds' way; the name to remove
    /// (`name` itself if it could not be renamed), `None` if it is not
    /// there.
    fn move_aside(v1: &RepoDir, name: &str) -> Option<String> {
        let aside = format!(".cleared-{}", std::process::id());
        match v1.rename(name, &aside) {
            Ok(()) => Some(aside),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            // Not renamable (a file in the way of `aside`...): in place.
            Err(_) => Some(name.to_string()),
        }
    }

    /// Removes `gone` of `v1`, again while builds that still had it open
    /// add to it (at most 20 passes).
    fn remove_retrying(v1: &RepoDir, gone: &str) -> std::io::Result<()> {
        let mut passes = 0;
        loop {
            match v1.remove(gone) {
                Err(e)
                    if passes < 20
                        && e.raw_os_error() == Some(rustix::io::Errno::NOTEMPTY.raw_os_error()) =>
                {
                    passes += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
                other => return other,
            }
        }
    }
}

impl Drop for Store {
    /// A store for an invocation writes what it holds if nobody flushed it
    /// (best effort: the entries are a cache).
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// What eviction removes.
#[derive(Clone, Copy)]
enum Eviction {
    /// Down to 90% of this many bytes, when the store is larger.
    DownTo(u64),
    /// Packs unused for longer than the duration, as of the time.
    OlderThan(SystemTime, Duration),
}

/// `entries` with only the last of each key, in the order of those.
fn dedup_last(entries: Vec<(FragmentDigest, Vec<u8>)>) -> Vec<(FragmentDigest, Vec<u8>)> {
    let mut last: HashMap<FragmentDigest, usize> = HashMap::new();
    for (i, (d, _)) in entries.iter().enumerate() {
        last.insert(*d, i);
    }
    (entries.into_iter().enumerate())
        .filter(|(i, (d, _))| last.get(d) == Some(i))
        .map(|(_, e)| e)
        .collect()
}

/// Whether `f` (listed in `dir`) is a temporary file of a write; one older
/// than [`TEMPORARY_GRACE`] (a write a kill left, not one in flight) is
/// removed and reported.
fn sweep_temporary(dir: &RepoDir, f: &fsx::Listed, report: &mut VerifyReport) -> bool {
    if !f.name.starts_with(".tmp") || f.kind != fsx::Kind::Regular {
        return false;
    }
    let age = SystemTime::now()
        .duration_since(f.modified)
        .unwrap_or_default();
    if age > TEMPORARY_GRACE && dir.remove(&f.name).is_ok() {
        report
            .removed
            .push((dir.path().join(&f.name), "stale temporary file".into()));
    }
    true
}

/// Parses sizes such as `500M`, `10G`, `1.5GiB`, `123456` (bytes). Units
/// are powers of 1024, as ccache's `--max-size` with binary suffixes.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return None,
    };
    let bytes = num * mult as f64;
    (num.is_finite() && num >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

/// Parses ages such as `3600`, `90s`, `30m`, `12h`, `7d`.
pub fn parse_age(s: &str) -> Option<Duration> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().ok()?;
    let unit_secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return None,
    };
    // An age beyond any file's (more than 10,000 years) is refused rather
    // than wrapped into a small one.
    let secs = n
        .checked_mul(unit_secs)
        .filter(|s| *s <= 10_000 * 365 * 86400)?;
    Some(Duration::from_secs(secs))
}

impl super::storage::Storage for Store {
    fn get(&self, key: &FragmentDigest) -> Result<Lookup, StoreError> {
        Store::get(self, key)
    }

    fn put(&self, key: &FragmentDigest, entry: &Entry) -> Result<u64, StoreError> {
        Store::put(self, key, entry)
    }

    fn put_many(&self, items: &[(FragmentDigest, Entry)]) -> Result<u64, StoreError> {
        Store::put_many(self, items)
    }

    fn remove(&self, key: &FragmentDigest) -> Result<(), StoreError> {
        Store::remove(self, key)
    }
}

#[cfg(test)]
use super::storage::EntryInfo;

#[cfg(test)]
impl Store {
    /// Every entry the index points at, with its pack's time: a walk of
    /// every pack (tests and tools only; nothing on a build's path).
    pub fn entries(&self) -> Vec<EntryInfo> {
        let Ok(Some((v1, packs))) = self.for_reading() else {
            return Vec::new();
        };
        let Ok(Some(index)) = self.index(v1, true) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in Store::list_packs(packs, None) {
            let Ok((bytes, _)) = packs.read_regular(&pack_name(p.pack), PACK_MAX_BYTES as u64)
            else {
                continue;
            };
            for (d, at, e) in pack_records(p.pack, &bytes).0 {
                if index.find(&d).ok().flatten() == Some(at) {
                    out.push(EntryInfo {
                        key: d,
                        bytes: e.len() as u64 + 4,
                        last_used: p.modified,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::fs;

    fn digest(n: u8) -> FragmentDigest {
        FragmentDigest(*blake3::hash(&[n]).as_bytes())
    }

    /// `len` bytes zstd cannot shrink (an entry stored as it is).
    pub(crate) fn noise(seed: u8, len: usize) -> Vec<u8> {
        let mut out = vec![0; len];
        blake3::Hasher::new()
            .update(&[seed])
            .finalize_xof()
            .fill(&mut out);
        out
    }

    fn entry(payload: &[u8]) -> Entry {
        Entry {
            kind: EntryKind::Object,
            metadata: br#"{"symbols":["f"]}"#.to_vec(),
            payload: payload.to_vec(),
        }
    }

    /// `--clear` takes the index away only between writers: one that has
    /// just written the index opens it again before letting go of the
    /// lock (it found it gone and warned, beside a build in CI).
    #[test]
    fn clear_waits_for_the_index_writer() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        s.put(&digest(1), &entry(b"\x7fELF...")).unwrap();
        let v1 = RepoDir::open_path(d.path(), &["v1"], false)
            .unwrap()
            .unwrap();
        let held = index::hold_lock(&v1, Duration::from_secs(1))
            .unwrap()
            .unwrap();
        let index_path = d.path().join("v1").join(INDEX);
        std::thread::scope(|scope| {
            let clearing = scope.spawn(|| Store::new(d.path()).clear());
            std::thread::sleep(Duration::from_millis(200));
            assert!(index_path.exists(), "cleared under a writer's lock");
            drop(held);
            clearing.join().unwrap().unwrap();
        });
        assert!(!index_path.exists());
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Miss));
    }

    #[test]
    fn round_trip() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Miss));
        s.put(&digest(1), &entry(b"\x7fELF...")).unwrap();
        match s.get(&digest(1)).unwrap() {
            Lookup::Hit(e) => assert_eq!(e, entry(b"\x7fELF...")),
            other => panic!("{other:?}"),
        }
        let deleted = Entry {
            kind: EntryKind::Deleted,
            metadata: vec![],
            payload: vec![],
        };
        s.put(&digest(2), &deleted).unwrap();
        assert!(
            matches!(s.get(&digest(2)).unwrap(), Lookup::Hit(e) if e.kind == EntryKind::Deleted)
        );
    }

    /// The pack file that holds `d`, as the index says.
    fn pack_path(s: &Store, d: &FragmentDigest) -> (PathBuf, Location) {
        let (v1, _) = s.for_reading().unwrap().unwrap();
        let at = s.locate(v1, d).unwrap().unwrap();
        (s.root().join(PACKS).join(pack_name(at.pack)), at)
    }

    #[test]
    fn the_storage_interface_lists_and_removes() {
        use crate::repo::storage::Storage;
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let storage: &dyn Storage = &s;
        for i in 0..3 {
            storage.put(&digest(i), &entry(&[i; 10])).unwrap();
        }
        let mut keys: Vec<FragmentDigest> = s.entries().into_iter().map(|e| e.key).collect();
        keys.sort();
        let mut want = vec![digest(0), digest(1), digest(2)];
        want.sort();
        assert_eq!(keys, want);
        storage.remove(&digest(1)).unwrap();
        storage.remove(&digest(1)).unwrap();
        assert!(matches!(storage.get(&digest(1)).unwrap(), Lookup::Miss));
        assert_eq!(s.entries().len(), 2);
    }

    #[test]
    fn a_pack_holds_many_entries_in_one_file() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let items: Vec<(FragmentDigest, Entry)> =
            (0..40).map(|i| (digest(i), entry(&[i; 300]))).collect();
        s.put_many(&items).unwrap();
        for (k, e) in &items {
            match s.get(k).unwrap() {
                Lookup::Hit(got) => assert_eq!(&got, e),
                other => panic!("{k:?}: {other:?}"),
            }
        }
        // One pack, the index and its lock: no file per entry, no
        // temporary left.
        let packs: Vec<_> = fs::read_dir(s.root().join(PACKS)).unwrap().collect();
        assert_eq!(packs.len(), 1);
        assert_eq!(fs::read_dir(s.root()).unwrap().count(), 3);
        let (bytes, count) = s.size();
        assert_eq!(count, 40);
        let pack_bytes = fs::metadata(pack_path(&s, &digest(0)).0).unwrap().len();
        assert!(bytes > pack_bytes, "{bytes} vs {pack_bytes}");
        assert_eq!(s.verify_all().removed, vec![]);
        // Removing one entry leaves the others readable.
        s.remove(&digest(3)).unwrap();
        assert!(matches!(s.get(&digest(3)).unwrap(), Lookup::Miss));
        assert!(matches!(s.get(&digest(4)).unwrap(), Lookup::Hit(_)));
    }

    /// A store for an invocation reads back what it holds and writes it
    /// all as one pack when flushed; another store sees it then.
    #[test]
    fn an_invocation_writes_one_pack() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::for_invocation(d.path());
        s.put(&digest(1), &entry(b"one")).unwrap();
        s.put_many(&[(digest(2), entry(b"two")), (digest(3), entry(b"three"))])
            .unwrap();
        s.put(&digest(1), &entry(b"one, again")).unwrap();
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Hit(e) if e == entry(b"one, again")));
        let other = Store::new(d.path());
        assert!(matches!(other.get(&digest(2)).unwrap(), Lookup::Miss));
        assert!(s.flush().unwrap() > 0);
        assert_eq!(fs::read_dir(s.root().join(PACKS)).unwrap().count(), 1);
        let other = Store::new(d.path());
        for (i, want) in [(1, &b"one, again"[..]), (2, b"two"), (3, b"three")] {
            assert!(matches!(other.get(&digest(i)).unwrap(), Lookup::Hit(e) if e == entry(want)));
        }
        // Dropped without a flush: written all the same.
        let s = Store::for_invocation(d.path());
        s.put(&digest(4), &entry(b"four")).unwrap();
        drop(s);
        assert!(matches!(other.get(&digest(4)).unwrap(), Lookup::Hit(_)));
    }

    /// The first write after an upgrade removes an earlier repocc's
    /// fragment tree (renamed aside while the index is made, removed after
    /// the index lock is released) and leaves nothing aside.
    #[test]
    fn the_first_write_removes_the_old_layout() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let old = s.root().join(OLD_FRAGMENTS);
        for shard in ["ab", "cd"] {
            fs::create_dir_all(old.join(shard)).unwrap();
            fs::write(old.join(shard).join("entry"), b"old").unwrap();
        }
        s.put(&digest(1), &entry(b"new")).unwrap();
        assert!(!old.exists());
        let names: Vec<String> = (fs::read_dir(s.root()).unwrap())
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(names.is_empty(), "{names:?}");
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Hit(_)));
    }

    /// A pack of an earlier layout (and the index that pointed into it) is
    /// not read: the next write makes the index again without it and
    /// removes it, so it does not take room until evicted.
    #[test]
    fn an_earlier_versions_packs_are_removed_when_the_index_is_made() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        s.put(&digest(1), &entry(b"old")).unwrap();
        let (old_pack, _) = pack_path(&s, &digest(1));
        let mut bytes = fs::read(&old_pack).unwrap();
        bytes[8..12].copy_from_slice(&(PACK_VERSION - 1).to_le_bytes());
        fs::write(&old_pack, &bytes).unwrap();
        let mut index_bytes = fs::read(s.root().join(INDEX)).unwrap();
        index_bytes[8] ^= 3;
        fs::write(s.root().join(INDEX), &index_bytes).unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Miss));
        s.put(&digest(2), &entry(b"new")).unwrap();
        assert!(!old_pack.exists(), "the earlier pack is left");
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Miss));
        assert!(matches!(s.get(&digest(2)).unwrap(), Lookup::Hit(_)));
        assert_eq!(fs::read_dir(s.root().join(PACKS)).unwrap().count(), 1);
    }

    /// What an invocation stored counts as what its pack takes, compressed,
    /// and the entries' share of the index (the size ledger adds it up):
    /// not as the entries' own bytes, which counted twice as high.
    #[test]
    fn an_invocation_counts_its_pack_bytes() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::for_invocation(d.path());
        let object = |i: u8| entry(&[&[i; 2000][..], b"code", &[0u8; 2000]].concat());
        let mut raw = 0;
        for i in 0..20 {
            assert_eq!(
                s.put(&digest(i), &object(i)).unwrap(),
                0,
                "counted when flushed"
            );
            raw += encode_packed(&digest(i), &object(i)).len() as u64;
        }
        let counted = s.flush().unwrap();
        let packs: Vec<_> = fs::read_dir(s.root().join(PACKS)).unwrap().collect();
        assert_eq!(packs.len(), 1);
        let pack_bytes = packs[0].as_ref().unwrap().metadata().unwrap().len();
        assert_eq!(counted, pack_bytes + 20 * index::BYTES_PER_ENTRY);
        assert!(pack_bytes * 4 < raw, "{pack_bytes} of {raw} bytes");
        // A store that writes at once counts the same way.
        let now = Store::new(d.path());
        let counted = now.put(&digest(30), &object(30)).unwrap();
        let newest = (fs::read_dir(s.root().join(PACKS)).unwrap())
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum::<u64>()
            - pack_bytes;
        assert_eq!(counted, newest + index::BYTES_PER_ENTRY);
    }

    /// The index grows past its first table, keeps every entry, and a
    /// damaged index is rebuilt from the packs.
    #[test]
    fn the_index_grows_and_is_rebuilt_from_the_packs() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let key = |i: u32| FragmentDigest(*blake3::hash(&i.to_le_bytes()).as_bytes());
        for batch in 0..10u32 {
            let items: Vec<(FragmentDigest, Entry)> = (0..300)
                .map(|i| {
                    (
                        key(batch * 300 + i),
                        entry(&(batch * 300 + i).to_le_bytes()),
                    )
                })
                .collect();
            s.put_many(&items).unwrap();
            // The table is three quarters full after it grows, and
            // sized for new keys only: the first pack's 300 (which the
            // index made from the packs already holds) take 400 slots,
            // not the 800 that counting them twice gave.
            let slots = (fs::metadata(s.root().join(INDEX)).unwrap().len() - 32) / 24;
            if batch == 0 {
                assert_eq!(slots, 400);
            }
            let live = 300 * u64::from(batch + 1);
            assert!(slots * 7 >= live * 8, "{slots} slots for {live}");
            assert!(
                slots * 3 <= live * 4 * 8 / 7 + 3,
                "{slots} slots for {live}"
            );
        }
        let reader = Store::new(d.path());
        let all_found = |st: &Store| {
            (0..3000).all(|i| matches!(st.get(&key(i)).unwrap(), Lookup::Hit(e) if e == entry(&i.to_le_bytes())))
        };
        assert!(all_found(&reader));
        assert_eq!(s.size().1, 3000);
        // Garbage over the index: a read misses, the next write rebuilds it.
        fs::write(s.root().join(INDEX), b"garbage").unwrap();
        let fresh = Store::new(d.path());
        assert!(matches!(fresh.get(&key(7)).unwrap(), Lookup::Miss));
        fresh.put(&key(5000), &entry(b"new")).unwrap();
        assert!(all_found(&Store::new(d.path())));
        // `--verify` rebuilds it too, and finds nothing wrong.
        fs::remove_file(s.root().join(INDEX)).unwrap();
        assert_eq!(Store::new(d.path()).verify_all().removed, vec![]);
        assert!(all_found(&Store::new(d.path())));
    }

    /// A damaged block costs its own entries: the pack's other blocks
    /// read, and `--verify` writes the pack again without them.
    #[test]
    fn a_damaged_block_costs_its_entries_only() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        // Entries zstd cannot shrink, 8 KiB each: four to a block.
        let items: Vec<(FragmentDigest, Entry)> = (0..40)
            .map(|i| (digest(i), entry(&noise(i, 8000))))
            .collect();
        s.put_many(&items).unwrap();
        let (path, at) = pack_path(&s, &digest(10));
        let same_block: Vec<u8> = (0..40)
            .filter(|&i| pack_path(&s, &digest(i)).1.offset == at.offset)
            .collect();
        assert!((2..=4).contains(&same_block.len()), "{same_block:?}");
        let mut bytes = fs::read(&path).unwrap();
        bytes[at.offset as usize + BLOCK_HEADER_LEN + 100] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            s.get(&digest(10)).unwrap(),
            Lookup::Corrupt(Corruption::BadChecksum)
        ));
        assert!(matches!(s.get(&digest(10)).unwrap(), Lookup::Miss));
        for i in (0..40).filter(|i| !same_block.contains(i)) {
            assert!(
                matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(e) if e == items[i as usize].1),
                "{i}"
            );
        }
        // `--verify` reports the damage and keeps the rest.
        let r = Store::new(d.path()).verify_all();
        assert_eq!(r.removed.len(), 1, "{r:?}");
        let s = Store::new(d.path());
        assert_eq!(s.size().1, 40 - same_block.len() as u64);
        assert_eq!(Store::new(d.path()).verify_all().removed, vec![]);
        // A truncated pack: entries past the cut are corrupt, not errors;
        // those before it stay.
        let (path, last) = pack_path(&s, &digest(39));
        let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(u64::from(last.offset) + 10).unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(39)).unwrap(), Lookup::Corrupt(_)));
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)));
        Store::new(d.path()).verify_all();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(1)).unwrap(), Lookup::Hit(_)));
        assert!(matches!(s.get(&digest(39)).unwrap(), Lookup::Miss));
    }

    /// A pack holding a unit's whole object compresses its own fragments
    /// against it, reads them back, and a damaged object costs that pack's
    /// fragments only.
    #[test]
    fn fragments_compress_against_the_packs_object() {
        let d = tempfile::tempdir().unwrap();
        // An "object" zstd cannot shrink, and the unit's own fragments cut
        // out of it.
        let object = noise(1, 200_000);
        let own = |payload: &[u8]| Entry {
            kind: EntryKind::UnitObject,
            ..entry(payload)
        };
        let fragments: Vec<(FragmentDigest, Entry)> = (0..100u8)
            .map(|i| {
                let at = usize::from(i) * 2000;
                (digest(i), own(&object[at..at + 2000]))
            })
            .collect();
        let result = Entry {
            kind: EntryKind::UnitResult,
            metadata: b"meta".to_vec(),
            payload: zstd::bulk::compress(&object, 1).unwrap(),
        };
        let pack_of = |items: &[(FragmentDigest, Entry)]| {
            let s = Store::for_invocation(d.path());
            s.put_many(items).unwrap();
            s.flush().unwrap();
            pack_path(&s, &items[0].0).0
        };
        let mut with = fragments.clone();
        with.push((digest(230), result.clone()));
        let with = pack_of(&with);
        let alone = pack_of(&[(digest(231), result.clone())]);
        // Fragments another unit may read are not compressed against it.
        let shared: Vec<_> = (0..100u8)
            .map(|i| (digest(120 + i), entry(&fragments[usize::from(i)].1.payload)))
            .chain([(digest(232), result)])
            .collect();
        let shared_len = fs::metadata(pack_of(&shared)).unwrap().len();
        let alone_len = fs::metadata(&alone).unwrap().len();
        assert!(shared_len > alone_len + 190_000, "{shared_len}");
        let others: Vec<_> = (0..20u8)
            .map(|i| (digest(100 + i), entry(&noise(100 + i, 2000))))
            .collect();
        let other = pack_of(&others);
        let with_len = fs::metadata(&with).unwrap().len();
        assert!(
            with_len < alone_len + 20_000,
            "200 KB of fragments took {} bytes beside the object",
            with_len - alone_len
        );
        let s = Store::new(d.path());
        for (k, e) in &fragments {
            assert!(matches!(s.get(k).unwrap(), Lookup::Hit(got) if got == *e));
        }
        assert_eq!(Store::new(d.path()).verify_all().removed, vec![]);
        // The object's block damaged: its pack's fragments are corrupt, the
        // other pack's entries are not.
        let mut bytes = fs::read(&with).unwrap();
        bytes[PACK_HEADER_LEN + BLOCK_HEADER_LEN + 50] ^= 1;
        fs::write(&with, &bytes).unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(3)).unwrap(), Lookup::Corrupt(_)));
        for (k, e) in &others {
            assert!(matches!(s.get(k).unwrap(), Lookup::Hit(got) if got == *e));
        }
        let r = Store::new(d.path()).verify_all();
        assert!(!r.removed.is_empty(), "{r:?}");
        let s = Store::new(d.path());
        assert!(matches!(s.get(&digest(7)).unwrap(), Lookup::Miss));
        assert!(matches!(s.get(&digest(101)).unwrap(), Lookup::Hit(_)));
        assert_eq!(Store::new(d.path()).verify_all().removed, vec![]);
        assert!(other.exists());
    }

    #[test]
    fn packing_replaces_what_is_in_the_way_without_following_it() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        s.put(&digest(0), &entry(b"old")).unwrap();
        // `packs` turned into a symlink to a directory outside.
        let packs = s.root().join(PACKS);
        fs::remove_dir_all(&packs).unwrap();
        std::os::unix::fs::symlink(outside.path(), &packs).unwrap();
        // Duplicates: the last entry of a key is the one stored.
        let mut items: Vec<(FragmentDigest, Entry)> =
            (0..5).map(|i| (digest(i), entry(&[i; 64]))).collect();
        items.push((digest(4), entry(b"last")));
        let s = Store::new(d.path());
        s.put_many(&items).unwrap();
        for i in 0..4 {
            assert!(matches!(s.get(&digest(i)).unwrap(), Lookup::Hit(e) if e == entry(&[i; 64])));
        }
        assert!(matches!(s.get(&digest(4)).unwrap(), Lookup::Hit(e) if e == entry(b"last")));
        assert!(fs::symlink_metadata(&packs).unwrap().is_dir());
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        // Every bit: one flipped bit of the kind once read an object as a
        // deletion (a flip of bit 6 only, as this test did, never did).
        let d = digest(3);
        let bytes = encode(&d, &entry(b"payload bytes"));
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(
                    decode(&d, &bad).is_err(),
                    "flip of bit {bit} at {i} not detected"
                );
            }
        }
        assert!(decode(&d, &bytes[..bytes.len() - 1]).is_err());
        assert!(
            decode(&digest(4), &bytes).is_err(),
            "entry under another key"
        );
    }

    /// A body compressed on its own (as remote values were written before
    /// the value's one compression) reads back whole, and a flipped bit in
    /// the frame is found by the checksum before the frame is decompressed.
    #[test]
    fn compressed_bodies_read_back() {
        let d = digest(5);
        let object = entry(&[&[0u8; 3000][..], b"code", &[0u8; 3000]].concat());
        assert_eq!(encode(&d, &object)[13], 0, "written uncompressed");
        let bytes = encode_with(&d, &object, true);
        assert!(bytes.len() < 500, "{} bytes stored", bytes.len());
        assert_eq!(bytes[13], FLAG_COMPRESSED);
        assert_eq!(decode(&d, &bytes).unwrap(), object);
        for i in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(decode(&d, &bad).is_err(), "flip at {i} not detected");
        }
        // What zstd cannot shrink is stored as it is.
        let random = entry(&noise(1, 4000));
        let stored = encode_with(&d, &random, true);
        assert_eq!(stored[13], 0);
        assert_eq!(decode(&d, &stored).unwrap(), random);
    }

    /// One unit's optimizer deleted a constant that another unit kept: the
    /// code stays indexed whichever is stored last (it serves both).
    #[test]
    fn a_deletion_never_replaces_an_entry() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        let deleted = Entry {
            kind: EntryKind::Deleted,
            metadata: Vec::new(),
            payload: Vec::new(),
        };
        s.put(&digest(1), &entry(b"code")).unwrap();
        s.put(&digest(1), &deleted).unwrap();
        s.put(&digest(2), &deleted).unwrap();
        s.put(&digest(2), &entry(b"code")).unwrap();
        // The same when the index is made again from the packs (`--verify`).
        for rebuilt in [false, true] {
            if rebuilt {
                std::thread::sleep(Duration::from_millis(20));
                s.put(&digest(1), &deleted).unwrap();
                assert!(s.verify_all().removed.is_empty());
            }
            for k in [1, 2] {
                match s.get(&digest(k)).unwrap() {
                    Lookup::Hit(e) => assert_eq!(e.kind, EntryKind::Object, "key {k}"),
                    other => panic!("key {k}: {other:?}"),
                }
            }
        }
        s.put(&digest(3), &deleted).unwrap();
        assert!(
            matches!(s.get(&digest(3)).unwrap(), Lookup::Hit(e) if e.kind == EntryKind::Deleted)
        );
    }

    #[test]
    fn corrupt_entries_read_as_corrupt_and_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        s.put(&digest(5), &entry(b"abc")).unwrap();
        let (path, _) = pack_path(&s, &digest(5));
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        fs::write(&path, bytes).unwrap();
        assert!(matches!(
            s.get(&digest(5)).unwrap(),
            Lookup::Corrupt(Corruption::BadChecksum)
        ));
        assert!(matches!(s.get(&digest(5)).unwrap(), Lookup::Miss));
    }

    #[test]
    fn verify_all_reports_and_removes_bad_entries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        for i in 0..5 {
            s.put(&digest(i), &entry(&[i; 100])).unwrap();
        }
        let (bad, _) = pack_path(&s, &digest(2));
        fs::write(&bad, b"garbage").unwrap();
        // A FIFO and a stray file among the packs, a leftover old layout.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            s.root().join(PACKS).join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        fs::create_dir_all(s.root().join(OLD_FRAGMENTS).join("ab")).unwrap();
        let r = Store::new(dir.path()).verify_all();
        assert_eq!(r.checked, 4 + 3, "{r:?}");
        assert_eq!(r.removed.len(), 3, "{r:?}");
        assert!(r.removed.iter().any(|(p, _)| *p == bad));
        assert!(!s.root().join(OLD_FRAGMENTS).exists());
        assert_eq!(Store::new(dir.path()).verify_all().removed.len(), 0);
        let s = Store::new(dir.path());
        assert!(matches!(s.get(&digest(2)).unwrap(), Lookup::Miss));
        assert!(matches!(s.get(&digest(4)).unwrap(), Lookup::Hit(_)));
    }

    #[test]
    fn eviction_removes_least_recently_used_first() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        // Old enough that a read refreshes the time (reads refresh hourly).
        let base = SystemTime::now() - Duration::from_secs(10 * 3600);
        for i in 0..10u8 {
            s.put(&digest(i), &entry(&noise(i, 1000))).unwrap();
            let f = fs::File::options()
                .write(true)
                .open(pack_path(&s, &digest(i)).0)
                .unwrap();
            f.set_modified(base + Duration::from_secs(i as u64))
                .unwrap();
        }
        // Reading entry 0 makes its pack the most recently used.
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)));
        let (total, n) = s.size();
        assert_eq!(n, 10);
        let r = s.evict_to(total / 2);
        assert!(r.bytes_after <= total / 2, "{r:?}");
        assert_eq!(r.bytes_after, s.size().0);
        assert_eq!(r.removed, 10 - s.size().1);
        assert!(
            matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)),
            "recently used entry evicted"
        );
        assert!(
            matches!(s.get(&digest(1)).unwrap(), Lookup::Miss),
            "oldest entry kept"
        );
        let r = s.evict_older_than(Duration::from_secs(3600));
        assert!(r.removed >= 1);
        assert!(matches!(s.get(&digest(0)).unwrap(), Lookup::Hit(_)));
        assert_eq!(s.size().1, 1);
    }

    #[test]
    fn concurrent_writers_and_readers_see_whole_entries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::new(dir.path());
        std::thread::scope(|scope| {
            for t in 0..4 {
                let s = &s;
                scope.spawn(move || {
                    for i in 0..50u8 {
                        s.put(&digest(i), &entry(&[i; 4096])).unwrap();
                        match s.get(&digest((i + t) % 50)).unwrap() {
                            Lookup::Hit(e) => assert_eq!(e.payload, vec![(i + t) % 50; 4096]),
                            Lookup::Miss => {}
                            Lookup::Corrupt(c) => panic!("torn read: {c:?}"),
                        }
                    }
                });
            }
        });
        assert_eq!(s.verify_all().removed.len(), 0);
    }

    /// The store at scale (issue 42), a benchmark rather than a test: run
    /// by `benches/store-scale.sh`, which sets `REPOCC_SCALE` (entry
    /// counts, comma-separated). For each count it fills a new store
    /// through the storage interface, a pack of 1,000 entries per "compile"
    /// (entries of 200–1,200 bytes, half of them zeros as objects are),
    /// and prints store and look-up latency (median, p99), the size query
    /// `--show-stats` makes, eviction of 10% and `--verify`.
    #[test]
    #[ignore]
    fn store_at_scale() {
        use std::time::Instant;
        let counts: Vec<u64> = std::env::var("REPOCC_SCALE")
            .unwrap_or_else(|_| "10000".into())
            .split(',')
            .filter_map(|n| n.trim().parse().ok())
            .collect();
        let base = std::env::var_os("REPOCC_SCALE_DIR").map(PathBuf::from);
        let pct = |v: &mut Vec<f64>, p: f64| {
            v.sort_by(|a, b| a.partial_cmp(b).unwrap());
            v[((v.len() - 1) as f64 * p) as usize]
        };
        println!("| entries | store µs/entry (median, p99 per compile of 1,000) | look-up µs (median, p99) | miss µs (median) | size query ms | evict 10% s | verify s | bytes |");
        println!("|---|---|---|---|---|---|---|---|");
        for n in counts {
            let dir = match &base {
                Some(b) => tempfile::tempdir_in(b).unwrap(),
                None => tempfile::tempdir().unwrap(),
            };
            let key = |i: u64| FragmentDigest(*blake3::hash(&i.to_le_bytes()).as_bytes());
            let body = |i: u64| {
                let len = 200 + (i % 1000) as usize;
                let mut b = noise((i % 251) as u8, len / 2);
                b.extend_from_slice(&i.to_le_bytes());
                b.resize(len, 0);
                b
            };
            let store = Store::new(dir.path());
            let mut per_entry = Vec::new();
            let mut i = 0;
            while i < n {
                let batch: Vec<(FragmentDigest, Entry)> = (i..(i + 1000).min(n))
                    .map(|k| (key(k), entry(&body(k))))
                    .collect();
                let t = Instant::now();
                store.put_many(&batch).unwrap();
                per_entry.push(t.elapsed().as_secs_f64() * 1e6 / batch.len() as f64);
                i += batch.len() as u64;
            }
            let reader = Store::new(dir.path());
            let mut hits = Vec::new();
            let mut misses = Vec::new();
            for j in 0..10_000u64 {
                let k = (j.wrapping_mul(2_654_435_761)) % n;
                let t = Instant::now();
                assert!(matches!(reader.get(&key(k)).unwrap(), Lookup::Hit(_)));
                hits.push(t.elapsed().as_secs_f64() * 1e6);
                let t = Instant::now();
                assert!(matches!(reader.get(&key(n + j)).unwrap(), Lookup::Miss));
                misses.push(t.elapsed().as_secs_f64() * 1e6);
            }
            let t = Instant::now();
            let (bytes, count) = Store::new(dir.path()).size();
            let size_ms = t.elapsed().as_secs_f64() * 1e3;
            assert_eq!(count, n);
            let t = Instant::now();
            let r = Store::new(dir.path()).evict_to(bytes - 1);
            let evict_s = t.elapsed().as_secs_f64();
            assert!(r.removed > 0);
            let t = Instant::now();
            let v = Store::new(dir.path()).verify_all();
            let verify_s = t.elapsed().as_secs_f64();
            assert!(v.removed.is_empty());
            println!(
                "| {n} | {:.1}, {:.1} | {:.1}, {:.1} | {:.1} | {size_ms:.1} | {evict_s:.2} ({} removed) | {verify_s:.2} | {bytes} |",
                pct(&mut per_entry, 0.5),
                pct(&mut per_entry, 0.99),
                pct(&mut hits, 0.5),
                pct(&mut hits, 0.99),
                pct(&mut misses, 0.5),
                r.removed,
            );
        }
    }

    #[test]
    fn unwritable_repository_is_an_error() {
        let s = Store::new(Path::new("/proc/repocc-store"));
        assert!(matches!(
            s.put(&digest(1), &entry(b"x")),
            Err(StoreError::Unwritable { .. })
        ));
    }

    #[test]
    fn sizes_and_ages_parse() {
        assert_eq!(parse_size("10G"), Some(10 << 30));
        assert_eq!(parse_size("500M"), Some(500 << 20));
        assert_eq!(parse_size("1.5GiB"), Some(3 << 29));
        assert_eq!(parse_size("1234"), Some(1234));
        assert_eq!(parse_size("12X"), None);
        assert_eq!(parse_age("7d"), Some(Duration::from_secs(7 * 86400)));
        assert_eq!(parse_age("90"), Some(Duration::from_secs(90)));
        assert_eq!(parse_age("1w"), None);
        assert_eq!(parse_age("99999999999999999d"), None, "overflow");
        assert_eq!(parse_age("213503982334601d"), None, "overflow");
        assert_eq!(parse_size("99999999999999999999T"), None);
        assert_eq!(
            FragmentDigest::from_hex(&digest(9).to_hex()),
            Some(digest(9))
        );
    }
}
