#!/usr/bin/env python3
"""Whole-build benchmark (prints figures; not a test).

Builds real projects with clang-19, ccache + clang-19 and repocc in the same
run and reports the build time of each scenario, as the median of several
runs and as a ratio to clang-19's time for the same scenario (the median,
over runs, of the ratio within one run: the tools take turns run by run,
so that a drift in the machine's speed reaches both sides of a ratio):

  cold        an empty cache / repository, a clean tree
  no-change   the same tree after `make clean` (or a new CMake build
              directory), the cache kept
  edit        one function edited in one source file, incremental `make`
  shift       ten comment lines added at the top of one large source file
              (every line of it moves), incremental `make`
  header      one definition edited in a header many files include,
              incremental `make`

for each flag set (`-O2`, `-O2 -g`, `-O0 -g`). The tool `repocc-df` is
repocc with `debug_fragments` on (units with `-g` use the repository),
`repocc-whole` with it off (clang compiles them, the unit cache keeps them);
`repocc-nb` is repocc without stored bodies for the optimizer's context
(`context_bodies` off), `repocc-kb` keeps them from a unit's first
compile on (`context_bodies` true; the default, "auto", from its second);
`repocc-fr` sends every unit through the repository (`fragments` true: C at
`-O0` too, which "auto" compiles whole). Only the build step is
timed (not CMake's or zlib's configure step). Projects: lua5.4 (make;
its header edit swaps the two stores of `setobj` in lobject.h, which most
functions use: a full recompile), zlib (configure + make), cjson (CMake),
sqlite3 (the amalgamation and its shell; no header scenario), fmtlib (C++,
CMake; slow, only when named).

After each tool's cold build the harness also counts the bytes of the
objects (`*.o`) and programs (ELF executables) left in the tree, and
`builds.md` lists them against clang-19's.

Writes `builds.md` (the table), `builds.dat` and, when gnuplot is present,
`builds.png` (ratios to clang-19) into the results directory
(`benches/results/` by default).

  python3 benches/builds.py                      # lua, cjson, sqlite; 3 runs
  python3 benches/builds.py --projects lua --runs 1 --flags=-O2 --out DIR
  python3 benches/builds.py --smoke --out DIR    # lua, -O2, one run (CI)
  python3 benches/builds.py --projects fmtlib --flags='-O2 -g' --tools clang,repocc,repocc-whole --runs 1 --cold-only
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FETCH = ROOT / "wrapper-tests" / "fetch.sh"
JOBS = os.cpu_count() or 2
FLAG_SETS = ["-O2", "-O2 -g", "-O0 -g"]
SCENARIOS = ["cold", "no-change", "edit", "shift", "header"]


def sh(cmd, cwd=None, env=None, quiet=True):
    r = subprocess.run(
        cmd,
        cwd=cwd,
        env=env,
        shell=isinstance(cmd, str),
        stdout=subprocess.PIPE if quiet else None,
        stderr=subprocess.STDOUT if quiet else None,
        text=True,
    )
    if r.returncode != 0:
        out = (r.stdout or "")[-3000:]
        raise SystemExit(f"bench: `{cmd}` failed in {cwd}:\n{out}")
    return r.stdout or ""


def fetch(kind, name="", *extra):
    """A cached source tree from wrapper-tests/fetch.sh (the same trees,
    unpacked the same way, as the wrapper tests use)."""
    fn = {
        "debian": f"fetch_debian_source {name} {' '.join(extra)}",
        "sqlite": "prepare_sqlite_amalgamation",
    }[kind]
    script = f'fail() {{ echo "$*" >&2; exit 1; }}; JOBS={JOBS}; source "{FETCH}"; {fn}'
    return Path(sh(["bash", "-c", script]).strip().splitlines()[-1])


def edit_file(path, old, new):
    text = path.read_text(errors="surrogateescape")
    if old not in text:
        raise SystemExit(f"bench: edit target not found in {path}: {old!r}")
    path.write_text(text.replace(old, new, 1), errors="surrogateescape")


class Tool:
    """How one compiler setup is named to make and CMake."""

    def __init__(self, name, work):
        self.name = name
        self.cache = work / f"cache-{name}"
        repocc = ROOT / "target" / "release" / "repocc"
        self.env = dict(os.environ)
        for k in list(self.env):
            if k.startswith("REPOCC_") or k.startswith("CCACHE_") or k in ("MAKEFLAGS", "MFLAGS"):
                del self.env[k]
        if name == "clang":
            self.cc, self.cxx, self.launcher = "clang-19", "clang++-19", None
        elif name == "ccache":
            self.cc, self.cxx, self.launcher = "clang-19", "clang++-19", "ccache"
            self.env["CCACHE_DIR"] = str(self.cache)
            self.env["CCACHE_MAXSIZE"] = "20G"
        else:  # repocc, repocc-df / repocc-whole (debug_fragments on / off), repocc-nb / repocc-kb (stored bodies never / always), repocc-fr (fragments on)
            bindir = work / "bin"
            bindir.mkdir(exist_ok=True)
            for n in ("repocc", "repocc++"):
                link = bindir / n
                if not link.exists():
                    link.symlink_to(repocc)
            self.cc, self.cxx, self.launcher = str(bindir / "repocc"), str(bindir / "repocc++"), None
            self.env["REPOCC_DIR"] = str(self.cache)
            self.env["REPOCC_MAX_SIZE"] = "0"
            if name == "repocc-df":
                self.env["REPOCC_DEBUG_FRAGMENTS"] = "1"
            if name == "repocc-whole":
                self.env["REPOCC_DEBUG_FRAGMENTS"] = "0"
            if name == "repocc-nb":
                self.env["REPOCC_CONTEXT_BODIES"] = "0"
            if name == "repocc-kb":
                self.env["REPOCC_CONTEXT_BODIES"] = "1"
            if name == "repocc-fr":
                self.env["REPOCC_FRAGMENTS"] = "1"

    def make_cc(self):
        return f"{self.launcher} {self.cc}" if self.launcher else self.cc

    def reset_cache(self):
        shutil.rmtree(self.cache, ignore_errors=True)
        self.cache.mkdir(mode=0o700, parents=True)


class Project:
    """A project's tree, its build steps and its edits."""

    name = ""
    has_header = True
    # The large source the shift scenario adds ten lines to.
    shift_file = ""

    def __init__(self, work, flags, tool):
        self.work, self.flags, self.tool = work, flags, tool
        self.tree = work / f"{self.name}-{tool.name}"

    def prepare(self):
        shutil.rmtree(self.tree, ignore_errors=True)
        shutil.copytree(self.source(), self.tree, symlinks=True)

    def shift(self, n):
        path = self.tree / self.shift_file
        text = path.read_text(errors="surrogateescape")
        block = "/*\n" + "".join(f" * shift {n}, line {i}\n" for i in range(8)) + " */\n"
        path.write_text(block + text, errors="surrogateescape")

    def timed(self, fn):
        t = time.monotonic()
        fn()
        return time.monotonic() - t


