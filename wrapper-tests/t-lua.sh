# lua5.4 (Debian source, `make linux`) built with CC=repocc: the interpreter
# runs our checks script and gives the right answers; every unit went
# through the pipeline.
source "$(dirname "$0")/lib.sh"
src=$(fetch_debian_source lua5.4 --skip-patches)
fresh_copy "$src" "$SCRATCH/lua"
cd "$SCRATCH/lua"

make -j"$JOBS" linux CC="repocc -std=gnu99" > build.log 2>&1 || { tail -n 30 build.log; fail "make linux"; }
units=$(ls src/*.o | wc -l)
note "built $units objects"
assert_eq "every unit through the pipeline" "$units" "$(stat_value compiles)"
assert_eq "no fallbacks" 0 "$(stat_value fallbacks)"

out=$(src/lua "$WT_ROOT/programs/checks.lua") || fail "checks.lua failed: $out"
echo "$out" | tail -n 3
assert_contains "lua checks" "lua checks: 31 passed, 0 failed" "$out"
assert_eq "lua -v" "Lua 5.4.4  Copyright (C) 1994-2022 Lua.org, PUC-Rio" "$(src/lua -v)"

# luac compiles a chunk that lua then runs.
echo 'print(("%d"):format(2^53 // 1 | 0))' > chunk.lua
src/luac -o chunk.luac chunk.lua
assert_eq "luac + lua" "9007199254740992" "$(src/lua chunk.luac)"
