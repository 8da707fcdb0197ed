# Fragment mode (REPOCC_FRAGMENTS=1, the program repository's code path,
# in progress): every definition compiled as its own fragment on parallel
# workers, the object composed in process. The feature programs (C and
# C++: COMDATs, aliases, TLS, constructors, statics in two units) and the
# sqlite3 shell behave exactly as clang-19's builds.
source "$(dirname "$0")/lib.sh"
cd "$SCRATCH"
export REPOCC_FRAGMENTS=1
P="$WT_ROOT/programs"

for O in -O0 -O2; do
  clang-19 $O -pthread "$P/features.c" "$P/features-helper.c" -lm -o c.clang
  "$REPOCC" $O -pthread "$P/features.c" "$P/features-helper.c" -lm -o c.repocc
  assert_eq "C features $O" "$(./c.clang)" "$(./c.repocc)"
  clang++-19 $O -std=c++17 "$P/features.cpp" "$P/features-cxx-helper.cpp" -o x.clang
  "$REPOCCXX" $O -std=c++17 "$P/features.cpp" "$P/features-cxx-helper.cpp" -o x.repocc
  assert_eq "C++ features $O" "$(./x.clang)" "$(./x.repocc)"
  note "feature programs agree at $O"
done
"$REPOCC" -O2 -fPIC -shared "$P/features-helper.c" -o libhelper.so
nm -D libhelper.so | has " T helper_count" || fail "shared library lacks helper_count"
nm libhelper.so | has " [Dd] counter" || fail "the static counter is not a local symbol in the shared library"

before=$(stat_value definitions_compiled)
[ "$before" -gt 20 ] || fail "definitions_compiled not counted ($before)"

amalg=$(prepare_sqlite_amalgamation)
cp "$amalg"/sqlite3.c "$amalg"/sqlite3.h "$amalg"/shell.c .
"$REPOCC" -O2 -DSQLITE_ENABLE_MATH_FUNCTIONS shell.c sqlite3.c -lm -ldl -lpthread -o sqlite3 2> build.err \
  || { cat build.err; fail "building the sqlite3 shell"; }
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"
./sqlite3 test.db < "$P/checks.sql" > checks.out 2>&1 || { cat checks.out; fail "sqlite3 shell"; }
diff -u "$P/checks.expected" checks.out || fail "SQL answers differ"
note "sqlite3 from fragments answers the checks; definitions compiled: $(stat_value definitions_compiled)"

# Stored bodies (ir/bodies.rs, `context_bodies`, "auto" by default): an
# edit to sqlite3_libversion recompiles the ten definitions that depend on
# it, and openDatabase reaches most of the file; the inliner must see
# those callees as a cold compile does. A unit's first compile keeps no
# bodies ("auto": most units of a cold build are never edited); its second
# keeps the bodies its inliner left, and the third puts them in place
# instead of simplifying them again: the counter says how many, and the
# warm object is the bytes a new repository gives.
note "sqlite3.c edits: context bodies kept from the second compile on, warm equals cold"
mkdir -p bodies-warm bodies-cold
cp sqlite3.c bodies-warm/sqlite3.c
grep -q 'const char \*sqlite3_libversion(void){ return sqlite3_version; }' sqlite3.c \
  || fail "test premise: sqlite3_libversion's line"
edit_libversion() {
  sed "s/const char \*sqlite3_libversion(void){ return sqlite3_version; }/const char *sqlite3_libversion(void){ return sqlite3_version + $1; }/" \
    sqlite3.c > "$2"
}
edit_libversion 2 bodies-warm/edited-first.c
edit_libversion 1 bodies-cold/sqlite3.c
bodies_warm() {
  export REPOCC_DIR="$SCRATCH/repo-bodies" REPOCC_UNIT_CACHE=false
  cd bodies-warm
  "$REPOCC" -O2 -c sqlite3.c -o first.o || fail "first compile of sqlite3.c"
  reused=$(stat_value bodies_reused)
  cp edited-first.c sqlite3.c
  "$REPOCC" -O2 -c sqlite3.c -o second.o || fail "second compile of sqlite3.c (first edit)"
  assert_eq "bodies used by the unit's second compile (its first kept none)" 0 "$(delta bodies_reused "$reused")"
  cp ../bodies-cold/sqlite3.c sqlite3.c
  compiled=$(stat_value definitions_compiled)
  reused=$(stat_value bodies_reused)
  "$REPOCC" -O2 -c sqlite3.c -o warm.o || fail "warm compile of the edited sqlite3.c"
  compiled=$(delta definitions_compiled "$compiled")
  reused=$(delta bodies_reused "$reused")
  note "edited sqlite3.c again: $compiled definitions compiled, $reused bodies from the repository"
  [ "$compiled" -le 12 ] || fail "the edit compiled $compiled definitions (expected about 10)"
  [ "$reused" -ge 1000 ] || fail "only $reused bodies came from the repository"
}
bodies_cold() {
  export REPOCC_DIR="$SCRATCH/repo-bodies-cold" REPOCC_UNIT_CACHE=false
  cd bodies-cold
  "$REPOCC" -O2 -c sqlite3.c -o cold.o || fail "cold compile of the edited sqlite3.c"
  assert_eq "no bodies reused in a new repository" 0 "$(stat_value bodies_reused)"
}
# The warm pair and the cold compile share nothing: at once.
pool_start bodies-warm.log bodies_warm
pool_start bodies-cold.log bodies_cold
pool_wait "sqlite3.c with stored bodies, and cold"
cat bodies-warm.log
cmp bodies-warm/warm.o bodies-cold/cold.o \
  || fail "edited sqlite3.c: the object with stored bodies differs from a new repository's"
