# lua5.4 (Debian source, `make linux`) built with CC=repocc: the interpreter
# runs our checks script and gives the right answers; every unit went
# through the pipeline; the program has the functions clang-19's has.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source lua5.4 --skip-patches)
fresh_copy "$src" "$SCRATCH/lua"
cd "$SCRATCH/lua"

make -j"$JOBS" linux CC="repocc -std=gnu99" > build.log 2>&1 || { tail -n 30 build.log; fail "make linux"; }
units=$(ls src/*.o | wc -l)
note "built $units objects"
assert_eq "every unit through the pipeline" "$units" "$(stat_value compiles)"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"
# Every object composed in process and every fragment carved: a decline
# (the slower ld.lld -r path, a module per fragment) is counted, never silent.
assert_eq "composing declined" 0 "$(stat_value compose_declines)"
assert_eq "carving declined" 0 "$(stat_value carve_declines)"
# The store is a few files per unit, not one per definition: a pack per
# compile, the index, and the counters' shards (issue 42).
files=$(find "$REPOCC_DIR" -type f | wc -l)
packs=$(find "$REPOCC_DIR/v1/packs" -type f | wc -l)
note "the repository: $files files ($packs packs) for $units units, $(du -sb "$REPOCC_DIR" | cut -f1) bytes"
assert_eq "one pack per compile" "$units" "$packs"
[ "$files" -le $((3 * units)) ] || fail "$files files in the repository for $units units (at most 3 per unit): $(find "$REPOCC_DIR" -type f | sed 's|.*/||' | sort | head -n 80)"

# A unit cache hit composes the object again from the fragments the
# repository holds (issue 42: the object is not kept twice): make clean &&
# make is all hits, byte for byte; with a fifth of the fragments gone, the
# units that lost one are misses and compile again, to the same bytes.
mkdir -p "$SCRATCH/lua-first" && cp src/*.o "$SCRATCH/lua-first/"
same_objects() { for o in src/*.o; do cmp -s "$o" "$SCRATCH/lua-first/${o#src/}" || fail "$1: $o differs from the first build's"; done; }
for round in hits evicted; do
  [ "$round" = evicted ] && note "fragments removed: $(python3 "$WT_ROOT/store.py" remove "$REPOCC_DIR" 11 20 0,11)"
  make clean > /dev/null; "$REPOCC" --zero-stats > /dev/null
  make -j"$JOBS" linux CC="repocc -std=gnu99" > "build-$round.log" 2>&1 || { tail -n 30 "build-$round.log"; fail "make linux ($round)"; }
  same_objects "$round"
  hits=$(stat_value unit_hits); misses=$(stat_value unit_misses)
  note "$round: $hits unit cache hits, $misses misses, objects identical"
  assert_eq "$round: every unit looked up" "$units" $((hits + misses))
  if [ "$round" = hits ]; then
    assert_eq "every unit a hit" "$units" "$hits"
  else
    [ "$misses" -gt 0 ] || fail "no unit missed with a fifth of the fragments removed: its object was not composed from them"
  fi
done
out=$(src/lua "$WT_ROOT/programs/checks.lua") || fail "checks.lua failed: $out"
echo "$out" | tail -n 3
assert_contains "lua checks" "lua checks: 31 passed, 0 failed" "$out"
assert_eq "lua -v" "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio" "$(src/lua -v)"

# luac compiles a chunk that lua then runs.
echo 'print(("%d"):format(2^53 // 1 | 0))' > chunk.lua
src/luac -o chunk.luac chunk.lua
assert_eq "luac + lua" "9007199254740992" "$(src/lua chunk.luac)"

# The functions of the program are clang-19's: statics clang inlines and
# drops are gone here too. The documented exception (README, "Limitations"):
# a static called more than once from one function, which clang inlines
# when the first calls fit its threshold and the last gets its bonus.
fresh_copy "$src" "$SCRATCH/lua-clang"
(cd "$SCRATCH/lua-clang" && make -j"$JOBS" linux CC="clang-19 -std=gnu99" > build.log 2>&1) \
  || fail "make linux with clang-19"
text_symbols() { nm "$1" | awk '$2 ~ /^[tT]$/ { print $2, $3 }' | sort; }
only_repocc=$(comm -13 <(text_symbols "$SCRATCH/lua-clang/src/lua") <(text_symbols src/lua))
only_clang=$(comm -23 <(text_symbols "$SCRATCH/lua-clang/src/lua") <(text_symbols src/lua))
note "functions only in repocc's lua: [$(echo $only_repocc)]; only in clang's: [$(echo $only_clang)]"
echo "$only_repocc" | has "^T " && fail "repocc's lua has global functions clang's lacks: $only_repocc"
extra=$(echo "$only_repocc" | grep -c . || true)
[ "$extra" -le 6 ] || fail "repocc's lua has $extra static functions clang's lacks: $(echo $only_repocc)"
# Address significance as clang-19 marks it (what lld's safe identical
# code folding goes by): every object has the table, and it names no
# symbol merely called.
significant() { for o in "$1"/src/*.o; do llvm-readobj-19 --addrsig "$o"; done | awk '/Sym:/ { s++ } END { print s + 0 }'; }
tables=$(for o in src/*.o; do readelf -SW "$o"; done | awk '/\.llvm_addrsig/ { s++ } END { print s + 0 }')
assert_eq "objects with an address-significance table" "$units" "$tables"
ours=$(significant .)
theirs=$(significant "$SCRATCH/lua-clang")
note "address-significant symbols: repocc $ours, clang-19 $theirs"
[ "$ours" -le $((theirs + theirs / 10 + 2)) ] || fail "repocc's objects mark $ours symbols address-significant, clang-19's $theirs"

# At -O0 the code is clang's own (generated from clang's body, not from the
# mem2reg form the digests are made of): `.text` of every object within 2%
# of clang-19's, and a warm rebuild the same bytes. (Through the repository,
# fragments=true: by default C at -O0 is compiled whole, clang's object.)
text_bytes() { size -A "$1" | awk '$1 ~ /^\.text/ { s += $2 } END { print s + 0 }'; }
mkdir -p "$SCRATCH/O0" && cd "$SCRATCH/lua/src"
for c in *.c; do
  o=$SCRATCH/O0/${c%.c}
  REPOCC_FRAGMENTS=1 repocc -std=gnu99 -O0 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c "$c" -o "$o.repocc.o" || fail "repocc -O0 $c"
  clang-19 -std=gnu99 -O0 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c "$c" -o "$o.clang.o"
  ours=$(text_bytes "$o.repocc.o"); theirs=$(text_bytes "$o.clang.o")
  [ $(( ours * 100 )) -le $(( theirs * 102 )) ] || fail "-O0 $c: .text $ours bytes, clang-19's $theirs"
  REPOCC_FRAGMENTS=1 REPOCC_UNIT_CACHE=false repocc -std=gnu99 -O0 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -c "$c" -o "$o.warm.o"
  cmp -s "$o.repocc.o" "$o.warm.o" || fail "-O0 $c: a warm compile gives other bytes"
done
note "-O0 .text: repocc $(for o in "$SCRATCH"/O0/*.repocc.o; do text_bytes "$o"; done | paste -sd+ | bc) bytes, clang-19 $(for o in "$SCRATCH"/O0/*.clang.o; do text_bytes "$o"; done | paste -sd+ | bc)"
