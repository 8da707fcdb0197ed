//! Why each definition was compiled rather than reused (`REPOCC_EXPLAIN=1`).
//!
//! Every repository compile leaves a compact history of the unit — per
//! definition name, the first bytes of its initial digest (its own text)
//! and of its final digest (its text and all it reaches) — in the
//! repository, under a key over the source, the working directory and the
//! fragment context. The next compile of that unit compares:
//! - no earlier entry for the name: **new**;
//! - another initial digest: **changed** (its own text);
//! - the same initial digest, another final one: **a definition it
//!   depends on changed** (one that changed is named when the graph shows
//!   it);
//! - the same final digest: it was stored before and is gone — **evicted**
//!   (or its entry was corrupt).
//!
//! A definition taken from the repository that the history does not hold
//! with the same final digest was stored by another unit (a template
//! instance, an inline function of a shared header): it counts as
//! `definitions_shared`, and the explanation says so.
//!
//! The history is 12 bytes per definition (6 of the name's hash, 3 of
//! each digest), rewritten by each compile: sqlite3.c's 3,860 definitions
//! took 93 KB at 24 bytes and 62 KB at 16, most of what an edit of it
//! adds to the repository (and 4% of its cold repository). Three bytes of
//! a digest tell a definition's two versions apart but for a chance of 1
//! in 16 million, which would only word one explanation wrong or count
//! one shared definition as the unit's own; two of 4,000 names share 6
//! bytes of hash with a chance of 3 in 100 million.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::ir::digest::{DefKind, ModuleDigests};
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Lookup, Storage};

/// Where the history of a unit lives.
pub fn history_key(source: &str, cwd: &str, fragment_context: &[u8]) -> FragmentDigest {
    let mut h = blake3::Hasher::new();
    h.update(b"repocc explain history v3\0");
    for part in [source.as_bytes(), cwd.as_bytes(), fragment_context] {
        h.update(&(part.len() as u64).to_le_bytes());
        h.update(part);
    }
    FragmentDigest(*h.finalize().as_bytes())
}

type Short = [u8; 6];
/// What a history keeps of a digest.
type Tag = [u8; 3];

fn short(bytes: &[u8]) -> Short {
    bytes[..6].try_into().expect("6 bytes")
}

fn tag(bytes: &[u8]) -> Tag {
    bytes[..3].try_into().expect("3 bytes")
}

/// Bytes of a history row: the name's hash and two tags.
const ROW: usize = 12;

fn name_hash(name: &str) -> Short {
    short(blake3::hash(name.as_bytes()).as_bytes())
}

/// name hash → (initial, final), from the digests of a compile.
fn history_of(d: &ModuleDigests) -> HashMap<Short, (Tag, Tag)> {
    d.defs
        .iter()
        .filter(|x| x.kind != DefKind::Glue)
        .map(|x| {
            (
                name_hash(&x.name),
                (tag(&x.initial), tag(&x.final_digest.0)),
            )
        })
        .collect()
}

fn encode(h: &HashMap<Short, (Tag, Tag)>) -> Vec<u8> {
    let mut rows: Vec<_> = h.iter().collect();
    rows.sort();
    let mut out = Vec::with_capacity(rows.len() * ROW);
    for (n, (i, f)) in rows {
        out.extend_from_slice(n);
        out.extend_from_slice(i);
        out.extend_from_slice(f);
    }
    out
}

fn decode(bytes: &[u8]) -> Option<HashMap<Short, (Tag, Tag)>> {
    if !bytes.len().is_multiple_of(ROW) {
        return None;
    }
    Some(
        bytes
            .chunks_exact(ROW)
            .map(|c| (short(&c[..6]), (tag(&c[6..9]), tag(&c[9..12]))))
            .collect(),
    )
}

/// What the unit's previous compile recorded under `key` (see [`record`]).
pub struct History(Option<HashMap<Short, (Tag, Tag)>>);

impl History {
    /// The history on this machine (read on every compile: never from a
    /// remote tier, which would cost a round trip per unit).
    pub fn read(store: &dyn Storage, key: &FragmentDigest) -> History {
        History(match store.get_local(key) {
            Ok(Lookup::Hit(e)) if e.kind == EntryKind::History => decode(&e.payload),
            _ => None,
        })
    }

    /// Whether an earlier compile of the unit left its history (the unit
    /// was compiled before, and its history was not evicted).
    pub fn exists(&self) -> bool {
        self.0.is_some()
    }

    /// Whether the previous compile had `name` with this final digest: it
    /// stored it itself, if anything did.
    fn had(&self, name: &str, final_digest: &FragmentDigest) -> bool {
        self.0.as_ref().is_some_and(|b| {
            b.get(&name_hash(name))
                .is_some_and(|(_, f)| *f == tag(&final_digest.0))
        })
    }
}

