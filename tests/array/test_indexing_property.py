"""Selections on zarrcy arrays equal numpy's on the same data (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zarrcy

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def array_and_chunks(draw, max_ndim=3):
    ndim = draw(st.integers(1, max_ndim))
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, s + 2)) for s in shape)
    return shape, chunks


def _make(shape, chunks, sharded=False):
    data = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) * 3 - 7
    kw = {}
    if sharded:
        kw = dict(shards=tuple(c * 2 for c in chunks))
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=shape, dtype="int32", chunks=chunks, fill_value=-1, **kw)
    a[...] = data
    return a, data


@st.composite
def basic_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.integers(1, 4))
            sel.append(slice(start, stop, step))
        else:
            sel.append(slice(None))
    # sometimes use Ellipsis / newaxis
    if draw(st.booleans()) and sel:
        k = draw(st.integers(0, len(sel)))
        sel = sel[:k] + [Ellipsis]
    if draw(st.booleans()):
        sel.insert(draw(st.integers(0, len(sel))), None)
    return tuple(sel)


@SETTINGS
@given(st.data())
def test_basic_read_matches_numpy(data):
    shape, chunks = data.draw(array_and_chunks())
    a, ref = _make(shape, chunks)
    sel = data.draw(basic_selection(shape))
    np.testing.assert_array_equal(a[sel], ref[sel])


@SETTINGS
@given(st.data())
def test_basic_write_matches_numpy(data):
    shape, chunks = data.draw(array_and_chunks())
    a, ref = _make(shape, chunks)
    sel = data.draw(basic_selection(shape))
    target_shape = ref[sel].shape
    value = np.arange(int(np.prod(target_shape)), dtype=np.int32).reshape(target_shape) + 1000
    ref[sel] = value
    a[sel] = value
    np.testing.assert_array_equal(a[...], ref)


@st.composite
def orthogonal_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "ints", "mask"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(0, n)), draw(st.none() | st.integers(0, n)), draw(st.integers(1, 3))))
        elif kind == "ints":
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=6)), dtype=np.int64))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
    return tuple(sel)


def _np_ortho(ref, sel):
    # numpy equivalent of orthogonal indexing: apply each axis in turn
    out = ref
    axis = 0
    for s in sel:
        if isinstance(s, np.ndarray):
            idx = np.flatnonzero(s) if s.dtype == bool else s
            out = np.take(out, idx, axis=axis)
            axis += 1
        elif isinstance(s, slice):
            out = out[(slice(None),) * axis + (s,)]
            axis += 1
        else:
            out = np.take(out, s, axis=axis)
    return out


@SETTINGS
@given(st.data())
def test_oindex_read_matches_numpy(data):
    shape, chunks = data.draw(array_and_chunks())
    sharded = data.draw(st.booleans())
    a, ref = _make(shape, chunks, sharded=sharded)
    sel = data.draw(orthogonal_selection(shape))
    np.testing.assert_array_equal(a.oindex[sel], _np_ortho(ref, sel))


#: regression (found by this property, fixed in codecs/_base.assign): a sharded oindex write
#: with one index array and an int apart from it, e.g. ``a.oindex[0, :, [0, 1]] = v``, was
#: stored transposed, because numpy moves the int+array (advanced) dimension to the front


@st.composite
def oindex_write_case(draw):
    shape, chunks = draw(array_and_chunks())
    return shape, chunks, draw(orthogonal_selection(shape))


@pytest.mark.parametrize("sharded", [False, True])
@example(case=((1, 2, 3), (1, 2, 3), (0, slice(None), np.array([0, 1]))))  # the transposed-write regression
@example(case=((7, 5), (3, 2), (np.array([-1, 0, -7, 3, 0, 6]), np.array([True, False, False, True, True]))))
@SETTINGS
@given(case=oindex_write_case())
def test_oindex_write_matches_numpy(sharded, case):
    """The selection is written exactly as drawn: negative, unsorted and duplicate
    indices, masks, ints and strided slices, on sharded arrays too.  The value of each
    written cell depends only on the cell's coordinates, so duplicate indices write the
    same value whichever occurrence lands last."""
    shape, chunks, sel = case
    a, ref = _make(shape, chunks, sharded=sharded)
    # per axis, the cells each output position writes (numpy's meaning of the selection)
    parts = []
    for s, n in zip(sel, shape):
        if isinstance(s, np.ndarray):
            parts.append(np.flatnonzero(s) if s.dtype == bool else np.where(s < 0, s + n, s))
        elif isinstance(s, slice):
            parts.append(np.arange(*s.indices(n)))
        else:
            parts.append(np.array([s % n]))
    grids = np.meshgrid(*parts, indexing="ij") if parts else []
    full = np.full(tuple(len(p) for p in parts), 500, dtype=np.int32)
    for k, g in enumerate(grids):
        full += (g * 10**k).astype(np.int32)
    ref[np.ix_(*parts)] = full
    value = full.reshape(_np_ortho(np.empty(shape), sel).shape)  # int-selected axes dropped
    a.oindex[sel] = value
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize("rectilinear", [False, True])
def test_sharded_oindex_write_int_and_array_apart(rectilinear):
    for shape, sel, value in (((1, 2, 3), (0, slice(None), np.array([0, 1])), [[1, 2], [3, 4]]),
                              ((3, 4, 6), (1, slice(None), np.array([0, 3])), np.arange(8).reshape(4, 2))):
        shards = [[1] * shape[0], [2] * (shape[1] // 2), [3] * (shape[2] // 3)] if rectilinear else (1, 4, 3)
        a = zarrcy.create_array(zarrcy.MemoryStore(), shape=shape, dtype="int32", chunks=(1, 2, 3),
                                shards=shards, fill_value=-1)
        ref = np.full(shape, -1, dtype=np.int32)
        a.oindex[sel] = value
        ref[sel[0]][np.ix_(np.arange(shape[1]), sel[2])] = value
        np.testing.assert_array_equal(a[...], ref)


def test_oindex_write_duplicates_negative_unsorted_sharded():
    """The cases the property covers, fixed: they fail every run if they break."""
    for sharded in (False, True):
        a, ref = _make((7, 5), (3, 2), sharded=sharded)
        rows = np.array([-1, 0, -7, 3, 0, 6])
        mask = np.array([True, False, False, True, True])
        a.oindex[rows, mask] = 77
        ref[np.ix_(rows % 7, np.flatnonzero(mask))] = 77
        np.testing.assert_array_equal(a[...], ref)
        a.oindex[np.array([4, 2]), np.array([-1, -5])] = np.array([[1, 2], [3, 4]], dtype=np.int32)
        ref[np.ix_([4, 2], [4, 0])] = [[1, 2], [3, 4]]
        np.testing.assert_array_equal(a[...], ref)


@SETTINGS
@given(st.data())
def test_vindex_matches_numpy(data):
    shape, chunks = data.draw(array_and_chunks())
    sharded = data.draw(st.booleans())
    a, ref = _make(shape, chunks, sharded=sharded)
    npts = data.draw(st.integers(0, 8))
    idx = tuple(np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=npts, max_size=npts)), dtype=np.int64) for n in shape)
    np.testing.assert_array_equal(a.vindex[idx], ref[idx])
    if npts:
        new = np.arange(npts, dtype=np.int32) + 9000
        # with duplicates the last write wins in numpy; keep indices unique for a fair check
        flat = np.ravel_multi_index(tuple(np.where(i < 0, i + n, i) for i, n in zip(idx, shape)), shape)
        _, first = np.unique(flat, return_index=True)
        uidx = tuple(i[first] for i in idx)
        ref[uidx] = new[first]
        a.vindex[uidx] = new[first]
        np.testing.assert_array_equal(a[...], ref)


def test_vindex_mask_and_2d_coords():
    a, ref = _make((6, 7), (4, 3))
    mask = (ref % 3) == 0
    np.testing.assert_array_equal(a.vindex[mask], ref[mask])
    i = np.array([[0, 5], [2, 3]])
    j = np.array([[6, 0], [1, 1]])
    np.testing.assert_array_equal(a.vindex[i, j], ref[i, j])
    np.testing.assert_array_equal(a[mask], ref[mask])


def test_blocks():
    a, ref = _make((10, 7), (4, 3))
    np.testing.assert_array_equal(a.blocks[1, 2], ref[4:8, 6:7])
    np.testing.assert_array_equal(a.blocks[-1], ref[8:10])
    np.testing.assert_array_equal(a.blocks[0:2, 1:], ref[0:8, 3:7])
    a.blocks[2, 0] = 0
    ref[8:10, 0:3] = 0
    np.testing.assert_array_equal(a[...], ref)


@pytest.mark.parametrize(
    "sel, err",
    [
        ((10, 0), IndexError),
        ((0, -8), IndexError),
        ((slice(None, None, -1),), IndexError),
        ((0, 0, 0), IndexError),
        ((Ellipsis, Ellipsis), IndexError),
        ((1.5,), IndexError),
    ],
)
def test_bad_selections(sel, err):
    a, _ = _make((6, 7), (4, 3))
    with pytest.raises(err):
        a[sel]


def test_wrong_shape_assignment():
    a, _ = _make((6, 7), (4, 3))
    with pytest.raises(ValueError):
        a[0:2, 0:3] = np.zeros((3, 2), dtype=np.int32)


def test_zero_d_array():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(), dtype="float64", fill_value=1.5)
    assert a[()] == 1.5
    a[...] = 3.0
    assert a[...] == 3.0
    assert a[()] == 3.0


def test_sharded_integer_selection_covering_inner_chunk():
    # regression: an index array covering a whole inner chunk was decoded into a copy
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(1,), dtype="int32", chunks=(1,), shards=(2,), fill_value=-1)
    a[...] = np.array([-7], dtype="int32")
    assert a.vindex[np.array([0])].tolist() == [-7]
    b = zarrcy.create_array(zarrcy.MemoryStore(), shape=(8,), dtype="int32", chunks=(2,), shards=(8,), fill_value=-1)
    b[...] = np.arange(8, dtype="int32")
    assert b.oindex[np.array([3, 2, 0, 1])].tolist() == [3, 2, 0, 1]
    b.oindex[np.array([3, 2])] = np.array([30, 20], dtype="int32")
    assert b[...].tolist() == [0, 1, 20, 30, 4, 5, 6, 7]


# -- the arithmetic projection of unit-step slices against the _grid kernel -----------------------
from hypothesis import given as _given  # noqa: E402
from hypothesis import strategies as _st  # noqa: E402


@_given(_st.integers(0, 5000), _st.integers(1, 300), _st.data())
def test_unit_step_projection_equals_the_kernel(n, chunk_len, data):
    """indexing._dim_projection takes a plain-arithmetic path for unit-step slices over
    at most 64 chunks; it must give exactly the ``_grid.slice_projection`` tuples."""
    from zarrcy._kernels import _grid
    from zarrcy.indexing import DimSelection, _dim_projection

    a = data.draw(_st.integers(0, n))
    b = data.draw(_st.integers(a, n))
    got = _dim_projection(DimSelection("slice", n, a, b, 1), chunk_len)
    ch, cs, ce, os_, oe = _grid.slice_projection(chunk_len, a, b, 1)
    want = [(c, slice(s, e, 1), slice(o0, o1), s == 0 and e == min(chunk_len, n - c * chunk_len))
            for c, s, e, o0, o1 in zip(ch.tolist(), cs.tolist(), ce.tolist(), os_.tolist(), oe.tolist())]
    assert got == want
