# Differential testing against clang-19: the same C and C++ programs built
# by clang-19 and by repocc, at -O0 and -O2, must print the same output and
# exit the same way. Programs: our own feature programs, and random programs
# from Debian's csmith (CSMITH_COUNT of them, seeds from CSMITH_SEED; both
# printed so a failure can be replayed).
source "$(dirname "$0")/lib.sh"
# Every unit through the repository: by default C at -O0 is clang's own
# compile (t-debug checks its objects), which would leave the pipeline's
# -O0 code untested here.
export REPOCC_FRAGMENTS=1
cd "$SCRATCH"
P="$WT_ROOT/programs"

# differ NAME CC_CLANG CC_REPOCC ARGS...: build with both, run, compare.
differ() {
  local name=$1 cc_clang=$2 cc_repocc=$3; shift 3
  "$cc_clang" "$@" -o "$name.clang" 2> "$name.clang.err" || fail "$name: clang-19 failed: $(cat "$name.clang.err")"
  "$cc_repocc" "$@" -o "$name.repocc" 2> "$name.repocc.err" || fail "$name: repocc failed: $(cat "$name.repocc.err")"
  cmp -s "$name.clang.err" "$name.repocc.err" || fail "$name: diagnostics differ"
  set +e
  timeout 20 "./$name.clang" > "$name.clang.out" 2>&1; local rc_clang=$?
  timeout 20 "./$name.repocc" > "$name.repocc.out" 2>&1; local rc_repocc=$?
  set -e
  assert_eq "$name: exit code" "$rc_clang" "$rc_repocc"
  cmp -s "$name.clang.out" "$name.repocc.out" || fail "$name: output differs: $(diff "$name.clang.out" "$name.repocc.out" | head -n 20)"
}

for O in -O0 -O1 -O2 -O3 -Os -Oz; do
  differ "features-c$O" clang-19 "$REPOCC" $O -pthread "$P/features.c" "$P/features-helper.c" -lm
  differ "features-cxx$O" clang++-19 "$REPOCCXX" $O -std=c++17 "$P/features.cpp" "$P/features-cxx-helper.cpp"
  note "feature programs agree at $O"
done
differ "features-c-pic-sections" clang-19 "$REPOCC" -O2 -fPIC -ffunction-sections -fdata-sections -g -pthread "$P/features.c" "$P/features-helper.c" -lm
differ "features-c-nopie" clang-19 "$REPOCC" -O2 -fno-pic -no-pie -pthread "$P/features.c" "$P/features-helper.c" -lm
differ "features-cxx-native" clang++-19 "$REPOCCXX" -O3 -march=native -std=c++20 "$P/features.cpp" "$P/features-cxx-helper.cpp"
note "feature programs agree with -fPIC, sections, -g, -fno-pic, -march=native"

# The objects have the kinds of sections clang's have (`.text.*`,
# `.rodata.*`, ...: the part after the kind names a symbol, and repocc
# names private constants after their content). `.data.rel.ro.*` counts as
# `.data.*`: clang's optimizer makes a never-written static (the label
# table of a computed goto) constant, repocc's sees statics as external
# and keeps it writable (README, limitations).
clang-19 -O2 -ffunction-sections -fdata-sections -c "$P/features.c" -o sec.clang.o
"$REPOCC" -O2 -ffunction-sections -fdata-sections -c "$P/features.c" -o sec.repocc.o
sections() { readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] \([^ ]*\) .*/\1/p' | grep -v '^$' \
  | sed -E 's/^(\.rela)?\.data\.rel\.ro\./\1.data./' \
  | sed -E 's/^(\.rela)?(\.text|\.rodata|\.data|\.bss|\.tdata|\.tbss)\..*/\1\2.*/' | sort -u; }
sections sec.clang.o > sec.clang.txt
sections sec.repocc.o > sec.repocc.txt
readelf -SW sec.repocc.o | has ' \.text\.main ' || fail "-ffunction-sections gave no .text.main"
grep -q '^\.fini_array' sec.repocc.txt || fail "destructors are not in .fini_array (UseInitArray)"
grep -q '^\.llvm_addrsig$' sec.repocc.txt || fail "no address-significance table"
printf '#include <stdio.h>\n__attribute__((constructor)) void announce(void) { puts("ctor"); }\n' > ctor.c
"$REPOCC" -O2 -c ctor.c -o ctor.o
readelf -SW ctor.o | has ' \.init_array ' || fail "constructors are not in .init_array"
missing=$(comm -23 sec.clang.txt sec.repocc.txt | tr '\n' ' ')
[ -z "$missing" ] || fail "sections clang has and repocc lacks: $missing"

# Random programs.
count=${CSMITH_COUNT:-12}
seed=${CSMITH_SEED:-$(( $(date +%s) % 100000 ))}
note "csmith: $count programs from seed $seed (replay: CSMITH_SEED=$seed CSMITH_COUNT=$count)"
ok=0
for i in $(seq 0 $((count - 1))); do
  s=$((seed + i))
  csmith --seed "$s" > "cs$s.c" 2>/dev/null || fail "csmith --seed $s"
  # clang's builds first: a program whose behaviour is not one (it does not
  # finish normally at some level — csmith can generate unbounded
  # recursion and loops — or -O0 and -O2 disagree: undefined behaviour the
  # optimizer exploits) has no behaviour to compare.
  defined=1
  for O in -O0 -O2; do
    name="cs$s$O"
    clang-19 $O -w -I/usr/include/csmith "cs$s.c" -o "$name.clang" 2>/dev/null || { defined=0; break; }
    set +e
    timeout 10 "./$name.clang" > "$name.clang.out" 2>&1; echo $? > "$name.clang.rc"
    set -e
    [ "$(cat "$name.clang.rc")" -ge 124 ] && { defined=0; break; }
  done
  if [ $defined = 1 ] && ! { cmp -s "cs$s-O0.clang.out" "cs$s-O2.clang.out" && cmp -s "cs$s-O0.clang.rc" "cs$s-O2.clang.rc"; }; then
    defined=0
  fi
  [ $defined = 1 ] || { note "seed $s: clang's builds do not behave as one program, skipped"; continue; }
  for O in -O0 -O2; do
    name="cs$s$O"
    rc_clang=$(cat "$name.clang.rc")
    "$REPOCC" $O -w -I/usr/include/csmith "cs$s.c" -o "$name.repocc" || fail "seed $s $O: repocc failed to build"
    set +e
    timeout 20 "./$name.repocc" > "$name.repocc.out" 2>&1; rc_repocc=$?
    set -e
    assert_eq "csmith seed $s $O exit code" "$rc_clang" "$rc_repocc"
    cmp -s "$name.clang.out" "$name.repocc.out" || fail "csmith seed $s $O: output differs (CSMITH_SEED=$s)"
    ok=$((ok + 1))
  done
done
note "csmith: $ok builds agree"
[ "$ok" -ge "$count" ] || fail "too few csmith programs compared ($ok)"
