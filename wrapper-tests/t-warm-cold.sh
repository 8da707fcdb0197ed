# Same source, same bytes (invariant 4) after an edit: csmith programs
# compiled cold into a repository, edited, compiled again against it (the
# unit cache off, so the fragments decide), and compared with a cold
# compile of the edited source into an empty repository: the objects must
# be the same bytes. Edits: a constant inside the first and the second
# function body (one more, or one less at 2**64-1), three blank lines
# above func_1 (every line below moves),
# an unused function appended. Flag sets -O1 -g, -O2, -O2 -g, -Os -g, -O3.
# And -g never changes the code: -O2 and -O2 -g objects have the same
# .text, .rodata and .data (a fragment's local helpers laid out alike).
# Fixed seeds (cases that differed before) and two fresh seeds per run
# (printed, CSMITH_SEED replays them).
# Then lua sources and hand-made cases, each after something that once
# differed (each section's comment says what).
source "$(dirname "$0")/lib.sh"
cd "$SCRATCH"
export REPOCC_UNIT_CACHE=false
FRESH=${CSMITH_SEED:-$(( $(date +%s) % 1000000 + 8000000 ))}
note "seeds 7002000 7011002 7020002 8910074, $FRESH and $((FRESH + 1)) (CSMITH_SEED=$FRESH replays the last two)"

# edit KIND IN OUT: the edited program (fails when the edit finds no place).
edit() {
  case $1 in
    const1|const2) python3 - "$2" "${1#const}" > "$3" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
bodies = [m.end() for m in re.finditer(r'\n\{ /\* block id: \d+ \*/\n', src)]
start = bodies[int(sys.argv[2])]
for m in re.finditer(r'(?<![\w.])(\d+)(?=[UL]*[;,) ])', src[start:]):
    line = src[:start + m.start()].rsplit('\n', 1)[-1]
    if '/*' in line:
        continue
    at = start + m.start()
    # one more, or one less where one more is no longer a literal
    # (2**64 is too large for any integer type: clang rejects it)
    n = int(m.group(1))
    n = n + 1 if n + 1 < 2**64 else n - 1
    print(src[:at] + str(n) + src[start + m.end():], end="")
    break
else:
    sys.exit(1)
PY
      ;;
    shift) awk '/^static .*func_1\(void\)$/ && !d { print "\n\n"; d = 1 } { print }' "$2" > "$3" ;;
    append) { cat "$2"; echo 'int unused_added(int x) { return x * 3 + 1; }'; } > "$3" ;;
  esac
  ! cmp -s "$2" "$3"
}

# same_layout WHAT DIR FILE FLAGS...: -g changes no code: the -O2 and -O2 -g
# objects (compiled in DIR) have the same .text, .rodata and .data.
same_layout() {
  local what=$1 dir=$2 file=$3 s
  shift 3
  mkdir -p "$dir" && cd "$dir"
  rm -rf repo-a repo-b
  REPOCC_DIR="$PWD/repo-a" "$REPOCC" -O2 "$@" -w -c "$file" -o plain.o || fail "$what -O2"
  REPOCC_DIR="$PWD/repo-b" "$REPOCC" -O2 -g "$@" -w -c "$file" -o debug.o || fail "$what -O2 -g"
  for s in .text .rodata .data; do
    llvm-objcopy-19 -O binary --only-section="$s" plain.o plain.bin
    llvm-objcopy-19 -O binary --only-section="$s" debug.o debug.bin
    cmp -s plain.bin debug.bin || fail "$what: -O2 and -O2 -g objects have another $s"
  done
}

# warm_against_cold TAG SEED KIND FLAGS: orig-SEED.c compiled cold into a
# repository, then edited-SEED-KIND.c against it and cold into an empty
# one, in a directory of its own (case-TAG): the same bytes. Counted in
# compared/TAG.
warm_against_cold() {
  local tag=$1 seed=$2 kind=$3 O=$4
  mkdir -p "case-$tag" && cd "case-$tag"
  cp "../orig-$seed.c" x.c
  REPOCC_DIR="$PWD/warm-repo" "$REPOCC" $O -I/usr/include/csmith -w -c x.c -o x.o || fail "seed $seed $O: cold compile"
  cp "../edited-$seed-$kind.c" x.c
  REPOCC_DIR="$PWD/warm-repo" "$REPOCC" $O -I/usr/include/csmith -w -c x.c -o warm.o || fail "seed $seed $kind $O: warm compile"
  REPOCC_DIR="$PWD/cold-repo" "$REPOCC" $O -I/usr/include/csmith -w -c x.c -o cold.o || fail "seed $seed $kind $O: cold compile"
  cmp -s warm.o cold.o || fail "seed $seed, $kind, $O: the warm object is not the cold one"
  echo "$O" > "../compared/$tag"
  cd .. && rm -rf "case-$tag"
}

