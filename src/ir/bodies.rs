//! Stored bodies for the optimizer's context: what the inliner sees of a
//! definition that is not compiled again.
//!
//! A recompiled definition is optimized with everything it reaches as
//! context (`prune`): the inliner must see each callee as a cold compile's
//! inliner does, after that callee's own inlining and simplification. On
//! sqlite3.c, an edit reaching `openDatabase` made the optimizer simplify
//! most of the file again for ten definitions. Instead, a compile keeps
//! (from a unit's second compile on, with `context_bodies = "auto"`: the
//! pipeline decides) the bodies the inliner left (right after it,
//! [`HookPoint::AfterInliner`])
//! of the definitions it simplified, in one compressed bitcode entry, and
//! one small index entry per definition, keyed by its final digest and
//! name (only definitions something else reaches: no other is ever a
//! context). The entry's module shares the unit's metadata nodes instead
//! of copying them (copies would stay in the context for the rest of the
//! compile). A later compile puts those bodies in place of the context's
//! right before the inliner ([`HookPoint::BeforeInliner`]); no optional pass runs
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
//! Two things the digests alone do not settle:
//! - Functions that reach one another (a recursion, directly or through a
//!   constant table) are simplified together, each seeing the others
//!   half-done; a stored body of one equals a cold compile's only next to
//!   the others' stored bodies. Such a group ([`groups`]) is put in place
//!   whole or not at all, and a member the inliner removed (a static
//!   inlined into all its callers) has an index entry that says so.
//! - A static left local because it has one caller may have been
//!   rewritten from that caller before the inliner (constant arguments
//!   propagated): its body is its own only when that caller is in its
//!   group. Other local functions are never kept or put in place.
//!
//! With debug info, a stored body names the metadata of the compile that
//! kept it, with the lines the source had then; the shim maps each node to
//! the unit's (its compile unit, subprograms, lexical blocks, types), with
//! its lines moved as the digests, which hold them relative, allow: by what
//! its definition moved, or the unit's anchor for file-level nodes (each
//! bodies entry records the anchor of its compile). A body with a node the
//! unit has no match for is not put in place, nor is the rest of its group.
//!
//! [`HookPoint::AfterInliner`]: crate::llvm::HookPoint::AfterInliner
//! [`HookPoint::BeforeInliner`]: crate::llvm::HookPoint::BeforeInliner

use std::collections::{BTreeSet, HashMap, HashSet};

use super::canonical::Unit;
use super::digest::{DefKind, ModuleDigests};
use crate::llvm;
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// Largest bodies entry read back (decompressed).
const MAX_BODIES_BYTES: u64 = 512 << 20;
/// zstd level of a bodies entry. Bitcode shrinks about 1.5x: sqlite3.c's
/// bodies at `-O2 -g` (6.97 MB) to 4.67 MB at level 3, 4.30 at 6, 4.09 at
/// 9 and 4.04 at 12, in 45, 110, 156 and 310 ms (under 1% of that
/// compile at level 9); lua5.4's 32 entries from 507 to 485 KB.
const BODIES_ZSTD_LEVEL: i32 = 9;
/// The named metadata of a bodies entry's module that holds its compile's
/// anchor (the shim reads it).
const ANCHOR_METADATA: &str = "repocc.anchor";

/// Whether stored bodies may be used and kept for this unit: `wanted`
/// (the `context_bodies` setting, and an optimized compile), and the unit
/// has at most one compile unit.
pub fn applies(unit: &Unit, wanted: bool) -> bool {
    wanted && unit.module.get_global_metadata_size("llvm.dbg.cu") <= 1
}

/// The unit's anchor as its digests hold lines (see `debug_lines`).
fn anchor(digests: &ModuleDigests) -> Option<u64> {
    digests.anchor.filter(|_| digests.relative_lines)
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
    /// The key of the bodies entry; `None`: the function was gone after
    /// the inliner (a static of a group, inlined into all its callers).
    bodies: Option<String>,
}

/// A function definition of the module (before the optimizer) whose body
/// may be kept and put in place.
pub struct Member {
    pub name: String,
    pub digest: FragmentDigest,
    /// Its group (see [`groups`]).
    pub group: usize,
    /// Whether another definition's code can depend on its body: only
    /// then can it be a later compile's context.
    pub reached: bool,
}

