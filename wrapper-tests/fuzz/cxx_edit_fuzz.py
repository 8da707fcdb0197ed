#!/usr/bin/env python3
"""Edit fuzzing for C++ units (DESIGN.md, invariant 4), by the objects.

Takes some units of a CMake build (its compile_commands.json), compiles
them once into a repository (the *warm* one), then for each round applies
random edits to the units' sources and to the project's headers, and
compiles every unit again twice: into the warm repository, which holds
every earlier round's fragments, and into an empty one (cold). The two
compiles must end alike (exit code and diagnostics) and, where they
succeed, give the same object byte for byte. At the end the pristine
sources are compiled warm once more and must give the first objects.

    python3 cxx_edit_fuzz.py --build DIR --compiler REPOCCXX --flags="-O2 -g"
        --headers DIR --work DIR [--warm-repo DIR] --seed S --rounds N UNIT...

UNIT: a source path ending (`src/format.cc`), as recompile.py takes it.

The edits, chosen to move what the repository keys on:
  lines    comment lines inserted after a top-level `}` (moves every line
           below: relative debug lines, __LINE__)
  literal  an integer literal in a function body of a unit or a header
           changed (one function's code, or a header's inline function or
           template's, which every unit that instantiates it shares)
  append   a function that instantiates a random standard template
           (std::vector, std::map, std::set, std::unique_ptr, std::sort)
           appended to a unit: new instances beside stored ones
  header   comment lines inserted in a header (moves the lines of
           everything it defines, in every unit that includes it)
  revert   a file back to its pristine text (what an earlier round
           stored comes back)
An edit may make a unit fail to compile; then both compiles must fail
with the same diagnostics.

Everything is seeded: the seed is printed, `--seed S --rounds N` replays.
A differing object is kept in the work directory (`bad-R-UNIT.warm.o`,
`.cold.o`) with the edited files that gave it (`bad-R-UNIT.sources/`,
under their paths: copy them over the tree to compile it again). The
sources are restored at the end.
"""

import argparse
import concurrent.futures
import filecmp
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from recompile import unit_command  # noqa: E402

TYPES = ["int", "long", "double", "short", "unsigned", "std::string", "char", "float"]
INTEGER = re.compile(r"(?<![\w.])[1-9]\d{0,3}(?![\w.'])")


def log(*args):
    print(*args, flush=True)


def commands_for(build, flags, compiler, units):
    """Each unit's (name, file, directory, command without its output), see
    recompile.py's `unit_command`."""
    with open(Path(build) / "compile_commands.json") as f:
        entries = json.load(f)
    out = []
    for want in units:
        found = unit_command(entries, want, compiler, flags)
        if found is None:
            raise SystemExit(f"no command compiles {want}")
        e, cmd = found
        out.append((want, e["file"], e["directory"], cmd))
    return out


class Editor:
    def __init__(self, rng, sources, headers):
        self.rng = rng
        self.sources = sources
        self.headers = headers
        self.pristine = {f: Path(f).read_text() for f in sources + headers}

    def restore(self):
        for f, text in self.pristine.items():
            if Path(f).read_text() != text:
                Path(f).write_text(text)

    def keep_edited(self, into):
        """Copies the files that differ from their pristine text into
        `into`, under their paths, so that a difference can be compiled
        again by hand."""
        for f, text in self.pristine.items():
            now = Path(f).read_text()
            if now != text:
                kept = Path(into) / os.path.relpath(f)
                kept.parent.mkdir(parents=True, exist_ok=True)
                kept.write_text(now)

    def instance(self, r, n):
        t, u = self.rng.choice(TYPES), self.rng.choice(TYPES)
        k = self.rng.randrange(5)
        if k == 0:
            return "#include <vector>\n", f"std::vector<{t}> v(3); return (int)v.size();"
        if k == 1:
            return ("#include <map>\n#include <string>\n",
                    f"std::map<{t}, {u}> m; m[{t}()] = {u}(); return (int)m.size();")
        if k == 2:
            return ("#include <set>\n#include <string>\n",
                    f"std::set<{t}> s; s.insert({t}()); return (int)s.count({t}());")
        if k == 3:
            return ("#include <memory>\n#include <string>\n",
                    f"auto p = std::make_unique<{t}>(); return p != nullptr;")
        return ("#include <algorithm>\n#include <vector>\n#include <string>\n",
                f"std::vector<{t}> v({n % 7}); std::sort(v.begin(), v.end()); return (int)v.size();")

    def edit(self, r):
        """Applies one random edit; returns what it did, or None."""
        rng = self.rng
        kind = rng.choice(["lines", "lines", "literal", "literal", "append",
                           "header", "header-literal", "header-literal", "revert"])
        in_header = kind.startswith("header") and self.headers
        f = rng.choice(self.headers if in_header else self.sources)
        lines = Path(f).read_text().split("\n")
        if kind in ("lines", "header"):
            spots = [i for i, l in enumerate(lines) if l in ("}", "};")] or [0]
            i = rng.choice(spots)
            lines[i + 1:i + 1] = [f"// edit {r}"] * rng.randint(1, 4)
        elif kind in ("literal", "header-literal"):
            spots = [i for i, l in enumerate(lines)
                     if l.startswith(("  ", "\t")) and '"' not in l and "'" not in l
                     and not l.lstrip().startswith(("#", "//", "*", "/*")) and INTEGER.search(l)]
            if not spots:
                return None
            i = rng.choice(spots)
            m = rng.choice(list(INTEGER.finditer(lines[i])))
            lines[i] = lines[i][:m.start()] + str(int(m.group()) + 1) + lines[i][m.end():]
        elif kind == "append":
            n = rng.randrange(1000)
            include, body = self.instance(r, n)
            lines.append(include + f"int repocc_fuzz_{r}_{n}() {{ {body} }}")
        else:
            lines = self.pristine[f].split("\n")
        Path(f).write_text("\n".join(lines))
        return f"{kind} {os.path.relpath(f)}"


