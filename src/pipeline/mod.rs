//! The per-translation-unit pipeline: the orchestration of one unit, in
//! flow order (the IR stages live in `crate::ir`, the object layer in
//! `crate::obj`):
//!
//! 1. `ir::frontend`: clang-19 with the user's flags emits unoptimized IR
//!    (diagnostics go to the user exactly as clang prints them): clang in
//!    this process hands its module over in a fresh LLVM context, clang as
//!    a process writes bitcode.
//! 2. `ir::canonical`: bitcode is read into a fresh context, mem2reg runs
//!    and local names go — the canonical form the repository stages
//!    digest, the same from either frontend.
//! 3. `ir::digest`: repository metadata — a digest per definition, the
//!    contribution/dependency graph and final digests; then [`prune`]
//!    takes what the repository holds ([`entries`]: keys and entries).
//! 4. `ir::optimize`: the pass pipeline of the user's `-O` level.
//! 5. `ir::merge`: function merging (LLVM MergeFunctions; aliases where the
//!    address is not significant, thunks otherwise).
//! 6. [`split`]: the new fragments' object code (`ir::codegen`, carved by
//!    `obj::carve`; with debug info in batches, `debug_batch`);
//!    `fragment_dump` writes its modules for diagnosis.
//! 7. [`assemble`] and [`compose`]: the object at its path from new and
//!    stored fragments (`obj::combine`), with the definitions that were
//!    internal in the source local again; `support::output` writes atomically.
//!
//! [`compile_unit`] runs them in order for one unit. Each unit owns its own
//! `inkwell::context::Context`; only bytes cross threads.

pub mod assemble;
pub mod clang_units;
pub mod compose;
mod debug_batch;
pub mod entries;
pub mod explain;
mod fragment_dump;
pub mod key;
pub mod prune;
pub mod split;

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::config::Switch;
use crate::ir::settings::CodegenSettings;
use crate::ir::{bodies, call_order, canonical, codegen, digest, merge, optimize, settings};
use crate::obj::{combine, debug_lines};
use crate::repo::storage::{FragmentDigest, Storage};

/// Timings per stage, for `REPOCC_TIMINGS=1` and the benchmark.
#[derive(Clone, Debug, Default)]
pub struct StageTimes {
    pub parse_and_mem2reg: Duration,
    pub metadata: Duration,
    pub optimize: Duration,
    pub merge: Duration,
    pub codegen: Duration,
    pub write: Duration,
    /// Writing new fragments to the repository.
    pub store: Duration,
}

/// LLVM reported an error or warning while optimizing or generating code:
/// clang must compile the unit so that the user sees clang's diagnostic.
#[derive(Debug)]
pub struct BackendDiagnostic(pub String);

impl std::fmt::Display for BackendDiagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LLVM reported: {}", self.0)
    }
}

impl std::error::Error for BackendDiagnostic {}

/// What LLVM reported about a module repocc built, as the error to return.
/// The verifier's "ignoring invalid debug info" is about metadata repocc
/// made (clang's own never has it): repocc's failure, said as one warning
/// before clang compiles the unit, and not a diagnostic of the user's that
/// clang's compile would show (that path said nothing).
pub fn llvm_reported(diagnostic: String) -> anyhow::Error {
    if diagnostic.starts_with("ignoring invalid debug info") {
        anyhow::anyhow!("LLVM's verifier dropped the debug info repocc made: {diagnostic}")
    } else {
        BackendDiagnostic(diagnostic).into()
    }
}

/// Options of the pipeline that come from repocc's configuration.
#[derive(Clone, Debug)]
pub struct PipelineOptions {
    pub merge_functions: bool,
    /// Compile per fragment and compose with `ld.lld -r` (the repository's
    /// code path, in progress).
    pub fragments: bool,
    /// Use the repository for units with debug info too.
    pub debug_fragments: bool,
    /// Use stored bodies for the optimizer's context (`bodies`) unless
    /// off, and keep new ones where it applies.
    pub context_bodies: Switch,
    /// Code generation workers per unit in fragment mode.
    pub jobs: crate::config::Jobs,
    /// Print the digest graph's precision figures (REPOCC_DIGEST_REPORT).
    pub digest_report: bool,
    /// Say why each definition was compiled (REPOCC_EXPLAIN).
    pub explain: bool,
    /// What every repository key of the invocation shares (see `key`).
    pub key: key::KeyContext,
}

/// What a unit's pipeline run reports back.
#[derive(Clone, Debug, Default)]
pub struct UnitReport {
    pub times: StageTimes,
    /// Functions and global variables defined in the unit.
    pub definitions: u64,
    /// Definitions (and aliases) code-generated in this run.
    pub definitions_compiled: u64,
    /// Definitions whose fragment came from the repository.
    pub definitions_pruned: u64,
    /// Of those, the ones another unit stored (see `explain::shared`).
    pub definitions_shared: u64,
    pub fragments_stored: u64,
    /// Function bodies the optimizer took from the repository as an
    /// earlier compile's inliner left them (see `bodies`).
    pub bodies_reused: u64,
    pub corrupt_entries: u64,
    /// Why `obj::combine` declined to compose (or localize) this unit's
    /// object, when it did: `ld.lld -r` and `llvm-objcopy` did it instead.
    pub compose_declined: Option<crate::obj::Decline>,
    /// Why `obj::carve` declined, once per fragment compiled as a module of
    /// its own instead of carved.
    pub carve_declined: Vec<crate::obj::Decline>,
    /// The unit has debug info and was compiled whole, without the
    /// repository (`debug_fragments` off).
    pub debug_unit_without_repository: bool,
    /// Repository problems, for one warning line.
    pub warnings: Vec<String>,
    /// Why each compiled definition was compiled (`REPOCC_EXPLAIN`).
    pub explain: Vec<String>,
    /// How the object was composed in process, for the unit cache to
    /// store instead of the object (see `unit_cache::recipe`).
    pub recipe: Option<crate::unit_cache::recipe::Recipe>,
}

