//! Stage 6 in repository mode, fragments: the optimized module is cut into
//! one module per fragment and each is compiled to object code by parallel
//! workers.
//!
//! A fragment is a definition (function or global variable), or all the
//! members of one COMDAT group, plus the aliases that point into it; the
//! optimizer's local helpers (switch tables, merged strings, specialized
//! clones) are copied into every fragment that uses them, as local
//! symbols. The *glue* fragment holds what belongs to the unit as a whole:
//! `llvm.global_ctors`/`dtors`, `llvm.used`, module assembly and the
//! compiler ident. Extraction runs in the unit's context (the shim's
//! `extract_definitions`); the extracted modules cross to the workers as
//! bitcode, each worker parsing into a context of its own (DESIGN.md: LLVM
//! modules are not `Send`).

use std::collections::HashMap;

use anyhow::{anyhow, Result};
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::targets::FileType;

use super::canonical::{self, Unit};
use crate::llvm_shim;
use crate::pipeline::settings::CodegenSettings;

/// One fragment: its members (first is the fragment's name) and object.
#[derive(Clone, Debug)]
pub struct Fragment {
    pub members: Vec<String>,
    pub glue: bool,
    pub object: Vec<u8>,
    /// The symbols its code refers to and does not define.
    pub references: Vec<String>,
}

