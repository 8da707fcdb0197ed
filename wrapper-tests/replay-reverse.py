"""Replays a CMake build's compile commands (compile_commands.json) in
reverse order, JOBS at a time, each object written to OUT_DIR instead of
its place, and compares every object with the one the build left there.

    python3 replay-reverse.py BUILD_DIR OUT_DIR JOBS

Prints one line per object that differs and a summary; exits 1 when an
object differs or a compile fails.
"""

import concurrent.futures
import json
import os
import shlex
import subprocess
import sys


def main():
    build, out, jobs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    os.makedirs(out, exist_ok=True)

    def run(i, c):
        args = c["arguments"] if "arguments" in c else shlex.split(c["command"])
        o = args.index("-o")
        original = os.path.join(c["directory"], args[o + 1])
        if not os.path.exists(original):
            return ("skipped", original)
        args[o + 1] = os.path.join(out, "%d.o" % i)
        if "-MF" in args:
            args[args.index("-MF") + 1] = os.path.join(out, "%d.d" % i)
        r = subprocess.run(args, cwd=c["directory"], stdout=subprocess.DEVNULL)
        if r.returncode != 0:
            return ("failed", original)
        with open(original, "rb") as a, open(args[o + 1], "rb") as b:
            return ("same" if a.read() == b.read() else "differs", original)

    order = list(enumerate(commands))[::-1]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda ic: run(*ic), order))
    counts = {}
    for what, path in results:
        counts[what] = counts.get(what, 0) + 1
        if what in ("differs", "failed"):
            print("%s: %s" % (what, path))
    print(" ".join("%s %d" % kv for kv in sorted(counts.items())))
    return 1 if counts.get("differs") or counts.get("failed") else 0


if __name__ == "__main__":
    sys.exit(main())