/// Bodies to put in place of the context's: the bitcode of each stored
/// bodies entry, and the functions to take from them.
#[derive(Default)]
pub struct ContextBodies {
    pub blobs: Vec<Vec<u8>>,
    /// `(name, index into blobs, group)`: see [`groups`].
    pub bodies: Vec<(String, usize, usize)>,
    /// The module's members when the optimizer starts, for [`snapshot`].
    pub members: Vec<Member>,
    /// The unit's anchor (see [`anchor`]).
    pub anchor: Option<u64>,
}

/// The group of each function definition: definitions whose contents can
/// change one another's code (a cycle of the digests' edges: calls, taken
/// addresses, constant variables' initializers) share one; with it, how
/// many functions the group has. The optimizer simplifies such a cycle
/// together, each function seeing the others half-done: a stored body of
/// one is a cold compile's only next to the others' stored bodies, so a
/// group is put in place whole or not at all. Other uses (a load of a
/// mutable variable whose initializer names a function) join LLVM's
/// reference SCCs too, but only order their simplification: no pass
/// takes code across them.
fn groups(digests: &ModuleDigests) -> HashMap<&str, (usize, usize)> {
    let n = digests.defs.len();
    let mut succ = vec![Vec::new(); n];
    for &(u, v) in &digests.edges {
        if u < n && v < n {
            succ[u].push(v);
        }
    }
    let mut out = HashMap::new();
    for (g, comp) in super::digest::sccs(n, &succ).into_iter().enumerate() {
        let functions: Vec<&str> = comp
            .iter()
            .filter(|&&d| digests.defs[d].kind == DefKind::Function)
            .map(|&d| digests.defs[d].name.as_str())
            .collect();
        for name in &functions {
            out.insert(*name, (g, functions.len()));
        }
    }
    out
}

/// The module's function definitions that have a final digest, and whose
/// body is its own: every one that is not local, and the local ones of a
/// group of several functions. A local function (a
/// static with one caller, left local) on its own may have been rewritten
/// from its caller (constant arguments propagated); in a group, that
/// caller is one of the group, whose bodies the digests cover. Also
/// returns how many functions each group has (members or not).
fn members(unit: &Unit, digests: &ModuleDigests) -> (Vec<Member>, HashMap<usize, usize>) {
    let group_of = groups(digests);
    let finals: HashMap<&str, &FragmentDigest> = digests
        .defs
        .iter()
        .map(|d| (d.name.as_str(), &d.final_digest))
        .collect();
    let reached: HashSet<&str> = digests
        .edges
        .iter()
        .filter(|(u, v)| u != v)
        .filter_map(|&(_, v)| digests.defs.get(v))
        .map(|d| d.name.as_str())
        .collect();
    let mut out = Vec::new();
    let mut f = unit.module.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        if func.count_basic_blocks() == 0 {
            continue;
        }
        let name = func.get_name().to_string_lossy().into_owned();
        let (Some(digest), Some(&(group, size))) =
            (finals.get(name.as_str()), group_of.get(name.as_str()))
        else {
            continue;
        };
        let linkage = func.get_linkage();
        let local = matches!(
            linkage,
            inkwell::module::Linkage::Internal | inkwell::module::Linkage::Private
        );
        // Inline functions and template instances (linkonce_odr) too: a
        // recursion among them is simplified in one order in every unit
        // (`call_order`). Before that, yaml-cpp's regex_yaml.o came out
        // different when it took such bodies from other units.
        if local && size < 2 {
            continue;
        }
        out.push(Member {
            reached: reached.contains(name.as_str()),
            name,
            digest: **digest,
            group,
        });
    }
    let sizes = group_of.into_values().collect();
    (out, sizes)
}

/// The groups of which `groups` (one item per function) holds every
/// function (`sizes`: how many each group has).
fn whole_groups(
    groups: impl Iterator<Item = usize>,
    sizes: &HashMap<usize, usize>,
) -> HashSet<usize> {
    let mut counted: HashMap<usize, usize> = HashMap::new();
    for g in groups {
        *counted.entry(g).or_default() += 1;
    }
    counted
        .into_iter()
        .filter(|(g, n)| sizes.get(g) == Some(n))
        .map(|(g, _)| g)
        .collect()
}

