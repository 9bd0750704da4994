"""bitround codec (ext-codec-bitround.md) and its deprecated alias numcodecs.bitround:
configuration, keepbits ranges per data type, floats bit for bit numcodecs' BitRound,
integers by zarrs' rule (slow reference + zarrs' own vectors), arrays, sharding."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np
import pytest
from bits_helpers import ref_round_integer, ref_round_mantissa
from codec_helpers import make_spec, sample
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.codecs import ArraySpec, parse_codecs
from zarrcy.codecs.bitround import BitroundCodec, NumcodecsBitRound
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.errors import MetadataError
from zarrcy.metadata.data_type import parse_data_type

numcodecs = pytest.importorskip("numcodecs")


def nc_round(keepbits, x):
    """numcodecs' BitRound of ``x`` (it returns the integer view: viewed back as floats)."""
    return np.asarray(numcodecs.BitRound(keepbits).encode(np.array(x, copy=True))).view(np.asarray(x).dtype)

LE = {"name": "bytes", "configuration": {"endian": "little"}}
P = "codecs[0]"


def spec_of(shape, name):
    dt = parse_data_type(name)
    return ArraySpec(tuple(shape), dt.dtype, np.zeros((), dt.dtype)[()], dt)


# -- the spec's example ----------------------------------------------------------------------
def test_spec_example():
    doc = json.loads("""{"codecs": [{"name": "bitround", "configuration": {"keepbits": 10}},
                         {"name": "bytes", "configuration": {"endian": "little"}}]}""")
    c = codec_from_dict(doc["codecs"][0], P)
    assert isinstance(c, BitroundCodec) and c.keepbits == 10
    assert c.to_dict() == doc["codecs"][0]
    assert codec_from_dict(c.to_dict(), P) == c
    p = CodecPipeline.from_codecs(doc["codecs"], make_spec((5,), "float32"))
    x = np.array([1.23456789, -8.3587192834, 98765.4321, 0.0, np.inf], np.float32)
    assert np.array_equal(p.decode(p.encode(x)), nc_round(10, x))


def test_alias_is_read_and_written_back_under_its_name():
    obj = {"name": "numcodecs.bitround", "configuration": {"keepbits": 7}}
    c = codec_from_dict(obj, P)
    assert isinstance(c, NumcodecsBitRound) and isinstance(c, BitroundCodec)
    assert c.to_dict() == obj  # zarr-python knows only this name: never rewritten
    assert codec_from_dict({"name": "numcodecs.bitround", "configuration": {"keepbits": 7, "id": "bitround"}}, P) == c
    assert c != BitroundCodec(7)


@pytest.mark.parametrize("obj, path", [
    ({"name": "bitround"}, r"keepbits"),
    ({"name": "bitround", "configuration": {}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": -1}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": 65}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": 1.0}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": True}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": "3"}}, r"keepbits"),
    ({"name": "bitround", "configuration": {"keepbits": 3, "x": 1}}, r"(x)?"),
    ({"name": "bitround", "configuration": [3]}, r""),
    ({"name": "numcodecs.bitround", "configuration": {"keepbits": 53}}, r"keepbits"),
    ({"name": "numcodecs.bitround", "configuration": {"keepbits": 3, "id": "zlib"}}, r"id"),
])
def test_bad_configurations(obj, path):
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration(\.)?" + path + r".*expected"):
        codec_from_dict(obj, P)


# -- keepbits against the data type ------------------------------------------------------------
@pytest.mark.parametrize("name, lo, hi", [
    ("float16", 0, 10), ("bfloat16", 0, 7), ("float32", 0, 23), ("float64", 0, 52),
    ("complex64", 0, 23), ("complex128", 0, 52), ("complex_float16", 0, 10), ("complex_bfloat16", 0, 7),
    ("complex_float32", 0, 23), ("complex_float64", 0, 52),
    ("int8", 1, 8), ("uint8", 1, 8), ("int16", 1, 16), ("uint32", 1, 32), ("int64", 1, 64), ("uint64", 1, 64),
])
def test_keepbits_range_per_type(name, lo, hi):
    try:
        spec = spec_of((4,), name)
    except MetadataError:
        pytest.skip(f"data type {name} not in this zarrcy (helper exttypes adds it)")
    parse_codecs([{"name": "bitround", "configuration": {"keepbits": hi}}, LE], spec)
    parse_codecs([{"name": "bitround", "configuration": {"keepbits": lo}}, LE], spec)
    for bad in (hi + 1, lo - 1):
        if not 0 <= bad <= 64:  # outside every type's range: refused when parsed (test_bad_configurations)
            continue
        with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration\.keepbits: expected an integer in "
                           + rf"\[{lo}, {hi}\] for data type '{name}'"):
            parse_codecs([{"name": "bitround", "configuration": {"keepbits": bad}}, LE], spec)


