"""zarrcy._kernels._inner_chunks against slow references: Python's gzip module for the
bytes, numpy fancy indexing of the original array for the cells."""

from __future__ import annotations

import gzip
import itertools
import sys
import threading

import deflate._deflate
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _deflate
from zarrcy._kernels import _inner_chunks as K


@pytest.fixture(autouse=True, scope="module")
def _entry_points_loaded() -> None:
    """libdeflate's entry points (the ``deflate`` wheel, a hard dependency) are loaded, or
    every test here fails: no silent skip of the kernel tests."""
    assert _deflate.load(deflate._deflate.__file__), "libdeflate entry points not found in the deflate wheel"


NATIVE = "<" if sys.byteorder == "little" else ">"
OTHER = ">" if NATIVE == "<" else "<"


# -- building blocks -------------------------------------------------------------------

def encode(chunk: np.ndarray, codec: int, stored: str) -> bytes:
    """Stored bytes of a native chunk (``stored``: the byte order on disk) - the oracle side."""
    chunk = np.asarray(chunk)  # 0-d: a numpy scalar would ignore the byte order
    raw = chunk.astype(chunk.dtype.newbyteorder(stored), copy=True).tobytes()
    return gzip.compress(raw, 1) if codec == K.GZIP else raw


def csr_tables(indices: list[np.ndarray], chunk_shape, grid):
    """Per-dimension CSR tables for orthogonal array indices ``indices[d]`` (output index
    = position in the list)."""
    base, start, local, outi = [], [0], [], []
    for d, idx in enumerate(indices):
        base.append(len(start) - 1)
        cs = chunk_shape[d]
        for c in range(grid[d]):
            pos = np.flatnonzero(idx // cs == c)
            local.extend((idx[pos] - c * cs).tolist())
            outi.extend(pos.tolist())
            start.append(len(local))
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return i64(base), i64(start), i64(local), i64(outi)


def shard_bytes(chunks: dict, order, gaps, codec: int, stored: str):
    """Encoded chunks laid out in ``order`` with gap bytes; -> (src, {coords: (off, len)})."""
    buf = bytearray()
    where = {}
    for k, coords in enumerate(order):
        buf += b"\xab" * gaps[k % len(gaps)]
        enc = encode(chunks[coords], codec, stored)
        where[coords] = (len(buf), len(enc))
        buf += enc
    return bytes(buf), where


def run_decode(src, coords_list, where, tables, chunk_shape, dtype, swap, codec, fill, out, t0=0, t1=None,
               scratch=None):
    task_coords = np.array(coords_list, dtype=np.int64).reshape(len(coords_list), len(chunk_shape))
    off = np.array([where.get(c, (0, -1))[0] for c in coords_list], np.int64)
    ln = np.array([where.get(c, (0, -1))[1] for c in coords_list], np.int64)
    if scratch is None:
        scratch = np.empty(int(np.prod(chunk_shape)) * dtype.itemsize, np.uint8)
    return K.decode_scatter(
        src, task_coords, off, ln, t0, len(coords_list) if t1 is None else t1, *tables,
        np.asarray(chunk_shape, np.int64), dtype.itemsize, swap, codec, fill, out, scratch,
    )


def selections(n: int):
    """Per-dimension selections of range(n) as index arrays: slices with steps (also
    negative), unsorted/duplicate integer lists, boolean masks."""
    sl = st.builds(
        slice, st.none() | st.integers(-n - 2, n + 2), st.none() | st.integers(-n - 2, n + 2),
        st.none() | st.integers(-4, 4).filter(bool),
    ).map(lambda s: np.arange(n)[s])
    ints = st.lists(st.integers(0, n - 1), max_size=2 * n + 1).map(lambda v: np.array(v, np.int64))
    mask = st.lists(st.booleans(), min_size=n, max_size=n).map(lambda m: np.flatnonzero(m))
    return st.one_of(st.just(np.arange(n)), sl, ints, mask)


DTYPES = ["u1", "u2", "u4", "u8"]


def geometry(draw, max_ndim: int, max_extent: int, dtypes) -> tuple:
    """(chunk_shape, grid, shape, per-dimension selections, dtype, stored byte order)."""
    ndim = draw(st.integers(1, max_ndim))
    chunk_shape = tuple(draw(st.lists(st.integers(1, max_extent), min_size=ndim, max_size=ndim)))
    grid = tuple(draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim)))
    shape = tuple(c * g for c, g in zip(chunk_shape, grid))
    indices = [draw(selections(n)) for n in shape]
    dt = np.dtype(NATIVE + draw(st.sampled_from(dtypes)))
    return chunk_shape, grid, shape, indices, dt, draw(st.sampled_from([NATIVE, OTHER]))


