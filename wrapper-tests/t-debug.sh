# Debug builds (-O0 -g) of lua5.4, and what "auto" decides. By default
# (debug_fragments=auto) a unit with debug info at -O0 is compiled whole,
# without the repository: counted, and gdb sees what it sees in clang's
# build (the objects are clang-19's, byte for byte); C and C++ at -O1 and
# above use the repository (a small unit each), and so, without debug
# info (fragments=auto), does C++ at -O0 but not C. With REPOCC_DEBUG_FRAGMENTS=1
# the repository is used: the program debugs the same (gdb stops in a
# function, prints a struct and its fields; backtraces, arguments and
# locals of three functions equal clang's build, also after a one-function
# edit, which compiles that function only), the DWARF verifies, each
# struct is emitted once per object (a type unit), the fragments' compile
# units are merged into a few (listing their ranges where functions have
# sections of their own), and a rebuild reproduces the objects.
# Ten lines added at the top of a file (-O0 -g and -O2 -g) reuse its
# definitions: gdb then shows the same lines as clang's build of the
# edited source, and the objects equal a compile into a new repository.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source lua5.4 --skip-patches)
cd "$SCRATCH"
fresh_copy "$src" lua-clang
(cd lua-clang && make -j"$JOBS" linux CC="clang-19 -std=gnu99" MYCFLAGS="-g -O0" > build.log 2>&1) \
  || { tail -n 30 lua-clang/build.log; fail "clang -O0 -g build"; }

# The same debugging session on both builds.
session() {
  (cd "$1/src" && gdb -q -batch -nx \
    -ex 'break luaH_resize' -ex "run $WT_ROOT/programs/checks.lua > /dev/null" \
    -ex 'ptype struct Table' -ex 'ptype t->node' -ex 'print newasize' -ex 'print nhsize' \
    -ex 'print t->alimit' -ex 'print t->lsizenode' -ex 'print sizeof(lua_State)' \
    ./lua 2>&1 | grep -v '0x')
}
session lua-clang > gdb.clang
grep -q 'type = struct Table {' gdb.clang || fail "gdb cannot show struct Table in clang's build: $(cat gdb.clang)"

note "default: units with debug info are compiled whole"
fresh_copy "$src" lua-whole
(cd lua-whole && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build.log 2>&1) \
  || { tail -n 30 lua-whole/build.log; fail "repocc -O0 -g build"; }