impl UnitReport {
    /// An estimate of the time the definitions taken from the repository
    /// saved (milliseconds): this run's optimization and code generation
    /// time per definition it compiled, times the definitions it reused.
    /// Nothing when it compiled none (no measure of their cost).
    pub fn estimated_ms_saved(&self) -> u64 {
        if self.definitions_compiled == 0 {
            return 0;
        }
        let t = &self.times;
        let backend = (t.optimize + t.merge + t.codegen).as_secs_f64() * 1000.0;
        (backend * self.definitions_pruned as f64 / self.definitions_compiled as f64) as u64
    }
}

/// How composing pads code for the unit's subtarget: as its assembler pads
/// between functions (see `combine::CodeFill`).
fn code_fill(unit: &canonical::Unit) -> combine::CodeFill {
    combine::CodeFill::Nops(unit.max_nop)
}

/// What the frontend produced, for the pipeline: bitcode, or clang's
/// module itself (clang in this process).
pub enum FrontendIr<'a> {
    Bitcode(&'a [u8]),
    Module(crate::llvm::FrontendModule),
}

/// Runs stages 2–7 on the frontend's output and writes `output`. With
/// `storage` (and `fragments` on), through the program repository.
pub fn compile_frontend_ir(
    ir: FrontendIr,
    source_name: &str,
    settings: &CodegenSettings,
    options: &PipelineOptions,
    storage: Option<&dyn Storage>,
    output: &Path,
) -> Result<UnitReport> {
    let unit = UnitInput {
        source_name,
        settings,
        options,
        output,
    };
    match ir {
        FrontendIr::Bitcode(bitcode) => crate::llvm::with_diagnostic_sink(|context, sink| {
            let code = canonical::FrontendCode::Bitcode(bitcode);
            run_stages(context, sink, code, &unit, storage)
        }),
        FrontendIr::Module(module) => module.run(source_name, |context, sink, module| {
            let code = canonical::FrontendCode::Module(module);
            run_stages(context, sink, code, &unit, storage)
        }),
    }
}

/// What one unit's pipeline run is given besides its code.
struct UnitInput<'a> {
    source_name: &'a str,
    settings: &'a CodegenSettings,
    options: &'a PipelineOptions,
    output: &'a Path,
}

fn run_stages<'ctx>(
    context: &'ctx inkwell::context::Context,
    sink: &crate::llvm::DiagnosticSink,
    code: canonical::FrontendCode<'_, 'ctx>,
    input: &UnitInput,
    storage: Option<&dyn Storage>,
) -> Result<UnitReport> {
    let UnitInput {
        source_name,
        settings,
        options,
        output,
    } = *input;
    let storage = storage.filter(|_| options.fragments);
    let mut times = StageTimes::default();
    let t = Instant::now();
    // At -O0 the code comes from clang's own body, not its mem2reg form:
    // the fast instruction selector spills every phi mem2reg made (lua's
    // lvm.c: 2.3x clang's `.text`) and loses the debug values of locals.
    // With the repository the digests are made of that body too: two
    // bodies with one mem2reg form (two locals declared the other way
    // round) put their stack slots elsewhere.
    let unit = crate::llvm::FreedUnlessExiting::new(canonical::load_code(
        context,
        code,
        source_name,
        settings,
        settings.opt != settings::OptLevel::O0,
    )?);
    times.parse_and_mem2reg = t.elapsed();

    // Debug info in fragments costs more than it saves (see
    // `debug_fragments` in the configuration): such units are compiled
    // whole unless asked otherwise.
    let debug_info = unit.module.get_global_metadata_size("llvm.dbg.cu") > 0;
    // An ifunc and its resolver are compiled whole too: pruning or
    // splitting the resolver away from it loses the ifunc's symbol. So is
    // a unit whose file-scope assembly versions a symbol (`.symver`): the
    // assembly needs the symbol's definition in its own object.
    // And so is a unit whose keyed initializers must run in an order that
    // only the in-process composer keeps, for a target it does not compose.
    let whole = crate::llvm::has_ifuncs(&unit.module)
        || crate::llvm::has_symbol_versions(&unit.module)
        || compose::whole_for_structor_order(&unit.module);
    if let Some(store) = storage.filter(|_| (!debug_info || options.debug_fragments) && !whole) {
        let t = Instant::now();
        // A file's checksum would tie every digest of it to every edit
        // (nothing to do where they went before the module was copied).
        if debug_info {
            crate::llvm::strip_file_checksums(&unit.module);
        }
        let digests = metadata_stage(&unit, settings, options)?;
        times.metadata = t.elapsed();
        let definitions = digests
            .defs
            .iter()
            .filter(|d| d.kind != digest::DefKind::Glue)
            .count() as u64;
        return repository_stages(
            &unit,
            sink,
            &digests,
            store,
            settings,
            options,
            output,
            times,
            definitions,
        );
    }

    let definitions = split::count_definitions(&unit.module);
    let t = Instant::now();
    optimize::run(&unit, settings, &optimize::StoredCode::default(), None)?;
    times.optimize = t.elapsed();

    let t = Instant::now();
    if options.merge_functions {
        // Statics nothing calls any more go first: merged with an equal
        // function, one would survive as the body its twin jumps to (see
        // `repository_stages`).
        optimize::drop_unreferenced_locals(&unit, &optimize::StoredCode::default())?;
        merge::run(&unit, settings)?;
    }
    optimize::drop_unreferenced_locals(&unit, &optimize::StoredCode::default())?;
    times.merge = t.elapsed();

    let t = Instant::now();
    let object = codegen::emit_object(&unit)?;
    times.codegen = t.elapsed();

    // Nothing reaches the output if LLVM complained: clang redoes the unit.
    if let Some(d) = sink.first() {
        return Err(llvm_reported(d));
    }

    let t = Instant::now();
    let declined = compose::write_object(
        object.as_slice(),
        &unit.originally_local,
        &unit.unnamed_locals,
        code_fill(&unit),
        output,
    )?;
    times.write = t.elapsed();
    Ok(UnitReport {
        times,
        definitions,
        definitions_compiled: definitions,
        debug_unit_without_repository: storage.is_some() && debug_info,
        compose_declined: declined,
        ..UnitReport::default()
    })
}

