# The unit cache: a rebuild without changes is served whole (objects and
# dependency files byte-identical, the programs still pass their checks);
# header edits, a shadowing header, a changed -D, __TIME__, a file newer
# than the compile, -Werror and corrupt entries behave as clang-19 would.
source "$(dirname "$0")/lib.sh"
P="$WT_ROOT/programs"

# same_files DIR1 DIR2 PATTERN: every file matching PATTERN in DIR1 has an
# identical twin in DIR2.
same_files() {
  local n=0 f
  while IFS= read -r f; do
    cmp -s "$1/$f" "$2/$f" || fail "$f differs from the first build's"
    n=$((n + 1))
  done < <(cd "$1" && find . -name "$3" | sort)
  [ "$n" -gt 0 ] || fail "no $3 files in $1"
  echo "$n"
}

note "lua5.4 -O2 -g -MD: make clean && make is served by the unit cache"
src=$(fetch_debian_source lua5.4 --skip-patches)
fresh_copy "$src" "$SCRATCH/lua"
cd "$SCRATCH/lua"
lua_make() { make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -MD" > "$1" 2>&1 || { tail -n 20 "$1"; fail "lua: $1"; }; }
lua_make build1.log
units=$(ls src/*.o | wc -l)
assert_eq "cold: every unit a miss" "$units" "$(stat_value unit_misses)"
rm -rf ../lua-first && mkdir ../lua-first && cp src/*.o src/*.d ../lua-first/
make clean > /dev/null
"$REPOCC" --zero-stats > /dev/null
lua_make build2.log
assert_eq "warm: every unit a hit" "$units" "$(stat_value unit_hits)"
assert_eq "warm: no misses" 0 "$(stat_value unit_misses)"
assert_eq "warm: nothing compiled" 0 "$(stat_value compiles)"
assert_eq "warm: nothing compiled by clang" 0 "$(stat_value debug_units_whole)"
n=$(same_files ../lua-first src '*.o'); d=$(same_files ../lua-first src '*.d')
note "warm lua: $n objects and $d dependency files identical"
out=$(src/lua "$P/checks.lua") || fail "checks.lua: $out"
assert_contains "warm lua" "lua checks: 31 passed, 0 failed" "$out"
"$REPOCC" --show-stats | has 'Unit cache hits: +[0-9]+ / [0-9]+ \(100\.0 %\)' \
  || fail "no hit rate in --show-stats: $("$REPOCC" --show-stats)"

note "lua: an edited unit's result is stored as its difference from the previous one, and both stay hits"
repo_bytes() { du -sb "$REPOCC_DIR" | cut -f1; }
cp src/lapi.c ../lapi.c.first
sed -i 's|^  return cast_int(L->top - (L->ci->func + 1));|  return cast_int(L->top - (L->ci->func + 1)) + 1 - 1;\n  /* edited */|' src/lapi.c
grep -q '/\* edited \*/' src/lapi.c || fail "the lapi.c edit did not apply"
cp src/lapi.c ../lapi.c.edited
sleep 0.05
before=$(repo_bytes)
lua_make build3.log
grown=$(( $(repo_bytes) - before ))
cmp -s src/lapi.o ../lua-first/lapi.o && fail "the edit did not change lapi.o"
cp src/lapi.o ../lapi.o.edited
note "the edit stored $grown bytes; lapi.o is $(wc -c < src/lapi.o) bytes"
[ $(( grown * 3 )) -lt "$(wc -c < src/lapi.o)" ] || fail "the edit stored $grown bytes"
h=$(stat_value unit_hits)
cp ../lapi.c.first src/lapi.c; sleep 0.05
lua_make build4.log
assert_eq "the reverted lapi.c is a hit" $((h + 1)) "$(stat_value unit_hits)"
cmp src/lapi.o ../lua-first/lapi.o || fail "the reverted lapi.o differs from the first"
cp ../lapi.c.edited src/lapi.c; sleep 0.05
lua_make build5.log
assert_eq "the edited lapi.c again: a hit, read as a difference" $((h + 2)) "$(stat_value unit_hits)"
cmp src/lapi.o ../lapi.o.edited || fail "lapi.o read back as a difference differs from the edited compile's"
cp ../lapi.c.first src/lapi.c

note "cjson RelWithDebInfo (CMake, -MD): make clean && make is served by the unit cache"
src=$(fetch_debian_source cjson --skip-patches)
fresh_copy "$src" "$SCRATCH/cjson"
mkdir -p "$SCRATCH/cjson/build" && cd "$SCRATCH/cjson/build"
cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
  -DENABLE_CJSON_UTILS=On -DENABLE_CJSON_TEST=On -DCMAKE_BUILD_TYPE=RelWithDebInfo .. > cmake.log 2>&1 \
  || { cat cmake.log; fail "cmake"; }
make -j"$JOBS" > build1.log 2>&1 || { tail -n 30 build1.log; fail "cjson cold build"; }
rm -rf ../first && mkdir ../first
find . \( -name '*.o' -o -name '*.o.d' \) -exec cp --parents {} ../first/ \;
make clean > /dev/null
"$REPOCC" --zero-stats > /dev/null
make -j"$JOBS" > build2.log 2>&1 || { tail -n 30 build2.log; fail "cjson warm build"; }
objects=$(find . -name '*.o' | wc -l)
assert_eq "cjson warm: every unit a hit" "$objects" "$(stat_value unit_hits)"
assert_eq "cjson warm: no misses" 0 "$(stat_value unit_misses)"
n=$(same_files ../first . '*.o'); d=$(same_files ../first . '*.o.d')
note "warm cjson: $n objects and $d dependency files identical"
ctest > ctest.log 2>&1 || { cat ctest.log; fail "ctest after the warm build"; }
has "100% tests passed" < ctest.log || fail "cjson tests failed"

note "small cases, each against clang-19"
mkdir -p "$SCRATCH/small/inc" "$SCRATCH/small/early" && cd "$SCRATCH/small"
cat > main.c <<'EOF'
#include <stdio.h>
#include "value.h"
int main(void) { printf("%d\n", VALUE + EXTRA); return 0; }
EOF
# edit FILE TEXT: writes FILE as an editor would, a moment before the
# build (a file whose time is not before the compile's start, on the
# kernel's coarse clock, is not recorded: it may have changed unseen).
edit() { mkdir -p "$(dirname "$1")"; printf '%s\n' "$2" > "$1"; sleep 0.05; }
edit inc/value.h '#define VALUE 1'
hits() { stat_value unit_hits; }
# build ARGS...: compiles main.c through repocc and runs it.
build() { "$REPOCC" "$@" main.c -o main > out.log 2>&1 || { cat out.log; fail "build $*"; }; ./main; }

assert_eq "first build" 3 "$(build -O2 -Iearly -Iinc -DEXTRA=2)"
h=$(hits)
assert_eq "same build" 3 "$(build -O2 -Iearly -Iinc -DEXTRA=2)"
assert_eq "an unchanged rebuild hits" $((h + 1)) "$(hits)"
# A hit needs no scratch directory in $TMPDIR: where none can be made, a
# hit is still a hit, and a miss compiles as clang-19 does there (without
# recording: the header list is a scratch file).
"$REPOCC" -O2 -Iearly -Iinc -DEXTRA=2 -c main.c -o scratch.o || fail "-c into the unit cache"
h=$(hits)
TMPDIR="$SCRATCH/no-such-dir" "$REPOCC" -O2 -Iearly -Iinc -DEXTRA=2 -c main.c -o scratch.o \
  || fail "a hit with \$TMPDIR missing"
assert_eq "a hit with \$TMPDIR missing" $((h + 1)) "$(hits)"
TMPDIR="$SCRATCH/no-such-dir" "$REPOCC" -O2 -Iearly -Iinc -DEXTRA=5 -c main.c -o scratch.o \
  || fail "a miss with \$TMPDIR missing"
TMPDIR="$SCRATCH/no-such-dir" clang-19 -O2 -Iearly -Iinc -DEXTRA=5 -c main.c -o scratch-clang.o \
  || fail "clang-19 with \$TMPDIR missing"
[ ! -e "$SCRATCH/no-such-dir" ] || fail "\$TMPDIR was made"
h=$(( $(hits) - 1 ))

edit inc/value.h '#define VALUE 10'
assert_eq "after a header edit" 12 "$(build -O2 -Iearly -Iinc -DEXTRA=2)"
assert_eq "a header edit misses" $((h + 1)) "$(hits)"

edit early/value.h '#define VALUE 100'
assert_eq "a shadowing header earlier on the path" 102 "$(build -O2 -Iearly -Iinc -DEXTRA=2)"
assert_eq "the shadowing header misses" $((h + 1)) "$(hits)"
rm early/value.h; sleep 0.05
assert_eq "shadowing header removed" 12 "$(build -O2 -Iearly -Iinc -DEXTRA=2)"
assert_eq "the earlier result is found again" $((h + 2)) "$(hits)"

assert_eq "another -D" 13 "$(build -O2 -Iearly -Iinc -DEXTRA=3)"
assert_eq "another -D misses" $((h + 2)) "$(hits)"

# A header newer than the compile (a clock ahead, an edit during the
# build) is not recorded: the next build compiles again.
touch -d '+1 hour' inc/value.h
build -O2 -Iinc -DEXTRA=0 > /dev/null
h=$(hits)
build -O2 -Iinc -DEXTRA=0 > /dev/null
assert_eq "a result with a file from the future is not recorded" "$h" "$(hits)"
touch -d '-1 hour' inc/value.h

# __TIME__ changes every second: never served from the cache.
cat > stamp.c <<'EOF'
#include <stdio.h>
int main(void) { puts(__TIME__); return 0; }
EOF
h=$(hits)
for i in 1 2; do "$REPOCC" -O2 stamp.c -o stamp || fail "stamp.c"; done
assert_eq "__TIME__ users are compiled every time" "$h" "$(hits)"
"$REPOCC" --show-stats | has '__DATE__, __TIME__ or __TIMESTAMP__' || fail "the reason is not shown"
h=$(hits)
for i in 1 2; do SOURCE_DATE_EPOCH=1700000000 "$REPOCC" -O2 stamp.c -o stamp || fail "stamp.c"; done
assert_eq "with SOURCE_DATE_EPOCH, __TIME__ is fixed and cached" $((h + 1)) "$(hits)"
assert_eq "the fixed time" "$(SOURCE_DATE_EPOCH=1700000000 clang-19 -O2 stamp.c -o stamp.clang && ./stamp.clang)" "$(./stamp)"

# Warnings are replayed exactly on a hit; -Werror fails every time, as
# clang does.
cat > warn.c <<'EOF'
int f(void) { int unused; return 0; }
EOF
COMPARE_FILES=""
MAY_SUCCEED=1 compare "warning" -Wall -O2 -c warn.c
for i in 1 2; do compare "-Werror, run $i" -Wall -Werror -O2 -c warn.c; done
# (compare copies the source afresh each time, too new to be recorded:
# the replay is checked in place.)
"$REPOCC" -Wall -O2 -c warn.c 2> w1.err
h=$(hits)
"$REPOCC" -Wall -O2 -c warn.c 2> w2.err
assert_eq "the warning unit is a hit" $((h + 1)) "$(hits)"
clang-19 -Wall -O2 -c warn.c -o warn.clang.o 2> wc.err
cmp -s w2.err wc.err || fail "replayed diagnostics differ from clang's: $(diff w2.err wc.err)"
has 'unused variable' < w2.err || fail "the warning was not replayed"
# -Werror after the warning unit was recorded: still an error.
set +e; "$REPOCC" -Wall -Werror -O2 -c warn.c 2> we.err; rc=$?; set -e
assert_eq "-Werror exit code" 1 "$rc"
clang-19 -Wall -Werror -O2 -c warn.c -o warn.clang.o 2> wce.err || true
cmp -s we.err wce.err || fail "-Werror diagnostics differ from clang's"

# A corrupt unit entry is a miss, counted, and repaired.
build -O2 -Iinc -DEXTRA=5 > /dev/null
build -O2 -Iinc -DEXTRA=5 > /dev/null
n=$(python3 "$PROJECT_ROOT/wrapper-tests/store.py" flip "$REPOCC_DIR" 4,5 all)
[ "$n" -ge 1 ] || fail "no unit entry to corrupt"
c=$(stat_value corrupt_entries); h=$(hits)
assert_eq "after corruption" 15 "$(build -O2 -Iinc -DEXTRA=5)"
[ "$(stat_value corrupt_entries)" -gt "$c" ] || fail "the corrupt entry was not counted"
assert_eq "a corrupt entry is a miss" "$h" "$(hits)"
assert_eq "repaired" 15 "$(build -O2 -Iinc -DEXTRA=5)"
assert_eq "the repaired entry hits" $((h + 1)) "$(hits)"

# REPOCC_EXPLAIN: why a unit missed, why each definition was compiled.
edit inc/value.h '#define VALUE 7'
REPOCC_EXPLAIN=1 "$REPOCC" -O2 -Iinc -DEXTRA=5 main.c -o main 2> explain.err
has 'explain main.c: unit cache miss: inc/value.h changed' < explain.err \
  || fail "the unit cache miss is not explained: $(cat explain.err)"
cat > ex.c <<'EOF'
int leaf(int x) { return x * 3; }
int mid(int x) { return leaf(x) + 1; }
int other(int x) { return x - 1; }
EOF
sleep 0.05
"$REPOCC" -O2 -c ex.c
cat > ex.c <<'EOF'
int leaf(int x) { return x * 4; }
int mid(int x) { return leaf(x) + 1; }
int other(int x) { return x - 1; }
int added(void) { return 5; }
EOF
sleep 0.05
REPOCC_EXPLAIN=1 "$REPOCC" -O2 -c ex.c 2> explain.err
for want in 'compiled leaf: changed' 'compiled mid: depends on leaf, which changed' 'compiled added: new'; do
  has "explain ex.c: $want" < explain.err || fail "missing [$want] in: $(cat explain.err)"
done
if has 'compiled other' < explain.err; then fail "other was compiled: $(cat explain.err)"; fi
note "REPOCC_EXPLAIN: $(grep -c 'explain ex.c: compiled' explain.err) definitions explained"

# Preprocessor mode: a comment edited in a header leaves the preprocessed
# text as it was, so the result recorded for it is reused (without -g: debug
# information keeps the original columns, so -g units compile again). The
# compile before changed tokens and was not preprocessed, so the first
# comment edit compiles (preprocessed, its text recorded); the next hits.
edit inc/value.h '#define VALUE 7 /* a comment */'
h=$(hits)
assert_eq "after a comment edit" 12 "$(REPOCC_EXPLAIN=1 build -O2 -Iinc -DEXTRA=5)"
assert_eq "the first comment edit after a token edit" "$h" "$(hits)"
edit inc/value.h '#define VALUE 7 /* a comment, edited */'
assert_eq "after another comment edit" 12 "$(REPOCC_EXPLAIN=1 build -O2 -Iinc -DEXTRA=5)"
assert_eq "a comment-only header edit is a hit" $((h + 1)) "$(hits)"
has 'unit cache hit in preprocessor mode \(inc/value.h changed\)' < out.log \
  || fail "the preprocessor-mode hit is not explained: $(cat out.log)"
build -g -O2 -Iinc -DEXTRA=5 > /dev/null
edit inc/value.h '#define VALUE 7 /* another comment */'
h=$(hits)
assert_eq "a comment edit with -g" 12 "$(build -g -O2 -Iinc -DEXTRA=5)"
assert_eq "with -g, preprocessor mode is not used" "$h" "$(hits)"
edit inc/value.h '#define VALUE 8 /* another comment */'
assert_eq "a real edit after comment edits" 13 "$(REPOCC_EXPLAIN=1 build -O2 -Iinc -DEXTRA=5)"
# A change to tokens, not only comments: not preprocessed first (that pass
# over every header would almost never find a result), compiled at once.
has 'inc/value.h changed, beyond comments and layout' < out.log \
  || fail "a token edit was not told from a comment edit: $(cat out.log)"

# unit_cache off: every unit compiles.
h=$(hits)
REPOCC_UNIT_CACHE=false build -O2 -Iinc -DEXTRA=5 > /dev/null
assert_eq "unit_cache=false" "$h" "$(hits)"
note "all cases behave as clang-19"
