"""Exact-boundary tests for every selection kind (issue 15 item 8), reads AND writes, on a
regular, a sharded and a rectilinear array, each with a partial edge chunk/shard.

Per axis of length ``n`` the boundaries are ``n - 1`` and ``-n`` (valid) and ``n`` and
``-n - 1`` (IndexError, as numpy).  A refused selection must raise IndexError, say the
index is out of bounds, and leave the stored data exactly as it was (a write that
lands in the edge chunk is the bug these tests exist for).  Every valid selection is
checked against numpy on a reference copy, for the whole array after each write.

``ci/mutation_spotcheck.py`` plants one off-by-one at a time in ``indexing.py`` and
``array.py``; each must fail a test here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import zarrcy

N, M = 7, 5  # rows, columns; chunks (3, 2): edge chunks of 1 row and 1 column
LAYOUTS = ["regular", "sharded", "rectilinear"]


def _make(layout: str) -> tuple[Any, np.ndarray]:
    store = zarrcy.MemoryStore()
    kw: dict[str, Any] = dict(shape=(N, M), dtype="int32", fill_value=-1)
    if layout == "regular":
        kw["chunks"] = (3, 2)
    elif layout == "sharded":
        kw.update(chunks=(3, 2), shards=(6, 4))  # edge shard: rows 6, columns 4
    else:
        kw["chunks"] = [[3, 3, 1], [2, 2, 1]]
    a = zarrcy.create_array(store, **kw)
    ref = np.arange(N * M, dtype="int32").reshape(N, M)
    a[...] = ref
    return a, ref


@pytest.fixture(params=LAYOUTS)
def arr(request: Any) -> tuple[Any, np.ndarray]:
    return _make(request.param)


def _unchanged(a: Any, ref: np.ndarray) -> None:
    np.testing.assert_array_equal(a[...], ref)


# -- tables of selections: (id, accessor, selection); numpy's equivalent from _np_sel -----
VALID: list[tuple[str, str, Any]] = [
    # (id, accessor, selection); the numpy result is computed from the same selection
    ("int last", "basic", N - 1),
    ("int -n", "basic", -N),
    ("int last col", "basic", (slice(None), M - 1)),
    ("int -m col", "basic", (slice(None), -M)),
    ("point last", "basic", (N - 1, M - 1)),
    ("point -n -m", "basic", (-N, -M)),
    ("point -1 -1", "basic", (-1, -1)),
    ("point np ints", "basic", (np.int64(N - 1), np.uint8(M - 1))),
    ("slice to end", "basic", slice(N - 1, None)),
    ("slice past end clipped", "basic", slice(N - 1, N + 5)),
    ("slice -n-1 clipped", "basic", slice(-N - 1, None)),
    ("slice step 2", "basic", slice(None, None, 2)),
    ("slice step 3 from 1", "basic", (slice(1, None, 3), slice(None, None, 2))),
    ("slice huge step", "basic", slice(N - 1, None, 2**70)),
    ("slice empty at n", "basic", slice(N, None)),
    ("basic int array last", "basic", [N - 1, 0]),
    ("basic int array -n", "basic", [-N]),
    ("oindex last", "oindex", ([N - 1, 0], [M - 1])),
    ("oindex -n", "oindex", ([-N, -1], [-M])),
    ("oindex unsorted dup", "oindex", ([3, 0, 3, N - 1], [4, 4, 0])),
    ("oindex uint64 last", "oindex", (np.array([N - 1], np.uint64), slice(None))),
    ("oindex mask", "oindex", (np.arange(N) % 2 == 0, np.arange(M) > 2)),
    ("oindex int + slice", "oindex", (N - 1, slice(None, None, 2))),
    ("vindex last", "vindex", ([N - 1, 0], [M - 1, 0])),
    ("vindex -n -m", "vindex", ([-N, -1], [-M, -1])),
    ("vindex broadcast", "vindex", (np.array([[0], [N - 1]]), np.array([0, M - 1]))),
    ("vindex mask", "vindex", ((np.arange(N * M) % 3 == 0).reshape(N, M),)),
]

INVALID: list[tuple[str, str, Any]] = [
    ("int n", "basic", N),
    ("int -n-1", "basic", -N - 1),
    ("int col m", "basic", (slice(None), M)),
    ("int col -m-1", "basic", (slice(None), -M - 1)),
    ("point n", "basic", (N, 0)),
    ("point m", "basic", (0, M)),
    ("point -n-1", "basic", (-N - 1, 0)),
    ("point -m-1", "basic", (0, -M - 1)),
    ("point np int n", "basic", (np.int64(N), 0)),
    ("too many indices", "basic", (0, 0, 0)),
    ("slice step 0", "basic", slice(None, None, 0)),
    ("slice negative step", "basic", slice(None, None, -1)),
    ("basic int array n", "basic", [0, N]),
    ("basic int array -n-1", "basic", [-N - 1]),
    ("oindex n", "oindex", ([0, N], slice(None))),
    ("oindex col m", "oindex", (slice(None), [M])),
    ("oindex -n-1", "oindex", ([-N - 1], slice(None))),
    ("oindex uint64 n", "oindex", (np.array([N], np.uint64), slice(None))),
    ("oindex uint64 huge", "oindex", (np.array([2**64 - 1], np.uint64), slice(None))),
    ("oindex int n", "oindex", (N, slice(None))),
    ("oindex mask too long", "oindex", (np.ones(N + 1, bool), slice(None))),
    ("oindex mask too short", "oindex", (np.ones(N - 1, bool), slice(None))),
    ("oindex too many", "oindex", (0, 0, 0)),
    ("vindex n", "vindex", ([0, N], [0, 0])),
    ("vindex m", "vindex", ([0], [M])),
    ("vindex -n-1", "vindex", ([-N - 1], [0])),
    ("vindex -m-1", "vindex", ([0], [-M - 1])),
    ("vindex uint64 n", "vindex", (np.array([N], np.uint64), [0])),
    ("vindex one array for 2-d", "vindex", ([0, 1],)),
    ("vindex three arrays for 2-d", "vindex", ([0], [0], [0])),
    ("vindex mask wrong shape", "vindex", (np.ones((N + 1, M), bool),)),
    ("vindex mask transposed", "vindex", (np.ones((M, N), bool),)),
]


def _get(a: Any, kind: str, sel: Any) -> Any:
    return a[sel] if kind == "basic" else getattr(a, kind)[sel]


def _set(a: Any, kind: str, sel: Any, value: Any) -> None:
    if kind == "basic":
        a[sel] = value
    else:
        getattr(a, kind)[sel] = value


def _np_sel(kind: str, sel: Any) -> Any:
    """The numpy selection equal to zarrcy's ``kind`` selection."""
    if kind == "basic":
        return sel
    if kind == "vindex":
        return sel[0] if len(sel) == 1 else tuple(np.asarray(s) for s in sel)
    parts = [np.flatnonzero(s) if isinstance(s, np.ndarray) and s.dtype == bool else s for s in sel]
    if sum(1 for p in parts if not isinstance(p, (int, np.integer, slice))) <= 1:
        return tuple(np.asarray(p, np.int64) if isinstance(p, (list, np.ndarray)) else p for p in parts)
    idx = [np.arange(n)[p] if isinstance(p, slice) else np.asarray(p, np.int64) for p, n in zip(parts, (N, M))]
    return np.ix_(*idx)