/// Stages 4–8 with the program repository: prune, optimize, fragments,
/// store, compose.
#[allow(clippy::too_many_arguments)]
fn repository_stages(
    unit: &canonical::Unit,
    sink: &crate::llvm::DiagnosticSink,
    digests: &digest::ModuleDigests,
    store: &dyn Storage,
    settings: &CodegenSettings,
    options: &PipelineOptions,
    output: &Path,
    mut times: StageTimes,
    definitions: u64,
) -> Result<UnitReport> {
    let stages = Stages {
        unit,
        digests,
        store,
        settings,
        options,
        history_key: history_key(unit, options),
    };
    let mut report = UnitReport {
        definitions,
        ..UnitReport::default()
    };
    let t = Instant::now();
    let stubbed_types = stages.retain_debug_types()?;
    // Records of variables the optimizer may remove, noted before pruning
    // removes any (see `llvm::keep_removed_records`).
    let debug_info = unit.module.get_global_metadata_size("llvm.dbg.cu") > 0;
    if debug_info {
        crate::llvm::note_carried_records(&unit.module, &unit.records_kept_apart());
    }
    let pruned = prune::prune_known_definitions(unit, digests, store)?;
    report.corrupt_entries = pruned.corrupt_entries;
    report.warnings.extend(pruned.store_problem.clone());
    let history = explain::History::read(store, &stages.history_key);
    let bodies = bodies::applies(
        unit,
        options.context_bodies != Switch::Off && settings.opt != settings::OptLevel::O0,
    )
    .then(|| optimize::Bodies {
        whole_reach: &pruned.whole_reach,
        context: bodies::lookup(store, unit, digests),
        // "auto": from the unit's second compile on. A body pays only
        // when the unit is compiled again, most units of a cold build
        // never are, and keeping a unit's bodies costs a cold build
        // 30-45% of the repository's bytes (sqlite3.c, lua, fmt) and,
        // for C++ with -g, CPU (fmt's tests: 211 s against 226 s).
        keep: options.context_bodies.applies(history.exists()),
    });
    times.metadata += t.elapsed();
    let t = Instant::now();
    // The source's order, put back once the optimizer is done (but at
    // -O0: see below).
    let mut source_order = None;
    if settings.opt == settings::OptLevel::O0 {
        // The always-inliner's result follows the module's order: by
        // name, a function's code is the same in every unit (see the shim).
        crate::llvm::sort_functions_by_name(&unit.module);
    } else {
        source_order = Some(crate::llvm::function_order(&unit.module));
        crate::llvm::order_functions(&unit.module, &call_order::optimizer_order(digests));
    }
    let optimized = optimize::run(unit, settings, &pruned.stored_code, bodies.as_ref())?;
    times.optimize = t.elapsed();
    report.bodies_reused = optimized.substituted as u64;
    let t = Instant::now();
    // No function merging here: see `merge`.
    optimize::drop_unreferenced_locals(unit, &pruned.stored_code)?;
    if debug_info {
        crate::llvm::keep_removed_records(&unit.module);
    }
    if let Some(order) = &source_order {
        let names: Vec<&str> = order.iter().map(String::as_str).collect();
        crate::llvm::order_functions(&unit.module, &names);
    }
    times.merge = t.elapsed();

    let t = Instant::now();
    stages.rebase_anchor_lines()?;
    let views = stages.fragment_views(&pruned);
    let (assembly, emitted) = stages.emit_new_fragments(&views, &mut report)?;
    times.codegen = t.elapsed();
    if let Some(d) = sink.first() {
        return Err(llvm_reported(d));
    }
    stages.count_and_explain(&views, &emitted, &history, &mut report);

    let t = Instant::now();
    // Where the new fragments' relative lines are: found once, for placing
    // them now and (stored with them) every time they are reused.
    let emitted_lines: Vec<Option<debug_lines::RelativeLines>> = emitted
        .iter()
        .map(|f| {
            (digests.relative_lines && !f.object.is_empty())
                .then(|| debug_lines::find_relative_lines(&f.object))
                .flatten()
        })
        .collect();
    let (declined, recipe) = stages.compose(
        &pruned,
        &assembly,
        &emitted,
        &emitted_lines,
        stubbed_types,
        output,
    )?;
    report.compose_declined = declined;
    report.recipe = recipe;
    times.write = t.elapsed();

    let t = Instant::now();
    stages.store_new_entries(
        &pruned,
        &assembly,
        &emitted,
        &emitted_lines,
        optimized.snapshot,
        &mut report,
    );
    times.store = t.elapsed();
    report.times = times;
    Ok(report)
}

