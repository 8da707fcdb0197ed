//! How fragments meet the repository: their keys, and the requirements and
//! variants that function merging adds.
//!
//! A fragment is keyed by the final digests of its members (`fragment_key`).
//! Without merging, the key decides the fragment's bytes. With merging, a
//! fragment can also depend on a partner (see `merge`): its entry then
//! carries requirements, partner name → the partner's final digest when the
//! two were found equal, and is reusable only while they hold.
//!
//! One key can so have several valid contents: `g` as a thunk to `f` (while
//! `f` is what it was), and `g` compiled in full (after `f` changed). The
//! entry under the key (the *primary*) keeps the first one stored, plus the
//! requirement sets of the others, each stored under a variant key (the
//! key and the requirements hashed together). A lookup reads the primary
//! and, only if its requirements fail, a matching variant: one read in the
//! common case, and rebuilding a reverted source finds the original
//! primary again, so the object comes out byte for byte as before.
//! Concurrent writers can lose each other's variant listing; that costs a
//! recompile, never a wrong reuse (every entry's requirements are checked).

use std::collections::{BTreeMap, HashMap};

use super::digest::ModuleDigests;
use super::merge::MergeRequirements;
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// Partner name → final digest (hex) it had when merging relied on it.
pub type Requirements = BTreeMap<String, String>;

/// Most variants listed by one primary entry (the newest are kept).
const MAX_VARIANTS: usize = 8;

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
        let held_relative_to_leader = |p: &&super::digest::Position| !p.placed_in_inliners;
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

/// Where the variant of `key` with these requirements is stored.
fn variant_key(key: &FragmentDigest, requires: &Requirements) -> FragmentDigest {
    super::key::variant_key(key, requires.iter())
}

/// The requirements of a fragment with these members, from what merging
/// made them refer to. `None` when a partner has no digest (the optimizer
/// created it): such a fragment cannot say when it is reusable.
pub fn requirements_of(
    members: &[String],
    merged: &MergeRequirements,
    digests: &ModuleDigests,
) -> Option<Requirements> {
    let mut out = Requirements::new();
    for m in members {
        for partner in merged.get(m).into_iter().flatten() {
            if members.contains(partner) {
                continue;
            }
            let i = digests.position(partner)?;
            out.insert(partner.clone(), digests.defs[i].final_digest.to_hex());
        }
    }
    Some(out)
}

/// An entry's metadata, as the pipeline writes it.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Metadata {
    members: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    requires: Requirements,
    /// Requirement sets of the variants stored beside a primary entry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    variants: Vec<Requirements>,
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

fn holds(requires: &Requirements, digests: &ModuleDigests, index: &HashMap<&str, usize>) -> bool {
    requires.iter().all(|(name, digest)| {
        index
            .get(name.as_str())
            .is_some_and(|&i| digests.defs[i].final_digest.to_hex() == *digest)
    })
}

/// What the repository has for a key.
#[derive(Debug, Default)]
pub struct Found {
    /// An entry whose requirements hold: reuse it.
    pub usable: Option<Entry>,
    /// The symbols the usable entry's code refers to without defining them.
    pub references: Vec<String>,
    /// The definitions inlined into the usable entry's code with lines
    /// relative to theirs, by index.
    pub inlined: Vec<String>,
    /// Where the usable entry's relative lines are, if recorded.
    pub lines: Option<Vec<u64>>,
    /// The primary entry, when it exists but is not usable (a new variant
    /// is listed in it after compiling).
    pub primary: Option<Entry>,
    /// Entries that failed verification (removed by the store).
    pub corrupt: Vec<String>,
    /// A problem reading the repository.
    pub problem: Option<String>,
}

/// Looks `key` up: the primary entry, then the variants it lists.
pub fn lookup(
    store: &dyn Storage,
    key: &FragmentDigest,
    digests: &ModuleDigests,
    index: &HashMap<&str, usize>,
) -> Found {
    let mut found = Found::default();
    let primary = match read(store, key, &mut found) {
        Some(e) => e,
        None => return found,
    };
    // An entry whose metadata cannot be read is not reused (and is
    // replaced when the fragment is stored again).
    let Some(meta) = metadata_of(&primary) else {
        return found;
    };
    if holds(&meta.requires, digests, index) {
        found.usable = Some(primary);
        found.references = meta.references;
        found.inlined = meta.inlined;
        found.lines = meta.lines;
        return found;
    }
    for requires in meta.variants.iter().rev() {
        if !holds(requires, digests, index) {
            continue;
        }
        if let Some(v) = read(store, &variant_key(key, requires), &mut found) {
            match metadata_of(&v) {
                Some(m) if m.requires == *requires => {
                    found.usable = Some(v);
                    found.references = m.references;
                    found.inlined = m.inlined;
                    found.lines = m.lines;
                    break;
                }
                _ => {}
            }
        }
    }
    if found.usable.is_none() {
        found.primary = Some(primary);
    }
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

/// The entries that store a compiled fragment under `key`: the primary
/// entry when there is none (or it is unreadable, or records a deletion),
/// else a variant and the primary listing it.
pub fn object_entries(
    key: &FragmentDigest,
    primary: Option<&Entry>,
    members: &[String],
    requires: Requirements,
    compiled: &super::split::Fragment,
    lines: Option<&super::debug_lines::RelativeLines>,
) -> Vec<(FragmentDigest, Entry)> {
    let own = Metadata {
        members: members.to_vec(),
        requires,
        variants: Vec::new(),
        references: compiled.references.clone(),
        inlined: compiled.inlined.clone(),
        lines: lines.map(|l| l.to_words()),
    };
    let object = compiled.object.clone();
    let primary_meta = primary
        .filter(|p| p.kind == EntryKind::Object)
        .and_then(|p| metadata_of(p).map(|m| (p, m)));
    let Some((primary, mut meta)) = primary_meta else {
        return vec![(*key, entry(EntryKind::Object, &own, object))];
    };
    let vkey = variant_key(key, &own.requires);
    let variant = entry(EntryKind::Object, &own, object);
    meta.variants.retain(|r| *r != own.requires);
    meta.variants.push(own.requires);
    if meta.variants.len() > MAX_VARIANTS {
        meta.variants.remove(0);
    }
    let listed = Entry {
        kind: primary.kind,
        metadata: serde_json::to_vec(&meta).unwrap_or_default(),
        payload: primary.payload.clone(),
    };
    vec![(vkey, variant), (*key, listed)]
}

/// The entry recording that the optimizer deleted every member of the
/// fragment.
pub fn deleted_entry(key: &FragmentDigest, members: &[String]) -> (FragmentDigest, Entry) {
    let meta = Metadata {
        members: members.to_vec(),
        ..Metadata::default()
    };
    (*key, entry(EntryKind::Deleted, &meta, Vec::new()))
}

fn entry(kind: EntryKind, meta: &Metadata, payload: Vec<u8>) -> Entry {
    Entry {
        kind,
        metadata: serde_json::to_vec(meta).unwrap_or_default(),
        payload,
    }
}
