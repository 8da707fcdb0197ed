//! Stage 2, the canonical form: the frontend's bitcode is parsed from memory
//! into the unit's own context, the TargetMachine clang would use is built
//! from the module (triple, CPU, features, relocation model) and the user's
//! codegen options, and then:
//!
//! - mem2reg promotes stack slots to SSA values;
//! - private unnamed constants (`.str.N`, `__const.f.x`) are named after
//!   their content (identical ones merged), so that their names — which end
//!   up in the fragments that use them — do not shift when an edit adds a
//!   string elsewhere in the file;
//! - internal definitions become hidden external ones for the optimizer, and
//!   are made local again in the object (`compose`). This keeps the
//!   optimizer from rewriting a static function or variable from its users
//!   (constant propagation into arguments, dead-argument elimination,
//!   argument promotion, GlobalOpt's constant folding of never-written
//!   statics, deletion after inlining): each definition's code then depends
//!   on what it uses, never on who uses it, which is what lets an edit
//!   invalidate few fragments (see `digest`). The price is some optimization
//!   clang would do on statics; behaviour is unchanged.
//!
//! Discardable definitions (`linkonce_odr`: C++ inline functions and
//! template instances) stay discardable: the optimizer drops those it
//! inlined everywhere, as clang's does, and pruning and composition make
//! sure the ones stored code still refers to are in the object (see
//! `prune`).
//!
//! The result, [`Unit`], is what the later stages work on.

use std::collections::HashMap;

use anyhow::{anyhow, Context as _, Result};
use inkwell::attributes::AttributeLoc;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{
    CodeModel, InitializationConfig, RelocMode, Target, TargetMachine, TargetTriple,
};
use inkwell::values::{AnyValue, GlobalValue, UnnamedAddress};
use inkwell::GlobalVisibility;
use inkwell::OptimizationLevel;

use crate::ir::settings::{CodeModelSetting, CodegenSettings, OptLevel};
use crate::llvm::{self, ShimTargetOptions};

/// One translation unit in LLVM form, with its TargetMachine.
pub struct Unit<'ctx> {
    pub module: Module<'ctx>,
    pub target_machine: TargetMachine,
    pub source_name: String,
    /// Definitions that were internal or private in the source: local
    /// symbols again in the object.
    pub originally_local: Vec<String>,
    /// Those of them that were private `unnamed_addr` constants (`.str.N`,
    /// `__const.f.x`, renamed by content): clang's object names them `.L…`
    /// where it keeps a symbol at all, and so does the composed one, so
    /// that linkers leave them out of programs as they do clang's (gdb
    /// would otherwise print `<.rc.…>` after a string pointer).
    pub unnamed_locals: Vec<String>,
    /// Local definitions left local because one function alone uses them
    /// (see [`externalize_locals`]): name -> that function. They are in no
    /// fragment of their own and count with their user's.
    pub attached_locals: HashMap<String, String>,
    /// The longest NOP the assembler pads this unit's code with (see
    /// `obj::combine::CodeFill`), taken before pruning leaves functions
    /// without bodies: the same warm as cold.
    pub max_nop: u8,
}

impl Unit<'_> {
    /// The variables whose debug records go apart from them when they are
    /// removed (see `llvm::note_carried_records`), each with the
    /// definition whose fragment lists it, or an empty name for the glue:
    /// each attached local with the end of its chain of sole users, and
    /// each originally local variable nothing uses (the frontend folded
    /// its uses). Sorted.
    pub fn records_kept_apart(&self) -> Vec<(String, String)> {
        let mut carried: Vec<(String, String)> = (self.attached_locals.iter())
            .filter(|(name, _)| self.module.get_global(name).is_some())
            .map(|(name, user)| {
                let mut carrier = user;
                // The chains are at most 16 long (see externalize_locals).
                for _ in 0..16 {
                    match self.attached_locals.get(carrier) {
                        Some(next) => carrier = next,
                        None => break,
                    }
                }
                (name.clone(), carrier.clone())
            })
            .collect();
        carried.extend(
            (self.originally_local.iter())
                .filter(|name| {
                    (self.module.get_global(name)).is_some_and(|g| {
                        !g.is_declaration() && !llvm::is_used(&g.as_pointer_value())
                    })
                })
                .map(|name| (name.clone(), String::new())),
        );
        carried.sort();
        carried
    }
}

pub fn init_targets() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // The targets' options and tables come from the static initializers.
    crate::llvm::initialize();
    ONCE.call_once(|| {
        Target::initialize_x86(&InitializationConfig::default());
        Target::initialize_aarch64(&InitializationConfig::default());
    });
}

/// [`load_code`] of `bitcode`, with mem2reg.
#[cfg(test)]
pub fn load<'ctx>(
    context: &'ctx Context,
    bitcode: &[u8],
    source_name: &str,
    settings: &CodegenSettings,
) -> Result<Unit<'ctx>> {
    load_code(
        context,
        FrontendCode::Bitcode(bitcode),
        source_name,
        settings,
        true,
    )
}

