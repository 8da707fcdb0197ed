//! Stage 4, optimization: the new pass manager's `default<On>` pipeline with
//! the pass-builder options clang derives from the command line
//! (vectorizers, unrolling and interleaving, call-graph profile).
//!
//! The constructor list (`llvm.global_ctors`) is hidden from the optimizer
//! while it runs: GlobalOpt would otherwise evaluate constructors at compile
//! time, writing their results into the initializers of the globals they
//! store to and dropping them from the list. A global's stored fragment
//! would then hold a constructor's effect while a later build, in which the
//! constructor's body is pruned, still runs it — twice the effect for a
//! constructor such as `n++`. Constructors always run at start-up instead.
//!
//! After the pipeline (and function merging), [`drop_unreferenced_locals`]
//! removes the definitions that were `static` in the source and that
//! nothing in the object will refer to — every call inlined, the address
//! never taken — as clang's optimizer removes them: those are internal
//! again for one `globaldce` run. What refers to what is the module's own
//! references plus those of the stored code the object will hold (a
//! stored table may need a static whose only user in this module is
//! gone). Without it, each such function would still be compiled and
//! linked into the program.
//!
//! Variables keep the alignment they were defined with while the pipeline
//! runs (the shim pins it, `shim/passes.cpp`): LLVM raises a defined
//! variable's alignment for its users' loads and stores, which would make
//! a stored variable's bytes depend on functions outside its digest.
//!
//! With stored bodies (`bodies`), the context's functions get the bodies
//! an earlier compile's inliner left them right before the inliner runs,
//! and this compile's are kept right after it.
//!
//! The pipeline's last pass turns a lookup table of pointers to local
//! constants (a switch over string literals) into a table of 32-bit
//! offsets in position-independent code; with the constants hidden
//! external it kept 8-byte pointers, each a dynamic relocation in a PIE.
//! [`relative_lookup_tables`] runs it once more with them local.
//!
//! A function's second lookup table LLVM names with a number the whole
//! module counts (`switch.table.f.7`); with `-fdata-sections` the name is
//! its section's, so a warm compile that pruned other functions named it
//! otherwise than the cold one. The tables are numbered per function last
//! (`llvm::number_lookup_tables`). (Function specialization, whose
//! budgets the whole module shares, does not run: see the shim's
//! `passes.cpp`.)

use std::collections::{HashMap, HashSet};

use anyhow::{anyhow, Result};
use inkwell::module::Linkage;
use inkwell::passes::PassBuilderOptions;
use inkwell::GlobalVisibility;

use super::bodies::{self, ContextBodies, Snapshot};
use super::canonical::Unit;
use crate::ir::settings::CodegenSettings;
use crate::llvm::{self, HookPoint};

const CTORS: &str = "llvm.global_ctors";
const HIDDEN_CTORS: &str = "repocc.hidden.global_ctors";

/// Runs the optimization pipeline on the unit. Where its module
/// optimization half starts, the statics nothing refers to any more
/// (every call inlined) are dropped ([`drop_unreferenced_locals`], with
/// `stored` the code the object will hold besides the module's), as
/// clang's inliner deletes them once their last call is inlined: the
/// vectorizers, unrolling and late simplification passes then do not
/// spend time on them (a fifth of the optimizer's time in lua's units).
pub fn run(
    unit: &Unit,
    settings: &CodegenSettings,
    stored: &StoredCode,
    bodies: Option<&Bodies>,
) -> Result<Optimized> {
    let ctors = unit.module.get_global(CTORS);
    if let Some(c) = ctors {
        // External while hidden, so that nothing deletes or rewrites it.
        c.set_name(HIDDEN_CTORS);
        c.set_linkage(Linkage::External);
    }
    let tuning = llvm::PipelineTuning {
        loop_vectorization: settings.vectorize_loops.into(),
        slp_vectorization: settings.vectorize_slp.into(),
        loop_unrolling: settings.unroll_loops.into(),
        loop_interleaving: settings.unroll_loops.into(),
        call_graph_profile: 1,
        merge_functions: 0,
    };
    // A content-named constant is a fragment other units share: no
    // constant of this unit may change it (see the function's comment).
    llvm::mark_content_named_constants(&unit.module);
    let mut dropped = Ok(());
    let mut outcome = Optimized::default();
    let mut replaced = HashSet::new();
    let result = llvm::run_pipeline_with_hooks(
        &unit.module,
        &unit.target_machine,
        settings.opt.pipeline(),
        &tuning,
        bodies.is_some(),
        &mut |point| match (point, bodies) {
            (HookPoint::BeforeInliner, Some(b)) => {
                outcome.substituted = bodies::substitute(unit, &b.context).len();
                // Those put in place, and those left out (their group's
                // other bodies did not all map): the repository has them.
                replaced = b.context.stored().map(String::from).collect();
            }
            (HookPoint::AfterInliner, Some(b)) if b.keep => {
                outcome.snapshot = bodies::snapshot(unit, &b.context, b.whole_reach, &replaced);
            }
            (HookPoint::OptimizerEarly, _) => {
                // Before the context goes: a cold compile keeps what it
                // drops (see the function).
                llvm::kill_debug_only_local_references(&unit.module);
                llvm::remove_use_anchor(&unit.module);
                dropped = drop_unreferenced_locals(unit, stored);
                drop_context_bodies(unit, stored);
            }
            _ => {}
        },
    )
    .map_err(|e| anyhow!("optimizing {}: {e}", unit.source_name))
    .and(dropped)
    .and_then(|()| relative_lookup_tables(unit));
    // Last, once every table and specialization is made.
    llvm::number_lookup_tables(&unit.module);
    llvm::unmark_content_named_constants(&unit.module);
    if let Some(c) = unit.module.get_global(HIDDEN_CTORS) {
        c.set_linkage(Linkage::Appending);
        c.set_name(CTORS);
    }
    result.map(|()| outcome)
}

