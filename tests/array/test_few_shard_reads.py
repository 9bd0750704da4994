"""``a[sel]`` of slices and ints touching few shards, none whole (the latency path
``ArrayReads._read_in_few_shards``) against numpy: every slice kind, negative ints,
steps, edge shards past the array's end, missing shards (fill) and transposed or
Python-path inner codecs; and proof that the path is taken (the general selection
machinery is forbidden) or left (several shards, index arrays, the decoded-chunk
cache)."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy import chunk_cache
from zarrcy.nodes import array_read
from zarrcy.storage import local as local_mod

SHAPE = (13, 10, 7)
SHARDS = (8, 6, 4)
INNER = (4, 3, 2)


def _array(tmp_path, codecs=None, write=True, dtype="int32"):
    rng = np.random.default_rng(0)
    ref = rng.integers(-1000, 1000, SHAPE).astype(dtype)
    kw = {} if codecs is None else {"compressors": codecs}
    a = zarrcy.create_array(str(tmp_path / "a"), shape=SHAPE, dtype=dtype, chunks=INNER, shards=SHARDS,
                            fill_value=7, overwrite=True, **kw)
    if write:
        a[...] = ref
        a.store.erase("c/1/0/0")  # one missing shard: fill
        ref[8:, :6, :4] = 7
    return a, ref


@st.composite
def _in_one_shard(draw):
    sel = []
    for n, s in zip(SHAPE, SHARDS):
        q = draw(st.integers(0, (n - 1) // s))
        lo, hi = q * s, min(n, (q + 1) * s)
        if draw(st.booleans()):
            i = draw(st.integers(lo, hi - 1))
            sel.append(i - n if draw(st.booleans()) else i)
        else:
            a = draw(st.integers(lo, hi - 1))
            b = draw(st.integers(a + 1, hi))
            step = draw(st.sampled_from([None, 1, 2, 3, 5]))
            sel.append(slice(a - n if draw(st.booleans()) else a, b, step))
    return tuple(sel)


@st.composite
def _anywhere(draw):
    """Slices (any positive step, bounds past the ends) and ints anywhere."""
    sel = []
    for n in SHAPE:
        if draw(st.integers(0, 3)) == 0:
            sel.append(draw(st.integers(-n, n - 1)))
        else:
            sel.append(slice(draw(st.none() | st.integers(-n - 2, n + 2)), draw(st.none() | st.integers(-n - 2, n + 2)),
                             draw(st.none() | st.integers(1, 15))))
    return tuple(sel)


def _touched_shards(sel):
    n = 1
    for s, size, c in zip(sel, SHAPE, SHARDS):
        idx = np.arange(size)[s]
        n *= len(set((np.atleast_1d(idx) // c).tolist()))
    return n


@pytest.fixture
def forbid_general(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("the general selection path ran")
    monkeypatch.setattr(array_read, "iter_chunk_projections", boom)


_MADE: dict[str, tuple] = {}


@settings(max_examples=150, deadline=None)
@given(sel=_in_one_shard())
def test_one_shard_reads_match_numpy(tmp_path_factory, sel):
    if "a" not in _MADE:
        _MADE["a"] = _array(tmp_path_factory.mktemp("o"))
    a, ref = _MADE["a"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(array_read, "iter_chunk_projections", lambda *x, **k: (_ for _ in ()).throw(AssertionError))
        got = a[sel]
    np.testing.assert_array_equal(got, ref[sel])


@settings(max_examples=300, deadline=None)
@given(sel=_anywhere())
def test_box_reads_match_numpy(tmp_path_factory, sel):
    """Every slice/int selection reads as numpy does, whichever path serves it; a
    non-empty box touching at most 4 shards, none whole, never reaches the general
    path."""
    if "a" not in _MADE:
        _MADE["a"] = _array(tmp_path_factory.mktemp("o"))
    a, ref = _MADE["a"]
    want = ref[sel]
    whole = any(
        all(set(range(q * c, min(size, (q + 1) * c)))
            <= set((np.arange(size)[s] if type(s) is slice else np.array([s % size])).tolist())
            for s, size, c, q in zip(sel, SHAPE, SHARDS, qs))
        for qs in np.ndindex(*[(size + c - 1) // c for size, c in zip(SHAPE, SHARDS)]))
    fast = want.size and 1 < _touched_shards(sel) <= 4 and not whole and not all(type(s) is int for s in sel)
    with pytest.MonkeyPatch.context() as mp:
        if fast:
            mp.setattr(array_read, "iter_chunk_projections", lambda *x, **k: (_ for _ in ()).throw(AssertionError))
        got = a[sel]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("codecs", [
    None,
    [zarrcy.codecs.codec_from_dict({"name": "zstd", "configuration": {"level": 1}}, "c")],
    [zarrcy.codecs.codec_from_dict({"name": "gzip", "configuration": {"level": 1}}, "c")],
])
def test_box_reads_every_codec(tmp_path, codecs):
    a, ref = _array(tmp_path, codecs)
    for sel in [(slice(1, 7), slice(0, 6), slice(1, 4)), (9, slice(None, 6), slice(0, 4, 3)),
                (slice(8, 13), slice(6, 10), slice(4, 7)), (-1, -1, slice(4, None)),
                (slice(8, 13, 2), 0, 0), (slice(5, 11), slice(4, 8), slice(3, 5)),   # 8 shards: general
                (slice(5, 11), slice(4, 8), 2), (slice(0, 13, 9), 3, slice(1, 6, 4))]:
        np.testing.assert_array_equal(a[sel], ref[sel], err_msg=str(sel))


def test_one_shard_read_of_a_missing_shard_is_fill(tmp_path, forbid_general):
    a, ref = _array(tmp_path)
    got = a[slice(8, 12), slice(0, 5), 2]
    assert got.shape == (4, 5) and (got == 7).all()


def test_one_shard_read_of_an_unwritten_array_is_fill(tmp_path, forbid_general):
    a, _ = _array(tmp_path, write=False)
    got = a[1:3, 2:4, 0:2]
    assert got.shape == (2, 2, 2) and (got == 7).all()


@pytest.mark.parametrize("sel", [
    (slice(0, 13), slice(0, 6), slice(0, 4)),     # two shards, one of them whole
    (slice(1, 13), slice(1, 10), slice(1, 7)),    # eight shards
    (np.array([0, 1]), slice(0, 2), 0),           # an index array
    (Ellipsis, 0),                                # Ellipsis
    (slice(3, 3), 0, 0),                          # empty
])
def test_other_selections_take_the_general_path(tmp_path, sel):
    a, ref = _array(tmp_path)
    np.testing.assert_array_equal(a[sel], ref[sel])


def test_negative_steps_are_refused_as_before(tmp_path):
    a, _ = _array(tmp_path)
    with pytest.raises(IndexError, match="positive step"):
        a[5:1:-1, 0, 0]


@pytest.mark.parametrize("sel", [(13, 0, 0), (0, -11, 0), (0, 0, 7)])
def test_out_of_bounds_ints_raise_as_numpy(tmp_path, sel):
    a, ref = _array(tmp_path)
    with pytest.raises(IndexError):
        ref[sel]
    with pytest.raises(IndexError):
        a[sel]


def test_cached_arrays_use_the_cache_path(tmp_path, monkeypatch):
    # the files count as changed long before the reads (the racy-ctime rule trusts them)
    monkeypatch.setattr(local_mod, "_now_ns", lambda: time.time_ns() + 60_000_000_000)
    a, ref = _array(tmp_path)
    zarrcy.config(cache_bytes=1 << 24)
    try:
        for _ in range(2):
            np.testing.assert_array_equal(a[1:5, 0:3, 0:2], ref[1:5, 0:3, 0:2])
        assert chunk_cache.stats()["hits"] > 0
    finally:
        zarrcy.config(cache_bytes=0)
