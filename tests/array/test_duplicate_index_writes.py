"""Writes with repeated indices equal numpy's, on plain and sharded arrays (issue 23).

numpy assigns ``ref[idx] = values`` in order, so for a repeated index the **last** value
wins.  The other write tests give every cell a value derived from its coordinates, so a
wrong occurrence winning could not show; here every written value is distinct.  The
sharded cases of interest:

* repeated indices whose *count* equals an inner chunk's size but which cover only part
  of it (``[2, 2]`` on an inner chunk of two): the chunk must be merged with its stored
  data, never taken as fully overwritten;
* repeats that do cover a whole inner chunk, in any order;
* many points (with repeats) in one shard, spread over many inner chunks.

The property tests run derandomized (tests/conftest.py), so they replay the same draws
every run; the ``@example``s pin the cases above so they are tried whatever the drawing.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zarrcy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = ["plain", "sharded", "one-shard"]


def _make(shape, chunks, kind):
    ref = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) * 3 - 7
    kw = {}
    if kind == "sharded":
        kw = dict(shards=tuple(c * 2 for c in chunks))
    elif kind == "one-shard":  # every point of the write in one shard
        kw = dict(shards=tuple(-(-s // c) * c for s, c in zip(shape, chunks)))
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=shape, dtype="int32", chunks=chunks, fill_value=-1, **kw)
    a[...] = ref
    return a, ref


@st.composite
def dup_case(draw, max_ndim=3):
    """(shape, chunks, per-axis index arrays with repeats)."""
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.integers(1, 8), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    idx = []
    for n in shape:
        pool = draw(st.lists(st.integers(-n, n - 1), min_size=1, max_size=3))
        idx.append(np.array(draw(st.lists(st.sampled_from(pool), min_size=1, max_size=6)), dtype=np.int64))
    return shape, chunks, tuple(idx)


# --------------------------------------------------------------------------------------
# oindex
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@example(case=((8,), (2,), (np.array([2, 2]),)))  # count == inner chunk size, half covered
@example(case=((8,), (2,), (np.array([3, 2, 3, 2, 5]),)))  # a whole inner chunk, repeated, unordered
@example(case=((8,), (4,), (np.array([1, 1, 2, 2]),)))  # four indices, two cells of a chunk of four
@example(case=((4, 4), (2, 2), (np.array([0, 0, 1]), np.array([1, 1, 0, 1]))))
@example(case=((4, 6), (2, 3), (np.array([-1, 3, 2, 2]), np.array([0, 1, 2, 2, 1, 0]))))
@example(case=((2, 2, 2), (1, 2, 2), (np.array([1, 1]), np.array([0, 1, 0]), np.array([1, 0, 1, 0]))))
@SETTINGS
@given(case=dup_case())
def test_oindex_write_with_repeats_equals_numpy(kind, case):
    shape, chunks, idx = case
    a, ref = _make(shape, chunks, kind)
    value = (np.arange(int(np.prod([len(i) for i in idx])), dtype=np.int32) + 1000).reshape([len(i) for i in idx])
    ref[np.ix_(*idx)] = value  # the oracle: numpy, last occurrence wins
    a.oindex[idx] = value
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("kind", KINDS)
def test_oindex_write_repeats_with_slices_and_ints(kind):
    """Repeats on one axis, a strided slice and an int on the others (the int drops its
    axis): ``a.oindex[2, rows, 1:5:2]`` is ``ref[2][np.ix_(rows, [1, 3])]``."""
    a, ref = _make((6, 4, 5), (2, 2, 3), kind)
    rows = np.array([3, 0, 3, 1, 0])
    value = np.arange(5 * 2, dtype=np.int32).reshape(5, 2) + 500
    ref[2][np.ix_(rows, np.arange(1, 5, 2))] = value
    assert ref[2, 3, 1] == value[2, 0] and ref[2, 0, 3] == value[4, 1]  # the last occurrences
    a.oindex[2, rows, 1:5:2] = value
    np.testing.assert_array_equal(a[...], ref)


# --------------------------------------------------------------------------------------
# vindex
# --------------------------------------------------------------------------------------
@st.composite
def point_case(draw, max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.integers(1, 8), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, s)) for s in shape)
    npts = draw(st.integers(1, 24))
    # few distinct points, many repeats
    distinct = draw(st.lists(st.tuples(*(st.integers(-n, n - 1) for n in shape)), min_size=1, max_size=4))
    pts = draw(st.lists(st.sampled_from(distinct), min_size=npts, max_size=npts))
    return shape, chunks, tuple(np.array([p[d] for p in pts], dtype=np.int64) for d in range(ndim))


@pytest.mark.parametrize("kind", KINDS)
@example(case=((8,), (2,), (np.array([2, 2]),)))
@example(case=((8,), (2,), (np.array([3, 2, 3, 2, 3]),)))  # a whole inner chunk, the last of each wins
@example(case=((4, 4), (2, 2), (np.array([0, 1, 0, 1, 0, 1, 0]), np.array([0, 0, 1, 1, 0, 1, 0]))))
@example(case=((6, 6), (2, 2), (np.array([5, -1, 0, 0, 3, 3, 5]), np.array([5, 5, 0, -6, 2, 2, -1]))))
@example(case=((3, 4, 5), (1, 2, 5), (np.array([2, 2, 0, -1]), np.array([3, 3, 0, 3]), np.array([4, 4, 0, -1]))))
@SETTINGS
@given(case=point_case())
def test_vindex_write_with_repeats_equals_numpy(kind, case):
    shape, chunks, idx = case
    a, ref = _make(shape, chunks, kind)
    value = np.arange(len(idx[0]), dtype=np.int32) + 9000
    ref[idx] = value  # numpy: the last occurrence of a point wins
    a.vindex[idx] = value
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("kind", ["sharded", "one-shard"])
def test_many_points_per_shard_with_repeats(kind):
    """Thousands of points (every cell several times, shuffled) into shards of many inner
    chunks: one read-modify-write per shard, the last value of each cell kept."""
    shape, chunks = (24, 30), (3, 5)
    a, ref = _make(shape, chunks, kind)
    rng = np.random.default_rng(7)
    cells = np.repeat(np.arange(24 * 30), 3)
    rng.shuffle(cells)
    i, j = np.unravel_index(cells, shape)
    value = np.arange(cells.size, dtype=np.int32)
    ref[i, j] = value
    a.vindex[i, j] = value
    np.testing.assert_array_equal(a[...], ref)
    # and an oindex write with every row and column twice
    rows = rng.permutation(np.repeat(np.arange(24), 2))
    cols = rng.permutation(np.repeat(np.arange(30), 2))
    v2 = np.arange(rows.size * cols.size, dtype=np.int32).reshape(rows.size, cols.size) - 50_000
    ref[np.ix_(rows, cols)] = v2
    a.oindex[rows, cols] = v2
    np.testing.assert_array_equal(a[...], ref)


def test_mask_selection_write_equals_numpy():
    """A boolean mask cannot repeat a cell: written once each, in C order."""
    for kind in KINDS:
        a, ref = _make((5, 7), (2, 3), kind)
        mask = (ref % 4) == 1
        value = np.arange(int(mask.sum()), dtype=np.int32) + 77
        ref[mask] = value
        a.vindex[mask] = value
        np.testing.assert_array_equal(a[...], ref)
