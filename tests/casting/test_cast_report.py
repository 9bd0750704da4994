"""The cast report by cause (issue 22 item 7) against the slow exact Fraction reference
(tests/casting/fraction_reference.py): outcome counts, every cause's count, min / max and
first index, the largest round-trip errors and where, and the representable range of the
chain (exact at its edges) -- through each engine: the one-pass kernel with per-element
codes (check_cast), its vectorised fast path (chain_report, convert's region report) and
the numpy stage-by-stage passes (every other chain)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import zarrcy.casting.engine as engine
import zarrcy.casting.report as report_mod
from fraction_reference import Chain, passes, reference_report
from zarrcy.casting import CAUSES, chain_report, check_cast, representable_range

ROUNDINGS = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
NAN = float("nan")


def _num(v: Any) -> Any:
    if isinstance(v, str):
        return {"NaN": NAN, "Infinity": math.inf, "-Infinity": -math.inf}[v]
    return v


def _same(a: Any, b: Any) -> bool:
    a, b = _num(a), _num(b)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _engines(x: np.ndarray, chain: Chain, monkeypatch: pytest.MonkeyPatch) -> dict[str, dict[str, Any]]:
    codecs = chain.codecs()
    out = {"kernel+codes": check_cast(x, codecs, masks=True).to_json(),
           "kernel fast": chain_report(x, codecs).to_json()}
    with monkeypatch.context() as m:
        m.setattr(engine, "_kernel_chain", lambda *a: None)
        out["numpy"] = check_cast(x, codecs, masks=True).to_json()
    return out


def _compare(x: np.ndarray, chain: Chain, monkeypatch: pytest.MonkeyPatch) -> None:
    want = reference_report(x, chain)
    for name, got in _engines(x, chain, monkeypatch).items():
        check_fields(got, want, f"{name}: {chain} {x.tolist()[:20]}")


def check_fields(got: dict[str, Any], want: dict[str, Any], ctx: str) -> None:
    """A report's JSON against reference_report's fields (every one, the index of an
    infinite relative error included)."""
    for k in ("exact", "rounded", "clamped", "wrapped", "scalar_mapped", "failing"):
        assert got[k] == want[k], (k, ctx, got[k], want[k])
    for cause in CAUSES:
        w = want["causes"].get(cause, {"count": 0, "min": None, "max": None, "first_index": None})
        g = got["causes"][cause]
        assert g["count"] == w["count"], (cause, ctx, g, w)
        assert g["first_index"] == w["first_index"], (cause, ctx, g, w)
        if cause not in ("nan",):
            assert _same(g["min"], w["min"]) and _same(g["max"], w["max"]), (cause, ctx, g, w)
    assert got["round_trip_mismatches"] == want["causes"].get("kind_changed", {"count": 0})["count"], ctx
    assert _same(got["max_abs_error"], want["max_abs_error"]), (ctx, got["max_abs_error"], want["max_abs_error"])
    assert _same(got["max_rel_error"], want["max_rel_error"]), (ctx, got["max_rel_error"], want["max_rel_error"])
    if want["max_abs_error"]:
        assert got["max_abs_error_index"] == want["max_abs_error_index"], ctx
    if want["max_rel_error"]:
        assert got["max_rel_error_index"] == want["max_rel_error_index"], ctx


def _between(lo: Any, hi: Any, n: int, dt: np.dtype) -> np.ndarray:
    """n values from lo to hi (no overflow for the extremes of a type)."""
    a = np.linspace(0.0, 1.0, n)
    return np.clip(float(lo) * (1 - a) + float(hi) * a, float(lo), float(hi)).astype(dt)


def _edges_exact(chain: Chain) -> None:
    """The representable range: its edges pass, the next value beyond each does not (or
    the edge is the type's own limit)."""
    dt = np.dtype(chain.src)
    rng = representable_range(dt, chain.codecs())
    big = np.finfo(dt).max
    if rng is None:
        probe = np.concatenate([_between(-big, big, 4001, dt), np.array([0, -1, 1], dt)])
        assert not any(passes(v, chain) for v in probe)
        return
    lo, hi = dt.type(rng[0]), dt.type(rng[1])
    assert float(lo) == rng[0] and float(hi) == rng[1] and lo <= hi
    assert passes(lo, chain) and passes(hi, chain), (chain, rng)
    with np.errstate(over="ignore"):
        below, above = np.nextafter(lo, dt.type(-np.inf)), np.nextafter(hi, dt.type(np.inf))
    assert lo == -big or not passes(below, chain), (chain, rng)
    assert hi == big or not passes(above, chain), (chain, rng)
    mid = _between(lo, hi, 9, dt)
    assert all(passes(v, chain) for v in mid)


# ---- the issue's example and the fields one by one -------------------------------------

def test_issue_example_counts_by_cause() -> None:
    """100 NaN, +inf, one value above and one below the range (issue 22 item 7): each
    cause counted, with min / max and first index; the range says what to tune."""
    x = np.linspace(0, 2000, 1000)
    x[10:110] = np.nan
    x[500] = np.inf
    x[600] = 3000.0
    x[700] = -20.0
    codecs = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
              {"name": "cast_value", "configuration": {"data_type": "uint8"}}]
    rep = check_cast(x, codecs)
    c = rep.causes
    assert (c["nan"].count, c["posinf"].count, c["above_range"].count, c["below_range"].count) == (100, 1, 1, 1)
    assert c["nan"].first_index == (10,) and c["posinf"].first_index == (500,)
    assert c["above_range"].min == c["above_range"].max == 3000.0 and c["above_range"].first_index == (600,)
    assert c["below_range"].min == -20.0 and c["below_range"].first_index == (700,)
    assert rep.failing == 103 and c["failing"].count == 103 and rep.first_failing_index == 10
    lo, hi = rep.representable_range
    assert lo == -15.0 and hi < 2545.0 and np.nextafter(hi, np.inf) >= 2545.0  # (x + 10) * 0.1 in [-0.5, 255.5)
    table = rep.table()
    for label in ("NaN", "+Infinity", "above range", "below range", "representable range"):
        assert label in table
    assert rep.mask("nan").sum() == 100 and rep.mask("above_range")[600]
    assert rep.indices is not None and rep.indices["nan"][:2] == [(10,), (11,)]


