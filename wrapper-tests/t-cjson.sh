# cJSON (Debian source) through the CMake toolchain file: CMake identifies
# repocc as Clang 19, passes its compiler checks, and cJSON's ctest suite
# (with the cJSON_Utils tests) passes. With debug_fragments, RelWithDebInfo
# and Debug builds pass it too; a one-function edit compiles that function,
# ten lines added at the top of cJSON.c compile almost nothing.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source cjson --skip-patches)
fresh_copy "$src" "$SCRATCH/cjson"
mkdir -p "$SCRATCH/cjson/build"
cd "$SCRATCH/cjson/build"

cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
  -DENABLE_CJSON_UTILS=On -DENABLE_CJSON_TEST=On -DCMAKE_BUILD_TYPE=Release .. > cmake.log 2>&1 \
  || { cat cmake.log; fail "cmake"; }
grep -q "The C compiler identification is Clang 19" cmake.log || fail "compiler not identified as Clang 19: $(grep identification cmake.log)"
grep -q 'set(CMAKE_C_COMPILER ".*/repocc")' CMakeFiles/*/CMakeCCompiler.cmake \
  || fail "CMake does not use repocc: $(grep 'set(CMAKE_C_COMPILER ' CMakeFiles/*/CMakeCCompiler.cmake)"
make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; fail "make"; }
ctest --output-on-failure > ctest.log 2>&1 || { cat ctest.log; fail "ctest"; }
tail -n 3 ctest.log
grep -q "100% tests passed, 0 tests failed out of 2[0-9]" ctest.log || fail "expected 20+ passing tests: $(tail -n 3 ctest.log)"
# (CMake's compiler checks are C without -O: compiled whole, not through
# the pipeline.)
compiles=$(stat_value compiles); whole=$(stat_value c_o0_units_whole)
note "units through the pipeline: $compiles; compiled whole: $whole; fallbacks: $(stat_value fallbacks)"
[ "$compiles" -ge 20 ] || fail "too few units through the pipeline"
[ "$(( compiles + whole ))" -ge 40 ] || fail "too few units compiled by repocc"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"

note "launcher form: CMAKE_C_COMPILER=clang-19, CMAKE_C_COMPILER_LAUNCHER=repocc"
"$REPOCC" --zero-stats >/dev/null
mkdir -p "$SCRATCH/cjson/build-launcher"
cd "$SCRATCH/cjson/build-launcher"
cmake -DCMAKE_C_COMPILER=clang-19 -DCMAKE_C_COMPILER_LAUNCHER=repocc \
  -DENABLE_CJSON_UTILS=On -DENABLE_CJSON_TEST=On -DCMAKE_BUILD_TYPE=Release .. > cmake.log 2>&1 \
  || { cat cmake.log; fail "cmake (launcher)"; }
make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; fail "make (launcher)"; }
ctest > ctest.log 2>&1 || { cat ctest.log; fail "ctest (launcher)"; }
grep -q "100% tests passed" ctest.log || fail "launcher build: tests failed"
launched=$(( $(stat_value compiles) + $(stat_value unit_hits) ))
objects=$(find . -name '*.o' | wc -l)
note "launcher build: $launched units through the pipeline or the unit cache ($(stat_value unit_hits) hits), $objects objects"
# CMake's own compiler checks do not use the launcher; every build object
# does (the same sources and arguments as the first build: without -g, the
# unit cache serves them in another build directory too).
assert_eq "every object through the pipeline or the unit cache" "$objects" "$launched"

note "debug_fragments: RelWithDebInfo (-O2 -g) and Debug (-O0 -g) builds, a one-function edit, ten lines added"
export REPOCC_DEBUG_FRAGMENTS=1
for type in RelWithDebInfo Debug; do
  fresh_copy "$src" "$SCRATCH/cjson-$type"
  mkdir -p "$SCRATCH/cjson-$type/build"
  cd "$SCRATCH/cjson-$type/build"
  cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
    -DENABLE_CJSON_UTILS=On -DENABLE_CJSON_TEST=On -DCMAKE_BUILD_TYPE=$type .. > cmake.log 2>&1 \
    || { cat cmake.log; fail "cmake ($type)"; }
  make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; fail "make ($type)"; }
  object=$(find . -name 'cJSON.c.o' -path '*cjson.dir*' | head -n 1)
  [ -n "$object" ] || object=$(find . -name 'cJSON.c.o' | head -n 1)
  [ -f "$object" ] || fail "no cJSON.c.o ($type)"
  llvm-dwarfdump-19 --verify "$object" > /dev/null || fail "DWARF of cJSON.o does not verify ($type)"
  ctest > ctest.log 2>&1 || { cat ctest.log; fail "ctest ($type)"; }
  # One function edited, no line moved: that function (and what may
  # inline it) is compiled, in cJSON.c's unit and once more for the units
  # that include cJSON.c whole (the tests): they share its fragments.
  sed -i 's|sprintf(version, "%i.%i.%i", CJSON_VERSION_MAJOR|sprintf(version, "%i.%i.%i ", CJSON_VERSION_MAJOR|' ../cJSON.c
  grep -q '"%i.%i.%i "' ../cJSON.c || fail "the edit did not apply"
  "$REPOCC" --zero-stats > /dev/null
  make -j"$JOBS" > build2.log 2>&1 || { tail -n 40 build2.log; fail "make after the edit ($type)"; }
  compiled=$(stat_value definitions_compiled); total=$(stat_value definitions_total)
  units=$(stat_value compiles)
  note "$type: one-function edit: $compiled of $total definitions compiled in $units units"
  [ "$units" -ge 3 ] && [ "$compiled" -ge 2 ] && [ "$compiled" -lt "$units" ] \
    || fail "$type: the edit compiled $compiled definitions in $units units"
  [ "$(stat_value definitions_shared)" -gt 0 ] || fail "$type: the units that include cJSON.c share nothing"
  # Ten lines at the top: every line of cJSON.c moves; the library's
  # fragments are reused. (The tests, which include cJSON.c and may
  # inline its functions into their own, hold its lines as they are:
  # theirs are compiled again.)
  python3 -c 'import sys; p = sys.argv[1]; t = open(p).read(); open(p, "w").write("/*\n" + " * moved\n" * 8 + " */\n" + t)' ../cJSON.c
  "$REPOCC" --zero-stats > /dev/null
  make -j"$JOBS" cjson > build3.log 2>&1 || { tail -n 40 build3.log; fail "make cjson after adding lines ($type)"; }
  compiled=$(stat_value definitions_compiled); total=$(stat_value definitions_total)
  note "$type: ten lines added: $compiled of $total definitions of the library compiled"
  [ "$total" -ge 50 ] || fail "$type: expected cJSON.c's definitions, found $total"
  [ $((compiled * 10)) -le "$total" ] || fail "$type: adding ten lines compiled $compiled of $total definitions"
  make -j"$JOBS" > build4.log 2>&1 || { tail -n 40 build4.log; fail "make after adding lines ($type)"; }
  llvm-dwarfdump-19 --verify "$object" > /dev/null || fail "DWARF of the shifted cJSON.o does not verify ($type)"
  ctest > ctest.log 2>&1 || { cat ctest.log; fail "ctest after adding lines ($type)"; }
  grep -q "100% tests passed" ctest.log || fail "$type: tests failed after adding lines"
done
unset REPOCC_DEBUG_FRAGMENTS
