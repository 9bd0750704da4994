"""Zarr v2 / v1 data types and fill values (spec: ../shared/specs/v2.rst "Data type
encoding", "fill_value"; v1.rst "Data type encoding").

A v2 ``dtype`` is a numpy array-protocol type string with its byte order (``"<f4"``,
``">i2"``, ``"|u1"``, ``"|S12"``, ``"<U5"``, ``"<M8[ns]"``) or, for structured types, a
list of ``[name, type]`` / ``[name, type, shape]`` lists (numpy ``descr``).

:class:`V2DataType` mimics the interface of :class:`zarrcy.metadata.data_type.DataType`
that the array layer uses (``dtype``, ``itemsize``, ``to_json``, ``name``).  ``dtype`` is
in native byte order when byte order applies to the whole element (numbers, ``U``); the
stored byte order lives in ``stored_dtype`` (the ``bytes`` codec / chunk codec swaps).
``v3`` is the equivalent v3 :class:`DataType` when there is one (b/i/u/f/c), else None.

Fill values (v2.rst "fill_value", as zarr-python 2 writes them): ``null``; numbers;
``"NaN"``, ``"Infinity"``, ``"-Infinity"`` for floats; ``[re, im]`` for complex (each
component as a float); base64 text of the raw bytes for ``S``/``V``/structured types; the
string itself for ``U``; integers for ``M``/``m``.  A ``null`` fill value reads missing
chunks as zeros (the numpy default, as zarr-python 3 does: ``np.zeros(1, dtype)[0]``);
``null`` is kept and written back unchanged.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrcy.errors import MetadataError, expected

__all__ = ["V2DataType", "parse_v2_dtype", "v2_dtype_to_json", "parse_v2_fill_value", "v2_fill_value_to_json"]


def _native(dt: np.dtype) -> np.dtype:
    if dt.fields is None and dt.subdtype is None and dt.byteorder in "<>":
        return dt.newbyteorder("=")
    return dt


@dataclass(frozen=True, eq=False)
class V2DataType:
    """A v2 data type (see module docstring)."""

    stored_dtype: np.dtype
    json: Any = field(compare=False)
    #: ``"vlen-utf8"`` / ``"vlen-bytes"`` for zarr-python's variable-length ``"|O"`` arrays
    vlen: str | None = None

    @property
    def dtype(self) -> np.dtype:
        if self.vlen is not None:
            return np.dtype(np.dtypes.StringDType()) if self.vlen == "vlen-utf8" else np.dtype(object)
        return _native(self.stored_dtype)

    @property
    def variable_length(self) -> bool:
        return self.vlen is not None

    @property
    def itemsize(self) -> int:
        return self.stored_dtype.itemsize

    @property
    def name(self) -> str:
        return str(self.json) if isinstance(self.json, str) else "structured"

    @property
    def endian(self) -> str | None:
        """``"little"``/``"big"`` for multi-byte simple types, else None."""
        bo = self.stored_dtype.byteorder
        if self.stored_dtype.fields is not None or self.stored_dtype.itemsize <= 1 or bo == "|":
            return None
        if bo == "=":
            return "little" if np.little_endian else "big"
        return "little" if bo == "<" else "big"

    @property
    def v3(self) -> Any:
        """The v3 DataType with the same values, or None (object, subarray fields).

        ``U<n>`` -> ``fixed_length_utf32``, ``S<n>`` -> ``null_terminated_bytes``,
        ``V<n>`` -> ``r<8n>``, ``M8``/``m8`` -> ``numpy.datetime64``/``numpy.timedelta64``
        (zarr-python 3.4's names for the same numpy types); structured -> ``struct`` with
        the same named fields, packed (padding dropped), native byte order."""
        dt = self.stored_dtype
        if self.vlen is not None:
            from zarrcy.metadata.data_type import VLEN_TYPES

            return VLEN_TYPES["string" if self.vlen == "vlen-utf8" else "bytes"]
        if dt.fields is not None:
            from zarrcy.metadata.data_type import struct_from_numpy

            try:
                return struct_from_numpy(dt, "dtype", repack=True)
            except MetadataError:  # subarray fields, titles: no struct form
                return None
        if dt.fields is None and dt.subdtype is None and dt.kind in "biufcUSVMm":
            from zarrcy.metadata.data_type import from_numpy

            try:
                return from_numpy(dt)
            except MetadataError:  # pragma: no cover - e.g. float128
                return None
        return None

    def to_json(self) -> Any:
        return self.json

    def __eq__(self, other: object) -> bool:
        return isinstance(other, V2DataType) and self.stored_dtype == other.stored_dtype and self.vlen == other.vlen

    def __hash__(self) -> int:
        return hash((self.stored_dtype, self.vlen))

    def __repr__(self) -> str:
        return f"V2DataType({self.json!r})"


def _descr_to_json(descr: Any) -> Any:
    out = []
    for item in descr:
        name, t = item[0], item[1]
        t = _descr_to_json(t) if isinstance(t, list) else t
        out.append([name, t] if len(item) == 2 else [name, t, list(item[2])])
    return out


def v2_dtype_to_json(dtype: Any) -> Any:
    """numpy dtype -> the v2 ``dtype`` JSON value (byte order always explicit)."""
    dt = np.dtype(dtype)
    if dt.fields is not None:
        return _descr_to_json(dt.descr)
    if dt.hasobject:
        raise MetadataError(expected("dtype", "a fixed-size data type (object dtypes are not supported)", str(dt)), "dtype")
    s = dt.str  # always has the byte order character
    if dt.byteorder == "=":  # pragma: no cover - dt.str never returns "="
        s = ("<" if np.little_endian else ">") + s[1:]
    return s


def _descr_from_json(value: Any, path: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for i, item in enumerate(value):
        p = f"{path}[{i}]"
        if not isinstance(item, list) or len(item) not in (2, 3) or not isinstance(item[0], str):
            raise MetadataError(expected(p, "[name, type] or [name, type, shape]", item), p)
        t = item[1]
        if isinstance(t, list):
            t = _descr_from_json(t, f"{p}[1]")
        elif not isinstance(t, str):
            raise MetadataError(expected(f"{p}[1]", "a type string", t), f"{p}[1]")
        if len(item) == 3:
            shp = item[2]
            if not isinstance(shp, list) or not all(type(s) is int and s >= 0 for s in shp):
                raise MetadataError(expected(f"{p}[2]", "a shape (list of non-negative integers)", shp), f"{p}[2]")
            out.append((item[0], t, tuple(shp)))
        else:
            out.append((item[0], t))
    return out


_VLEN_FILTERS = ("vlen-utf8", "vlen-bytes")


def parse_v2_dtype(value: Any, path: str = "dtype", filters: list[dict[str, Any]] | None = None) -> V2DataType:
    """The ``dtype`` member of ``.zarray`` (or v1 ``meta``) -> :class:`V2DataType`.

    ``"|O"`` is accepted only as zarr-python's variable-length strings / bytes: the
    first of ``filters`` is ``vlen-utf8`` / ``vlen-bytes`` (the object codec that
    turns the elements into bytes); other object arrays (pickle, JSON, msgpack
    elements) are refused."""
    if value == "|O" and filters and isinstance(filters[0], dict) and filters[0].get("id") in _VLEN_FILTERS:
        return V2DataType(np.dtype(object), value, filters[0]["id"])
    try:
        if isinstance(value, str):
            if not value or value[0] not in "<>|":
                raise MetadataError(expected(path, "a type string with its byte order ('<', '>' or '|')", value), path)
            dt = np.dtype(value)
        elif isinstance(value, list) and value:
            # numpy's descr rules: a field named "" of type V<n> is padding (numpy's aligned
            # layouts), not a field -- np.dtype() would name it "f1"
            dt = np.lib.format.descr_to_dtype(_descr_from_json(value, path))
        else:
            raise MetadataError(expected(path, "a type string or a list of fields", value), path)
    except MetadataError:
        raise
    except Exception as e:  # numpy's parsers raise TypeError/ValueError, even SyntaxError ("<,2")
        raise MetadataError(expected(path, "a numpy type description", f"{value!r} ({type(e).__name__}: {e})"), path) from None
    if dt.subdtype is not None:  # e.g. "<8f": numpy expands it into extra dimensions
        raise MetadataError(expected(path, "a scalar data type (not a subarray type)", value), path)
    if dt.hasobject or dt.itemsize == 0 or dt.kind == "O":
        raise MetadataError(expected(path, "a fixed-size data type, or '|O' with a vlen-utf8 / vlen-bytes filter "
                                           "(other object / variable-length types are not supported)", value), path)
    return V2DataType(dt, value)


# -- fill values ---------------------------------------------------------------------------
_FLOAT_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _float_from_json(v: Any, path: str) -> float:
    if isinstance(v, str):
        if v in _FLOAT_NAMES:
            return _FLOAT_NAMES[v]
        raise MetadataError(expected(path, "a number, 'NaN', 'Infinity' or '-Infinity'", v), path)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise MetadataError(expected(path, "a number", v), path)
    return float(v)


def parse_v2_fill_value(data_type: V2DataType, value: Any, path: str = "fill_value") -> Any:
    """JSON ``fill_value`` -> a numpy scalar of ``data_type.dtype`` (None stays None)."""
    if value is None:
        return None
    if data_type.vlen is not None:
        if not isinstance(value, str):
            raise MetadataError(expected(path, "a string (vlen-utf8) or base64 text (vlen-bytes)", value), path)
        if data_type.vlen == "vlen-utf8":
            return value
        try:
            return base64.b64decode(value, validate=True)
        except (ValueError, binascii.Error) as e:
            raise MetadataError(expected(path, "base64 text of the fill value's bytes", f"{value!r} ({e})"), path) from None
    dt = data_type.dtype
    k = dt.kind
    try:
        if dt.fields is not None or k in "SV":
            if not isinstance(value, str):
                if k == "S" and isinstance(value, (int, float)) and value == 0:
                    return np.zeros((), dtype=dt)[()]
                raise MetadataError(expected(path, "base64 text of the fill value's bytes", value), path)
            raw = base64.b64decode(value, validate=True)
            if k == "S":
                if len(raw) > dt.itemsize:
                    raise MetadataError(expected(path, f"at most {dt.itemsize} bytes (base64)", value), path)
                return np.array(raw, dtype=dt)[()]  # shorter values are zero padded
            if len(raw) != dt.itemsize:
                raise MetadataError(expected(path, f"{dt.itemsize} bytes (base64)", value), path)
            return np.frombuffer(raw, dtype=dt)[0]
        if k == "U":
            if not isinstance(value, str):
                if isinstance(value, (int, float)) and value == 0:
                    return np.zeros((), dtype=dt)[()]
                raise MetadataError(expected(path, "a string", value), path)
            return np.array(value, dtype=dt)[()]
        if k == "b":
            if isinstance(value, bool) or (type(value) is int and value in (0, 1)):
                return np.bool_(bool(value))
            raise MetadataError(expected(path, "true or false", value), path)
        if k in "iumM":
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            if type(value) is not int:
                raise MetadataError(expected(path, "an integer", value), path)
            if k in "iu":
                info = np.iinfo(dt)
                if not info.min <= value <= info.max:
                    raise MetadataError(expected(path, f"an integer in [{info.min}, {info.max}]", value), path)
                return dt.type(value)
            return np.array(value, dtype=np.int64).view(dt)[()]
        if k == "f":
            return dt.type(_float_from_json(value, path))
        if k == "c":
            if isinstance(value, list) and len(value) == 2:
                return dt.type(complex(_float_from_json(value[0], f"{path}[0]"), _float_from_json(value[1], f"{path}[1]")))
            return dt.type(_float_from_json(value, path))
    except MetadataError:
        raise
    except (TypeError, ValueError, OverflowError, binascii.Error) as e:
        raise MetadataError(expected(path, f"a fill value of type {dt}", f"{value!r} ({e})"), path) from None
    raise MetadataError(expected(path, f"a fill value of a supported type, {dt} is not", value), path)  # pragma: no cover


def _float_to_json(v: float) -> Any:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return float(v)


def v2_fill_value_to_json(data_type: V2DataType, value: Any) -> Any:
    """A fill value (numpy scalar, Python value or None) -> its v2 JSON form."""
    if value is None:
        return None
    if data_type.vlen == "vlen-utf8":
        return str(value)
    if data_type.vlen == "vlen-bytes":
        return base64.standard_b64encode(bytes(value)).decode("ascii")
    dt = data_type.dtype
    k = dt.kind
    if dt.fields is not None or k in "SV":
        arr = np.asarray(value, dtype=dt) if not isinstance(value, bytes) else np.array(value, dtype=dt)
        return base64.standard_b64encode(arr.tobytes()).decode("ascii")
    if k == "U":
        return str(np.asarray(value, dtype=dt)[()])
    if k == "b":
        return bool(value)
    if k in "iu":
        return int(value)
    if k in "mM":
        return int(np.asarray(value, dtype=dt).view(np.int64)[()])
    if k == "f":
        return _float_to_json(float(value))
    if k == "c":
        c = complex(value)
        return [_float_to_json(c.real), _float_to_json(c.imag)]
    raise MetadataError(expected("fill_value", "a supported data type", str(dt)))  # pragma: no cover


def effective_fill_value(data_type: V2DataType, value: Any) -> Any:
    """The value missing chunks read as: ``value``, or zeros when it is None (documented)."""
    if data_type.vlen is not None:
        empty = "" if data_type.vlen == "vlen-utf8" else b""
        return empty if value is None else value
    if value is None:
        return np.zeros((), dtype=data_type.dtype)[()]
    return value
