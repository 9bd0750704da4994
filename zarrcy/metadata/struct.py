"""The ``struct`` data type (ext-data-types/struct.md) and its legacy name ``structured``
(ext-data-types/structured.md).

``{"name": "struct", "configuration": {"fields": [{"name": N, "data_type": T}, ...]}}``:
records of named fields, each of a fixed-size Zarr data type (nested ``struct`` too),
packed without padding in declaration order ("Bytes codec encoding").  In memory a
record array is a numpy structured dtype with the same fields at packed offsets, every
field in native byte order (the ``bytes`` codec swaps each multi-byte field: see
:func:`byte_order_units`).

Fill value: a JSON object with exactly one member per field, each in its field type's
fill-value encoding ("Fill value representation"); a missing or extra member is a
:class:`MetadataError` naming the member's JSON path (``fill_value.point.x``).

Legacy ``structured`` (written by zarr-python 3.0 - 3.3) is read and kept under its name
(a document rewritten by zarrcy, e.g. for an attribute update, stays readable to those
versions; new arrays are always written as ``struct``, structured.md "Read-only alias"):
fields may be ``[name, data_type]`` pairs, the fill value may be base64 text of the packed
record, and a ``bytes`` codec without ``endian`` means little-endian (structured.md
"SHOULD warn" when it is absent: zarrcy emits no warnings anywhere, it reads it as the
spec says).  The spec says the
base64 bytes follow the codec's ``endian``; zarr-python 3.0 - 3.4 (the only writer) always
wrote and reads them little-endian whatever the codec says, so they are read (and
written back) little-endian here, matching the data that exists.

numpy in: a structured dtype whose fields are contiguous in declaration order with no
padding (``align=True`` layouts, explicit gaps, titles and subarray fields have no
``struct`` form and are refused with a :class:`MetadataError` saying how to repack);
:func:`struct_from_numpy` with ``repack=True`` (Zarr v2 -> v3 conversion) drops padding.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from zarrcy.errors import MetadataError, expected
from zarrcy.metadata._parse import MISSING, check_keys, config_dict

if TYPE_CHECKING:
    from zarrcy.metadata.data_type import DataType

__all__ = [
    "parse_struct", "struct_type", "struct_from_numpy", "struct_to_json", "parse_struct_fill",
    "struct_fill_to_json", "default_struct_fill", "byte_order_units", "swap_units", "MAX_STRUCT_DEPTH",
]

#: nested struct types deeper than this are refused (no recursion limit reachable)
MAX_STRUCT_DEPTH = 32
_MAX_ITEMSIZE = (1 << 31) - 4  # numpy's limit for one element
_CACHE: dict[tuple[str, tuple[tuple[str, Any], ...]], DataType] = {}


def _err(path: str, what: str, value: Any) -> MetadataError:
    return MetadataError(expected(path, what, value), path)


def struct_type(name: str, fields: tuple[tuple[str, DataType], ...], path: str, make: type[DataType]) -> DataType:
    """The ``struct`` (or legacy ``structured``) DataType of validated ``fields``.

    (``make`` and the other callables below are data_type.py's, passed in: this module
    sits below it, with no import cycle.)"""
    key = (name, fields)
    d = _CACHE.get(key)
    if d is None:
        total = sum(f.itemsize for _, f in fields)
        if total > _MAX_ITEMSIZE:
            raise _err(path, f"a record of at most {_MAX_ITEMSIZE} bytes", f"{total} bytes")
        dt = np.dtype([(n, f.dtype) for n, f in fields])  # packed: offsets are the running sums
        d = make(name, dt, "struct", configuration=(("fields", fields),), fields=fields)
        _CACHE[key] = d
    return d


def parse_struct(name: str, config: dict[str, Any] | None, path: str,
                 parse_data_type: Callable[[Any, str], DataType], make: type[DataType]) -> DataType:
    """``struct`` / ``structured`` configuration -> DataType (errors name the JSON path)."""
    cfg = config_dict(config, path, ("fields",), required=("fields",))
    p = f"{path}.configuration.fields"
    raw = cfg["fields"]
    if type(raw) is not list or not raw:
        raise _err(p, "a non-empty array of fields", raw)
    if path.count(".configuration.fields[") >= MAX_STRUCT_DEPTH:
        raise _err(path, f"struct types nested at most {MAX_STRUCT_DEPTH} deep", "a deeper struct")
    legacy = name == "structured"
    fields: list[tuple[str, DataType]] = []
    seen: set[str] = set()
    for i, f in enumerate(raw):
        fp = f"{p}[{i}]"
        if type(f) is dict:
            check_keys(f, fp, ("name", "data_type"))
            for k in ("name", "data_type"):
                if k not in f:
                    raise _err(f"{fp}.{k}", "a value (the key is required)", MISSING)
            fname, ftype, npath, dpath = f["name"], f["data_type"], f"{fp}.name", f"{fp}.data_type"
        elif legacy and type(f) is list and len(f) == 2:
            fname, ftype, npath, dpath = f[0], f[1], f"{fp}[0]", f"{fp}[1]"
        else:
            what = 'an object {"name", "data_type"}' + (" or a [name, data_type] pair" if legacy else "")
            raise _err(fp, what, f)
        if type(fname) is not str or not fname:
            raise _err(npath, "a non-empty string (the field name)", fname)
        if fname in seen:
            raise _err(npath, "a field name not used by an earlier field (names must be unique)", fname)
        seen.add(fname)
        fdt = parse_data_type(ftype, dpath)
        if fdt.variable_length:
            raise _err(dpath, "a fixed-size data type (variable-length types cannot be struct fields)", ftype)
        fields.append((fname, fdt))
    return struct_type(name, tuple(fields), path, make)


def struct_from_numpy(dt: np.dtype, path: str, repack: bool, from_numpy: Callable[[Any], DataType],
                      make: type[DataType]) -> DataType:
    """A numpy structured dtype -> ``struct`` (byte order of the fields dropped).

    The fields must be packed in declaration order unless ``repack`` (then padding and
    gaps are dropped: the values of the named fields are what is kept)."""
    names = dt.names or ()
    if not names:
        raise _err(path, "a structured dtype with at least one field", str(dt))
    fields: list[tuple[str, DataType]] = []
    offset = 0
    for name in names:
        fdt, off, *title = dt.fields[name]  # type: ignore[index]  # names is not empty
        fpath = f"{path}[{name!r}]"
        if title:
            raise _err(fpath, "a field without a title (struct fields have only a name)", title[0])
        if fdt.subdtype is not None:
            raise _err(fpath, "a scalar field (struct has no subarray fields: use a nested struct or one "
                              "field per element)", str(fdt))
        if off != offset and not repack:
            raise _err(path, "a packed structured dtype (fields contiguous in declaration order, no padding: "
                             "ext-data-types/struct.md does not support numpy's align=True layout); repack it "
                             "with numpy.lib.recfunctions.repack_fields", str(dt))
        if fdt.names is not None:
            fd = struct_from_numpy(fdt, fpath, repack, from_numpy, make)
        else:
            fd = from_numpy(fdt)
        if fd.variable_length:
            raise _err(fpath, "a fixed-size field type (variable-length types cannot be struct fields)", str(fdt))
        fields.append((name, fd))
        offset += fd.itemsize
    if offset != dt.itemsize and not repack:
        raise _err(path, "a packed structured dtype (itemsize the sum of the field sizes, no trailing "
                         "padding); repack it with numpy.lib.recfunctions.repack_fields", str(dt))
    return struct_type("struct", tuple(fields), path, make)


def struct_to_json(d: DataType) -> dict[str, Any]:
    if d.name == "structured":  # the legacy pair form, as zarr-python 3.0 - 3.3 wrote it
        return {"name": d.name, "configuration": {"fields": [[n, f.to_json()] for n, f in d.fields]}}
    fields = [{"name": n, "data_type": f.to_json()} for n, f in d.fields]
    return {"name": d.name, "configuration": {"fields": fields}}


# --------------------------------------------------------------------------- byte order


def byte_order_units(dt: np.dtype, base: int = 0) -> tuple[tuple[int, int, int], ...]:
    """``(offset, unit, count)`` of every run of byte-ordered units in one element of
    ``dt``: ``count`` consecutive ``unit``-byte words at ``offset``, each reversed to change
    the byte order (complex: two components; ``U<n>``: n code units).  Empty when byte
    order does not apply (single bytes, raw bytes, ``S<n>``, bool)."""
    if dt.names is not None:
        out: list[tuple[int, int, int]] = []
        for name in dt.names:
            fdt, off = dt.fields[name][:2]  # type: ignore[index]  # names is not None
            out.extend(byte_order_units(fdt, base + off))
        return tuple(out)
    n = dt.itemsize
    k = dt.kind
    if k == "U":
        return ((base, 4, n // 4),) if n else ()
    if k == "c" or k == "W":  # numpy complex, ml_dtypes complex32 / bcomplex32
        return ((base, n // 2, 2),)
    if n <= 1 or k in "SbO" or dt.type is np.void:
        return ()
    return ((base, n, 1),)  # numbers, times, ml_dtypes scalars (bfloat16)


def swap_units(rows: np.ndarray, units: tuple[tuple[int, int, int], ...]) -> None:
    """Reverse the bytes of every unit in place; ``rows``: uint8 ``(elements, itemsize)``."""
    n = rows.shape[0]
    for off, unit, count in units:
        seg = rows[:, off : off + unit * count].reshape(n, count, unit)
        seg[...] = seg[..., ::-1].copy()


# --------------------------------------------------------------------------- fill values


def _pack(d: DataType, values: list[Any]) -> Any:
    """One record (np.void of ``d.dtype``) from per-field scalars, bit-exact."""
    buf = bytearray()
    for (_, f), v in zip(d.fields, values):
        buf += np.asarray(v, dtype=f.dtype).tobytes()
    return np.frombuffer(bytes(buf), dtype=d.dtype)[0]


def _from_little_endian(d: DataType, raw: bytes) -> Any:
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(1, -1).copy()
    if not np.little_endian:  # pragma: no cover - big-endian hosts
        swap_units(rows, byte_order_units(d.dtype))
    return rows.reshape(-1).view(d.dtype)[0]


def _to_little_endian(d: DataType, value: Any) -> bytes:
    rows = np.asarray(value, dtype=d.dtype).reshape(1).view(np.uint8).reshape(1, -1).copy()
    if not np.little_endian:  # pragma: no cover - big-endian hosts
        swap_units(rows, byte_order_units(d.dtype))
    return rows.tobytes()


def parse_struct_fill(d: DataType, value: Any, path: str = "fill_value") -> Any:
    """A struct fill value (JSON object; legacy base64; Python-side also a record,
    tuple or dict of Python values) -> np.void of ``d.dtype`` with exact field bits."""
    if isinstance(value, np.void) and value.dtype == d.dtype:
        return value
    if isinstance(value, dict):
        names = [n for n, _ in d.fields]
        for k in value:
            if k not in names:
                raise _err(f"{path}.{k}", f"no member (not a field of the struct; fields: {names})", value[k])
        values = []
        for n, f in d.fields:
            if n not in value:
                raise _err(f"{path}.{n}", f"a fill value for field {n!r} (every field needs one)", MISSING)
            values.append(f.parse_fill_value(value[n], f"{path}.{n}"))
        return _pack(d, values)
    if type(value) is str and d.name == "structured":
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raw = b""
        if len(raw) != d.itemsize:
            raise _err(path, f"an object of field fill values or base64 text of {d.itemsize} bytes", value)
        return _from_little_endian(d, raw)
    if isinstance(value, np.void) and value.dtype.names is not None:  # a record of another layout
        value = tuple(value[n] for n in value.dtype.names)
    if isinstance(value, tuple) and len(value) == len(d.fields):  # Python-side records
        return _pack(d, [f.parse_fill_value(v, f"{path}.{n}") for (n, f), v in zip(d.fields, value)])
    raise _err(path, "an object mapping each field name to its fill value", value)


def struct_fill_to_json(d: DataType, value: Any) -> Any:
    v = parse_struct_fill(d, value)
    if d.name == "structured":  # legacy readers (zarr-python 3.0 - 3.3) read base64 only
        return base64.b64encode(_to_little_endian(d, v)).decode("ascii")
    return {n: f.fill_value_to_json(v[n]) for n, f in d.fields}


def default_struct_fill(d: DataType) -> Any:
    """Each field's default fill value (zero; NaT for times)."""
    return _pack(d, [f.default_fill_value() for _, f in d.fields])