/// What the repository stages of one unit share, past the frontend.
struct Stages<'a, 'ctx> {
    unit: &'a canonical::Unit<'ctx>,
    digests: &'a digest::ModuleDigests,
    store: &'a dyn Storage,
    settings: &'a CodegenSettings,
    options: &'a PipelineOptions,
    /// Where the unit's history lives (see `explain`).
    history_key: FragmentDigest,
}

/// Where the history of `unit` lives (see `explain`): its source, the
/// working directory and the fragment context.
fn history_key(unit: &canonical::Unit, options: &PipelineOptions) -> FragmentDigest {
    explain::history_key(
        &unit.source_name,
        &std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default(),
        &options.key.fragment_context(
            &unit.target_machine.get_cpu().to_string_lossy(),
            &unit.target_machine.get_feature_string().to_string_lossy(),
        ),
    )
}

impl Stages<'_, '_> {
    /// Keeps the unit's debug types for the glue, before pruning, so that
    /// the glue holds the same types whatever the repository holds (see
    /// `llvm::SharedTypes`); what kind of stubs fragments get.
    fn retain_debug_types(&self) -> Result<crate::llvm::StubKind> {
        let unit = self.unit;
        let stubbed_types = crate::llvm::stubs_unit_types(&unit.module);
        if stubbed_types != crate::llvm::StubKind::None {
            // A C stub emitted inside a fragment's own compile unit (no type
            // units) would be the type a debugger sees.
            if stubbed_types == crate::llvm::StubKind::CRecords && !merge::debug_type_units() {
                anyhow::bail!(
                    "{}: debug types are not emitted as type units",
                    unit.source_name
                );
            }
            crate::llvm::retain_unit_types(&unit.module);
        }
        Ok(stubbed_types)
    }

    /// With debug info: the debug types identified, and the file-level
    /// lines made relative to the unit's anchor once for every fragment
    /// (see `debug_lines`), as the digests hold them.
    fn rebase_anchor_lines(&self) -> Result<()> {
        let unit = self.unit;
        if unit.module.get_global_metadata_size("llvm.dbg.cu") == 0 {
            return Ok(());
        }
        crate::llvm::identify_debug_types(&unit.module);
        if let Some(anchor) = self.digests.anchor.filter(|_| self.digests.relative_lines) {
            let base = crate::support::line_bases::ANCHOR_LINE_BASE;
            if crate::llvm::rebase_anchor_lines(&unit.module, anchor, base)
                == crate::llvm::Rebased::Unsupported
            {
                anyhow::bail!(
                    "{}: debug info the anchored line rebase cannot rebuild",
                    unit.source_name
                );
            }
        }
        Ok(())
    }

