"""The CF mapping of a conversion: what a source array's CF attributes
(``_FillValue``, ``missing_value``, ``scale_factor``/``add_offset``) become in the
destination, so that ``xarray.open_dataset(out)`` reads what it read from the source.

* **Fill values, Zarr v2/v1 -> v3.** xarray's zarr engine takes a v2 array's
  ``fill_value`` as ``_FillValue`` (its ``use_zarr_fill_value_as_mask`` default for
  v2) but reads a v3 array's ``_FillValue`` from the *attribute* only.  A v2 array that
  xarray reads (it has ``_ARRAY_DIMENSIONS``) and whose ``fill_value`` is not null gets
  the ``_FillValue`` attribute in xarray's v3 encoding (floats as base64 of a
  little-endian float64) -- otherwise every missing value reads back as the number
  (-9999) instead of NaN.  :func:`v3_attributes`.
* **Quantizing real CF data.** A numeric fill value (and each ``missing_value``)
  gets a code of its own in ``cast_value``'s ``scalar_map`` -- ``--quantize ...,fill=CODE``
  or, by default, the largest (then smallest) code of the target type no other sentinel
  uses -- keyed by the value in scaled units (what ``scale_offset`` makes of it), after
  checking that the code decodes back to exactly that value.  NaN keeps its ``nan=``
  code.  Data values that encode to a sentinel code would read back as the sentinel
  (masked by xarray): they are counted per region and refused unless
  ``collisions=allow``.  :class:`QuantizeMapping`.
* **Bad CF attributes** (``scale_factor`` 0 / NaN / not a number, ``_FillValue`` or
  ``missing_value`` that the array's data type cannot hold): :func:`check_attributes`
  raises :class:`CFError` naming the attribute and value.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from zarrcy.errors import CastError, MetadataError, ZarrcyError

__all__ = ["CFError", "QuantizeMapping", "Sentinel", "check_attributes", "quantize_mapping", "v2_attributes",
           "v3_attributes", "KEEP_FILL"]


class CFError(ZarrcyError, ValueError):
    """A CF attribute of the source that the conversion cannot carry over faithfully."""


def _numbers(v: Any) -> list[Any] | None:
    """An attribute value as a list of scalars (a list attribute, or one value)."""
    if isinstance(v, (list, tuple)):
        return list(v)
    return [v]


def _as_number(v: Any) -> float | int | None:
    """A JSON attribute value as a number (``"NaN"``/``"Infinity"`` spelled as strings
    count), else None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float, np.integer, np.floating)):
        return v.item() if isinstance(v, np.generic) else v
    if v in ("NaN", "Infinity", "-Infinity"):
        return float(v.replace("inity", "")) if v != "NaN" else math.nan
    return None


def check_attributes(attrs: dict[str, Any], dtype: np.dtype) -> None:
    """CFError for CF attributes that would make the data mean something else:
    ``scale_factor`` 0, NaN or infinite (every value decodes to ``add_offset``, or NaN),
    ``add_offset`` not finite, either one not a number; a ``missing_value`` the data
    type cannot hold exactly (as netCDF4/xarray compare it against stored values)."""
    for key in ("scale_factor", "add_offset"):
        if key not in attrs:
            continue
        vals = _numbers(attrs[key]) or []
        nums = [_as_number(x) for x in vals]
        if len(nums) != 1 or nums[0] is None:
            raise CFError(f"{key} {attrs[key]!r}: expected one number (CF 8.1 packed data)")
        x = float(nums[0])
        if not math.isfinite(x) or (key == "scale_factor" and x == 0):
            raise CFError(f"{key} {attrs[key]!r}: expected a finite{' non-zero' if key == 'scale_factor' else ''} "
                          "number (CF 8.1 packed data)")
    if "missing_value" in attrs and dtype.kind in "iuf":
        for x in _numbers(attrs["missing_value"]) or []:
            n = _as_number(x)
            if n is None or not _fits(n, dtype):
                raise CFError(f"missing_value {attrs['missing_value']!r}: expected numbers the data type {dtype} holds "
                              "exactly")


