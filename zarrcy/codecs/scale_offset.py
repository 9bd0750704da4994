"""The ``scale_offset`` codec (spec: ../shared/specs/ext-codec-scale_offset.md).

Configuration keys (both optional; the whole ``configuration`` may be omitted):
``offset`` (subtracted on encode) and ``scale`` (multiplied on encode), each in the
fill-value JSON encoding of the array's data type.  Encode ``(x - offset) * scale``,
decode ``x / scale + offset``, in the array type's own arithmetic (see
``zarrcy/_kernels/_scale_offset.pyx``).

Also here: the fused quantize codec (``scale_offset`` immediately followed by
``cast_value`` runs as one pass, see :meth:`ScaleOffsetCodec.fuse_with` and :func:`fuse`)
and the read-only alias ``numcodecs.fixedscaleoffset`` -> ``[scale_offset,
cast_value{out_of_range: "wrap"}]`` (:func:`expand_fixedscaleoffset`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Self, Sequence

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, Codec
from zarrcy.codecs.cast_value import (
    CastValueCodec,
    Format,
    format_of_dtype,
    get_format,
    parse_scalar,
    prepare_cast,
)
from zarrcy.errors import CastError, MetadataError, OutOfRangeError, expected
from zarrcy.metadata._parse import config_dict

__all__ = [
    "ScaleOffsetCodec",
    "ScaleOffsetCastCodec",
    "fuse",
    "expand_fixedscaleoffset",
    "parse_offset_scale",
    "scale_offset_encode_array",
    "scale_offset_decode_array",
]


def parse_offset_scale(offset: Any, scale: Any, data_type: Any, path: str) -> tuple[np.ndarray, np.ndarray]:
    """``offset``/``scale`` parsed with the fill-value encoding of the array type (0-d arrays).

    Both must be finite; ``scale`` must be non-zero; for integer types both are in-range integers.
    """
    fmt = get_format(data_type, path)
    o = parse_scalar(0 if offset is None else offset, fmt, f"{path}.offset")
    s = parse_scalar(1 if scale is None else scale, fmt, f"{path}.scale")
    for name, v, raw in (("offset", o, offset), ("scale", s, scale)):
        if not fmt.is_int and not math.isfinite(float(v.astype(np.float64))):
            raise MetadataError(expected(f"{path}.{name}", "a finite number", raw), f"{path}.{name}")
    if float(s.astype(np.float64)) == 0:
        raise MetadataError(expected(f"{path}.scale", "a non-zero number", scale), f"{path}.scale")
    return o, s


def _raise_so(direction: str, fmt: Format, a: np.ndarray, flat: int, o: Any, s: Any) -> None:
    index: int | tuple[int, ...] = flat
    if a.ndim > 1:
        index = tuple(int(i) for i in np.unravel_index(flat, a.shape))
    elem = a.reshape(-1)[flat]
    with np.errstate(invalid="ignore"):
        value = elem.item() if fmt.natural else float(np.asarray(elem).astype(np.float64))
    what = "(x - offset) * scale" if direction == "encode" else "x / scale + offset"
    if fmt.is_int and direction == "decode" and int(value) % int(s) != 0:
        raise CastError(f"scale_offset decode ({fmt.name}): element {index} ({value!r}) is not divisible by "
                        f"scale {int(s)} (non-zero remainder)", index=index, value=value)
    raise OutOfRangeError(f"scale_offset {direction} ({fmt.name}): {what} for element {index} ({value!r}) with "
                          f"offset={o.item()!r}, scale={s.item()!r} is not representable: outside the range of dtype {fmt.name}",
                          index=index, value=value)


_NATIVE_SO = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64"})


def _narrow_op(fmt: Format, t: np.ndarray) -> tuple[np.ndarray, int]:
    """Round a float64 intermediate to a narrow float type (nearest-even); (result, bad index)."""
    prep = prepare_cast(np.float64, fmt, "nearest-even", None, None)
    res, st = prep.classify(t)
    bad = np.flatnonzero(st.reshape(-1) >= 5)
    return res, (int(bad[0]) if bad.size else -1)


def _so_apply(values: np.ndarray, fmt: Format, o: np.ndarray, s: np.ndarray, direction: str) -> np.ndarray:
    from zarrcy._kernels._scale_offset import decode_into, encode_into

    a = np.ascontiguousarray(np.asarray(values).astype(fmt.dtype, copy=False))
    if fmt.name in _NATIVE_SO:
        out = np.empty_like(a)
        fn = encode_into if direction == "encode" else decode_into
        r = fn(a.reshape(-1), out.reshape(-1), o.item(), s.item())
        if r >= 0:
            _raise_so(direction, fmt, a, int(r), o, s)
        return out
    if fmt.is_int:   # int4/uint4/int2/uint2: exact in int64, range checked per step
        x: np.ndarray = a.astype(np.int64).reshape(-1)
        oi, si = int(o.astype(np.int64)), int(s.astype(np.int64))
        steps = []
        bad = np.zeros(x.shape, dtype=bool)
        if direction == "encode":
            t1 = x - oi
            steps.append(t1)
            t2 = t1 * si
            steps.append(t2)
        else:
            bad |= x % si != 0
            t1 = x // si
            steps.append(t1)
            t2 = t1 + oi
            steps.append(t2)
        for t in steps:
            bad |= (t < fmt.lo) | (t > fmt.hi)
        idx = np.flatnonzero(bad)
        if idx.size:
            _raise_so(direction, fmt, a, int(idx[0]), o, s)
        return t2.astype(fmt.dtype).reshape(a.shape)
    # narrow floats: each IEEE operation exactly rounded to the type (float64 + one rounding
    # is innocuous double rounding here: 53 >= 2p + 2 for every narrow format)
    with np.errstate(invalid="ignore"):   # signalling NaNs convert quietly
        x = a.astype(np.float64).reshape(-1)
    fin = np.isfinite(x)
    of, sf = float(o.astype(np.float64)), float(s.astype(np.float64))
    with np.errstate(all="ignore"):
        if direction == "encode":
            t1, b1 = _narrow_op(fmt, x - of)
            t2, b2 = _narrow_op(fmt, t1.astype(np.float64) * sf)
        else:
            t1, b1 = _narrow_op(fmt, x / sf)
            t2, b2 = _narrow_op(fmt, t1.astype(np.float64) + of)
    bad = np.zeros(x.shape, dtype=bool)
    if b1 >= 0 or b2 >= 0:
        bad[:] = True  # fall back to an explicit per-element check below
    with np.errstate(invalid="ignore"):
        f2 = np.isfinite(t2.astype(np.float64)) if fmt.has_inf else np.ones(x.shape, bool)
        f1 = np.isfinite(t1.astype(np.float64)) if fmt.has_inf else np.ones(x.shape, bool)
    fail = fin & (~f1 | ~f2)
    if b1 >= 0 or b2 >= 0:
        for b in (b1, b2):
            if b >= 0:
                fail[b] = True
    idx = np.flatnonzero(fail)
    if idx.size:
        _raise_so(direction, fmt, a, int(idx[0]), o, s)
    return t2.reshape(a.shape)


def scale_offset_encode_array(values: np.ndarray, offset: Any = None, scale: Any = None) -> np.ndarray:
    values = np.asarray(values)
    fmt = format_of_dtype(values.dtype, "values.dtype")
    o, s = parse_offset_scale(offset, scale, fmt, "scale_offset")
    return _so_apply(values, fmt, o, s, "encode")


def scale_offset_decode_array(values: np.ndarray, offset: Any = None, scale: Any = None) -> np.ndarray:
    values = np.asarray(values)
    fmt = format_of_dtype(values.dtype, "values.dtype")
    o, s = parse_offset_scale(offset, scale, fmt, "scale_offset")
    return _so_apply(values, fmt, o, s, "decode")


def _check_json_scalar(v: Any, path: str) -> None:
    if type(v) is bool or not isinstance(v, (int, float, str, Decimal)):
        raise MetadataError(expected(path, "a JSON number or string", v), path)
    if not isinstance(v, str) and v == 0 and path.endswith(".scale"):
        raise MetadataError(expected(path, "a non-zero number", v), path)


@dataclass(frozen=True)
class ScaleOffsetCodec(ArrayArrayCodec):
    """``(x - offset) * scale`` on encode; see the module docstring."""

    name: ClassVar[str] = "scale_offset"
    elementwise: ClassVar[bool] = True

    offset: Any = None
    scale: Any = None
    _cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False, hash=False)

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        configuration = config_dict(configuration, path, ("offset", "scale"))
        cpath = f"{path}.configuration"
        for k in ("offset", "scale"):
            if k in configuration:
                _check_json_scalar(configuration[k], f"{cpath}.{k}")
        return cls(configuration.get("offset"), configuration.get("scale"))

    def to_dict(self) -> dict[str, Any]:
        conf = {}
        if self.offset is not None:
            conf["offset"] = self.offset
        if self.scale is not None:
            conf["scale"] = self.scale
        if not conf:
            return {"name": self.name}
        return {"name": self.name, "configuration": conf}

    def parsed(self, dtype: np.dtype, path: str = "scale_offset") -> tuple[Format, np.ndarray, np.ndarray]:
        key = np.dtype(dtype)
        hit = self._cache.get(key)
        if hit is None:
            fmt = format_of_dtype(key, f"{path} (array data type)")
            o, s = parse_offset_scale(self.offset, self.scale, fmt, f"{path}.configuration")
            hit = (fmt, o, s)
            self._cache[key] = hit
        return hit

    def validate(self, spec: ArraySpec, path: str) -> None:
        self.parsed(spec.dtype, path)

    def resolve(self, spec: ArraySpec, path: str = "scale_offset") -> ArraySpec:
        fmt, o, s = self.parsed(spec.dtype, path)
        fill = np.asarray(spec.fill_value, dtype=spec.dtype).reshape(1)
        try:
            efill = _so_apply(fill, fmt, o, s, "encode")
        except CastError as e:
            raise MetadataError(f"{path}: the fill value cannot be encoded ({e})", path) from None
        return ArraySpec(spec.shape, spec.dtype, efill.reshape(())[()], spec.data_type)

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        fmt, o, s = self.parsed(spec.dtype)
        return _so_apply(chunk, fmt, o, s, "encode")

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        fmt, o, s = self.parsed(spec.dtype)
        return _so_apply(chunk, fmt, o, s, "decode")

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size

    def fuse_with(self, next_codec: Codec) -> ArrayArrayCodec | None:
        """A single-pass codec for ``self`` followed by ``next_codec`` when that is a cast_value."""
        if isinstance(next_codec, CastValueCodec):
            return ScaleOffsetCastCodec(self, next_codec)
        return None


@dataclass(frozen=True)
class ScaleOffsetCastCodec(ArrayArrayCodec):
    """``scale_offset`` then ``cast_value`` as one pass (float32/float64 arrays; others run in turn).

    Bit-identical to running the two codecs one after the other.  Not a metadata codec:
    ``to_dict`` gives both codecs' JSON (``unfused()`` gives the objects).
    """

    elementwise: ClassVar[bool] = True

    name: ClassVar[str] = "scale_offset+cast_value"

    scale_offset: ScaleOffsetCodec
    cast_value: CastValueCodec

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        raise MetadataError(f"{path}: the fused scale_offset+cast_value codec has no JSON form", path)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "codecs": [self.scale_offset.to_dict(), self.cast_value.to_dict()]}

    def unfused(self) -> tuple[ScaleOffsetCodec, CastValueCodec]:
        return self.scale_offset, self.cast_value

    def validate(self, spec: ArraySpec, path: str) -> None:
        self.scale_offset.validate(spec, path)
        self.cast_value.validate(self.scale_offset.resolve(spec, path), path)

    def resolve(self, spec: ArraySpec, path: str = "scale_offset+cast_value") -> ArraySpec:
        return self.cast_value.resolve(self.scale_offset.resolve(spec, path), path)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return self.cast_value.compute_encoded_size(input_size, spec)

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        from zarrcy._kernels._cast_scale_offset import scale_offset_cast_into

        fmt, o, s = self.scale_offset.parsed(spec.dtype)
        if fmt.name not in ("float32", "float64"):
            return self.cast_value.encode(self.scale_offset.encode(chunk, spec), spec)
        enc, _ = self.cast_value.prepared(spec.dtype)
        a = np.ascontiguousarray(np.asarray(chunk).astype(fmt.dtype, copy=False))
        out = np.empty(a.shape, dtype=enc.dst.dtype)
        y = out if enc.dst.natural else out.view(enc.dst.storage)
        r, _stage = scale_offset_cast_into(a.reshape(-1), y.reshape(-1), enc.dst.kernel_format(), enc.rounding,
                                           enc.out_of_range, float(o), float(s), enc.keys.reshape(-1),
                                           enc.values.reshape(-1))
        if r >= 0:
            # the exceptional path: run the codecs in turn so the error is exactly theirs
            self.cast_value.encode(self.scale_offset.encode(a, spec), spec)
            raise AssertionError("fused scale_offset+cast_value failed where the sequential path did not")
        return out

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        fmt, _, _ = self.scale_offset.parsed(spec.dtype)
        if fmt.name not in ("float32", "float64"):
            return self.scale_offset.decode(self.cast_value.decode(chunk, spec), spec)
        _, dec = self.cast_value.prepared(spec.dtype)
        a = np.ascontiguousarray(np.asarray(chunk).astype(dec.src.dtype, copy=False))
        out = np.empty(a.shape, dtype=fmt.dtype)
        self._decode_kernel(a, out, spec)
        return out

    def decode_into(self, chunk: np.ndarray, out: np.ndarray, spec: ArraySpec) -> bool:
        """Decode straight into ``out`` (C-contiguous, writable, the decoded dtype and the
        chunk's shape); False (nothing written) when that does not apply: call ``decode``."""
        fmt, _, _ = self.scale_offset.parsed(spec.dtype)
        if (fmt.name not in ("float32", "float64") or out.dtype != fmt.dtype or not out.flags.c_contiguous
                or not out.flags.writeable or tuple(np.shape(chunk)) != tuple(out.shape)):
            return False
        _, dec = self.cast_value.prepared(spec.dtype)
        a = np.ascontiguousarray(np.asarray(chunk).astype(dec.src.dtype, copy=False))
        self._decode_kernel(a, out, spec)
        return True

    def _decode_kernel(self, a: np.ndarray, out: np.ndarray, spec: ArraySpec) -> None:
        from zarrcy._kernels._cast_scale_offset import cast_scale_offset_into

        fmt, o, s = self.scale_offset.parsed(spec.dtype)
        _, dec = self.cast_value.prepared(spec.dtype)
        x = a if dec.src.natural else a.astype(dec.src.source)
        r, _stage = cast_scale_offset_into(x.reshape(-1), out.reshape(-1), dec.dst.kernel_format(), dec.rounding,
                                           dec.out_of_range, float(o), float(s), dec.keys.reshape(-1),
                                           dec.values.reshape(-1))
        if r >= 0:
            self.scale_offset.decode(self.cast_value.decode(a, spec), spec)
            raise AssertionError("fused cast_value+scale_offset decode failed where the sequential path did not")


def fuse(codecs: Sequence[Codec]) -> list[Codec]:
    """Replace every ``scale_offset`` immediately followed by ``cast_value`` with one fused codec."""
    out: list[Codec] = []
    i = 0
    while i < len(codecs):
        c = codecs[i]
        if isinstance(c, ScaleOffsetCodec) and i + 1 < len(codecs):
            fused = c.fuse_with(codecs[i + 1])
            if fused is not None:
                out.append(fused)
                i += 2
                continue
        out.append(c)
        i += 1
    return out


def _v2_dtype_name(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise MetadataError(expected(path, "a Zarr v2 data type string", value), path)
    try:
        dt = np.dtype(value)
    except TypeError:
        raise MetadataError(expected(path, "a Zarr v2 data type", value), path) from None
    if dt.byteorder == ">":
        dt = dt.newbyteorder("=")
    return format_of_dtype(dt, path).name


def expand_fixedscaleoffset(configuration: dict[str, Any] | None, path: str) -> tuple[ScaleOffsetCodec, CastValueCodec]:
    """Read ``numcodecs.fixedscaleoffset`` as ``[scale_offset, cast_value]`` (ext-codec-scale_offset.md
    "Conversion to scale_offset"): integer ``astype`` gets ``out_of_range: "wrap"``."""
    keys = ("offset", "scale", "astype", "dtype")
    configuration = config_dict(configuration, path, keys, required=keys)
    cpath = f"{path}.configuration"
    for k in ("offset", "scale"):
        v = configuration.get(k)
        if type(v) is bool or not isinstance(v, (int, float, Decimal)):
            raise MetadataError(expected(f"{cpath}.{k}", "a JSON number", v), f"{cpath}.{k}")
    astype = _v2_dtype_name(configuration.get("astype"), f"{cpath}.astype")
    if "dtype" in configuration:
        _v2_dtype_name(configuration["dtype"], f"{cpath}.dtype")
    so = ScaleOffsetCodec(configuration["offset"], configuration["scale"])
    fmt = get_format(astype)
    cv = CastValueCodec(astype, "nearest-even", "wrap" if fmt.is_int else None)
    return so, cv


def fuse_pairs(codecs: Sequence[Any], specs: Sequence[ArraySpec]) -> tuple[tuple[Any, ArraySpec], ...]:
    """The pipeline hook: ``(codec, decoded spec)`` pairs of the array->array chain with every
    ``scale_offset`` immediately followed by ``cast_value`` replaced by one fused codec
    (whose spec is the scale_offset's input spec).  Call once at resolve time."""
    out: list[tuple[Any, ArraySpec]] = []
    i = 0
    while i < len(codecs):
        c = codecs[i]
        if isinstance(c, ScaleOffsetCodec) and i + 1 < len(codecs):
            fused = c.fuse_with(codecs[i + 1])
            if fused is not None:
                out.append((fused, specs[i]))
                i += 2
                continue
        out.append((c, specs[i]))
        i += 1
    return tuple(out)


@dataclass(frozen=True)
class FixedScaleOffsetCodec(ScaleOffsetCastCodec):
    """Read-only alias ``numcodecs.fixedscaleoffset`` = ``[scale_offset, cast_value]`` (fused).

    ``to_dict`` writes the original ``numcodecs.fixedscaleoffset`` object back unchanged.
    """

    name: ClassVar[str] = "numcodecs.fixedscaleoffset"

    raw: Any = None

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        so, cv = expand_fixedscaleoffset(configuration, path)
        return cls(so, cv, _Frozen(configuration))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": dict(self.raw.value)}


class _Frozen:
    """Holds a JSON object inside a frozen (hashable) dataclass."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Frozen) and other.value == self.value

    def __hash__(self) -> int:
        return hash(json_key(self.value))


def json_key(v: Any) -> str:
    import json

    return json.dumps(v, sort_keys=True, default=str)
