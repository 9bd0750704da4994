"""A zstd bomb through every decode entry point, reads *and* writes (issue 23).

test_decode_bombs.py reads whole arrays; here one 512 MiB zstd bomb (16 KB stored: RLE
blocks) replaces a 64 KiB chunk -- a plain chunk, an inner chunk of a shard, a v2 chunk,
a variable-length string chunk -- and every way zarrcy decodes a stored value meets it:
whole, partial (one inner chunk, several), a single element, points (vindex), and the
read-modify-write of partial writes (basic, oindex, vindex; the shard ``rewrite`` and
``append`` strategies), and a conversion reading it as its source.  Two bombs: a frame
*without* a content size, and one whose header claims the 512 MiB (a decoder that
trusts the claim allocates it first).

Each entry point must raise CorruptChunkError (naming the key), leave the stored value
unchanged, and grow the peak RSS (VmHWM, reset before each step) by less than 48 MiB: fixed-size chunks (64 KiB) run
with the default ``max_chunk_bytes`` (8 GiB), so a decoder capped by that global limit
instead of the chunk's size is caught; the variable-length bound is ``max_chunk_bytes``,
16 MiB for those steps.  One child process (forked from a runner that imported zarrcy once:
``_forkrun.py``) runs them all (the peak RSS is per process), printing one line per entry point.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import run  # noqa: E402
from _peak import PEAK  # noqa: E402

SCRIPT = PEAK + textwrap.dedent('''
    import json, os, sys
    import numpy as np
    import zarrcy
    from zarrcy.errors import CorruptChunkError, ZarrcyError

    root, bomb_kind = sys.argv[1], sys.argv[2]
    MIB = 1 << 20
    N = 512  # MiB in the bomb

    def bomb():
        blocks = [((128 << 10) << 3 | 2 | (i == N * 8 - 1)).to_bytes(3, "little") + b"\\x00" for i in range(N * 8)]
        if bomb_kind == "no-size":  # Single_Segment 0, no Frame_Content_Size, window 2^27
            return bytes.fromhex("28b52ffd") + bytes([0x00, 0x38]) + b"".join(blocks)
        # Frame_Content_Size (8 bytes) claims the 512 MiB; single segment
        return bytes.fromhex("28b52ffd") + bytes([0xE0]) + (N * MIB).to_bytes(8, "little") + b"".join(blocks)

    B = bomb()
    # fixed-size chunks run with the default max_chunk_bytes (8 GiB): their decoders must
    # stop at the chunk's own size, not at the global limit
    ELEMS = 16384  # int32: 64 KiB per (inner) chunk
    zstd = zarrcy.codecs.ZstdCodec(level=1)

    fails = []

    def step(name, key, store, fn):
        before_val = store.get(key)
        base = peak_reset()
        try:
            fn()
        except CorruptChunkError as e:
            named = key in str(e) or (getattr(e, "key", None) or "").endswith(key)
            if not named:
                fails.append(f"{name}: the error does not name {key}: {e}")
        except ZarrcyError as e:  # a conversion wraps it: must still be refused
            if "corrupt" not in str(e).lower() and "zstd" not in str(e).lower():
                fails.append(f"{name}: {type(e).__name__}: {e}")
        except BaseException as e:
            fails.append(f"{name}: raised {type(e).__name__}: {e}")
        else:
            fails.append(f"{name}: the bomb was decoded")
        grew = peak_growth(base)
        if grew > 48 * MIB:
            fails.append(f"{name}: peak RSS grew by {grew >> 20} MiB")
        if store.get(key) != before_val:
            fails.append(f"{name}: the stored value changed")
        print(f"{name}: rss +{grew >> 20} MiB")

    # ---- plain chunks, v3
    p = zarrcy.create_array(os.path.join(root, "plain"), shape=(2 * ELEMS,), chunks=(ELEMS,), dtype="int32",
                            compressors=[zstd], fill_value=0)
    p[...] = 1
    p.store.set("c/0", B)
    st, k = p.store, "c/0"
    step("plain whole", k, st, lambda: p[...])
    step("plain partial", k, st, lambda: p[10:20])
    step("plain element", k, st, lambda: p[5])
    step("plain vindex", k, st, lambda: p.vindex[np.array([3, 7])])
    step("plain oindex", k, st, lambda: p.oindex[np.array([3, 7])])
    step("plain partial write", k, st, lambda: p.__setitem__(slice(10, 20), 2))
    step("plain oindex write", k, st, lambda: p.oindex.__setitem__(np.array([3, 9]), 2))
    step("plain vindex write", k, st, lambda: p.vindex.__setitem__(np.array([3, 9]), 2))

    # ---- shards (4 inner chunks), both write strategies
    for strategy in ("rewrite", "append"):
        zarrcy.config(shard_write_strategy=strategy)
        s = zarrcy.create_array(os.path.join(root, "sharded-" + strategy), shape=(8 * ELEMS,), chunks=(ELEMS,),
                                shards=(4 * ELEMS,), dtype="int32", compressors=[zstd], fill_value=0)
        s[...] = 1
        raw = s.store.get("c/0")
        # splice the bomb in as inner chunk 1: rebuild the shard with the same codec layout
        from zarrcy.codecs.sharding.format import SENTINEL
        codec = s.metadata.codecs[0]
        layout = codec.layout(s.metadata.spec)
        flat = np.array(layout.decode_index(raw[-layout.index_size:]), np.uint64)
        offs, nbs = flat[0::2].copy(), flat[1::2].copy()
        parts, pos, new = [], 0, np.full(8, SENTINEL, np.uint64)
        for i in range(4):
            b = B if i == 1 else raw[int(offs[i]):int(offs[i] + nbs[i])]
            parts.append(b)
            new[2 * i], new[2 * i + 1] = pos, len(b)
            pos += len(b)
        s.store.set("c/0", b"".join(parts) + bytes(layout.encode_index(new)))
        st, k = s.store, "c/0"
        q = ELEMS  # the first element of the bomb inner chunk
        step(f"{strategy}: shard whole", k, st, lambda: s[0:4 * ELEMS])
        step(f"{strategy}: inner chunk", k, st, lambda: s[q:q + ELEMS])
        step(f"{strategy}: part of one inner chunk", k, st, lambda: s[q + 5:q + 50])
        step(f"{strategy}: across inner chunks", k, st, lambda: s[q - 5:q + 5])
        step(f"{strategy}: element", k, st, lambda: s[q + 3])
        step(f"{strategy}: vindex", k, st, lambda: s.vindex[np.array([2, q + 3])])
        step(f"{strategy}: oindex", k, st, lambda: s.oindex[np.array([q + 3, 2])])
        step(f"{strategy}: partial write", k, st, lambda: s.__setitem__(slice(q + 1, q + 9), 7))
        step(f"{strategy}: oindex write", k, st, lambda: s.oindex.__setitem__(np.array([q + 1, 3]), 7))
        step(f"{strategy}: vindex write", k, st, lambda: s.vindex.__setitem__(np.array([q + 2, q + 4]), 7))
    zarrcy.config(shard_write_strategy="rewrite")

    # ---- v2 (numcodecs Zstd compressor)
    v2 = zarrcy.create_array(os.path.join(root, "v2"), shape=(2 * ELEMS,), chunks=(ELEMS,), dtype="int32",
                             zarr_format=2, compressors=[{"id": "zstd", "level": 1}], fill_value=0)
    v2[...] = 1
    v2.store.set("0", B)
    step("v2 whole", "0", v2.store, lambda: v2[...])
    step("v2 element", "0", v2.store, lambda: v2[5])
    step("v2 partial write", "0", v2.store, lambda: v2.__setitem__(slice(1, 3), 2))

    # ---- variable-length strings (no decoded size: bounded by max_chunk_bytes)
    zarrcy.config(max_chunk_bytes=16 * MIB)
    t = zarrcy.create_array(os.path.join(root, "str"), shape=(8,), chunks=(4,), dtype=str, compressors=[zstd],
                            fill_value="")
    t[...] = "abc"
    t.store.set("c/0", B)
    step("string read", "c/0", t.store, lambda: t[0:2])
    step("string partial write", "c/0", t.store, lambda: t.__setitem__(slice(1, 2), "x"))

    # ---- a conversion reading the bomb as its source
    from zarrcy.convert.engine import convert
    step("convert source", "c/0", p.store,
         lambda: convert(os.path.join(root, "plain"), os.path.join(root, "out"), rewrite=True, progress="off",
                         workers=1))

    # control: the measurement sees an allocation of that order, freed before it looks
    base = peak_reset()
    big = np.ones(128 * MIB, np.uint8)
    del big
    if peak_growth(base) < 120 * MIB:
        fails.append(f"control: 128 MiB allocated and freed, peak RSS grew by only {peak_growth(base) >> 20} MiB")

    if fails:
        raise SystemExit("\\n".join(fails))
    print("ok")
''')


@pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="peak RSS per step needs Linux /proc")
@pytest.mark.parametrize("bomb", ["no-size", "claimed-size"])
def test_zstd_bomb_through_every_decode_entry_point(tmp_path, bomb):
    r = run(["-c", SCRIPT, tmp_path, bomb], timeout=600)  # its own process, forked: ``_forkrun.py``
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout[-4000:] + r.stderr[-4000:]
