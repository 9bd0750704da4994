"""The remaining low-precision data types (ext-data-types/float8_e3m4.md, float8_e4m3fnuz.md,
float8_e5m2fnuz.md, float8_e4m3b11fnuz.md, float8_e8m0fnu.md, float6_e2m3fn.md,
float6_e3m2fn.md, complex_*.md): names, fill-value encodings, every value round-tripping,
rounding of decimal fill values against an exact reference written from the spec text."""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.errors import MetadataError
from zarrcy.metadata.data_type import DATA_TYPES, from_numpy, parse_data_type

# name: (exponent bits, mantissa bits, bias, has sign, NaN bits or None, has infinity, fn-style NaN)
# -- read off each type's spec ("1 sign bit, 4 exponent bits, with bias of 8, ...")
SPECS = {
    "float8_e3m4": (3, 4, 3, True, 0x78, True),
    "float8_e4m3fnuz": (4, 3, 8, True, 0x80, False),
    "float8_e5m2fnuz": (5, 2, 16, True, 0x80, False),
    "float8_e4m3b11fnuz": (4, 3, 11, True, 0x80, False),
    "float8_e8m0fnu": (8, 0, 127, False, 0xFF, False),
    "float6_e2m3fn": (2, 3, 1, True, None, False),
    "float6_e3m2fn": (3, 2, 3, True, None, False),
    "float4_e2m1fn": (2, 1, 1, True, None, False),
}
NEW = [n for n in SPECS if n != "float4_e2m1fn"]


def spec_value(name: str, bits: int) -> Fraction | str:
    """The value of ``bits`` per the type's spec text: 'nan', 'inf', '-inf' or a Fraction."""
    E, M, bias, signed, nan, inf = SPECS[name]
    nbits = E + M + (1 if signed else 0)
    if nan is not None and bits == nan:
        return "nan"
    neg = signed and bits >> (nbits - 1) & 1
    exp = (bits >> M) & ((1 << E) - 1)
    man = bits & ((1 << M) - 1)
    if inf and exp == (1 << E) - 1:
        return ("-inf" if neg else "inf") if man == 0 else "nan"
    if not signed:  # e8m0fnu: 2^(exp - bias), no subnormals
        return Fraction(2) ** (exp - bias)
    if exp == 0:
        v = Fraction(man, 1 << M) * Fraction(2) ** (1 - bias)
    else:
        v = (1 + Fraction(man, 1 << M)) * Fraction(2) ** (exp - bias)
    return -v if neg else v


def _bits_of(arr: np.ndarray) -> int:
    return int(np.asarray(arr).reshape(1).view(np.uint8)[0])


def _nbits(name: str) -> int:
    E, M, _, signed, _, _ = SPECS[name]
    return E + M + (1 if signed else 0)


@pytest.mark.parametrize("name", list(SPECS))
def test_every_value_round_trips(name):
    d = DATA_TYPES[name]
    assert d.dtype == np.dtype(getattr(ml_dtypes, name)) and d.float_format.nbits == _nbits(name)
    for bits in range(1 << _nbits(name)):
        v = np.array(bits, dtype=np.uint8).view(d.dtype)[()]
        js = d.fill_value_to_json(v)
        back = d.parse_fill_value(js)
        assert _bits_of(back) == bits, (name, hex(bits), js)
        ref = spec_value(name, bits)
        if ref == "nan":  # the spec's NaN is "NaN", other NaN patterns keep their bits in hex
            assert js == ("NaN" if bits == SPECS[name][4] else f"0x{bits:02x}")
        elif isinstance(ref, str):
            assert js == ("Infinity" if ref == "inf" else "-Infinity")
        else:
            if name == "float8_e8m0fnu":  # written as bits (tensorstore misreads its numbers)
                assert js == f"0x{bits:02x}"
            else:
                assert type(js) is float  # the shortest decimal reading back to the bits (checked above)
            assert ref == Fraction(float(np.asarray(v).astype(np.float64)))  # ml_dtypes agrees with the spec


