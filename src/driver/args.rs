//! The argument model: a table of the gcc/clang options repocc understands,
//! and the low-level pass that splits a command line into options (with their
//! values) and inputs.
//!
//! The table is data: each entry names an option, how it takes its value
//! ([`ArgForm`]) and what it is for ([`Role`]). Anything not in the table is
//! unknown, and an unknown option sends the whole invocation to clang
//! unchanged (invariant 2: never worse than clang). Options repocc knows but
//! cannot reproduce in its own pipeline have the role [`Role::Unsupported`],
//! with the reason reported in the statistics log.
//!
//! Parsing here only validates and splits; `plan.rs` decides what to do.

use std::sync::OnceLock;

/// How an option takes its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgForm {
    /// `-c`: no value.
    Flag,
    /// `-Wl,x` / `-std=c99`: the value is glued to the name.
    Joined,
    /// `-Xlinker x`: the value is the next argument.
    Separate,
    /// `-I x` or `-Ix`.
    JoinedOrSeparate,
}

/// What an option is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Preprocessor input: given to the frontend.
    Preprocess,
    /// Compilation: given to the frontend; its effect reaches repocc's
    /// pipeline through the IR (attributes, module flags) or through
    /// [`crate::driver::plan::CodegenSettings`].
    Compile,
    /// Linking only.
    Link,
    /// Both compilation and linking (`-pthread`, `--target=`, `-m32`).
    CompileAndLink,
    /// `-c`.
    CompileOnly,
    /// `-o`.
    Output,
    /// `-x LANG`.
    Language,
    /// `-MD`, `-MF`, ...: given to the frontend, which writes the file.
    Dependency,
    /// Known, but repocc's pipeline cannot reproduce it: run clang.
    Unsupported(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct OptionSpec {
    pub name: &'static str,
    pub form: ArgForm,
    pub role: Role,
}

use ArgForm::*;
use Role::*;

/// Options that take no value or a glued value, listed by role. `-fX` entries
/// listed in `F_TOGGLES` get their `-fno-X` twin automatically.
const FLAGS: &[(&str, Role)] = &[
    ("-c", CompileOnly),
    ("-ansi", Compile),
    ("-pedantic", Compile),
    ("-pedantic-errors", Compile),
    ("-w", Compile),
    ("-pipe", Compile),
    ("-pthread", CompileAndLink),
    ("-m32", CompileAndLink),
    ("-m64", CompileAndLink),
    ("-nostdinc", Preprocess),
    ("-nostdinc++", Preprocess),
    ("-nostdlibinc", Preprocess),
    ("-P", Preprocess),
    ("-C", Preprocess),
    ("-CC", Preprocess),
    ("-H", Preprocess),
    ("-trigraphs", Preprocess),
    ("-undef", Preprocess),
    ("-MD", Dependency),
    ("-MMD", Dependency),
    ("-MP", Dependency),
    ("-MG", Dependency),
    ("-shared", Link),
    ("-static", Link),
    ("-static-pie", Link),
    ("-pie", Link),
    ("-no-pie", Link),
    ("-nopie", Link),
    ("-rdynamic", Link),
    ("-s", Link),
    ("-nostdlib", Link),
    ("-nostdlib++", Link),
    ("-nodefaultlibs", Link),
    ("-nostartfiles", Link),
    ("-static-libgcc", Link),
    ("-static-libstdc++", Link),
    ("-shared-libgcc", Link),
    ("-Qunused-arguments", Compile),
    ("-Wa,--noexecstack", Compile),
    ("-g", Compile),
    ("-g0", Compile),
    ("-g1", Compile),
    ("-g2", Compile),
    ("-g3", Compile),
    ("-ggdb", Compile),
    ("-ggdb0", Compile),
    ("-ggdb1", Compile),
    ("-ggdb2", Compile),
    ("-ggdb3", Compile),
    ("-gdwarf", Compile),
    ("-gdwarf-2", Compile),
    ("-gdwarf-3", Compile),
    ("-gdwarf-4", Compile),
    ("-gdwarf-5", Compile),
    ("-gline-tables-only", Compile),
    ("-gline-directives-only", Compile),
    ("-gcolumn-info", Compile),
    ("-gno-column-info", Compile),
    ("-gstrict-dwarf", Compile),
    ("-gno-strict-dwarf", Compile),
    ("-gno-record-gcc-switches", Compile),
    ("-gno-record-command-line", Compile),
    ("-fno-record-command-line", Compile),
    // clang records the command line its driver was given (in
    // DW_AT_producer, in .GCC.command.line); the pipeline's frontend is
    // given another.
    (
        "-grecord-gcc-switches",
        Unsupported("-grecord-gcc-switches (records the command line)"),
    ),
    (
        "-grecord-command-line",
        Unsupported("-grecord-command-line (records the command line)"),
    ),
    (
        "-frecord-command-line",
        Unsupported("-frecord-command-line (records the command line)"),
    ),
    (
        "-frecord-gcc-switches",
        Unsupported("-frecord-gcc-switches (records the command line)"),
    ),
    // Modes repocc leaves to clang.
    ("-E", Unsupported("-E (preprocess only)")),
    ("-S", Unsupported("-S (assembly output)")),
    ("-M", Unsupported("-M (dependencies only)")),
    ("-MM", Unsupported("-MM (dependencies only)")),
    ("-fsyntax-only", Unsupported("-fsyntax-only")),
    ("-emit-llvm", Unsupported("-emit-llvm")),
    ("-save-temps", Unsupported("-save-temps")),
    ("-###", Unsupported("-###")),
    ("-v", Unsupported("-v")),
    ("--verbose", Unsupported("--verbose")),
    ("--analyze", Unsupported("--analyze")),
    ("-flto", Unsupported("-flto")),
    ("-fopenmp", Unsupported("-fopenmp")),
    ("-pg", Unsupported("-pg")),
    ("--coverage", Unsupported("--coverage")),
    ("-fcoverage-mapping", Unsupported("-fcoverage-mapping")),
    (
        "-finstrument-functions",
        Unsupported("-finstrument-functions"),
    ),
    ("-fembed-bitcode", Unsupported("-fembed-bitcode")),
    ("-fno-integrated-as", Unsupported("-fno-integrated-as")),
    ("-no-integrated-as", Unsupported("-no-integrated-as")),
    ("-gsplit-dwarf", Unsupported("-gsplit-dwarf")),
    ("-gz", Unsupported("-gz")),
    ("-femulated-tls", Unsupported("-femulated-tls")),
    (
        "-fno-zero-initialized-in-bss",
        Unsupported("-fno-zero-initialized-in-bss"),
    ),
    (
        "-fsplit-machine-functions",
        Unsupported("-fsplit-machine-functions"),
    ),
    ("-fstack-size-section", Unsupported("-fstack-size-section")),
    (
        "-fdebug-types-section",
        Unsupported("-fdebug-types-section"),
    ),
    (
        "-fsave-optimization-record",
        Unsupported("-fsave-optimization-record"),
    ),
    ("-ftime-report", Unsupported("-ftime-report")),
    (
        "-fprofile-instr-generate",
        Unsupported("-fprofile-instr-generate"),
    ),
    ("-fprofile-arcs", Unsupported("-fprofile-arcs")),
    ("-ftest-coverage", Unsupported("-ftest-coverage")),
    ("-fprofile-generate", Unsupported("-fprofile-generate")),
    ("-fmodules", Unsupported("-fmodules")),
    ("-fcxx-modules", Unsupported("-fcxx-modules")),
    ("--precompile", Unsupported("--precompile")),
    ("-fxray-instrument", Unsupported("-fxray-instrument")),
    ("-dumpmachine", Unsupported("-dumpmachine")),
    ("-dumpversion", Unsupported("-dumpversion")),
    ("--version", Unsupported("--version")),
    ("--help", Unsupported("--help")),
    ("-help", Unsupported("-help")),
];

/// `-f` options whose effect clang records in the IR, or that repocc reads
/// itself (sections, vectorizers, unrolling). Each gets a `-fno-` twin.
const F_TOGGLES: &[&str] = &[
    "PIC",
    "PIE",
    "pic",
    "pie",
    "addrsig",
    "align-functions",
    "aligned-allocation",
    "aligned-new",
    "asm",
    "asynchronous-unwind-tables",
    "builtin",
    "caret-diagnostics",
    "char8_t",
    "color-diagnostics",
    "common",
    "coroutines",
    "cxx-exceptions",
    "data-sections",
    "declspec",
    "delete-null-pointer-checks",
    "diagnostics-color",
    "diagnostics-show-option",
    "diagnostics-show-note-include-stack",
    "diagnostics-fixit-info",
    "diagnostics-show-template-tree",
    "digraphs",
    "dollars-in-identifiers",
    "double-square-bracket-attributes",
    "elide-constructors",
    "eliminate-unused-debug-types",
    "exceptions",
    "fast-math",
    "finite-math-only",
    "fixed-point",
    "function-sections",
    "gnu-inline-asm",
    "gnu-keywords",
    "gnu89-inline",
    "ident",
    "implicit-templates",
    "inline",
    "inline-functions",
    "inline-hint-functions",
    "jump-tables",
    "keep-static-consts",
    "lax-vector-conversions",
    "math-errno",
    "merge-all-constants",
    "ms-extensions",
    "omit-frame-pointer",
    "operator-names",
    "optimize-sibling-calls",
    "plt",
    "reciprocal-math",
    "rounding-math",
    "rtti",
    "sanitize-recover",
    "semantic-interposition",
    "short-enums",
    "short-wchar",
    "show-column",
    "show-source-location",
    "signed-char",
    "signed-zeros",
    "sized-deallocation",
    "slp-vectorize",
    "spell-checking",
    "stack-clash-protection",
    "stack-protector",
    "stack-protector-all",
    "stack-protector-strong",
    "stack-protector-explicit",
    "standalone-debug",
    "strict-aliasing",
    "strict-enums",
    "strict-float-cast-overflow",
    "strict-overflow",
    "strict-return",
    "strict-vtable-pointers",
    "threadsafe-statics",
    "trapping-math",
    "tree-slp-vectorize",
    "tree-vectorize",
    "trigraphs",
    "unique-section-names",
    "unroll-loops",
    "unsafe-math-optimizations",
    "unsigned-char",
    "unwind-tables",
    "use-cxa-atexit",
    "use-init-array",
    "vectorize",
    "verbose-asm",
    "visibility-inlines-hidden",
    "visibility-inlines-hidden-static-local-var",
    "wrapv",
    "honor-infinities",
    "honor-nans",
    "associative-math",
    "freestanding",
    "hosted",
    "permissive",
    "lto",
    "ansi-escape-codes",
    "debug-macro",
    "debug-info-for-profiling",
    "dwarf-directory-asm",
    "emulated-tls",
    "finite-loops",
    "fine-grained-bitfield-accesses",
    "new-infallible",
    "assume-sane-operator-new",
    "gnu-unique",
    "pch-instantiate-templates",
    "pch-codegen",
    "pch-debuginfo",
    "modules",
    "sanitize",
    "profile-arcs",
    "test-coverage",
    "coverage-mapping",
    "openmp",
    "integrated-as",
    "pascal-strings",
    "zero-initialized-in-bss",
    "xray-instrument",
];

/// `-f`/`-m`/`-W`/`-std` prefixes with a glued value, all compile-time.
const JOINED: &[(&str, Role)] = &[
    ("-O", Compile),
    ("-W", Compile),
    ("-Wno-", Compile),
    ("-Werror=", Compile),
    ("-Wl,", Link),
    ("-Wp,", Preprocess),
    ("-Wa,", Unsupported("-Wa, (options for the assembler)")),
    ("-std=", Compile),
    ("-stdlib=", CompileAndLink),
    ("-rtlib=", Link),
    ("-unwindlib=", Link),
    ("-fuse-ld=", Link),
    ("-ld-path=", Link),
    ("--ld-path=", Link),
    ("--target=", CompileAndLink),
    ("--sysroot=", CompileAndLink),
    ("--gcc-toolchain=", CompileAndLink),
    ("--gcc-install-dir=", CompileAndLink),
    ("-march=", Compile),
    ("-mtune=", Compile),
    ("-mcpu=", Compile),
    ("-mcmodel=", Compile),
    ("-mfpmath=", Compile),
    ("-mstack-alignment=", Compile),
    ("-mprefer-vector-width=", Compile),
    ("-fvisibility=", Compile),
    ("-fmessage-length=", Compile),
    ("-fdiagnostics-color=", Compile),
    ("-fdiagnostics-format=", Compile),
    ("-fdiagnostics-show-category=", Compile),
    ("-fdebug-prefix-map=", Compile),
    ("-ffile-prefix-map=", Compile),
    ("-fmacro-prefix-map=", Compile),
    ("-fdebug-compilation-dir=", Compile),
    ("-ffile-compilation-dir=", Compile),
    ("-ferror-limit=", Compile),
    ("-fmacro-backtrace-limit=", Compile),
    ("-ftemplate-backtrace-limit=", Compile),
    ("-ftemplate-depth=", Compile),
    ("-fconstexpr-depth=", Compile),
    ("-fconstexpr-steps=", Compile),
    ("-fbracket-depth=", Compile),
    ("-ftls-model=", Compile),
    ("-fexcess-precision=", Compile),
    ("-ffp-model=", Compile),
    ("-ffp-contract=", Compile),
    ("-ffp-exception-behavior=", Compile),
    ("-fdenormal-fp-math=", Compile),
    ("-fcf-protection=", Compile),
    ("-fcf-protection", Compile),
    ("-fstrict-flex-arrays=", Compile),
    ("-ftrivial-auto-var-init=", Compile),
    ("-fzero-call-used-regs=", Compile),
    ("-fexec-charset=", Compile),
    ("-finput-charset=", Compile),
    ("-fno-builtin-", Compile),
    ("-fno-sanitize=", Compile),
    ("-fpatchable-function-entry=", Compile),
    ("-fstack-protector-buffer-size=", Compile),
    ("-fmax-type-align=", Compile),
    ("-fpack-struct=", Compile),
    ("-fgnuc-version=", Compile),
    ("-fms-compatibility-version=", Compile),
    ("-fconstexpr-backtrace-limit=", Compile),
    ("-fspell-checking-limit=", Compile),
    ("-ftabstop=", Compile),
    ("-fcolor-diagnostics", Compile),
    ("-fuse-cxa-atexit", Compile),
    ("-save-temps=", Unsupported("-save-temps")),
    ("-flto=", Unsupported("-flto")),
    ("-fsanitize=", Unsupported("-fsanitize")),
    ("-fprofile-", Unsupported("-fprofile-*")),
    ("-fprofile-instr-use=", Unsupported("-fprofile-instr-use")),
    ("-fpass-plugin=", Unsupported("-fpass-plugin")),
    ("-fplugin=", Unsupported("-fplugin")),
    ("-fveclib=", Unsupported("-fveclib")),
    (
        "-fbasic-block-sections=",
        Unsupported("-fbasic-block-sections"),
    ),
    (
        "-finstrument-functions-",
        Unsupported("-finstrument-functions"),
    ),
    ("-fxray-", Unsupported("-fxray")),
    ("-Rpass", Unsupported("-Rpass (optimization remarks)")),
    ("-ftime-trace", Unsupported("-ftime-trace")),
    ("-fdebug-default-version=", Compile),
    ("-print-", Unsupported("-print-*")),
    ("--print-", Unsupported("--print-*")),
    (
        "-mstack-protector-guard",
        Unsupported("-mstack-protector-guard"),
    ),
    ("-mrecord-mcount", Unsupported("-mrecord-mcount")),
    ("-mfentry", Unsupported("-mfentry")),
    ("-mnop-mcount", Unsupported("-mnop-mcount")),
    ("-gsplit-dwarf=", Unsupported("-gsplit-dwarf")),
    ("-gz=", Unsupported("-gz")),
];

/// `-m` feature toggles that become the `target-features` attribute in the
/// IR; each accepts `-mX` and `-mno-X`.
const M_FEATURES: &[&str] = &[
    "sse",
    "sse2",
    "sse3",
    "ssse3",
    "sse4",
    "sse4.1",
    "sse4.2",
    "sse4a",
    "avx",
    "avx2",
    "avx512f",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512vl",
    "fma",
    "fma4",
    "bmi",
    "bmi2",
    "popcnt",
    "aes",
    "pclmul",
    "lzcnt",
    "f16c",
    "movbe",
    "rdrnd",
    "rdseed",
    "sha",
    "xsave",
    "cx16",
    "crc32",
    "adx",
    "mmx",
    "80387",
    "x87",
    "red-zone",
    "omit-leaf-frame-pointer",
    "stackrealign",
    "implicit-float",
    "tbm",
    "prfchw",
    "vzeroupper",
    "avxvnni",
    "gfni",
    "vaes",
    "vpclmulqdq",
    "retpoline",
    "general-regs-only",
    "unaligned-access",
    "outline-atomics",
];

/// Options whose value is the next argument (or glued, for
/// `JoinedOrSeparate`).
const SEPARATE: &[(&str, ArgForm, Role)] = &[
    ("-o", JoinedOrSeparate, Output),
    ("-x", JoinedOrSeparate, Language),
    ("-I", JoinedOrSeparate, Preprocess),
    ("-D", JoinedOrSeparate, Preprocess),
    ("-U", JoinedOrSeparate, Preprocess),
    ("-include", JoinedOrSeparate, Preprocess),
    ("-imacros", JoinedOrSeparate, Preprocess),
    ("-isystem", JoinedOrSeparate, Preprocess),
    ("-iquote", JoinedOrSeparate, Preprocess),
    ("-idirafter", JoinedOrSeparate, Preprocess),
    ("-iprefix", JoinedOrSeparate, Preprocess),
    ("-iwithprefix", JoinedOrSeparate, Preprocess),
    ("-iwithprefixbefore", JoinedOrSeparate, Preprocess),
    ("-isysroot", JoinedOrSeparate, CompileAndLink),
    ("-include-pch", Separate, Preprocess),
    ("-MF", JoinedOrSeparate, Dependency),
    ("-MT", JoinedOrSeparate, Dependency),
    ("-MQ", JoinedOrSeparate, Dependency),
    ("-L", JoinedOrSeparate, Link),
    ("-l", JoinedOrSeparate, Link),
    ("-u", JoinedOrSeparate, Link),
    ("-e", Separate, Link),
    ("-T", JoinedOrSeparate, Link),
    ("-z", Separate, Link),
    ("-B", JoinedOrSeparate, CompileAndLink),
    ("-Xlinker", Separate, Link),
    ("-target", Separate, CompileAndLink),
    ("--sysroot", Separate, CompileAndLink),
    ("-Xclang", Separate, Unsupported("-Xclang")),
    ("-mllvm", Separate, Unsupported("-mllvm")),
    ("-Xassembler", Separate, Unsupported("-Xassembler")),
    ("-Xpreprocessor", Separate, Unsupported("-Xpreprocessor")),
    ("-arch", Separate, Unsupported("-arch")),
    (
        "--serialize-diagnostics",
        Separate,
        Unsupported("--serialize-diagnostics"),
    ),
];

/// The whole table, sorted by name (built once; see `table_is_sorted_and_unique`).
pub fn table() -> &'static [OptionSpec] {
    static TABLE: OnceLock<Vec<OptionSpec>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t: Vec<OptionSpec> = Vec::new();
        let mut push = |name: &'static str, form, role| {
            if !t.iter().any(|s: &OptionSpec| s.name == name) {
                t.push(OptionSpec { name, form, role })
            }
        };
        for &(name, role) in FLAGS {
            push(name, Flag, role);
        }
        for &name in F_TOGGLES {
            let role = f_toggle_role(name);
            let yes: &'static str = Box::leak(format!("-f{name}").into_boxed_str());
            let no: &'static str = Box::leak(format!("-fno-{name}").into_boxed_str());
            push(yes, Flag, role.0);
            push(no, Flag, role.1);
        }
        for &name in M_FEATURES {
            let yes: &'static str = Box::leak(format!("-m{name}").into_boxed_str());
            let no: &'static str = Box::leak(format!("-mno-{name}").into_boxed_str());
            push(yes, Flag, Compile);
            push(no, Flag, Compile);
        }
        for &(name, role) in JOINED {
            push(name, Joined, role);
        }
        for &(name, form, role) in SEPARATE {
            push(name, form, role);
        }
        t.sort_by(|a, b| a.name.cmp(b.name));
        t
    })
}

