"""The one-pass quantize report (``zarrcy.casting.quantize_with_report`` /
``chain_report``, kernel ``_cast_report.cast_report_into`` on its vectorised path) against
the kernel's exact element-wise path (:func:`zarrcy.casting.check_cast` with masks: every
counter, cause and the largest errors) and against the fused codec's own encode (the same
bytes): NaN, +-Infinity, -0.0, ties, values out of range, every rounding and out_of_range
mode ``--quantize`` allows, with and without ``nan=V``, float32 and float64 sources, every
native integer target.  The Fraction reference of every field is in test_cast_report.py."""

from __future__ import annotations

import itertools
import zlib
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import zarrcy.casting.report as report_mod
from zarrcy.casting import chain_report, check_cast, parse_codecs, quantize_with_report
from zarrcy.codecs._base import ArraySpec
from zarrcy.convert.options import parse_quantize
from zarrcy.errors import CastError

ROUNDINGS = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
TARGETS = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64")


def _chain(dtype: str, scale: Any, offset: Any, rounding: str, oor: str | None, nan: int | None) -> list[dict[str, Any]]:
    q = f"scale={scale},offset={offset},dtype={dtype},rounding={rounding}"
    if oor:
        q += f",out_of_range={oor}"
    if nan is not None:
        q += f",nan={nan}"
    chain = parse_quantize(q)
    assert chain is not None
    return chain


def _codec_encode(x: np.ndarray, chain: list[dict[str, Any]]) -> tuple[np.ndarray | None, Any]:
    """What the destination's fused scale_offset+cast_value codec writes (or its error)."""
    so, cv = parse_codecs(chain)
    fused = so.fuse_with(cv)
    assert fused is not None
    try:
        return fused.encode(x, ArraySpec(x.shape, x.dtype, x.dtype.type(0))), None
    except CastError as e:
        return None, (type(e), e.index)


def _strip(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in ("indices", "indices_limit")}


def _check(x: np.ndarray, chain: list[dict[str, Any]]) -> None:
    want = _strip(check_cast(x, chain, masks=True).to_json())   # the exact element-wise path
    enc, rep = quantize_with_report(x, chain)                     # the vectorised path
    assert rep.to_json() == want
    assert chain_report(x, chain).to_json() == want
    ref, err = _codec_encode(x, chain)
    if want["failing"]:
        assert enc is None and err is not None
    else:
        assert err is None and enc is not None and ref is not None
        assert enc.dtype == ref.dtype and enc.shape == x.shape and enc.tobytes() == ref.tobytes()


def _values(rng: np.random.Generator, n: int, lo: float, hi: float, dtype: str) -> np.ndarray:
    """Values whose (x - offset) * scale spans [lo - 2, hi + 2] (offset 0, scale 1 here is
    not assumed: callers pass the encoded range), with ties, integers and specials."""
    span = hi - lo + 4
    x = rng.random(n) * span + lo - 2
    x[::5] = np.round(x[::5])              # exact integers
    x[1::7] = np.floor(x[1::7]) + 0.5      # ties
    x[2::11] = lo - 0.5
    x[3::13] = hi + 0.5
    return x.astype(dtype)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("dtype", TARGETS)
def test_every_mode_matches_check_cast(src: str, dtype: str) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{src}-{dtype}".encode()))
    info = np.iinfo(dtype)
    lo, hi = float(max(info.min, -70000)), float(min(info.max, 70000))
    for rounding, oor in itertools.product(ROUNDINGS, (None, "clamp", "wrap")):
        for nan in (None, int(info.max) if info.max < 2**32 else 3):
            # in range (every mode passes), then beyond it (clamp / wrap; fails without)
            inside = _values(rng, 3001, lo + 3, hi - 3, src) / np.asarray(2, src) + np.asarray(1.25, src)
            chain = _chain(dtype, 2, 1.25, rounding, oor, nan)
            _check(inside, chain)
            wide = _values(rng, 3001, lo, hi, src)
            wide[17] = -0.0
            wide[18] = 0.0
            chain = _chain(dtype, 1, 0, rounding, oor, nan)
            _check(wide, chain)
            if nan is not None:
                wide[::29] = np.nan
                _check(wide, chain)
            wide[40] = np.inf   # an infinity never encodes to an integer: the refusal path
            _check(wide, chain)


