# sqlite3 built with CC=repocc: the amalgamation (sqlite3.c, 250k lines, made
# from Debian's source with tclsh) and the shell; the shell answers SQL
# with the known results, on a file database and in memory.
source "$(dirname "$0")/lib.sh"
amalg=$(prepare_sqlite_amalgamation)
cd "$SCRATCH"
cp "$amalg"/sqlite3.c "$amalg"/sqlite3.h "$amalg"/shell.c .

repocc -O2 -DSQLITE_THREADSAFE=1 -DSQLITE_ENABLE_MATH_FUNCTIONS shell.c sqlite3.c \
  -lm -ldl -lpthread -o sqlite3 2> build.err || { cat build.err; fail "building the shell"; }
assert_eq "units through the pipeline" 2 "$(stat_value compiles)"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"
# Every object composed in process and every fragment carved: a decline
# (the slower ld.lld -r path, a module per fragment) is counted, never silent.
assert_eq "composing declined" 0 "$(stat_value compose_declines)"
assert_eq "carving declined" 0 "$(stat_value carve_declines)"

./sqlite3 test.db < "$WT_ROOT/programs/checks.sql" > checks.out 2>&1 || { cat checks.out; fail "sqlite3 shell"; }
diff -u "$WT_ROOT/programs/checks.expected" checks.out || fail "SQL answers differ"
assert_eq "in-memory query" "3|6.0" "$(./sqlite3 :memory: 'SELECT 1+2, sqrt(36);')"
assert_eq "version" "$(grep -m1 '#define SQLITE_VERSION ' sqlite3.h | sed 's/.*"\(.*\)".*/\1/')" \
  "$(./sqlite3 :memory: 'SELECT sqlite_version();')"