/// Roles of `-fX` and `-fno-X` (the `no` form of an unsupported feature is
/// harmless: it turns the feature off).
fn f_toggle_role(name: &str) -> (Role, Role) {
    let unsupported = |why| (Unsupported(why), Compile);
    match name {
        "lto" => unsupported("-flto"),
        "sanitize" => unsupported("-fsanitize"),
        "profile-arcs" => unsupported("-fprofile-arcs"),
        "test-coverage" => unsupported("-ftest-coverage"),
        "coverage-mapping" => unsupported("-fcoverage-mapping"),
        "openmp" => unsupported("-fopenmp"),
        "modules" => unsupported("-fmodules"),
        "emulated-tls" => unsupported("-femulated-tls"),
        "xray-instrument" => unsupported("-fxray-instrument"),
        "integrated-as" => (Compile, Unsupported("-fno-integrated-as")),
        "zero-initialized-in-bss" => (Compile, Unsupported("-fno-zero-initialized-in-bss")),
        "dwarf-directory-asm" => (Compile, Unsupported("-fno-dwarf-directory-asm")),
        "pch-codegen" => unsupported("-fpch-codegen"),
        "pch-debuginfo" => unsupported("-fpch-debuginfo"),
        _ => (Compile, Compile),
    }
}

/// Exact lookup.
pub fn find_exact(name: &str) -> Option<&'static OptionSpec> {
    let t = table();
    t.binary_search_by(|s| s.name.cmp(name)).ok().map(|i| &t[i])
}

