//! Classification and planning: from a split command line to what repocc
//! will do — compile N translation units through the pipeline (and maybe
//! link), run the link only, or hand the invocation to clang unchanged.
//!
//! The plan is fixed input for the executor (`driver/mod.rs`); nothing here
//! runs a process or writes a file.

use std::path::{Path, PathBuf};

use super::args::{Arg, Role};
pub use crate::ir::settings::{CodeModelSetting, CodegenSettings, OptLevel};
use crate::repo::stats::{Category, Reason};

/// Source languages repocc compiles itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    C,
    Cxx,
    /// `.i`: preprocessed C.
    CPreprocessed,
    /// `.ii`: preprocessed C++.
    CxxPreprocessed,
}

impl Lang {
    /// The `-x` spelling of the language.
    pub fn x_name(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Cxx => "c++",
            Lang::CPreprocessed => "cpp-output",
            Lang::CxxPreprocessed => "c++-cpp-output",
        }
    }
}

/// Whether a unit's language (its `-x` name) is C, preprocessed or not.
pub fn is_c(language: &str) -> bool {
    language == Lang::C.x_name() || language == Lang::CPreprocessed.x_name()
}

/// What an input file is, by `-x` or by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum InputKind {
    Source(Lang),
    /// A source repocc leaves to clang (assembler, Objective-C, headers...).
    Foreign,
    Linker,
}

fn kind_from_extension(path: &str) -> InputKind {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    match ext {
        "c" => InputKind::Source(Lang::C),
        "i" => InputKind::Source(Lang::CPreprocessed),
        "cc" | "cp" | "cxx" | "cpp" | "CPP" | "c++" | "C" => InputKind::Source(Lang::Cxx),
        "ii" => InputKind::Source(Lang::CxxPreprocessed),
        "s" | "S" | "sx" | "asm" | "m" | "mm" | "M" | "mi" | "mii" | "h" | "hh" | "hpp" | "hxx"
        | "H" | "h++" | "tcc" | "cu" | "cl" | "cppm" | "ixx" | "pcm" | "ll" | "bc" | "f"
        | "f90" | "F" | "for" | "ads" | "adb" | "go" | "d" | "hip" => InputKind::Foreign,
        _ => InputKind::Linker,
    }
}

fn kind_from_x(lang: &str) -> Option<InputKind> {
    Some(match lang {
        "c" => InputKind::Source(Lang::C),
        "c++" => InputKind::Source(Lang::Cxx),
        "cpp-output" => InputKind::Source(Lang::CPreprocessed),
        "c++-cpp-output" => InputKind::Source(Lang::CxxPreprocessed),
        "none" => return None,
        _ => InputKind::Foreign,
    })
}

