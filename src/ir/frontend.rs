//! Stage 1, the frontend: clang-19 with the user's flags, asked for
//! unoptimized bitcode on stdout (`-emit-llvm -Xclang -disable-llvm-passes`).
//! clang writes diagnostics and the dependency file itself, so both are
//! exactly what the user would get from clang.
//!
//! When the compiler is the clang-19 repocc was built with, its driver and
//! compiler proper run in this process ([`InProcessClang`], clang's static
//! libraries through shim/frontend.cpp): the same arguments, bitcode,
//! diagnostics and exit code, without the two processes per unit. Anything
//! the shim does not reproduce runs clang as a process, as does every
//! other compiler, and everything when `REPOCC_EXTERNAL_FRONTEND` is set.
//! A unit compiled whole (debug info at `-O0`, see `driver`) is compiled
//! the same way, clang writing the object (`Clang::compile_in_process`):
//! clang-19's object without clang-19's process, whose dynamic linking
//! costs about as much as a small C unit's compile at `-O0`.
//!
//! A [`Clang`] runner stands in front of the real compiler, so tests can
//! substitute a failing or odd one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::ir::settings::OptLevel;
use crate::support::RECURSION_GUARD;

/// What the frontend produced.
#[derive(Debug)]
pub struct FrontendOutput {
    /// clang's exit code (0 on success).
    pub status: i32,
    /// The bitcode (empty if `status != 0`, or when `module` is there).
    pub bitcode: Vec<u8>,
    /// clang's module itself, where it was asked for and clang ran in this
    /// process (`status == 0` only).
    pub module: Option<crate::llvm::FrontendModule>,
    /// clang's stderr, captured: the driver prints it once the unit is
    /// done (or clang's own compile replaces it, see `driver`).
    pub stderr: Vec<u8>,
    /// Why clang ran as a process although it could have run in this one
    /// (for `REPOCC_EXPLAIN`).
    pub process_reason: Option<String>,
    /// The header list was written (see [`headers_listable`]).
    pub headers_listed: bool,
}

pub trait Clang: Sync {
    fn path(&self) -> &Path;
    /// Runs the frontend with its stderr captured; `force_color` adds
    /// `-fcolor-diagnostics` (our stderr is a colour terminal); clang
    /// appends the headers it opens to `header_list` (see `support::list_headers`)
    /// where it can without changing the unit's dependency file;
    /// `want_module` asks for the module in memory instead of bitcode
    /// (only clang in this process can hand it over).
    fn run_frontend(
        &self,
        args: &[String],
        force_color: bool,
        header_list: Option<&Path>,
        want_module: bool,
    ) -> Result<FrontendOutput>;
    /// Links with `args` (objects, archives and libraries only) as this
    /// clang would, without starting clang: `Ok(exit code)` once the link
    /// ran, `Err(why)` when it cannot (nothing ran; clang must link).
    fn link_in_process(&self, _args: &[String]) -> Result<i32, String> {
        Err("clang's driver is not in this process".into())
    }
    /// Compiles a whole unit (`args` with `-c -o FILE`) as this clang
    /// would, without starting clang: `Ok((exit code, stderr, listed))`
    /// once it ran (clang wrote the object, and, `listed`, every header it
    /// opened into `header_list`), `Err(why)` when it cannot (nothing ran;
    /// clang must compile).
    fn compile_in_process(
        &self,
        _args: &[String],
        _header_list: Option<&Path>,
    ) -> Result<(i32, Vec<u8>, bool), String> {
        Err("clang's driver is not in this process".into())
    }
}

/// The real clang-19.
pub struct RealClang {
    pub path: PathBuf,
}

impl Clang for RealClang {
    fn path(&self) -> &Path {
        &self.path
    }

    fn run_frontend(
        &self,
        args: &[String],
        force_color: bool,
        header_list: Option<&Path>,
        _want_module: bool,
    ) -> Result<FrontendOutput> {
        let mut cmd = Command::new(&self.path);
        let headers_listed = list_headers_where_listable(&mut cmd, header_list, args);
        cmd.args(args)
            .env(RECURSION_GUARD, "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if force_color {
            cmd.arg("-fcolor-diagnostics");
        }
        let out = cmd
            .output()
            .with_context(|| format!("running {}", self.path.display()))?;
        let status = exit_code(&out.status);
        Ok(FrontendOutput {
            status,
            bitcode: if status == 0 { out.stdout } else { Vec::new() },
            module: None,
            stderr: out.stderr,
            process_reason: None,
            headers_listed,
        })
    }
}