@pytest.mark.parametrize("kind,sel", [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_read(arr: Any, kind: str, sel: Any) -> None:
    a, ref = arr
    np.testing.assert_array_equal(_get(a, kind, sel), ref[_np_sel(kind, sel)])


@pytest.mark.parametrize("kind,sel", [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid_write(arr: Any, kind: str, sel: Any) -> None:
    a, ref = arr
    _set(a, kind, sel, 99)
    ref[_np_sel(kind, sel)] = 99
    _unchanged(a, ref)


NO_DUPLICATES = [v for v in VALID if "dup" not in v[0]]  # duplicates + distinct values: order-dependent


@pytest.mark.parametrize("kind,sel", [v[1:] for v in NO_DUPLICATES], ids=[v[0] for v in NO_DUPLICATES])
def test_valid_write_array_value(arr: Any, kind: str, sel: Any) -> None:
    """A value array of the selection's shape lands element by element (not just a scalar)."""
    a, ref = arr
    want = ref[_np_sel(kind, sel)]
    value = (np.arange(np.size(want), dtype="int32") + 1000).reshape(np.shape(want))
    _set(a, kind, sel, value)
    ref[_np_sel(kind, sel)] = value
    _unchanged(a, ref)


@pytest.mark.parametrize("kind,sel", [v[1:] for v in INVALID], ids=[v[0] for v in INVALID])
def test_invalid_read(arr: Any, kind: str, sel: Any) -> None:
    a, ref = arr
    with pytest.raises(IndexError):
        _get(a, kind, sel)


@pytest.mark.parametrize("kind,sel", [v[1:] for v in INVALID], ids=[v[0] for v in INVALID])
def test_invalid_write_changes_nothing(arr: Any, kind: str, sel: Any) -> None:
    a, ref = arr
    with pytest.raises(IndexError):
        _set(a, kind, sel, 99)
    _unchanged(a, ref)


@pytest.mark.parametrize("i", [N, -N - 1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 2**70])
def test_out_of_bounds_message_names_the_index(arr: Any, i: int) -> None:
    a, _ = arr
    gets = [lambda: a[i], lambda: a[i, 0]]
    if -(2**63) <= i < 2**63:  # index arrays beyond int64 are refused as "expected integers"
        gets += [lambda: a.oindex[[i], :], lambda: a.vindex[[i], [0]], lambda: a[[i]]]
    for get in gets:
        with pytest.raises(IndexError, match=rf"{i}.*out of bounds for axis 0 with size {N}"):
            get()


def test_numpy_agrees_on_the_table() -> None:
    """The table's expectations are numpy's: every INVALID basic selection raises
    IndexError on the reference too, every VALID one does not."""
    ref = np.zeros((N, M))
    for name, kind, sel in INVALID:
        # zarrcy refuses every non-positive step with IndexError (numpy: ValueError for 0,
        # a reversed view for negative steps)
        if kind == "basic" and name not in ("slice step 0", "slice negative step"):
            with pytest.raises(IndexError):
                ref[sel]
    for _, kind, sel in VALID:
        ref[_np_sel(kind, sel)]


# -- strided writes: a step > 1 that starts and ends at a chunk's ends is not the whole chunk
@pytest.mark.parametrize("sel", [slice(None, None, 2), (slice(None, None, 2), slice(None, None, 2)),
                                 (slice(None), slice(0, None, 4)), slice(0, 3, 2), slice(3, 6, 2)])
def test_strided_write_keeps_skipped_elements(arr: Any, sel: Any) -> None:
    a, ref = arr
    a[sel] = 99
    ref[sel] = 99
    _unchanged(a, ref)


def test_oindex_strided_write_keeps_skipped_elements(arr: Any) -> None:
    a, ref = arr
    a.oindex[slice(0, None, 2), [0, M - 1]] = 7
    ref[np.ix_(np.arange(0, N, 2), [0, M - 1])] = 7
    _unchanged(a, ref)


# -- mask selections ---------------------------------------------------------------------
def test_mask_selection_boundaries(arr: Any) -> None:
    a, ref = arr
    mask = np.zeros((N, M), bool)
    mask[N - 1, M - 1] = mask[0, 0] = mask[N - 1, 0] = True
    np.testing.assert_array_equal(a.get_mask_selection(mask), ref[mask])
    a.set_mask_selection(mask, 55)
    ref[mask] = 55
    _unchanged(a, ref)
    for bad in (np.ones((N + 1, M), bool), np.ones((N, M - 1), bool), np.ones((N * M,), bool), np.ones((N, M), int)):
        with pytest.raises(IndexError):
            a.get_mask_selection(bad)
        with pytest.raises(IndexError):
            a.set_mask_selection(bad, 1)
    _unchanged(a, ref)


# -- block selections --------------------------------------------------------------------
def test_block_selection_boundaries(arr: Any) -> None:
    a, ref = arr
    rows = [(0, 3), (3, 6), (6, 7)]  # the row spans of the blocks (chunks; shards when sharded)
    if a.shards is not None:
        rows = [(0, 6), (6, 7)]
    nb = len(rows)
    lo, hi = rows[-1]
    np.testing.assert_array_equal(a.blocks[nb - 1], ref[lo:hi])
    np.testing.assert_array_equal(a.blocks[-nb], ref[rows[0][0]:rows[0][1]])
    for bad in (nb, -nb - 1):
        with pytest.raises(IndexError):
            a.blocks[bad]
        with pytest.raises(IndexError):
            a.blocks[bad] = 5
    _unchanged(a, ref)
    a.blocks[nb - 1] = 5
    ref[lo:hi] = 5
    _unchanged(a, ref)


# -- 0-d arrays: no index is valid but (), ... and the empty tuple ------------------------
@pytest.mark.parametrize("sharded", [False, True])
def test_zero_d_rank(sharded: bool) -> None:
    kw: dict[str, Any] = dict(shape=(), dtype="float64", fill_value=1.5)
    if sharded:
        kw.update(chunks=(), shards=())
    a = zarrcy.create_array(zarrcy.MemoryStore(), **kw)
    a[()] = 2.5
    assert a[()] == 2.5 and a[...] == 2.5
    for sel in (0, -1, (0,), slice(None), (0, 0), [0], np.int64(0)):
        with pytest.raises(IndexError):
            a[sel]
        with pytest.raises(IndexError):
            a[sel] = 9.0
        with pytest.raises(IndexError):
            a.oindex[sel]
        with pytest.raises(IndexError):
            a.oindex[sel] = 9.0
    for sel in (([0],), ([0], [0])):
        with pytest.raises(IndexError):
            a.vindex[sel]
    assert a[()] == 2.5


def test_one_d_rank() -> None:
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(4,), dtype="int8", chunks=(3,), fill_value=0)
    a[...] = [1, 2, 3, 4]
    for sel in ((0, 0), (slice(None), 0), (3, None, 0)):
        with pytest.raises(IndexError, match="too many indices"):
            a[sel]
        with pytest.raises(IndexError, match="too many indices"):
            a[sel] = 1
    assert a[(3, None)].tolist() == [4] and a[None, 3].tolist() == [4]
    np.testing.assert_array_equal(a[...], [1, 2, 3, 4])
