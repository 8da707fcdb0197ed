//! Stage 4 in repository mode, pruning: fragments whose key is in the
//! repository are not optimized or code-generated again.
//!
//! A fragment (see `split`) is keyed by the final digests of its members:
//! the digest covers everything that can change the fragment's bytes, so a
//! stored fragment under the same key is what this compile would produce.
//! A pruned fragment's definitions become declarations — unless an
//! unpruned definition reaches them through the digest graph (everything
//! its final digest covers): those stay in the module as context for the
//! optimizer (inlining, attribute inference), and only their code
//! generation is skipped (once inlining is done they become declarations,
//! see `optimize::run`). The whole reach, not a few edges: the optimizer
//! must see what a cold compile sees, or the code it makes for the
//! unpruned definition depends on what the repository happens to hold
//! (lstring.c's `luaS_new` inlined differently when a callee three calls
//! down had been evicted), and invariant 4 promises the same bytes. Fragments with
//! aliases stay as context too (an alias must point at a definition).
//! A recompiled function that something used before pruning, and nothing
//! after, is kept looking used (`llvm::anchor_uses`): dead-argument
//! elimination treats a function without uses differently (sqlite3.c's
//! `versionFunc`, used only by a pruned table, kept its unused arguments'
//! debug values warm and lost them cold).
//!
//! Discardable fragments (`linkonce`: C++ inline functions, template
//! instances) are in an object only where something refers to them, as
//! clang emits them. A stored deletion of one ("the optimizer dropped it")
//! is not trusted where the stored code of another fragment refers to it:
//! it is compiled then. One that stays unpruned-but-deleted remains a
//! definition, so that the optimizer can keep it if new code needs it.

use std::collections::{HashMap, HashSet};

use anyhow::Result;

use super::entries::{self, fragment_key};
use super::split;
use crate::ir::canonical::Unit;
use crate::ir::digest::ModuleDigests;
use crate::llvm;
use crate::repo::storage::{Entry, EntryKind, FragmentDigest, Storage};

/// How many edges away from an unpruned definition pruned definitions
/// stay in the module for the optimizer: all of them (see above).
pub const CONTEXT_DEPTH: usize = usize::MAX;

/// A fragment of the unit, as planned before optimization.
#[derive(Debug)]
pub struct PlannedFragment {
    pub members: Vec<String>,
    pub key: FragmentDigest,
    /// The repository's entry for `key`, if any.
    pub stored: Option<Entry>,
    /// Every member may be dropped when unused (see `split::discardable`).
    pub discardable: bool,
    /// The symbols the stored code refers to without defining them.
    pub references: Vec<String>,
    /// The definitions inlined into the stored code with lines relative to
    /// theirs, by index (see `debug_lines`).
    pub inlined: Vec<String>,
    /// Where the stored code's relative lines are, if recorded.
    pub lines: Option<Vec<u64>>,
}

impl PlannedFragment {
    fn has_stored_object(&self) -> bool {
        self.stored.as_ref().is_some_and(|e| e.kind.is_object())
    }

    fn stored_deletion(&self) -> bool {
        self.stored
            .as_ref()
            .is_some_and(|e| e.kind == EntryKind::Deleted)
    }
}

#[derive(Debug, Default)]
pub struct PrunePlan {
    pub fragments: Vec<PlannedFragment>,
    pub corrupt_entries: u64,
    /// A problem reading the repository (reported once by the caller).
    pub store_problem: Option<String>,
    /// What the stored code the object may hold refers to (see
    /// `optimize::drop_unreferenced_locals`).
    pub stored_code: crate::ir::optimize::StoredCode,
    /// The definitions compiled now and everything they reach: the
    /// optimizer sees the whole reach of each, as a cold compile does
    /// (what else stays in the module may miss a callee's body, see
    /// `bodies::snapshot`).
    pub whole_reach: std::collections::HashSet<String>,
}

pub fn prune_known_definitions(
    unit: &Unit,
    digests: &ModuleDigests,
    store: &dyn Storage,
) -> Result<PrunePlan> {
    let aliases: HashMap<String, String> = llvm::aliases(&unit.module)
        .into_iter()
        .map(|(n, _, t)| (n, t))
        .collect();
    let index: HashMap<&str, usize> = digests
        .defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let originally_local: HashSet<&str> =
        unit.originally_local.iter().map(String::as_str).collect();
    let mut plan = look_up_fragments(unit, digests, store, &index, &aliases, &originally_local);
    keep_deleted_but_referenced(unit, &mut plan, &originally_local);
    for f in &plan.fragments {
        if !f.has_stored_object() {
            continue;
        }
        if f.discardable {
            for m in &f.members {
                plan.stored_code
                    .references
                    .insert(m.clone(), f.references.clone());
            }
        } else {
            plan.stored_code.roots.extend(f.references.iter().cloned());
        }
    }
    // Context: everything the unpruned definitions reach. Less would still
    // be correct code (pruned definitions that are left out become
    // declarations, and their stored code is current) but not a cold
    // compile's bytes.
    let depth = context_depths(digests, &plan, &index);
    plan.whole_reach = (digests.defs.iter().zip(&depth))
        .filter(|(_, &d)| d != usize::MAX)
        .map(|(def, _)| def.name.clone())
        .collect();
    declare_pruned(unit, digests, &mut plan, &index, &aliases, &depth);
    Ok(plan)
}

