"""Property tests (issue 7.5): random metadata x random selections x random data round-trip
through every store and codec chain (incl. lossless cast_value and scale_offset) and
equal numpy, read back by zarrcy and by zarr-python (the independent reader); random interleavings of writes,
reads and resizes match a numpy model (hypothesis RuleBasedStateMachine).

Resize semantics modelled (v3-core.rst, implementation notes "Resizing"): shrinking
deletes stored objects (chunks, or shards) wholly outside the new shape; data in the
overhang of an edge object is kept, so growing again may show it ("If there was chunk
data in the new area which was not deleted when shrinking the array, this data will be
shown").  The model therefore allows, for exactly those cells, either the fill value or
the value last written there; every other cell must be exact.
"""

from __future__ import annotations

import math
import os
import tempfile
import warnings
from typing import Any

import numpy as np
import zarr
import zarr.storage
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from zarr.core.buffer import cpu

import zarrcy
from zarrcy.storage import LocalStore, MemoryStore, ZipStore

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex64"]
WIDER = {"int8": "int32", "uint16": "int64", "int32": "int64", "float32": "float64"}
BB = {
    "gzip": {"name": "gzip", "configuration": {"level": 1}},
    "zstd": {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    "blosc": {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}},
    "crc32c": {"name": "crc32c"},
}


def _random_data(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    x = rng.standard_normal(shape).astype(dt)
    if x.size:
        x.reshape(-1)[rng.integers(0, x.size)] = np.nan
    return x


@st.composite
def array_setups(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(DTYPES))
    endian = draw(st.sampled_from(["little", "big"]))
    sharded = draw(st.booleans())
    codecs: list = []
    if not sharded and ndim > 1 and draw(st.booleans()):
        codecs.append({"name": "transpose", "configuration": {"order": list(reversed(range(ndim)))}})
    if not sharded and draw(st.booleans()):
        # exact array->array codecs: scale_offset by 2 on float64 (exact in binary), or
        # cast_value to a wider type (lossless)
        if dtype == "float64":
            codecs.append({"name": "scale_offset", "configuration": {"offset": 0, "scale": 2}})
        elif dtype in WIDER:
            codecs.append({"name": "cast_value", "configuration": {"data_type": WIDER[dtype]}})
    inner = [{"name": "bytes", "configuration": {"endian": endian}}]
    bb = draw(st.lists(st.sampled_from(sorted(BB)), max_size=2, unique=True))
    if "crc32c" in bb:  # crc32c last, as usually configured (any order is legal)
        bb = [b for b in bb if b != "crc32c"] + ["crc32c"]
    inner += [BB[b] for b in bb]
    if sharded:
        factor = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
        outer = tuple(c * f for c, f in zip(chunks, factor))
        codecs.append({"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(chunks), "codecs": inner,
            "index_location": draw(st.sampled_from(["start", "end"]))}})
        grid_chunks = outer
    else:
        codecs += inner
        grid_chunks = chunks
    fill = draw(st.sampled_from([0, 1])) if dtype != "bool" else draw(st.booleans())
    store = draw(st.sampled_from(["memory", "local", "zip"]))
    seed = draw(st.integers(0, 2**32 - 1))
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid_chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": draw(st.sampled_from(["/", "."]))}},
        "fill_value": [fill, 0] if dtype.startswith("complex") else fill, "codecs": codecs,
    }
    return meta, store, seed


def _selection(rng: np.random.Generator, shape) -> tuple:
    sel = []
    for n in shape:
        k = rng.integers(0, 4)
        if n == 0 or k == 0:
            sel.append(slice(None))
        elif k == 1:
            sel.append(int(rng.integers(-n, n)))
        elif k == 2:
            a, b = sorted(rng.integers(0, n + 1, size=2).tolist())
            sel.append(slice(a, b, int(rng.integers(1, 4))))
        else:
            sel.append(slice(int(rng.integers(0, n)), None))
    return tuple(sel)