def compile_unit(cmd, directory, obj, repo):
    env = dict(os.environ, REPOCC_DIR=str(repo), REPOCC_UNIT_CACHE="0")
    p = subprocess.run(cmd + ["-o", str(obj)], cwd=directory, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stderr.decode("latin-1").replace(str(obj), "OBJ")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--flags", required=True)
    ap.add_argument("--headers", action="append", default=[])
    ap.add_argument("--work", required=True)
    ap.add_argument("--warm-repo", help="the warm repository (default: WORK/warm-repo); it may hold the units already")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("units", nargs="+")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    warm, cold = Path(a.warm_repo or work / "warm-repo"), work / "cold-repo"
    units = commands_for(a.build, a.flags, a.compiler, a.units)
    headers = sorted(str(p) for d in a.headers for p in Path(d).rglob("*")
                     if p.suffix in (".h", ".hpp"))
    editor = Editor(rng, sorted({u[1] for u in units}), headers)
    log(f"seed {a.seed}, flags {a.flags}, {len(units)} units, {len(headers)} headers")
    bad = []

    def build_all(tag):
        results = {}
        for name, _, directory, cmd in units:
            obj = work / f"{Path(name).name}.{tag}.o"
            results[name] = (compile_unit(cmd, directory, obj, warm), obj)
            if results[name][0][0] != 0:
                bad.append(f"{tag}: {name} failed: {results[name][0][1][:400]}")
        return results

    try:
        first = build_all("first")
        for r in range(a.rounds):
            done = [d for d in (editor.edit(r) for _ in range(rng.randint(1, 2))) if d]
            log(f"round {r}: {'; '.join(done) or 'no edit'}")
            for name, _, directory, cmd in units:
                wobj, cobj = work / f"{Path(name).name}.warm.o", work / f"{Path(name).name}.cold.o"
                shutil.rmtree(cold, ignore_errors=True)
                # Warm and cold at once: they share nothing.
                with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
                    w_run = pool.submit(compile_unit, cmd, directory, wobj, warm)
                    c_run = pool.submit(compile_unit, cmd, directory, cobj, cold)
                    w, c = w_run.result(), c_run.result()
                if w != c:
                    bad.append(f"round {r} {name}: warm ended {w[0]} {w[1][:400]!r}, cold {c[0]} {c[1][:400]!r}")
                elif w[0] == 0 and "repocc" in w[1]:
                    bad.append(f"round {r} {name}: {w[1][:400]}")
                elif w[0] == 0 and not filecmp.cmp(wobj, cobj, shallow=False):
                    stem = work / f"bad-{r}-{Path(name).name}"
                    shutil.copy(wobj, f"{stem}.warm.o")
                    shutil.copy(cobj, f"{stem}.cold.o")
                    editor.keep_edited(f"{stem}.sources")
                    bad.append(f"round {r} {name}: the warm object differs from the cold one (kept as {stem}.*)")
                if w[0] != 0:
                    log(f"  {name} does not compile after the edit (warm and cold alike)")
        editor.restore()
        last = build_all("last")
        for name in first:
            if first[name][0][0] == 0 and not filecmp.cmp(first[name][1], last[name][1], shallow=False):
                bad.append(f"{name}: the pristine source compiled warm at the end differs from the first object")
    finally:
        editor.restore()
    for b in bad:
        log("BAD", b)
    if bad:
        log(f"seed {a.seed}: {len(bad)} differences (replay with --seed {a.seed} --rounds {a.rounds})")
        sys.exit(1)
    log(f"seed {a.seed}: {a.rounds} rounds, warm and cold alike")


if __name__ == "__main__":
    main()