/// [`load_code`] of `bitcode`, as written (without mem2reg).
#[cfg(test)]
pub fn load_as_written<'ctx>(
    context: &'ctx Context,
    bitcode: &[u8],
    source_name: &str,
    settings: &CodegenSettings,
) -> Result<Unit<'ctx>> {
    load_code(
        context,
        FrontendCode::Bitcode(bitcode),
        source_name,
        settings,
        false,
    )
}

/// The unit's code as the frontend produced it: bitcode to parse, or
/// clang's module itself, already in the context it is loaded into.
pub enum FrontendCode<'a, 'ctx> {
    Bitcode(&'a [u8]),
    Module(Module<'ctx>),
}

/// Reads `code` (bitcode is parsed into `context`), builds the
/// TargetMachine and, with `promote`, runs mem2reg.
///
/// Without `promote`, the unit as clang wrote it — constants named and
/// locals externalized exactly as with it, so every definition has the
/// same name, but without mem2reg. At `-O0` this is the code that is
/// generated: the fast instruction selector spills every phi mem2reg
/// made (code up to 2.3x clang's), and mem2reg turns a local's stack slot
/// into SSA values whose debug records describe them only where they are
/// live, so gdb would print `<optimized out>` where clang's build shows
/// the value.
/// Its digests are made of this body too: mem2reg maps two bodies that
/// differ only in the order of their stack slots to one canonical form.
pub fn load_code<'ctx>(
    context: &'ctx Context,
    code: FrontendCode<'_, 'ctx>,
    source_name: &str,
    settings: &CodegenSettings,
    promote: bool,
) -> Result<Unit<'ctx>> {
    init_targets();
    let module = match code {
        FrontendCode::Bitcode(bitcode) => {
            let buffer = MemoryBuffer::create_from_memory_range_copy(bitcode, source_name);
            Module::parse_bitcode_from_buffer(&buffer, context)
                .map_err(|e| anyhow!("reading the bitcode of {source_name}: {e}"))?
        }
        FrontendCode::Module(module) => module,
    };
    let target_machine = target_machine_for(&module, settings)
        .with_context(|| format!("building the target machine for {source_name}"))?;
    // When optimizing, library functions' declarations get the attributes
    // the optimizer's first pass (InferFunctionAttrs) gives them anyway,
    // before the digests read them: `strlen` as `<string.h>` declares it
    // and as clang declares the builtin differ (`memory(read)`, or
    // nothing) until then, and every user of `char_traits<char>::length`
    // had another digest in units that included the header and units that
    // did not. The pass only adds to declarations, and does the same again
    // at the optimizer's start, so the code is the same.
    let passes = match (promote, settings.opt != OptLevel::O0) {
        (true, true) => Some("inferattrs,function(mem2reg)"),
        (true, false) => Some("function(mem2reg)"),
        (false, true) => Some("inferattrs"),
        (false, false) => None,
    };
    if let Some(passes) = passes {
        module
            .run_passes(passes, &target_machine, PassBuilderOptions::create())
            .map_err(|e| anyhow!("{passes} on {source_name}: {e}"))?;
    }
    // Local values print as numbers in the digests' text: the names
    // mem2reg gives (`%.01`) depend on what else a function's symbol table
    // held, which differs between a module clang hands over (whose code it
    // generated with names) and one read from bitcode (without).
    llvm::strip_local_names(&module);
    name_constants_by_content(&module);
    // While statics are still internal (see `externalize_locals`).
    if settings.opt != OptLevel::O0 {
        llvm::mark_unwritten_statics_constant(&module);
    }
    let (originally_local, unnamed_locals, attached_locals) = externalize_locals(&module);
    if settings.opt != OptLevel::O0 {
        inline_static_single_calls(&module, &originally_local);
    }
    let max_nop = llvm::max_nop_bytes(&target_machine, &module);
    Ok(Unit {
        module,
        target_machine,
        source_name: source_name.to_string(),
        originally_local,
        unnamed_locals,
        attached_locals,
        max_nop,
    })
}

/// Renames private `unnamed_addr` constants to `.rc.<digest of content>`,
/// merging duplicates (their addresses are not significant).
fn name_constants_by_content(module: &Module) {
    let mut seen: HashMap<String, GlobalValue> = HashMap::new();
    let globals: Vec<GlobalValue> = module.get_globals().collect();
    for g in globals {
        if g.get_linkage() != Linkage::Private
            || g.get_unnamed_address() != UnnamedAddress::Global
            || !g.is_constant()
            || g.is_declaration()
            || g.is_thread_local()
        {
            continue;
        }
        let Some(init) = g.get_initializer() else {
            continue;
        };
        let mut h = blake3::Hasher::new();
        h.update(init.print_to_string().to_bytes());
        h.update(&g.get_alignment().to_le_bytes());
        if let Some(section) = g.get_section() {
            h.update(b"section ");
            h.update(section.to_bytes());
        }
        let name = format!(".rc.{}", &h.finalize().to_hex()[..32]);
        match seen.get(&name) {
            Some(existing) => {
                g.as_pointer_value()
                    .replace_all_uses_with(existing.as_pointer_value());
                // SAFETY: no uses remain after the replacement.
                unsafe { g.delete() };
            }
            None => {
                g.set_name(&name);
                seen.insert(name, g);
            }
        }
    }
}