"$REPOCC" -O2 -DSQLITE_ENABLE_MATH_FUNCTIONS shell.c bodies-warm/warm.o -lm -ldl -lpthread -o sqlite3-bodies \
  || fail "linking the shell with the warm object"
assert_eq "the edited library's version" "$(./sqlite3 :memory: 'SELECT sqlite_version();' | cut -c2-)" \
  "$(./sqlite3-bodies :memory: 'SELECT sqlite_version();')"

# Composition runs in process: a compile through the repository starts the
# clang-19 frontend and nothing else (no ld.lld -r, no llvm-objcopy).
REPOCC_UNIT_CACHE=false strace -f -qq -e trace=execve -o trace.out \
  "$REPOCC" -O2 -c "$P/features.c" -o traced.o || fail "traced compile"
started=$(grep -o 'execve("[^"]*"' trace.out | sed 's/^execve("//; s/"$//' | xargs -n1 basename | sort -u | tr '\n' ' ')
note "programs started by one compile: $started"
for prog in $started; do
  case "$prog" in
    repocc | clang-19 | clang) ;;
    *) fail "composing started $prog (expected only the clang-19 frontend): $started" ;;
  esac
done
has " T main" < <(nm traced.o) || fail "the traced object lacks main"
# So does a C++ unit with exceptions: every fragment that unwinds defines
# the COMDAT group of DW.ref.__gxx_personality_v0, kept once; its
# .eh_frame has as many CIEs as clang-19's object.
# (C++20 units carry an empty .linker-options section, kept once.)
for std in c++20 c++17; do
  REPOCC_UNIT_CACHE=false strace -f -qq -e trace=execve -o trace-cxx.out \
    "$REPOCCXX" -O2 -std=$std -c "$P/features.cpp" -o traced-cxx.o || fail "traced C++ compile ($std)"
  started=$(grep -o 'execve("[^"]*"' trace-cxx.out | sed 's/^execve("//; s/"$//' | xargs -n1 basename | sort -u | tr '\n' ' ')
  note "programs started by one C++ compile ($std): $started"
  for prog in $started; do
    case "$prog" in
      repocc | repocc++ | clang-19 | clang++-19 | clang | clang++) ;;
      *) fail "composing the C++ unit ($std) started $prog: $started" ;;
    esac
  done
done
clang++-19 -O2 -std=c++17 -c "$P/features.cpp" -o traced-cxx-clang.o
cies() { readelf -wf "$1" | grep -c " CIE" || true; }
note "CIEs in features.cpp's object: repocc $(cies traced-cxx.o), clang-19 $(cies traced-cxx-clang.o)"
assert_eq "CIEs as in clang-19's object" "$(cies traced-cxx-clang.o)" "$(cies traced-cxx.o)"

# A static whose one caller nothing in the unit calls stays local while
# the optimizer runs: inlined there and dropped, as clang does, cold and
# warm (the warm object identical), and the program answers as clang's.
note "a static with one caller is inlined and dropped, cold and warm"
clang-19 -O2 -c "$P/static-once.c" -o once-clang.o
has " t mix" < <(nm once-clang.o) && fail "test premise: clang-19 kept mix"
(
  export REPOCC_DIR="$SCRATCH/repo-once" REPOCC_UNIT_CACHE=false
  "$REPOCC" -O2 -c "$P/static-once.c" -o once-cold.o
  has " t mix" < <(nm once-cold.o) && fail "mix is in the object (cold)"
  before=$(stat_value definitions_pruned)
  "$REPOCC" -O2 -c "$P/static-once.c" -o once-warm.o
  assert_eq "definitions pruned warm (once_api, and mix with it)" 2 "$(delta definitions_pruned "$before")"
  cmp -s once-cold.o once-warm.o || fail "the warm object differs from the cold one"
) || exit 1
clang-19 -O2 -DWITH_MAIN "$P/static-once.c" -o once.clang
"$REPOCC" -O2 -DWITH_MAIN "$P/static-once.c" -o once.repocc
assert_eq "static-once program" "$(./once.clang)" "$(./once.repocc)"