@st.composite
def cases(draw):
    chunk_shape, grid, shape, indices, dt, stored = geometry(draw, 4, 5, DTYPES)
    codec = draw(st.sampled_from([K.RAW, K.GZIP]))
    seed = draw(st.integers(0, 2**32 - 1))
    missing_p = draw(st.sampled_from([0.0, 0.3, 1.0]))
    split = draw(st.integers(0, 3))
    return chunk_shape, grid, shape, indices, dt, stored, codec, seed, missing_p, split


def fill_for(dt, rng):
    return rng.integers(0, 256, dt.itemsize, dtype=np.uint8).tobytes()


def expected_array(shape, chunk_shape, grid, dt, chunks, fill):
    full = np.empty(shape, dt)
    fv = np.frombuffer(fill, dt)[0]
    for coords in itertools.product(*map(range, grid)):
        sl = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, chunk_shape))
        full[sl] = chunks.get(coords, fv)
    return full


# -- decode_scatter --------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(cases())
@example(((4,), (2,), (8,), [np.arange(8)], np.dtype(NATIVE + "u2"), OTHER, K.GZIP, 1, 0.0, 0))
@example(((2, 3), (2, 2), (4, 6), [np.arange(4), np.arange(6)], np.dtype(NATIVE + "u4"), NATIVE, K.RAW, 2, 0.3, 1))
def test_decode_scatter_matches_numpy(case):
    chunk_shape, grid, shape, indices, dt, stored, codec, seed, missing_p, split = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in all_coords if rng.random() >= missing_p
    }
    order = list(chunks)
    rng.shuffle(order)
    src, where = shard_bytes(chunks, order, [0, 3, 1], codec, stored)
    tables = csr_tables(indices, chunk_shape, grid)
    out = np.empty(tuple(len(i) for i in indices), dt)
    out.view(np.uint8)[...] = 0x5A
    tasks = list(all_coords)
    rng.shuffle(tasks)
    swap = stored != NATIVE
    bounds = sorted({0, len(tasks), *rng.integers(0, len(tasks) + 1, split).tolist()})
    for t0, t1 in zip(bounds, bounds[1:]):  # disjoint task ranges, as the callers' threads do
        assert run_decode(src, tasks, where, tables, chunk_shape, dt, swap, codec, fill, out, t0, t1) == (-1, 0)
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)[np.ix_(*indices)]
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("codec", [K.RAW, K.GZIP])
@pytest.mark.parametrize("stored", [NATIVE, OTHER])
@pytest.mark.parametrize(("shape", "chunk_shape"), [
    ((8, 6, 4), (2, 3, 4)),      # trailing dimension spans out: contiguous fast path
    ((8, 6, 4), (2, 6, 4)),      # whole planes
    ((8, 6, 4), (4, 3, 2)),      # rows only
    ((1, 6, 4), (1, 2, 4)),
    ((5,), (5,)),
    ((), ()),                    # 0-d
])
def test_whole_shard(codec, stored, shape, chunk_shape):
    """Every inner chunk whole: the fast path (straight into out) and the row copies."""
    rng = np.random.default_rng(0)
    dt = np.dtype(NATIVE + "u2")
    a = rng.integers(0, 2**16, shape, dtype=np.uint16).astype(dt)
    grid = tuple(s // c for s, c in zip(shape, chunk_shape))
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {}
    for coords in all_coords:
        sl = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, chunk_shape))
        chunks[coords] = a[sl]
    missing = all_coords[1::3]
    fill = b"\x07\x00"
    for c in missing:
        chunks.pop(c)
    src, where = shard_bytes(chunks, list(chunks), [0], codec, stored)
    tables = csr_tables([np.arange(n) for n in shape], chunk_shape, grid)
    out = np.zeros(shape, dt)
    assert run_decode(src, all_coords, where, tables, chunk_shape, dt, stored != NATIVE, codec, fill, out) == (-1, 0)
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)
    np.testing.assert_array_equal(out, want)