/// Finds the stored bodies of the module's members (see [`members`]): the
/// context's, statics kept for the optimizer, and any other whose body a
/// compile kept. A missing or unreadable entry leaves its function to the
/// optimizer, as before, and with it the rest of its group: a group is
/// looked up only when all its functions are members, and put in place
/// only when each has an index entry (a body, or gone after the inliner).
pub fn lookup(store: &dyn Storage, unit: &Unit, digests: &ModuleDigests) -> ContextBodies {
    let (members, sizes) = members(unit, digests);
    let offered = whole_groups(members.iter().map(|m| m.group), &sizes);
    let wanted: Vec<(&Member, FragmentDigest)> = members
        .iter()
        .filter(|m| offered.contains(&m.group))
        .map(|m| (m, index_key(&m.digest, &m.name)))
        .collect();
    store.prefetch(&wanted.iter().map(|(_, k)| *k).collect::<Vec<_>>());
    let mut found: Vec<(&Member, Option<FragmentDigest>)> = Vec::new();
    for (member, key) in wanted {
        let Ok(Lookup::Hit(e)) = store.get(&key) else {
            continue;
        };
        if e.kind != EntryKind::BodyIndex {
            continue;
        }
        let Ok(record) = serde_json::from_slice::<IndexRecord>(&e.metadata) else {
            continue;
        };
        match record.bodies {
            None => found.push((member, None)),
            Some(hex) => {
                if let Some(source) = FragmentDigest::from_hex(&hex) {
                    found.push((member, Some(source)));
                }
            }
        }
    }
    let indexed = whole_groups(found.iter().map(|(m, _)| m.group), &sizes);
    let found: Vec<(&Member, FragmentDigest)> = found
        .into_iter()
        .filter(|(m, _)| indexed.contains(&m.group))
        .filter_map(|(m, source)| Some((m, source?)))
        .collect();
    let sources: BTreeSet<FragmentDigest> = found.iter().map(|(_, s)| *s).collect();
    store.prefetch(&sources.iter().copied().collect::<Vec<_>>());
    let mut out = ContextBodies::default();
    let mut blob_of: HashMap<FragmentDigest, usize> = HashMap::new();
    for source in sources {
        let Ok(Lookup::Hit(e)) = store.get(&source) else {
            continue;
        };
        if e.kind != EntryKind::Bodies {
            continue;
        }
        if let Some(bitcode) = crate::repo::decompress_bounded(&e.payload, MAX_BODIES_BYTES) {
            blob_of.insert(source, out.blobs.len());
            out.blobs.push(bitcode);
        }
    }
    // A body whose blob could not be read names no blob: the shim leaves
    // its whole group alone.
    out.bodies = found
        .into_iter()
        .map(|(m, source)| {
            let blob = blob_of.get(&source).copied().unwrap_or(usize::MAX);
            (m.name.clone(), blob, m.group)
        })
        .collect();
    out.members = members;
    out.anchor = anchor(digests);
    out
}

impl ContextBodies {
    /// The functions whose bodies the repository holds (their bodies
    /// entry read): whether or not they are put in place, a later compile
    /// finds them there, and they are not kept again.
    pub fn stored(&self) -> impl Iterator<Item = &str> {
        self.bodies
            .iter()
            .filter(|(_, blob, _)| *blob < self.blobs.len())
            .map(|(name, _, _)| name.as_str())
    }
}

/// Puts the stored bodies in place (from the
/// [`HookPoint::BeforeInliner`](crate::llvm::HookPoint) hook), each
/// group whole or not at all. Returns the names of those replaced (their
/// bodies are not to be kept again). A function of a group that was gone
/// after the first compile's inliner has no body to put in place: the
/// group's bodies no longer use it, and the optimizer drops it.
pub fn substitute(unit: &Unit, bodies: &ContextBodies) -> Vec<String> {
    let blobs: Vec<&[u8]> = bodies.blobs.iter().map(Vec::as_slice).collect();
    let requests: Vec<llvm::BodyRequest> = bodies
        .bodies
        .iter()
        .map(|(name, source, group)| llvm::BodyRequest {
            name,
            source: *source,
            group: *group,
        })
        .collect();
    let done = llvm::substitute_bodies(&unit.module, &blobs, &requests, bodies.anchor);
    bodies
        .bodies
        .iter()
        .zip(done)
        .filter(|(_, d)| *d)
        .map(|((n, _, _), _)| n.clone())
        .collect()
}