/// What clang would set from these arguments (see [`CodegenSettings`]).
/// The error names the value clang rejects.
fn codegen_settings_from_args(args: &[Arg]) -> Result<CodegenSettings, String> {
    let mut opt = OptLevel::O0;
    let mut toggles: Vec<(&str, bool)> = Vec::new();
    let mut code_model = CodeModelSetting::Default;
    let mut debug_info = false;
    for a in args {
        let Arg::Opt {
            spec, value, raw, ..
        } = a
        else {
            continue;
        };
        match *spec {
            "-O" => {
                let v = value.as_deref().unwrap_or("");
                opt = OptLevel::parse(v).ok_or_else(|| format!("-O{v}"))?;
            }
            "-mcmodel=" => {
                code_model = match value.as_deref().unwrap_or("") {
                    "small" => CodeModelSetting::Small,
                    "kernel" => CodeModelSetting::Kernel,
                    "medium" => CodeModelSetting::Medium,
                    "large" => CodeModelSetting::Large,
                    other => return Err(format!("-mcmodel={other}")),
                }
            }
            // Full debug info (clang's LimitedDebugInfo or more); line
            // tables alone do not count.
            "-g" | "-g2" | "-g3" | "-ggdb" | "-ggdb2" | "-ggdb3" | "-gdwarf" | "-gdwarf-2"
            | "-gdwarf-3" | "-gdwarf-4" | "-gdwarf-5" => debug_info = true,
            "-g0"
            | "-ggdb0"
            | "-g1"
            | "-ggdb1"
            | "-gline-tables-only"
            | "-gline-directives-only" => debug_info = false,
            s if s.starts_with("-f") => {
                let name = raw[0].as_str();
                let (on, stem) = match name.strip_prefix("-fno-") {
                    Some(stem) => (false, stem),
                    None => (true, &name[2..]),
                };
                toggles.push((stem, on));
            }
            _ => {}
        }
    }
    let last = |names: &[&str], default: bool| {
        toggles
            .iter()
            .rev()
            .find(|(n, _)| names.contains(n))
            .map_or(default, |&(_, on)| on)
    };
    // clang's shouldEnableVectorizerAtOLevel and UnrollLoops defaults.
    let (vec_default, slp_default) = match opt {
        OptLevel::O0 | OptLevel::O1 => (false, false),
        OptLevel::Oz => (false, true),
        _ => (true, true),
    };
    Ok(CodegenSettings {
        opt,
        function_sections: last(&["function-sections"], false),
        data_sections: last(&["data-sections"], false),
        unique_section_names: last(&["unique-section-names"], true),
        addrsig: last(&["addrsig"], true),
        use_init_array: last(&["use-init-array"], true),
        vectorize_loops: last(&["vectorize", "tree-vectorize"], vec_default),
        vectorize_slp: last(&["slp-vectorize", "tree-slp-vectorize"], slp_default),
        unroll_loops: last(&["unroll-loops"], opt.numeric() > 1),
        code_model,
        // clang's driver default for x86-64 (other targets ignore it).
        large_data_threshold: match code_model {
            CodeModelSetting::Medium => 65536,
            _ => 0,
        },
        debug_info,
    })
}

/// One translation unit to compile through the pipeline.
#[derive(Clone, Debug)]
pub struct UnitPlan {
    pub source: String,
    /// The arguments for the frontend invocation (after the clang binary).
    pub frontend_args: Vec<String>,
    /// Where the object goes: the user's `-o`, `x.o`, or a temporary file
    /// for a compile-and-link.
    pub output: PathBuf,
    /// The dependency file this unit's frontend writes, if it must be
    /// discarded (a later unit writes the same path, as with clang).
    pub discard_dependency_file: bool,
    /// The frontend arguments without the source, `-x` and the dependency
    /// options: what decides the include search list (see `unit_cache`).
    pub search_options: Vec<String>,
    /// `search_options` without those that cannot change the include
    /// search list (see [`affects_include_search`]): the key of the list.
    pub include_search_options: Vec<String>,
    /// The unit's language, as `-x` names it.
    pub language: &'static str,
}

/// The link after compiling: clang with the original arguments, sources
/// replaced by their objects.
#[derive(Clone, Debug)]
pub struct LinkPlan {
    /// Arguments; `None` entries are where unit `i`'s object goes.
    pub args: Vec<LinkArg>,
}

#[derive(Clone, Debug)]
pub enum LinkArg {
    Plain(String),
    UnitObject(usize),
}

#[derive(Clone, Debug)]
pub struct CompilePlan {
    pub units: Vec<UnitPlan>,
    pub link: Option<LinkPlan>,
    pub codegen: CodegenSettings,
    /// Any debug information is asked for (line tables included).
    pub debug_any: bool,
    /// The objects are ELF64 (x86-64, AArch64), whose debug information
    /// repocc's ELF code reads; not with `-m32` or an i386 target.
    pub elf64_objects: bool,
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Compile through the pipeline (and link if `link` is set).
    Compile(CompilePlan),
    /// No sources: clang links the inputs, arguments unchanged.
    LinkOnly,
    /// Run clang with the original arguments, for this reason.
    Passthrough(Reason),
}

