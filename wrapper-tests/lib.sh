# Shared helpers for the wrapper tests. Each test script sources this file,
# runs in its own scratch directory with its own repository (REPOCC_DIR),
# and exits non-zero on the first failed assertion.
set -euo pipefail

WT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT_ROOT=$(cd "$WT_ROOT/.." && pwd)
source "$WT_ROOT/fetch.sh"

# repocc and repocc++ on PATH, from the release build.
BIN_DIR="$WT_ROOT/work/bin"
mkdir -p "$BIN_DIR"
ln -sf "$PROJECT_ROOT/target/release/repocc" "$BIN_DIR/repocc"
ln -sf "$PROJECT_ROOT/target/release/repocc" "$BIN_DIR/repocc++"
export PATH="$BIN_DIR:$PATH"
REPOCC="$BIN_DIR/repocc"
REPOCCXX="$BIN_DIR/repocc++"

TEST_NAME=$(basename "$0" .sh)
SCRATCH="$WT_ROOT/work/$TEST_NAME"
rm -rf "$SCRATCH"
mkdir -p "$SCRATCH"
export REPOCC_DIR="$SCRATCH/repo"
unset REPOCC_CONFIG REPOCC_CLANG REPOCC_CLANGXX REPOCC_DISABLE MAKEFLAGS MFLAGS
export XDG_CONFIG_HOME="$SCRATCH/xdg-config"
JOBS=${JOBS:-$(nproc)}

fail() {
  echo "FAIL [$TEST_NAME]: $*" >&2
  exit 1
}

note() {
  echo "[$TEST_NAME] $*"
}

# ... | has PATTERN: whether the piped text matches. Reads all of it, unlike
# `grep -q`, which exits at the first match and leaves the writer to die of
# SIGPIPE: under pipefail that made a passing check fail at random.
has() {
  grep -E -e "$1" > /dev/null
}

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
  if [ "$2" != "$3" ]; then
    fail "$1: expected [$2], got [$3]"
  fi
}

# assert_contains WHAT NEEDLE HAYSTACK
assert_contains() {
  case "$3" in
    *"$2"*) ;;
    *) fail "$1: [$2] not found in [$3]" ;;
  esac
}

# stat_value KEY: a counter from --show-stats --format json.
stat_value() {
  "$REPOCC" --show-stats --format json | python3 -c "import json,sys; print(json.load(sys.stdin).get('$1', 0))"
}

# delta KEY BEFORE: the counter's growth since BEFORE.
delta() { echo $(( $(stat_value "$1") - $2 )); }

# fresh_copy SRC DEST: a pristine copy of a cached tree to build in.
fresh_copy() {
  rm -rf "$2"
  mkdir -p "$(dirname "$2")"
  cp -a "$1" "$2"
}

# compare NAME ARGS...: runs clang-19 and repocc with the same arguments in
# two fresh directories (each a copy of the current directory's *.c and of
# the files named in COMPARE_FILES), each for at most 5 minutes (a hang
# fails); stderr (with the run directory and temporary objects normalised)
# and exit code must match, and repocc must leave no file clang does not.
compare() {
  local name=$1; shift
  for who in clang repocc; do
    rm -rf "run-$who"; mkdir "run-$who"
    cp ./*.c "run-$who/"
    for f in ${COMPARE_FILES:-}; do cp -a "$f" "run-$who/"; done
    (
      cd "run-$who"
      set +e
      if [ $who = clang ]; then timeout 300 clang-19 "$@" 2>../stderr-$who; else timeout 300 "$REPOCC" "$@" 2>../stderr-$who; fi
      echo $? > ../rc-$who
    )
    (cd "run-$who" && ls -A | sort) > "files-$who"
    # Temporary objects of a compile-and-link have random names.
    sed -i -E -e 's#/tmp/[A-Za-z0-9_.-]+-[A-Za-z0-9]{6}\.o#TMP.o#g' -e "s#run-$who#run-X#g" "stderr-$who"
  done
  assert_eq "$name: exit code" "$(cat rc-clang)" "$(cat rc-repocc)"
  if ! cmp -s stderr-clang stderr-repocc; then
    fail "$name: stderr differs:
--- clang
$(cat stderr-clang)
--- repocc
$(cat stderr-repocc)"
  fi
  if ! cmp -s files-clang files-repocc; then
    fail "$name: files differ: $(diff files-clang files-repocc)"
  fi
  [ -n "${MAY_SUCCEED:-}" ] || [ "$(cat rc-clang)" != 0 ] || fail "$name: expected a failure"
  note "$name: exit $(cat rc-repocc), same stderr ($(wc -l < stderr-repocc) lines), same files"
}

# A pool of background jobs, at most $JOBS at once, for a test's independent
# cases (one core each, where running them in turn left the other idle):
# `pool_start LOG COMMAND...` runs COMMAND (a function too) in a subshell
# with its output in LOG, once a place is free; `pool_wait WHAT` waits for
# them all and fails, with the last lines of each failed one's log, if any
# failed. The test must start no other background job meanwhile: `wait -n`
# reaps whichever ends first.
declare -A POOL_LOGS=()
POOL_FAILED=()
pool_reap_one() {
  local pid rc=0
  wait -n -p pid || rc=$?
  [ -n "${pid:-}" ] || fail "pool: no job to wait for"
  [ "$rc" = 0 ] || POOL_FAILED+=("${POOL_LOGS[$pid]}")
  unset "POOL_LOGS[$pid]"
}
pool_start() {
  local log=$1
  shift
  while [ "${#POOL_LOGS[@]}" -ge "$JOBS" ]; do pool_reap_one; done
  ( "$@" ) > "$log" 2>&1 &
  POOL_LOGS[$!]=$log
}
pool_wait() {
  local log
  while [ "${#POOL_LOGS[@]}" -gt 0 ]; do pool_reap_one; done
  [ "${#POOL_FAILED[@]}" = 0 ] && return 0
  for log in "${POOL_FAILED[@]}"; do
    echo "--- $log"
    tail -n 20 "$log"
  done
  fail "$1: ${#POOL_FAILED[@]} failed"
}
