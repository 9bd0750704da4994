"""Regression (issue 23, item 8): a partial write into a shard with a large index holds
the old index and the new one, and nothing else of their size.

Before the fix, writing one element into a shard of 2^22 one-byte inner chunks (a 64 MiB
index) peaked at 496 MiB of traced memory (300 MiB when only a few inner chunks were
stored; 1.09 GB for 2^24 inner chunks in the campaign): an array of sizes, a Morton
layout with five temporaries of 8 bytes per entry, sorted copies of the offsets, the
kept chunks' offsets and sizes for the checks and the splice plan.  Now the new index
is read into the writer's own buffer and turned into the new index in place (sizes
first, offsets laid out over them, ``format.lay_out_in_place``; ``writer._rewrite_spliced``),
and the checks and the splice plan walk the inner chunks in bounded blocks
(``splice_plan``): peak <= index + index / 2 + 16 MiB (one copy of the index, plus a few
one-byte-per-entry masks).  Peak memory is measured
with tracemalloc (numpy's buffers are traced).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import zarrcy
from zarrcy.codecs.sharding import format as shard_format, splice_plan
from zarrcy.storage.local import _FileSnapshot

MIB = 1 << 20


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _traced_peak(fn):
    import tracemalloc

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _store(kind: str, tmp_path):
    if kind == "local":
        return str(tmp_path / "a")
    if kind == "memory":
        return zarrcy.storage.MemoryStore()
    return zarrcy.storage.ZipStore(str(tmp_path / "a.zip"), mode="w")  # members stored, not compressed


@pytest.mark.parametrize("kind,full", [("local", True), ("local", False), ("memory", False), ("zip", False)])
def test_one_element_write_into_a_large_index(tmp_path, kind, full):
    """LocalStore writes the new shard from the parts (no copy in memory); MemoryStore
    and ZipStore build the new value in memory (``Store.set_spliced``), which holds the
    new index too: the bound adds that value.  Before the index was read into the
    writer's own buffer on these two stores (``ValueSnapshot.get_owned``'s default), a
    zip member's index was held three times (the bytes read, the new index, the value)."""
    n = 1 << (24 if os.environ.get("ZARRCY_SLOW") else 22)
    a = zarrcy.create_array(_store(kind, tmp_path), shape=(n,), chunks=(1,), shards=(n,), dtype="uint8",
                            fill_value=0, compressors=None)
    if full:
        a[:] = 1
    else:
        a[5] = 1
    index = 16 * n + 4
    value = 0 if kind == "local" else index + 2  # the new shard: two one-byte inner chunks and the index

    def write() -> None:
        a[n // 2 + 3] = 2

    peak = _traced_peak(write)
    bound = index + value + index // 2 + 16 * MIB
    assert peak <= bound, f"peak {peak >> 20} MiB > {bound >> 20} MiB for a {index >> 20} MiB index"
    assert int(a[n // 2 + 3]) == 2 and int(a[5]) == 1 and int(a[n - 1]) == (1 if full else 0)


@settings(max_examples=20, deadline=None)
@given(
    cps=st.tuples(st.integers(1, 5), st.integers(1, 5)), inner=st.integers(1, 3),
    writes=st.lists(st.tuples(st.integers(0, 14), st.integers(0, 14), st.integers(1, 6), st.integers(1, 6)),
                    min_size=1, max_size=4),
    order=st.sampled_from(["morton", "lexicographic"]), start=st.booleans(),
)
@example(cps=(5, 4), inner=2, writes=[(0, 0, 6, 6), (3, 2, 1, 1)], order="morton", start=False)
def test_blocked_splice_plan_writes_what_numpy_and_zarr_read(tmp_path_factory, cps, inner, writes, order, start):
    """The blocked plan (blocks of 3 inner chunks here, so runs cross block boundaries)
    gives the bytes of the unblocked one, and the data numpy and zarr-python read."""
    import zarr

    shape = (cps[0] * inner, cps[1] * inner)
    ref = np.zeros(shape, np.int32)
    roots = []
    saved = splice_plan.BLOCK, shard_format._LAYOUT_BLOCK
    ran = []
    real = _FileSnapshot.get_owned
    _FileSnapshot.get_owned = lambda self, r: (ran.append(1), real(self, r))[1]  # type: ignore[method-assign]
    try:
        for block, in_place in ((3, False), (None, False), (3, True)):
            _write_case(tmp_path_factory, roots, shape, inner, start, order, writes, block, in_place, saved)
    finally:
        _FileSnapshot.get_owned = real  # type: ignore[method-assign]
        splice_plan.BLOCK, shard_format._LAYOUT_BLOCK = saved
    spans = [(min(r + h, shape[0]) - r, min(c + w, shape[1]) - c) for r, c, h, w in writes]
    if any(0 < a and 0 < b and (a, b) != shape for a, b in spans):  # a partial write: a rewrite ran
        assert ran  # shard_index_cache=0: the old index came in its own buffer and became the new one
    ref[...] = np.arange(ref.size, dtype=np.int32).reshape(shape)
    for k, (r, c, h, w) in enumerate(writes):
        ref[r:r + h, c:c + w] = -1 - k
    blocked, plain, in_place_bytes = (_read(os.path.join(r, "c", "0", "0")) for r in roots)
    assert blocked == plain == in_place_bytes
    np.testing.assert_array_equal(zarrcy.open_array(roots[2], mode="r")[...], ref)
    np.testing.assert_array_equal(zarr.open_array(roots[2], mode="r")[...], ref)


def _write_case(tmp_path_factory, roots, shape, inner, start, order, writes, block, in_place, saved):
    """One writer run of the property test above: ``block`` inner chunks per plan step
    (None: unblocked), ``in_place``: shard_index_cache=0, so every index is a writer's own
    buffer, turned into the new index in place."""
    root = str(tmp_path_factory.mktemp("w") / "a")
    roots.append(root)
    zarrcy.create_array(root, shape=shape, chunks=(inner, inner), shards=shape, dtype="int32",
                        fill_value=0, compressors=None)
    if start:
        with open(os.path.join(root, "zarr.json")) as f:
            meta = json.load(f)
        meta["codecs"][0]["configuration"]["index_location"] = "start"
        with open(os.path.join(root, "zarr.json"), "w") as f:
            json.dump(meta, f)
    a = zarrcy.open_array(root, mode="a")
    a[...] = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    if block is not None:
        splice_plan.BLOCK = shard_format._LAYOUT_BLOCK = block
    try:
        with zarrcy.config.set(subchunk_write_order=order, shard_index_cache=0 if in_place else 64 << 20):
            for k, (r, c, h, w) in enumerate(writes):
                a[r:r + h, c:c + w] = -1 - k
    finally:
        splice_plan.BLOCK, shard_format._LAYOUT_BLOCK = saved
