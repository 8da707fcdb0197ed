#!/usr/bin/env python3
"""Remote-tier benchmark (prints figures; not a test).

Starts its own redis-server (Debian's) on a free loopback port, then for
each project and flag set, several runs, in the same run:

  clang       clang-19, a clean tree
  A cold      repocc, an empty local repository and an empty server
  B cold      repocc on "another machine": an empty local repository, the
              tree at another path, the server A filled (unit cache on)
  B frags     the same with the unit cache off: fragments from the server

and reports medians and ratios (B to A, B to clang-19), the round trips
per unit and the bytes per unit read from the server (compressed and as
entries). Every flag set gets `-ffile-prefix-map=<tree>=.`, which is what
makes `-g` objects (and the unit cache) independent of the checkout path.

  python3 benches/remote.py                                  # lua, sqlite; -O2, -O2 -g; 3 runs
  python3 benches/remote.py --projects lua --runs 1 --flags=-O2
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import builds  # noqa: E402  (the projects and tools of the build benchmark)

ROOT = builds.ROOT


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    def __init__(self, work):
        self.port = free_port()
        self.pidfile = work / "redis.pid"
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "yes", "--pidfile", str(self.pidfile),
             "--logfile", str(work / "redis.log")],
            check=True,
        )
        for _ in range(50):
            if self.cli("ping").strip() == "PONG":
                break
            time.sleep(0.1)
        self.url = f"redis://127.0.0.1:{self.port}"

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True)
        return r.stdout

    def stop(self):
        if self.pidfile.exists():
            subprocess.run(["kill", self.pidfile.read_text().strip()])


def stats(tool):
    out = subprocess.run(
        [str(ROOT / "target/release/repocc"), "--show-stats", "--format", "json"],
        env=tool.env, capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out)


def machine(project_cls, flags, name, work, redis, unit_cache=True):
    """A project built by repocc on a 'machine': its own work directory
    (tree path and local repository) and the shared server."""
    mwork = work / name
    mwork.mkdir(parents=True, exist_ok=True)
    tool = builds.Tool("repocc", mwork)
    if redis:
        tool.env["REPOCC_REMOTE_STORAGE"] = redis.url
    if not unit_cache:
        tool.env["REPOCC_UNIT_CACHE"] = "0"
    tool.reset_cache()
    tree = mwork / f"{project_cls.name}-repocc"
    p = project_cls(mwork, f"{flags} -ffile-prefix-map={tree}=.", tool)
    assert p.tree == tree
    p.prepare()
    seconds = p.timed(p.build)
    s = stats(tool)
    shutil.rmtree(p.tree, ignore_errors=True)
    return seconds, s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--projects", default="lua,sqlite")
    ap.add_argument("--flags", action="append", help="a flag set (repeatable); default: -O2 and -O2 -g")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benches" / "results" / "remote.md"))
    a = ap.parse_args()
    flag_sets = a.flags or ["-O2", "-O2 -g"]
    rows = []
    with tempfile.TemporaryDirectory(prefix="repocc-remote-bench-", ignore_cleanup_errors=True) as tmp:
        work = Path(tmp)
        redis = Redis(work)
        try:
            for pname in a.projects.split(","):
                cls = builds.PROJECTS[pname]
                for flags in flag_sets:
                    t = {k: [] for k in ("clang", "A", "B", "Bf")}
                    per_unit = {k: [] for k in ("trips", "read", "raw", "ftrips", "fread", "fraw")}
                    pruned = []
                    for run in range(a.runs):
                        clang = builds.Tool("clang", work / "clang")
                        (work / "clang").mkdir(exist_ok=True)
                        p = cls(work / "clang", flags, clang)
                        p.prepare()
                        t["clang"].append(p.timed(p.build))
                        shutil.rmtree(p.tree, ignore_errors=True)
                        redis.cli("flushall")
                        t["A"].append(machine(cls, flags, "a", work, redis)[0])
                        sec, s = machine(cls, flags, "b/elsewhere", work, redis)
                        t["B"].append(sec)
                        units = max(1, s.get("unit_hits", 0) + s.get("compiles", 0))
                        per_unit["trips"].append(s.get("remote_round_trips", 0) / units)
                        per_unit["read"].append(s.get("remote_bytes_read", 0) / units)
                        per_unit["raw"].append(s.get("remote_raw_bytes_read", 0) / units)
                        sec, s = machine(cls, flags, "c/third/place", work, redis, unit_cache=False)
                        t["Bf"].append(sec)
                        units = max(1, s.get("compiles", 0))
                        per_unit["ftrips"].append(s.get("remote_round_trips", 0) / units)
                        per_unit["fread"].append(s.get("remote_bytes_read", 0) / units)
                        per_unit["fraw"].append(s.get("remote_raw_bytes_read", 0) / units)
                        total = max(1, s.get("definitions_total", 0))
                        pruned.append(s.get("definitions_pruned", 0) / total)
                    m = {k: statistics.median(v) for k, v in t.items()}
                    u = {k: statistics.median(v) for k, v in per_unit.items()}
                    row = (pname, flags, m, u, statistics.median(pruned))
                    rows.append(row)
                    print(
                        f"{pname} {flags!r}: clang {m['clang']:.2f}s, A {m['A']:.2f}s, B {m['B']:.2f}s "
                        f"({m['B'] / m['A']:.2f}x A, {m['B'] / m['clang']:.2f}x clang), "
                        f"B without unit cache {m['Bf']:.2f}s ({m['Bf'] / m['clang']:.2f}x clang, "
                        f"{statistics.median(pruned) * 100:.1f}% pruned); per unit: {u['trips']:.1f} trips, "
                        f"{u['read'] / 1024:.1f} KiB read ({u['raw'] / 1024:.1f} KiB entries)",
                        flush=True,
                    )
        finally:
            redis.stop()
    write(rows, a, Path(a.out))


def write(rows, a, out):
    lines = [
        "# Remote-tier benchmark",
        "",
        f"`python3 benches/remote.py --projects {a.projects} --runs {a.runs}` "
        f"({os.cpu_count()} CPUs, redis-server on loopback; medians; every flag set with "
        "`-ffile-prefix-map=<tree>=.`). A: a cold build that fills the server; B: another "
        "machine (empty local repository, another checkout path); B frags: B with the unit "
        "cache off (fragments pruned from the server).",
        "",
        "| project | flags | clang | A cold | B cold | B/A | B/clang | B frags | B frags/clang | pruned | trips/unit | KiB read/unit (entries) | B frags trips/unit | B frags KiB/unit (entries) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for pname, flags, m, u, pruned in rows:
        lines.append(
            f"| {pname} | `{flags}` | {m['clang']:.2f} s | {m['A']:.2f} s | {m['B']:.2f} s | "
            f"{m['B'] / m['A']:.2f} | {m['B'] / m['clang']:.2f} | {m['Bf']:.2f} s | {m['Bf'] / m['clang']:.2f} | "
            f"{pruned * 100:.1f}% | {u['trips']:.1f} | {u['read'] / 1024:.1f} ({u['raw'] / 1024:.1f}) | "
            f"{u['ftrips']:.1f} | {u['fread'] / 1024:.1f} ({u['fraw'] / 1024:.1f}) |"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