/// clang-19's frontend in this process, in front of the same compiler run
/// as a process for what the shim declines.
pub struct InProcessClang {
    pub process: RealClang,
    /// The compiler's executable with symlinks resolved: the driver finds
    /// its resource directory (builtin headers) next to it.
    resolved: PathBuf,
}

/// The LLVM installation repocc was built against (build.rs).
const LLVM_PREFIX: &str = env!("REPOCC_LLVM_PREFIX");

/// Variables through which the user talks to clang's driver itself
/// (clang_main reads them); the process then does what they ask.
const DRIVER_ENVIRONMENT: &[&str] = &[
    "CCC_OVERRIDE_OPTIONS",
    "CC_PRINT_OPTIONS",
    "CC_PRINT_HEADERS",
    "CC_LOG_DIAGNOSTICS",
    "CC_PRINT_PROC_STAT",
    "CC_PRINT_INTERNAL_STAT",
    "FORCE_CLANG_DIAGNOSTICS_CRASH",
];

impl InProcessClang {
    /// The in-process frontend for `clang`, if it is the clang-19 of the
    /// libraries repocc links (same installation, symlinks resolved) and
    /// nothing in clang's environment asks for the process (the driver
    /// does not ask for it with `REPOCC_EXTERNAL_FRONTEND`).
    pub fn for_compiler(clang: &Path) -> Option<InProcessClang> {
        if DRIVER_ENVIRONMENT
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return None;
        }
        let resolved = clang.canonicalize().ok()?;
        let ours = Path::new(LLVM_PREFIX).join("bin").canonicalize().ok()?;
        if resolved.parent() != Some(ours.as_path()) {
            return None;
        }
        let name = resolved.file_name()?.to_str()?;
        if !name.starts_with("clang") || name.contains("clang-cl") {
            return None;
        }
        Some(InProcessClang {
            process: RealClang {
                path: clang.to_path_buf(),
            },
            resolved,
        })
    }
}

impl Clang for InProcessClang {
    fn path(&self) -> &Path {
        &self.process.path
    }

    /// clang's driver in this process starts the linker; its environment
    /// has the recursion guard, as that of a linker clang starts would.
    fn link_in_process(&self, args: &[String]) -> Result<i32, String> {
        let mut environment: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
            .filter(|(k, _)| k != RECURSION_GUARD)
            .collect();
        environment.push((RECURSION_GUARD.into(), "1".into()));
        let prog_name = self.process.path.display().to_string();
        crate::llvm::run_clang_link(&self.resolved, &prog_name, args, &environment)
    }

    /// Declined where repocc has set LLVM options of its own for the
    /// pipeline (they are process-wide, and would change clang's object).
    fn compile_in_process(
        &self,
        args: &[String],
        header_list: Option<&Path>,
    ) -> Result<(i32, Vec<u8>, bool), String> {
        use crate::llvm::{run_clang_compile_object, InProcessFrontend};
        if crate::llvm::llvm_options_set() {
            return Err("repocc set LLVM options for its pipeline".into());
        }
        crate::ir::canonical::init_targets();
        let prog_name = self.process.path.display().to_string();
        let run = || run_clang_compile_object(&self.resolved, &prog_name, args, header_list);
        match on_frontend_stack(run) {
            Ok(InProcessFrontend::Ran {
                status,
                diagnostics,
                headers_listed,
                ..
            }) => Ok((status, diagnostics, headers_listed)),
            Ok(InProcessFrontend::Declined(why)) => Err(why),
            Err(e) => Err(format!("{e:#}")),
        }
    }

