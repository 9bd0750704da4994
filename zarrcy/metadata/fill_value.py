"""Fill-value JSON encodings (v3-data-types.rst "Permitted fill values", ext-data-types/*.md).

``parse_fill_value(data_type, json_value, path)`` is also the parser for any scalar
written "with the fill-value encoding of type T" (cast_value's ``scalar_map``,
scale_offset's ``scale``/``offset``): it returns a numpy scalar of ``data_type.dtype``
whose bits are exact (NaN payloads kept).

Forms accepted, by type:

* ``bool``: ``true``/``false`` only.
* integers: JSON integers (no fraction/exponent, never a bool) within range.
* floats: JSON numbers (integers too), rounded *once* from the exact value to the
  target type, ties to even; ``"NaN"`` (sign 0, exponent all ones, mantissa MSB 1),
  ``"Infinity"``, ``"+Infinity"``, ``"-Infinity"``; ``"0x..."`` with exactly
  2 x itemsize hex digits giving the bits.  A ``decimal.Decimal`` or
  ``fractions.Fraction`` is taken as the exact JSON number text (see
  :func:`needs_exact_text`).  A Python float NaN/inf (bare JSON token, or a dict built
  in Python) is read as "NaN"/"Infinity".
* complex: ``[re, im]``, each in the float forms of the component type.
* raw ``r<bits>``: a list of ``bits/8`` integers in ``[0, 255]`` (a base64 string of
  ``bits/8`` bytes, as tensorstore and zarr-python write raw fill values, is read too;
  the list is always what is written).

* ``string`` (variable-length UTF-8): a JSON string (numbers are read as their text,
  as zarr-python does for fill values written by zarr-python 2).
* ``bytes`` (variable-length): a base64 string, as zarr-python 3.4 writes it.
* ``fixed_length_utf32`` (numpy ``U<n>``): a JSON string of at most ``n`` code points,
  none a surrogate (zarr-python 3.4's form); read as ``np.str_``.
* ``null_terminated_bytes`` (numpy ``S<n>``): a base64 string of at most ``n`` bytes
  (zarr-python 3.4's form; it may end in NULs, which numpy drops); read as ``np.bytes_``.
* ``numpy.datetime64`` / ``numpy.timedelta64``: the JSON integer of the int64 value
  (``NaT`` = ``-2**63``, also the default), as zarr-python 3.4 writes it.

Writing (:func:`fill_value_to_json`) is the canonical inverse: the default NaN writes
``"NaN"``, any other NaN ``"0x..."``, infinities ``"Infinity"``/``"-Infinity"``, finite
floats the shortest decimal that reads back to the same bits (``-0.0`` stays ``-0.0``);
``float8_e8m0fnu`` values other than NaN are written as ``"0x.."`` (tensorstore 0.1.86
misreads numbers of that type).
"""

from __future__ import annotations

import base64
import math
from decimal import Decimal
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from zarrcy.errors import MetadataError, expected
from zarrcy.metadata.struct import default_struct_fill, parse_struct_fill, struct_fill_to_json

if TYPE_CHECKING:
    from zarrcy.metadata.data_type import DataType, FloatFormat

__all__ = ["parse_fill_value", "fill_value_to_json", "default_fill_value", "needs_exact_text", "round_to_bits"]

_HEX = frozenset("0123456789abcdefABCDEF")
# largest finite value of the numpy-native float types (fast path below it: no overflow)
_NATIVE_FLOATS = {"float16": 65504.0, "float32": float(np.finfo(np.float32).max), "float64": math.inf}


def _err(path: str, what: str, value: Any) -> MetadataError:
    return MetadataError(expected(path, what, value), path)


# --------------------------------------------------------------------------- floats