/// Where compile-and-link units put their objects.
pub trait TempObjects {
    fn object_path(&self, index: usize, source: &str) -> PathBuf;
}

/// Classifies `args` (already response-file expanded) and plans the work.
/// `cwd` resolves relative paths for existence checks only.
pub fn plan(args: &[Arg], cwd: &Path, temps: &dyn TempObjects) -> Plan {
    match plan_inner(args, cwd, temps) {
        Ok(p) => p,
        Err(reason) => Plan::Passthrough(reason),
    }
}

fn plan_inner(args: &[Arg], cwd: &Path, temps: &dyn TempObjects) -> Result<Plan, Reason> {
    let cl = CommandLine::scan(args)?;
    let CommandLine {
        compile_only,
        ref output,
        dep_requested,
        has_mf,
        ref inputs,
        ..
    } = cl;
    let codegen =
        codegen_settings_from_args(args).map_err(|v| Reason::new(Category::InvalidValue, v))?;

    if inputs.is_empty() {
        return Err(Reason::new(Category::CommandLine, "no input files"));
    }
    if inputs.iter().any(|(_, _, k)| *k == InputKind::Foreign) {
        return Err(Reason::new(
            Category::InputLanguage,
            "an input repocc leaves to clang",
        ));
    }
    for (_, path, _) in inputs {
        if !cwd.join(path).exists() {
            return Err(Reason::new(Category::MissingInput, path.clone()));
        }
    }
    if output.as_deref() == Some("-") {
        return Err(Reason::new(Category::StandardStream, "output to stdout"));
    }
    let sources: Vec<(usize, String, Lang)> = inputs
        .iter()
        .filter_map(|(i, p, k)| match k {
            InputKind::Source(l) => Some((*i, p.clone(), *l)),
            _ => None,
        })
        .collect();
    let has_linker_inputs = sources.len() < inputs.len();
    let preprocessed = |l: &Lang| matches!(l, Lang::CPreprocessed | Lang::CxxPreprocessed);
    if sources.iter().any(|(_, _, l)| preprocessed(l))
        && sources.iter().any(|(_, _, l)| !preprocessed(l))
    {
        return Err(Reason::new(
            Category::MixedInputs,
            "preprocessed and unpreprocessed sources",
        ));
    }

    if sources.is_empty() {
        return if compile_only {
            Err(Reason::new(Category::CommandLine, "-c without sources"))
        } else {
            Ok(Plan::LinkOnly)
        };
    }
    if compile_only && has_linker_inputs {
        return Err(Reason::new(Category::CommandLine, "-c with linker inputs"));
    }
    if compile_only && sources.len() > 1 && output.is_some() {
        return Err(Reason::new(
            Category::CommandLine,
            "-o with several outputs",
        ));
    }

    // Output paths.
    let outputs: Vec<PathBuf> = sources
        .iter()
        .enumerate()
        .map(|(n, (_, src, _))| {
            if !compile_only {
                temps.object_path(n, src)
            } else if let Some(o) = output {
                PathBuf::from(o)
            } else {
                PathBuf::from(object_name_for(src))
            }
        })
        .collect();
    if compile_only {
        for out in &outputs {
            check_output_writable(&cwd.join(out))?;
        }
    }

    let mut units: Vec<UnitPlan> = (sources.iter().zip(outputs))
        .map(|(source, output)| cl.unit_plan(args, source, output))
        .collect();
    // Several units writing one dependency file: clang runs them in order,
    // so the last one's file is what remains.
    if dep_requested && (has_mf || output.is_some()) {
        let last = units.len() - 1;
        for u in &mut units[..last] {
            u.discard_dependency_file = true;
        }
    }
    let link = (!compile_only).then(|| link_plan(args, &sources));
    Ok(Plan::Compile(CompilePlan {
        units,
        link,
        codegen,
        debug_any: debug_any(args),
        elf64_objects: elf64_objects(args),
    }))
}

