# zlib (Debian source) built with CC=repocc: ./configure && make test, both
# the static and the shared library's example programs pass, and the units
# went through the pipeline.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source zlib --skip-patches)
fresh_copy "$src" "$SCRATCH/zlib"
cd "$SCRATCH/zlib"

CC=repocc CFLAGS="-O2" ./configure > configure.log 2>&1 || { cat configure.log; fail "configure"; }
grep -q "^Building shared library libz" configure.log \
  || fail "configure did not find shared library support through repocc: $(cat configure.log)"
make -j"$JOBS" > build.log 2>&1 || { tail -n 30 build.log; fail "make"; }
make test > test.log 2>&1 || { cat test.log; fail "make test"; }
cat test.log
[ "$(grep -c '\*\*\* zlib.*test OK \*\*\*' test.log)" -ge 2 ] || fail "expected the static and shared tests to pass"
compiles=$(stat_value compiles)
note "compiles through the pipeline: $compiles, fallbacks: $(stat_value fallbacks)"
[ "$compiles" -ge 30 ] || fail "too few units through the pipeline ($compiles)"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"
# minigzip round trip on a real file.
head -c 200000 /usr/bin/clang-19 > sample
./minigzip < sample > sample.gz
./minigzip -d < sample.gz > sample.out
cmp sample sample.out || fail "minigzip round trip"
