"""The cast report: what a ``scale_offset`` / ``cast_value`` chain does to given values.

:func:`check_cast` (``zarrcy.check_cast``), :func:`chain_report` / :func:`quantize_with_report`
(``zarrcy convert --quantize``) and ``zarrcy cast-check`` build a :class:`CastReport`.

Every element gets one **class** (exact, rounded, above / below the representable range,
a scale_offset overflow above / below, NaN, +Inf, -Inf, or mapped by ``scalar_map`` -- by
the kind of value mapped) and **flags** (failing, sentinel collision, kind changed on
read-back): a ``uint8`` code per element (``_cast_report.CLASS_NAMES``, ``FLAG_*``).  The
report's **causes** (:data:`CAUSES`) are unions of classes or a flag, each with a count,
the smallest and largest source value and the first index.

Two engines, one report:

* the one-pass kernel ``_cast_report.cast_report_into`` (nogil, per block: encode, class,
  decode, round-trip error) for float32 / float64 values through ``[cast_value]`` or
  ``[scale_offset, cast_value]`` into a target stored as itself (int8..uint64, float32,
  float64) -- what ``--quantize`` and nearly every check use;
* numpy passes, stage by stage, for every other chain (integer sources with
  ``scale_offset`` -- whose exact integer arithmetic runs per element in Python --,
  several casts, float16 / bfloat16 / int4 ... targets).

Both run over blocks of :data:`_REPORT_BLOCK` elements, so their temporaries are bounded;
per-element codes (for :meth:`CastReport.mask`) are kept only on request or for inputs of
at most :data:`MASK_LIMIT` elements; indices are collected up to ``max_indices`` per cause.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from zarrcy._kernels import _cast_report as _k
from zarrcy.codecs.cast_value import CastValueCodec
from zarrcy.codecs.scale_offset import ScaleOffsetCodec, expand_fixedscaleoffset
from zarrcy.errors import MetadataError, expected

__all__ = ["CAUSES", "Cause", "CastReport", "merge_reports", "parse_codecs", "MASK_LIMIT", "MAX_INDICES"]

#: the causes of a report, in the order the table prints them
CAUSES: tuple[str, ...] = ("nan", "posinf", "neginf", "above_range", "below_range", "rounded", "clamped", "wrapped",
                           "mapped", "sentinel_collision", "kind_changed", "failing")
#: inputs of at most this many elements keep their per-element codes (masks) by default
MASK_LIMIT = 1 << 24
#: indices collected per cause by default
MAX_INDICES = 1000
# elements per kernel call / numpy block (tests make it small)
_REPORT_BLOCK = 1 << 20

_NCLASS = len(_k.CLASS_NAMES)
_NSLOT = len(_k.SLOT_NAMES)
(_EXACT, _ROUNDED, _HIGH, _LOW, _SOHIGH, _SOLOW, _NAN, _POSINF, _NEGINF, _MAP_NUM, _MAP_NAN, _MAP_POSINF,
 _MAP_NEGINF) = range(_NCLASS)
_S_COLLISION, _S_KIND, _S_FAIL = _NCLASS, _NCLASS + 1, _NCLASS + 2


def _slot_luts() -> np.ndarray:
    """(slot, code) -> does an element with this code count under the slot."""
    codes = np.arange(256)
    cls = codes & _k.CLASS_MASK
    lut = np.zeros((_NSLOT, 256), dtype=bool)
    for k in range(_NCLASS):
        lut[k] = cls == k
    lut[_S_COLLISION] = (codes & _k.FLAG_COLLISION) != 0
    lut[_S_KIND] = (codes & _k.FLAG_KIND) != 0
    lut[_S_FAIL] = (codes & _k.FLAG_FAIL) != 0
    return lut


_SLOT_LUT = _slot_luts()
# high <-> low (the kernel's sides are the target's; a negative scale turns them around)
_FLIP = np.arange(256, dtype=np.uint8)
for _a, _b in ((_HIGH, _LOW), (_SOHIGH, _SOLOW)):
    for _flags in range(0, 256, 16):
        _FLIP[_flags | _a], _FLIP[_flags | _b] = _flags | _b, _flags | _a
_FLIP_SLOTS = list(range(_NSLOT))
_FLIP_SLOTS[_HIGH], _FLIP_SLOTS[_LOW], _FLIP_SLOTS[_SOHIGH], _FLIP_SLOTS[_SOLOW] = _LOW, _HIGH, _SOLOW, _SOHIGH


def _cause_slots(cause: str, oor: str | None) -> tuple[int, ...]:
    """The slots whose union is ``cause`` (``oor``: the chain's out_of_range)."""
    return {
        "nan": (_NAN, _MAP_NAN), "posinf": (_POSINF, _MAP_POSINF), "neginf": (_NEGINF, _MAP_NEGINF),
        "above_range": (_HIGH, _SOHIGH), "below_range": (_LOW, _SOLOW), "rounded": (_ROUNDED,),
        "clamped": (_HIGH, _LOW) if oor == "clamp" else (), "wrapped": (_HIGH, _LOW) if oor == "wrap" else (),
        "mapped": (_MAP_NUM, _MAP_NAN, _MAP_POSINF, _MAP_NEGINF), "sentinel_collision": (_S_COLLISION,),
        "kind_changed": (_S_KIND,), "failing": (_S_FAIL,),
    }[cause]


def _cause_lut(cause: str, oor: str | None) -> np.ndarray:
    slots = _cause_slots(cause, oor)
    return np.logical_or.reduce(_SLOT_LUT[list(slots)], axis=0) if slots else np.zeros(256, dtype=bool)


# ---------------------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------------------

@dataclass
class Cause:
    """One cause of a report: how many elements, the smallest / largest source value among
    them (None when there is none or they are all NaN) and the first index (a tuple, C
    order; in array coordinates for a region of a converted array)."""

    count: int = 0
    min: Any = None
    max: Any = None
    first_index: tuple[int, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "min": _json_num(self.min), "max": _json_num(self.max),
                "first_index": None if self.first_index is None else list(self.first_index)}

    def merge(self, other: Cause) -> None:
        self.count += other.count
        if other.min is not None and (self.min is None or other.min < self.min):
            self.min = other.min
        if other.max is not None and (self.max is None or other.max > self.max):
            self.max = other.max
        if other.first_index is not None and (self.first_index is None or other.first_index < self.first_index):
            self.first_index = other.first_index


def _json_num(v: Any) -> Any:
    """A number as JSON: non-finite floats as the fill-value strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


def _from_json_num(v: Any) -> Any:
    if isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "inf": math.inf,
                "nan": math.nan, "-inf": -math.inf}.get(v, v)
    return v


@dataclass
class CastReport:
    """What a codec chain does to an array (see :func:`check_cast`).

    ``exact .. failing`` partition the elements by outcome (each element under its most
    significant event: failing > scalar-mapped > clamped > wrapped > rounded > exact);
    ``causes`` say why, each a :class:`Cause`; ``representable_range`` is the interval of
    source values that encode without clamping, wrapping or failing (None: no value does).
    """

    count: int = 0
    exact: int = 0
    rounded: int = 0
    clamped: int = 0
    wrapped: int = 0
    scalar_mapped: int = 0
    failing: int = 0
    first_failing_index: int | tuple[int, ...] | None = None
    first_failing_value: Any = None
    first_failing_reason: str | None = None
    max_abs_error: float = 0.0
    max_abs_error_index: tuple[int, ...] | None = None
    max_rel_error: float = 0.0
    max_rel_error_index: tuple[int, ...] | None = None
    # elements that encode but read back as a different kind of value (NaN-ness, finiteness
    # or an infinity changed) or do not decode: the "kind_changed" cause
    round_trip_mismatches: int = 0
    encoded_dtype: str = ""
    stages: list[str] = field(default_factory=list)
    representable_range: tuple[Any, Any] | None = None
    causes: dict[str, Cause] = field(default_factory=dict)
    # first indices of each cause (at most ``indices_limit`` each), when collected
    indices: dict[str, list[tuple[int, ...]]] | None = None
    indices_limit: int = 0
    # per-element codes (shape of the input) when kept; see mask()
    codes: npt.NDArray[np.uint8] | None = field(default=None, repr=False, compare=False)
    out_of_range: str | None = None
    # (encoded values bit-equal to the fill code, source values bit-equal to the fill
    # value) when quantize_with_report was given ``fills`` (not part of the JSON form)
    fill_counts: tuple[int, int] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # also built from its JSON form (the convert journal)
        self.causes = {k: (v if isinstance(v, Cause) else _cause_from_json(v)) for k, v in self.causes.items()}
        for k in CAUSES:
            self.causes.setdefault(k, Cause())
        for name in ("max_abs_error_index", "max_rel_error_index"):
            v = getattr(self, name)
            if isinstance(v, list):
                setattr(self, name, tuple(v))
        if isinstance(self.first_failing_index, list):
            self.first_failing_index = tuple(self.first_failing_index)
        if isinstance(self.representable_range, list):
            self.representable_range = (_from_json_num(self.representable_range[0]),
                                        _from_json_num(self.representable_range[1]))
        self.max_abs_error = float(_from_json_num(self.max_abs_error))
        self.max_rel_error = float(_from_json_num(self.max_rel_error))
        if self.indices is not None:
            self.indices = {k: [tuple(i) for i in v] for k, v in self.indices.items()}

    @property
    def ok(self) -> bool:
        return self.failing == 0

    def mask(self, cause: str) -> npt.NDArray[np.bool_]:
        """A boolean array (the input's shape): which elements count under ``cause``.  Only
        when the codes were kept (``check_cast(..., masks=True)``, or an input of at most
        :data:`MASK_LIMIT` elements)."""
        if cause not in CAUSES:
            raise MetadataError(expected("cause", f"one of {CAUSES}", cause), "cause")
        if self.codes is None:
            raise MetadataError(expected("mask", "a report made with check_cast(..., masks=True)",
                                         "a report without per-element codes"), "masks")
        return _cause_lut(cause, self.out_of_range)[self.codes]

    def to_json(self) -> dict[str, Any]:
        """The report as JSON (README "cast-check --json"): non-finite numbers as
        ``"NaN"``/``"Infinity"``/``"-Infinity"``, indices as lists."""
        d: dict[str, Any] = {
            "count": self.count, "exact": self.exact, "rounded": self.rounded, "clamped": self.clamped,
            "wrapped": self.wrapped, "scalar_mapped": self.scalar_mapped, "failing": self.failing,
            "first_failing_index": (list(self.first_failing_index) if isinstance(self.first_failing_index, tuple)
                                    else self.first_failing_index),
            "first_failing_value": _json_num(self.first_failing_value),
            "first_failing_reason": self.first_failing_reason,
            "max_abs_error": _json_num(self.max_abs_error),
            "max_abs_error_index": None if self.max_abs_error_index is None else list(self.max_abs_error_index),
            "max_rel_error": _json_num(self.max_rel_error),
            "max_rel_error_index": None if self.max_rel_error_index is None else list(self.max_rel_error_index),
            "round_trip_mismatches": self.round_trip_mismatches,
            "encoded_dtype": self.encoded_dtype, "stages": list(self.stages),
            "representable_range": (None if self.representable_range is None
                                    else [_json_num(v) for v in self.representable_range]),
            "causes": {k: self.causes[k].to_json() for k in CAUSES},
            "out_of_range": self.out_of_range,
        }
        if self.indices is not None:
            d["indices"] = {k: [list(i) for i in v] for k, v in self.indices.items()}
            d["indices_limit"] = self.indices_limit
        return d

    def table(self) -> str:
        """The report as ``zarrcy cast-check`` prints it."""
        rng = self.representable_range
        rows: list[tuple[str, str]] = [
            ("elements", f"{self.count}"),
            ("representable range", "none (no value encodes without clamping or failing)" if rng is None
             else f"[{_fmt(rng[0])}, {_fmt(rng[1])}] (source values that encode in range)"),
            ("outcome", f"{self.exact} exact, {self.rounded} rounded, {self.clamped} clamped, {self.wrapped} wrapped, "
                        f"{self.scalar_mapped} scalar-mapped, {self.failing} failing"),
        ]
        for k in CAUSES:
            c = self.causes[k]
            if c.count == 0:
                continue
            detail = f"{c.count}"
            if c.min is not None and k not in ("nan", "posinf", "neginf"):
                detail += f", min {_fmt(c.min)}, max {_fmt(c.max)}"
            detail += f", first at {_fmt_index(c.first_index)}"
            rows.append((f"  {_CAUSE_LABEL[k]}", detail))
        if self.failing:
            rows.append(("first failing index", f"{_fmt_index(self.first_failing_index)} = {_fmt(self.first_failing_value)}: "
                                          f"{self.first_failing_reason}"))
        rows.append(("max abs round-trip error", _fmt(self.max_abs_error) + (
            f" at {_fmt_index(self.max_abs_error_index)}" if self.max_abs_error_index is not None else "")))
        rows.append(("max rel round-trip error", _fmt(self.max_rel_error) + (
            f" at {_fmt_index(self.max_rel_error_index)}" if self.max_rel_error_index is not None else "")))
        rows.append(("encoded data type", self.encoded_dtype))
        rows.append(("codecs", " -> ".join(self.stages)))
        w = max(len(r[0]) for r in rows)
        return "\n".join(f"{k.ljust(w)}  {v}" for k, v in rows)


_CAUSE_LABEL = {
    "nan": "NaN", "posinf": "+Infinity", "neginf": "-Infinity", "above_range": "above range",
    "below_range": "below range", "rounded": "rounded", "clamped": "clamped", "wrapped": "wrapped",
    "mapped": "scalar-mapped", "sentinel_collision": "sentinel collisions",
    "kind_changed": "read back as another kind", "failing": "failing",
}


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity"))
    return str(v)


def _fmt_index(i: Any) -> str:
    if isinstance(i, tuple):
        return "[" + ", ".join(str(v) for v in i) + "]"
    return str(i)


def _cause_from_json(d: Any) -> Cause:
    if not isinstance(d, dict):
        raise MetadataError(expected("causes.*", "an object", d), "causes")
    fi = d.get("first_index")
    return Cause(int(d.get("count", 0)), _from_json_num(d.get("min")), _from_json_num(d.get("max")),
                 None if fi is None else tuple(int(v) for v in fi))


def merge_reports(a: CastReport, b: CastReport, offset_index: Any = None) -> CastReport:
    """``a`` and ``b`` (reports over disjoint parts of one array, indices in the array's
    coordinates) as one report, in ``a``."""
    a.count += b.count
    a.exact += b.exact
    a.rounded += b.rounded
    a.clamped += b.clamped
    a.wrapped += b.wrapped
    a.scalar_mapped += b.scalar_mapped
    a.round_trip_mismatches += b.round_trip_mismatches
    if b.failing and (not a.failing or _before(b.first_failing_index, a.first_failing_index)):
        a.first_failing_index, a.first_failing_value = b.first_failing_index, b.first_failing_value
        a.first_failing_reason = b.first_failing_reason
    a.failing += b.failing
    for name in ("abs", "rel"):
        ea, eb = getattr(a, f"max_{name}_error"), getattr(b, f"max_{name}_error")
        ia, ib = getattr(a, f"max_{name}_error_index"), getattr(b, f"max_{name}_error_index")
        if eb > ea or (eb == ea and ib is not None and (ia is None or ib < ia)):
            setattr(a, f"max_{name}_error", eb)
            setattr(a, f"max_{name}_error_index", ib)
    for k in CAUSES:
        a.causes[k].merge(b.causes[k])
    if b.indices is not None:
        a.indices = a.indices or {}
        a.indices_limit = max(a.indices_limit, b.indices_limit)
        for k, v in b.indices.items():
            a.indices[k] = sorted(a.indices.get(k, []) + v)[:a.indices_limit]
    a.encoded_dtype = a.encoded_dtype or b.encoded_dtype
    a.stages = a.stages or list(b.stages)
    a.representable_range = a.representable_range if a.count - b.count else b.representable_range
    a.out_of_range = a.out_of_range or b.out_of_range
    a.codes = None
    return a


def _before(i: Any, j: Any) -> bool:
    if i is None:
        return False
    if j is None:
        return True
    return (i,) < (j,) if not isinstance(i, tuple) else i < (j if isinstance(j, tuple) else (j,))


# ---------------------------------------------------------------------------------------
# parsing the chain
# ---------------------------------------------------------------------------------------

def parse_codecs(codecs: Any, path: str = "codecs") -> list[Any]:
    """JSON text / list of dicts / codec objects -> [ScaleOffsetCodec | CastValueCodec, ...]."""
    if isinstance(codecs, (str, bytes)):
        try:
            codecs = json.loads(codecs)
        except ValueError as e:
            raise MetadataError(f"{path}: expected JSON, received invalid JSON ({e})", path) from None
    if isinstance(codecs, dict):
        codecs = [codecs]
    if not isinstance(codecs, (list, tuple)):
        raise MetadataError(expected(path, "a list of codec objects", codecs), path)
    out: list[Any] = []
    for i, c in enumerate(codecs):
        p = f"{path}[{i}]"
        if isinstance(c, (ScaleOffsetCodec, CastValueCodec)):
            out.append(c)
            continue
        if isinstance(c, str):
            c = {"name": c}
        if not isinstance(c, dict) or "name" not in c:
            raise MetadataError(expected(p, "a codec object", c), p)
        name = c["name"]
        conf = c.get("configuration")
        if name == "scale_offset":
            out.append(ScaleOffsetCodec.from_dict(conf, p))
        elif name == "cast_value":
            out.append(CastValueCodec.from_dict(conf, p))
        elif name == "numcodecs.fixedscaleoffset":
            out.extend(expand_fixedscaleoffset(conf, p))
        elif name in ("bytes", "transpose", "gzip", "zstd", "blosc", "crc32c", "sharding_indexed"):
            continue  # value-preserving for this purpose
        else:
            raise MetadataError(expected(f"{p}.name", "scale_offset, cast_value or numcodecs.fixedscaleoffset", name),
                                f"{p}.name")
    return out


def _chain_oor(chain: list[Any]) -> str | None:
    casts = [c for c in chain if isinstance(c, CastValueCodec)]
    return casts[-1].out_of_range if casts else None


def report_from_json(d: dict[str, Any]) -> CastReport:
    """A report back from :meth:`CastReport.to_json` (a journal, a ``--json`` file)."""
    known = {f for f in CastReport.__dataclass_fields__ if f != "codes"}
    return CastReport(**{k: v for k, v in d.items() if k in known})


def causes_summary(d: dict[str, Any] | CastReport) -> str:
    """One line for ``zarrcy convert``'s summary: the representable range and every cause
    with a count (min / max of the source values, first index)."""
    rep = d if isinstance(d, CastReport) else report_from_json(d)
    rng = rep.representable_range
    parts = [f"representable range {'none' if rng is None else f'[{_fmt(rng[0])}, {_fmt(rng[1])}]'}"]
    for k in CAUSES:
        c = rep.causes[k]
        if c.count:
            mm = f", {_fmt(c.min)}..{_fmt(c.max)}" if c.min is not None else ""
            parts.append(f"{_CAUSE_LABEL[k]} {c.count:,} ({'first at ' + _fmt_index(c.first_index)}{mm})")
    return "; ".join(parts)