def _fits(v: float | int, dtype: np.dtype) -> bool:
    if dtype.kind == "f":
        if isinstance(v, float) and not math.isfinite(v):
            return True
        return bool(np.asarray(v, dtype=dtype).astype(np.float64) == v) if abs(v) < 1e308 else False
    if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
        return False
    info = np.iinfo(dtype)
    return info.min <= int(v) <= info.max


def v3_attributes(attrs: dict[str, Any], dtype: np.dtype, fill_value: Any, fill_is_null: bool,
                  xarray_node: bool) -> tuple[dict[str, Any], str | None]:
    """The destination attributes of a Zarr v2/v1 array converted to v3, and a note
    when they gained something: a v2 array that xarray reads (``xarray_node``: it names
    its dimensions in ``_ARRAY_DIMENSIONS``, which become the v3 ``dimension_names``
    and leave the attributes) and whose fill value is not null masks that value
    (``_FillValue``): in v3 the mask needs the ``_FillValue`` attribute."""
    from zarrcy.metadata.xarray_attrs import DIMENSION_KEY, encode_fill_attr

    out = dict(attrs)
    if xarray_node:  # the dimension names are the v3 document's dimension_names now
        out.pop(DIMENSION_KEY, None)
    if not xarray_node or fill_is_null or "_FillValue" in out or dtype.kind not in "biufcSU":
        return out, None
    out["_FillValue"] = encode_fill_attr(fill_value, dtype)
    return out, "_FillValue attribute added from the v2 fill_value (xarray masks a v2 array's fill_value; a v3 " \
                "array's only through this attribute)"


#: :func:`v2_attributes`: the source's fill value stays
KEEP_FILL: Any = object()


def v2_attributes(attrs: dict[str, Any], dimension_names: list[Any] | None,
                  dtype: np.dtype) -> tuple[dict[str, Any], Any]:
    """The destination attributes of a v3 (or HDF5) array written as Zarr v2, and its v2
    fill value (``KEEP_FILL``: the source's).  An array whose dimensions are all named (one
    xarray reads) gets them as ``_ARRAY_DIMENSIONS``; xarray takes a v2 ``fill_value`` as
    ``_FillValue``, so the fill value is the source's ``_FillValue`` attribute (decoded;
    the attribute is dropped) or, without one, null (None: nothing masked)."""
    from zarrcy.metadata.xarray_attrs import DIMENSION_KEY, decode_fill_attr

    if dimension_names is None or any(not isinstance(d, str) for d in dimension_names):
        return dict(attrs), KEEP_FILL  # not an array xarray reads: the fill value as it is
    out = {**attrs, DIMENSION_KEY: list(dimension_names)}
    raw = out.pop("_FillValue", None)
    return out, None if raw is None else decode_fill_attr(raw, dtype)


@dataclass
class Sentinel:
    """One value of the source that ``--quantize`` stores as a code of its own."""

    what: str            # "NaN", "_FillValue", "missing_value"
    value: float         # the source value (NaN for "NaN")
    code: int            # the stored code
    chosen: bool         # chosen automatically (not given with nan=/fill=)

    def to_json(self) -> dict[str, Any]:
        v = self.value
        return {"what": self.what, "value": v if math.isfinite(v) else str(v), "code": self.code,
                "chosen": self.chosen}


