//! Stored bodies for the optimizer's context: what the inliner sees of a
//! definition that is not compiled again.
//!
//! A recompiled definition is optimized with everything it reaches as
//! context (`prune`): the inliner must see each callee as a cold compile's
//! inliner does, after that callee's own inlining and simplification. On
//! sqlite3.c, an edit reaching `openDatabase` made the optimizer simplify
//! most of the file again for ten definitions. Instead, every compile keeps
//! the bodies the inliner left (right after it, [`HookPoint::AfterInliner`])
//! of the definitions it simplified, in one compressed bitcode entry, and
//! one small index entry per definition, keyed by its final digest and
//! name. A later compile puts those bodies in place of the context's right
//! before the inliner ([`HookPoint::BeforeInliner`]); no optional pass runs
//! on them until the inliner is done (the shim's pass instrumentation), and
//! the inliner then finds each callee exactly as a cold compile has it.
//!
//! Why that is exact: a final digest covers the definition and everything
//! it reaches (`digest`), statics are hidden external while the optimizer
//! runs (`canonical`), so no interprocedural pass changes a body from its
//! callers, and the passes before the inliner still see the frontend's
//! bodies (the substitution happens after them). A body is taken right
//! after the inliner, before the module passes that follow it
//! (dead-argument elimination rewrites call sites after it).
//!
//! Not for units with debug info yet: a stored body's debug metadata would
//! have to become the unit's (its compile unit, subprograms, files and
//! lines); those units optimize their context as before.
//!
//! [`HookPoint::AfterInliner`]: crate::llvm_shim::HookPoint::AfterInliner
//! [`HookPoint::BeforeInliner`]: crate::llvm_shim::HookPoint::BeforeInliner

use std::collections::{BTreeMap, HashMap, HashSet};

use super::canonical::Unit;
use super::digest::ModuleDigests;
use crate::llvm_shim;
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// Largest bodies entry read back (decompressed).
const MAX_BODIES_BYTES: u64 = 512 << 20;
/// zstd level of a bodies entry: bitcode shrinks about 3x at level 1.
const BODIES_ZSTD_LEVEL: i32 = 1;

/// Whether stored bodies may be used and kept for this unit: turned on
/// (`REPOCC_CONTEXT_BODIES=1`; off by default while t-safety's fault
/// injection still finds a lua object that differs from the cold one with
/// 20% of the entries removed), optimized, without debug info.
pub fn applies(unit: &Unit, optimized: bool) -> bool {
    optimized
        && unit.module.get_global_metadata_size("llvm.dbg.cu") == 0
        && std::env::var_os("REPOCC_CONTEXT_BODIES").is_some_and(|v| v == "1")
}

/// The index key of `name`'s body after the inliner, with `digest` its
/// final digest.
fn index_key(digest: &FragmentDigest, name: &str) -> FragmentDigest {
    let mut h = blake3::Hasher::new();
    h.update(b"repocc body after the inliner\0");
    h.update(&digest.0);
    h.update(name.as_bytes());
    FragmentDigest(*h.finalize().as_bytes())
}

#[derive(serde::Serialize, serde::Deserialize)]
struct IndexRecord {
    /// The key of the bodies entry.
    bodies: String,
}

/// Bodies to put in place of the context's: the bitcode of each stored
/// bodies entry, with the names to take from it.
#[derive(Default)]
pub struct ContextBodies {
    pub sources: Vec<(Vec<u8>, Vec<String>)>,
}

/// The module's function definitions that have a final digest and are
/// not local, with that digest: those whose bodies are kept and looked
/// up. A local function (a static with one caller, left local) may have
/// been rewritten from its caller: its body is not its own.
fn candidates(unit: &Unit, digests: &ModuleDigests) -> Vec<(String, FragmentDigest)> {
    let finals: HashMap<&str, &FragmentDigest> = digests
        .defs
        .iter()
        .map(|d| (d.name.as_str(), &d.final_digest))
        .collect();
    let mut out = Vec::new();
    let mut f = unit.module.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        let local = matches!(
            func.get_linkage(),
            inkwell::module::Linkage::Internal | inkwell::module::Linkage::Private
        );
        if func.count_basic_blocks() == 0 || local {
            continue;
        }
        let name = func.get_name().to_string_lossy().into_owned();
        if let Some(d) = finals.get(name.as_str()) {
            out.push((name, **d));
        }
    }
    out
}

/// Finds the stored bodies of the module's function definitions (each
/// with its final digest in `digests`): the context's, statics kept for
/// the optimizer, and any other whose body a compile kept. A missing or
/// unreadable entry leaves its function to the optimizer, as before.
pub fn lookup(store: &dyn Storage, unit: &Unit, digests: &ModuleDigests) -> ContextBodies {
    let candidates = candidates(unit, digests);
    let wanted: Vec<(&String, FragmentDigest)> = candidates
        .iter()
        .map(|(n, d)| (n, index_key(d, n)))
        .collect();
    store.prefetch(&wanted.iter().map(|(_, k)| *k).collect::<Vec<_>>());
    let mut by_source: BTreeMap<FragmentDigest, Vec<String>> = BTreeMap::new();
    for (name, key) in wanted {
        let Ok(Lookup::Hit(e)) = store.get(&key) else {
            continue;
        };
        if e.kind != EntryKind::BodyIndex {
            continue;
        }
        let Some(source) = serde_json::from_slice::<IndexRecord>(&e.metadata)
            .ok()
            .and_then(|r| FragmentDigest::from_hex(&r.bodies))
        else {
            continue;
        };
        by_source.entry(source).or_default().push(name.clone());
    }
    store.prefetch(&by_source.keys().copied().collect::<Vec<_>>());
    let mut out = ContextBodies::default();
    for (source, names) in by_source {
        let Ok(Lookup::Hit(e)) = store.get(&source) else {
            continue;
        };
        if e.kind != EntryKind::Bodies {
            continue;
        }
        if let Some(bitcode) = crate::repo::decompress_bounded(&e.payload, MAX_BODIES_BYTES) {
            out.sources.push((bitcode, names));
        }
    }
    out
}

