//! The fragment store's index, `v1/index`: where each entry lives (which
//! pack, at which offset, how long), as one open-addressing hash table in
//! one file, so that a look-up is one or two `pread`s whatever the number
//! of entries (issue 42), and a compile's new entries cost no file each.
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `RPCCINDX` |
//! | 4 | version (little endian) |
//! | 4 | the number of slots |
//! | 8 | slots in use (live and removed) |
//! | 8 | live slots |
//! | 24 × slots | slots: the key's first 8 bytes, the entry's block offset in the pack and its offset in the block (u32 each), the pack (u64; 0 empty, all ones removed) |
//!
//! A key's probe starts at the slot its digest's first 8 bytes name (modulo
//! the number of slots) and runs forward (linear probing) to the first empty slot. Keys are blake3
//! digests, so 8 of their bytes tell entries apart (two of a million
//! entries share them with a chance of about 3 in 10^8), and the entry in
//! the pack carries its whole digest, checked on every read: two keys that
//! do share the 8 bytes cost a miss, never the other's entry, and a slot
//! that points at the wrong bytes (a torn write after a power cut) reads as
//! a corrupt entry, never as another one. (A slot of 32 bytes, with 16 of
//! the key, made the index a tenth of lua5.4's repository.)
//!
//! Readers take no lock: a slot is written after its pack was renamed into
//! place, its pack number last (a slot with pack 0 is empty, so a reader
//! never takes a half-written slot for a live one), and a reader that
//! still meets a bad entry reads it once more before calling it corrupt.
//! Writers hold `v1/index.lock` (a `flock`, released by the kernel when a
//! writer dies, so a killed compile never stalls another), waited for at
//! most [`LOCK_WAIT`]: a compile that cannot get it leaves its pack
//! unindexed, which costs a recompile, never a failed build. When the
//! table is seven-eighths used it is rebuilt, at most three-quarters full,
//! into a new file renamed over the old one (dropping removed slots and
//! slots of packs that are gone); readers holding the old file find it
//! replaced when they miss (see [`Index::is_current`]). (Tables at most
//! half full after a rebuild left sqlite3.c's one compile with an index of
//! 16,384 slots for 6,123 entries, a tenth of its repository; at seven
//! eighths an absent key's probe passes about 32 slots, within the one
//! read of [`RUN`] slots a probe makes.)
//!
//! The index is derived data: every pack lists its own entries, so a
//! damaged or missing index is rebuilt from the packs (`--verify` does it
//! always), and a pack that is not indexed is only unused bytes that
//! eviction removes in its turn.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::fsx::{self, ReadError, RepoDir};
use super::storage::FragmentDigest;

pub const INDEX: &str = "index";
pub const INDEX_LOCK: &str = "index.lock";
const MAGIC: &[u8; 8] = b"RPCCINDX";
/// 2: the packs' entries changed layout (store's `PACK_VERSION` 4); an
/// index of version 1 points into earlier packs and is rebuilt. 3: slots
/// of 24 bytes (8 of the key); an earlier index is rebuilt from the packs.
/// 4: any number of slots (was a power of two: sqlite3.c's one compile
/// left 8,192 slots for 3,864 entries, 197 KB; 5,152 slots now); the
/// packs' version 5.
const VERSION: u32 = 4;
const HEADER_LEN: u64 = 32;
const SLOT_LEN: usize = 24;
/// Where a slot's pack field is: written last, as an aligned 8 bytes
/// (`HEADER_LEN` and `SLOT_LEN` are multiples of 8).
const PACK_FIELD: u64 = 16;
/// The smallest table: 64 slots, 1.5 KiB (a repository under a small size
/// limit must still fit it).
const MIN_SLOTS: u32 = 64;
/// The largest: 2^28 slots (6 GiB), far past any repository size limit.
const MAX_SLOTS: u32 = 1 << 28;
const EMPTY: u64 = 0;
const REMOVED: u64 = u64::MAX;
/// What an entry costs in the index at most, counted when it is stored:
/// a table is rebuilt with 4/3 slots per entry, so it holds about 32
/// bytes an entry (and twice that for the table's small start).
pub const BYTES_PER_ENTRY: u64 = 64;
/// Slots read at once while probing (one 1.5 KiB read).
const RUN: u64 = 64;
/// How long a writer waits for the index lock before giving up on
/// indexing its pack (another writer holds it for milliseconds; only a
/// rebuild at `--verify` holds it longer).
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Where an entry's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The pack's number (its file name is the number in hex).
    pub pack: u64,
    pub offset: u32,
    pub len: u32,
}

