//! Classification and planning: from a split command line to what repocc
//! will do — compile N translation units through the pipeline (and maybe
//! link), run the link only, or hand the invocation to clang unchanged.
//!
//! The plan is fixed input for the executor (`driver/mod.rs`); nothing here
//! runs a process or writes a file.

use std::path::{Path, PathBuf};

use super::args::{Arg, Role};

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

/// The `-O` level and its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum OptLevel {
    O0,
    O1,
    O2,
    O3,
    Os,
    Oz,
}

impl OptLevel {
    /// Parses the value of `-O` as clang does; `None` for values clang
    /// rejects (then clang reports them).
    pub fn parse(value: &str) -> Option<OptLevel> {
        Some(match value {
            "" | "1" | "g" => OptLevel::O1,
            "0" => OptLevel::O0,
            "2" => OptLevel::O2,
            "3" | "fast" => OptLevel::O3,
            "s" => OptLevel::Os,
            "z" => OptLevel::Oz,
            n if n.chars().all(|c| c.is_ascii_digit()) => OptLevel::O3,
            _ => return None,
        })
    }

    /// The new pass manager's pipeline for this level.
    pub fn pipeline(self) -> &'static str {
        match self {
            OptLevel::O0 => "default<O0>",
            OptLevel::O1 => "default<O1>",
            OptLevel::O2 => "default<O2>",
            OptLevel::O3 => "default<O3>",
            OptLevel::Os => "default<Os>",
            OptLevel::Oz => "default<Oz>",
        }
    }

    /// clang's `CodeGenOpts.OptimizationLevel` (Os/Oz count as 2).
    fn numeric(self) -> u8 {
        match self {
            OptLevel::O0 => 0,
            OptLevel::O1 => 1,
            OptLevel::O2 | OptLevel::Os | OptLevel::Oz => 2,
            OptLevel::O3 => 3,
        }
    }
}

/// Code model from `-mcmodel=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum CodeModelSetting {
    Default,
    Small,
    Kernel,
    Medium,
    Large,
}

/// What clang would set on its TargetMachine and pass builder that the IR
/// does not carry (CPU, features, relocation model and debug info are read
/// from the module itself).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CodegenSettings {
    pub opt: OptLevel,
    pub function_sections: bool,
    pub data_sections: bool,
    pub unique_section_names: bool,
    pub addrsig: bool,
    pub use_init_array: bool,
    pub vectorize_loops: bool,
    pub vectorize_slp: bool,
    pub unroll_loops: bool,
    pub code_model: CodeModelSetting,
    pub debug_info: bool,
}

impl CodegenSettings {
    fn from_args(args: &[Arg]) -> Result<CodegenSettings, String> {
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
            debug_info,
        })
    }
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
}

