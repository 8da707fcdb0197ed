#!/usr/bin/env python3
"""Would debug fragments come out of one code generation as they come out
of one each? A probe for carving debug fragments (docs/architecture.md,
"Debug fragments from one code generation").

Input: the fragment modules a compile wrote with
`REPOCC_DUMP_FRAGMENT_MODULES=DIR` (each as it is compiled on its own,
after its lines were rebased and its compile unit trimmed). The probe
takes a sample of them that have a compile unit, gives every name each
defines (and its COMDAT groups) a suffix of its own, so that no
fragment's references resolve to another's definitions, links them into one module without merging debug types by
name (`--disable-debug-info-type-map`), compiles that once with llc-19 and
each fragment alone, and compares each fragment's compile unit (and type
units) in the two, as llvm-dwarfdump prints them with offsets, addresses
and list offsets left out.

    REPOCC_DUMP_FRAGMENT_MODULES=/tmp/frags REPOCC_JOBS=1 repocc++ -O2 -g -c x.cc
    python3 benches/debug-batch-probe.py --dump /tmp/frags --work /tmp/probe --sample 60

Prints how many compile units are the same, and the first lines of each
difference. Out of CI: it measures, it asserts nothing.
"""

import argparse
import concurrent.futures
import difflib
import os
import random
import re
import shutil
import subprocess
import sys

IDENT = r'(@(?:"[^"]*"|[-a-zA-Z$._0-9]+))(?![-a-zA-Z$._0-9])'
# A COMDAT group's name where it is declared and where it is used (a
# mangled name in a string may hold a `$` too).
COMDAT = r'(^|comdat\()(\$(?:"[^"]*"|[-a-zA-Z$._0-9]+))(?![-a-zA-Z$._0-9])'


