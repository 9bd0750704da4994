"""Out of memory is not a corrupt chunk (issue 15 item 5, for the numcodecs wrappers):
zarr-python's v3 ``numcodecs.*`` codecs (zarrcy/codecs/numcodecs.py) and the Zarr v2
compressor/filter wrappers (zarrcy/v2/codecs.py) let a decoder's MemoryError through
unchanged, keep a decoder's own exception as the cause of a CorruptChunkError, and still
refuse a chunk that *claims* an absurd decoded size before anything is allocated."""

from __future__ import annotations

import json
import struct

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.codecs import numcodecs as nc
from zarrcy.codecs import zstd as zstd_mod
from zarrcy.errors import CorruptChunkError

N = 64  # elements of int32: one 256-byte chunk

# (v3 codec, the numcodecs class whose decode runs)
V3_CASES = {
    "lz4": (lambda: {"compressors": nc.LZ4(acceleration=1)}, numcodecs.LZ4),
    "blosc": (lambda: {"compressors": nc.Blosc(cname="lz4", clevel=1, shuffle=1)}, numcodecs.Blosc),
    "shuffle": (lambda: {"compressors": nc.Shuffle(elementsize=4)}, numcodecs.Shuffle),
    "crc32": (lambda: {"compressors": nc.CRC32()}, numcodecs.CRC32),
    "delta": (lambda: {"compressors": None, "filters": [nc.Delta(dtype="int32")]}, numcodecs.Delta),
}


def _v3(kw):
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(N,), chunks=(N,), dtype="int32", **kw)
    a[:] = np.arange(N, dtype="int32")
    return a


def _raising(exc):
    def decode(self, buf, out=None):
        raise exc

    return decode


@pytest.mark.parametrize("case", list(V3_CASES))
def test_v3_decoder_memory_error_is_not_corruption(monkeypatch, case):
    make, cls = V3_CASES[case]
    a = _v3(make())
    monkeypatch.setattr(cls, "decode", _raising(MemoryError("no memory")))
    with pytest.raises(MemoryError, match="no memory"):
        a[:]


@pytest.mark.parametrize("case", list(V3_CASES))
def test_v3_decoder_failure_is_corruption_with_its_cause(monkeypatch, case):
    make, cls = V3_CASES[case]
    a = _v3(make())
    err = ValueError("bad bytes")
    monkeypatch.setattr(cls, "decode", _raising(err))
    with pytest.raises(CorruptChunkError, match="bad bytes") as ei:
        a[:]
    assert ei.value.key == "c/0"
    cause = ei.value.__cause__
    while cause is not None and cause is not err:  # the array layer may add its own link
        cause = cause.__cause__
    assert cause is err


def _claims():
    # lz4 (numcodecs frame): int32 decoded size first; blosc: header nbytes; zstd: a
    # Frame_Content_Size of 100 GiB with a 1-byte raw block (RFC 8878 3.1.1)
    return {
        "lz4": ({"compressors": nc.LZ4()}, numcodecs.LZ4, struct.pack("<i", 0x7FFFFFFF) + b"\0" * 8),
        "blosc": ({"compressors": nc.Blosc(cname="lz4")}, numcodecs.Blosc,
                  bytes([2, 1, 0x1, 4]) + struct.pack("<III", 0x7FFFFFFF, 0x7FFFFFFF, 26) + b"\0" * 10),
        "zstd": ({"compressors": nc.Zstd(level=1)}, None,
                 struct.pack("<I", 0xFD2FB528) + bytes([0xE0]) + struct.pack("<Q", 100 << 30) + bytes([9, 0, 0, 0])),
    }


