#!/usr/bin/env python3
"""Run-time benchmark (prints figures; not a test).

Builds real programs with clang-19 and with repocc, from the same sources
with the same flags, then runs a workload with each build several times,
alternating between the builds, and reports the median run time of each
and repocc's ratio to clang-19's, with the size of each program's `.text`.
Run it on a quiet machine: a ratio is only as good as the noise allows.

Programs and workloads:

  lua     lua5.4's `lua` (`make linux`), running benches/workloads/cpu.lua
          (recursion, tables, sorting, string building and patterns)
  sqlite  sqlite3's `speedtest1` (Debian's source; the amalgamation), run
          on an in-memory database (`--size 40`)
  zstd    zstd's `zstd` program (Debian's libzstd source, `make -C
          programs zstd`), compressing at level 6 and decompressing a
          corpus of sqlite3.c copies (45 MB)
  duktape duktape's `duk` (Debian's source: src/duktape.c and the
          example command line), running benches/workloads/cpu.js
  yamlcpp yaml-cpp's `read` tool (Debian's source, CMake, C++), parsing a
          generated 5 MB document ten times

  python3 benches/runtime.py                         # all five, 7 runs
  python3 benches/runtime.py --programs lua --runs 5 --out DIR
  python3 benches/runtime.py --instructions          # and instructions executed

With `--instructions`, each build also runs its workload once under
valgrind's callgrind (Debian's `valgrind`, about 50 times slower), and the
table gets the instructions executed: a figure the machine's noise does
not move, where run times on a shared VM vary by tens of percent.
"""

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import builds  # noqa: E402  (the build benchmark's fetching and tools)

ROOT = builds.ROOT
WORKLOADS = ROOT / "benches" / "workloads"


def text_size(program):
    """The size of the program's `.text` section, in bytes."""
    out = builds.sh(["size", "-A", str(program)])
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == ".text":
            return int(parts[1])
    return 0


