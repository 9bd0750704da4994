"""The ``cast_value`` codec (spec: ../shared/specs/ext-codec-cast_value.md).

Configuration keys: ``data_type`` (required), ``rounding`` (``nearest-even`` default,
``towards-zero``, ``towards-positive``, ``towards-negative``, ``nearest-away``),
``out_of_range`` (absent = error, ``clamp``, ``wrap`` for integer targets only),
``scalar_map`` (``{"encode": [[in, out], ...], "decode": [[in, out], ...]}``).

This module also holds the casting core used by :mod:`zarrcy.casting` and the fused
``scale_offset -> cast_value`` path: the table of supported formats, the exact parser of
JSON scalars ("fill-value encoding"), and :func:`cast_array`, which runs
``zarrcy._kernels._cast_fast`` and raises :class:`~zarrcy.errors.CastError` /
:class:`~zarrcy.errors.OutOfRangeError` naming the first failing element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Self, Sequence, cast

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec
if TYPE_CHECKING:
    from zarrcy._kernels._cast_exact import CastFormat
from zarrcy.errors import CastError, MetadataError, OutOfRangeError, expected
from zarrcy.metadata._parse import check_keys, config_dict, expect_object
from zarrcy.metadata.data_type import DATA_TYPES, DataType, from_numpy

__all__ = [
    "CastValueCodec",
    "ScalarMap",
    "Rounding",
    "OutOfRange",
    "ROUNDING_MODES",
    "OUT_OF_RANGE_MODES",
    "Format",
    "get_format",
    "format_of_dtype",
    "parse_scalar",
    "scalar_to_json",
    "parse_pairs",
    "cast_array",
    "classify_array",
]

Rounding = Literal["nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away"]
OutOfRange = Literal["clamp", "wrap"]
ROUNDING_MODES: tuple[str, ...] = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
OUT_OF_RANGE_MODES: tuple[str, ...] = ("clamp", "wrap")

# status codes written by the kernel (zarrcy/_kernels/_cast_types.pxd)
ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED, ST_FAIL_NONFINITE, ST_FAIL_RANGE = range(7)



@dataclass(frozen=True)
class Format:
    """A real-number data type as the cast kernel sees it."""

    name: str
    dtype: np.dtype            # the numpy dtype of arrays of this type (ml_dtypes for extensions)
    kind: int                  # 0 signed int, 1 unsigned int, 2 binary float
    nbits: int
    storage: str               # numpy storage type the kernel writes ('uint8' for bfloat16 bits...)
    natural: bool              # storage type is the type itself
    lo: int = 0
    hi: int = 0
    p: int = 0                 # significand bits including the implicit one
    emin: int = 0
    emax: int = 0
    bias: int = 0
    has_inf: bool = False
    has_nan: bool = False
    nan_bits: int = 0
    # exact source type the kernel reads (extension sources are converted exactly first)
    source: str = ""
    no_neg_zero: bool = False  # fnuz floats: zero is +0 only
    unsigned: bool = False     # float8_e8m0fnu: powers of two 2^emin..2^emax, no sign, no zero
    max_frac: int = -1         # largest fraction at emax (-1: all ones; float8_e4m3fn: 6)

    @property
    def is_int(self) -> bool:
        return self.kind != 2

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def max_frac_bits(self) -> int:
        return self.max_frac if self.max_frac >= 0 else (1 << (self.p - 1)) - 1

    @property
    def max_finite(self) -> Fraction:
        return Fraction(2) ** self.emax * (1 + Fraction(self.max_frac_bits, 2 ** (self.p - 1)))

    def kernel_format(self) -> CastFormat:
        """The typed format the kernels take (built once per format name)."""
        kf = _KERNEL_FORMATS.get(self.name)
        if kf is None:
            from zarrcy._kernels._cast_exact import CastFormat

            kf = _KERNEL_FORMATS[self.name] = CastFormat(
                kind=self.kind, nbits=self.nbits, itemsize=np.dtype(self.storage).itemsize, natural=self.natural,
                lo=self.lo, hi=self.hi, p=self.p, emin=self.emin, emax=self.emax, bias=self.bias,
                has_inf=self.has_inf, has_nan=self.has_nan, nan_bits=self.nan_bits, no_neg_zero=self.no_neg_zero,
                unsigned=self.unsigned, max_frac=self.max_frac)
        return kf


_KERNEL_FORMATS: dict[str, CastFormat] = {}


def _int(name: str, bits: int, signed: bool, dtype: Any, storage: str) -> Format:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    return Format(name, np.dtype(dtype), 0 if signed else 1, bits, storage, storage == name, lo, hi,
                  source=storage if storage == name else ("int8" if signed else "uint8"))


def _float(name: str, dtype: Any, nbits: int, p: int, ebits: int, ieee: bool, nan_bits: int, storage: str) -> Format:
    bias = (1 << (ebits - 1)) - 1
    if name == "float4_e2m1fn":
        bias = 1
    emax = ((1 << ebits) - 2 - bias) if ieee else ((1 << ebits) - 1 - bias)
    emin = 1 - bias
    natural = storage == name
    return Format(name, np.dtype(dtype), 2, nbits, storage, natural, p=p, emin=emin, emax=emax, bias=bias,
                  has_inf=ieee, has_nan=ieee, nan_bits=nan_bits, source=name if natural else "float64")


def _float_from_table(name: str) -> Format:
    """A narrow float format from its DataType layout (data_type.FloatFormat): the types
    beyond IEEE's rules (fnuz, e8m0fnu, e4m3fn) and float6."""
    d = DATA_TYPES[name]
    ff = d.float_format
    assert ff is not None  # every float type has one (data_type.py)
    top = (1 << ff.exp_bits) - 1                 # largest biased exponent
    ieee = ff.special == "ieee"
    fnu = ff.special == "fnu"
    emax = (top - 1 if ieee or fnu else top) - ff.bias
    emin = -ff.bias if fnu else 1 - ff.bias
    nan = ff.nan_bits
    return Format(name, d.dtype, 2, ff.nbits, "uint8", False, p=ff.man_bits + 1, emin=emin, emax=emax,
                  bias=ff.bias, has_inf=ieee, has_nan=nan is not None, nan_bits=nan or 0, source="float64",
                  no_neg_zero=ff.special == "fnuz", unsigned=fnu,
                  max_frac=(1 << ff.man_bits) - 2 if ff.special == "fn" else -1)