    /// What the assembly sees of each planned fragment.
    fn fragment_views<'p>(&self, pruned: &'p prune::PrunePlan) -> Vec<assemble::FragmentView<'p>> {
        (pruned.fragments.iter())
            .map(|f| assemble::FragmentView {
                members: &f.members,
                stored: match &f.stored {
                    Some(e) if e.kind.is_object() => assemble::Stored::Object,
                    Some(_) => assemble::Stored::Deletion,
                    None => assemble::Stored::Nothing,
                },
                discardable: f.discardable,
                present: split::any_defined(&self.unit.module, &f.members),
            })
            .collect()
    }

    /// The object's assembly, and the new fragments it needs compiled.
    fn emit_new_fragments(
        &self,
        views: &[assemble::FragmentView],
        report: &mut UnitReport,
    ) -> Result<(assemble::Assembly, Vec<split::Fragment>)> {
        let mut post = split::plan(&self.unit.module);
        let glue = match post.first() {
            Some((_, true)) => Some(post.remove(0).0),
            _ => None,
        };
        let unplanned = (post.into_iter())
            .filter(|(_, is_glue)| !is_glue)
            .map(|(members, _)| members)
            .collect();
        let mut assembly = assemble::plan(glue, views, unplanned);
        let to_emit = std::mem::take(&mut assembly.to_emit);
        let emitted = split::emit_groups(
            self.unit,
            self.settings,
            self.options.jobs.get(),
            to_emit,
            split::LineMode {
                relative: self.digests.relative_lines,
                unit_source: self.digests.unit_source.as_deref(),
            },
            &mut report.carve_declined,
            debug_batch::emit_debug_carved,
        )?;
        Ok((assembly, emitted))
    }

    /// The counters of what was compiled, pruned and shared, the unit's
    /// history for the next compile, and with `REPOCC_EXPLAIN` why
    /// (`previous`: what the unit's previous compile recorded).
    fn count_and_explain(
        &self,
        views: &[assemble::FragmentView],
        emitted: &[split::Fragment],
        previous: &explain::History,
        report: &mut UnitReport,
    ) {
        let (unit, digests) = (self.unit, self.digests);
        let definition_names: std::collections::HashSet<&str> = (digests.defs.iter())
            .filter(|d| d.kind != digest::DefKind::Glue)
            .map(|d| d.name.as_str())
            .collect();
        let compiled_members: Vec<&str> = (emitted.iter())
            .filter(|f| !f.glue)
            .flat_map(|f| f.members.iter().map(String::as_str))
            .collect();
        let (compiled_count, pruned_names) = assemble::count(
            &definition_names,
            &compiled_members,
            views,
            &unit.attached_locals,
        );
        report.definitions_compiled = compiled_count;
        report.definitions_pruned = pruned_names.len() as u64;
        let shared = explain::shared(previous, digests, &pruned_names);
        report.definitions_shared = shared.len() as u64;
        if self.options.explain {
            let compiled: std::collections::HashSet<&str> = (compiled_members.iter().copied())
                .filter(|m| definition_names.contains(m))
                .collect();
            report.explain = explain::explain(previous, digests, &compiled);
            report
                .explain
                .extend((shared.iter()).map(|n| format!("reused {n}: stored by another unit")));
        }
        explain::record(self.store, &self.history_key, digests);
    }

    /// The object at `output`, from the new fragments and the stored ones
    /// it needs (each with its lines put back in place); with why
    /// `obj::combine` declined, or else the recipe of the object: which
    /// parts went in as the repository holds them.
    fn compose(
        &self,
        pruned: &prune::PrunePlan,
        assembly: &assemble::Assembly,
        emitted: &[split::Fragment],
        emitted_lines: &[Option<debug_lines::RelativeLines>],
        stubbed_types: crate::llvm::StubKind,
        output: &Path,
    ) -> Result<(
        Option<crate::obj::Decline>,
        Option<crate::unit_cache::recipe::Recipe>,
    )> {
        let unit = self.unit;
        let stored_payload = |i: usize| {
            (pruned.fragments[i].stored.as_ref()).map_or(&[][..], |e| e.payload.as_slice())
        };
        // Which discardable fragments the object needs (stored, or compiled
        // now): those the rest of it refers to, transitively.
        let seeds = (assembly.slots.iter()).flat_map(|s| match s {
            assemble::Slot::Emitted(e) => emitted[*e].references.clone(),
            assemble::Slot::Stored(i) => pruned.fragments[*i].references.clone(),
            _ => Vec::new(),
        });
        let compiled: std::collections::HashMap<usize, &[String]> = (assembly.slots.iter())
            .filter_map(|s| match s {
                assemble::Slot::EmittedIfReferenced(e, i) => {
                    Some((*i, emitted[*e].references.as_slice()))
                }
                _ => None,
            })
            .collect();
        let included = prune::referenced_discardables(&pruned.fragments, seeds, &compiled);
        // Fragments with relative lines get their lines back.
        let placement = LinePlacement::of(self.digests, &unit.source_name);
        let parts = assemble::parts(&assembly.slots, &included);
        // The key each newly stored fragment goes under (a recipe names it).
        let stored_as: std::collections::HashMap<usize, &FragmentDigest> =
            (assembly.store_after.iter())
                .map(|&(i, e)| (e, &pruned.fragments[i].key))
                .collect();
        // Each part placed, with the key it is stored under when its bytes
        // went in as stored.
        let placed: Vec<(std::borrow::Cow<[u8]>, Option<&FragmentDigest>)> = (parts
            .iter()
            .copied())
        .map(|part| match part {
            assemble::Part::Emitted(e) => {
                let f = &emitted[e];
                let leader = f.members.first().filter(|_| !f.glue);
                let o =
                    placement.place(&f.object, leader, &f.inlined, emitted_lines[e].as_ref())?;
                let key = stored_as.get(&e).copied().filter(|_| *o == f.object[..]);
                Ok((o, key))
            }
            assemble::Part::Stored(i) => {
                let f = &pruned.fragments[i];
                let object = stored_payload(i);
                let found = (f.lines.as_deref())
                    .and_then(|words| debug_lines::RelativeLines::from_words(words, object));
                let o = placement.place(object, f.members.first(), &f.inlined, found.as_ref())?;
                let key = Some(&f.key).filter(|_| *o == *object);
                Ok((o, key))
            }
        })
        .filter(|o| !matches!(o, Ok((o, _)) if o.is_empty()))
        .collect::<Result<_>>()?;
        let objects: Vec<&[u8]> = placed.iter().map(|(o, _)| o.as_ref()).collect();
        if stubbed_types != crate::llvm::StubKind::None {
            // The glue is the first part, when there is one.
            let glue_first = matches!(
                parts.first(),
                Some(assemble::Part::Emitted(e)) if emitted[*e].glue && !emitted[*e].object.is_empty()
            );
            if !glue_first {
                anyhow::bail!(
                    "{}: no glue to hold the unit's debug types",
                    unit.source_name
                );
            }
            if stubbed_types == crate::llvm::StubKind::CRecords {
                every_type_unit_whole(&objects, &unit.source_name)?;
            }
        }
        let structors = compose::structor_tables(&unit.module);
        let object = match compose::compose_fragments(
            &objects,
            &unit.originally_local,
            &unit.unnamed_locals,
            &structors,
            code_fill(unit),
            output,
        )? {
            Ok(object) => object,
            Err(declined) => return Ok((Some(declined), None)),
        };
        use crate::unit_cache::recipe::{Part, Recipe};
        let recipe = Recipe {
            object,
            parts: (placed.iter())
                .map(|(o, key)| match key {
                    Some(k) => Part::Stored(**k),
                    None => Part::Inline(o.to_vec()),
                })
                .collect(),
            locals: unit.originally_local.clone(),
            unnamed: unit.unnamed_locals.clone(),
            structors,
            fill: compose::fill_byte(code_fill(unit)),
        };
        Ok((None, Some(recipe)))
    }

    /// Stores what is new, in one write (a pack: see `repo::store`); a
    /// repository that cannot be written costs reuse, never the build.
    fn store_new_entries(
        &self,
        pruned: &prune::PrunePlan,
        assembly: &assemble::Assembly,
        emitted: &[split::Fragment],
        emitted_lines: &[Option<debug_lines::RelativeLines>],
        snapshot: Option<bodies::Snapshot>,
        report: &mut UnitReport,
    ) {
        let mut new_entries = Vec::new();
        let mut fragments_new = 0;
        let originally_local: std::collections::HashSet<&str> = (self.unit.originally_local.iter())
            .map(String::as_str)
            .collect();
        for &(i, e) in &assembly.store_after {
            let f = &pruned.fragments[i];
            new_entries.push(entries::object_entry(
                &f.key,
                &f.members,
                &emitted[e],
                emitted_lines[e].as_ref(),
                split::own_to_its_unit(&self.unit.module, &f.members, &originally_local),
            ));
            fragments_new += 1;
        }
        for &i in &assembly.deleted {
            let f = &pruned.fragments[i];
            new_entries.push(entries::deleted_entry(&f.key));
        }
        if let Some(snapshot) = snapshot {
            new_entries.extend(bodies::entries(snapshot));
        }
        match self.store.put_many(&new_entries) {
            Ok(_) => report.fragments_stored += fragments_new,
            // Cleared while written: what a clear beside the build wants.
            Err(crate::repo::storage::StoreError::RemovedMeanwhile { .. }) => {}
            Err(err) => report.warnings.push(format!("{err}; fragments not stored")),
        }
    }
}