def test_sentinel_collision_explains_round_trip_mismatches() -> None:
    """A value rounding onto the NaN sentinel reads back as NaN: counted as a sentinel
    collision (and as read back as another kind), with its source value and index."""
    x = np.array([[1.0, np.nan], [255.2, 17.0]])
    codecs = [{"name": "cast_value", "configuration": {
        "data_type": "uint8", "out_of_range": "clamp",
        "scalar_map": {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}}}]
    rep = check_cast(x, codecs)
    col = rep.causes["sentinel_collision"]
    assert (col.count, col.min, col.first_index) == (1, 255.2, (1, 0))
    assert rep.round_trip_mismatches == 1 and rep.causes["kind_changed"].first_index == (1, 0)
    assert rep.causes["mapped"].count == 1 and rep.causes["nan"].count == 1
    # a numeric sentinel (a fill value code): no change of kind, still a collision
    codecs[0]["configuration"]["scalar_map"] = {"encode": [[-9999, 0]], "decode": [[0, -9999]]}
    x = np.array([-9999.0, 0.2, 3.0])
    rep = check_cast(x, codecs)
    assert rep.causes["sentinel_collision"].count == 1 and rep.causes["sentinel_collision"].first_index == (1,)
    assert rep.round_trip_mismatches == 0 and rep.causes["mapped"].min == -9999.0


def test_json_is_strict_and_round_trips() -> None:
    import json

    x = np.array([np.inf, -np.inf, np.nan, 0.0, 1.0])
    rep = check_cast(x, [{"name": "cast_value", "configuration": {"data_type": "float32"}}])
    text = json.dumps(rep.to_json(), allow_nan=False)
    back = report_mod.report_from_json(json.loads(text))
    assert back.to_json() == rep.to_json()
    assert rep.causes["posinf"].min == math.inf and rep.to_json()["causes"]["posinf"]["min"] == "Infinity"