#: the types ext-codec-cast_value.md lists beyond the first set, and float8_e4m3fn
EXTENDED_FLOATS = ("float8_e3m4", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e8m0fnu",
                   "float6_e2m3fn", "float6_e3m2fn", "float8_e4m3fn")


def _build_formats() -> dict[str, Format]:
    import ml_dtypes

    f: dict[str, Format] = {}
    for bits in (8, 16, 32, 64):
        f[f"int{bits}"] = _int(f"int{bits}", bits, True, f"int{bits}", f"int{bits}")
        f[f"uint{bits}"] = _int(f"uint{bits}", bits, False, f"uint{bits}", f"uint{bits}")
    f["int4"] = _int("int4", 4, True, ml_dtypes.int4, "uint8")
    f["uint4"] = _int("uint4", 4, False, ml_dtypes.uint4, "uint8")
    f["int2"] = _int("int2", 2, True, ml_dtypes.int2, "uint8")
    f["uint2"] = _int("uint2", 2, False, ml_dtypes.uint2, "uint8")
    f["float64"] = _float("float64", "float64", 64, 53, 11, True, 0x7FF8000000000000, "float64")
    f["float32"] = _float("float32", "float32", 32, 24, 8, True, 0x7FC00000, "float32")
    f["float16"] = _float("float16", "float16", 16, 11, 5, True, 0x7E00, "uint16")
    f["bfloat16"] = _float("bfloat16", ml_dtypes.bfloat16, 16, 8, 8, True, 0x7FC0, "uint16")
    f["float8_e4m3"] = _float("float8_e4m3", ml_dtypes.float8_e4m3, 8, 4, 4, True, 0x7C, "uint8")
    f["float8_e5m2"] = _float("float8_e5m2", ml_dtypes.float8_e5m2, 8, 3, 5, True, 0x7E, "uint8")
    f["float4_e2m1fn"] = _float("float4_e2m1fn", ml_dtypes.float4_e2m1fn, 4, 2, 2, False, 0, "uint8")
    for name in EXTENDED_FLOATS:
        f[name] = _float_from_table(name)
    return f


