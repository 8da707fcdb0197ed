//! Copies folded inside one compile unit of a composed object. A merged
//! compile unit (`debug_units`) holds every member fragment's own copy of
//! what its functions name: the namespaces and class skeletons around the
//! declarations it uses, the abstract subprogram of each function inlined
//! into it, pointer, const and base types, typedefs. clang's unit has one
//! of each. Here, before the unit is written again (`debug_tables`):
//!
//! - sibling namespaces (and sibling class declarations) that say the same
//!   become one, their children one list;
//! - DIEs are compared as a whole: two are the same when their own bytes
//!   are (relocations included, references left out), the DIEs they
//!   reference are the same, their children are the same in order, and so
//!   are their parents — refined until nothing changes (the coarsest
//!   partition stable under references, children and parents, as a
//!   minimal automaton is found);
//! - of siblings that are the same, the first is kept; whatever named a
//!   DIE of a dropped subtree names its counterpart in the kept one.
//!
//! Including the parent keeps context: two identical member declarations
//! of different classes stay apart, and so do the references to them.

use rustc_hash::FxHashMap as HashMap;

/// One DIE of a unit as the fold sees it.
pub(super) struct Node {
    /// Its offset in the unit.
    pub at: u64,
    /// Whether its declaration says it has children.
    pub children: bool,
    /// Its own bytes as compared: declaration, values, relocations; the
    /// values of references left out.
    pub key: Vec<u8>,
    /// The offsets (in the unit) of the DIEs it references, in order.
    pub refs: Vec<u64>,
    /// A namespace or a class declaration: siblings that say the same are
    /// merged, children and all.
    pub container: bool,
}

/// A unit after folding: the entries to write, in order (`Some(entry)`, or
/// `None` for a null entry ending a list of children), and each dropped
/// entry → the kept entry that stands for it.
pub(super) struct Folded {
    pub order: Vec<Option<usize>>,
    pub redirect: HashMap<usize, usize>,
}

/// The tree of a unit's entries (`None`: a null entry): each DIE's
/// children, and its root; `None` when the entries are not one tree.
fn tree(entries: &[Option<Node>]) -> Option<(Vec<Vec<usize>>, usize)> {
    let mut kids = vec![Vec::new(); entries.len()];
    let mut open: Vec<usize> = Vec::new();
    let mut root = None;
    for (i, e) in entries.iter().enumerate() {
        match e {
            None => {
                open.pop()?;
            }
            Some(node) => {
                match open.last() {
                    Some(&p) => kids[p].push(i),
                    None if root.is_none() => root = Some(i),
                    None => return None,
                }
                if node.children {
                    open.push(i);
                }
            }
        }
    }
    // LLVM ends the root's children with a null entry; a unit whose last
    // lists are left open is not folded.
    if !open.is_empty() {
        return None;
    }
    Some((kids, root?))
}

