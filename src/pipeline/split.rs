//! Stage 6 in repository mode, fragments: which fragments the optimized
//! module holds, and their objects — carved out of one code generation
//! per worker (code and data apart; see `carve`; with debug info, see
//! `debug_batch`), or, for what the carver does not take (the glue,
//! functions sharing a named section), one module per fragment.
//!
//! A fragment is a definition (function or global variable), or all the
//! members of one COMDAT group, plus the aliases that point into it; the
//! optimizer's local helpers (switch tables, merged strings, specialized
//! clones) are copied into every fragment that uses them, as local
//! symbols. The *glue* fragment holds what belongs to the unit as a whole:
//! `llvm.global_ctors`/`dtors`, `llvm.used`, module assembly and the
//! compiler ident. Extraction runs in the unit's context (the shim's
//! `extract_definitions`). With one worker (other units keep the other
//! cores busy) a fragment is compiled right there, debug fragments too
//! (their lines rebased and compile unit trimmed in place); otherwise, and
//! for a debug unit's glue and computed-goto label tables, the extracted
//! modules cross to the workers as bitcode, each worker parsing into a
//! context of its own (DESIGN.md: LLVM modules are not `Send`). Either
//! way a module with debug info is verified as it is compiled
//! ([`verify_debug_module`]), so that the two ways agree. Fragments
//! compiled one module each share one code generation pipeline per thread
//! (`llvm::ObjectEmitter`): building the target's pipeline for every
//! fragment cost about a quarter of a debug unit's code generation.

use std::collections::HashMap;

use anyhow::{anyhow, Result};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};

use crate::ir::canonical::{self, Unit};
use crate::ir::settings::CodegenSettings;
use crate::llvm;
use crate::obj::carve;

use super::fragment_dump;

/// One fragment: its members (first is the fragment's name) and object.
#[derive(Clone, Debug)]
pub struct Fragment {
    pub members: Vec<String>,
    pub glue: bool,
    pub object: Vec<u8>,
    /// The symbols its code refers to and does not define.
    pub references: Vec<String>,
    /// With relative lines: the keys of the definitions whose inlined code
    /// it holds with lines relative to theirs, by index (see
    /// `support::line_bases::DEFINITION_LINE_BASE`).
    pub inlined: Vec<String>,
}

