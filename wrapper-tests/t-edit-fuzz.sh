# Edit fuzzing (DESIGN.md invariant 4): random semantic edits to random
# functions of lua5.4 and sqlite3 that the programs' checks execute, each
# round rebuilt warm (with every earlier round's fragments in the
# repository) and cold (empty repository); the programs must behave the
# same. See fuzz/edit_fuzz.py for the edits and the triage.
#
# One seed per run, printed first and with every failure; replay a run with
# REPOCC_FUZZ_SEED=<seed>. Rounds: REPOCC_FUZZ_ROUNDS_LUA (default 20),
# REPOCC_FUZZ_ROUNDS_LUA_DEBUG (lua at -O2 -g, which debug_fragments'
# default sends through the repository; default 10) and
# REPOCC_FUZZ_ROUNDS_SQLITE (default 3, each with up to 4 edits); the
# longer mode REPOCC_FUZZ_LONG=1 runs ten times as many.
source "$(dirname "$0")/lib.sh"
seed=${REPOCC_FUZZ_SEED:-$(python3 -c 'import random; print(random.SystemRandom().randrange(1, 1 << 31))')}
scale=1
[ "${REPOCC_FUZZ_LONG:-0}" = 1 ] && scale=10
lua_rounds=$(( ${REPOCC_FUZZ_ROUNDS_LUA:-20} * scale ))
lua_debug_rounds=$(( ${REPOCC_FUZZ_ROUNDS_LUA_DEBUG:-10} * scale ))
sqlite_rounds=$(( ${REPOCC_FUZZ_ROUNDS_SQLITE:-3} * scale ))
note "seed $seed (replay with REPOCC_FUZZ_SEED=$seed)"

fuzz() {
  python3 "$WT_ROOT/fuzz/edit_fuzz.py" --repocc "$REPOCC" --cache "$CACHE/fuzz" --seed "$seed" "$@" \
    || fail "edit fuzzing found a difference (seed $seed): $*"
}

lua_src=$(fetch_debian_source lua5.4 --skip-patches)
fuzz --project lua --source "$lua_src/src" --work "$SCRATCH/lua" --rounds "$lua_rounds" --edits 2
fuzz --project lua --source "$lua_src/src" --work "$SCRATCH/lua-g" --rounds "$lua_debug_rounds" --edits 2 --cflags=-g

amalg=$(prepare_sqlite_amalgamation)
mkdir -p "$SCRATCH/sqlite-src"
cp "$amalg"/sqlite3.c "$amalg"/sqlite3.h "$amalg"/shell.c "$SCRATCH/sqlite-src/"
fuzz --project sqlite --source "$SCRATCH/sqlite-src" --work "$SCRATCH/sqlite" --rounds "$sqlite_rounds" --edits 4
