# A Rust crate whose build script compiles C with the `cc` crate under
# CC=repocc, linked with `-C linker=repocc`: it builds, and the program runs
# and prints the right answers (Adler-32 of "Wikipedia" is 11e60398).
source "$(dirname "$0")/lib.sh"
cp -a "$WT_ROOT/cargo-project" "$SCRATCH/crate"
cd "$SCRATCH/crate"
export CARGO_TARGET_DIR="$SCRATCH/target"
CC=repocc RUSTFLAGS="-C linker=repocc" cargo build --release -q 2> build.err \
  || { cat build.err; fail "cargo build"; }
out=$("$CARGO_TARGET_DIR/release/repocc-cargo-check")
assert_eq "program output" "adler32=11e60398 primes=18 calls=2" "$out"
assert_eq "C units through the pipeline" 2 "$(stat_value compiles)"
links=$(stat_value links)
[ "$links" -ge 1 ] || fail "rustc did not link through repocc"
note "cc crate units compiled: 2; links through repocc: $links"