/// The globals a (fragment) module refers to without defining them.
pub(super) fn references_of(module: &Module) -> Vec<String> {
    let mut out: Vec<String> = module
        .get_functions()
        .filter(|f| !llvm::has_body(f))
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .chain(
            module
                .get_globals()
                .filter(|g| g.is_declaration())
                .map(|g| g.get_name().to_string_lossy().into_owned()),
        )
        .filter(|n| !n.starts_with("llvm."))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The symbols LLVM lists as address-significant compiling `module`: the
/// globals with a use that are not `unnamed_addr` (nor thread-local or
/// intrinsics), as `AsmPrinter` decides. (Carving asks the shim's
/// `fragment_reach` instead, which the tests hold to this.)
#[cfg(test)]
fn address_significant(module: &Module) -> std::collections::HashSet<String> {
    use inkwell::values::{BasicValue, GlobalValue, UnnamedAddress};
    let significant = |g: GlobalValue| {
        g.as_pointer_value().get_first_use().is_some()
            && !g.is_thread_local()
            && g.get_unnamed_address() == UnnamedAddress::None
    };
    module
        .get_functions()
        .map(|f| f.as_global_value())
        .chain(module.get_globals())
        .filter(|g| significant(*g))
        .map(|g| g.get_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("llvm."))
        .collect()
}

/// The fragments of the optimized module, as lists of member names. The
/// glue comes first; the others follow module order (functions, then
/// variables), so the composed object is deterministic.
pub fn plan(module: &Module) -> Vec<(Vec<String>, bool)> {
    let mut groups = Grouping::default();
    let mut glue: Vec<String> = Vec::new();
    let emitted = |l: Linkage| {
        !matches!(
            l,
            Linkage::Private | Linkage::Internal | Linkage::AvailableExternally
        )
    };
    for f in module.get_functions() {
        if llvm::has_body(&f) && emitted(f.get_linkage()) {
            let name = f.get_name().to_string_lossy().into_owned();
            let comdat = llvm::comdat_of(module, &name);
            groups.add(name, comdat);
        }
    }
    for g in module.get_globals() {
        let name = g.get_name().to_string_lossy().into_owned();
        if g.is_declaration() {
            continue;
        }
        if name.starts_with("llvm.") {
            glue.push(name);
        } else if let Some(f) = llvm::blockaddress_function(&g) {
            // A label table goes with its function: block addresses cannot
            // cross objects.
            groups.join(name, &f);
        } else if emitted(g.get_linkage()) {
            let comdat = llvm::comdat_of(module, &name);
            groups.add(name, comdat);
        }
    }
    for (alias, base, _) in llvm::aliases(module) {
        match base {
            Some(b) if groups.group_of.contains_key(&b) => groups.join(alias, &b),
            _ => glue.push(alias),
        }
    }
    std::iter::once((glue, true))
        .chain(groups.groups.into_iter().map(|g| (g, false)))
        .collect()
}

/// Fragments under construction: definitions grouped by COMDAT.
#[derive(Default)]
struct Grouping {
    groups: Vec<Vec<String>>,
    by_comdat: HashMap<String, usize>,
    group_of: HashMap<String, usize>,
}

impl Grouping {
    fn add(&mut self, name: String, comdat: Option<String>) {
        let existing = comdat.as_ref().and_then(|c| self.by_comdat.get(c).copied());
        let g = match existing {
            Some(g) => g,
            None => {
                self.groups.push(Vec::new());
                let g = self.groups.len() - 1;
                if let Some(c) = comdat {
                    self.by_comdat.insert(c, g);
                }
                g
            }
        };
        self.group_of.insert(name.clone(), g);
        self.groups[g].push(name);
    }

    /// Puts `name` in the fragment of `with` (or its own, if `with` has none).
    fn join(&mut self, name: String, with: &str) {
        match self.group_of.get(with).copied() {
            Some(g) => {
                self.group_of.insert(name.clone(), g);
                self.groups[g].push(name);
            }
            None => self.add(name, None),
        }
    }
}

/// Functions and global variables the module defines (module glue such as
/// `llvm.global_ctors` aside).
pub fn count_definitions(module: &Module) -> u64 {
    let functions = module.get_functions().filter(|f| llvm::has_body(f)).count();
    let globals = module
        .get_globals()
        .filter(|g| !g.is_declaration() && !g.get_name().to_bytes().starts_with(b"llvm."))
        .count();
    (functions + globals) as u64
}

/// Whether every definition among `members` may be dropped when unused:
/// `linkonce` ones (C++ inline functions, template instances and their
/// static variables), and those that were internal in the source (`static`
/// functions and variables, which the optimizer sees as hidden external
/// ones, see `canonical`, and which `optimize::drop_unreferenced_locals`
/// removes where nothing refers to them, as clang's optimizer would). Such
/// a fragment is in an object only where something refers to it.
pub fn discardable(
    module: &Module,
    members: &[String],
    originally_local: &std::collections::HashSet<&str>,
) -> bool {
    let mut any = false;
    for m in members {
        let local = originally_local.contains(m.as_str());
        if let Some(f) = module.get_function(m).filter(|f| llvm::has_body(f)) {
            if !linkonce(f.get_linkage()) && !local {
                return false;
            }
            any = true;
        } else if let Some(g) = module.get_global(m).filter(|g| !g.is_declaration()) {
            if !linkonce(g.get_linkage()) && !local {
                return false;
            }
            any = true;
        }
    }
    // (Aliases follow their base object's linkage in C and C++.)
    any
}

/// An inline function's or a template instance's linkage: a definition
/// every unit that uses it holds, dropped where unused.
fn linkonce(l: Linkage) -> bool {
    matches!(l, Linkage::LinkOnceODR | Linkage::LinkOnceAny)
}

/// Whether no other unit is expected to hold the fragment of `members`:
/// none is an inline function or a template instance (`linkonce`), and
/// none is a variable of the unit's own (a string literal, a constant:
/// equal ones in other units get the same digest, and are shared).
pub fn own_to_its_unit(
    module: &Module,
    members: &[String],
    originally_local: &std::collections::HashSet<&str>,
) -> bool {
    members.iter().all(|m| {
        if let Some(f) = module.get_function(m).filter(|f| llvm::has_body(f)) {
            return !linkonce(f.get_linkage());
        }
        match module.get_global(m).filter(|g| !g.is_declaration()) {
            Some(g) => {
                let local = matches!(g.get_linkage(), Linkage::Private | Linkage::Internal)
                    || originally_local.contains(m.as_str());
                !linkonce(g.get_linkage()) && !local
            }
            None => true,
        }
    })
}

/// Whether every defined member of `members` is `available_externally`
/// (a C99 `inline` definition): a body for the optimizer only, which it
/// may delete although it is neither local nor discardable.
pub fn available_externally(module: &Module, members: &[String]) -> bool {
    let mut any = false;
    for m in members {
        let linkage = match module.get_function(m).filter(|f| llvm::has_body(f)) {
            Some(f) => f.get_linkage(),
            None => match module.get_global(m).filter(|g| !g.is_declaration()) {
                Some(g) => g.get_linkage(),
                None => continue,
            },
        };
        if linkage != Linkage::AvailableExternally {
            return false;
        }
        any = true;
    }
    any
}

/// Whether any of `members` is still defined in the (optimized) module.
pub fn any_defined(module: &Module, members: &[String]) -> bool {
    members.iter().any(|m| {
        module.get_function(m).is_some_and(|f| llvm::has_body(&f))
            || module.get_global(m).is_some_and(|g| !g.is_declaration())
    })
}

/// What a worker needs to build a target machine of its own.
pub struct TargetSpec {
    triple: String,
    cpu: String,
    features: String,
    pic: bool,
}

impl TargetSpec {
    pub(super) fn of(unit: &Unit) -> TargetSpec {
        let tm = &unit.target_machine;
        TargetSpec {
            triple: (unit.module.get_triple().as_str())
                .to_string_lossy()
                .into_owned(),
            cpu: tm.get_cpu().to_string_lossy().into_owned(),
            features: tm.get_feature_string().to_string_lossy().into_owned(),
            pic: unit.module.get_flag("PIC Level").is_some(),
        }
    }

    pub(super) fn machine(
        &self,
        settings: &CodegenSettings,
    ) -> Result<inkwell::targets::TargetMachine> {
        canonical::target_machine(&self.triple, &self.cpu, &self.features, self.pic, settings)
    }
}

/// How a unit's debug fragments are carved out of batches
/// (`debug_batch::emit_debug_carved`, which builds on this module's
/// helpers; the orchestrator hands it to [`emit_groups`], so that the two
/// modules do not import each other).
pub type DebugCarver = fn(
    &Unit,
    &CodegenSettings,
    &TargetSpec,
    usize,
    &[(Vec<String>, bool)],
    &mut [Option<Fragment>],
    &mut Vec<crate::obj::Decline>,
    LineMode<'_>,
    Option<&llvm::SharedTypes>,
) -> Result<()>;

/// Compiles the given fragments, in the order given: carved out of one
/// code generation per worker (see `carve`) where the carver handles them,
/// one module each otherwise (debug info, the glue, what it declines).
/// Either way a fragment's bytes depend only on the fragment, never on how
/// many workers ran or what was compiled with it.
pub fn emit_groups(
    unit: &Unit,
    settings: &CodegenSettings,
    jobs: usize,
    plan: Vec<(Vec<String>, bool)>,
    lines: LineMode<'_>,
    carve_declines: &mut Vec<crate::obj::Decline>,
    debug_carver: DebugCarver,
) -> Result<Vec<Fragment>> {
    let target = TargetSpec::of(unit);
    let jobs = workers_now(jobs);
    let debug_info = unit.module.get_global_metadata_size("llvm.dbg.cu") > 0;
    let mut done: Vec<Option<Fragment>> = plan.iter().map(|_| None).collect();
    // With debug info, what one fragment's extraction learns of the unit's
    // types spares the next one the walk (see `llvm::SharedTypes`); first,
    // member declarations that fragments copy with their class become
    // distinct nodes (`llvm::distinct_member_declarations`).
    let shared = debug_info.then(|| {
        llvm::distinct_member_declarations(&unit.module);
        llvm::SharedTypes::new(&unit.module)
    });
    // With debug info, each fragment's compile unit is trimmed as its own
    // before it joins a batch (see `debug_batch`).
    if !crate::config::switches().no_carve {
        if debug_info {
            debug_carver(
                unit,
                settings,
                &target,
                jobs,
                &plan,
                &mut done,
                carve_declines,
                lines,
                shared.as_ref(),
            )?;
        } else {
            emit_carved(
                unit,
                settings,
                &target,
                jobs,
                &plan,
                &mut done,
                carve_declines,
            )?;
        }
    }
    let alone_started = std::time::Instant::now();
    let alone_count = done.iter().filter(|f| f.is_none()).count();
    // The unit's code generation pipeline, for the fragments compiled in
    // its context.
    let mut emitter = UnitEmitter {
        unit,
        pipeline: llvm::ObjectEmitter::new(&unit.target_machine),
        batch_probe: Vec::new(),
    };
    if jobs <= 1 {
        // One worker (the other cores are busy with other units): right
        // here, in the unit's context with its target machine — no bitcode
        // round trip, no target machine per fragment. Not the glue with
        // debug info: its compile unit is the unit's own, which trimming
        // would change.
        for (i, item) in plan.iter().enumerate() {
            if done[i].is_none()
                && !((debug_info && item.1) || takes_block_addresses(unit, &item.0))
            {
                done[i] = emit_in_unit(&mut emitter, item, debug_info, lines, shared.as_ref())?;
            }
        }
    }
    fragment_dump::dump_batch(unit, std::mem::take(&mut emitter.batch_probe));
    let rest: Vec<usize> = (0..plan.len()).filter(|&i| done[i].is_none()).collect();
    let items: Vec<&(Vec<String>, bool)> = rest.iter().map(|&i| &plan[i]).collect();
    let compiled = emit_in_workers(
        &mut emitter,
        settings,
        &target,
        jobs,
        &items,
        lines,
        shared.as_ref(),
        debug_info,
    )?;
    for (i, f) in rest.into_iter().zip(compiled) {
        done[i] = Some(f);
    }
    if crate::config::switches().timings {
        say!(
            "repocc: timings {}: {alone_count} fragments compiled one module each ({:.3}s)",
            unit.source_name,
            alone_started.elapsed().as_secs_f64()
        );
    }
    done.into_iter()
        .map(|f| f.ok_or_else(|| anyhow!("a fragment was not compiled")))
        .collect()
}

/// A module (in the unit's context) with the definitions of all `members`
/// (see `llvm::extract_definitions`).
pub(super) fn extract<'a, 'ctx>(
    unit: &Unit<'ctx>,
    members: impl IntoIterator<Item = &'a String>,
    glue: bool,
    shared: Option<&llvm::SharedTypes>,
) -> Module<'ctx> {
    let names: Vec<&str> = members.into_iter().map(String::as_str).collect();
    let module = llvm::extract_definitions(&unit.module, &names, glue, shared);
    if !glue {
        llvm::order_local_definitions(&module, &unit.target_machine, &names);
    }
    module
}

