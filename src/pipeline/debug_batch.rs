//! Stage 6 for a unit with debug info: its fragments carved out of one
//! code generation per worker (`obj::carve` with `obj::debug_carve`)
//! instead of compiled one module each. Generating code for each debug
//! fragment on its own cost about a third more than one code generation
//! for all of them (`format-test.cc` at `-O2 -g`: 11.3 s against about
//! 6 s, docs/performance.md).
//!
//! The fragments are extracted, their lines rebased and compile units
//! trimmed as for a module of their own, then linked into one module
//! (`llvm::BatchLinker`): each fragment's definitions renamed with a
//! suffix of its own, so that no fragment's code or debug info binds to
//! another's definition, and the types of the unit's context shared as
//! the fragments share them. Each fragment's object is then cut out of
//! that one object, its debug sections written anew in an order its own
//! contents decide (`obj::debug_carve`).
//!
//! What a fragment's object is must not depend on what else was compiled
//! with it (invariant 4). The carving of a fragment compiled as a module
//! of its own is the reference: a fragment the batch's carving declines
//! is compiled so (with a section per function and datum, as in the
//! batch) and carved from that object, as is one the batch leaves out;
//! one that declines there too is left to the path for modules of their
//! own (its object as compiled). Fragments the batch
//! would change are not put in it: those with two debug types of one
//! identifier (`llvm::debug_types_unshareable`), those whose lines need
//! the printed text to be rebased, label tables, structors' keys and
//! functions in named sections.
//!
//! Two things a module holds once are kept apart for a fragment in a batch
//! as they are alone: a declaration whose debug info differs from the one
//! the batch holds is renamed with the fragment's suffix (shim/batch.cpp),
//! and a batch holds the fragments of one compile unit directory (type
//! units name their files as the unit that made them does).

use std::collections::HashSet;
use std::time::Instant;

use anyhow::{anyhow, Result};
use inkwell::module::Module;
use inkwell::targets::TargetMachine;

use crate::ir::canonical::Unit;
use crate::ir::settings::CodegenSettings;
use crate::llvm;
use crate::obj::{carve, Decline};

use super::split::{
    balanced_chunks, compile_modules, extract, references_of, takes_block_addresses,
    verify_debug_module, Fragment, LineMode, TargetSpec,
};

/// One fragment put in a batch.
struct Member {
    /// Its place in the plan.
    plan: usize,
    spec: carve::FragmentSpec,
    references: Vec<String>,
    inlined: Vec<String>,
}

/// What carving a unit's debug fragments works with.
struct Carving<'a, 'ctx> {
    unit: &'a Unit<'ctx>,
    target: &'a TargetSpec,
    /// The unit's settings with a section per function and datum.
    sectioned: CodegenSettings,
    /// The sections the user asked for, which the carved objects take.
    naming: carve::SectionNaming,
    lines: LineMode<'a>,
    shared: Option<&'a llvm::SharedTypes>,
}

/// A fragment carved from a module of its own, with the functions inlined
/// into it whose lines were rebased (`None`: it is not prepared so, see
/// `prepared`).
type CarvedAlone = Option<(std::result::Result<Vec<u8>, Decline>, Vec<String>)>;

impl Carving<'_, '_> {
    /// `members` compiled as a module of its own, as in a batch (a section
    /// per function and datum), and carved: the reference a batch's carving
    /// must equal.
    fn alone(
        &self,
        machine: &TargetMachine,
        members: &[String],
        address_significant: &HashSet<String>,
    ) -> Result<CarvedAlone> {
        let Some((module, inlined)) = prepared(self.unit, members, self.lines, self.shared) else {
            return Ok(None);
        };
        verify_debug_module(&module, &members.join(","))?;
        let object = llvm::emit_object(machine, &module)
            .map_err(|e| anyhow!("generating code for {}: {e}", members.join(",")))?;
        let spec = carve::FragmentSpec {
            members: members.to_vec(),
            address_significant: address_significant.clone(),
            suffix: String::new(),
        };
        let carved = carve::carve_alone(object.as_slice(), &spec, self.naming);
        Ok(Some((carved, inlined)))
    }
}

