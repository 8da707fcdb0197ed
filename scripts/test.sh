#!/usr/bin/env bash
# Quick start, step 2: the whole test suite — unit tests (cargo test), lint,
# and the wrapper tests (real C/C++ builds through repocc, wrapper-tests/).
# Arguments select wrapper tests by name (e.g. `scripts/test.sh lua zlib`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/install-deps.sh
cargo build --release
ln -sf repocc target/release/repocc++
cargo fmt --all -- --check
python3 scripts/check-layers.py
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --release --all-targets -- -D warnings
else
  echo "test.sh: cargo clippy is not installed; lint skipped"
fi
cargo test --release
bash wrapper-tests/run.sh "$@"
