# The program repository (fragment mode): rebuilds reuse stored fragments,
# reproduce the objects byte for byte, recompile only what an edit changed,
# and survive a corrupt entry and an unwritable repository.
source "$(dirname "$0")/lib.sh"
# This test is about the fragment store: unchanged rebuilds must reach it,
# not the unit cache in front of it (t-unit-cache tests that one).
export REPOCC_UNIT_CACHE=false
export REPOCC_FRAGMENTS=1
P="$WT_ROOT/programs"

# pct NUM DEN: integer percentage.
pct() { echo $(( 100 * $1 / ($2 > 0 ? $2 : 1) )); }

note "lua5.4 built twice with make clean in between"
src=$(fetch_debian_source lua5.4 --skip-patches)
fresh_copy "$src" "$SCRATCH/lua"
cd "$SCRATCH/lua"
make -j"$JOBS" linux CC="repocc -std=gnu99" > build1.log 2>&1 || { tail -n 20 build1.log; fail "cold build"; }
mkdir -p ../lua-objs && cp src/*.o ../lua-objs/
stored=$(stat_value fragments_stored)
# (947 with 2026-12's binary: each function and table, and each literal
# or static that several use; what one uses goes with it.)
[ "$stored" -gt 800 ] || fail "cold build stored only $stored fragments"
make clean > /dev/null
"$REPOCC" --zero-stats > /dev/null
make -j"$JOBS" linux CC="repocc -std=gnu99" > build2.log 2>&1 || { tail -n 20 build2.log; fail "warm build"; }
total=$(stat_value definitions_total); pruned=$(stat_value definitions_pruned)
note "warm lua: $pruned of $total definitions pruned ($(pct "$pruned" "$total")%), $(stat_value definitions_compiled) compiled"
[ "$(pct "$pruned" "$total")" -ge 95 ] || fail "warm build pruned only $pruned of $total"
for o in src/*.o; do
  cmp -s "$o" "../lua-objs/$(basename "$o")" || fail "$o differs from the first build's"
done
out=$(src/lua "$P/checks.lua") || fail "checks.lua: $out"
assert_contains "warm lua" "lua checks: 31 passed, 0 failed" "$out"

note "sqlite3: cold build, one-function edit, revert"
cd "$SCRATCH"
amalg=$(prepare_sqlite_amalgamation)
cp "$amalg"/sqlite3.c "$amalg"/sqlite3.h "$amalg"/shell.c .
cp sqlite3.c sqlite3.c.orig
build_sqlite() {
  "$REPOCC" -O2 -c sqlite3.c -o sqlite3.o 2> build.err || { cat build.err; fail "compiling sqlite3.c"; }
  "$REPOCC" -O2 -c shell.c -o shell.o || fail "compiling shell.c"
  "$REPOCC" shell.o sqlite3.o -lm -ldl -lpthread -o sqlite3 || fail "linking sqlite3"
}
"$REPOCC" --zero-stats > /dev/null
build_sqlite
cold_compiled=$(stat_value definitions_compiled)
cp sqlite3.o sqlite3.o.first
./sqlite3 test.db < "$P/checks.sql" > checks.out 2>&1
diff -u "$P/checks.expected" checks.out || fail "SQL answers differ (cold)"

grep -q '^SQLITE_API const char \*sqlite3_libversion(void){ return sqlite3_version; }' sqlite3.c \
  || fail "the edit target is not in this sqlite3.c"
sed -i 's/^SQLITE_API const char \*sqlite3_libversion(void){ return sqlite3_version; }/SQLITE_API const char *sqlite3_libversion(void){ return "9.9.9-edited"; }/' sqlite3.c
"$REPOCC" --zero-stats > /dev/null
build_sqlite
edit_compiled=$(stat_value definitions_compiled)
note "definitions compiled: cold $cold_compiled, after a one-function edit $edit_compiled"
[ "$edit_compiled" -ge 1 ] || fail "the edit compiled nothing"
[ $((edit_compiled * 20)) -lt "$cold_compiled" ] || fail "the edit recompiled too much ($edit_compiled of $cold_compiled)"
assert_eq "edited behaviour" "9.9.9-edited" "$(./sqlite3 :memory: 'select sqlite_version();')"

cp sqlite3.c.orig sqlite3.c
"$REPOCC" --zero-stats > /dev/null
build_sqlite
cmp -s sqlite3.o sqlite3.o.first || fail "reverting the edit did not reproduce the original object"
assert_eq "revert compiled nothing" 0 "$(stat_value definitions_compiled)"
assert_eq "reverted behaviour" "$(grep -m1 '#define SQLITE_VERSION ' sqlite3.h | sed 's/.*"\(.*\)".*/\1/')" \
  "$(./sqlite3 :memory: 'select sqlite_version();')"