class Lua(Project):
    name = "lua"
    shift_file = "src/lparser.c"

    def source(self):
        return fetch("debian", "lua5.4", "--skip-patches")

    def build(self):
        cflags = f"{self.flags} -Wall -Wextra -DLUA_COMPAT_5_3 -DLUA_USE_LINUX"
        sh(
            ["make", f"-j{JOBS}", "linux", f"CC={self.tool.make_cc()} -std=gnu99", f"CFLAGS={cflags}"],
            cwd=self.tree,
            env=self.tool.env,
        )

    def clean(self):
        sh(["make", "clean"], cwd=self.tree, env=self.tool.env)

    def edit(self, n):
        edit_file(
            self.tree / "src/lapi.c",
            "  return cast_int(L->top - (L->ci->func + 1));",
            f"  return cast_int(L->top - (L->ci->func + 1)) + {n} - {n};\n  /* edit {n} */",
        )

    def edit_header(self, n):
        # The two stores of setobj swapped: the same behaviour, different
        # code in most functions of every unit (a full recompile).
        edit_file(
            self.tree / "src/lobject.h",
            "io1->value_ = io2->value_; settt_(io1, io2->tt_);",
            "settt_(io1, io2->tt_); io1->value_ = io2->value_;",
        )


class Zlib(Project):
    name = "zlib"
    shift_file = "deflate.c"

    def source(self):
        return fetch("debian", "zlib", "--skip-patches")

    def prepare(self):
        super().prepare()
        env = dict(self.tool.env, CC=self.tool.make_cc(), CFLAGS=self.flags)
        sh(["./configure"], cwd=self.tree, env=env)

    def build(self):
        sh(["make", f"-j{JOBS}"], cwd=self.tree, env=self.tool.env)

    def clean(self):
        sh(["make", "clean"], cwd=self.tree, env=self.tool.env)

    def edit(self, n):
        edit_file(
            self.tree / "adler32.c",
            "    /* split Adler-32 into component sums */",
            f"    /* split Adler-32 into component sums (edit {n}) */\n    adler += {n} - {n};",
        )

    def edit_header(self, n):
        # Every unit includes zutil.h; TRY_FREE's test spelled differently.
        edit_file(
            self.tree / "zutil.h",
            "#define TRY_FREE(s, p) {if (p) ZFREE(s, p);}",
            "#define TRY_FREE(s, p) {if ((p) != Z_NULL) ZFREE(s, p);}",
        )