impl Fragment {
    /// A fragment compiled one module each: its object with the file
    /// symbol unnamed and its string indices widened, unless it is the
    /// glue.
    pub(super) fn compiled(
        members: &[String],
        glue: bool,
        mut object: Vec<u8>,
        references: Vec<String>,
        inlined: Vec<String>,
    ) -> Fragment {
        if !glue {
            crate::obj::elf::unname_file_symbols(&mut object);
            // One byte more per string index, so that all the fragments
            // of an object share one string offsets table.
            crate::obj::debug_widen::widen_string_indices(&mut object);
        }
        Fragment {
            members: members.to_vec(),
            glue,
            object,
            references,
            inlined,
        }
    }
}

/// Whether a member is a variable holding block addresses (a computed
/// goto's label table). Compiled in the unit's context with debug info,
/// or at -O0 from clang's own body, such a fragment loses its labels
/// ("Undefined temporary symbol"); a worker compiles it from bitcode.
pub(super) fn takes_block_addresses(unit: &Unit, members: &[String]) -> bool {
    members.iter().any(|m| {
        unit.module
            .get_global(m)
            .is_some_and(|g| llvm::blockaddress_function(&g).is_some())
    })
}

/// The unit, with the code generation pipeline of its target machine for
/// the fragments compiled in its context (none if the machine could not
/// build one: each compile builds its own then).
struct UnitEmitter<'u, 'ctx> {
    unit: &'u Unit<'ctx>,
    pipeline: Option<llvm::ObjectEmitter<'u>>,
    /// With `REPOCC_DUMP_FRAGMENT_MODULES`: the debug fragments compiled
    /// here, as bitcode, for [`fragment_dump::dump_batch`] (`None`: one whose types the
    /// batch would merge, see shim/batch.cpp).
    batch_probe: Vec<Option<Vec<u8>>>,
}

