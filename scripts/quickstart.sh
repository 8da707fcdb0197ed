#!/usr/bin/env bash
# Quick start, step 1: install what repocc needs, build it, and build the
# bundled example project with CC=repocc, then run the program.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
cargo build --release
bin="$root/target/release"
ln -sf repocc "$bin/repocc++"
echo "== building examples/wordfreq with CC=$bin/repocc"
make -C examples/wordfreq clean >/dev/null
make -C examples/wordfreq CC="$bin/repocc"
echo "== running it"
make -s -C examples/wordfreq run
echo "== repocc statistics"
"$bin/repocc" --show-stats
