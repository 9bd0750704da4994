"""The parallel, multi-buffer inner-chunk kernels (``_inner_chunks.decode_scatter_all`` /
``decode_points_all``) and the native worker pool under them (``_kernels._workers``),
against numpy fancy indexing of the original array (the oracle of test_inner_chunks).

Pool safety: helpers run next to Python threads, in several concurrent jobs, and in
fork / forkserver / spawn children (a forked child starts with an empty pool)."""

from __future__ import annotations

import gzip
import itertools
import multiprocessing as mp
import os
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import zarrcy.codecs.gzip  # noqa: F401 - resolves libdeflate's entry points (_deflate.load)
from zarrcy._kernels import _deflate, _workers
from zarrcy._kernels import _inner_chunks as K

sys.path.insert(0, os.path.dirname(__file__))
from test_inner_chunks import (  # noqa: E402
    NATIVE,
    cases,
    csr_tables,
    encode,
    expected_array,
    fill_for,
    point_tables,
)

pytestmark = [
    pytest.mark.skipif(not _deflate.available(), reason="libdeflate entry points not found"),
    pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning"),
]

TIMEOUT = 60


def split_buffers(chunks: dict, order, codec: int, stored: str, nbuf: int, rng):
    """Encoded chunks spread over ``nbuf`` buffers (with gap bytes): (bufs, {coords: (buf, off, len)})."""
    bufs = [bytearray() for _ in range(nbuf)]
    where = {}
    for coords in order:
        b = int(rng.integers(0, nbuf))
        bufs[b] += b"\xcd" * int(rng.integers(0, 3))
        enc = encode(chunks[coords], codec, stored)
        where[coords] = (b, len(bufs[b]), len(enc))
        bufs[b] += enc
    return [bytes(b) for b in bufs], where


def task_arrays(tasks, where):
    src = np.array([where.get(c, (-1, 0, -1))[0] for c in tasks], np.int64)
    off = np.array([where.get(c, (-1, 0, -1))[1] for c in tasks], np.int64)
    ln = np.array([where.get(c, (-1, 0, -1))[2] for c in tasks], np.int64)
    return src, off, ln


@settings(max_examples=120, deadline=None)
@given(cases(), st.integers(1, 4), st.integers(1, 3))
def test_decode_scatter_all_matches_numpy(case, nbuf, threads):
    chunk_shape, grid, shape, indices, dt, stored, codec, seed, missing_p, _ = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in all_coords if rng.random() >= missing_p
    }
    bufs, where = split_buffers(chunks, list(chunks), codec, stored, nbuf, rng)
    tasks = list(all_coords)
    rng.shuffle(tasks)
    src, off, ln = task_arrays(tasks, where)
    tables = csr_tables(indices, chunk_shape, grid)
    out = np.empty(tuple(len(i) for i in indices), dt)
    out.view(np.uint8)[...] = 0x5A
    status = np.full(len(tasks), 77, np.uint8)
    coords = np.array(tasks, np.int64).reshape(len(tasks), len(chunk_shape))
    failed = K.decode_scatter_all(bufs, src, coords, off, ln, *tables, np.asarray(chunk_shape, np.int64),
                                  dt.itemsize, stored != NATIVE, codec, fill, out, status, threads)
    assert failed == 0 and not status.any()
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)[np.ix_(*indices)]
    assert out.tobytes() == want.tobytes()


@settings(max_examples=80, deadline=None)
@given(cases(), st.integers(0, 30), st.integers(1, 3), st.integers(1, 3))
def test_decode_points_all_matches_numpy(case, npts, nbuf, threads):
    chunk_shape, grid, shape, _, dt, stored, codec, seed, missing_p, _ = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in all_coords if rng.random() >= missing_p
    }
    bufs, where = split_buffers(chunks, list(chunks), codec, stored, nbuf, rng)
    points = np.stack([rng.integers(0, n, npts) for n in shape], axis=1).astype(np.int64)
    tasks = list(all_coords)
    rng.shuffle(tasks)
    pt_start, pt_local, pt_out = point_tables(points, chunk_shape, grid, tasks)
    src, off, ln = task_arrays(tasks, where)
    out = np.zeros(npts, dt)
    status = np.empty(len(tasks), np.uint8)
    assert K.decode_points_all(bufs, src, off, ln, pt_start, pt_local, pt_out, np.asarray(chunk_shape, np.int64),
                               dt.itemsize, stored != NATIVE, codec, fill, out, status, threads) == 0
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)[tuple(points.T)]
    assert out.tobytes() == want.tobytes()


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_every_task_runs_and_reports_its_code(threads):
    """Unlike decode_scatter (which stops at the first failure), every task runs; each
    failing task has its code in ``status``; the good ones are decoded."""
    dt = np.dtype("u1")
    good = gzip.compress(np.arange(6, dtype=dt).tobytes())
    bad = [b"not gzip", gzip.compress(bytes(3)) + gzip.compress(bytes(3)), good + b"\0x"]
    bufs = [good, bad[0], bad[1] + bad[2]]
    src = np.array([0, 1, 0, 2, 2, 0], np.int64)
    off = np.array([0, 0, 0, 0, len(bad[1]), 0], np.int64)
    ln = np.array([len(good), len(bad[0]), len(good), len(bad[1]), len(bad[2]), -1], np.int64)
    tasks = np.arange(6, dtype=np.int64).reshape(6, 1)
    tables = csr_tables([np.arange(36)], (6,), (6,))
    out = np.zeros(36, dt)
    status = np.empty(6, np.uint8)
    n = K.decode_scatter_all(bufs, src, tasks, off, ln, *tables, np.array([6], np.int64), 1, 0, K.GZIP, b"\x07",
                             out, status, threads)
    assert n == 3
    assert status.tolist() == [K.OK, K.GZIP_BAD_DATA, K.OK, K.GZIP_TOO_SHORT, K.GZIP_TRAILING, K.OK]
    assert out[:6].tolist() == list(range(6)) and out[12:18].tolist() == list(range(6))
    assert out[30:].tolist() == [7] * 6