# the spec's fill-value rules ("The constant "NaN" corresponds to ...", "... are not supported")
TABLE = [
    ("float8_e3m4", "NaN", 0x78), ("float8_e3m4", "Infinity", 0x70), ("float8_e3m4", "-Infinity", 0xF0),
    ("float8_e3m4", "0x7f", 0x7F), ("float8_e3m4", 15.5, 0x6F), ("float8_e3m4", -0.0, 0x80),
    ("float8_e4m3fnuz", "NaN", 0x80), ("float8_e4m3fnuz", "0x80", 0x80), ("float8_e4m3fnuz", 240, 0x7F),
    ("float8_e4m3fnuz", -0.0, 0x00), ("float8_e4m3fnuz", -240.0, 0xFF),
    ("float8_e5m2fnuz", "NaN", 0x80), ("float8_e5m2fnuz", 57344, 0x7F), ("float8_e5m2fnuz", "0x01", 0x01),
    ("float8_e4m3b11fnuz", "NaN", 0x80), ("float8_e4m3b11fnuz", 30, 0x7F), ("float8_e4m3b11fnuz", -30, 0xFF),
    ("float8_e8m0fnu", "NaN", 0xFF), ("float8_e8m0fnu", "0xff", 0xFF), ("float8_e8m0fnu", 1, 0x7F),
    ("float8_e8m0fnu", 2.0**-127, 0x00), ("float8_e8m0fnu", 2.0**127, 0xFE), ("float8_e8m0fnu", 1.5, 0x80),
    ("float8_e8m0fnu", 3, 0x81), ("float8_e8m0fnu", 1e-45, 0x00),
    ("float6_e2m3fn", 7.5, 0x1F), ("float6_e2m3fn", -7.5, 0x3F), ("float6_e2m3fn", "0x3f", 0x3F),
    ("float6_e2m3fn", 0.125, 0x01), ("float6_e2m3fn", -0.0, 0x20),
    ("float6_e3m2fn", 28, 0x1F), ("float6_e3m2fn", 0.0625, 0x01), ("float6_e3m2fn", "0x20", 0x20),
]


@pytest.mark.parametrize("name,js,bits", TABLE)
def test_fill_value_table(name, js, bits):
    d = parse_data_type(name)
    assert _bits_of(d.parse_fill_value(js)) == bits
    assert _bits_of(d.parse_fill_value(d.fill_value_to_json(d.parse_fill_value(js)))) == bits


BAD = [
    ("float8_e4m3fnuz", "Infinity"), ("float8_e4m3fnuz", "-Infinity"), ("float8_e4m3fnuz", 248),
    ("float8_e5m2fnuz", "+Infinity"), ("float8_e5m2fnuz", 1e6), ("float8_e4m3b11fnuz", "Infinity"),
    ("float8_e4m3b11fnuz", -31), ("float8_e4m3fnuz", "0x100"), ("float8_e4m3fnuz", "0x8"),
    ("float8_e8m0fnu", "Infinity"), ("float8_e8m0fnu", 0), ("float8_e8m0fnu", -0.0), ("float8_e8m0fnu", -1),
    ("float8_e8m0fnu", 2.0**128), ("float6_e2m3fn", "NaN"), ("float6_e2m3fn", "Infinity"), ("float6_e2m3fn", 8),
    ("float6_e2m3fn", "0x40"), ("float6_e3m2fn", "NaN"), ("float6_e3m2fn", "-Infinity"), ("float6_e3m2fn", 30),
    ("float6_e3m2fn", "0xff"), ("float8_e3m4", "0x178"), ("float8_e3m4", True), ("float8_e3m4", None),
]


@pytest.mark.parametrize("name,js", BAD)
def test_bad_fill_values(name, js):
    d = parse_data_type(name)
    with pytest.raises(MetadataError, match="fill_value"):
        d.parse_fill_value(js)


@pytest.mark.parametrize("name", NEW)
def test_name_forms(name):
    assert parse_data_type(name).name == name
    assert parse_data_type({"name": name}).name == name
    assert parse_data_type({"name": name, "configuration": {}}).to_json() == name
    with pytest.raises(MetadataError, match=r"data_type\.configuration"):
        parse_data_type({"name": name, "configuration": {"x": 1}})
    assert from_numpy(getattr(ml_dtypes, name)).name == name
    assert from_numpy(name).name == name


# ------------------------------------------------------------------ rounding reference


@functools.cache  # the reference's table of one type (read-only): built once, not per point
def _grid(name: str) -> tuple[list[Fraction], dict[Fraction, int], Fraction]:
    """Finite values (sorted, non-negative), their bits, and the overflow marker (the next
    grid point above the largest finite value)."""
    vals: dict[Fraction, int] = {}
    for bits in range(1 << _nbits(name)):
        v = spec_value(name, bits)
        if isinstance(v, Fraction) and v >= 0 and v not in vals:
            vals[v] = bits
    top = max(vals)
    E, M, *_ = SPECS[name]
    ulp = Fraction(2) ** (math.floor(math.log2(top)) - M)
    return sorted(vals), vals, top + ulp


def ref_nearest_even(name: str, x: Fraction) -> int | None:
    """Nearest representable value, ties to the even encoding (to the larger one without
    mantissa bits: its significand 1 is odd); None when the result is beyond the range of a
    type without infinity, or not positive for float8_e8m0fnu."""
    E, M, bias, signed, nan, inf = SPECS[name]
    if not signed and x <= 0:
        return None
    grid, bits, over = _grid(name)
    a = abs(x)
    cands = grid + [over]
    lo = max(v for v in cands if v <= a) if a >= cands[0] else None
    hi = min(v for v in cands if v >= a) if a <= over else None
    if lo is None:
        pick = hi
    elif hi is None:
        pick = over
    elif lo == hi:
        pick = lo
    elif a - lo != hi - a:
        pick = lo if a - lo < hi - a else hi
    elif M == 0 or hi == over:
        pick = hi
    else:
        pick = lo if bits[lo] & 1 == 0 else hi
    if pick == over:
        if not inf:
            return None
        b = ((1 << E) - 1) << M
    else:
        b = bits[pick]
    if x < 0 or (x == 0 and False):
        if b == 0 and nan == 0x80:
            return 0  # fnuz: no negative zero
        b |= 1 << (E + M)
    return b


