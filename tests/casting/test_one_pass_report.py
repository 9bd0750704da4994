"""The report kernel's one-pass blocks (``zr_one_*`` in zc_cast_report.h: encode, classes,
minima / maxima, round trip and the fill counts in one loop) against the Fraction
reference (tests/casting/fraction_reference.py) and a per-element count of bit patterns.

The kernel sends a block to its exact path when a class shows up for the first time, so
the inputs here are built to reach the one-pass blocks: a first block of ``BLOCK`` (1024)
elements that holds every drawn value, then more blocks of the same values in another
order (taken in one pass unless something needs the exact path), then optionally values
seen for the first time in a later block (that block goes the exact way, the next ones
in one pass again).  Every rounding and out_of_range mode, NaN with and without a NaN
key, +-Inf, -0.0, values at the fill value, codes colliding with the NaN key, float32 and
float64, empty and 0-d inputs."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fraction_reference import Chain, reference_report
from test_cast_report import ZERO_AND_SUBNORMALS, _num, _same, check_fields
from zarrcy.casting import CAUSES, chain_report, quantize_with_report
from zarrcy.errors import MetadataError

ROUNDINGS = ("nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away")
NAN = float("nan")
BLOCK = 1024
SPECIAL = [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 127.5, -128.5, 254.5, 255.5, 256.0, -1.0, 65535.5, 1e30, -1e30, NAN,
           math.inf, -math.inf, 1e-300, 5e-324, -9999.0]


def _same_signed(a: Any, b: Any) -> bool:
    """test_cast_report's comparison of JSON numbers, and a zero's sign."""
    a, b = _num(a), _num(b)
    return _same(a, b) and (not isinstance(a, float) or not isinstance(b, float) or math.isnan(a)
                            or math.copysign(1, a) == math.copysign(1, b))


def _cached(chain: Chain) -> Chain:
    """The chain with its per-element reference memoised by bit pattern (the inputs repeat
    a few values thousands of times)."""
    real = chain.element
    memo: dict[bytes, Any] = {}

    def element(xr: Any) -> Any:
        k = np.asarray(xr).tobytes()
        if k not in memo:
            memo[k] = real(xr)
        return memo[k]

    chain.element = element  # type: ignore[method-assign]
    return chain


def _compare(x: np.ndarray, chain: Chain, fill_value: Any, fill_code: int) -> None:
    want = reference_report(x, chain)
    enc, rep = quantize_with_report(x, chain.codecs(), fills=(fill_value, fill_code))
    got = rep.to_json()
    ctx = f"{chain} {x.reshape(-1).tolist()[:12]} fill {fill_value!r} -> {fill_code}"
    check_fields(got, want, ctx)
    for cause in CAUSES:   # also the sign of a zero minimum / maximum
        w = want["causes"].get(cause, {"min": None, "max": None})
        g = got["causes"][cause]
        if cause != "nan":
            assert _same_signed(g["min"], w["min"]) and _same_signed(g["max"], w["max"]), (cause, ctx, g, w)
    assert _same_signed(got["max_abs_error"], want["max_abs_error"]), ctx
    assert chain_report(x, chain.codecs()).to_json() == got, ctx   # no encoded output: the same report
    if want["failing"]:
        assert enc is None and rep.fill_counts is None, ctx
        return
    # the codes, element by element, and the two counts from bit patterns
    flat = x.reshape(-1)
    codes = [chain.element(v).code for v in flat]
    assert enc is not None and enc.shape == x.shape and enc.dtype == np.dtype(chain.dst), ctx
    assert [int(c) for c in enc.reshape(-1)] == [int(c) for c in codes], ctx
    fbits = np.asarray(fill_value, dtype=x.dtype).tobytes()
    n_values = sum(1 for v in flat if v.tobytes() == fbits)
    n_codes = sum(1 for c in codes if int(c) == fill_code)
    assert rep.fill_counts == (n_codes, n_values), (ctx, rep.fill_counts, (n_codes, n_values))


def _blocks(values: list[float], late: list[float], src: str, order: list[int]) -> np.ndarray:
    """A first block holding every value, a block of them in another order, then the late
    values (new to the kernel) inside a third block, then a short one."""
    with np.errstate(over="ignore"):
        v = np.array(values, dtype=np.float64).astype(src)
        lt = np.array(late, dtype=np.float64).astype(src)
    first = np.resize(v, BLOCK)
    perm = v[np.array(order) % len(v)] if order else v
    more = np.resize(perm, BLOCK + 32)
    tail = np.resize(perm[::-1], BLOCK)
    if lt.size:
        tail[5:5 + lt.size] = lt[:BLOCK - 5]
    return np.concatenate([first, more, tail, np.resize(v, 32)])   # 3136 elements


@settings(max_examples=40, deadline=None)
@given(values=st.lists(st.floats(width=64, min_value=-70000, max_value=70000)
                       | st.sampled_from(SPECIAL), min_size=1, max_size=12),
       late=st.lists(st.sampled_from(SPECIAL) | st.floats(width=64, min_value=-300, max_value=300), max_size=3),
       order=st.lists(st.integers(0, 50), max_size=12),
       src=st.sampled_from(["float32", "float64"]),
       dst=st.sampled_from(["uint8", "int8", "int16", "uint16", "int32", "uint32"]),
       rounding=st.sampled_from(ROUNDINGS), oor=st.sampled_from([None, "clamp", "wrap"]),
       so=st.sampled_from([None, (0.0, 1.0), (-2.5, 3.0), (100.25, -0.25), (0.0, 1e-3), (1.0, 1e20)]),
       key=st.sampled_from([None, 0, 7, -1, 255, 65535]), fill=st.integers(0, 3))
@example(values=[1.5, 2.0, NAN], late=[], order=[2, 0, 1], src="float64", dst="uint16", rounding="nearest-even",
         oor=None, so=(200.0, 500.0), key=65535, fill=0)
@example(values=[1.5, 255.0, NAN, -0.0], late=[NAN], order=[], src="float64", dst="uint8", rounding="nearest-even",
         oor="clamp", so=None, key=None, fill=1)
@example(values=[300.0, -5.0, 0.25], late=[254.6], order=[], src="float32", dst="uint8", rounding="towards-zero",
         oor="clamp", so=None, key=255, fill=2)
def test_one_pass_blocks_against_fraction_reference(values: list[float], late: list[float], order: list[int],
                                                     src: str, dst: str, rounding: str, oor: str | None,
                                                     so: tuple[float, float] | None, key: int | None,
                                                     fill: int) -> None:
    info = np.iinfo(dst)
    if key is not None and not info.min <= key <= info.max:
        key = None
    offset, scale = so if so is not None else (None, 1.0)
    chain = _cached(Chain(src, dst, rounding, oor, offset, scale, enc=[(NAN, key)] if key is not None else [],
                          dec=[(key, NAN)] if key is not None else []))
    x = _blocks(values, late, src, order)
    # the fill value: a drawn value (present), NaN, -0.0 or one absent; the fill code: the
    # NaN key, the code of a drawn value, the type's extremes
    with np.errstate(over="ignore"):
        fill_value = np.asarray([values[0], NAN, -0.0, 12345.678][fill]).astype(src)[()]
    first = chain.element(x[0])
    own = 0 if first.fail or first.code is None else int(first.code)
    code = [key if key is not None else 0, own, int(info.max), int(info.min)][fill]
    _compare(x.reshape(2, -1), chain, fill_value, code)
    _compare(x[:0], chain, fill_value, code)                     # empty
    _compare(np.asarray(x[BLOCK + 3]), chain, fill_value, code)  # 0-d


@pytest.mark.parametrize("values", ZERO_AND_SUBNORMALS)
def test_one_pass_infinite_relative_error_index(values: list[float]) -> None:
    """The one-pass kernel ranks an original 0 read back non-zero above an overflowing
    quotient, as check_cast and the reference do (a block of them, repeated)."""
    x = np.tile(np.array(values, np.float64), BLOCK // len(values) + 1)
    _compare(x, _cached(Chain("float64", "uint16", offset=0.3, scale=1.0)), 7.5, 15)


@pytest.mark.parametrize("src", ["float32", "float64"])
@pytest.mark.parametrize("rounding", ROUNDINGS)
def test_one_pass_region_with_nan_and_fill(src: str, rounding: str) -> None:
    """A (4, 64, 64) region like convert's: NaN (the NaN key, also the fill code), values
    at the source fill value (NaN: bit-equal NaNs only), a value exactly at each code
    edge, -0.0; scale_offset to uint16."""
    rng = np.random.default_rng(ROUNDINGS.index(rounding))
    x = (rng.standard_normal((4, 64, 64)) * 8 + 265).astype(src)
    x[0, 0, :5] = np.nan
    x[1, 3, 7] = 200.0                      # code 0, exactly
    x[2, 5, 9] = np.asarray(-0.0, src)
    x[3, 1, :3] = np.asarray(200.0 + 65534 / 500, src)
    chain = _cached(Chain(src, "uint16", rounding, "clamp", 200.0, 500.0, enc=[(NAN, 65535)], dec=[(65535, NAN)]))
    _compare(x, chain, NAN, 65535)
    _compare(x, chain, float(x[1, 2, 3]), int(chain.element(x[1, 2, 3]).code))


def test_fill_counts_other_byte_orders_and_layouts() -> None:
    """A big-endian or strided source gives the counts of its values (not of its bytes)."""
    rng = np.random.default_rng(5)
    x = np.round(rng.random((6, 40)) * 50, 1)
    x[::2, ::3] = 7.5
    chain = [{"name": "scale_offset", "configuration": {"offset": 0, "scale": 2}},
             {"name": "cast_value", "configuration": {"data_type": "uint8"}}]
    enc, rep = quantize_with_report(x, chain, fills=(7.5, 15))
    assert enc is not None and rep.fill_counts == (int(np.count_nonzero(enc == 15)), int(np.count_nonzero(x == 7.5)))
    _, rep_be = quantize_with_report(x.astype(">f8"), chain, fills=(7.5, 15))
    _, rep_t = quantize_with_report(x.T, chain, fills=(np.float64(7.5), np.uint8(15)))
    assert rep_be.fill_counts == rep_t.fill_counts == rep.fill_counts
    assert quantize_with_report(x, chain)[1].fill_counts is None                  # not asked for
    assert quantize_with_report(x, chain, encode=False, fills=(7.5, 15))[1].fill_counts is None  # nothing encoded


@pytest.mark.parametrize("fills", [7.5, (7.5,), (7.5, 15, 1), ("a", 15), (7.5, 300), (7.5, 1.5), (1e300, 15),
                                   (7.5, -1), ([7.5], 15)])
def test_bad_fills_are_zarrcy_errors(fills: Any) -> None:
    x = np.linspace(0, 20, 30).astype(np.float32)
    chain = [{"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even"}}]
    with pytest.raises(MetadataError, match="fills"):
        quantize_with_report(x, chain, fills=fills)


def test_kernel_checks_the_fill_arrays() -> None:
    """cast_report_into refuses fill arrays of the wrong type or size before its loop."""
    from zarrcy._kernels._cast_report import cast_report_into
    from zarrcy.casting import parse_codecs
    from zarrcy.convert.options import parse_quantize

    _, cv = parse_codecs(parse_quantize("scale=1,dtype=uint8,out_of_range=clamp,nan=0") or [])
    enc, dec = cv.prepared(np.dtype(np.float64))
    x = np.zeros(10)
    args = (enc.dst.kernel_format(), enc.rounding, enc.out_of_range, True, 0.0, 1.0, enc.keys, enc.values,
            dec.dst.kernel_format(), dec.rounding, dec.out_of_range, dec.keys, dec.values)
    got = cast_report_into(x, np.empty(10, np.uint8), None, *args, np.zeros(1, np.uint8), np.zeros(1))
    assert got[-2:] == (10, 10)
    for fc, fv, what in ((np.zeros(1, np.int8), None, "fill_code"), (np.zeros(2, np.uint8), None, "fill_code"),
                         (None, np.zeros(1, np.float32), "fill_value"), (None, np.zeros(0), "fill_value"),
                         (np.zeros((1, 1), np.uint8), None, "fill_code")):
        with pytest.raises(ValueError, match=what):
            cast_report_into(x, None, None, *args, fc, fv)