/// The bodies the inliner left (from the
/// [`HookPoint::AfterInliner`](crate::llvm::HookPoint) hook) of the
/// module's members (see [`members`]) whose whole reach the module had
/// (`whole_reach`: a static kept only in case new code needs it may have
/// lost callees' bodies to pruning, and its body is then not the one a
/// cold compile makes), except those in `skip` (found in the repository,
/// see [`ContextBodies::stored`]); and the members the inliner left no
/// body of.
pub struct Snapshot {
    /// Compressed bitcode.
    pub payload: Vec<u8>,
    /// `(name, final digest)` of each body in it.
    pub names: Vec<(String, FragmentDigest)>,
    /// `(name, final digest)` of each member gone after the inliner.
    pub gone: Vec<(String, FragmentDigest)>,
}

pub fn snapshot(
    unit: &Unit,
    bodies: &ContextBodies,
    whole_reach: &HashSet<String>,
    skip: &HashSet<String>,
) -> Option<Snapshot> {
    let members = &bodies.members;
    let mut names = Vec::new();
    let mut gone = Vec::new();
    for m in members {
        // Not when nothing else depends on its body: no later compile
        // takes it as context.
        if !m.reached || skip.contains(&m.name) || !whole_reach.contains(&m.name) {
            continue;
        }
        let has_body = unit
            .module
            .get_function(&m.name)
            .is_some_and(|f| f.count_basic_blocks() > 0);
        if has_body {
            names.push((m.name.clone(), m.digest));
        } else {
            gone.push((m.name.clone(), m.digest));
        }
    }
    if names.is_empty() {
        return None;
    }
    let refs: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    // The unit's own metadata nodes, not copies that would stay in the
    // context for the rest of the compile.
    let module = llvm::extract_definitions_sharing_metadata(&unit.module, &refs);
    // The optimizer's local names (`%or.cond`, `if.then.i`) were a fifth
    // of the bitcode (sqlite3.c: 3.03 MB, 2.43 MB without); nothing after
    // the inliner reads them (clang itself discards them).
    llvm::strip_local_names(&module);
    if let Some(anchor) = bodies.anchor {
        // Where this compile's file-level lines were, for a later one's.
        let context = module.get_context();
        let value = context.i64_type().const_int(anchor, false);
        module
            .add_global_metadata(ANCHOR_METADATA, &context.metadata_node(&[value.into()]))
            .ok()?;
    }
    let bitcode = llvm::shared_bitcode(&module);
    drop(module);
    let payload = zstd::bulk::compress(bitcode.as_slice(), BODIES_ZSTD_LEVEL).ok()?;
    Some(Snapshot {
        payload,
        names,
        gone,
    })
}