def _check_round(name: str, x: Fraction) -> None:
    d = DATA_TYPES[name]
    exp = ref_nearest_even(name, x)
    if exp is None:
        with pytest.raises(MetadataError):
            d.parse_fill_value(x)
        return
    assert _bits_of(d.parse_fill_value(x)) == exp, (name, x, hex(exp))


@pytest.mark.parametrize("name", NEW)
def test_rounding_exhaustive_midpoints(name):
    """Every value, every midpoint between neighbours, and points just around them."""
    grid, _, over = _grid(name)
    pts = set(grid) | {over, over * 2}
    for a, b in zip(grid + [over], grid[1:] + [over, over * 2]):
        mid = (a + b) / 2
        eps = (b - a) / 1024
        pts |= {mid, mid - eps, mid + eps, a + eps}
    pts |= {grid[0] / 2, grid[0] / 3, Fraction(1, 10**50)}
    for p in sorted(pts):
        _check_round(name, p)
        _check_round(name, -p)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(NEW), st.floats(allow_nan=False, allow_infinity=False, width=64))
def test_rounding_random_doubles(name, v):
    _check_round(name, Fraction(v))


# ------------------------------------------------------------------ complex types

COMPLEX = ["complex_float16", "complex_bfloat16", "complex_float32", "complex_float64", "complex_float8_e3m4",
           "complex_float8_e4m3", "complex_float8_e4m3b11fnuz", "complex_float8_e4m3fnuz", "complex_float8_e5m2",
           "complex_float8_e5m2fnuz", "complex_float8_e8m0fnu", "complex_float6_e2m3fn", "complex_float6_e3m2fn",
           "complex_float4_e2m1fn"]


@pytest.mark.parametrize("name", COMPLEX)
def test_complex_types(name):
    d = parse_data_type(name)
    comp = name[len("complex_"):]
    cd = DATA_TYPES[comp]
    assert d.to_json() == name and d.category == "complex"
    assert d.itemsize == 2 * cd.itemsize  # real component followed by imaginary (complex_*.md "bytes")
    re_js = "NaN" if cd.float_format.nan_bits is not None else 1.5
    im_js = 2.0 if comp != "float8_e8m0fnu" else 0.5
    v = d.parse_fill_value([re_js, im_js])
    raw = np.asarray(v).reshape(1).view(np.uint8).tobytes()
    assert raw == np.asarray(cd.parse_fill_value(re_js)).tobytes() + np.asarray(cd.parse_fill_value(im_js)).tobytes()
    if comp == "float8_e8m0fnu":  # written as bits (fill_value.py)
        assert d.fill_value_to_json(v) == [re_js, "0x7e"]
    else:
        assert d.fill_value_to_json(v) == [re_js, im_js]
    with pytest.raises(MetadataError, match=r"fill_value"):
        d.parse_fill_value(1.5)
    with pytest.raises(MetadataError, match=r"fill_value\[1\]"):
        d.parse_fill_value([0.5, "nope"])


def test_complex_numpy_mapping():
    assert from_numpy(ml_dtypes.complex32).name == "complex_float16"
    assert from_numpy(ml_dtypes.bcomplex32).name == "complex_bfloat16"
    assert from_numpy(np.complex64).name == "complex64"  # the core name; complex_float32 only by name
    assert parse_data_type("complex_float32").dtype == np.dtype(np.complex64)
    assert parse_data_type("complex_float8_e4m3").dtype == np.dtype(
        [("real", ml_dtypes.float8_e4m3), ("imag", ml_dtypes.float8_e4m3)])


@pytest.mark.parametrize("name", NEW + COMPLEX)
def test_documents_round_trip(name):
    """A whole array document of each type (its spec's forms) reads and writes back unchanged."""
    import json

    from zarrcy.document.array import ArrayMetadata

    d = parse_data_type(name)
    has_nan = d.float_format.nan_bits is not None
    one = "0x7f" if "e8m0fnu" in name else 1.5  # e8m0fnu numbers are written as bits
    fill = "NaN" if has_nan else one
    if d.category == "complex":
        fill = [fill, one]
    multi = d.itemsize > (2 if d.category == "complex" else 1)
    bytes_codec = {"name": "bytes", "configuration": {"endian": "big"}} if multi else {"name": "bytes"}
    doc = {"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": name,
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": fill, "codecs": [bytes_codec]}
    m = ArrayMetadata.from_json(json.dumps(doc))
    assert m.to_json() == doc