/// The unit's fragments (but the glue), each with its key and what the
/// repository holds under it; one question for all of them to a tier
/// behind a network.
fn look_up_fragments(
    unit: &Unit,
    digests: &ModuleDigests,
    store: &dyn Storage,
    index: &HashMap<&str, usize>,
    aliases: &HashMap<String, String>,
    originally_local: &HashSet<&str>,
) -> PrunePlan {
    let mut plan = PrunePlan::default();
    let keyed: Vec<(Vec<String>, FragmentDigest)> = split::plan(&unit.module)
        .into_iter()
        .filter(|(_, glue)| !glue)
        .map(|(members, _)| {
            let key = fragment_key(&members, digests, index, aliases);
            (members, key)
        })
        .collect();
    store.prefetch(&keyed.iter().map(|(_, k)| *k).collect::<Vec<_>>());
    for (members, key) in keyed {
        let found = entries::lookup(store, &key);
        plan.corrupt_entries += found.corrupt.len() as u64;
        if let Some(c) = found.corrupt.into_iter().next() {
            plan.store_problem.get_or_insert(c);
        }
        if let Some(p) = found.problem {
            plan.store_problem.get_or_insert(p);
        }
        let discardable = split::discardable(&unit.module, &members, originally_local);
        let was_found = found.usable.is_some();
        let stored = found.usable.filter(|e| match e.kind {
            k if k.is_object() => true,
            EntryKind::Deleted => {
                discardable || split::available_externally(&unit.module, &members)
            }
            _ => false,
        });
        if stored.is_none() && was_found {
            // A definition the optimizer cannot delete, stored as deleted (or
            // an entry of another kind under a fragment's key): composing
            // would leave it out of the object. Compiled instead.
            plan.corrupt_entries += 1;
            plan.store_problem.get_or_insert(format!(
                "repository entry {} says the optimizer deleted {}, which it cannot; recompiling it",
                key.to_hex(),
                members.join(", ")
            ));
        }
        plan.fragments.push(PlannedFragment {
            members,
            key,
            stored,
            discardable,
            references: found.references,
            inlined: found.inlined,
            lines: found.lines,
        });
    }
    plan
}

/// Definitions stored as deleted that stored code refers to are compiled
/// (see `compile_deleted_but_referenced`), and kept: the optimizer cannot
/// see the stored code's reference (weak_odr is the same symbol as
/// linkonce_odr in the object, but never dropped; a static is hidden
/// external while the optimizer runs and is kept by `required`). What
/// only discardable stored code names is kept through the optimizer the
/// same way, but is no root: the object holds it where that code is in
/// the object (`Slot::EmittedIfReferenced`).
fn keep_deleted_but_referenced(
    unit: &Unit,
    plan: &mut PrunePlan,
    originally_local: &HashSet<&str>,
) {
    let needed = compile_deleted_but_referenced(&mut plan.fragments);
    for (i, certain) in needed {
        for m in &plan.fragments[i].members {
            if certain {
                plan.stored_code.roots.push(m.clone());
            }
            if originally_local.contains(m.as_str()) {
                continue;
            }
            if let Some(f) = unit.module.get_function(m) {
                f.set_linkage(inkwell::module::Linkage::WeakODR);
            } else if let Some(g) = unit.module.get_global(m) {
                g.set_linkage(inkwell::module::Linkage::WeakODR);
            }
        }
    }
}

/// How many edges each definition is from one compiled now (`usize::MAX`:
/// out of reach), up to `CONTEXT_DEPTH`.
fn context_depths(
    digests: &ModuleDigests,
    plan: &PrunePlan,
    index: &HashMap<&str, usize>,
) -> Vec<usize> {
    let n = digests.defs.len();
    let mut succ = vec![Vec::new(); n];
    for &(u, v) in &digests.edges {
        succ[u].push(v);
    }
    let mut depth = vec![usize::MAX; n];
    let mut frontier: Vec<usize> = Vec::new();
    for f in plan.fragments.iter().filter(|f| f.stored.is_none()) {
        for m in &f.members {
            if let Some(&i) = index.get(m.as_str()) {
                depth[i] = 0;
                frontier.push(i);
            }
        }
    }
    for d in 1..=CONTEXT_DEPTH {
        if frontier.is_empty() {
            break;
        }
        let mut next = Vec::new();
        for &u in &frontier {
            for &v in &succ[u] {
                if depth[v] == usize::MAX {
                    depth[v] = d;
                    next.push(v);
                }
            }
        }
        frontier = next;
    }
    depth
}

