"""A corrupt stored chunk (or shard) is reported, not decoded into something of the right
shape (issue 15 item 8): every read path raises exactly ``CorruptChunkError`` and the
message starts with the store key of the damaged object; the other chunks still read.

Damage per chain is what that chain can detect: any change under a checksum (crc32c,
gzip's CRC-32, zstd's content checksum), a size change under any chain (bytes alone,
blosc's header sizes), truncation of a shard or of its index.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError

NAME = "grp/arr"
SHAPE, CHUNKS = (8, 6), (4, 3)
CRC = {"name": "crc32c"}
GZIP = {"name": "gzip", "configuration": {"level": 1}}
ZSTD_CHECKSUM = {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}


def _truncate_half(b: bytes) -> bytes:
    return b[: len(b) // 2]


def _truncate_one(b: bytes) -> bytes:
    return b[:-1]


def _append(b: bytes) -> bytes:
    return b + b"junk"


def _empty(b: bytes) -> bytes:
    return b""


def _flip_middle(b: bytes) -> bytes:
    out = bytearray(b)
    out[len(out) // 2] ^= 0x5A
    return bytes(out)


def _flip_last(b: bytes) -> bytes:
    out = bytearray(b)
    out[-1] ^= 0x01
    return bytes(out)


SIZE_DAMAGE = [_truncate_half, _truncate_one, _append, _empty]
ANY_DAMAGE = SIZE_DAMAGE + [_flip_middle, _flip_last]

# (chain id, create_array keywords, damage the chain must detect)
CHAINS: list[tuple[str, dict[str, Any], list[Callable[[bytes], bytes]]]] = [
    ("bytes", dict(compressors=None), SIZE_DAMAGE),
    ("crc32c", dict(compressors=[CRC]), ANY_DAMAGE),
    ("gzip", dict(compressors=[GZIP]), [_truncate_half, _truncate_one, _empty, _flip_middle]),
    ("zstd-checksum", dict(compressors=[ZSTD_CHECKSUM]), [_truncate_half, _truncate_one, _empty, _flip_middle]),
    ("blosc", dict(compressors=[BLOSC]), [_truncate_half, _truncate_one, _empty]),
    ("gzip-crc32c", dict(compressors=[GZIP, CRC]), ANY_DAMAGE),
    ("sharded", dict(shards=(8, 6), compressors=[CRC]), [_truncate_half, _truncate_one, _empty, _flip_last]),
    ("sharded-index-start", dict(shards=(8, 6), compressors=[CRC], index_location="start"),
     [_truncate_half, _truncate_one, _empty]),
]

READS: list[tuple[str, Callable[[Any], Any]]] = [
    ("whole", lambda a: a[...]),
    ("point", lambda a: a[5, 4]),
    ("slice", lambda a: a[4:, 3:]),
    ("strided", lambda a: a[::3, ::2]),
    ("oindex", lambda a: a.oindex[[7, 5], [4]]),
    ("vindex", lambda a: a.vindex[[5, 0], [4, 0]]),
    ("blocks", lambda a: a.blocks[-1, -1]),
    ("partial write", lambda a: a.__setitem__((5, 4), 1.0)),
]


def _make(kw: dict[str, Any]) -> tuple[Any, Any, np.ndarray, str]:
    store = zarrcy.MemoryStore()
    kw = dict(kw)
    idx_loc = kw.pop("index_location", None)
    a = zarrcy.create_array(store, name=NAME, shape=SHAPE, chunks=CHUNKS, dtype="float32", fill_value=0, **kw)
    if idx_loc is not None:  # the same array with the shard index at the start
        meta = a.metadata.to_json()
        meta["codecs"][0]["configuration"]["index_location"] = idx_loc
        a = zarrcy.create_array(store, name=NAME, metadata=meta, overwrite=True)
        assert a.metadata.to_json()["codecs"][0]["configuration"]["index_location"] == "start"
    data = np.arange(48, dtype="float32").reshape(SHAPE) + 1
    a[...] = data
    key = f"{NAME}/c/1/1" if "shards" not in kw else f"{NAME}/c/0/0"
    assert store.get(key) is not None
    return store, a, data, key


CASES = [(cid, kw, dmg) for cid, kw, damages in CHAINS for dmg in damages]


@pytest.mark.parametrize("kw,damage", [c[1:] for c in CASES], ids=[f"{c[0]}-{c[2].__name__.strip('_')}" for c in CASES])
@pytest.mark.parametrize("read", [r[1] for r in READS], ids=[r[0] for r in READS])
def test_corrupt_chunk_raises_and_names_the_key(kw: dict[str, Any], damage: Callable[[bytes], bytes], read: Any) -> None:
    store, a, data, key = _make(kw)
    store.set(key, damage(store.get(key)))
    with pytest.raises(CorruptChunkError) as e:
        read(a)
    assert type(e.value) is CorruptChunkError
    assert str(e.value).startswith(key + ":") or str(e.value).startswith(key + " "), str(e.value)
    if "shards" not in kw:  # the undamaged chunks still read
        np.testing.assert_array_equal(a[:4, :], data[:4, :])


@pytest.mark.parametrize("cid,kw", [(c[0], c[1]) for c in CHAINS], ids=[c[0] for c in CHAINS])
def test_reopened_array_reports_the_same(cid: str, kw: dict[str, Any]) -> None:
    """The key in the message is the store key of a fresh handle too (no cached decode)."""
    store, a, _, key = _make(kw)
    store.set(key, _truncate_half(store.get(key)))
    b = zarrcy.open_array(store, path=NAME)
    with pytest.raises(CorruptChunkError, match=rf"^{key}\b"):
        b[...]