/// Fragments hold their unit's types as stubs, and the glue (the first
/// part) holds them whole, so that the composer keeps the glue's type
/// units: a stub's type unit the glue lacks would be kept instead, and a
/// debugger would see an empty struct. Never expected (the glue retains
/// every type the unit's definitions reach); checked all the same.
fn every_type_unit_whole(objects: &[&[u8]], source_name: &str) -> Result<()> {
    let groups = |o: &[u8]| {
        crate::obj::elf::debug_type_groups(o)
            .ok_or_else(|| anyhow::anyhow!("{source_name}: a fragment's object cannot be read"))
    };
    let Some((glue, fragments)) = objects.split_first() else {
        return Ok(());
    };
    let whole: std::collections::HashSet<Vec<u8>> = groups(glue)?.into_iter().collect();
    for object in fragments {
        if let Some(missing) = groups(object)?.into_iter().find(|g| !whole.contains(g)) {
            anyhow::bail!(
                "{source_name}: type unit {} is not in the unit's glue",
                String::from_utf8_lossy(&missing)
            );
        }
    }
    Ok(())
}

/// What placing a fragment's relative lines needs of its unit (see
/// `debug_lines`): where each definition, the anchor and each function
/// fragments may hold inlined code of are now.
struct LinePlacement<'a> {
    lines: std::collections::HashMap<&'a str, u64>,
    anchor: Option<u64>,
    inlined_lines: &'a std::collections::HashMap<String, u64>,
    source_name: &'a str,
}

impl<'a> LinePlacement<'a> {
    fn of(digests: &'a digest::ModuleDigests, source_name: &'a str) -> Self {
        LinePlacement {
            lines: digests
                .defs
                .iter()
                .filter(|_| digests.relative_lines)
                .filter_map(|d| Some((d.name.as_str(), d.position.as_ref()?.line)))
                .collect(),
            anchor: digests.anchor.filter(|_| digests.relative_lines),
            inlined_lines: &digests.inlined_lines,
            source_name,
        }
    }

    /// `object` (a fragment led by `leader`, none for the glue, holding
    /// inlined code of the functions `inlined` names) with its lines
    /// placed: at the places `found` records when they check out against
    /// it, else found by walking its DWARF.
    fn place<'o>(
        &self,
        object: &'o [u8],
        leader: Option<&String>,
        inlined: &[String],
        found: Option<&debug_lines::RelativeLines>,
    ) -> Result<std::borrow::Cow<'o, [u8]>> {
        let what = || leader.map_or("the glue", |l| l.as_str());
        let own = leader.and_then(|l| self.lines.get(l.as_str()).copied());
        // A header's function with code of the unit's source inlined has
        // no position of its own, yet lines to place.
        if object.is_empty() || (own.is_none() && self.anchor.is_none() && inlined.is_empty()) {
            return Ok(std::borrow::Cow::Borrowed(object));
        }
        let inlined = inlined
            .iter()
            .map(|key| {
                self.inlined_lines.get(key).copied().ok_or_else(|| {
                    anyhow::anyhow!(
                        "placing the debug lines of {}: no single function {key} in {}",
                        what(),
                        self.source_name
                    )
                })
            })
            .collect::<Result<Vec<u64>>>()?;
        let points = debug_lines::LinePoints {
            own,
            anchor: self.anchor,
            inlined: &inlined,
        };
        let (placed, _) = found
            .and_then(|found| debug_lines::place_found_lines(object, found, points))
            .or_else(|| debug_lines::place_relative_lines(object, points))
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "placing the debug lines of {} (line {own:?}, anchor {:?})",
                    what(),
                    self.anchor
                )
            })?;
        Ok(std::borrow::Cow::Owned(placed))
    }
}