@pytest.mark.parametrize("case", ["lz4", "blosc", "zstd"])
def test_v3_absurd_size_claim_is_refused_before_allocating(monkeypatch, case):
    kw, cls, payload = _claims()[case]
    a = _v3(kw)
    a.store.set("c/0", payload)
    if cls is not None:  # numcodecs would allocate the claimed size: it must never run
        monkeypatch.setattr(cls, "decode", _raising(MemoryError("allocated the claim")))
    monkeypatch.setattr(zstd_mod, "USE_STREAMING", False)  # the fallback allocates Frame_Content_Size
    with pytest.raises(CorruptChunkError, match=rf"at most {4 * N} decoded bytes") as ei:
        a[:]
    assert ei.value.key == "c/0"


# -- Zarr v2 wrappers ---------------------------------------------------------------------
def _v2(tmp_path, compressor, filters=None):
    root = tmp_path / "a.zarr"
    root.mkdir()
    meta = {"zarr_format": 2, "shape": [N], "chunks": [N], "dtype": "<i4", "compressor": compressor,
            "filters": filters, "fill_value": 0, "order": "C"}
    (root / ".zarray").write_text(json.dumps(meta))
    a = zarrcy.open_array(str(root), mode="r+")
    a[:] = np.arange(N, dtype="int32")
    return zarrcy.open_array(str(root), mode="r")


V2_CASES = {
    "compressor lz4": ({"id": "lz4", "acceleration": 1}, None, numcodecs.LZ4),
    "compressor shuffle": ({"id": "shuffle", "elementsize": 4}, None, numcodecs.Shuffle),
    "filter delta": (None, [{"id": "delta", "dtype": "<i4"}], numcodecs.Delta),
    "filter + compressor": ({"id": "lz4", "acceleration": 1}, [{"id": "delta", "dtype": "<i4"}], numcodecs.LZ4),
}


@pytest.mark.parametrize("case", list(V2_CASES))
def test_v2_decoder_memory_error_is_not_corruption(tmp_path, monkeypatch, case):
    comp, filters, cls = V2_CASES[case]
    a = _v2(tmp_path, comp, filters)
    monkeypatch.setattr(cls, "decode", _raising(MemoryError("no memory")))
    with pytest.raises(MemoryError, match="no memory"):
        a[:]


@pytest.mark.parametrize("case", list(V2_CASES))
def test_v2_decoder_failure_keeps_its_cause(tmp_path, monkeypatch, case):
    comp, filters, cls = V2_CASES[case]
    a = _v2(tmp_path, comp, filters)
    err = RuntimeError("bad bytes")
    monkeypatch.setattr(cls, "decode", _raising(err))
    with pytest.raises(CorruptChunkError, match="bad bytes") as ei:
        a[:]
    cause = ei.value.__cause__
    while cause is not None and cause is not err:
        cause = cause.__cause__
    assert cause is err


def test_v2_lz4_absurd_size_claim_is_refused_before_allocating(tmp_path, monkeypatch):
    a = _v2(tmp_path, {"id": "lz4", "acceleration": 1})
    (tmp_path / "a.zarr" / "0").write_bytes(struct.pack("<i", 0x7FFFFFFF) + b"\0" * 8)
    monkeypatch.setattr(numcodecs.LZ4, "decode", _raising(MemoryError("allocated the claim")))
    with pytest.raises(CorruptChunkError, match=rf"at most {4 * N} decoded bytes") as ei:
        a[:]
    assert ei.value.key == "0"


def test_zstd_memory_error_while_decoding_into_the_chunk_is_not_corruption(monkeypatch):
    a = _v3({"compressors": zarrcy.codecs.ZstdCodec(level=1)})

    class _Fake:
        @staticmethod
        def decompress(src, dest=None):
            raise MemoryError("no memory")

    monkeypatch.setattr(zstd_mod, "_numcodecs_zstd", lambda: _Fake)
    from zarrcy.codecs import _native

    # the native engine out of memory (a context it could not allocate): MemoryError too
    monkeypatch.setattr(_native.K, "decode_into", lambda chain, src, dst: _native.K.NO_MEMORY)
    with pytest.raises(MemoryError, match="no memory"):
        a[:]
