//! Stage 6 for a unit with debug info: its fragments carved out of one
//! code generation per worker (`obj::carve` with `obj::debug_carve`)
//! instead of compiled one module each. Generating code for each debug
//! fragment on its own cost about a third more than one code generation
//! for all of them (`format-test.cc` at `-O2 -g`: 11.3 s against about
//! 6 s, docs/performance.md).
//!
//! The fragments are extracted, their lines rebased and compile units
//! trimmed as for a module of their own, then linked into one module
//! (`llvm::link_fragment`): each fragment's definitions renamed with a
//! suffix of its own, so that no fragment's code or debug info binds to
//! another's definition, and the types of the unit's context shared as
//! the fragments share them. Each fragment's object is then cut out of
//! that one object, its debug sections written anew in an order its own
//! contents decide (`obj::debug_carve`).
//!
//! What a fragment's object is must not depend on what else was compiled
//! with it (invariant 4). The carving of a fragment compiled as a module
//! of its own is the reference: a fragment the batch's carving declines
//! is compiled so (with a section per function and datum, and the last
//! unwind record another function's, as in the batch) and carved from
//! that object; one that declines there too is left to the path for
//! modules of their own (its object as compiled). Fragments the batch
//! would change are not put in it: those whose debug types the batch
//! would merge (`llvm::debug_types_unshareable`), those whose lines need
//! the printed text to be rebased, label tables, structors' keys and
//! functions in named sections.
//!
//! C++ units only with `REPOCC_DEBUG_CARVE_CXX`: a few C++ fragments still
//! come out of a batch with a declaration twice where their module alone
//! has it once (docs/performance.md, "Carving debug fragments").

use anyhow::{anyhow, Result};
use inkwell::module::Module;

use crate::ir::canonical::Unit;
use crate::ir::settings::CodegenSettings;
use crate::llvm;
use crate::obj::carve;

use super::split::{
    add_last_unwind_record, balanced_chunks, compile_bitcode, extract, references_of, run_workers,
    takes_block_addresses, Fragment, LineMode, TargetSpec,
};

