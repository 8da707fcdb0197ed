#!/usr/bin/env python3
"""Edit fuzzing for the program repository (DESIGN.md, invariant 4).

Takes a real C program (lua5.4 or the sqlite3 shell), builds it once with
repocc into a repository (the *warm* one), then for each round applies
random semantic edits to random functions the program's checks execute,
rebuilds the edited units twice -- with the warm repository, which holds
every earlier round's fragments, and with an empty one (cold) -- and runs
the program's checks with both. Stdout, stderr and the exit code must be
the same. A difference is triaged before it counts: the cold program must
be deterministic, and a sanitizer build (ASan, then MSan) of the edited
source must be clean, so that undefined behaviour an edit introduced (an
out-of-bounds read reacting to code layout) is not reported as a repocc
bug. At the end the pristine source is rebuilt warm and must reproduce the
first objects byte for byte.

The edits (DESIGN.md lists the hazards): a changed integer constant; a
swapped operator; an added side effect (a call to an external function);
a function made noreturn (its body replaced by a call that exits); a
function that exits on its n-th call; a changed constant argument at a call
to a static function of the same file; a changed number in a file-scope
constant table; a changed string literal in a function (a literal goes
with its one user's fragment, and with copies into the functions that
user is inlined into). Edits never add or remove lines, so __LINE__ and every
other definition's digest stay as they were.

Everything is seeded: the seed is printed at the start and with every
failure, and `--seed S --rounds N` replays a run.
"""

import argparse
import concurrent.futures
import errno
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from csource import scan  # noqa: E402

HERE = Path(__file__).resolve().parent
PROTOTYPES = (
    "void repocc_fuzz_hit(int); _Noreturn void repocc_fuzz_exit(int); "
    "void repocc_fuzz_exit_after(int, int); "
)
EDIT_KINDS = [
    # (kind, weight)
    ("constant", 25),
    ("operator", 25),
    ("side-effect", 15),
    ("noreturn", 8),
    ("exit-after", 5),
    ("call-argument", 15),
    ("table-constant", 7),
    ("string", 8),
]
SWAPS = {
    "<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==",
    "&&": "||", "||": "&&", "+": "-", "-": "+", "+=": "-=", "-=": "+=",
    "<<": ">>", ">>": "<<", "|": "^", "^": "|",
}
# The checks take under a tenth of a second; a run still going after this
# many seconds loops (an edit can make it). Where only one build's run
# times out, both are rerun with six times as long (see `triage`).
RUN_TIMEOUT = 10


def log(*args):
    print(*args, flush=True)


