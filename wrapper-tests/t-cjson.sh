# cJSON (Debian source) through the CMake toolchain file: CMake identifies
# repocc as Clang 19, passes its compiler checks, and cJSON's ctest suite
# (with the cJSON_Utils tests) passes.
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
compiles=$(stat_value compiles)
note "units through the pipeline: $compiles; fallbacks: $(stat_value fallbacks)"
[ "$compiles" -ge 40 ] || fail "too few units through the pipeline"
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
