#!/bin/bash
# How much sharing a parallel first build loses (prints figures; not a
# test). fmt with its tests (C++, Debian source), built cold into an empty
# repository with `make -jN` for each N given (default 1 2 8): under -jN,
# units that include the same headers compile side by side, and a unit
# reuses only what units that finished before it stored. The definitions
# compiled beyond the first row's (-j1) are the most a claim per fragment
# key (a unit waiting for, or taking, what another compiles) could save.
#
#   bash benches/parallel-sharing.sh [N...]     # e.g. 1 2 8; FLAGS="-O2 -g"
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
REPOCC="$ROOT/target/release/repocc"
[ -x "$REPOCC" ] || { echo "build repocc first: cargo build --release" >&2; exit 1; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/repocc-parallel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "$*" >&2; exit 1; }
JOBS=$(nproc)
# shellcheck source=../wrapper-tests/fetch.sh
source "$ROOT/wrapper-tests/fetch.sh"
src=$(fetch_debian_source fmtlib | tail -n 1)
export PATH="$ROOT/target/release:$PATH"
stat() { "$REPOCC" --show-stats --format json | python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

printf '| make | build (s) | definitions compiled | beyond the first row | pruned | shared |\n|---|---|---|---|---|---|\n'
first=""
for n in "${@:-1 2 8}"; do
  for j in $n; do
    export REPOCC_DIR="$WORK/repo-$j"
    mkdir -p "$WORK/build-$j"
    (cd "$WORK/build-$j" && cmake -DCMAKE_TOOLCHAIN_FILE="$ROOT/config/repocc-toolchain.cmake" \
      -DFMT_DOC=OFF -DFMT_TEST=ON ${FLAGS:+-DCMAKE_CXX_FLAGS="$FLAGS"} "$src" > cmake.log 2>&1) \
      || fail "cmake: see $WORK/build-$j/cmake.log"
    start=$(date +%s.%N)
    make -C "$WORK/build-$j" -j"$j" > "$WORK/build-$j/build.log" 2>&1 || fail "make -j$j"
    seconds=$(echo "$(date +%s.%N) - $start" | bc)
    compiled=$(stat definitions_compiled)
    first=${first:-$compiled}
    printf '| -j%s | %.1f | %s | %+d | %s | %s |\n' "$j" "$seconds" "$compiled" $((compiled - first)) \
      "$(stat definitions_pruned)" "$(stat definitions_shared)"
  done
done
