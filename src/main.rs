//! repocc: a drop-in clang-19 driver. `argv[0]` chooses the language
//! (`repocc` for C, `repocc++` for C++); a first argument that is one of
//! repocc's own commands runs the admin CLI (`cli.rs`); `--version` alone
//! prints clang's version text and then repocc's; anything else is a
//! compiler invocation (`driver`).

/// `eprintln!` that never panics: a stderr that cannot be written (closed,
/// a broken pipe) loses the message, as clang's own messages would be
/// lost, instead of failing the compile it was about.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod cli;
mod config;
mod driver;
mod ir;
mod llvm;
mod obj;
mod pipeline;
mod repo;
mod support;
mod unit_cache;

/// jemalloc, for LLVM's allocations too: with its `malloc` and `free`
/// unprefixed, the C++ side (clang, the passes, code generation) uses it
/// as well. glibc's allocator cost a fifth of a C++ unit's CPU time
/// (fmt's format-test.cc at `-O2`: 14.4 s of user time against 11.7 s);
/// rustc links jemalloc for the same reason.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use std::ffi::OsString;
use std::io::Write;
use std::process::{Command, Stdio};

fn print_version(argv0: &str) -> i32 {
    let loaded = config::load();
    let name = match driver::toolchain::DriverKind::from_argv0(argv0) {
        driver::toolchain::DriverKind::C => loaded.config.clang,
        driver::toolchain::DriverKind::Cxx => loaded.config.clangxx,
    };
    let code = match driver::toolchain::resolve_compiler(&name) {
        Ok(clang) => Command::new(clang)
            .arg("--version")
            .env(driver::toolchain::RECURSION_GUARD, "1")
            .stdout(Stdio::inherit())
            .status()
            .map(|s| s.code().unwrap_or(1))
            .unwrap_or(1),
        Err(e) => {
            say!("repocc: error: {e:#}");
            1
        }
    };
    // As clang's: a reader that stops early (`| head -1`) is no error.
    let _ = writeln!(
        std::io::stdout(),
        "repocc {} (in-process LLVM {} pipeline)",
        env!("CARGO_PKG_VERSION"),
        llvm::llvm_version()
    );
    code
}

fn main() {
    support::interrupts::install(support::interrupts::InterruptHooks {
        remove_file: llvm::remove_file_on_interrupt,
        keep_file: llvm::keep_file_on_interrupt,
        remove_directory: llvm::remove_directory_on_interrupt,
        keep_directory: llvm::keep_directory_on_interrupt,
    });
    let mut argv: Vec<OsString> = std::env::args_os().collect();
    let argv0 = argv
        .first()
        .map(|a| a.to_string_lossy().into_owned())
        .unwrap_or_else(|| "repocc".into());
    let args: Vec<OsString> = argv.drain(1..).collect();
    let first = args.first().and_then(|a| a.to_str()).unwrap_or("");

    // A compile sets LLVM up when it needs it (a unit cache hit never
    // does); everything else may use it anywhere.
    let version = first == "--version" && args.len() == 1;
    if cli::is_admin_command(first) || version {
        llvm::initialize();
    }
    let code = if cli::is_admin_command(first) {
        cli::run(
            args.iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
        )
    } else if version {
        print_version(&argv0)
    } else {
        driver::run(&argv0, args)
    };
    std::process::exit(code);
}
