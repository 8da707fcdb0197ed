//! How fragments meet the repository: their keys, and the entries that
//! store them.
//!
//! A fragment is keyed by the final digests of its members (`fragment_key`):
//! the key decides the fragment's bytes. (Function merging, which made a
//! fragment depend on a partner outside its digest, does not run in
//! repository compiles; see `merge`.) An entry's metadata names its
//! members, the symbols its code refers to, and where its relative lines
//! are.

use std::collections::HashMap;

use crate::ir::digest::ModuleDigests;
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// The repository key of a fragment with these members.
pub fn fragment_key(
    members: &[String],
    digests: &ModuleDigests,
    index: &HashMap<&str, usize>,
    aliases: &HashMap<String, String>,
) -> FragmentDigest {
    let mut parts: Vec<Vec<u8>> = Vec::new();
    for m in members {
        if let Some(&i) = index.get(m.as_str()) {
            parts.push(digests.defs[i].final_digest.0.to_vec());
        } else if let Some(text) = aliases.get(m) {
            parts.push(blake3::hash(text.as_bytes()).as_bytes().to_vec());
        } else {
            parts.push(m.as_bytes().to_vec());
        }
    }
    // With relative lines the fragment's lines are relative to its first
    // member's: where the others lie relative to it is in its bytes (not
    // for functions of the unit's source, whose lines are relative to
    // their own, see `debug_lines`).
    let position = |m: &String| {
        let i = *index.get(m.as_str())?;
        digests.defs[i].position.as_ref()
    };
    if let Some(leader) = members.first().and_then(position) {
        let held_relative_to_leader = |p: &&crate::ir::digest::Position| !p.placed_in_inliners;
        for p in members
            .iter()
            .skip(1)
            .filter_map(position)
            .filter(held_relative_to_leader)
        {
            parts.push(format!("line {}", p.relative_to(leader)).into_bytes());
        }
    }
    super::key::fragment_key_of_parts(parts)
}

/// An entry's metadata, as the pipeline writes it.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Metadata {
    /// The fragment's definitions (for a reader of the store: nothing
    /// reads them back). A deletion names none: its key says it all, and
    /// the names were a third of sqlite3.c's 1,021 deletions' bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    members: Vec<String>,
    /// Symbols the object refers to without defining them: a discardable
    /// fragment they name must be in the composed object too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    references: Vec<String>,
    /// The definitions whose inlined code the object holds with lines
    /// relative to theirs, by index (see `debug_lines`): placed where they
    /// are when composed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    inlined: Vec<String>,
    /// Where the object's relative lines are (`debug_lines::RelativeLines`
    /// as numbers), so that composing it need not walk its DWARF.
    #[serde(
        default,
        rename = "line_places",
        skip_serializing_if = "Option::is_none"
    )]
    lines: Option<Vec<u64>>,
}

fn metadata_of(entry: &Entry) -> Option<Metadata> {
    serde_json::from_slice(&entry.metadata).ok()
}

/// What the repository has for a key.
#[derive(Debug, Default)]
pub struct Found {
    /// The entry stored under the key: reuse it.
    pub usable: Option<Entry>,
    /// The symbols the usable entry's code refers to without defining them.
    pub references: Vec<String>,
    /// The definitions inlined into the usable entry's code with lines
    /// relative to theirs, by index.
    pub inlined: Vec<String>,
    /// Where the usable entry's relative lines are, if recorded.
    pub lines: Option<Vec<u64>>,
    /// Entries that failed verification (removed by the store).
    pub corrupt: Vec<String>,
    /// A problem reading the repository.
    pub problem: Option<String>,
}

/// Looks `key` up. An entry whose metadata cannot be read is not reused
/// (and is replaced when the fragment is stored again).
pub fn lookup(store: &dyn Storage, key: &FragmentDigest) -> Found {
    let mut found = Found::default();
    let Some(entry) = read(store, key, &mut found) else {
        return found;
    };
    let Some(meta) = metadata_of(&entry) else {
        return found;
    };
    found.usable = Some(entry);
    found.references = meta.references;
    found.inlined = meta.inlined;
    found.lines = meta.lines;
    found
}

fn read(store: &dyn Storage, key: &FragmentDigest, found: &mut Found) -> Option<Entry> {
    match store.get(key) {
        Ok(Lookup::Hit(e)) => Some(e),
        Ok(Lookup::Miss) => None,
        Ok(Lookup::Corrupt(why)) => {
            found.corrupt.push(format!(
                "repository entry {} failed verification ({why:?}) and was removed; recompiling it",
                key.to_hex()
            ));
            None
        }
        Err(e) => {
            found.problem.get_or_insert(e.to_string());
            None
        }
    }
}

/// The entry that stores a compiled fragment under `key`; `own` when no
/// other unit is expected to hold it (see [`EntryKind::UnitObject`]).
pub fn object_entry(
    key: &FragmentDigest,
    members: &[String],
    compiled: &super::split::Fragment,
    lines: Option<&crate::obj::debug_lines::RelativeLines>,
    own: bool,
) -> (FragmentDigest, Entry) {
    let meta = Metadata {
        members: members.to_vec(),
        references: compiled.references.clone(),
        inlined: compiled.inlined.clone(),
        lines: lines.map(|l| l.to_words()),
    };
    (
        *key,
        entry(
            if own {
                EntryKind::UnitObject
            } else {
                EntryKind::Object
            },
            &meta,
            compiled.object.clone(),
        ),
    )
}

/// The entry recording that the optimizer deleted every member of the
/// fragment stored under `key`.
pub fn deleted_entry(key: &FragmentDigest) -> (FragmentDigest, Entry) {
    (
        *key,
        entry(EntryKind::Deleted, &Metadata::default(), Vec::new()),
    )
}

fn entry(kind: EntryKind, meta: &Metadata, payload: Vec<u8>) -> Entry {
    Entry {
        kind,
        metadata: serde_json::to_vec(meta).unwrap_or_default(),
        payload,
    }
}