/// Whether repocc's pipeline can build code for `triple`: the LLVM targets
/// it initializes (`ir/canonical.rs`) are x86 and AArch64. Any other
/// architecture goes to clang-19 whole rather than failing in the
/// pipeline and warning on every unit.
fn pipeline_supports_target(triple: &str) -> bool {
    let arch = triple.split('-').next().unwrap_or("").to_ascii_lowercase();
    // x32 and ILP32: ELF32 objects of a 64-bit machine, which repocc's
    // ELF code does not read.
    let environment = triple.rsplit('-').next().unwrap_or("").to_ascii_lowercase();
    if environment.ends_with("x32") || environment.ends_with("ilp32") {
        return false;
    }
    is_i386(&arch)
        || matches!(
            arch.as_str(),
            "x86_64" | "amd64" | "x86_64h" | "aarch64" | "arm64" | "aarch64_be"
        )
}

/// A triple's architecture that is i386 (32-bit x86, ELF32 objects).
fn is_i386(arch: &str) -> bool {
    matches!(arch, "i386" | "i486" | "i586" | "i686" | "x86")
}

/// What the command line asks for as a whole, read once.
struct CommandLine {
    compile_only: bool,
    output: Option<String>,
    dep_requested: bool,
    has_mf: bool,
    has_mt: bool,
    /// (index into the arguments, path, kind)
    inputs: Vec<(usize, String, InputKind)>,
}

impl CommandLine {
    fn scan(args: &[Arg]) -> Result<CommandLine, Reason> {
        let mut cl = CommandLine {
            compile_only: false,
            output: None,
            dep_requested: false,
            has_mf: false,
            has_mt: false,
            inputs: Vec::new(),
        };
        let mut x_lang: Option<InputKind> = None;
        for (i, a) in args.iter().enumerate() {
            match a {
                Arg::Unknown(s) => return Err(Reason::new(Category::UnknownOption, s.clone())),
                Arg::Input(path) => {
                    if path == "-" {
                        return Err(Reason::new(Category::StandardStream, "input from stdin"));
                    }
                    let kind = x_lang.unwrap_or_else(|| kind_from_extension(path));
                    cl.inputs.push((i, path.clone(), kind));
                }
                Arg::Opt {
                    spec, role, value, ..
                } => match role {
                    Role::Unsupported(what) => {
                        return Err(Reason::new(Category::UnsupportedOption, *what))
                    }
                    Role::CompileOnly => cl.compile_only = true,
                    Role::Output => cl.output = value.clone(),
                    Role::CompileAndLink if matches!(*spec, "--target=" | "-target") => {
                        let triple = value.as_deref().unwrap_or("");
                        if !pipeline_supports_target(triple) {
                            return Err(Reason::new(
                                Category::UnsupportedOption,
                                format!("--target={triple} (repocc's pipeline builds x86 and AArch64 code)"),
                            ));
                        }
                    }
                    Role::Language => {
                        let lang = value.as_deref().unwrap_or("");
                        x_lang = kind_from_x(lang);
                        // Any other language, known to clang or not (clang
                        // rejects unknown ones even after the last input).
                        if x_lang == Some(InputKind::Foreign) {
                            return Err(Reason::new(Category::InputLanguage, format!("-x {lang}")));
                        }
                    }
                    Role::Dependency => match *spec {
                        "-MD" | "-MMD" => cl.dep_requested = true,
                        "-MF" => cl.has_mf = true,
                        "-MT" | "-MQ" => cl.has_mt = true,
                        _ => {}
                    },
                    _ => {}
                },
            }
        }
        Ok(cl)
    }

