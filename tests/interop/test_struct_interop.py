"""struct arrays (ext-data-types/struct.md) between zarrcy, zarr-python 3.4 and tensorstore:
each writes, the others read the same records; chunk bytes identical where the writers
are deterministic (no compressor); zarr-python's legacy ``structured`` documents read."""

from __future__ import annotations

import base64
import json
import os
import warnings

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrcy
from chunk_files import chunk_files

# zarr-python warns that its S<n> / U<n> / datetime types have no registered spec
pytestmark = pytest.mark.filterwarnings("ignore:The data type .* does not have a Zarr V3 specification")

# tensorstore: one level, string data types only (no nested struct, no configured field types)
FLAT = np.dtype([("id", "<i4"), ("flags", "u1"), ("value", "<f8"), ("h", "<f2"), ("c", "<c8"), ("b", "?")])
# zarr-python: nested structs, strings, times
DEEP = np.dtype([("point", [("x", "<f4"), ("y", "<f4")]), ("value", "<f8"), ("name", "<U3"),
                 ("t", "<M8[s]"), ("raw", "S2"), ("k", "<i2")])


def _records(dt: np.dtype, shape=(9, 5)) -> np.ndarray:
    rng = np.random.default_rng(3)
    a = np.zeros(shape, dtype=dt)
    for name in dt.names:
        f = a[name]
        fdt = dt[name]
        if fdt.names is not None:
            for sub in fdt.names:
                f[sub] = rng.normal(0, 100, shape)
        elif fdt.kind in "iu":
            info = np.iinfo(fdt)
            f[...] = rng.integers(info.min, info.max, shape, endpoint=True)
        elif fdt.kind in "fc":
            f[...] = rng.normal(0, 100, shape)
            f.flat[0] = np.nan if fdt.kind == "f" else complex(np.nan, -0.0)
        elif fdt.kind == "b":
            f[...] = rng.integers(0, 2, shape).astype(bool)
        elif fdt.kind == "U":
            f[...] = np.array(["a", "bc", "déf", ""])[rng.integers(0, 4, shape)]
        elif fdt.kind == "S":
            f[...] = np.array([b"a", b"b\x00", b"xy"])[rng.integers(0, 3, shape)]
        elif fdt.kind == "M":
            f[...] = rng.integers(-(10**9), 10**9, shape).astype("M8[s]")
            f.flat[1] = np.datetime64("NaT", "s")
    return a


def _meta(dt: np.dtype, endian: str, fill: dict, shape=(9, 5), chunks=(4, 2)) -> dict:
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape),
            "data_type": zarrcy.metadata.from_numpy(dt).to_json(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": [{"name": "bytes", "configuration": {"endian": endian}}], "attributes": {}}


FLAT_FILL = {"id": -1, "flags": 7, "value": "NaN", "h": 0.5, "c": [1.0, -2.0], "b": True}


def _load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes | str) -> None:
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape
    assert a.dtype.names == b.dtype.names
    assert a.astype(b.dtype).tobytes() == b.tobytes()  # bit-exact per field (NaN, -0.0)


def _ts_field(path: str, field: str) -> np.ndarray:
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}, "field": field}).result().read().result()


@pytest.mark.parametrize("endian", ["little", "big"])
def test_zarrcy_writes_peers_read(tmp_path, endian):
    data = _records(FLAT)
    p = str(tmp_path / "a.zarr")
    a = zarrcy.create_array(p, metadata=_meta(FLAT, endian, FLAT_FILL))
    a[1:, :] = data[1:, :]  # row 0 stays fill value
    expect = data.copy()
    expect[0] = a.fill_value
    _same(zarr.open_array(p, mode="r")[...], expect)
    for name in FLAT.names:
        got = _ts_field(p, name)
        assert got.tobytes() == expect[name].tobytes(), name
    # what zarrcy wrote is what the others read from their own metadata parse
    doc = _load(os.path.join(p, "zarr.json"))
    assert doc["data_type"]["name"] == "struct" and doc["fill_value"] == FLAT_FILL


@pytest.mark.parametrize("endian", ["little", "big"])
def test_zarrcy_writes_nested_zarr_python_reads(tmp_path, endian):
    data = _records(DEEP)
    p = str(tmp_path / "a.zarr")
    fill = {"point": {"x": 1.0, "y": -2.0}, "value": 0.25, "name": "ab", "t": -(2**63), "raw": "AA==", "k": 3}
    a = zarrcy.create_array(p, metadata=_meta(DEEP, endian, fill))
    a[2:7, 1:] = data[2:7, 1:]
    expect = np.full(data.shape, a.fill_value, dtype=a.dtype)
    expect[2:7, 1:] = data[2:7, 1:]
    z = zarr.open_array(p, mode="r")
    _same(z[...], expect)
    assert z.fill_value.tobytes() == a.fill_value.tobytes()