def _all_args(**kw):
    dt = np.dtype(NATIVE + "u2")
    enc = gzip.compress(np.arange(4, dtype=dt).tobytes())
    base, start, local, outi = csr_tables([np.arange(4), np.arange(6)], (2, 2), (2, 3))
    a = dict(srcs=[enc], task_src=np.array([0, -1], np.int64), task_coords=np.array([[0, 0], [1, 2]], np.int64),
             task_off=np.array([0, 0], np.int64), task_len=np.array([len(enc), -1], np.int64),
             dim_base=base, dim_start=start, dim_local=local, dim_out=outi, chunk_shape=np.array([2, 2], np.int64),
             itemsize=2, swap=0, codec=K.GZIP, fill=bytes(2), out=np.zeros((4, 6), dt),
             status=np.empty(2, np.uint8), threads=2)
    a.update(kw)
    return a


def test_all_baseline():
    a = _all_args()
    assert K.decode_scatter_all(**a) == 0
    assert a["out"][:2, :2].tolist() == [[0, 1], [2, 3]]


@pytest.mark.parametrize(("kw", "exc"), [
    (dict(task_src=np.array([1, -1], np.int64)), IndexError),      # no such buffer
    (dict(task_src=np.array([-1, -1], np.int64)), IndexError),     # stored chunk without a buffer
    (dict(task_src=np.array([0], np.int64)), ValueError),          # wrong length
    (dict(task_off=np.array([1, 0], np.int64)), ValueError),       # range past the buffer
    (dict(status=np.empty(1, np.uint8)), ValueError),
    (dict(srcs=[]), IndexError),
    (dict(srcs=[b"x", 5]), TypeError),
])
def test_all_validation(kw, exc):
    with pytest.raises(exc):
        K.decode_scatter_all(**_all_args(**kw))


# -- the pool ----------------------------------------------------------------------------

@pytest.mark.parametrize("helpers", [0, 1, 3])
def test_pool_runs_every_item(helpers):
    for n in (0, 1, 2, 17, 1000):
        assert _workers.run_test_job(n, helpers, 200) == n


def test_pool_limit_counts_running_callers():
    """A helper joins only while fewer than ``limit`` threads run kernel work: with
    limit 1 the caller alone does every item (no oversubscription when the array layer
    already runs one job per core)."""
    before = _workers.jobs_helped()
    for _ in range(20):
        assert _workers.run_test_job(200, 3, 500, 1) == 200
    assert _workers.jobs_helped() == before


def test_pool_concurrent_jobs_from_python_threads():
    """Several callers post jobs at once; every job completes exactly."""
    results: list[int] = []
    lock = threading.Lock()

    def caller(k: int) -> None:
        for _ in range(30):
            got = _workers.run_test_job(50 + k, 2, 300)
            with lock:
                results.append(got - (50 + k))

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert results == [0] * 120
    assert 1 <= _workers.started() <= _workers.MAX_HELPERS


def _child_pool(q) -> None:
    try:
        started_before = _workers.started()
        done = _workers.run_test_job(500, 2, 500)
        q.put((started_before, done, _workers.started()))
    except BaseException as e:  # reported to the parent
        q.put(repr(e))


