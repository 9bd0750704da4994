"""Shapes, starts, stops and steps near or beyond int64 (issue 12 item 3, issue 13 item 1).

Arrays up to ``2**63 - 1`` elements open and answer reads and writes; slices with
Python ints of any size behave as numpy's; projection memory follows the chunks a
selection touches, never the span it covers.  Nothing big is allocated: MemoryStore,
fill-value reads plus a few written elements, and an oracle that never materialises the
array (Python's ``range`` slicing, which has numpy's 1-d slice semantics).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import zarrcy

INT64_MAX = 2**63 - 1
FILL = 3
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# values a slice bound may take: small, near an edge, beyond int64
_BIG = st.one_of(
    st.integers(-20, 20),
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**62, 2**63 - 1, 2**63, 2**70, -(2**63), -(2**70), 4 * 10**11, 10**12]),
)
_STEP = st.one_of(st.none(), st.integers(1, 5), st.integers(1, 2**64), st.sampled_from([2**62, 2**63, 2**70, 4 * 10**11]))


def _run_isolated(code: str, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter: a hang (the GIL-free kernel loop of the bug)
    fails the test after ``timeout`` instead of hanging the suite."""
    try:
        r = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"hung for {timeout} s:\n{code}")
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_last_chunk_near_int64_max_does_not_hang():
    # issue 12 item 3: c0 + chunk_len overflowed in _grid.slice_projection -> endless loop
    out = _run_isolated(
        """
        import zarrcy
        a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(2**63 - 1,), chunks=(2,), dtype="uint8")
        print(a[-1:].tolist(), a[0], a[-1], a[::2**62].tolist(), a[::2**70].tolist())
        a[-1:] = 7
        print(a[-2:].tolist())
        """
    )
    assert out.split("\n")[:2] == ["[0] 0 0 [0, 0] [0]", "[0, 7]"]


def test_hostile_store_shape_near_int64_max(tmp_path):
    # a store claiming shape [2**63 - 1], chunks [3]: the last chunk ends past 2**63 - 1
    (tmp_path / "zarr.json").write_text(
        json.dumps(
            {
                "zarr_format": 3,
                "node_type": "array",
                "shape": [INT64_MAX],
                "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
                "chunk_key_encoding": {"name": "default"},
                "fill_value": 9,
                "codecs": [{"name": "bytes"}],
            }
        )
    )
    out = _run_isolated(
        f"""
        import zarrcy
        a = zarrcy.open_array({str(tmp_path)!r}, mode="r")
        print(a[-1:].tolist(), a[-4:].tolist(), a[{INT64_MAX - 1}::2**62].tolist())
        """
    )
    assert out.strip() == "[9] [9, 9, 9, 9] [9]"


def test_three_elements_of_a_10_12_array_allocate_little():
    # issue 13 item 1: a[::4 * 10**11] allocated 6 GiB in slice_projection (by chunk span)
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(10**12,), chunks=(1000,), dtype="uint8", fill_value=FILL)
    a[4 * 10**11] = 1
    tracemalloc.start()
    try:
        got = a[:: 4 * 10**11]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.tolist() == [FILL, 1, FILL]
    assert peak < 1 << 20
    # 2-d: touched chunks are the product of per-dimension touched chunks, not spans
    b = zarrcy.create_array(zarrcy.MemoryStore(), shape=(10**9, 10**9), chunks=(1000, 1000), dtype="uint8", fill_value=FILL)
    tracemalloc.start()
    try:
        got = b[:: 3 * 10**8, 5 :: 4 * 10**8]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.shape == (4, 3) and (got == FILL).all()
    assert peak < 1 << 20


def test_huge_steps_select_one_element_like_numpy():
    ref = np.arange(10)
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(10,), chunks=(3,), dtype="int64", fill_value=0)
    a[...] = ref
    for sel in [
        slice(None, None, 2**70),
        slice(5, None, 2**70),
        slice(-2**70, 2**70, 2**63),
        slice(2**70, None, 3),
        slice(-2**70, 4, None),
        slice(3, 2**64, 2**63 - 1),
        slice(None, None, 9),
        slice(None, None, 10),
    ]:
        assert a[sel].tolist() == ref[sel].tolist(), sel
        assert a.oindex[sel].tolist() == ref[sel].tolist(), sel
    a[:: 2**70] = 42
    ref[:: 2**70] = 42
    a[7 :: 2**64] = 43
    ref[7 :: 2**64] = 43
    assert a[...].tolist() == ref.tolist()


def test_huge_indices_raise_index_error():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(INT64_MAX,), chunks=(5,), dtype="uint8", fill_value=FILL)
    for bad in [2**63, -(2**63), 2**70, INT64_MAX]:
        with pytest.raises(IndexError):
            a[bad]
    for arr in [np.array([2**63], dtype=np.uint64), np.array([2**64 - 1], dtype=np.uint64), [2**70]]:
        with pytest.raises(IndexError, match="out of bounds|expected integers"):
            a.oindex[arr]
    with pytest.raises(IndexError):
        a.vindex[np.array([2**63 + 5], dtype=np.uint64)]
    assert a[INT64_MAX - 1] == FILL
    assert a.oindex[np.array([INT64_MAX - 1, 0], dtype=np.uint64)].tolist() == [FILL, FILL]
    with pytest.raises(IndexError):  # negative steps are not supported (yet): an IndexError, never a hang
        a[::-1]