/// Turns the pruned definitions out of the context into declarations;
/// those in it (and variables) stay, as the optimizer's context.
fn declare_pruned(
    unit: &Unit,
    digests: &ModuleDigests,
    plan: &mut PrunePlan,
    index: &HashMap<&str, usize>,
    aliases: &HashMap<String, String>,
    depth: &[usize],
) {
    let in_context = |name: &str| index.get(name).is_some_and(|&i| depth[i] != usize::MAX);
    // What the optimizer deleted before is kept only where new code may
    // come to name it (stored code that does is compiled, see above).
    // Optimizing it again would be for nothing.
    let named = named_by_new_code(&plan.fragments, digests, index, &|i| depth[i] != usize::MAX);
    let may_be_needed = |f: &PlannedFragment| {
        f.members
            .iter()
            .any(|m| index.get(m.as_str()).is_some_and(|&i| named[i]))
    };
    // Which functions something uses before pruning takes users away
    // (none to look at when nothing is pruned).
    let any_pruned = plan.fragments.iter().any(|f| f.stored.is_some());
    let used: Vec<String> = unit
        .module
        .get_functions()
        .filter(|f| any_pruned && llvm::has_body(f) && llvm::is_used(f))
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    for f in plan.fragments.iter().filter(|f| f.stored.is_some()) {
        let has_alias = f.members.iter().any(|m| aliases.contains_key(m));
        let kept_for_the_optimizer = f.discardable && f.stored_deletion() && may_be_needed(f);
        if has_alias || kept_for_the_optimizer {
            continue;
        }
        // A variable stays defined wherever it is, as in a cold compile:
        // whether a global is a definition decides more than folding its
        // value (LICM promotes a load and store of a global it knows to
        // be writable memory, which a declaration may not be), and a
        // declaration made an edited `main` another code than the cold
        // compile's (csmith seed 7002000). It costs no optimization.
        let variables_only = f
            .members
            .iter()
            .all(|m| unit.module.get_function(m).is_none() && unit.module.get_global(m).is_some());
        if f.members.iter().any(|m| in_context(m)) || variables_only {
            if f.has_stored_object() {
                plan.stored_code.context.extend(f.members.iter().cloned());
            }
            continue;
        }
        for m in &f.members {
            llvm::make_declaration(&unit.module, m);
        }
    }
    // A function whose users were all pruned looks used still, as in a
    // cold compile (see `llvm::anchor_uses`).
    let unused_now: Vec<&str> = used
        .iter()
        .map(String::as_str)
        .filter(|n| {
            unit.module
                .get_function(n)
                .is_some_and(|f| llvm::has_body(&f) && !llvm::is_used(&f))
        })
        .collect();
    llvm::anchor_uses(&unit.module, &unused_now);
}

/// Which definitions the object's new code may name: starting from the
/// unit's glue (always compiled) and the context (`in_context`: the
/// unpruned definitions and what the optimizer may inline into them),
/// what they name — references, not only edges: a load of a static
/// variable is no edge (its value cannot be folded), yet the variable
/// must be in the object, and a digest-equal one that another unit's
/// optimizer deleted must be compiled here. A stored deletion kept as a
/// definition may survive and name more, so its references count in turn;
/// stored code that is not context names nothing new (see
/// `compile_deleted_but_referenced` for what it names).
fn named_by_new_code(
    fragments: &[PlannedFragment],
    digests: &ModuleDigests,
    index: &HashMap<&str, usize>,
    in_context: &dyn Fn(usize) -> bool,
) -> Vec<bool> {
    let n = digests.defs.len();
    let mut succ = vec![Vec::new(); n];
    for &(u, v) in digests.edges.iter().chain(&digests.references) {
        succ[u].push(v);
    }
    // Definitions whose code is not compiled now: pruned, stored code.
    let mut stored_code = vec![false; n];
    for f in fragments.iter().filter(|f| f.has_stored_object()) {
        for m in &f.members {
            if let Some(&i) = index.get(m.as_str()) {
                stored_code[i] = true;
            }
        }
    }
    let names_new_code = |u: usize| in_context(u) || !stored_code[u];
    let mut named = vec![false; n];
    let mut pending: Vec<usize> = (0..n)
        .filter(|&i| in_context(i) || digests.defs[i].kind == crate::ir::digest::DefKind::Glue)
        .collect();
    while let Some(u) = pending.pop() {
        if std::mem::replace(&mut named[u], true) || !names_new_code(u) {
            continue;
        }
        pending.extend(succ[u].iter().copied().filter(|&v| !named[v]));
    }
    named
}