/// The reused definitions among `pruned` that this unit's previous compile
/// did not have as they are now: another unit stored them.
pub fn shared<'a>(history: &History, d: &ModuleDigests, pruned: &[&'a str]) -> Vec<&'a str> {
    let finals: HashMap<&str, &FragmentDigest> = d
        .defs
        .iter()
        .map(|x| (x.name.as_str(), &x.final_digest))
        .collect();
    pruned
        .iter()
        .copied()
        .filter(|name| match finals.get(name) {
            Some(f) => !history.had(name, f),
            // An optimizer-made helper counts as its user: not told apart.
            None => false,
        })
        .collect()
}

/// The reasons for the compiled definitions named in `compiled`, one line
/// each, against the unit's previous compile.
pub fn explain(history: &History, d: &ModuleDigests, compiled: &HashSet<&str>) -> Vec<String> {
    let before = &history.0;
    let index: HashMap<&str, usize> = d
        .defs
        .iter()
        .enumerate()
        .map(|(i, x)| (x.name.as_str(), i))
        .collect();
    let changed_own: HashSet<usize> = match &before {
        Some(b) => d
            .defs
            .iter()
            .enumerate()
            .filter(|(_, x)| {
                b.get(&name_hash(&x.name))
                    .is_none_or(|(i, _)| *i != tag(&x.initial))
            })
            .map(|(i, _)| i)
            .collect(),
        None => HashSet::new(),
    };
    let mut successors: Vec<Vec<usize>> = vec![Vec::new(); d.defs.len()];
    for &(u, v) in &d.edges {
        successors[u].push(v);
    }
    let mut names: Vec<&&str> = compiled.iter().collect();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        let Some(&i) = index.get(*name) else {
            continue;
        };
        let x = &d.defs[i];
        let reason = match before.as_ref().map(|b| b.get(&name_hash(name))) {
            None => "no history of this unit yet".to_string(),
            Some(None) => "new".to_string(),
            Some(Some((init, _))) if *init != tag(&x.initial) => "changed".to_string(),
            Some(Some((_, fin))) if *fin != tag(&x.final_digest.0) => {
                match first_reached(&successors, i, &changed_own) {
                    Some(j) => format!("depends on {}, which changed", d.defs[j].name),
                    None => "a definition it depends on changed or was removed".to_string(),
                }
            }
            Some(Some(_)) => "stored before, not found now (evicted)".to_string(),
        };
        lines.push(format!("compiled {name}: {reason}"));
    }
    lines
}

/// The nearest definition in `targets` reachable from `from`.
fn first_reached(
    successors: &[Vec<usize>],
    from: usize,
    targets: &HashSet<usize>,
) -> Option<usize> {
    let mut seen = vec![false; successors.len()];
    let mut queue = VecDeque::from([from]);
    seen[from] = true;
    while let Some(u) = queue.pop_front() {
        for &v in &successors[u] {
            if !seen[v] {
                if targets.contains(&v) {
                    return Some(v);
                }
                seen[v] = true;
                queue.push_back(v);
            }
        }
    }
    None
}

/// Records this compile's digests as the unit's history (nothing on
/// failure: the history is a convenience).
pub fn record(store: &dyn Storage, key: &FragmentDigest, d: &ModuleDigests) {
    let entry = Entry {
        kind: EntryKind::History,
        metadata: Vec::new(),
        payload: encode(&history_of(d)),
    };
    let _ = store.put(key, &entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_round_trips() {
        let mut h = HashMap::new();
        h.insert([1; 6], ([2; 3], [3; 3]));
        h.insert([4; 6], ([5; 3], [6; 3]));
        assert_eq!(decode(&encode(&h)).unwrap(), h);
        assert_eq!(encode(&h).len(), 2 * ROW);
        assert!(decode(&[0; 23]).is_none());
    }

    #[test]
    fn shared_is_what_the_previous_compile_did_not_have() {
        let def = |name: &str, f: u8| crate::ir::digest::Definition {
            name: name.to_string(),
            kind: DefKind::Function,
            local: false,
            constant: true,
            initial: [f; 32],
            reached_as: [f; 32],
            final_digest: FragmentDigest([f; 32]),
            position: None,
        };
        let before = ModuleDigests {
            defs: vec![def("mine", 1), def("edited", 2)],
            ..ModuleDigests::default()
        };
        let history = History(decode(&encode(&history_of(&before))));
        let now = ModuleDigests {
            defs: vec![def("mine", 1), def("edited", 3), def("instance", 4)],
            ..ModuleDigests::default()
        };
        let pruned = ["edited", "instance", "mine"];
        assert_eq!(shared(&history, &now, &pruned), vec!["edited", "instance"]);
        // No history: everything reused came from elsewhere.
        assert_eq!(shared(&History(None), &now, &pruned).len(), 3);
    }

    #[test]
    fn nearest_changed_definition() {
        // 0 → 1 → 2, 0 → 3; 2 changed.
        let succ = vec![vec![1, 3], vec![2], vec![], vec![]];
        let targets: HashSet<usize> = [2].into();
        assert_eq!(first_reached(&succ, 0, &targets), Some(2));
        assert_eq!(first_reached(&succ, 3, &targets), None);
    }
}