_FORMATS = _build_formats()
_BY_DTYPE = {fmt.dtype: fmt for fmt in _FORMATS.values()}
SUPPORTED_TYPES: tuple[str, ...] = tuple(_FORMATS)


def get_format(data_type: Any, path: str = "data_type") -> Format:
    """Format for a Zarr data type name, ``{"name": ...}`` object, numpy dtype or DataType."""
    if isinstance(data_type, Format):
        return data_type
    name: Any = data_type
    if isinstance(data_type, dict):
        if set(data_type) - {"name", "configuration"} or data_type.get("configuration") not in (None, {}):
            raise MetadataError(expected(path, "a data type without configuration", data_type), path)
        name = data_type.get("name")
    elif hasattr(data_type, "to_json") and hasattr(data_type, "dtype"):  # zarrcy DataType
        return format_of_dtype(data_type.dtype, path)
    elif not isinstance(data_type, str):
        try:
            return format_of_dtype(np.dtype(data_type), path)
        except TypeError:
            raise MetadataError(expected(path, "a data type", data_type), path) from None
    if type(name) is not str or name not in _FORMATS:
        raise MetadataError(expected(path, f"a real-number data type, one of {SUPPORTED_TYPES}", name), path)
    return _FORMATS[name]


def format_of_dtype(dtype: Any, path: str = "dtype") -> Format:
    dt = np.dtype(dtype)
    if dt.byteorder == ">":
        dt = dt.newbyteorder("=")
    fmt = _BY_DTYPE.get(dt)
    if fmt is None:
        raise MetadataError(expected(path, f"a real-number data type, one of {SUPPORTED_TYPES}", str(dt)), path)
    return fmt


# ---------------------------------------------------------------------------------------
# JSON scalars ("fill value encoding", v3-core.rst "fill_value")
# ---------------------------------------------------------------------------------------

def _round_fraction(x: Fraction, neg_zero: bool, fmt: Format, path: str, raw: Any) -> np.ndarray:
    """Round an exact rational once to ``fmt`` (nearest, ties to even).  Beyond the
    largest finite value it rounds to infinity where ``fmt`` has one, as the fill-value
    encoding does (v3-data-types.rst: "rounded to the nearest representable value"; the
    cast_value/scale_offset specs use that encoding); for types without infinity it is an
    error."""
    if fmt.unsigned and x <= 0:  # float8_e8m0fnu: positive powers of two only
        raise MetadataError(expected(path, f"a positive value ({fmt.name} has no zero or sign)", raw), path)
    if x == 0:
        v = -0.0 if neg_zero else 0.0
        return np.array(v, dtype=np.float64).astype(fmt.dtype)
    neg = x < 0
    a = abs(x)
    num, den = a.numerator, a.denominator
    ex = num.bit_length() - den.bit_length()
    if (num << max(0, -ex)) < (den << max(0, ex)):
        ex -= 1                      # now 2^ex <= a < 2^(ex+1)
    q = max(ex, fmt.emin) - (fmt.p - 1)
    # m = round(a / 2^q)
    if q >= 0:
        n2, d2 = num, den << q
    else:
        n2, d2 = num << -q, den
    m, rem = divmod(n2, d2)
    if 2 * rem > d2 or (2 * rem == d2 and m & 1):
        m += 1
    if m == 1 << fmt.p:
        m >>= 1
        q += 1
    if fmt.unsigned and m == 0:  # below 2**emin: that is the nearest value (no zero, no subnormals)
        m, q = 1, fmt.emin
    top = m.bit_length() + q - 1
    if m and (top > fmt.emax or (top == fmt.emax and m - (1 << (fmt.p - 1)) > fmt.max_frac_bits)):
        if fmt.has_inf:
            return np.array(-math.inf if neg else math.inf, dtype=np.float64).astype(fmt.dtype)
        raise MetadataError(expected(path, f"a value representable as {fmt.name}", raw), path)
    v = math.ldexp(m, q)
    return np.array(-v if neg else v, dtype=np.float64).astype(fmt.dtype)