# The cases are independent: $JOBS at a time (each compile keeps about one
# core busy).
mkdir -p compared
for seed in 7002000 7011002 7020002 8910074 "$FRESH" $((FRESH + 1)); do
  csmith --seed "$seed" > "orig-$seed.c" 2> /dev/null || fail "csmith --seed $seed"
  for kind in const1 const2 shift append; do
    edit "$kind" "orig-$seed.c" "edited-$seed-$kind.c" || { note "seed $seed: no place for $kind"; continue; }
    for O in "-O1 -g" "-O2" "-O2 -g" "-Os -g" "-O3"; do
      tag="$seed-$kind-$(echo "$O" | tr -d ' -')"
      pool_start "warm-cold-$tag.log" warm_against_cold "$tag" "$seed" "$kind" "$O"
    done
  done
  pool_start "layout-$seed.log" same_layout "seed $seed" "layout-$seed" "$SCRATCH/orig-$seed.c" -I/usr/include/csmith
done
pool_wait "warm against cold compiles"
per_flags=$(for O in "-O1 -g" "-O2" "-O2 -g" "-Os -g" "-O3"; do
  printf '%s: %s; ' "$O" "$(cat compared/* | grep -cx -- "$O" || true)"
done)
compared=$(ls compared | wc -l)
[ "$compared" -ge 60 ] || fail "only $compared warm objects compared"
note "$compared warm objects compared with cold ones: all the same bytes ($per_flags)"

# lua sources whose fragments carry local helpers (static functions and
# constants, jump tables of statics), with and without -g. clang-19's own
# code moves with -g in a few (lundump.c: `add` for `or`); where it does
# not, neither may repocc's.
# recursions.c: sixteen pairs of functions that call each other, whose
# code depends on which of the pair the optimizer meets first; that order
# must not follow digests that hold debug info (each pair's order then
# flipped with -g at even odds, sqlite3.c's sorter among them).
src=$(fetch_debian_source lua5.4 --skip-patches)
for i in $(seq 0 15); do
  printf 'int g%d(int n);\nint f%d(int n) { return n <= 0 ? %d : n * g%d(n - 1) + %d; }\n' \
    "$i" "$i" "$i" "$i" $((i + 1))
  printf 'int g%d(int n) { return n <= 1 ? n : f%d(n - 2) + f%d(n - %d); }\n' \
    "$i" "$i" "$i" $((i % 3 + 1))
done > "$SCRATCH/recursions.c"
for path in "$src"/src/{lcode.c,lua.c,lparser.c} "$SCRATCH/recursions.c"; do
  f=$(basename "$path")
  clang-19 -O2 -DLUA_USE_LINUX -c "$path" -o clang-plain.o \
    && clang-19 -O2 -g -DLUA_USE_LINUX -c "$path" -o clang-debug.o \
    || fail "clang-19: $f"
  for s in .text .rodata .data; do
    llvm-objcopy-19 -O binary --only-section="$s" clang-plain.o plain.bin
    llvm-objcopy-19 -O binary --only-section="$s" clang-debug.o debug.bin
    cmp -s plain.bin debug.bin || fail "$f: clang-19's own $s moves with -g; pick another file"
  done
  (same_layout "$f" "layout-$f" "$path" -DLUA_USE_LINUX)
done

# A variable's alignment is its own. LLVM raises a variable's alignment
# for the loads and stores of its users (a 4-byte memcpy into a char[10]
# becomes an i32 store; a loop vectorized for AVX loads 32 bytes), so with
# the raise a stored variable's bytes depended on units and edits that had
# other users, and a recompiled user could assume more than the stored
# variable had (vmovaps on a 16-aligned table: SIGSEGV). align-users.c
# compiled after align-plain.c (the same variables, other users) stored
# them, after its own earlier version without the users, and cold into
# an empty repository: the same bytes each way (with -g a unit's debug
# fragments are its own, so only the edit can take them); linked behind 16 bytes of
# data (the table then 16-aligned at best), the program runs.
P="$WT_ROOT/programs"
mkdir -p align && cd align
printf 'long pad[2] = {1, 2};\nlong pad_at(int i) { return pad[i]; }\n' > pad.c
clang-19 -O2 -c pad.c -o pad.o
sed -e '/^__attribute__((noinline)) void doubled/,/^}/d' -e '/^__attribute__((noinline)) void name/d' \
  -e 's/^  doubled();$//' -e 's/^  name();$//' "$P/align-users.c" > users-before.c