def round_to_bits(fmt: FloatFormat, x: Fraction | int, negative: bool) -> int | None:
    """Bits of ``(-1)**negative * |x|`` rounded once to ``fmt``, nearest, ties to even.

    Overflow gives the infinity of an IEEE format and ``None`` for formats without one.
    ``fnuz`` formats have no negative zero (a zero is ``0``); ``fnu``
    (``float8_e8m0fnu``: powers of two ``2**-127 .. 2**127``) gives ``None`` for zero and
    negative values, and a positive value below ``2**-127`` rounds to it (the nearest
    representable value).  With no mantissa bits a tie goes up (the significand ``1`` is
    odd), as LLVM's APFloat and ml_dtypes round.
    """
    E, M = fmt.exp_bits, fmt.man_bits
    special = fmt.special
    sign = (1 << (E + M)) if negative else 0
    a = abs(Fraction(x))
    if special == "fnu" and (negative or a == 0):
        return None
    if a == 0:
        return 0 if special == "fnuz" else sign
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()  # floor(log2 a) is e or e - 1
    if (n << -e if e < 0 else n) < (d if e < 0 else d << e):
        e -= 1
    emin = 1 - fmt.bias
    if special == "fnu":
        emin = -fmt.bias  # biased exponent 0 is 2**-127 (no subnormals)
        if e < emin:
            return 0
    elif e < emin:
        e = emin  # subnormal range: fixed quantum 2**(emin - M)
    shift = e - M
    if shift >= 0:
        q, r = divmod(n, d << shift)
        den = d << shift
    else:
        q, r = divmod(n << -shift, d)
        den = d
    r2 = r << 1
    if r2 > den or (r2 == den and q & 1):
        q += 1
    if q >> (M + 1):  # carried into the next binade
        q >>= 1
        e += 1
    if special == "fnu":
        biased, man = e + fmt.bias, 0
    elif q >> M:
        biased, man = e + fmt.bias, q - (1 << M)
    else:
        biased, man = 0, q
    if q == 0:  # rounded to zero: fnuz has only +0
        return 0 if special == "fnuz" else sign
    max_biased = (1 << E) - 2 if special in ("ieee", "fnu") else (1 << E) - 1
    if biased > max_biased or (special == "fn" and biased == max_biased and man == (1 << M) - 1):
        if special == "ieee":
            return sign | (((1 << E) - 1) << M)
        return None
    return sign | (biased << M) | man


def _float_bits(fmt: FloatFormat, ndigits: int, value: Any, path: str) -> int:
    """One float (or complex component) JSON value -> its bits (slow, exact path)."""
    t = type(value)
    if t is str:
        if value == "NaN":
            if fmt.nan_bits is None:
                raise _err(path, "a finite number or '0x..' (this type has no NaN)", value)
            return fmt.nan_bits
        if value in ("Infinity", "+Infinity", "-Infinity"):
            if fmt.special != "ieee":
                raise _err(path, "a finite number, 'NaN' or '0x..' (this type has no infinity)", value)
            inf = ((1 << fmt.exp_bits) - 1) << fmt.man_bits
            return inf | (1 << (fmt.nbits - 1)) if value[0] == "-" else inf
        if value[:2] == "0x" and len(value) == 2 + ndigits and _HEX.issuperset(value[2:]):
            bits = int(value[2:], 16)
            if bits >> fmt.nbits:
                raise _err(path, f"a bit pattern of at most {fmt.nbits} bits", value)
            return bits
        raise _err(
            path,
            f"a number, 'NaN', 'Infinity', '-Infinity' or '0x' followed by {ndigits} hex digits",
            value,
        )
    if t is bool or value is None:
        raise _err(path, "a number or one of 'NaN', 'Infinity', '-Infinity', '0x...'", value)
    if t is float or isinstance(value, np.floating):
        v = float(value)
        if v != v:
            return _float_bits(fmt, ndigits, "NaN", path)
        if math.isinf(v):
            return _float_bits(fmt, ndigits, "Infinity" if v > 0 else "-Infinity", path)
        x: Fraction | int = Fraction(v)
        negative = math.copysign(1.0, v) < 0
    elif t is int or isinstance(value, np.integer):
        x = int(value)
        negative = x < 0
    elif t is Decimal:
        if not value.is_finite():
            return _float_bits(fmt, ndigits, "NaN" if value.is_nan() else ("-Infinity" if value < 0 else "Infinity"), path)
        x = Fraction(value)
        negative = value.is_signed()
    elif t is Fraction:
        x = value
        negative = value < 0
    elif isinstance(value, np.generic) and value.dtype.kind == "V" and value.dtype.itemsize <= 2:
        return _float_bits(fmt, ndigits, float(value), path)  # an ml_dtypes float/int scalar
    else:
        raise _err(path, "a number or one of 'NaN', 'Infinity', '-Infinity', '0x...'", value)
    rounded = round_to_bits(fmt, x, negative)
    if rounded is None:
        raise _err(path, "a number within the range of the data type", value)
    return rounded


