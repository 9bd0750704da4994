"""blosc codec (v3-codec-blosc.rst; numeric shuffle of draft-2020-codecs-gzip-blosc.txt)."""

from __future__ import annotations

import os

import numcodecs
import numpy as np
import pytest
from codec_helpers import make_spec, same, smooth

from zarrcy.codecs import BloscCodec, parse_codecs
from zarrcy.codecs.blosc import blosc_header
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CorruptChunkError, MetadataError

LE = {"name": "bytes", "configuration": {"endian": "little"}}


def _blosc(**cfg: object) -> dict:
    base = {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}
    base.update(cfg)
    return {"name": "blosc", "configuration": {k: v for k, v in base.items() if v is not None}}


@pytest.mark.parametrize("cname", ["lz4", "lz4hc", "blosclz", "zstd", "zlib"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("clevel", [0, 1, 9])
def test_round_trip_and_numcodecs_interop(cname: str, shuffle: str, clevel: int) -> None:
    spec = make_spec((20, 50), "float32")
    p = CodecPipeline.from_codecs([LE, _blosc(cname=cname, shuffle=shuffle, clevel=clevel)], spec)
    a = smooth((20, 50))
    enc = bytes(p.encode(a))
    assert np.frombuffer(numcodecs.Blosc().decode(enc), "<f4").tobytes() == a.tobytes()
    assert same(p.decode(enc), a)
    ref = numcodecs.Blosc(cname=cname, clevel=clevel, shuffle={"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[shuffle]).encode(a)
    assert same(p.decode(ref), a)
    out = np.zeros((20, 50), "float32")
    p.decode_into(ref, out)
    assert same(out, a)


def test_typesize_filled_from_dtype_and_written() -> None:
    spec = make_spec((8,), "float64")
    [_, c] = parse_codecs([LE, _blosc(typesize=None)], spec)
    assert c.to_dict()["configuration"]["typesize"] == 8
    [_, c] = parse_codecs([LE, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1, "shuffle": "noshuffle"}}], spec)
    assert c.to_dict() == {
        "name": "blosc",
        "configuration": {"cname": "zstd", "clevel": 1, "shuffle": "noshuffle", "typesize": 8, "blocksize": 0},
    }


@pytest.mark.parametrize("num, name", [(0, "noshuffle"), (1, "shuffle"), (2, "bitshuffle")])
def test_numeric_shuffle_alias(num: int, name: str) -> None:
    spec = make_spec((8,), "float32")
    [_, c] = parse_codecs([LE, {"name": "https://purl.org/zarr/spec/codec/blosc", "configuration": {"cname": "lz4", "clevel": 1, "shuffle": num, "blocksize": 0}}], spec)
    assert c.to_dict()["name"] == "blosc" and c.to_dict()["configuration"]["shuffle"] == name


@pytest.mark.parametrize("dtype, resolved", [("uint8", "bitshuffle"), ("int16", "shuffle")])
def test_auto_shuffle_resolved(dtype: str, resolved: str) -> None:
    spec = make_spec((8,), dtype)
    ser = "bytes" if dtype == "uint8" else LE
    [_, c] = parse_codecs([ser, _blosc(shuffle=-1, typesize=None)], spec)
    assert c.shuffle == resolved


def test_header_checks() -> None:
    a = smooth((1000,))
    enc = numcodecs.Blosc(cname="lz4").encode(a)
    assert blosc_header(enc)[:2] == (4000, len(enc))
    p = CodecPipeline.from_codecs([LE, _blosc()], make_spec((1000,), "float32"))
    bad = [enc[:10], enc[: len(enc) // 2], enc + b"xx", b"", os.urandom(64), b"\0" * 64,
           numcodecs.Blosc(cname="lz4").encode(np.zeros(999, "f4"))]
    for b in bad:
        with pytest.raises(CorruptChunkError):
            p.decode(b)
        with pytest.raises(CorruptChunkError):
            p.decode_into(b, np.zeros(1000, "float32"))


def test_random_corruption_never_crashes() -> None:
    rng = np.random.default_rng(5)
    a = smooth((2000,))
    p = CodecPipeline.from_codecs([LE, _blosc(cname="zstd")], make_spec((2000,), "float32"))
    enc = bytearray(p.encode(a))
    for _ in range(200):
        b = bytearray(enc)
        for i in rng.integers(16, len(b), 3):
            b[i] = int(rng.integers(0, 256))
        try:
            r = p.decode(bytes(b))
        except CorruptChunkError as e:
            assert type(e) is CorruptChunkError and "blosc" in str(e), e
            continue
        # blosc has no checksum: damage past the header may decode; then it decodes the
        # same way every time and through decode_into, to the chunk's exact size
        out = np.zeros(2000, "float32")
        p.decode_into(bytes(b), out)
        assert r.shape == (2000,) and r.tobytes() == out.tobytes() == p.decode(bytes(b)).tobytes()


@pytest.mark.parametrize(
    "cfg",
    [dict(cname="snappy"), dict(cname="lz5"), dict(clevel=10), dict(clevel=-1), dict(shuffle="byte"), dict(shuffle=3),
     dict(typesize=0), dict(typesize="4"), dict(blocksize=-1), dict(extra=1), dict(clevel=True), dict(cname=None),
     dict(clevel=None)],
)
def test_bad_configuration(cfg: dict) -> None:
    with pytest.raises(MetadataError, match=r"codecs\[1\]\.configuration"):
        parse_codecs([LE, _blosc(**cfg)], make_spec((8,), "float32"))


def test_dict_round_trip() -> None:
    c = BloscCodec("zstd", 3, "bitshuffle", 2, 4096)
    assert BloscCodec.from_dict(c.to_dict()["configuration"], "c") == c


@pytest.mark.parametrize("dtype", ["uint8", "float32", "int64"])
def test_default_matches_zarr_python(dtype: str) -> None:
    import zarr

    spec = make_spec((8,), dtype)
    ser = "bytes" if dtype == "uint8" else LE
    [_, ours] = parse_codecs([ser, BloscCodec()], spec)
    theirs = zarr.create_array(store={}, shape=(8,), dtype=dtype, chunks=(8,), compressors=zarr.codecs.BloscCodec())
    assert ours.to_dict() == theirs.metadata.to_dict()["codecs"][1]
