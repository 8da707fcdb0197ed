#!/usr/bin/env bash
# The current results set (prints figures; not a test): one run of each
# benchmark harness with the binary in target/release, into
# benches/results/ (or $1), with an index (README.md) that names the
# binary, the machine and each file's command. Older sets live in git
# (`git log -- benches/results`).
#
#   bash benches/results-set.sh            # about an hour on 2 cores
#   bash benches/results-set.sh /tmp/set   # somewhere else
#
# Run it on a quiet machine: the figures are ratios of build and run
# times taken side by side, only as good as the noise allows.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/benches/results}
mkdir -p "$OUT"
cd "$ROOT"

BUILDS=(python3 benches/builds.py --runs 1 --out "$OUT")
SIZES=(python3 benches/sizes.py --programs lua,speedtest1 --out "$OUT")
RUNTIME=(python3 benches/runtime.py --programs lua,sqlite --runs 5 --out "$OUT")

started=$(date -u +%Y-%m-%dT%H:%MZ)
"${BUILDS[@]}"
"${SIZES[@]}"
"${RUNTIME[@]}"

{
  echo "# The current results set"
  echo
  echo "Made by \`bash benches/results-set.sh\` from $started to $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "with $("$ROOT/target/release/repocc" --version | tail -1) (commit"
  echo "$(git rev-parse --short HEAD)), clang-19 $(clang-19 --version | sed -n 's/.*version \([0-9.]*\).*/\1/p' | head -1),"
  echo "ccache $(ccache --version | sed -n 's/ccache version //p' | head -1), on $(nproc) cores ($(uname -m))."
  echo "Older sets: \`git log -- benches/results\`."
  echo
  echo "| file | what | command |"
  echo "|---|---|---|"
  echo "| [builds.md](builds.md), builds.dat, builds.png | build times of lua5.4, cjson and sqlite3 at -O2, -O2 -g and -O0 -g: cold, no-change, edit, shift, header; clang-19, ccache and repocc | \`${BUILDS[*]}\` |"
  echo "| [sizes.md](sizes.md) | \`.text\` and \`size -t\` of lua and speedtest1, repocc against clang-19 | \`${SIZES[*]}\` |"
  echo "| [runtime.md](runtime.md) | run time of lua and speedtest1 built by each | \`${RUNTIME[*]}\` |"
} | sed "s|$OUT|benches/results|g" > "$OUT/README.md"
echo "results-set: $OUT/README.md"