/// `module`'s object: through `pipeline` (built once for many modules)
/// where there is one, else with a pipeline of its own.
fn emit_object(
    pipeline: Option<&mut llvm::ObjectEmitter>,
    machine: &inkwell::targets::TargetMachine,
    module: &Module,
    what: &str,
) -> Result<Vec<u8>> {
    match pipeline {
        Some(pipeline) => Ok(pipeline.emit(module)),
        None => llvm::emit_object(machine, module)
            .map(|object| object.as_slice().to_vec())
            .map_err(|e| anyhow!("generating code for {what}: {e}")),
    }
}

/// LLVM's verifier on a module with debug info that repocc made and is
/// about to compile: an error (the unit goes to clang) where it is
/// invalid. The bitcode reader runs the same check on what a worker
/// parses, before the worker rebases and trims it; this one runs on the
/// module as it is compiled, on every path, so that whether a unit goes
/// through the repository never depends on how many cores were idle (a
/// module compiled in the unit's context was never checked, and an
/// invalid one compiled there gave an object a worker never would).
pub(super) fn verify_debug_module(module: &Module, what: &str) -> Result<()> {
    if module.get_flag("Debug Info Version").is_none() {
        return Ok(());
    }
    module.verify().map_err(|e| {
        let e = e.to_string();
        let first = e.lines().next().unwrap_or_default();
        super::llvm_reported(format!("ignoring invalid debug info in {what}: {first}"))
    })
}

/// One fragment extracted and compiled in the unit's context. With debug
/// info, its lines are rebased first (with `lines.relative`) and its
/// compile unit trimmed, as a worker does (see [`compile_bitcode`]); the
/// rebase copies what it changes, the trim changes the fragment's own
/// compile unit (not the glue's, which is the unit's). `None`: its lines
/// need the printed text, which a worker's context is for.
fn emit_in_unit(
    emitter: &mut UnitEmitter,
    (members, glue): &(Vec<String>, bool),
    debug_info: bool,
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
) -> Result<Option<Fragment>> {
    let module = extract(emitter.unit, members, *glue, shared);
    let what = members.join(",");
    let mut inlined = Vec::new();
    if debug_info {
        debug_assert!(!*glue);
        if let Some(leader) = members.first().filter(|_| lines.relative) {
            let rebased;
            (rebased, inlined) =
                llvm::rebase_relative_lines(&module, leader, shared, lines.unit_source);
            if rebased == llvm::Rebased::Unsupported {
                return Ok(None);
            }
        }
        llvm::trim_debug_units(&module, false);
        verify_debug_module(&module, &what)?;
    }
    if fragment_dump::dump_fragment_module(&module, &what) && debug_info {
        // Asked here, before a context that shares types by identifier
        // has merged them.
        emitter.batch_probe.push(
            (!llvm::debug_types_unshareable(&module))
                .then(|| module.write_bitcode_to_memory().as_slice().to_vec()),
        );
    }
    let object = emit_object(
        emitter.pipeline.as_mut(),
        &emitter.unit.target_machine,
        &module,
        &what,
    )?;
    Ok(Some(Fragment::compiled(
        members,
        *glue,
        object,
        references_of(&module),
        inlined,
    )))
}

/// Fragments extracted one module each and compiled by `jobs` workers,
/// each in an LLVM context of its own (DESIGN.md: modules are not `Send`).
/// Extraction is the unit's (its context is this thread's), so this thread
/// extracts each fragment in turn and hands it over as bitcode to `jobs - 1`
/// worker threads, as soon as it is extracted; while they are all busy and
/// one is already waiting, it compiles the next fragment itself, in the
/// unit's context (see [`emit_in_unit`]), rather than wait. With one job,
/// one worker and no help (what the unit's context may compile was
/// compiled there already).
#[allow(clippy::too_many_arguments)]
fn emit_in_workers(
    emitter: &mut UnitEmitter,
    settings: &CodegenSettings,
    target: &TargetSpec,
    jobs: usize,
    items: &[&(Vec<String>, bool)],
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
    debug_info: bool,
) -> Result<Vec<Fragment>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let unit = emitter.unit;
    let helps = jobs > 1;
    let workers = if helps { jobs - 1 } else { 1 }.min(items.len());
    let results: Vec<Mutex<Option<Result<Fragment>>>> =
        items.iter().map(|_| Mutex::new(None)).collect();
    let set = |i: usize, r: Result<Fragment>| {
        if let Ok(mut slot) = results[i].lock() {
            *slot = Some(r);
        }
    };
    // Handed over and not yet taken by a worker.
    let waiting = AtomicUsize::new(0);
    let (sender, receiver) = std::sync::mpsc::channel::<(usize, Vec<u8>)>();
    let receiver = Mutex::new(receiver);
    std::thread::scope(|scope| {
        // Owned here, so that any early return drops it and stops the
        // workers before the scope waits for them.
        let sender = sender;
        for _ in 0..workers {
            std::thread::Builder::new()
                .stack_size(crate::support::stack::UNIT_STACK_BYTES)
                .spawn_scoped(scope, || {
                    // One target machine and code generation pipeline per
                    // worker.
                    let machine = target.machine(settings);
                    let mut pipeline = machine.as_ref().ok().and_then(llvm::ObjectEmitter::new);
                    loop {
                        let next = match receiver.lock() {
                            Ok(r) => r.recv(),
                            Err(_) => break,
                        };
                        let Ok((i, bc)) = next else { break };
                        waiting.fetch_sub(1, Ordering::Relaxed);
                        let (members, glue) = items[i];
                        let what = members.join(",");
                        // With relative lines (see `digest::Lines`), the fragment
                        // is compiled with its own file's lines rebased on its
                        // leader's.
                        let leader = members.first().filter(|_| lines.relative && !*glue);
                        let fragment = FragmentModule {
                            glue: *glue,
                            rebase_on: leader.map(String::as_str),
                            unit_source: lines.unit_source,
                        };
                        let r = match &machine {
                            Ok(machine) => compile_bitcode(
                                &bc,
                                &what,
                                machine,
                                pipeline.as_mut(),
                                Some(fragment),
                            ),
                            Err(e) => Err(anyhow!("{e:#}")),
                        };
                        let r = r.map(|(object, references, inlined)| {
                            Fragment::compiled(members, *glue, object, references, inlined)
                        });
                        set(i, r);
                    }
                })
                .map_err(|e| anyhow!("starting a code generation worker: {e}"))?;
        }
        for (i, item) in items.iter().enumerate() {
            let (members, glue) = *item;
            let in_unit = helps
                && waiting.load(Ordering::Relaxed) >= workers
                && !((debug_info && *glue) || takes_block_addresses(unit, members));
            if in_unit {
                if let Some(f) = emit_in_unit(emitter, item, debug_info, lines, shared)? {
                    set(i, Ok(f));
                    continue;
                }
            }
            let bc = extract(unit, members, *glue, shared)
                .write_bitcode_to_memory()
                .as_slice()
                .to_vec();
            waiting.fetch_add(1, Ordering::Relaxed);
            if sender.send((i, bc)).is_err() {
                break;
            }
        }
        // No more work: the workers stop once the queue is empty.
        drop(sender);
        Ok::<(), anyhow::Error>(())
    })?;
    worker_results(results)
}

