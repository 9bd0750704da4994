"""``_kernels/_sharding.plan_reads``: entry lookup, plausibility checks and coalescing of
the inner chunks a read touches, in one call.  Hostile index entries (huge sizes, ranges
past the shard, totals a sparse file could claim) are refused with -1 before anything is
read; plausible ones coalesce exactly as :func:`coalesce` does (the same rule)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zarrcy._kernels import _sharding as K

SENTINEL = (1 << 64) - 1
MiB = 1 << 20


def _plan(index, linear, shard_size=-1, max_one=MiB, per_chunk=MiB, slack=MiB, gap=0, cap=1 << 40):
    index = np.asarray(index, np.uint64).reshape(-1)
    linear = np.asarray(linear, np.int64)
    m = linear.size
    outs = [np.empty(m, np.int64) for _ in range(3)] + [np.empty(m, np.uint64) for _ in range(2)]
    ng = K.plan_reads(index, linear, shard_size, max_one, per_chunk, slack, gap, cap, *outs)
    return ng, outs


def test_missing_chunks_and_offsets():
    index = [[0, 10], [SENTINEL, SENTINEL], [10, 5], [100, 7]]
    ng, (src, off, ln, gs, ge) = _plan(index, [0, 1, 2, 3], shard_size=200, gap=0)
    assert ng == 2
    assert src.tolist() == [0, -1, 0, 1] and ln.tolist() == [10, -1, 5, 7]
    assert off.tolist()[0] == 0 and off.tolist()[2] == 10 and off.tolist()[3] == 0
    assert (gs[:ng].tolist(), ge[:ng].tolist()) == ([0, 100], [15, 107])


@pytest.mark.parametrize("index,kw", [
    ([[0, 2 * MiB]], {}),                                     # one entry larger than max_one
    ([[0, SENTINEL - 1]], {}),                                # a size near 2^64
    ([[SENTINEL - 5, 10]], {"max_one": SENTINEL}),            # offset + size overflows
    ([[150, 100]], {"shard_size": 200}),                      # past the end of the shard
    ([[1 << 40, 1]], {"shard_size": 200}),                    # offset far past the end
    ([[0, MiB]] * 4, {"per_chunk": 1000, "slack": 1000}),     # total a sparse file could claim
])
def test_hostile_entries_are_refused(index, kw):
    ng, _ = _plan(index, list(range(len(index))), **kw)
    assert ng == -1


@pytest.mark.parametrize("linear", [[-1], [2], [1 << 40]])
def test_linear_out_of_range_raises(linear):
    with pytest.raises(IndexError):
        _plan([[0, 1], [1, 1]], linear)


def test_outputs_too_small_raise():
    index = np.zeros(4, np.uint64)
    small = np.empty(0, np.int64)
    with pytest.raises(ValueError):
        K.plan_reads(index, np.array([0, 1], np.int64), -1, 1, 1, 1, 0, 1, small, small, small,
                     np.empty(2, np.uint64), np.empty(2, np.uint64))


@given(st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 300)), min_size=1, max_size=40),
       st.integers(0, 200), st.integers(1, 3000))
def test_groups_equal_coalesce(entries, gap, cap):
    """Plausible entries: the same groups as :func:`coalesce` over the same ranges."""
    index = np.array(entries, np.uint64)
    n = len(entries)
    ng, (src, off, ln, gs, ge) = _plan(index, np.arange(n), gap=gap, cap=cap, max_one=1 << 20, per_chunk=1 << 20)
    assert ng > 0
    offs, nbs = index[:, 0].copy(), index[:, 1].copy()
    order = np.argsort(offs, kind="stable").astype(np.int64)
    g_of = np.empty(n, np.int64)
    s2, e2 = np.empty(n, np.uint64), np.empty(n, np.uint64)
    ng2 = K.coalesce(offs, nbs, order, gap, cap, g_of, s2, e2)
    assert ng == ng2
    assert sorted(zip(gs[:ng].tolist(), ge[:ng].tolist())) == sorted(zip(s2[:ng2].tolist(), e2[:ng2].tolist()))
    # every task's bytes lie inside its group
    for k in range(n):
        g = src[k]
        assert ln[k] == nbs[k]
        assert gs[g] + off[k] == offs[k] and offs[k] + nbs[k] <= ge[g]