for flags in "-O2" "-O2 -mavx2" "-O3 -g -mavx2"; do
  tag=$(echo "$flags" | tr -d ' -')
  rm -rf repo-*
  # One path for each version: with -g the path is in the object, and
  # the edit is the same unit's.
  # shellcheck disable=SC2086
  {
    cp users-before.c users.c
    REPOCC_DIR=$PWD/repo-edit "$REPOCC" $flags -c users.c -o before.o
    cp "$P/align-users.c" users.c
    REPOCC_DIR=$PWD/repo-edit "$REPOCC" $flags -c users.c -o edit-$tag.o
    REPOCC_DIR=$PWD/repo-other "$REPOCC" $flags -c "$P/align-plain.c" -o plain.o
    REPOCC_DIR=$PWD/repo-other "$REPOCC" $flags -c users.c -o other-$tag.o
    REPOCC_DIR=$PWD/repo-cold "$REPOCC" $flags -c users.c -o cold-$tag.o
  } || fail "align: a compile failed ($flags)"
  # (With -g a unit's debug fragments are its own: nothing to take.)
  if [[ $flags != *-g* ]]; then
    REPOCC_DIR=$PWD/repo-other "$REPOCC" --show-stats | grep -Eq 'definitions_shared +[1-9]' \
      || fail "align ($flags): align-users.c took nothing from align-plain.c, so nothing was tested"
  fi
  REPOCC_DIR=$PWD/repo-edit "$REPOCC" --show-stats | grep -Eq 'definitions_pruned +[1-9]' \
    || fail "align ($flags): the edit pruned nothing, so nothing was tested"
  cmp -s other-$tag.o cold-$tag.o || fail "align ($flags): compiled after align-plain.c, the object is not the cold one"
  cmp -s edit-$tag.o cold-$tag.o || fail "align ($flags): compiled after its earlier version, the object is not the cold one"
  if [[ $flags != *avx2* ]] || grep -qw avx2 /proc/cpuinfo; then
    for o in other edit; do
      clang-19 pad.o $o-$tag.o -o prog || fail "align ($flags): link"
      assert_eq "align ($flags, $o)" "2 16 foo" "$(./prog)"
    done
  fi
done
cd ..
note "variables' alignments are their own: after other users, after an edit and cold, the same bytes"

# Address significance is a fragment's own. The optimizer infers
# `local_unnamed_addr` (the address is never compared or escapes) from
# every use in the unit, and LLVM lists in `.llvm_addrsig` what has a use
# without it: so an inline function that only calls free() listed free
# when its unit also passed &free somewhere, and another unit taking that
# fragment got other bytes than compiled cold (glog's vlog_is_on.cc, with
# abort). keep.cpp takes free's address; call.cpp only calls it, through
# the same inline function.
# after_other_unit FLAGS FIRST SECOND: FIRST.cpp, then SECOND.cpp into the
# same new repository (repo-shared, counters zeroed in between) and into
# one of its own (SECOND-cold.o); fails when SECOND took nothing from FIRST
# or its object is not the cold one.
after_other_unit() {
  rm -rf repo-*
  # shellcheck disable=SC2086
  {
    REPOCC_DIR=$PWD/repo-shared "$REPOCCXX" $1 -c "$2.cpp" -o "$2.o"
    REPOCC_DIR=$PWD/repo-shared "$REPOCC" --zero-stats > /dev/null
    REPOCC_DIR=$PWD/repo-shared REPOCC_EXPLAIN=1 "$REPOCCXX" $1 -c "$3.cpp" -o "$3.o" 2> "$3.explain"
    REPOCC_DIR=$PWD/repo-cold "$REPOCCXX" $1 -c "$3.cpp" -o "$3-cold.o"
  } || fail "$3.cpp after $2.cpp: a compile failed ($1)"
  [ "$(REPOCC_DIR=$PWD/repo-shared stat_value definitions_shared)" -ge 1 ] \
    || fail "$3.cpp took nothing from $2.cpp ($1), so nothing was tested"
  cmp -s "$3.o" "$3-cold.o" || fail "$3.cpp ($1): compiled after $2.cpp, the object is not the cold one"
}
mkdir -p addrsig && cd addrsig
cat > release.hpp <<'CXX'
#include <cstdlib>
__attribute__((noinline)) inline void release(void *p) { if (p) std::free(p); }
CXX
printf '#include "release.hpp"\nvoid (*keep)(void *) = std::free;\nvoid a(void *p) { release(p); }\n' > keep.cpp
printf '#include "release.hpp"\nvoid b(void *p) { release(p); }\nint main() { b(std::malloc(4)); }\n' > call.cpp
significant() { llvm-readobj-19 --addrsig "$1" | awk '/Sym:/ { print $2 }' | sort | tr '\n' ' '; }
for flags in "-O1" "-O2" "-O2 -g"; do
  after_other_unit "$flags" keep call
  assert_eq "addrsig ($flags): keep.cpp's significant symbols" "free " "$(significant keep.o)"
  assert_eq "addrsig ($flags): call.cpp's significant symbols" "" "$(significant call.o)"
  clang++-19 keep.o call.o -o prog && ./prog || fail "addrsig ($flags): the program does not link or run"
