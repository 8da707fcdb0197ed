#!/usr/bin/env python3
"""Program and library sizes, repocc against clang-19 (prints figures; not a test).

Builds the programs and libraries of issue 11's table from Debian's
sources, once with clang-19 and once with repocc (a fresh repository),
at the projects' own flags, and prints for each: the size of its `.text`
sections (a program's `.text`; a library's `.text*` sections summed over
its members) and the text column of `size -t` (code, read-only data and
unwind tables), each with repocc's ratio to clang-19's.

  lua5.4          `lua` (`make linux`, -O2, as benches/runtime.py builds it)
  zstd            `programs/zstd` (`make -C programs zstd`, its flags)
  libzstd.a       `make -C lib libzstd.a` (its flags)
  duktape         `duk` (-O2, as benches/runtime.py builds it)
  libyaml-cpp.a   CMake Release, `make yaml-cpp`
  libleveldb.a    CMake Release, `make leveldb`
  libjpeg.a       libjpeg-turbo, CMake Release without SIMD (no nasm), `make jpeg-static`
  redis-server    `make -C src redis-server MALLOC=libc`
  speedtest1      sqlite3's, -O2 (as benches/runtime.py builds it)

  python3 benches/sizes.py                      # all of them
  python3 benches/sizes.py --programs lua,leveldb --out DIR
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import builds  # noqa: E402  (fetching and tools)
import runtime  # noqa: E402  (programs built as the run-time benchmark builds them)

ROOT = builds.ROOT


def sections(path):
    """(sum of `.text*` sections, `size` text column) of an object, a
    program or an archive."""
    text = 0
    for line in builds.sh(["size", "-A", str(path)]).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".text") and parts[1].isdigit():
            text += int(parts[1])
    total = builds.sh(["size", "-t", str(path)]).strip().splitlines()[-1].split()
    return text, int(total[0])


def fresh_tree(work, tool, package, *extra):
    tree = work / f"{package}-{tool.name}"
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(builds.fetch("debian", package, *extra), tree, symlinks=True)
    return tree


def cmake_release(tree, tool, args, target):
    build = tree / "build"
    build.mkdir()
    builds.sh(
        ["cmake", "-G", "Unix Makefiles", "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_C_COMPILER={tool.cc}", f"-DCMAKE_CXX_COMPILER={tool.cxx}", *args, ".."],
        cwd=build, env=tool.env,
    )
    builds.sh(["make", f"-j{builds.JOBS}", target], cwd=build, env=tool.env)
    return build


def from_runtime(cls):
    def build(work, tool):
        p = cls(work, "-O2", tool)
        p.build()
        return p.program
    return build


def zstd_program(work, tool):
    tree = fresh_tree(work, tool, "libzstd")
    builds.sh(["make", f"-j{builds.JOBS}", "-C", "programs", "zstd", f"CC={tool.make_cc()}"],
              cwd=tree, env=tool.env)
    return tree / "programs" / "zstd"


def libzstd(work, tool):
    tree = fresh_tree(work, tool, "libzstd")
    builds.sh(["make", f"-j{builds.JOBS}", "-C", "lib", "libzstd.a", f"CC={tool.make_cc()}"],
              cwd=tree, env=tool.env)
    return tree / "lib" / "libzstd.a"


def yaml_cpp(work, tool):
    tree = fresh_tree(work, tool, "yaml-cpp")
    build = cmake_release(tree, tool, ["-DYAML_CPP_BUILD_TESTS=OFF", "-DYAML_CPP_BUILD_TOOLS=OFF"],
                          "yaml-cpp")
    return build / "libyaml-cpp.a"


def leveldb(work, tool):
    tree = fresh_tree(work, tool, "leveldb")
    build = cmake_release(tree, tool, ["-DLEVELDB_BUILD_TESTS=OFF", "-DLEVELDB_BUILD_BENCHMARKS=OFF"],
                          "leveldb")
    return build / "libleveldb.a"


def libjpeg(work, tool):
    tree = fresh_tree(work, tool, "libjpeg-turbo")
    build = cmake_release(tree, tool, ["-DWITH_SIMD=0"], "jpeg-static")
    return build / "libjpeg.a"


def redis(work, tool):
    tree = fresh_tree(work, tool, "redis")
    builds.sh(["make", f"-j{builds.JOBS}", "-C", "src", "redis-server", "MALLOC=libc",
               f"CC={tool.make_cc()}", "V=1"], cwd=tree, env=tool.env)
    return tree / "src" / "redis-server"


PROGRAMS = {
    "lua": from_runtime(runtime.Lua),
    "zstd": zstd_program,
    "libzstd": libzstd,
    "duktape": from_runtime(runtime.Duktape),
    "yamlcpp": yaml_cpp,
    "leveldb": leveldb,
    "libjpeg": libjpeg,
    "redis": redis,
    "speedtest1": from_runtime(runtime.Sqlite),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--programs", default=",".join(PROGRAMS))
    ap.add_argument("--out", default=str(ROOT / "benches" / "results"))
    a = ap.parse_args()
    if not (ROOT / "target/release/repocc").exists():
        raise SystemExit("bench: build repocc first (cargo build --release)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="repocc-sizes-") as tmp:
        work = Path(tmp)
        for name in a.programs.split(","):
            if name not in PROGRAMS:
                raise SystemExit(f"bench: no program {name!r} (known: {', '.join(PROGRAMS)})")
            got = {}
            for tool_name in ("clang", "repocc"):
                tool = builds.Tool(tool_name, work)
                tool.reset_cache()
                got[tool_name] = sections(PROGRAMS[name](work, tool))
            (ct, cs), (rt, rs) = got["clang"], got["repocc"]
            print(f"{name}: .text {ct} / {rt} ({rt / ct:.3f}x); size text {cs} / {rs} ({rs / cs:.3f}x)",
                  flush=True)
            rows.append((name, ct, rt, cs, rs))
            for tool_name in ("clang", "repocc"):
                for tree in work.glob(f"*-{tool_name}"):
                    shutil.rmtree(tree, ignore_errors=True)
    lines = [
        "# Program and library sizes",
        "",
        f"`python3 benches/sizes.py --programs {a.programs}`, {time.strftime('%Y-%m-%d')}: "
        "`.text` sections (summed over a library's members) and the text column of `size -t` "
        "(code, read-only data, unwind tables); in brackets, the ratio to clang-19's.",
        "",
        "| program | clang-19 `.text` | repocc `.text` | clang-19 `size` text | repocc `size` text |",
        "|---|---|---|---|---|",
    ]
    for name, ct, rt, cs, rs in rows:
        lines.append(f"| {name} | {ct:,} | {rt:,} ({rt / ct:.3f}x) | {cs:,} | {rs:,} ({rs / cs:.3f}x) |")
    (out / "sizes.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
