//! Developer output of stage 6 (`REPOCC_DUMP_FRAGMENT_MODULES=DIR`): the
//! modules of fragments compiled one module each, as bitcode, and a unit's
//! debug fragments linked into one module as carving them out of one code
//! generation would link them, for `benches/debug-batch-probe.py` (see
//! docs/performance.md, "Debug fragments from one code generation").

use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;

use crate::ir::canonical::Unit;
use crate::llvm;

/// With `REPOCC_DUMP_FRAGMENT_MODULES=DIR`, a fragment's module as it is
/// compiled, as bitcode in `DIR`: the input of `benches/debug-batch-probe.py`
/// (how its debug info would come out of one code generation with the
/// unit's other fragments). The file is named after the fragment's first
/// member and a digest of all of them (`members`, joined by commas; names
/// can be long, or repeat in other units). Returns whether it was asked
/// for.
pub(super) fn dump_fragment_module(module: &Module, members: &str) -> bool {
    let Some(dir) = &crate::config::switches().dump_fragment_modules else {
        return false;
    };
    let first: String = (members.split(',').next().unwrap_or(""))
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(96)
        .collect();
    // Not hidden: a constant's name (`.str`, `.rc.<digest>`) starts with a dot.
    let first = first
        .strip_prefix('.')
        .map_or(first.clone(), |rest| format!("_{rest}"));
    let digest = blake3::hash(members.as_bytes()).to_hex();
    let path = dir.join(format!("{first}-{}.bc", &digest[..12]));
    if !module.write_bitcode_to_path(&path) {
        say!("repocc: warning: could not write {}", path.display());
    }
    true
}

/// With `REPOCC_DUMP_FRAGMENT_MODULES=DIR`: the debug fragments compiled in
/// the unit's context (all of them with one job) linked into one module as
/// `llvm::BatchLinker` links them, in `DIR` as `batch-<digest of the
/// unit's source name>.bc`, for `benches/debug-batch-probe.py --batch`.
/// A fragment whose types the batch would merge is left out (see
/// shim/batch.cpp). In a context of its own: the batch shares types by
/// identifier.
pub(super) fn dump_batch(unit: &Unit, fragments: Vec<Option<Vec<u8>>>) {
    let Some(dir) = &crate::config::switches().dump_fragment_modules else {
        return;
    };
    if fragments.is_empty() {
        return;
    }
    let context = Context::create();
    llvm::share_debug_types_by_identifier(&context);
    let batch = context.create_module("batch");
    let mut linker = llvm::BatchLinker::new(&batch);
    let mut left_out = 0;
    for (k, bc) in fragments.iter().enumerate() {
        let Some(bc) = bc else {
            left_out += 1;
            continue;
        };
        let buffer = MemoryBuffer::create_from_memory_range_copy(bc, "fragment");
        let module = match context.create_module_from_ir(buffer) {
            Ok(module) => module,
            Err(e) => {
                say!("repocc: warning: reading a fragment for the batch: {e}");
                return;
            }
        };
        if let Err(e) = linker.link(module, &format!(".repocc.F{k}")) {
            say!("repocc: warning: linking a fragment into the batch: {e}");
            return;
        }
    }
    let digest = blake3::hash(unit.source_name.as_bytes()).to_hex();
    let path = dir.join(format!("batch-{}.bc", &digest[..12]));
    if !batch.write_bitcode_to_path(&path) {
        say!("repocc: warning: could not write {}", path.display());
    }
    say!(
        "repocc: {}: {} debug fragments linked into {} ({left_out} left out: types the batch would merge)",
        unit.source_name,
        fragments.len() - left_out,
        path.display()
    );
}

/// With `REPOCC_DUMP_FRAGMENT_MODULES=DIR`: batch `n` of the unit's debug
/// fragments as `debug_batch` compiles it, in `DIR` as
/// `batch-<digest of the unit's source name>-<n>.bc`.
pub(super) fn dump_compiled_batch(unit: &Unit, n: usize, batch: &Module) {
    let Some(dir) = &crate::config::switches().dump_fragment_modules else {
        return;
    };
    let digest = blake3::hash(unit.source_name.as_bytes()).to_hex();
    let path = dir.join(format!("batch-{}-{n}.bc", &digest[..12]));
    if !batch.write_bitcode_to_path(&path) {
        say!("repocc: warning: could not write {}", path.display());
    }
}