def _bits_to_float(fmt: FloatFormat, bits: int) -> float:
    """The value of the finite ``bits`` of ``fmt`` (exact in binary64 for every format)."""
    E, M = fmt.exp_bits, fmt.man_bits
    exp = (bits >> M) & ((1 << E) - 1)
    man = bits & ((1 << M) - 1)
    if fmt.special == "fnu":
        return math.ldexp(1.0, exp - fmt.bias)
    if exp == (1 << E) - 1 and fmt.special == "ieee":
        return math.nan  # infinity / NaN: their JSON does not use the value
    v = math.ldexp(man, 1 - fmt.bias - M) if exp == 0 else math.ldexp((1 << M) | man, exp - fmt.bias - M)
    return -v if (bits >> (E + M)) & 1 else v


def _from_bits(data_type: DataType, bits: int) -> Any:
    return np.array(bits, dtype=data_type.bits_dtype).view(data_type.dtype)[()]


def _parse_float(data_type: DataType, value: Any, path: str) -> Any:
    t = type(value)
    if t is float:
        limit = _NATIVE_FLOATS.get(data_type.name)
        if limit is not None and -limit <= value <= limit:  # NaN, inf, overflow: slow path
            # a binary64 value is exact: numpy's f64 -> f32/f16 casts round once, ties to even
            return data_type.dtype.type(value)
    if t is int and data_type.name == "float64" and -(1 << 53) <= value <= (1 << 53):
        return np.float64(value)
    fmt = data_type.float_format
    assert fmt is not None  # every float type has one (data_type.py)
    return _from_bits(data_type, _float_bits(fmt, 2 * data_type.itemsize, value, path))


def _parse_complex(data_type: DataType, value: Any, path: str) -> Any:
    if isinstance(value, (np.generic, np.void)) and value.dtype == data_type.dtype:
        return value  # already a scalar of the type (ml_dtypes complex32, a structured pair)
    if isinstance(value, (complex, np.complexfloating)):
        value = [value.real, value.imag]
    if (type(value) is not list and type(value) is not tuple) or len(value) != 2:
        raise _err(path, "a two-element array [real, imaginary]", value)
    fmt = data_type.float_format
    assert fmt is not None  # every complex type has one (data_type.py)
    nd = data_type.itemsize  # hex digits per component: 2 x (itemsize / 2)
    re = _float_bits(fmt, nd, value[0], f"{path}[0]")
    im = _float_bits(fmt, nd, value[1], f"{path}[1]")
    return np.array([re, im], dtype=data_type.bits_dtype).view(data_type.dtype)[0]


@lru_cache(maxsize=1024)
def _finite_to_json(fmt: FloatFormat, bits: int, v: float) -> float:
    """Shortest decimal (as the float whose repr JSON writes) reading back to ``bits``."""
    if v == 0 or fmt.man_bits == 52:
        return v
    negative = v < 0
    for p in range(1, 18):
        cand = float(f"{v:.{p}g}")
        if round_to_bits(fmt, Fraction(repr(cand)), negative) == bits:
            return cand
    return v  # unreachable: 17 digits always round-trip a binary64 value


def _float_to_json(fmt: FloatFormat, bits: int, v: float, ndigits: int) -> Any:
    E, M = fmt.exp_bits, fmt.man_bits
    exp = (bits >> M) & ((1 << E) - 1)
    man = bits & ((1 << M) - 1)
    special = fmt.special
    if special == "fnu":
        # float8_e8m0fnu: written as its bits (exact, spec-valid); tensorstore 0.1.86 reads
        # numbers of this type wrongly (1.0 as 0x3f) but bit patterns right
        return "NaN" if bits == fmt.nan_bits else f"0x{bits:0{ndigits}x}"
    if special == "fnuz":  # one NaN pattern, no infinity
        return "NaN" if bits == fmt.nan_bits else _finite_to_json(fmt, bits, v)
    if (special == "ieee" and exp == (1 << E) - 1) or (
        special == "fn" and exp == (1 << E) - 1 and man == (1 << M) - 1
    ):
        if special == "ieee" and man == 0:
            return "-Infinity" if bits >> (fmt.nbits - 1) else "Infinity"
        if bits == fmt.nan_bits:
            return "NaN"
        return f"0x{bits:0{ndigits}x}"
    return _finite_to_json(fmt, bits, v)


# --------------------------------------------------------------------------- API