/// Whether `obj::debug_lines` reads the objects `triple`'s code generator
/// writes: ELF64 little-endian x86-64 and AArch64 (not x32's or ILP32's
/// ELF32, not big-endian AArch64).
fn lines_placeable_for(triple: &str) -> bool {
    let mut parts = triple.split('-');
    let arch = parts.next().unwrap_or("");
    let environment = triple.rsplit('-').next().unwrap_or("");
    matches!(arch, "x86_64" | "aarch64" | "arm64")
        && !environment.ends_with("x32")
        && !environment.ends_with("ilp32")
}

/// Stage 3: digests of the canonical module.
fn metadata_stage(
    unit: &canonical::Unit,
    settings: &CodegenSettings,
    options: &PipelineOptions,
) -> Result<digest::ModuleDigests> {
    let text = crate::llvm::print_module(&unit.module);
    let tm = &unit.target_machine;
    let extra = options.key.fragment_context(
        &tm.get_cpu().to_string_lossy(),
        &tm.get_feature_string().to_string_lossy(),
    );
    let inlining = if settings.opt == crate::ir::settings::OptLevel::O0 {
        digest::Inlining::AlwaysInlineOnly
    } else {
        digest::Inlining::Optimizing
    };
    // With debug info, lines are relative to each definition (its
    // fragment is compiled so and placed when composed): an edit that adds
    // lines above a definition keeps its digest.
    // Only in objects whose DWARF repocc places (`obj::debug_lines`: ELF64
    // little-endian, x86-64 and AArch64); an i386 or x32 unit keeps its
    // lines absolute.
    let triple = tm.get_triple();
    let lines = if unit.module.get_global_metadata_size("llvm.dbg.cu") > 0
        && lines_placeable_for(&triple.as_str().to_string_lossy())
    {
        digest::Lines::Relative
    } else {
        digest::Lines::Absolute
    };
    let digests = digest::digest_module(&text, &extra, inlining, lines)?;
    if options.digest_report {
        say!("{}", digest_report(&unit.source_name, &digests));
    }
    Ok(digests)
}

/// Precision of the digest graph: the share of final digests an edit to
/// one definition changes, over every definition of the unit.
fn digest_report(source: &str, d: &digest::ModuleDigests) -> String {
    let n = d.defs.len().max(1);
    let impact = digest::edit_impact(d);
    let widest = impact
        .iter()
        .enumerate()
        .max_by_key(|(_, v)| **v)
        .map_or("", |(i, _)| d.defs[i].name.as_str());
    let mut impact = impact;
    impact.sort_unstable();
    let (comp_of, _) = digest::reach_sets(d.defs.len(), &d.edges);
    let mut sizes = std::collections::HashMap::new();
    for c in comp_of {
        *sizes.entry(c).or_insert(0usize) += 1;
    }
    let largest = sizes.values().copied().max().unwrap_or(0);
    let mean = impact.iter().sum::<usize>() as f64 / n as f64;
    let median = impact.get(impact.len() / 2).copied().unwrap_or(0);
    let max = impact.last().copied().unwrap_or(0);
    format!(
        "repocc: digests {source}: {} definitions, {} edges, largest cycle {largest}; an edit to one definition changes \
         mean {:.1} ({:.2}%), median {} ({:.2}%), max {} final digests (editing {widest})",
        d.defs.len(),
        d.edges.len(),
        mean,
        100.0 * mean / n as f64,
        median,
        100.0 * median as f64 / n as f64,
        max
    )
}

#[cfg(test)]
mod tests {
    use super::combine::tests::compile;

    #[test]
    fn lines_are_relative_only_where_their_objects_are_placed() {
        for triple in [
            "x86_64-pc-linux-gnu",
            "x86_64-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu",
        ] {
            assert!(super::lines_placeable_for(triple), "{triple}");
        }
        for triple in [
            "i686-pc-linux-gnu",
            "i386-unknown-linux-gnu",
            "x86_64-unknown-linux-gnux32",
            "aarch64_be-unknown-linux-gnu",
            "aarch64-unknown-linux-gnu_ilp32",
        ] {
            assert!(!super::lines_placeable_for(triple), "{triple}");
        }
    }

    /// Composing declines when a fragment has a type unit the glue (the
    /// first object) lacks: that type unit would be a stub.
    #[test]
    fn a_type_unit_missing_from_the_glue_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let flags = ["-g", "-fdebug-types-section"];
        // C++: clang gives its types identifiers, so they are type units.
        let with_type = compile(
            d,
            "a.cc",
            "struct shared { int a; double b; };\nint first(shared *s) { return s->a; }\n",
            &flags,
        );
        let without = compile(d, "b.cc", "int second(int x) { return x + 1; }\n", &flags);
        let groups = crate::obj::elf::debug_type_groups(&with_type).unwrap();
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert!(crate::obj::elf::debug_type_groups(&without)
            .unwrap()
            .is_empty());
        assert!(super::every_type_unit_whole(&[&with_type, &with_type, &without], "t.c").is_ok());
        let refused = super::every_type_unit_whole(&[&without, &with_type], "t.c");
        assert!(
            refused
                .as_ref()
                .is_err_and(|e| e.to_string().contains("not in the unit's glue")),
            "{refused:?}"
        );
    }
}

#[cfg(test)]
mod stored_deletions {
    use super::*;
    use crate::repo::storage::{Entry, EntryKind, Lookup};