# A static that one build's optimizer deleted, reused by digest in a build
# whose new code loads it (a load of a variable is no digest edge): it is
# compiled there, and the object is the one a fresh repository gives.
note "a static deleted in one build is compiled where another loads it"
clang-19 -O2 -DREAD_IT "$P/static-deleted.c" -o deleted.clang
(
  export REPOCC_DIR="$SCRATCH/repo-deleted" REPOCC_UNIT_CACHE=false
  "$REPOCC" -O2 -c "$P/static-deleted.c" -o deleted-first.o
  has " [dD] p$" < <(nm deleted-first.o) && fail "test premise: p was kept where nothing loads it"
  "$REPOCC" -O2 -DREAD_IT "$P/static-deleted.c" -o deleted.repocc || fail "the build that loads p"
  assert_eq "static-deleted program" "$(./deleted.clang)" "$(./deleted.repocc)"
  "$REPOCC" -O2 -DREAD_IT -c "$P/static-deleted.c" -o deleted-warm.o
  REPOCC_DIR="$SCRATCH/repo-deleted-fresh" "$REPOCC" -O2 -DREAD_IT -c "$P/static-deleted.c" -o deleted-cold.o
  cmp -s deleted-warm.o deleted-cold.o || fail "the object depends on the deletion stored before"
) || exit 1

# New fragments are carved out of one code generation per worker: the
# object is the same whatever the number of workers (one, or two where a
# core is idle), it is not the one compiling each fragment as a module of
# its own gives (so carving happened), and both run as clang's build.
for j in 1 2; do
  REPOCC_DIR="$SCRATCH/repo-j$j" REPOCC_JOBS=$j REPOCC_UNIT_CACHE=false \
    "$REPOCC" -O2 -pthread -c "$P/features.c" -o "features-j$j.o" || fail "compile with $j workers"
done
cmp -s features-j1.o features-j2.o || fail "the object depends on the number of code generation workers"
REPOCC_DIR="$SCRATCH/repo-one-each" REPOCC_NO_CARVE=1 REPOCC_UNIT_CACHE=false \
  "$REPOCC" -O2 -pthread -c "$P/features.c" -o features-one-each.o || fail "compile without carving"
cmp -s features-j1.o features-one-each.o && fail "REPOCC_NO_CARVE made no difference: nothing was carved"
# It is in the keys: a compile without it does not take those fragments.
REPOCC_DIR="$SCRATCH/repo-one-each" REPOCC_UNIT_CACHE=false \
  "$REPOCC" -O2 -pthread -c "$P/features.c" -o features-after.o || fail "compile after REPOCC_NO_CARVE"
cmp -s features-j1.o features-after.o || fail "fragments compiled with REPOCC_NO_CARVE were reused without it"
clang-19 -O2 -pthread -c "$P/features-helper.c" -o helper.clang.o
for o in features-j1.o features-one-each.o; do
  clang-19 -pthread "$o" helper.clang.o -lm -o "prog-$o"
  assert_eq "program from $o" "$(./c.clang)" "$(./prog-$o)"
done
note "carved objects: the same with 1 and 2 workers, and run as clang's"