def parse_scalar(value: Any, data_type: Any, path: str) -> np.ndarray:
    """Parse one JSON scalar in the fill-value encoding of ``data_type``; a 0-d array.

    Integers accept only in-range integers (``1.0`` is invalid).  Floats accept numbers
    (rounded once from their exact decimal value, ties to even; pass ``Decimal`` to keep
    the JSON text exact), ``"NaN"``, ``"Infinity"`` / ``"+Infinity"`` / ``"-Infinity"``
    and ``"0x..."`` with exactly two hex digits per byte.
    """
    fmt = get_format(data_type, path)
    if isinstance(value, np.generic):
        value = value.item()
    if fmt.is_int:
        if type(value) is not int or not (fmt.lo <= value <= fmt.hi):
            raise MetadataError(expected(path, f"an integer in [{fmt.lo}, {fmt.hi}] ({fmt.name})", value), path)
        return np.array(value, dtype=np.int64 if fmt.kind == 0 else np.uint64).astype(fmt.dtype)
    if type(value) is str:
        if value == "NaN" or value in ("Infinity", "+Infinity", "-Infinity"):
            if not (fmt.has_nan if value == "NaN" else fmt.has_inf):
                raise MetadataError(expected(path, f"a finite number ({fmt.name} has no NaN/Infinity)", value), path)
            v = math.nan if value == "NaN" else (-math.inf if value[0] == "-" else math.inf)
            return np.array(v, dtype=np.float64).astype(fmt.dtype)
        if value[:2] == "0x":  # lower-case only, as v3-data-types.rst spells it
            digits = value[2:]
            nbytes = fmt.itemsize
            try:
                bits = int(digits, 16)
            except ValueError:
                bits = -1
            if len(digits) != 2 * nbytes or bits < 0 or (fmt.nbits < 8 and bits >> fmt.nbits):
                raise MetadataError(expected(path, f"'0x' and {2 * nbytes} hex digits ({fmt.name})", value), path)
            return np.array(bits, dtype=np.dtype(f"uint{8 * nbytes}")).view(fmt.dtype)
        raise MetadataError(expected(path, f"a number, 'NaN', '[+-]Infinity' or hex ({fmt.name})", value), path)
    if type(value) is bool or not isinstance(value, (int, float, Decimal, Fraction)):
        raise MetadataError(expected(path, f"a number ({fmt.name})", value), path)
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value) or fmt.has_inf:
            if not fmt.has_nan:
                raise MetadataError(expected(path, f"a finite number ({fmt.name})", value), path)
            return np.array(value, dtype=np.float64).astype(fmt.dtype)
        raise MetadataError(expected(path, f"a finite number ({fmt.name})", value), path)
    if isinstance(value, Decimal) and not value.is_finite():
        raise MetadataError(expected(path, f"a finite number ({fmt.name})", value), path)
    neg_zero = (isinstance(value, float) and math.copysign(1.0, value) < 0) or (
        isinstance(value, Decimal) and value.is_signed())
    return _round_fraction(Fraction(value), neg_zero, fmt, path, value)