class CMakeProject(Project):
    def configure(self):
        build = self.tree / "build"
        shutil.rmtree(build, ignore_errors=True)
        build.mkdir()
        args = [
            "cmake",
            "-G",
            "Unix Makefiles",
            "-DCMAKE_BUILD_TYPE=",
            f"-DCMAKE_C_FLAGS={self.flags}",
            f"-DCMAKE_CXX_FLAGS={self.flags}",
            f"-DCMAKE_C_COMPILER={self.tool.cc}",
            f"-DCMAKE_CXX_COMPILER={self.tool.cxx}",
        ] + self.cmake_args()
        if self.tool.launcher:
            args += [
                f"-DCMAKE_C_COMPILER_LAUNCHER={self.tool.launcher}",
                f"-DCMAKE_CXX_COMPILER_LAUNCHER={self.tool.launcher}",
            ]
        sh(args + [".."], cwd=build, env=self.tool.env)

    def prepare(self):
        super().prepare()
        self.configure()

    def build(self):
        sh(["make", f"-j{JOBS}"], cwd=self.tree / "build", env=self.tool.env)

    def clean(self):
        # A new build directory, as a CI job or a fresh checkout would have.
        self.configure()


class CJson(CMakeProject):
    name = "cjson"
    shift_file = "cJSON.c"

    def source(self):
        return fetch("debian", "cjson", "--skip-patches")

    def cmake_args(self):
        return ["-DENABLE_CJSON_UTILS=On", "-DENABLE_CJSON_TEST=On"]

    def edit(self, n):
        edit_file(
            self.tree / "cJSON.c",
            '    sprintf(version, "%i.%i.%i", CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH);',
            f'    sprintf(version, "%i.%i.%i-{n}", CJSON_VERSION_MAJOR, CJSON_VERSION_MINOR, CJSON_VERSION_PATCH);',
        )

    def edit_header(self, n):
        edit_file(self.tree / "cJSON.h", "#define CJSON_NESTING_LIMIT 1000", f"#define CJSON_NESTING_LIMIT {1000 + n}")


class Fmt(CMakeProject):
    name = "fmtlib"
    shift_file = "src/format.cc"

    def source(self):
        return fetch("debian", "fmtlib")

    def cmake_args(self):
        return ["-DFMT_DOC=OFF", "-DFMT_TEST=ON", "-DFMT_SYSTEM_HEADERS=OFF"]

    def edit(self, n):
        path = self.tree / "src/format.cc"
        text = path.read_text()
        path.write_text(text + f"\nnamespace fmt {{ int bench_edit_{n}() {{ return {n}; }} }}\n")

    def edit_header(self, n):
        path = self.tree / "include/fmt/format.h"
        text = path.read_text()
        marker = "FMT_BEGIN_NAMESPACE\n"
        if marker not in text:
            raise SystemExit("bench: fmt header edit target not found")
        path.write_text(text.replace(marker, marker + f"inline int bench_header_edit() {{ return {n}; }}\n", 1))