@SETTINGS
@example(size=10, chunk=3, start=None, stop=None, step=2**70)
@example(size=10, chunk=3, start=2**70, stop=None, step=None)
@example(size=10, chunk=3, start=-(2**70), stop=2**63, step=2**62)
@given(
    size=st.integers(0, 30),
    chunk=st.integers(1, 12),
    start=st.none() | _BIG,
    stop=st.none() | _BIG,
    step=_STEP,
)
def test_big_slice_bounds_match_numpy(size, chunk, start, stop, step):
    ref = np.arange(size, dtype=np.int64) * 5 - 3
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(size,), chunks=(chunk,), dtype="int64", fill_value=0)
    a[...] = ref
    sel = slice(start, stop, step)
    assert a[sel].tolist() == ref[sel].tolist()
    b = ref.copy()
    b[sel] = -1
    a[sel] = -1
    assert a[...].tolist() == b.tolist()


@st.composite
def _huge_case(draw):
    size = draw(st.one_of(st.sampled_from([INT64_MAX, INT64_MAX - 1, 2**62 + 1, 10**12]), st.integers(1, INT64_MAX)))
    chunk = draw(st.one_of(st.integers(1, 7), st.sampled_from([1000, 2**31, 2**62, INT64_MAX]), st.integers(1, INT64_MAX)))
    chunk = min(chunk, 1 << 20)  # max_chunk_bytes: a chunk is allocated when written
    start = draw(st.none() | _BIG | st.integers(size - 10, size))
    stop = draw(st.none() | _BIG | st.integers(size - 10, size + 10))
    # at most ~200 selected elements: the result is allocated
    lo, hi, _ = slice(start, stop).indices(size)
    min_step = max(1, (hi - lo) // 200)
    step = draw(st.one_of(st.integers(min_step, min_step * 4), st.integers(min_step, 2**64), st.just(2**70)))
    sharded = draw(st.booleans())
    written = draw(st.lists(st.one_of(st.integers(0, size - 1), st.integers(max(0, size - 8), size - 1)), max_size=4))
    return size, chunk, slice(start, stop, step), sharded, written


@SETTINGS
@example(case=(INT64_MAX, 3, slice(-1, None, None), False, [INT64_MAX - 1]))
@example(case=(INT64_MAX, 2, slice(None, None, 2**62), True, [0, 2**62]))
@example(case=(10**12, 1000, slice(None, None, 4 * 10**11), False, [8 * 10**11]))
@given(case=_huge_case())
def test_huge_arrays_match_range_oracle(case):
    size, chunk, sel, sharded, written = case
    kw = dict(shards=(chunk * 2,)) if sharded and chunk * 2 <= INT64_MAX else {}
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(size,), chunks=(chunk,), dtype="uint8", fill_value=FILL, **kw)
    values = {}
    for k, i in enumerate(written):
        a[i] = 10 + k
        values[i] = 10 + k
    idx = range(size)[sel]  # numpy's 1-d slice semantics, on Python ints
    expect = [values.get(i, FILL) for i in idx]
    assert a[sel].tolist() == expect
    assert a.oindex[sel].tolist() == expect
    if len(idx):
        # integer array / coordinate selections at the same positions
        pos = np.array([idx[0], idx[-1]], dtype=np.int64)
        assert a.oindex[pos].tolist() == [expect[0], expect[-1]]
        assert a.vindex[pos].tolist() == [expect[0], expect[-1]]
        assert a[idx[-1]] == expect[-1]
        assert a[idx[-1] - size] == expect[-1]


def test_huge_2d_array_edges():
    n = 2**31
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(n, n), chunks=(3, 5), dtype="uint8", fill_value=FILL)
    a[-1, -1] = 1
    a[-2:, :: 2**40] = 2
    assert a[-2:, -2:].tolist() == [[FILL, FILL], [FILL, 1]]
    assert a[-1, :: 2**40].tolist() == [2]
    assert a[:: 2**30, -1].tolist() == [FILL, FILL]
    assert a.blocks[-1, -1].shape == ((n - 1) % 3 + 1, (n - 1) % 5 + 1)


def test_count_chunks_counts_touched_chunks():
    from zarrcy.indexing import count_chunks, normalize_basic

    sel = normalize_basic(slice(None, None, 4 * 10**11), (10**12,))
    assert count_chunks(sel, (1000,)) == 3
    assert count_chunks(normalize_basic((slice(5, 95), 3), (100, 10)), (10, 4)) == 10
    assert count_chunks(normalize_basic(slice(-1, None), (INT64_MAX,)), (3,)) == 1
    assert count_chunks(normalize_basic(slice(None, None, 2**70), (INT64_MAX,)), (3,)) == 1
    assert count_chunks(normalize_basic(slice(None, None, 7), (100,)), (10,)) == len({i // 10 for i in range(0, 100, 7)})
