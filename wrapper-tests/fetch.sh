# Fetching third-party sources for the wrapper tests and benchmarks, cached
# under wrapper-tests/cache/ (git-ignored). Sourced; expects a `fail`
# function and JOBS.
CACHE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cache"
mkdir -p "$CACHE"

# fetch_debian_source PKG: unpacks `apt-get source PKG` (once) and prints
# the directory of the unpacked tree. Extra args go to dpkg-source -x.
fetch_debian_source() {
  local pkg=$1; shift
  local dir="$CACHE/debian/$pkg"
  if [ ! -f "$dir/.fetched" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    (cd "$dir" && apt-get source --download-only -q "$pkg" >/dev/null 2>&1) \
      || fetch_debian_source_version "$pkg" "$dir" \
      || fail "apt-get source $pkg (are deb-src entries set up? run scripts/install-deps.sh)"
    local dsc
    dsc=$(ls "$dir"/*.dsc | head -n 1)
    (cd "$dir" && dpkg-source -x "$@" "$dsc" tree >/dev/null 2>&1) || fail "dpkg-source -x $dsc"
    touch "$dir/.fetched"
  fi
  echo "$dir/tree"
}

# fetch_debian_source_version PKG DIR: the newest version of PKG's source
# that the mirrors serve, into DIR. apt-get picks the newest version its
# lists name, and a security update's files can be missing from the
# mirror a machine uses (zlib 1:1.2.13.dfsg-1+deb12u1 was, on 2026-12-02).
fetch_debian_source_version() {
  local pkg=$1 dir=$2 version
  for version in $(apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -ru); do
    rm -rf "${dir:?}"/*
    (cd "$dir" && apt-get source --download-only -q "$pkg=$version" >/dev/null 2>&1) && return 0
  done
  return 1
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

# fetch_gcc_torture: gcc's C execution torture tests
# (gcc/testsuite/gcc.c-torture/execute, with ieee/) from Debian's gcc-12
# source, unpacked once; prints their directory. Only that directory is
# kept: the source package is 87 MB, its tests 8 MB.
fetch_gcc_torture() {
  local out="$CACHE/gcc-torture"
  if [ ! -f "$out/.fetched" ]; then
    local tmp="$CACHE/gcc-torture.tmp"
    rm -rf "$out" "$tmp"
    mkdir -p "$tmp"
    (cd "$tmp" && apt-get source --download-only -q gcc-12 >/dev/null 2>&1) \
      || fetch_debian_source_version gcc-12 "$tmp" \
      || fail "apt-get source gcc-12 (are deb-src entries set up? run scripts/install-deps.sh)"
    local orig inner
    orig=$(ls "$tmp"/gcc-12_*.orig.tar.* | head -n 1)
    inner=$(tar tf "$orig" | grep '/gcc-[0-9.]*-dfsg\.tar\.xz$') || fail "no gcc tarball in $orig"
    (cd "$tmp" && tar xf "$orig" "$inner" && tar xJf "$inner" --wildcards '*/gcc/testsuite/gcc.c-torture/execute/*') \
      || fail "unpacking gcc's torture tests from $orig"
    mv "$tmp"/gcc-*/gcc/testsuite/gcc.c-torture/execute "$out"
    rm -rf "$tmp"
    touch "$out/.fetched"
  fi
  echo "$out"
}