# The optimizer's private data (switch tables) sit in clang's sections:
# `.rodata` and `.data.rel.ro` without -fdata-sections, not sections
# named after the private symbol, whose number depends on what else the
# build numbered (sqlite3.c's `.Lswitch.table.sqlite3Pragma.1262` became
# `.1263` after an edit elsewhere, so a warm object differed from a cold
# one); with -fdata-sections, the name clang gives.
cat > sw.c <<'SRC'
extern int a, b, c, d, e;
int *pick(int k) {
  switch (k) { case 0: return &a; case 1: return &b; case 2: return &c; case 3: return &d; default: return &e; }
}
int val(int k) {
  switch (k) { case 0: return 17; case 1: return 4; case 2: return 99; case 3: return 1234; case 4: return 7; default: return 0; }
}
SRC
printf '#include <stdio.h>\nint a, b, c, d, e;\nint *pick(int); int val(int);\nint main(void) { printf("%%d\\n", (pick(2) == &c) + val(3) + val(9)); return 0; }\n' > sw-main.c
section_names() { readelf -SW "$1" | grep '^  \[' | sed 's/^  \[ *[0-9]*\] //' | awk '{ print $1 }' | grep -v -e '^$' -e '^\.shstrtab$' -e '^\.strtab$' | sort; }
# The code models' sections too: with -mcmodel=medium small data stays in
# .data and .rodata (clang's threshold, 64 KiB: repocc's machine had 0 and
# put everything in .ldata, reached by 64-bit addresses), and with
# -mcmodel=large a function's section is `.ltext` as clang's.
for f in "" -mcmodel=medium "-mcmodel=large -fdata-sections" -fdata-sections; do
  clang-19 -O2 $f -c sw.c -o sw.clang.o
  REPOCC_DIR="$SCRATCH/repo-sw" "$REPOCC" -O2 $f -c sw.c -o sw.repocc.o || fail "repocc -O2 $f sw.c"
  diff <(section_names sw.clang.o) <(section_names sw.repocc.o) || fail "sections of sw.c ($f) differ from clang's"
  clang-19 sw-main.c sw.repocc.o -o sw.prog
  assert_eq "switch tables ($f)" 1235 "$(./sw.prog)"
done
section_names sw.repocc.o | has '^\.rodata\.\.Lswitch\.table\.val$' || fail "-fdata-sections: no .rodata..Lswitch.table.val"
sed -i 's/return 1234;/return 1235;/' sw.c
REPOCC_DIR="$SCRATCH/repo-sw" "$REPOCC" -O2 -c sw.c -o sw.warm.o || fail "warm compile of the edited sw.c"
REPOCC_DIR="$SCRATCH/repo-sw-new" "$REPOCC" -O2 -c sw.c -o sw.cold.o || fail "cold compile of the edited sw.c"
cmp sw.warm.o sw.cold.o || fail "sw.c after an edit: the warm object differs from a compile into a new repository"
note "switch tables in clang's sections; warm equals cold after an edit"

# -fpatchable-function-entry's table (`__patchable_function_entries`: a
# section per function, linked to the function's section, listing where
# its nops start): carving took only what a fragment's code reaches, so
# the object had the nops and no table. Such a unit's fragments are
# compiled one module each: the program's table lists every function's
# nops (2 before its address), as clang's build does, cold and warm.
# patchable_entries PROG: how many entries, and whether each is 2 bytes
# before a function's address ("all at functions").
patchable_entries() {
  python3 - "$1" <<'PY'
import re, struct, subprocess, sys
prog = sys.argv[1]
sections = subprocess.run(["readelf", "-SW", prog], capture_output=True, text=True, check=True).stdout
m = re.search(r"__patchable_function_entries\s+PROGBITS\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)", sections)
if not m:
    print("none")
    sys.exit()
offset, size = int(m.group(2), 16), int(m.group(3), 16)
data = open(prog, "rb").read()[offset:offset + size]
entries = [struct.unpack_from("<Q", data, i)[0] for i in range(0, size, 8)]
functions = set()
for line in subprocess.run(["nm", prog], capture_output=True, text=True, check=True).stdout.splitlines():
    parts = line.split()
    if len(parts) == 3 and parts[1] in "Tt":
        functions.add(int(parts[0], 16))
print(len(entries), "all at functions" if all(e + 2 in functions for e in entries) else "not all at functions")
PY
}
for round in cold warm; do
  clang-19 -O2 -fpatchable-function-entry=4,2 sw.c sw-main.c -o sw.patch.clang
  REPOCC_DIR="$SCRATCH/repo-patch" REPOCC_UNIT_CACHE=0 "$REPOCC" -O2 -fpatchable-function-entry=4,2 -c sw.c -o sw.patch.$round.o \
    || fail "repocc -fpatchable-function-entry sw.c ($round)"
  REPOCC_DIR="$SCRATCH/repo-patch" "$REPOCC" -O2 -fpatchable-function-entry=4,2 sw-main.c sw.patch.$round.o -o sw.patch.repocc \
    || fail "linking with -fpatchable-function-entry ($round)"
  assert_eq "-fpatchable-function-entry: the program's table ($round)" \
    "$(patchable_entries sw.patch.clang)" "$(patchable_entries sw.patch.repocc)"
  assert_eq "-fpatchable-function-entry: the program runs ($round)" 1236 "$(./sw.patch.repocc)"
done
cmp sw.patch.cold.o sw.patch.warm.o || fail "-fpatchable-function-entry: the warm object differs from the cold one"
note "-fpatchable-function-entry: every function's entry in the table, as clang's"

