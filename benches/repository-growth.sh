#!/usr/bin/env bash
# Benchmark (prints figures; not a test): how the repository grows over a
# run of edits, against ccache 4.7's cache for the same builds (issue 42).
# lua5.4 from Debian, `make -j2 linux` cold, then EDITS (default 30)
# commit-like edits, each rebuilt with `make -j2`: edit n appends a
# function to one of eight sources in turn and changes a constant in
# lapi.c's lua_gettop, so a unit is compiled again with most of its
# definitions unchanged. Prints the bytes and files of each cache after the
# cold build and after every tenth edit.
#   bash benches/repository-growth.sh [EDITS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
EDITS=${1:-30}
fail() { echo "bench: $*" >&2; exit 1; }
JOBS=2
source "$root/wrapper-tests/fetch.sh"
R="$root/target/release"
[ -x "$R/repocc" ] || fail "build repocc first: cargo build --release"
command -v ccache >/dev/null || fail "ccache is needed (scripts/install-deps.sh installs it)"
src=$(fetch_debian_source lua5.4 --skip-patches)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=(src/lapi.c src/lcode.c src/ldo.c src/lgc.c src/llex.c src/lparser.c src/lstring.c src/ltable.c)

edit() { # $1: tree, $2: n
  local f=$1/${files[$(($2 % ${#files[@]}))]}
  printf '\nint repocc_growth_edit_%d (int x) { return x * %d + 1; }\n' "$2" "$2" >> "$f"
  sed -i "s/return cast_int(L->top - (L->ci->func + 1))\( + [0-9]* - [0-9]*\)\?;/return cast_int(L->top - (L->ci->func + 1)) + $2 - $2;/" "$1/src/lapi.c"
}

size() { printf '%s bytes in %s files' "$(du -sb "$1" | cut -f1)" "$(find "$1" -type f | wc -l)"; }

for tool in repocc ccache; do
  tree=$work/tree-$tool
  cp -r "$src" "$tree"
  case $tool in
    repocc) cc="repocc -std=gnu99"; cache=$work/repo; export REPOCC_DIR=$cache ;;
    ccache) cc="ccache clang-19 -std=gnu99"; cache=$work/ccache; export CCACHE_DIR=$cache ;;
  esac
  (cd "$tree" && PATH=$R:$PATH make -j2 linux CC="$cc" >/dev/null 2>&1) || fail "$tool: cold build failed"
  echo "$tool cold: $(size "$cache")"
  for n in $(seq 1 "$EDITS"); do
    edit "$tree" "$n"
    (cd "$tree" && PATH=$R:$PATH make -j2 linux CC="$cc" >/dev/null 2>&1) || fail "$tool: edit $n failed"
    if [ $((n % 10)) -eq 0 ] || [ "$n" -eq "$EDITS" ]; then
      echo "$tool after $n edits: $(size "$cache")"
    fi
  done
  "$tree/src/lua" -e 'print(1 + 1)' | grep -qx 2 || fail "$tool: the lua built does not run"
done
