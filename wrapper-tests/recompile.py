"""Compiles some units of a CMake build (compile_commands.json) again with
other optimization flags and another compiler, each object to OUT_DIR.

    python3 recompile.py BUILD_DIR OUT_DIR COMPILER "FLAGS" FILE...

FILE: a source path ending (`src/format.cc`); its first command is used.
Every `-O<n>` and `-g*` argument of the command is replaced by FLAGS, the
compiler by COMPILER; the object is OUT_DIR/<source's name>.o. Exits 1 if
a compile fails or a FILE has no command.
"""

import json
import os
import shlex
import subprocess
import sys


def unit_command(commands, want, compiler, flags):
    """The first command of `commands` (compile_commands.json) that
    compiles a file ending in `want`, as (its entry, the command with
    COMPILER, FLAGS for its -O and -g arguments, and neither its output
    nor dependency-file options); None if there is none."""
    c = next((c for c in commands if c["file"].endswith("/" + want)), None)
    if c is None:
        return None
    args = c["arguments"] if "arguments" in c else shlex.split(c["command"])
    o = args.index("-o")
    rest = [a for i, a in enumerate(args[1:], 1)
            if i not in (o, o + 1) and not a.startswith("-O") and not a.startswith("-g")
            and a not in ("-MD", "-MT", "-MF") and args[i - 1] not in ("-MT", "-MF")]
    return c, [compiler] + shlex.split(flags) + rest


def main():
    build, out, compiler, flags = sys.argv[1:5]
    files = sys.argv[5:]
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    os.makedirs(out, exist_ok=True)
    status = 0
    for want in files:
        found = unit_command(commands, want, compiler, flags)
        if found is None:
            print("no command compiles %s" % want)
            status = 1
            continue
        c, cmd = found
        cmd = cmd + ["-o", os.path.join(out, os.path.basename(want) + ".o")]
        if subprocess.run(cmd, cwd=c["directory"]).returncode != 0:
            print("failed: %s" % " ".join(cmd))
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
