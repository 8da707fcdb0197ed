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

# fresh_copy SRC DEST: a pristine copy of a cached tree to build in.
fresh_copy() {
  rm -rf "$2"
  cp -a "$1" "$2"
}