/// Makes internal and private definitions hidden external ones; returns
/// their names, separately those of the private `unnamed_addr` constants,
/// and the local definitions left local with their one user.
///
/// A local definition that one function alone uses, where that function
/// cannot be inlined into another (nothing in the unit uses it at all, or
/// it is such a local itself), stays local: whatever the optimizer makes
/// of it from its uses — inlined into its one caller and deleted, as
/// clang's inliner prefers for the last call to a static; constants
/// propagated into it; a never-written variable folded — happens inside
/// that one function, whose fragment carries it (as a local helper) and
/// whose digest covers it, and the digest graph adds the edge back from a
/// local to its user (see `digest`). Where the user could be inlined
/// elsewhere, the local's uses would spread to fragments its digest does
/// not cover (and clang's "last call" bonus would depend on them), so it
/// is externalized as before. lua kept 88 functions clang's build does not
/// have.
fn externalize_locals(module: &Module) -> (Vec<String>, Vec<String>, HashMap<String, String>) {
    let local = |l: Linkage| matches!(l, Linkage::Internal | Linkage::Private);
    // A private `unnamed_addr` constant (a string literal, a `__const.*`)
    // has a user in the initializer of the one variable that holds it too:
    // a table of literals carries them in its fragment, or in that of the
    // function that carries the table (double-conversion's
    // `gay-shortest.cc`, 100,000 literals in one table, made 100,000
    // fragments). Such a constant has no name a debugger could ask for.
    let literal = |g: &inkwell::values::GlobalValue| {
        g.get_linkage() == Linkage::Private
            && g.get_unnamed_address() == UnnamedAddress::Global
            && g.is_constant()
    };
    let users: HashMap<String, llvm::Users> = module
        .get_functions()
        .filter(|f| llvm::has_body(f))
        .map(|f| (f.as_global_value(), false))
        .chain(
            module
                .get_globals()
                .filter(|g| !g.is_declaration())
                .map(|g| (g, literal(&g))),
        )
        .map(|(g, initializers)| {
            (
                g.get_name().to_string_lossy().into_owned(),
                llvm::user_functions(&g, initializers),
            )
        })
        .collect();
    let local_names: std::collections::HashSet<String> = module
        .get_functions()
        .filter(|f| llvm::has_body(f) && local(f.get_linkage()))
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .chain(
            module
                .get_globals()
                .filter(|g| !g.is_declaration() && local(g.get_linkage()))
                .map(|g| g.get_name().to_string_lossy().into_owned()),
        )
        .filter(|n| !n.starts_with("llvm."))
        .collect();
    // name -> its one user, for the locals that stay local: a chain of
    // sole users ending in a function nothing in the unit uses.
    let mut attached: HashMap<String, String> = HashMap::new();
    for name in &local_names {
        // A literal goes with its one user whatever uses that, where that
        // is a table, or a function no call names (its address taken for
        // a table of callbacks): nothing inlines the function, so its
        // literals stay in its fragment alone. (A copy elsewhere would be
        // the same bytes, but the object would hold the literal twice, and
        // the switch tables made of it twice where clang's has one.) Only
        // a user of the unit's own: an inline function's or a template's
        // (in a COMDAT) is shared with other units, where its literal may
        // have other users (`"ETX"` main's too) and then be a constant of
        // its own; its fragment must be the same in each.
        if module.get_global(name).is_some_and(|g| literal(&g)) {
            if let Some(llvm::Users::One(user)) = users.get(name) {
                let function = module.get_function(user);
                let linkage = match function {
                    Some(f) => Some(f.get_linkage()),
                    None => module.get_global(user).map(|g| g.get_linkage()),
                };
                let own = matches!(
                    linkage,
                    Some(Linkage::External | Linkage::Internal | Linkage::Private)
                ) && llvm::comdat_of(module, user).is_none();
                if own && function.is_none_or(|f| !llvm::is_called(&f)) {
                    attached.insert(name.clone(), user.clone());
                    continue;
                }
            }
        }
        let mut chain = vec![name.as_str()];
        let ends_in_a_root = loop {
            let at = *chain.last().unwrap();
            match users.get(at) {
                Some(llvm::Users::Nothing) if chain.len() > 1 => break true,
                Some(llvm::Users::One(user))
                    if chain.len() < 16
                        && !chain.contains(&user.as_str())
                        && (local_names.contains(user)
                            || users.get(user) == Some(&llvm::Users::Nothing)) =>
                {
                    chain.push(user.as_str());
                }
                _ => break false,
            }
        };
        if ends_in_a_root {
            attached.insert(name.clone(), chain[1].to_string());
        }
    }
    let mut names = Vec::new();
    let mut private = Vec::new();
    for f in module.get_functions() {
        let linkage = f.get_linkage();
        let name = f.get_name().to_string_lossy().into_owned();
        if llvm::has_body(&f) && local(linkage) && !attached.contains_key(&name) {
            let g = f.as_global_value();
            g.set_linkage(Linkage::External);
            g.set_visibility(GlobalVisibility::Hidden);
            names.push(name);
        }
    }
    for g in module.get_globals() {
        let name = g.get_name().to_string_lossy().into_owned();
        if !g.is_declaration()
            && local(g.get_linkage())
            && !name.starts_with("llvm.")
            && !attached.contains_key(&name)
        {
            // Only constants whose address means nothing: a fragment that
            // declares one cannot say so (see `obj::combine`). Asked before
            // the linkage changes.
            if literal(&g) {
                private.push(name.clone());
            }
            g.set_linkage(Linkage::External);
            g.set_visibility(GlobalVisibility::Hidden);
            names.push(name);
        }
    }
    names.extend(llvm::externalize_local_aliases(module));
    (names, private, attached)
}