class Sqlite(Project):
    name = "sqlite"
    has_header = False
    shift_file = "sqlite3.c"

    def source(self):
        return fetch("sqlite")

    def prepare(self):
        shutil.rmtree(self.tree, ignore_errors=True)
        self.tree.mkdir(parents=True)
        src = self.source()
        for f in ("sqlite3.c", "sqlite3.h", "shell.c"):
            shutil.copy(src / f, self.tree / f)
        (self.tree / "Makefile").write_text(
            "all: sqlite3\n"
            "sqlite3: sqlite3.o shell.o\n\t$(CC) $(CFLAGS) sqlite3.o shell.o -lm -ldl -lpthread -o $@\n"
            "%.o: %.c sqlite3.h\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
            "clean:\n\trm -f *.o sqlite3\n"
        )

    def build(self):
        sh(["make", f"-j{JOBS}", f"CC={self.tool.make_cc()}", f"CFLAGS={self.flags}"], cwd=self.tree, env=self.tool.env)

    def clean(self):
        sh(["make", "clean"], cwd=self.tree)

    def edit(self, n):
        edit_file(
            self.tree / "sqlite3.c",
            "SQLITE_API const char *sqlite3_libversion(void){ return sqlite3_version; }",
            f'SQLITE_API const char *sqlite3_libversion(void){{ return "edit-{n}"; }}',
        )


PROJECTS = {"lua": Lua, "zlib": Zlib, "cjson": CJson, "sqlite": Sqlite, "fmtlib": Fmt}


def output_bytes(tree):
    """The bytes of the objects (`*.o`) and of the programs (ELF files with
    the executable bit, shared libraries left out) under `tree`."""
    objects = programs = 0
    for dirpath, _, files in os.walk(tree):
        for f in files:
            path = os.path.join(dirpath, f)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            if f.endswith(".o"):
                objects += os.path.getsize(path)
            elif os.access(path, os.X_OK) and not (f.endswith(".so") or ".so." in f):
                with open(path, "rb") as fh:
                    if fh.read(4) == b"\x7fELF":
                        programs += os.path.getsize(path)
    return objects, programs


def measure_run(project_cls, flags, tool, run, work, cold_only=False):
    """One run of every scenario with `tool` (or of the cold build alone):
    the time of each, and the bytes of the cold build's objects and
    programs (`sizes`)."""
    times = {}
    p = project_cls(work, flags, tool)
    tool.reset_cache()
    p.prepare()
    times["cold"] = p.timed(p.build)
    times["sizes"] = output_bytes(p.tree)
    if cold_only:
        shutil.rmtree(p.tree, ignore_errors=True)
        return times
    p.clean()
    times["no-change"] = p.timed(p.build)
    p.edit(run + 1)
    times["edit"] = p.timed(p.build)
    p.shift(run + 1)
    times["shift"] = p.timed(p.build)
    if p.has_header:
        p.edit_header(run + 1)
        times["header"] = p.timed(p.build)
    shutil.rmtree(p.tree, ignore_errors=True)
    return times


def measure(project_cls, flags, tools, runs, work, cold_only=False):
    """Per tool, per scenario, one time per run. The tools take turns run
    by run (clang's first run, then repocc's, then clang's second...): this
    machine's speed drifts by a fifth over minutes, and all of one tool's
    runs before all of the other's turned that drift into the ratio."""
    times = {t: {s: [] for s in SCENARIOS + ["sizes"]} for t in tools}
    setups = {t: Tool(t, work) for t in tools}
    for run in range(runs):
        for t in tools:
            for s, v in measure_run(project_cls, flags, setups[t], run, work, cold_only).items():
                times[t][s].append(v)
    return times


