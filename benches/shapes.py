#!/usr/bin/env python3
"""Units of unusual shape, clang-19 against repocc: CPU time and peak memory.

Real projects have units that fmt's do not resemble: tables of thousands of
string literals (double-conversion's tests), long chains of calls or of
constants pointing to each other, one function into which hundreds of the
source's own functions are inlined. What repocc adds per definition, or per
pair of definitions, shows there first. Each shape is generated at the
sizes given, compiled once by clang-19 and once by repocc into an empty
repository (unit cache off), and printed with the ratio.

    benches/shapes.py [--sizes 2000,8000] [--flags='-O2 -g'] [--shapes calls,constants]

CPU is user + system of the compiler process and the processes it ran
(a fallback's clang-19), memory the largest peak resident set among them.
"""
import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def calls(n):
    """n functions, each calling the next (a call chain)."""
    lines = [f"int f{n}(int x) {{ return x; }}"]
    for i in range(n - 1, -1, -1):
        lines.append(
            f"__attribute__((noinline)) int f{i}(int x) {{ return f{i + 1}(x * 3 + {i}) + {i % 7}; }}"
        )
    lines.append("int main(void) { return f0(1) & 1; }")
    return "c", "\n".join(lines)


def constants(n):
    """n constants, each pointing to the next (a linked table)."""
    lines = ["struct node { const struct node *next; int v; };", f"const struct node n{n} = {{0, {n}}};"]
    for i in range(n - 1, -1, -1):
        lines.append(f"const struct node n{i} = {{&n{i + 1}, {i}}};")
    lines.append("int walk(void) { int s = 0; for (const struct node *p = &n0; p; p = p->next) s += p->v; return s; }")
    return "c", "\n".join(lines)


def literals(n):
    """One array of n string literals (a table of test vectors)."""
    rows = ",\n".join(f'  {{{i}.5, "{i}.5e{i % 300}"}}' for i in range(n))
    return "cc", (
        "struct row { double value; const char *text; };\n"
        f"extern const row table[] = {{\n{rows}\n}};\n"
        f"int count() {{ return sizeof(table) / sizeof(table[0]); }}\n"
    )


def instances(n):
    """One function constructing n instances of a class template of the unit."""
    body = "\n".join(f"  all.emplace_back(new D<{i}>());" for i in range(n))
    return "cc", (
        "#include <memory>\n#include <vector>\n"
        "struct Base { virtual ~Base() {} virtual int get() const = 0; };\n"
        "template <int N> struct D : Base { std::vector<int> v;\n"
        "  int get() const override { int s = N; for (int x : v) s += x; return s; } };\n"
        f"int run() {{ std::vector<std::unique_ptr<Base>> all;\n{body}\n"
        "  int s = 0; for (auto &p : all) s += p->get(); return s; }\n"
    )


SHAPES = {"calls": calls, "constants": constants, "literals": literals, "instances": instances}


def measure(args, env):
    """CPU time (user + system) and peak resident memory (MB) of one run."""
    with tempfile.TemporaryFile() as err:
        child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        text = err.read().decode(errors="replace")
    if child.returncode != 0:
        sys.exit(f"{shlex.join(args)} failed:\n{text[:2000]}")
    notes = [line for line in text.splitlines() if "warning" in line]
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, notes


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="2000,8000")
    ap.add_argument("--flags", default="-O2 -g")
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--repocc", type=Path, default=ROOT / "target/release/repocc")
    a = ap.parse_args()
    flags = shlex.split(a.flags)
    print(f"flags: {a.flags}")
    print(f"{'shape':<10} {'n':>7} {'clang CPU':>10} {'repocc CPU':>11} {'ratio':>6} {'clang MB':>9} {'repocc MB':>10}")
    with tempfile.TemporaryDirectory(prefix="repocc-shapes-") as tmp:
        for name in a.shapes.split(","):
            for n in (int(s) for s in a.sizes.split(",")):
                ext, text = SHAPES[name](n)
                src = Path(tmp) / f"{name}.{ext}"
                src.write_text(text)
                repo = Path(tmp) / "repo"
                subprocess.run(["rm", "-rf", str(repo)], check=True)
                env = dict(os.environ, REPOCC_DIR=str(repo), REPOCC_UNIT_CACHE="0")
                cxx = ext == "cc"
                clang = "clang++-19" if cxx else "clang-19"
                repocc = str(a.repocc) + ("++" if cxx else "")
                obj = str(Path(tmp) / "unit.o")
                c_cpu, c_mb, _ = measure([clang, *flags, "-c", str(src), "-o", obj], env)
                r_cpu, r_mb, notes = measure([repocc, *flags, "-c", str(src), "-o", obj], env)
                ratio = r_cpu / max(c_cpu, 1e-3)
                print(f"{name:<10} {n:>7} {c_cpu:>9.2f}s {r_cpu:>10.2f}s {ratio:>5.2f}x {c_mb:>9.0f} {r_mb:>10.0f}")
                for note in notes:
                    print(f"{'':<19}{note[:150]}")


if __name__ == "__main__":
    main()
