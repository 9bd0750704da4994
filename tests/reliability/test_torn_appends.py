"""Torn writes of the ``append`` shard strategy, simulated byte by byte (issue 7.2).

SIGKILL cannot tear a single ``pwrite`` on a local file system (the kill tests in
test_crash_safety.py never observe one), but a power loss or a network store can
persist any *prefix* of a write.  Here every partial write the append strategy makes
is recorded, and the shard is rebuilt as it would be if only the first ``cut`` bytes of
that update had reached the store, for many cuts (0, every boundary, random points, all).

Asserted for every cut: each row of the shard reads as its value before the update,
its value after the update, or raises CorruptChunkError (the torn index is detected);
never any other data.  With the full update the shard equals the new state; with
``cut = 0`` the old one.  Both index locations; with and without crc32c on the inner
chunks (the index's own crc32c is what detects the tear).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError
from zarrcy.storage import MemoryStore

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
ROWS, W = 8, 64
KEY = "c/0/0"


class Recording(MemoryStore):
    """A MemoryStore that records partial writes while ``ops`` is a list."""

    ops: list | None = None

    def set_partial_values(self, key_start_values):
        items = [(k, s, bytes(memoryview(v).cast("B"))) for k, s, v in key_start_values]
        if self.ops is not None:
            self.ops.extend(items)
        super().set_partial_values(items)


def _value(r: int, gen: int) -> np.ndarray:
    return (gen * 1000 + r) * 100_000 + np.arange(W, dtype=np.int64)


def _meta(location: str, inner_crc: bool) -> dict:
    inner = [{"name": "bytes", "configuration": {"endian": "little"}}] + ([{"name": "crc32c"}] if inner_crc else [])
    return {
        "zarr_format": 3, "node_type": "array", "shape": [ROWS, W], "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [ROWS, W]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1, W], "codecs": inner, "index_location": location}}],
    }


def _apply_prefix(before: bytes, ops: list, cut: int) -> bytes:
    buf = bytearray(before)
    left = cut
    for _key, start, data in ops:
        n = min(len(data), left)
        if n <= 0:
            break
        if start + n > len(buf):
            buf.extend(bytes(start + n - len(buf)))
        buf[start : start + n] = data[:n]
        left -= n
    return bytes(buf)


@pytest.mark.parametrize("inner_crc", [True, False], ids=["inner-crc", "no-inner-crc"])
@pytest.mark.parametrize("location", ["end", "start"])
def test_every_prefix_of_an_append_is_old_new_or_detected(restore_config, location, inner_crc):
    zarrcy.config(shard_write_strategy="append", shard_append_dead_ratio=1.0)
    rng = np.random.default_rng(3)
    store = Recording()
    meta = _meta(location, inner_crc)
    a = zarrcy.create_array(store, metadata=meta)
    a[...] = np.stack([_value(r, 0) for r in range(ROWS)])
    gens = [0] * ROWS
    checked = detected = 0
    for step in range(12 if SLOW else 5):
        r = int(rng.integers(ROWS))
        before = store.get(KEY)
        store.ops = []
        a[r] = _value(r, step + 1)
        ops, store.ops = store.ops, None
        assert ops, "the append strategy did not write in place"
        after = store.get(KEY)
        total = sum(len(d) for _, _, d in ops)
        bounds = np.cumsum([0] + [len(d) for _, _, d in ops]).tolist()
        cuts = set(bounds) | {c + d for c in bounds for d in (-1, 1, 4, 8)} | set(rng.integers(0, total + 1, size=60 if SLOW else 25).tolist())
        for cut in sorted(c for c in cuts if 0 <= c <= total):
            torn = _apply_prefix(before, ops, cut)
            if cut == total:
                assert torn == after
            view = MemoryStore({"zarr.json": store.get("zarr.json"), KEY: torn})
            b = zarrcy.open_array(view, mode="r")
            for row in range(ROWS):
                ok = [_value(row, gens[row])] + ([_value(row, step + 1)] if row == r else [])
                try:
                    got = b[row]
                except CorruptChunkError:
                    assert 0 < cut < total, f"cut {cut}/{total}: an untorn shard was refused"
                    detected += 1
                    continue
                assert any(np.array_equal(got, v) for v in ok), f"cut {cut}/{total}, row {row}: wrong data {got[:3]}"
                if cut == 0:
                    assert np.array_equal(got, ok[0])
                if cut == total:
                    assert np.array_equal(got, ok[-1])
                checked += 1
        gens[r] = step + 1
    assert checked and detected, (checked, detected)
    print(f"{location}/{'crc' if inner_crc else 'nocrc'}: {checked} rows checked, {detected} torn reads detected")