def test_time_types_round_as_int64():
    dt = np.dtype("M8[s]")
    spec = make_spec((3,), dt)
    p = CodecPipeline.from_codecs([{"name": "bitround", "configuration": {"keepbits": 4}}, LE], spec)
    x = np.array([1_700_000_000, np.iinfo(np.int64).min, 5], dtype=np.int64).view(dt)  # NaT kept
    got = p.decode(p.encode(x)).view(np.int64)
    assert got.view(np.uint64).tolist() == [ref_round_integer(int(v), 64, 4) for v in x.view(np.uint64)]
    assert np.isnat(p.decode(p.encode(x))[1])


@pytest.mark.parametrize("name", ["bool", "float8_e4m3", "int4", "r16"])
def test_unsupported_types(name):
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.name: expected a codec for data type"):
        parse_codecs([{"name": "bitround", "configuration": {"keepbits": 1}}, LE], spec_of((4,), name))


@pytest.mark.parametrize("name", ["int32", "bfloat16", "complex64"])
def test_alias_keeps_numcodecs_types(name):
    # numcodecs' BitRound rounds float16/32/64 only; the v3 name takes the others
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.name: expected .*use 'bitround'"):
        parse_codecs([{"name": "numcodecs.bitround", "configuration": {"keepbits": 1}}, LE], spec_of((4,), name))
    parse_codecs([{"name": "bitround", "configuration": {"keepbits": 1}}, LE], spec_of((4,), name))


# -- floats: bit for bit numcodecs -----------------------------------------------------------
def _patterns(dtype, n, seed):
    """Random bit patterns plus the edge cases: zeros, infinities, NaNs with every payload
    edge, subnormals, the largest finite values, both signs."""
    dt = np.dtype(dtype)
    u = np.dtype(f"u{dt.itemsize}")
    bits = 8 * dt.itemsize
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 1 << 63, n, dtype=np.uint64).astype(u)
    edges = [0, 1, (1 << (bits - 1)), (1 << bits) - 1, (1 << (bits - 1)) - 1, (1 << (bits - 1)) + 1]
    x = np.concatenate([r, np.array(edges, dtype=np.uint64).astype(u)]).view(dt)
    specials = np.array([np.inf, -np.inf, np.nan, np.finfo(dt).max, np.finfo(dt).tiny / 2, -0.0], dtype=dt)
    return np.concatenate([x, specials])


@pytest.mark.parametrize("dtype, mantissa", [("float16", 10), ("float32", 23), ("float64", 52)])
def test_floats_bit_for_bit_numcodecs(dtype, mantissa):
    x = _patterns(dtype, 3000, mantissa)
    u = f"u{np.dtype(dtype).itemsize}"
    for keepbits in range(0, mantissa + 1):
        spec = make_spec(x.shape, dtype)
        for name in ("bitround", "numcodecs.bitround"):
            p = CodecPipeline.from_codecs([{"name": name, "configuration": {"keepbits": keepbits}}, LE], spec)
            got = p.decode(p.encode(x))
            want = nc_round(keepbits, x)
            assert np.array_equal(got.view(u), want.view(u)), (dtype, keepbits, name)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, (1 << 32) - 1), min_size=1, max_size=50), st.integers(0, 23))
def test_float32_property_against_numcodecs(patterns, keepbits):
    x = np.array(patterns, np.uint32).view(np.float32)
    c = BitroundCodec(keepbits)
    got = c.encode(x, make_spec(x.shape, "float32"))
    want = nc_round(keepbits, x)
    assert got.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_bfloat16_and_complex_per_component():
    rng = np.random.default_rng(3)
    x = rng.integers(0, 1 << 16, 500, dtype=np.uint16).view(ml_dtypes.bfloat16)
    for keepbits in range(0, 8):
        got = BitroundCodec(keepbits).encode(x, spec_of(x.shape, "bfloat16")).view(np.uint16)
        assert got.tolist() == [ref_round_mantissa(int(v), 16, 7 - keepbits) for v in x.view(np.uint16)]
    z = (rng.normal(size=300) + 1j * rng.normal(size=300)).astype(np.complex64)
    got = BitroundCodec(9).encode(z, spec_of(z.shape, "complex64"))
    want_re = nc_round(9, z.real)
    want_im = nc_round(9, z.imag)
    assert np.array_equal(got.real.view(np.uint32), np.asarray(want_re).view(np.uint32))
    assert np.array_equal(got.imag.view(np.uint32), np.asarray(want_im).view(np.uint32))


