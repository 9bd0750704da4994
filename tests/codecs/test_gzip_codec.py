"""gzip codec (v3-codec-gzip.rst) on every route (the _deflate kernel itself: tests/kernels/test_deflate_gzip_kernel.py)."""

from __future__ import annotations

import gzip as std_gzip
import os
import zlib

import deflate
import numpy as np
import pytest
from codec_helpers import make_spec, same, smooth
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.codecs import Gzip, GzipCodec, parse_codecs
from zarrcy.codecs import gzip as G
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CorruptChunkError, MetadataError

LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}


def test_route_is_libdeflate() -> None:
    assert G.route() == "libdeflate"


def test_level1_size_equals_libdeflate() -> None:
    x = smooth((1 << 16,)).tobytes()
    assert len(bytes(G.gzip_compress(x, 1, "libdeflate"))) == len(deflate.gzip_compress(x, 1))
    assert len(bytes(G.gzip_compress(x, 1, "deflate"))) == len(deflate.gzip_compress(x, 1))


# -- codec on both routes ---------------------------------------------------------------
@pytest.mark.parametrize("level", [0, 1, 5, 9])
@pytest.mark.parametrize("dtype, endian", [("float32", LE), ("float64", BE), ("uint8", "bytes"), ("complex64", BE)])
def test_round_trip(gzip_route: str, level: int, dtype: str, endian: object) -> None:
    spec = make_spec((16, 33), dtype)
    p = CodecPipeline.from_codecs([endian, {"name": "gzip", "configuration": {"level": level}}], spec)
    a = smooth((16, 33), dtype)
    enc = bytes(p.encode(a))
    assert std_gzip.decompress(enc) == (a.astype(a.dtype.newbyteorder(">")) if endian == BE else a).tobytes()
    assert same(p.decode(enc), a)
    out = np.zeros((16, 33), dtype)
    p.decode_into(enc, out)
    assert same(out, a)
    big = np.zeros((32, 66), dtype)
    p.decode_into(enc, big[::2, 1::2])
    assert same(big[::2, 1::2].copy(), a)


def test_reads_other_writers(gzip_route: str) -> None:
    spec = make_spec((100,), "int32")
    a = np.arange(100, dtype="<i4")
    p = CodecPipeline.from_codecs([LE, Gzip(6)], spec)
    for enc in (std_gzip.compress(a.tobytes(), 6), zlib.compress(a.tobytes(), 1, wbits=31), bytes(deflate.gzip_compress(a.tobytes(), 12))):
        assert same(p.decode(enc), a)


def test_multiple_members_and_padding(gzip_route: str) -> None:
    spec = make_spec((100,), "int32")
    a = np.arange(100, dtype="<i4")
    raw = a.tobytes()
    p = CodecPipeline.from_codecs([LE, Gzip(1)], spec)
    two = std_gzip.compress(raw[:150]) + std_gzip.compress(raw[150:])
    assert same(p.decode(two), a)
    out = np.zeros(100, "int32")
    p.decode_into(two, out)
    assert same(out, a)
    assert same(p.decode(std_gzip.compress(raw) + b"\0" * 8), a)
    with pytest.raises(CorruptChunkError):
        p.decode(std_gzip.compress(raw) + std_gzip.compress(b"more"))
    with pytest.raises(CorruptChunkError):
        p.decode(std_gzip.compress(raw) + b"junk")


def test_corrupt_inputs(gzip_route: str) -> None:
    spec = make_spec((1000,), "float32")
    p = CodecPipeline.from_codecs([LE, Gzip(5)], spec)
    a = smooth((1000,))
    enc = bytes(p.encode(a))
    bad = [
        enc[: len(enc) // 2],
        enc[:-4],
        enc[:5],
        b"",
        os.urandom(200),
        std_gzip.compress(a.tobytes()[:-4]),  # decodes to 4 bytes too few
        std_gzip.compress(a.tobytes() + b"1234"),  # 4 bytes too many
        enc[:20] + bytes([enc[20] ^ 0xFF]) + enc[21:],
    ]
    for b in bad:
        with pytest.raises(CorruptChunkError):
            p.decode(b)
        with pytest.raises(CorruptChunkError):
            p.decode_into(b, np.zeros(1000, "float32"))


def test_absurdly_large_input_rejected() -> None:
    p = CodecPipeline.from_codecs([LE, Gzip(5)], make_spec((4,), "float32"))
    with pytest.raises(CorruptChunkError, match="at most"):
        p.decode(b"\x1f\x8b" + bytes(1 << 20))


def test_nested_unknown_size(gzip_route: str) -> None:
    spec = make_spec((50, 3), "uint16")
    p = CodecPipeline.from_codecs([LE, Gzip(1), Gzip(9), "crc32c", Gzip(0)], spec)
    a = smooth((50, 3), "uint16")
    assert same(p.decode(p.encode(a)), a)


def test_zlib_route() -> None:
    old = G.set_route("zlib")
    try:
        spec = make_spec((300,), "float32")
        p = CodecPipeline.from_codecs([LE, Gzip(3)], spec)
        a = smooth((300,))
        enc = bytes(p.encode(a))
        assert std_gzip.decompress(enc) == a.tobytes()
        assert same(p.decode(enc), a)
        with pytest.raises(CorruptChunkError):
            p.decode(enc[:-3])
    finally:
        G.set_route(old)


def test_empty_chunk(gzip_route: str) -> None:
    p = CodecPipeline.from_codecs([LE, Gzip(1)], make_spec((0, 4), "float32"))
    enc = p.encode(np.zeros((0, 4), "float32"))
    assert p.decode(enc).shape == (0, 4)


@pytest.mark.parametrize(
    "config", [{"level": 10}, {"level": -1}, {"level": "1"}, {"level": True}, {"level": 1.0}, {}, {"level": 1, "x": 2}, [1]]
)
def test_bad_configuration(config: object) -> None:
    with pytest.raises(MetadataError, match=r"codecs\[1\]\.configuration"):
        parse_codecs([LE, {"name": "gzip", "configuration": config}], make_spec((2,), "float32"))


def test_old_uri_and_round_trip() -> None:
    spec = make_spec((2,), "float32")
    c = parse_codecs([LE, {"name": "https://purl.org/zarr/spec/codec/gzip", "configuration": {"level": 1}}], spec)[1]
    assert c == GzipCodec(1) and c.to_dict() == {"name": "gzip", "configuration": {"level": 1}}
    assert GzipCodec.from_dict(c.to_dict()["configuration"], "c") == c
    with pytest.raises(MetadataError):
        GzipCodec(12)


def test_set_route_rejects_unknown() -> None:
    with pytest.raises(ValueError):
        G.set_route("pigz")