/// The unit's fragments with debug info compiled in batches and carved
/// (see the module comment); what is not carved stays `None` in `done`,
/// with the carver's reason in `declines`.
#[allow(clippy::too_many_arguments)]
pub(super) fn emit_debug_carved(
    unit: &Unit,
    settings: &CodegenSettings,
    target: &TargetSpec,
    jobs: usize,
    plan: &[(Vec<String>, bool)],
    done: &mut [Option<Fragment>],
    declines: &mut Vec<Decline>,
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
) -> Result<()> {
    let candidates = candidates(unit, plan, done);
    if candidates.is_empty() {
        return Ok(());
    }
    let carving = Carving {
        unit,
        target,
        sectioned: CodegenSettings {
            function_sections: true,
            data_sections: true,
            unique_section_names: true,
            ..settings.clone()
        },
        naming: carve::SectionNaming {
            function_sections: settings.function_sections,
            data_sections: settings.data_sections,
            unique_section_names: settings.unique_section_names,
        },
        lines,
        shared,
    };
    let started = Instant::now();
    let reach: Vec<llvm::FragmentReach> = (candidates.iter())
        .map(|&i| llvm::fragment_reach(&unit.module, &plan[i].0))
        .collect();
    let weights: Vec<u64> = reach.iter().map(|r| r.weight).collect();
    let chunks = balanced_chunks(&weights, jobs);
    let (batches, left_out) = build_batches(&carving, chunks, &candidates, plan, reach);
    let linked = started.elapsed();
    let objects = compile_modules(
        batches.len(),
        |i| &batches[i].1,
        target,
        &carving.sectioned,
        jobs,
        "the unit's debug fragments",
    )?;
    let emitted = started.elapsed();
    let batched: usize = batches.iter().map(|(members, _)| members.len()).sum();
    let batch_count = batches.len();
    let mut alone = left_out;
    for ((members, _), object) in batches.into_iter().zip(objects) {
        let specs: Vec<&carve::FragmentSpec> = members.iter().map(|m| &m.spec).collect();
        let carved = match carve::carve(&object, &specs, carving.naming) {
            Ok(carved) => carved,
            Err(decline) => specs.iter().map(|_| Err(decline)).collect(),
        };
        for (member, object) in members.into_iter().zip(carved) {
            match object {
                Ok(object) => {
                    if crate::config::switches().check_debug_carving {
                        check_against_alone(&carving, &member, &object, plan)?;
                    }
                    done[member.plan] = Some(Fragment::compiled(
                        &plan[member.plan].0,
                        false,
                        object,
                        member.references,
                        member.inlined,
                    ))
                }
                Err(decline) => {
                    declines.push(decline);
                    // Alone it would decline as well.
                    if !carve::declines_every_fragment(decline) {
                        alone.push(member);
                    }
                }
            }
        }
    }
    let carved = started.elapsed();
    // Left out of a batch or declined there: carved from a module of its own.
    let machine = match alone.is_empty() {
        true => None,
        false => Some(target.machine(&carving.sectioned)?),
    };
    let alone_count = alone.len();
    for member in alone {
        let Some(machine) = &machine else { break };
        let members = &plan[member.plan].0;
        match carving.alone(machine, members, &member.spec.address_significant)? {
            Some((Ok(object), inlined)) => {
                done[member.plan] = Some(Fragment::compiled(
                    members,
                    false,
                    object,
                    member.references,
                    inlined,
                ))
            }
            Some((Err(decline), _)) => declines.push(decline),
            None => {}
        }
    }
    if crate::config::switches().timings {
        say!(
            "repocc: timings {}: debug batches: {batched} of {} fragments in {batch_count} \
             (link {:.3}s, emit {:.3}s, carve {:.3}s), {alone_count} carved alone (left out or \
             declined, {:.3}s)",
            unit.source_name,
            candidates.len(),
            linked.as_secs_f64(),
            (emitted - linked).as_secs_f64(),
            (carved - emitted).as_secs_f64(),
            (started.elapsed() - carved).as_secs_f64(),
        );
    }
    Ok(())
}

