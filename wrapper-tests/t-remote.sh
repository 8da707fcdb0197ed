# The remote tier on a real redis-server (Debian's), started on a free
# loopback port with a password and a unix socket, and stopped at the end.
# Machine A (one repository, one checkout path) builds lua5.4 and cJSON;
# machine B (an empty repository, another checkout path, the same server)
# gets A's objects byte for byte: through the unit cache, or with it off by
# pruning at least 95% of definitions from the remote. A corrupted remote
# entry is a miss; read-only mode writes nothing; the server killed in the
# middle of a `make -j4` costs at most one warning line per invocation and
# the build succeeds, correct.
source "$(dirname "$0")/lib.sh"
command -v redis-server >/dev/null || fail "redis-server is not installed (scripts/install-deps.sh)"
lua_src=$(fetch_debian_source lua5.4 --skip-patches)
cjson_src=$(fetch_debian_source cjson --skip-patches)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PASSWORD=repocc-test-secret
SOCKET="$SCRATCH/redis.sock"
start_redis() {
  PORT=$(free_port)
  redis-server --port "$PORT" --bind 127.0.0.1 --requirepass "$PASSWORD" \
    --unixsocket "$SOCKET" --unixsocketperm 700 --save "" --appendonly no \
    --daemonize yes --pidfile "$SCRATCH/redis.pid" --logfile "$SCRATCH/redis.log" \
    || fail "redis-server did not start"
  for _ in $(seq 50); do
    rcli ping 2>/dev/null | has PONG && break
    sleep 0.1
  done
  rcli ping | has PONG || fail "redis-server does not answer: $(tail -n 5 "$SCRATCH/redis.log")"
  export REPOCC_REMOTE_STORAGE="redis://:$PASSWORD@127.0.0.1:$PORT"
}
# Stops every server the test started (redis-servers and fake ones).
stop_redis() {
  for f in "$SCRATCH"/*.pid; do
    [ -f "$f" ] || continue
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
  done
}
rcli() { redis-cli -p "$PORT" -a "$PASSWORD" --no-auth-warning "$@"; }
trap stop_redis EXIT
start_redis
note "redis-server on 127.0.0.1:$PORT and $SOCKET"

# build_lua DIR REPO: a fresh checkout of lua at DIR built with repository
# REPO (stats zeroed first); checks.lua must pass.
build_lua() {
  fresh_copy "$lua_src" "$1"
  export REPOCC_DIR="$2"
  "$REPOCC" --zero-stats >/dev/null
  (cd "$1" && make -j"${LUA_JOBS:-4}" linux CC="${LUA_CC:-repocc} -std=gnu99" > build.log 2>&1) \
    || { tail -n 30 "$1/build.log"; fail "make linux in $1"; }
  out=$("$1/src/lua" "$WT_ROOT/programs/checks.lua") || fail "checks.lua failed in $1: $out"
  assert_contains "lua checks ($1)" "lua checks: 31 passed, 0 failed" "$out"
}
# same_objects DIR: every object of DIR equals machine A's.
same_objects() {
  local n=0
  for o in "$SCRATCH/a/lua/src"/*.o; do
    cmp -s "$o" "$1/src/$(basename "$o")" || fail "$1/src/$(basename "$o") differs from machine A's"
    n=$((n + 1))
  done
  [ "$n" -ge 30 ] || fail "only $n objects"
}

note "machine A: lua5.4, cold"
build_lua "$SCRATCH/a/lua" "$SCRATCH/repo-a"
units=$(ls "$SCRATCH/a/lua/src"/*.o | wc -l)
assert_eq "A compiled every unit" "$units" "$(stat_value compiles)"
written=$(stat_value remote_bytes_written)
note "A wrote $written bytes ($(stat_value remote_raw_bytes_written) uncompressed) in $(stat_value remote_round_trips) round trips; the server holds $(rcli dbsize) keys"
[ "$written" -gt 100000 ] || fail "A wrote only $written bytes to the remote"
# Entries arrive compressed (the store's own encoding): the value's frame
# adds a few percent, never a copy's worth.
raw=$(stat_value remote_raw_bytes_written)
[ "$written" -le $((raw + raw / 20)) ] || fail "values are larger than their entries: $written against $raw bytes"

note "machine B: another checkout path, an empty repository"
build_lua "$SCRATCH/b/checkout/lua" "$SCRATCH/repo-b"
same_objects "$SCRATCH/b/checkout/lua"
note "B: $(stat_value unit_hits) unit hits, $(stat_value remote_hits) remote hits, $(stat_value remote_round_trips) round trips, $(stat_value remote_bytes_read) bytes read ($(stat_value remote_raw_bytes_read) uncompressed)"
assert_eq "B: every unit from the remote's unit cache" "$units" "$(stat_value unit_hits)"
assert_eq "B compiled nothing" 0 "$(stat_value compiles)"

note "machine C: the unit cache off: fragments from the remote"
REPOCC_UNIT_CACHE=0 build_lua "$SCRATCH/c/lua" "$SCRATCH/repo-c"
same_objects "$SCRATCH/c/lua"
total=$(stat_value definitions_total)
pruned=$(stat_value definitions_pruned)
trips=$(stat_value remote_round_trips)
note "C: $pruned of $total definitions pruned; $(stat_value remote_hits) remote hits in $trips round trips ($units units)"
[ $((pruned * 100)) -ge $((total * 95)) ] || fail "C pruned only $pruned of $total definitions"
[ "$trips" -le $((units * 3)) ] || fail "$trips round trips for $units units: look-ups are not batched"
note "C again: what came from the remote is in C's repository now"
"$REPOCC" --zero-stats >/dev/null
(cd "$SCRATCH/c/lua" && make clean > /dev/null && REPOCC_UNIT_CACHE=0 make -j4 linux CC="repocc -std=gnu99" > build.log 2>&1) || fail "C rebuild"
assert_eq "C's rebuild read nothing from the remote" 0 "$(stat_value remote_hits)"
[ "$(stat_value definitions_pruned)" -ge "$pruned" ] || fail "C's rebuild pruned less"
same_objects "$SCRATCH/c/lua"

note "cJSON with -ffile-prefix-map: machine A; B in another directory (unit cache); C (fragments)"
for m in a b c; do
  dir="$SCRATCH/$m/cjson-$m"
  fresh_copy "$cjson_src" "$dir"
  mkdir -p "$dir/build"
  export REPOCC_DIR="$SCRATCH/repo-cjson-$m"
  unit_cache=1
  [ $m = c ] && unit_cache=0
  (cd "$dir/build" \
    && cmake -DCMAKE_TOOLCHAIN_FILE="$PROJECT_ROOT/config/repocc-toolchain.cmake" \
      -DCMAKE_C_FLAGS="-ffile-prefix-map=$dir=." -DENABLE_CJSON_UTILS=On \
      -DENABLE_CJSON_TEST=On -DCMAKE_BUILD_TYPE=Release .. > cmake.log 2>&1) \
    || { tail -n 30 "$dir/build/cmake.log"; fail "cmake on machine $m"; }
  # CMake's compiler checks are not counted.
  "$REPOCC" --zero-stats >/dev/null
  (cd "$dir/build" && REPOCC_UNIT_CACHE=$unit_cache make -j"$JOBS" > build.log 2>&1 && ctest > ctest.log 2>&1) \
    || { tail -n 30 "$dir/build/"*.log; fail "cJSON on machine $m"; }
  grep -q "100% tests passed" "$dir/build/ctest.log" || fail "cJSON's tests on machine $m"
  objects=0
  while read -r o; do
    cmp -s "$SCRATCH/a/cjson-a/build/$o" "$dir/build/$o" || fail "cJSON $o differs between A and $m"
    objects=$((objects + 1))
  done < <(cd "$SCRATCH/a/cjson-a/build" && find . -name '*.o')
  [ "$objects" -ge 20 ] || fail "only $objects cJSON objects"
  case $m in
    a) cjson_units=$(stat_value compiles) ;;
    b)
      note "cJSON on B: $(stat_value unit_hits) unit hits of $cjson_units units, $(stat_value compiles) compiled; $objects objects equal A's"
      assert_eq "B: every cJSON unit from the remote's unit cache" "$cjson_units" "$(stat_value unit_hits)" ;;
    c)
      total=$(stat_value definitions_total)
      pruned=$(stat_value definitions_pruned)
      note "cJSON on C: $pruned of $total definitions pruned, $(stat_value definitions_compiled) compiled; $objects objects equal A's"
      [ "$total" -gt 3000 ] || fail "C compiled only $total definitions"
      [ $((pruned * 100)) -ge $((total * 95)) ] || fail "C pruned only $pruned of $total cJSON definitions" ;;
  esac
done

note "lua with -g and -ffile-prefix-map: machine A; B (unit cache); C (debug fragments, unit cache off)"
for m in a b c; do
  dir="$SCRATCH/$m/g/lua-$m"
  fresh_copy "$lua_src" "$dir"
  export REPOCC_DIR="$SCRATCH/repo-g-$m"
  "$REPOCC" --zero-stats >/dev/null
  unit_cache=1
  [ $m = c ] && unit_cache=0
  (cd "$dir" && REPOCC_UNIT_CACHE=$unit_cache REPOCC_DEBUG_FRAGMENTS=1 make -j4 linux \
    CC="repocc -std=gnu99" MYCFLAGS="-g -ffile-prefix-map=$dir=." > build.log 2>&1) \
    || { tail -n 30 "$dir/build.log"; fail "lua -g on machine $m"; }
  "$dir/src/lua" "$WT_ROOT/programs/checks.lua" | has "lua checks: 31 passed, 0 failed" || fail "lua -g checks on $m"
  for o in "$SCRATCH/a/g/lua-a/src"/*.o; do
    cmp -s "$o" "$dir/src/$(basename "$o")" || fail "lua -g: $(basename "$o") differs between A and $m"
  done
  case $m in
    a) g_units=$(stat_value compiles) ;;
    b)
      note "lua -g on B: $(stat_value unit_hits) unit hits of $g_units units"
      assert_eq "B: every lua -g unit from the remote's unit cache" "$g_units" "$(stat_value unit_hits)" ;;
    c)
      total=$(stat_value definitions_total)
      pruned=$(stat_value definitions_pruned)
      note "lua -g on C: $pruned of $total definitions pruned"
      [ "$total" -gt 1000 ] || fail "C compiled only $total definitions with -g"
      [ $((pruned * 100)) -ge $((total * 95)) ] || fail "C pruned only $pruned of $total definitions with -g" ;;
  esac
done
llvm-dwarfdump-19 --verify "$SCRATCH/c/g/lua-c/src/lvm.o" > /dev/null || fail "lvm.o's DWARF does not verify"
llvm-dwarfdump-19 --debug-info "$SCRATCH/c/g/lua-c/src/lvm.o" | grep -q "$SCRATCH" \
  && fail "the debug info names a checkout directory"

note "a unit with a warning, by absolute path in two checkouts: each shows its own path"
for m in a b; do
  mkdir -p "$SCRATCH/$m/warn/build"
  printf 'int f(int x) { int unused; return x; }\n' > "$SCRATCH/$m/warn/w.c"
  # Older than the compile's clock tick, or the unit cache would not record it.
  touch -d '1 minute ago' "$SCRATCH/$m/warn/w.c"
  export REPOCC_DIR="$SCRATCH/repo-warn-$m"
  "$REPOCC" --zero-stats >/dev/null
  (cd "$SCRATCH/$m/warn/build" && repocc -O2 -Wall -ffile-prefix-map="$SCRATCH/$m/warn=." \
    -c "$SCRATCH/$m/warn/w.c" -o w.o -MD -MF w.d 2> stderr) || fail "compiling w.c in $m"
  grep -q "$SCRATCH/$m/warn/w.c:1:.*warning: unused variable" "$SCRATCH/$m/warn/build/stderr" \
    || fail "$m: the warning does not name $m's file: $(cat "$SCRATCH/$m/warn/build/stderr")"
  grep -q "$SCRATCH/$m/warn/w.c" "$SCRATCH/$m/warn/build/w.d" || fail "$m: the dependency file does not name $m's file"
done
assert_eq "the second checkout's unit from the remote's unit cache" 1 "$(stat_value unit_hits)"
cmp -s "$SCRATCH/a/warn/build/w.o" "$SCRATCH/b/warn/build/w.o" || fail "w.o differs"

note "read-only, over the unix socket: an edited source compiles, nothing is written"
keys_before=$(rcli dbsize)
sets_before=$(rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_set:calls=\([0-9]*\).*/\1/p')
fresh_copy "$lua_src" "$SCRATCH/d/lua"
sed -i 's/"cannot %s %s: %s"/"cannot %s file %s: %s"/' "$SCRATCH/d/lua/src/lauxlib.c"
grep -q '"cannot %s file %s: %s"' "$SCRATCH/d/lua/src/lauxlib.c" || fail "the edit did not apply"
export REPOCC_DIR="$SCRATCH/repo-d"
"$REPOCC" --zero-stats >/dev/null
(cd "$SCRATCH/d/lua" && REPOCC_REMOTE_STORAGE="redis+unix://$SOCKET?pass=$PASSWORD" REPOCC_REMOTE_READ_ONLY=1 \
  make -j4 linux CC="repocc -std=gnu99" > build.log 2>&1) || fail "read-only build"
note "read-only: $(stat_value remote_hits) remote hits, $(stat_value definitions_compiled) definitions compiled"
[ "$(stat_value remote_hits)" -gt 0 ] || fail "read-only mode read nothing"
[ "$(stat_value definitions_compiled)" -gt 0 ] || fail "the edit compiled nothing"
assert_eq "read-only: no bytes written" 0 "$(stat_value remote_bytes_written)"
assert_eq "read-only: keys on the server" "$keys_before" "$(rcli dbsize)"
assert_eq "read-only: SET commands" "$sets_before" \
  "$(rcli info commandstats | tr -d '\r' | sed -n 's/^cmdstat_set:calls=\([0-9]*\).*/\1/p')"
"$SCRATCH/d/lua/src/lua" -e 'print(pcall(dofile, "/nonexistent"))' 2>&1 | has "cannot open file" \
  || fail "the read-only build does not run the edited code"

note "corrupted entries: every value on the server damaged"
n=0
for k in $(rcli --scan --pattern 'repocc:*'); do
  rcli setrange "$k" 12 "XXXXXXXX" > /dev/null
  n=$((n + 1))
done
note "damaged $n values"
# One unit at a time: a unit's fragments reach the server (its background
# writer) before its pack reaches the local repository, so under -j4 a unit
# compiled beside another that stores a definition they share may find it
# on the server, written again and sound: a hit of no damaged entry.
LUA_JOBS=1 build_lua "$SCRATCH/e/lua" "$SCRATCH/repo-e"
same_objects "$SCRATCH/e/lua"
note "E: $(stat_value remote_corrupt) corrupt remote entries, $(stat_value remote_hits) hits, $(stat_value definitions_compiled) definitions compiled"
[ "$(stat_value remote_corrupt)" -gt 0 ] || fail "no corrupt remote entry was met"
assert_eq "E: no corrupt entry was used" 0 "$(stat_value remote_hits)"
assert_eq "E compiled every unit" "$units" "$(stat_value compiles)"

note "servers that misbehave: silent, answering garbage, full, hostile (a valid reply one byte at a time, a 4 GiB value announced, a 4-billion-value array announced)"
cat > "$SCRATCH/fake-server.py" <<'EOF2'
# A TCP server on a free loopback port (printed) that accepts and then
# never answers (silent), answers garbage to everything, or answers a
# request with a valid reply one byte every 0.2 s (drip), a 4 GiB value
# (huge-value) or an array of 4294967295 values (huge-array), then zeros or
# nil values as fast as they are taken.
import socket, sys, threading, time
mode = sys.argv[1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
def serve(c):
    try:
        while c.recv(65536):
            if mode == "garbage":
                c.sendall(b"\x00\xffnot redis\r\n")
            elif mode == "drip":
                for b in b"*4\r\n" + b"$-1\r\n" * 4:
                    c.sendall(bytes([b]))
                    time.sleep(0.2)
            elif mode == "huge-value":
                c.sendall(b"$4294967296\r\n")
                while True:
                    c.sendall(bytes(1 << 20))
            elif mode == "huge-array":
                c.sendall(b"*4294967295\r\n")
                while True:
                    c.sendall(b"$-1\r\n" * 100000)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF2
mkdir -p "$SCRATCH/faults"
cp "$lua_src"/src/*.c "$lua_src"/src/*.h "$SCRATCH/faults/"
fault_units="lapi.c lvm.c ltable.c lstring.c"
(cd "$SCRATCH/faults" && REPOCC_DIR="$SCRATCH/repo-faults-ref" REPOCC_REMOTE_STORAGE= \
  repocc -O2 -DLUA_USE_LINUX -c $fault_units) || fail "reference compile"
mkdir -p "$SCRATCH/faults/ref" && (cd "$SCRATCH/faults" && mv *.o ref/)
redis-server --port 0 --unixsocket "$SCRATCH/full.sock" --unixsocketperm 700 --maxmemory 100kb \
  --maxmemory-policy noeviction --save "" --appendonly no --daemonize yes \
  --pidfile "$SCRATCH/full.pid" --logfile "$SCRATCH/full.log" || fail "redis-server (full)"
for mode in silent garbage full drip huge-value huge-array; do
  case $mode in
    full) url="redis+unix://$SCRATCH/full.sock" ;;
    *)
      python3 "$SCRATCH/fake-server.py" $mode > "$SCRATCH/$mode.port" &
      echo $! > "$SCRATCH/fake-$mode.pid"
      for _ in $(seq 50); do [ -s "$SCRATCH/$mode.port" ] && break; sleep 0.1; done
      url="redis://127.0.0.1:$(cat "$SCRATCH/$mode.port")" ;;
  esac
  export REPOCC_DIR="$SCRATCH/repo-$mode"
  # Bounded whatever the server sends: a hang fails here, not in CI's
  # time-out; the peak memory and time are printed by time(1) (%M, KiB;
  # %e, s).
  (cd "$SCRATCH/faults" && REPOCC_REMOTE_STORAGE="$url" REPOCC_REMOTE_TIMEOUT_MS=300 \
    timeout 120 /usr/bin/time -o "$SCRATCH/$mode.rss" -f "%M %e" \
    repocc -O2 -DLUA_USE_LINUX -c $fault_units 2> "$SCRATCH/$mode.stderr") \
    || fail "$mode server: the compile failed: $(cat "$SCRATCH/$mode.stderr")"
  read -r rss seconds < <(tail -n 1 "$SCRATCH/$mode.rss")
  note "$mode server: peak memory ${rss} KiB, ${seconds} s"
  [ "$rss" -lt 307200 ] || fail "$mode server: the compile took ${rss} KiB"
  for o in "$SCRATCH/faults/ref"/*.o; do
    cmp -s "$o" "$SCRATCH/faults/$(basename "$o")" || fail "$mode server: $(basename "$o") differs"
  done
  note "$mode server: $(cat "$SCRATCH/$mode.stderr")"
  assert_eq "$mode server: one warning line" 1 "$(grep -c . "$SCRATCH/$mode.stderr")"
  has "remote storage .*going on without it" < "$SCRATCH/$mode.stderr" || fail "$mode server: no warning"
  [ "$(stat_value remote_errors)" -ge 1 ] || fail "$mode server: no error counted"
  if [ -f "$SCRATCH/fake-$mode.pid" ]; then kill "$(cat "$SCRATCH/fake-$mode.pid")" || true; fi
done
# redis-server removes its pid file as it stops.
kill "$(cat "$SCRATCH/full.pid")" 2>/dev/null || true

note "the server killed in the middle of a make -j4"
# E's build wrote good values again; each invocation's stderr is kept.
mkdir -p "$SCRATCH/stderr"
cat > "$SCRATCH/cc-logged" <<EOF
#!/bin/bash
f=\$(mktemp "$SCRATCH/stderr/XXXXXX")
repocc "\$@" 2>"\$f"
rc=\$?
cat "\$f" >&2
exit \$rc
EOF
chmod +x "$SCRATCH/cc-logged"
fresh_copy "$lua_src" "$SCRATCH/f/lua"
export REPOCC_DIR="$SCRATCH/repo-f"
"$REPOCC" --zero-stats >/dev/null
(cd "$SCRATCH/f/lua" && REPOCC_UNIT_CACHE=0 make -j4 linux CC="$SCRATCH/cc-logged -std=gnu99" > build.log 2>&1; echo $? > rc) &
make_pid=$!
for _ in $(seq 600); do
  [ "$(ls "$SCRATCH/f/lua/src/"*.o 2>/dev/null | wc -l)" -ge 4 ] && break
  sleep 0.02
done
kill -9 "$(cat "$SCRATCH/redis.pid")"
rm -f "$SCRATCH/redis.pid"
wait "$make_pid" || true
assert_eq "the build succeeded" 0 "$(cat "$SCRATCH/f/lua/rc")"
out=$("$SCRATCH/f/lua/src/lua" "$WT_ROOT/programs/checks.lua") || fail "checks.lua failed: $out"
assert_contains "lua checks after the kill" "lua checks: 31 passed, 0 failed" "$out"
same_objects "$SCRATCH/f/lua"
warned=0
for f in "$SCRATCH/stderr"/*; do
  lines=$(grep -c "remote storage" "$f" || true)
  [ "$lines" -le 1 ] || fail "an invocation printed $lines warnings: $(cat "$f")"
  warned=$((warned + lines))
done
note "after the kill: $warned of $(ls "$SCRATCH/stderr" | wc -l) invocations warned; $(stat_value remote_hits) remote hits before it; $(stat_value remote_errors) errors"
[ "$warned" -ge 1 ] || fail "no invocation saw the server go away (killed too late?)"
[ "$(stat_value remote_hits)" -gt 0 ] || fail "no remote hit before the kill (killed too early?)"
grep -h "remote storage" "$SCRATCH/stderr"/* | head -n 1
grep -qr "$PASSWORD" "$SCRATCH/stderr" && fail "a warning shows the password"
note "ok"
