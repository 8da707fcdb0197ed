# fmtlib (C++, Debian source with its patch for the system googletest)
# through the CMake toolchain file with repocc++: CMake identifies Clang 19,
# the library, googletest and the tests build at fmt's default -O3, and the
# whole ctest suite passes (including compile-error-test, which checks that
# bad code fails to compile, and the CMake sub-project tests).
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source fmtlib)
fresh_copy "$src" "$SCRATCH/fmt"
mkdir -p "$SCRATCH/fmt/build"
cd "$SCRATCH/fmt/build"

cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
  -DFMT_DOC=off -DFMT_PEDANTIC=on -DFMT_TEST=on .. > cmake.log 2>&1 || { cat cmake.log; fail "cmake"; }
grep -q "The CXX compiler identification is Clang 19" cmake.log || fail "C++ compiler not identified as Clang 19"
grep -q 'set(CMAKE_CXX_COMPILER ".*/repocc++")' CMakeFiles/*/CMakeCXXCompiler.cmake || fail "CMake does not use repocc++"
make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; fail "make"; }
ctest -j"$JOBS" --output-on-failure > ctest.log 2>&1 || { tail -n 60 ctest.log; fail "ctest"; }
tail -n 3 ctest.log
grep -q "100% tests passed, 0 tests failed out of 2[0-9]" ctest.log || fail "expected 20+ passing tests"
compiles=$(stat_value compiles)
note "units through the pipeline: $compiles; fallbacks: $(stat_value fallbacks); compile errors (compile-error-test): $(stat_value compile_errors)"
[ "$compiles" -ge 30 ] || fail "too few units through the pipeline"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"