/// Largest static (in instructions, with the `alwaysinline` functions it
/// calls) marked for inlining into its one call: clang's bonus for the
/// last call to a static (15,000 on a threshold of 225, about 5 per
/// instruction) stops at about this size.
const SINGLE_CALL_INLINE_LIMIT: usize = 3000;

/// Marks `alwaysinline` the statics made hidden (`externalized`) that have
/// exactly one call site: clang's inliner gives the last call to a static
/// a bonus that inlines it almost whatever its size, and then drops the
/// static; a hidden function gets no such bonus, so lua kept functions
/// such as lparser.c's `forstat` (called from `statement` only) that
/// clang's build does not have. The attribute is in the IR the digests
/// are made of, so a second call added elsewhere (which takes it away)
/// changes the static's digest and recompiles its caller, as it changes
/// the caller's code in clang's build.
fn inline_static_single_calls(module: &Module, externalized: &[String]) {
    let kind = inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline");
    for name in externalized {
        let Some(f) = module.get_function(name) else {
            continue;
        };
        // Sized (a walk of its body) only once the cheap checks pass, with
        // what it inlines itself (zstd's `FORCE_INLINE` helpers): a static
        // grown past clang's bonus stays a function there.
        if f.get_enum_attribute(AttributeLoc::Function, kind).is_none()
            && llvm::has_one_call_site(&f)
            && llvm::inlined_size(&f) <= SINGLE_CALL_INLINE_LIMIT
        {
            let attribute = module.get_context().create_enum_attribute(kind, 0);
            f.add_attribute(AttributeLoc::Function, attribute);
        }
    }
}

/// The most common value of a string function attribute among the module's
/// definitions: clang writes its command-line CPU and features on every
/// function, and only `__attribute__((target))` functions differ.
fn common_function_attribute(module: &Module, name: &str) -> Option<String> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut first: Vec<String> = Vec::new();
    for f in module.get_functions() {
        if !llvm::has_body(&f) {
            continue;
        }
        if let Some(a) = f.get_string_attribute(AttributeLoc::Function, name) {
            let v = a.get_string_value().to_string_lossy().into_owned();
            let c = counts.entry(v.clone()).or_insert(0);
            if *c == 0 {
                first.push(v);
            }
            *c += 1;
        }
    }
    let best = counts.values().copied().max()?;
    first.into_iter().find(|v| counts[v] == best)
}

pub fn codegen_opt_level(opt: OptLevel) -> OptimizationLevel {
    match opt {
        OptLevel::O0 => OptimizationLevel::None,
        OptLevel::O1 => OptimizationLevel::Less,
        OptLevel::O2 | OptLevel::Os | OptLevel::Oz => OptimizationLevel::Default,
        OptLevel::O3 => OptimizationLevel::Aggressive,
    }
}

/// The TargetMachine clang's BackendUtil would create for this module.
pub fn target_machine_for(module: &Module, settings: &CodegenSettings) -> Result<TargetMachine> {
    let triple = module.get_triple();
    let triple_str = triple.as_str().to_string_lossy().into_owned();
    let cpu = common_function_attribute(module, "target-cpu").unwrap_or_default();
    let features = common_function_attribute(module, "target-features").unwrap_or_default();
    // clang emits "PIC Level" exactly when it compiles position-independent
    // code (-fPIC, -fPIE, or the default PIE).
    let pic = module.get_flag("PIC Level").is_some();
    target_machine(&triple_str, &cpu, &features, pic, settings)
}

