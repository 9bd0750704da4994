"""Arrays written by zarrcy read bit-exactly in zarr-python and tensorstore, and back."""

from __future__ import annotations

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrcy

DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]

CHAINS = {
    "bytes-le": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "bytes-be": [{"name": "bytes", "configuration": {"endian": "big"}}],
    "transpose": [{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}}],
    "gzip": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 5}}],
    "zstd-crc": [{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "zstd", "configuration": {"level": 3, "checksum": True}}, {"name": "crc32c"}],
    "blosc-shuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 0, "blocksize": 0}}],
    "blosc-bitshuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 0, "blocksize": 0}}],
    "blosc-noshuffle": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "blosc", "configuration": {"cname": "blosclz", "clevel": 9, "shuffle": "noshuffle", "typesize": 0, "blocksize": 0}}],
}


def _data(dtype: str, shape=(13, 7)) -> np.ndarray:
    rng = np.random.default_rng(abs(hash(dtype)) % 2**32)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if dt.kind == "f":
        x = rng.normal(0, 1000, shape).astype(dt)
        x.flat[:4] = [np.nan, np.inf, -np.inf, -0.0]
        return x
    x = (rng.normal(0, 10, shape) + 1j * rng.normal(0, 10, shape)).astype(dt)
    return x


def _chain(name: str, dtype: str) -> list:
    chain = [dict(c, configuration=dict(c.get("configuration", {}))) if "configuration" in c else dict(c) for c in CHAINS[name]]
    for c in chain:
        if c["name"] == "bytes" and np.dtype(dtype).itemsize == 1:
            c.pop("configuration", None)
        if c["name"] == "blosc":
            c["configuration"]["typesize"] = np.dtype(dtype).itemsize
    return chain


def _meta(dtype: str, chain: list, shape=(13, 7), chunks=(5, 4), fill=None) -> dict:
    if fill is None:
        fill = False if dtype == "bool" else ([0.0, 0.0] if dtype.startswith("complex") else 0)
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": chain, "attributes": {}}


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()  # bit-exact (NaN payloads, -0.0)


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_zarrcy_writes_peers_read(tmp_path, dtype, chain):
    data = _data(dtype)
    p = str(tmp_path / "a.zarr")
    a = zarrcy.create_array(p, metadata=_meta(dtype, _chain(chain, dtype)))
    a[...] = data
    _same(zarr.open_array(p, mode="r")[...], data)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}}).result()
    _same(t.read().result(), data)


@pytest.mark.parametrize("chain", list(CHAINS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_zarr_python_writes_zarrcy_reads(tmp_path, dtype, chain):
    data = _data(dtype)
    p = str(tmp_path / "z.zarr")
    store = zarr.storage.LocalStore(p)
    m = _meta(dtype, _chain(chain, dtype))
    import json, os

    os.makedirs(p, exist_ok=True)
    with open(os.path.join(p, "zarr.json"), "w") as f:
        json.dump(m, f)
    z = zarr.open_array(store, mode="r+")
    z[...] = data
    _same(zarrcy.open_array(p, mode="r")[...], data)


@pytest.mark.parametrize("dtype", ["int16", "float32", "uint64"])
def test_tensorstore_writes_zarrcy_reads(tmp_path, dtype):
    data = _data(dtype)
    p = str(tmp_path / "t.zarr")
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p},
                 "metadata": _meta(dtype, _chain("gzip", dtype))}, create=True).result()
    t[0:9, 0:5].write(data[0:9, 0:5]).result()  # leave some chunks missing
    out = zarrcy.open_array(p, mode="r")[...]
    expect = np.zeros_like(data)
    expect[0:9, 0:5] = data[0:9, 0:5]
    _same(out, expect)


def test_fill_values_and_overhang_interop(tmp_path):
    p = str(tmp_path / "f.zarr")
    a = zarrcy.create_array(p, shape=(11, 6), dtype="float64", chunks=(4, 4), fill_value=float("nan"),
                            compressors=[zarrcy.codecs.GzipCodec(level=1)])
    a[9:11, 5] = [1.0, 2.0]
    z = zarr.open_array(p, mode="r")[...]
    assert np.isnan(z[:9]).all() and z[10, 5] == 2.0
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}}).result().read().result()
    np.testing.assert_array_equal(t, z)


def test_default_codecs_match_zarr_python(tmp_path):
    import json

    pz, pc = str(tmp_path / "zp.zarr"), str(tmp_path / "zc.zarr")
    zarr.create_array(pz, shape=(100,), dtype="float32", chunks=(10,))
    zarrcy.create_array(pc, shape=(100,), dtype="float32", chunks=(10,))
    with open(f"{pz}/zarr.json") as f:
        mz = json.load(f)
    with open(f"{pc}/zarr.json") as f:
        mc = json.load(f)
    assert mc["codecs"] == mz["codecs"]
    assert mc["fill_value"] == mz["fill_value"]
    assert mc["chunk_key_encoding"] == mz["chunk_key_encoding"]
