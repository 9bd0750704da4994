"""The native codec engine's chains (issue 21) against zarr-python 3 and tensorstore, both
ways: sharded inner chains ``transpose? , bytes (either endian) , gzip | zstd | blosc ,
crc32c?`` and the same chains unsharded, plus Zarr v2 blosc / zstd / zlib / gzip arrays
in C and F order.  Cases are drawn from a seeded generator (data types, endianness,
shapes, transposes, codec settings); every read is compared with the data written and
with zarrcy's own Python path (the kernel switched off) -- the peers are the oracle.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import tensorstore as ts
import zarr

import zarrcy
from zarrcy.codecs.sharding import decode_stats, scatter

pytestmark = pytest.mark.interop

DTYPES = ["uint8", "int16", "uint16", "int32", "float32", "float64", "int64", "complex64", "uint32"]
CNAMES = ["lz4", "lz4hc", "blosclz", "zstd", "zlib"]
SHUFFLES = ["noshuffle", "shuffle", "bitshuffle"]


def _compressor(rng: random.Random, dtype: str) -> list[dict]:
    kind = rng.choice(["gzip", "zstd", "blosc", "none"])
    if kind == "gzip":
        return [{"name": "gzip", "configuration": {"level": rng.randint(0, 9)}}]
    if kind == "zstd":
        return [{"name": "zstd", "configuration": {"level": rng.choice([-3, 0, 1, 5]), "checksum": rng.random() < 0.5}}]
    if kind == "blosc":
        return [{"name": "blosc", "configuration": {
            "cname": rng.choice(CNAMES), "clevel": rng.randint(0, 9), "shuffle": rng.choice(SHUFFLES),
            "typesize": np.dtype(dtype).itemsize, "blocksize": rng.choice([0, 0, 128, 1024])}}]
    return []


def _case(seed: int, sharded: bool) -> tuple[dict, np.ndarray]:
    rng = random.Random(seed)
    dtype = rng.choice(DTYPES)
    ndim = rng.randint(1, 3)
    inner = [rng.choice([2, 3, 4, 8]) for _ in range(ndim)]
    shard = [c * rng.randint(1, 3) for c in inner]
    shape = [s * rng.randint(1, 2) + rng.randint(0, s - 1) for s in shard]
    endian = rng.choice(["little", "big"])
    chain: list[dict] = []
    if ndim > 1 and rng.random() < 0.5:
        order = list(range(ndim))
        rng.shuffle(order)
        chain.append({"name": "transpose", "configuration": {"order": order}})
    chain.append({"name": "bytes", "configuration": {"endian": endian}})
    chain += _compressor(rng, dtype)
    if rng.random() < 0.4:
        chain.append({"name": "crc32c"})
    if np.dtype(dtype).itemsize == 1:  # no byte order for 1-byte types
        for c in chain:
            if c["name"] == "bytes":
                c["configuration"] = {}
    fill: object = [0, 0] if np.dtype(dtype).kind == "c" else 0
    if sharded:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": chain,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": rng.choice(["start", "end"])}}]
        chunks = shard
    else:
        codecs = chain
        chunks = inner
    meta = {"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs}
    nrng = np.random.default_rng(seed)
    d = (np.cumsum(nrng.integers(-3, 4, int(np.prod(shape)))).reshape(shape) % 120).astype(dtype)
    d[tuple(slice(0, max(1, s // 3)) for s in shape)] = 0  # all-fill inner chunks
    return meta, d


def _write_meta(p: str, meta: dict) -> None:
    os.makedirs(p)
    with open(f"{p}/zarr.json", "w") as f:
        json.dump(meta, f)


def _selections(shape: list[int]) -> list[tuple]:
    return [
        tuple(slice(None) for _ in shape),
        tuple(slice(1, max(2, s - 1), 2) for s in shape),
        tuple(s // 2 for s in shape),
        tuple(slice(s // 3, s // 3 + 3) for s in shape),
    ]


def _check_reads(a, d: np.ndarray) -> None:
    for sel in _selections(list(d.shape)):
        np.testing.assert_array_equal(a[sel], d[sel])
    idx = tuple(np.array([0, s - 1, s // 2, s // 2]) for s in d.shape)
    np.testing.assert_array_equal(a.vindex[idx], d[idx])
    np.testing.assert_array_equal(a.oindex[idx], d[np.ix_(*idx)])
    # the Python path gives the same values (the kernel's second opinion, not the oracle)
    old = scatter.ENABLED
    scatter.ENABLED = False
    try:
        np.testing.assert_array_equal(a[...], d)
    finally:
        scatter.ENABLED = old


SEEDS = list(range(24))


@pytest.mark.parametrize("sharded", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_peers_write_zarrcy_reads(tmp_path, seed: int, sharded: bool) -> None:
    meta, d = _case(seed, sharded)
    pz, pt = str(tmp_path / "z.zarr"), str(tmp_path / "t.zarr")
    _write_meta(pz, meta)
    zarr.open_array(pz, mode="r+")[...] = d
    _check_reads(zarrcy.open_array(pz, mode="r"), d)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": pt}, "metadata": meta}, create=True).result()
    t[...].write(d).result()
    _check_reads(zarrcy.open_array(pt, mode="r"), d)


@pytest.mark.parametrize("sharded", [True, False])
@pytest.mark.parametrize("seed", SEEDS)
def test_zarrcy_writes_peers_read(tmp_path, seed: int, sharded: bool) -> None:
    meta, d = _case(seed, sharded)
    p = str(tmp_path / "c.zarr")
    a = zarrcy.create_array(p, metadata=meta)
    a[...] = d
    np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], d)
    np.testing.assert_array_equal(ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": p}}).result().read().result(), d)
    # a partial write (the rewrite path) keeps interop
    sel = tuple(slice(s // 4, s // 4 + 2) for s in d.shape)
    a[sel] = 5
    d[sel] = 5
    np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], d)
    _check_reads(zarrcy.open_array(p, mode="r"), d)


def test_kernel_decodes_only_touched_inner_chunks(tmp_path) -> None:
    meta, d = _case(3, True)
    meta = json.loads(json.dumps(meta))
    meta["shape"], meta["data_type"] = [64, 64], "float32"
    meta["chunk_grid"]["configuration"]["chunk_shape"] = [32, 32]
    meta["codecs"][0]["configuration"]["chunk_shape"] = [8, 8]
    meta["codecs"][0]["configuration"]["codecs"] = [
        {"name": "transpose", "configuration": {"order": [1, 0]}},
        {"name": "bytes", "configuration": {"endian": "big"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}}, {"name": "crc32c"}]
    d = np.arange(64 * 64, dtype="float32").reshape(64, 64)
    p = str(tmp_path / "a.zarr")
    _write_meta(p, meta)
    zarr.open_array(p, mode="r+")[...] = d
    a = zarrcy.open_array(p, mode="r")
    pipe = a._pipeline  # noqa: SLF001 - the plan is internal
    assert pipe.array_bytes.layout(pipe._ab_spec).kernel is not None  # noqa: SLF001
    decode_stats.reset()
    try:
        np.testing.assert_array_equal(a[3:20, 5:6], d[3:20, 5:6])
        assert decode_stats.decoded == 3  # rows 3..19 touch inner rows 0, 1, 2 of one column
    finally:
        decode_stats.reset(False)


# -- Zarr v2 ----------------------------------------------------------------------------------

V2_COMPRESSORS = [
    {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
    {"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0},
    {"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 256},
    {"id": "zstd", "level": 1},
    {"id": "zstd", "level": 3, "checksum": True},
    {"id": "zlib", "level": 1},
    {"id": "gzip", "level": 5},
]


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("compressor", V2_COMPRESSORS, ids=lambda c: json.dumps(c))
def test_v2_chunks_both_ways(tmp_path, compressor: dict, order: str) -> None:
    import numcodecs

    d = (np.arange(30 * 17, dtype="<f8").reshape(30, 17) * 1.5) % 77
    pz = str(tmp_path / "z.zarr")
    z = zarr.create_array(pz, shape=d.shape, chunks=(8, 5), dtype=">f8" if order == "F" else "<f8",
                          zarr_format=2, order=order, compressors=numcodecs.get_codec(dict(compressor)), fill_value=0)
    z[...] = d
    a = zarrcy.open_array(pz, mode="r")
    np.testing.assert_array_equal(a[...], d)
    np.testing.assert_array_equal(a[3:17:2, 4], d[3:17:2, 4])
    # zarrcy writes, zarr-python reads
    a = zarrcy.open_array(pz, mode="r+")
    a[...] = d + 1
    np.testing.assert_array_equal(zarr.open_array(pz, mode="r")[...], d + 1)
