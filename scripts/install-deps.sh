#!/usr/bin/env bash
# Installs what repocc needs on a Debian 12 machine (run as root, or with sudo
# available). Idempotent: packages already present are skipped by apt, and the
# deb-src stanza is written only once.
set -euo pipefail

PACKAGES=(
  clang-19 llvm-19-dev libclang-19-dev lld-19 libpolly-19-dev libzstd-dev zlib1g-dev
  libclang-rt-19-dev cmake make pkg-config ccache csmith libcsmith-dev
  libgtest-dev googletest dpkg-dev tcl time file binutils bc gdb python3 gnuplot-nox strace redis-server
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# deb-src entries, so the wrapper tests can `apt-get source` real projects.
src_list=/etc/apt/sources.list.d/repocc-deb-src.sources
need_update=0
if [ ! -f "$src_list" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources | $SUDO tee "$src_list" >/dev/null
  need_update=1
fi

if [ "${#missing[@]}" -gt 0 ] || [ "$need_update" = 1 ]; then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "install-deps: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