def test_tables_from_grid_projection():
    """Compressed tables (rows = chunks the selection touches, as _grid.array_projection
    returns them): task coordinates are row positions, not chunk coordinates."""
    from zarrcy._kernels import _grid

    rng = np.random.default_rng(11)
    dt = np.dtype(NATIVE + "u8")
    chunk_shape, grid = (4, 3), (50, 40)
    shape = (200, 120)
    idx = [np.array([199, 3, 150, 151, 3], np.int64), np.array([0, 119, 60], np.int64)]
    base, start, local, outi, rows = [], [], [], [], []
    for d in range(2):
        chunk, bounds, in_chunk, out_pos = _grid.array_projection(idx[d], chunk_shape[d])
        base.append(len(start))
        start.extend((bounds + len(local)).tolist())
        local.extend(in_chunk.tolist())
        outi.extend(out_pos.tolist())
        rows.append(chunk.tolist())
    tables = tuple(np.asarray(v, np.int64) for v in (base, start, local, outi))
    # only the touched chunks exist (the others are never looked at)
    chunks = {(a, b): rng.integers(0, 2**63, chunk_shape, dtype=np.uint64).astype(dt)
              for a in rows[0] for b in rows[1]}
    src, where_chunk = shard_bytes(chunks, list(chunks), [0], K.GZIP, NATIVE)
    positions = list(itertools.product(range(len(rows[0])), range(len(rows[1]))))
    where = {p: where_chunk[(rows[0][p[0]], rows[1][p[1]])] for p in positions}
    out = np.empty((5, 3), dt)
    assert run_decode(src, positions, where, tables, chunk_shape, dt, 0, K.GZIP, bytes(8), out) == (-1, 0)
    want = expected_array(shape, chunk_shape, grid, dt, chunks, bytes(8))[np.ix_(*idx)]
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("itemsize", [3, 16])
def test_odd_itemsizes(itemsize):
    """Elements of any size (structured, fixed strings); swap in words (complex)."""
    rng = np.random.default_rng(itemsize)
    dt = np.dtype(f"V{itemsize}")
    chunk_shape, grid = (3, 2), (2, 3)
    shape = (6, 6)
    full = rng.integers(0, 256, 36 * itemsize, dtype=np.uint8).view(dt).reshape(shape)
    chunks = {}
    for coords in itertools.product(*map(range, grid)):
        sl = tuple(slice(c * s, (c + 1) * s) for c, s in zip(coords, chunk_shape))
        chunks[coords] = full[sl]
    src, where = shard_bytes(chunks, list(chunks), [1], K.GZIP, NATIVE)
    idx = [np.array([5, 0, 0, 3]), np.array([1, 4, 2])]
    tables = csr_tables(idx, chunk_shape, grid)
    out = np.empty((4, 3), dt)
    fill = bytes(itemsize)
    assert run_decode(src, list(chunks), where, tables, chunk_shape, dt, 0, K.GZIP, fill, out) == (-1, 0)
    assert out.tobytes() == full[np.ix_(*idx)].tobytes()
    if itemsize == 16:  # complex128 stored big-endian: each 8-byte half swapped
        c = full.view(np.complex128)
        cs = {k: v.view(np.complex128) for k, v in chunks.items()}
        src, where = shard_bytes(cs, list(cs), [0], K.RAW, ">")
        out2 = np.empty((4, 3), np.complex128)
        assert run_decode(src, list(cs), where, tables, chunk_shape, out2.dtype, 8, K.RAW, fill, out2) == (-1, 0)
        assert out2.tobytes() == c[np.ix_(*idx)].tobytes()


def test_read_only_src_and_empty_ranges():
    dt = np.dtype(NATIVE + "u4")
    chunk = np.arange(8, dtype=dt).reshape(2, 4)
    src = memoryview(gzip.compress(chunk.tobytes())).toreadonly()
    where = {(0, 0): (0, len(src))}
    tables = csr_tables([np.arange(2), np.arange(4)], (2, 4), (1, 1))
    out = np.zeros((2, 4), dt)
    assert run_decode(src, [(0, 0)], where, tables, (2, 4), dt, 0, K.GZIP, bytes(4), out, 1, 1) == (-1, 0)
    assert not out.any()
    assert run_decode(src, [(0, 0)], where, tables, (2, 4), dt, 0, K.GZIP, bytes(4), out) == (-1, 0)
    np.testing.assert_array_equal(out, chunk)
    # no tasks at all
    empty = np.empty((0, 2), np.int64)
    z = np.empty(0, np.int64)
    assert K.decode_scatter(b"", empty, z, z, 0, 0, *tables, np.array([2, 4], np.int64), 4, 0, 0, bytes(4),
                            out, np.empty(32, np.uint8)) == (-1, 0)


def test_trailing_zero_padding_accepted():
    dt = np.dtype("u1")
    raw = bytes(range(6))
    src = gzip.compress(raw) + b"\0\0\0"
    tables = csr_tables([np.arange(6)], (6,), (1,))
    out = np.zeros(6, dt)
    assert run_decode(src, [(0,)], {(0,): (0, len(src))}, tables, (6,), dt, 0, K.GZIP, b"\0", out) == (-1, 0)
    assert out.tobytes() == raw