def parse_fill_value(data_type: DataType, json_value: Any, path: str = "fill_value") -> Any:
    """A JSON fill value (or a scalar in the fill-value encoding of ``data_type``)
    -> numpy scalar of ``data_type.dtype`` with exact bits.  Raises MetadataError."""
    cat = data_type.category
    t = type(json_value)
    if cat == "float":
        return _parse_float(data_type, json_value, path)
    if cat == "struct":
        return parse_struct_fill(data_type, json_value, path)
    if cat == "string" or cat == "bytes":
        return _parse_vlen(cat, json_value, path)
    if cat == "fixed_string" or cat == "fixed_bytes":
        return _parse_fixed(data_type, json_value, path)
    if cat == "datetime" or cat == "timedelta":
        return _parse_time(data_type, json_value, path)
    if cat == "int" or cat == "uint":
        assert data_type.int_range is not None  # every integer type has one (data_type.py)
        lo, hi = data_type.int_range
        if t is not int:
            if isinstance(json_value, np.integer):
                json_value = int(json_value)
            else:
                raise _err(path, f"an integer in [{lo}, {hi}]", json_value)
        if json_value < lo or json_value > hi:
            raise _err(path, f"an integer in [{lo}, {hi}]", json_value)
        return data_type.dtype.type(json_value)
    if cat == "bool":
        if t is bool or t is np.bool_:
            return np.bool_(json_value)
        raise _err(path, "true or false", json_value)
    if cat == "complex":
        return _parse_complex(data_type, json_value, path)
    # raw bits
    n = data_type.itemsize
    if isinstance(json_value, (bytes, bytearray)) and len(json_value) == n:
        return np.void(bytes(json_value))
    if t is str:  # tensorstore / zarr-python spell raw fill values in base64: read them too
        try:
            raw = base64.b64decode(json_value, validate=True)
        except ValueError:
            raw = b""
        if len(raw) == n:
            return np.void(raw)
    if (t is not list and t is not tuple) or len(json_value) != n:
        raise _err(path, f"an array of {n} integers in [0, 255]", json_value)
    for i, b in enumerate(json_value):
        if type(b) is not int or not 0 <= b <= 255:
            raise _err(f"{path}[{i}]", "an integer in [0, 255]", b)
    return np.void(bytes(json_value))


def _parse_vlen(cat: str, value: Any, path: str) -> Any:
    t = type(value)
    if cat == "string":
        if isinstance(value, str):
            return str(value)
        if (t is int or t is float) and t is not bool:  # zarr-python 2 wrote numbers here
            return str(value)
        raise _err(path, "a string", value)
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        return bytes(value)
    if t is str:
        try:
            return base64.b64decode(value, validate=True)
        except ValueError:
            pass
    raise _err(path, "a base64 string (variable-length bytes)", value)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # the only str that utf-8 cannot encode: lone surrogates
        return True
    return False


def _parse_fixed(data_type: DataType, value: Any, path: str) -> Any:
    """``fixed_length_utf32`` / ``null_terminated_bytes`` fill value -> np.str_ / np.bytes_."""
    n = data_type.dtype.itemsize
    if data_type.category == "fixed_string":
        n //= 4
        if not isinstance(value, str):
            raise _err(path, f"a string of at most {n} code points", value)
        if len(value) > n or _has_surrogate(value):
            raise _err(path, f"a string of at most {n} code points (no surrogates)", value)
        return np.str_(value.rstrip("\x00"))  # numpy's U<n> value (trailing NULs are padding)
    if isinstance(value, (bytes, bytearray)):  # Python-side values (np.bytes_ too)
        raw = bytes(value)
    elif type(value) is str:
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raise _err(path, f"a base64 string of at most {n} bytes", value) from None
    else:
        raise _err(path, f"a base64 string of at most {n} bytes", value)
    if len(raw) > n:
        raise _err(path, f"a base64 string of at most {n} bytes", value)
    return np.bytes_(raw.rstrip(b"\x00"))  # numpy's S<n> value (trailing NULs are padding)


def _parse_time(data_type: DataType, value: Any, path: str) -> Any:
    """An int64 (JSON integer; Python-side also a datetime64/timedelta64 scalar)."""
    if isinstance(value, (np.datetime64, np.timedelta64)):
        if (value.dtype.kind == "M") != (data_type.category == "datetime"):
            raise _err(path, f"an integer (int64 value of {data_type.dtype})", value)
        return np.asarray(value).astype(data_type.dtype)[()]
    if isinstance(value, np.integer):
        value = int(value)
    assert data_type.int_range is not None  # every time type has one (data_type.py)
    lo, hi = data_type.int_range
    if type(value) is not int or not lo <= value <= hi:
        raise _err(path, f"an integer in [{lo}, {hi}] (int64 value of {data_type.dtype}; NaT is {lo})", value)
    return np.array(value, dtype=np.int64).view(data_type.dtype)[()]