# The code generator's own definitions go with the fragments that refer
# to them: with -mretpoline an indirect call goes through the thunk
# `__llvm_retpoline_r11`, which the code generator adds to the module
# (no fragment's member); the fragment kept a weak undefined reference,
# and the program jumped to address 0.
cat > thunk.c <<'SRC'
#include <stdio.h>
static int add1(int x) { return x + 1; }
static int dbl(int x) { return x * 2; }
int (*table[2])(int) = { add1, dbl };
__attribute__((noinline)) int call(int i, int x) { return table[i & 1](x); }
int main(int argc, char **argv) { (void)argv; printf("%d\n", call(argc, 20) + call(argc + 1, 5)); return 0; }
SRC
for f in "-O2" "-O0 -g"; do
  # shellcheck disable=SC2086
  REPOCC_DIR="$SCRATCH/repo-thunk" "$REPOCC" $f -mretpoline thunk.c -o thunk.prog || fail "repocc $f -mretpoline thunk.c"
  nm thunk.prog | grep -q ' t __llvm_retpoline_r11$' || fail "-mretpoline ($f): no thunk in the program"
  assert_eq "-mretpoline ($f): the program runs" 46 "$(./thunk.prog)"
done
note "-mretpoline: the thunk is in the program, which runs"

# A retained definition (`__attribute__((retain))`) survives a link with
# --gc-sections, as in clang's build: GNU ld honours SHF_GNU_RETAIN only
# in an object of the GNU ABI, which LLVM marks and the composed object
# (its header the glue's, System V) did not: the definitions were dropped.
cat > retain.c <<'SRC'
__attribute__((retain, used)) static const char keep_me[] = "kept";
__attribute__((retain, used)) static int keep_fn(int x) { return x + 1; }
int main(void) { return 0; }
SRC
for f in "-O2" "-O1 -g"; do
  # shellcheck disable=SC2086
  REPOCC_DIR="$SCRATCH/repo-retain" "$REPOCC" $f -c retain.c -o retain.o || fail "repocc $f retain.c"
  clang-19 -Wl,--gc-sections retain.o -o retain.prog || fail "linking retain.o ($f)"
  assert_eq "retained definitions after --gc-sections ($f)" "keep_fn keep_me" \
    "$(nm retain.prog | awk '$3 ~ /^keep_/ { print $3 }' | sort | tr '\n' ' ' | sed 's/ $//')"
done
note "retained definitions survive --gc-sections, as clang's"

# A unit with ifuncs (`__attribute__((ifunc))`, the dispatcher of
# `target_clones`) is compiled whole: fragments lost the ifunc's symbol
# (an undefined `inc` at the link) or its dispatcher (a crash at run time).
cat > ifunc.c <<'SRC'
#include <stdio.h>
__attribute__((target_clones("avx2", "default"))) int twice(int x) { return 2 * x; }
static int plus_one(int x) { return x + 1; }
static void *pick_inc(void) { return (void *)plus_one; }
int inc(int) __attribute__((ifunc("pick_inc")));
int use(int x) { return inc(twice(x)); }
int main(void) { printf("%d\n", use(20)); return 0; }
SRC
for round in cold warm; do
  clang-19 -O2 ifunc.c -o ifunc.clang
  REPOCC_DIR="$SCRATCH/repo-ifunc" "$REPOCC" -O2 -c ifunc.c -o ifunc.o || fail "repocc ifunc.c ($round)"
  clang-19 ifunc.o -o ifunc.repocc || fail "linking ifunc.o ($round)"
  assert_eq "ifuncs ($round)" "$(./ifunc.clang)" "$(./ifunc.repocc)"
  sed -i 's/return 2 \* x;/return 3 * x;/' ifunc.c
done
note "units with ifuncs and target_clones run as clang's, cold and after an edit"

# A unit whose file-scope assembly versions its symbols (`.symver`, as xz's
# liblzma does) is compiled whole too, not by clang after a failed try:
# the fragment that carried the assembly lacked the versioned definition.
cat > symver.c <<'SRC'
int get_52(int x) { return x + 52; }
int get_50(int x) { return x + 50; }
__asm__(".symver get_52,get@@V_5.2");
__asm__(".symver get_50,get@V_5.0");
SRC
fallbacks=$(stat_value fallbacks)
"$REPOCC" -O2 -c symver.c -o symver.o || fail "repocc symver.c"
assert_eq "fallbacks for symver.c" 0 "$(delta fallbacks "$fallbacks")"
for sym in 'get@@V_5.2' 'get@V_5.0' get_52 get_50; do
  nm symver.o | grep -q " T $sym\$" || fail "symver.c: no $sym in the object: $(nm symver.o)"