/// The workers' results in order; a slot left empty is a worker that died.
fn worker_results<R>(results: Vec<std::sync::Mutex<Option<Result<R>>>>) -> Result<Vec<R>> {
    results
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .unwrap_or_else(|| Err(anyhow!("a code generation worker failed")))
        })
        .collect()
}

/// How a module compiled by [`compile_bitcode`] is a fragment's.
#[derive(Clone, Copy)]
pub(super) struct FragmentModule<'a> {
    /// The glue keeps its compile units' unit-wide lists.
    glue: bool,
    /// The leader whose own-file lines become relative, if they do.
    rebase_on: Option<&'a str>,
    /// See [`LineMode::unit_source`].
    unit_source: Option<&'a str>,
}

/// How fragments' debug lines are compiled.
#[derive(Clone, Copy, Debug, Default)]
pub struct LineMode<'a> {
    /// Relative to each fragment's leader and to the definitions inlined
    /// into it (see `digest::Lines`), as the digests hold them.
    pub relative: bool,
    /// The path of the unit's source (`digest::ModuleDigests::unit_source`):
    /// which inlined code is the unit source's, in a fragment whose compile
    /// unit does not name it.
    pub unit_source: Option<&'a str>,
}

/// Compiles a module given as bitcode in a context of its own; for a
/// fragment's module, its lines are rebased (if asked) and its debug
/// compile units trimmed first. The object, the module's references and
/// the keys of the definitions inlined with relative lines.
pub(super) fn compile_bitcode(
    bc: &[u8],
    what: &str,
    machine: &inkwell::targets::TargetMachine,
    pipeline: Option<&mut llvm::ObjectEmitter>,
    fragment: Option<FragmentModule>,
) -> Result<(Vec<u8>, Vec<String>, Vec<String>)> {
    llvm::with_diagnostic_sink(|context: &Context, sink| {
        let buffer = MemoryBuffer::create_from_memory_range_copy(bc, "fragment");
        let mut module = context
            .create_module_from_ir(buffer)
            .map_err(|e| anyhow!("reading {what}: {e}"))?;
        let mut inlined = Vec::new();
        if let Some(fragment) = fragment {
            if let Some(leader) = fragment.rebase_on {
                (module, inlined) =
                    rebase_lines(context, module, leader, fragment.unit_source, what)?;
            }
            llvm::trim_debug_units(&module, fragment.glue);
            fragment_dump::dump_fragment_module(&module, what);
            verify_debug_module(&module, what)?;
        }
        let references = references_of(&module);
        let object = emit_object(pipeline, machine, &module, what)?;
        if let Some(d) = sink.first() {
            return Err(super::llvm_reported(d));
        }
        Ok((object, references, inlined))
    })
}

/// `module` with the lines of `leader`'s own file relative to its line,
/// and the keys of the definitions inlined into it with lines relative to
/// theirs: in memory, or (for metadata the shim does not rebuild) through
/// the printed text, which gives the same module.
fn rebase_lines<'ctx>(
    context: &'ctx Context,
    module: Module<'ctx>,
    leader: &str,
    unit_source: Option<&str>,
    what: &str,
) -> Result<(Module<'ctx>, Vec<String>)> {
    match llvm::rebase_relative_lines(&module, leader, None, unit_source) {
        (llvm::Rebased::Done | llvm::Rebased::NoPosition, inlined) => Ok((module, inlined)),
        (llvm::Rebased::Unsupported, _) => {
            let text = module.print_to_string().to_string();
            let Some(rebased) =
                crate::ir::digest::rebase_relative_lines_of(&text, leader, unit_source)
                    .map_err(|e| anyhow!("rebasing the lines of {what}: {e}"))?
            else {
                return Ok((module, Vec::new()));
            };
            let buffer =
                MemoryBuffer::create_from_memory_range_copy(rebased.text.as_bytes(), "fragment");
            let module = context
                .create_module_from_ir(buffer)
                .map_err(|e| anyhow!("reading {what} with rebased lines: {e}"))?;
            Ok((module, rebased.inlined))
        }
    }
}