units=$(ls lua-whole/src/*.o | wc -l)
assert_eq "units compiled whole" "$units" "$(stat_value debug_units_whole)"
assert_eq "nothing stored" 0 "$(stat_value fragments_stored)"
session lua-whole > gdb.whole
diff -u gdb.clang gdb.whole || fail "gdb sessions differ (whole units)"

note "a unit compiled whole is clang-19's object, byte for byte (clang's driver and compiler in repocc's process)"
mkdir -p clang-objects && cp lua-clang/src/*.o clang-objects/
(cd lua-clang && make clean > /dev/null \
  && REPOCC_EXPLAIN=1 make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build.log 2>&1) \
  || { tail -n 30 lua-clang/build.log; fail "repocc -O0 -g build in clang's tree"; }
! grep 'compiled whole by clang as a process' lua-clang/build.log || fail "clang ran as a process"
for o in clang-objects/*.o; do
  cmp -s "$o" "lua-clang/src/$(basename "$o")" || fail "$(basename "$o"): not clang-19's object"
done

note "debug_fragments=auto (the default): C and C++ at -O1 and above use the repository; -O0 is compiled whole"
mkdir -p auto && cd auto
printf 'static int sq(int x) { return x * x; }\nint area(int w) { return sq(w) + 1; }\n' > area.c
printf 'template <class T> T twice(T x) { return x + x; }\nint area(int w) { return twice(w) + 1; }\n' > area.cc
counted_compile() { # COUNTER COMPILER SOURCE FLAGS...: prints "COUNTER fragments_stored" growths
  local counter=$1 whole stored; shift
  whole=$(stat_value "$counter"); stored=$(stat_value fragments_stored)
  "$@" || fail "auto: $*"
  echo "$(delta "$counter" "$whole") $(delta fragments_stored "$stored")"
}
auto_compile() { counted_compile debug_units_whole "$@"; }
assert_eq "C -O2 -g: the repository" "0 1" \
  "$(auto_compile "$REPOCC" -O2 -g -c area.c -o c2.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C -O1 -g: the repository" "0 1" \
  "$(auto_compile "$REPOCC" -O1 -g -c area.c -o c1.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C -O0 -g: whole" "1 0" "$(auto_compile "$REPOCC" -O0 -g -c area.c -o c0.o)"
assert_eq "C++ -O2 -g: the repository" "0 1" \
  "$(auto_compile "$REPOCCXX" -O2 -g -c area.cc -o cc2.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C++ -O0 -g: whole" "1 0" "$(auto_compile "$REPOCCXX" -O0 -g -c area.cc -o cc0.o)"
assert_eq "C++ -O0 -g, debug_fragments=true: the repository" "0 1" \
  "$(REPOCC_DEBUG_FRAGMENTS=true auto_compile "$REPOCCXX" -O0 -g -c area.cc -o ct0.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C -O0 -g, debug_fragments=true: the repository" "0 1" \
  "$(REPOCC_DEBUG_FRAGMENTS=true auto_compile "$REPOCC" -O0 -g -c area.c -o t0.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C -O2 -g, debug_fragments=false: whole" "1 0" \
  "$(REPOCC_DEBUG_FRAGMENTS=0 auto_compile "$REPOCC" -O2 -g -c area.c -o f2.o)"
# Without debug info (fragments=auto, the default): C at -O0 is compiled
# whole, clang-19's object; C++ at -O0 (template instances to share) and
# C at -O1 use the repository, and fragments=true sends C at -O0 there too.
o0_compile() { counted_compile c_o0_units_whole "$@"; }
assert_eq "C -O0: whole" "1 0" "$(o0_compile "$REPOCC" -O0 -c area.c -o n0.o)"
clang-19 -O0 -c area.c -o n0-clang.o
cmp -s n0.o n0-clang.o || fail "C -O0 compiled whole: not clang-19's object"
assert_eq "C, no -O: whole" "1 0" "$(o0_compile "$REPOCC" -c area.c -o n.o)"
assert_eq "C -O1: the repository" "0 1" \
  "$(o0_compile "$REPOCC" -O1 -c area.c -o n1.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C++ -O0: the repository" "0 1" \
  "$(o0_compile "$REPOCCXX" -O0 -c area.cc -o nn0.o | sed 's/ [1-9][0-9]*$/ 1/')"
assert_eq "C -O0, fragments=true: the repository" "0 1" \
  "$(REPOCC_FRAGMENTS=1 o0_compile "$REPOCC" -O0 -c area.c -o nt0.o | sed 's/ [1-9][0-9]*$/ 1/')"
"$REPOCC" --show-config | grep -Eq '^fragments +=.*auto' || fail "--show-config does not show fragments = auto"
for o in c2.o c1.o t0.o cc2.o ct0.o; do
  llvm-dwarfdump-19 --verify "$o" > /dev/null || fail "auto: DWARF of $o does not verify"
done
"$REPOCC" --show-config | grep -q 'debug_fragments.*auto' || fail "--show-config does not show debug_fragments = auto"
cd "$SCRATCH"

note "debug_fragments: the repository with debug info"
export REPOCC_DEBUG_FRAGMENTS=1
"$REPOCC" --zero-stats > /dev/null
fresh_copy "$src" lua
(cd lua && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build.log 2>&1) \
  || { tail -n 30 lua/build.log; fail "repocc -O0 -g build with debug_fragments"; }
assert_eq "no unit compiled whole" 0 "$(stat_value debug_units_whole)"
out=$(lua/src/lua "$WT_ROOT/programs/checks.lua") || fail "checks: $out"
assert_contains "checks" "lua checks: 31 passed, 0 failed" "$out"

for o in lua/src/*.o; do
  v=$(llvm-dwarfdump-19 --verify "$o" 2>&1) || fail "DWARF of $o does not verify: $(echo "$v" | tail -n 5)"
done
note "objects: repocc $(cat lua/src/*.o | wc -c) bytes, clang $(cat lua-clang/src/*.o | wc -c) bytes;" \
  "lua: repocc $(wc -c < lua/src/lua) bytes, clang $(wc -c < lua-clang/src/lua) bytes"
units=$(llvm-dwarfdump-19 --debug-info lua/src/lapi.o | grep -c 'DW_TAG_compile_unit')
tables=$(llvm-dwarfdump-19 --debug-info lua/src/lapi.o | grep -A2 'DW_TAG_structure_type' | grep -c 'DW_AT_name.*"Table"')
note "lapi.o: $units compile units, struct Table defined $tables time(s)"
# The fragments' compile units are merged once composed: a few units (the
# glue's, and one per run of fragments whose indices fit), not one per
# fragment, and the definitions came from fragments all the same.
fragments=$(llvm-dwarfdump-19 --debug-info lua/src/lapi.o | grep -c 'DW_TAG_subprogram')
[ "$units" -ge 2 ] && [ "$units" -le 5 ] || fail "expected the fragments' compile units merged, found $units for $fragments subprograms"
[ "$(stat_value fragments_stored)" -gt 100 ] || fail "no fragments stored"
assert_eq "struct Table emitted once in lapi.o" 1 "$tables"

session lua > gdb.repocc
grep -q 'type = struct Table {' gdb.repocc || fail "gdb cannot show struct Table: $(cat gdb.repocc)"
diff -u gdb.clang gdb.repocc || fail "gdb sessions differ"

note "-O0 -g: backtraces, arguments and locals of three functions as in clang's build"
# Code is generated from clang's body, not the mem2reg form the digests
# are made of, so no local is <optimized out> where clang's build has it.
frames() {
  local fn
  for fn in luaH_resize luaS_newlstr luaK_code; do
    (cd "$1/src" && gdb -q -batch -nx -ex "break $fn" -ex "run $WT_ROOT/programs/checks.lua > /dev/null" \
      -ex bt -ex 'info args' -ex 'info locals' -ex up -ex 'info args' -ex 'info locals' ./lua 2>&1) \
      | sed -e 's/0x[0-9a-f]*/ADDR/g' | grep -v -e '^\[' -e libthread -e debuginfod
  done
}
frames lua-clang > frames.clang
for want in 'newasize = ' 'str = ' 'luaK_code (fs='; do
  grep -q "$want" frames.clang || fail "clang's build: no '$want' in $(cat frames.clang)"
done
frames lua > frames.repocc
diff -u frames.clang frames.repocc || fail "backtraces, arguments or locals differ from clang's build"
note "$(grep -c ' = ' frames.repocc) values shown, $(grep -c 'optimized out' frames.repocc) optimized out (clang: $(grep -c 'optimized out' frames.clang))"

note "-O0 -g -ffunction-sections: merged units list their code's ranges, and debug as clang's build"
# Each function in a section of its own: a run of fragments has code in
# many sections, so the merged unit's root lists their ranges.
for b in clang repocc; do
  cc=clang-19; [ $b = repocc ] && cc=repocc
  fresh_copy "$src" "lua-sections-$b"
  (cd "lua-sections-$b" && make -j"$JOBS" linux CC="$cc -std=gnu99" MYCFLAGS="-g -O0 -ffunction-sections" > build.log 2>&1) \
    || { tail -n 30 "lua-sections-$b/build.log"; fail "$b -O0 -g -ffunction-sections build"; }
done
for o in lua-sections-repocc/src/*.o; do
  v=$(llvm-dwarfdump-19 --verify "$o" 2>&1) || fail "DWARF of $o does not verify: $(echo "$v" | tail -n 5)"
done
units=$(llvm-dwarfdump-19 --debug-info lua-sections-repocc/src/lapi.o | grep -c 'DW_TAG_compile_unit')
listed=$(llvm-dwarfdump-19 --debug-info lua-sections-repocc/src/lapi.o | grep -A12 'DW_TAG_compile_unit' | grep -c 'DW_AT_ranges')
note "lapi.o: $units compile units, $listed listing their ranges"
[ "$units" -le 10 ] && [ "$listed" -ge 1 ] || fail "expected a few merged units listing their ranges, found $units ($listed)"
frames lua-sections-clang > frames-sections.clang
frames lua-sections-repocc > frames-sections.repocc
diff -u frames-sections.clang frames-sections.repocc || fail "-ffunction-sections: backtraces, arguments or locals differ"

note "a warm rebuild reproduces the objects"
mkdir -p objs && cp lua/src/*.o objs/
(cd lua && make clean > /dev/null)
"$REPOCC" --zero-stats > /dev/null
(cd lua && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build2.log 2>&1) || fail "warm build"
for o in objs/*.o; do cmp -s "$o" "lua/src/$(basename "$o")" || fail "$o differs after a warm rebuild"; done
note "warm: $(stat_value definitions_pruned) of $(stat_value definitions_total) definitions pruned"

note "-O0 -g: a one-function edit compiles that function only, and debugs as clang's build of the edited source"
# clang's MD5 of the file is left out of the debug info, so the other
# definitions of the file keep their digests.
edit='s|if (l <= LUAI_MAXSHORTLEN)  /\* short string? \*/|if (l < LUAI_MAXSHORTLEN + 1)  /* short string? */|'
sed -i "$edit" lua/src/lstring.c lua-clang/src/lstring.c
grep -q 'l < LUAI_MAXSHORTLEN + 1' lua/src/lstring.c || fail "the edit did not apply"
(cd lua-clang && make -j"$JOBS" linux CC="clang-19 -std=gnu99" MYCFLAGS="-g -O0" > build3.log 2>&1) || fail "clang build after the edit"
"$REPOCC" --zero-stats > /dev/null
(cd lua && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build3.log 2>&1) || fail "repocc build after the edit"
compiled=$(stat_value definitions_compiled)
note "edit: $compiled of $(stat_value definitions_total) definitions of lstring.c compiled"
[ "$compiled" -ge 1 ] && [ "$compiled" -le 3 ] || fail "the edit compiled $compiled definitions"
llvm-dwarfdump-19 --verify lua/src/lstring.o > /dev/null || fail "DWARF of the edited lstring.o does not verify"
out=$(lua/src/lua "$WT_ROOT/programs/checks.lua") || fail "checks after the edit: $out"
assert_contains "checks after the edit" "lua checks: 31 passed, 0 failed" "$out"
frames lua-clang > frames.clang-edited
frames lua > frames.repocc-edited
diff -u frames.clang-edited frames.repocc-edited || fail "after the edit, gdb differs from clang's build of the edited source"

note "-O0 -g: ten lines added at the top of ltable.c reuse its definitions, and gdb shows the new lines"
# Digests hold each definition's own-file lines relative to its line;
# composing puts the new lines back into the stored fragments.
add_ten_lines() {
  python3 - "$1" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
open(path, "w").write("/*\n" + "".join(" * added line %d\n" % i for i in range(8)) + " */\n" + text)
PY
}
add_ten_lines lua/src/ltable.c
add_ten_lines lua-clang/src/ltable.c
(cd lua-clang && make -j"$JOBS" linux CC="clang-19 -std=gnu99" MYCFLAGS="-g -O0" > build4.log 2>&1) || fail "clang build after adding lines"
"$REPOCC" --zero-stats > /dev/null
(cd lua && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build4.log 2>&1) || fail "repocc build after adding lines"
total=$(stat_value definitions_total); compiled=$(stat_value definitions_compiled)
note "ten lines added: $compiled of $total definitions of ltable.c compiled"
[ "$total" -ge 30 ] || fail "expected ltable.c's definitions, found $total"
[ $((compiled * 10)) -le "$total" ] \
  || fail "adding ten lines compiled $compiled of $total definitions: $(grep 'explain' lua-o2/build2.log | head -40)"
llvm-dwarfdump-19 --verify lua/src/ltable.o > /dev/null || fail "DWARF of the shifted ltable.o does not verify"
frames lua-clang > frames.clang-shifted
frames lua > frames.repocc-shifted
diff -u frames.clang-shifted frames.repocc-shifted || fail "after adding lines, gdb differs from clang's build"
listing() {
  (cd "$1/src" && gdb -q -batch -nx -ex 'break luaH_resize' -ex 'break luaH_getn' \
    -ex "run $WT_ROOT/programs/checks.lua > /dev/null" -ex 'list' -ex 'info line luaH_next' ./lua 2>&1) \
    | sed -e 's/0x[0-9a-f]*/ADDR/g' | grep -v -e '^\[' -e libthread -e debuginfod
}
listing lua-clang > list.clang
grep -q 'luaH_resize (L=' list.clang || fail "clang's build: no breakpoint in luaH_resize: $(cat list.clang)"
listing lua > list.repocc
diff -u list.clang list.repocc || fail "after adding lines, gdb lists other lines than in clang's build"
# The reused, placed fragments are what a compile from scratch gives.
cp lua/src/ltable.o ltable.shifted.o
rm lua/src/ltable.o
(cd lua && REPOCC_DIR="$SCRATCH/fresh-repository" make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O0" > build5.log 2>&1) \
  || fail "repocc build into a new repository"
cmp ltable.shifted.o lua/src/ltable.o || fail "ltable.o from moved fragments differs from a compile into a new repository"
out=$(lua/src/lua "$WT_ROOT/programs/checks.lua") || fail "checks after adding lines: $out"
assert_contains "checks after adding lines" "lua checks: 31 passed, 0 failed" "$out"

note "-O2 -g: ten lines added at the top of lvm.c and ltable.c"
fresh_copy "$src" lua-o2
(cd lua-o2 && make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O2" > build.log 2>&1) || fail "repocc -O2 -g build"
add_ten_lines lua-o2/src/ltable.c
add_ten_lines lua-o2/src/lvm.c
"$REPOCC" --zero-stats > /dev/null
(cd lua-o2 && REPOCC_EXPLAIN=1 make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O2" > build2.log 2>&1) || fail "repocc -O2 -g build after adding lines"
total=$(stat_value definitions_total); compiled=$(stat_value definitions_compiled)
note "-O2 -g, ten lines added to two files: $compiled of $total definitions compiled"
# lvm.c's jump table is declared in ljumptab.h inside luaV_execute: its
# debug info holds luaV_execute's (moved) line, so both are compiled again.
[ $((compiled * 10)) -le "$total" ] \
  || fail "adding ten lines compiled $compiled of $total definitions: $(grep 'explain' lua-o2/build2.log | head -40)"
for f in ltable lvm; do
  llvm-dwarfdump-19 --verify "lua-o2/src/$f.o" > /dev/null || fail "DWARF of the shifted $f.o (-O2) does not verify"
  cp "lua-o2/src/$f.o" "$f.o2-shifted.o"
  rm "lua-o2/src/$f.o"
done
(cd lua-o2 && REPOCC_DIR="$SCRATCH/fresh-repository-o2" make -j"$JOBS" linux CC="repocc -std=gnu99" MYCFLAGS="-g -O2" > build3.log 2>&1) \
  || fail "repocc -O2 -g build into a new repository"
for f in ltable lvm; do
  cmp "$f.o2-shifted.o" "lua-o2/src/$f.o" || fail "$f.o (-O2 -g) from moved fragments differs from a compile into a new repository"
done
out=$(lua-o2/src/lua "$WT_ROOT/programs/checks.lua") || fail "checks (-O2 -g) after adding lines: $out"
assert_contains "checks (-O2 -g) after adding lines" "lua checks: 31 passed, 0 failed" "$out"

note "C++ with debug_fragments: the feature program behaves as clang's build, and its DWARF verifies"
# Type units with real signatures, COMDAT groups, inlined constructors:
# the composer's debug-section pass (debug_compose) keeps each object readable
# by LLVM's reader, which takes a DIE's attributes to start right after
# the shortest encoding of its code.
P="$WT_ROOT/programs"
for O in -O0 -O2; do
  clang++-19 $O -g -std=c++17 "$P/features.cpp" "$P/features-cxx-helper.cpp" -o x.clang
  for f in features features-cxx-helper; do
    "$REPOCCXX" $O -g -std=c++17 -c "$P/$f.cpp" -o "$f$O.o" || fail "repocc++ $O -g $f.cpp"
    v=$(llvm-dwarfdump-19 --verify "$f$O.o" 2>&1) || fail "DWARF of $f$O.o does not verify: $(echo "$v" | grep -m3 error)"
  done
  clang++-19 $O -g "features$O.o" "features-cxx-helper$O.o" -o x.repocc || fail "linking the C++ feature program ($O -g)"
  assert_eq "C++ features $O -g" "$(./x.clang)" "$(./x.repocc)"
done

note "lines added at random places: the reused fragments, placed, equal a compile from scratch"
# Each edit moves everything below it; what the digests let through is
# placed, and must come out byte for byte as a compile into a new
# repository, with DWARF that verifies (at -O2, with stored bodies for
# the recompiled definitions' context).
fresh_copy "$src" lua-moves
cd lua-moves/src
RANDOM=7
for flags in "-O2 -g" "-O0 -g"; do
  cf="-std=gnu99 $flags -DLUA_COMPAT_5_3 -DLUA_USE_LINUX"
  export REPOCC_DIR="$SCRATCH/repo-moves"
  for f in lapi.c lparser.c ltable.c lstrlib.c; do
    "$REPOCC" $cf -c "$f" -o "${f%.c}.o" || fail "repocc $flags $f"
  done
  "$REPOCC" --zero-stats > /dev/null
  for i in 1 2 3 4 5 6; do
    files=(lapi.c lparser.c ltable.c lstrlib.c)
    f=${files[$((RANDOM % 4))]}
    at=$((RANDOM % $(wc -l < "$f") + 2))
    case "$(sed -n "$((at - 1))p" "$f")" in *\\) at=1 ;; esac
    python3 -c 'import sys; p, a = sys.argv[1], int(sys.argv[2]); l = open(p).read().split("\n"); l.insert(a - 1, ""); open(p, "w").write("\n".join(l))' "$f" "$at"
    "$REPOCC" $cf -c "$f" -o warm.o || fail "repocc $flags $f after a line added at $at"
    REPOCC_DIR="$SCRATCH/repo-scratch-$i$flags" "$REPOCC" $cf -c "$f" -o cold.o || fail "repocc $flags $f into a new repository"
    cmp -s warm.o cold.o || fail "$flags: $f with a line added at $at: the reused fragments differ from a compile from scratch"
    llvm-dwarfdump-19 --verify warm.o > /dev/null || fail "$flags: DWARF of $f with a line added at $at does not verify"
  done
  note "$flags: six lines added: $(stat_value definitions_compiled) of $(stat_value definitions_total) definitions compiled, $(stat_value bodies_reused) stored bodies used"
  # Optimized, a recompiled definition's context takes the bodies earlier
  # compiles kept, their debug info moved to where the definitions now are.
  if [ "$flags" = "-O2 -g" ]; then
    [ "$(stat_value bodies_reused)" -gt 0 ] || fail "-O2 -g: no stored body used after lines were added"
  fi
done
cd "$SCRATCH"
unset REPOCC_DIR

# Debug fragments are carved out of one code generation per unit; each must
# be what it is carved from its own module (REPOCC_CHECK_DEBUG_CARVING
# compiles every carved fragment alone again and reports a difference), and
# none may decline.
note "debug carving: fragments from a batch equal the same fragments alone"
fresh_copy "$src" lua-carve
for flags in "-O2 -g" "-O0 -g"; do
  export REPOCC_DIR="$SCRATCH/repo-carve$flags"
  "$REPOCC" --zero-stats > /dev/null
  for f in lapi.c lcode.c ltable.c; do
    out=$(cd lua-carve/src && REPOCC_DEBUG_FRAGMENTS=1 REPOCC_CHECK_DEBUG_CARVING=1 \
      "$REPOCC" -std=gnu99 $flags -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c "$f" -o carve.o 2>&1) \
      || fail "debug carving $flags $f: $out"
    case "$out" in *"debug carving differs"*) fail "$flags $f: $out" ;; esac
  done
  assert_eq "$flags: carving declines" 0 "$(stat_value carve_declines)"
  [ "$(stat_value fragments_stored)" -gt 100 ] || fail "$flags: only $(stat_value fragments_stored) fragments stored"
done
unset REPOCC_DIR

# A function the optimizer leaves without an instruction that has a
# location (its body `unreachable` alone, gcc's torture test 931102-1.c):
# its fragment still names its compile unit. The fragment's module named a
# compile unit it did not list: with one code generation worker its debug
# info was dropped without a word, with more the verifier refused it and
# clang compiled the unit again, so the object depended on the load.
# Whatever the workers, the object is the same and has what clang-19's
# has: the compile unit and the subprogram.
mkdir -p unreachable && cd unreachable
cat > spin.c <<'C'
char *e(char *);
int spin(void) {
  int a, d;
  char *b;
  while (1) {
    if (a) {
      if (d > *b++) d |= a;
      if (b) b = e(b);
    }
  }
}
int ok(int a) { return a + 1; }
C
clang-19 -O2 -g -c spin.c -o spin.clang.o
clang_subprograms=$(llvm-dwarfdump-19 --debug-info spin.clang.o | grep -c DW_TAG_subprogram)
for jobs in 1 2; do
  REPOCC_JOBS=$jobs REPOCC_DIR=$PWD/repo-$jobs "$REPOCC" -O2 -g -c spin.c -o spin-$jobs.o 2> stderr-$jobs \
    || fail "unreachable body: repocc failed (REPOCC_JOBS=$jobs)"
  [ -s stderr-$jobs ] && fail "unreachable body (REPOCC_JOBS=$jobs): $(cat stderr-$jobs)"
  assert_eq "unreachable body (REPOCC_JOBS=$jobs): subprograms as clang-19's" "$clang_subprograms" \
    "$(llvm-dwarfdump-19 --debug-info spin-$jobs.o | grep -c DW_TAG_subprogram)"
  llvm-dwarfdump-19 --verify spin-$jobs.o > /dev/null || fail "unreachable body: DWARF does not verify"
done
cmp -s spin-1.o spin-2.o || fail "unreachable body: the object depends on the code generation workers"
cd ..
note "a function with an empty body keeps its debug info, whatever the workers"

# Variables keep their debug records: an exported one (a fragment of its
# own, holding no code), a static that one function alone uses (carried in
# that function's fragment), a static table the optimizer puts in a
# mergeable constant pool (carved piece by piece from the batch), and in
# C++ those of namespaces and classes. Each
# fragment once had none, and gdb could not print them in an optimized
# build where clang's build prints them.
note "-O2 -g: gdb prints global and static variables as in clang's build"
mkdir -p variables && cd variables
# Besides, variables the object does not hold keep their records: a
# constant the frontend folded everywhere (`scale`: its value), a static
# table one function alone uses that the optimizer folded into it
# (`limits`). (Not a function's static whose uses the frontend folded,
# `clamp::bias`: docs/limitations.md.)
cat > vars.c <<'C'
int total = 40;
int spare;
static int counter;
static const int primes[4] = {2, 3, 5, 7};
int next_count(void) { return ++counter; }
int prime(int i) { return primes[i & 3]; }
static const double scale = 1.5;
static const int limits[2] = {5, 6};
int clamp(int x) { static const int bias = 7; return (x > limits[1] ? limits[1] : x) + bias; }
double scaled(double x) { return x * scale; }
C
cat > main.c <<'C'
#include <stdio.h>
extern int total, spare;
int next_count(void);
int prime(int i);
int clamp(int x);
double scaled(double x);
int main(int argc, char **argv) {
  (void)argv;
  next_count();
  spare = next_count() + prime(argc + 1);
  printf("%d %d %d %g\n", total, spare, clamp(argc), scaled(argc));
  return 0;
}
C
watch_variables() { # PROGRAM: what gdb prints of the variables at the end of main
  gdb -q -batch -nx -ex 'break vars.c:6' -ex run -ex 'print total' -ex 'print counter' \
    -ex 'print primes' -ex 'print spare' -ex 'ptype primes' -ex 'print scale' \
    -ex 'print limits' "$1" 2>&1 | grep -E '^(\$|type|No symbol)'
}
for flags in "-O2 -g" "-O1 -g"; do
  clang-19 $flags -c vars.c -o vars.clang.o && clang-19 $flags -c main.c -o main.o \
    && clang-19 vars.clang.o main.o -o vars.clang || fail "clang-19 $flags: variables program"
  export REPOCC_DIR=$PWD/repo$flags
  "$REPOCC" --zero-stats > /dev/null
  "$REPOCC" $flags -c vars.c -o vars.o || fail "repocc $flags vars.c"
  clang-19 vars.o main.o -o vars.repocc || fail "linking the variables program ($flags)"
  assert_eq "$flags: the variables program runs" "$(./vars.clang)" "$(./vars.repocc)"
  watch_variables ./vars.clang > vars-gdb.clang
  grep -q '\$3 = {2, 3, 5, 7}' vars-gdb.clang || fail "clang's build: gdb does not print primes: $(cat vars-gdb.clang)"
  grep -q '\$5 = 1.5' vars-gdb.clang || fail "clang's build: gdb does not print scale: $(cat vars-gdb.clang)"
  watch_variables ./vars.repocc > vars-gdb.repocc
  diff -u vars-gdb.clang vars-gdb.repocc || fail "$flags: gdb prints the variables otherwise than in clang's build"
  assert_eq "$flags: variables: carving declines" 0 "$(stat_value carve_declines)"
  REPOCC_DIR=$PWD/cold$flags "$REPOCC" $flags -c vars.c -o vars.cold.o || fail "repocc $flags vars.c (cold)"
  "$REPOCC" $flags -c vars.c -o vars.warm.o || fail "repocc $flags vars.c (warm)"
  cmp -s vars.cold.o vars.warm.o || fail "$flags: vars.o warm differs from cold"
  llvm-dwarfdump-19 --verify vars.o > /dev/null || fail "$flags: DWARF of vars.o does not verify"
done
# C++: a namespace's variable (no compile unit among its scopes), a
# class's static member, a function's static, a global object with a
# constructor, <iostream>'s own static, and a namespace's constants the
# frontend folded (records with their values only).
cat > vars.cc <<'C'
#include <iostream>
#include <string>
namespace ledger { int entries = 7; std::string owner = "ann"; constexpr int limit = 12; static const double rate = 0.5; }
struct Meter { static long reads; };
long Meter::reads = 11;
int tick() { static int ticks; ++Meter::reads; return ++ticks + ledger::entries + ledger::limit + int(ledger::rate * 4); }
C
cat > main.cc <<'C'
#include <cstdio>
int tick();
int main() { tick(); std::printf("%d\n", tick()); return 0; }
C
watch_cxx() { # PROGRAM
  gdb -q -batch -nx -ex 'break vars.cc:6' -ex run -ex 'print ledger::entries' \
    -ex 'print ledger::owner' -ex 'print Meter::reads' -ex 'print tick::ticks' \
    -ex 'print std::__ioinit' -ex 'print ledger::limit' -ex 'print ledger::rate' "$1" 2>&1 \
    | grep -E '^(\$|type|No symbol)'
}
clang++-19 -O2 -g -c vars.cc -o vars-cc.clang.o && clang++-19 -O2 -g -c main.cc -o main-cc.o \
  && clang++-19 vars-cc.clang.o main-cc.o -o vars-cc.clang || fail "clang++-19: C++ variables program"
export REPOCC_DIR=$PWD/repo-cc
"$REPOCCXX" -O2 -g -c vars.cc -o vars-cc.o || fail "repocc++ -O2 -g vars.cc"
clang++-19 vars-cc.o main-cc.o -o vars-cc.repocc || fail "linking the C++ variables program"
assert_eq "C++ variables program runs" "$(./vars-cc.clang)" "$(./vars-cc.repocc)"
watch_cxx ./vars-cc.clang > vars-cc-gdb.clang
grep -q '= "ann"' vars-cc-gdb.clang || fail "clang's build: gdb does not print ledger::owner: $(cat vars-cc-gdb.clang)"
grep -q '= 0.5' vars-cc-gdb.clang || fail "clang's build: gdb does not print ledger::rate: $(cat vars-cc-gdb.clang)"
watch_cxx ./vars-cc.repocc > vars-cc-gdb.repocc
diff -u vars-cc-gdb.clang vars-cc-gdb.repocc || fail "C++: gdb prints the variables otherwise than in clang's build"
llvm-dwarfdump-19 --verify vars-cc.o > /dev/null || fail "C++: DWARF of vars-cc.o does not verify"
unset REPOCC_DIR
cd ..
