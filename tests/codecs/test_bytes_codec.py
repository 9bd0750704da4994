"""bytes codec (v3-codec-bytes.rst): every data type, both byte orders, zero-copy decode."""

from __future__ import annotations

import numpy as np
import pytest
from codec_helpers import CORE_DTYPES, make_spec, same, sample

from zarrcy.codecs import BytesCodec, parse_codecs
from zarrcy.codecs.bytes import endian_applies
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CorruptChunkError, MetadataError


def _reference_encode(a: np.ndarray, endian: str | None) -> bytes:
    """Slow exact reference: element by element, bytes reversed per component for big endian."""
    out = bytearray()
    dt = a.dtype
    comp = dt.itemsize // 2 if dt.kind == "c" else dt.itemsize
    for v in np.ascontiguousarray(a).reshape(-1):
        raw = np.asarray(v, dtype=dt).tobytes()
        if endian == "big" and endian_applies(dt):
            raw = b"".join(raw[i : i + comp][::-1] for i in range(0, len(raw), comp))
        out += raw
    return bytes(out)


@pytest.mark.parametrize("dtype", CORE_DTYPES, ids=str)
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("shape", [(3, 4), (0, 5), (), (7,)])
def test_round_trip_every_dtype(dtype: np.dtype, endian: str, shape: tuple[int, ...]) -> None:
    spec = make_spec(shape, dtype)
    [codec] = parse_codecs([{"name": "bytes", "configuration": {"endian": endian}}], spec)
    a = sample(shape, dtype, seed=3)
    enc = codec.encode(a, spec)
    assert bytes(enc) == _reference_encode(a, endian)
    dec = codec.decode(enc, spec)
    assert same(dec, a)
    out = np.zeros(shape, dtype=dtype)
    assert codec.decode_into(enc, out, spec)
    assert same(out, a)
    # strided destination
    big = np.zeros(tuple(2 * s for s in shape), dtype=dtype)
    view = big[(..., *(slice(None, None, 2) for _ in shape))]
    codec.decode_into(enc, view, spec)
    assert same(view.copy(), a)


def test_native_decode_is_zero_copy() -> None:
    spec = make_spec((4, 4), "float32")
    data = bytearray(np.arange(16, dtype="<f4").tobytes())
    arr = BytesCodec("little").decode(data, spec)
    assert np.shares_memory(arr, np.frombuffer(data, dtype=np.uint8))
    arr[0, 0] = 99
    assert np.frombuffer(data, dtype="<f4")[0] == 99


def test_big_endian_values() -> None:
    spec = make_spec((2,), "int16")
    assert bytes(BytesCodec("big").encode(np.array([1, -2], dtype="int16"), spec)) == b"\x00\x01\xff\xfe"
    assert bytes(BytesCodec("little").encode(np.array([1, -2], dtype="int16"), spec)) == b"\x01\x00\xfe\xff"
    c = make_spec((1,), "complex64")
    enc = bytes(BytesCodec("big").encode(np.array([1 + 2j], dtype="complex64"), c))
    assert enc == np.array([1.0, 2.0], dtype=">f4").tobytes()


def test_non_contiguous_input() -> None:
    spec = make_spec((3, 3), "uint16")
    a = np.arange(36, dtype="uint16").reshape(6, 6)[::2, 1::2]
    for e in ("little", "big"):
        assert same(BytesCodec(e).decode(BytesCodec(e).encode(a, spec), spec), np.ascontiguousarray(a))


@pytest.mark.parametrize(
    "config, msg",
    [
        ({"endian": "middle"}, "codecs[0].configuration.endian"),
        ({"endian": 1}, "codecs[0].configuration.endian"),
        ({"endian": "little", "order": "C"}, "codecs[0].configuration.order"),
        ("x", "codecs[0].configuration"),
    ],
)
def test_bad_configuration(config: object, msg: str) -> None:
    with pytest.raises(MetadataError, match=msg.replace("[", r"\[").replace("]", r"\]")):
        parse_codecs([{"name": "bytes", "configuration": config}], make_spec((2,), "int16"))


@pytest.mark.parametrize("dtype", ["int16", "float32", "complex128", "uint64"])
def test_endian_required_for_multibyte(dtype: str) -> None:
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.endian"):
        parse_codecs(["bytes"], make_spec((2,), dtype))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "V4"])
def test_endian_optional_and_dropped_for_single_byte(dtype: str) -> None:
    spec = make_spec((2,), dtype)
    assert parse_codecs(["bytes"], spec)[0].to_dict() == {"name": "bytes"}
    [c] = parse_codecs([{"name": "bytes", "configuration": {"endian": "big"}}], spec)
    assert c.to_dict() == {"name": "bytes"}


def test_to_dict_round_trip() -> None:
    for c in (BytesCodec("little"), BytesCodec("big"), BytesCodec(None)):
        assert BytesCodec.from_dict(c.to_dict().get("configuration"), "codecs[0]") == c


@pytest.mark.parametrize("n", [0, 7, 9, 1000])
def test_wrong_size_is_corrupt(n: int) -> None:
    p = CodecPipeline.from_codecs([{"name": "bytes", "configuration": {"endian": "little"}}], make_spec((2,), "float32"))
    with pytest.raises(CorruptChunkError):
        p.decode(b"\0" * n)
    with pytest.raises(CorruptChunkError):
        p.decode_into(b"\0" * n, np.zeros(2, "float32"))


def test_encoded_size() -> None:
    p = CodecPipeline.from_codecs([{"name": "bytes", "configuration": {"endian": "big"}}], make_spec((3, 5), "float64"))
    assert p.compute_encoded_size() == 120
