# Compile modes, output names, dependency files, response files, launcher
# form, --version, recursion guard and statistics, each compared with what
# clang-19 does.
source "$(dirname "$0")/lib.sh"
cd "$SCRATCH"

cat > main.c <<'C'
#include <stdio.h>
#include "util.h"
static int calls;
int main(void) {
  calls++;
  printf("sum=%d twice=%d calls=%d\n", sum_to(100), twice(21), calls);
  return 0;
}
C
cat > util.h <<'C'
int sum_to(int n);
static inline int twice(int x) { return 2 * x; }
C
cat > util.c <<'C'
#include "util.h"
int sum_to(int n) { int s = 0; for (int i = 1; i <= n; i++) s += i; return s; }
C
want="sum=5050 twice=42 calls=1"

note "compile and link in one invocation"
"$REPOCC" -O2 main.c util.c -o prog
assert_eq "prog output" "$want" "$(./prog)"
assert_eq "compiles counted" 2 "$(stat_value compiles)"
assert_eq "link counted" 1 "$(stat_value links)"

note "REPOCC_TIMINGS: the stages, the clang-unit key and the unit cache's recording"
cat > timed.c <<'C'
int timed(int x) { return x * 7; }
C
# A source stamped in the clock tick the compile starts in may have changed
# while it was read: the unit cache does not record it (ccache's "file too
# new"). The test is about the timings, so the source is made older.
touch -d '1 minute ago' timed.c
# touch itself stamps the change time now: let the clock move past it.
sleep 0.05
REPOCC_TIMINGS=1 "$REPOCC" -O2 -c timed.c -o timed.o 2> timings.txt
has '^repocc: timings timed.c: frontend [0-9.]+s key [0-9.]+s mem2reg [0-9.]+s metadata [0-9.]+s optimize [0-9.]+s merge [0-9.]+s codegen [0-9.]+s write [0-9.]+s store [0-9.]+s$' < timings.txt ||
  fail "no stage timings: $(cat timings.txt)"
has '^repocc: timings timed.c: unit cache record [0-9.]+s$' < timings.txt ||
  fail "no unit cache record timing: $(cat timings.txt)"
REPOCC_TIMINGS=1 "$REPOCC" -O2 -c timed.c -o timed.o 2> timings.txt
has '^repocc: timings timed.c: unit cache hit [0-9.]+s$' < timings.txt ||
  fail "no unit cache hit timing: $(cat timings.txt)"

note "default a.out"
"$REPOCC" main.c util.c
assert_eq "a.out output" "$want" "$(./a.out)"

note "-c of several sources names objects like clang"
mkdir -p objs && cd objs
"$REPOCC" -c -O1 ../main.c ../util.c
[ -f main.o ] && [ -f util.o ] || fail "main.o/util.o not in the current directory"
file main.o | has "ELF 64-bit LSB relocatable" || fail "main.o is not an ELF relocatable: $(file main.o)"
"$REPOCC" main.o util.o -o prog
assert_eq "link-only output" "$want" "$(./prog)"
cd ..

note "links run clang-19's driver in repocc: the linker starts, clang does not"
cd objs
strace -f -qq -e trace=execve -o link-trace.out "$REPOCC" main.o util.o -o prog-traced
started=$(grep -o 'execve("[^"]*"' link-trace.out | sed 's/^execve("//; s/"$//' | xargs -n1 basename | sort -u | tr '\n' ' ')
assert_eq "programs a link starts" "ld repocc " "$started"
clang-19 main.o util.o -o prog-clang
cmp -s prog-traced prog-clang || fail "the link differs from clang-19's"
assert_eq "in-process link output" "$want" "$(./prog-traced)"
# A failed link: clang's message and exit code, and clang removes the output.
cat > needs.c <<'C'
int missing_function(void);
int main(void) { return missing_function(); }
C
clang-19 -c needs.c -o needs.o
for who in clang repocc; do
  echo stale > "bad-$who"
  set +e
  if [ $who = clang ]; then clang-19 needs.o -o "bad-$who" 2> "bad-$who.err"; else "$REPOCC" needs.o -o "bad-$who" 2> "bad-$who.err"; fi
  echo $? > "bad-$who.code"
  set -e
  [ ! -e "bad-$who" ] || fail "$who left the output of a failed link"
  sed -i "s/bad-$who/bad-OUT/g" "bad-$who.err"