/// The stored bodies a compile uses and keeps (see `bodies`).
pub struct Bodies<'a> {
    /// What the compile sees the whole reach of (see `prune`).
    pub whole_reach: &'a HashSet<String>,
    /// What to put in place of the context's bodies.
    pub context: ContextBodies,
    /// Whether to keep the bodies the inliner leaves.
    pub keep: bool,
}

/// What [`run`] leaves besides the optimized module.
#[derive(Default)]
pub struct Optimized {
    /// How many context bodies were stored ones.
    pub substituted: usize,
    /// The bodies to store (see `bodies`).
    pub snapshot: Option<Snapshot>,
}

/// Where the module optimization half starts, the functions kept only as
/// context become declarations: no caller can inline them any more, their
/// inferred attributes stay on the declaration, and their code is not
/// generated. The vectorizers, unrolling and late simplification would
/// otherwise run on all of them: on sqlite3.c, a one-function edit that
/// reaches `openDatabase` keeps most of the file as context.
fn drop_context_bodies(unit: &Unit, stored: &StoredCode) {
    for name in &stored.context {
        // Functions only: a variable's initializer can still be folded.
        // (A function without a body is left as it is.)
        if unit.module.get_function(name).is_some() {
            llvm::make_declaration(&unit.module, name);
        }
    }
}

/// A global made local for the pipeline's last passes, and what it was.
struct Localized {
    name: String,
    linkage: Linkage,
    visibility: GlobalVisibility,
}

/// Runs LLVM's relative lookup table converter (the default pipeline's
/// last pass; it does nothing outside position-independent code) with the
/// constants that were local in the source local again, as they are in
/// clang's module: it takes only tables whose elements are local
/// constants. Alone, not at the end of the pipeline, where GlobalDCE and
/// ConstantMerge would delete or merge the local constants that only
/// stored code refers to.
fn relative_lookup_tables(unit: &Unit) -> Result<()> {
    let localized = localize_lookup_table_elements(unit);
    if localized.is_empty() {
        return Ok(());
    }
    // A table ConstantMerge made one for several functions would be
    // converted only where the others were pruned (see the shim).
    llvm::split_shared_lookup_tables(&unit.module);
    let result = unit
        .module
        .run_passes(
            "rel-lookup-table-converter",
            &unit.target_machine,
            PassBuilderOptions::create(),
        )
        .map_err(|e| anyhow!("relative lookup tables of {}: {e}", unit.source_name));
    restore_linkage(unit, &localized);
    result
}

/// Makes the constants that were local in the source local again, for
/// [`relative_lookup_tables`]. Left as they are: constants that are
/// themselves arrays of pointers, which the converter would take as
/// tables — a table's use count is the module's, and with stored code a
/// recompiled function's table could be converted in one build and not in
/// another — and anything but defined constants. The context's
/// definitions qualify as the others do: a recompiled function's table is
/// converted warm exactly as cold.
fn localize_lookup_table_elements(unit: &Unit) -> Vec<Localized> {
    let mut out = Vec::new();
    for name in &unit.originally_local {
        let Some(g) = unit.module.get_global(name) else {
            continue;
        };
        if g.is_declaration() || !g.is_constant() {
            continue;
        }
        let table_of_pointers =
            g.get_initializer()
                .map(|v| v.get_type())
                .is_some_and(|t| match t {
                    inkwell::types::BasicTypeEnum::ArrayType(a) => {
                        a.get_element_type().is_pointer_type()
                    }
                    _ => false,
                });
        if table_of_pointers {
            continue;
        }
        out.push(Localized {
            name: name.clone(),
            linkage: g.get_linkage(),
            visibility: g.get_visibility(),
        });
        g.set_visibility(GlobalVisibility::Default);
        g.set_linkage(Linkage::Internal);
    }
    out
}

/// Gives the globals [`localize_lookup_table_elements`] made local their
/// linkage and visibility back, as the rest of the pipeline expects.
fn restore_linkage(unit: &Unit, localized: &[Localized]) {
    for l in localized {
        if let Some(g) = unit.module.get_global(&l.name) {
            g.set_linkage(l.linkage);
            g.set_visibility(l.visibility);
        }
    }
}

