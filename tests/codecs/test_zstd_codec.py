"""zstd codec (ext-codec-zstd.md)."""

from __future__ import annotations

import os

import numcodecs
import numpy as np
import pytest
from codec_helpers import make_spec, same, smooth

from zarrcy.codecs import ZstdCodec, default_codecs, default_compressors, parse_codecs
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.zstd import frame_content_size
from zarrcy.errors import CorruptChunkError, MetadataError

LE = {"name": "bytes", "configuration": {"endian": "little"}}


@pytest.mark.parametrize("level", [-5, 0, 1, 3, 19])
@pytest.mark.parametrize("checksum", [False, True])
def test_round_trip_and_interop(level: int, checksum: bool) -> None:
    spec = make_spec((30, 40), "float64")
    p = CodecPipeline.from_codecs([LE, {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}], spec)
    a = smooth((30, 40), "float64")
    enc = bytes(p.encode(a))
    assert frame_content_size(enc) == a.nbytes
    assert numcodecs.Zstd().decode(enc) == a.tobytes()
    assert same(p.decode(enc), a)
    ref = numcodecs.Zstd(level=level, checksum=checksum).encode(a)
    out = np.zeros((30, 40))
    p.decode_into(ref, out)
    assert same(out, a)


def test_reads_zarr_python_default() -> None:
    import zarr
    from zarr.core.buffer import default_buffer_prototype

    spec = make_spec((64,), "int32")
    a = np.arange(64, dtype="int32")
    store: dict = {}
    z = zarr.create_array(store=zarr.storage.MemoryStore(store), shape=(64,), chunks=(64,), dtype="int32")
    z[:] = a
    meta = z.metadata.to_dict()
    p = CodecPipeline.from_codecs(meta["codecs"], spec)
    raw = store["c/0"].to_bytes() if hasattr(store["c/0"], "to_bytes") else bytes(store["c/0"])
    assert same(p.decode(raw), a)
    assert default_buffer_prototype is not None


def test_defaults_match_zarr_python() -> None:
    zstd0 = {"name": "zstd", "configuration": {"level": 0, "checksum": False}}
    assert [c.to_dict() for c in default_compressors()] == [zstd0]
    assert [c.to_dict() for c in default_codecs("float32")] == [
        {"name": "bytes", "configuration": {"endian": "little"}},
        zstd0,
    ]
    assert default_codecs("uint8")[0].to_dict() == {"name": "bytes"}


def test_checksum_always_written_like_zarr_python() -> None:
    import zarr

    assert ZstdCodec(1, True).to_dict() == {"name": "zstd", "configuration": {"level": 1, "checksum": True}}
    assert ZstdCodec(1, False).to_dict() == {"name": "zstd", "configuration": {"level": 1, "checksum": False}}
    assert ZstdCodec.from_dict({"level": 1}, "c") == ZstdCodec(1)
    assert ZstdCodec(3).to_dict() == zarr.codecs.ZstdCodec(level=3).to_dict()


def test_corrupt_inputs() -> None:
    spec = make_spec((500,), "float32")
    p = CodecPipeline.from_codecs([LE, {"name": "zstd", "configuration": {"level": 1, "checksum": True}}], spec)
    a = smooth((500,))
    enc = bytes(p.encode(a))
    flipped = bytearray(enc)
    flipped[-6] ^= 0xFF
    bad = [enc[: len(enc) // 2], enc[:5], b"", os.urandom(100), enc + b"junk", bytes(flipped),
           numcodecs.Zstd().encode(np.zeros(499, "f4")), numcodecs.Zstd().encode(np.zeros(501, "f4")), enc + enc]
    for b in bad:
        with pytest.raises(CorruptChunkError):
            p.decode(b)
        with pytest.raises(CorruptChunkError):
            p.decode_into(b, np.zeros(500, "float32"))


def test_multi_frame_matching_size() -> None:
    spec = make_spec((200,), "uint8")
    a = np.arange(200, dtype="uint8")
    two = numcodecs.Zstd().encode(a[:100]) + numcodecs.Zstd().encode(a[100:])
    p = CodecPipeline.from_codecs(["bytes", {"name": "zstd", "configuration": {"level": 0}}], spec)
    assert same(p.decode(two), a)


@pytest.mark.parametrize("cfg", [{"level": 23}, {"level": -131073}, {"level": "3"}, {"level": 1, "checksum": 1}, {}, {"level": 1, "x": 0}])
def test_bad_configuration(cfg: dict) -> None:
    with pytest.raises(MetadataError, match=r"codecs\[1\]\.configuration"):
        parse_codecs([LE, {"name": "zstd", "configuration": cfg}], make_spec((8,), "float32"))


def _skippable(payload: bytes) -> bytes:
    return (0x184D2A5E).to_bytes(4, "little") + len(payload).to_bytes(4, "little") + payload


@pytest.mark.parametrize("engine", ["native", "numcodecs"])
def test_skippable_frames_accepted_like_libzstd(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 23 item 11: a stream starting with (or holding) skippable frames decodes, as
    libzstd and numcodecs decode it -- through the native engine and through the fallback
    (numcodecs + the capped streaming decoder) when the engine has no libzstd."""
    from zarrcy.codecs import zstd as zstd_mod

    a = np.arange(300, dtype="<u4")
    frame = bytes(numcodecs.Zstd(level=1).encode(a))
    codec = ZstdCodec(1)
    if engine == "numcodecs":
        codec = ZstdCodec(2)  # a fresh instance: its cached engine chain is computed below
        monkeypatch.setattr(zstd_mod._native, "chain_of", lambda steps: None)
    spec = make_spec((300,), "uint32")
    for stream in (_skippable(b"meta") + frame, _skippable(b"") + frame + _skippable(b"tail" * 9)):
        assert numcodecs.Zstd().decode(stream) == a.tobytes()  # the reference accepts it
        assert frame_content_size(stream) == a.nbytes
        assert bytes(np.asarray(codec.decode(stream, spec))) == a.tobytes()
        dst = np.empty(a.nbytes, np.uint8)
        assert codec.decode_into(stream, dst, spec)
        assert dst.tobytes() == a.tobytes()


def test_engine_uses_the_newest_exported_libzstd() -> None:
    """The native engine's libzstd comes from the first of ZSTD_MODULES that imports
    (backports-zstd is a dependency below Python 3.14; 3.14 has ``_zstd``), and what it
    writes at every level is what that library's own one-shot call writes for the same
    parameters (the engine adds nothing to the frame)."""
    import sys

    from zarrcy.codecs import _native

    src = _native.zstd_source()
    assert src == ("backports.zstd._zstd" if sys.version_info < (3, 14) else "_zstd")
    if sys.version_info < (3, 14):
        from backports import zstd as lib
    else:  # pragma: no cover - exercised on 3.14
        from compression import zstd as lib
    spec = make_spec((64, 64), "uint16")
    a = (np.arange(64 * 64, dtype=np.uint16) % 977).reshape(64, 64)
    for level in (-5, 1, 3, 9):
        p = CodecPipeline.from_codecs([LE, {"name": "zstd", "configuration": {"level": level, "checksum": False}}], spec)
        enc = bytes(p.encode(a))
        opts = {lib.CompressionParameter.compression_level: level, lib.CompressionParameter.checksum_flag: 0,
                lib.CompressionParameter.content_size_flag: 1}
        assert enc == lib.compress(a.tobytes(), options=opts)
        assert numcodecs.Zstd().decode(enc) == a.tobytes()
