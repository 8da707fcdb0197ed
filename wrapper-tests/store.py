#!/usr/bin/env python3
"""The tests' view of repocc's fragment store (src/repo/store.rs, index.rs):
packs of compressed blocks under v1/packs, found through the hash table in
v1/index (a slot names the pack, the block's offset and the entry's offset
in the decompressed block).

  store.py entries REPO [KINDS]        every indexed entry: pack, block offset, length, kind, key
  store.py remove REPO SEED PERCENT [KINDS]
                                       removes PERCENT of the indexed entries (of KINDS,
                                       e.g. 0,11 for fragment objects: 11 is a unit's own) from the index, as eviction would; prints
                                       "removed of total"
  store.py flip REPO KINDS largest|all
                                       damages entries of KINDS in place: in every pack the
                                       block of the largest one, or the blocks of all of them
                                       (a byte of the block's compressed bytes: the block's
                                       entries read as corrupt); prints how many blocks

The layout is read the way repocc reads it, so a change there breaks these
tests loudly (a wrong header is an error, not zero entries)."""
import os
import random
import struct
import subprocess
import sys
import tempfile

HEADER = 32
SLOT = 24
PACK_FIELD = 16
REMOVED = 0xFFFFFFFFFFFFFFFF


def read_index(repo):
    path = os.path.join(repo, "v1", "index")
    data = bytearray(open(path, "rb").read())
    assert data[:8] == b"RPCCINDX", f"{path}: not an index"
    version, slots = struct.unpack_from("<II", data, 8)
    assert version == 4 and len(data) == HEADER + SLOT * slots, f"{path}: unexpected layout"
    return path, data, slots


def live_slots(data, slots):
    for i in range(slots):
        at = HEADER + SLOT * i
        offset, inner, pack = struct.unpack_from("<IIQ", data, at + 8)
        if pack not in (0, REMOVED):
            yield at, data[at:at + 8].hex(), pack, offset, inner


def pack_path(repo, pack):
    return os.path.join(repo, "v1", "packs", f"{pack:016x}")


BLOCK_HEADER = 24
BLOCK_RAW = 1 << 31
# Compressed against the pack's dictionary: the payload of the one entry of
# its first block (a unit's whole object, itself a zstd frame).
BLOCK_WITH_DICTIONARY = 1 << 30
PACK_HEADER = 16
_blocks = {}


def unzstd(stored, dictionary=None):
    if dictionary is None:
        return subprocess.run(["zstd", "-q", "-d", "-c"], input=stored,
                              capture_output=True, check=True).stdout
    with tempfile.NamedTemporaryFile() as d:
        d.write(dictionary)
        d.flush()
        return subprocess.run(["zstd", "-q", "-d", "-c", "-D", d.name], input=stored,
                              capture_output=True, check=True).stdout


def dictionary(repo, pack):
    first = block(repo, pack, PACK_HEADER)
    if first is None:
        raise OSError("the pack's first block is unreadable")
    entry = first[4:]
    meta_len = struct.unpack_from("<I", entry, 33)[0]
    return unzstd(entry[37 + meta_len:])


def block(repo, pack, offset):
    """The decompressed block at `offset` of a pack (None if unreadable)."""
    key = (pack, offset)
    if key not in _blocks:
        try:
            with open(pack_path(repo, pack), "rb") as f:
                f.seek(offset)
                header = f.read(BLOCK_HEADER)
                stored_len, raw = struct.unpack_from("<II", header)
                stored = f.read(stored_len)
            if raw & BLOCK_RAW:
                _blocks[key] = stored
            elif raw & BLOCK_WITH_DICTIONARY:
                _blocks[key] = unzstd(stored, dictionary(repo, pack))
            else:
                _blocks[key] = unzstd(stored)
        except (OSError, struct.error, subprocess.CalledProcessError):
            _blocks[key] = None
    return _blocks[key]


def entry_of(repo, pack, offset, inner):
    b = block(repo, pack, offset)
    if b is None or inner + 4 > len(b):
        return None
    n = struct.unpack_from("<I", b, inner)[0]
    return b[inner + 4:inner + 4 + n]


def kind_of(repo, pack, offset, inner):
    e = entry_of(repo, pack, offset, inner)
    return e[0] if e else None


def kinds_arg(s):
    return None if s is None else {int(k) for k in s.split(",")}


def entries(repo, kinds):
    _, data, slots = read_index(repo)
    out = []
    for at, key, pack, offset, inner in live_slots(data, slots):
        e = entry_of(repo, pack, offset, inner)
        kind = e[0] if e else None
        if kinds is None or kind in kinds:
            out.append((pack_path(repo, pack), offset, len(e or b""), kind, key, at))
    return out


def main():
    cmd, repo = sys.argv[1], sys.argv[2]
    if cmd == "entries":
        for path, offset, length, kind, key, _ in entries(repo, kinds_arg(sys.argv[3] if len(sys.argv) > 3 else None)):
            print(path, offset, length, kind, key)
    elif cmd == "remove":
        seed, percent = int(sys.argv[3]), int(sys.argv[4])
        chosen = entries(repo, kinds_arg(sys.argv[5] if len(sys.argv) > 5 else None))
        chosen.sort(key=lambda e: e[4])
        gone = random.Random(seed).sample(chosen, len(chosen) * percent // 100)
        path, data, _ = read_index(repo)
        for e in gone:
            struct.pack_into("<Q", data, e[5] + PACK_FIELD, REMOVED)
        live = struct.unpack_from("<Q", data, 24)[0]
        struct.pack_into("<Q", data, 24, live - len(gone))
        open(path, "r+b").write(data)
        print(f"{len(gone)} of {len(chosen)}")
    elif cmd == "flip":
        kinds, how = kinds_arg(sys.argv[3]), sys.argv[4]
        by_pack = {}
        for e in entries(repo, kinds):
            by_pack.setdefault(e[0], []).append(e)
        n = 0
        for path, es in sorted(by_pack.items()):
            b = bytearray(open(path, "rb").read())
            targets = [max(es, key=lambda e: e[2])] if how == "largest" else es
            for offset in sorted({e[1] for e in targets}):
                stored_len = struct.unpack_from("<I", b, offset)[0]
                b[offset + BLOCK_HEADER + stored_len // 2] ^= 0x20
                n += 1
            open(path, "r+b").write(b)
        print(n)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