/// The spec for `arg`: an exact match first, else the longest table name
/// that is a prefix of `arg` and accepts a glued value.
pub fn lookup(arg: &str) -> Option<&'static OptionSpec> {
    if let Some(spec) = find_exact(arg) {
        return Some(spec);
    }
    let mut end = arg.len();
    while end > 1 {
        end -= 1;
        if !arg.is_char_boundary(end) {
            continue;
        }
        if let Some(spec) = find_exact(&arg[..end]) {
            if matches!(spec.form, Joined | JoinedOrSeparate) {
                return Some(spec);
            }
        }
    }
    None
}

/// One parsed element of the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arg {
    /// An option and its value; `raw` holds the original argument(s).
    Opt {
        spec: &'static str,
        role: Role,
        value: Option<String>,
        raw: Vec<String>,
    },
    /// An input file (source or linker input).
    Input(String),
    /// An option not in the table.
    Unknown(String),
}

/// Splits a command line (after response-file expansion) into options and
/// inputs. A separate-valued option at the end with no value is reported as
/// unknown, so clang prints its own error.
pub fn split(args: &[String]) -> Vec<Arg> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "-" || !a.starts_with('-') {
            out.push(Arg::Input(a.clone()));
            continue;
        }
        let Some(spec) = lookup(a) else {
            out.push(Arg::Unknown(a.clone()));
            continue;
        };
        let exact = a == spec.name;
        match spec.form {
            Flag => out.push(Arg::Opt {
                spec: spec.name,
                role: spec.role,
                value: None,
                raw: vec![a.clone()],
            }),
            Joined => out.push(Arg::Opt {
                spec: spec.name,
                role: spec.role,
                value: Some(a[spec.name.len()..].to_string()),
                raw: vec![a.clone()],
            }),
            Separate | JoinedOrSeparate if exact => {
                if i < args.len() {
                    out.push(Arg::Opt {
                        spec: spec.name,
                        role: spec.role,
                        value: Some(args[i].clone()),
                        raw: vec![a.clone(), args[i].clone()],
                    });
                    i += 1;
                } else {
                    out.push(Arg::Unknown(a.clone()));
                }
            }
            JoinedOrSeparate => out.push(Arg::Opt {
                spec: spec.name,
                role: spec.role,
                value: Some(a[spec.name.len()..].to_string()),
                raw: vec![a.clone()],
            }),
            Separate => out.push(Arg::Unknown(a.clone())),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn table_is_sorted_and_unique() {
        let t = table();
        for w in t.windows(2) {
            assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn every_unsupported_option_names_itself_in_its_reason() {
        for spec in table() {
            if let Unsupported(why) = spec.role {
                let stem = spec.name.trim_start_matches('-');
                let stem = stem.trim_start_matches("no-").trim_end_matches(['=', ',']);
                let first = stem.split(['-', '=']).next().unwrap_or(stem);
                assert!(why.contains(first), "{} has reason {why:?}", spec.name);
            }
        }
    }

    #[test]
    fn joined_or_separate_forms() {
        let a = split(&strings(&[
            "-I", "inc", "-Iinc2", "-o", "x.o", "-DX=1", "a.c",
        ]));
        assert_eq!(
            a[0],
            Arg::Opt {
                spec: "-I",
                role: Preprocess,
                value: Some("inc".into()),
                raw: strings(&["-I", "inc"])
            }
        );
        assert!(matches!(&a[1], Arg::Opt { value: Some(v), .. } if v == "inc2"));
        assert!(matches!(&a[2], Arg::Opt { role: Output, value: Some(v), .. } if v == "x.o"));
        assert!(matches!(&a[3], Arg::Opt { spec: "-D", value: Some(v), .. } if v == "X=1"));
        assert_eq!(a[4], Arg::Input("a.c".into()));
    }

    #[test]
    fn longest_prefix_wins() {
        assert_eq!(lookup("-Wl,-E").unwrap().role, Link);
        assert_eq!(lookup("-Wall").unwrap().role, Compile);
        assert_eq!(lookup("-Wa,--noexecstack").unwrap().role, Compile);
        assert!(matches!(lookup("-Wa,-adhln").unwrap().role, Unsupported(_)));
        assert!(matches!(
            lookup("-fsanitize=address").unwrap().role,
            Unsupported(_)
        ));
        assert_eq!(lookup("-fno-sanitize=all").unwrap().role, Compile);
        assert_eq!(lookup("-O2").unwrap().name, "-O");
        assert_eq!(lookup("-include-pch").unwrap().name, "-include-pch");
    }

    #[test]
    fn unknown_options_are_reported() {
        let a = split(&strings(&["--bogus", "-fmade-up-flag", "a.c"]));
        assert_eq!(a[0], Arg::Unknown("--bogus".into()));
        assert_eq!(a[1], Arg::Unknown("-fmade-up-flag".into()));
    }

    #[test]
    fn separate_option_without_value_is_unknown() {
        let a = split(&strings(&["a.c", "-o"]));
        assert_eq!(a[1], Arg::Unknown("-o".into()));
    }

    #[test]
    fn f_toggles_have_no_forms() {
        assert_eq!(lookup("-fno-common").unwrap().role, Compile);
        assert_eq!(lookup("-ffunction-sections").unwrap().role, Compile);
        assert!(matches!(
            lookup("-fno-integrated-as").unwrap().role,
            Unsupported(_)
        ));
        assert!(matches!(lookup("-flto").unwrap().role, Unsupported(_)));
        assert_eq!(lookup("-fno-lto").unwrap().role, Compile);
    }
}