/// Folds the unit whose entries are `entries` (in their order in the
/// unit); `None` when they are not one tree or a reference names no DIE.
pub(super) fn fold(entries: &[Option<Node>]) -> Option<Folded> {
    let (mut kids, root) = tree(entries)?;
    let index: HashMap<u64, usize> = (entries.iter().enumerate())
        .filter_map(|(i, e)| e.as_ref().map(|n| (n.at, i)))
        .collect();
    let node = |i: usize| entries[i].as_ref();
    let refs: Vec<Vec<usize>> = (entries.iter())
        .map(|e| match e {
            Some(n) => n.refs.iter().map(|at| index.get(at).copied()).collect(),
            None => Some(Vec::new()),
        })
        .collect::<Option<_>>()?;
    let mut redirect: HashMap<usize, usize> = HashMap::default();

    // Sibling containers that say the same become one, top down.
    let mut pending = vec![root];
    while let Some(p) = pending.pop() {
        let mut first: HashMap<&[u8], usize> = HashMap::default();
        let mut kept = Vec::with_capacity(kids[p].len());
        for k in std::mem::take(&mut kids[p]) {
            let n = node(k)?;
            if n.container && refs[k].is_empty() {
                if let Some(&into) = first.get(n.key.as_slice()) {
                    let moved = std::mem::take(&mut kids[k]);
                    kids[into].extend(moved);
                    redirect.insert(k, into);
                    continue;
                }
                first.insert(&n.key, k);
            }
            kept.push(k);
        }
        pending.extend(kept.iter().copied());
        kids[p] = kept;
    }
    let mut parent = vec![usize::MAX; entries.len()];
    let mut live = Vec::new();
    let mut stack = vec![root];
    while let Some(p) = stack.pop() {
        live.push(p);
        for &k in &kids[p] {
            parent[k] = p;
            stack.push(k);
        }
    }
    // A reference to a merged container names the one it joined.
    let target = |t: usize| *redirect.get(&t).unwrap_or(&t);

    // Classes: own bytes first, then refined by references, children and
    // parent until their number stays.
    let mut class = vec![usize::MAX; entries.len()];
    let mut count = {
        let mut ids: HashMap<&[u8], usize> = HashMap::default();
        for &i in &live {
            let next = ids.len();
            class[i] = *ids.entry(node(i)?.key.as_slice()).or_insert(next);
        }
        ids.len()
    };
    loop {
        let mut ids: HashMap<Vec<usize>, usize> =
            HashMap::with_capacity_and_hasher(count, Default::default());
        let mut next_class = class.clone();
        for &i in &live {
            let mut signature = Vec::with_capacity(2 + refs[i].len() + kids[i].len() + 2);
            signature.push(class[i]);
            signature.push(if i == root {
                usize::MAX
            } else {
                class[parent[i]]
            });
            signature.extend(refs[i].iter().map(|&t| class[target(t)]));
            signature.push(usize::MAX);
            signature.extend(kids[i].iter().map(|&k| class[k]));
            let next = ids.len();
            next_class[i] = *ids.entry(signature).or_insert(next);
        }
        class = next_class;
        if ids.len() == count {
            break;
        }
        count = ids.len();
    }

    // Siblings of one class: the first stays, the others map onto it.
    let mut order = Vec::with_capacity(entries.len());
    emit(root, &kids, &class, entries, &mut redirect, &mut order)?;
    // A merged container's redirect may name one folded since.
    let resolved: HashMap<usize, usize> = redirect
        .keys()
        .map(|&k| {
            let mut t = k;
            for _ in 0..=entries.len() {
                match redirect.get(&t) {
                    Some(&n) => t = n,
                    None => break,
                }
            }
            (k, t)
        })
        .collect();
    Some(Folded {
        order,
        redirect: resolved,
    })
}

/// Writes `i`'s subtree into `order`, folding siblings of one class.
fn emit(
    i: usize,
    kids: &[Vec<usize>],
    class: &[usize],
    entries: &[Option<Node>],
    redirect: &mut HashMap<usize, usize>,
    order: &mut Vec<Option<usize>>,
) -> Option<()> {
    // Iterative: deep trees stay off the call stack.
    enum Step {
        Enter(usize),
        Close,
    }
    let mut steps = vec![Step::Enter(i)];
    while let Some(step) = steps.pop() {
        let i = match step {
            Step::Close => {
                order.push(None);
                continue;
            }
            Step::Enter(i) => i,
        };
        order.push(Some(i));
        if !entries[i].as_ref()?.children {
            continue;
        }
        steps.push(Step::Close);
        let mut kept: HashMap<usize, usize> = HashMap::default();
        let mut enter = Vec::new();
        for &k in &kids[i] {
            match kept.get(&class[k]) {
                Some(&same) => map_subtree(k, same, kids, redirect)?,
                None => {
                    kept.insert(class[k], k);
                    enter.push(k);
                }
            }
        }
        steps.extend(enter.into_iter().rev().map(Step::Enter));
    }
    Some(())
}

