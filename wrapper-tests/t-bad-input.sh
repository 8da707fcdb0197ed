# Bad input gets clang-19's diagnostics and exit code, and leaves no output
# file behind: a syntax error, a missing file, an unknown option, an
# unwritable output directory, a full disk, a -Werror warning, a link error.
source "$(dirname "$0")/lib.sh"
cd "$SCRATCH"

cat > syntax.c <<'C'
int main(void) { return 0 }
C
cat > warn.c <<'C'
int main(void) { int unused; return 0; }
C
cat > undef.c <<'C'
int missing_function(void);
int main(void) { return missing_function(); }
C
cat > ok.c <<'C'
int main(void) { return 0; }
C
cat > badasm.c <<'C'
int main(void) { __asm__("not_an_instruction %eax"); return 0; }
C
cat > bigframe.c <<'C'
void use(char *);
void f(void) { char buf[4096]; use(buf); }
C
mkdir -p ro
chmod 555 ro

compare "syntax error" -c syntax.c -o syntax.o
compare "syntax error, two units" -c ok.c syntax.c
compare "syntax error, compile and link" -O2 syntax.c ok.c -o prog
compare "missing file" -c nosuch.c -o nosuch.o
compare "missing file among others" -c ok.c nosuch.c
compare "unknown option" -c ok.c --bogus-option -o ok.o
# root may write to a 0555 directory: then both succeed, and must agree.
MAY_SUCCEED=1 compare "read-only output directory" -c ok.c -o "$SCRATCH/ro/ok.o"
compare "unwritable output location" -c ok.c -o /proc/ok.o
compare "output under a file" -c ok.c -o ok.c/ok.o
# A full disk under the output: clang's failure, exit code and words (its
# crash report names its own command line, so only the essentials are
# compared), no line from repocc and no temporary left behind.
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
  mkdir -p full
  unshare -m sh -c "mount -t tmpfs -o size=64k none full && head -c 1M /dev/zero > full/fill 2>/dev/null;
    clang-19 -O2 -c ok.c -o full/ok.o 2> full-clang.err; echo \$? > full-clang.rc;
    '$REPOCC' -O2 -c ok.c -o full/ok.o 2> full-repocc.err; echo \$? > full-repocc.rc;
    ls -A full > full.files" || fail "a full disk in a mount namespace"
  assert_eq "full disk: exit code" "$(cat full-clang.rc)" "$(cat full-repocc.rc)"
  [ "$(cat full-repocc.rc)" != 0 ] || fail "full disk: repocc succeeded"
  grep -q "No space left on device" full-repocc.err || fail "full disk: $(cat full-repocc.err)"
  grep -q "^repocc:" full-repocc.err && fail "full disk: a line from repocc: $(cat full-repocc.err)"
  assert_eq "full disk: files left" "fill" "$(cat full.files)"
  note "full disk: exit $(cat full-repocc.rc), clang's words, nothing left"
fi
# A full $TMPDIR: clang compiles without it; repocc, which lists the
# unit's headers there for the unit cache, compiles as clang does (no
# line of its own, the object of a compile with room) and records nothing
# (a list cut short would miss headers: a later hit after one changed).
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
  mkdir -p fulltmp tmpok
  printf '#define LISTED 3\n' > listed.h
  printf '#include "listed.h"\nint f(void) { return LISTED; }\n' > listed.c
  for f in "-O2" "-O2 -g" "-O0 -g"; do
    REPOCC_DIR="$SCRATCH/repo-tmpok" TMPDIR="$SCRATCH/tmpok" "$REPOCC" $f -c listed.c -o listed-ok.o
    unshare -m sh -c "mount -t tmpfs -o size=64k,mode=0700 none fulltmp && head -c 1M /dev/zero > fulltmp/fill 2>/dev/null;
      for i in 1 2; do TMPDIR='$SCRATCH/fulltmp' REPOCC_DIR='$SCRATCH/repo-fulltmp' '$REPOCC' $f -c listed.c -o listed-full\$i.o 2>> fulltmp.err || echo \$? >> fulltmp.rc; done
      ls -A fulltmp > fulltmp.files" || fail "a full \$TMPDIR in a mount namespace"
    [ -s fulltmp.rc ] && fail "$f, full \$TMPDIR: exit $(cat fulltmp.rc)"
    [ -s fulltmp.err ] && fail "$f, full \$TMPDIR: $(cat fulltmp.err)"
    assert_eq "$f, full \$TMPDIR: files left" "fill" "$(cat fulltmp.files)"
    cmp -s listed-ok.o listed-full1.o && cmp -s listed-ok.o listed-full2.o || fail "$f, full \$TMPDIR: another object"
  done
  assert_eq "full \$TMPDIR: unit cache hits" 0 "$(REPOCC_DIR="$SCRATCH/repo-fulltmp" stat_value unit_hits)"
  note "full \$TMPDIR: compiles as clang's, silent, same objects, nothing recorded"