    /// A stored deletion of a definition the optimizer cannot delete (an
    /// external function) is not trusted: the object still defines it. (A
    /// flipped bit of an entry's kind, which the checksum did not cover,
    /// once left lua's `luaM_realloc_` out of `lmem.o`.)
    #[test]
    fn a_stored_deletion_of_an_external_definition_is_compiled() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let source = d.join("u.c");
        std::fs::write(
            &source,
            "static int helper(int x) { return x * 3; }\n\
             int kept(int x) { return helper(x) + 1; }\n\
             int other(int y) { return y - 2; }\n",
        )
        .unwrap();
        let bitcode_path = d.join("u.bc");
        let status = std::process::Command::new("clang-19")
            .args(["-O2", "-emit-llvm", "-c", "-Xclang", "-disable-llvm-passes"])
            .arg(&source)
            .arg("-o")
            .arg(&bitcode_path)
            .status()
            .unwrap();
        assert!(status.success());
        let bitcode = std::fs::read(&bitcode_path).unwrap();
        let settings = crate::ir::settings::CodegenSettings::plain_o2();
        let options = PipelineOptions {
            merge_functions: true,
            fragments: true,
            debug_fragments: true,
            context_bodies: Switch::On,
            jobs: crate::config::Jobs(1),
            digest_report: false,
            explain: false,
            key: key::KeyContext::new("test".into(), &settings),
        };
        let store = crate::repo::store::Store::new(&d.join("repo"));
        let compile = |output: &Path| {
            let ir = FrontendIr::Bitcode(&bitcode);
            compile_frontend_ir(ir, "u.c", &settings, &options, Some(&store), output).unwrap()
        };
        let cold = d.join("cold.o");
        compile(&cold);
        let mut turned = 0;
        for info in store.entries() {
            if let Ok(Lookup::Hit(e)) = store.get(&info.key) {
                if e.kind.is_object() {
                    let deletion = Entry {
                        kind: EntryKind::Deleted,
                        metadata: e.metadata,
                        payload: Vec::new(),
                    };
                    // Removed first: a deletion never replaces an entry.
                    store.remove(&info.key).unwrap();
                    store.put(&info.key, &deletion).unwrap();
                    turned += 1;
                }
            }
        }
        assert!(turned >= 2, "{turned} stored objects");
        let warm = d.join("warm.o");
        let report = compile(&warm);
        assert_eq!(
            std::fs::read(&cold).unwrap(),
            std::fs::read(&warm).unwrap(),
            "the object with every stored fragment a deletion differs"
        );
        assert!(
            report
                .warnings
                .iter()
                .any(|w| w.contains("which it cannot")),
            "{:?}",
            report.warnings
        );
    }
}

#[cfg(test)]
mod split_measurement {
    //! A measurement, not a test (ignored by default): the cost of code
    //! generation per definition against one emission for the whole module.
    //! `REPOCC_SPLIT_BENCH_BC=sqlite3.bc cargo test --release -- --ignored
    //! --nocapture split_cost` with bitcode from `clang-19 -O2 -Xclang
    //! -disable-llvm-passes -emit-llvm -c`.
    use super::*;
    use inkwell::module::Linkage;
    use inkwell::targets::FileType;

    #[test]
    #[ignore]
    fn split_cost() {
        let Some(path) = std::env::var_os("REPOCC_SPLIT_BENCH_BC") else {
            return;
        };
        let bitcode = std::fs::read(path).unwrap();
        let settings = crate::ir::settings::CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let unit = canonical::load(&context, &bitcode, "bench", &settings).unwrap();
        let t = Instant::now();
        optimize::run(&unit, &settings, &optimize::StoredCode::default(), None).unwrap();
        say!("optimize {:.2}s", t.elapsed().as_secs_f64());
        let mut names: Vec<String> = Vec::new();
        for f in unit.module.get_functions() {
            if crate::llvm::has_body(&f)
                && f.get_linkage() != Linkage::Private
                && f.get_linkage() != Linkage::Internal
            {
                names.push(f.get_name().to_string_lossy().into_owned());
            }
        }
        for g in unit.module.get_globals() {
            let n = g.get_name().to_string_lossy().into_owned();
            if !g.is_declaration()
                && !n.starts_with("llvm.")
                && g.get_linkage() != Linkage::Private
                && g.get_linkage() != Linkage::Internal
            {
                names.push(n);
            }
        }
        let t = Instant::now();
        let whole = unit
            .target_machine
            .write_to_memory_buffer(&unit.module, FileType::Object)
            .unwrap();
        let whole_time = t.elapsed();
        let (mut extract, mut emit, mut bytes) = (Duration::ZERO, Duration::ZERO, 0usize);
        for n in &names {
            let t = Instant::now();
            let m = crate::llvm::extract_definitions(&unit.module, &[n.as_str()], false, None);
            extract += t.elapsed();
            let t = Instant::now();
            let o = unit
                .target_machine
                .write_to_memory_buffer(&m, FileType::Object)
                .unwrap();
            emit += t.elapsed();
            bytes += o.get_size();
        }
        say!(
            "{} definitions: whole module {:.2}s ({} bytes); per definition: extract {:.2}s, emit {:.2}s ({} bytes)",
            names.len(),
            whole_time.as_secs_f64(),
            whole.get_size(),
            extract.as_secs_f64(),
            emit.as_secs_f64(),
            bytes
        );
    }
}
