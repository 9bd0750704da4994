"""Boundary tables per data type for the fill-value JSON encoding (v3-data-types.rst
"Permitted fill values", ext-data-types/*.md), through both of zarrcy's parsers of that
encoding: ``parse_fill_value`` (fill values) and ``cast_value.parse_scalar``
(``scalar_map`` entries, ``scale_offset``'s ``scale``/``offset``; ext-codec-cast_value.md
"scalar_map": "encoded to JSON using the Zarr V3 fill value encoding").

Per float type: the largest finite value, the halfway point to the next binade above it
(just below: the largest finite; at and above: infinity for IEEE types, refused for
types without one), the smallest subnormal and the ties around it, the largest-subnormal
tie, every special spelling and its near misses, hex forms of exactly / one less / one
more than 2 x itemsize digits.  Per integer type: min - 1, min, max, max + 1.  The
expected bits come from ml_dtypes/numpy (``finfo``, float64 -> type casts), not from
zarrcy's own rounding code.

``ci/mutation_spotcheck.py`` plants one bug at a time in ``metadata/fill_value.py``; each
must fail a test here or in test_fill_value.py.
"""

from __future__ import annotations

import base64
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from zarrcy.codecs.cast_value import SUPPORTED_TYPES, parse_scalar
from zarrcy.errors import MetadataError
from zarrcy.metadata import parse_data_type
from zarrcy.metadata.data_type import from_numpy
from zarrcy.metadata.fill_value import fill_value_to_json, parse_fill_value

FLOATS = ["float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2", "float8_e4m3fn", "float4_e2m1fn"]
HAS_INF = {"float16", "float32", "float64", "bfloat16", "float8_e4m3", "float8_e5m2"}
# "NaN" bits: v3-data-types.rst (sign 0, exponent all ones, mantissa MSB 1) and
# ext-data-types/*.md; float8_e4m3fn (ml_dtypes): 0x7f; float4_e2m1fn has no NaN
NAN_BITS = {"float16": 0x7E00, "float32": 0x7FC00000, "float64": 0x7FF8000000000000, "bfloat16": 0x7FC0,
            "float8_e4m3": 0x7C, "float8_e5m2": 0x7E, "float8_e4m3fn": 0x7F, "float4_e2m1fn": None}
ERR = "error"


def _dt(name: str) -> Any:
    return parse_data_type(name)


def _bits(value: Any, name: str) -> int:
    d = _dt(name)
    return int(np.array(value, dtype=d.dtype).view(d.bits_dtype))


def _value(bits: int, name: str) -> Fraction:
    d = _dt(name)
    return Fraction(float(np.array(bits, dtype=d.bits_dtype).view(d.dtype).astype(np.float64)))


def _json_number(x: Fraction) -> Any:
    """``x`` as the JSON number ``json.loads`` would give: int when integral, float when
    binary64 holds it exactly, else the exact decimal text (a Decimal)."""
    if x.denominator == 1:
        return int(x)
    f = float(x)
    if Fraction(f) == x:
        return f
    # a terminating decimal (the denominator is a power of two): exact at this precision
    with localcontext() as ctx:
        ctx.prec = 2000
        return Decimal(x.numerator) / Decimal(x.denominator)


def _finfo(name: str) -> Any:
    return ml_dtypes.finfo(_dt(name).dtype)


def _sign(name: str) -> int:
    return 1 << (8 * _dt(name).itemsize - 1) if name != "float4_e2m1fn" else 0x8