/// Maps every DIE of `dropped`'s subtree onto its counterpart in `kept`'s
/// (the same class, so the same shape).
fn map_subtree(
    dropped: usize,
    kept: usize,
    kids: &[Vec<usize>],
    redirect: &mut HashMap<usize, usize>,
) -> Option<()> {
    let mut pairs = vec![(dropped, kept)];
    while let Some((d, k)) = pairs.pop() {
        redirect.insert(d, k);
        if kids[d].len() != kids[k].len() {
            return None;
        }
        pairs.extend(kids[d].iter().copied().zip(kids[k].iter().copied()));
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::super::combine::tests::{compose_parts, dump, succeed};

    /// Three C++ fragments that each inline the same functions of a
    /// header's namespace and class, composed: the merged compile unit
    /// holds one namespace and one abstract subprogram of each where the
    /// fragments brought three, llvm-dwarfdump verifies it, and a debugger
    /// still stops in every inlined copy and shows its argument.
    #[test]
    fn a_units_copies_are_kept_once() {
        let source = "#include <cstdio>\n\
            void use(long);\n\
            namespace ns {\n\
            struct Acc { long total = 0; void add(long v) { use(v); total += v * 3; }\n\
              long get() const { use(total); return total; } };\n\
            inline long scaled(long v) { Acc a; a.add(v); use(a.total); return a.get(); }\n\
            }\n\
            #if PART == 1\n\
            long one(long x) { return ns::scaled(x) + 1; }\n\
            #elif PART == 2\n\
            long two(long x) { return ns::scaled(x) * 2; }\n\
            #elif PART == 3\n\
            long three(long x) { return ns::scaled(x - 1); }\n\
            #else\n\
            long sum;\n\
            __attribute__((noinline)) void use(long v) { sum += v; }\n\
            long one(long); long two(long); long three(long);\n\
            int main() { long r = one(1) + two(2) + three(3);\n\
              std::printf(\"%ld %ld\\n\", r, sum); }\n\
            #endif\n";
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let flags = ["-O2", "-fdebug-types-section"];
        let (parts, path) = compose_parts(d, "fold.cc", source, &flags, 4);
        let first = d.join("part1.o");
        std::fs::write(&first, &parts[0]).unwrap();
        let alone = dump(&first, "--debug-info");
        assert_eq!(
            alone.matches("DW_AT_name\t(\"scaled\")").count(),
            1,
            "{alone}"
        );
        let verify = dump(&path, "--verify");
        assert!(verify.contains("No errors."), "{verify}");
        let info = dump(&path, "--debug-info");
        assert_eq!(info.matches("Compile Unit:").count(), 1, "{info}");
        // The compile unit (the type units hold their own namespaces).
        let unit = &info[info.find("Compile Unit:").unwrap()..];
        let unit = &unit[..unit.find("Type Unit:").unwrap_or(unit.len())];
        assert_eq!(
            unit.matches("DW_AT_name\t(\"scaled\")").count(),
            1,
            "{info}"
        );
        assert_eq!(unit.matches("DW_AT_name\t(\"ns\")").count(), 1, "{info}");
        // Each fragment's inlined copy still names the one left.
        assert!(
            unit.matches("DW_TAG_inlined_subroutine").count() >= 3,
            "{info}"
        );

        let exe = d.join("prog");
        succeed(Command::new("clang++-19").arg("-o").arg(&exe).arg(&path));
        let run = Command::new(&exe).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&run.stdout), "22 35\n");
        let gdb = Command::new("gdb")
            .args([
                "-q",
                "-batch",
                "-nx",
                "-ex",
                "break ns::scaled",
                "-ex",
                "run",
            ])
            .args([
                "-ex", "bt", "-ex", "print v", "-ex", "continue", "-ex", "bt",
            ])
            .args([
                "-ex", "print v", "-ex", "continue", "-ex", "bt", "-ex", "print v",
            ])
            .arg(&exe)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&gdb.stdout);
        assert!(out.contains("(3 locations)"), "{out}");
        for caller in ["one (x=", "two (x=", "three (x="] {
            assert!(out.contains(caller), "{caller}: {out}");
        }
        for value in ["$1 = 1", "$2 = 2", "$3 = 2"] {
            assert!(out.contains(value), "{value}: {out}");
        }
    }
}