/// The places in `plan` of the fragments that may go in a batch: not glue,
/// not compiled already, and none of what a batch would change (label
/// tables, structors' keys, functions in named sections).
fn candidates(unit: &Unit, plan: &[(Vec<String>, bool)], done: &[Option<Fragment>]) -> Vec<usize> {
    let structor_keys = llvm::structor_keys(&unit.module);
    let named_section = |members: &[String]| {
        members.iter().any(|m| {
            (unit.module.get_function(m))
                .is_some_and(|f| f.as_global_value().get_section().is_some())
        })
    };
    (0..plan.len())
        .filter(|&i| {
            let (members, glue) = &plan[i];
            !glue
                && done[i].is_none()
                && !takes_block_addresses(unit, members)
                && !members.iter().any(|m| structor_keys.contains(m))
                && !named_section(members)
        })
        .collect()
}

/// Diagnosis (`REPOCC_CHECK_DEBUG_CARVING`): `object`, carved from a
/// batch, against `member` compiled alone and carved; a difference is
/// reported (with `REPOCC_DUMP_FRAGMENT_MODULES`, both objects written
/// there).
fn check_against_alone(
    carving: &Carving,
    member: &Member,
    object: &[u8],
    plan: &[(Vec<String>, bool)],
) -> Result<()> {
    let machine = carving.target.machine(&carving.sectioned)?;
    let members = &plan[member.plan].0;
    let alone = match carving.alone(&machine, members, &member.spec.address_significant)? {
        Some((Ok(alone), _)) => Some(alone),
        _ => None,
    };
    if alone.as_deref() == Some(object) {
        return Ok(());
    }
    if let Some(dir) = &crate::config::switches().dump_fragment_modules {
        let _ = std::fs::write(dir.join(format!("differs-{}-batch.o", member.plan)), object);
        if let Some(a) = &alone {
            let _ = std::fs::write(dir.join(format!("differs-{}-alone.o", member.plan)), a);
        }
    }
    say!(
        "repocc: {}: debug carving differs from alone: {}",
        carving.unit.source_name,
        members.join(",")
    );
    Ok(())
}

/// The batches of the unit's debug fragments: for each chunk of
/// `candidates` (places in `plan`), its fragments prepared and linked in
/// the unit's context (extraction is its), one batch per compile unit
/// directory (see `llvm::debug_compile_directory`); and the fragments the
/// batches left out (see `link_batch`). A fragment that cannot be prepared
/// is in neither (left to the path for modules of their own, as it is
/// alone).
fn build_batches<'ctx>(
    carving: &Carving<'_, 'ctx>,
    chunks: Vec<std::ops::Range<usize>>,
    candidates: &[usize],
    plan: &[(Vec<String>, bool)],
    reach: Vec<llvm::FragmentReach>,
) -> (Vec<(Vec<Member>, Module<'ctx>)>, Vec<Member>) {
    let unit = carving.unit;
    let mut reach: Vec<Option<llvm::FragmentReach>> = reach.into_iter().map(Some).collect();
    let mut batches = Vec::with_capacity(chunks.len());
    let mut left_out = Vec::new();
    for chunk in chunks {
        let mut groups: Vec<(Option<String>, Group<'ctx>)> = Vec::new();
        for c in chunk {
            let members = &plan[candidates[c]].0;
            let Some(fragment) = prepared(unit, members, carving.lines, carving.shared) else {
                continue;
            };
            let directory = llvm::debug_compile_directory(&fragment.0);
            match groups.iter_mut().find(|(d, _)| *d == directory) {
                Some((_, group)) => group.push((c, fragment)),
                None => groups.push((directory, vec![(c, fragment)])),
            }
        }
        for (_, group) in groups {
            let batch = unit.module.get_context().create_module("repocc.batch");
            let (members, mut out) = link_batch(&batch, group, candidates, plan, &mut reach);
            left_out.append(&mut out);
            if !members.is_empty() {
                super::fragment_dump::dump_compiled_batch(unit, batches.len(), &batch);
                batches.push((members, batch));
            }
        }
    }
    (batches, left_out)
}

/// A fragment's module as it is compiled alone, and the functions inlined
/// into it whose lines were rebased (see `prepared`).
type Prepared<'ctx> = (Module<'ctx>, Vec<String>);

/// The fragments of one compile unit directory in a chunk: (place in
/// `candidates`, prepared fragment).
type Group<'ctx> = Vec<(usize, Prepared<'ctx>)>;

