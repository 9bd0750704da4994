"""Hostile frames of every codec the native engine decodes (issue 21, "Bad input"):
blosc headers whose sizes lie, zstd frames whose content size is absent or wrong,
skippable and concatenated frames, frames that need a dictionary, crc32c mismatches and
truncation -- as an unsharded chunk (the error names the key) and as one inner chunk of
a shard (the error names the key and the inner chunk), through every read path.  Valid
unusual streams (skippable frames first, several frames) read as the values they hold.
"""

from __future__ import annotations

import struct
from typing import Any, Callable

import crc32c as ref_crc32c
import numcodecs.blosc
import numcodecs.zstd
import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError

SHAPE, INNER = (8, 6), (4, 3)
DATA = (np.arange(48, dtype="<f4").reshape(SHAPE) + 1)
ZSTD = {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
BLOSC = {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4,
                                            "blocksize": 0}}
CRC = {"name": "crc32c"}
READS: list[tuple[str, Callable[[Any], Any]]] = [
    ("whole", lambda a: a[...]),
    ("point", lambda a: a[1, 4]),
    ("slice", lambda a: a[1:3, 2:5]),
    ("strided", lambda a: a[::3, ::2]),
    ("vindex", lambda a: a.vindex[[1, 5], [4, 1]]),
    ("oindex", lambda a: a.oindex[[0, 6], [5, 0]]),
    ("partial write", lambda a: a.__setitem__((1, 4), 1.0)),
    ("vindex write", lambda a: a.vindex.__setitem__(([1, 6], [4, 0]), 1.0)),
]


def _skippable(payload: bytes) -> bytes:
    return struct.pack("<II", 0x184D2A51, len(payload)) + payload


def _raw_zstd_frame(data: bytes) -> bytes:
    """A frame without Frame_Content_Size (one raw block)."""
    return struct.pack("<IBB", 0xFD2FB528, 0x00, 0x50) + struct.pack("<I", 1 | (len(data) << 3))[:3] + data


def _zstd_with_content_size(raw: bytes, claimed: int) -> bytes:
    """A single-segment frame holding ``raw`` in one raw block, claiming ``claimed``
    decoded bytes (an 8-byte Frame_Content_Size field)."""
    return (struct.pack("<IB", 0xFD2FB528, (3 << 6) | 0x20) + struct.pack("<Q", claimed)
            + struct.pack("<I", 1 | (len(raw) << 3))[:3] + raw)


def _dict_frame(raw: bytes) -> bytes:
    f = bytearray(_raw_zstd_frame(raw))
    f[4] |= 0x01  # Dictionary_ID_flag: one byte after the window descriptor
    f[6:6] = b"\x07"
    return bytes(f)


def _blosc(raw: bytes) -> bytes:
    return bytes(numcodecs.blosc.compress(raw, b"lz4", 5, 1, 0, 4))


def _patch(b: bytes, at: int, value: int) -> bytes:
    out = bytearray(b)
    out[at:at + 4] = struct.pack("<I", value)
    return bytes(out)