/// The part of a key a slot holds.
type SlotKey = [u8; 8];

fn slot_key(d: &FragmentDigest) -> SlotKey {
    d.0[..8].try_into().expect("8 of 32 bytes")
}

/// Where a key's probe starts: from bytes the slot holds, so that a
/// table can be rebuilt from its slots alone.
fn home(key: &SlotKey) -> u64 {
    u64::from_le_bytes(*key)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    slots: u32,
    used: u64,
    live: u64,
}

impl Header {
    fn capacity(&self) -> u64 {
        u64::from(self.slots)
    }

    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[..8].copy_from_slice(MAGIC);
        out[8..12].copy_from_slice(&VERSION.to_le_bytes());
        out[12..16].copy_from_slice(&self.slots.to_le_bytes());
        out[16..24].copy_from_slice(&self.used.to_le_bytes());
        out[24..32].copy_from_slice(&self.live.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8]) -> Option<Header> {
        if bytes.len() < HEADER_LEN as usize || &bytes[..8] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
        let h = Header {
            slots: u32_at(12),
            used: u64_at(16),
            live: u64_at(24),
        };
        (u32_at(8) == VERSION && (MIN_SLOTS..=MAX_SLOTS).contains(&h.slots) && h.live <= h.used)
            .then_some(h)
    }
}

#[derive(Clone, Copy)]
struct Slot {
    key: SlotKey,
    at: Location,
}

impl Slot {
    fn decode(b: &[u8]) -> Slot {
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        Slot {
            key: b[..8].try_into().unwrap(),
            at: Location {
                offset: u32_at(8),
                len: u32_at(12),
                pack: u64::from_le_bytes(b[16..24].try_into().unwrap()),
            },
        }
    }

    fn encode(&self) -> [u8; SLOT_LEN] {
        let mut out = [0u8; SLOT_LEN];
        out[..8].copy_from_slice(&self.key);
        out[8..12].copy_from_slice(&self.at.offset.to_le_bytes());
        out[12..16].copy_from_slice(&self.at.len.to_le_bytes());
        out[16..24].copy_from_slice(&self.at.pack.to_le_bytes());
        out
    }

    fn is_live(&self) -> bool {
        self.at.pack != EMPTY && self.at.pack != REMOVED
    }
}

/// Why the index cannot be used as it is.
#[derive(Debug)]
pub enum OpenError {
    Missing,
    /// Not an index (bad header, wrong size, not a regular file).
    Damaged(String),
    Io(io::Error),
}

/// An open index file.
pub struct Index {
    file: File,
    header: Header,
    /// Device and inode, to tell whether the file at the path is this one.
    identity: (u64, u64),
    /// Look-ups made through [`Index::find`].
    lookups: AtomicU64,
    /// The slot table as read whole once look-ups made it pay (see
    /// [`Index::find`]); `None` inside when it could not be read.
    table: OnceLock<Option<Vec<u8>>>,
}

/// Look-ups a process makes before the slot table may be read whole.
const TABLE_AFTER_LOOKUPS: u64 = 64;
/// What one probe's read costs, in bytes of the table read whole (a page
/// and a system call).
const PROBE_COST_BYTES: u64 = 4096;

