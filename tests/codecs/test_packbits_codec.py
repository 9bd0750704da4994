"""packbits codec (ext-codec-packbits.md) and zarr-python's numcodecs.packbits:
configuration (both key spellings), every supported data type against a slow bit-list
reference, known bytes, hostile stored values, arrays, numcodecs bit for bit."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from codec_helpers import MemValue
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.codecs import ArraySpec, parse_codecs
from zarrcy.codecs._base import select
from zarrcy.codecs.packbits import NumcodecsPackBits, PackBitsCodec, components_for
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.errors import CorruptChunkError, MetadataError
from zarrcy.metadata.data_type import parse_data_type

P = "codecs[0]"


def spec_of(shape, name):
    dt = parse_data_type(name)
    return ArraySpec(tuple(shape), dt.dtype, np.zeros((), dt.dtype)[()], dt)


def pipe(cfg, shape, name):
    return CodecPipeline.from_codecs([{"name": "packbits", "configuration": cfg}], spec_of(shape, name))


# -- configuration ---------------------------------------------------------------------------
@pytest.mark.parametrize("cfg, want", [
    (None, {"padding_encoding": "none"}),
    ({}, {"padding_encoding": "none"}),
    ({"padding_encoding": "first_byte"}, {"padding_encoding": "first_byte"}),
    ({"padding_encoding": "last_byte", "first_bit": None, "last_bit": None}, {"padding_encoding": "last_byte"}),
    ({"padding_encoding": "none", "first_bit": 2, "last_bit": 5}, {"padding_encoding": "none", "first_bit": 2,
                                                                   "last_bit": 5}),
    # the registry schema's (earlier draft's) spellings, written back as the README's
    ({"padding_encoding": "start_byte", "start_bit": 1}, {"padding_encoding": "first_byte", "first_bit": 1}),
    ({"padding_encoding": "end_byte", "end_bit": 6}, {"padding_encoding": "last_byte", "last_bit": 6}),
])
def test_configurations_round_trip(cfg, want):
    obj = {"name": "packbits"} if cfg is None else {"name": "packbits", "configuration": cfg}
    c = codec_from_dict(obj, P)
    assert c.to_dict() == {"name": "packbits", "configuration": want}
    assert codec_from_dict(c.to_dict(), P) == c


@pytest.mark.parametrize("cfg, path", [
    ({"padding_encoding": "middle"}, "padding_encoding"),
    ({"padding_encoding": None}, "padding_encoding"),
    ({"padding_encoding": 1}, "padding_encoding"),
    ({"first_bit": -1}, "first_bit"),
    ({"first_bit": 1.0}, "first_bit"),
    ({"first_bit": True}, "first_bit"),
    ({"last_bit": "3"}, "last_bit"),
    ({"last_bit": 64}, "last_bit"),
    ({"first_bit": 4, "last_bit": 3}, "last_bit"),  # "invalid for last_bit to be less than first_bit"
    ({"first_bit": 1, "start_bit": 1}, "start_bit"),
    ({"endian": "little"}, ""),
])
def test_bad_configurations(cfg, path):
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration\.?" + path + r".*expected"):
        codec_from_dict({"name": "packbits", "configuration": cfg}, P)


@pytest.mark.parametrize("name, cfg, path", [
    ("uint4", {"last_bit": 4}, "last_bit"),        # N = 4 for uint4
    ("bool", {"first_bit": 1}, "first_bit"),
    ("int16", {"first_bit": 16}, "first_bit"),
    ("float6_e2m3fn", {"last_bit": 6}, "last_bit"),
    ("int8", {"first_bit": 6, "last_bit": None}, None),  # fine: 6..7
])
def test_bits_against_the_data_type(name, cfg, path):
    try:
        spec = spec_of((3,), name)
    except MetadataError:
        pytest.skip(f"data type {name} not in this zarrcy (helper exttypes adds it)")
    codecs = [{"name": "packbits", "configuration": cfg}]
    if path is None:
        parse_codecs(codecs, spec)
        return
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration\." + path + ": expected a bit index"):
        parse_codecs(codecs, spec)


@pytest.mark.parametrize("name", ["r16", "numpy.datetime64", "string"])
def test_unsupported_types(name):
    try:
        dt = parse_data_type(name if name != "numpy.datetime64" else
                             {"name": name, "configuration": {"unit": "s", "scale_factor": 1}})
    except MetadataError:
        pytest.skip(name)
    spec = ArraySpec((3,), dt.dtype, np.zeros((), dt.dtype)[()], dt)
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.name: expected a codec for data type"):
        parse_codecs([{"name": "packbits"}], spec)


# -- slow reference ----------------------------------------------------------------------------
def ref_encode(values: np.ndarray, comp_bits: int, word: int, first: int, last: int, padding: str) -> bytes:
    words = np.ascontiguousarray(values).reshape(-1).view(f"u{word}").astype(np.uint64).tolist()
    b = last - first + 1
    bits = [(w >> (first + j)) & 1 for w in words for j in range(b)]
    pad = -len(bits) % 8
    bits += [0] * pad
    body = bytes(sum(bits[i + j] << j for j in range(8)) for i in range(0, len(bits), 8))
    return {"none": body, "first_byte": bytes([pad]) + body, "last_byte": body + bytes([pad])}[padding]


def ref_decoded(values: np.ndarray, comp_bits: int, word: int, first: int, last: int, signed: bool) -> np.ndarray:
    """What decoding gives back: the kept bits in place, sign- or zero-extended."""
    u = np.dtype(f"u{word}")
    out = []
    for w in np.ascontiguousarray(values).reshape(-1).view(u).astype(np.uint64).tolist():
        v = (w >> first) & ((1 << (last - first + 1)) - 1)
        if signed and v >> (last - first):
            v -= 1 << (last - first + 1)
        out.append((v << first) & ((1 << (8 * word)) - 1))
    return np.array(out, dtype=np.uint64).astype(u).view(values.dtype).reshape(values.shape)


TYPES = ["bool", "int2", "uint2", "int4", "uint4", "float4_e2m1fn", "int8", "uint8", "int16", "uint16", "int32",
         "uint32", "int64", "uint64", "float16", "float32", "float64", "bfloat16", "complex64", "complex128",
         "float8_e4m3", "float6_e2m3fn", "float6_e3m2fn", "complex_float32", "complex_bfloat16",
         "complex_float4_e2m1fn", "complex_float6_e3m2fn"]


def _values(dt: np.dtype, n: int, seed: int, c) -> np.ndarray:
    """Valid elements: random patterns of the component's N bits, sign-extended in storage
    for signed narrow integers (as ml_dtypes holds int2/int4)."""
    rng = np.random.default_rng(seed)
    u = np.dtype(f"u{c.word}")
    raw = rng.integers(0, 1 << 62, n * c.ncomp, dtype=np.uint64) & ((1 << c.bits) - 1)
    if c.signed and c.bits < 8 * c.word:
        neg = raw >> (c.bits - 1) == 1
        raw = np.where(neg, raw | (((1 << (8 * c.word)) - 1) ^ ((1 << c.bits) - 1)), raw)
    return raw.astype(u).view(dt)


@pytest.mark.parametrize("name", TYPES)
@pytest.mark.parametrize("padding", ["none", "first_byte", "last_byte"])
def test_every_type_against_the_reference(name, padding):
    try:
        spec0 = spec_of((1,), name)
    except MetadataError:
        pytest.skip(f"data type {name} not in this zarrcy (helper exttypes adds it)")
    c = components_for(spec0)
    assert c is not None
    for n, first, last in [(1, 0, c.bits - 1), (13, 0, c.bits - 1), (9, c.bits // 3, c.bits - 1),
                           (17, 0, max(0, c.bits // 2 - 1)), (8, c.bits - 1, c.bits - 1)]:
        x = _values(spec0.dtype, n, n + first, c)
        cfg = {"padding_encoding": padding, "first_bit": first, "last_bit": last}
        p = pipe(cfg, (n,), name)
        enc = bytes(p.encode(x))
        assert enc == ref_encode(x, c.bits, c.word, first, last, padding), (name, n, first, last)
        assert p.compute_encoded_size() == len(enc)
        got = p.decode(enc)
        want = ref_decoded(x, c.bits, c.word, first, last, c.signed)
        assert got.tobytes() == want.tobytes(), (name, n, first, last)
        if first == 0 and last == c.bits - 1:
            assert got.tobytes() == x.tobytes()  # lossless


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int16", "uint32", "int64", "uint8", "int4"]), st.integers(0, 40), st.data())
def test_property_round_trip(name, n, data):
    spec0 = spec_of((1,), name)
    c = components_for(spec0)
    first = data.draw(st.integers(0, c.bits - 1))
    last = data.draw(st.integers(first, c.bits - 1))
    x = _values(spec0.dtype, n, data.draw(st.integers(0, 1000)), c)
    p = pipe({"first_bit": first, "last_bit": last, "padding_encoding": "last_byte"}, (n,), name)
    enc = bytes(p.encode(x))
    assert enc == ref_encode(x, c.bits, c.word, first, last, "last_byte")
    assert p.decode(enc).tobytes() == ref_decoded(x, c.bits, c.word, first, last, c.signed).tobytes()


def test_known_bytes():
    x = np.array([True, False, False, False, False, False, False, False, True], bool)
    assert bytes(pipe({"padding_encoding": "first_byte"}, (9,), "bool").encode(x)) == bytes([7, 0x01, 0x01])
    assert bytes(pipe({"padding_encoding": "last_byte"}, (9,), "bool").encode(x)) == bytes([0x01, 0x01, 7])
    assert bytes(pipe({}, (9,), "bool").encode(x)) == bytes([0x01, 0x01])
    # int4 -3, 7, -8: nibbles 0xD, 0x7, 0x8
    i4 = np.array([-3, 7, -8], ml_dtypes.int4)
    enc = bytes(pipe({}, (3,), "int4").encode(i4))
    assert enc == bytes([0x7D, 0x08])
    assert pipe({}, (3,), "int4").decode(enc).tolist() == i4.tolist()
    # whole-byte types without first/last bit: the bytes codec's little-endian bytes
    v = np.array([1, -2, 300], np.int32)
    assert bytes(pipe({}, (3,), "int32").encode(v)) == v.astype("<i4").tobytes()
    # int16 keeping bits 4..11, sign-extended from bit 11
    v16 = np.array([0x0FF0, 0x0123, -16], np.int16)
    p = pipe({"first_bit": 4, "last_bit": 11}, (3,), "int16")
    assert bytes(p.encode(v16)) == bytes([0xFF, 0x12, 0xFF])
    assert p.decode(bytes([0xFF, 0x12, 0xFF])).tolist() == [-16, 0x0120, -16]


# -- partial reads (no compressor: element i is at stream bits [i*k, (i+1)*k)) -----------------
@st.composite
def _selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "array"]))
        if kind == "int":
            sel.append(draw(st.integers(0, n - 1)))
        elif kind == "slice":
            a = draw(st.integers(0, n - 1))
            sel.append(slice(a, draw(st.integers(a + 1, n)), draw(st.integers(1, 3))))
        else:
            sel.append(np.array(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4)), np.int64))
    return tuple(sel)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from([("bool", {}), ("uint8", {"first_bit": 2, "last_bit": 4}), ("int4", {}),
                        ("int16", {"first_bit": 3, "last_bit": 13}), ("uint2", {}), ("complex64", {"last_bit": 20})]),
       st.sampled_from(["none", "first_byte", "last_byte"]), st.data())
def test_partial_reads_equal_full_decode(case, padding, data):
    name, cfg = case
    shape = (5, 7, 3)
    spec = spec_of(shape, name)
    c = components_for(spec)
    x = _values(spec.dtype, int(np.prod(shape)), 11, c).reshape(shape)
    codec = PackBitsCodec(padding, cfg.get("first_bit"), cfg.get("last_bit"))
    p = CodecPipeline.from_codecs([codec], spec)
    assert p.supports_partial_decode
    v = MemValue(bytes(p.encode(x)))
    full = p.decode(v.value)
    sel = data.draw(_selection(shape))
    got = p.decode_partial(v, sel)
    assert got.tobytes() == np.ascontiguousarray(select(full, sel)).tobytes()
    coords = np.array([[4, 0, 2], [6, 0, 3], [2, 1, 0]], np.int64)
    assert p.decode_points(v, coords).tobytes() == full[tuple(coords)].tobytes()
    assert p.read_point(v, (3, 5, 1)).tobytes() == full[3, 5, 1].tobytes()


def test_partial_read_fetches_only_the_span():
    x = (np.arange(8000) % 7 == 0).reshape(80, 100)
    p = CodecPipeline.from_codecs([PackBitsCodec("first_byte")], spec_of(x.shape, "bool"))
    v = MemValue(bytes(p.encode(x)))
    assert v.value is not None and len(v.value) == 1001
    np.testing.assert_array_equal(p.decode_partial(v, (40, slice(0, 100, 1))), x[40])
    assert v.fetched == 13 + 1  # 100 bits from bit 4000 (byte 500: 13 bytes) + the padding byte
    v.fetched = 0
    assert p.read_point(v, (79, 99)) == x[79, 99]
    assert v.fetched == 2
    assert p.decode_partial(MemValue(None), (0, 0)) is None


@pytest.mark.parametrize("padding", ["none", "first_byte", "last_byte"])
def test_partial_reads_of_hostile_values(padding):
    x = np.arange(60).astype(ml_dtypes.uint4).reshape(6, 10)
    p = CodecPipeline.from_codecs([PackBitsCodec(padding)], spec_of(x.shape, "uint4"))
    good = bytes(p.encode(x))
    truncated = good[:10] if padding != "first_byte" else good[:11]
    with pytest.raises(CorruptChunkError, match="truncated"):
        p.decode_partial(MemValue(truncated), (5, slice(0, 10, 1)))
    if padding != "none":
        wrong = bytearray(good)
        wrong[0 if padding == "first_byte" else -1] = 3
        with pytest.raises(CorruptChunkError, match="padding bits"):
            p.decode_partial(MemValue(bytes(wrong)), (1, slice(0, 10, 1)))


# -- hostile stored values ---------------------------------------------------------------------
@pytest.mark.parametrize("padding", ["none", "first_byte", "last_byte"])
def test_hostile_values(padding):
    p = pipe({"padding_encoding": padding}, (10,), "uint4")
    good = bytes(p.encode(np.arange(10, dtype=ml_dtypes.uint4)))
    for bad in (good[:-1], good + b"\0", b"", good * 1000):
        with pytest.raises(CorruptChunkError, match="expected"):
            p.decode(bad)
    if padding != "none":
        at = 0 if padding == "first_byte" else -1
        wrong = bytearray(good)
        wrong[at] = 4  # 10 * 4 bits = 40: no padding
        with pytest.raises(CorruptChunkError, match=r"padding bits\): expected 0, received 4"):
            p.decode(bytes(wrong))
        wrong[at] = 255
        with pytest.raises(CorruptChunkError):
            p.decode(bytes(wrong))


def test_corrupt_chunk_in_an_array_names_the_key():
    store = zarrcy.MemoryStore()
    z = zarrcy.create_array(store, shape=(20,), chunks=(10,), dtype="bool", serializer=PackBitsCodec("first_byte"),
                            compressors=None)
    z[...] = np.arange(20) % 3 == 0
    np.testing.assert_array_equal(z[...], np.arange(20) % 3 == 0)
    store.set("c/1", bytes([5, 0, 0]))  # 10 bits: 6 padding bits, not 5
    with pytest.raises(CorruptChunkError, match=r"c/1"):
        z[...]
    store.set("c/1", bytes([6, 0]))  # truncated
    with pytest.raises(CorruptChunkError, match=r"c/1"):
        z[...]


@pytest.mark.parametrize("name, dtype", [("uint4", ml_dtypes.uint4), ("int2", ml_dtypes.int2), ("bool", bool),
                                         ("int16", "int16")])
def test_arrays_round_trip(name, dtype):
    rng = np.random.default_rng(0)
    a = rng.integers(-2 if name == "int2" else 0, 2 if name != "int16" else 1000, (13, 7)).astype(dtype)
    for sharded in (False, True):
        z = zarrcy.create_array(zarrcy.MemoryStore(), shape=a.shape, chunks=(4, 3), dtype=a.dtype,
                                shards=(8, 6) if sharded else None,
                                serializer=PackBitsCodec("last_byte"), compressors=None)
        z[...] = a
        np.testing.assert_array_equal(z[...], a)
        np.testing.assert_array_equal(z[2:11, 1:6:2], a[2:11, 1:6:2])
        z[5, :] = a[0, :]
        b = a.copy()
        b[5, :] = a[0, :]
        np.testing.assert_array_equal(z[...], b)


def test_packbits_behind_compression():
    a = np.random.default_rng(1).integers(0, 4, (100,)).astype(ml_dtypes.uint2)
    z = zarrcy.create_array(zarrcy.MemoryStore(), shape=a.shape, chunks=(30,), dtype=a.dtype,
                            serializer=PackBitsCodec(), compressors=[{"name": "zstd", "configuration": {"level": 3}}])
    z[...] = a
    np.testing.assert_array_equal(z[...], a)


# -- numcodecs.packbits ------------------------------------------------------------------------
def test_numcodecs_packbits_bit_for_bit():
    numcodecs = pytest.importorskip("numcodecs")
    rng = np.random.default_rng(2)
    for n in (0, 1, 7, 8, 9, 100):
        x = rng.integers(0, 2, n).astype(bool)
        spec = ArraySpec((n,), np.dtype(bool), np.False_)
        c = NumcodecsPackBits()
        enc = c.encode(x, spec)
        assert enc.tobytes() == bytes(numcodecs.PackBits().encode(x))
        assert np.array_equal(c.decode(enc, spec), x)
    assert codec_from_dict({"name": "numcodecs.packbits"}, P).to_dict() == {"name": "numcodecs.packbits",
                                                                          "configuration": {}}
    assert codec_from_dict({"name": "numcodecs.packbits", "configuration": {}}, P) == NumcodecsPackBits()


def test_numcodecs_packbits_differs_from_v3_first_byte():
    # same header, opposite bit order within each byte (see the module docstring)
    x = np.array([True, False, False, False, False, False, False, False, False], bool)
    spec = ArraySpec((9,), np.dtype(bool), np.False_)
    assert NumcodecsPackBits().encode(x, spec).tobytes() == bytes([7, 0x80, 0x00])
    assert bytes(PackBitsCodec("first_byte").encode(x, spec_of((9,), "bool"))) == bytes([7, 0x01, 0x00])


def test_numcodecs_packbits_hostile_and_types():
    spec = ArraySpec((9,), np.dtype(bool), np.False_)
    c = NumcodecsPackBits()
    with pytest.raises(CorruptChunkError):
        c.decode(np.array([7, 1], np.uint8), spec)
    with pytest.raises(CorruptChunkError, match="expected 7, received 3"):
        c.decode(np.array([3, 1, 1], np.uint8), spec)
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.name: expected a codec for data type 'int8'"):
        parse_codecs([{"name": "numcodecs.packbits"}, {"name": "bytes"}], spec_of((3,), "int8"))


def test_zarr_python_numcodecs_packbits_interop(tmp_path):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs.numcodecs import PackBits

    a = np.random.default_rng(3).integers(0, 2, (10, 13)).astype(bool)
    z = zarr.create_array(str(tmp_path / "a"), shape=a.shape, chunks=(4, 5), dtype="bool", filters=[PackBits()],
                          compressors=None)
    z[...] = a
    meta = json.loads((tmp_path / "a" / "zarr.json").read_text())
    r = zarrcy.open_array(zarrcy.LocalStore(str(tmp_path / "a")))
    np.testing.assert_array_equal(r[...], a)
    assert r.metadata.to_json()["codecs"][0]["name"] == meta["codecs"][0]["name"] == "numcodecs.packbits"
    w = zarrcy.create_array(zarrcy.LocalStore(str(tmp_path / "b")), shape=a.shape, chunks=(4, 5), dtype="bool",
                            filters=[NumcodecsPackBits()], compressors=None)
    w[...] = a
    assert (tmp_path / "a" / "c/1/2").read_bytes() == (tmp_path / "b" / "c/1/2").read_bytes()
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b"))[...], a)
