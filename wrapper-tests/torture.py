#!/usr/bin/env python3
"""gcc's C execution torture tests through repocc (t-torture.sh); any
directory of C or C++ (`*.C`, `*.cc`, `*.cpp`: g++.dg/torture) tests.

Each test is compiled by clang-19 and by repocc with the same flags, into
one repository that every test shares (so a test may take the fragments of
another: equal variables, equal helpers), then by repocc once more into an
empty repository of its own. Checks:

  - clang-19 and repocc both compile a test or both refuse it, and
    repocc prints nothing clang-19 does not (no unit handed to clang);
  - where clang-19's program exits 0, repocc's exits 0 and prints the same
    (a test whose clang-19 program prints differently on a second run, a
    stack address, is held to its exit code);
  - the object from the shared repository is the object from the empty
    one, byte for byte (invariant 4, whatever other units stored).

    python3 torture.py --tests DIR --repocc PATH --work DIR --flags="-O2"
        [--jobs N]

Prints one line per test that fails a check and a summary; exits 1 when a
test failed. A failing test's objects and programs stay in the work
directory (`N.clang.o`, `N.shared.o`, `N.cold.o`).
"""

import argparse
import concurrent.futures
import glob
import os
import shutil
import subprocess
import sys


def run(exe, cwd):
    try:
        # A session of its own: a test that signals its process group
        # must not reach the harness.
        p = subprocess.run([exe], capture_output=True, timeout=10, cwd=cwd, start_new_session=True)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return "timeout", b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", required=True)
    ap.add_argument("--repocc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--flags", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--compile-timeout", type=float, default=600.0)
    a = ap.parse_args()
    # The tests are old C: implicit declarations and `int`, which clang-19
    # refuses by default (as gcc 14 does), are theirs to use.
    flags = a.flags.split() + [
        "-w",
        "-Wno-error=implicit-function-declaration",
        "-Wno-error=implicit-int",
        "-Wno-error=int-conversion",
        "-Wno-error=incompatible-pointer-types",
    ]
    # Objects without position-independent code link into a program that
    # is not one either (clang-19's default is a PIE).
    link_flags = ["-no-pie"] if {"-fno-pic", "-fno-pie"} & set(flags) else []
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    shared = os.path.join(work, "repo-shared")
    # C++ tests in every folder below (g++.dg's own layout), C tests as
    # gcc.c-torture has them (builtins/ needs its helpers, left out).
    tests = sorted(
        path
        for pattern in ("*.c", "ieee/*.c", "**/*.C", "**/*.cc", "**/*.cpp")
        for path in glob.glob(os.path.join(a.tests, pattern), recursive=True)
    )
    # repocc++ beside repocc, as the tests' drivers install it.
    repocc_cxx = os.path.join(os.path.dirname(os.path.abspath(a.repocc)), "repocc++")
    env = dict(os.environ, REPOCC_DIR=shared, REPOCC_UNIT_CACHE="0")

    def is_cxx(source):
        return not source.endswith(".c")

    def compile_with(tool, source, out, repo=None):
        e = env if repo is None else dict(env, REPOCC_DIR=repo)
        if tool == "clang":
            cc = "clang++-19" if is_cxx(source) else "clang-19"
        else:
            cc = repocc_cxx if is_cxx(source) else a.repocc
        try:
            return subprocess.run(
                [cc] + flags + ["-c", source, "-o", out],
                capture_output=True,
                env=e,
                timeout=a.compile_timeout,
            )
        except subprocess.TimeoutExpired:
            return None

    def check(i, source):
        n = os.path.join(work, str(i))
        name = os.path.relpath(source, a.tests)
        c = compile_with("clang", source, n + ".clang.o")
        if c is None:
            return "timed out", None
        r = compile_with("repocc", source, n + ".shared.o")
        if r is None:
            return "failed", f"{name}: clang-19 compiles it, repocc took longer than {a.compile_timeout:.0f} s"
        if (c.returncode == 0) != (r.returncode == 0):
            return "failed", f"{name}: clang-19 exit {c.returncode}, repocc exit {r.returncode}: {r.stderr.decode(errors='replace')[-400:]}"
        if c.returncode != 0:
            return "refused", None
        problems = []
        # repocc says nothing clang-19 does not: a unit it could not take
        # through the repository and handed to clang ("... with clang
        # instead") builds a right program, and is still a bug.
        if r.stderr != c.stderr:
            problems.append(f"{name}: repocc printed what clang-19 did not: {r.stderr.decode(errors='replace')[-400:]}")
        linked = []
        for tag in ("clang", "shared"):
            linker = "clang++-19" if is_cxx(source) else "clang-19"
            link = subprocess.run([linker] + link_flags + [n + f".{tag}.o", "-o", n + f".{tag}", "-lm"], capture_output=True)
            linked.append(link.returncode == 0)
        outcome = "compiled"
        if linked[0] != linked[1]:
            problems.append(f"{name}: links with one compiler only")
        elif all(linked):
            expected = run(n + ".clang", work)
            if expected[0] == 0:
                outcome = "ran"
                got = run(n + ".shared", work)
                stable = run(n + ".clang", work) == expected
                if got[0] != 0 or (stable and got[1] != expected[1]):
                    problems.append(f"{name}: clang-19's program exits 0, repocc's {got[0]}" + ("" if got[0] != 0 else " and prints otherwise"))
        empty = n + ".repo"
        cold = compile_with("repocc", source, n + ".cold.o", repo=empty)
        shutil.rmtree(empty, ignore_errors=True)
        if cold is None or cold.returncode != 0:
            problems.append(f"{name}: the compile into an empty repository failed")
        elif open(n + ".cold.o", "rb").read() != open(n + ".shared.o", "rb").read():
            problems.append(f"{name}: the object from the shared repository is not the cold one")
        if problems:
            return "failed", "\n".join(problems)
        for suffix in (".clang.o", ".shared.o", ".cold.o", ".clang", ".shared"):
            if os.path.exists(n + suffix):
                os.unlink(n + suffix)
        return outcome, None

    counts = {}
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for outcome, message in pool.map(lambda t: check(*t), enumerate(tests)):
            counts[outcome] = counts.get(outcome, 0) + 1
            if message:
                print(message, flush=True)
    print(
        f"torture {a.flags}: {len(tests)} tests; ran {counts.get('ran', 0)}, compiled only "
        f"{counts.get('compiled', 0)}, refused by both {counts.get('refused', 0)}, "
        f"too slow for clang-19 {counts.get('timed out', 0)}, failed {counts.get('failed', 0)}"
    )
    return 1 if counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
