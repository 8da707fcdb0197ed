# gcc's C execution torture tests (Debian's gcc-12 source), a third-party
# suite of small programs that each check one corner of C (bit-fields,
# builtins, alignment, unusual control flow): built by clang-19 and by
# repocc at -O2, every test into one shared repository, so that one test
# may take what another stored. Where clang-19's program passes, repocc's
# must pass and print the same; each object must equal the object the
# same test gets compiled alone into an empty repository. It found
# variables whose alignment the optimizer raised for their users (a
# stored variable placed with less than a recompiled user assumed).
source "$(dirname "$0")/lib.sh"
tests=$(fetch_gcc_torture)
export REPOCC_DIR="$SCRATCH/torture/repo-shared"  # torture.py's shared repository
python3 "$WT_ROOT/torture.py" --tests "$tests" --repocc "$REPOCC" --work "$SCRATCH/torture" \
  --flags="-O2" --jobs "$JOBS" | tee "$SCRATCH/torture.log" || fail "a torture test differs (see above)"
ran=$(sed -n 's/.*; ran \([0-9]*\),.*/\1/p' "$SCRATCH/torture.log")
[ "${ran:-0}" -ge 1200 ] || fail "only ${ran:-0} torture programs ran"
shared=$(stat_value definitions_shared)
[ "$shared" -ge 100 ] || fail "the tests took only $shared definitions from each other: the shared repository was not exercised"
note "$ran programs ran as clang-19's did; $shared definitions taken from other tests, every object the cold one"
