"""_grid.box_tables (a box selection of a shard as the inner-chunk kernel's tables, in
one call) against a slow exact reference: the selected indices of every dimension
listed with numpy, grouped by the inner chunk holding them."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels._grid import box_tables


def _reference(starts, n_sels, steps, ints, cs, grid):
    rows = []  # per dimension: [(inner chunk, local indices, output indices)]
    for a, n, s, i, c in zip(starts, n_sels, steps, ints, cs):
        idx = a + s * np.arange(n)
        dim = []
        for q in sorted(set((idx // c).tolist())):
            pos = np.flatnonzero(idx // c == q)
            dim.append((q, idx[pos] - q * c, np.zeros(1, np.int64) if i else pos))
        rows.append(dim)
    linear, coords = [], []
    for combo in itertools.product(*[range(len(r)) for r in rows]):
        lin = 0
        for d, j in enumerate(combo):
            lin = lin * grid[d] + rows[d][j][0]
        linear.append(lin)
        coords.append(combo)
    base, start, local, out = [], [], [], []
    for dim in rows:  # per dimension: its rows' starts, then one closing entry
        base.append(len(start))
        for _, loc, o in dim:
            start.append(len(local))
            local.extend(loc.tolist())
            out.extend(o.tolist())
        start.append(len(local))
    return linear, coords, base, start, local, out


@st.composite
def _cases(draw):
    r = draw(st.integers(0, 4))
    cs = [draw(st.integers(1, 6)) for _ in range(r)]
    grid = [draw(st.integers(1, 5)) for _ in range(r)]
    starts, n_sels, steps, ints = [], [], [], []
    for c, g in zip(cs, grid):
        size = c * g
        a = draw(st.integers(0, size - 1))
        if draw(st.booleans()):
            starts.append(a), n_sels.append(1), steps.append(1), ints.append(True)
            continue
        step = draw(st.integers(1, size + 2))
        n = draw(st.integers(1, (size - 1 - a) // step + 1))
        starts.append(a), n_sels.append(n), steps.append(step), ints.append(False)
    return starts, n_sels, steps, ints, cs, grid


@settings(max_examples=400, deadline=None)
@given(_cases())
def test_box_tables_match_reference(case):
    starts, n_sels, steps, ints, cs, grid = case
    linear, coords, base, start, local, out = box_tables(*case)
    ref = _reference(*case)
    assert linear.tolist() == ref[0]
    assert coords.shape == (len(ref[0]), len(cs))
    assert [tuple(c) for c in coords.tolist()] == [tuple(c) for c in ref[1]]
    assert base.tolist() == ref[2] and start.tolist() == ref[3]
    assert local.tolist() == ref[4] and out.tolist() == ref[5]


@pytest.mark.parametrize("bad", [
    ([0], [1], [1], [False], [0], [1]),           # chunk length 0
    ([0], [1], [0], [False], [2], [2]),           # step 0
    ([-1], [1], [1], [False], [2], [2]),          # negative start
    ([0], [0], [1], [False], [2], [2]),           # nothing selected
    ([0], [5], [1], [False], [2], [2]),           # leaves the shard (5 > 4)
    ([3], [2], [2], [False], [2], [2]),           # last index 5 >= 4
    ([4], [1], [1], [True], [2], [2]),            # an int outside the shard
    ([0], [2], [1], [True], [2], [2]),            # an int selecting two cells
    ([0], [2**62], [4], [False], [2], [2**62]),   # start + (n - 1) * step overflows int64
    ([0, 0], [1], [1], [False], [2], [2]),        # ragged arguments
])
def test_box_tables_refuses_bad_boxes(bad):
    with pytest.raises(ValueError, match="box_tables"):
        box_tables(*bad)
