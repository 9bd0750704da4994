"""_kernels._grid against slow exact references."""

from __future__ import annotations

import threading

import numpy as np
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
