"""zarr-python 3's ``numcodecs.<id>`` codecs in v3 metadata (zarrcy/codecs/numcodecs.py):
zarrcy reads what zarr-python writes and the reverse."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs import numcodecs as nc

zarr = pytest.importorskip("zarr")
znc = pytest.importorskip("zarr.codecs.numcodecs")

CASES = [
    ("LZMA", dict(preset=1), None),
    ("Zlib", dict(level=3), None),
    ("BZ2", dict(level=1), None),
    ("LZ4", dict(acceleration=1), None),
    ("Zstd", dict(level=2), None),
    ("GZip", dict(level=1), None),
    ("Blosc", dict(cname="zstd", clevel=1, shuffle=2), None),
    ("CRC32", dict(), None),
    ("Adler32", dict(), None),
    ("Zlib", dict(level=1), ("Delta", dict(dtype="int32"))),
    ("Zlib", dict(level=1), ("Delta", dict(dtype="int32", astype="int64"))),
    ("Zlib", dict(level=1), ("AsType", dict(encode_dtype="int64", decode_dtype="int32"))),
]


@pytest.mark.parametrize("comp, ccfg, filt", CASES, ids=lambda x: str(x))
def test_both_ways(tmp_path, comp, ccfg, filt):
    data = (np.arange(40 * 30) % 977).astype("int32").reshape(40, 30)
    for writer in ("zarrcy", "zarr"):
        path = str(tmp_path / f"{writer}.zarr")
        mod = nc if writer == "zarrcy" else znc
        kw = dict(compressors=getattr(mod, comp)(**ccfg), filters=[getattr(mod, filt[0])(**filt[1])] if filt else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if writer == "zarrcy":
                a = zarrcy.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(16, 16), **kw)
            else:
                a = zarr.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(16, 16), **kw)
            a[...] = data
            np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], data)
        np.testing.assert_array_equal(zarrcy.open_array(path, mode="r")[...], data)


def test_bad_configuration_is_a_metadata_error():
    with pytest.raises(zarrcy.MetadataError, match="numcodecs.zlib"):
        nc.Zlib(nope=1)
    with pytest.raises(zarrcy.MetadataError):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(2,), dtype="i4",
                            metadata=None, compressors=[{"name": "numcodecs.zlib", "configuration": {"nope": 1}}])


def test_corrupt_chunk_is_a_corrupt_chunk_error():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(4,), chunks=(4,), dtype="i4", compressors=nc.Zlib(level=1))
    a[:] = 1
    a.store.set("c/0", b"not zlib")
    with pytest.raises(zarrcy.CorruptChunkError):
        a[:]


@pytest.mark.parametrize("name", ["CRC32", "Adler32", "Fletcher32", "CRC32C"])
def test_checksums_have_a_fixed_size_and_can_guard_a_shard_index(name):
    """zarr-python accepts index_codecs=[bytes, numcodecs.crc32]: a fixed-size index."""
    from zarr.codecs import BytesCodec, ShardingCodec

    data = np.arange(64, dtype="int16")
    store = zarr.storage.MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        shard = ShardingCodec(chunk_shape=(8,), index_codecs=[BytesCodec(), getattr(znc, name)()])
        a = zarr.create_array(store, shape=(64,), chunks=(32,), dtype="int16", serializer=shard, compressors=None,
                              filters=None)
        a[:] = data
    raw = {k: v.to_bytes() for k, v in store._store_dict.items()}
    ours = zarrcy.open_array(zarrcy.MemoryStore(raw), mode="r")
    np.testing.assert_array_equal(ours[:], data)
    np.testing.assert_array_equal(ours[3:40:3], data[3:40:3])
    assert nc.Zlib(level=1).compute_encoded_size(10, None) is None
