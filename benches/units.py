#!/usr/bin/env python3
"""Per-unit CPU time, clang-19 against repocc, one unit after the other.

A whole build's time on a shared 2-core machine moves by 10-15 % from run
to run; compiling each unit with both compilers back to back, in the
build's order, cancels most of that drift and says which units cost more.
The repository starts empty, as for a cold `make -j1`; the unit cache is
off, so a unit compiled twice is compiled twice.

    benches/units.py BUILD_DIR [--repocc PATH] [--env NAME=VALUE ...]

BUILD_DIR is a CMake build tree with compile_commands.json (configure
with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON; `benches/builds.py` leaves one
per project). Prints one line per unit and the total ratio (CPU: user +
system of the compiler process and its children).
"""
import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def cpu_of(args, cwd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"{shlex.join(args)} failed:\n{r.stderr.decode(errors='replace')[:2000]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build_dir", type=Path)
    ap.add_argument("--repocc", type=Path, default=ROOT / "target/release/repocc")
    ap.add_argument("--env", action="append", default=[], help="NAME=VALUE for repocc's runs")
    a = ap.parse_args()
    entries = json.loads((a.build_dir / "compile_commands.json").read_text())
    with tempfile.TemporaryDirectory(prefix="repocc-units-") as tmp:
        env = dict(os.environ, REPOCC_DIR=f"{tmp}/repo", REPOCC_UNIT_CACHE="0")
        env.update(kv.split("=", 1) for kv in a.env)
        total = {"clang": 0.0, "repocc": 0.0}
        for e in entries:
            args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
            cxx = args[0].endswith("++") or e["file"].endswith((".cc", ".cpp", ".cxx"))
            out = args.index("-o") + 1
            args[out] = f"{tmp}/unit.o"
            times = {}
            for tool in ("clang", "repocc"):
                if tool == "clang":
                    exe = "clang++-19" if cxx else "clang-19"
                else:
                    exe = str(a.repocc) + ("++" if cxx else "")
                times[tool] = cpu_of([exe] + args[1:], e["directory"], env if tool == "repocc" else None)
                total[tool] += times[tool]
            print(f"{Path(e['file']).name:32} clang {times['clang']:7.2f} s  repocc {times['repocc']:7.2f} s"
                  f"  {times['repocc'] / max(times['clang'], 1e-3):5.2f}x", flush=True)
        print(f"{'total':32} clang {total['clang']:7.2f} s  repocc {total['repocc']:7.2f} s"
              f"  {total['repocc'] / max(total['clang'], 1e-3):5.2f}x")


if __name__ == "__main__":
    main()