done
cd ..
note "address significance is each fragment's own: after a unit taking the address, the cold bytes"

# Names and paths beyond ASCII. LLVM prints a byte that is not printable
# ASCII as \XX in a quoted name or string, and the digests read printed
# modules: a function named `À` (g++'s ucnid-1.C) was known to them as
# `_Z2\C3\80v`, to the module as `_Z2Àv`, so its stored fragment was taken
# without what the unit's other definitions needed of its body (main
# called it where the cold compile folded it), and a source under a
# directory named `josé` kept no line of its own after an edit.
mkdir -p "unicode/josé" && cd "unicode/josé"
# A function defined in a header (shared with debug info too).
printf 'int \\u00C0(int x) { return x + 1; }\n' > grave.h
printf '#include "grave.h"\nint one(int x) { return \\u00C0(x); }\n' > one.cpp
printf '#include "grave.h"\nint wh\\u00ff(int x) { return x + \\u00C0(x); }\nint main() { return wh\\u00ff(2) == 5 ? 0 : 1; }\n' > both.cpp
for flags in "-O2" "-O2 -g"; do
  after_other_unit "$flags" one both
  clang++-19 both.o -o prog && ./prog || fail "unicode ($flags): the program does not link or run"
  # Three lines added above: every definition moves, and is reused.
  (printf '/*\n moved\n */\n'; cat both.cpp) > moved.cpp
  # shellcheck disable=SC2086
  REPOCC_DIR=$PWD/repo-cold "$REPOCCXX" $flags -c moved.cpp -o moved.o || fail "unicode: moved.cpp ($flags)"
  # shellcheck disable=SC2086
  REPOCC_DIR=$PWD/repo-new "$REPOCCXX" $flags -c moved.cpp -o moved-cold.o || fail "unicode: moved.cpp cold ($flags)"
  cmp -s moved.o moved-cold.o || fail "unicode ($flags): after lines were added, the object is not the cold one"
done
cd ../..
note "names and paths beyond ASCII: after another unit stored a function, and after an edit, the cold bytes"

# A global named only by a debug record. probe() takes its Limit apart,
# and a debug record keeps Limit's vtable as the value of its vtable
# pointer. first.cpp uses the vtable, so it stays, and probe's fragment,
# stored by first.cpp, named it; second.cpp alone has no vtable (the
# optimizer deleted it, the record has no location), yet after first.cpp
# its object took the vtable and Limit's destructor. (g++'s libstdc++
# tests: throw_allocator_limit's vtable in 21_strings' exception tests.)
mkdir -p debug-only && cd debug-only
cat > limit.hpp <<'CXX'
struct Limit {
  virtual ~Limit() {}
  virtual int cap() const { return 7; }
  int n = 3;
};
__attribute__((noinline)) inline int probe(int x) {
  Limit l;
  return x * l.n;
}
CXX
printf '#include "limit.hpp"\nLimit *make() { return new Limit; }\nint first(int x) { return probe(x) + make()->cap(); }\n' > first.cpp
printf '#include "limit.hpp"\nint main() { return probe(2) == 6 ? 0 : 1; }\n' > second.cpp
for flags in "-O1 -g" "-O2 -g"; do
  after_other_unit "$flags" first second
  clang++-19 second.o -o prog && ./prog || fail "debug-only ($flags): the program does not link or run"
done
cd ..
note "a global named only by a debug record: after a unit that keeps it, the cold bytes"