/// `group`'s fragments linked into `batch`, each with its suffix: the
/// members linked, and those the batch left out, which are carved from a
/// module of their own (what the batch holds besides decided that, and a
/// fragment's object must not depend on it). A fragment that declares a
/// library function as the batch does not is left out; when the linker
/// refuses one, the batch may hold part of it, so none of the batch is
/// used and every fragment of the group is left out.
fn link_batch<'ctx>(
    batch: &Module<'ctx>,
    group: Group<'ctx>,
    candidates: &[usize],
    plan: &[(Vec<String>, bool)],
    reach: &mut [Option<llvm::FragmentReach>],
) -> (Vec<Member>, Vec<Member>) {
    let mut linked = Vec::new();
    let mut left_out = Vec::new();
    let mut linker = Some(llvm::BatchLinker::new(batch));
    for (c, fragment) in group {
        let i = candidates[c];
        let reach = reach[c].take().unwrap_or_default();
        let references = references_of(&fragment.0);
        let leave_out = (linker.as_ref()).is_none_or(|l| l.declaration_conflicts(&fragment.0));
        let suffix = match leave_out {
            true => String::new(),
            false => format!(".repocc.F{}", linked.len()),
        };
        let member = Member {
            plan: i,
            spec: carve::FragmentSpec {
                members: plan[i].0.iter().map(|m| format!("{m}{suffix}")).collect(),
                address_significant: reach.address_significant,
                suffix,
            },
            references,
            inlined: fragment.1,
        };
        if leave_out {
            left_out.push(member);
            continue;
        }
        if let Some(l) = linker.as_mut() {
            if l.link(fragment.0, &member.spec.suffix).is_err() {
                linker = None;
                left_out.append(&mut linked);
                left_out.push(member);
                continue;
            }
        }
        linked.push(member);
    }
    (linked, left_out)
}

/// A fragment's module as compiled on its own (see `split::emit_in_unit`):
/// extracted, its lines rebased, its compile unit trimmed; with the keys
/// of the definitions inlined with relative lines. `None`: it does not
/// go in a batch (its lines need the printed text, or its types would
/// merge with another fragment's).
fn prepared<'ctx>(
    unit: &Unit<'ctx>,
    members: &[String],
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
) -> Option<Prepared<'ctx>> {
    let module = extract(unit, members, false, shared);
    let mut inlined = Vec::new();
    if let Some(leader) = members.first().filter(|_| lines.relative) {
        let rebased;
        (rebased, inlined) =
            llvm::rebase_relative_lines(&module, leader, shared, lines.unit_source);
        if rebased == llvm::Rebased::Unsupported {
            return None;
        }
    }
    llvm::trim_debug_units(&module, false);
    // Two types of one identifier are two type units of one signature,
    // which carving declines in a batch as alone: compiled on its own from
    // the start.
    if llvm::debug_types_unshareable(&module) {
        return None;
    }
    Some((module, inlined))
}
