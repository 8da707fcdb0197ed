//! Builds the tiny C++ shim (shim/repocc_shim.cpp) against the llvm-19-dev
//! headers. LLVM itself is linked statically by llvm-sys (inkwell).
use std::path::PathBuf;

fn main() {
    let prefix = PathBuf::from(
        std::env::var("LLVM_SYS_191_PREFIX").unwrap_or_else(|_| "/usr/lib/llvm-19".into()),
    );
    println!("cargo:rerun-if-changed=shim/repocc_shim.cpp");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_191_PREFIX");
    cc::Build::new()
        .cpp(true)
        .file("shim/repocc_shim.cpp")
        .include(prefix.join("include"))
        .flag("-std=c++17")
        .flag("-fno-rtti")
        .flag("-fno-exceptions")
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        // LLVM is built without assertions; class layouts must match.
        .define("NDEBUG", None)
        .warnings(false)
        .compile("repocc_shim");
    // A position-dependent executable: it holds all of LLVM, and as a PIE
    // every start applied ~170,000 relative relocations and copied the
    // pages they touch, about half of a unit cache hit's time. The code
    // stays position-independent; only the executable's link changes.
    println!("cargo:rustc-link-arg-bins=-no-pie");
}