note "a flipped byte in a stored fragment is detected and recompiled"
# In every pack, the largest object entry gets a flipped byte in the
# middle of its stored body (some of them are entries the next compile
# reads; the edit's own are not).
flipped=$(python3 "$PROJECT_ROOT/wrapper-tests/store.py" flip "$REPOCC_DIR" 0,11 largest)
[ "$flipped" -ge 1 ] || fail "no fragment to corrupt"
"$REPOCC" --zero-stats > /dev/null
"$REPOCC" -O2 -c sqlite3.c -o sqlite3.o 2> corrupt.err || { cat corrupt.err; fail "build with a corrupt entry"; }
assert_contains "corruption warning" "failed verification" "$(cat corrupt.err)"
assert_eq "one warning line" 1 "$(wc -l < corrupt.err)"
[ "$(stat_value corrupt_entries)" -ge 1 ] || fail "corruption not counted"
# The recompiled fragment sees its neighbours as the pruning context allows
# (see prune.rs): same behaviour, not necessarily the same bytes.
"$REPOCC" -O2 -c shell.c -o shell.o && "$REPOCC" shell.o sqlite3.o -lm -ldl -lpthread -o sqlite3
rm -f test.db && ./sqlite3 test.db < "$P/checks.sql" > checks.out 2>&1
diff -u "$P/checks.expected" checks.out || fail "SQL answers differ after recovering from a corrupt entry"
# The damaged entries no compile read since are --verify's to remove;
# after it, the repository is clean.
"$REPOCC" --verify > verify1.out 2>&1 || true
assert_eq "--verify is clean after removing the rest" "0 bad" "$("$REPOCC" --verify | sed -n 's/.*removed \(.*\)$/\1/p')"

note "an unwritable repository gives a correct build and one warning line"
REPOCC_DIR=/proc/repocc-unwritable "$REPOCC" -O2 "$P/features.c" "$P/features-helper.c" -pthread -lm -o features 2> unwritable.err \
  || { cat unwritable.err; fail "build with an unwritable repository"; }
clang-19 -O2 "$P/features.c" "$P/features-helper.c" -pthread -lm -o features.clang
assert_eq "program output" "$(./features.clang)" "$(./features)"
[ "$(grep -c 'repocc: warning' unwritable.err)" -le 2 ] || fail "too many warnings: $(cat unwritable.err)"
assert_contains "unwritable warning" "not writable" "$(cat unwritable.err)"

note "C++: a template instance and an inline function used by four files are code-generated once"
mkdir -p "$SCRATCH/cxx" && cd "$SCRATCH/cxx"
cat > shared.h <<'CXX'
#include <vector>
template <class T> T sum_squares(const std::vector<T>& v) { T s{}; for (auto x : v) s += x * x; return s; }
inline int shared_counter() { static int n; return ++n; }
CXX
for i in 1 2 3 4; do
  printf '#include "shared.h"\nint unit%d() { return sum_squares(std::vector<int>{1, 2, %d}) + shared_counter(); }\n' "$i" "$i" > u$i.cpp
done
printf '#include <cstdio>\nint unit1(); int unit2(); int unit3(); int unit4();\nint main() { std::printf("%%d %%d %%d %%d\\n", unit1(), unit2(), unit3(), unit4()); }\n' > main.cpp
"$REPOCCXX" -O2 -c u1.cpp -o u1.o
"$REPOCC" --zero-stats > /dev/null
for i in 2 3 4; do "$REPOCCXX" -O2 -c u$i.cpp -o u$i.o; done
pruned=$(stat_value definitions_pruned); compiled=$(stat_value definitions_compiled)
note "units 2-4 after unit 1: $pruned definitions pruned, $compiled compiled"
[ "$pruned" -ge 9 ] || fail "the shared template and inline definitions were not reused ($pruned pruned)"
"$REPOCCXX" -O2 main.cpp u1.o u2.o u3.o u4.o -o prog
clang++-19 -O2 main.cpp u1.cpp u2.cpp u3.cpp u4.cpp -o prog.clang
assert_eq "C++ program from shared fragments" "$(./prog.clang)" "$(./prog)"