def run(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def suffixed(name, k):
    if name[1:].startswith("llvm.") or name[1:].startswith('"llvm.'):
        return name
    return name[:-1] + f'.F{k}"' if name.endswith('"') else name + f".F{k}"


def prepare(args, k, path):
    """The fragment's module with its names suffixed, as bitcode; None
    without a compile unit or a definition."""
    text = run(args.llvm_dis, path, "-o", "-")
    if "DICompileUnit" not in text or not re.search(r"^define ", text, re.M):
        return None
    # Only the names it defines: what it declares keeps its name (the code
    # generator knows library functions by name), as do what LLVM names.
    defined = {m.group(1) for m in re.finditer(r"^define [^@]*" + IDENT, text, re.M)}
    defined |= {m.group(1) for m in re.finditer(r"^" + IDENT + r" = (?!.*\bexternal (?:global|constant)\b)", text, re.M)}
    text = re.sub(IDENT, lambda m: suffixed(m.group(1), k) if m.group(1) in defined else m.group(1), text)
    text = re.sub(COMDAT, lambda m: m.group(1) + suffixed(m.group(2), k), text, flags=re.M)
    # Types are shared by the fragments of a unit (extracted in its
    # context), as llvm-link's type map shares them by name; but not those
    # local to a function (`_ZTSZ...`), each fragment's own as their scope is.
    text = re.sub(r'identifier: "(_ZTSZ[^"]*)"', lambda m: f'identifier: "{m.group(1)}.F{k}"', text)
    # llvm-link drops what nothing refers to (linkonce and local
    # definitions): keep every definition.
    kept = [m.group(1) for m in re.finditer(r"^define (?:linkonce|internal|private|weak)[^@]*" + IDENT, text, re.M)]
    if kept:
        text += '\n@llvm.used = appending global [%d x ptr] [%s], section "llvm.metadata"\n' % (
            len(kept),
            ", ".join("ptr " + n for n in kept),
        )
    out = os.path.join(args.work, "renamed", f"{k:04d}.bc")
    subprocess.run([args.llvm_as, "-", "-o", out], input=text, text=True, check=True)
    return out


def in_order(args, batch_bc, renamed):
    """The batch's functions in the fragments' order, each fragment's in its
    own (llvm-link adds local and linkonce definitions as they are
    referenced; the code generator makes each function's debug entry as
    it finishes the function)."""
    place = {}
    for i, path in enumerate(renamed):
        text = run(args.llvm_dis, path, "-o", "-")
        for j, m in enumerate(re.finditer(r"^define [^@]*" + IDENT, text, re.M)):
            place[m.group(1)] = (i, j)
    text = run(args.llvm_dis, batch_bc, "-o", "-")
    head, *rest = re.split(r"(?m)^(?=define )", text)
    bodies, tail = [], ""
    for chunk in rest:
        body, end, after = chunk.partition("\n}\n")
        bodies.append(body + end)
        tail += after
    name = lambda b: re.match(r"define [^@]*" + IDENT, b).group(1)
    bodies.sort(key=lambda b: place.get(name(b), (len(renamed), 0)))
    subprocess.run([args.llvm_as, "-", "-o", batch_bc], input=head + "".join(bodies) + tail, text=True, check=True)


def units(dump):
    """llvm-dwarfdump's units: (kind, signature or None, normalized text)."""
    out = []
    for chunk in re.split(r"\n(?=0x[0-9a-f]+: (?:Compile|Type) Unit)", dump)[1:]:
        head, _, body = chunk.partition("\n")
        body = re.sub(r"^0x[0-9a-f]+:", "", body, flags=re.M)
        body = re.sub(r'\(0x[0-9a-f]+( "[^"]*")?\)', lambda m: "(REF" + (m.group(1) or "") + ")", body)
        body = re.sub(r"\[0x[0-9a-f]+, 0x[0-9a-f]+\)", "[A,B)", body)
        body = re.sub(r"(loclist|rangelist) = 0x[0-9a-f]+", r"\1", body)
        body = re.sub(
            r"(DW_AT_(?:str_offsets_base|addr_base|stmt_list|low_pc|high_pc|ranges|location|call_return_pc|entry_pc)\s+)\(.*\)",
            r"\1X",
            body,
        )
        # Present in every unit of a module that has lists at all.
        body = re.sub(r"\n\s*DW_AT_(?:loclists|rnglists)_base\t\S+", "", body)
        # A type unit names the line table of the unit that made it.
        body = re.sub(r'(DW_AT_decl_file\s+\(")([^"]*/)?([^"/]*)"', r"\1\3", body)
        signature = re.search(r"type_signature = (0x[0-9a-f]+)", head)
        kind = "TU" if "Type Unit" in head else "CU"
        out.append((kind, signature.group(1) if signature else None, body.strip()))
    return out


def key(body):
    """A compile unit's name: its first function with code of its own."""
    for block in body.split("\n\n"):
        if "DW_TAG_subprogram" in block and "DW_AT_frame_base" in block:
            m = re.search(r'DW_AT_(?:linkage_name|specification|abstract_origin|name)\s*\((?:REF )?"([^"]*)"', block)
            return m.group(1) if m else block
    return body[:200]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dump", required=True, help="REPOCC_DUMP_FRAGMENT_MODULES's directory")
    p.add_argument("--work", required=True, help="a directory of the probe's own (emptied)")
    p.add_argument("--sample", type=int, default=60)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--opt", default="-O2", help="llc's optimization level, as the unit's")
    p.add_argument("--llvm-bin", default="/usr/lib/llvm-19/bin")
    p.add_argument(
        "--batch",
        help="a batch repocc linked (batch-*.bc in the dump, written with REPOCC_JOBS=1) "
        "instead of llvm-link's: the sample is then compared with it",
    )
    args = p.parse_args()
    for tool in ("llvm-dis", "llvm-as", "llvm-link", "llc", "llvm-dwarfdump"):
        setattr(args, tool.replace("-", "_"), os.path.join(args.llvm_bin, tool))
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(os.path.join(args.work, "renamed"))
    os.makedirs(os.path.join(args.work, "alone"))
    files = sorted(f for f in os.listdir(args.dump) if f.endswith(".bc") and not f.startswith("batch-"))
    random.Random(args.seed).shuffle(files)
    llc = [args.llc, args.opt, "-filetype=obj", "-relocation-model=pic", "-function-sections", "-data-sections", "-generate-type-units"]
    picked = []
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        for start in range(0, len(files), 4 * args.sample):
            batch = files[start : start + 4 * args.sample]
            # Each fragment's suffix is its place in the shuffled list.
            jobs = [pool.submit(prepare, args, start + i, os.path.join(args.dump, f)) for i, f in enumerate(batch)]
            for f, job in zip(batch, jobs):
                if job.result() and len(picked) < args.sample:
                    picked.append((f, job.result()))
            if len(picked) >= args.sample:
                break
        alone = [os.path.join(args.work, "alone", f + ".o") for f, _ in picked]
        list(pool.map(lambda fo: run(*llc, os.path.join(args.dump, fo[0][0]), "-o", fo[1]), zip(picked, alone)))
    batch_bc = os.path.join(args.work, "batch.bc")
    if args.batch:
        shutil.copy(args.batch, batch_bc)
    else:
        run(args.llvm_link, *[r for _, r in picked], "-o", batch_bc)
        in_order(args, batch_bc, [r for _, r in picked])
    run(*llc, batch_bc, "-o", os.path.join(args.work, "batch.o"))
    batch_units = units(run(args.llvm_dwarfdump, "--debug-info", os.path.join(args.work, "batch.o")))
    by_key = {}
    batch_types = {}
    for kind, sig, body in batch_units:
        if kind == "CU":
            by_key.setdefault(key(body), []).append(body)
        else:
            batch_types.setdefault(sig, []).append(body)
    local_types = {b for bodies in batch_types.values() for b in bodies}
    same = differ = missing = types = types_same = 0
    shown = 0
    for obj in alone:
        found = units(run(args.llvm_dwarfdump, "--debug-info", obj))
        compile_units = [body for kind, _, body in found if kind == "CU"]
        if any(not by_key.get(key(body)) for body in compile_units):
            # repocc's batch leaves out what it would not compile the same
            # (see shim/batch.cpp); llvm-link's has every fragment.
            missing += 1
            if not args.batch:
                print(f"not found: {os.path.basename(obj)}")
            continue
        for body in compile_units:
            candidates = by_key[key(body)]
            if body in candidates:
                same += 1
                continue
            differ += 1
            if shown < 5:
                shown += 1
                diff = difflib.unified_diff(body.splitlines(), candidates[0].splitlines(), "alone", "batch", lineterm="", n=2)
                print(f"differs: {os.path.basename(obj)}\n" + "\n".join(list(diff)[:30]))
        for kind, sig, body in found:
            if kind != "TU":
                continue
            types += 1
            # A local type's signature is of its renamed identifier.
            same_type = body in batch_types.get(sig, []) or body in local_types
            types_same += same_type
            if not same_type and shown < 5:
                shown += 1
                theirs = batch_types.get(sig, ["(none)"])[0]
                diff = difflib.unified_diff(body.splitlines(), theirs.splitlines(), "alone", "batch", lineterm="", n=2)
                print(f"type unit {sig} differs: {os.path.basename(obj)}\n" + "\n".join(list(diff)[:30]))
    print(
        f"{len(picked)} fragments, {len(batch_units)} units in the batch; compile units: {same} the same, "
        f"{differ} different, {missing} fragments not in the batch; type units: {types_same} of {types} the same"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