# A static local that only a reused inline function names. The class's
# debug info lists the member templates each unit instantiates, so the
# variable's digest (through its scope, the function) differs between
# first.cpp and second.cpp while lookup's does not: second.cpp takes
# lookup from the repository and compiles the variable, whose only user
# in its module is then a declaration. The optimizer deleted it and the
# object named it without defining it (libstdc++'s regex_traits::
# lookup_collatename and its __collatenames: no program linked).
mkdir -p static-local && cd static-local
cat > traits.hpp <<'CXX'
#include <cstring>
template <class C> struct traits {
  template <class It> __attribute__((noinline)) int lookup(It s) const {
    static const char *names[] = {"NUL", "SOH", "STX", "ETX", "EOT", "ENQ"};
    for (int i = 0; i < 6; i++)
      if (std::strcmp(names[i], s) == 0)
        return i;
    return -1;
  }
  template <class T> __attribute__((noinline)) T other(T t) const { return t + 1; }
};
CXX
printf '#include "traits.hpp"\nint first(const char *s) { traits<char> t; return t.lookup(s) + t.other(2L); }\n' > first.cpp
printf '#include <cstdio>\n#include "traits.hpp"\nint main() { traits<char> t; std::printf("%%d\\n", t.lookup("ETX")); }\n' > second.cpp
for flags in "-O1 -g" "-O2 -g" "-O2"; do
  after_other_unit "$flags" first second
  clang++-19 second.o -o prog || fail "static-local ($flags): second.o does not link (names: $(nm second.o | grep names))"
  assert_eq "static-local ($flags): the program's output" "3" "$(./prog)"
  # The variable's string "ETX" is main's too, so clang gives it main's
  # line in second.cpp: the variable's users do not see where it lies.
  assert_contains "static-local ($flags): the static local is taken from first.cpp" \
    "reused _ZZNK6traitsIcE6lookupIPKcEEiT_E5names: stored by another unit" "$(cat second.explain)"
done
cd ..
note "a static local only a reused function names: compiled, in the object, the cold bytes"

# Call sites between fragments (-O1 and above with -g): a call to a
# function another fragment of the unit defines gets its DW_TAG_call_site,
# so gdb shows the callee's arguments as clang's build does (x=x@entry=2),
# after the callee was stored by another unit as well. The callees are a
# function of the unit, a static, a member and a template instance.
mkdir -p call-sites && cd call-sites
cat > calls.hpp <<'CXX'
#include <cstdio>
template <class T> __attribute__((noinline)) T twice(T t) { std::printf("twice %d\n", int(t)); return t + t; }
CXX
cat > second.cpp <<'CXX'
#include "calls.hpp"
struct S { int v; __attribute__((noinline)) int get(int k) const; };
int S::get(int k) const { std::printf("get %d\n", k); return v + k; }
__attribute__((noinline)) int f(int x) { std::printf("f %d\n", x); return x * 3; }
__attribute__((noinline)) static int h(int y) { std::printf("h %d\n", y); return y + 1; }
int use(const S &s, int q) { return f(q + 1) + h(q * 2) + s.get(q) + twice(q); }
int main(int argc, char **) { S s{argc}; return use(s, argc) == 100; }
CXX
printf '#include "calls.hpp"\nint first(int x) { return twice(x + 1); }\n' > first.cpp
# The frames above printf at its four calls, without addresses (the two
# programs' names put the stack elsewhere).
frames() {
  { gdb -nx -batch -ex "break printf" -ex run -ex bt -ex c -ex bt -ex c -ex bt -ex c -ex bt "$1" 2>/dev/null || true; } \
    | grep -E '^#[1-9]' | sed 's/0x[0-9a-f]*//g'
}
clang++-19 -O2 -g second.cpp -o prog.clang
for flags in "-O1 -g" "-O2 -g"; do
  after_other_unit "$flags" first second
  clang++-19 -O2 -g second.o -o prog
  sites=$(llvm-dwarfdump-19 --debug-info second.o | grep -c 'DW_TAG_call_site$')
  # shellcheck disable=SC2086
  clang++-19 $flags -c second.cpp -o second-clang.o
  clang_sites=$(llvm-dwarfdump-19 --debug-info second-clang.o | grep -c 'DW_TAG_call_site$')
  assert_eq "call sites ($flags): DW_TAG_call_site entries, as many as clang-19's" "$clang_sites" "$sites"
done
expected=$(frames prog.clang)
assert_contains "call sites: clang-19's build shows entry values" "x=x@entry=2" "$expected"
assert_eq "call sites (-O2 -g): gdb's backtraces, as clang-19's build shows them" "$expected" "$(frames prog)"
cd ..
note "calls between fragments have their call sites: gdb shows entry values as in clang's build"