/// The entries that store `snapshot`: the bodies, and an index entry per
/// function.
pub fn entries(snapshot: Snapshot) -> Vec<(FragmentDigest, Entry)> {
    let key = FragmentDigest(*blake3::hash(&snapshot.payload).as_bytes());
    let record =
        |bodies: Option<String>| serde_json::to_vec(&IndexRecord { bodies }).unwrap_or_default();
    let kept = record(Some(key.to_hex()));
    let gone = record(None);
    let mut out = Vec::with_capacity(snapshot.names.len() + snapshot.gone.len() + 1);
    out.push((
        key,
        Entry {
            kind: EntryKind::Bodies,
            metadata: Vec::new(),
            payload: snapshot.payload,
        },
    ));
    let index = snapshot
        .names
        .iter()
        .map(|n| (n, &kept))
        .chain(snapshot.gone.iter().map(|n| (n, &gone)));
    for ((name, digest), record) in index {
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

    fn def(name: &str, kind: DefKind) -> crate::ir::digest::Definition {
        crate::ir::digest::Definition {
            name: name.to_string(),
            kind,
            local: false,
            constant: kind == DefKind::Variable,
            initial: [0; 32],
            reached_as: [0; 32],
            final_digest: FragmentDigest([0; 32]),
            position: None,
        }
    }

    #[test]
    fn functions_that_reach_one_another_form_a_group() {
        // f <-> g call each other, h calls f; k and the constant table t
        // name each other (one function: a group of one); m only loads a
        // mutable variable naming f (a reference, not an edge).
        let digests = ModuleDigests {
            defs: vec![
                def("f", DefKind::Function),
                def("g", DefKind::Function),
                def("h", DefKind::Function),
                def("k", DefKind::Function),
                def("t", DefKind::Variable),
                def("m", DefKind::Function),
                def("v", DefKind::Variable),
            ],
            edges: vec![(0, 1), (1, 0), (2, 0), (3, 4), (4, 3), (6, 0), (0, 5)],
            references: vec![(5, 6)],
            ..Default::default()
        };
        let g = groups(&digests);
        assert_eq!(g["f"].0, g["g"].0);
        assert_eq!((g["f"].1, g["g"].1), (2, 2));
        assert_ne!(g["h"].0, g["f"].0);
        assert_eq!(g["h"].1, 1);
        assert_eq!(g["k"].1, 1);
        assert_ne!(g["m"].0, g["f"].0);
        assert_eq!(g["m"].1, 1);
        assert!(!g.contains_key("t") && !g.contains_key("v"));
    }

    #[test]
    fn members_leave_out_lone_statics() {
        // r and its static helper s call each other (one group); t is a
        // static nothing calls; i is an inline function (linkonce_odr),
        // kept as any other.
        let ir = r#"
            target triple = "x86_64-pc-linux-gnu"
            define i32 @r(i32 %x) {
              %c = icmp eq i32 %x, 0
              br i1 %c, label %z, label %n
            z:
              ret i32 0
            n:
              %y = call i32 @s(i32 %x)
              ret i32 %y
            }
            define internal i32 @s(i32 %x) {
              %d = sub i32 %x, 1
              %y = call i32 @r(i32 %d)
              %w = call i32 @i(i32 %y)
              ret i32 %w
            }
            define internal i32 @t(i32 %x) {
              ret i32 %x
            }
            define linkonce_odr i32 @i(i32 %x) {
              %y = add i32 %x, 1
              ret i32 %y
            }
            define i32 @h(i32 %x) {
              %y = call i32 @i(i32 %x)
              ret i32 %y
            }"#;
        let context = crate::llvm::test_context();
        let buffer = inkwell::memory_buffer::MemoryBuffer::create_from_memory_range_copy(
            ir.as_bytes(),
            "members",
        );
        let module = context.create_module_from_ir(buffer).unwrap();
        let text = module.print_to_string().to_string();
        let digests = super::super::digest::compute(
            &text,
            &[0; 32],
            super::super::digest::Inlining::Optimizing,
        )
        .unwrap();
        super::super::canonical::init_targets();
        let target_machine = crate::llvm::test_x86_64_machine(inkwell::OptimizationLevel::Default);
        let unit = Unit {
            module,
            target_machine,
            source_name: "members.c".into(),
            originally_local: Vec::new(),
            unnamed_locals: Vec::new(),
            attached_locals: HashMap::new(),
            max_nop: 0,
        };
        let (members, sizes) = members(&unit, &digests);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["r", "s", "i", "h"]);
        // h: nothing else reaches it, so no compile takes it as context.
        let reached: Vec<bool> = members.iter().map(|m| m.reached).collect();
        assert_eq!(reached, [true, true, true, false]);
        assert_eq!(members[0].group, members[1].group);
        assert_eq!(sizes[&members[0].group], 2);
        assert_ne!(members[2].group, members[0].group);
        assert_ne!(members[3].group, members[0].group);
    }

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
            gone: vec![("h".to_string(), FragmentDigest([3; 32]))],
        };
        let entries = entries(snapshot);
        assert_eq!(entries.len(), 4);
        assert_eq!(entries[0].1.kind, EntryKind::Bodies);
        store.put_many(&entries).unwrap();
        let Ok(Lookup::Hit(index)) = store.get(&index_key(&FragmentDigest([2; 32]), "g")) else {
            panic!("no index entry for g");
        };
        assert_eq!(index.kind, EntryKind::BodyIndex);
        let record: IndexRecord = serde_json::from_slice(&index.metadata).unwrap();
        let key = FragmentDigest::from_hex(&record.bodies.unwrap()).unwrap();
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
        let Ok(Lookup::Hit(gone)) = store.get(&index_key(&FragmentDigest([3; 32]), "h")) else {
            panic!("no index entry for h");
        };
        let record: IndexRecord = serde_json::from_slice(&gone.metadata).unwrap();
        assert!(record.bodies.is_none());
    }
}