class Program:
    """How one program is built (into `tree`) and run."""

    name = ""

    def __init__(self, work, flags, tool):
        self.work, self.flags, self.tool = work, flags, tool
        self.tree = work / f"{self.name}-{tool.name}"

    def fresh_tree(self, package):
        """A fresh copy of Debian's source of `package` to build in."""
        shutil.rmtree(self.tree, ignore_errors=True)
        shutil.copytree(builds.fetch("debian", package), self.tree, symlinks=True)

    def instructions(self):
        """Instructions executed by one run of the workload (callgrind)."""
        # Every process of the workload (zstd's is a shell running two).
        r = subprocess.run(["valgrind", "--tool=callgrind", "--trace-children=yes",
                            "--callgrind-out-file=/dev/null", *self.command()],
                           cwd=self.tree, env=self.tool.env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        counts = [int(line.split("Collected :")[1].split()[0])
                  for line in r.stderr.splitlines() if "Collected :" in line]
        if not counts:
            raise SystemExit(f"bench: no instruction count from callgrind for {self.name}")
        return sum(counts)

    def run(self):
        t = time.monotonic()
        subprocess.run(self.command(), cwd=self.tree, env=self.tool.env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return time.monotonic() - t


class Lua(Program):
    name = "lua"

    def build(self):
        p = builds.Lua(self.work, self.flags, self.tool)
        p.tree = self.tree
        p.prepare()
        p.build()
        self.program = self.tree / "src" / "lua"

    def command(self):
        return [str(self.program), str(WORKLOADS / "cpu.lua")]


class Sqlite(Program):
    name = "sqlite"

    def build(self):
        amalgamation = builds.fetch("sqlite")
        source = builds.fetch("debian", "sqlite3", "--skip-patches")
        shutil.rmtree(self.tree, ignore_errors=True)
        self.tree.mkdir(parents=True)
        for f in ("sqlite3.c", "sqlite3.h"):
            shutil.copy(amalgamation / f, self.tree / f)
        shutil.copy(source / "test" / "speedtest1.c", self.tree / "speedtest1.c")
        builds.sh(
            [self.tool.cc, *self.flags.split(), "-I.", "speedtest1.c", "sqlite3.c",
             "-o", "speedtest1", "-lm", "-ldl", "-lpthread"],
            cwd=self.tree, env=self.tool.env,
        )
        self.program = self.tree / "speedtest1"

    def command(self):
        return [str(self.program), "--size", "40", ":memory:"]


class Zstd(Program):
    name = "zstd"

    def build(self):
        self.fresh_tree("libzstd")
        builds.sh(
            ["make", f"-j{builds.JOBS}", "-C", "programs", "zstd",
             f"CC={self.tool.make_cc()}", f"CFLAGS={self.flags}"],
            cwd=self.tree, env=self.tool.env,
        )
        self.program = self.tree / "programs" / "zstd"
        corpus = self.work / "zstd-corpus"
        if not corpus.exists():
            text = (builds.fetch("sqlite") / "sqlite3.c").read_bytes()
            corpus.write_bytes(text * 5)
        self.corpus = corpus

    def command(self):
        out = self.tree / "corpus.zst"
        return ["sh", "-c",
                f"'{self.program}' -q -f -6 '{self.corpus}' -o '{out}' && "
                f"'{self.program}' -q -d -f '{out}' -o /dev/null"]


class Duktape(Program):
    name = "duktape"

    def build(self):
        self.fresh_tree("duktape")
        builds.sh(
            [self.tool.cc, *self.flags.split(), "-Isrc", "-Iexamples/cmdline",
             "-Iextras/print-alert", "-DDUK_CMDLINE_PRINTALERT_SUPPORT", "src/duktape.c",
             "examples/cmdline/duk_cmdline.c", "extras/print-alert/duk_print_alert.c",
             "-o", "duk", "-lm"],
            cwd=self.tree, env=self.tool.env,
        )
        self.program = self.tree / "duk"

    def command(self):
        return [str(self.program), str(WORKLOADS / "cpu.js")]


class YamlCpp(Program):
    name = "yamlcpp"

    def build(self):
        self.fresh_tree("yaml-cpp")
        build = self.tree / "build"
        build.mkdir()
        builds.sh(
            ["cmake", "-G", "Unix Makefiles", "-DCMAKE_BUILD_TYPE=",
             f"-DCMAKE_CXX_COMPILER={self.tool.cxx}", f"-DCMAKE_CXX_FLAGS={self.flags}",
             "-DYAML_CPP_BUILD_TESTS=OFF", "-DYAML_CPP_BUILD_TOOLS=ON", ".."]
            + ([f"-DCMAKE_CXX_COMPILER_LAUNCHER={self.tool.launcher}"] if self.tool.launcher else []),
            cwd=build, env=self.tool.env,
        )
        builds.sh(["make", f"-j{builds.JOBS}", "yaml-cpp-read"], cwd=build, env=self.tool.env)
        self.program = build / "util" / "read"
        document = self.work / "document.yaml"
        if not document.exists():
            lines = []
            for i in range(20000):
                lines.append(f"item{i}:\n  name: \"entry {i}\"\n  values: [{i}, {i * 3}, {i % 7}]\n"
                             f"  nested: {{a: {i}, b: text-{i}, c: [x, y, z]}}\n  note: |\n    line one {i}\n    line two\n")
            document.write_text("".join(lines))
        self.document = document

    def command(self):
        return [str(self.program), "-n", "10", "-c", str(self.document)]


PROGRAMS = {"lua": Lua, "sqlite": Sqlite, "zstd": Zstd, "duktape": Duktape, "yamlcpp": YamlCpp}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", default="lua,sqlite,zstd,duktape,yamlcpp")
    ap.add_argument("--flags", default="-O2")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--out", default=str(ROOT / "benches" / "results"))
    ap.add_argument("--instructions", action="store_true",
                    help="also count the instructions one run executes (valgrind)")
    a = ap.parse_args()
    if a.instructions and not shutil.which("valgrind"):
        raise SystemExit("bench: --instructions needs valgrind (apt-get install valgrind)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="repocc-runtime-") as tmp:
        work = Path(tmp)
        for pname in a.programs.split(","):
            built = {}
            for tool_name in ("clang", "repocc"):
                tool = builds.Tool(tool_name, work)
                tool.reset_cache()
                p = PROGRAMS[pname](work, a.flags, tool)
                p.build()
                p.run()  # warm-up: page cache, first-run effects
                built[tool_name] = p
            times = {t: [] for t in built}
            for _ in range(a.runs):
                for t, p in built.items():
                    times[t].append(p.run())
            med = {t: statistics.median(v) for t, v in times.items()}
            sizes = {t: text_size(p.program) for t, p in built.items()}
            counts = {t: p.instructions() for t, p in built.items()} if a.instructions else None
            if counts:
                print(f"{pname}: instructions {counts['clang']:,} / {counts['repocc']:,} "
                      f"({counts['repocc'] / counts['clang']:.4f}x)", flush=True)
            print(f"{pname}: clang {med['clang']:.3f}s, repocc {med['repocc']:.3f}s "
                  f"({med['repocc'] / med['clang']:.3f}x); .text {sizes['clang']} / {sizes['repocc']} "
                  f"({sizes['repocc'] / sizes['clang']:.3f}x); runs: "
                  + ", ".join(f"{t} " + " ".join(f"{x:.2f}" for x in v) for t, v in times.items()),
                  flush=True)
            rows.append((pname, med, sizes, counts))
    lines = [
        "# Run-time benchmark",
        "",
        f"`python3 benches/runtime.py --programs {a.programs} --flags='{a.flags}' --runs {a.runs}"
        + (" --instructions" if a.instructions else "") + "`, "
        f"{time.strftime('%Y-%m-%d')}: median run time of {a.runs} alternating runs of each build "
        "(after one warm-up run), and `.text` sizes"
        + ("; instructions executed by one run (callgrind)" if a.instructions else "")
        + "; in brackets, the ratio to clang-19's.",
        "",
        "| program | clang-19 | repocc | clang-19 `.text` | repocc `.text` |"
        + (" clang-19 instructions | repocc instructions |" if a.instructions else ""),
        "|---|---|---|---|---|" + ("---|---|" if a.instructions else ""),
    ]
    for pname, med, sizes, counts in rows:
        line = (
            f"| {pname} | {med['clang']:.3f} s | {med['repocc']:.3f} s ({med['repocc'] / med['clang']:.3f}x) "
            f"| {sizes['clang']:,} | {sizes['repocc']:,} ({sizes['repocc'] / sizes['clang']:.3f}x) |"
        )
        if counts:
            line += (f" {counts['clang']:,} | {counts['repocc']:,} "
                     f"({counts['repocc'] / counts['clang']:.4f}x) |")
        lines.append(line)
    (out / "runtime.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
