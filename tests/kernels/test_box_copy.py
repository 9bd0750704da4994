"""_kernels._box_copy (a box of an array assembled from whole chunks, issue 24.4) against
a slow exact reference: numpy slicing of the padded array the chunks were cut from."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels._box_copy import copy_box


def _plan(lo, hi, cs):
    """(pieces, counts, chunk coordinates per dimension) of the box [lo, hi)."""
    pieces, counts, qs = [], [], []
    for a, b, c in zip(lo, hi, cs):
        qd = list(range(a // c, (b - 1) // c + 1))
        for q in qd:
            s = max(a - q * c, 0)
            pieces.append((s, min(b - q * c, c) - s, max(q * c - a, 0)))
        counts.append(len(qd))
        qs.append(qd)
    return np.array(pieces, np.int64).reshape(-1, 3), np.array(counts, np.int64), qs


@st.composite
def _cases(draw):
    r = draw(st.integers(1, 4))
    cs = [draw(st.integers(1, 5)) for _ in range(r)]
    shape = [draw(st.integers(1, 17)) for _ in range(r)]
    lo = [draw(st.integers(0, n - 1)) for n in shape]
    hi = [draw(st.integers(a + 1, n)) for a, n in zip(lo, shape)]
    dtype = draw(st.sampled_from(["u1", "<i2", ">f4", "<f8", "<c16", "V3"]))
    return r, cs, shape, lo, hi, np.dtype(dtype), draw(st.integers(0, 2**32 - 1))


@settings(max_examples=300, deadline=None)
@given(_cases())
def test_against_numpy_slicing(case):
    r, cs, shape, lo, hi, dtype, seed = case
    rng = np.random.default_rng(seed)
    grid = [-(-n // c) for n, c in zip(shape, cs)]
    padded = rng.integers(0, 256, [g * c for g, c in zip(grid, cs)] + [dtype.itemsize], dtype=np.uint8)
    padded = padded.view(dtype).reshape([g * c for g, c in zip(grid, cs)])
    fill = rng.integers(0, 256, dtype.itemsize, dtype=np.uint8).view(dtype).reshape(())
    pieces, counts, qs = _plan(lo, hi, cs)
    expect = padded[tuple(slice(a, b) for a, b in zip(lo, hi))].copy()
    srcs = []
    for task in itertools.product(*qs):
        region = tuple(slice(q * c, (q + 1) * c) for q, c in zip(task, cs))
        if rng.random() < 0.25:  # an unstored chunk: the fill value
            srcs.append(None)
            expect[tuple(slice(max(s.start, a) - a, min(s.stop, b) - a) for s, a, b in zip(region, lo, hi))] = fill
        else:
            srcs.append(np.ascontiguousarray(padded[region]))
    out = np.empty(expect.shape, dtype)
    copy_box(srcs, pieces, counts, np.array(cs, np.int64), out, fill.tobytes())
    assert out.tobytes() == expect.tobytes()


def _one():
    """A valid 2-d call: box [1, 5) x [2, 3) of chunks (4, 4)."""
    pieces, counts, qs = _plan([1, 2], [5, 3], [4, 4])
    srcs = [np.arange(16, dtype="<u2") + 100 * k for k in range(int(np.prod(counts)))]
    return srcs, pieces, counts, np.array([4, 4], np.int64), np.empty((4, 1), "<u2"), b"\0\0"


def test_valid_call():
    srcs, pieces, counts, cs, out, fill = _one()
    copy_box(srcs, pieces, counts, cs, out, fill)
    assert out.ravel().tolist() == [6, 10, 14, 102]


@pytest.mark.parametrize("what, change, match", [
    ("pieces", lambda p: np.array([[0, 5, 0], *p[1:]], np.int64), r"pieces\[0\] \(dimension 0\)"),
    ("pieces", lambda p: np.array([*p[:-1], [2, 1, 1]], np.int64), r"ostart \+ extent <= 1"),
    ("pieces", lambda p: np.array([[-1, 1, 0], *p[1:]], np.int64), r"0 <= start"),
    ("pieces", lambda p: p[:-1].copy(), r"pieces: expected 3 or more rows"),
    ("pieces", lambda p: np.vstack([p, p[-1:]]), r"pieces: expected 3 rows"),
    ("counts", lambda c: np.array([2, 1, 1], np.int64), r"chunk_shape / out: expected rank 3"),
    ("counts", lambda c: np.array([0, 1], np.int64), r"counts\[0\]: expected >= 1"),
    ("srcs", lambda s: s[:1], r"srcs: expected 2 entries"),
    ("srcs", lambda s: [s[0], np.arange(15, dtype="<u2")], r"srcs\[1\]: expected a C-contiguous array of 16"),
    ("srcs", lambda s: [s[0], np.arange(32, dtype="<u2")[::2]], r"srcs\[1\]: expected a C-contiguous"),
    ("srcs", lambda s: [s[0], np.arange(16, dtype="<u4")], r"of 2 bytes"),
    ("srcs", lambda s: [s[0], b"x" * 32], r"srcs\[1\]: expected a numpy array or None"),
    ("out", lambda o: np.empty((4, 2), "<u2")[:, :1], r"out: expected a C-contiguous writable array"),
    ("fill", lambda f: b"\0", r"fill: expected 2 bytes"),
])
def test_bad_tables_are_refused_before_copying(what, change, match):
    srcs, pieces, counts, cs, out, fill = _one()
    args = {"srcs": srcs, "pieces": pieces, "counts": counts, "out": out, "fill": fill}
    args[what] = change(args[what])
    before = args["out"].copy()
    with pytest.raises((ValueError, TypeError), match=match):
        copy_box(args["srcs"], args["pieces"], args["counts"], cs, args["out"], args["fill"])
    assert args["out"].tobytes() == before.tobytes() or what == "out"


def test_read_only_out_is_refused():
    srcs, pieces, counts, cs, out, fill = _one()
    out.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        copy_box(srcs, pieces, counts, cs, out, fill)