# The order of keyed initializers. A C++ inline variable's or a template
# variable's dynamic initializer is keyed by the variable: its
# `.init_array` section sits in the variable's COMDAT group, and the
# linker runs a unit's in the order of those sections in its object.
# C++17 orders inline variables defined one after another by it, and
# clang's object has them in `llvm.global_ctors` order; composed objects
# had them in fragment order, so `c` below was 1, not 42 (and g++'s
# var-templ39a.C aborted).
mkdir -p structors && cd structors
cat > order.hpp <<'CXX'
int seed();
inline int a = seed();
inline int b = a + 1;
inline int c = b + 1;
template <class> int depth = seed() - 39;
template <class T, int N> int depth<T[N]> = depth<T> + 1;
__attribute__((constructor(200))) inline void early() {}
CXX
printf '#include "order.hpp"\nint first() { return c + depth<int[2][3]>; }\n' > first.cpp
cat > second.cpp <<'CXX'
#include <cstdio>
#include "order.hpp"
int seed() { return 40; }
int x = c + 1;
__attribute__((constructor)) static void hello() { std::printf("hello %d\n", a); }
int main() {
  std::printf("%d %d %d %d %d %d\n", a, b, c, x, depth<int[2][3]>, depth<long[4][2][3]>);
}
CXX
clang++-19 -std=c++17 second.cpp -o clang-prog || fail "structors: clang-19 does not build second.cpp"
expected=$(./clang-prog)
for flags in "-O0" "-O2" "-O2 -g"; do
  after_other_unit "-std=c++17 $flags" first second
  for o in second.o second-cold.o; do
    clang++-19 "$o" -o prog || fail "structors ($flags): $o does not link"
    assert_eq "structors ($flags): what $o's program prints" "$expected" "$(./prog)"
  done
  # From the unit cache: the object composed again, the same bytes.
  # shellcheck disable=SC2086
  REPOCC_DIR=$PWD/repo-shared "$REPOCCXX" -std=c++17 $flags -c second.cpp -o again.o \
    || fail "structors ($flags): second.cpp again"
  cmp -s again.o second.o || fail "structors ($flags): the unit cache's object is not the compiled one"
done
# For a target the in-process composer does not compose (i386), `ld.lld
# -r` would keep the fragments' order: the unit is compiled whole,
# quietly.
printf 'int seed();\ninline int a = seed();\ninline int b = a + 1;\ninline int c = b + 1;\nint x = c;\n' > i386.cpp
# structor_tables OBJECT: its constructor and destructor tables in order,
# each as section@key ("-": none).
structor_tables() {
  python3 - "$1" <<'PY'
import re, subprocess, sys
def run(*args):
    return subprocess.run(["readelf", *args, sys.argv[1]], capture_output=True, text=True, check=True).stdout
key, group = {}, None
for line in run("-gW").splitlines():
    m = re.search(r"COMDAT group section \[\s*\d+\] `\.group' \[(.*)\]", line)
    if m:
        group = m.group(1)
        continue
    m = re.match(r"\s+\[\s*(\d+)\]\s+\S", line)
    if m and group:
        key[int(m.group(1))] = group
tables = (re.match(r"\s*\[\s*(\d+)\]\s+(\.(?:init|fini)_array\S*)\s", l) for l in run("-SW").splitlines())
print(" ".join(m.group(2) + "@" + key.get(int(m.group(1)), "-") for m in tables if m))
PY
}
clang++-19 -m32 -std=c++17 -O2 -c i386.cpp -o i386-clang.o || fail "structors: clang-19 -m32"
REPOCC_DIR=$PWD/repo-i386 "$REPOCCXX" -m32 -std=c++17 -O2 -c i386.cpp -o i386.o 2> i386.err \
  || fail "structors: repocc++ -m32: $(cat i386.err)"
assert_eq "structors (-m32): what repocc printed" "" "$(cat i386.err)"
# (The keyed ones: clang-19's optimizer may drop the unkeyed table, where
# repocc never evaluates a static constructor.)
keyed_tables() { structor_tables "$1" | tr ' ' '\n' | grep -v -- '@-$' | tr '\n' ' '; }
assert_eq "structors (-m32): the keyed constructor tables, in order" \
  "$(keyed_tables i386-clang.o)" "$(keyed_tables i386.o)"
cd ..
note "keyed initializers run in clang's order: after another unit stored them, cold, from the unit cache, and on i386"

