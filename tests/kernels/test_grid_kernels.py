"""_kernels._grid against slow exact references."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _grid


@given(st.lists(st.tuples(st.integers(0, 10**12), st.integers(1, 10**6)), min_size=0, max_size=6))
def test_grid_shape(dims):
    shape = np.array([d[0] for d in dims], dtype=np.int64)
    chunks = np.array([d[1] for d in dims], dtype=np.int64)
    out = _grid.grid_shape(shape, chunks)
    assert out.tolist() == [-(-s // c) for s, c in dims]


def _slice_ref(chunk_len, start, stop, step):
    idx = list(range(start, stop, step))
    res = {}
    for k, i in enumerate(idx):
        c = i // chunk_len
        res.setdefault(c, []).append((i - c * chunk_len, k))
    return res


@settings(max_examples=300)
@given(st.integers(1, 50), st.integers(0, 200), st.integers(0, 200), st.integers(1, 70))
def test_slice_projection(chunk_len, start, stop, step):
    ch, cs, ce, os_, oe = _grid.slice_projection(chunk_len, start, stop, step)
    ref = _slice_ref(chunk_len, start, stop, step)
    assert ch.tolist() == sorted(ref)
    for c, a, b, o0, o1 in zip(ch, cs, ce, os_, oe):
        items = ref[int(c)]
        assert list(range(a, b, step)) == [i for i, _ in items]
        assert list(range(o0, o1)) == [k for _, k in items]


@settings(max_examples=300)
@given(st.integers(1, 20), st.lists(st.integers(0, 99), max_size=40))
def test_array_projection(chunk_len, idx):
    idx_a = np.array(idx, dtype=np.int64)
    ch, bounds, in_chunk, out_pos = _grid.array_projection(idx_a, chunk_len)
    assert ch.tolist() == sorted(set(i // chunk_len for i in idx))
    seen = np.zeros(len(idx), dtype=int)
    for j, c in enumerate(ch):
        sl = slice(bounds[j], bounds[j + 1])
        for ic, op in zip(in_chunk[sl], out_pos[sl]):
            assert idx[op] == c * chunk_len + ic
            seen[op] += 1
    assert (seen == 1).all()


def test_array_projection_readonly_input():
    a = np.array([5, 3, 9], dtype=np.int64)
    a.flags.writeable = False
    ch, _, _, _ = _grid.array_projection(a, 4)
    assert ch.tolist() == [0, 1, 2]


@given(st.binary(min_size=1, max_size=8), st.integers(0, 50), st.integers(-1, 400))
def test_is_constant(pattern, reps, flip):
    data = bytearray(pattern * reps)
    expect = True
    if 0 <= flip < len(data):
        data[flip] ^= 0xFF
        expect = False
    p = np.frombuffer(pattern, np.uint8)
    assert _grid.is_constant(np.frombuffer(bytes(data), np.uint8), p) == expect


def test_is_constant_threads():
    data = np.zeros(1 << 22, np.uint8)
    pat = np.zeros(4, np.uint8)
    res = []
    ts = [threading.Thread(target=lambda: res.append(_grid.is_constant(data, pat))) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert res == [True] * 4


# -- int64 edges and memory (issue 12 item 3, issue 13 item 1) ---------------------------

INT64_MAX = 2**63 - 1


@st.composite
def _huge_slices(draw):
    """(chunk_len, start, stop, step) anywhere in int64, at most ~100 selected indices
    (so ``range`` is a cheap exact oracle)."""
    chunk_len = draw(st.one_of(st.integers(1, 10), st.integers(1, INT64_MAX), st.sampled_from([2, 3, INT64_MAX])))
    start = draw(st.one_of(st.integers(0, INT64_MAX), st.integers(INT64_MAX - 50, INT64_MAX)))
    stop = draw(st.one_of(st.integers(start, INT64_MAX), st.integers(max(start, INT64_MAX - 5), INT64_MAX)))
    step = draw(st.integers(max(1, (stop - start) // 100), INT64_MAX))
    return chunk_len, start, stop, step


def _check_projection(chunk_len, start, stop, step):
    ch, cs, ce, os_, oe = _grid.slice_projection(chunk_len, start, stop, step)
    ref = _slice_ref(chunk_len, start, stop, step)
    assert ch.tolist() == sorted(ref)
    for c, a, b, o0, o1 in zip(ch.tolist(), cs.tolist(), ce.tolist(), os_.tolist(), oe.tolist()):
        items = ref[c]
        assert list(range(a, b, step)) == [i for i, _ in items]
        assert b - 1 == items[-1][0]  # tight
        assert list(range(o0, o1)) == [k for _, k in items]
    # memory follows the runs, not the span: the buffer behind them holds <= n_sel runs
    base = ch.base if ch.base is not None else ch
    assert base.nbytes <= 5 * 8 * max(1, len(range(start, stop, step)))


@settings(max_examples=400)
@given(_huge_slices())
def test_slice_projection_int64_edges(args):
    _check_projection(*args)


def test_slice_projection_last_chunk_near_int64_max():
    # issue 12 item 3: c0 + chunk_len overflowed for the last chunk (infinite loop, GIL released)
    for chunk_len in (1, 2, 3, 7, 2**62, INT64_MAX - 1, INT64_MAX):
        _check_projection(chunk_len, INT64_MAX - 1, INT64_MAX, 1)
        _check_projection(chunk_len, INT64_MAX - 3, INT64_MAX, 2)
        _check_projection(chunk_len, 0, INT64_MAX, 2**62)
        _check_projection(chunk_len, 0, INT64_MAX, INT64_MAX)
        _check_projection(chunk_len, 5, INT64_MAX, 2**61 + 3)


def test_slice_projection_memory_by_touched_chunks():
    # issue 13 item 1: shape 10**12, chunks 1000, [::4 * 10**11] allocated 6 GiB by span
    ch, cs, ce, os_, oe = _grid.slice_projection(1000, 0, 10**12, 4 * 10**11)
    assert ch.tolist() == [0, 4 * 10**8, 8 * 10**8]
    assert (ch.base if ch.base is not None else ch).nbytes <= 5 * 8 * 3
    # dense slices: one run per chunk of the span
    ch, cs, ce, os_, oe = _grid.slice_projection(10, 5, 95, 1)
    assert ch.tolist() == list(range(10)) and cs[0] == 5 and ce[-1] == 5


def test_slice_projection_refuses_invalid():
    for args in [(0, 0, 5, 1), (-1, 0, 5, 1), (3, -1, 5, 1), (3, 0, 5, 0), (3, 0, 5, -2)]:
        with pytest.raises(ValueError):
            _grid.slice_projection(*args)
    with pytest.raises(OverflowError):  # Python ints beyond int64 are normalised by indexing.py
        _grid.slice_projection(3, 0, 5, 2**70)
    for args in [(3, 5, 5, 1), (3, 7, 5, 1), (3, INT64_MAX, INT64_MAX, 1)]:
        assert all(len(x) == 0 for x in _grid.slice_projection(*args))


@given(st.lists(st.tuples(st.integers(0, INT64_MAX), st.integers(1, INT64_MAX)), max_size=6))
def test_grid_shape_int64_edges(dims):
    shape = np.array([d[0] for d in dims], dtype=np.int64)
    chunks = np.array([d[1] for d in dims], dtype=np.int64)
    assert _grid.grid_shape(shape, chunks).tolist() == [-(-s // c) for s, c in dims]


def test_grid_shape_refuses_invalid():
    for s, c in [([5], [0]), ([-1], [2]), ([5, 5], [1, -3])]:
        with pytest.raises(ValueError):
            _grid.grid_shape(np.array(s, np.int64), np.array(c, np.int64))
    with pytest.raises(ValueError):
        _grid.grid_shape(np.array([5, 5], np.int64), np.array([1], np.int64))
    assert _grid.grid_shape(np.array([INT64_MAX], np.int64), np.array([2], np.int64)).tolist() == [2**62]


@given(st.sampled_from([1, 2, 3, 2**40, INT64_MAX]), st.lists(st.integers(0, INT64_MAX), max_size=20))
def test_array_projection_int64_edges(chunk_len, idx):
    ch, bounds, in_chunk, out_pos = _grid.array_projection(np.array(idx, dtype=np.int64), chunk_len)
    assert ch.tolist() == sorted({i // chunk_len for i in idx})
    for j, c in enumerate(ch.tolist()):
        for ic, op in zip(in_chunk[bounds[j] : bounds[j + 1]].tolist(), out_pos[bounds[j] : bounds[j + 1]].tolist()):
            assert idx[op] == c * chunk_len + ic


def test_array_projection_refuses_invalid():
    with pytest.raises(ValueError):
        _grid.array_projection(np.array([3, -1], np.int64), 4)
    with pytest.raises(ValueError):
        _grid.array_projection(np.array([3], np.int64), 0)