@dataclass
class QuantizeMapping:
    """The ``--quantize`` chain of one array with its sentinels: ``chain`` is written;
    ``check_chain`` (the same, but every numeric sentinel code decodes to NaN) is what
    each region is checked with, so that a data value encoding to a sentinel code shows
    as a round-trip mismatch (see :meth:`collisions`)."""

    chain: list[dict[str, Any]]
    check_chain: list[dict[str, Any]]
    sentinels: list[Sentinel] = field(default_factory=list)
    allow_collisions: bool = False
    notes: list[str] = field(default_factory=list)
    #: the destination's fill value when the source's has no form in the chain (NaN), else None
    fill_override: float | None = None

    @property
    def numeric_values(self) -> list[float]:
        return [s.value for s in self.sentinels if s.what != "NaN"]

    def legit_mapped(self, values: np.ndarray) -> int:
        """How many of ``values`` are numeric sentinel values (they decode to NaN in
        ``check_chain``: mismatches that are no collision)."""
        nums = self.numeric_values
        if not nums:
            return 0
        return int(np.count_nonzero(np.isin(values, np.asarray(nums, dtype=values.dtype))))

    def collisions(self, values: np.ndarray, mismatches: int) -> int:
        """Data values of ``values`` that would read back as a sentinel, given the
        region's round-trip mismatches under ``check_chain``."""
        return max(0, int(mismatches) - self.legit_mapped(values))

    def first_collision(self, values: np.ndarray) -> tuple[tuple[int, ...], Any, int] | None:
        """(index, value, code) of the first data value encoding to a sentinel code."""
        from zarrcy.casting import cast_value

        so, cv = self.chain[0]["configuration"], self.chain[1]["configuration"]
        x = np.asarray(values)
        flat = x.reshape(-1)
        t = flat.dtype.type
        with np.errstate(all="ignore"):  # the codec's arithmetic, in the array's type
            y = (flat - t(_as_number(so.get("offset", 0)) or 0)) * t(_as_number(so.get("scale", 1)) or 1)
        ok = np.isfinite(y)
        codes = np.zeros(flat.shape, dtype=np.int64)
        codes[ok] = np.asarray(cast_value(y[ok], cv["data_type"], cv.get("rounding", "nearest-even"),
                                          "clamp")).astype(np.int64)
        own = np.isnan(flat) if flat.dtype.kind == "f" else np.zeros(flat.shape, bool)
        nums = self.numeric_values
        if nums:
            own |= np.isin(flat, np.asarray(nums, dtype=flat.dtype))
        hit = ok & ~own & np.isin(codes, [s.code for s in self.sentinels])
        idx = np.flatnonzero(hit)
        if not idx.size:
            return None
        i = int(idx[0])
        return tuple(int(j) for j in np.unravel_index(i, x.shape)), flat[i].item(), int(codes[i])


def _dtype_of(name: Any) -> np.dtype:
    from zarrcy.metadata.data_type import parse_data_type

    return np.dtype(parse_data_type(name).dtype)


def quantize_mapping(chain: list[dict[str, Any]], dtype: np.dtype, fill_value: Any, attrs: dict[str, Any],
                     opts: dict[str, Any], cf_fill: bool = True) -> QuantizeMapping:
    """The ``--quantize`` chain for one float array whose fill value is ``fill_value``
    (and whose ``missing_value`` attribute lists more sentinels): every numeric
    sentinel mapped to a code of its own (see the module docstring).  ``cf_fill``: the
    fill value marks missing data (a ``_FillValue`` attribute); otherwise it gets a code
    only when the plain chain cannot store it exactly (a Zarr default fill such as 0.0
    that encodes exactly stays an ordinary value).  MetadataError (naming
    ``--quantize.fill``) when a code is outside the target type, taken twice, or does
    not decode back to exactly its value."""
    from zarrcy.metadata.fill_value import fill_value_to_json
    from zarrcy.metadata.data_type import from_numpy

    chain = copy.deepcopy(chain)
    so, cv = chain[0]["configuration"], chain[1]["configuration"]
    target = _dtype_of(cv["data_type"])
    sentinels: list[Sentinel] = []
    smap = cv.get("scalar_map") or {}
    for src, code in smap.get("encode", []):
        if src == "NaN":
            sentinels.append(Sentinel("NaN", math.nan, int(code), False))
    values: list[tuple[str, float]] = []
    fv = float(fill_value) if np.asarray(fill_value).dtype.kind in "iuf" else math.nan
    notes: list[str] = []
    fill_override = None
    if math.isfinite(fv) and (cf_fill or opts.get("fill") is not None):
        values.append(("_FillValue", fv))
    elif math.isfinite(fv) and not _exact(chain, dtype, fv):
        # a fill value that marks nothing (no _FillValue attribute: e.g. HDF5's default
        # 9.97e36) and has no form in the chain: NaN's code stands for it when there is one
        if sentinels:
            fill_override = math.nan
            notes.append(f"--quantize: the fill value {fv:g} (not a _FillValue: it marks no data) has no code in "
                         "the chain: the destination's fill value is NaN (its nan= code)")
        else:
            values.append(("_FillValue", fv))
    mv = attrs.get("missing_value")
    for x in (_numbers(mv) or []) if mv is not None else []:
        n = _as_number(x)
        if n is not None and math.isfinite(float(n)) and all(float(n) != v for _, v in values):
            values.append(("missing_value", float(n)))
    allow = opts.get("collisions") == "allow"
    if not values or target.kind not in "iu":
        return QuantizeMapping(chain, chain, sentinels, allow, notes, fill_override)
    info = np.iinfo(target)
    used = {s.code for s in sentinels}
    dt3 = from_numpy(dtype)
    enc, dec = list(smap.get("encode", [])), list(smap.get("decode", []))
    check_dec = list(dec)
    for i, (what, v) in enumerate(values):
        given = opts.get("fill") if i == 0 else None
        if given is not None:
            code = int(given)
            if not info.min <= code <= info.max:
                raise MetadataError(f"--quantize.fill: expected a code of {target} ({info.min}..{info.max}), "
                                    f"received {code}", "--quantize.fill")
            if code in used:
                raise MetadataError(f"--quantize.fill: expected a code no other sentinel uses, received {code} "
                                    "(taken by nan=)", "--quantize.fill")
        else:
            code = next((c for c in _candidates(info) if c not in used), None)
            if code is None:  # pragma: no cover - a type with fewer than 3 codes
                raise MetadataError(f"--quantize: no free code of {target} for the {what} {v!r}", "--quantize.fill")
        used.add(code)
        key, back_key = _keys(v, dtype, so.get("offset"), so.get("scale"), what)
        kj = fill_value_to_json(dt3, key)
        enc.append([kj, code])
        dec.append([code, fill_value_to_json(dt3, back_key)])
        check_dec.append([code, "NaN"])
        sentinels.append(Sentinel(what, v, code, given is None))
        if given is None:
            notes.append(f"--quantize: the {what} {v:g} is stored as code {code} (chosen automatically: the "
                         f"{'largest' if code > 0 else 'smallest'} {target} code no other sentinel uses; a data value "
                         "encoding to it is refused; choose it with fill=CODE)")
    cv["scalar_map"] = {"encode": enc, "decode": dec}
    check = copy.deepcopy(chain)
    check[1]["configuration"]["scalar_map"] = {"encode": enc, "decode": check_dec}
    return QuantizeMapping(chain, check, sentinels, allow, notes, fill_override)


