"""sharding_indexed interop at shard-bytes level with zarr-python 3 (both directions)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from zarrcy.byte_range import resolve
from zarrcy.codecs._base import ArraySpec
from zarrcy.byte_access import ByteSetter
from zarrcy.codecs.sharding import ShardingCodec

zarr = pytest.importorskip("zarr")
from zarr.codecs import BytesCodec, Crc32cCodec, GzipCodec  # noqa: E402
from zarr.codecs import ShardingCodec as ZShardingCodec  # noqa: E402

pytestmark = pytest.mark.interop


class FileValue(ByteSetter):
    def __init__(self, path):
        self.path = path

    def get(self, byte_range=None):
        if not os.path.exists(self.path):
            return None
        with open(self.path, "rb") as f:
            data = f.read()
        a, b = resolve(byte_range, len(data))
        return data[a:b]

    def get_ranges(self, ranges):
        return [self.get(r) for r in ranges]

    def set(self, value):
        with open(self.path, "wb") as f:
            f.write(bytes(value))

    def delete(self):
        if os.path.exists(self.path):
            os.remove(self.path)


CASES = [
    ((16, 12), (4, 3), "uint16", "end", True),
    ((16, 12), (4, 3), "float32", "start", True),
    ((8, 8, 8), (2, 4, 8), "int64", "end", False),
    ((8, 8, 8), (8, 8, 8), "uint8", "start", False),
]


def zarr_array(root, shape, inner, dtype, location, gzip):
    codecs = [BytesCodec()] + ([GzipCodec(level=1)] if gzip else [])
    return zarr.create_array(
        store=str(root), shape=shape, chunks=shape, dtype=dtype, fill_value=0, overwrite=True,
        serializer=ZShardingCodec(chunk_shape=inner, codecs=codecs, index_codecs=[BytesCodec(), Crc32cCodec()],
                                  index_location=location),
        compressors=None,
    )


def ours(root):
    with open(os.path.join(root, "zarr.json")) as f:
        meta = json.load(f)
    (cfg,) = [c for c in meta["codecs"] if c["name"] == "sharding_indexed"]
    return ShardingCodec.from_dict(cfg["configuration"], "codecs[0]")


def data_for(shape, inner, dtype):
    rng = np.random.default_rng(0)
    a = (rng.random(shape) * 100 + 1).astype(dtype)
    grid = [s // c for s, c in zip(shape, inner)]
    for k, cc in enumerate(np.ndindex(*grid)):
        if k % 3 == 1:
            a[tuple(slice(g * c, (g + 1) * c) for g, c in zip(cc, inner))] = 0
    return a


@pytest.mark.parametrize("shape, inner, dtype, location, gzip", CASES)
def test_zarr_python_writes_zarrcy_reads(tmp_path, shape, inner, dtype, location, gzip):
    z = zarr_array(tmp_path, shape, inner, dtype, location, gzip)
    a = data_for(shape, inner, dtype)
    z[...] = a
    key = os.path.join(tmp_path, "c", *["0"] * len(shape))
    codec = ours(tmp_path)
    sp = ArraySpec(shape=shape, dtype=np.dtype(dtype), fill_value=np.dtype(dtype).type(0))
    codec.validate(sp, "codecs[0]")
    np.testing.assert_array_equal(codec.decode(FileValue(key).get(), sp), a)
    sel = tuple(slice(1, s - 1) for s in shape)
    np.testing.assert_array_equal(codec.decode_partial(FileValue(key), sel, sp), a[sel])


@pytest.mark.parametrize("shape, inner, dtype, location, gzip", CASES)
def test_zarrcy_writes_zarr_python_reads(tmp_path, shape, inner, dtype, location, gzip):
    z = zarr_array(tmp_path, shape, inner, dtype, location, gzip)
    a = data_for(shape, inner, dtype)
    codec = ours(tmp_path)
    sp = ArraySpec(shape=shape, dtype=np.dtype(dtype), fill_value=np.dtype(dtype).type(0))
    key = os.path.join(tmp_path, "c", *["0"] * len(shape))
    os.makedirs(os.path.dirname(key), exist_ok=True)
    FileValue(key).set(codec.encode(a, sp))
    np.testing.assert_array_equal(z[...], a)
    # a partial write by zarrcy is read back by zarr-python as well
    sel = tuple(slice(0, s // 2 + 1) for s in shape)
    codec.encode_partial(FileValue(key), sel, np.full([s // 2 + 1 for s in shape], 5, dtype), sp)
    a[sel] = 5
    np.testing.assert_array_equal(z[...], a)


@pytest.mark.parametrize("shape, inner, dtype, location, gzip", CASES[:2])
def test_tensorstore_both_directions(tmp_path, shape, inner, dtype, location, gzip):
    ts = pytest.importorskip("tensorstore")
    z = zarr_array(tmp_path, shape, inner, dtype, location, gzip)
    del z
    a = data_for(shape, inner, dtype)
    codec = ours(tmp_path)
    sp = ArraySpec(shape=shape, dtype=np.dtype(dtype), fill_value=np.dtype(dtype).type(0))
    key = os.path.join(tmp_path, "c", *["0"] * len(shape))
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path)}},
                context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})).result()
    # tensorstore writes, zarrcy reads
    t.write(a).result()
    np.testing.assert_array_equal(codec.decode(FileValue(key).get(), sp), a)
    sel = tuple(slice(2, s) for s in shape)
    np.testing.assert_array_equal(codec.decode_partial(FileValue(key), sel, sp), a[sel])
    # zarrcy writes, tensorstore reads
    b = a[::-1].copy()
    FileValue(key).set(codec.encode(b, sp))
    np.testing.assert_array_equal(t.read().result(), b)