def _float_table(name: str) -> list[tuple[str, Any, Any]]:
    """(case id, JSON value, expected bits or ERR)."""
    d = _dt(name)
    fi = _finfo(name)
    mx = Fraction(float(fi.max))
    mx_bits = _bits(fi.max, name)
    ulp = mx - _value(mx_bits - 1, name)
    half = mx + ulp / 2  # halfway between the largest finite and the next (absent) value
    sub = Fraction(float(fi.smallest_subnormal))
    tiny = ulp / 1024
    inf_bits = _bits(np.inf, name) if name in HAS_INF else ERR
    neg_inf = inf_bits | _sign(name) if name in HAS_INF else ERR
    # the largest binade of subnormals: [smallest_normal / 2, smallest_normal)
    normal = Fraction(float(fi.smallest_normal))
    sub_tie = normal / 2 + sub / 2
    sub_tie_bits = _bits(np.float64(float(sub_tie)).astype(d.dtype), name) if float(sub_tie) == sub_tie else None
    rows: list[tuple[str, Any, Any]] = [
        ("max", _json_number(mx), mx_bits),
        ("-max", _json_number(-mx), mx_bits | _sign(name)),
        ("half-below", _json_number(half - tiny), mx_bits),
        # the tie rounds to even: up (overflow) when the largest finite's mantissa is odd
        # (all ones: IEEE types, float4_e2m1fn), down to it for float8_e4m3fn (mantissa
        # 110; the pattern above, 0x7f, is its NaN)
        ("half", _json_number(half), mx_bits if name == "float8_e4m3fn" else inf_bits),
        ("-half", _json_number(-half), mx_bits | _sign(name) if name == "float8_e4m3fn" else neg_inf),
        ("half-above", _json_number(half + tiny), inf_bits),
        ("twice-max", _json_number(2 * mx), inf_bits),
        ("huge", 10**400, inf_bits),
        ("smallest-subnormal", _json_number(sub), 1),
        ("-smallest-subnormal", _json_number(-sub), 1 | _sign(name)),
        ("half-subnormal-tie", _json_number(sub / 2), 0),
        ("-half-subnormal-tie", _json_number(-sub / 2), _sign(name)),
        ("above-half-subnormal", _json_number(sub / 2 + sub / 1024), 1),
        ("three-halves-subnormal-tie", _json_number(3 * sub / 2), 2),
        ("smallest-normal", _json_number(normal), _bits(np.float64(float(normal)).astype(d.dtype), name)),
        ("-0.0", -0.0, _sign(name)),
        ("0", 0, 0),
    ]
    if sub_tie_bits is not None:
        rows.append(("largest-subnormal-tie", _json_number(sub_tie), sub_tie_bits))
    # the same numbers as JSON floats ("448.0"): the binary64 fast paths of float16/float32
    for case, value, want in list(rows):
        if type(value) is int and abs(value) < 2**1000 and float(value) == value:
            rows.append((case + " (float)", float(value), want))
    return rows


def _special_table(name: str) -> list[tuple[str, Any, Any]]:
    d = _dt(name)
    nd = 2 * d.itemsize
    nan = NAN_BITS[name]
    inf = _bits(np.inf, name) if name in HAS_INF else ERR
    one = _bits(1.0, name)
    rows: list[tuple[str, Any, Any]] = [
        ("NaN", "NaN", ERR if nan is None else nan),
        ("Infinity", "Infinity", inf),
        ("+Infinity", "+Infinity", inf),
        ("-Infinity", "-Infinity", ERR if inf == ERR else inf | _sign(name)),
        ("hex one", f"0x{one:0{nd}x}", one),
        ("hex max bits", "0x" + "f" * nd if name != "float4_e2m1fn" else "0x0f", (1 << (8 * d.itemsize)) - 1 if name != "float4_e2m1fn" else 0xF),
        ("hex upper digits", f"0x{one:0{nd}X}", one),
        ("hex one digit short", f"0x{one:0{nd}x}"[:-1], ERR),
        ("hex one digit long", f"0x{one:0{nd}x}0", ERR),
        ("hex no digits", "0x", ERR),
        ("hex bad digit", "0x" + "g" * nd, ERR),
        ("hex signed", "-0x" + "0" * nd, ERR),
    ]
    if name == "float4_e2m1fn":
        rows.append(("hex wider than 4 bits", "0x10", ERR))
    for bad in ("nan", "NAN", "inf", "Inf", "-inf", "infinity", "+NaN", "-NaN", " NaN", "NaN ", "1.0", "", "0"):
        rows.append((f"spelling {bad!r}", bad, ERR))
    for bad in (True, False, None, [1.0], {}):
        rows.append((f"type {bad!r}", bad, ERR))
    return rows