def _child_array(path, q) -> None:
    try:
        import zarrcy

        zarrcy.config(threads=2)
        a = zarrcy.open_array(path, mode="r")
        q.put(int(a[...].astype(np.int64).sum()) == int(np.arange(64 * 48).sum()))
    except BaseException as e:
        q.put(repr(e))


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_pool_in_child_processes(method, tmp_path):
    """The parent's helpers are busy or idle at fork time; the child's pool starts empty
    (fork) or fresh (forkserver, spawn) and its jobs complete; a sharded read with
    threads=2 (kernel path, pool helpers) gives the right data."""
    if method not in mp.get_all_start_methods():
        pytest.skip(f"start method {method} not available")
    import zarrcy
    from zarrcy.codecs import GzipCodec

    a = zarrcy.create_array(str(tmp_path / "a"), shape=(64, 48), chunks=(8, 8), shards=(32, 48), dtype="int32",
                            compressors=[GzipCodec(level=1)])
    a[...] = np.arange(64 * 48, dtype=np.int32).reshape(64, 48)
    assert _workers.run_test_job(100, 2) == 100  # the parent has started helpers
    ctx = mp.get_context(method)
    stop = threading.Event()

    def busy() -> None:  # helpers mid-job while the parent forks
        while not stop.is_set():
            _workers.run_test_job(200, 2, 2000)

    t = threading.Thread(target=busy)
    t.start()
    try:
        q = ctx.Queue()
        procs = [ctx.Process(target=_child_pool, args=(q,)), ctx.Process(target=_child_array, args=(str(tmp_path / "a"), q))]
        for p in procs:
            p.start()
        got = [q.get(timeout=TIMEOUT) for _ in procs]
        for p in procs:
            p.join(TIMEOUT)
            if p.is_alive():
                p.kill()
    finally:
        stop.set()
        t.join(TIMEOUT)
    assert [p.exitcode for p in procs] == [0, 0], got
    pool = next(g for g in got if isinstance(g, tuple))
    assert pool[0] == 0 and pool[1] == 500 and pool[2] >= 1, got
    assert True in got, got


@settings(max_examples=100, deadline=None)
@given(cases(), st.integers(1, 3), st.data())
def test_decode_scatter_all_into_strided_view(case, threads, data):
    """``out`` a region of a larger array (last dimension contiguous, rows strided): the
    kernel writes through the view's strides -- the same values as into a contiguous
    ``out`` -- and leaves every byte outside the region alone."""
    chunk_shape, grid, shape, indices, dt, stored, codec, seed, missing_p, _ = case
    rng = np.random.default_rng(seed)
    fill = fill_for(dt, rng)
    all_coords = list(itertools.product(*map(range, grid)))
    chunks = {
        c: rng.integers(0, 256, int(np.prod(chunk_shape)) * dt.itemsize, dtype=np.uint8).view(dt).reshape(chunk_shape)
        for c in all_coords if rng.random() >= missing_p
    }
    bufs, where = split_buffers(chunks, list(chunks), codec, stored, 2, rng)
    src, off, ln = task_arrays(all_coords, where)
    # whole selections half the time: whole inner chunks, the kernel's block path
    sel = [np.arange(n) if data.draw(st.booleans()) else idx for n, idx in zip(shape, indices)]
    tables = csr_tables(sel, chunk_shape, grid)
    oshape = tuple(len(i) for i in sel)
    lo = [data.draw(st.integers(0, 2)) for _ in oshape]
    hi = [data.draw(st.integers(0, 2)) for _ in oshape]
    big = np.empty(tuple(n + a + b for n, a, b in zip(oshape, lo, hi)), dt)
    big.view(np.uint8)[...] = 0x5A
    before = big.copy()
    region = tuple(slice(a, a + n) for a, n in zip(lo, oshape))
    out = big[region]
    status = np.empty(len(all_coords), np.uint8)
    coords = np.array(all_coords, np.int64).reshape(len(all_coords), len(chunk_shape))
    failed = K.decode_scatter_all(bufs, src, coords, off, ln, *tables, np.asarray(chunk_shape, np.int64),
                                  dt.itemsize, stored != NATIVE, codec, fill, out, status, threads)
    assert failed == 0 and not status.any()
    want = expected_array(shape, chunk_shape, grid, dt, chunks, fill)[np.ix_(*sel)]
    assert np.ascontiguousarray(out).tobytes() == want.tobytes()
    outside = np.ones(big.shape, bool)
    outside[region] = False
    assert big[outside].tobytes() == before[outside].tobytes()


def test_decode_scatter_all_rejects_views_it_cannot_write():
    """A non-contiguous last dimension or a negative stride: ValueError, nothing written."""
    chunk = np.arange(16, dtype=np.uint16).reshape(4, 4)
    bufs = [chunk.tobytes()]
    tables = csr_tables([np.arange(4), np.arange(4)], (4, 4), (1, 1))
    one = np.zeros(1, np.int64)
    for view in (np.zeros((4, 8), np.uint16)[:, ::2], np.zeros((4, 4), np.uint16)[::-1]):
        with pytest.raises(ValueError, match="C-contiguous"):
            K.decode_scatter_all(bufs, one, np.zeros((1, 2), np.int64), one, np.array([32], np.int64), *tables,
                                 np.array([4, 4], np.int64), 2, 0, K.RAW, np.zeros(2, np.uint8), view,
                                 np.empty(1, np.uint8), 1)
        assert not view.any()