impl Index {
    /// Opens `index` in `dir` for reading (`writable`: and writing).
    pub fn open(dir: &RepoDir, writable: bool) -> Result<Index, OpenError> {
        let file = if writable {
            match dir.kind_of(INDEX) {
                Ok(Some(fsx::Kind::Regular)) => {}
                Ok(None) => return Err(OpenError::Missing),
                Ok(Some(kind)) => return Err(OpenError::Damaged(format!("{kind:?}"))),
                Err(e) => return Err(OpenError::Io(e)),
            }
            // Checked as a read checks it first (another user's index is
            // not written either), then opened for writing.
            match dir.open_regular(INDEX) {
                Ok(_) => {}
                Err(ReadError::Io(e)) => return Err(OpenError::Io(e)),
                Err(ReadError::Missing) => return Err(OpenError::Missing),
                Err(other) => return Err(OpenError::Damaged(format!("{other:?}"))),
            }
            dir.lock_file(INDEX).map_err(OpenError::Io)?
        } else {
            match dir.open_regular(INDEX) {
                Ok((f, _)) => f,
                Err(ReadError::Missing) => return Err(OpenError::Missing),
                Err(ReadError::Io(e)) => return Err(OpenError::Io(e)),
                Err(other) => return Err(OpenError::Damaged(format!("{other:?}"))),
            }
        };
        let meta = file.metadata().map_err(OpenError::Io)?;
        let mut head = [0u8; HEADER_LEN as usize];
        file.read_exact_at(&mut head, 0)
            .map_err(|_| OpenError::Damaged("shorter than its header".into()))?;
        let header = Header::decode(&head)
            .ok_or_else(|| OpenError::Damaged("not an index header".into()))?;
        if meta.len() != HEADER_LEN + header.capacity() * SLOT_LEN as u64 {
            return Err(OpenError::Damaged(format!(
                "{} bytes for {} slots",
                meta.len(),
                header.capacity()
            )));
        }
        Ok(Index {
            file,
            header,
            identity: (meta.dev(), meta.ino()),
            lookups: AtomicU64::new(0),
            table: OnceLock::new(),
        })
    }

    /// Live entries, as the header counts them.
    pub fn live(&self) -> u64 {
        self.header.live
    }

    /// Whether the file at `dir`'s `index` is still this one (a writer
    /// may have rebuilt it into a new file).
    pub fn is_current(&self, dir: &RepoDir) -> bool {
        dir.identity_of(INDEX)
            .is_ok_and(|id| id == Some(self.identity))
    }

    /// Reads `n` slots from slot `first` (which does not wrap).
    fn read_slots(&self, first: u64, n: u64) -> io::Result<Vec<Slot>> {
        let buf = self.read_slot_bytes(first, n)?;
        Ok(buf.chunks_exact(SLOT_LEN).map(Slot::decode).collect())
    }

