# Shared helpers for the wrapper tests. Each test script sources this file,
# runs in its own scratch directory with its own repository (REPOCC_DIR),
# and exits non-zero on the first failed assertion.
set -euo pipefail

WT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT_ROOT=$(cd "$WT_ROOT/.." && pwd)
CACHE="$WT_ROOT/cache"          # fetched third-party sources (git-ignored)
mkdir -p "$CACHE"

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

# fetch_debian_source PKG: unpacks `apt-get source PKG` (once) and prints
# the directory of the unpacked tree. Extra args go to dpkg-source -x.
fetch_debian_source() {
  local pkg=$1; shift
  local dir="$CACHE/debian/$pkg"
  if [ ! -f "$dir/.fetched" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    (cd "$dir" && apt-get source --download-only -q "$pkg" >/dev/null 2>&1) \
      || fail "apt-get source $pkg (are deb-src entries set up? run scripts/install-deps.sh)"
    local dsc
    dsc=$(ls "$dir"/*.dsc | head -n 1)
    (cd "$dir" && dpkg-source -x "$@" "$dsc" tree >/dev/null 2>&1) || fail "dpkg-source -x $dsc"
    touch "$dir/.fetched"
  fi
  echo "$dir/tree"
}

# fresh_copy SRC DEST: a pristine copy of a cached tree to build in.
fresh_copy() {
  rm -rf "$2"
  cp -a "$1" "$2"
}

# prepare_sqlite_amalgamation: makes sqlite3.c, sqlite3.h and shell.c from
# Debian's sqlite3 source once (configure + make with clang-19 and tclsh),
# and prints the directory that holds them.
prepare_sqlite_amalgamation() {
  local out="$CACHE/sqlite-amalgamation"
  if [ ! -f "$out/.done" ]; then
    local src
    src=$(fetch_debian_source sqlite3 --skip-patches)
    rm -rf "$out" "$CACHE/sqlite-build"
    mkdir -p "$CACHE/sqlite-build" "$out"
    (cd "$CACHE/sqlite-build" && "$src/configure" CC=clang-19 >/dev/null 2>&1 \
      && make -j"$JOBS" sqlite3.c shell.c >/dev/null 2>&1) || fail "making the sqlite3 amalgamation"
    cp "$CACHE/sqlite-build/sqlite3.c" "$CACHE/sqlite-build/sqlite3.h" "$CACHE/sqlite-build/shell.c" "$out/"
    rm -rf "$CACHE/sqlite-build"
    touch "$out/.done"
  fi
  echo "$out"
}