# (case, inner codecs, stored bytes from the chunk's raw bytes, readable?)
HOSTILE: list[tuple[str, list[dict], Callable[[bytes], bytes]]] = [
    ("zstd-content-size-larger", [ZSTD], lambda r: _zstd_with_content_size(r, len(r) * 1000)),
    ("zstd-content-size-smaller", [ZSTD], lambda r: _zstd_with_content_size(r, len(r) - 4)),
    ("zstd-no-content-size-too-long", [ZSTD], lambda r: _raw_zstd_frame(r + r)),
    ("zstd-no-content-size-too-short", [ZSTD], lambda r: _raw_zstd_frame(r[:-4])),
    ("zstd-dictionary", [ZSTD], _dict_frame),
    ("zstd-concatenated-too-long", [ZSTD], lambda r: bytes(numcodecs.zstd.compress(r, 1)) * 2),
    ("zstd-truncated", [ZSTD], lambda r: bytes(numcodecs.zstd.compress(r, 1))[:-2]),
    ("zstd-trailing-garbage", [ZSTD], lambda r: bytes(numcodecs.zstd.compress(r, 1)) + b"\x01\x02\x03"),
    ("zstd-skippable-only", [ZSTD], lambda r: _skippable(r)),
    ("zstd-skippable-overlong", [ZSTD], lambda r: _patch(_skippable(b"ab"), 4, 10_000) + bytes(numcodecs.zstd.compress(r, 1))),
    ("blosc-nbytes-larger", [BLOSC], lambda r: _patch(_blosc(r), 4, len(r) * 1000)),
    ("blosc-nbytes-smaller", [BLOSC], lambda r: _patch(_blosc(r), 4, len(r) // 2)),
    ("blosc-cbytes-lying", [BLOSC], lambda r: _patch(_blosc(r), 12, len(_blosc(r)) + 64)),
    ("blosc-blocksize-huge", [BLOSC], lambda r: _patch(_blosc(r), 8, 1 << 30)),
    ("blosc-truncated", [BLOSC], lambda r: _blosc(r)[:-3]),
    ("crc32c-mismatch", [ZSTD, CRC], lambda r: (lambda z: z + struct.pack("<I", ref_crc32c.crc32c(z) ^ 1))(
        bytes(numcodecs.zstd.compress(r, 1)))),
    ("crc32c-truncated", [BLOSC, CRC], lambda r: b"\x01\x02"),
]

# valid but unusual: read as the values they hold
VALID: list[tuple[str, list[dict], Callable[[bytes], bytes]]] = [
    ("zstd-skippable-first", [ZSTD], lambda r: _skippable(b"meta") + bytes(numcodecs.zstd.compress(r, 1))),
    ("zstd-two-frames", [ZSTD], lambda r: bytes(numcodecs.zstd.compress(r[:20], 1)) + _skippable(b"")
     + bytes(numcodecs.zstd.compress(r[20:], 3, True))),
    ("zstd-no-content-size", [ZSTD], _raw_zstd_frame),
    ("blosc-memcpyed", [BLOSC], lambda r: bytes(numcodecs.blosc.compress(r, b"lz4", 0, 0, 0, 4))),
]


def _array(store: Any, codecs: list[dict], sharded: bool) -> Any:
    return zarrcy.create_array(store, name="a", shape=SHAPE, chunks=INNER, shards=SHAPE if sharded else None,
                               dtype="float32", fill_value=0, compressors=codecs, overwrite=True)


def _install(store: Any, a: Any, codecs: list[dict], sharded: bool, make: Callable[[bytes], bytes]) -> str:
    """Store inner chunk / chunk (0, 1) as ``make(raw)``; the others as the codecs write them."""
    raw = np.ascontiguousarray(DATA[0:4, 3:6]).tobytes()
    if not sharded:
        store.set("a/c/0/1", make(raw))
        return "a/c/0/1"
    pieces = []
    for i in range(2):
        for j in range(2):
            chunk = np.ascontiguousarray(DATA[4 * i:4 * i + 4, 3 * j:3 * j + 3]).tobytes()
            if (i, j) == (0, 1):
                pieces.append(make(chunk))
                continue
            enc = bytes(numcodecs.zstd.compress(chunk, 1)) if codecs[0] is ZSTD else _blosc(chunk)
            if CRC in codecs:
                enc += struct.pack("<I", ref_crc32c.crc32c(enc))
            pieces.append(enc)
    index, off = b"", 0
    for p in pieces:
        index += struct.pack("<QQ", off, len(p))
        off += len(p)
    store.set("a/c/0/0", b"".join(pieces) + index + struct.pack("<I", ref_crc32c.crc32c(index)))
    return "a/c/0/0"


@pytest.mark.parametrize("sharded", [False, True], ids=["chunk", "inner-chunk"])
@pytest.mark.parametrize("case", HOSTILE, ids=[c[0] for c in HOSTILE])
@pytest.mark.parametrize("read", [r[1] for r in READS], ids=[r[0] for r in READS])
def test_hostile_frames_raise_naming_key_and_inner_chunk(case: Any, sharded: bool, read: Any) -> None:
    _, codecs, make = case
    store = zarrcy.MemoryStore()
    a = _array(store, codecs, sharded)
    a[...] = DATA
    key = _install(store, a, codecs, sharded, make)
    with pytest.raises(CorruptChunkError) as e:
        read(a)
    msg = str(e.value)
    assert type(e.value) is CorruptChunkError
    assert msg.startswith(key), msg
    if sharded:
        assert "inner chunk (0, 1)" in msg, msg


@pytest.mark.parametrize("sharded", [False, True], ids=["chunk", "inner-chunk"])
@pytest.mark.parametrize("case", VALID, ids=[c[0] for c in VALID])
def test_unusual_valid_frames_read(case: Any, sharded: bool) -> None:
    _, codecs, make = case
    store = zarrcy.MemoryStore()
    a = _array(store, codecs, sharded)
    a[...] = DATA
    _install(store, a, codecs, sharded, make)
    ref = zarrcy.create_array(zarrcy.MemoryStore(), shape=SHAPE, chunks=SHAPE, dtype="float32", fill_value=0)
    ref[...] = DATA  # the oracle: the same values in a plain chunk
    for _, read in READS:
        np.testing.assert_array_equal(read(a), read(ref))
    np.testing.assert_array_equal(a[...], ref[...])  # after the writes


def test_hostile_frame_never_allocates_its_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    """A blosc header claiming 4 GiB and a zstd frame claiming 1 TiB, in a 48-byte chunk:
    refused from the header, before any buffer of the claimed size exists."""
    for codecs, make in (([BLOSC], lambda r: _patch(_blosc(r), 4, (1 << 32) - 1)),
                         ([ZSTD], lambda r: _zstd_with_content_size(r, 1 << 40))):
        store = zarrcy.MemoryStore()
        a = _array(store, codecs, False)
        a[...] = DATA
        _install(store, a, codecs, False, make)
        real_empty = np.empty

        def guarded(shape: Any, *args: Any, **kw: Any) -> Any:
            n = int(np.prod(shape)) if not isinstance(shape, int) else shape
            assert n < 1 << 20, f"allocation of {n} elements"
            return real_empty(shape, *args, **kw)

        monkeypatch.setattr(np, "empty", guarded)
        with pytest.raises(CorruptChunkError):
            a[...]
        monkeypatch.setattr(np, "empty", real_empty)