    /// The plan of the unit of `source` (its argument's index, path and
    /// language) writing `output`: the frontend's arguments (this source
    /// alone, the dependency file and target as clang's driver derives
    /// them) and the options that decide what it includes.
    fn unit_plan(
        &self,
        args: &[Arg],
        (src_index, src, lang): &(usize, String, Lang),
        output: PathBuf,
    ) -> UnitPlan {
        let compile_only = self.compile_only;
        let mut fa: Vec<String> = Vec::new();
        let mut search_options: Vec<String> = Vec::new();
        let mut include_search_options: Vec<String> = Vec::new();
        let mut x_active = false;
        for (i, a) in args.iter().enumerate() {
            match a {
                Arg::Input(_) => {
                    if i == *src_index {
                        if x_active {
                            fa.push("-x".into());
                            fa.push(lang.x_name().into());
                        }
                        fa.push(src.clone());
                    }
                }
                Arg::Opt {
                    spec,
                    role,
                    raw,
                    value,
                } => match role {
                    Role::Output | Role::CompileOnly => {}
                    Role::Language => {
                        x_active = value.as_deref() != Some("none");
                    }
                    // In compile-only mode clang sees (and warns about)
                    // link options; in compile-and-link mode it uses them
                    // for the link, not the compile.
                    Role::Link if !compile_only => {}
                    Role::Dependency => fa.extend(raw.iter().cloned()),
                    _ => {
                        fa.extend(raw.iter().cloned());
                        search_options.extend(raw.iter().cloned());
                        if affects_include_search(spec) {
                            include_search_options.extend(raw.iter().cloned());
                        }
                    }
                },
                Arg::Unknown(_) => {}
            }
        }
        if self.dep_requested {
            // Dependency file and target, exactly as clang's driver
            // derives them.
            if !self.has_mf {
                fa.push("-MF".into());
                fa.push(match &self.output {
                    Some(o) => replace_extension(o, "d"),
                    None => format!("{}.d", file_stem(src)),
                });
            }
            if !self.has_mt {
                fa.push("-MQ".into());
                fa.push(match &self.output {
                    Some(o) => o.clone(),
                    None => object_name_for(src),
                });
            }
        }
        UnitPlan {
            source: src.clone(),
            frontend_args: fa,
            output,
            discard_dependency_file: false,
            search_options,
            include_search_options,
            language: lang.x_name(),
        }
    }
}

/// The link's arguments: the command line with each source replaced by
/// its unit's object.
fn link_plan(args: &[Arg], sources: &[(usize, String, Lang)]) -> LinkPlan {
    let unit_of_arg: std::collections::HashMap<usize, usize> = (sources.iter().enumerate())
        .map(|(n, (i, _, _))| (*i, n))
        .collect();
    let mut la = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            Arg::Input(p) => match unit_of_arg.get(&i) {
                Some(&n) => la.push(LinkArg::UnitObject(n)),
                None => la.push(LinkArg::Plain(p.clone())),
            },
            Arg::Opt { role, raw, .. } => {
                if *role != Role::Language {
                    la.extend(raw.iter().cloned().map(LinkArg::Plain));
                }
            }
            Arg::Unknown(s) => la.push(LinkArg::Plain(s.clone())),
        }
    }
    LinkPlan { args: la }
}

/// Whether the last `-g` option asks for debug information of any kind
/// (`-g0` and `-ggdb0` turn it off).
fn debug_any(args: &[Arg]) -> bool {
    let mut on = false;
    for a in args {
        if let Arg::Opt { spec, .. } = a {
            match *spec {
                "-g0" | "-ggdb0" => on = false,
                "-g" | "-g1" | "-g2" | "-g3" | "-gline-tables-only" | "-gline-directives-only" => {
                    on = true
                }
                s if s.starts_with("-ggdb") || s.starts_with("-gdwarf") => on = true,
                _ => {}
            }
        }
    }
    on
}

/// Whether the objects are ELF64: not after `-m32` (unless a later
/// `-m64`), nor for an i386 `--target` (the pipeline builds no other
/// 32-bit target, see [`pipeline_supports_target`]).
fn elf64_objects(args: &[Arg]) -> bool {
    let mut elf64 = true;
    for a in args {
        if let Arg::Opt { spec, value, .. } = a {
            match *spec {
                "-m32" => elf64 = false,
                "-m64" => elf64 = true,
                "--target=" | "-target" => {
                    let arch = value
                        .as_deref()
                        .unwrap_or("")
                        .split('-')
                        .next()
                        .unwrap_or("");
                    elf64 = !is_i386(&arch.to_ascii_lowercase());
                }
                _ => {}
            }
        }
    }
    elf64
}