@pytest.mark.parametrize("src", ["float32", "float64"])
def test_specials(src: str) -> None:
    """NaN without nan=, NaN with it, infinities, -0.0, huge values, an overflowing
    scale_offset; a nan= code the data also encodes to (round-trip mismatches)."""
    x = np.array([0.0, -0.0, 1.5, -1.5, 2.5, 254.5, 255.5, -0.5, 1e30, -1e30, np.nan, np.inf, -np.inf], src)
    for q in ("scale=1,dtype=uint8,out_of_range=clamp", "scale=1,dtype=uint8,out_of_range=clamp,nan=0",
              "scale=1,dtype=uint8,out_of_range=wrap,nan=255", "scale=1e38,dtype=int16,out_of_range=clamp,nan=0",
              "scale=3,offset=-1,dtype=int8,rounding=nearest-away,out_of_range=clamp,nan=-128"):
        chain = parse_quantize(q)
        assert chain is not None
        for sub in (x[:10], x[:11], x[:12], x, x[[0, 1, 10]], x[[10]], x[:0]):
            _check(np.ascontiguousarray(sub), chain)


def test_zero_read_back_nonzero_is_infinite_relative_error() -> None:
    x = np.array([0.0, 0.1, 1.0], np.float64)
    chain = parse_quantize("scale=0.5,offset=0.3,dtype=uint8,out_of_range=clamp")
    assert chain is not None
    rep = chain_report(x, chain)
    assert rep.max_rel_error == float("inf") and rep.to_json() == _strip(check_cast(x, chain).to_json())
    assert rep.max_rel_error_index == (0,)


def test_float16_target_and_other_chains_fall_back() -> None:
    """Targets the kernel does not take (float16: stored as uint16 bits) and other chains
    still give check_cast's report; no encoded array then."""
    x = np.linspace(-3, 3, 1001).astype(np.float32)
    x[::50] = np.nan
    for q in ("scale=1,dtype=float16,nan=0", "scale=100,dtype=float16"):
        chain = parse_quantize(q)
        assert chain is not None
        enc, rep = quantize_with_report(x, chain)
        assert enc is None and rep.to_json() == _strip(check_cast(x, chain).to_json())
    cv_only = [{"name": "cast_value", "configuration": {"data_type": "int16", "out_of_range": "clamp"}}]
    y = x[~np.isnan(x)].astype(np.int32)   # an integer source: the numpy passes
    enc, rep = quantize_with_report(y, cv_only)
    assert enc is None and rep.to_json() == _strip(check_cast(y, cv_only).to_json())


