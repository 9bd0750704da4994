"""Zarr v3 data types (v3-data-types.rst, v3-core.rst "Data types", ext-data-types/*.md).

Core: ``bool``, ``int8``..``int64``, ``uint8``..``uint64``, ``float16/32/64``,
``complex64/128`` and raw bits ``r<bits>`` (a multiple of 8, numpy ``V<bytes>``).
Extensions (numpy dtypes from ml_dtypes): ``bfloat16``, ``float8_e4m3`` (the
IEEE-like variant *with* infinities, i.e. ``ml_dtypes.float8_e4m3``, not ``...fn``),
``float8_e5m2``, ``float4_e2m1fn``, ``int2``, ``int4``, ``uint2``, ``uint4``,
``float8_e3m4``, ``float8_e4m3fnuz``, ``float8_e5m2fnuz``, ``float8_e4m3b11fnuz``
(``fnuz``: no infinity, no negative zero, NaN = ``0x80``), ``float8_e8m0fnu`` (powers of
two ``2**-127 .. 2**127``, no sign, no zero, NaN = ``0xff``), ``float6_e2m3fn``,
``float6_e3m2fn`` (no NaN, no infinity; one byte each, the upper two bits ignored on
read) and the ``complex_*`` types (complex_float16 / complex_bfloat16 are ml_dtypes'
``complex32`` / ``bcomplex32``; one-byte components are a numpy structured pair
``("real", "imag")``; complex_float32 / complex_float64 are aliases of complex64 /
complex128); also ``float8_e4m3fn`` (no infinities, NaN = ``0x7f``) which tensorstore
writes, and zarr-python's ``{"name": "raw_bytes", "configuration": {"length_bytes": n}}`` (its
spelling of numpy ``V<n>``; fill values in base64).

Variable-length types (zarr-extensions ``data-types/string`` and ``data-types/bytes``,
see :mod:`zarrcy.codecs.vlen`): ``string`` (numpy ``StringDType()``, fill value a JSON
string) and ``bytes`` (numpy object arrays of ``bytes``, fill value base64; zarr-python
3.4 writes it as ``variable_length_bytes``, read here as an alias).  They are not in
:data:`DATA_TYPES` (which lists the fixed-size types) but in :data:`VLEN_TYPES`.

Fixed-length strings, as zarr-python 3.4 writes numpy ``U<n>`` / ``S<n>`` arrays (and
hence xarray's zarr engine with ``zarr_format=3``); there is no spec file for them, the
format is zarr-python's (zarr-extensions registry names):

* ``{"name": "fixed_length_utf32", "configuration": {"length_bytes": L}}``: numpy
  ``U<L/4>`` (L a positive multiple of 4).  Each element is ``L/4`` UTF-32 code units in
  the ``bytes`` codec's ``endian`` (which is therefore required), NUL-padded at the
  end; trailing NULs are not part of the value (numpy's rule).  Code units must be
  Unicode scalar values (no surrogates, at most ``0x10FFFF``).  Fill value: a JSON
  string of at most ``L/4`` code points.
* ``{"name": "null_terminated_bytes", "configuration": {"length_bytes": L}}``: numpy
  ``S<L>``; each element is ``L`` bytes, NUL-padded (trailing NULs are dropped on read,
  numpy's rule; NULs inside a value are kept); no byte order.  Fill value: a base64
  string of at most ``L`` bytes.

``from_numpy`` maps ``U<n>``/``S<n>`` (n >= 1) to these, as zarr-python does; ``str``
(``U0``) stays the variable-length ``string`` and ``S0`` the variable-length ``bytes``.

Times, as zarr-python 3.4 writes numpy ``M8``/``m8`` arrays (no spec file either):
``{"name": "numpy.datetime64" | "numpy.timedelta64", "configuration": {"unit": U,
"scale_factor": k}}`` with ``U`` one of numpy's units (``Y M W D h m s ms us μs ns ps fs
as``, or ``generic`` with ``k = 1``) and ``1 <= k < 2**31``: numpy ``M8[kU]``/``m8[kU]``,
elements int64 in the ``bytes`` codec's byte order; fill value the JSON integer of the
int64 (``NaT`` is ``-2**63``, the default fill value, as zarr-python has it).

Records: ``struct`` (ext-data-types/struct.md; legacy ``structured`` read and kept as
read), numpy packed structured dtypes, in :mod:`zarrcy.metadata.struct`.

A :class:`DataType` is a frozen dataclass; ``dtype`` is always native byte order
(endianness belongs to the ``bytes`` codec).  Fill-value encoding lives in
:mod:`zarrcy.metadata.fill_value`; the methods here delegate to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import ml_dtypes
import numpy as np

from zarrcy.errors import MetadataError, UnknownExtensionError, expected
from zarrcy.metadata import fill_value as _fv
from zarrcy.metadata import struct as _struct
from zarrcy.metadata._parse import check_extension_name, config_dict, parse_extension

__all__ = [
    "DataType", "FloatFormat", "parse_data_type", "from_numpy", "struct_from_numpy", "fixed_string",
    "time_type", "DATA_TYPES", "VLEN_TYPES", "FIXED_STRING_TYPES", "TIME_TYPES",
]

Category = Literal[
    "bool", "int", "uint", "float", "complex", "raw", "string", "bytes", "fixed_string", "fixed_bytes",
    "datetime", "timedelta", "struct",
]


class FloatFormat(NamedTuple):
    """Binary layout of a floating-point type: ``1 + exp_bits + man_bits`` bits.

    ``special``: ``"ieee"`` (all-ones exponent = inf/NaN), ``"fn"`` (finite + NaN only at
    all-ones exponent and mantissa), ``"finite"`` (no inf, no NaN), ``"fnuz"`` (finite, no
    negative zero: NaN is the sign bit alone, e.g. ``0x80``), ``"fnu"`` (``float8_e8m0fnu``:
    no sign bit, no mantissa, no zero, no subnormals; NaN is all ones).
    """

    exp_bits: int
    man_bits: int
    bias: int
    special: Literal["ieee", "fn", "finite", "fnuz", "fnu"]

    @property
    def nbits(self) -> int:
        return (0 if self.special == "fnu" else 1) + self.exp_bits + self.man_bits

    @property
    def nan_bits(self) -> int | None:
        """The bits "NaN" denotes (each type's spec): IEEE: sign 0, exponent all ones,
        mantissa MSB 1 (rest 0); ``fn``: all ones but the sign; ``fnuz``: the sign bit
        alone; ``fnu``: all ones."""
        if self.special == "finite":
            return None
        if self.special == "fn":
            return (1 << (self.nbits - 1)) - 1  # 0x7f for float8_e4m3fn
        if self.special == "fnuz":
            return 1 << (self.nbits - 1)  # 0x80
        if self.special == "fnu":
            return (1 << self.nbits) - 1  # 0xff
        return (((1 << self.exp_bits) - 1) << self.man_bits) | (1 << (self.man_bits - 1))


@dataclass(frozen=True)
class DataType:
    """One Zarr data type.  ``name`` is its JSON identifier."""

    name: str
    dtype: np.dtype = field(compare=False)
    category: Category = field(compare=False)
    #: float layout (for complex: of each component)
    float_format: FloatFormat | None = field(default=None, compare=False, repr=False)
    #: inclusive integer range (int/uint types)
    int_range: tuple[int, int] | None = field(default=None, compare=False, repr=False)
    #: unsigned numpy dtype with the same itemsize (bit views; per component for complex)
    bits_dtype: np.dtype | None = field(default=None, compare=False, repr=False)
    #: configuration of configured types, as sorted (key, value) pairs (hashable)
    configuration: tuple[tuple[str, Any], ...] = ()
    #: ``struct``: the fields in declaration order, ``(name, DataType)`` pairs
    fields: tuple[tuple[str, DataType], ...] = field(default=(), compare=False, repr=False)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def variable_length(self) -> bool:
        """True for ``string`` / ``bytes`` (elements are Python objects, no fixed bytes)."""
        return self.category == "string" or self.category == "bytes"

    def to_json(self) -> Any:
        """The JSON identifier: the name, or ``{"name", "configuration"}`` when configured."""
        if self.category == "struct":
            return _struct.struct_to_json(self)
        if self.configuration:
            return {"name": self.name, "configuration": dict(self.configuration)}
        return self.name

    def parse_fill_value(self, json_value: Any, path: str = "fill_value") -> Any:
        return _fv.parse_fill_value(self, json_value, path)

    def fill_value_to_json(self, value: Any) -> Any:
        return _fv.fill_value_to_json(self, value)

    def default_fill_value(self) -> Any:
        return _fv.default_fill_value(self)

    @staticmethod
    def from_numpy(dtype_like: Any) -> DataType:
        return from_numpy(dtype_like)

    def __repr__(self) -> str:
        return f"DataType({self.to_json()!r})"


def _uint(nbytes: int) -> np.dtype:
    return np.dtype(f"u{nbytes}")


def _make_table() -> dict[str, DataType]:
    t: dict[str, DataType] = {}
    t["bool"] = DataType("bool", np.dtype(np.bool_), "bool", bits_dtype=_uint(1))
    for bits in (8, 16, 32, 64):
        n = bits // 8
        t[f"int{bits}"] = DataType(
            f"int{bits}", np.dtype(f"i{n}"), "int", int_range=(-(1 << (bits - 1)), (1 << (bits - 1)) - 1), bits_dtype=_uint(n)
        )
        t[f"uint{bits}"] = DataType(
            f"uint{bits}", np.dtype(f"u{n}"), "uint", int_range=(0, (1 << bits) - 1), bits_dtype=_uint(n)
        )
    floats = {
        "float16": (np.dtype(np.float16), FloatFormat(5, 10, 15, "ieee")),
        "float32": (np.dtype(np.float32), FloatFormat(8, 23, 127, "ieee")),
        "float64": (np.dtype(np.float64), FloatFormat(11, 52, 1023, "ieee")),
        "bfloat16": (np.dtype(ml_dtypes.bfloat16), FloatFormat(8, 7, 127, "ieee")),
        "float8_e4m3": (np.dtype(ml_dtypes.float8_e4m3), FloatFormat(4, 3, 7, "ieee")),
        "float8_e5m2": (np.dtype(ml_dtypes.float8_e5m2), FloatFormat(5, 2, 15, "ieee")),
        "float8_e4m3fn": (np.dtype(ml_dtypes.float8_e4m3fn), FloatFormat(4, 3, 7, "fn")),
        "float4_e2m1fn": (np.dtype(ml_dtypes.float4_e2m1fn), FloatFormat(2, 1, 1, "finite")),
        # the rest of ml_dtypes' formats (ext-data-types/<name>.md)
        "float8_e3m4": (np.dtype(ml_dtypes.float8_e3m4), FloatFormat(3, 4, 3, "ieee")),
        "float8_e4m3fnuz": (np.dtype(ml_dtypes.float8_e4m3fnuz), FloatFormat(4, 3, 8, "fnuz")),
        "float8_e5m2fnuz": (np.dtype(ml_dtypes.float8_e5m2fnuz), FloatFormat(5, 2, 16, "fnuz")),
        "float8_e4m3b11fnuz": (np.dtype(ml_dtypes.float8_e4m3b11fnuz), FloatFormat(4, 3, 11, "fnuz")),
        "float8_e8m0fnu": (np.dtype(ml_dtypes.float8_e8m0fnu), FloatFormat(8, 0, 127, "fnu")),
        "float6_e2m3fn": (np.dtype(ml_dtypes.float6_e2m3fn), FloatFormat(2, 3, 1, "finite")),
        "float6_e3m2fn": (np.dtype(ml_dtypes.float6_e3m2fn), FloatFormat(3, 2, 3, "finite")),
    }
    for name, (dt, fmt) in floats.items():
        t[name] = DataType(name, dt, "float", float_format=fmt, bits_dtype=_uint(dt.itemsize))
    t["complex64"] = DataType(
        "complex64", np.dtype(np.complex64), "complex", float_format=floats["float32"][1], bits_dtype=_uint(4)
    )
    t["complex128"] = DataType(
        "complex128", np.dtype(np.complex128), "complex", float_format=floats["float64"][1], bits_dtype=_uint(8)
    )
    # ext-data-types/complex_*.md: real then imaginary component, each of the named float
    # type.  complex_float32/64 are aliases of complex64/128 (kept under their own name so
    # documents round-trip); float16/bfloat16 components are ml_dtypes' complex32 /
    # bcomplex32; one-byte components (no numpy complex type) are a structured pair
    # ``[("real", t), ("imag", t)]``
    one_byte = (n for n in floats if floats[n][0].itemsize == 1 and n != "float8_e4m3fn")  # no complex_ spec
    for comp in ("float32", "float64", "float16", "bfloat16", *one_byte):
        cdt, cfmt = floats[comp]
        if comp in ("float32", "float64"):
            dt = t["complex64" if comp == "float32" else "complex128"].dtype
        elif comp in ("float16", "bfloat16"):
            dt = np.dtype(ml_dtypes.complex32 if comp == "float16" else ml_dtypes.bcomplex32)
        else:
            dt = np.dtype([("real", cdt), ("imag", cdt)])
        name = f"complex_{comp}"
        t[name] = DataType(name, dt, "complex", float_format=cfmt, bits_dtype=_uint(cdt.itemsize))
    for name, dt, lo, hi in (
        ("int2", ml_dtypes.int2, -2, 1),
        ("int4", ml_dtypes.int4, -8, 7),
        ("uint2", ml_dtypes.uint2, 0, 3),
        ("uint4", ml_dtypes.uint4, 0, 15),
    ):
        d = np.dtype(dt)
        t[name] = DataType(name, d, "int" if lo < 0 else "uint", int_range=(lo, hi), bits_dtype=_uint(d.itemsize))
    return t


#: every named (non-raw) data type zarrcy implements
DATA_TYPES: dict[str, DataType] = _make_table()
# ml_dtypes scalar types -> name (their dtypes have kind "V", like raw types, or "W" for
# complex32 / bcomplex32); the structured complex pairs are only chosen by name
_BY_SCALAR_TYPE: dict[type, DataType] = {
    d.dtype.type: d for d in DATA_TYPES.values() if d.dtype.kind in "VW" and d.dtype.fields is None
}
# builtin numpy kinds by (kind, itemsize): np.longlong and np.int64 are distinct types
# (complex_float32/64 are aliases: numpy's complex64/128 map to the core names)
_BY_KIND: dict[tuple[str, int], DataType] = {
    (d.dtype.kind, d.dtype.itemsize): d for d in DATA_TYPES.values()
    if d.dtype.kind in "biufc" and not d.name.startswith("complex_")
}
_RAW_CACHE: dict[int, DataType] = {}

#: variable-length types (zarr-extensions data-types/string, data-types/bytes)
VLEN_TYPES: dict[str, DataType] = {
    "string": DataType("string", np.dtype(np.dtypes.StringDType()), "string"),
    "bytes": DataType("bytes", np.dtype(object), "bytes"),
}
# zarr-python 3.4 writes the bytes type under this name (and reads "bytes" too)
_VLEN_ALIASES = {"variable_length_bytes": "bytes"}


def _raw(nbits: int) -> DataType:
    d = _RAW_CACHE.get(nbits)
    if d is None:
        d = DataType(f"r{nbits}", np.dtype(f"V{nbits // 8}"), "raw")
        _RAW_CACHE[nbits] = d
    return d


_RAW_BYTES_CACHE: dict[int, DataType] = {}


def _raw_bytes(config: dict[str, Any] | None, path: str) -> DataType:
    """zarr-python's ``raw_bytes`` type (numpy ``V<n>``; base64 fill values), read and
    written back as is so arrays zarr-python made with void dtypes stay readable to it."""
    p = f"{path}.configuration.length_bytes"
    n = config_dict(config, path, ("length_bytes",), required=("length_bytes",))["length_bytes"]
    if type(n) is not int or n < 1:
        raise MetadataError(expected(p, "an integer >= 1", n), p)
    d = _RAW_BYTES_CACHE.get(n)
    if d is None:
        d = DataType("raw_bytes", np.dtype(f"V{n}"), "raw", configuration=(("length_bytes", n),))
        _RAW_BYTES_CACHE[n] = d
    return d


#: zarr-python 3.4's fixed-length string types (numpy U<n> / S<n>) -> (category, code unit size)
FIXED_STRING_TYPES: dict[str, tuple[Category, int]] = {
    "fixed_length_utf32": ("fixed_string", 4),
    "null_terminated_bytes": ("fixed_bytes", 1),
}
_FIXED_CACHE: dict[tuple[str, int], DataType] = {}
_MAX_ITEMSIZE = (1 << 31) - 4


def fixed_string(name: str, length_bytes: int) -> DataType:
    """``fixed_length_utf32`` (numpy ``U<length_bytes/4>``) or ``null_terminated_bytes``
    (numpy ``S<length_bytes>``); ``length_bytes`` already validated."""
    d = _FIXED_CACHE.get((name, length_bytes))
    if d is None:
        cat, unit = FIXED_STRING_TYPES[name]
        dt = np.dtype(f"U{length_bytes // 4}") if unit == 4 else np.dtype(f"S{length_bytes}")
        d = DataType(name, dt, cat, configuration=(("length_bytes", length_bytes),))
        _FIXED_CACHE[(name, length_bytes)] = d
    return d


def _parse_fixed_string(name: str, config: dict[str, Any] | None, path: str) -> DataType:
    unit = FIXED_STRING_TYPES[name][1]
    n = config_dict(config, path, ("length_bytes",), required=("length_bytes",))["length_bytes"]
    p = f"{path}.configuration.length_bytes"
    if type(n) is not int or n < 1:
        raise MetadataError(expected(p, "an integer >= 1", n), p)
    if n % unit:
        raise MetadataError(expected(p, f"a positive multiple of {unit} (UTF-32 code units)", n), p)
    if n > _MAX_ITEMSIZE:  # numpy's limit for one flexible-dtype element
        raise MetadataError(expected(p, f"at most {_MAX_ITEMSIZE} bytes per element", n), p)
    return fixed_string(name, n)


#: zarr-python 3.4's time types (numpy M8 / m8) -> (category, numpy type code)
TIME_TYPES: dict[str, tuple[Category, str]] = {
    "numpy.datetime64": ("datetime", "M8"),
    "numpy.timedelta64": ("timedelta", "m8"),
}
_TIME_UNITS = ("Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic")
_TIME_CACHE: dict[tuple[str, str, int], DataType] = {}
_INT64_RANGE = (-(1 << 63), (1 << 63) - 1)


def time_type(name: str, unit: str, scale_factor: int) -> DataType:
    """``numpy.datetime64`` / ``numpy.timedelta64`` with a validated unit and scale factor."""
    d = _TIME_CACHE.get((name, unit, scale_factor))
    if d is None:
        cat, code = TIME_TYPES[name]
        dt = np.dtype(code) if unit == "generic" else np.dtype(f"{code}[{scale_factor}{unit}]")
        d = DataType(name, dt, cat, int_range=_INT64_RANGE, bits_dtype=_uint(8),
                     configuration=(("scale_factor", scale_factor), ("unit", unit)))
        _TIME_CACHE[(name, unit, scale_factor)] = d
    return d


def _parse_time(name: str, config: dict[str, Any] | None, path: str) -> DataType:
    cfg = config_dict(config, path, ("unit", "scale_factor"), required=("unit", "scale_factor"))
    p = f"{path}.configuration.unit"
    unit = cfg["unit"]
    if type(unit) is not str or unit not in _TIME_UNITS:
        raise MetadataError(expected(p, f"one of {_TIME_UNITS}", unit), p)
    p = f"{path}.configuration.scale_factor"
    k = cfg["scale_factor"]
    if type(k) is not int or not 1 <= k < (1 << 31) or (unit == "generic" and k != 1):
        what = "1 (the generic unit has no scale)" if unit == "generic" else "an integer in [1, 2**31)"
        raise MetadataError(expected(p, what, k), p)
    return time_type(name, unit, k)


def _parse_raw_name(name: str) -> DataType | None:
    """``r<bits>`` with bits a positive multiple of 8 written without leading zeros."""
    digits = name[1:]
    if name[:1] != "r" or not digits.isdigit() or not digits.isascii() or digits[0] == "0":
        return None
    nbits = int(digits)
    if nbits % 8:
        return None
    return _raw(nbits)


def parse_data_type(json_value: Any, path: str = "data_type") -> DataType:
    """The ``data_type`` member -> :class:`DataType`.

    Unknown names raise :class:`UnknownExtensionError` naming ``path``;
    ``must_understand: false`` is not allowed for data types (v3-core.rst
    "must_understand") and is a :class:`MetadataError`.
    """
    if type(json_value) is str:
        d = DATA_TYPES.get(json_value) or VLEN_TYPES.get(_VLEN_ALIASES.get(json_value, json_value))
        if d is not None:
            return d
        name, config, mu = json_value, None, True
        check_extension_name(name, path)
    else:
        name, config, _ = parse_extension(json_value, path, ignorable=False, what="data type")
    if name == "raw_bytes":
        return _raw_bytes(config, path)
    if name in FIXED_STRING_TYPES:
        return _parse_fixed_string(name, config, path)
    if name in TIME_TYPES:
        return _parse_time(name, config, path)
    if name == "struct" or name == "structured":
        return _struct.parse_struct(name, config, path, parse_data_type, DataType)
    d = DATA_TYPES.get(name) or VLEN_TYPES.get(_VLEN_ALIASES.get(name, name)) or _parse_raw_name(name)
    if d is None:
        if name[:1] == "r" and name[1:].isdigit():
            raise MetadataError(expected(path, "a raw type r<bits> with bits a positive multiple of 8", name), path)
        raise UnknownExtensionError(f"{path}: unknown data type {name!r}", path)
    config_dict(config, path, ())  # none of the other types takes a configuration (an empty one is fine)
    return d


def from_numpy(dtype_like: Any) -> DataType:
    """A numpy dtype (or anything ``np.dtype`` accepts, or a Zarr name) -> :class:`DataType`.

    Byte order is dropped (``">i2"`` -> ``int16``); ``"V3"`` and ``"r24"`` -> ``r24``.
    Strings, as zarr-python 3.4 maps them: ``U<n>`` -> ``fixed_length_utf32``
    (``length_bytes`` 4n) and ``S<n>`` -> ``null_terminated_bytes`` (n >= 1; byte order
    dropped); ``str`` (numpy ``U0``), ``"T"``, ``StringDType()`` and ``object`` ->
    ``string`` (object arrays of ``bytes`` need ``dtype="bytes"``); ``"bytes"`` and the
    ``bytes`` class (numpy ``S0``) -> ``bytes``.  A ``StringDType`` with ``na_object`` is refused
    (the ``string`` type has no missing value).
    """
    if isinstance(dtype_like, DataType):
        return dtype_like
    if type(dtype_like) is str:
        d = DATA_TYPES.get(dtype_like) or VLEN_TYPES.get(_VLEN_ALIASES.get(dtype_like, dtype_like)) or _parse_raw_name(dtype_like)
        if d is not None:
            return d
    try:
        dt = np.dtype(dtype_like)
    except TypeError as e:
        raise MetadataError(expected("dtype", "a numpy dtype or Zarr data type name", dtype_like), "dtype") from e
    d = _BY_KIND.get((dt.kind, dt.itemsize)) if dt.kind in "biufc" else _BY_SCALAR_TYPE.get(dt.type)
    if d is not None:
        return d
    if dt.fields is not None:
        return struct_from_numpy(dt)
    if dt.kind in "Mm":
        unit, k = np.datetime_data(dt)
        return time_type("numpy.datetime64" if dt.kind == "M" else "numpy.timedelta64", unit, k)
    if dt.kind == "U" and dt.itemsize > 0:
        return fixed_string("fixed_length_utf32", dt.itemsize)
    if dt.kind == "S" and dt.itemsize > 0:
        return fixed_string("null_terminated_bytes", dt.itemsize)
    if dt.kind in "TUO":
        if hasattr(dt, "na_object"):
            raise MetadataError(expected("dtype", "a StringDType without na_object (the string type has no missing value)", str(dt)), "dtype")
        return VLEN_TYPES["string"]
    if dt.kind == "S":
        return VLEN_TYPES["bytes"]
    if dt.type is np.void and dt.fields is None and dt.subdtype is None and dt.itemsize > 0:
        return _raw(dt.itemsize * 8)
    raise MetadataError(expected("dtype", "a dtype with a Zarr v3 data type", str(dt)), "dtype")


def struct_from_numpy(dtype: np.dtype, path: str = "dtype", repack: bool = False) -> DataType:
    """A numpy structured dtype -> ``struct`` (see :mod:`zarrcy.metadata.struct`);
    ``repack``: drop padding instead of refusing it (Zarr v2 -> v3 conversion)."""
    return _struct.struct_from_numpy(dtype, path, repack, from_numpy, DataType)