    fn read_slot_bytes(&self, first: u64, n: u64) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; n as usize * SLOT_LEN];
        self.file
            .read_exact_at(&mut buf, HEADER_LEN + first * SLOT_LEN as u64)?;
        Ok(buf)
    }

    /// The slot holding `key`, or the first empty one, with the first
    /// removed slot met on the way; `None` when the whole table was probed
    /// (only a damaged table is full).
    fn probe(&self, key: &FragmentDigest) -> io::Result<Probe> {
        self.probe_with(key, |first, n| self.read_slots(first, n))
    }

    /// [`Index::probe`], reading slots with `read_slots`.
    fn probe_with(
        &self,
        key: &FragmentDigest,
        mut read_slots: impl FnMut(u64, u64) -> io::Result<Vec<Slot>>,
    ) -> io::Result<Probe> {
        let capacity = self.header.capacity();
        let wanted = slot_key(key);
        let mut i = home(&wanted) % capacity;
        let mut probed = 0;
        let mut first_removed = None;
        while probed < capacity {
            let n = RUN.min(capacity - i).min(capacity - probed);
            for (k, slot) in read_slots(i, n)?.into_iter().enumerate() {
                let at = i + k as u64;
                match slot.at.pack {
                    EMPTY => return Ok(Probe::Empty { at, first_removed }),
                    REMOVED => {
                        first_removed.get_or_insert(at);
                    }
                    _ if slot.key == wanted => return Ok(Probe::Found { at, slot }),
                    _ => {}
                }
            }
            probed += n;
            i = (i + n) % capacity;
        }
        Ok(Probe::Full { first_removed })
    }

    /// Where `key`'s entry is, if the index has it. A process that looks
    /// up many keys (a unit cache hit composing thousands of fragments,
    /// the prune stage of a large unit) reads the slot table whole once,
    /// when that costs no more than the probes made so far, instead of a
    /// read per probe: a place found there may have moved since (another
    /// compile's eviction), so the caller that cannot read the entry
    /// there asks [`Index::find_now`]; a key not found there is looked
    /// up now.
    pub fn find(&self, key: &FragmentDigest) -> io::Result<Option<Location>> {
        let made = self.lookups.fetch_add(1, Ordering::Relaxed) + 1;
        let table_bytes = self.header.capacity() * SLOT_LEN as u64;
        let pays = made >= TABLE_AFTER_LOOKUPS && made * PROBE_COST_BYTES >= table_bytes;
        let table = match self.table.get() {
            Some(t) => t.as_deref(),
            None if pays => self
                .table
                .get_or_init(|| self.read_slot_bytes(0, self.header.capacity()).ok())
                .as_deref(),
            None => None,
        };
        if let Some(table) = table {
            let in_memory = |first: u64, n: u64| {
                let at = first as usize * SLOT_LEN;
                Ok(
                    (table[at..at + n as usize * SLOT_LEN].chunks_exact(SLOT_LEN))
                        .map(Slot::decode)
                        .collect(),
                )
            };
            if let Probe::Found { slot, .. } = self.probe_with(key, in_memory)? {
                return Ok(Some(slot.at));
            }
        }
        self.find_now(key)
    }

    /// Where `key`'s entry is now, read from the file.
    pub fn find_now(&self, key: &FragmentDigest) -> io::Result<Option<Location>> {
        Ok(match self.probe(key)? {
            Probe::Found { slot, .. } => Some(slot.at),
            _ => None,
        })
    }

    /// Writes a slot so that a reader never takes a half-written one for
    /// a live slot: its pack (what makes it live, an aligned 8 bytes) is
    /// written last, after the key and place, and a live slot being
    /// replaced is first marked removed.
    fn write_slot(&self, at: u64, slot: &Slot, was_live: bool) -> io::Result<()> {
        let start = HEADER_LEN + at * SLOT_LEN as u64;
        let bytes = slot.encode();
        if was_live {
            self.file
                .write_all_at(&REMOVED.to_le_bytes(), start + PACK_FIELD)?;
        }
        let pack_field = PACK_FIELD as usize;
        self.file.write_all_at(&bytes[..pack_field], start)?;
        self.file
            .write_all_at(&bytes[pack_field..], start + PACK_FIELD)
    }

    fn write_header(&self) -> io::Result<()> {
        self.file.write_all_at(&self.header.encode(), 0)
    }

    /// Every live slot (a rebuild reads the whole table).
    fn live_slots(&self) -> io::Result<Vec<Slot>> {
        let capacity = self.header.capacity();
        let mut out = Vec::with_capacity(self.header.live as usize);
        let mut first = 0;
        while first < capacity {
            let n = (capacity - first).min(1 << 15);
            out.extend(self.read_slots(first, n)?.into_iter().filter(Slot::is_live));
            first += n;
        }
        Ok(out)
    }
}

enum Probe {
    Found { at: u64, slot: Slot },
    Empty { at: u64, first_removed: Option<u64> },
    Full { first_removed: Option<u64> },
}

/// The index, locked for writing.
pub struct Writer<'a> {
    dir: &'a RepoDir,
    /// Held for the writer's life (dropping it unlocks).
    _lock: File,
    index: Index,
}

/// What a writer found at the index's place.
pub enum Locked<'a> {
    Ready(Writer<'a>),
    /// Missing or damaged: the caller builds one (from the packs, or
    /// empty) with [`Writer::create`].
    Absent(Absent<'a>),
}

/// The lock, held, with no usable index under it.
pub struct Absent<'a> {
    dir: &'a RepoDir,
    lock: File,
    pub why: Option<String>,
}