def fill_value_to_json(data_type: DataType, value: Any) -> Any:
    """The canonical JSON form of ``value`` (a scalar of ``data_type`` or any JSON form)."""
    if data_type.category == "string":
        return value if type(value) is str else _parse_vlen("string", value, "fill_value")
    if data_type.category == "bytes":
        raw = value if type(value) is bytes else _parse_vlen("bytes", value, "fill_value")
        return base64.b64encode(raw).decode("ascii")
    if data_type.category == "fixed_string":
        return str(_parse_fixed(data_type, value, "fill_value"))
    if data_type.category == "fixed_bytes":
        return base64.b64encode(_parse_fixed(data_type, value, "fill_value")).decode("ascii")
    if data_type.category == "datetime" or data_type.category == "timedelta":
        return int(np.asarray(_parse_time(data_type, value, "fill_value")).view(np.int64))
    if data_type.category == "struct":
        return struct_fill_to_json(data_type, value)
    if data_type.category == "complex":
        value = _parse_complex(data_type, value, "fill_value")
    elif not (isinstance(value, np.generic) and value.dtype == data_type.dtype):
        value = parse_fill_value(data_type, value, "fill_value")
    cat = data_type.category
    if cat == "int" or cat == "uint":
        return int(value)
    if cat == "bool":
        return bool(value)
    if cat == "float" or cat == "complex":
        fmt, bits_dtype = data_type.float_format, data_type.bits_dtype
        assert fmt is not None and bits_dtype is not None  # every float/complex type has both (data_type.py)
        if cat == "float":
            bits = int(np.array(value).view(bits_dtype))
            return _float_to_json(fmt, bits, float(value), 2 * data_type.itemsize)
        parts = [int(b) for b in np.array(value).reshape(1).view(bits_dtype)]
        return [_float_to_json(fmt, b, _bits_to_float(fmt, b), data_type.itemsize) for b in parts]
    if data_type.configuration:  # zarr-python's raw_bytes: base64, as it writes them
        return base64.b64encode(value.tobytes()).decode("ascii")
    return list(value.tobytes())


def default_fill_value(data_type: DataType) -> Any:
    """Zero of the type (``false``, ``0``, ``0.0``, ``0+0j``, all-zero bytes; ``""``/``b""``)."""
    if data_type.category == "string":
        return ""
    if data_type.category == "bytes":
        return b""
    if data_type.category == "fixed_string":
        return np.str_("")
    if data_type.category == "fixed_bytes":
        return np.bytes_(b"")
    if data_type.category == "datetime" or data_type.category == "timedelta":
        return np.array(-(1 << 63), dtype=np.int64).view(data_type.dtype)[()]  # NaT, as zarr-python
    if data_type.category == "raw":
        return np.void(bytes(data_type.itemsize))
    if data_type.category == "struct":
        return default_struct_fill(data_type)
    return np.zeros((), dtype=data_type.dtype)[()]


def needs_exact_text(data_type: DataType, json_value: Any) -> bool:
    """True when a float parsed from JSON text may have been rounded twice.

    ``json.loads`` rounds a number's text to binary64 first; for a narrower target
    that is exact unless the binary64 value is not representable in the target (then a
    tie could be broken wrongly).  Callers holding the text re-read the number as a
    ``Decimal`` in that (rare) case.
    """
    cat = data_type.category
    if cat == "struct":
        return type(json_value) is dict and any(needs_exact_text(f, json_value.get(n)) for n, f in data_type.fields)
    if cat == "float":
        values = (json_value,)
    elif cat == "complex" and type(json_value) is list:
        values = tuple(json_value)
    else:
        return False
    if data_type.itemsize == 8 and cat == "float" or data_type.itemsize == 16:
        return False
    fmt = data_type.float_format
    assert fmt is not None  # every float/complex type has one (data_type.py)
    for v in values:
        if type(v) is float and math.isfinite(v):
            bits = round_to_bits(fmt, Fraction(v), math.copysign(1.0, v) < 0)
            if bits is None or _bits_to_float(fmt, bits) != v:
                return True
    return False