/// One fragment put in a batch.
struct Member {
    /// Its place in the plan.
    plan: usize,
    spec: carve::FragmentSpec,
    references: Vec<String>,
    inlined: Vec<String>,
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
    declines: &mut Vec<crate::obj::Decline>,
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
) -> Result<()> {
    // C++ only when asked: some of a C++ unit's fragments do not yet come
    // out of a batch as they do alone (invariant 4; docs/performance.md).
    if llvm::stubs_unit_types(&unit.module) == llvm::StubKind::CxxDecls
        && !crate::config::switches().debug_carve_cxx
    {
        return Ok(());
    }
    let structor_keys = llvm::structor_keys(&unit.module);
    let named_section = |members: &[String]| {
        members.iter().any(|m| {
            (unit.module.get_function(m))
                .is_some_and(|f| f.as_global_value().get_section().is_some())
        })
    };
    let candidates: Vec<usize> = (0..plan.len())
        .filter(|&i| {
            let (members, glue) = &plan[i];
            !glue
                && done[i].is_none()
                && !takes_block_addresses(unit, members)
                && !members.iter().any(|m| structor_keys.contains(m))
                && !named_section(members)
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let sectioned = CodegenSettings {
        function_sections: true,
        data_sections: true,
        unique_section_names: true,
        ..settings.clone()
    };
    let naming = carve::SectionNaming {
        function_sections: settings.function_sections,
        data_sections: settings.data_sections,
        unique_section_names: settings.unique_section_names,
    };
    let reach: Vec<llvm::FragmentReach> = (candidates.iter())
        .map(|&i| llvm::fragment_reach(&unit.module, &plan[i].0))
        .collect();
    let weights: Vec<u64> = reach.iter().map(|r| r.weight).collect();
    let chunks = balanced_chunks(&weights, jobs);
    let batches = build_batches(unit, chunks, &candidates, plan, reach, lines, shared);
    let objects: Vec<Result<Vec<u8>>> = if jobs <= 1 {
        let machine = target.machine(&sectioned)?;
        (batches.iter())
            .map(|(_, batch)| {
                llvm::emit_object(&machine, batch)
                    .map(|o| o.as_slice().to_vec())
                    .map_err(|e| anyhow!("generating code for the unit's debug fragments: {e}"))
            })
            .collect()
    } else {
        let bitcodes: Vec<Vec<u8>> = (batches.iter())
            .map(|(_, b)| b.write_bitcode_to_memory().as_slice().to_vec())
            .collect();
        let machine_settings = &sectioned;
        run_workers(&bitcodes, jobs, |bc| {
            let machine = target.machine(machine_settings)?;
            compile_bitcode(bc, "the unit's debug fragments", &machine, None, None)
                .map(|(object, _, _)| object)
        })?
        .into_iter()
        .map(Ok)
        .collect()
    };
    let mut alone = Vec::new();
    for ((members, _), object) in batches.into_iter().zip(objects) {
        let object = object?;
        let specs: Vec<&carve::FragmentSpec> = members.iter().map(|m| &m.spec).collect();
        let carved = match carve::carve(&object, &specs, naming) {
            Ok(carved) => carved,
            Err(decline) => specs.iter().map(|_| Err(decline)).collect(),
        };
        for (member, object) in members.into_iter().zip(carved) {
            match object {
                Ok(object) => {
                    if crate::config::switches().check_debug_carving {
                        // Diagnosis: the reference is the fragment alone.
                        let (alone, _) =
                            carved_alone(unit, target, &sectioned, naming, lines, shared, &member);
                        if alone.as_deref() != Some(&object[..]) {
                            if let Some(dir) = &crate::config::switches().dump_fragment_modules {
                                let _ = std::fs::write(
                                    dir.join(format!("differs-{}-batch.o", member.plan)),
                                    &object,
                                );
                                if let Some(a) = &alone {
                                    let _ = std::fs::write(
                                        dir.join(format!("differs-{}-alone.o", member.plan)),
                                        a,
                                    );
                                }
                            }
                            say!(
                                "repocc: {}: debug carving differs from alone: {}",
                                unit.source_name,
                                plan[member.plan].0.join(",")
                            );
                        }
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
                    alone.push(member);
                }
            }
        }
    }
    // Declined in the batch: carved from a module of its own.
    let machine = if alone.is_empty() {
        None
    } else {
        Some(target.machine(&sectioned)?)
    };
    for member in alone {
        let Some(machine) = &machine else { break };
        let members = &plan[member.plan].0;
        let Some((module, inlined)) = prepared(unit, members, lines, shared) else {
            continue;
        };
        add_last_unwind_record(&module);
        let object = llvm::emit_object(machine, &module)
            .map_err(|e| anyhow!("generating code for {}: {e}", members.join(",")))?;
        let spec = carve::FragmentSpec {
            members: members.clone(),
            address_significant: member.spec.address_significant,
            suffix: String::new(),
        };
        match carve::carve(object.as_slice(), &[&spec], naming).map(|mut v| v.remove(0)) {
            Ok(Ok(object)) => {
                done[member.plan] = Some(Fragment::compiled(
                    members,
                    false,
                    object,
                    member.references,
                    inlined,
                ))
            }
            Ok(Err(decline)) | Err(decline) => declines.push(decline),
        }
    }
    Ok(())
}

/// The batches of the unit's debug fragments: for each chunk of
/// `candidates` (places in `plan`), its fragments prepared and linked in
/// the unit's context (extraction is its), one batch per compile unit
/// directory (see `llvm::debug_compile_directory`). A fragment that cannot
/// be prepared or linked is in none (left to the path for modules of their
/// own).
fn build_batches<'ctx>(
    unit: &Unit<'ctx>,
    chunks: Vec<std::ops::Range<usize>>,
    candidates: &[usize],
    plan: &[(Vec<String>, bool)],
    reach: Vec<llvm::FragmentReach>,
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
) -> Vec<(Vec<Member>, Module<'ctx>)> {
    let mut reach: Vec<Option<llvm::FragmentReach>> = reach.into_iter().map(Some).collect();
    let mut batches = Vec::with_capacity(chunks.len());
    for chunk in chunks {
        // (directory, [(place in `candidates`, prepared fragment)])
        let mut groups: Vec<(Option<String>, Vec<(usize, Prepared<'ctx>)>)> = Vec::new();
        for c in chunk {
            let Some(fragment) = prepared(unit, &plan[candidates[c]].0, lines, shared) else {
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
            let members = link_batch(&batch, group, candidates, plan, &mut reach);
            if !members.is_empty() {
                add_last_unwind_record(&batch);
                super::fragment_dump::dump_compiled_batch(unit, batches.len(), &batch);
                batches.push((members, batch));
            }
        }
    }
    batches
}

/// A fragment's module as it is compiled alone, and the functions inlined
/// into it whose lines were rebased (see `prepared`).
type Prepared<'ctx> = (Module<'ctx>, Vec<String>);

/// `group`'s fragments linked into `batch`, each with its suffix; the
/// members linked (none when the linker refused one: the batch may hold
/// part of it, so none of it is used).
fn link_batch<'ctx>(
    batch: &Module<'ctx>,
    group: Vec<(usize, Prepared<'ctx>)>,
    candidates: &[usize],
    plan: &[(Vec<String>, bool)],
    reach: &mut [Option<llvm::FragmentReach>],
) -> Vec<Member> {
    let mut members = Vec::new();
    let mut linker = llvm::BatchLinker::new(batch);
    for (c, fragment) in group {
        if linker.declaration_conflicts(&fragment.0) {
            continue;
        }
        let i = candidates[c];
        let suffix = format!(".repocc.F{}", members.len());
        let reach = reach[c].take().unwrap_or_default();
        let spec = carve::FragmentSpec {
            members: plan[i].0.iter().map(|m| format!("{m}{suffix}")).collect(),
            address_significant: reach.address_significant,
            suffix,
        };
        let references = references_of(&fragment.0);
        if linker.link(fragment.0, &spec.suffix).is_err() {
            return Vec::new();
        }
        members.push(Member {
            plan: i,
            spec,
            references,
            inlined: fragment.1,
        });
    }
    members
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
    // Two types of one identifier would be one type unit here, two alone
    // (it would decline): compiled on its own from the start.
    if llvm::debug_types_unshareable(&module) {
        return None;
    }
    Some((module, inlined))
}

/// Diagnosis (`REPOCC_CHECK_DEBUG_CARVING`): `member` compiled as a module
/// of its own and carved, as a declined fragment is.
#[allow(clippy::too_many_arguments)]
fn carved_alone(
    unit: &Unit,
    target: &TargetSpec,
    sectioned: &CodegenSettings,
    naming: carve::SectionNaming,
    lines: LineMode<'_>,
    shared: Option<&llvm::SharedTypes>,
    member: &Member,
) -> (Option<Vec<u8>>, Option<crate::obj::Decline>) {
    let members: Vec<String> = (member.spec.members.iter())
        .map(|m| m.strip_suffix(&member.spec.suffix).unwrap_or(m).to_string())
        .collect();
    let Some((module, _)) = prepared(unit, &members, lines, shared) else {
        return (None, None);
    };
    add_last_unwind_record(&module);
    let Ok(machine) = target.machine(sectioned) else {
        return (None, None);
    };
    let Ok(object) = llvm::emit_object(&machine, &module) else {
        return (None, None);
    };
    let spec = carve::FragmentSpec {
        members,
        address_significant: member.spec.address_significant.clone(),
        suffix: String::new(),
    };
    match carve::carve(object.as_slice(), &[&spec], naming).map(|mut v| v.remove(0)) {
        Ok(Ok(o)) => (Some(o), None),
        Ok(Err(d)) | Err(d) => (None, Some(d)),
    }
}