def scalar_to_json(value: Any, data_type: Any) -> Any:
    """A scalar of ``data_type`` in the fill-value JSON encoding (exact: hex when needed)."""
    fmt = get_format(data_type)
    arr = np.asarray(value, dtype=fmt.dtype)
    if fmt.is_int:
        return int(arr.astype(np.int64 if fmt.kind == 0 else np.uint64))
    v = float(arr.astype(np.float64))
    if math.isnan(v):
        canon = np.array(math.nan).astype(fmt.dtype)
        if canon.tobytes() == arr.tobytes():
            return "NaN"
        return "0x" + format(int(arr.view(np.dtype(f"uint{8 * fmt.itemsize}"))), f"0{2 * fmt.itemsize}x")
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    if v == int(v) and abs(v) < 2**53 and math.copysign(1.0, v) > 0:
        return int(v)
    return v


def parse_pairs(pairs: Any, src: Format, dst: Format, path: str) -> tuple[np.ndarray, np.ndarray]:
    """scalar_map entries -> (keys in the kernel's source storage, values in target storage)."""
    if pairs is None:
        pairs = []
    if isinstance(pairs, dict):
        pairs = list(pairs.items())
    if not isinstance(pairs, (list, tuple)):
        raise MetadataError(expected(path, "an array of [input, output] pairs", pairs), path)
    keys = []
    vals = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise MetadataError(expected(f"{path}[{i}]", "a pair [input, output]", pair), f"{path}[{i}]")
        keys.append(parse_scalar(pair[0], src, f"{path}[{i}][0]"))
        vals.append(parse_scalar(pair[1], dst, f"{path}[{i}][1]"))
    k = np.array(keys, dtype=src.dtype).reshape(-1)
    v = np.array(vals, dtype=dst.dtype).reshape(-1)
    return _to_source(k, src), _to_storage(v, dst)


def _to_source(arr: np.ndarray, fmt: Format) -> np.ndarray:
    """Exact conversion of an array of ``fmt`` to the type the kernel reads."""
    if fmt.natural:
        return arr
    with np.errstate(invalid="ignore"):   # signalling NaN payloads convert quietly
        return arr.astype(fmt.source)


def _to_storage(arr: np.ndarray, fmt: Format) -> np.ndarray:
    if fmt.natural:
        return arr
    return arr.view(fmt.storage)


def _mode_codes(rounding: str, out_of_range: str | None, dst: Format, path: str) -> tuple[int, int]:
    if rounding not in ROUNDING_MODES:
        raise MetadataError(expected(f"{path}.rounding", f"one of {ROUNDING_MODES}", rounding), f"{path}.rounding")
    if out_of_range is not None and out_of_range not in OUT_OF_RANGE_MODES:
        raise MetadataError(expected(f"{path}.out_of_range", f"one of {OUT_OF_RANGE_MODES} or absent", out_of_range),
                            f"{path}.out_of_range")
    oor = 0 if out_of_range is None else (1 if out_of_range == "clamp" else 2)
    return ROUNDING_MODES.index(rounding), oor


def _contiguous(values: np.ndarray, fmt: Format) -> np.ndarray:
    a = np.asarray(values)
    if a.dtype != fmt.dtype:
        a = a.astype(fmt.dtype)     # byte order only (same format)
    return np.ascontiguousarray(a)