FLOAT_CASES = [(n, *row) for n in FLOATS for row in _float_table(n) + _special_table(n)]


def _fill_bits(name: str, value: Any) -> int:
    return _bits(parse_fill_value(_dt(name), value, "fill_value"), name)


@pytest.mark.parametrize("name,case,value,want", FLOAT_CASES, ids=[f"{c[0]}-{c[1]}" for c in FLOAT_CASES])
def test_float_fill_value_boundaries(name: str, case: str, value: Any, want: Any) -> None:
    if want == ERR:
        with pytest.raises(MetadataError, match=r"^fill_value: expected"):
            parse_fill_value(_dt(name), value, "fill_value")
    else:
        assert _fill_bits(name, value) == want


@pytest.mark.parametrize("name,case,value,want", FLOAT_CASES, ids=[f"{c[0]}-{c[1]}" for c in FLOAT_CASES])
def test_float_fill_value_boundaries_written_back(name: str, case: str, value: Any, want: Any) -> None:
    """Every accepted value writes a JSON form that reads back to the same bits."""
    if want == ERR:
        return
    v = parse_fill_value(_dt(name), value, "fill_value")
    assert _fill_bits(name, fill_value_to_json(_dt(name), v)) == want


# the second parser of the same encoding, where the two are known to disagree
def _scalar_cases() -> list[Any]:
    """Every float row, through cast_value.parse_scalar: the same rule as the fill value
    (numbers beyond the largest finite value round to infinity where the type has one)."""
    return [pytest.param(name, case, value, want, id=f"{name}-{case}")
            for name, case, value, want in FLOAT_CASES if name in SUPPORTED_TYPES]


@pytest.mark.parametrize("name,case,value,want", _scalar_cases())
def test_scalar_parser_agrees(name: str, case: str, value: Any, want: Any) -> None:
    d = _dt(name)
    if want == ERR:
        with pytest.raises(MetadataError):
            parse_scalar(value, name, "scalar")
        return
    got = np.asarray(parse_scalar(value, name, "scalar"))
    assert int(got.reshape(1).view(d.bits_dtype)[0]) == want


@pytest.mark.parametrize("name", FLOATS)
def test_hex_prefix_is_lower_case(name: str) -> None:
    """v3-data-types.rst spells the form ``"0xYYYYYYYY"``; ``"0X..."`` is refused."""
    nd = 2 * _dt(name).itemsize
    with pytest.raises(MetadataError):
        parse_fill_value(_dt(name), "0X" + "0" * nd, "fill_value")


@pytest.mark.parametrize("name", [n for n in FLOATS if n in SUPPORTED_TYPES])
def test_scalar_hex_prefix_is_lower_case(name: str) -> None:
    nd = 2 * _dt(name).itemsize
    with pytest.raises(MetadataError):
        parse_scalar("0X" + "0" * nd, name, "scalar")


def test_table_matches_ml_dtypes_rounding() -> None:
    """The table's finite expectations agree with ml_dtypes' float64 -> type casts
    (round to nearest, ties to even) wherever binary64 holds the value exactly."""
    for name in FLOATS:
        d = _dt(name)
        for case, value, want in _float_table(name):
            if want == ERR or (name in HAS_INF and want in (_bits(np.inf, name), _bits(-np.inf, name))):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value) == value:
                assert _bits(np.float64(value).astype(d.dtype), name) == want, (name, case)