def paired_ratio(times, tool, scenario):
    """The median over runs of tool's time over clang's in the same run."""
    ours, base = times[tool][scenario], times["clang"][scenario]
    return statistics.median(o / b for o, b in zip(ours, base))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--projects", default="lua,cjson,sqlite")
    ap.add_argument("--flags", action="append", help="a flag set (repeatable); default: -O2, -O2 -g, -O0 -g")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", default="clang,ccache,repocc")
    ap.add_argument("--out", default=str(ROOT / "benches" / "results"))
    ap.add_argument("--smoke", action="store_true", help="lua, -O2, one run (for CI)")
    ap.add_argument("--cold-only", action="store_true", help="the cold build only (fmtlib's take minutes each)")
    a = ap.parse_args()
    if a.smoke:
        a.projects, a.flags, a.runs = "lua", ["-O2"], 1
    flag_sets = a.flags or FLAG_SETS
    tools = a.tools.split(",")
    if not (ROOT / "target/release/repocc").exists():
        raise SystemExit("bench: build repocc first (cargo build --release)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, sizes = [], []
    with tempfile.TemporaryDirectory(prefix="repocc-bench-") as tmp:
        work = Path(tmp)
        for pname in a.projects.split(","):
            cls = PROJECTS[pname]
            for flags in flag_sets:
                times = measure(cls, flags, tools, a.runs, work, a.cold_only)
                medians = {}
                for tool in tools:
                    # The last cold build's output (the same every run).
                    sizes.append((pname, flags, tool, times[tool].pop("sizes")[-1]))
                    medians[tool] = {s: statistics.median(v) for s, v in times[tool].items() if v}
                    runs = ", ".join(
                        f"{s} " + "/".join(f"{x:.2f}" for x in v) + "s" for s, v in times[tool].items() if v
                    )
                    print(f"{pname} {flags!r} {tool}: {runs}", flush=True)
                for s in SCENARIOS:
                    if not times.get("clang", {}).get(s):
                        continue
                    ratios = {t: paired_ratio(times, t, s) for t in tools if t != "clang" and times[t][s]}
                    rows.append((pname, flags, s, {tool: medians[tool].get(s) for tool in tools}, ratios))
    write_results(rows, sizes, tools, out, a)


def size_lines(sizes):
    """The table of the cold builds' objects and programs, each against
    clang-19's where it was measured."""
    base = {(p, f): b for p, f, t, b in sizes if t == "clang"}
    lines = [
        "",
        "Bytes of the objects (`*.o`) and programs the cold build left in the tree:",
        "",
        "| project, flags | tool | objects | programs |",
        "|---|---|---|---|",
    ]
    for pname, flags, tool, (objects, programs) in sizes:
        ref = base.get((pname, flags))

        def cell(v, i):
            if ref is None or tool == "clang" or not ref[i]:
                return f"{v:,}"
            return f"{v:,} ({v / ref[i]:.3f}x)"

        lines.append(f"| {pname}, `{flags}` | {tool} | {cell(objects, 0)} | {cell(programs, 1)} |")
    return lines


def write_results(rows, sizes, tools, out, a):
    lines = [
        "# Whole-build benchmark",
        "",
        f"`python3 benches/builds.py --projects {a.projects} --runs {a.runs}"
        + "".join(f" --flags='{f}'" for f in (a.flags or []))
        + (" --cold-only" if a.cold_only else "")
        + f"` on {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}: build step only, median of {a.runs} run(s);"
        " in brackets, the median over runs of the ratio to clang-19's time for the same scenario in the same run"
        " (the tools take turns, run by run).",
        "",
        "| project | flags | scenario | " + " | ".join(tools) + " |",
        "|---|---|---|" + "---|" * len(tools),
    ]
    dat = ["# label " + " ".join(t for t in tools if t != "clang")]
    for pname, flags, scen, med, ratios in rows:
        cells = []
        for t in tools:
            v = med.get(t)
            cells.append("–" if v is None else f"{v:.2f} s ({ratios[t]:.2f}x)" if t != "clang" else f"{v:.2f} s")
        lines.append(f"| {pname} | `{flags}` | {scen} | " + " | ".join(cells) + " |")
        label = f"{pname}{flags.replace(' ', '')}-{scen}"
        dat.append(label + " " + " ".join(f"{ratios.get(t, 0):.4f}" for t in tools if t != "clang"))
    lines += size_lines(sizes)
    (out / "builds.md").write_text("\n".join(lines) + "\n")
    (out / "builds.dat").write_text("\n".join(dat) + "\n")
    print("\n".join(lines))
    if shutil.which("gnuplot") and len(rows) > 0:
        others = [t for t in tools if t != "clang"]
        plot = [
            "set terminal png size 1400,700 noenhanced",
            f"set output '{out / 'builds.png'}'",
            "set style data histogram",
            "set style histogram clustered gap 1",
            "set style fill solid border -1",
            "set ylabel 'build time / clang-19 build time'",
            "set xtics rotate by -45 font ',8'",
            "set key top left",
            "set grid ytics",
            "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2",
            "plot " + ", ".join(
                f"'{out / 'builds.dat'}' using {i + 2}:xtic(1) title '{t}'" for i, t in enumerate(others)
            ),
        ]
        subprocess.run(["gnuplot"], input="\n".join(plot), text=True, check=False)
        print(f"chart: {out / 'builds.png'}")


if __name__ == "__main__":
    main()