/// `dir/name.c` → `name.o` (in the current directory), as clang names it.
pub fn object_name_for(src: &str) -> String {
    format!("{}.o", file_stem(src))
}

fn file_stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

/// llvm::sys::path::replace_extension.
fn replace_extension(path: &str, ext: &str) -> String {
    let p = Path::new(path);
    match (p.extension(), p.file_name()) {
        (Some(_), Some(_)) => p.with_extension(ext).to_string_lossy().into_owned(),
        _ => format!("{path}.{ext}"),
    }
}

/// The output's directory must exist and be writable, and the output must
/// not be a directory; otherwise clang reports the problem in its words.
fn check_output_writable(out: &Path) -> Result<(), Reason> {
    if out.is_dir() {
        return Err(Reason::new(
            Category::OutputLocation,
            "output is a directory",
        ));
    }
    // A device or FIFO (`-o /dev/null`) is written in place, as clang
    // does: nothing is created beside it.
    if std::fs::metadata(out).is_ok_and(|m| !m.is_file()) {
        return Ok(());
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    // Creating a file needs write and search permission on the directory;
    // `access` also answers EROFS for a read-only file system and EPERM
    // for an immutable directory. (This was a probe file created and
    // removed: an inode per compile.)
    let flags = rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK;
    match rustix::fs::access(&dir, flags) {
        Ok(()) => Ok(()),
        Err(_) => Err(Reason::new(
            Category::OutputLocation,
            format!("output directory {} is not writable", dir.display()),
        )),
    }
}

/// Whether an option (by its spec) can change clang's include search
/// list. Macros, warnings, optimization, debug information and position
/// independence cannot, so units that differ only in those share one
/// recorded list: zlib's static and shared objects, and its test programs,
/// asked clang for the list four times per build, where one set of
/// directories was in question. Anything not named here counts.
fn affects_include_search(spec: &str) -> bool {
    const NEUTRAL: &[&str] = &[
        "-D",
        "-U",
        "-O",
        "-W",
        "-Wno-",
        "-Werror=",
        "-w",
        "-pedantic",
        "-pedantic-errors",
        "-fPIC",
        "-fpic",
        "-fPIE",
        "-fpie",
        "-fno-PIC",
        "-fno-pic",
        "-fno-PIE",
        "-fno-pie",
    ];
    let debug_info = spec.starts_with("-g") && !spec.starts_with("-gcc");
    !(NEUTRAL.contains(&spec) || debug_info)
}

#[cfg(test)]
mod tests {
    use super::super::args::split;
    use super::*;

    struct Temps;
    impl TempObjects for Temps {
        fn object_path(&self, index: usize, _source: &str) -> PathBuf {
            PathBuf::from(format!("/tmp/unit{index}.o"))
        }
    }

    fn plan_for(dir: &Path, args: &[&str]) -> Plan {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        plan(&split(&args), dir, &Temps)
    }

    fn setup() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for f in ["a.c", "b.c", "c.cpp", "x.o", "s.S", "t.i"] {
            std::fs::write(d.path().join(f), "").unwrap();
        }
        d
    }

    #[test]
    fn compile_only_names_outputs_like_clang() {
        let d = setup();
        let Plan::Compile(p) = plan_for(d.path(), &["-c", "a.c", "b.c", "-O2"]) else {
            panic!()
        };
        assert_eq!(p.units[0].output, PathBuf::from("a.o"));
        assert_eq!(p.units[1].output, PathBuf::from("b.o"));
        assert_eq!(p.units[0].frontend_args, vec!["a.c", "-O2"]);
        assert!(p.link.is_none());
        assert_eq!(p.codegen.opt, OptLevel::O2);
    }

    #[test]
    fn include_search_key_leaves_out_what_cannot_change_it() {
        let d = setup();
        let args = [
            "-O2", "-DX=1", "-U", "Y", "-Wall", "-g", "-fPIC", "-I", "inc", "-isystem", "sys",
            "-std=c99", "-c", "a.c",
        ];
        let Plan::Compile(p) = plan_for(d.path(), &args) else {
            panic!()
        };
        let u = &p.units[0];
        assert_eq!(
            u.include_search_options,
            ["-I", "inc", "-isystem", "sys", "-std=c99"]
        );
        // Preprocessing the unit again still gets every option.
        assert!(u.search_options.iter().any(|o| o == "-DX=1"));
        assert!(affects_include_search("-nostdinc"));
        assert!(!affects_include_search("-gdwarf-4"));
    }

    #[test]
    fn dependency_defaults() {
        let d = setup();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let Plan::Compile(p) = plan_for(d.path(), &["-MD", "-c", "a.c", "-o", "sub/x.o"]) else {
            panic!()
        };
        assert_eq!(
            p.units[0].frontend_args,
            vec!["-MD", "a.c", "-MF", "sub/x.d", "-MQ", "sub/x.o"]
        );
        let Plan::Compile(p) = plan_for(d.path(), &["-MMD", "-c", "a.c"]) else {
            panic!()
        };
        assert_eq!(
            p.units[0].frontend_args,
            vec!["-MMD", "a.c", "-MF", "a.d", "-MQ", "a.o"]
        );
        let Plan::Compile(p) = plan_for(d.path(), &["-MD", "-MF", "y.d", "-c", "a.c"]) else {
            panic!()
        };
        assert_eq!(
            p.units[0].frontend_args,
            vec!["-MD", "-MF", "y.d", "a.c", "-MQ", "a.o"]
        );
    }

    #[test]
    fn compile_and_link_replaces_sources_in_place() {
        let d = setup();
        let Plan::Compile(p) = plan_for(
            d.path(),
            &["-x", "c", "a.c", "-x", "none", "x.o", "-lm", "-o", "prog"],
        ) else {
            panic!()
        };
        assert_eq!(p.units.len(), 1);
        assert_eq!(p.units[0].frontend_args, vec!["-x", "c", "a.c"]);
        assert_eq!(p.units[0].output, PathBuf::from("/tmp/unit0.o"));
        let link: Vec<String> = p
            .link
            .unwrap()
            .args
            .iter()
            .map(|a| match a {
                LinkArg::Plain(s) => s.clone(),
                LinkArg::UnitObject(n) => format!("<{n}>"),
            })
            .collect();
        assert_eq!(link, vec!["<0>", "x.o", "-lm", "-o", "prog"]);
    }

    #[test]
    fn passthrough_cases_name_their_reason() {
        let d = setup();
        let cases: &[(&[&str], &str)] = &[
            (&["-E", "a.c"], "-E"),
            (&["-S", "a.c"], "-S"),
            (&["-c", "s.S"], "language"),
            (&["-c", "missing.c"], "missing.c"),
            (&["-c", "a.c", "--bogus"], "--bogus"),
            (&["-c", "-", "-x", "c"], "stdin"),
            (&["-c", "a.c", "-o", "-"], "stdout"),
            (&["-c", "a.c", "b.c", "-o", "x.o"], "several"),
            (&["-c", "a.c", "-o", "/nonexistent/x.o"], "not writable"),
            (&["-c", "a.c", "-Xclang", "-foo"], "-Xclang"),
            (&["-c", "a.c", "-fsanitize=address"], "-fsanitize"),
            (&["-c", "a.c", "-Ox"], "-Ox"),
            (&["-c", "a.c", "-save-temps"], "-save-temps"),
            (&["-c", "a.c", "-x", "bogus"], "-x bogus"),
            (&["-c", "a.c", "-x", "assembler"], "-x assembler"),
            (&["-c", "a.c", "t.i"], "preprocessed"),
            (
                &["-c", "a.c", "--target=riscv64-linux-gnu"],
                "--target=riscv64",
            ),
            (
                &["-c", "a.c", "-g", "-grecord-gcc-switches"],
                "-grecord-gcc-switches",
            ),
            (&["-c", "a.c", "--target=x86_64-linux-gnux32"], "gnux32"),
            (
                &["-c", "a.c", "-frecord-command-line"],
                "-frecord-command-line",
            ),
            (
                &["-c", "a.c", "-target", "armv7-linux-gnueabihf"],
                "--target=armv7",
            ),
            (&[], "no input"),
        ];
        for (triple, elf64) in [
            ("x86_64-linux-gnu", true),
            ("i686-linux-gnu", false),
            ("aarch64-linux-gnu", true),
        ] {
            let target = format!("--target={triple}");
            let args = ["-c", "a.c", target.as_str()];
            match plan_for(d.path(), &args) {
                Plan::Compile(p) => assert_eq!(p.elf64_objects, elf64, "{triple}"),
                other => panic!("{triple} goes through the pipeline: {other:?}"),
            }
        }
        for (args, elf64) in [
            (&["-c", "a.c", "-m32"][..], false),
            (&["-c", "a.c", "-m32", "-m64"][..], true),
            (&["-c", "a.c"][..], true),
        ] {
            match plan_for(d.path(), args) {
                Plan::Compile(p) => assert_eq!(p.elf64_objects, elf64, "{args:?}"),
                other => panic!("{args:?}: {other:?}"),
            }
        }
        for (args, want) in cases {
            match plan_for(d.path(), args) {
                Plan::Passthrough(why) => {
                    assert!(why.to_string().contains(want), "{args:?}: {why}")
                }
                other => panic!("{args:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn link_only_without_sources() {
        let d = setup();
        assert!(matches!(
            plan_for(d.path(), &["x.o", "-o", "prog", "-lm"]),
            Plan::LinkOnly
        ));
    }

    #[test]
    fn codegen_settings_follow_clang_defaults() {
        let s = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            codegen_settings_from_args(&split(&args)).unwrap()
        };
        let o0 = s(&[]);
        assert_eq!(o0.opt, OptLevel::O0);
        assert!(!o0.vectorize_loops && !o0.unroll_loops && o0.addrsig);
        let o2 = s(&["-O2", "-ffunction-sections", "-fdata-sections", "-g"]);
        assert!(o2.vectorize_loops && o2.vectorize_slp && o2.unroll_loops);
        assert!(o2.function_sections && o2.data_sections && o2.debug_info);
        let oz = s(&["-Oz"]);
        assert!(!oz.vectorize_loops && oz.vectorize_slp);
        let last_wins = s(&["-O3", "-fno-vectorize", "-O1", "-g", "-g0"]);
        assert_eq!(last_wins.opt, OptLevel::O1);
        assert!(!last_wins.vectorize_loops && !last_wins.debug_info);
        assert_eq!(s(&["-O"]).opt, OptLevel::O1);
        assert_eq!(s(&["-Ofast"]).opt, OptLevel::O3);
        assert_eq!(s(&["-mcmodel=large"]).code_model, CodeModelSetting::Large);
        assert_eq!(s(&["-mcmodel=large"]).large_data_threshold, 0);
        assert_eq!(s(&["-mcmodel=medium"]).large_data_threshold, 65536);
    }

    #[test]
    fn any_debug_information() {
        let d = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            debug_any(&split(&args))
        };
        assert!(!d(&["-O2"]));
        assert!(d(&["-g"]) && d(&["-g1"]) && d(&["-gline-tables-only"]) && d(&["-ggdb3"]));
        assert!(d(&["-gdwarf-5"]) && d(&["-g0", "-g"]));
        assert!(!d(&["-g", "-g0"]) && !d(&["-ggdb", "-ggdb0"]));
        assert!(!d(&["-gcolumn-info"]) && !d(&["-gno-column-info"]));
    }
}
