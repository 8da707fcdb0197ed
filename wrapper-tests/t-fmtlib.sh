# fmtlib (C++, Debian source with its patch for the system googletest)
# through the CMake toolchain file with repocc++: CMake identifies Clang 19,
# the library, googletest and the tests build at fmt's default -O3, and the
# whole ctest suite passes (including compile-error-test, which checks that
# bad code fails to compile, and the CMake sub-project tests).
# The units share their template instances and inline functions (also with
# -g: see the end): of the
# COMDAT definitions that repeat across the objects, at least 90% are
# reused from another unit (`definitions_shared`), and every object equals
# the one the same unit gets when the units are compiled in reverse order
# into another empty repository. Random edits to some units and the
# headers give warm objects equal to cold ones (see the end).
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source fmtlib)
fresh_copy "$src" "$SCRATCH/fmt"
mkdir -p "$SCRATCH/fmt/build"
cd "$SCRATCH/fmt/build"

cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
  -DFMT_DOC=off -DFMT_PEDANTIC=on -DFMT_TEST=on -DCMAKE_EXPORT_COMPILE_COMMANDS=ON .. > cmake.log 2>&1 || { cat cmake.log; fail "cmake"; }
grep -q "The CXX compiler identification is Clang 19" cmake.log || fail "C++ compiler not identified as Clang 19"
grep -q 'set(CMAKE_CXX_COMPILER ".*/repocc++")' CMakeFiles/*/CMakeCXXCompiler.cmake || fail "CMake does not use repocc++"
make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; fail "make"; }
# Weak (COMDAT) definitions summed over the objects, less the distinct
# ones: what a build without sharing compiles more than once. (The objects
# hold the groups clang's do: t-repository checks that discardable
# definitions are kept only where referenced, as clang keeps them.)
find . -name '*.o' -print0 | xargs -0 nm --defined-only 2>/dev/null | awk '$2 == "W" || $2 == "V" {print $3}' > weak.txt
repeats=$(( $(wc -l < weak.txt) - $(sort -u weak.txt | wc -l) ))
shared=$(stat_value definitions_shared)
note "COMDAT definitions repeated across objects: $repeats; definitions_shared: $shared; pruned: $(stat_value definitions_pruned) of $(stat_value definitions_total)"
[ "$repeats" -gt 1000 ] || fail "too few repeated COMDAT definitions ($repeats) to test sharing"
[ $(( shared * 10 )) -ge $(( repeats * 9 )) ] || fail "only $shared definitions reused from another unit for $repeats repeated ones"
ctest -j"$JOBS" --output-on-failure > ctest.log 2>&1 || { tail -n 60 ctest.log; fail "ctest"; }
tail -n 3 ctest.log
grep -q "100% tests passed, 0 tests failed out of 2[0-9]" ctest.log || fail "expected 20+ passing tests"
compiles=$(stat_value compiles)
note "units through the pipeline: $compiles; fallbacks: $(stat_value fallbacks); compile errors (compile-error-test): $(stat_value compile_errors)"
[ "$compiles" -ge 30 ] || fail "too few units through the pipeline"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"

note "the units compiled in reverse order into an empty repository give the same objects"
REPOCC_DIR="$SCRATCH/repo-reverse" python3 "$WT_ROOT/replay-reverse.py" "$PWD" "$SCRATCH/reverse" "$JOBS" > reverse.log \
  || { cat reverse.log; fail "objects differ with the units compiled in reverse order"; }
cat reverse.log

note "-O0 code is clang's: .text of the library's and some tests' objects within 2% of clang-19's"
# ostream-test and format-test share make_format_args<date> (always_inline
# callees: their stack slots once followed each unit's function order) and
# name format_custom_arg<date>, which differs between them (it was left
# out when only the stored code used it): either order, the same objects.
O0_UNITS="src/format.cc src/os.cc test/ostream-test.cc test/format-test.cc test/core-test.cc test/ranges-test.cc"
REVERSED=$(echo $O0_UNITS | tr ' ' '\n' | tac | tr '\n' ' ')
# The three sets of compiles are independent: $JOBS at a time.
pool_start O0-forward.log env REPOCC_DIR="$SCRATCH/repo-O0" python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/O0/repocc" "$REPOCCXX" -O0 $O0_UNITS
pool_start O0-reverse.log env REPOCC_DIR="$SCRATCH/repo-O0-reverse" python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/O0/reverse" "$REPOCCXX" -O0 $REVERSED
pool_start O0-clang.log python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/O0/clang" clang++-19 -O0 $O0_UNITS
pool_wait "-O0 compiles (repocc++ forward and reverse, clang++-19)"
for o in "$SCRATCH"/O0/repocc/*.o; do
  cmp -s "$o" "$SCRATCH/O0/reverse/$(basename "$o")" || fail "-O0 $(basename "$o" .o): another object with the units compiled in reverse order"
done
text_bytes() { size -A "$1" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }'; }
for o in "$SCRATCH"/O0/clang/*.o; do
  ours=$(text_bytes "$SCRATCH/O0/repocc/$(basename "$o")"); theirs=$(text_bytes "$o")
  note "-O0 $(basename "$o" .o): .text $ours bytes, clang-19's $theirs"
  [ $(( ours * 100 )) -le $(( theirs * 102 )) ] && [ $(( ours * 100 )) -ge $(( theirs * 98 )) ] \
    || fail "-O0 $(basename "$o" .o): .text $ours bytes, clang-19's $theirs"
done

# With debug info: the library and some tests, C++ units through the
# repository (the default at -O2 -g; debug_fragments = true at -O0 -g): the
# units share what they instantiate alike (fragments declare the classes
# they name), compiled in reverse order they give the same objects, the
# DWARF verifies, and ostream-test linked from them passes.
G_UNITS="src/format.cc src/os.cc test/gtest-extra.cc test/util.cc test/args-test.cc test/assert-test.cc test/ostream-test.cc"
G_REVERSED=$(echo $G_UNITS | tr ' ' '\n' | tac | tr '\n' ' ')
for O in "-O2 -g" "-O0 -g"; do
  tag=$(echo "$O" | tr -d ' -')
  case "$O" in -O0*) export REPOCC_DEBUG_FRAGMENTS=true ;; *) unset REPOCC_DEBUG_FRAGMENTS ;; esac
  export REPOCC_DIR="$SCRATCH/repo-$tag"
  pool_start "$tag.log" python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/$tag/repocc" "$REPOCCXX" "$O" $G_UNITS
  pool_start "$tag-reverse.log" env REPOCC_DIR="$SCRATCH/repo-$tag-reverse" python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/$tag/reverse" "$REPOCCXX" "$O" $G_REVERSED
  pool_start "$tag-clang.log" python3 "$WT_ROOT/recompile.py" "$PWD" "$SCRATCH/$tag/clang" clang++-19 "$O" $G_UNITS
  pool_wait "$O compiles (repocc++ forward and reverse, clang++-19)"
  nm --defined-only "$SCRATCH/$tag"/clang/*.o 2>/dev/null | awk '$2 == "W" || $2 == "V" {print $3}' > "weak-$tag.txt"
  repeats=$(( $(wc -l < "weak-$tag.txt") - $(sort -u "weak-$tag.txt" | wc -l) ))
  shared=$(stat_value definitions_shared)
  note "$O: COMDAT definitions repeated across clang-19's objects: $repeats; definitions_shared: $shared; whole: $(stat_value debug_units_whole); fallbacks: $(stat_value fallbacks); objects $(du -cb "$SCRATCH/$tag"/repocc/*.o | tail -n 1 | cut -f1) bytes, clang-19's $(du -cb "$SCRATCH/$tag"/clang/*.o | tail -n 1 | cut -f1)"
  assert_eq "$O: units compiled whole" 0 "$(stat_value debug_units_whole)"
  assert_eq "$O: units that went to clang" 0 "$(stat_value fallbacks)"
  [ $(( shared * 10 )) -ge $(( repeats * 9 )) ] \
    || fail "$O: only $shared definitions reused from another unit for $repeats repeated ones"
  for o in "$SCRATCH/$tag"/repocc/*.o; do
    cmp -s "$o" "$SCRATCH/$tag/reverse/$(basename "$o")" || fail "$O $(basename "$o" .o): another object with the units compiled in reverse order"
  done
  llvm-dwarfdump-19 --verify "$SCRATCH/$tag/repocc/ostream-test.cc.o" > "verify-$tag.log" 2>&1 \
    || { tail -n 20 "verify-$tag.log"; fail "$O: the DWARF of ostream-test.o does not verify"; }
done
unset REPOCC_DEBUG_FRAGMENTS
note "-O2 -g: ostream-test linked from the library and test objects built through the repository"
G="$SCRATCH/O2g/repocc"
"$REPOCCXX" -O2 -g "$G/ostream-test.cc.o" "$G/gtest-extra.cc.o" "$G/util.cc.o" test/CMakeFiles/test-main.dir/test-main.cc.o \
  "$G/format.cc.o" "$G/os.cc.o" lib/libgmock.a lib/libgtest.a -pthread -o ostream-test-g \
  > link-g.log 2>&1 || { cat link-g.log; fail "linking ostream-test (-O2 -g)"; }
./ostream-test-g > ostream-test-g.log 2>&1 || { tail -n 30 ostream-test-g.log; fail "ostream-test (-O2 -g) fails"; }
grep -q "PASSED" ostream-test-g.log || fail "ostream-test (-O2 -g) did not pass: $(tail -n 5 ostream-test-g.log)"

# C++ edit fuzzing (DESIGN.md invariant 4): random edits to the library's
# and a test's sources and to fmt's headers (moved lines, changed literals
# in functions and in the headers' templates, appended functions that
# instantiate new standard templates, reverts), each round compiled at
# -O2 -g into the repository above (which holds every earlier round's
# fragments) and into an empty one: the same objects, byte for byte.
# A new seed each run, printed; REPOCC_FUZZ_SEED=<seed> replays it,
# REPOCC_FUZZ_ROUNDS_CXX sets the rounds (default 3).
seed=${REPOCC_FUZZ_SEED:-$(python3 -c 'import random; print(random.SystemRandom().randrange(1, 1 << 31))')}
note "C++ edit fuzzing at -O2 -g, seed $seed (replay with REPOCC_FUZZ_SEED=$seed)"
(cd .. && python3 "$WT_ROOT/fuzz/cxx_edit_fuzz.py" --build build --compiler "$REPOCCXX" --flags="-O2 -g" \
  --headers include/fmt --work "$SCRATCH/cxx-fuzz" --warm-repo "$SCRATCH/repo-O2g" \
  --seed "$seed" --rounds "${REPOCC_FUZZ_ROUNDS_CXX:-3}" src/format.cc src/os.cc test/args-test.cc) > cxx-fuzz.log 2>&1 \
  || { tail -n 30 cxx-fuzz.log; fail "C++ edit fuzzing found a difference (seed $seed)"; }
tail -n 1 cxx-fuzz.log