/// Takes the index lock in `dir`, waiting at most `wait`; `Ok(None)` when
/// another writer kept it that long.
pub fn lock(dir: &RepoDir, wait: Duration) -> io::Result<Option<Locked<'_>>> {
    let Some(lock) = hold_lock(dir, wait)? else {
        return Ok(None);
    };
    Ok(Some(match Index::open(dir, true) {
        Ok(index) => Locked::Ready(Writer {
            dir,
            _lock: lock,
            index,
        }),
        Err(OpenError::Missing) => Locked::Absent(Absent {
            dir,
            lock,
            why: None,
        }),
        Err(OpenError::Damaged(why)) => Locked::Absent(Absent {
            dir,
            lock,
            why: Some(why),
        }),
        Err(OpenError::Io(e)) => return Err(e),
    }))
}

/// The index lock of `dir`, held (released when the file is dropped),
/// waiting at most `wait`; `Ok(None)` when another writer kept it that
/// long.
pub fn hold_lock(dir: &RepoDir, wait: Duration) -> io::Result<Option<File>> {
    let lock = dir.lock_file(INDEX_LOCK)?;
    let start = Instant::now();
    loop {
        match lock.try_lock() {
            Ok(()) => return Ok(Some(lock)),
            Err(std::fs::TryLockError::WouldBlock) if start.elapsed() < wait => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
            Err(std::fs::TryLockError::Error(e)) => return Err(e),
        }
    }
}

impl<'a> Absent<'a> {
    /// Writes a new index holding `entries` (later ones win for equal
    /// keys) and returns its writer.
    pub fn create(self, entries: &[(FragmentDigest, Location)]) -> io::Result<Writer<'a>> {
        let slots: Vec<Slot> = entries
            .iter()
            .map(|(d, at)| Slot {
                key: slot_key(d),
                at: *at,
            })
            .collect();
        write_table(self.dir, &slots, 0)?;
        Ok(Writer {
            dir: self.dir,
            _lock: self.lock,
            index: reopen(self.dir)?,
        })
    }
}

/// The index [`write_table`] just wrote, opened for writing.
fn reopen(dir: &RepoDir) -> io::Result<Index> {
    Index::open(dir, true).map_err(|e| match e {
        OpenError::Io(e) => e,
        // Removed since (`--clear` past its wait for the lock): NotFound,
        // which the store takes as "removed meanwhile" and writes again.
        OpenError::Missing => {
            io::Error::new(io::ErrorKind::NotFound, "the index just written is gone")
        }
        other => io::Error::other(format!("the index just written: {other:?}")),
    })
}

/// The number of slots of a table for `n` live slots (three quarters
/// full; it is rebuilt at seven eighths, after a sixth more entries, so
/// rebuilds stay a constant cost per entry).
fn slots_for(n: u64) -> u32 {
    let wanted = n.saturating_mul(4).div_ceil(3);
    wanted.clamp(u64::from(MIN_SLOTS), u64::from(MAX_SLOTS)) as u32
}

/// Writes a table holding `slots` (later ones win), sized for `extra` more,
/// into a temporary file renamed over `index`.
fn write_table(dir: &RepoDir, slots: &[Slot], extra: u64) -> io::Result<()> {
    let count = slots_for(slots.len() as u64 + extra);
    let capacity = u64::from(count);
    if slots.len() as u64 + extra >= capacity {
        return Err(io::Error::other(
            "more entries than the largest index holds",
        ));
    }
    let mut table = vec![0u8; (HEADER_LEN + capacity * SLOT_LEN as u64) as usize];
    let mut live = 0;
    for slot in slots {
        let mut i = home(&slot.key) % capacity;
        loop {
            let at = (HEADER_LEN as usize) + i as usize * SLOT_LEN;
            let there = Slot::decode(&table[at..at + SLOT_LEN]);
            if there.at.pack == EMPTY {
                live += 1;
            } else if there.key != slot.key {
                i = (i + 1) % capacity;
                continue;
            }
            table[at..at + SLOT_LEN].copy_from_slice(&slot.encode());
            break;
        }
    }
    let header = Header {
        slots: count,
        used: live,
        live,
    };
    table[..HEADER_LEN as usize].copy_from_slice(&header.encode());
    // Whatever else is at the index's place (a directory, a FIFO) goes
    // first: it is inside the repository, and a rename cannot replace it.
    if !matches!(dir.kind_of(INDEX)?, None | Some(fsx::Kind::Regular)) {
        dir.remove(INDEX)?;
    }
    dir.write_atomic(INDEX, &table, fsx::file_mode())?;
    Ok(())
}

