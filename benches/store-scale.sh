#!/usr/bin/env bash
# The fragment store at scale (issue 42): fills new stores with 10k, 100k
# and 1M synthetic entries through the storage interface (a pack of 1,000
# per "compile") and prints store and look-up latency, the size query of
# --show-stats, eviction of 10% and --verify, as a Markdown table.
# Not in CI (the 1M store takes about 1 GB of disk and a few minutes).
#   bash benches/store-scale.sh [COUNTS] [DIR]   e.g. 10000,100000 /var/tmp
set -euo pipefail
cd "$(dirname "$0")/.."
export REPOCC_SCALE=${1:-10000,100000,1000000}
[ -n "${2:-}" ] && export REPOCC_SCALE_DIR=$2
cargo test --release --quiet store_at_scale -- --ignored --nocapture --test-threads=1 2>&1 \
  | grep '^|'