def _eq(got, want) -> bool:
    got, want = np.asarray(got), np.asarray(want)
    return got.shape == want.shape and np.array_equal(got, want, equal_nan=want.dtype.kind in "fc")


def _sharded_meta(shape, chunks, shards, dtype, fill, location="end", codecs=None):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shards)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(chunks), "index_location": location,
            "codecs": codecs or [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
    }


# every bug this test ever found, replayed on every run (issue 12.15: a whole shard of
# fill values in a ZipStore was erased -- zip stores cannot delete; seed 11 draws
# [False, False])
@example(setup=(_sharded_meta([2], [1], [2], "bool", False), "zip", 11))
@example(setup=(_sharded_meta([4], [1], [2], "int8", 0, "start"), "zip", 11))
@settings(max_examples=60 if SLOW else 25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(array_setups())
def test_roundtrip_every_store_and_chain(setup):
    meta, kind, seed = setup
    rng = np.random.default_rng(seed)
    shape = tuple(meta["shape"])
    with tempfile.TemporaryDirectory() as d:
        if kind == "memory":
            store = MemoryStore()
        elif kind == "local":
            store = LocalStore(os.path.join(d, "a"))
        else:
            store = ZipStore(os.path.join(d, "a.zip"), mode="w")
        try:
            a = zarrcy.create_array(store, metadata=meta)
            fv = meta["fill_value"]
            ref = np.full(shape, complex(*fv) if isinstance(fv, list) else fv, dtype=np.dtype(meta["data_type"]))
            assert _eq(a[...], ref)
            data = _random_data(rng, shape, meta["data_type"])
            a[...] = data
            ref[...] = data
            for _ in range(3):
                sel = _selection(rng, shape)
                assert _eq(a[sel], ref[sel]), sel
            if math.prod(shape):
                # orthogonal integer arrays, and a partial write
                idx = tuple(np.unique(rng.integers(0, n, size=3)) for n in shape)
                assert _eq(a.oindex[idx], ref[np.ix_(*idx)])
                sel = _selection(rng, shape)
                v = _random_data(rng, ref[sel].shape, meta["data_type"])
                a[sel] = v
                ref[sel] = v
            assert _eq(a[...], ref)
        finally:
            if kind == "zip":
                store.close()
            if kind == "memory":
                assert _eq(_zarr_python_read(store, kind, d), ref)
        if kind != "memory":
            url = os.path.join(d, "a") if kind == "local" else os.path.join(d, "a.zip")
            b = zarrcy.open_array(url, mode="r")
            assert _eq(b[...], ref)
            if kind == "zip":
                b.store.close()
            # an independent reader: zarr-python (as tests/v2/test_v2_property.py does)
            assert _eq(_zarr_python_read(None, kind, d), ref)


def _zarr_python_read(store, kind: str, d: str) -> np.ndarray:
    """The whole array as zarr-python 3 reads it from what zarrcy wrote."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python warns about extension codecs/data types
        if kind == "memory":
            data = {k: cpu.Buffer.from_bytes(store.get(k)) for k in store.list()}
            zs: Any = zarr.storage.MemoryStore(data)
        elif kind == "local":
            zs = zarr.storage.LocalStore(os.path.join(d, "a"), read_only=True)
        else:
            zs = zarr.storage.ZipStore(os.path.join(d, "a.zip"), mode="r")
        try:
            return np.asarray(zarr.open_array(zs, mode="r")[...])
        finally:
            if kind == "zip":
                zs.close()


class ResizeMachine(RuleBasedStateMachine):
    """Writes, reads and resizes of one array against a numpy model (see module doc)."""

    MAX = 10

    @initialize(ndim=st.integers(1, 2), chunk=st.integers(1, 4), shard=st.integers(1, 2),
                sharded=st.booleans(), strategy=st.sampled_from(["rewrite", "append"]),
                local=st.booleans(), seed=st.integers(0, 2**32 - 1))
    def setup(self, ndim, chunk, shard, sharded, strategy, local, seed):
        self.rng = np.random.default_rng(seed)
        self.tmp = tempfile.TemporaryDirectory()
        store = LocalStore(self.tmp.name) if local else MemoryStore()
        zarrcy.config(shard_write_strategy=strategy)
        self.fill = -1
        shape = (5,) * ndim
        kw = dict(shape=shape, dtype="int32", fill_value=self.fill)
        if sharded:
            kw.update(chunks=(chunk,) * ndim, shards=(chunk * shard,) * ndim)
        else:
            kw.update(chunks=(chunk,) * ndim)
        self.a = zarrcy.create_array(store, **kw)
        self.obj = (chunk * shard if sharded else chunk,) * ndim  # stored-object shape
        self.val = np.full((self.MAX,) * ndim, self.fill, dtype=np.int32)
        self.unc = np.zeros(self.val.shape, dtype=bool)  # cell may show fill or val
        self.shape = shape

    def teardown(self):
        zarrcy.config(shard_write_strategy="rewrite")
        if hasattr(self, "tmp"):
            self.tmp.cleanup()

    def _visible(self):
        return tuple(slice(0, n) for n in self.shape)

    @rule(data=st.data())
    def write(self, data):
        if not math.prod(self.shape):
            return
        sel = _selection(self.rng, self.shape)
        target = self.val[self._visible()][sel]
        v = self.rng.integers(0, 1000, size=np.shape(target)).astype(np.int32)
        if data.draw(st.booleans(), label="scalar"):
            v = np.int32(self.rng.integers(0, 1000))
        self.a[sel] = v
        vis_val = self.val[self._visible()]
        vis_unc = self.unc[self._visible()]
        vis_val[sel] = v
        vis_unc[sel] = False

    @rule(sizes=st.lists(st.integers(0, MAX), min_size=2, max_size=2))
    def resize(self, sizes):
        new = tuple(sizes[: len(self.shape)])
        self.a.resize(new)
        old_grid = [-(-s // c) for s, c in zip(self.shape, self.obj)]
        new_grid = [-(-s // c) for s, c in zip(new, self.obj)]
        idx = np.indices(self.val.shape)
        outside_new = np.zeros(self.val.shape, dtype=bool)
        deleted = np.zeros(self.val.shape, dtype=bool)
        in_old_grid = np.ones(self.val.shape, dtype=bool)
        for k, (n, c) in enumerate(zip(new, self.obj)):
            outside_new |= idx[k] >= n
            deleted |= idx[k] // c >= new_grid[k]
            in_old_grid &= idx[k] // c < old_grid[k]
        deleted &= in_old_grid
        # stored objects wholly outside the new shape are deleted: their cells are fill
        self.val[deleted] = self.fill
        self.unc[deleted] = False
        # overhang of kept edge objects: may show the old value or the fill value later
        ghost = outside_new & ~deleted
        self.unc[ghost] |= self.val[ghost] != self.fill
        self.shape = new

    @rule()
    def read_some(self):
        if not math.prod(self.shape):
            return
        sel = _selection(self.rng, self.shape)
        got = np.asarray(self.a[sel])
        self._check(got, self.val[self._visible()][sel], self.unc[self._visible()][sel])

    @invariant()
    def whole_array_matches(self):
        if not hasattr(self, "a"):
            return
        assert self.a.shape == self.shape
        got = self.a[...]
        self._check(got, self.val[self._visible()], self.unc[self._visible()])

    def _check(self, got, want, unc):
        got = np.asarray(got)
        want = np.asarray(want)
        unc = np.asarray(unc)
        assert got.shape == want.shape
        exact = ~unc
        assert np.array_equal(got[exact], want[exact]), (got, want, unc)
        loose = got[unc]
        assert np.all((loose == want[unc]) | (loose == self.fill)), (got, want, unc)


TestResizeMachine = ResizeMachine.TestCase
TestResizeMachine.settings = settings(
    max_examples=40 if SLOW else 12, stateful_step_count=25 if SLOW else 15, deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
