#!/usr/bin/env python3
"""Fails on an import that points up the layers, or a circle of imports
inside a layer (see DESIGN.md, "Layout: layers you can see").

Reads every `src/**/*.rs` (test modules left out: a test may build what it
tests with a higher layer) and collects the modules each file names
(`crate::a::b`, `super::b`, `use super::{b, c}`). A folder listed in
`ALLOWED` may name only the top-level modules given there; inside a folder
listed in `ACYCLIC`, the files' imports of one another form no circle.

  python3 scripts/check-layers.py        # exit 1 and the offending imports
"""

import re
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"

# Folder → the crate's top-level modules its code may name (config.rs, the
# settings, is read by the two orchestrating layers only).
ALLOWED = {
    "driver": {"driver", "pipeline", "ir", "llvm", "obj", "repo", "unit_cache", "support", "config"},
    "pipeline": {"pipeline", "ir", "llvm", "obj", "repo", "unit_cache", "support", "config"},
    "ir": {"ir", "llvm", "repo", "support"},
    "llvm": {"llvm", "support"},
    "support": {"support"},
    "obj": {"obj", "support"},
    "repo": {"repo", "support"},
    "unit_cache": {"unit_cache", "repo", "support"},
}
# Folders whose files import one another without a circle.
ACYCLIC = {"driver", "ir", "llvm", "obj", "pipeline", "repo", "support", "unit_cache"}

TEST_MODULE = re.compile(r"^#\[cfg\(test\)\]\s*\n(pub(\([^)]*\))? )?mod \w+", re.M)
CRATE_PATH = re.compile(r"\bcrate::(\w+)(?:::(\w+))?")
SUPER_PATH = re.compile(r"\bsuper::(\w+)")
SUPER_GROUP = re.compile(r"\buse super::\{([^}]*)\}")


def code_of(path):
    text = path.read_text()
    test = TEST_MODULE.search(text)
    if test:
        text = text[: test.start()]
    # Comments name modules too (`see obj::carve`); only code counts.
    return "\n".join(line.split("//")[0] for line in text.splitlines())


def main():
    errors = []
    edges = {}  # (folder, file) → sibling files it imports
    for path in sorted(SRC.rglob("*.rs")):
        parts = path.relative_to(SRC).parts
        if len(parts) < 2:
            continue  # a top-level file: may use every layer
        folder, stem = parts[0], Path(parts[-1]).stem
        code = code_of(path)
        named = {m.group(1) for m in CRATE_PATH.finditer(code)}
        allowed = ALLOWED.get(folder)
        if allowed is not None:
            for top in sorted(named - allowed):
                errors.append(f"{path.relative_to(SRC.parent)}: imports crate::{top}, above the {folder} layer")
        siblings = {m.group(2) for m in CRATE_PATH.finditer(code) if m.group(1) == folder and m.group(2)}
        if stem != "mod":
            siblings |= {m.group(1) for m in SUPER_PATH.finditer(code)}
            for group in SUPER_GROUP.finditer(code):
                siblings |= {g.strip().split("::")[0] for g in group.group(1).split(",") if g.strip()}
        siblings.discard(stem)
        edges[(folder, stem)] = siblings
    for folder in sorted(ACYCLIC):
        files = {f for (d, f) in edges if d == folder and f != "mod"}
        graph = {f: edges[(folder, f)] & files for f in files}
        state = {}
        stack = []

        def visit(f):
            state[f] = "open"
            stack.append(f)
            for g in sorted(graph[f]):
                if state.get(g) == "open":
                    circle = stack[stack.index(g):] + [g]
                    errors.append(f"src/{folder}/: imports form a circle: {' -> '.join(circle)}")
                elif g not in state:
                    visit(g)
            stack.pop()
            state[f] = "done"

        for f in sorted(files):
            if f not in state:
                visit(f)
    for e in errors:
        print(e)
    if errors:
        sys.exit(1)
    print(f"layers: {len(edges)} files checked; {', '.join(sorted(ALLOWED))} import nothing above them")


if __name__ == "__main__":
    main()