fi
if [ -c /dev/full ]; then
  crc=0; clang-19 -O2 -c ok.c -o /dev/full 2> devfull-clang.err || crc=$?
  rrc=0; "$REPOCC" -O2 -c ok.c -o /dev/full 2> devfull-repocc.err || rrc=$?
  assert_eq "-o /dev/full: exit code" "$crc" "$rrc"
  grep -q "No space left on device" devfull-repocc.err || fail "-o /dev/full: $(cat devfull-repocc.err)"
  grep -q "^repocc:" devfull-repocc.err && fail "-o /dev/full: a line from repocc: $(cat devfull-repocc.err)"
  [ -c /dev/full ] || fail "-o /dev/full replaced the device"
  note "-o /dev/full: exit $rrc, clang's words"
fi
compare "missing output directory" -c ok.c -o "$SCRATCH/nodir/ok.o"
compare "-Werror" -Wall -Werror -c warn.c -o warn.o
compare "undefined reference at link" -O2 undef.c -o prog
TMPDIR="$SCRATCH/no-such-tmpdir" compare "a compile-and-link without \$TMPDIR" -O2 ok.c -o prog
compare "invalid -O value" -Oq -c ok.c -o ok.o
compare "inline asm error from the backend" -O2 -c badasm.c -o badasm.o
MAY_SUCCEED=1 compare "backend warning (-Wframe-larger-than)" -O2 -Wframe-larger-than=64 -c bigframe.c -o bigframe.o
grep -q "stack frame size" stderr-repocc || fail "backend warning missing: $(cat stderr-repocc)"
cat > both.c <<'C'
void use(char *);
void f(void) { int unused; char buf[4096]; use(buf); }
C
# The frontend's warning once, in clang's order with the backend's.
MAY_SUCCEED=1 compare "frontend and backend warnings" -Wall -O2 -Wframe-larger-than=64 -c both.c -o both.o
MAY_SUCCEED=1 compare "a driver warning once for two units" -c ok.c warn.c -lm
compare "a driver error once for two units" -Werror -c ok.c warn.c -lm
MAY_SUCCEED=1 compare "frontend and backend warnings, two units" -Wall -O2 -Wframe-larger-than=64 -c both.c bigframe.c

note "warnings appear exactly once, exit code 0"
"$REPOCC" -Wall -c warn.c -o warn.o 2> w-repocc || fail "warning compile failed"
clang-19 -Wall -c warn.c -o warn-clang.o 2> w-clang
cmp -s w-clang w-repocc || fail "warning text differs: $(diff w-clang w-repocc)"
[ -f warn.o ] || fail "no object after a warning"

note "colour: -fcolor-diagnostics gives clang's escape sequences"
set +e
clang-19 -fcolor-diagnostics -c syntax.c -o /dev/null 2> c-clang
"$REPOCC" -fcolor-diagnostics -c syntax.c -o x.o 2> c-repocc
set -e
grep -q $'\e\[' c-repocc || fail "no colour escape in repocc's diagnostics"
cmp -s c-clang c-repocc || fail "coloured diagnostics differ"

note "two units with warnings: diagnostics in source order, coloured when asked"
cp warn.c warn2.c
set +e
clang-19 -Wall -fdiagnostics-color=always -c warn.c warn2.c 2> m-clang
"$REPOCC" -Wall -fdiagnostics-color=always -c warn.c warn2.c 2> m-repocc
set -e
cmp -s m-clang m-repocc || fail "multi-unit diagnostics differ: $(diff m-clang m-repocc)"

note "stderr a broken pipe: repocc's own messages are lost, the compile is not"
before=$(stat_value fallbacks)
compiles=$(stat_value compiles)
cat > piped.c <<'C'
int twice(int x) { return x * 2; }
int main(void) { return twice(0); }
C
# The reader is gone before anything is written: every write to stderr
# fails with EPIPE (SIGPIPE is ignored by repocc).
mkfifo dead-pipe
( exec 3<dead-pipe; exec 3<&- ) &
set +e
REPOCC_UNIT_CACHE=false REPOCC_DIGEST_REPORT=1 "$REPOCC" -O2 -c piped.c -o piped.o 2>dead-pipe
piped_status=$?
set -e
wait
assert_eq "exit status with a broken stderr" 0 "$piped_status"
[ -f piped.o ] || fail "no object with a broken stderr"
assert_eq "no fallback with a broken stderr" 0 "$(delta fallbacks "$before")"
assert_eq "compiled through the pipeline" 1 "$(delta compiles "$compiles")"

# A reader that stops after clang's first line of --version (as build
# scripts do): no panic, exit 0, as clang-19.
set +o pipefail
version_err=$("$REPOCC" --version 2>&1 >/dev/null | cat)
"$REPOCC" --version 2> version.err | head -1 > version.first
status=${PIPESTATUS[0]}
set -o pipefail
first=$(cat version.first)
assert_eq "repocc --version | head -1: exit status" 0 "$status"
assert_contains "repocc --version | head -1" "clang version 19" "$first"
[ -s version.err ] && fail "repocc --version | head -1 wrote to stderr: $(head -3 version.err)"
[ -z "$version_err" ] || fail "repocc --version wrote to stderr: $version_err"
note "--version read by head -1: exit 0, nothing on stderr"