done
note "a unit with .symver is compiled whole, its versioned symbols defined"

# Unwind records are laid out as clang lays them out: each FDE padded to 4
# bytes, the section's last to 8 (fragments' records were padded to 8, 4
# bytes more per function than clang's: 5% of leveldb's .eh_frame). A unit
# whose functions compile to the same code as clang's gets clang's
# .eh_frame byte for byte, and the same relocations.
cat > unw.c <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int leaf(int x) { return x * 3 + 1; }
long frames(long a, long b, long c, long d, long e, long f) {
  long v[8]; for (int i = 0; i < 8; i++) v[i] = a * i + b;
  printf("%ld %ld\n", v[a & 7], c + d + e + f);
  return v[b & 7] + leaf((int)c);
}
char *joined(const char *a, const char *b) {
  size_t n = strlen(a), m = strlen(b);
  char *out = malloc(n + m + 1);
  if (!out) abort();
  memcpy(out, a, n); memcpy(out + n, b, m + 1);
  return out;
}
double mean(const double *xs, int n) { double s = 0; for (int i = 0; i < n; i++) s += xs[i]; return n ? s / n : 0; }
SRC
eh_frame_bytes() { objcopy -O binary --only-section=.eh_frame "$1" /dev/stdout | od -An -tx1 -v; }
eh_frame_relocs() { readelf -rW "$1" | sed -n '/rela.eh_frame/,/^$/p' | tail -n +2 | awk 'NF { print $1, $3, $5, $6, $7 }'; }
for f in "" -fPIC -ffunction-sections; do
  clang-19 -O2 $f -c unw.c -o unw.clang.o
  REPOCC_DIR="$SCRATCH/repo-unw" "$REPOCC" -O2 $f -c unw.c -o unw.repocc.o || fail "repocc -O2 $f unw.c"
  [ -n "$(eh_frame_bytes unw.clang.o)" ] || fail "test premise: clang's unw.o has no .eh_frame"
  diff <(eh_frame_bytes unw.clang.o) <(eh_frame_bytes unw.repocc.o) >/dev/null || fail ".eh_frame of unw.c ($f) differs from clang's"
  diff <(eh_frame_relocs unw.clang.o) <(eh_frame_relocs unw.repocc.o) || fail ".eh_frame relocations of unw.c ($f) differ from clang's"
done
note "unwind records as clang's: same .eh_frame bytes and relocations"

# A switch over string literals becomes a table of 32-bit offsets in
# position-independent code, as clang makes it (LLVM's relative lookup
# tables): not a table of pointers in .data.rel.ro, each a dynamic
# relocation in a PIE. Cold, warm after an edit (equal to cold), and run.
cat > rlt.c <<'SRC'
#include <stdio.h>
const char *kind_name(int k) {
  switch (k) { case 0: return "zero"; case 1: return "one"; case 2: return "two"; case 3: return "three"; case 4: return "four"; default: return "many"; }
}
static const char hello[] = "hello";
const char *pick(int k) {
  switch (k) { case 0: return hello; case 1: return "x"; case 2: return "yy"; case 3: return hello + 1; default: return "z"; }
}
int main(int argc, char **argv) { for (int i = 0; i < 6; i++) printf("%s %s\n", kind_name(i + argc - 1), pick(i)); return 0; }
SRC
clang-19 -O2 -c rlt.c -o rlt.clang.o
section_names rlt.clang.o | has '^\.data\.rel\.ro$' && fail "test premise: clang-19 kept a table of pointers for rlt.c"
for round in cold edited; do
  REPOCC_DIR="$SCRATCH/repo-rlt" "$REPOCC" -O2 -c rlt.c -o rlt.o || fail "repocc -O2 rlt.c ($round)"
  diff <(section_names rlt.clang.o) <(section_names rlt.o) || fail "sections of rlt.c ($round) differ from clang's"
  clang-19 -O2 rlt.c -o rlt.clang
  clang-19 rlt.o -o rlt.repocc || fail "linking rlt.o ($round)"
  assert_eq "switch over strings ($round)" "$(./rlt.clang)" "$(./rlt.repocc)"
  sed -i 's/"three"/"THREE"/' rlt.c
  clang-19 -O2 -c rlt.c -o rlt.clang.o
done
REPOCC_DIR="$SCRATCH/repo-rlt-new" "$REPOCC" -O2 -c rlt.c -o rlt.cold.o || fail "cold compile of rlt.c"
REPOCC_DIR="$SCRATCH/repo-rlt" "$REPOCC" -O2 -c rlt.c -o rlt.warm.o || fail "warm compile of rlt.c"
cmp rlt.warm.o rlt.cold.o || fail "rlt.c after an edit: the warm object differs from a compile into a new repository"
note "switch tables of strings are relative, as clang's; warm equals cold"