# What the optimizer makes for one function is that function's alone.
# LLVM names a function's second lookup table with a number the module
# counts (`switch.table.B.2`, after A's), and with -fdata-sections that
# name is its section's; function specialization (IPSCCP) cloned a static
# for a constant function pointer within budgets the module shares, naming
# the clone with the module's count too (`apply.specialized.3`). Either
# way B's object, compiled after an edit of B alone (A and C pruned),
# was not the cold one. tables.c: three functions with two tables each;
# apply.c: one static that six functions call, each with its own function
# pointer, and a recursion passing one along.
mkdir -p optimizer-names && cd optimizer-names
gen_units() {
  python3 - "$1" <<'PY'
import sys
k = int(sys.argv[1])
cases = " ".join(f"case {i}: return {v};" for i, v in enumerate((20, 35, 41, 57, 2)))
with open("tables.c", "w") as out:
    for f, base in (("A", 10), ("B", 10 + k), ("C", 17)):
        for t, first in (("x", base), ("y", 300 + base)):
            out.write(f"static int {f}_{t}(int v) {{ switch (v) {{ case 9: return {first}; {cases} default: return 0; }} }}\n")
        out.write(f"int {f}(int x, int y) {{ return {f}_x(x) * 1000 + {f}_y(y); }}\n")
with open("apply.c", "w") as out:
    out.write("static __attribute__((noinline)) int apply(int (*f)(int), int n) {\n"
              "  int s = 0;\n  for (int i = 0; i < n; i++) { s += f(i); if (s > 1000) s ^= i * 7;\n"
              "    for (int j = 0; j < i; j++) s += f(j) / 3; }\n  return s;\n}\n"
              "static int walk(int (*f)(int), int n) { return n <= 0 ? 0 : f(n) + walk(f, n - 1); }\n")
    for f, c in (("A", 0), ("B", k), ("C", 7), ("D", 9), ("E", 11), ("F", 13)):
        out.write(f"static int {f}_sq(int x) {{ return x * x + {c}; }}\n"
                  f"int {f}(int n) {{ return apply({f}_sq, n) + walk({f}_sq, n); }}\n")
PY
}
for flags in "-O2" "-O3 -g" "-O2 -fdata-sections -ffunction-sections"; do
  for unit in tables apply; do
    rm -rf repo-*
    # shellcheck disable=SC2086
    {
      gen_units 1
      REPOCC_DIR=$PWD/repo-warm "$REPOCC" $flags -c $unit.c -o $unit-before.o
      gen_units 2
      REPOCC_DIR=$PWD/repo-warm REPOCC_UNIT_CACHE=0 "$REPOCC" $flags -c $unit.c -o $unit-warm.o
      REPOCC_DIR=$PWD/repo-cold "$REPOCC" $flags -c $unit.c -o $unit-cold.o
    } || fail "optimizer names: a compile of $unit.c failed ($flags)"
    [ "$(REPOCC_DIR=$PWD/repo-warm stat_value definitions_pruned)" -ge 2 ] \
      || fail "optimizer names ($unit.c, $flags): the edit pruned nothing, so nothing was tested"
    cmp -s $unit-warm.o $unit-cold.o \
      || fail "optimizer names ($unit.c, $flags): after an edit of B, the object is not the cold one"
  done
done
# With -fdata-sections each function's tables are numbered by it alone.
assert_eq "optimizer names: the tables' sections" \
  ".rodata..Lswitch.table.A .rodata..Lswitch.table.A.1 .rodata..Lswitch.table.B .rodata..Lswitch.table.B.1 .rodata..Lswitch.table.C .rodata..Lswitch.table.C.1" \
  "$(readelf -SW tables-cold.o | grep -o '\.rodata\.\.L[^ ]*' | sort | tr '\n' ' ' | sed 's/ $//')"
cd ..
note "optimizer-made names and specializations are each function's own: after an edit, the cold bytes"