/// Puts the stored bodies in place (from the
/// [`HookPoint::BeforeInliner`](crate::llvm_shim::HookPoint) hook).
/// Returns how many were replaced, and their names (their bodies are not
/// to be kept again). The local functions a replaced body calls are left
/// to the optimizer (or replaced in turn): a replaced function may be
/// compiled now (its fragment evicted), and the static it calls with it.
pub fn substitute(unit: &Unit, bodies: &ContextBodies) -> (usize, Vec<String>) {
    let mut replaced = Vec::new();
    for (bitcode, names) in &bodies.sources {
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let done = llvm_shim::substitute_bodies(&unit.module, bitcode, &refs);
        replaced.extend(
            names
                .iter()
                .zip(done)
                .filter(|(_, d)| *d)
                .map(|(n, _)| n.clone()),
        );
    }
    (replaced.len(), replaced)
}

/// The bodies the inliner left (from the
/// [`HookPoint::AfterInliner`](crate::llvm_shim::HookPoint) hook) of the
/// module's function definitions with a final digest whose whole reach
/// the module had (`whole_reach`: a static kept only in case new code
/// needs it may have lost callees' bodies to pruning, and its body is then
/// not the one a cold compile makes), except those in `skip` (put in
/// place from the repository).
pub struct Snapshot {
    /// Compressed bitcode.
    pub payload: Vec<u8>,
    /// `(name, final digest)` of each body in it.
    pub names: Vec<(String, FragmentDigest)>,
}

pub fn snapshot(
    unit: &Unit,
    digests: &ModuleDigests,
    whole_reach: &HashSet<String>,
    skip: &HashSet<String>,
) -> Option<Snapshot> {
    let names: Vec<(String, FragmentDigest)> = candidates(unit, digests)
        .into_iter()
        .filter(|(name, _)| !skip.contains(name) && whole_reach.contains(name))
        .collect();
    if names.is_empty() {
        return None;
    }
    let refs: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    let module = llvm_shim::extract_definitions(&unit.module, &refs, false, None);
    let bitcode = module.write_bitcode_to_memory();
    let payload = zstd::bulk::compress(bitcode.as_slice(), BODIES_ZSTD_LEVEL).ok()?;
    Some(Snapshot { payload, names })
}

/// The entries that store `snapshot`: the bodies, and an index entry per
/// function.
pub fn entries(snapshot: Snapshot) -> Vec<(FragmentDigest, Entry)> {
    let key = FragmentDigest(*blake3::hash(&snapshot.payload).as_bytes());
    let record = serde_json::to_vec(&IndexRecord {
        bodies: key.to_hex(),
    })
    .unwrap_or_default();
    let mut out = Vec::with_capacity(snapshot.names.len() + 1);
    out.push((
        key,
        Entry {
            kind: EntryKind::Bodies,
            metadata: Vec::new(),
            payload: snapshot.payload,
        },
    ));
    for (name, digest) in &snapshot.names {
        out.push((
            index_key(digest, name),
            Entry {
                kind: EntryKind::BodyIndex,
                metadata: record.clone(),
                payload: Vec::new(),
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repo::store::Store;

    #[test]
    fn index_keys_tell_name_and_digest_apart() {
        let a = FragmentDigest([1; 32]);
        let b = FragmentDigest([2; 32]);
        assert_ne!(index_key(&a, "f"), index_key(&b, "f"));
        assert_ne!(index_key(&a, "f"), index_key(&a, "g"));
        assert_eq!(index_key(&a, "f"), index_key(&a, "f"));
    }

    #[test]
    fn stored_bodies_are_found_through_their_index() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(dir.path());
        let bitcode = b"BC\xc0\xde not really bitcode".to_vec();
        let snapshot = Snapshot {
            payload: zstd::bulk::compress(&bitcode, BODIES_ZSTD_LEVEL).unwrap(),
            names: vec![
                ("f".to_string(), FragmentDigest([1; 32])),
                ("g".to_string(), FragmentDigest([2; 32])),
            ],
        };
        let entries = entries(snapshot);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].1.kind, EntryKind::Bodies);
        store.put_many(&entries).unwrap();
        let Ok(Lookup::Hit(index)) = store.get(&index_key(&FragmentDigest([2; 32]), "g")) else {
            panic!("no index entry for g");
        };
        assert_eq!(index.kind, EntryKind::BodyIndex);
        let record: IndexRecord = serde_json::from_slice(&index.metadata).unwrap();
        let key = FragmentDigest::from_hex(&record.bodies).unwrap();
        let Ok(Lookup::Hit(bodies)) = store.get(&key) else {
            panic!("no bodies entry");
        };
        assert_eq!(
            crate::repo::decompress_bounded(&bodies.payload, MAX_BODIES_BYTES).unwrap(),
            bitcode
        );
        assert!(matches!(
            store.get(&index_key(&FragmentDigest([1; 32]), "g")),
            Ok(Lookup::Miss)
        ));
    }
}
