#!/usr/bin/env python3
"""The tests' view of repocc's fragment store (src/repo/store.rs, index.rs):
packs under v1/packs, found through the hash table in v1/index.

  store.py entries REPO [KINDS]        every indexed entry: pack, offset, length, kind, key
  store.py remove REPO SEED PERCENT [KINDS]
                                       removes PERCENT of the indexed entries (of KINDS,
                                       e.g. 0,1) from the index, as eviction would; prints
                                       "removed of total"
  store.py flip REPO KINDS largest|last
                                       damages entries of KINDS in place: in every pack the
                                       largest one's middle byte, or every one's last byte;
                                       prints how many

The layout is read the way repocc reads it, so a change there breaks these
tests loudly (a wrong header is an error, not zero entries)."""
import os
import random
import struct
import sys

HEADER = 32
SLOT = 32
REMOVED = 0xFFFFFFFFFFFFFFFF


def read_index(repo):
    path = os.path.join(repo, "v1", "index")
    data = bytearray(open(path, "rb").read())
    assert data[:8] == b"RPCCINDX", f"{path}: not an index"
    version, bits = struct.unpack_from("<II", data, 8)
    assert version == 1 and len(data) == HEADER + SLOT * (1 << bits), f"{path}: unexpected layout"
    return path, data, bits


def live_slots(data, bits):
    for i in range(1 << bits):
        at = HEADER + SLOT * i
        pack, offset, length = struct.unpack_from("<QII", data, at + 16)
        if pack not in (0, REMOVED):
            yield at, data[at:at + 16].hex(), pack, offset, length


def pack_path(repo, pack):
    return os.path.join(repo, "v1", "packs", f"{pack:016x}")


def kind_of(repo, pack, offset):
    try:
        with open(pack_path(repo, pack), "rb") as f:
            f.seek(offset + 12)
            b = f.read(1)
            return b[0] if b else None
    except OSError:
        return None


def kinds_arg(s):
    return None if s is None else {int(k) for k in s.split(",")}


def entries(repo, kinds):
    _, data, bits = read_index(repo)
    out = []
    for at, key, pack, offset, length in live_slots(data, bits):
        kind = kind_of(repo, pack, offset)
        if kinds is None or kind in kinds:
            out.append((pack_path(repo, pack), offset, length, kind, key, at))
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
            struct.pack_into("<QII", data, e[5] + 16, REMOVED, 0, 0)
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
            for _, offset, length, _, _, _ in targets:
                at = offset + 80 + (length - 80) // 2 if how == "largest" else offset + length - 1
                b[at] ^= 0x20
                n += 1
            open(path, "r+b").write(b)
        print(n)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