/// The globals a (fragment) module refers to without defining them.
fn references_of(module: &Module) -> Vec<String> {
    let mut out: Vec<String> = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() == 0)
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
        if f.count_basic_blocks() > 0 && emitted(f.get_linkage()) {
            let name = f.get_name().to_string_lossy().into_owned();
            let comdat = llvm_shim::comdat_of(module, &name);
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
        } else if let Some(f) = llvm_shim::blockaddress_function(&g) {
            // A label table goes with its function: block addresses cannot
            // cross objects.
            groups.join(name, &f);
        } else if emitted(g.get_linkage()) {
            let comdat = llvm_shim::comdat_of(module, &name);
            groups.add(name, comdat);
        }
    }
    for (alias, base, _) in llvm_shim::aliases(module) {
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
    let functions = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .count();
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
    let linkonce = |l: Linkage| matches!(l, Linkage::LinkOnceODR | Linkage::LinkOnceAny);
    let mut any = false;
    for m in members {
        let local = originally_local.contains(m.as_str());
        if let Some(f) = module
            .get_function(m)
            .filter(|f| f.count_basic_blocks() > 0)
        {
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

/// Whether any of `members` is still defined in the (optimized) module.
pub fn any_defined(module: &Module, members: &[String]) -> bool {
    members.iter().any(|m| {
        module
            .get_function(m)
            .is_some_and(|f| f.count_basic_blocks() > 0)
            || module.get_global(m).is_some_and(|g| !g.is_declaration())
    })
}

/// Extracts the given fragments and compiles them on `jobs` workers, in
/// the order given.
pub fn emit_groups(
    unit: &Unit,
    settings: &CodegenSettings,
    jobs: usize,
    plan: Vec<(Vec<String>, bool)>,
) -> Result<Vec<Fragment>> {
    let cpu = unit.target_machine.get_cpu().to_string_lossy().into_owned();
    let features = unit
        .target_machine
        .get_feature_string()
        .to_string_lossy()
        .into_owned();
    let triple = unit.module.get_triple();
    let triple = triple.as_str().to_string_lossy().into_owned();
    let reloc_pic = unit.module.get_flag("PIC Level").is_some();

    let bitcodes: Vec<(Vec<String>, bool, Vec<u8>)> = plan
        .into_iter()
        .map(|(members, glue)| {
            let names: Vec<&str> = members.iter().map(String::as_str).collect();
            let m = llvm_shim::extract_definitions(&unit.module, &names, glue);
            let bc = m.write_bitcode_to_memory().as_slice().to_vec();
            (members, glue, bc)
        })
        .collect();

    let emit = |(members, glue, bc): &(Vec<String>, bool, Vec<u8>)| -> Result<Fragment> {
        llvm_shim::with_diagnostic_sink(|context: &Context, sink| {
            let buffer = MemoryBuffer::create_from_memory_range_copy(bc, "fragment");
            let module = Module::parse_bitcode_from_buffer(&buffer, context)
                .map_err(|e| anyhow!("reading fragment {}: {e}", members.join(",")))?;
            llvm_shim::trim_debug_units(&module, *glue);
            let references = references_of(&module);
            let tm = canonical::target_machine(&triple, &cpu, &features, reloc_pic, settings)?;
            let object = tm
                .write_to_memory_buffer(&module, FileType::Object)
                .map_err(|e| anyhow!("generating code for {}: {e}", members.join(",")))?;
            if let Some(d) = sink.first() {
                return Err(super::BackendDiagnostic(d).into());
            }
            let mut object = object.as_slice().to_vec();
            if !*glue {
                unname_file_symbols(&mut object);
            }
            Ok(Fragment {
                members: members.clone(),
                glue: *glue,
                object,
                references,
            })
        })
    };
    // Plain scoped threads, not a rayon pool: this runs inside the driver's
    // rayon workers, and a worker waiting on another pool may steal a
    // queued unit that then blocks on a jobserver token this unit holds.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<std::sync::Mutex<Option<Result<Fragment>>>> = bitcodes
        .iter()
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    let workers = jobs.clamp(1, bitcodes.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..workers {
            std::thread::Builder::new()
                .stack_size(16 << 20)
                .spawn_scoped(scope, || loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(item) = bitcodes.get(i) else { break };
                    let r = emit(item);
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = Some(r);
                    }
                })
                .map_err(|e| anyhow!("starting a code generation worker: {e}"))?;
        }
        Ok::<(), anyhow::Error>(())
    })?;
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

/// Turns the (empty) STT_FILE symbol LLVM writes into every object into an
/// untyped local symbol. A fragment may be reused by any unit, so it cannot
/// name a source file; and a second file symbol in the composed object
/// would make tools such as GNU ld give up attributing global symbols to
/// the unit's file. Edits the ELF64 symbol table in place; anything
/// unexpected leaves the object unchanged.
pub fn unname_file_symbols(object: &mut [u8]) {
    const STT_FILE: u8 = 4;
    const SHT_SYMTAB: u32 = 2;
    let rd16 = |b: &[u8], o: usize| {
        b.get(o..o + 2)
            .map(|s| u16::from_le_bytes([s[0], s[1]]) as usize)
    };
    let rd32 = |b: &[u8], o: usize| {
        b.get(o..o + 4)
            .map(|s| u32::from_le_bytes(s.try_into().unwrap()))
    };
    let rd64 = |b: &[u8], o: usize| {
        b.get(o..o + 8)
            .map(|s| u64::from_le_bytes(s.try_into().unwrap()) as usize)
    };
    // ELF64, little endian.
    if object.get(..6) != Some(&[0x7f, b'E', b'L', b'F', 2, 1][..]) {
        return;
    }
    let (Some(shoff), Some(shentsize), Some(shnum)) =
        (rd64(object, 0x28), rd16(object, 0x3a), rd16(object, 0x3c))
    else {
        return;
    };
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        if rd32(object, sh + 4) != Some(SHT_SYMTAB) {
            continue;
        }
        let (Some(off), Some(size), Some(entsize)) = (
            rd64(object, sh + 0x18),
            rd64(object, sh + 0x20),
            rd64(object, sh + 0x38),
        ) else {
            return;
        };
        if entsize < 24 {
            return;
        }
        let mut at = off;
        while at + entsize <= off + size && at + 24 <= object.len() {
            let info = object[at + 4];
            if info & 0xf == STT_FILE {
                object[at + 4] = info & 0xf0;
            }
            at += entsize;
        }
    }
}