def test_masks_and_indices_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Codes are kept up to MASK_LIMIT elements (one byte each) or on request; indices are
    capped per cause; a report without codes says how to get masks."""
    from zarrcy.errors import MetadataError

    x = np.arange(100, dtype=np.float64) * 3.0
    codecs = [{"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp"}}]
    monkeypatch.setattr(report_mod, "MASK_LIMIT", 50)
    rep = check_cast(x, codecs, max_indices=5)
    assert rep.codes is None and rep.indices is not None and len(rep.indices["clamped"]) == 5
    assert rep.indices["clamped"][0] == (86,)
    with pytest.raises(MetadataError, match="masks=True"):
        rep.mask("clamped")
    rep = check_cast(x, codecs, masks=True, max_indices=0)
    assert rep.indices is None and rep.mask("clamped").sum() == 14
    with pytest.raises(MetadataError, match="cause"):
        rep.mask("nope")


def test_regions_merge_in_array_coordinates(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports of regions (origin = the region's start) merge into the whole array's: first
    indices, min / max and where the largest errors are."""
    rng = np.random.default_rng(5)
    x = rng.normal(100, 80, (40, 30))
    x[rng.random(x.shape) < 0.05] = np.nan
    codecs = [{"name": "scale_offset", "configuration": {"offset": 0, "scale": 1.5}},
              {"name": "cast_value", "configuration": {"data_type": "uint8", "out_of_range": "clamp",
                                                       "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}]
    whole = chain_report(x, codecs).to_json()
    parts = None
    for r0, c0 in itertools.product((0, 20), (0, 10, 20)):
        part = chain_report(x[r0:r0 + 20, c0:c0 + 10], codecs, origin=(r0, c0))
        parts = part if parts is None else report_mod.merge_reports(parts, part)
    assert parts is not None and parts.to_json() == whole
    monkeypatch.setattr(report_mod, "_REPORT_BLOCK", 37)
    assert chain_report(x, codecs).to_json() == whole


# ---- every mode against the reference --------------------------------------------------

_SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 255.5, 256.0, -1.0, 1e30, -1e30, NAN, math.inf,
            -math.inf, 1e-300, 5e-324, 1.7976931348623157e308]


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dst", ["uint8", "int8", "int16", "uint32", "int64", "float32"])
def test_every_rounding_and_out_of_range_mode(src: str, dst: str, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(len(src) * 31 + len(dst))
    for rounding, oor in itertools.product(ROUNDINGS, (None, "clamp", "wrap")):
        if oor == "wrap" and dst.startswith("float"):
            continue
        with np.errstate(over="ignore"):
            x = np.concatenate([np.array(_SPECIAL), rng.normal(0, 200, 40), np.round(rng.normal(0, 300, 10)) + 0.5])
            x = x.astype(src)
        for offset, scale in ((None, 1.0), (0.5, 2.0), (-3.25, -0.5)):
            nan_key = [] if dst.startswith("float") else [(NAN, 0)]
            chain = Chain(src, dst, rounding, oor, offset, scale, enc=nan_key, dec=[(0, NAN)] if nan_key else [])
            _compare(x, chain, monkeypatch)
            if offset is not None and not dst.startswith("float"):
                _edges_exact(chain)


def test_overflow_of_scale_offset_and_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finite value whose scale_offset result overflows is above / below the range and
    fails even with clamp; a code whose decode overflows reads back as another kind."""
    x = np.array([1e300, -1e300, 1.0, 2.0], np.float64)
    _compare(x, Chain("float64", "int32", oor="clamp", offset=0.0, scale=1e10), monkeypatch)
    x = np.array([3.0e38, -3.0e38, 1.0], np.float32)
    _compare(x, Chain("float32", "float32", oor="clamp", offset=-3e38, scale=2.0), monkeypatch)
    _compare(np.array([1.0, 2.0]), Chain("float64", "int32", offset=0.0, scale=1e-320), monkeypatch)


#: an original 0 read back non-zero (an infinite relative error) and subnormals whose
#: relative error overflows float64 (finite, reported as inf): offset 0.3, uint8 codes
ZERO_AND_SUBNORMALS = [
    [1.0, 5e-324, 0.0, 1e-320],   # an overflowing quotient first: the 0 is still the largest
    [1.0, 0.0, 5e-324],
    [1.0, 5e-324, 1e-320],        # no 0: the first overflowing quotient
    [1.0, 2.0],                   # finite errors only
]


@pytest.mark.parametrize("values", ZERO_AND_SUBNORMALS)
def test_infinite_relative_error_ranks_an_original_zero_first(values: list[float],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """max_rel_error_index names the original 0 read back non-zero when there is one
    (its error is truly infinite), even after a subnormal whose quotient overflows."""
    x = np.array(values, np.float64)
    chain = Chain("float64", "uint8", offset=0.3, scale=1.0)
    want = reference_report(x, chain)
    if 0.0 in values:
        assert want["max_rel_error"] == math.inf and want["max_rel_error_index"] == [values.index(0.0)]
    _compare(x, chain, monkeypatch)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64) | st.sampled_from(_SPECIAL),
                       min_size=0, max_size=30),
       src=st.sampled_from(["float32", "float64"]), dst=st.sampled_from(["uint8", "int8", "int16", "uint16", "int32"]),
       rounding=st.sampled_from(ROUNDINGS), oor=st.sampled_from([None, "clamp", "wrap"]),
       so=st.sampled_from([None, (0.0, 1.0), (-2.5, 3.0), (100.25, -0.25), (0.0, 1e-3), (1.0, 1e20)]),
       key=st.sampled_from([None, 0, 7, -1, 255]))
@example(values=[255.5, -0.0, NAN], src="float64", dst="uint8", rounding="nearest-even", oor="clamp", so=None, key=255)
@example(values=[6.5, 7.0, NAN], src="float32", dst="int8", rounding="nearest-away", oor=None, so=None, key=7)
def test_property_against_fraction_reference(values: list[float], src: str, dst: str, rounding: str,
                                             oor: str | None, so: tuple[float, float] | None, key: int | None) -> None:
    info = np.iinfo(dst)
    if key is not None and not info.min <= key <= info.max:
        key = None
    with np.errstate(over="ignore"):
        x = np.array(values, dtype=np.float64).astype(src)
    offset, scale = so if so is not None else (None, 1.0)
    enc = [(NAN, key)] if key is not None else []
    chain = Chain(src, dst, rounding, oor, offset, scale, enc=enc, dec=[(key, NAN)] if key is not None else [])
    with pytest.MonkeyPatch.context() as mp:
        _compare(x.reshape(-1), chain, mp)
        if len(values) >= 4 and len(values) % 2 == 0:
            _compare(x.reshape(2, -1), chain, mp)


@settings(max_examples=150, deadline=None)
@given(src=st.sampled_from(["float32", "float64"]), dst=st.sampled_from(["uint8", "int8", "int16", "uint32", "int64"]),
       rounding=st.sampled_from(ROUNDINGS), oor=st.sampled_from([None, "clamp", "wrap"]),
       offset=st.floats(-1e6, 1e6, allow_nan=False) | st.sampled_from([0.0, 0.5, -10.0]),
       scale=st.sampled_from([1.0, 0.1, 3.0, -0.5, 1e-5, 1e5, 2.0 ** -20, 1e-40]))
@example(src="float64", dst="uint8", rounding="nearest-even", oor=None, offset=-10.0, scale=0.1)
@example(src="float32", dst="int8", rounding="nearest-away", oor="clamp", offset=0.5, scale=-0.5)
def test_property_representable_range(src: str, dst: str, rounding: str, oor: str | None, offset: float,
                                      scale: float) -> None:
    """The range's edges are exact: they encode in range (Fraction reference), the next
    source value beyond each does not."""
    with np.errstate(over="ignore", under="ignore"):
        if src == "float32" and not np.isfinite(np.float32(offset)):
            return
    _edges_exact(Chain(src, dst, rounding, oor, offset, scale))