@pytest.mark.parametrize("name, comp, mantissa", [("complex_float16", np.uint16, 10), ("complex_bfloat16", np.uint16, 7)])
def test_low_precision_complex_per_component(name, comp, mantissa):
    try:
        spec = spec_of((200,), name)
    except MetadataError:
        pytest.skip(f"data type {name} not in this zarrcy (helper exttypes adds it)")
    x = np.random.default_rng(4).integers(0, 1 << 16, 400, dtype=np.uint16).view(spec.dtype)
    for keepbits in (0, 3, mantissa):
        got = BitroundCodec(keepbits).encode(x, spec).view(comp)
        assert got.tolist() == [ref_round_mantissa(int(v), 16, mantissa - keepbits) for v in x.view(comp)]


def test_spec_float_rule_examples():
    # zarrs' float32 vectors (keepbits 3): 1.23456789 -> 1.25, -8.3587192834 -> -8.0, 98765.4321 -> 98304.0
    x = np.array([0.0, 1.23456789, -8.3587192834, 98765.43210], np.float32)
    assert BitroundCodec(3).encode(x, make_spec((4,), "float32")).tolist() == [0.0, 1.25, -8.0, 98304.0]


# -- integers: zarrs' rule -------------------------------------------------------------------
@pytest.mark.parametrize("name", ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"])
def test_integers_against_the_reference(name):
    dt = np.dtype(name)
    bits = 8 * dt.itemsize
    x = sample((400,), dt, 4)
    u = np.dtype(f"u{dt.itemsize}")
    for keepbits in (1, 2, 3, bits // 2, bits - 1, bits):
        got = BitroundCodec(keepbits).encode(x, spec_of(x.shape, name))
        assert got.dtype == dt
        assert got.view(u).tolist() == [ref_round_integer(int(v), bits, keepbits) for v in x.view(u)]


def test_integer_examples():
    # zarrs' vectors, and a negative integer rounding on its two's complement pattern
    x = np.array([0, 1024, 1280, 1664, 1685, 123145182, 4294967295], np.uint32)
    assert BitroundCodec(3).encode(x, spec_of((7,), "uint32")).tolist() == \
        [0, 1024, 1280, 1536, 1792, 117440512, 3758096384]
    assert BitroundCodec(3).encode(np.array([-1, 100], np.int8), spec_of((2,), "int8")).tolist() == [-32, 96]


# -- arrays, sharding, decode --------------------------------------------------------------------
def test_decode_is_the_identity_and_input_is_not_modified():
    x = np.linspace(0, 1, 50, dtype=np.float32)
    keep = x.copy()
    c = BitroundCodec(4)
    enc = c.encode(x, make_spec(x.shape, "float32"))
    assert np.array_equal(x, keep)
    assert c.decode(enc, make_spec(x.shape, "float32")) is enc


def test_sharded_array_partial_reads_and_writes():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(16, 16)).astype(np.float32)
    z = zarrcy.create_array(zarrcy.MemoryStore(), shape=a.shape, chunks=(4, 4), shards=(8, 8), dtype="float32",
                            filters=[BitroundCodec(6)])
    assert z._pipeline.supports_partial_decode  # elementwise: partial access passes through
    z[...] = a
    want = nc_round(6, a)
    np.testing.assert_array_equal(z[...], want)
    np.testing.assert_array_equal(z[3:11, 5], want[3:11, 5])
    assert z[9, 9] == want[9, 9]
    z[2:5, 2:5] = a[:3, :3]  # a partial write rounds too
    z.vindex[[0, 15], [15, 0]] = [1.2345678, -7.654321]
    want[2:5, 2:5] = nc_round(6, a[:3, :3])
    want[[0, 15], [15, 0]] = nc_round(6, np.array([1.2345678, -7.654321], np.float32))
    np.testing.assert_array_equal(z[...], want)


def test_zarr_python_writes_numcodecs_bitround_zarrcy_reads(tmp_path):
    zarr = pytest.importorskip("zarr")
    from zarr.codecs.numcodecs import BitRound

    a = np.random.default_rng(2).normal(size=(20, 30)).astype(np.float64)
    z = zarr.create_array(str(tmp_path / "a"), shape=a.shape, chunks=(8, 8), dtype="float64",
                          filters=[BitRound(keepbits=12)])
    z[...] = a
    r = zarrcy.open_array(zarrcy.LocalStore(str(tmp_path / "a")))
    assert r.metadata.to_json()["codecs"][0] == {"name": "numcodecs.bitround", "configuration": {"keepbits": 12}}
    np.testing.assert_array_equal(r[...], z[...])
    # zarrcy writes with the alias: zarr-python reads the same bytes back
    w = zarrcy.create_array(zarrcy.LocalStore(str(tmp_path / "b")), shape=a.shape, chunks=(8, 8), dtype="float64",
                            filters=[NumcodecsBitRound(12)])
    w[...] = a
    for key in ("c/0/0", "c/2/3"):
        assert bytes((tmp_path / "a" / key).read_bytes()) == bytes((tmp_path / "b" / key).read_bytes())
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b"))[...], z[...])