/// `work(item)` for every item on up to `jobs` threads; results in order.
/// Plain scoped threads, not a rayon pool: this runs inside the driver's
/// rayon workers, and a worker waiting on another pool may steal a queued
/// unit that then blocks on a jobserver token this unit holds.
pub(super) fn run_workers<T: Sync, R: Send>(
    items: &[T],
    jobs: usize,
    work: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<R>>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let workers = jobs.clamp(1, items.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            std::thread::Builder::new()
                .stack_size(crate::support::stack::UNIT_STACK_BYTES)
                .spawn_scoped(scope, || loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = items.get(i) else { break };
                    let r = work(item);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                })
                .map_err(|e| anyhow!("starting a code generation worker: {e}"))?;
        }
        Ok::<(), anyhow::Error>(())
    })?;
    worker_results(results)
}

/// The non-glue fragments of `plan` compiled in one code generation per
/// worker (contiguous chunks of about equal size) and carved out of the
/// objects (see `carve`); what the carver declines stays `None` in `done`.
///
/// Long on purpose: the rules that decide which fragments share a code
/// generation (their references taken alone, code apart from data, label
/// tables with their function alone, chunks of equal weight), each a few
/// lines with its reason beside it, then the workers and the carving.
fn emit_carved(
    unit: &Unit,
    settings: &CodegenSettings,
    target: &TargetSpec,
    jobs: usize,
    plan: &[(Vec<String>, bool)],
    done: &mut [Option<Fragment>],
    declines: &mut Vec<crate::obj::Decline>,
) -> Result<()> {
    let own: Vec<usize> = (0..plan.len()).filter(|&i| !plan[i].1).collect();
    if own.is_empty() {
        return Ok(());
    }
    // What each fragment's IR refers to, and which of those symbols have a
    // significant address, from the fragment on its own (as compiling it
    // alone would have it): the references decide which stored
    // discardable fragments an object takes (a constant copied into
    // immediates still counts), and the whole module's address-significance
    // table depends on what else it holds.
    let mut references = Vec::with_capacity(own.len());
    let mut specs = Vec::with_capacity(own.len());
    let mut weights = Vec::with_capacity(own.len());
    for &i in &own {
        let members = &plan[i].0;
        let reach = llvm::fragment_reach(&unit.module, members);
        references.push(reach.references);
        weights.push(reach.weight);
        specs.push(carve::FragmentSpec {
            members: members.clone(),
            address_significant: reach.address_significant,
            suffix: String::new(),
        });
    }
    let sectioned = CodegenSettings {
        function_sections: true,
        data_sections: true,
        unique_section_names: true,
        ..settings.clone()
    };
    let groups = carving_batches(unit, &specs, &weights, jobs);
    let objects = generate_batches(unit, &specs, &groups, target, &sectioned, jobs)?;
    let naming = carve::SectionNaming {
        function_sections: settings.function_sections,
        data_sections: settings.data_sections,
        unique_section_names: settings.unique_section_names,
    };
    for (group, object) in groups.iter().zip(&objects) {
        let group_specs: Vec<&carve::FragmentSpec> = group.iter().map(|&p| &specs[p]).collect();
        let carved = match carve::carve(object, &group_specs, naming) {
            Ok(carved) => carved,
            Err(decline) if carve::declines_every_fragment(decline) => {
                declines.extend(group.iter().map(|_| decline));
                continue;
            }
            // The whole object declined, perhaps for one member's sake.
            Err(decline) => group.iter().map(|_| Err(decline)).collect(),
        };
        // A member that declined is carved from a module of its own, so
        // that what the others are decides nothing of its bytes: a
        // section it shares with another member's definition (variables
        // in one named section, `__attribute__((section("…")))`) declines
        // only where the other is compiled with it, and a fragment
        // compiled on its own is other bytes than a carved one.
        let mut carved = carved;
        let mut machine = None;
        for (&pos, object) in group.iter().zip(carved.iter_mut()) {
            if !matches!(object, Err(decline) if !carve::declines_every_fragment(*decline))
                || group.len() == 1
            {
                continue;
            }
            let machine = match machine {
                Some(ref m) => m,
                None => machine.insert(target.machine(&sectioned)?),
            };
            let module = extract(unit, &specs[pos].members, false, None);
            let alone = llvm::emit_object(machine, &module).map_err(|e| {
                anyhow!("generating code for {}: {e}", specs[pos].members.join(","))
            })?;
            *object = carve::carve_alone(alone.as_slice(), &specs[pos], naming);
        }
        for (&pos, object) in group.iter().zip(carved) {
            let object = match object {
                Ok(object) => object,
                Err(decline) => {
                    declines.push(decline);
                    continue;
                }
            };
            done[own[pos]] = Some(Fragment {
                members: specs[pos].members.clone(),
                glue: false,
                object,
                references: std::mem::take(&mut references[pos]),
                inlined: Vec::new(),
            });
        }
    }
    Ok(())
}

/// The objects of `groups` (batches of `specs`, see [`carving_batches`]),
/// each compiled with every definition in a section of its own.
fn generate_batches(
    unit: &Unit,
    specs: &[carve::FragmentSpec],
    groups: &[Vec<usize>],
    target: &TargetSpec,
    sectioned: &CodegenSettings,
    jobs: usize,
) -> Result<Vec<Vec<u8>>> {
    let group_module = |i: usize| {
        let members = groups[i].iter().flat_map(|&p| &specs[p].members);
        extract(unit, members, false, None)
    };
    compile_modules(
        groups.len(),
        group_module,
        target,
        sectioned,
        jobs,
        "the unit's new fragments",
    )
}