def _keys(v: float, dtype: np.dtype, offset: Any, scale: Any, what: str) -> tuple[Any, Any]:
    """``(encode key, decode value)`` of a sentinel in cast_value's (scaled) units: the
    encode key is what ``scale_offset`` makes of ``v``; the decode value is the nearest
    value that ``scale_offset`` decodes to exactly ``v`` (``v`` itself needs rounding
    to survive ``x / scale + offset`` when it is large, e.g. -1e20)."""
    from zarrcy.casting import scale_offset_decode, scale_offset_encode

    def dec(y: Any) -> float:
        try:
            return float(np.asarray(scale_offset_decode(np.asarray([y], dtype=dtype), offset, scale)).reshape(-1)[0])
        except CastError:
            return math.nan

    try:
        key = np.asarray(scale_offset_encode(np.asarray([v], dtype=dtype), offset, scale), dtype=dtype).reshape(-1)[0]
    except CastError:
        key = dtype.type(math.inf)
    if np.isfinite(key):
        up = down = key
        for _ in range(64):  # ulps around the encoded value
            for y in (up, down):
                if dec(y) == v:
                    return key, y
            up, down = np.nextafter(up, dtype.type(math.inf)), np.nextafter(down, dtype.type(-math.inf))
    raise MetadataError(
        f"--quantize: the {what} {v!r} does not survive scale_offset (it encodes to {float(key)!r}, and no nearby "
        "value decodes back to it): choose an offset/scale under which it is exact, or leave the array unquantized "
        "(--exclude)", "--quantize")


def _exact(chain: list[dict[str, Any]], dtype: np.dtype, value: float) -> bool:
    """``value`` goes through ``chain`` and back unchanged."""
    from zarrcy.casting import check_cast

    rep = check_cast(np.asarray([value], dtype=dtype), chain)
    return not rep.failing and not rep.round_trip_mismatches and rep.max_abs_error == 0


def _candidates(info: Any) -> list[int]:
    """Codes tried for an automatic sentinel: the largest ones first, then the smallest."""
    return [int(info.max) - k for k in range(4)] + [int(info.min) + k for k in range(4)]