# Tables the optimizer makes that several functions have alike (a switch
# inlined into several callers) are kept once in the object, as clang's
# ConstantMerge keeps one: no more read-only data than clang's object
# (less where the callers' tables of strings became relative ones, which
# clang's shared table of pointers does not).
cat > dd.c <<'SRC'
#include <stdio.h>
static inline const char *kind(int k) {
  switch (k) { case 0: return "zero"; case 1: return "one"; case 2: return "two"; case 3: return "three"; case 4: return "four"; default: return "many"; }
}
static inline int val(int k) {
  switch (k) { case 0: return 17; case 1: return 4; case 2: return 99; case 3: return 1234; case 4: return 7; default: return 0; }
}
__attribute__((noinline)) const char *a(int k) { return kind(k); }
__attribute__((noinline)) const char *b(int k) { printf("b\n"); return kind(k + 1); }
__attribute__((noinline)) int c(int k) { return val(k) + val(k + 2); }
__attribute__((noinline)) int d(int k) { return val(k) * 3; }
int main(int argc, char **argv) { (void)argv; for (int i = 0; i < 6; i++) printf("%s %s %d %d\n", a(i + argc - 1), b(i), c(i), d(i)); return 0; }
SRC
table_bytes() { size -A "$1" | awk '$1 ~ /^\.rodata/ && $1 !~ /^\.rodata\.str/ || $1 ~ /^\.data\.rel\.ro/ { t += $2 } END { print t + 0 }'; }
for f in "" -O1 "-fdata-sections"; do
  clang-19 -O2 $f -c dd.c -o dd.clang.o
  REPOCC_DIR="$SCRATCH/repo-dd" "$REPOCC" -O2 $f -c dd.c -o dd.o || fail "repocc -O2 $f dd.c"
  note "dd.c ($f): tables $(table_bytes dd.o) bytes, clang-19's $(table_bytes dd.clang.o)"
  [ "$(table_bytes dd.o)" -le "$(table_bytes dd.clang.o)" ] \
    || fail "tables of dd.c ($f): $(table_bytes dd.o) bytes, more than clang-19's $(table_bytes dd.clang.o)"
  clang-19 -O2 $f dd.c -o dd.clang
  clang-19 dd.o -o dd.repocc || fail "linking dd.o ($f)"
  assert_eq "shared tables ($f)" "$(./dd.clang)" "$(./dd.repocc)"
done
sed -i 's/return 1234;/return 1235;/' dd.c
REPOCC_DIR="$SCRATCH/repo-dd" "$REPOCC" -O2 -c dd.c -o dd.warm.o || fail "warm compile of the edited dd.c"
REPOCC_DIR="$SCRATCH/repo-dd-new" "$REPOCC" -O2 -c dd.c -o dd.cold.o || fail "cold compile of the edited dd.c"
cmp dd.warm.o dd.cold.o || fail "dd.c after an edit: the warm object differs from a compile into a new repository"
note "tables alike in several functions kept once, as clang's; warm equals cold"

# A recompiled function whose only user is a pruned (mutable) table: the
# optimizer must see it used, as in a cold compile, where dead-argument
# elimination drops its unused argument's debug value (debug info with
# and without the table differed).
cat > du.c <<'SRC'
int get(void) { return 1; }
static int cb(int *out, int unused) { *out = get(); return 0; }
int (*table[])(int *, int) = { cb };
SRC
REPOCC_DIR="$SCRATCH/repo-du" "$REPOCC" -O2 -g -c du.c -o du.o || fail "repocc -O2 -g du.c"
sed -i 's/return 1;/return 2;/' du.c
REPOCC_DIR="$SCRATCH/repo-du" "$REPOCC" --zero-stats > /dev/null
REPOCC_DIR="$SCRATCH/repo-du" "$REPOCC" -O2 -g -c du.c -o du.warm.o || fail "warm compile of the edited du.c"
compiled=$(REPOCC_DIR="$SCRATCH/repo-du" stat_value definitions_compiled)
[ "$compiled" -eq 2 ] || fail "the edit to du.c compiled $compiled definitions, expected get and cb"
REPOCC_DIR="$SCRATCH/repo-du-new" "$REPOCC" -O2 -g -c du.c -o du.cold.o || fail "cold compile of the edited du.c"
cmp du.warm.o du.cold.o || fail "du.c after an edit: the warm object differs from a compile into a new repository"
note "a function used only by a pruned table: warm equals cold"