def run(cmd, cwd=None, env=None, timeout=None, stdin=None):
    """Runs a command; returns (rc, stdout, stderr) as text.

    `check_both` copies and runs two programs from two threads: a fork in
    one thread while the other still has its copy open for writing gives
    that copy's exec ETXTBSY ("Text file busy"), which a moment later is
    gone (a long fuzzing run met it once), so it is tried again."""
    for attempt in range(20):
        try:
            p = subprocess.run(
                cmd, cwd=cwd, env=env, timeout=timeout, stdin=stdin,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
            return p.returncode, p.stdout.decode("latin-1"), p.stderr.decode("latin-1")
        except subprocess.TimeoutExpired:
            return "timeout", "", ""
        except OSError as e:
            if e.errno != errno.ETXTBSY or attempt == 19:
                raise
            time.sleep(0.05)


# ---------------------------------------------------------------------------
# Projects


class Project:
    """A program to fuzz: its units, how to compile and link them, how to
    run its checks."""

    name = ""
    cflags = []
    ldflags = []

    def __init__(self, tree):
        self.tree = tree  # the working copy every compile reads

    def units(self):
        """All units, as file names relative to the tree."""
        raise NotImplementedError

    def editable(self):
        return self.units()

    def check(self, exe, scratch, timeout=RUN_TIMEOUT):
        """Runs the program's checks in `scratch`; returns (rc, stdout,
        stderr). `exe` is relative to `scratch` (`./prog`), and so are the
        paths it is given: no run's output names its directory."""
        raise NotImplementedError


class Lua(Project):
    name = "lua"
    # A fixed string-hash seed: Lua mixes the time and addresses into it,
    # which makes hash collisions, and so the number of calls of some
    # functions, differ from run to run.
    cflags = ["-std=gnu99", "-O2", "-DLUA_COMPAT_5_3", "-DLUA_USE_LINUX", "-Dluai_makeseed(L)=0x5eedu"]
    ldflags = ["-Wl,-E", "-ldl", "-lm"]

    def units(self):
        return sorted(p.name for p in self.tree.glob("*.c") if p.name != "luac.c")

    def check(self, exe, scratch, timeout=RUN_TIMEOUT):
        return run([exe, str(HERE.parent / "programs" / "checks.lua")],
                   cwd=scratch, timeout=timeout)


class Sqlite(Project):
    name = "sqlite"
    cflags = ["-O2"]
    ldflags = ["-lm", "-ldl", "-lpthread"]

    def units(self):
        return ["shell.c", "sqlite3.c"]

    def editable(self):
        return ["sqlite3.c"]

    def check(self, exe, scratch, timeout=RUN_TIMEOUT):
        db = Path(scratch) / "test.db"
        if db.exists():
            db.unlink()
        with open(HERE.parent / "programs" / "checks.sql", "rb") as sql:
            return run([exe, db.name], cwd=scratch, timeout=timeout, stdin=sql)


PROJECTS = {"lua": Lua, "sqlite": Sqlite}


# ---------------------------------------------------------------------------
# Builds


class Builder:
    def __init__(self, project, work, repocc):
        self.project = project
        self.work = work
        self.repocc = repocc
        self.hook = work / "hook.o"

    def env(self, repo):
        e = dict(os.environ)
        e["REPOCC_DIR"] = str(repo)
        return e

    def compile(self, unit, obj, repo, compiler=None, extra=()):
        cc = compiler or [self.repocc]
        cmd = cc + self.project.cflags + list(extra) + ["-c", unit, "-o", str(obj)]
        return run(cmd, cwd=self.project.tree, env=self.env(repo))

    def link(self, objs, exe, repo, compiler=None, extra=()):
        cc = compiler or [self.repocc]
        cmd = cc + [str(o) for o in objs] + [str(self.hook)] + list(extra) + self.project.ldflags
        cmd += ["-o", str(exe)]
        rc, out, err = run(cmd, env=self.env(repo))
        if rc != 0:
            raise SystemExit(f"linking {exe} failed: {err}")

    def stats(self, repo):
        rc, out, err = run([self.repocc, "--show-stats", "--format", "json"], env=self.env(repo))
        if rc != 0:
            raise SystemExit(f"--show-stats failed: {err}")
        return json.loads(out)

    def zero_stats(self, repo):
        run([self.repocc, "--zero-stats"], env=self.env(repo))


def coverage(project, builder, work, cache):
    """Names of the functions the checks execute (a -finstrument-functions
    build), cached per source digest."""
    import hashlib

    h = hashlib.sha256()
    for u in project.units():
        h.update((project.tree / u).read_bytes())
    key = cache / f"coverage-{project.name}-{h.hexdigest()[:16]}.txt"
    if key.exists():
        return set(key.read_text().split())
    d = work / "coverage"
    d.mkdir(exist_ok=True)
    cov_o = d / "coverage.o"
    rc, _, err = run(["clang-19", "-O1", "-c", str(HERE / "coverage.c"), "-o", str(cov_o)])
    if rc != 0:
        raise SystemExit(f"compiling coverage.c: {err}")
    objs = []
    for u in project.units():
        o = d / (u + ".o")
        rc, _, err = run(["clang-19"] + project.cflags + ["-O0", "-finstrument-functions", "-fno-pie",
                                                          "-c", u, "-o", str(o)], cwd=project.tree)
        if rc != 0:
            raise SystemExit(f"coverage build of {u}: {err}")
        objs.append(o)
    exe = d / "prog"
    rc, _, err = run(["clang-19", "-no-pie"] + [str(o) for o in objs]
                     + [str(builder.hook), str(cov_o)] + project.ldflags + ["-o", str(exe)])
    if rc != 0:
        raise SystemExit(f"coverage link: {err}")
    addrs_file = d / "addresses.txt"
    scratch = d / "run"
    scratch.mkdir(exist_ok=True)
    # The checks run with the fuzzer's environment; coverage.c reads this.
    os.environ["REPOCC_FUZZ_COVERAGE"] = str(addrs_file)
    try:
        project.check(exe, scratch)
    finally:
        del os.environ["REPOCC_FUZZ_COVERAGE"]
    addrs = {int(a, 16) for a in addrs_file.read_text().split()}
    rc, out, _ = run(["nm", "--defined-only", str(exe)])
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW" and int(parts[0], 16) in addrs:
            names.add(parts[2])
    key.write_text("\n".join(sorted(names)) + "\n")
    return names


# ---------------------------------------------------------------------------
# Edits


class Edit:
    """One source edit: replace [start, end) of a unit's text."""

    def __init__(self, unit, function, kind, start, end, new, old, ident):
        self.unit, self.function, self.kind = unit, function, kind
        self.start, self.end, self.new, self.old = start, end, new, old
        self.ident = ident
        self.prototype_at = None  # offset where the hook prototypes go

    def describe(self):
        old = " ".join(self.old.split())
        new = " ".join(self.new.split())
        if len(old) > 60:
            old = old[:57] + "..."
        return f"#{self.ident} {self.kind} in {self.unit}:{self.function}: [{old}] -> [{new}]"


class SourceIndex:
    """Functions, tokens and constant tables of the editable units."""

    def __init__(self, project, executed):
        self.units = {}
        self.candidates = []  # (unit, Function)
        self.tables = []  # (unit, ConstInit)
        for u in project.editable():
            text = (project.tree / u).read_text(encoding="latin-1")
            toks, funcs, inits = scan(text)
            statics = {f.name for f in funcs if f.static}
            self.units[u] = (text, toks, statics)
            for f in funcs:
                if f.name in executed and f.name != "main":
                    self.candidates.append((u, f))
            self.tables.extend((u, t) for t in inits)
        if not self.candidates:
            raise SystemExit("no executed function found to edit")


def new_number(tok_text, rng):
    """A different integer literal of the same spelling style, or None."""
    t = tok_text
    suffix = ""
    while t and t[-1] in "uUlL":
        suffix = t[-1] + suffix
        t = t[:-1]
    try:
        if t.lower().startswith("0x"):
            v, fmt = int(t, 16), "hex"
        elif len(t) > 1 and t.startswith("0"):
            return None  # octal: leave alone
        else:
            v, fmt = int(t, 10), "dec"
    except ValueError:
        return None  # a float
    if v == 0:
        w = 1
    elif v == 1:
        w = rng.choice([0, 2])
    else:
        w = v + rng.choice([-1, 1])
    return (hex(w) if fmt == "hex" else str(w)) + suffix


def make_edit(index, rng, ident):
    """One random edit, or None when the chosen function offers no site for
    the chosen kind."""
    kind = rng.choices([k for k, _ in EDIT_KINDS], [w for _, w in EDIT_KINDS])[0]
    if kind == "table-constant":
        if not index.tables:
            return None
        unit, table = rng.choice(index.tables)
        toks = index.units[unit][1]
        k = rng.choice(table.numbers)
        new = new_number(toks[k].text, rng)
        if new is None:
            return None
        return Edit(unit, table.name, kind, toks[k].start, toks[k].end, new, toks[k].text, ident)

    unit, f = rng.choice(index.candidates)
    text, toks, statics = index.units[unit]
    body = f.body_tokens()
    e = None
    if kind == "constant":
        sites = [(k, t) for k, t in body if t.kind == "num" and toks[k - 1].text != "case"]
        if sites:
            k, t = rng.choice(sites)
            new = new_number(t.text, rng)
            if new is not None:
                e = Edit(unit, f.name, kind, t.start, t.end, new, t.text, ident)
    elif kind == "operator":
        sites = [(k, t) for k, t in body if t.kind == "punct" and t.text in SWAPS]
        if sites:
            k, t = rng.choice(sites)
            e = Edit(unit, f.name, kind, t.start, t.end, SWAPS[t.text], t.text, ident)
    elif kind == "call-argument":
        sites = []
        stack = []
        for k, t in body:
            if t.text == "(":
                stack.append(k)
            elif t.text == ")" and stack:
                stack.pop()
            elif (t.kind == "num" and stack and toks[stack[-1] - 1].text in statics
                  and toks[k - 1].text in ("(", ",") and toks[k + 1].text in (")", ",")):
                sites.append(t)
        if sites:
            t = rng.choice(sites)
            new = new_number(t.text, rng)
            if new is not None:
                e = Edit(unit, f.name, kind, t.start, t.end, new, t.text, ident)
    elif kind == "string":
        # A character added before the closing quote: the literal's bytes
        # and size change, its users' code may not.
        sites = [(k, t) for k, t in body if t.kind == "str" and t.text.startswith('"')]
        if sites:
            k, t = rng.choice(sites)
            new = t.text[:-1] + rng.choice("~#x") + '"'
            e = Edit(unit, f.name, kind, t.start, t.end, new, t.text, ident)
    elif kind == "side-effect":
        at = f.body_start
        e = Edit(unit, f.name, kind, at, at, f" repocc_fuzz_hit({ident});", "", ident)
    elif kind == "exit-after":
        at = f.body_start
        n = rng.choice([1, 2, 3, 10, 100])
        e = Edit(unit, f.name, kind, at, at, f" repocc_fuzz_exit_after({ident}, {n});", "", ident)
    elif kind == "noreturn":
        old = text[f.body_start:f.body_end]
        if "#" in old:
            return None  # keep conditional blocks balanced
        new = f" repocc_fuzz_exit({ident}); " + "\n" * old.count("\n")
        e = Edit(unit, f.name, kind, f.body_start, f.body_end, new, old, ident)
    if e is not None and kind in ("side-effect", "exit-after", "noreturn"):
        e.prototype_at = f.prefix_start
    return e


def apply_edits(text, edits):
    """The edited text. Hook prototypes go right before the edited
    function, on its first line (no line is added)."""
    changes = []
    for e in edits:
        changes.append((e.start, e.end, e.new))
        if e.prototype_at is not None:
            changes.append((e.prototype_at, e.prototype_at, PROTOTYPES))
    changes.sort(key=lambda c: (c[0], c[1]), reverse=True)
    for s, en, new in changes:
        text = text[:s] + new + text[en:]
    return text


def overlaps(edits):
    spans = sorted((e.unit, e.start, e.end) for e in edits)
    for (u1, s1, e1), (u2, s2, e2) in zip(spans, spans[1:]):
        if u1 == u2 and s2 < max(e1, s1 + 1):
            return True
    return False


# ---------------------------------------------------------------------------
# The fuzzing loop


def outcome(result):
    """What is compared: a timeout is compared as such (where a looping
    program was killed is timing, not behaviour)."""
    rc, out, err = result
    if rc == "timeout":
        return ("timeout", "", "")
    return result


def diff_excerpt(a, b):
    import difflib

    lines = []
    for name, x, y in (("exit", str(a[0]), str(b[0])), ("stdout", a[1], b[1]), ("stderr", a[2], b[2])):
        if x != y:
            d = list(difflib.unified_diff(x.splitlines(), y.splitlines(), "cold", "warm", lineterm="", n=1))
            lines.append(f"  {name} differs:")
            lines.extend("    " + line for line in d[:16])
    return "\n".join(lines)


class Fuzzer:
    def __init__(self, args):
        self.args = args
        self.work = Path(args.work).resolve()
        self.cache = Path(args.cache).resolve()
        self.cache.mkdir(parents=True, exist_ok=True)
        if self.work.exists():
            shutil.rmtree(self.work)
        self.work.mkdir(parents=True)
        tree = self.work / "tree"
        shutil.copytree(args.source, tree)
        self.project = PROJECTS[args.project](tree)
        # Extra flags (`--cflags=-g`) for every compile, repocc's and the
        # sanitizer builds' alike.
        self.project.cflags = self.project.cflags + args.cflags.split()
        self.builder = Builder(self.project, self.work, args.repocc)
        self.warm_repo = self.work / "warm-repo"
        self.cold_repo = self.work / "cold-repo"
        self.pristine = {u: (tree / u).read_bytes() for u in self.project.editable()}
        self.failures = []
        self.counts = {"agreed": 0, "observable": 0, "rejected": 0, "nondeterministic": 0,
                       "undefined": 0, "differed": 0}
        self.compiled_share = []

    def objdir(self, name):
        d = self.work / name
        d.mkdir(exist_ok=True)
        return d

    def build_all(self, objdir, repo):
        """Every unit, as `make -jN` would: into one repository, at once."""
        units = self.project.units()
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            results = list(pool.map(lambda u: self.builder.compile(u, objdir / (u + ".o"), repo), units))
        for u, (rc, _, err) in zip(units, results):
            if rc != 0:
                raise SystemExit(f"compiling {u} failed:\n{err}")

    def compile_units(self, units, objdir, repo):
        """Compiles `units` in turn into `objdir`: None, or the first
        that failed and its diagnostics."""
        for u in units:
            rc, _, err = self.builder.compile(u, objdir / (u + ".o"), repo)
            if rc != 0:
                return u, err
        return None

    def check(self, exe, timeout=RUN_TIMEOUT, slot="run"):
        """The checks' outcome for `exe`, run as `./prog` in a scratch
        directory of its own (`slot`): programs print their own path in
        messages, the same for every build and slot."""
        scratch = self.work / slot
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            shutil.copy(exe, scratch / "prog")
            return outcome(self.project.check("./prog", scratch, timeout))
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def check_both(self, cold_exe, warm_exe, timeout=RUN_TIMEOUT):
        """The checks' outcomes for both builds, run at once (a looping
        edit costs one timeout, not two)."""
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            cold = pool.submit(self.check, cold_exe, timeout, "run-cold")
            warm = pool.submit(self.check, warm_exe, timeout, "run-warm")
            return cold.result(), warm.result()

    def setup(self):
        rc, _, err = run(["clang-19", "-O2", "-c", str(HERE / "hook.c"), "-o", str(self.builder.hook)])
        if rc != 0:
            raise SystemExit(f"compiling hook.c: {err}")
        executed = coverage(self.project, self.builder, self.work, self.cache)
        self.index = SourceIndex(self.project, executed)
        log(f"[{self.project.name}] {len(self.index.candidates)} executed functions to edit, "
            f"{len(self.index.tables)} constant tables")
        base = self.objdir("obj-base")
        self.build_all(base, self.warm_repo)
        self.base_exe = self.work / "prog-base"
        self.builder.link(self.base_objs(), self.base_exe, self.warm_repo)
        self.base_result = self.check(self.base_exe)
        if self.base_result[0] != 0:
            raise SystemExit(f"the unedited program fails its checks: {self.base_result}")

    def base_objs(self, replaced=None):
        replaced = replaced or {}
        return [replaced.get(u, self.work / "obj-base" / (u + ".o")) for u in self.project.units()]

    def write_tree(self, edits):
        by_unit = {}
        for e in edits:
            by_unit.setdefault(e.unit, []).append(e)
        for u, es in by_unit.items():
            text = self.pristine[u].decode("latin-1")
            (self.project.tree / u).write_bytes(apply_edits(text, es).encode("latin-1"))
        return sorted(by_unit)

    def restore_tree(self):
        for u, data in self.pristine.items():
            (self.project.tree / u).write_bytes(data)

    def round(self, r):
        rng = random.Random(f"{self.args.seed}:{self.project.name}:{r}")
        edits = None
        for attempt in range(20):
            n = rng.randint(1, self.args.edits)
            cand = [make_edit(self.index, rng, r * 8 + k + 1) for k in range(n)]
            cand = [e for e in cand if e is not None]
            if not cand or overlaps(cand):
                continue
            units = self.write_tree(cand)
            # Cold (into an empty repository) and warm at once: they share
            # nothing. An edit whose cold compile fails is discarded (its
            # warm compile failed too and stored nothing).
            if self.cold_repo.exists():
                shutil.rmtree(self.cold_repo)
            cold_dir, warm_dir = self.objdir("obj-cold"), self.objdir("obj-warm")
            self.builder.zero_stats(self.warm_repo)
            with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
                cold_run = pool.submit(self.compile_units, units, cold_dir, self.cold_repo)
                warm_run = pool.submit(self.compile_units, units, warm_dir, self.warm_repo)
                cold_failed, warm_failed = cold_run.result(), warm_run.result()
            if cold_failed is None:
                edits = cand
                break
            self.counts["rejected"] += 1
            self.restore_tree()
        if edits is None:
            log(f"round {r}: no compilable edit found")
            return
        desc = "; ".join(e.describe() for e in edits)
        if warm_failed is not None:
            u, err = warm_failed
            self.fail(r, edits, f"the warm compile of {u} failed where the cold one passed:\n{err}")
            self.restore_tree()
            return
        st = self.builder.stats(self.warm_repo)
        if st.get("fallbacks", 0) or st.get("corrupt_entries", 0):
            self.fail(r, edits, f"the warm compile fell back or met a corrupt entry: {st}")
        total = max(st.get("definitions_total", 0), 1)
        share = st.get("definitions_compiled", 0) / total
        self.compiled_share.append(share)
        cold_exe, warm_exe = self.work / "prog-cold", self.work / "prog-warm"
        self.builder.link(self.base_objs({u: cold_dir / (u + ".o") for u in units}), cold_exe, self.cold_repo)
        self.builder.link(self.base_objs({u: warm_dir / (u + ".o") for u in units}), warm_exe, self.warm_repo)
        cold, warm = self.check_both(cold_exe, warm_exe)
        verdict = "agreed"
        if cold != warm:
            verdict = self.triage(r, edits, units, cold, warm, cold_exe, warm_exe)
        self.counts[verdict] += 1
        observable = verdict == "agreed" and cold != self.base_result
        if observable:
            self.counts["observable"] += 1
        log(f"round {r}: {verdict}{' (behaviour changed)' if observable else ''}, warm rebuild compiled "
            f"{st.get('definitions_compiled', 0)}/{st.get('definitions_total', 0)} definitions: {desc}")
        self.restore_tree()

    def triage(self, r, edits, units, cold, warm, cold_exe, warm_exe):
        if "timeout" in (cold[0], warm[0]):
            # One of them ran out of time: a slow edit near the limit, or a
            # real difference; give both much longer.
            cold, warm = self.check_both(cold_exe, warm_exe, RUN_TIMEOUT * 6)
            if cold == warm:
                return "agreed"
        if self.check(cold_exe) != cold or self.check(warm_exe) != warm:
            return "nondeterministic"
        for san, opts in (("address", []), ("memory", ["-fsanitize-memory-track-origins=0"])):
            result = self.sanitized(units, san, opts)
            if result is not None and ("Sanitizer" in result[2] or "runtime error" in result[2]):
                log(f"round {r}: the edited program has undefined behaviour ({san} sanitizer): "
                    + next((ln for ln in result[2].splitlines() if "Sanitizer" in ln), ""))
                return "undefined"
        self.fail(r, edits, "warm and cold builds behave differently\n" + diff_excerpt(cold, warm))
        return "differed"

    def sanitized(self, units, san, opts):
        """The checks' result with every unit built by clang-19 under a
        sanitizer, or None if that build is not possible."""
        d = self.objdir(f"obj-{san}")
        flags = [f"-fsanitize={san}", "-fno-omit-frame-pointer", "-O1"] + opts
        objs = []
        for u in self.project.units():
            o = d / (u + ".o")
            rc, _, err = run(["clang-19"] + self.project.cflags + flags + ["-c", u, "-o", str(o)],
                             cwd=self.project.tree)
            if rc != 0:
                return None
            objs.append(o)
        hook = d / "hook.o"
        if run(["clang-19", "-O1", f"-fsanitize={san}", "-c", str(HERE / "hook.c"), "-o", str(hook)])[0] != 0:
            return None
        exe = d / "prog"
        rc, _, _ = run(["clang-19", f"-fsanitize={san}"] + [str(o) for o in objs] + [str(hook)]
                       + self.project.ldflags + ["-o", str(exe)])
        if rc != 0:
            return None
        os.environ["ASAN_OPTIONS"] = "detect_leaks=0"
        try:
            return self.check(exe)
        finally:
            del os.environ["ASAN_OPTIONS"]

    def fail(self, r, edits, why):
        keep = self.work / "failures" / f"round-{r}"
        keep.mkdir(parents=True, exist_ok=True)
        for u in {e.unit for e in edits}:
            shutil.copy(self.project.tree / u, keep / u)
        msg = (f"EDIT FUZZ FAILURE [{self.project.name}] seed {self.args.seed} round {r}: {why}\n"
               + "\n".join("  edit " + e.describe() for e in edits)
               + f"\n  edited sources kept in {keep}\n"
               + f"  replay: {sys.argv[0]} --project {self.project.name} --seed {self.args.seed} "
               + f"--first-round {r} --rounds 1 ...")
        log(msg)
        self.failures.append(msg)

    def reproduce(self):
        """The pristine source rebuilt warm reproduces the first objects."""
        self.restore_tree()
        d = self.objdir("obj-again")
        self.build_all(d, self.warm_repo)
        for u in self.project.units():
            a = (self.work / "obj-base" / (u + ".o")).read_bytes()
            b = (d / (u + ".o")).read_bytes()
            if a != b:
                self.failures.append(f"rebuilding the unedited {u} after the edits did not reproduce its object")
                log(self.failures[-1])

    def main(self):
        log(f"edit-fuzz [{self.args.project}]: seed {self.args.seed}, {self.args.rounds} rounds, "
            f"up to {self.args.edits} edits a round")
        self.setup()
        for r in range(self.args.first_round, self.args.first_round + self.args.rounds):
            self.round(r)
        self.reproduce()
        c = self.counts
        med = statistics.median(self.compiled_share) * 100 if self.compiled_share else 0.0
        log(f"edit-fuzz [{self.project.name}] seed {self.args.seed}: {c['agreed']} rounds agreed "
            f"({c['observable']} changed the program's behaviour), {c['differed']} differed; "
            f"discarded: {c['rejected']} edits that did not compile, {c['undefined']} rounds with "
            f"undefined behaviour, {c['nondeterministic']} nondeterministic; warm rebuilds compiled a "
            f"median {med:.2f}% of the unit's definitions")
        if self.failures:
            log(f"edit-fuzz [{self.project.name}]: {len(self.failures)} failure(s); seed {self.args.seed}")
            return 1
        return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", choices=sorted(PROJECTS), required=True)
    ap.add_argument("--source", required=True, help="directory with the project's C files")
    ap.add_argument("--work", required=True, help="scratch directory (emptied)")
    ap.add_argument("--cache", required=True, help="where coverage lists are cached")
    ap.add_argument("--repocc", required=True)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--first-round", type=int, default=0)
    ap.add_argument("--edits", type=int, default=1, help="most edits in one round")
    ap.add_argument("--cflags", default="", help="extra compiler flags, e.g. --cflags=-g")
    args = ap.parse_args()
    if args.seed is None:
        args.seed = random.SystemRandom().randrange(1, 1 << 31)
    sys.exit(Fuzzer(args).main())


if __name__ == "__main__":
    main()