    fn run_frontend(
        &self,
        args: &[String],
        force_color: bool,
        header_list: Option<&Path>,
        want_module: bool,
    ) -> Result<FrontendOutput> {
        use crate::llvm::{run_clang_frontend, InProcessFrontend};
        let mut all = args.to_vec();
        if force_color {
            all.push("-fcolor-diagnostics".into());
        }
        // Bitcode does not depend on which targets are registered, but
        // the frontend's data-layout check does: register them first, as
        // the pipeline would.
        crate::ir::canonical::init_targets();
        let prog_name = self.process.path.display().to_string();
        let run = || run_clang_frontend(&self.resolved, &prog_name, &all, header_list, want_module);
        match on_frontend_stack(run)? {
            InProcessFrontend::Ran {
                status,
                bitcode,
                module,
                diagnostics,
                headers_listed,
            } => Ok(FrontendOutput {
                status,
                bitcode,
                module,
                stderr: diagnostics,
                process_reason: None,
                headers_listed,
            }),
            InProcessFrontend::Declined(why) => {
                let mut out =
                    self.process
                        .run_frontend(args, force_color, header_list, want_module)?;
                out.process_reason = Some(why);
                Ok(out)
            }
        }
    }
}

/// Runs clang in this process where its recursion has room: right here on
/// the main thread, elsewhere on a thread of its own with a generous stack
/// (clang's recursion on deeply nested code must not meet repocc's frames,
/// or a worker's smaller stack, before it meets clang's own limits).
fn on_frontend_stack(
    run: impl FnOnce() -> crate::llvm::InProcessFrontend + Send + Copy,
) -> Result<crate::llvm::InProcessFrontend> {
    use crate::llvm::InProcessFrontend;
    let run = match crate::support::stack::on_main_thread(run) {
        Ok(ran) => return Ok(ran),
        Err(run) => run,
    };
    let ran = crate::support::stack::on_thread_of_its_own("clang-frontend", run);
    match ran {
        Ok(Ok(ran)) => Ok(ran),
        Ok(Err(_)) => anyhow::bail!("clang's frontend thread panicked"),
        Err(_) => Ok(InProcessFrontend::Declined(
            "no thread for the frontend".into(),
        )),
    }
}

/// Whether clang run as a process can list a unit's headers while
/// compiling it: the listing turns on `-sys-header-deps`, which adds system
/// headers to an `-MMD` dependency file. (In process, the list is asked of
/// the compiler proper directly and the dependency file is left alone.)
pub fn headers_listable(args: &[String]) -> bool {
    !args.iter().any(|a| a == "-MMD")
}

/// `support::list_headers` into `list`, for a clang process compiling with `args`,
/// where [`headers_listable`]; whether it will list them.
pub fn list_headers_where_listable(
    cmd: &mut Command,
    list: Option<&Path>,
    args: &[String],
) -> bool {
    match list.filter(|_| headers_listable(args)) {
        Some(list) => {
            crate::support::list_headers(cmd, list);
            true
        }
        None => false,
    }
}