/// Which discardable fragments the symbols `seeds` reach: a fragment is
/// reached when a symbol names one of its members, and the references of
/// its code are followed in turn — the code compiled now where `compiled`
/// has it (planned fragment -> its references), else the stored code.
pub fn referenced_discardables(
    fragments: &[PlannedFragment],
    seeds: impl IntoIterator<Item = String>,
    compiled: &HashMap<usize, &[String]>,
) -> Vec<bool> {
    let owner: HashMap<&str, usize> = fragments
        .iter()
        .enumerate()
        .flat_map(|(i, f)| f.members.iter().map(move |m| (m.as_str(), i)))
        .collect();
    let mut reached = vec![false; fragments.len()];
    let mut pending: Vec<String> = seeds.into_iter().collect();
    while let Some(name) = pending.pop() {
        let Some(&j) = owner.get(name.as_str()) else {
            continue;
        };
        if !fragments[j].discardable || reached[j] {
            continue;
        }
        reached[j] = true;
        if let Some(references) = compiled.get(&j) {
            pending.extend(references.iter().cloned());
        } else if fragments[j].has_stored_object() {
            pending.extend(fragments[j].references.iter().cloned());
        }
    }
    reached
}

/// Discardable fragments that the stored code of pruned fragments refers
/// to (directly or through other such fragments) must be in the object,
/// as in a cold compile where the referring code is compiled too: a stored
/// deletion of one does not hold here, and one without a stored entry must
/// survive the optimizer, which cannot see the stored code's reference.
/// Returns the fragments to compile that way, each with whether the
/// object certainly needs it (stored code that is not discardable refers
/// to it) or only where a discardable fragment's stored code that refers
/// to it is in the object. The second kind: a reused inline function
/// whose static local variable has another digest here than in the unit
/// that stored the function (a mutable variable is no edge of its users'
/// digests), so the variable is compiled here, and its only user in the
/// module is a declaration — the optimizer deleted it, and the object
/// named it without defining it (libstdc++'s `regex_traits::
/// lookup_collatename` and its `__collatenames` at `-O1 -g`).
fn compile_deleted_but_referenced(fragments: &mut [PlannedFragment]) -> Vec<(usize, bool)> {
    let seeds = |discardable: bool| -> Vec<String> {
        fragments
            .iter()
            .filter(|f| (discardable || !f.discardable) && f.has_stored_object())
            .flat_map(|f| f.references.iter().cloned())
            .collect()
    };
    let certain = referenced_discardables(fragments, seeds(false), &HashMap::new());
    let possible = referenced_discardables(fragments, seeds(true), &HashMap::new());
    let mut kept = Vec::new();
    for (i, f) in fragments.iter_mut().enumerate() {
        let needed = possible[i];
        if needed && f.stored_deletion() {
            f.stored = None;
        }
        if needed && f.stored.is_none() {
            kept.push((i, certain[i]));
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fragment(
        name: &str,
        discardable: bool,
        stored: Option<EntryKind>,
        refs: &[&str],
    ) -> PlannedFragment {
        PlannedFragment {
            members: vec![name.to_string()],
            key: FragmentDigest([0; 32]),
            stored: stored.map(|kind| Entry {
                kind,
                metadata: Vec::new(),
                payload: Vec::new(),
            }),
            discardable,
            references: refs.iter().map(|r| r.to_string()).collect(),
            inlined: Vec::new(),
            lines: None,
        }
    }

    /// What stored code names is compiled and kept: certainly where code
    /// that is always in the object names it, else where the discardable
    /// stored code naming it is (a reused inline function's static local
    /// compiled here).
    #[test]
    fn what_stored_code_names_is_compiled_and_kept() {
        let mut f = vec![
            fragment("main", false, Some(EntryKind::Object), &["inline_a"]),
            fragment("inline_a", true, Some(EntryKind::Object), &["var_a"]),
            fragment("var_a", true, None, &[]),
            fragment("lookup", true, Some(EntryKind::Object), &["names"]),
            fragment("names", true, Some(EntryKind::Deleted), &[]),
            fragment("unnamed", true, None, &[]),
        ];
        assert_eq!(
            compile_deleted_but_referenced(&mut f),
            vec![(2, true), (4, false)]
        );
        // The deletion no longer holds: compiled now.
        assert!(f[4].stored.is_none());
    }
}