/// The objects of `count` modules that hold many fragments each (`module(i)`
/// makes or lends the i-th): in this thread with one job, each module
/// made when its turn comes, or by `jobs` workers, as bitcode, each in a
/// context of its own. Verified either way (see [`verify_debug_module`]).
pub(super) fn compile_modules<'ctx, M: std::borrow::Borrow<Module<'ctx>>>(
    count: usize,
    module: impl Fn(usize) -> M,
    target: &TargetSpec,
    settings: &CodegenSettings,
    jobs: usize,
    what: &str,
) -> Result<Vec<Vec<u8>>> {
    if jobs <= 1 {
        let machine = target.machine(settings)?;
        return (0..count)
            .map(|i| {
                let module = module(i);
                verify_debug_module(module.borrow(), what)?;
                let object = llvm::emit_object(&machine, module.borrow())
                    .map_err(|e| anyhow!("generating code for {what}: {e}"))?;
                Ok(object.as_slice().to_vec())
            })
            .collect();
    }
    let bitcodes: Vec<Vec<u8>> = (0..count)
        .map(|i| {
            module(i)
                .borrow()
                .write_bitcode_to_memory()
                .as_slice()
                .to_vec()
        })
        .collect();
    run_workers(&bitcodes, jobs, |bc| {
        let machine = target.machine(settings)?;
        compile_bitcode(bc, what, &machine, None, None).map(|(object, _, _)| object)
    })
}

/// The batches `emit_carved` compiles the fragments `specs` in (indices
/// into it): the code in `jobs` chunks of balanced `weights`, the data in
/// one more. A fragment the batches would change is in none (it is
/// compiled as a module of its own).
fn carving_batches(
    unit: &Unit,
    specs: &[carve::FragmentSpec],
    weights: &[u64],
    jobs: usize,
) -> Vec<Vec<usize>> {
    // Code and data are compiled apart: the code generator folds what a
    // constant it can see the initializer of holds into the code reading
    // it (a string copied with immediate stores), so a function compiled
    // beside another fragment's constant would not come out as it does
    // beside a declaration — as when that constant is stored. A fragment
    // with both code and a constant, or a label table with its function,
    // is compiled on its own.
    let mut code = Vec::new();
    let mut data = Vec::new();
    let structor_keys = llvm::structor_keys(&unit.module);
    for (pos, spec) in specs.iter().enumerate() {
        let function = spec
            .members
            .iter()
            .any(|m| (unit.module.get_function(m)).is_some_and(|f| llvm::has_body(&f)));
        let constant = spec.members.iter().any(|m| {
            (unit.module.get_global(m)).is_some_and(|g| !g.is_declaration() && g.is_constant())
        });
        // A label table with its function is compiled on its own too:
        // carved from the chunk's code generation, clang's own -O0 body
        // lost the labels the table names ("Undefined temporary symbol").
        let labels = takes_block_addresses(unit, &spec.members);
        // A function in a named section (clang puts every static
        // initializer in `.text.startup`) would share that section with
        // the chunk's others, which carving cannot split: on its own too.
        let named_section = spec.members.iter().any(|m| {
            (unit.module.get_function(m))
                .is_some_and(|f| f.as_global_value().get_section().is_some())
        });
        // A structor's key takes the structor's entry and its initializer
        // (in `.text.startup`), whose `.init_array` section is in the key's
        // COMDAT group: on its own too, variables or not.
        if spec.members.iter().any(|m| structor_keys.contains(m)) {
            continue;
        }
        match (function, constant || labels || named_section) {
            (true, true) => {}
            (true, false) => code.push(pos),
            (false, _) => data.push(pos),
        }
    }
    let code_weights: Vec<u64> = code.iter().map(|&p| weights[p]).collect();
    let mut groups: Vec<Vec<usize>> = balanced_chunks(&code_weights, jobs)
        .into_iter()
        .map(|r| code[r].to_vec())
        .collect();
    if !data.is_empty() {
        groups.push(data);
    }
    groups
}

pub(super) fn balanced_chunks(weights: &[u64], n: usize) -> Vec<std::ops::Range<usize>> {
    let total: u64 = weights.iter().sum();
    let n = n.clamp(1, weights.len().max(1)) as u64;
    let mut chunks = Vec::new();
    let (mut start, mut sum) = (0, 0u64);
    for (i, w) in weights.iter().enumerate() {
        sum += w;
        let k = chunks.len() as u64 + 1;
        if k < n && sum * n >= total * k {
            chunks.push(start..i + 1);
            start = i + 1;
        }
    }
    if start < weights.len() {
        chunks.push(start..weights.len());
    }
    chunks
}