@pytest.mark.parametrize("block", [7, 1024, 1025])
def test_parts_merge(block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel calls over parts of the region (report._REPORT_BLOCK) merge to the same
    report and write every part of the encoded array; a failure in any part refuses."""
    monkeypatch.setattr(report_mod, "_REPORT_BLOCK", block)
    rng = np.random.default_rng(block)
    x = (rng.random((50, 61)) * 300 - 20).astype(np.float64)
    x[3, ::4] = np.nan
    chain = parse_quantize("scale=1,dtype=uint8,out_of_range=clamp,nan=255")
    assert chain is not None
    _check(x, chain)
    x[40, 60] = np.inf
    _check(x, chain)


def test_non_contiguous_and_big_endian() -> None:
    x = (np.random.default_rng(1).random((40, 40)) * 260).astype(">f8")[:, ::3]
    chain = parse_quantize("scale=1,dtype=uint8,out_of_range=clamp")
    assert chain is not None
    _check(x, chain)


_FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)


@settings(max_examples=150)
@given(values=st.lists(_FLOATS | st.sampled_from([0.5, -0.5, 1.5, 254.5, 255.5, -0.0, 127.5, -128.5]),
                       min_size=0, max_size=40),
       src=st.sampled_from(["float32", "float64"]), dtype=st.sampled_from(["uint8", "int8", "int16", "uint16"]),
       rounding=st.sampled_from(ROUNDINGS), oor=st.sampled_from([None, "clamp", "wrap"]),
       nan=st.sampled_from([None, 0, 7]), scale=st.sampled_from([1, 3, 0.25, 1e-3, 1e20]),
       offset=st.sampled_from([0, -2.5, 100.25]))
@example(values=[255.5, -0.0, float("nan")], src="float64", dtype="uint8", rounding="nearest-even", oor="clamp",
         nan=0, scale=1, offset=0)
def test_property_matches_check_cast(values: list[float], src: str, dtype: str, rounding: str, oor: str | None,
                                     nan: int | None, scale: float, offset: float) -> None:
    with np.errstate(over="ignore"):
        x = np.array(values, dtype=np.float64).astype(src)
    _check(x, _chain(dtype, scale, offset, rounding, oor, nan))


@pytest.mark.parametrize("isa", ["baseline", "avx2", "avx512"])
def test_every_build_of_the_report_loops(isa: str) -> None:
    """The report loops' baseline, AVX2 and AVX-512 builds give the same report as the
    exact reference (a build the CPU lacks falls back to the next one down, which then
    runs again)."""
    from zarrcy._kernels._cast_report import report_isa

    levels = ["baseline", "avx2", "avx512"]
    try:
        cpu = report_isa("auto")
        assert report_isa(isa) == levels[min(levels.index(isa), levels.index(cpu))]
        rng = np.random.default_rng(11)
        for src in ("float32", "float64"):
            x = (rng.random(5000) * 300 - 30).astype(src)
            x[::31] = np.nan
            x[7], x[8] = -0.0, 0.0
            x[100:140] = np.round(x[100:140], 1)  # ties of the largest relative error
            for rounding in ROUNDINGS:
                _check(x, _chain("uint8", 1, 0, rounding, "clamp", 255))
                _check(x, _chain("int16", 7, 0.5, rounding, "wrap", 0))
                _check(x, _chain("uint16", 8000, -4, rounding, "clamp", 65535))
    finally:
        report_isa("auto")


def test_kernel_entry_point_checks() -> None:
    """cast_report_into refuses mismatched arrays and formats (ValueError) before its
    nogil loop."""
    from zarrcy._kernels._cast_report import cast_report_into

    so, cv = parse_codecs(parse_quantize("scale=1,dtype=uint8,out_of_range=clamp,nan=0") or [])
    enc, dec = cv.prepared(np.dtype(np.float64))
    x = np.zeros(10)
    head = (enc.dst.kernel_format(), enc.rounding, enc.out_of_range, True, 0.0, 1.0)
    tail = (dec.dst.kernel_format(), dec.rounding, dec.out_of_range, dec.keys, dec.values)
    args = (*head, enc.keys, enc.values, *tail)
    assert cast_report_into(x, np.empty(10, np.uint8), None, *args)[4] == (10, 0, 0, 0, 0, 0)
    with pytest.raises(ValueError, match="dst"):
        cast_report_into(x, np.empty(9, np.uint8), None, *args)
    with pytest.raises(ValueError, match="dst"):
        cast_report_into(x, np.empty(10, np.int8), None, *args)
    with pytest.raises(ValueError, match="codes"):
        cast_report_into(x, None, np.empty(9, np.uint8), *args)
    with pytest.raises(ValueError, match="codes"):
        cast_report_into(x, None, np.empty(10, np.int8), *args)
    with pytest.raises(ValueError, match="src"):
        cast_report_into(np.zeros(10, np.int32), None, None, *args)
    with pytest.raises(ValueError, match="dec_fmt"):
        cast_report_into(x.astype(np.float32), None, None, *args)
    with pytest.raises(ValueError, match="keys"):
        cast_report_into(x, None, None, *head, enc.keys.astype(np.float32), enc.values, *tail)
    f16 = parse_codecs([{"name": "cast_value", "configuration": {"data_type": "float16"}}])[0].prepared(x.dtype)[0]
    with pytest.raises(ValueError, match="fmt"):
        cast_report_into(x, None, None, f16.dst.kernel_format(), *args[1:])


def test_threads_share_nothing() -> None:
    """The nogil kernel on many threads at once gives each caller its own report and bytes."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(3)
    chain = parse_quantize("scale=2,offset=-10,dtype=uint8,out_of_range=clamp,nan=255")
    assert chain is not None
    xs = [(rng.random(20000) * (40 + 10 * k) - 5).astype(np.float64) for k in range(8)]
    for x in xs:
        x[:: 17 + len(xs)] = np.nan

    def run(i: int) -> tuple[bytes, dict[str, Any]]:
        enc, rep = quantize_with_report(xs[i % len(xs)], chain)
        assert enc is not None
        return enc.tobytes(), rep.to_json()

    want = [run(i) for i in range(len(xs))]
    assert all(w[1] == _strip(check_cast(x, chain).to_json()) for w, x in zip(want, xs))

    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(run, range(32)))
    assert got == [want[i % len(xs)] for i in range(32)]
