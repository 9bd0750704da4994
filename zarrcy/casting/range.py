"""The representable range of a chain: the source values that encode without clamping,
wrapping or failing -- what one tunes ``scale`` / ``offset`` against.

Every stage is monotone in its input (``scale_offset``: one IEEE subtraction and one
multiplication by a constant, each rounded monotonically, or exact integer arithmetic;
``cast_value``: rounding), so the values that pass form one interval of the source type.
Its edges are found exactly by searching the ordered source values (floats by their bit
patterns, integers by value) with the chain's own kernels as the test, 63 candidates per
step -- about a dozen vectorised steps for a 64-bit type.  ``scalar_map`` is left out: it
is about the numbers, not about the mapped sentinels.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from zarrcy.codecs.cast_value import ST_EXACT, ST_ROUNDED, CastValueCodec, Format, format_of_dtype, prepare_cast
from zarrcy.codecs.scale_offset import (
    ScaleOffsetCodec,
    parse_offset_scale,
    scale_offset_decode_array,
    scale_offset_encode_array,
)
from zarrcy.casting.report import parse_codecs
from zarrcy.errors import CastError

__all__ = ["representable_range", "so_classify"]


def so_classify(x: np.ndarray, codec: ScaleOffsetCodec, direction: str) -> tuple[np.ndarray, np.ndarray]:
    """(result, failed mask) of a scale_offset stage, element-wise (exact, no early stop).
    Integer types: exact integer arithmetic in Python, per element (a rare chain: the
    one-pass kernel takes float sources); floats: the kernel, split at failures."""
    fmt = format_of_dtype(x.dtype)
    o, s = parse_offset_scale(codec.offset, codec.scale, fmt, "scale_offset.configuration")
    flat = np.ascontiguousarray(x).reshape(-1)
    if fmt.is_int:
        xi = flat.astype(object)
        oi, si = int(o.item()), int(s.item())
        if direction == "encode":
            t1 = xi - oi
            t2 = t1 * si
            steps = [t1, t2]
            bad = np.zeros(flat.shape, bool)
        else:
            bad = np.array([v % si != 0 for v in xi.tolist()], dtype=bool)
            t1 = np.array([v // si if v % si == 0 else 0 for v in xi.tolist()], dtype=object)
            t2 = t1 + oi
            steps = [t1, t2]
        for t in steps:
            bad |= np.array([not (fmt.lo <= int(v) <= fmt.hi) for v in t.tolist()], dtype=bool)
        res = np.array([int(v) if not b else 0 for v, b in zip(t2.tolist(), bad.tolist())], dtype=object)
        return res.astype(np.int64 if fmt.kind == 0 else np.uint64).astype(fmt.dtype).reshape(x.shape), bad.reshape(x.shape)
    out = np.zeros(flat.shape, dtype=fmt.dtype)
    bad = np.zeros(flat.shape, dtype=bool)
    start = 0
    fn = scale_offset_encode_array if direction == "encode" else scale_offset_decode_array
    while start < flat.size:
        try:
            out[start:] = fn(flat[start:], codec.offset, codec.scale)
            break
        except CastError as e:
            idx = start + int(e.index if isinstance(e.index, int) else 0)
            out[start:idx] = fn(flat[start:idx], codec.offset, codec.scale) if idx > start else out[start:idx]
            bad[idx] = True
            start = idx + 1
    return out.reshape(x.shape), bad.reshape(x.shape)


class _Order:
    """The values of a source format as consecutive integers (keys)."""

    def __init__(self, fmt: Format) -> None:
        self.fmt = fmt
        self.dtype = np.dtype(fmt.dtype)
        if fmt.is_int:
            self.lo, self.hi = int(fmt.lo), int(fmt.hi)
        else:
            self.bits = 8 * self.dtype.itemsize
            self.ubits = np.dtype(f"uint{self.bits}")
            top = self.key_of(np.array(float(fmt.max_finite), dtype=np.float64).astype(self.dtype))
            self.lo, self.hi = -top - 1, top

    def key_of(self, v: np.ndarray) -> int:
        if self.fmt.is_int:
            return int(v.item())
        b = int(np.asarray(v, dtype=self.dtype).reshape(1).view(self.ubits)[0])
        sign = 1 << (self.bits - 1)
        return b if b < sign else -(b & (sign - 1)) - 1

    def values(self, keys: list[int]) -> np.ndarray:
        if self.fmt.is_int:
            return np.array(keys, dtype=object).astype(self.dtype)
        sign = 1 << (self.bits - 1)
        bits = [k if k >= 0 else sign | (-k - 1) for k in keys]
        return np.array(bits, dtype=object).astype(self.ubits).view(self.dtype)


def _passes(values: np.ndarray, chain: list[Any]) -> np.ndarray:
    """Which values encode through the chain without clamping, wrapping or failing
    (scalar_map left out)."""
    ok = np.ones(values.shape, dtype=bool)
    cur = values
    for codec in chain:
        if isinstance(codec, ScaleOffsetCodec):
            cur, bad = so_classify(cur, codec, "encode")
            ok &= ~bad
        else:
            prep = prepare_cast(cur.dtype, codec.data_type, codec.rounding, codec.out_of_range, None)
            cur, st = prep.classify(cur)
            ok &= (st == ST_EXACT) | (st == ST_ROUNDED)
    return ok


def _edge(order: _Order, chain: list[Any], inside: int, limit: int) -> int:
    """The last key from ``inside`` (passes) towards ``limit`` that passes."""
    if _passes(order.values([limit]), chain)[0]:
        return limit
    a, b = inside, limit  # a passes, b does not
    while abs(b - a) > 1:
        pts = sorted({a + int((b - a) * i // 64) for i in range(1, 64)} - {a, b}, reverse=b < a)
        if not pts:
            pts = [a + (1 if b > a else -1)]
        res = _passes(order.values(pts), chain)
        bad = np.flatnonzero(~res)
        if bad.size == 0:
            a = pts[-1]
        else:
            f = int(bad[0])
            if f:
                a = pts[f - 1]
            b = pts[f]
    return a


def representable_range(dtype: Any, codecs: Any) -> tuple[Any, Any] | None:
    """``(lowest, highest)`` source values of ``dtype`` that ``codecs`` (a scale_offset /
    cast_value chain: JSON, dicts or codec objects) encode without clamping, wrapping or
    failing; None if no value does."""
    chain = parse_codecs(codecs)
    key = (np.dtype(dtype).newbyteorder("=").str,
           tuple(json.dumps(c.to_dict(), sort_keys=True, default=str) for c in chain))
    if key not in _CACHE:  # a pure function of the key: a race computes it twice, harmlessly
        if len(_CACHE) >= 256:
            _CACHE.clear()
        _CACHE[key] = _range(np.dtype(key[0]), chain)
    return _CACHE[key]


# (source dtype, codecs JSON) -> range: convert asks once per region
_CACHE: dict[tuple[Any, ...], tuple[Any, Any] | None] = {}


def _range(dtype: np.dtype, stages: list[Any]) -> tuple[Any, Any] | None:
    fmt = format_of_dtype(dtype)
    order = _Order(fmt)
    starts = [0]
    if stages and isinstance(stages[0], ScaleOffsetCodec):
        _, o, _ = stages[0].parsed(np.dtype(fmt.dtype))
        starts.insert(0, order.key_of(np.asarray(o, dtype=fmt.dtype)))
    inside = None
    for k in starts:
        if _passes(order.values([k]), stages)[0]:
            inside = k
            break
    if inside is None:  # look for any value that passes, over the whole type
        span = order.hi - order.lo
        pts = sorted({order.lo + span * i // 4096 for i in range(4097)})
        hit = np.flatnonzero(_passes(order.values(pts), stages))
        if hit.size == 0:
            return None
        inside = pts[int(hit[0])]
    lo = _edge(order, stages, inside, order.lo)
    hi = _edge(order, stages, inside, order.hi)
    v = order.values([lo, hi])
    if fmt.is_int or fmt.natural:
        return v[0].item(), v[1].item()
    return float(v[0].astype(np.float64)), float(v[1].astype(np.float64))
