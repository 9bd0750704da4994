"""The vlen-utf8 / vlen-bytes codecs: configuration, validation, corrupt input, round trips."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from vlen_helpers import STRING, blobs, ref_decode, ref_encode, texts
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict, get_codec_class
from zarrcy.codecs.vlen import VLenBytesCodec, VLenUTF8Codec
from zarrcy.errors import CorruptChunkError, MetadataError
from zarrcy.metadata import parse_data_type

STR_T = parse_data_type("string")
BYTES_T = parse_data_type("bytes")


def spec(shape: tuple[int, ...], utf8: bool = True) -> ArraySpec:
    d = STR_T if utf8 else BYTES_T
    return ArraySpec(shape, d.dtype, d.default_fill_value(), d)


# -- configuration ---------------------------------------------------------------------
@pytest.mark.parametrize("cls", [VLenUTF8Codec, VLenBytesCodec])
def test_from_dict_to_dict(cls: type) -> None:
    assert get_codec_class(cls.name) is cls
    for cfg in (None, {}):
        c = cls.from_dict(cfg, "codecs[0]")
        assert c == cls() and c.to_dict() == {"name": cls.name}
    assert codec_from_dict({"name": cls.name, "configuration": {}}) == cls()
    assert codec_from_dict(cls.name) == cls()
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.x"):
        cls.from_dict({"x": 1}, "codecs[0]")


@pytest.mark.parametrize(
    "codec, data_type",
    [("vlen-utf8", "uint8"), ("vlen-utf8", "bytes"), ("vlen-bytes", "string"), ("vlen-bytes", "float32")],
)
def test_codec_needs_its_data_type(codec: str, data_type: str) -> None:
    d = parse_data_type(data_type)
    s = ArraySpec((4,), d.dtype, d.default_fill_value(), d)
    with pytest.raises(MetadataError, match=r"codecs\[0\].*data type"):
        CodecPipeline([{"name": codec}], s)


@pytest.mark.parametrize("data_type", ["string", "bytes"])
def test_bytes_codec_refuses_variable_length_types(data_type: str) -> None:
    d = parse_data_type(data_type)
    s = ArraySpec((4,), d.dtype, d.default_fill_value(), d)
    with pytest.raises(MetadataError, match="fixed-size"):
        CodecPipeline([{"name": "bytes", "configuration": {"endian": "little"}}], s)


# -- corrupt input: each a CorruptChunkError, never a crash or a huge allocation ---------
BAD = {
    "empty": b"",
    "short header": b"\x02\x00",
    "count exceeds data": struct.pack("<I", 0xFFFFFFFF) + b"\x00" * 16,
    "count exceeds data (small)": struct.pack("<III", 3, 0, 0),
    "count differs from chunk": ref_encode(["a", "b", "c"]),
    "count too small": ref_encode(["a"]),
    "length past end": struct.pack("<II", 2, 100) + b"ab" + b"\x00" * 4,
    "last length past end": ref_encode(["a"]) [:4].replace(b"\x01", b"\x02") + ref_encode(["a"])[4:] + struct.pack("<I", 9) + b"x",
    "truncated": ref_encode(["abc", "def"])[:-1],
    "trailing bytes": ref_encode(["a", "b"]) + b"\x00",
    "invalid utf-8": ref_encode([b"a", b"\xff\xfe"]),
    "overlong utf-8": ref_encode([b"\xc0\xaf", b""]),
    "surrogate": ref_encode([b"\xed\xb0\x80", b""]),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_corrupt_utf8_chunks(name: str) -> None:
    pipe = CodecPipeline([{"name": "vlen-utf8"}], spec((2,)))
    with pytest.raises(CorruptChunkError, match="vlen-utf8"):
        pipe.decode(BAD[name])
    out = np.empty(2, STRING)
    with pytest.raises(CorruptChunkError):
        pipe.decode_into(BAD[name], out)


@pytest.mark.parametrize("name", sorted(set(BAD) - {"invalid utf-8", "overlong utf-8", "surrogate"}))
def test_corrupt_bytes_chunks(name: str) -> None:
    pipe = CodecPipeline([{"name": "vlen-bytes"}], spec((2,), utf8=False))
    with pytest.raises(CorruptChunkError, match="vlen-bytes"):
        pipe.decode(BAD[name])


def test_invalid_utf8_is_fine_as_bytes() -> None:
    pipe = CodecPipeline([{"name": "vlen-bytes"}], spec((2,), utf8=False))
    assert list(pipe.decode(BAD["invalid utf-8"])) == [b"a", b"\xff\xfe"]


@settings(max_examples=200)
@given(st.binary(max_size=48), st.integers(0, 6), st.booleans())
def test_fuzz_decode_matches_reference(buf: bytes, n: int, utf8: bool) -> None:
    pipe = CodecPipeline([{"name": "vlen-utf8" if utf8 else "vlen-bytes"}], spec((n,), utf8))
    try:
        want = ref_decode(buf, utf8)
        if len(want) != n:
            raise ValueError("count")
    except ValueError:
        with pytest.raises(CorruptChunkError):
            pipe.decode(buf)
    else:
        assert list(pipe.decode(buf)) == want


def test_corrupt_under_gzip() -> None:
    import gzip

    pipe = CodecPipeline([{"name": "vlen-utf8"}, {"name": "gzip", "configuration": {"level": 1}}], spec((3,)))
    with pytest.raises(CorruptChunkError, match="item count"):
        pipe.decode(gzip.compress(ref_encode(["a"])))


# -- round trips -------------------------------------------------------------------------
shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


@given(shapes, st.data())
def test_utf8_round_trip(shape: tuple[int, ...], data: st.DataObject) -> None:
    n = int(np.prod(shape))
    items = data.draw(st.lists(texts, min_size=n, max_size=n))
    arr = np.array(items, dtype=STRING).reshape(shape)
    pipe = CodecPipeline([{"name": "vlen-utf8"}, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}], spec(shape))
    enc = pipe.encode(arr)
    # the uncompressed stream is exactly the reference encoding of the C-order elements
    raw = CodecPipeline([{"name": "vlen-utf8"}], spec(shape)).encode(arr)
    assert bytes(raw) == ref_encode(items)
    dec = pipe.decode(enc)
    assert dec.dtype == STRING and dec.shape == shape
    assert dec.tolist() == arr.tolist()
    out = np.empty(shape, STRING)
    pipe.decode_into(enc, out)
    assert out.tolist() == arr.tolist()


@given(shapes, st.data())
def test_bytes_round_trip(shape: tuple[int, ...], data: st.DataObject) -> None:
    n = int(np.prod(shape))
    items = data.draw(st.lists(blobs, min_size=n, max_size=n))
    arr = np.empty(n, object)
    arr[:] = items
    arr = arr.reshape(shape)
    pipe = CodecPipeline([{"name": "vlen-bytes"}, {"name": "gzip", "configuration": {"level": 1}}], spec(shape, False))
    raw = CodecPipeline([{"name": "vlen-bytes"}], spec(shape, False)).encode(arr)
    assert bytes(raw) == ref_encode(items)
    dec = pipe.decode(pipe.encode(arr))
    assert dec.dtype == object and dec.shape == shape
    assert dec.tolist() == arr.tolist()


def test_encode_accepts_object_and_fixed_unicode_and_keeps_c_order() -> None:
    s = spec((2, 3))
    pipe = CodecPipeline([{"name": "vlen-utf8"}], s)
    want = ref_encode(["a", "b", "c", "d", "e", "f"])
    base = np.array([["a", "b", "c"], ["d", "e", "f"]])
    for arr in (base, base.astype(object), base.astype(STRING), np.asfortranarray(base.astype(object)),
                np.asfortranarray(base.astype(STRING)), base.T.copy().T):
        assert bytes(pipe.array_bytes.encode(arr, s)) == want


def test_encode_rejects_non_strings() -> None:
    s = spec((2,))
    c = VLenUTF8Codec()
    with pytest.raises(TypeError, match="element 1"):
        c.encode(np.array(["a", 3], dtype=object), s)
    with pytest.raises(TypeError):
        c.encode(np.array([1, 2]), s)
    with pytest.raises(TypeError, match="element 0"):
        VLenBytesCodec().encode(np.array(["a", "b"], dtype=object), spec((2,), False))
    ro = np.array(["a", "b"], dtype=object)
    ro.flags.writeable = False
    assert bytes(c.encode(ro, s)) == ref_encode(["a", "b"])