# --------------------------------------------------------------------- complex
@pytest.mark.parametrize("name,nd", [("complex64", 8), ("complex128", 16)])
def test_complex_hex_components(name: str, nd: int) -> None:
    d = _dt(name)
    nan = "0x7fc00000" if nd == 8 else "0x7ff8000000000000"
    v = parse_fill_value(d, [nan, "0x" + "0" * nd], "fill_value")
    assert np.isnan(v.real) and v.imag == 0
    for bad in (["0x" + "0" * (2 * nd), 0], ["0x" + "0" * (nd - 1), 0], [0, "0x" + "0" * (nd + 1)]):
        with pytest.raises(MetadataError, match=r"^fill_value\[[01]\]"):
            parse_fill_value(d, bad, "fill_value")
    assert parse_fill_value(d, ["+Infinity", "-Infinity"], "fill_value") == complex(np.inf, -np.inf)


def test_complex64_components_round_as_float32() -> None:
    d = _dt("complex64")
    mx = float(np.finfo(np.float32).max)
    half = int(Fraction(mx) + Fraction(2**103))  # halfway to the next binade
    v = parse_fill_value(d, [half - 1, -half], "fill_value")
    assert v.real == np.float32(mx) and v.imag == -np.inf


# --------------------------------------------------------------------- integers, bool, raw
INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int2", "int4", "uint2", "uint4"]


def _int_range(name: str) -> tuple[int, int]:
    bits = {"int2": 2, "int4": 4, "uint2": 2, "uint4": 4}.get(name) or np.dtype(name).itemsize * 8
    return (0, (1 << bits) - 1) if name.startswith("u") else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)


@pytest.mark.parametrize("name", INTS)
def test_integer_fill_value_boundaries(name: str) -> None:
    lo, hi = _int_range(name)
    d = _dt(name)
    for ok in (lo, hi, 0):
        assert int(parse_fill_value(d, ok, "fill_value")) == ok
        assert int(parse_scalar(ok, name, "s")) == ok
    for bad in (lo - 1, hi + 1, float(hi), True, "0", None):
        with pytest.raises(MetadataError, match=r"^fill_value: expected an integer"):
            parse_fill_value(d, bad, "fill_value")
        with pytest.raises(MetadataError):
            parse_scalar(bad, name, "s")


def test_bool_fill_value() -> None:
    d = _dt("bool")
    for ok in (True, False, np.True_):
        v = parse_fill_value(d, ok, "fill_value")
        assert isinstance(v, np.bool_) and bool(v) is bool(ok)
    for bad in (0, 1, 1.0, "true", None, [True]):
        with pytest.raises(MetadataError, match=r"^fill_value: expected true or false"):
            parse_fill_value(d, bad, "fill_value")


def test_raw_fill_value_bytes() -> None:
    d = _dt("r16")
    assert parse_fill_value(d, [0, 255], "fill_value").tobytes() == b"\x00\xff"
    for bad, path in (([0, 256], r"fill_value\[1\]"), ([-1, 0], r"fill_value\[0\]"), ([0], "fill_value"), ([0, 0, 0], "fill_value")):
        with pytest.raises(MetadataError, match=rf"^{path}: expected"):
            parse_fill_value(d, bad, "fill_value")


# --------------------------------------------------------------------- fixed-length strings
@pytest.mark.parametrize("n", [1, 3])
def test_fixed_string_fill_value_length(n: int) -> None:
    d = _dt_fixed("U", n)
    assert parse_fill_value(d, "a" * n, "fill_value") == "a" * n
    assert parse_fill_value(d, "\U0010ffff" * n, "fill_value") == "\U0010ffff" * n  # code points, not UTF-16 units
    with pytest.raises(MetadataError, match=r"^fill_value: expected a string of at most"):
        parse_fill_value(d, "a" * (n + 1), "fill_value")
    b = _dt_fixed("S", n)
    assert parse_fill_value(b, base64.b64encode(b"z" * n).decode(), "fill_value") == b"z" * n
    with pytest.raises(MetadataError, match=r"^fill_value: expected a base64 string of at most"):
        parse_fill_value(b, base64.b64encode(b"z" * (n + 1)).decode(), "fill_value")


def _dt_fixed(kind: str, n: int) -> Any:
    return from_numpy(np.dtype(f"{kind}{n}"))