/// What the object will hold besides the module's own definitions: the
/// stored code of pruned fragments (see `prune`).
#[derive(Debug, Default)]
pub struct StoredCode {
    /// Symbols that stored code certainly in the object refers to (that of
    /// fragments that are not discardable), and definitions it needs.
    pub roots: Vec<String>,
    /// For each member of a discardable fragment with stored code: the
    /// symbols that code refers to (followed where the member is needed).
    pub references: HashMap<String, Vec<String>>,
    /// Definitions with stored code kept in the module only as context
    /// for the optimizer (see `prune`): a function's body matters until
    /// inlining and attribute inference are done, no longer (see [`run`]).
    pub context: Vec<String>,
}

/// Deletes the originally internal definitions that nothing in the object
/// will refer to: not the module's other definitions, not stored code
/// (`stored`), directly or through other such definitions. The survivors
/// are hidden external again, as the rest of the pipeline expects.
pub fn drop_unreferenced_locals(unit: &Unit, stored: &StoredCode) -> Result<()> {
    let module = &unit.module;
    let originally_local: HashSet<&str> =
        unit.originally_local.iter().map(String::as_str).collect();
    let discardable = |name: &str, linkage: Linkage| {
        originally_local.contains(name)
            || matches!(
                linkage,
                Linkage::LinkOnceAny | Linkage::LinkOnceODR | Linkage::AvailableExternally
            )
    };
    // Definitions: name -> a root (kept whatever refers to it)?
    let mut defined: HashMap<String, bool> = HashMap::new();
    for f in module.get_functions().filter(|f| llvm::has_body(f)) {
        let name = f.get_name().to_string_lossy().into_owned();
        let root = !discardable(&name, f.get_linkage());
        defined.insert(name, root);
    }
    for g in module.get_globals().filter(|g| !g.is_declaration()) {
        let name = g.get_name().to_string_lossy().into_owned();
        let root = !discardable(&name, g.get_linkage());
        defined.insert(name, root);
    }
    // Aliases are never dropped here: what they point at stays.
    for (alias, _, _) in llvm::aliases(module) {
        defined.insert(alias, true);
    }
    let mut uses: HashMap<String, Vec<String>> = HashMap::new();
    for (used, user) in llvm::global_users(module) {
        uses.entry(user).or_default().push(used);
    }
    let mut live: HashSet<String> = HashSet::new();
    let mut pending: Vec<String> = defined
        .iter()
        .filter(|(_, root)| **root)
        .map(|(n, _)| n.clone())
        .chain(stored.roots.iter().cloned())
        .collect();
    while let Some(name) = pending.pop() {
        if live.contains(&name) {
            continue;
        }
        if let Some(u) = uses.get(&name) {
            pending.extend(u.iter().cloned());
        }
        if let Some(r) = stored.references.get(&name) {
            pending.extend(r.iter().cloned());
        }
        live.insert(name);
    }
    let mut internal = Vec::new();
    for name in &unit.originally_local {
        if live.contains(name) || defined.get(name) != Some(&false) {
            continue;
        }
        if let Some(g) = named_global(module, name) {
            g.set_linkage(Linkage::Internal);
            g.set_visibility(GlobalVisibility::Default);
            internal.push(name.as_str());
        }
    }
    if internal.is_empty() {
        return Ok(());
    }
    // `globaldce` also removes discardable definitions nothing in the
    // module uses, and a live one may be used only by stored code (a
    // reused template instance that names another, compiled here: fmt's
    // make_format_args<date> and format_custom_arg<date> at -O0): those
    // look kept (weak) while it runs.
    let mut protected = Vec::new();
    for name in &live {
        let Some(g) = named_global(module, name) else {
            continue;
        };
        let weak = match g.get_linkage() {
            Linkage::LinkOnceODR => Linkage::WeakODR,
            Linkage::LinkOnceAny => Linkage::WeakAny,
            _ => continue,
        };
        if !g.is_declaration() {
            protected.push((g, g.get_linkage()));
            g.set_linkage(weak);
        }
    }
    let result = module
        .run_passes(
            "globaldce",
            &unit.target_machine,
            PassBuilderOptions::create(),
        )
        .map_err(|e| anyhow!("removing unused definitions of {}: {e}", unit.source_name));
    for (g, linkage) in protected {
        g.set_linkage(linkage);
    }
    for name in internal {
        if let Some(g) = named_global(module, name) {
            g.set_linkage(Linkage::External);
            g.set_visibility(GlobalVisibility::Hidden);
        }
    }
    result
}

/// The function or global variable called `name`.
fn named_global<'ctx>(
    module: &inkwell::module::Module<'ctx>,
    name: &str,
) -> Option<inkwell::values::GlobalValue<'ctx>> {
    match module.get_function(name) {
        Some(f) => Some(f.as_global_value()),
        None => module.get_global(name),
    }
}
