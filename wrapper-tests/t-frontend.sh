# The in-process frontend (clang-19's driver and compiler proper linked into
# repocc) is clang-19: for the same unit it gives the same bitcode (so the
# same object), dependency file, diagnostics (plain and in colour) and exit
# code as clang-19 run as a process (REPOCC_EXTERNAL_FRONTEND=1) and as
# clang-19 itself, and a compile starts no process at all.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source lua5.4 --skip-patches)
cd "$SCRATCH"
export REPOCC_UNIT_CACHE=false

# 1. Every lua unit, in process and as a process: same object, same
#    dependency file (-MD with an explicit target), same warnings.
LUA_FLAGS=(-std=gnu99 -O2 -Wall -Wextra -Wcast-qual -DLUA_COMPAT_5_3 -DLUA_USE_LINUX)
for mode in 0 1; do
  mkdir -p "out-$mode"
  for f in "$src"/src/*.c; do
    b=$(basename "$f" .c)
    REPOCC_EXTERNAL_FRONTEND=$mode REPOCC_DIR="$SCRATCH/repo-$mode" \
      "$REPOCC" "${LUA_FLAGS[@]}" -MD -MT "$b.o" -MF "out-$mode/$b.d" \
      -c "$f" -o "out-$mode/$b.o" 2>> "warnings-$mode" || fail "$b.c (external frontend: $mode)"
  done
done
units=$(ls out-0/*.o | wc -l)
[ "$units" -gt 30 ] || fail "only $units lua units"
diff -r out-0 out-1 > /dev/null || fail "objects or dependency files differ: $(diff -rq out-0 out-1 | head -5)"
cmp -s warnings-0 warnings-1 || fail "warnings differ: $(diff warnings-0 warnings-1 | head -10)"
[ -s warnings-0 ] || fail "-Wcast-qual gave no warning at all on lua: the comparison proves nothing"
grep -q "lua.h" out-0/lapi.d || fail "the dependency file lacks lapi.c's headers"
note "$units lua units: objects, dependency files and $(wc -l < warnings-0) warning lines identical in and out of process"

# The in-process frontend ran: a compile starts no process (the unit cache,
# which asks clang for its include search list once, is off here).
strace -f -qq -e trace=execve -o trace.out "$REPOCC" "${LUA_FLAGS[@]}" -c "$src/src/lapi.c" -o traced.o \
  2> /dev/null || fail "traced compile"
started=$(grep -o 'execve("[^"]*"' trace.out | sed 's/^execve("//; s/"$//' | xargs -n1 basename | sort -u | tr '\n' ' ')
assert_eq "programs started by one compile" "repocc " "$started"
cmp -s traced.o out-0/lapi.o || fail "the traced compile's object differs"
REPOCC_EXTERNAL_FRONTEND=1 strace -f -qq -e trace=execve -o trace-ext.out \
  "$REPOCC" "${LUA_FLAGS[@]}" -c "$src/src/lapi.c" -o traced-ext.o 2> /dev/null || fail "traced compile"
grep -q 'execve("[^"]*clang' trace-ext.out || fail "REPOCC_EXTERNAL_FRONTEND=1 started no clang"

# 2. Diagnostics and exit codes against clang-19 itself, in both modes:
#    warnings, errors, a fatal error, a driver warning, -Werror, a bad
#    target option (the compiler proper's error) and an unknown option (the
#    driver's, which the in-process frontend leaves to clang).
cat > warn.c <<'C'
#include <stdio.h>
int main(void) { int unused; printf("%d\n", "not a number"); return 0; }
C
cat > errors.c <<'C'
int f(void) { return undefined_thing + 1; }
int g(void) { int y = "x"; return y; }
C
cat > fatal.c <<'C'
#include "no_such_header.h"
int x;
C
cat > deep.c <<'C'
int nest(int a) { return ((((((((((((((((((((a)))))))))))))))))))); }
C
# -H lists headers on stderr as they are entered, between the diagnostics.
printf '#warning "in a header"\n' > warns.h
cat > headers.c <<'C'
#include "warns.h"
#include <stddef.h>
#warning "after the includes"
int x;
C
cases=(
  "-H between diagnostics|-H -c headers.c -o headers.o"
  "-Wp,-v search list|-Wp,-v -Wall -c warn.c -o warn.o"
  "warnings|-Wall -c warn.c -o warn.o"
  "errors|-O2 -c errors.c -o errors.o"
  "fatal error|-c fatal.c -o fatal.o"
  "driver warning|-c warn.c -o warn.o -lm"
  "-Werror|-Wall -Werror -c warn.c -o warn.o"
  "bad target cpu|-march=no-such-cpu -c warn.c -o warn.o"
  "unknown option|-c warn.c --no-such-option -o warn.o"
  "bracket depth|-fbracket-depth=5 -c deep.c -o deep.o"
  "two units|-Wall -c warn.c errors.c"
)
# Each case through the repository's frontend (fragments=true) and as a
# unit compiled whole (the default for C at -O0, which most cases are).
for entry in "${cases[@]}"; do
  name=${entry%%|*}
  read -r -a args <<< "${entry#*|}"
  set +e
  clang-19 "${args[@]}" 2> err-clang; rc_clang=$?
  set -e
  for fragments in true auto; do
    set +e
    REPOCC_FRAGMENTS=$fragments "$REPOCC" "${args[@]}" 2> err-in; rc_in=$?
    REPOCC_FRAGMENTS=$fragments REPOCC_EXTERNAL_FRONTEND=1 "$REPOCC" "${args[@]}" 2> err-ext; rc_ext=$?
    set -e
    assert_eq "$name: exit code in process (fragments $fragments)" "$rc_clang" "$rc_in"
    assert_eq "$name: exit code as a process (fragments $fragments)" "$rc_clang" "$rc_ext"
    cmp -s err-clang err-in || fail "$name: diagnostics differ from clang's (fragments $fragments):
$(diff err-clang err-in)"
    cmp -s err-clang err-ext || fail "$name: diagnostics as a process differ from clang's (fragments $fragments)"
  done
  note "$name: exit $rc_in, $(wc -l < err-in) lines as clang-19 prints them"
done

# 3. In colour on a terminal (script(1) gives the compile a pty): the same
#    bytes, escape sequences included.
if command -v script > /dev/null; then
  for who in clang in ext whole; do
    case $who in
      clang) cmd="clang-19" ;;
      in) cmd="env REPOCC_FRAGMENTS=1 REPOCC_EXTERNAL_FRONTEND=0 $REPOCC" ;;
      ext) cmd="env REPOCC_FRAGMENTS=1 REPOCC_EXTERNAL_FRONTEND=1 $REPOCC" ;;
      whole) cmd="$REPOCC" ;; # C at -O0: compiled whole
    esac
    TERM=xterm script -qec "$cmd -Wall -c warn.c errors.c -lm" /dev/null > "tty-$who" || true
  done
  grep -q $'\e\[' tty-clang || fail "clang printed no colour on a pty"
  cmp -s tty-clang tty-in || fail "coloured diagnostics differ in process"
  cmp -s tty-clang tty-ext || fail "coloured diagnostics differ as a process"
  cmp -s tty-clang tty-whole || fail "coloured diagnostics differ compiled whole"
  note "coloured diagnostics on a pty: $(wc -c < tty-in) bytes as clang-19 prints them"
fi

# 4. C++ through repocc++ (the driver mode comes from the program name),
#    in process and as a process: the same object, and the program runs.
P="$WT_ROOT/programs"
for mode in 0 1; do
  REPOCC_EXTERNAL_FRONTEND=$mode REPOCC_DIR="$SCRATCH/repo-cxx-$mode" \
    "$REPOCCXX" -O2 -std=c++17 -c "$P/features.cpp" -o "features-$mode.o" || fail "features.cpp ($mode)"
done
cmp -s features-0.o features-1.o || fail "the C++ object differs between the frontends"
"$REPOCCXX" -O2 -std=c++17 -c "$P/features-cxx-helper.cpp" -o helper.o || fail "helper"
clang++-19 features-0.o helper.o -o features-cxx -lpthread || fail "link"
clang++-19 -O2 -std=c++17 "$P/features.cpp" "$P/features-cxx-helper.cpp" -o features-clang -lpthread
./features-clang > expected.out || fail "clang's C++ program fails"
./features-cxx > actual.out || fail "the C++ program fails"
cmp -s expected.out actual.out || fail "the C++ program prints differently from clang's"
note "C++: same object in and out of process; the program prints what clang's prints"

# 5. Deep recursion in clang's parser and code generation runs on a stack
#    of the frontend's own, not on what the caller has left: a 20000-term
#    expression compiles even under a 2 MiB stack limit (clang-19 itself,
#    and repocc's old frontend process, crash there).
python3 -c "print('int f(int a) { return ' + '+'.join(['a'] * 20000) + '; }')" > chain.c
(ulimit -s 2048 && "$REPOCC" -O1 -c chain.c -o chain.o) || fail "a 20000-term expression under ulimit -s 2048"
has " T f" < <(nm chain.o) || fail "chain.o lacks f"
note "a 20000-term expression compiles in process under a 2 MiB stack limit"
#    Under the usual limits (8 MiB soft, a hard limit that allows 64 MiB)
#    the frontend runs on the main thread instead, the soft limit raised
#    as clang's cc1 raises it: a one-source compile starts no thread, and a
#    100000-term expression (which overflows clang-19's own 8 MiB stack)
#    compiles.
hard=$(ulimit -H -s)
if [ "$hard" = unlimited ] || [ "$hard" -ge 65536 ]; then
  python3 -c "print('int f(int a) { return ' + '+'.join(['a'] * 100000) + '; }')" > chain100k.c
  (ulimit -S -s 8192 && REPOCC_JOBS=1 strace -f -qq -e trace=clone,clone3 -o threads.out \
    "$REPOCC" -O1 -c chain100k.c -o chain100k.o) || fail "a 100000-term expression under ulimit -S -s 8192"
  has " T f" < <(nm chain100k.o) || fail "chain100k.o lacks f"
  assert_eq "threads started by a one-source compile" 0 "$(grep -c CLONE_THREAD threads.out || true)"
  note "the frontend on the main thread: no thread started, a 100000-term expression compiles"
fi

#    The rest of a unit's compile recurses as deep as its code is nested
#    too: a type of 10000 pointer levels with -g (gcc's limits-pointer.c)
#    overflowed the digests' walk of its debug types on the 8 MiB the main
#    thread was put back to after the frontend, where clang-19 compiles
#    it. The whole unit runs with the frontend's stack: on the main thread,
#    or on a thread of its own where the hard limit is 8 MiB.
python3 -c "print('int ' + '*' * 10000 + ' deep_pointer = 0;')" > pointers.c
clang-19 -O2 -g -c pointers.c -o pointers.clang.o 2> /dev/null || fail "clang-19 refuses pointers.c"
"$REPOCC" -O2 -g -c pointers.c -o pointers.o 2> /dev/null || fail "a type of 10000 pointer levels with -g"
(ulimit -s 8192 && REPOCC_UNIT_CACHE=0 "$REPOCC" -O2 -g -c pointers.c -o pointers-8m.o 2> /dev/null) \
  || fail "a type of 10000 pointer levels with -g under a hard 8 MiB stack limit"
has " B deep_pointer" < <(nm pointers.o) || fail "pointers.o lacks deep_pointer"
cmp -s pointers.o pointers-8m.o || fail "10000 pointer levels: the objects differ"
note "a type of 10000 pointer levels compiles with -g, also under a hard 8 MiB stack limit"

# 6. An -MMD unit through the unit cache: its headers are listed while it
#    compiles in process (no preprocessing run after the compile), its
#    dependency file is clang's (no system headers), and the next build of
#    it is a hit. As a process, clang cannot list them without changing the
#    dependency file: a preprocessing run lists them instead.
unset REPOCC_UNIT_CACHE
mkdir -p mmd && cp "$src/src/"*.[ch] mmd/
cd mmd
clang-19 "${LUA_FLAGS[@]}" -MMD -MT lstring.o -MF lstring.clang.d -c lstring.c -o lstring.clang.o
for mode in 0 1; do
  export REPOCC_DIR="$SCRATCH/repo-mmd-$mode"
  REPOCC_EXTERNAL_FRONTEND=$mode strace -f -qq -e trace=execve -o "trace-$mode.out" \
    "$REPOCC" "${LUA_FLAGS[@]}" -MMD -MT lstring.o -MF "lstring.$mode.d" -c lstring.c -o lstring.o 2> /dev/null \
    || fail "-MMD compile (external frontend: $mode)"
  cmp -s lstring.clang.d "lstring.$mode.d" || fail "-MMD dependency file differs from clang's ($mode):
$(diff lstring.clang.d "lstring.$mode.d")"
  preprocessing=$(grep -c 'execve("[^"]*clang[^"]*", \[[^]]*"-E", "-x"' "trace-$mode.out" || true)
  "$REPOCC" "${LUA_FLAGS[@]}" -MMD -MT lstring.o -MF "lstring.$mode.d" -c lstring.c -o lstring.o 2> /dev/null
  assert_eq "-MMD unit cache hits ($mode)" 1 "$(stat_value unit_hits)"
  if [ $mode = 0 ]; then
    assert_eq "preprocessing runs in process" 0 "$preprocessing"
  else
    assert_eq "preprocessing runs as a process" 1 "$preprocessing"
  fi
done
cd "$SCRATCH"
note "-MMD: dependency file as clang's, headers listed while compiling in process, then a hit"