note "C++ inline functions are in an object only where something refers to them"
mkdir -p "$SCRATCH/linkonce" && cd "$SCRATCH/linkonce"
cat > h.h <<'CXX'
inline int leaf(int x) { return x * 7 + 1; }
__attribute__((noinline)) inline int mid(int x) { return leaf(x) + 1; }
__attribute__((noinline)) inline int big(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x; return s; }
__attribute__((noinline)) inline int outer(int x) { return big(x) + 2; }
CXX
printf '#include "h.h"\nint a() { return mid(3) + outer(4); }\n' > a.cpp
printf '#include "h.h"\nint (*leaf_ptr)(int) = leaf;\nint b() { return leaf_ptr(2); }\n' > b.cpp
printf '#include "h.h"\nint c() { return mid(5) + outer(6); }\n' > c.cpp
printf '#include <cstdio>\nint a(); int b(); int c();\nint main() { std::printf("%%d %%d %%d\\n", a(), b(), c()); }\n' > main.cpp
defined() { nm --defined-only "$1" | awk 'NF == 3 {print $2, $3}' | sort; }
for u in a b c; do
  "$REPOCCXX" -O2 -c $u.cpp -o $u.o
  clang++-19 -O2 -c $u.cpp -o $u.clang.o
  # leaf is inlined into mid in a.o and c.o (and dropped, as clang drops
  # it); b.o needs it; c.o takes mid, outer and big from a's fragments.
  assert_eq "symbols of $u.o" "$(defined $u.clang.o)" "$(defined $u.o)"
done
cp a.o a.first.o
"$REPOCCXX" -O2 -c a.cpp -o a.o
cmp -s a.o a.first.o || fail "a.o rebuilt after b.cpp stored leaf differs from the first build"
"$REPOCCXX" -O2 main.cpp a.o b.o c.o -o prog
clang++-19 -O2 main.cpp a.cpp b.cpp c.cpp -o prog.clang
assert_eq "inline functions across units" "$(./prog.clang)" "$(./prog)"

note "equal functions stay apart with the repository: a twin added or edited changes no other fragment"
mkdir -p "$SCRATCH/merge" && cd "$SCRATCH/merge"
cat > dup.c <<'C'
#include <stdio.h>
__attribute__((noinline)) int f(int x) { return x * 3 + 1; }
__attribute__((noinline)) int call_f(int x) { return f(x) + 100; }
int main(void) { printf("%d %d\n", f(1), call_f(3)); return 0; }
C
cp dup.c dup.orig
"$REPOCC" -O2 -c dup.c -o first.o
# A twin of f, and a caller of it: merged, g would become a jump to f and
# call_g would call f, so their code would depend on f being in the unit.
sed -i 's/^int main.*/__attribute__((noinline)) int g(int x) { return x * 3 + 1; }\n__attribute__((noinline)) int call_g(int x) { return g(x) + 100; }\nint main(void) { printf("%d %d %d %d\\n", f(1), g(2), call_f(3), call_g(4)); return 0; }/' dup.c
grep -q "int g(int x)" dup.c || fail "the twin was not added"
"$REPOCC" -O2 -c dup.c -o twin.o
REPOCC_DIR="$SCRATCH/merge-cold" "$REPOCC" -O2 -c dup.c -o twin.cold.o
cmp -s twin.o twin.cold.o || fail "adding a twin: the warm object differs from a cold compile's"
objdump -d --no-show-raw-insn twin.o | awk '/<g>:/,/^$/' | has "jmp.*<f>" && fail "g was merged into f"
"$REPOCC" twin.o -o twin && clang-19 -O2 dup.c -o twin.clang
assert_eq "twins" "$(./twin.clang)" "$(./twin)"
sed -i 's/int f(int x) { return x \* 3 + 1; }/int f(int x) { return x * 3 + 2; }/' dup.c
"$REPOCC" -O2 -c dup.c -o edited.o && "$REPOCC" edited.o -o edited
REPOCC_DIR="$SCRATCH/merge-cold" "$REPOCC" -O2 -c dup.c -o edited.cold.o
cmp -s edited.o edited.cold.o || fail "editing one twin: the warm object differs from a cold compile's"
clang-19 -O2 dup.c -o edited.clang
assert_eq "a twin edited" "$(./edited.clang)" "$(./edited)"
cp dup.orig dup.c
"$REPOCC" --zero-stats > /dev/null
"$REPOCC" -O2 -c dup.c -o reverted.o
cmp -s first.o reverted.o || fail "reverting did not reproduce the first object"
assert_eq "revert compiled nothing" 0 "$(stat_value definitions_compiled)"