#[derive(Clone, Debug)]
pub enum Plan {
    /// Compile through the pipeline (and link if `link` is set).
    Compile(CompilePlan),
    /// No sources: clang links the inputs, arguments unchanged.
    LinkOnly,
    /// Run clang with the original arguments, for this reason.
    Passthrough(String),
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

fn plan_inner(args: &[Arg], cwd: &Path, temps: &dyn TempObjects) -> Result<Plan, String> {
    let mut compile_only = false;
    let mut output: Option<String> = None;
    let mut dep_requested = false;
    let mut has_mf = false;
    let mut has_mt = false;
    let mut x_lang: Option<InputKind> = None;
    // (index into args, kind)
    let mut inputs: Vec<(usize, String, InputKind)> = Vec::new();

    for (i, a) in args.iter().enumerate() {
        match a {
            Arg::Unknown(s) => return Err(format!("unknown option {s}")),
            Arg::Input(path) => {
                if path == "-" {
                    return Err("input from stdin".into());
                }
                let kind = x_lang.unwrap_or_else(|| kind_from_extension(path));
                inputs.push((i, path.clone(), kind));
            }
            Arg::Opt {
                spec, role, value, ..
            } => match role {
                Role::Unsupported(why) => return Err(format!("unsupported option {why}")),
                Role::CompileOnly => compile_only = true,
                Role::Output => output = value.clone(),
                Role::Language => x_lang = kind_from_x(value.as_deref().unwrap_or("")),
                Role::Dependency => match *spec {
                    "-MD" | "-MMD" => dep_requested = true,
                    "-MF" => has_mf = true,
                    "-MT" | "-MQ" => has_mt = true,
                    _ => {}
                },
                _ => {}
            },
        }
    }

    let codegen = CodegenSettings::from_args(args).map_err(|v| format!("invalid value {v}"))?;

    if inputs.is_empty() {
        return Err("no input files".into());
    }
    if inputs.iter().any(|(_, _, k)| *k == InputKind::Foreign) {
        return Err("input language repocc leaves to clang".into());
    }
    for (_, path, _) in &inputs {
        if !cwd.join(path).exists() {
            return Err(format!("input {path} does not exist"));
        }
    }
    if output.as_deref() == Some("-") {
        return Err("output to stdout".into());
    }
    let sources: Vec<(usize, String, Lang)> = inputs
        .iter()
        .filter_map(|(i, p, k)| match k {
            InputKind::Source(l) => Some((*i, p.clone(), *l)),
            _ => None,
        })
        .collect();
    let has_linker_inputs = sources.len() < inputs.len();

    if sources.is_empty() {
        return if compile_only {
            Err("-c without sources".into())
        } else {
            Ok(Plan::LinkOnly)
        };
    }
    if compile_only && has_linker_inputs {
        return Err("-c with linker inputs".into());
    }
    if compile_only && sources.len() > 1 && output.is_some() {
        return Err("-o with several outputs".into());
    }

    // Output paths.
    let outputs: Vec<PathBuf> = sources
        .iter()
        .enumerate()
        .map(|(n, (_, src, _))| {
            if !compile_only {
                temps.object_path(n, src)
            } else if let Some(o) = &output {
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

    // Dependency file and target, exactly as clang's driver derives them.
    let dep_file_for = |src: &str| -> String {
        match &output {
            Some(o) => replace_extension(o, "d"),
            None => format!("{}.d", file_stem(src)),
        }
    };
    let dep_target_for = |src: &str| -> String {
        match &output {
            Some(o) => o.clone(),
            None => object_name_for(src),
        }
    };

    let mut units = Vec::with_capacity(sources.len());
    for (n, (src_index, src, lang)) in sources.iter().enumerate() {
        let mut fa: Vec<String> = Vec::new();
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
                    role, raw, value, ..
                } => match role {
                    Role::Output | Role::CompileOnly => {}
                    Role::Language => {
                        x_active = value.as_deref() != Some("none");
                    }
                    // In compile-only mode clang sees (and warns about)
                    // link options; in compile-and-link mode it uses them
                    // for the link, not the compile.
                    Role::Link if !compile_only => {}
                    _ => fa.extend(raw.iter().cloned()),
                },
                Arg::Unknown(_) => {}
            }
        }
        if dep_requested {
            if !has_mf {
                fa.push("-MF".into());
                fa.push(dep_file_for(src));
            }
            if !has_mt {
                fa.push("-MQ".into());
                fa.push(dep_target_for(src));
            }
        }
        units.push(UnitPlan {
            source: src.clone(),
            frontend_args: fa,
            output: outputs[n].clone(),
            discard_dependency_file: false,
        });
    }
    // Several units writing one dependency file: clang runs them in order,
    // so the last one's file is what remains.
    if dep_requested && (has_mf || output.is_some()) {
        let last = units.len() - 1;
        for u in &mut units[..last] {
            u.discard_dependency_file = true;
        }
    }

    let link = if compile_only {
        None
    } else {
        let mut la = Vec::new();
        let mut unit_of_arg = std::collections::HashMap::new();
        for (n, (i, _, _)) in sources.iter().enumerate() {
            unit_of_arg.insert(*i, n);
        }
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
        Some(LinkPlan { args: la })
    };

    Ok(Plan::Compile(CompilePlan {
        units,
        link,
        codegen,
    }))
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
fn check_output_writable(out: &Path) -> Result<(), String> {
    if out.is_dir() {
        return Err("output is a directory".into());
    }
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let probe = tempfile::Builder::new()
        .prefix(".repocc-probe")
        .tempfile_in(&dir);
    match probe {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "output directory {} is not writable",
            dir.display()
        )),
    }
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
        for f in ["a.c", "b.c", "c.cpp", "x.o", "s.S"] {
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
            (&[], "no input"),
        ];
        for (args, want) in cases {
            match plan_for(d.path(), args) {
                Plan::Passthrough(why) => assert!(why.contains(want), "{args:?}: {why}"),
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
            CodegenSettings::from_args(&split(&args)).unwrap()
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
    }
}
