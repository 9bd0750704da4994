"""Sharded arrays: zarrcy <-> zarr-python 3.4 and tensorstore, bit-exact."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrcy


def _meta(shape, shard, inner, index_location="end", inner_codecs=None, nested=None, dtype="uint16", fill=0):
    inner_codecs = inner_codecs or [{"name": "bytes", "configuration": {"endian": "little"}},
                                    {"name": "gzip", "configuration": {"level": 1}}]
    if nested:
        inner_codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(nested), "codecs": inner_codecs,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}]
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": list(inner), "codecs": inner_codecs,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": index_location}}]}


CASES = {
    "end": dict(shape=(37, 29), shard=(16, 16), inner=(4, 8)),
    "start": dict(shape=(37, 29), shard=(16, 16), inner=(4, 8), index_location="start"),
    "nested": dict(shape=(40, 40), shard=(32, 32), inner=(16, 16), nested=(4, 4)),
    "3d-bigendian": dict(shape=(9, 10, 11), shard=(8, 8, 8), inner=(4, 4, 2),
                         inner_codecs=[{"name": "bytes", "configuration": {"endian": "big"}}]),
}


def _data(shape):
    rng = np.random.default_rng(1)
    d = rng.integers(0, 4000, shape).astype("uint16")
    d[tuple(slice(0, s // 3) for s in shape)] = 0  # some all-fill inner chunks / shards
    return d


@pytest.mark.parametrize("case", list(CASES))
def test_zarrcy_writes_sharded(tmp_path, case):
    m = _meta(**CASES[case])
    d = _data(m["shape"])
    p = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(p, metadata=m)
    a[...] = d
    np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], d)
    np.testing.assert_array_equal(ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}}).result().read().result(), d)
    # partial writes keep interop
    a[3:7, 5:9] = 7
    d[3:7, 5:9] = 7
    np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], d)


@pytest.mark.parametrize("case", list(CASES))
def test_zarr_python_writes_sharded(tmp_path, case):
    m = _meta(**CASES[case])
    d = _data(m["shape"])
    p = str(tmp_path / "z.zarr")
    os.makedirs(p)
    with open(f"{p}/zarr.json", "w") as f:
        json.dump(m, f)
    z = zarr.open_array(p, mode="r+")
    z[...] = d
    a = zarrcy.open_array(p, mode="r")
    np.testing.assert_array_equal(a[...], d)
    sel = tuple(slice(1, s - 2, 3) for s in d.shape)
    np.testing.assert_array_equal(a[sel], d[sel])
    idx = tuple(np.array([0, s - 1, s // 2]) for s in d.shape)
    np.testing.assert_array_equal(a.vindex[idx], d[idx])
    np.testing.assert_array_equal(a.oindex[idx], d[np.ix_(*idx)])


def test_tensorstore_writes_sharded(tmp_path):
    m = _meta(**CASES["end"])
    d = _data(m["shape"])
    p = str(tmp_path / "t.zarr")
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}, "metadata": m}, create=True).result()
    t[5:30, 2:20].write(d[5:30, 2:20]).result()
    e = np.zeros_like(d)
    e[5:30, 2:20] = d[5:30, 2:20]
    np.testing.assert_array_equal(zarrcy.open_array(p, mode="r")[...], e)


def test_create_array_shards_like_zarr_python(tmp_path):
    pz, pc = str(tmp_path / "zp.zarr"), str(tmp_path / "zc.zarr")
    zarr.create_array(pz, shape=(64, 64), dtype="float32", chunks=(8, 8), shards=(32, 32))
    a = zarrcy.create_array(pc, shape=(64, 64), dtype="float32", chunks=(8, 8), shards=(32, 32))
    with open(f"{pz}/zarr.json") as f:
        mz = json.load(f)
    with open(f"{pc}/zarr.json") as f:
        mc = json.load(f)
    assert mc["codecs"] == mz["codecs"]
    assert mc["chunk_grid"] == mz["chunk_grid"]
    assert a.chunks == (8, 8) and a.shards == (32, 32)
