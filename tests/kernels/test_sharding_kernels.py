"""zarrcy._kernels._sharding against slow exact Python references."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _sharding as K

S = K.SENTINEL_U64
u64 = st.integers(0, S)


# -- references -----------------------------------------------------------------------

def ref_validate(pairs, data_start, data_stop, shard_size):
    for i, (off, nb) in enumerate(pairs):
        if off == S and nb == S:
            continue
        if off == S or nb == S:
            return i, K.IndexFault.FAULT_HALF_EMPTY
        if off + nb > S:
            return i, K.IndexFault.FAULT_OVERFLOW
        if off + nb > shard_size:
            return i, K.IndexFault.FAULT_PAST_END
        if off < data_start or off + nb > data_stop:
            return i, K.IndexFault.FAULT_INTO_INDEX
    return -1, K.IndexFault.FAULT_NONE


def ref_empty(shard: np.ndarray, chunk_shape, fill) -> np.ndarray:
    grid = [s // c for s, c in zip(shard.shape, chunk_shape)]
    fb = np.array(fill, dtype=shard.dtype).tobytes()
    out = []
    for coords in np.ndindex(*grid):
        sl = tuple(slice(g * c, (g + 1) * c) for g, c in zip(coords, chunk_shape))
        out.append(np.ascontiguousarray(shard[sl]).tobytes() == fb * int(np.prod(chunk_shape)))
    return np.array(out, dtype=np.uint8)


# -- encode / decode -------------------------------------------------------------------

@given(st.lists(u64, max_size=64))
def test_index_round_trip(values):
    idx = np.array(values, dtype=np.uint64)
    raw = bytearray(8 * len(values))
    K.encode_index(idx, raw)
    assert bytes(raw) == struct.pack(f"<{len(values)}Q", *values)
    out = np.empty(len(values), dtype=np.uint64)
    K.decode_index(bytes(raw), out)  # read-only input
    assert out.tolist() == values


def test_index_length_mismatch():
    with pytest.raises(ValueError):
        K.decode_index(b"\0" * 15, np.empty(2, np.uint64))
    with pytest.raises(ValueError):
        K.encode_index(np.zeros(2, np.uint64), bytearray(15))


# -- validation -------------------------------------------------------------------------

pair = st.one_of(
    st.tuples(st.just(S), st.just(S)),
    st.tuples(st.integers(0, 300), st.integers(0, 300)),
    st.tuples(u64, u64),
    st.tuples(st.just(S), st.integers(0, 10)),
    st.tuples(st.integers(0, 10), st.just(S)),
    st.tuples(st.integers(S - 10, S - 1), st.integers(5, 20)),
)


@given(st.lists(pair, max_size=20), st.integers(0, 50), st.integers(0, 400), st.integers(0, 400))
def test_validate_matches_reference(pairs, data_start, data_stop, shard_size):
    idx = np.array([v for p in pairs for v in p], dtype=np.uint64)
    idx.setflags(write=False)
    got = K.validate_index(idx, data_start, data_stop, shard_size)
    assert got == ref_validate(pairs, data_start, data_stop, shard_size)


@pytest.mark.parametrize(
    "pairs, fault",
    [
        ([(0, 10), (S, S), (10, 5)], K.IndexFault.FAULT_NONE),
        ([(0, 10), (S, 3)], K.IndexFault.FAULT_HALF_EMPTY),
        ([(0, 10), (3, S)], K.IndexFault.FAULT_HALF_EMPTY),
        ([(S - 2, 5)], K.IndexFault.FAULT_OVERFLOW),
        ([(0, 10), (95, 10)], K.IndexFault.FAULT_PAST_END),
        ([(0, 10), (80, 10)], K.IndexFault.FAULT_INTO_INDEX),  # index occupies [84, 100)
        ([(0, 10), (0, 10), (2, 4)], K.IndexFault.FAULT_NONE),  # shared bytes are legal
    ],
)
def test_validate_each_kind(pairs, fault):
    idx = np.array([v for p in pairs for v in p], dtype=np.uint64)
    bad, got = K.validate_index(idx, 0, 84, 100)
    assert got == fault
    assert (bad == -1) == (fault == K.IndexFault.FAULT_NONE)
    if bad != -1:
        assert bad == len(pairs) - 1


def test_validate_index_start():
    idx = np.array([5, 10], dtype=np.uint64)  # index occupies [0, 16)
    assert K.validate_index(idx, 16, 100, 100) == (0, K.IndexFault.FAULT_INTO_INDEX)
    assert K.validate_index(np.array([], np.uint64), 16, 100, 100) == (-1, 0)
    with pytest.raises(ValueError):
        K.validate_index(np.zeros(3, np.uint64), 0, 1, 1)


# -- build_index --------------------------------------------------------------------------

@given(st.lists(st.one_of(st.just(S), st.integers(0, 1000)), max_size=30), st.integers(0, 100))
def test_build_index(sizes, base):
    nb = np.array(sizes, dtype=np.uint64)
    out = np.empty(2 * len(sizes), dtype=np.uint64)
    end = K.build_index(nb, base, out)
    pos = base
    for i, s in enumerate(sizes):
        if s == S:
            assert (out[2 * i], out[2 * i + 1]) == (S, S)
        else:
            assert (out[2 * i], out[2 * i + 1]) == (pos, s)
            pos += s
    assert end == pos


def test_build_index_overflow():
    with pytest.raises(OverflowError):
        K.build_index(np.array([S - 1, 5], np.uint64), 0, np.empty(4, np.uint64))


# -- coalescing ----------------------------------------------------------------------------

def run_coalesce(ranges, gap, cap):
    off = np.array([o for o, _ in ranges], np.uint64)
    nb = np.array([n for _, n in ranges], np.uint64)
    order = np.argsort(off, kind="stable").astype(np.int64)
    n = len(ranges)
    g_of = np.empty(n, np.int64)
    gs = np.empty(n, np.uint64)
    ge = np.empty(n, np.uint64)
    ng = K.coalesce(off, nb, order, gap, cap, g_of, gs, ge)
    return ng, g_of, gs[:ng], ge[:ng]


@settings(max_examples=300)
@given(st.lists(st.tuples(st.integers(0, 2000), st.integers(0, 300)), max_size=40),
       st.integers(0, 200), st.integers(0, 1500))
def test_coalesce_properties(ranges, gap, cap):
    ng, g_of, gs, ge = run_coalesce(ranges, gap, cap)
    # every needed range lies inside its group
    for i, (o, n) in enumerate(ranges):
        g = g_of[i]
        assert 0 <= g < ng
        assert gs[g] <= o and o + n <= ge[g]
    members = {g: [ranges[i] for i in range(len(ranges)) if g_of[i] == g] for g in range(ng)}
    for g in range(ng):
        assert members[g]
        # the group is the exact span of its members
        assert gs[g] == min(o for o, _ in members[g])
        assert ge[g] == max(o + n for o, n in members[g])
        # cap respected unless a single range is already larger
        assert ge[g] - gs[g] <= max(cap, max(n for _, n in members[g]))
    # groups are in offset order; a small hole between groups only if merging would break the cap
    for g in range(1, ng):
        assert gs[g] >= gs[g - 1]
        hole_small = gs[g] <= ge[g - 1] or gs[g] - ge[g - 1] < gap
        if hole_small:
            first = min((r for r in members[g]), key=lambda r: r[0])
            assert max(ge[g - 1], first[0] + first[1]) - gs[g - 1] > cap


def test_coalesce_examples():
    # adjacent and small-hole ranges merge; a far one does not
    ng, g_of, gs, ge = run_coalesce([(0, 10), (10, 10), (25, 5), (1000, 1)], 10, 1 << 20)
    assert ng == 2 and g_of.tolist() == [0, 0, 0, 1]
    assert (gs.tolist(), ge.tolist()) == ([0, 1000], [30, 1001])
    # cap splits
    ng, g_of, gs, ge = run_coalesce([(0, 10), (10, 10), (20, 10)], 100, 20)
    assert g_of.tolist() == [0, 0, 1]
    # deduplicated (identical) ranges share a group
    ng, g_of, gs, ge = run_coalesce([(5, 10), (5, 10), (0, 5)], 0, 10)
    assert ng == 2 and g_of.tolist() == [1, 1, 0]
    assert run_coalesce([], 0, 0)[0] == 0


# -- empty chunks ---------------------------------------------------------------------------

@settings(max_examples=150)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 3)), min_size=1, max_size=3),
       st.sampled_from(["uint8", "int16", "float32", "float64", "complex64"]), st.data())
def test_empty_chunks(dims, dtype, data):
    chunk_shape = [c for _, c in dims]
    shape = [g * c for g, c in dims]
    fill = data.draw(st.sampled_from([0, 1, 7]))
    arr = np.full(shape, fill, dtype=dtype)
    flat = arr.reshape(-1)
    for pos in data.draw(st.lists(st.integers(0, flat.size - 1), max_size=4)):
        flat[pos] = 3
    fill_row = np.full(chunk_shape[-1], fill, dtype=dtype).view(np.uint8)
    out = np.empty(int(np.prod([g for g, _ in dims])), np.uint8)
    ro = arr.reshape(-1).view(np.uint8)
    ro.setflags(write=False)
    K.empty_chunks(ro, np.array(shape, np.int64), np.array(chunk_shape, np.int64),
                   arr.dtype.itemsize, fill_row, out)
    assert out.tolist() == ref_empty(arr, chunk_shape, fill).tolist()


def test_empty_chunks_nan_and_negative_zero():
    arr = np.full((4,), np.nan, np.float32)
    out = np.empty(2, np.uint8)
    row = np.full(2, np.nan, np.float32).view(np.uint8)
    K.empty_chunks(arr.view(np.uint8), np.array([4], np.int64), np.array([2], np.int64), 4, row, out)
    assert out.tolist() == [1, 1]
    arr = np.array([0.0, -0.0, 0.0, 0.0], np.float32)
    row = np.zeros(2, np.float32).view(np.uint8)
    K.empty_chunks(arr.view(np.uint8), np.array([4], np.int64), np.array([2], np.int64), 4, row, out)
    assert out.tolist() == [0, 1]  # -0.0 is data, kept


def test_empty_chunks_bad_input():
    with pytest.raises(ValueError):
        K.empty_chunks(np.zeros(6, np.uint8), np.array([6], np.int64), np.array([4], np.int64), 1,
                       np.zeros(4, np.uint8), np.empty(1, np.uint8))


def test_threads_release_gil():
    # kernels are reentrant: run them from several threads at once
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 1000, 10000).astype(np.uint64)
    errors = []

    def work():
        try:
            for _ in range(20):
                idx = np.empty(2 * sizes.size, np.uint64)
                end = K.build_index(sizes, 16, idx)
                assert K.validate_index(idx, 16, end, end) == (-1, 0)
                raw = np.empty(idx.size * 8, np.uint8)
                K.encode_index(idx, raw)
                back = np.empty_like(idx)
                K.decode_index(raw, back)
                assert np.array_equal(back, idx)
        except Exception as e:  # pragma: no cover
            errors.append(e)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


# -- copy_ranges ------------------------------------------------------------------------------

@given(st.binary(min_size=0, max_size=200), st.data())
def test_copy_ranges(src, data):
    n = data.draw(st.integers(0, 6))
    ranges = []
    dst_size = data.draw(st.integers(0, 300))
    for _ in range(n):
        nb = data.draw(st.integers(0, 50))
        so = data.draw(st.integers(0, 220))
        do = data.draw(st.integers(0, 320))
        ranges.append((so, nb, do))
    dst = bytearray(b"\xaa" * dst_size)
    ref = bytearray(dst)
    fits = [so + nb <= len(src) and do + nb <= dst_size for so, nb, do in ranges]
    bad = K.copy_ranges(
        src, np.array([r[0] for r in ranges], np.uint64), np.array([r[1] for r in ranges], np.uint64),
        dst, np.array([r[2] for r in ranges], np.uint64),
    )
    if all(fits):
        assert bad == -1
        for so, nb, do in ranges:
            ref[do:do + nb] = src[so:so + nb]
    else:
        assert bad == fits.index(False)
    assert dst == ref  # nothing copied when a range does not fit


def test_copy_ranges_huge_values_do_not_wrap():
    dst = bytearray(8)
    assert K.copy_ranges(b"abcdefgh", np.array([S - 1], np.uint64), np.array([4], np.uint64), dst,
                         np.array([0], np.uint64)) == 0
    assert K.copy_ranges(b"abcdefgh", np.array([0], np.uint64), np.array([S], np.uint64), dst,
                         np.array([0], np.uint64)) == 0
    with pytest.raises(ValueError):
        K.copy_ranges(b"", np.zeros(1, np.uint64), np.zeros(2, np.uint64), dst, np.zeros(1, np.uint64))
