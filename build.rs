//! Builds the C++ shim against the llvm-19-dev and libclang-19-dev
//! headers (shim/*.cpp, one job per file, warnings fatal) and generates the
//! Rust declarations of its C interface from shim/repocc_shim.h (see
//! build/shim_ffi.rs). LLVM itself is linked statically by llvm-sys
//! (inkwell); clang's static libraries are linked here.
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build/shim_ffi.rs"]
mod shim_ffi;

/// The shim's files: what the C API lacks, by job (see shim/shim_internal.h).
const SHIM_SOURCES: &[&str] = &[
    "shim/target.cpp",
    "shim/extract.cpp",
    "shim/queries.cpp",
    "shim/debug_types.cpp",
    "shim/passes.cpp",
    "shim/bodies.cpp",
    "shim/line_rebase.cpp",
    "shim/batch.cpp",
    "shim/interrupts.cpp",
    "shim/frontend.cpp",
    "shim/startup.cpp",
];

/// The static clang libraries the in-process frontend needs (the driver,
/// the compiler proper and bitcode generation).
const CLANG_LIBRARIES: &[&str] = &[
    "clangCodeGen",
    "clangFrontend",
    "clangDriver",
    "clangSerialization",
    "clangParse",
    "clangSema",
    "clangAPINotes",
    "clangAnalysis",
    "clangASTMatchers",
    "clangEdit",
    "clangRewrite",
    "clangAST",
    "clangSupport",
    "clangLex",
    "clangBasic",
];

/// A linker script fragment (the default layout, plus one section): the
/// `.init_array` entries of the archives that hold LLVM (llvm-sys's
/// bundle, and LLVM's own archives linked again after clang's), clang's
/// and the shim's go to `repocc_llvm_init`, which the C library does not
/// run at start; `repocc_run_deferred_initializers` runs them.
const DEFERRED_INITIALIZERS_SCRIPT: &str = "\
SECTIONS {
  repocc_llvm_init : {
    KEEP(*libllvm_sys-*.rlib:*(.init_array .init_array.*))
    KEEP(*libLLVM*.a:*(.init_array .init_array.*))
    KEEP(*libclang*.a:*(.init_array .init_array.*))
    KEEP(*librepocc_shim.a:*(.init_array .init_array.*))
  }
} INSERT AFTER .init_array;
";

fn main() {
    let prefix = PathBuf::from(
        std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-19".into()),
    );
    println!("cargo:rerun-if-changed=shim");
    println!("cargo:rerun-if-changed=build/shim_ffi.rs");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    println!("cargo:rustc-env=REPOCC_LLVM_PREFIX={}", prefix.display());
    generate_ffi();
    cc::Build::new()
        .cpp(true)
        .files(SHIM_SOURCES)
        // LLVM's and clang's headers as system headers: their warnings are
        // not the shim's.
        .flag("-isystem")
        .flag(
            prefix
                .join("include")
                .to_str()
                .expect("a UTF-8 LLVM prefix"),
        )
        .flag("-std=c++17")
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        // LLVM is built without assertions; class layouts must match.
        .define("NDEBUG", None)
        .warnings(true)
        .extra_warnings(true)
        // A function with C linkage the header does not declare is one the
        // Rust side cannot have checked.
        .flag("-Wmissing-declarations")
        .warnings_into_errors(true)
        // libstdc++ is linked statically, in `link_clang`'s group.
        .cpp_link_stdlib(None)
        .compile("repocc_shim");
    link_clang(&prefix);
    // A position-dependent executable: it holds all of LLVM, and as a PIE
    // every start applied ~170,000 relative relocations and copied the
    // pages they touch, about half of a unit cache hit's time. The code
    // stays position-independent; only the executable's link changes.
    println!("cargo:rustc-link-arg-bins=-no-pie");
    // LLVM's, clang's and the shim's static initializers in a section of
    // their own, run when LLVM is first needed (see shim/startup.cpp).
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let script = out.join("deferred-initializers.ld");
    std::fs::write(&script, DEFERRED_INITIALIZERS_SCRIPT)
        .unwrap_or_else(|e| panic!("writing {}: {e}", script.display()));
    println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    // The linker's digest of the whole executable, which repocc uses as its
    // own identity (src/repo/identity.rs) instead of hashing itself.
    println!("cargo:rustc-link-arg-bins=-Wl,--build-id=sha1");
}

/// The path of libstdc++'s static archive, as the C++ compiler that builds
/// the shim finds it. Linked statically: Debian's LLVM is built with RTTI,
/// and each class's type_info points into libstdc++, so the shared library
/// cost every start ~5,500 symbol relocations and a copy of each page they
/// touch (llvm-sys is kept from linking the shared one as well by
/// `LLVM_SYS_LIBCPP` in .cargo/config.toml).
fn static_libstdcxx() -> String {
    let compiler = cc::Build::new().cpp(true).get_compiler();
    let found = Command::new(compiler.path())
        .arg("-print-file-name=libstdc++.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| Path::new(p).is_absolute() && Path::new(p).exists());
    found.unwrap_or_else(|| {
        panic!(
            "{} -print-file-name=libstdc++.a names no archive: install libstdc++-12-dev",
            compiler.path().display()
        )
    })
}

/// Writes `$OUT_DIR/shim_ffi.rs`, which src/llvm/ffi.rs includes.
fn generate_ffi() {
    let header = std::fs::read_to_string("shim/repocc_shim.h")
        .unwrap_or_else(|e| panic!("reading shim/repocc_shim.h: {e}"));
    let rust = shim_ffi::generate(&header).unwrap_or_else(|e| panic!("shim/repocc_shim.h: {e}"));
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("shim_ffi.rs"), rust)
        .unwrap_or_else(|e| panic!("writing shim_ffi.rs: {e}"));
}

/// Links clang's static libraries, and LLVM's once more after them: clang's
/// libraries refer to each other in cycles and to LLVM components llvm-sys
/// may have placed earlier on the command line, so they go last, in one
/// group the linker rescans until nothing new resolves.
fn link_clang(prefix: &Path) {
    let lib = prefix.join("lib");
    let mut archives = Vec::new();
    for name in CLANG_LIBRARIES {
        let archive = lib.join(format!("lib{name}.a"));
        if !archive.exists() {
            panic!(
                "{} is missing: install libclang-19-dev (scripts/install-deps.sh)",
                archive.display()
            );
        }
        archives.push(archive.display().to_string());
    }
    let llvm_config = prefix.join("bin/llvm-config");
    let output = Command::new(&llvm_config)
        .args(["--link-static", "--libfiles", "all"])
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", llvm_config.display()));
    assert!(
        output.status.success(),
        "{} --link-static --libfiles all failed",
        llvm_config.display()
    );
    let llvm_archives = String::from_utf8_lossy(&output.stdout).into_owned();
    archives.push(static_libstdcxx());
    println!("cargo:rustc-link-arg=-Wl,--start-group");
    for archive in archives
        .iter()
        .map(String::as_str)
        .chain(llvm_archives.split_whitespace())
    {
        println!("cargo:rustc-link-arg={archive}");
    }
    println!("cargo:rustc-link-arg=-Wl,--end-group");
}
