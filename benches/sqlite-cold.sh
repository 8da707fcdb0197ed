#!/usr/bin/env bash
# Benchmark (prints figures; not a test): a cold -O2 compile of the sqlite3
# amalgamation with clang-19 and with repocc, RUNS times each (default 5),
# interleaved. Prints each run, the medians, the ratio repocc/clang and the
# peak resident memory (GNU time's %M, the largest process of the run).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${RUNS:-5}
JOBS=${JOBS:-$(nproc)}
fail() { echo "bench: $*" >&2; exit 1; }
source "$root/wrapper-tests/fetch.sh"
[ -x "$root/target/release/repocc" ] || fail "build repocc first: cargo build --release"
command -v /usr/bin/time >/dev/null || fail "GNU time is needed (apt-get install time)"
src=$(prepare_sqlite_amalgamation)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export REPOCC_DIR="$work/repo"
cp "$src/sqlite3.c" "$src/sqlite3.h" "$work/"
cd "$work"

run() { # run NAME CMD... -> appends "seconds maxrss_kb" to NAME.txt
  local name=$1; shift
  /usr/bin/time -f "%e %M" -o "$name.one" "$@" >/dev/null 2>"$name.err" || { cat "$name.err"; fail "$name failed"; }
  cat "$name.one" >> "$name.txt"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

for i in $(seq 1 "$RUNS"); do
  run clang clang-19 -O2 -c sqlite3.c -o clang.o
  rm -rf "$REPOCC_DIR" # every run cold: an empty repository
  run repocc "$root/target/release/repocc" -O2 -c sqlite3.c -o repocc.o
  echo "run $i: clang $(cut -d' ' -f1 < clang.one)s, repocc $(cut -d' ' -f1 < repocc.one)s"
done
c=$(cut -d' ' -f1 clang.txt | median); r=$(cut -d' ' -f1 repocc.txt | median)
cm=$(cut -d' ' -f2 clang.txt | median); rm_=$(cut -d' ' -f2 repocc.txt | median)
echo "sqlite3.c -O2 cold compile, median of $RUNS:"
printf "  clang-19  %7.2f s   peak %6d MiB\n" "$c" $((${cm%.*} / 1024))
printf "  repocc    %7.2f s   peak %6d MiB\n" "$r" $((${rm_%.*} / 1024))
awk -v r="$r" -v c="$c" 'BEGIN { printf "  ratio repocc/clang-19: %.3f\n", r / c }'
echo "repocc stage timings (one more run):"
rm -rf "$REPOCC_DIR"
REPOCC_TIMINGS=1 "$root/target/release/repocc" -O2 -c sqlite3.c -o repocc.o 2>&1 | sed 's/^/  /'