done
assert_eq "failed link's exit code" "$(cat bad-clang.code)" "$(cat bad-repocc.code)"
cmp -s bad-clang.err bad-repocc.err || fail "failed link's diagnostics differ: $(diff bad-clang.err bad-repocc.err)"
has "^clang-19: error: linker command failed with exit code 1" < bad-repocc.err || fail "no linker error line: $(cat bad-repocc.err)"
# What the driver prints itself (-v, -###) still comes from clang-19.
clang-19 -### main.o util.o -o prog-v 2> v-clang.err
"$REPOCC" -### main.o util.o -o prog-v 2> v-repocc.err
cmp -s v-clang.err v-repocc.err || fail "-### differs: $(diff v-clang.err v-repocc.err)"
cd ..

note "the object passes through ar, nm, objdump, strip"
"$REPOCC" -c -O2 util.c -o util.o
ar rcs libutil.a util.o
nm libutil.a | has " T sum_to" || fail "nm does not show sum_to"
objdump -d util.o | has "<sum_to>:" || fail "objdump does not disassemble sum_to"
cp util.o stripped.o && strip -g stripped.o
"$REPOCC" main.c -L. -lutil -o prog2
assert_eq "archive link" "$want" "$(./prog2)"

note "dependency files are clang's, byte for byte (units compiled whole, the default at -O0, and through the repository)"
mkdir -p sub dep-clang dep-auto dep-true
for variant in "-MD -c main.c -o sub/x.o" "-MMD -c main.c" "-MD -MF custom.d -c main.c" \
               "-MD -MT tgt -MQ 'a b' -c main.c -o sub/y.o" "-MMD -MP -c util.c"; do
  for who in clang auto true; do
    rm -rf sub/* ./*.d
    if [ $who = clang ]; then eval clang-19 "$variant"; else eval REPOCC_FRAGMENTS=$who "$REPOCC" "$variant"; fi
    cat sub/*.d ./*.d 2>/dev/null > "dep-$who/out.d" || true
  done
  for fragments in auto true; do
    cmp -s dep-clang/out.d "dep-$fragments/out.d" \
      || fail "dependency file differs for [$variant] (fragments $fragments): $(diff dep-clang/out.d "dep-$fragments/out.d")"
  done
  [ -s dep-clang/out.d ] || fail "no dependency file for [$variant]"
done
# Both units write prog3.d: the last one's is left, as with clang.
for who in clang auto true; do
  rm -f prog3 prog3.d
  if [ $who = clang ]; then clang-19 -MD main.c util.c -o prog3; else REPOCC_FRAGMENTS=$who "$REPOCC" -MD main.c util.c -o prog3; fi
  cp prog3.d "link-$who.d"
done
for fragments in auto true; do
  cmp -s link-clang.d "link-$fragments.d" \
    || fail "compile-and-link -MD differs (fragments $fragments): $(diff link-clang.d "link-$fragments.d")"
done

note "response files"
printf -- '-O2 -DGREETING=\\"hi\\ there\\" -c\n' > args.rsp
cat > greet.c <<'C'
#include <stdio.h>
int main(void) { puts(GREETING); return 0; }
C
"$REPOCC" @args.rsp greet.c -o greet.o
"$REPOCC" greet.o -o greet
assert_eq "response file define" "hi there" "$(./greet)"

note "C++ through repocc++"
cat > hello.cpp <<'C'
#include <iostream>
#include <vector>
#include <numeric>
template <class T> T total(const std::vector<T>& v) { return std::accumulate(v.begin(), v.end(), T{}); }
int main() { std::vector<int> v{1,2,3,4}; std::cout << "total=" << total(v) << "\n"; }
C
"$REPOCCXX" -O2 -std=c++17 hello.cpp -o hello
assert_eq "C++ program" "total=10" "$(./hello)"

note "launcher form"
"$REPOCC" clang-19 -O2 -c util.c -o launched.o
before=$(( $(stat_value compiles) + $(stat_value unit_hits) ))
"$REPOCC" clang-19 -c util.c -o launched2.o
assert_eq "launcher compiles through the pipeline (or the unit cache)" $((before + 1)) \
  "$(( $(stat_value compiles) + $(stat_value unit_hits) ))"
"$REPOCC" gcc -c util.c -o gcc.o
[ -f gcc.o ] || fail "launcher with gcc did not compile"

note "several sources in one invocation under a make jobserver"
echo 'int extra(void) { return 7; }' > extra.c
cat > Makefile.jobs <<'MK'
all:
	+$(REPOCC) -O1 -c main.c util.c extra.c
	$(REPOCC) main.o util.o -o prog-jobs
MK
before=$(stat_value compiles)
make -j2 -f Makefile.jobs REPOCC="$REPOCC" > make-jobs.log 2>&1 || fail "make -j2: $(cat make-jobs.log)"
assert_eq "jobserver build output" "$want" "$(./prog-jobs)"
assert_eq "three units compiled" $((before + 3)) "$(stat_value compiles)"

note "--version prints clang's text first"
clang_v=$(clang-19 --version)
ours=$("$REPOCC" --version)
assert_eq "first line" "$(echo "$clang_v" | head -n 1)" "$(echo "$ours" | head -n 1)"
assert_contains "repocc line" "repocc " "$(echo "$ours" | tail -n 1)"

note "passthrough modes are counted and behave like clang"
before=$(stat_value passthrough)
"$REPOCC" -E main.c -o main.i
"$REPOCC" -S -O2 util.c -o util.s
grep -q "sum_to" util.s || fail "-S output lacks sum_to"
"$REPOCC" -c main.i -o from_i.o   # preprocessed C goes through the pipeline
assert_eq "passthrough counted" $((before + 2)) "$(stat_value passthrough)"
echo 'int f(void){return 1;}' | "$REPOCC" -x c -c - -o stdin.o
[ -f stdin.o ] || fail "stdin compile"

note "recursion: REPOCC_CLANG pointing at repocc itself"
set +e
out=$(REPOCC_CLANG="$BIN_DIR/repocc" "$REPOCC" -c util.c -o r.o 2>&1); rc=$?
set -e
[ $rc != 0 ] || fail "expected failure when clang is repocc itself"
assert_contains "recursion message" "repocc itself" "$out"
ln -sf "$BIN_DIR/repocc" "$SCRATCH/clang-19"
PATH="$SCRATCH:$PATH" "$REPOCC" -c util.c -o r2.o   # skips the symlink, finds the real clang-19
[ -f r2.o ] || fail "repocc did not skip itself on PATH"

note "--show-config reflects environment overrides"
assert_contains "show-config" "environment REPOCC_JOBS" "$(REPOCC_JOBS=3 "$REPOCC" --show-config)"

note "REPOCC_DISABLE runs clang for everything"
before=$(stat_value passthrough)
REPOCC_DISABLE=1 "$REPOCC" -c util.c -o disabled.o
assert_eq "disabled is passthrough" $((before + 1)) "$(stat_value passthrough)"

note "--zero-stats"
"$REPOCC" --zero-stats >/dev/null
assert_eq "zeroed" 0 "$(stat_value compiles)"

note "repository commands"
"$REPOCC" --max-size 2G > /dev/null
assert_contains "max_size persisted in the user configuration" '"2G"' "$("$REPOCC" --show-config | grep max_size)"
assert_contains "--verify finds nothing bad" "removed 0 bad" "$("$REPOCC" --verify)"
assert_contains "--show-stats reports the limit" '"max_size_bytes": 2147483648' "$("$REPOCC" --show-stats --format json)"
set +e; "$REPOCC" --max-size lots > /dev/null 2>&1; rc=$?; set -e
assert_eq "invalid size is a usage error" 2 "$rc"
"$REPOCC" --clear > /dev/null