@dataclass(frozen=True)
class PreparedCast:
    """Everything per-chunk casting needs, resolved once (formats, modes, scalar_map arrays)."""

    src: Format
    dst: Format
    rounding: int
    out_of_range: int
    keys: np.ndarray
    values: np.ndarray
    # for messages
    rounding_name: str = "nearest-even"
    out_of_range_name: str | None = None

    def run(self, values: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        from zarrcy._kernels._cast_fast import cast_into

        a = _contiguous(values, self.src)
        x = _to_source(a, self.src)
        if out is None:
            out = np.empty(a.shape, dtype=self.dst.dtype)
        y = _to_storage(out, self.dst)
        r = cast_into(x.reshape(-1), y.reshape(-1), self.dst.kernel_format(), self.rounding, self.out_of_range,
                      self.keys.reshape(-1), self.values.reshape(-1))
        if r >= 0:
            self.raise_for(a, int(r))
        return out

    def classify(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(result, status per element); never raises for failing elements (result 0 there)."""
        from zarrcy._kernels._cast_fast import cast_into

        a = _contiguous(values, self.src)
        x = _to_source(a, self.src)
        out = np.zeros(a.shape, dtype=self.dst.dtype)
        y = _to_storage(out, self.dst)
        status = np.empty(a.shape, dtype=np.uint8)
        cast_into(x.reshape(-1), y.reshape(-1), self.dst.kernel_format(), self.rounding, self.out_of_range,
                  self.keys.reshape(-1), self.values.reshape(-1), status.reshape(-1))
        return out, status

    def raise_for(self, a: np.ndarray, flat_index: int) -> None:
        """Raise the CastError/OutOfRangeError for element ``flat_index`` of ``a``."""
        elem = a.reshape(-1)[flat_index : flat_index + 1]
        _, st = self.classify(elem)
        index: int | tuple[int, ...] = flat_index
        if a.ndim > 1:
            index = tuple(int(i) for i in np.unravel_index(flat_index, a.shape))
        with np.errstate(invalid="ignore"):
            value = elem[0].item() if self.src.natural else float(elem.astype(np.float64)[0])
        where = f"element {index} ({value!r})"
        if st[0] == ST_FAIL_NONFINITE:
            raise CastError(f"cast_value {self.src.name} -> {self.dst.name}: {where} is NaN or infinite and "
                            f"{self.dst.name} cannot represent it; add a scalar_map entry for it",
                            index=index, value=value)
        raise OutOfRangeError(f"cast_value {self.src.name} -> {self.dst.name}: {where} is outside the range of "
                              f"{self.dst.name} after {self.rounding_name} rounding and out_of_range is "
                              f"{self.out_of_range_name or 'not set'}", index=index, value=value)


def prepare_cast(src: Any, dst: Any, rounding: str = "nearest-even", out_of_range: str | None = None,
                 scalar_map: Any = None, path: str = "cast_value") -> PreparedCast:
    """Validate a cast once: formats, modes (``wrap`` needs an integer target), scalar_map pairs."""
    s = get_format(src, f"{path}.source")
    d = get_format(dst, f"{path}.data_type")
    r, o = _mode_codes(rounding, out_of_range, d, path)
    if o == 2 and not d.is_int:
        raise MetadataError(expected(f"{path}.out_of_range", f"'clamp' or absent for float target {d.name}", "wrap"),
                            f"{path}.out_of_range")
    keys, vals = parse_pairs(scalar_map, s, d, f"{path}.scalar_map")
    return PreparedCast(s, d, r, o, keys, vals, rounding, out_of_range)


def prepare_decode_cast(src: Any, dst: Any, rounding: str, out_of_range: str | None, scalar_map: Any,
                        path: str) -> PreparedCast:
    """The decode direction of a codec: ``wrap`` into a float type acts as 'absent' (an error)."""
    s = get_format(src, f"{path}.data_type")
    d = get_format(dst, f"{path}.source")
    r, o = _mode_codes(rounding, out_of_range, d, path)
    if o == 2 and not d.is_int:
        o = 0   # wrap decoding into a float type: out-of-range values are errors
    keys, vals = parse_pairs(scalar_map, s, d, f"{path}.scalar_map.decode")
    return PreparedCast(s, d, r, o, keys, vals, rounding, out_of_range)


def cast_array(values: np.ndarray, data_type: Any, rounding: str = "nearest-even", out_of_range: str | None = None,
               scalar_map: Any = None) -> np.ndarray:
    return prepare_cast(np.asarray(values).dtype, data_type, rounding, out_of_range, scalar_map).run(values)


def classify_array(values: np.ndarray, data_type: Any, rounding: str = "nearest-even",
                   out_of_range: str | None = None, scalar_map: Any = None) -> tuple[np.ndarray, np.ndarray]:
    return prepare_cast(np.asarray(values).dtype, data_type, rounding, out_of_range, scalar_map).classify(values)


def same_value(a: np.ndarray, b: np.ndarray) -> bool:
    """Fill-value identity: any NaN equals any NaN, otherwise identical bits."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.dtype != b.dtype:
        return False
    fmt = format_of_dtype(a.dtype)
    if not fmt.is_int and fmt.has_nan:
        with np.errstate(invalid="ignore"):
            fa = float(a.astype(np.float64))
            fb = float(b.astype(np.float64))
        if math.isnan(fa) or math.isnan(fb):
            return math.isnan(fa) and math.isnan(fb)
    return a.tobytes() == b.tobytes()


# ---------------------------------------------------------------------------------------
# the codec
# ---------------------------------------------------------------------------------------

_KEYS = ("data_type", "rounding", "out_of_range", "scalar_map")


def _freeze_pairs(pairs: Any, path: str) -> tuple[tuple[Any, Any], ...] | None:
    if pairs is None:
        return None
    if not isinstance(pairs, (list, tuple)):
        raise MetadataError(expected(path, "an array of [input, output] pairs", pairs), path)
    out = []
    for i, pair in enumerate(pairs):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise MetadataError(expected(f"{path}[{i}]", "a pair [input, output]", pair), f"{path}[{i}]")
        for j, item in enumerate(pair):
            if type(item) is bool or not isinstance(item, (int, float, str, Decimal)):
                raise MetadataError(expected(f"{path}[{i}][{j}]", "a JSON scalar", item), f"{path}[{i}][{j}]")
        out.append((pair[0], pair[1]))
    return tuple(out)


class ScalarMap(NamedTuple):
    """The ``scalar_map`` configuration member (ext-codec-cast_value.md "scalar_map"):
    ``encode`` maps array values to ``data_type`` values, ``decode`` the reverse; each is
    a tuple of ``(input, output)`` JSON scalars in fill-value encoding, or None when the
    member is absent."""

    encode: tuple[tuple[Any, Any], ...] | None = None
    decode: tuple[tuple[Any, Any], ...] | None = None


@dataclass(frozen=True)
class CastValueCodec(ArrayArrayCodec):
    """Converts element values to ``data_type`` (and back on decode); see the module docstring."""

    name: ClassVar[str] = "cast_value"
    elementwise: ClassVar[bool] = True

    data_type: str
    rounding: Rounding = "nearest-even"
    out_of_range: OutOfRange | None = None
    scalar_map: ScalarMap | None = None
    _cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        path = "cast_value.configuration"
        fmt = get_format(self.data_type, f"{path}.data_type")
        object.__setattr__(self, "data_type", fmt.name)
        _mode_codes(self.rounding, self.out_of_range, fmt, path)
        if self.out_of_range == "wrap" and not fmt.is_int:
            raise MetadataError(expected(f"{path}.out_of_range", f"'clamp' or absent for float target {fmt.name}",
                                         "wrap"), f"{path}.out_of_range")

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        configuration = config_dict(configuration, path, _KEYS, required=("data_type",))
        cpath = f"{path}.configuration"
        fmt = get_format(configuration["data_type"], f"{cpath}.data_type")
        rounding = configuration.get("rounding", "nearest-even")
        if type(rounding) is not str or rounding not in ROUNDING_MODES:
            raise MetadataError(expected(f"{cpath}.rounding", f"one of {ROUNDING_MODES}", rounding), f"{cpath}.rounding")
        oor = configuration.get("out_of_range")
        if "out_of_range" in configuration and (type(oor) is not str or oor not in OUT_OF_RANGE_MODES):
            raise MetadataError(expected(f"{cpath}.out_of_range", f"one of {OUT_OF_RANGE_MODES}", oor),
                                f"{cpath}.out_of_range")
        if oor == "wrap" and not fmt.is_int:
            raise MetadataError(expected(f"{cpath}.out_of_range", f"'clamp' or absent for float target {fmt.name}",
                                         oor), f"{cpath}.out_of_range")
        scalar_map = None
        if "scalar_map" in configuration:
            sm = expect_object(configuration["scalar_map"], f"{cpath}.scalar_map")
            check_keys(sm, f"{cpath}.scalar_map", ("encode", "decode"))
            enc = _freeze_pairs(sm.get("encode"), f"{cpath}.scalar_map.encode") if "encode" in sm else None
            dec = _freeze_pairs(sm.get("decode"), f"{cpath}.scalar_map.decode") if "decode" in sm else None
            scalar_map = ScalarMap(enc, dec)  # {} stays {} (written back as read)
        # both modes were checked against their Literal values above
        return cls(fmt.name, cast(Rounding, rounding), cast("OutOfRange | None", oor), scalar_map)

    def to_dict(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"data_type": self.data_type, "rounding": self.rounding}
        if self.out_of_range is not None:
            conf["out_of_range"] = self.out_of_range
        if self.scalar_map is not None:
            sm: dict[str, Any] = {}
            if self.scalar_map.encode is not None:
                sm["encode"] = [list(p) for p in self.scalar_map.encode]
            if self.scalar_map.decode is not None:
                sm["decode"] = [list(p) for p in self.scalar_map.decode]
            conf["scalar_map"] = sm
        return {"name": self.name, "configuration": conf}

    # -- prepared casts, once per source dtype
    def prepared(self, source_dtype: np.dtype, path: str = "cast_value") -> tuple[PreparedCast, PreparedCast]:
        key = np.dtype(source_dtype)
        hit = self._cache.get(key)
        if hit is None:
            src = format_of_dtype(key, f"{path} (array data type)")
            sm = self.scalar_map or ScalarMap()
            enc = prepare_cast(src, self.data_type, self.rounding, self.out_of_range, sm.encode, path)
            dec = prepare_decode_cast(self.data_type, src, self.rounding, self.out_of_range, sm.decode, path)
            hit = (enc, dec)
            self._cache[key] = hit
        return hit

    def validate(self, spec: ArraySpec, path: str) -> None:
        self.prepared(spec.dtype, path)

    def resolve(self, spec: ArraySpec, path: str = "cast_value") -> ArraySpec:
        enc, dec = self.prepared(spec.dtype, path)
        fill = np.asarray(spec.fill_value, dtype=spec.dtype)
        try:
            efill = enc.run(fill.reshape(1))
            back = dec.run(efill)
        except CastError as e:
            raise MetadataError(f"{path}: the fill value {fill.item()!r} does not survive cast_value "
                                f"({e})", path) from None
        if not same_value(back.reshape(()), fill):
            raise MetadataError(f"{path}: the fill value {fill.item()!r} does not round-trip through cast_value "
                                f"to {self.data_type} (decodes to {back.reshape(()).item()!r})", path)
        return ArraySpec(spec.shape, enc.dst.dtype, efill.reshape(())[()], _data_type_of(enc.dst.dtype))

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return self.prepared(spec.dtype)[0].run(chunk)

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return self.prepared(spec.dtype)[1].run(chunk)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size // spec.dtype.itemsize * get_format(self.data_type).itemsize


def _data_type_of(dtype: np.dtype) -> DataType | None:
    """The zarrcy DataType of an encoded dtype (None for a numpy type without a Zarr twin)."""
    try:
        return from_numpy(dtype)
    except MetadataError:
        return None