/// The exit code a shell would report (128 + signal for a killed process).
pub fn exit_code(status: &std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// The frontend's arguments for a unit: the user's flags for it (from the
/// driver's plan), then the request for unoptimized bitcode on stdout.
pub fn frontend_args(
    unit_args: &[String],
    opt: OptLevel,
    discard_dep: Option<&Path>,
) -> Vec<String> {
    let mut args = unit_args.to_vec();
    args.extend(
        [
            "-c",
            "-emit-llvm",
            "-Xclang",
            "-disable-llvm-passes",
            "-o",
            "-",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    if opt == OptLevel::O0 {
        // At -O0 clang marks every function optnone, which would also stop
        // mem2reg; the code clang generates at -O0 is otherwise the same.
        args.extend(["-Xclang", "-disable-O0-optnone"].map(String::from));
    }
    if let Some(dep) = discard_dep {
        args.push("-MF".into());
        args.push(dep.display().to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_only_for_the_linked_clang() {
        assert!(InProcessClang::for_compiler(Path::new("/bin/sh")).is_none());
        assert!(InProcessClang::for_compiler(Path::new("/no/such/clang")).is_none());
        if std::env::var_os("REPOCC_EXTERNAL_FRONTEND").is_none() {
            let ours = Path::new(LLVM_PREFIX).join("bin/clang");
            assert!(InProcessClang::for_compiler(&ours).is_some());
        }
    }

    /// `text` as `unit.c` in a new directory, and the in-process clang;
    /// `None` when `REPOCC_EXTERNAL_FRONTEND` is set for this run.
    fn unit_for_in_process(
        text: &str,
    ) -> Option<(tempfile::TempDir, std::path::PathBuf, InProcessClang)> {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("unit.c");
        std::fs::write(&source, text).unwrap();
        let clang = Path::new(LLVM_PREFIX).join("bin/clang");
        let in_process = InProcessClang::for_compiler(&clang)?;
        Some((dir, source, in_process))
    }

    #[test]
    fn in_process_bitcode_and_diagnostics_are_the_process_ones() {
        let Some((dir, source, in_process)) = unit_for_in_process(
            "static int twice(int x) { return 2 * x; }\nint f(int y) { int unused; return twice(y); }\n",
        ) else {
            return;
        };
        let unit = vec![
            "-O2".to_string(),
            "-Wall".to_string(),
            source.display().to_string(),
        ];
        let args = frontend_args(&unit, OptLevel::O2, None);
        let a = in_process.run_frontend(&args, false, None, false).unwrap();
        let b = in_process
            .process
            .run_frontend(&args, false, None, false)
            .unwrap();
        assert_eq!(a.status, 0);
        assert!(a.process_reason.is_none(), "{:?}", a.process_reason);
        assert_eq!(a.bitcode, b.bitcode);
        assert!(a.bitcode.starts_with(b"BC"));
        assert_eq!(a.stderr, b.stderr);
        assert!(String::from_utf8_lossy(&a.stderr).contains("unused variable"));

        // The header list: the same lines as clang's CC_PRINT_HEADERS, and
        // with -MMD the dependency file as clang writes it without a list.
        std::fs::write(dir.path().join("local.h"), "#include <stdio.h>\n").unwrap();
        let lister = dir.path().join("lists.c");
        std::fs::write(
            &lister,
            "#include \"local.h\"\n#include \"./local.h\"\n#include <stdlib.h>\nint g;\n",
        )
        .unwrap();
        let run_in = |unit: &[String], list: &Path| {
            let args = frontend_args(unit, OptLevel::O2, None);
            let _ = std::fs::remove_file(list);
            let a = in_process
                .run_frontend(&args, false, Some(list), false)
                .unwrap();
            assert_eq!(a.status, 0, "{}", String::from_utf8_lossy(&a.stderr));
            assert!(a.headers_listed && a.process_reason.is_none());
            std::fs::read(list).unwrap()
        };
        let unit = vec![
            "-include".to_string(),
            "stddef.h".to_string(),
            lister.display().to_string(),
        ];
        let list = dir.path().join("list");
        let ours = run_in(&unit, &list);
        let args = frontend_args(&unit, OptLevel::O2, None);
        let _ = std::fs::remove_file(&list);
        let b = in_process
            .process
            .run_frontend(&args, false, Some(&list), false)
            .unwrap();
        assert!(b.headers_listed);
        let clangs = std::fs::read(&list).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&clangs)
        );
        assert!(String::from_utf8_lossy(&ours).contains("stdio.h"));

        let dep = |name: &str| dir.path().join(name).display().to_string();
        let mmd = |file: &str| {
            vec![
                "-MMD".to_string(),
                "-MF".to_string(),
                dep(file),
                lister.display().to_string(),
            ]
        };
        let plain = run_in(&[lister.display().to_string()], &list);
        let listed = run_in(&mmd("in.d"), &list);
        assert!(listed == plain, "-MMD changed the header list");
        let b = in_process
            .process
            .run_frontend(
                &frontend_args(&mmd("out.d"), OptLevel::O2, None),
                false,
                Some(&list),
                false,
            )
            .unwrap();
        assert!(
            !b.headers_listed,
            "clang as a process listed headers of an -MMD unit"
        );
        let in_d = std::fs::read_to_string(dep("in.d")).unwrap();
        assert_eq!(in_d, std::fs::read_to_string(dep("out.d")).unwrap());
        assert!(
            in_d.contains("local.h") && !in_d.contains("stdio.h"),
            "{in_d}"
        );

        // A command line the driver rejects is clang's to report.
        let mut bad = args.clone();
        bad.push("--no-such-option".into());
        let a = in_process.run_frontend(&bad, false, None, false).unwrap();
        assert_eq!(a.status, 1);
        assert!(a.process_reason.is_some());
        assert!(String::from_utf8_lossy(&a.stderr).contains("unknown argument"));
    }

    /// A whole compile in this process gives clang-19's object byte for
    /// byte (C with -g, C++ with templates and -O2 -g), its diagnostics
    /// and header list; errors give clang's exit code and leave no object.
    #[test]
    fn in_process_objects_are_clangs() {
        let Some((dir, source, in_process)) = unit_for_in_process(
            "#include <stdio.h>\nstatic int twice(int x) { return 2 * x; }\n\
             int f(int y) { int unused; return twice(y); }\n\
             int main(void) { printf(\"%d\\n\", f(3)); return 0; }\n",
        ) else {
            return;
        };
        // A test of this process that ran the pipeline's set-up may have
        // given LLVM options: the compile is declined then.
        if crate::llvm::llvm_options_set() {
            return;
        }
        let cxx = dir.path().join("unit.cc");
        std::fs::write(
            &cxx,
            "#include <map>\n#include <string>\n#include <vector>\n\
             template <class T> struct box { T v; T get() const { return v; } };\n\
             int count(const std::vector<std::string> &w) { std::map<std::string, int> m; \
             for (auto &s : w) m[s]++; box<int> b{(int)m.size()}; return b.get(); }\n",
        )
        .unwrap();
        let compile = |unit: &[&str], output: &Path, in_process_run: bool| {
            let mut args: Vec<String> = unit.iter().map(|a| a.to_string()).collect();
            args.extend(["-c".into(), "-o".into(), output.display().to_string()]);
            if in_process_run {
                let (status, stderr, _) = in_process.compile_in_process(&args, None).unwrap();
                (status, stderr)
            } else {
                let out = Command::new(&in_process.process.path)
                    .args(&args)
                    .output()
                    .unwrap();
                (exit_code(&out.status), out.stderr)
            }
        };
        let c = source.display().to_string();
        let cc = cxx.display().to_string();
        let units: [Vec<&str>; 3] = [
            vec!["-O0", "-g", "-Wall", &c],
            vec!["-x", "c++", "-O2", "-g", &cc],
            vec!["-x", "c++", "-O0", "-g", "-fPIC", &cc],
        ];
        for unit in &units {
            let ours = dir.path().join("ours.o");
            let theirs = dir.path().join("theirs.o");
            let a = compile(unit, &ours, true);
            let b = compile(unit, &theirs, false);
            assert_eq!(a.0, 0, "{unit:?}: {}", String::from_utf8_lossy(&a.1));
            assert_eq!(a.1, b.1, "{unit:?}: diagnostics");
            let (ours, theirs) = (
                std::fs::read(&ours).unwrap(),
                std::fs::read(&theirs).unwrap(),
            );
            assert!(ours.starts_with(b"\x7fELF"));
            assert!(ours == theirs, "{unit:?}: another object than clang-19's");
        }
        let warned = compile(&units[0], &dir.path().join("w.o"), true);
        assert!(String::from_utf8_lossy(&warned.1).contains("unused variable"));

        // The header list, as the bitcode frontend writes it.
        let list = dir.path().join("list");
        let mut args: Vec<String> = vec![c.clone(), "-c".into(), "-o".into()];
        args.push(dir.path().join("l.o").display().to_string());
        let (status, _, listed) = in_process.compile_in_process(&args, Some(&list)).unwrap();
        assert_eq!(status, 0);
        assert!(listed);
        assert!(String::from_utf8_lossy(&std::fs::read(&list).unwrap()).contains("stdio.h"));

        // A list that cannot be written (a full $TMPDIR, here /dev/full; a
        // directory that is not there): the compile goes on, as clang's
        // would, and says the list is not whole (it was a fatal LLVM error).
        let unlistable = [
            PathBuf::from("/dev/full"),
            dir.path().join("no-such-dir").join("list"),
        ];
        for list in unlistable
            .iter()
            .filter(|l| !l.starts_with("/dev") || l.exists())
        {
            let out = dir.path().join("u.o");
            let _ = std::fs::remove_file(&out);
            let mut args: Vec<String> = vec![c.clone(), "-c".into(), "-o".into()];
            args.push(out.display().to_string());
            let (status, _, listed) = in_process.compile_in_process(&args, Some(list)).unwrap();
            assert_eq!((status, listed), (0, false), "{}", list.display());
            assert!(std::fs::read(&out).unwrap().starts_with(b"\x7fELF"));
        }

        // An error: clang's text and exit code, and no object written.
        let broken = dir.path().join("broken.c");
        std::fs::write(&broken, "int f(void) { return undeclared; }\n").unwrap();
        let out = dir.path().join("broken.o");
        let b = broken.display().to_string();
        let (status, stderr) = compile(&[&b], &out, true);
        let (clang_status, clang_stderr) = compile(&[&b], &dir.path().join("b2.o"), false);
        assert_eq!((status, &stderr), (clang_status, &clang_stderr));
        assert_eq!(status, 1);
        assert!(!out.exists());

        // What the compiler proper cannot do here is declined, nothing run.
        for unit in [vec!["-S", &c[..]], vec!["-c", "-o", "-", &c[..]]] {
            let args: Vec<String> = unit.iter().map(|a| a.to_string()).collect();
            assert!(
                in_process.compile_in_process(&args, None).is_err(),
                "{unit:?}"
            );
        }
    }

    #[test]
    fn a_module_handed_over_reads_as_its_bitcode() {
        use crate::ir::canonical::{load_code, FrontendCode};
        use crate::ir::settings::CodegenSettings;
        use inkwell::context::Context;
        // Loops and branches (mem2reg's phis and their names), statics,
        // string constants, a switch.
        let Some((_dir, source, in_process)) = unit_for_in_process(
            "static int t[4] = {1, 2, 3, 4};\n\
             static int pick(int k) { switch (k) { case 0: return 5; case 1: return 7; default: return k; } }\n\
             const char *name(int k) { return k ? \"one\" : \"zero\"; }\n\
             int sum(int n, int *a) { int s = 0, p = 1; for (int i = 0; i < n; i++) { if (a[i] > 0) s += a[i] * p; else p = pick(i); } return s + t[n & 3]; }\n",
        ) else {
            return;
        };
        let args = frontend_args(
            &["-O2".to_string(), source.display().to_string()],
            OptLevel::O2,
            None,
        );
        let handed = in_process.run_frontend(&args, false, None, true).unwrap();
        assert_eq!(handed.status, 0);
        assert!(handed.bitcode.is_empty());
        let module = handed.module.expect("the module");
        let written = in_process
            .process
            .run_frontend(&args, false, None, true)
            .unwrap();
        assert!(written.module.is_none() && !written.bitcode.is_empty());

        fn canonical<'ctx>(code: FrontendCode<'_, 'ctx>, context: &'ctx Context) -> String {
            let settings = CodegenSettings::plain_o2();
            let unit = load_code(context, code, "unit.c", &settings, true).unwrap();
            unit.module.verify().unwrap();
            unit.module.print_to_string().to_string()
        }
        let from_module = module.run("unit.c", |context, _, m| {
            canonical(FrontendCode::Module(m), context)
        });
        let from_bitcode = crate::llvm::with_diagnostic_sink(|context, _| {
            canonical(FrontendCode::Bitcode(&written.bitcode), context)
        });
        assert_eq!(from_module, from_bitcode);
        assert!(from_module.contains(" phi "), "{from_module}");
    }

    #[test]
    fn asks_for_bitcode_without_optnone_at_o0() {
        let unit = vec!["a.c".to_string(), "-O0".to_string()];
        let a = frontend_args(&unit, OptLevel::O0, None);
        assert!(a
            .windows(2)
            .any(|w| w == ["-Xclang", "-disable-O0-optnone"]));
        assert!(a.windows(2).any(|w| w == ["-o", "-"]));
        let a = frontend_args(&unit, OptLevel::O2, Some(Path::new("/tmp/x.d")));
        assert!(!a.iter().any(|s| s == "-disable-O0-optnone"));
        assert_eq!(&a[a.len() - 2..], ["-MF", "/tmp/x.d"]);
    }
}