note "-O0: two locals declared the other way round give the object a cold compile gives"
mkdir -p "$SCRATCH/swap" && cd "$SCRATCH/swap"
# (fragments=true: by default C at -O0 is compiled whole, without the repository.)
export REPOCC_FRAGMENTS=1
printf 'int f(int x) { int a; int b; a = x + 1; b = x * 2; return a * b; }\n' > t.c
"$REPOCC" -O0 -c t.c -o first.o
printf 'int f(int x) { int b; int a; a = x + 1; b = x * 2; return a * b; }\n' > t.c
REPOCC_UNIT_CACHE=false "$REPOCC" -O0 -c t.c -o swapped.o
REPOCC_DIR="$SCRATCH/swap-cold" "$REPOCC" -O0 -c t.c -o swapped.cold.o
cmp -s first.o swapped.cold.o && fail "the two orders compile alike: nothing to test"
cmp -s swapped.o swapped.cold.o || fail "-O0: the warm object after swapping two locals differs from a cold compile's"
unset REPOCC_FRAGMENTS
cd "$SCRATCH/merge"

note "C++ static constructors run exactly once in warm builds"
cat > ctor.cpp <<'CXX'
#include <cstdio>
static int n;
static int first = n++;
static int second = n++;
int main() { std::printf("n=%d first=%d second=%d\n", n, first, second); }
CXX
"$REPOCCXX" -O2 ctor.cpp -o ctor1
"$REPOCCXX" -O2 ctor.cpp -o ctor2
assert_eq "cold" "n=2 first=0 second=1" "$(./ctor1)"
assert_eq "warm" "n=2 first=0 second=1" "$(./ctor2)"

note "statics nothing refers to are left out, and come back where stored code needs them"
# A static table holds a reference to a static function. Build A compiles
# both; build B calls the function directly instead (an edited version,
# inlined, so it is dropped and stored as deleted) and leaves the table
# out; build C uses the table again from an edited caller: the table's
# code comes from A's entry, and the function it names must be compiled
# although nothing compiled in C calls it.
write_tables() { # $1: via_table's body, $2: helper's constant
  cat > tables.c <<C
#include <stdio.h>
static int helper(int x) { return x * $2; }
static int (*table[])(int) = { helper };
static int unused_static(int x) { return x + 41; }
__attribute__((noinline)) int via_table(int x) { return $1; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", via_table(argc + 1)); return 0; }
C
}
write_tables 'table[0](x)' 3; "$REPOCC" -O2 tables.c -o tables && assert_eq "build A" 6 "$(./tables)"
clang-19 -O2 -c tables.c -o tables.clang.o
"$REPOCC" -O2 -c tables.c -o tables.repocc.o
nm tables.clang.o | has "unused_static" && fail "clang kept unused_static (the check below means nothing)"
nm tables.repocc.o | has "unused_static" && fail "an unused static is still compiled into the object"
write_tables 'helper(x)' 5; "$REPOCC" -O2 tables.c -o tables && assert_eq "build B" 10 "$(./tables)"
nm tables | has " helper$" && fail "build B: the inlined helper is still in the program"
write_tables 'table[0](x) + 1' 5
"$REPOCC" -O2 -c tables.c -o warm.o 2> tables.err || { cat tables.err; fail "build C"; }
"$REPOCC" warm.o -o tables || fail "build C does not link (a static stored code needs was left out)"
assert_eq "build C" 11 "$(./tables)"
"$REPOCC" --clear > /dev/null
"$REPOCC" -O2 -c tables.c -o cold.o
cmp -s warm.o cold.o || fail "build C's object differs from a cold build's"