# A 32-bit unit: repocc's ELF code reads ELF64 only, so composing goes
# through ld.lld -r and each fragment is a module of its own. Both declines
# are counted with their reasons and explained; the object is a correct
# 32-bit object with both functions.
printf 'int g(int x) { return x * 3; }\nint f(int x) { return g(x) + 1; }\n' > d32.c
REPOCC_DIR="$SCRATCH/repo-32" REPOCC_EXPLAIN=1 "$REPOCC" -m32 -O2 -c d32.c -o d32.o 2> d32.err \
  || { cat d32.err; fail "repocc -m32 -c d32.c"; }
llvm-readelf-19 -h d32.o | has "Class: +ELF32" || fail "d32.o is not a 32-bit object"
nm d32.o | has " T f" && nm d32.o | has " T g" || fail "d32.o lacks f or g"
assert_eq "32-bit unit: composing declined" 1 "$(REPOCC_DIR="$SCRATCH/repo-32" stat_value compose_declines)"
assert_eq "32-bit unit: carving declined" 2 "$(REPOCC_DIR="$SCRATCH/repo-32" stat_value carve_declines)"
grep -F -e "explain d32.c: decline: composing (ld.lld -r instead): " d32.err > /dev/null || fail "REPOCC_EXPLAIN does not say composing declined"
grep -F -e "explain d32.c: decline: carving (a module per fragment instead): " d32.err > /dev/null || fail "REPOCC_EXPLAIN does not say carving declined"
note "a 32-bit unit: both declines counted and explained"
# With debug information a 32-bit unit is compiled whole (repocc's DWARF
# code reads ELF64 objects): clang's object, no warning (it was a fallback
# with "a fragment's object cannot be read" for every unit).
for f in "-O2 -g" "-O0 -g"; do
  REPOCC_DIR="$SCRATCH/repo-32g" REPOCC_DEBUG_FRAGMENTS=true "$REPOCC" -m32 $f -c d32.c -o d32g.o 2> d32g.err \
    || { cat d32g.err; fail "repocc -m32 $f -c d32.c"; }
  [ -s d32g.err ] && fail "-m32 $f: $(cat d32g.err)"
  clang-19 -m32 $f -c d32.c -o d32g.clang.o
  cmp d32g.o d32g.clang.o || fail "-m32 $f: not clang-19's object"
done
assert_eq "32-bit debug units: fallbacks" 0 "$(REPOCC_DIR="$SCRATCH/repo-32g" stat_value fallbacks)"
assert_eq "32-bit debug units: compiled whole" 2 "$(REPOCC_DIR="$SCRATCH/repo-32g" stat_value debug_units_whole)"
note "a 32-bit unit with -g: compiled whole, clang's object, no warning"

# A member the carver cannot index (an unwind section with a terminator
# record, from inline assembly) makes its whole code generation decline;
# the others are then carved from a module of their own, as they would be
# carved beside other company: g stored by one unit is the g another unit
# carves, and that unit's warm object equals its cold one.
cat > odd.c <<'SRC'
int g(int x) { return x * 3 + 1; }
int f(int x) {
  __asm__ volatile(".pushsection .eh_frame,\"a\",@unwind\n.long 0\n.popsection");
  return g(x) + 2;
}
SRC
printf 'int g(int x) { return x * 3 + 1; }\nint h(int x) { return g(x) - 5; }\n' > even.c
REPOCC_DIR="$SCRATCH/repo-odd" REPOCC_UNIT_CACHE=false "$REPOCC" -O2 -c odd.c -o odd.o || fail "repocc -O2 -c odd.c"
REPOCC_DIR="$SCRATCH/repo-odd" REPOCC_UNIT_CACHE=false "$REPOCC" --zero-stats > /dev/null
REPOCC_DIR="$SCRATCH/repo-odd" REPOCC_UNIT_CACHE=false "$REPOCC" -O2 -c even.c -o even.warm.o || fail "repocc -O2 -c even.c after odd.c"
assert_eq "even.c after odd.c: definitions shared" 1 "$(REPOCC_DIR="$SCRATCH/repo-odd" stat_value definitions_shared)"
REPOCC_DIR="$SCRATCH/repo-even" REPOCC_UNIT_CACHE=false "$REPOCC" -O2 -c even.c -o even.cold.o || fail "repocc -O2 -c even.c, cold"
cmp even.warm.o even.cold.o || fail "even.c with g stored by a unit whose carving declined: the warm object differs from the cold one"
note "a whole code generation the carver declines: its members carved alone, warm equals cold"