impl<'a> Writer<'a> {
    /// Records `entries` (later ones win for equal keys, except that an
    /// entry `yields` says so never replaces one indexed); `pack_exists`
    /// says which packs a rebuild keeps. Grows the table first when the
    /// entries would fill it past seven eighths.
    pub fn insert(
        &mut self,
        entries: &[(FragmentDigest, Location)],
        yields: &dyn Fn(&FragmentDigest) -> bool,
        pack_exists: &mut dyn FnMut(u64) -> bool,
    ) -> io::Result<()> {
        let fills =
            |index: &Index, n: u64| (index.header.used + n) * 8 > index.header.capacity() * 7;
        if fills(&self.index, entries.len() as u64) {
            let mut slots = self.index.live_slots()?;
            // Only keys the table lacks take a slot: an index made from
            // the packs already holds the pack being indexed (the first
            // compile into a repository), and sizing for its entries twice
            // doubled the table.
            let held: std::collections::HashSet<SlotKey> = slots.iter().map(|s| s.key).collect();
            let new = (entries.iter())
                .filter(|(d, _)| !held.contains(&slot_key(d)))
                .count() as u64;
            if fills(&self.index, new) {
                let mut exists: HashMap<u64, bool> = HashMap::new();
                slots.retain(|s| {
                    *exists
                        .entry(s.at.pack)
                        .or_insert_with(|| pack_exists(s.at.pack))
                });
                write_table(self.dir, &slots, new)?;
                self.index = reopen(self.dir)?;
            }
        }
        for (d, at) in entries {
            let slot = Slot {
                key: slot_key(d),
                at: *at,
            };
            match self.index.probe(d)? {
                // The last one stored wins (the storage contract; equal
                // keys mostly mean equal entries).
                Probe::Found { .. } if yields(d) => {}
                Probe::Found { at, .. } => self.index.write_slot(at, &slot, true)?,
                Probe::Empty { at, first_removed } => {
                    match first_removed {
                        Some(r) => self.index.write_slot(r, &slot, false)?,
                        None => {
                            self.index.write_slot(at, &slot, false)?;
                            self.index.header.used += 1;
                        }
                    }
                    self.index.header.live += 1;
                }
                Probe::Full {
                    first_removed: Some(r),
                } => {
                    self.index.write_slot(r, &slot, false)?;
                    self.index.header.live += 1;
                }
                Probe::Full {
                    first_removed: None,
                } => return Err(io::Error::other("the index is full")),
            }
        }
        self.index.write_header()
    }

    /// Marks `key` removed, if its slot points into `pack` (any pack when
    /// `None`): an evicted pack's entries, a corrupt entry. Returns whether
    /// a slot was removed.
    pub fn remove(&mut self, key: &FragmentDigest, pack: Option<u64>) -> io::Result<bool> {
        if let Probe::Found { at, slot } = self.index.probe(key)? {
            if pack.is_none_or(|p| p == slot.at.pack) {
                // Only the pack: the key stays, so the probes of other keys
                // still pass the slot.
                let pack_field = HEADER_LEN + at * SLOT_LEN as u64 + PACK_FIELD;
                self.index
                    .file
                    .write_all_at(&REMOVED.to_le_bytes(), pack_field)?;
                self.index.header.live = self.index.header.live.saturating_sub(1);
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Gives up this index (keeping the lock) to write a new one.
    pub fn into_absent(self) -> Absent<'a> {
        Absent {
            dir: self.dir,
            lock: self._lock,
            why: None,
        }
    }

    /// Writes the header (after [`Writer::remove`]s).
    pub fn finish(self) -> io::Result<()> {
        self.index.write_header()
    }
}