@pytest.mark.parametrize(("payload", "codec", "code"), [
    (b"not gzip at all, not at all", K.GZIP, K.GZIP_BAD_DATA),
    (gzip.compress(bytes(5)), K.GZIP, K.GZIP_TOO_SHORT),
    (gzip.compress(bytes(7)), K.GZIP, K.GZIP_TOO_LONG),
    (gzip.compress(bytes(6))[:-3], K.GZIP, K.GZIP_BAD_DATA),
    (gzip.compress(bytes(6)) + b"\0x", K.GZIP, K.GZIP_TRAILING),
    (gzip.compress(bytes(3)) + gzip.compress(bytes(3)), K.GZIP, K.GZIP_TOO_SHORT),  # 2 members
    (b"", K.GZIP, K.GZIP_BAD_DATA),
    (bytes(5), K.RAW, K.RAW_SIZE),
    (bytes(7), K.RAW, K.RAW_SIZE),
])
@pytest.mark.parametrize("whole", [True, False])
def test_failure_codes(payload, codec, code, whole):
    """The failing task and its code; tasks before it are done, later ones are not."""
    dt = np.dtype("u1")
    good = encode(np.arange(6, dtype=dt), codec, NATIVE)
    src = good + payload + good
    where = {(0,): (0, len(good)), (1,): (len(good), len(payload)), (2,): (len(good) + len(payload), len(good))}
    idx = np.arange(18) if whole else np.arange(0, 18, 2)
    tables = csr_tables([idx], (6,), (3,))
    out = np.zeros(len(idx), dt)
    assert run_decode(src, [(0,), (1,), (2,)], where, tables, (6,), dt, 0, codec, b"\0", out) == (1, code)
    assert out[: len(idx) // 3].tolist() == idx[: len(idx) // 3].tolist()
    assert not out[-(len(idx) // 3):].any()
    assert K.describe(code) != K.describe(K.OK)


def _args(**kw):
    """A valid decode_scatter call (2 x 3 chunks of 2 x 2 u2), overridable by name."""
    dt = np.dtype(NATIVE + "u2")
    chunk = np.arange(4, dtype=dt).reshape(2, 2)
    enc = gzip.compress(chunk.tobytes())
    a = dict(
        src=enc, task_coords=np.array([[0, 0], [1, 2]], np.int64), task_off=np.array([0, 0], np.int64),
        task_len=np.array([len(enc), -1], np.int64), t0=0, t1=2,
    )
    base, start, local, outi = csr_tables([np.arange(4), np.arange(6)], (2, 2), (2, 3))
    a.update(dim_base=base, dim_start=start, dim_local=local, dim_out=outi,
             chunk_shape=np.array([2, 2], np.int64), itemsize=2, swap=0, codec=K.GZIP, fill=bytes(2),
             out=np.zeros((4, 6), dt), scratch=np.empty(8, np.uint8))
    a.update(kw)
    return a


def test_valid_args_baseline():
    a = _args()
    assert K.decode_scatter(**a) == (-1, 0)
    assert a["out"][:2, :2].tolist() == [[0, 1], [2, 3]]


@pytest.mark.parametrize(("kw", "exc"), [
    (dict(task_off=np.array([1, 0], np.int64)), ValueError),                   # range past src
    (dict(task_off=np.array([-1, 0], np.int64)), ValueError),
    (dict(task_len=np.array([10**6, -1], np.int64)), ValueError),
    (dict(task_len=np.array([-2, -1], np.int64)), ValueError),
    (dict(task_off=np.array([0], np.int64)), ValueError),                      # table lengths
    (dict(task_coords=np.array([[0, 0, 0], [0, 0, 0]], np.int64)), ValueError),
    (dict(task_coords=np.array([[0, 0], [1, 4]], np.int64)), IndexError),      # past dim_start
    (dict(task_coords=np.array([[0, -1], [0, 0]], np.int64)), IndexError),
    (dict(t1=3), IndexError),
    (dict(t0=2, t1=1), IndexError),
    (dict(dim_base=np.array([0, 99], np.int64)), IndexError),
    (dict(dim_base=np.array([0], np.int64)), ValueError),
    (dict(dim_start=np.array([0, 2, 4, 6, 4, 6, 8, 10], np.int64)), IndexError),  # decreasing
    (dict(dim_start=np.array([0, 2, 4, 6, 8, 99], np.int64)), IndexError),     # past the entries
    (dict(dim_local=np.array([0, 1, 0, 2, 0, 1, 0, 1, 0, 1], np.int64)), IndexError),  # 2 >= chunk
    (dict(dim_out=np.array([0, 1, 2, 4, 0, 1, 2, 3, 4, 5], np.int64)), IndexError),    # 4 >= out
    (dict(dim_out=np.arange(9, dtype=np.int64)), ValueError),
    (dict(out=np.zeros((4, 6), np.uint32)), ValueError),                        # wrong itemsize
    (dict(out=np.zeros((6, 4), np.uint16).T), ValueError),                      # not C-contiguous
    (dict(out=np.zeros((4, 6), np.uint16)[:, :5]), ValueError),
    (dict(out=np.zeros((4, 6, 1), np.uint16)), ValueError),
    (dict(out=np.zeros((4, 6), object)), ValueError),
    (dict(out=bytearray(48)), ValueError),
    (dict(scratch=np.empty(7, np.uint8)), ValueError),
    (dict(fill=bytes(3)), ValueError),
    (dict(codec=2), ValueError),
    (dict(swap=3), ValueError),
    (dict(itemsize=0), ValueError),
    (dict(chunk_shape=np.array([2, 0], np.int64)), ValueError),
    (dict(chunk_shape=np.array([2**40, 2**40], np.int64)), ValueError),
])
def test_validation_errors(kw, exc):
    a = _args(**kw)
    before = a["out"].copy()
    with pytest.raises(exc):
        K.decode_scatter(**a)
    np.testing.assert_array_equal(a["out"], before)  # raised before anything was written


def test_read_only_out_rejected():
    out = np.zeros((4, 6), np.dtype(NATIVE + "u2"))
    out.flags.writeable = False
    with pytest.raises(ValueError):
        K.decode_scatter(**_args(out=out))


def test_threads_disjoint_ranges():
    """4 threads, each with its own scratch (and libdeflate decompressor), disjoint tasks."""
    rng = np.random.default_rng(7)
    dt = np.dtype(NATIVE + "u2")
    shape, chunk_shape = (32, 32, 16), (8, 8, 8)
    grid = tuple(s // c for s, c in zip(shape, chunk_shape))
    a = rng.integers(0, 50, shape, dtype=np.uint16).astype(dt)
    coords = list(itertools.product(*map(range, grid)))
    chunks = {c: a[tuple(slice(i * s, (i + 1) * s) for i, s in zip(c, chunk_shape))] for c in coords}
    src, where = shard_bytes(chunks, coords, [0], K.GZIP, OTHER)
    idx = [np.arange(0, 32, 3), np.arange(32)[::-1], np.array([1, 5, 5, 15])]
    tables = csr_tables(idx, chunk_shape, grid)
    want = a[np.ix_(*idx)]
    for _ in range(3):
        out = np.zeros(want.shape, dt)
        results = []
        bounds = np.linspace(0, len(coords), 5).astype(int)

        def work(t0, t1):
            results.append(run_decode(src, coords, where, tables, chunk_shape, dt, 1, K.GZIP, bytes(2), out, t0, t1))

        threads = [threading.Thread(target=work, args=(int(b0), int(b1))) for b0, b1 in zip(bounds, bounds[1:])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == [(-1, 0)] * 4
        np.testing.assert_array_equal(out, want)


# -- decode_points ---------------------------------------------------------------------

def point_tables(points: np.ndarray, chunk_shape, grid, task_coords):
    """CSR over tasks: the points (rows of array coordinates) each task's chunk holds."""
    cs = np.asarray(chunk_shape, np.int64)
    chunk_of = [tuple(r) for r in (points // cs).tolist()] if points.size else [()] * len(points)
    start, local, outi = [0], [], []
    for tc in task_coords:
        for k, c in enumerate(chunk_of):
            if c == tuple(tc):
                local.append(int(np.ravel_multi_index(tuple(points[k] % cs), chunk_shape)) if len(cs) else 0)
                outi.append(k)
        start.append(len(local))
    i64 = lambda v: np.asarray(v, dtype=np.int64)  # noqa: E731
    return i64(start), i64(local), i64(outi)


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(0, 30), st.booleans())
def test_decode_points_matches_numpy(case, npts, two_d):
    chunk_shape, grid, shape, _, dt, stored, codec, seed, missing_p, split = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in all_coords if rng.random() >= missing_p
    }
    src, where = shard_bytes(chunks, list(chunks), [2], codec, stored)
    points = np.stack([rng.integers(0, n, npts) for n in shape], axis=1).astype(np.int64)
    tasks = list(all_coords)
    rng.shuffle(tasks)
    pt_start, pt_local, pt_out = point_tables(points, chunk_shape, grid, tasks)
    off = np.array([where.get(c, (0, -1))[0] for c in tasks], np.int64)
    ln = np.array([where.get(c, (0, -1))[1] for c in tasks], np.int64)
    out = np.zeros((npts, 1) if two_d else (npts,), dt)
    scratch = np.empty(int(np.prod(chunk_shape)) * dt.itemsize, np.uint8)
    bounds = sorted({0, len(tasks), *rng.integers(0, len(tasks) + 1, split).tolist()})
    for t0, t1 in zip(bounds, bounds[1:]):
        assert K.decode_points(src, off, ln, t0, t1, pt_start, pt_local, pt_out, np.asarray(chunk_shape, np.int64),
                               dt.itemsize, stored != NATIVE, codec, fill, out, scratch) == (-1, 0)
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)[tuple(points.T)]
    assert out.tobytes() == want.tobytes()


def _pt_args(**kw):
    dt = np.dtype(NATIVE + "u2")
    enc = gzip.compress(np.arange(4, dtype=dt).tobytes())
    a = dict(src=enc, task_off=np.array([0, 0], np.int64), task_len=np.array([len(enc), -1], np.int64), t0=0, t1=2,
             pt_start=np.array([0, 2, 3], np.int64), pt_local=np.array([3, 0, 1], np.int64),
             pt_out=np.array([0, 2, 1], np.int64), chunk_shape=np.array([2, 2], np.int64), itemsize=2, swap=0,
             codec=K.GZIP, fill=b"\x09\x00", out=np.zeros(3, dt), scratch=np.empty(8, np.uint8))
    a.update(kw)
    return a


def test_decode_points_baseline_and_codes():
    a = _pt_args()
    assert K.decode_points(**a) == (-1, 0)
    assert a["out"].tolist() == [3, 9, 0]
    a = _pt_args(src=b"garbage, not gzip data at all")
    a["task_len"] = np.array([len(a["src"]), -1], np.int64)
    assert K.decode_points(**a) == (0, K.GZIP_BAD_DATA)



FAILURES = [
    (b"not gzip at all, not at all", K.GZIP, K.GZIP_BAD_DATA),
    (gzip.compress(bytes(5)), K.GZIP, K.GZIP_TOO_SHORT),
    (gzip.compress(bytes(7)), K.GZIP, K.GZIP_TOO_LONG),
    (gzip.compress(bytes(6)) + b"\0x", K.GZIP, K.GZIP_TRAILING),
    (b"", K.GZIP, K.GZIP_BAD_DATA),
    (bytes(5), K.RAW, K.RAW_SIZE),
    (bytes(7), K.RAW, K.RAW_SIZE),
]


@pytest.mark.parametrize(("payload", "codec", "code"), FAILURES)
@pytest.mark.parametrize("swap", [0, 1])
def test_decode_points_failure_codes(payload, codec, code, swap):
    """The points loops report the same codes as the scatter loop (one shared
    locate / size-check / decode step), serial and parallel, with and without a byte
    swap (raw + swap decodes into scratch, raw native reads the stored bytes)."""
    dt = np.dtype(NATIVE + "u2")
    chunk = np.arange(3, dtype=dt)
    stored = chunk.byteswap() if swap else chunk
    good = encode(stored.view(np.uint8), codec, NATIVE)
    if codec == K.RAW:
        payload = payload + payload  # 10 / 14 bytes: still not the 6 of a chunk
    src = good + payload + good
    off = np.array([0, len(good), len(good) + len(payload)], np.int64)
    ln = np.array([len(good), len(payload), len(good)], np.int64)
    pt_start = np.array([0, 2, 4, 6], np.int64)
    pt_local = np.array([2, 0, 1, 2, 0, 1], np.int64)
    pt_out = np.arange(6, dtype=np.int64)
    common = dict(pt_start=pt_start, pt_local=pt_local, pt_out=pt_out, chunk_shape=np.array([3], np.int64),
                  itemsize=2, swap=swap, codec=codec, fill=bytes(2))
    out = np.zeros(6, dt)
    assert K.decode_points(src, off, ln, 0, 3, out=out, scratch=np.empty(6, np.uint8), **common) == (1, code)
    assert out.tolist() == [2, 0, 0, 0, 0, 0]
    out = np.zeros(6, dt)
    status = np.zeros(3, np.uint8)
    assert K.decode_points_all([src], np.zeros(3, np.int64), off, ln, out=out, status=status, threads=2,
                               **common) == 1
    assert status.tolist() == [K.OK, code, K.OK]
    assert out[[0, 1, 4, 5]].tolist() == [2, 0, 0, 1]

@pytest.mark.parametrize(("kw", "exc"), [
    (dict(pt_start=np.array([0, 2], np.int64)), ValueError),
    (dict(pt_start=np.array([0, 2, 4], np.int64)), IndexError),
    (dict(pt_start=np.array([0, 3, 2], np.int64)), IndexError),
    (dict(pt_local=np.array([4, 0, 1], np.int64)), IndexError),
    (dict(pt_local=np.array([-1, 0, 1], np.int64)), IndexError),
    (dict(pt_out=np.array([0, 3, 1], np.int64)), IndexError),
    (dict(pt_out=np.array([0, 1], np.int64)), ValueError),
    (dict(task_off=np.array([5, 0], np.int64)), ValueError),
    (dict(task_len=np.array([-3, -1], np.int64)), ValueError),
    (dict(t1=3), IndexError),
    (dict(out=np.zeros(3, np.uint8)), ValueError),
    (dict(out=np.zeros(6, np.uint16)[::2]), ValueError),
    (dict(scratch=np.empty(4, np.uint8)), ValueError),
    (dict(codec=3), ValueError),
])
def test_decode_points_validation(kw, exc):
    a = _pt_args(**kw)
    with pytest.raises(exc):
        K.decode_points(**a)
    assert not a["out"].any()


# -- gather_encode ---------------------------------------------------------------------

def ref_chunks(arr: np.ndarray, chunk_shape, fill: bytes):
    """(padded chunk, in-bounds part is all fill bytewise) per inner chunk, C order."""
    grid = [-(-s // c) for s, c in zip(arr.shape, chunk_shape)]
    fv = np.frombuffer(fill, arr.dtype)[0]
    for coords in itertools.product(*map(range, grid)):
        sl = tuple(slice(g * c, (g + 1) * c) for g, c in zip(coords, chunk_shape))
        part = arr[sl]
        padded = np.full(chunk_shape, fv, arr.dtype)
        padded[tuple(slice(0, n) for n in part.shape)] = part
        empty = np.ascontiguousarray(part).tobytes() == fill * part.size
        yield coords, padded, empty


def run_encode(arr, chunk_shape, stored, codec, level, fill, write_empty, bounds=None):
    grid = [-(-s // c) for s, c in zip(arr.shape, chunk_shape)]
    n = int(np.prod(grid))
    cb = int(np.prod(chunk_shape)) * arr.dtype.itemsize
    slot = K.slot_size(codec, level, cb)
    offsets = np.arange(n + 1, dtype=np.int64) * slot
    buf = np.empty(n * slot, np.uint8)
    nbytes = np.full(n, -7, np.int64)
    flags = np.full(n, 9, np.uint8)
    bounds = bounds or [0, n]
    results = []

    def work(t0, t1):
        scratch = np.empty(cb, np.uint8)
        results.append(K.gather_encode(arr, np.asarray(chunk_shape, np.int64), arr.dtype.itemsize,
                                       stored != NATIVE, codec, level, fill, write_empty, t0, t1,
                                       buf, offsets, nbytes, flags, scratch))

    threads = [threading.Thread(target=work, args=(b0, b1)) for b0, b1 in zip(bounds, bounds[1:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [(-1, 0)] * len(threads)
    return buf, offsets, nbytes, flags


@st.composite
def encode_cases(draw):
    ndim = draw(st.integers(0, 4))
    chunk_shape = tuple(draw(st.lists(st.integers(1, 5), min_size=ndim, max_size=ndim)))
    shape = tuple(draw(st.integers(0, 3 * c)) for c in chunk_shape)
    dt = np.dtype(NATIVE + draw(st.sampled_from(DTYPES)))
    return (chunk_shape, shape, dt, draw(st.sampled_from([NATIVE, OTHER])), draw(st.sampled_from([K.RAW, K.GZIP])),
            draw(st.integers(0, 12)), draw(st.booleans()), draw(st.integers(0, 2**32 - 1)),
            draw(st.integers(1, 3)))


@settings(max_examples=150, deadline=None)
@given(encode_cases())
@example(((4, 4), (8, 6), np.dtype(NATIVE + "u2"), OTHER, K.GZIP, 1, False, 3, 2))
def test_gather_encode_matches_reference(case):
    chunk_shape, shape, dt, stored, codec, level, write_empty, seed, nthreads = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    # few distinct values, then whole inner chunks (or their in-bounds parts) set to fill
    arr = rng.integers(0, 2, int(np.prod(shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(shape)
    fv = np.frombuffer(fill, dt)[0]
    for coords, _, _ in ref_chunks(arr, chunk_shape, fill):
        if rng.random() < 0.4:
            arr[tuple(slice(g * c, (g + 1) * c) for g, c in zip(coords, chunk_shape))] = fv
    arr.flags.writeable = False  # read-only source
    refs = list(ref_chunks(arr, chunk_shape, fill))
    bounds = sorted({0, len(refs), *rng.integers(0, len(refs) + 1, nthreads - 1).tolist()})
    buf, offsets, nbytes, flags = run_encode(arr, chunk_shape, stored, codec, level, fill, write_empty, bounds)
    for i, (coords, padded, empty) in enumerate(refs):
        if empty and not write_empty:
            assert (flags[i], nbytes[i]) == (1, -1), coords
            continue
        assert flags[i] == 0, coords
        got = buf[offsets[i]: offsets[i] + nbytes[i]].tobytes()
        if codec == K.GZIP:
            got = gzip.decompress(got)
        assert got == encode(padded, K.RAW, stored), coords


def test_gather_encode_bytewise_empty():
    """-0.0 and another NaN payload are data, not the fill value (bytewise comparison)."""
    arr = np.zeros((4, 4), np.float64)
    arr[0, 0] = -0.0
    arr[2, 3] = np.float64(np.nan)
    fill = np.float64(0.0).tobytes()
    _, _, nbytes, flags = run_encode(arr, (2, 2), NATIVE, K.RAW, 0, fill, False)
    assert flags.tolist() == [0, 1, 1, 0]
    nan_fill = np.float64(np.nan).tobytes()
    arr2 = np.full((2, 2), np.nan)
    arr2.view(np.uint64)[1, 1] ^= 1  # another NaN payload
    _, _, _, flags = run_encode(arr2, (1, 2), NATIVE, K.RAW, 0, nan_fill, False)
    assert flags.tolist() == [1, 0]


@pytest.mark.parametrize("codec", [K.RAW, K.GZIP])
@pytest.mark.parametrize("stored", [NATIVE, OTHER])
def test_encode_decode_round_trip(codec, stored):
    """gather_encode's pieces read back by decode_scatter (whole shard, edge chunks)."""
    rng = np.random.default_rng(3)
    dt = np.dtype(NATIVE + "u4")
    shape, chunk_shape = (9, 7, 8), (4, 4, 8)
    arr = rng.integers(0, 9, shape, dtype=np.uint32).astype(dt)
    arr[:4, :4] = 5
    arr[8:, 4:] = 5
    fill = np.uint32(5).astype(dt).tobytes()
    buf, offsets, nbytes, flags = run_encode(arr, chunk_shape, stored, codec, 1, fill, False, [0, 2, 6])
    grid = tuple(-(-s // c) for s, c in zip(shape, chunk_shape))
    coords = list(itertools.product(*map(range, grid)))
    where = {c: (int(offsets[i]), int(nbytes[i])) for i, c in enumerate(coords) if not flags[i]}
    assert len(where) == len(coords) - 2  # (0, 0, 0) all fill; (2, 1, 0) holds only fill where in bounds
    tables = csr_tables([np.arange(n) for n in shape], chunk_shape, grid)
    out = np.zeros(shape, dt)
    assert run_decode(buf, coords, where, tables, chunk_shape, dt, stored != NATIVE, codec, fill, out) == (-1, 0)
    np.testing.assert_array_equal(out, arr)


def _enc_args(**kw):
    arr = np.zeros((4, 6), np.uint16)
    slot = K.slot_size(K.GZIP, 1, 8)
    a = dict(src=arr, chunk_shape=np.array([2, 2], np.int64), itemsize=2, swap=0, codec=K.GZIP, level=1,
             fill=bytes(2), write_empty=True, t0=0, t1=6, out_buf=np.empty(6 * slot, np.uint8),
             out_offsets=np.arange(7, dtype=np.int64) * slot, out_nbytes=np.zeros(6, np.int64),
             empty_flags=np.zeros(6, np.uint8), scratch=np.empty(8, np.uint8))
    a.update(kw)
    return a


def test_gather_encode_valid_baseline():
    a = _enc_args()
    assert K.gather_encode(**a) == (-1, 0)
    assert (a["out_nbytes"] > 0).all()


@pytest.mark.parametrize(("kw", "exc"), [
    (dict(out_offsets=np.arange(6, dtype=np.int64)), ValueError),
    (dict(out_offsets=np.arange(7, dtype=np.int64) * 8), ValueError),       # slot below the gzip bound
    (dict(out_buf=np.empty(10, np.uint8)), ValueError),
    (dict(out_nbytes=np.zeros(5, np.int64)), ValueError),
    (dict(empty_flags=np.zeros(7, np.uint8)), ValueError),
    (dict(t1=7), IndexError),
    (dict(t0=-1), IndexError),
    (dict(src=np.zeros((6, 4), np.uint16).T), ValueError),
    (dict(src=np.zeros((4, 6), np.uint32)), ValueError),
    (dict(src=np.zeros(24, np.uint16)), ValueError),
    (dict(scratch=np.empty(7, np.uint8)), ValueError),
    (dict(level=13), ValueError),
    (dict(codec=5), ValueError),
    (dict(fill=b"\0"), ValueError),
    (dict(swap=16), ValueError),
])
def test_gather_encode_validation(kw, exc):
    a = _enc_args(**kw)
    with pytest.raises(exc):
        K.gather_encode(**a)
    assert not a["out_nbytes"].any() and not a["empty_flags"].any()