/// How many code generation workers to start now, at most `jobs`: one,
/// unless cores are idle. The kernel's count of runnable threads
/// (`/proc/loadavg`, this one included) says how many: a lone big unit gets
/// the idle cores, units compiled side by side (`make -jN`) keep one each
/// instead of crowding the cores with threads. (Under make, compilers are
/// not given the jobserver, so it cannot be asked.)
fn workers_now(jobs: usize) -> usize {
    if jobs <= 1 {
        return 1;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let running = std::fs::read_to_string("/proc/loadavg").ok().and_then(|s| {
        s.split_whitespace()
            .nth(3)?
            .split('/')
            .next()?
            .parse::<usize>()
            .ok()
    });
    match running {
        Some(r) => jobs.min(1 + cpus.saturating_sub(r.max(1))),
        None => jobs,
    }
}

#[cfg(test)]
mod tests {
    use super::balanced_chunks;

    /// A module with debug info, its function `f` defined and `g` declared.
    const DEBUG_MODULE: &str = r#"
target triple = "x86_64-pc-linux-gnu"
define i32 @f() !dbg !5 {
  %r = call i32 @g(), !dbg !8
  ret i32 %r, !dbg !8
}
declare i32 @g()
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3, !4}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: true, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "t.c", directory: "/")
!3 = !{i32 7, !"Dwarf Version", i32 5}
!4 = !{i32 2, !"Debug Info Version", i32 3}
!5 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !6, scopeLine: 1, unit: !0, spFlags: DISPFlagDefinition | DISPFlagOptimized)
!6 = !DISubroutineType(types: !7)
!7 = !{null}
!8 = !DILocation(line: 2, column: 3, scope: !5)
"#;

    /// A module compiled in the unit's context is checked as a worker's
    /// bitcode reader checks it: what one path rejects, the other does,
    /// so whether a unit goes to clang does not depend on the load. The
    /// broken module is what a rebase gone wrong gives: a declaration
    /// carrying a distinct subprogram (the case of commit 8f54613).
    #[test]
    fn in_context_modules_are_verified_as_a_workers_are() {
        use inkwell::memory_buffer::MemoryBuffer;
        let context = crate::llvm::test_context();
        let machine = crate::llvm::test_x86_64_machine(inkwell::OptimizationLevel::Default);
        for broken in [false, true] {
            let module = context
                .create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(
                    DEBUG_MODULE.as_bytes(),
                    "t",
                ))
                .unwrap();
            if broken {
                let f = module.get_function("f").unwrap();
                let g = module.get_function("g").unwrap();
                g.set_subprogram(f.get_subprogram().unwrap());
            }
            let in_context = super::verify_debug_module(&module, "g");
            let bitcode = module.write_bitcode_to_memory();
            let in_worker = super::compile_bitcode(bitcode.as_slice(), "g", &machine, None, None);
            assert_eq!(in_context.is_err(), broken, "{in_context:?}");
            assert_eq!(in_worker.is_err(), broken);
            if let Err(e) = in_context {
                let e = format!("{e:#}");
                assert!(e.contains("LLVM's verifier dropped the debug info"), "{e}");
                assert!(e.contains("ignoring invalid debug info in g"), "{e}");
            }
        }
        // Without debug info there is nothing of repocc's to check.
        let plain = context.create_module("plain");
        assert!(super::verify_debug_module(&plain, "plain").is_ok());
    }

    /// The shim's reach of each fragment is what extracting it gives:
    /// its references and address-significant symbols decide which stored
    /// fragments an object takes and its `.llvm_addrsig`.
    #[test]
    fn fragment_reach_is_what_extraction_gives() {
        use crate::ir::canonical;
        use crate::ir::settings::CodegenSettings;
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("t.cc");
        std::fs::write(
            &src,
            r#"
#include <stdexcept>
#include <vector>
static const int table[] = {3, 1, 4, 1, 5};
static int helper(int x) { return table[x % 5] * x; }
__thread int per_thread;
int counter;
int (*pointer)(int) = helper;
extern "C" int aliased(int x) { return x + 1; }
extern "C" int other_name(int) __attribute__((alias("aliased")));
template <class T> T twice(T x) { if (x < 0) throw std::runtime_error("neg"); return x + x; }
int use(int x) {
  std::vector<int> v{x, helper(x)};
  try { per_thread += twice(x); } catch (const std::exception &) { return -1; }
  counter += v.size();
  return pointer(x) + other_name(x) + twice<long>(x);
}
// Only called and read here, while `pointer` takes helper's address and
// `exposed` table's: neither is significant in this fragment.
int call_only(int x) { return helper(x) + table[2] + counter; }
const int *exposed() { return &table[1]; }
// Read through an integer: the address escapes, for both.
int through_integer() { return *(const int *)((long)table + 4); }
__attribute__((used)) static void kept() {}
"#,
        )
        .unwrap();
        for opt in ["-O0", "-O2"] {
            let out = std::process::Command::new("clang++-19")
                .args([opt, "-Xclang", "-disable-llvm-passes", "-c", "-emit-llvm"])
                .args(["-o", "-"])
                .arg(&src)
                .output()
                .expect("clang++-19");
            assert!(out.status.success());
            let settings = CodegenSettings::plain_o2();
            let context = crate::llvm::test_context();
            let unit = canonical::load(&context, &out.stdout, "t.cc", &settings).unwrap();
            let (mut checked, mut calls_only, mut takes_address) = (0, 0, 0);
            for (members, glue) in super::plan(&unit.module) {
                if glue {
                    continue;
                }
                let module = super::extract(&unit, &members, false, None);
                let reach = crate::llvm::fragment_reach(&unit.module, &members);
                assert_eq!(
                    reach.references,
                    super::references_of(&module),
                    "{members:?}"
                );
                assert_eq!(
                    reach.address_significant,
                    super::address_significant(&module),
                    "{members:?}"
                );
                if members.iter().any(|m| m.contains("call_only")) {
                    assert!(
                        reach.address_significant.is_empty(),
                        "{opt} {members:?}: {:?}",
                        reach.address_significant
                    );
                    calls_only += 1;
                }
                if members.iter().any(|m| m == "pointer") {
                    assert!(
                        reach
                            .address_significant
                            .iter()
                            .any(|s| s.contains("helper")),
                        "{opt}: {:?}",
                        reach.address_significant
                    );
                    takes_address += 1;
                }
                checked += 1;
            }
            assert!(checked > 10, "{checked}");
            assert_eq!((calls_only, takes_address), (1, 1), "{opt}");
        }
    }

    #[test]
    fn chunks_are_contiguous_and_about_equal() {
        assert_eq!(balanced_chunks(&[1, 1, 1, 1], 2), vec![0..2, 2..4]);
        // One heavy fragment gets a worker of its own.
        assert_eq!(balanced_chunks(&[10, 1, 1, 1], 2), vec![0..1, 1..4]);
        assert_eq!(balanced_chunks(&[1, 1, 1], 1), vec![0..3]);
        // Never more chunks than fragments, never an empty one.
        assert_eq!(balanced_chunks(&[5, 5], 4), vec![0..1, 1..2]);
        assert_eq!(
            balanced_chunks(&[], 3),
            Vec::<std::ops::Range<usize>>::new()
        );
        let chunks = balanced_chunks(&[3, 1, 4, 1, 5, 9, 2, 6], 3);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks.first().unwrap().start, 0);
        assert_eq!(chunks.last().unwrap().end, 8);
        assert!(chunks.windows(2).all(|w| w[0].end == w[1].start));
    }
}
