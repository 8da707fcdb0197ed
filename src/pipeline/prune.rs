//! Stage 4 in repository mode, pruning: fragments whose key is in the
//! repository are not optimized or code-generated again.
//!
//! A fragment (see `split`) is keyed by the final digests of its members:
//! the digest covers everything that can change the fragment's bytes, so a
//! stored fragment under the same key is what this compile would produce.
//! A pruned fragment's definitions become declarations — unless an
//! unpruned definition uses them (within `CONTEXT_DEPTH` edges): those stay
//! in the module as context for the optimizer (inlining, attribute
//! inference), and only their code generation is skipped. Fragments with
//! aliases stay as context too (an alias must point at a definition).
//!
//! A stored fragment that function merging made depend on a partner is
//! reused only while its requirements hold (see `entries`).

use std::collections::HashMap;

use anyhow::Result;

use super::canonical::Unit;
use super::digest::ModuleDigests;
use super::entries::{self, fragment_key};
use super::split;
use crate::llvm_shim;
use crate::repo::store::{Entry, FragmentDigest, Store};

/// How many edges away from an unpruned definition pruned definitions
/// stay in the module for the optimizer.
pub const CONTEXT_DEPTH: usize = 2;

/// A fragment of the unit, as planned before optimization.
#[derive(Debug)]
pub struct PlannedFragment {
    pub members: Vec<String>,
    pub key: FragmentDigest,
    /// The repository's entry for `key` whose requirements hold, if any.
    pub stored: Option<Entry>,
    /// The primary entry for `key` when it exists but is not reusable
    /// here (see `entries`).
    pub primary: Option<Entry>,
    /// Definitions among the members (aliases and label tables aside).
    pub definitions: u64,
}

#[derive(Debug, Default)]
pub struct PrunePlan {
    pub fragments: Vec<PlannedFragment>,
    pub definitions_pruned: u64,
    pub corrupt_entries: u64,
    /// A problem reading the repository (reported once by the caller).
    pub store_problem: Option<String>,
}

pub fn prune_known_definitions(
    unit: &Unit,
    digests: &ModuleDigests,
    store: &Store,
) -> Result<PrunePlan> {
    let aliases: HashMap<String, String> = llvm_shim::aliases(&unit.module)
        .into_iter()
        .map(|(n, _, t)| (n, t))
        .collect();
    let index: HashMap<&str, usize> = digests
        .defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let mut plan = PrunePlan::default();
    for (members, glue) in split::plan(&unit.module) {
        if glue {
            continue;
        }
        let (key, definitions) = fragment_key(&members, digests, &index, &aliases);
        let found = entries::lookup(store, &key, digests, &index);
        plan.corrupt_entries += found.corrupt.len() as u64;
        if let Some(c) = found.corrupt.into_iter().next() {
            plan.store_problem.get_or_insert(c);
        }
        if let Some(p) = found.problem {
            plan.store_problem.get_or_insert(p);
        }
        plan.fragments.push(PlannedFragment {
            members,
            key,
            stored: found.usable,
            primary: found.primary,
            definitions,
        });
    }

    // Context: what the unpruned definitions use, up to CONTEXT_DEPTH edges
    // away. Any context is correct (pruned definitions that are left out
    // become declarations, and their stored code is current); the depth
    // trades how much of a cold compile's inlining an edited definition
    // gets against the optimization time of a rebuild.
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
    let in_context = |name: &str| index.get(name).is_some_and(|&i| depth[i] != usize::MAX);
    for f in plan.fragments.iter().filter(|f| f.stored.is_some()) {
        plan.definitions_pruned += f.definitions;
        let has_alias = f
            .members
            .iter()
            .any(|m| aliases.iter().any(|(a, _)| a == m));
        if has_alias || f.members.iter().any(|m| in_context(m)) {
            continue;
        }
        for m in &f.members {
            llvm_shim::make_declaration(&unit.module, m);
        }
    }
    Ok(plan)
}