# A debug record naming a local definition its function's code does not
# use. C++20 coroutines: the optimizer splits `squares` into a ramp and
# `squares.resume`; main, which inlines the ramp, keeps the resume
# function's address only in the debug records of the frame. After an
# edit of `counter` alone, the warm compile (squares pruned, its resume
# function dropped with it) gave main's records no location and the cold
# one kept them, with a copy of the resume function in main's fragment.
mkdir -p coroutines && cd coroutines
write_coroutines() {
  cat > coro.cpp <<CXX
#include <coroutine>
#include <cstdio>
struct gen {
  struct promise_type {
    int value = 0;
    gen get_return_object() { return gen{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    std::suspend_always yield_value(int v) { value = v; return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
  std::coroutine_handle<promise_type> h;
  ~gen() { if (h) h.destroy(); }
  bool next() { h.resume(); return !h.done(); }
  int value() const { return h.promise().value; }
};
gen counter(int n) { for (int i = 0; i < n; i++) co_yield i * $1; }
gen squares(int n) { for (int i = 1; i <= n; i++) co_yield i * i; }
int main(int argc, char **) {
  int s = 0;
  gen g = counter(5 + argc);
  while (g.next()) s += g.value();
  gen q = squares(4);
  while (q.next()) s += q.value();
  std::printf("%d\n", s);
}
CXX
}
for flags in "-O2 -g" "-O1 -g"; do
  rm -rf repo-*
  # shellcheck disable=SC2086
  {
    write_coroutines 3
    REPOCC_DIR=$PWD/repo-warm "$REPOCCXX" -std=c++20 $flags -c coro.cpp -o before.o
    write_coroutines 4
    REPOCC_DIR=$PWD/repo-warm REPOCC_UNIT_CACHE=0 "$REPOCCXX" -std=c++20 $flags -c coro.cpp -o warm.o
    REPOCC_DIR=$PWD/repo-cold "$REPOCCXX" -std=c++20 $flags -c coro.cpp -o cold.o
  } || fail "coroutines: a compile failed ($flags)"
  [ "$(REPOCC_DIR=$PWD/repo-warm stat_value definitions_pruned)" -ge 2 ] \
    || fail "coroutines ($flags): the edit pruned nothing, so nothing was tested"
  cmp -s warm.o cold.o || fail "coroutines ($flags): after an edit of counter, the object is not the cold one"
  clang++-19 warm.o -o prog || fail "coroutines ($flags): link"
  assert_eq "coroutines ($flags): the program" 90 "$(./prog)"
done
cd ..
note "C++20 coroutines: after an edit, the cold bytes (debug records naming a local their code does not use)"

# Variables sharing a named section (`__attribute__((section("myreg")))`,
# a registration table read between __start_myreg and __stop_myreg). Cut
# out of one code generation with the others, such a variable declines
# (its section is shared) and was compiled as a module of its own; after
# an edit that recompiles only one of them, it was carved (alone in the
# section then), and its reference to a string literal was other bytes.
# A member that declines in a batch is now carved from a module of its
# own, as where the batch declined whole.
mkdir -p named-sections && cd named-sections
write_registry() {
  cat > registry.c <<SRC
#include <stdio.h>
struct entry { const char *name; int (*fn)(int); };
#define REGISTER(n, f) static const struct entry entry_##n __attribute__((used, section("myreg"), aligned(8))) = { #n, f }
static int add1(int x) { return x + 1; }
static int scale(int x) { return x * $1; }
static int sub3(int x) { return x - 3; }
REGISTER(one, add1);
REGISTER(two, scale);
REGISTER(three, sub3);
extern const struct entry __start_myreg[], __stop_myreg[];
int main(void) {
  int s = 0;
  for (const struct entry *e = __start_myreg; e < __stop_myreg; e++) { s += e->fn(10); printf("%s ", e->name); }
  printf("%d\n", s);
  return 0;
}
SRC
}
for flags in "-O2" "-O2 -ffunction-sections -fdata-sections"; do
  rm -rf repo-*
  # shellcheck disable=SC2086
  {
    write_registry 3
    REPOCC_DIR=$PWD/repo-warm "$REPOCC" $flags -c registry.c -o before.o
    write_registry 5
    REPOCC_DIR=$PWD/repo-warm REPOCC_UNIT_CACHE=0 "$REPOCC" $flags -c registry.c -o warm.o
    REPOCC_DIR=$PWD/repo-cold "$REPOCC" $flags -c registry.c -o cold.o
  } || fail "named sections: a compile failed ($flags)"
  [ "$(REPOCC_DIR=$PWD/repo-warm stat_value definitions_pruned)" -ge 2 ] \
    || fail "named sections ($flags): the edit pruned nothing, so nothing was tested"
  cmp -s warm.o cold.o || fail "named sections ($flags): after an edit of scale, the object is not the cold one"
  clang-19 warm.o -o prog || fail "named sections ($flags): link"
  assert_eq "named sections ($flags): the program" "one two three 68" "$(./prog)"
done
cd ..
note "variables in one named section: after an edit, the cold bytes"
