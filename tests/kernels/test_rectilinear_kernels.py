"""_kernels/_rectilinear against a slow reference built from the expanded edge list."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _rectilinear as rk

INT64_MAX = (1 << 63) - 1


def tables(runs):
    origin, first, edge = [], [], []
    o = c = 0
    for e, n in runs:
        origin.append(o)
        first.append(c)
        edge.append(e)
        o += e * n
        c += n
    return np.array(origin, np.int64), np.array(first, np.int64), np.array(edge, np.int64)


def expand(runs):
    return [e for e, n in runs for _ in range(n)]


def ref_chunk_of(edges, i):
    """The spec's procedure: the first cumulative sum that exceeds i."""
    acc = 0
    for c, e in enumerate(edges):
        if acc + e > i:
            return c, i - acc
        acc += e
    raise IndexError(i)


runs_st = st.lists(st.tuples(st.integers(1, 9), st.integers(1, 5)), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(runs=runs_st, data=st.data())
def test_locate_and_extents(runs, data):
    t = tables(runs)
    edges = expand(runs)
    total = sum(edges)
    idx = np.array(data.draw(st.lists(st.integers(0, total - 1), max_size=20)), np.int64)
    chunk, local = rk.locate(*t, idx)
    for i, c, lo in zip(idx.tolist(), chunk.tolist(), local.tolist()):
        assert (c, lo) == ref_chunk_of(edges, i)
    cs = np.arange(len(edges), dtype=np.int64)
    start, length = rk.chunk_extents(*t, cs)
    assert length.tolist() == edges
    assert start.tolist() == np.concatenate([[0], np.cumsum(edges)[:-1]]).tolist()


def ref_slice_projection(edges, start, stop, step):
    sel = list(range(start, stop, step))
    out = []
    for pos, i in enumerate(sel):
        c, lo = ref_chunk_of(edges, i)
        if out and out[-1][0] == c:
            out[-1][2] = lo + 1
            out[-1][4] = pos + 1
        else:
            out.append([c, lo, lo + 1, pos, pos + 1])
    return out


@settings(max_examples=300, deadline=None)
@given(runs=runs_st, data=st.data())
def test_slice_projection(runs, data):
    t = tables(runs)
    edges = expand(runs)
    total = sum(edges)
    size = data.draw(st.integers(0, total))
    start = data.draw(st.integers(0, max(size, 0)))
    stop = data.draw(st.integers(start, max(size, start)))
    step = data.draw(st.integers(1, 12))
    got = rk.slice_projection(*t, start, stop, step)
    got = [list(r) for r in zip(*(a.tolist() for a in got))]
    assert got == ref_slice_projection(edges, start, stop, step)


@settings(max_examples=300, deadline=None)
@given(runs=runs_st, data=st.data())
def test_array_projection(runs, data):
    t = tables(runs)
    edges = expand(runs)
    total = sum(edges)
    idx = np.array(data.draw(st.lists(st.integers(0, total - 1), max_size=25)), np.int64)
    chunk, bounds, in_chunk, order = rk.array_projection(*t, idx)
    # every index appears once, in its chunk, at its output position; chunks ascend
    seen = []
    for j, c in enumerate(chunk.tolist()):
        for k in range(bounds[j], bounds[j + 1]):
            pos = int(order[k])
            assert ref_chunk_of(edges, int(idx[pos])) == (c, int(in_chunk[k]))
            seen.append(pos)
    assert sorted(seen) == list(range(len(idx)))
    assert chunk.tolist() == sorted(set(chunk.tolist()))


def test_huge_run_is_constant_size_and_exact():
    # 2**40 chunks of 3, then 2 chunks of 5: no expansion, exact positions near the end
    runs = [(3, 1 << 40), (5, 2)]
    t = tables(runs)
    base = 3 << 40
    chunk, local = rk.locate(*t, np.array([base - 1, base, base + 7], np.int64))
    assert chunk.tolist() == [(1 << 40) - 1, 1 << 40, (1 << 40) + 1]
    assert local.tolist() == [2, 0, 2]
    ch, cs, ce, os_, oe = rk.slice_projection(*t, 0, base + 10, 1 << 39)
    assert len(ch) == 7  # 7 selected elements -> at most 7 chunks, not 2**40


def test_unbounded_axis_near_int64_max():
    # the integer form: one unbounded run; the last chunk's end saturates, never wraps
    t = (np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([3], np.int64))
    stop = INT64_MAX
    ch, cs, ce, os_, oe = rk.slice_projection(*t, stop - 2, stop, 1)
    assert ch.tolist() == sorted({(stop - 2) // 3, (stop - 1) // 3})
    sel = list(range(stop - 2, stop))
    got = []
    for c, a, b in zip(ch.tolist(), cs.tolist(), ce.tolist()):
        got.extend(range(c * 3 + a, c * 3 + b))
    assert got == sel
    ch, *_ = rk.slice_projection(*t, 0, stop, 1 << 62)
    assert len(ch) == 2


def test_bad_tables_and_arguments():
    good = tables([(2, 3)])
    with pytest.raises(ValueError):
        rk.locate(np.array([1], np.int64), np.array([0], np.int64), np.array([2], np.int64), np.array([0], np.int64))
    with pytest.raises(ValueError):
        rk.locate(np.array([0], np.int64), np.array([0], np.int64), np.array([0], np.int64), np.array([0], np.int64))
    with pytest.raises(ValueError):
        rk.locate(np.array([0, 0], np.int64), np.array([0, 1], np.int64), np.array([2, 2], np.int64), np.array([0], np.int64))
    with pytest.raises(IndexError):
        rk.locate(*good, np.array([-1], np.int64))
    with pytest.raises(IndexError):
        rk.array_projection(*good, np.array([3, -2], np.int64))
    with pytest.raises(ValueError):
        rk.slice_projection(*good, 0, 4, 0)


def test_read_only_inputs_and_threads():
    runs = [(4, 100), (7, 50), (1, 1000)]
    t = tuple(a.copy() for a in tables(runs))
    for a in t:
        a.setflags(write=False)
    idx = np.arange(0, 400 + 350 + 1000, 3, dtype=np.int64)
    idx.setflags(write=False)
    expect = rk.locate(*t, idx)
    errors = []

    def worker():
        for _ in range(50):
            got = rk.locate(*t, idx)
            if not all(np.array_equal(g, e) for g, e in zip(got, expect)):
                errors.append("mismatch")

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    edges = expand(runs)
    for i, c, lo in itertools.islice(zip(idx.tolist(), *(a.tolist() for a in expect)), 0, None, 37):
        assert (c, lo) == ref_chunk_of(edges, i)