def test_zarr_python_writes_zarrcy_reads_same_bytes(tmp_path):
    """zarr-python 3.4 writes ``struct`` (object fill value); zarrcy reads it and, writing
    the same records with the same metadata, produces the same chunk bytes."""
    data = _records(DEEP)
    p, q = str(tmp_path / "zp.zarr"), str(tmp_path / "zc.zarr")
    z = zarr.create_array(p, shape=data.shape, chunks=(4, 2), dtype=DEEP, compressors=None,
                          fill_value=np.zeros((), DEEP)[()])
    z[...] = data
    doc = _load(os.path.join(p, "zarr.json"))
    assert doc["data_type"]["name"] == "struct"   # the registered name (not the legacy "structured")
    assert isinstance(doc["fill_value"], dict)
    a = zarrcy.open_array(p, mode="r")
    assert a.dtype == DEEP
    _same(a[...], data)
    b = zarrcy.create_array(q, metadata=doc)
    b[...] = data
    assert chunk_files(q) == chunk_files(p)
    assert _load(os.path.join(q, "zarr.json"))["fill_value"] == doc["fill_value"]


@pytest.mark.parametrize("endian", ["little", "big"])
def test_tensorstore_writes_zarrcy_reads_same_bytes(tmp_path, endian):
    data = _records(FLAT)
    p, q = str(tmp_path / "ts.zarr"), str(tmp_path / "zc.zarr")
    meta = _meta(FLAT, endian, FLAT_FILL)
    for name in FLAT.names:
        t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}, "field": name,
                     "metadata": {k: v for k, v in meta.items() if k != "attributes"},
                     "create": True, "open": True}).result()
        t[...] = data[name]
    a = zarrcy.open_array(p, mode="r")
    _same(a[...], data)
    b = zarrcy.create_array(q, metadata=meta)
    b[...] = data
    assert chunk_files(q) == chunk_files(p)


def test_legacy_structured_document(tmp_path):
    """A document as zarr-python 3.0 - 3.3 wrote it (``structured``, [name, type] pairs,
    base64 fill value, ``bytes`` without ``endian``): zarrcy and zarr-python 3.4 read the
    same records; an attribute update keeps the legacy form."""
    dt = np.dtype([("a", "<i4"), ("b", "<f8")])
    data = np.array([[(1, 1.5), (2, -2.5)], [(3, 0.0), (4, np.inf)]], dtype=dt)
    p = str(tmp_path / "old.zarr")
    os.makedirs(os.path.join(p, "c", "0"))
    fill = np.array((7, 0.5), dtype=dt)
    doc = {"zarr_format": 3, "node_type": "array", "shape": [2, 4],
           "data_type": {"name": "structured", "configuration": {"fields": [["a", "int32"], ["b", "float64"]]}},
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": base64.b64encode(fill.tobytes()).decode(), "codecs": [{"name": "bytes"}],
           "attributes": {}}
    _write(os.path.join(p, "zarr.json"), json.dumps(doc))
    _write(os.path.join(p, "c", "0", "0"), data.tobytes())  # little-endian records
    expect = np.concatenate([data, np.full((2, 2), fill, dtype=dt)], axis=1)
    a = zarrcy.open_array(p, mode="r+")
    _same(a[...], expect)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(zarr.open_array(p, mode="r")[...], expect)
    a.attrs["k"] = 1
    new = _load(os.path.join(p, "zarr.json"))
    assert new["data_type"] == doc["data_type"] and new["fill_value"] == doc["fill_value"]
    assert new["codecs"] == doc["codecs"]
    # writes keep little-endian records
    a[0, 2] = (9, 9.5)
    raw = _read(os.path.join(p, "c", "0", "1"))
    assert np.frombuffer(raw, dtype=dt)[0].tolist() == (9, 9.5)


@pytest.mark.parametrize("dtype", [DEEP, np.dtype([("a", "<i4"), ("p", [("x", "<f4"), ("y", ">f8")])])])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("sharded", [False, True])
def test_zarr_python_with_the_zarrcy_pipeline(dtype, endian, sharded):
    """zarr-python 3.4 with zarrcy's codec pipeline stores and reads records exactly as with
    its own (records with non-native fields fall back to zarr-python's pipeline)."""
    data = _records(dtype, (7, 5))
    out = {}
    for pipe in ("zarr.core.codec_pipeline.BatchedCodecPipeline", "zarrcy.zarr_plugin.ZarrcyCodecPipeline"):
        with zarr.config.set({"codec_pipeline.path": pipe}):
            st = zarr.storage.MemoryStore()
            a = zarr.create_array(st, shape=data.shape, chunks=(3, 2), shards=(6, 4) if sharded else None,
                                  dtype=dtype, compressors=None,
                                  serializer={"name": "bytes", "configuration": {"endian": endian}})
            a[1:, :] = data[1:, :]
            a[0, 1] = data[0, 0]
            out[pipe] = ({k: b.to_bytes() for k, b in st._store_dict.items()}, a[...].tobytes(), a[2:6, 1:4].tobytes())
    assert out["zarr.core.codec_pipeline.BatchedCodecPipeline"] == out["zarrcy.zarr_plugin.ZarrcyCodecPipeline"]
