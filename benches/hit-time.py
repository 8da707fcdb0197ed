#!/usr/bin/env python3
"""One unit cache hit, timed against ccache's (prints figures; not a test).

For a few units of lua5.4 and sqlite3.c, compiles each once with ccache +
clang-19 and once with repocc (each into its own empty cache), then times
hits: the output removed before each (as `make clean` leaves it), the two
tools taking turns, one process per hit. Prints the median elapsed and
CPU time (user + system, from the child's rusage) of each, their ratio,
and two floors: `repocc --help` (the start-up and exit of repocc's
executable with LLVM's and clang's static initializers run, which a hit
leaves out: see shim/startup.cpp) and `true`.

  python3 benches/hit-time.py                 # -O2, 40 hits per unit and tool
  python3 benches/hit-time.py --flags '-O2 -g' --hits 100
  python3 benches/hit-time.py --repocc /tmp/old/repocc   # another build
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FETCH = ROOT / "wrapper-tests" / "fetch.sh"
REPOCC = ROOT / "target" / "release" / "repocc"


def fetch(fn):
    """A cached source tree from wrapper-tests/fetch.sh."""
    script = f'fail() {{ echo "$*" >&2; exit 1; }}; JOBS=2; source "{FETCH}"; {fn}'
    out = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip().splitlines()[-1])


def timed(argv, cwd, env):
    """Elapsed and CPU seconds of one run; fails loudly on a failed run."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if status != 0:
        sys.exit(f"failed ({status}): {' '.join(map(str, argv))} in {cwd}")
    return elapsed, usage.ru_utime + usage.ru_stime


def clean_env():
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("REPOCC_", "CCACHE_")) or k in ("MAKEFLAGS", "MFLAGS"):
            del env[k]
    return env


def main():
    global REPOCC
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flags", default="-O2")
    ap.add_argument("--hits", type=int, default=40)
    ap.add_argument("--repocc", type=Path, default=REPOCC, help="the executable to time")
    a = ap.parse_args()
    REPOCC = a.repocc.resolve()
    if not REPOCC.exists():
        sys.exit(f"{REPOCC} is missing: cargo build --release")
    if not shutil.which("ccache"):
        sys.exit("ccache is missing (apt-get install ccache)")
    lua = fetch("fetch_debian_source lua5.4") / "src"
    sqlite = fetch("prepare_sqlite_amalgamation")
    units = [
        (lua, "lvm.c", ["-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX"]),
        (lua, "lapi.c", ["-std=gnu99", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX"]),
        (sqlite, "sqlite3.c", []),
    ]
    work = Path(tempfile.mkdtemp(prefix="repocc-hit-time-"))
    base = clean_env()
    envs = {
        "ccache": dict(base, CCACHE_DIR=str(work / "ccache"), CCACHE_MAXSIZE="20G"),
        "repocc": dict(base, REPOCC_DIR=str(work / "repocc"), REPOCC_MAX_SIZE="0"),
    }
    (work / "repocc").mkdir(mode=0o700)
    compilers = {"ccache": ["ccache", "clang-19"], "repocc": [str(REPOCC)]}
    print(f"# unit cache hits, {a.flags}, median of {a.hits} (elapsed / CPU, ms)")
    print("| unit | ccache | repocc | repocc / ccache |")
    print("|---|---|---|---|")
    try:
        for tree, source, extra in units:
            times = {t: [] for t in compilers}
            out = work / (source + ".o")
            argvs = {
                t: c + a.flags.split() + extra + ["-c", str(tree / source), "-o", str(out)]
                for t, c in compilers.items()
            }
            for t in compilers:
                timed(argvs[t], tree, envs[t])  # the compile the hits reuse
            for _ in range(a.hits):
                for t in compilers:
                    out.unlink(missing_ok=True)
                    times[t].append(timed(argvs[t], tree, envs[t]))
            med = {
                t: tuple(statistics.median(x[i] for x in v) * 1000 for i in (0, 1))
                for t, v in times.items()
            }
            c, r = med["ccache"], med["repocc"]
            print(
                f"| {source} | {c[0]:.1f} / {c[1]:.1f} | {r[0]:.1f} / {r[1]:.1f} "
                f"| {r[0] / c[0]:.2f}x / {r[1] / c[1]:.2f}x |"
            )
        floors = {
            "repocc --help (LLVM initialized)": [str(REPOCC), "--help"],
            "true": ["true"],
        }
        for name, argv in floors.items():
            runs = [timed(argv, work, base) for _ in range(a.hits)]
            e = statistics.median(x[0] for x in runs) * 1000
            u = statistics.median(x[1] for x in runs) * 1000
            print(f"| floor: `{name}` | | {e:.1f} / {u:.1f} | |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
