#!/usr/bin/env bash
# Benchmark (prints figures; not a test): the program repository on the
# sqlite3 amalgamation at -O2, RUNS times (default 3), medians, as ratios to
# clang-19's cold compile measured in the same run:
#   cold       empty repository
#   no-change  the same source again
#   edit       after editing one function (sqlite3_libversion, a new edit
#              each run)
# and the same three for ccache + clang-19 (a miss, a hit, a miss).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-3}
JOBS=${JOBS:-$(nproc)}
fail() { echo "bench: $*" >&2; exit 1; }
source "$root/wrapper-tests/fetch.sh"
R="$root/target/release/repocc"
[ -x "$R" ] || fail "build repocc first: cargo build --release"
command -v ccache >/dev/null || fail "ccache is needed (scripts/install-deps.sh installs it)"
src=$(prepare_sqlite_amalgamation)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$src/sqlite3.c" "$src/sqlite3.h" "$work/"
cd "$work"
cp sqlite3.c pristine.c
target='SQLITE_API const char \*sqlite3_libversion(void){ return sqlite3_version; }'
grep -q "^$target" sqlite3.c || fail "edit target not found"

secs() { local s e; s=$(date +%s.%N); "$@" >/dev/null 2>&1 || fail "$* failed"; e=$(date +%s.%N); echo "$e - $s" | bc; }
edit() { sed "s/^$target/SQLITE_API const char *sqlite3_libversion(void){ return \"edit-$1\"; }/" pristine.c > sqlite3.c; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq 1 "$RUNS"); do
  cp pristine.c sqlite3.c
  secs clang-19 -O2 -c sqlite3.c -o clang.o >> clang.txt
  rm -rf repo ccache-dir
  export REPOCC_DIR="$work/repo" CCACHE_DIR="$work/ccache-dir"
  secs "$R" -O2 -c sqlite3.c -o r.o >> r-cold.txt
  secs "$R" -O2 -c sqlite3.c -o r.o >> r-nochange.txt
  edit "$i-$$"
  secs "$R" -O2 -c sqlite3.c -o r.o >> r-edit.txt
  cp pristine.c sqlite3.c
  secs ccache clang-19 -O2 -c sqlite3.c -o c.o >> c-cold.txt
  secs ccache clang-19 -O2 -c sqlite3.c -o c.o >> c-nochange.txt
  edit "$i-$$"
  secs ccache clang-19 -O2 -c sqlite3.c -o c.o >> c-edit.txt
  echo "run $i: clang $(tail -n1 clang.txt)s; repocc cold $(tail -n1 r-cold.txt)s no-change $(tail -n1 r-nochange.txt)s edit $(tail -n1 r-edit.txt)s; ccache miss $(tail -n1 c-cold.txt)s hit $(tail -n1 c-nochange.txt)s edit $(tail -n1 c-edit.txt)s"
done
c=$(median < clang.txt)
echo "sqlite3.c -O2, medians of $RUNS (clang-19 cold: ${c}s):"
for who in r c; do
  name=$([ $who = r ] && echo "repocc" || echo "ccache+clang")
  for k in cold nochange edit; do
    m=$(median < "$who-$k.txt")
    awk -v n="$name" -v k="$k" -v m="$m" -v c="$c" 'BEGIN { printf "  %-13s %-9s %7.2f s  %5.2fx clang-19\n", n, k, m, m / c }'
  done
done
