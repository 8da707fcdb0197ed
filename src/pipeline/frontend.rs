//! Stage 1, the frontend: clang-19 with the user's flags, asked for
//! unoptimized bitcode on stdout (`-emit-llvm -Xclang -disable-llvm-passes`).
//! clang writes diagnostics and the dependency file itself, so both are
//! exactly what the user would get from clang.
//!
//! A [`Clang`] runner stands in front of the real compiler, so tests can
//! substitute a failing or odd one.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::pipeline::settings::OptLevel;

/// Set in the environment of every compiler repocc runs; finding it set at
/// start-up means the "compiler" ran repocc again (see `driver::toolchain`).
pub const RECURSION_GUARD: &str = "REPOCC_RECURSION_GUARD";

/// What the frontend produced.
#[derive(Debug)]
pub struct FrontendOutput {
    /// clang's exit code (0 on success).
    pub status: i32,
    /// The bitcode (empty if `status != 0`).
    pub bitcode: Vec<u8>,
    /// clang's stderr, captured: the driver prints it once the unit is
    /// done (or clang's own compile replaces it, see `driver`).
    pub stderr: Vec<u8>,
}

pub trait Clang: Sync {
    fn path(&self) -> &Path;
    /// Runs the frontend with its stderr captured; `force_color` adds
    /// `-fcolor-diagnostics` (our stderr is a colour terminal); clang
    /// appends the headers it opens to `header_list` (see [`list_headers`]).
    fn run_frontend(
        &self,
        args: &[String],
        force_color: bool,
        header_list: Option<&Path>,
    ) -> Result<FrontendOutput>;
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
    ) -> Result<FrontendOutput> {
        let mut cmd = Command::new(&self.path);
        if let Some(list) = header_list {
            list_headers(&mut cmd, list);
        }
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
            stderr: out.stderr,
        })
    }
}

/// Has clang append every header it opens (system headers included,
/// whatever the `-M` options) to `list`, one path per line: the driver's
/// `CC_PRINT_HEADERS` interface, which passes `-header-include-file` and
/// `-sys-header-deps` to the compiler proper.
pub fn list_headers(cmd: &mut Command, list: &Path) {
    cmd.env("CC_PRINT_HEADERS", "1")
        .env("CC_PRINT_HEADERS_FILE", list);
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