/// A TargetMachine with clang's options for the given target.
pub fn target_machine(
    triple_str: &str,
    cpu: &str,
    features: &str,
    pic: bool,
    settings: &CodegenSettings,
) -> Result<TargetMachine> {
    init_targets();
    let triple = if triple_str.is_empty() {
        TargetMachine::get_default_triple()
    } else {
        TargetTriple::create(triple_str)
    };
    let target = Target::from_triple(&triple).map_err(|e| anyhow!("{e}"))?;
    let reloc = if pic {
        RelocMode::PIC
    } else {
        RelocMode::Static
    };
    let code_model = match settings.code_model {
        CodeModelSetting::Default => CodeModel::Default,
        CodeModelSetting::Small => CodeModel::Small,
        CodeModelSetting::Kernel => CodeModel::Kernel,
        CodeModelSetting::Medium => CodeModel::Medium,
        CodeModelSetting::Large => CodeModel::Large,
    };
    let tm = target
        .create_target_machine(
            &triple,
            cpu,
            features,
            codegen_opt_level(settings.opt),
            reloc,
            code_model,
        )
        .ok_or_else(|| anyhow!("LLVM has no target machine for {triple_str} ({cpu})"))?;
    llvm::set_target_options(
        &tm,
        &ShimTargetOptions {
            function_sections: settings.function_sections as i32,
            data_sections: settings.data_sections as i32,
            unique_section_names: settings.unique_section_names as i32,
            emit_addrsig: settings.addrsig as i32,
            use_init_array: settings.use_init_array as i32,
            // clang: call-site info for debug entry values at -O1 and above
            // with full debug info.
            emit_call_site_info: (settings.debug_info && settings.opt != OptLevel::O0) as i32,
            debugger_tuning_gdb: 1,
            large_data_threshold: settings.large_data_threshold,
        },
    );
    Ok(tm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-O0 -g` bitcode of `source`, as the frontend asks for it.
    fn o0_debug_bitcode(source: &str) -> Vec<u8> {
        bitcode_with(source, &["-O0", "-g", "-Xclang", "-disable-O0-optnone"])
    }

    /// clang's bitcode for `source` before its optimizer runs.
    fn bitcode_with(source: &str, flags: &[&str]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("t.c");
        std::fs::write(&src, source).unwrap();
        let out = std::process::Command::new("clang-19")
            .args(flags)
            .args(["-Xclang", "-disable-llvm-passes", "-c", "-emit-llvm"])
            .args(["-o", "-"])
            .arg(&src)
            .output()
            .expect("clang-19");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    }

    fn definitions(unit: &Unit) -> Vec<String> {
        let mut names: Vec<String> = unit
            .module
            .get_functions()
            .filter(|f| llvm::has_body(f))
            .map(|f| f.get_name().to_string_lossy().into_owned())
            .chain(
                unit.module
                    .get_globals()
                    .filter(|g| !g.is_declaration())
                    .map(|g| g.get_name().to_string_lossy().into_owned()),
            )
            .collect();
        names.sort();
        names
    }

    #[test]
    fn file_checksums_are_stripped_everywhere() {
        let bitcode = o0_debug_bitcode(
            "struct point { int x, y; };\n\
             static struct point origin;\n\
             int norm(struct point p) { int s = p.x * p.x; return s + p.y * p.y; }\n\
             int far(void) { return norm(origin) > 4; }\n",
        );
        let settings = CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let unit = load(&context, &bitcode, "t.c", &settings).unwrap();
        let before = unit.module.print_to_string().to_string();
        assert!(before.contains("checksumkind: CSK_MD5"), "{before}");
        assert!(crate::llvm::strip_file_checksums(&unit.module) >= 1);
        let after = unit.module.print_to_string().to_string();
        assert!(!after.contains("checksum"), "{after}");
        assert!(after.contains("!DIFile(filename:"), "{after}");
        unit.module.verify().unwrap();
        // Nothing left to strip.
        assert_eq!(crate::llvm::strip_file_checksums(&unit.module), 0);

        // C++: member declarations reached only through a class and the
        // definitions that name them.
        let bitcode = bitcode_with(
            "#include <vector>\n\
             int first(const std::vector<int> &v) { return *v.begin() + (int)v.size(); }\n",
            &["-x", "c++", "-O0", "-g", "-Xclang", "-disable-O0-optnone"],
        );
        let unit = load(&context, &bitcode, "t.cc", &settings).unwrap();
        assert!(crate::llvm::strip_file_checksums(&unit.module) >= 1);
        let after = unit.module.print_to_string().to_string();
        let left: Vec<&str> = after.lines().filter(|l| l.contains("checksum")).collect();
        assert!(left.is_empty(), "{left:?}");
        unit.module.verify().unwrap();
    }

    #[test]
    fn the_types_clang_declares_itself_name_no_file() {
        // `__uint128_t` and `__va_list_tag` have no line and name the
        // unit's source: without the file, a function using them is the
        // same in every unit.
        let bitcode = bitcode_with(
            "#include <cstdarg>\n\
             inline unsigned long high(__uint128_t x) { return (unsigned long)(x >> 64); }\n\
             inline int first(int n, ...) { va_list ap; va_start(ap, n); int r = va_arg(ap, int); va_end(ap); return r; }\n\
             unsigned long use(unsigned long a) { return high((__uint128_t)a * a) + first(1, 2); }\n",
            &["-x", "c++", "-O0", "-g", "-Xclang", "-disable-O0-optnone"],
        );
        let settings = CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let unit = load(&context, &bitcode, "t.cc", &settings).unwrap();
        let builtin_with_file = |text: &str| -> Vec<String> {
            let files: Vec<&str> = text
                .lines()
                .filter(|l| l.contains("!DIFile(filename: \"") && l.contains("/t.c\""))
                .filter_map(|l| l.split(" = ").next())
                .collect();
            text.lines()
                .filter(|l| {
                    l.contains("name: \"__uint128_t\"")
                        || l.contains("name: \"__va_list_tag\"")
                        || l.contains("name: \"gp_offset\"")
                })
                .filter(|l| files.iter().any(|f| l.contains(&format!("file: {f},"))))
                .map(str::to_string)
                .collect()
        };
        let before = unit.module.print_to_string().to_string();
        // (`__va_list_tag` itself names no file in C++; its members do.)
        assert_eq!(builtin_with_file(&before).len(), 2, "{before}");
        crate::llvm::strip_file_checksums(&unit.module);
        let after = unit.module.print_to_string().to_string();
        assert_eq!(builtin_with_file(&after), Vec::<String>::new());
        for name in ["__uint128_t", "__va_list_tag", "gp_offset"] {
            assert!(
                after.contains(&format!("name: \"{name}\"")),
                "{name}: {after}"
            );
        }
        // The unit's own definitions keep their file.
        assert!(after
            .lines()
            .any(|l| l.contains("!DISubprogram(name: \"use\"") && l.contains("file: !")));
        unit.module.verify().unwrap();

        // The declaration of a builtin clang calls (for call sites, when
        // optimizing) takes its first call's file and line; it keeps its
        // name and type only.
        let bitcode = bitcode_with(
            "inline int same(const char *a, const char *b) { return __builtin_memcmp(a, b, 4); }\n\
             int use(const char *a) { return same(a, \"abcd\"); }\n",
            &["-x", "c++", "-O1", "-g", "-Xclang", "-disable-llvm-passes"],
        );
        let unit = load(&context, &bitcode, "t.cc", &settings).unwrap();
        let builtin = |text: &str| -> String {
            (text.lines())
                .find(|l| l.contains("!DISubprogram(name: \"__builtin_memcmp\""))
                .unwrap_or_default()
                .to_string()
        };
        let before = builtin(&unit.module.print_to_string().to_string());
        assert!(
            before.contains("line: 1,") && before.contains("DIFlagArtificial"),
            "{before}"
        );
        crate::llvm::strip_file_checksums(&unit.module);
        let text = unit.module.print_to_string().to_string();
        let after = builtin(&text);
        assert!(
            after.contains("type: !") && after.contains("DIFlagArtificial"),
            "{after}"
        );
        assert!(
            !after.contains("file:") && !after.contains("line:") && !after.contains("scope: !"),
            "{after}"
        );
        assert!(text.contains("declare !dbg"), "{text}");
        unit.module.verify().unwrap();
    }

    #[test]
    fn library_declarations_read_as_the_optimizer_sees_them() {
        // `strlen` declared by <string.h> (pure: `memory(read)`) and as
        // clang declares the builtin (no memory effects) become the same
        // declaration, so a header's function calling it has one digest.
        let source = "inline unsigned long len(const char *s) { return __builtin_strlen(s); }\n\
                      unsigned long use(const char *s) { return len(s); }\n";
        let settings = CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let digest_of_len = |source: &str| {
            let bitcode = bitcode_with(
                source,
                &["-x", "c++", "-O2", "-Xclang", "-disable-llvm-passes"],
            );
            let raw = crate::llvm::test_context();
            let module = {
                let buffer = MemoryBuffer::create_from_memory_range_copy(&bitcode, "t.cc");
                Module::parse_bitcode_from_buffer(&buffer, &raw).unwrap()
            };
            // The declaration and its attribute group, as clang wrote them.
            let text = module.print_to_string().to_string();
            let line = |prefix: &str| {
                let found = text.lines().find(|l| l.starts_with(prefix));
                found.unwrap_or_default().to_string()
            };
            let declaration = line("declare i64 @strlen(");
            let group = declaration.rsplit(' ').next().unwrap_or_default();
            let before = format!("{declaration}\n{}", line(&format!("attributes {group} ")));
            let unit = load(&context, &bitcode, "t.cc", &settings).unwrap();
            let text = unit.module.print_to_string().to_string();
            let digests = crate::ir::digest::digest_module(
                &text,
                &[],
                crate::ir::digest::Inlining::Optimizing,
                crate::ir::digest::Lines::Absolute,
            )
            .unwrap();
            let len = digests
                .defs
                .iter()
                .find(|d| d.name == "_Z3lenPKc")
                .expect("len")
                .final_digest;
            (before, len)
        };
        let (alone, alone_digest) = digest_of_len(source);
        // (The first use makes the declaration: here `strlen` itself.)
        let (with_header, header_digest) = digest_of_len(&format!(
            "#include <string.h>\nunsigned long direct(const char *s) {{ return strlen(s); }}\n{source}"
        ));
        // As clang wrote them, the declarations differ.
        assert_ne!(alone, with_header);
        assert_eq!(alone_digest, header_digest, "{alone}\n{with_header}");
    }

    /// A table of string literals carries them (one fragment, not one per
    /// literal), whether one function alone uses it, no function of the
    /// unit does, or a function called twice in the unit reads it (the
    /// table is then a definition of its own); a literal two tables hold
    /// is a definition of its own. A function's literals stay with it
    /// where no call names it.
    #[test]
    fn literals_of_one_table_stay_with_it() {
        let bitcode = bitcode_with(
            "static const char *const table[] = {\"alpha\", \"beta\", \"both\"};\n\
             static const char *const other[] = {\"both\", \"gamma\"};\n\
             const char *const exported[] = {\"delta\", \"epsilon\"};\n\
             const char *pick(int i) { return table[i]; }\n\
             static const char *inner(int i) { return other[i]; }\n\
             const char *outer(int i) { return inner(i); }\n\
             const char *again(int i) { return inner(i + 1); }\n\
             const char *label(int i) { return i ? \"yes\" : \"no\"; }\n\
             const char *twice(int i) { return label(i + 1); }\n\
             static const char *hook(void) { return \"callback\"; }\n\
             const char *(*const hooks[])(void) = {hook};\n",
            &["-O2"],
        );
        let settings = CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let unit = load(&context, &bitcode, "t.c", &settings).unwrap();
        let attached = |user: &str| {
            let mut held: Vec<&str> = (unit.attached_locals.iter())
                .filter(|(_, u)| u.as_str() == user)
                .map(|(l, _)| l.as_str())
                .collect();
            held.sort_unstable();
            held
        };
        // `alpha`, `beta` with `table`, and `table` with `pick`.
        assert_eq!(attached("table").len(), 2, "{:?}", unit.attached_locals);
        assert_eq!(attached("pick"), ["table"], "{:?}", unit.attached_locals);
        assert_eq!(attached("exported").len(), 2, "{:?}", unit.attached_locals);
        // `other`'s user `inner` has two callers: `other` is a definition
        // of its own, and `gamma` goes with it. `both` (in two tables) is
        // a constant of its own, named by content.
        assert_eq!(attached("other").len(), 1, "{:?}", unit.attached_locals);
        assert!(!unit.attached_locals.contains_key("other"));
        let named_by_content = unit
            .unnamed_locals
            .iter()
            .filter(|n| n.starts_with(".rc."))
            .count();
        // A function called in the unit may be inlined: its literals
        // (`yes`, `no`) are constants of their own. `hook` is only in a
        // table: its literal stays with it.
        assert_eq!(named_by_content, 3, "{:?}", unit.unnamed_locals);
        assert_eq!(attached("hook").len(), 1, "{:?}", unit.attached_locals);
        assert!(attached("label").is_empty(), "{:?}", unit.attached_locals);
    }

    #[test]
    fn the_unit_as_written_keeps_stack_slots_and_every_name() {
        let bitcode = o0_debug_bitcode(
            "static const char *name(int i) { const char *s = i ? \"one\" : \"two\"; return s; }\n\
             static int counter;\n\
             static int once(void) { return 7; }\n\
             int f(int a) { int local = a * 2; counter += local; return name(local)[0] + once(); }\n\
             int g(void) { return counter + name(0)[1] + \"one\"[2] + \"two\"[0]; }\n",
        );
        let settings = CodegenSettings::plain_o2();
        let context = crate::llvm::test_context();
        let canonical = load(&context, &bitcode, "t.c", &settings).unwrap();
        let written = load_as_written(&context, &bitcode, "t.c", &settings).unwrap();
        // The same definitions under the same names (constants named by
        // content, statics externalized), so digests of the one name the
        // code of the other.
        assert_eq!(definitions(&canonical), definitions(&written));
        assert_eq!(canonical.originally_local, written.originally_local);
        assert_eq!(canonical.unnamed_locals, written.unnamed_locals);
        assert_eq!(canonical.attached_locals, written.attached_locals);
        // `once` has one user: it stays local, with it.
        assert_eq!(
            canonical.attached_locals.get("once").map(String::as_str),
            Some("f")
        );
        assert!(!canonical.originally_local.iter().any(|n| n == "once"));
        // The string constant was private: unnamed; the static variable not.
        assert_eq!(
            canonical.unnamed_locals.len(),
            2,
            "{:?}",
            canonical.unnamed_locals
        );
        assert!(canonical
            .unnamed_locals
            .iter()
            .all(|n| n.starts_with(".rc.")));
        assert!(canonical.originally_local.iter().any(|n| n == "counter"));
        let f = |u: &Unit| {
            u.module
                .get_function("f")
                .unwrap()
                .print_to_string()
                .to_string()
        };
        // The locals' stack slots, described by dbg.declare, stay where
        // clang put them; the canonical form has promoted them.
        assert!(f(&written).contains("alloca"), "{}", f(&written));
        assert!(!f(&canonical).contains("alloca"), "{}", f(&canonical));
    }

    /// `source` loaded as at `-O0` (optimizable: no `optnone`).
    fn load_o0<'ctx>(context: &'ctx Context, source: &str) -> Unit<'ctx> {
        let mut o0 = CodegenSettings::plain_o2();
        o0.opt = OptLevel::O0;
        let bitcode = bitcode_with(source, &["-O0", "-Xclang", "-disable-O0-optnone"]);
        load(context, &bitcode, "t.c", &o0).unwrap()
    }

    #[test]
    fn a_static_called_once_is_inlined_as_clang_would() {
        let source = "static int once(int x) { return x * 3 + 1; }\n\
             static int twice(int x) { return x - 7; }\n\
             static int __attribute__((noinline)) kept(int x) { return x ^ 5; }\n\
             static int __attribute__((target(\"bmi2\"))) fast(int x) { return x << (x & 7); }\n\
             int f(int a) { return once(a) + twice(a) + kept(a) + (a > 3 ? fast(a) : 0); }\n\
             int g(int a) { return twice(a + 1); }\n\
             int h(int a) { return kept(a) + f(a); }\n\
             static int search(int *t, int n) { int s = 0; for (int i = 0; i < n; i++) s += t[i] * i; return s; }\n\
             static inline __attribute__((always_inline)) int wrapper(int *t, int n) { return search(t, n) + 1; }\n\
             int v1(int *t) { return wrapper(t, 4); }\n\
             int v2(int *t) { return wrapper(t, 8); }\n";
        let inlined = |u: &Unit, name: &str| {
            let kind = inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline");
            u.module
                .get_function(name)
                .unwrap()
                .get_enum_attribute(AttributeLoc::Function, kind)
                .is_some()
        };
        let context = crate::llvm::test_context();
        let settings = CodegenSettings::plain_o2();
        let unit = load(&context, &bitcode_with(source, &["-O2"]), "t.c", &settings).unwrap();
        // `once` has one call, from `f`, which `h` could inline: it is
        // externalized, and marked; `twice` has two calls; `kept` says
        // noinline; `fast` is compiled for another target.
        assert!(unit.originally_local.iter().any(|n| n == "once"));
        assert!(inlined(&unit, "once"));
        assert!(!inlined(&unit, "twice"));
        assert!(!inlined(&unit, "kept"));
        // Another target: clang's inliner would not inline it.
        assert!(!inlined(&unit, "fast"));
        // `search` is called once, from an always-inline function that
        // two functions call: clang's always-inliner copies the call into
        // both first, so its inliner sees two calls and keeps `search`.
        assert!(!inlined(&unit, "search"));
        // At -O0 nothing is inlined (clang marks every function noinline).
        let unit = load_o0(&context, source);
        assert!(!inlined(&unit, "once"));
    }

    #[test]
    fn statics_nothing_writes_are_constant_as_clang_makes_them() {
        let source = "static int table[4] = {1, 2, 3, 4};\n\
             static int counter;\n\
             static int handed_out[2];\n\
             void sink(int *);\n\
             int get(int i) { return table[i & 3]; }\n\
             int other(int i) { return table[(i + 1) & 3]; }\n\
             void bump(void) { counter++; }\n\
             int read_counter(void) { return counter; }\n\
             void leak(void) { sink(handed_out); }\n\
             int read_handed_out(void) { return handed_out[1]; }\n";
        let context = crate::llvm::test_context();
        let constant = |u: &Unit, name: &str| u.module.get_global(name).unwrap().is_constant();
        let unit = load(
            &context,
            &bitcode_with(source, &["-O2"]),
            "t.c",
            &CodegenSettings::plain_o2(),
        )
        .unwrap();
        // Never written: constant (and still externalized as a static).
        assert!(constant(&unit, "table"));
        assert!(unit.originally_local.iter().any(|n| n == "table"));
        // Written, or handed to code that may write it: not.
        assert!(!constant(&unit, "counter"));
        assert!(!constant(&unit, "handed_out"));
        // At -O0 clang runs no GlobalOpt: nothing changes.
        let unit = load_o0(&context, source);
        assert!(!constant(&unit, "table"));
    }
}
