"""Fill values in every JSON form (v3-data-types.rst "Permitted fill values")."""

from __future__ import annotations

import bisect
import json
import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.errors import MetadataError
from zarrcy.metadata import parse_data_type
from zarrcy.metadata.fill_value import default_fill_value, fill_value_to_json, parse_fill_value, round_to_bits

FLOATS = ["float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2", "float4_e2m1fn", "float8_e4m3fn"]


def bits_of(value: object, name: str) -> int:
    d = parse_data_type(name)
    return int(np.array(value, dtype=d.dtype).view(d.bits_dtype))


def from_bits(bits: int, name: str) -> object:
    d = parse_data_type(name)
    return np.array(bits, dtype=d.bits_dtype).view(d.dtype)[()]


def same(a: object, b: object) -> bool:
    """Equal JSON values, including the Python type (1 vs 1.0 vs True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))  # type: ignore[arg-type]
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)  # type: ignore[arg-type]
    return a == b


# ------------------------------------------------------------------- canonical round trips

CANONICAL = {
    "bool": [True, False],
    "int8": [-128, 0, 127],
    "int16": [-32768, 32767],
    "int32": [-(2**31), 2**31 - 1],
    "int64": [-(2**63), 2**63 - 1, 0],
    "uint8": [0, 255],
    "uint16": [65535],
    "uint32": [2**32 - 1],
    "uint64": [0, 2**64 - 1],
    "int2": [-2, 1],
    "int4": [-8, 7],
    "uint2": [0, 3],
    "uint4": [0, 15],
    "float16": [0.0, -0.0, 0.1, 65500.0, 2048.0, 6e-08, "NaN", "Infinity", "-Infinity", "0x7e01", "0xfe00", 1.5],
    "float32": [0.0, -0.0, 0.1, 3.4028235e38, 1e-45, "NaN", "Infinity", "-Infinity", "0x7fc00001", "0xffc00000", "0x7f800001", -2.5],
    "float64": [0.0, -0.0, 0.1, 1.7976931348623157e308, 5e-324, "NaN", "Infinity", "-Infinity", "0x7ff8000000000001", "0xfff8000000000000", 1e300],
    "bfloat16": [0.0, -0.0, 0.1, "NaN", "Infinity", "-Infinity", "0x7fc1", "0xffc0", 3.0],
    "float8_e4m3": [0.0, -0.0, 240.0, 0.002, "NaN", "Infinity", "-Infinity", "0x7d", "0xfc"],
    "float8_e5m2": [0.0, -0.0, 60000.0, "NaN", "Infinity", "-Infinity", "0x7f", "0xfe", 0.09],
    "float4_e2m1fn": [0.0, -0.0, 0.5, 6.0, -6.0, 1.5],
    "float8_e4m3fn": [0.0, 450.0, 0.002, "NaN", "0xff", -0.0],
    "complex64": [[0.0, 0.0], [1.0, 2.0], ["-Infinity", "NaN"], ["0x7fc00001", -0.0], [0.1, 3.4028235e38]],
    "complex128": [[0.0, 0.0], ["NaN", "Infinity"], ["0x7ff8000000000001", 0.1]],
    "r8": [[0], [255]],
    "r24": [[1, 2, 3], [0, 0, 0], [255, 128, 0]],
}


@pytest.mark.parametrize("name,value", [(n, v) for n, vs in CANONICAL.items() for v in vs], ids=str)
def test_canonical_round_trip(name: str, value: object) -> None:
    d = parse_data_type(name)
    scalar = d.parse_fill_value(value)
    assert isinstance(scalar, np.generic) and scalar.dtype == d.dtype
    out = d.fill_value_to_json(scalar)
    assert same(out, value), (out, value)
    # JSON text round trip too (what actually lands in zarr.json)
    assert same(json.loads(json.dumps(out, allow_nan=False)), value)


def test_raw_base64_read_leniently() -> None:
    d = parse_data_type("r24")
    assert d.parse_fill_value("AQID").tobytes() == b"\x01\x02\x03"
    assert d.fill_value_to_json(d.parse_fill_value("AQID")) == [1, 2, 3]


def test_default_nan_bits() -> None:
    assert bits_of(parse_fill_value(parse_data_type("float32"), "NaN"), "float32") == 0x7FC00000
    assert bits_of(parse_fill_value(parse_data_type("float64"), "NaN"), "float64") == 0x7FF8000000000000
    assert bits_of(parse_fill_value(parse_data_type("float16"), "NaN"), "float16") == 0x7E00
    assert bits_of(parse_fill_value(parse_data_type("bfloat16"), "NaN"), "bfloat16") == 0x7FC0  # bfloat16.md
    assert bits_of(parse_fill_value(parse_data_type("float8_e4m3"), "NaN"), "float8_e4m3") == 0x7C  # float8_e4m3.md
    assert bits_of(parse_fill_value(parse_data_type("float8_e5m2"), "NaN"), "float8_e5m2") == 0x7E  # float8_e5m2.md


@pytest.mark.parametrize("name", FLOATS[:3])
def test_hex_equivalent_to_nan(name: str) -> None:
    d = parse_data_type(name)
    hexform = {"float16": "0x7e00", "float32": "0x7fc00000", "float64": "0x7ff8000000000000"}[name]
    assert bits_of(d.parse_fill_value(hexform), name) == bits_of(d.parse_fill_value("NaN"), name)
    assert d.fill_value_to_json(d.parse_fill_value(hexform)) == "NaN"
    assert d.fill_value_to_json(d.parse_fill_value(hexform.upper().replace("0X", "0x"))) == "NaN"


def test_plus_infinity_accepted() -> None:
    d = parse_data_type("float32")
    assert d.parse_fill_value("+Infinity") == np.inf
    assert d.fill_value_to_json(d.parse_fill_value("+Infinity")) == "Infinity"


@pytest.mark.parametrize("name", FLOATS)
def test_json_integers_accepted_for_floats(name: str) -> None:
    d = parse_data_type(name)
    assert d.parse_fill_value(0) == 0 and d.parse_fill_value(1) == 1
    assert same(d.fill_value_to_json(d.parse_fill_value(1)), 1.0)


def test_python_float_nan_inf_read_as_canonical() -> None:
    d = parse_data_type("float32")
    assert d.fill_value_to_json(d.parse_fill_value(float("nan"))) == "NaN"
    assert d.fill_value_to_json(d.parse_fill_value(-float("nan"))) == "NaN"
    assert d.fill_value_to_json(d.parse_fill_value(float("-inf"))) == "-Infinity"


def test_default_fill_values() -> None:
    for name in [*CANONICAL]:
        d = parse_data_type(name)
        v = default_fill_value(d)
        assert v.dtype == d.dtype
        assert not np.asarray(v).reshape(1).view(np.uint8).any()
        assert d.default_fill_value().tobytes() == v.tobytes()


def test_fill_value_to_json_accepts_plain_values() -> None:
    d = parse_data_type("float32")
    assert d.fill_value_to_json(0.1) == 0.1
    assert d.fill_value_to_json("NaN") == "NaN"
    assert parse_data_type("int8").fill_value_to_json(np.int64(5)) == 5
    assert parse_data_type("complex64").fill_value_to_json(1 + 2j) == [1.0, 2.0]


# ------------------------------------------------------------------- invalid fill values

BAD = [
    ("uint8", 256), ("uint8", -1), ("int8", 128), ("int8", -129), ("int64", 2**63), ("uint64", 2**64), ("uint64", -1),
    ("int4", 8), ("int4", -9), ("uint4", 16), ("int2", 2), ("uint2", 4),
    ("int32", 1.0), ("int32", True), ("int32", "1"), ("int32", None), ("int32", "NaN"), ("int32", "0x00000001"), ("int32", [1]),
    ("bool", 1), ("bool", 0), ("bool", "true"), ("bool", None),
    ("float32", None), ("float32", True), ("float32", "nan"), ("float32", "inf"), ("float32", "1.5"), ("float32", "0x7fc0"),
    ("float32", "0x7fc0000000"), ("float32", "0x7fc0000g"), ("float32", "0x7f_c0000"), ("float32", "0X7FC00000"), ("float32", [1.0]),
    ("float32", "+NaN"), ("float32", "-NaN"), ("float32", {}),
    ("float64", "0x7ff8"), ("float16", "0x7e000"),
    ("float4_e2m1fn", "NaN"), ("float4_e2m1fn", "Infinity"), ("float4_e2m1fn", 7.0), ("float4_e2m1fn", 100), ("float4_e2m1fn", "0x1f"),
    ("float8_e4m3fn", "Infinity"), ("float8_e4m3fn", 1000.0),
    ("complex64", 1.0), ("complex64", [1.0]), ("complex64", [1.0, 2.0, 3.0]), ("complex64", ["NaN", None]), ("complex64", "NaN"),
    ("complex64", ["0x7fc0000000000000", 0]), ("complex128", ["0x7fc00000", 0]),
    ("r24", [1, 2]), ("r24", [1, 2, 256]), ("r24", [1, 2, -1]), ("r24", [1, 2, True]), ("r24", 0), ("r24", "AAA="), ("r24", "AAAAAA=="), ("r24", "!!!!"), ("r24", [1, 2, 3.0]),
]


@pytest.mark.parametrize("name,value", BAD, ids=str)
def test_bad_fill_values(name: str, value: object) -> None:
    with pytest.raises(MetadataError, match=r"^fill_value"):
        parse_fill_value(parse_data_type(name), value, "fill_value")


def test_bad_fill_value_message_names_path_and_form() -> None:
    with pytest.raises(MetadataError) as e:
        parse_fill_value(parse_data_type("uint8"), 256, "codecs[0].configuration.scalar_map[1][0]")
    assert str(e.value) == "codecs[0].configuration.scalar_map[1][0]: expected an integer in [0, 255], received 256"
    assert e.value.path == "codecs[0].configuration.scalar_map[1][0]"


# ------------------------------------------------------------------- exact rounding oracle


@lru_cache(maxsize=None)
def _table(name: str) -> tuple[list[Fraction], list[int]]:
    """All finite non-negative values of a small float type (sorted) with their bits."""
    d = parse_data_type(name)
    nbits = d.float_format.nbits
    bits = np.arange(1 << (nbits - 1), dtype=d.bits_dtype)
    with np.errstate(invalid="ignore"):
        vals = bits.view(d.dtype).astype(np.float64)
    ok = np.isfinite(vals)
    pairs = sorted((Fraction(float(v)), int(b)) for v, b in zip(vals[ok], bits[ok]))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def oracle_small(name: str, x: Fraction) -> int | None:
    """Nearest value, ties to even bits, by brute force over the table."""
    d = parse_data_type(name)
    fmt = d.float_format
    vals, bits = _table(name)
    a = abs(x)
    sign = (1 << (fmt.nbits - 1)) if x < 0 else 0
    # a pseudo-value one ulp above max stands for "overflow" (even mantissa 0 -> wins ties)
    top = vals[-1] + (vals[-1] - vals[-2])
    if a >= top:
        return (sign | (((1 << fmt.exp_bits) - 1) << fmt.man_bits)) if fmt.special == "ieee" else None
    i = bisect.bisect_left(vals, a)
    if i < len(vals) and vals[i] == a:
        return sign | bits[i]
    lo_v, lo_b = vals[i - 1], bits[i - 1]
    hi_v, hi_b = (vals[i], bits[i]) if i < len(vals) else (top, None)
    dl, dh = a - lo_v, hi_v - a
    if dl < dh or (dl == dh and (hi_b is None and False or hi_b is not None and lo_b % 2 == 0)):
        return sign | lo_b
    if hi_b is None:
        return (sign | (((1 << fmt.exp_bits) - 1) << fmt.man_bits)) if fmt.special == "ieee" else None
    return sign | hi_b


SMALL = ["float16", "bfloat16", "float8_e4m3", "float8_e5m2", "float4_e2m1fn", "float8_e4m3fn"]

decimals = st.builds(
    lambda m, e: Decimal(f"{m}e{e}"), st.integers(-(10**20), 10**20), st.integers(-60, 10)
)


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(SMALL), x=decimals)
def test_decimal_rounds_once_small_types(name: str, x: Decimal) -> None:
    d = parse_data_type(name)
    expect = oracle_small(name, Fraction(x))
    if expect is None:
        with pytest.raises(MetadataError):
            parse_fill_value(d, x)
        return
    got = bits_of(parse_fill_value(d, x), name)
    if Fraction(x) == 0:
        expect |= (1 << (d.float_format.nbits - 1)) if x.is_signed() else 0
    assert got == expect


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(SMALL), f=st.floats(allow_nan=False, allow_infinity=False))
def test_binary64_rounds_once_small_types(name: str, f: float) -> None:
    d = parse_data_type(name)
    expect = oracle_small(name, Fraction(f))
    if expect is None:
        with pytest.raises(MetadataError):
            parse_fill_value(d, f)
        return
    if f == 0:
        expect |= (1 << (d.float_format.nbits - 1)) if math.copysign(1, f) < 0 else 0
    assert bits_of(parse_fill_value(d, f), name) == expect


def oracle_f32(x: Fraction) -> int:
    """Nearest float32 by exact comparison among the float32 neighbours of float(x)."""
    approx = np.float32(float(x)) if abs(x) < Fraction(2) ** 128 else np.float32(np.inf) * (1 if x > 0 else -1)
    cands = {approx, np.nextafter(approx, np.float32(np.inf)), np.nextafter(approx, np.float32(-np.inf))}
    fin = [c for c in cands if np.isfinite(c)]
    best = min(fin, key=lambda c: (abs(Fraction(float(c)) - x), int(np.array(c).view(np.uint32)) & 1))
    top = Fraction(float(np.finfo(np.float32).max)) + Fraction(2) ** 103  # max + half ulp
    if abs(x) >= top:
        return 0x7F800000 | (0x80000000 if x < 0 else 0)
    return int(np.array(best).view(np.uint32))


@settings(max_examples=300, deadline=None)
@given(x=decimals)
def test_decimal_rounds_once_float32_and_float64(x: Decimal) -> None:
    if Fraction(x) == 0:
        return
    assert bits_of(parse_fill_value(parse_data_type("float32"), x), "float32") == oracle_f32(Fraction(x))
    assert parse_fill_value(parse_data_type("float64"), x) == float(str(x))  # float() of text is correctly rounded


@settings(max_examples=300, deadline=None)
@given(f=st.floats(allow_nan=False, allow_infinity=False))
def test_round_to_bits_matches_numpy_casts(f: float) -> None:
    # numpy's f64 -> f32 / f16 casts are correctly rounded: an independent oracle
    for name, np_t, u in (("float32", np.float32, np.uint32), ("float16", np.float16, np.uint16)):
        with np.errstate(over="ignore"):
            want = int(np.array(np_t(f)).view(u))
        fmt = parse_data_type(name).float_format
        assert round_to_bits(fmt, Fraction(f), math.copysign(1, f) < 0) == want


@pytest.mark.parametrize("x", [2**1000, -(2**1000) - 1, 2**64 + 1, 3**50])
def test_huge_integers_for_floats(x: int) -> None:
    assert parse_fill_value(parse_data_type("float64"), x) == float(x) if abs(x) < 2**1024 else True
    assert np.isinf(parse_fill_value(parse_data_type("float32"), x)) == (abs(x) > 2**128)


# ------------------------------------------------------------------- bit patterns


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 2**32 - 1))
def test_float32_any_bits_round_trip(bits: int) -> None:
    v = from_bits(bits, "float32")
    out = fill_value_to_json(parse_data_type("float32"), v)
    back = parse_fill_value(parse_data_type("float32"), json.loads(json.dumps(out, allow_nan=False)))
    assert bits_of(back, "float32") == bits


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 2**64 - 1))
def test_float64_any_bits_round_trip(bits: int) -> None:
    v = from_bits(bits, "float64")
    out = fill_value_to_json(parse_data_type("float64"), v)
    back = parse_fill_value(parse_data_type("float64"), json.loads(json.dumps(out, allow_nan=False)))
    assert bits_of(back, "float64") == bits


@settings(max_examples=200, deadline=None)
@given(bits=st.integers(0, 2**16 - 1), name=st.sampled_from(["float16", "bfloat16"]))
def test_16bit_any_bits_round_trip(bits: int, name: str) -> None:
    d = parse_data_type(name)
    out = fill_value_to_json(d, from_bits(bits, name))
    assert bits_of(parse_fill_value(d, json.loads(json.dumps(out, allow_nan=False))), name) == bits


@settings(max_examples=100, deadline=None)
@given(re=st.integers(0, 2**32 - 1), im=st.integers(0, 2**32 - 1))
def test_complex64_any_bits_round_trip(re: int, im: int) -> None:
    d = parse_data_type("complex64")
    v = np.array([re, im], dtype=np.uint32).view(np.complex64)[0]
    out = fill_value_to_json(d, v)
    back = parse_fill_value(d, json.loads(json.dumps(out, allow_nan=False)))
    assert np.array(back).reshape(1).view(np.uint32).tolist() == [re, im]


@pytest.mark.parametrize("name", ["float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float4_e2m1fn"])
def test_small_floats_every_bit_pattern(name: str) -> None:
    d = parse_data_type(name)
    nbits = d.float_format.nbits
    for bits in range(1 << nbits):
        out = fill_value_to_json(d, from_bits(bits, name))
        back = parse_fill_value(d, json.loads(json.dumps(out, allow_nan=False)))
        assert bits_of(back, name) == bits, (bits, out)


def test_writes_shortest_decimal() -> None:
    assert fill_value_to_json(parse_data_type("float32"), np.float32(0.1)) == 0.1
    assert fill_value_to_json(parse_data_type("float16"), np.float16(0.1)) == 0.1
    assert fill_value_to_json(parse_data_type("bfloat16"), ml_dtypes.bfloat16(0.1)) == 0.1
    # zarr-python writes float32(0.1) as the binary64 repr: same bits
    assert bits_of(parse_fill_value(parse_data_type("float32"), 0.10000000149011612), "float32") == bits_of(np.float32(0.1), "float32")


def test_ml_dtypes_scalars_accepted() -> None:
    d = parse_data_type("float8_e5m2")
    assert d.parse_fill_value(ml_dtypes.bfloat16(0.5)) == 0.5
    assert parse_data_type("float32").parse_fill_value(ml_dtypes.float8_e4m3(-2.0)) == -2.0
    assert np.isnan(parse_data_type("float32").parse_fill_value(ml_dtypes.bfloat16("nan")))
