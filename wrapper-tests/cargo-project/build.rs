fn main() {
    cc::Build::new()
        .file("csrc/checksum.c")
        .file("csrc/table.c")
        .opt_level(2)
        .compile("checks");
    println!("cargo:rerun-if-changed=csrc");
}
