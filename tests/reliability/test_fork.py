"""Arrays in child processes: fork, forkserver, spawn (issue 12 item 2).

Before the fix, ``config.executor()`` survived ``fork`` with the parent's (absent)
threads: a forked child's first multi-chunk read or write queued tasks no thread ran
and waited forever (multiprocessing's default start method on Linux with Python 3.12,
Dask's process scheduler, PyTorch data-loader workers).  Every pool, lock and cache
that threads touch is now reset in a forked child (``zarrcy.config.at_fork_reset``).

Each child runs under a timeout: a regression fails the test instead of hanging CI.
The parent has live pool threads when it forks, so Python 3.12 warns that fork may
deadlock the child -- exactly the situation under test; the warning is ignored here.
"""

from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import random
import threading

import numpy as np
import pytest

import zarrcy
from zarrcy.nodes import array_write as zarray  # the object locks live with the write path
zconfig = importlib.import_module("zarrcy.config")  # (zarrcy.config is the function)

pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")

TIMEOUT = 60
SHAPE = (64, 48)
CHUNKS = (8, 8)
SHARDS = (16, 24)


def _expected() -> np.ndarray:
    return (np.arange(SHAPE[0] * SHAPE[1], dtype=np.int32) * 7 - 5).reshape(SHAPE)


def _make(path, sharded: bool) -> zarrcy.Array:
    kw = {"shards": SHARDS} if sharded else {}
    a = zarrcy.create_array(str(path), shape=SHAPE, chunks=CHUNKS, dtype="int32", fill_value=-1, **kw)
    a[...] = _expected()
    return a


def _start(method: str, target, *args) -> mp.process.BaseProcess:
    p = mp.get_context(method).Process(target=target, args=args)
    p.start()
    return p


def _join(procs) -> None:
    """Wait at most TIMEOUT seconds in total; kill and fail on a hang, fail on a crash."""
    hung = []
    for p in procs:
        p.join(timeout=TIMEOUT)
        if p.is_alive():
            hung.append(p.pid)
            p.kill()
            p.join(5)
    assert not hung, f"child processes {hung} hung (killed after {TIMEOUT} s)"
    assert [p.exitcode for p in procs] == [0] * len(procs)


# -- children (module level: forkserver and spawn import them by name) -------------------


def _child_read_write(a: zarrcy.Array) -> None:
    """A multi-chunk read and a multi-chunk write, then the pools by hand."""
    zarrcy.config(threads=4)
    exp = _expected()
    assert (a[...] == exp).all()
    assert (a[3:50, 5:40] == exp[3:50, 5:40]).all()
    a[8:40, 8:40] = 1000  # several chunks / shards, on the pool
    exp[8:40, 8:40] = 1000
    assert (zarrcy.open_array(a.store, path=a.path, mode="r")[...] == exp).all()
    assert zconfig.executor().submit(int, "7").result(timeout=TIMEOUT) == 7
    assert zconfig.named_pool("test-fork", 2).submit(int, "8").result(timeout=TIMEOUT) == 8
    a[8:40, 8:40] = _expected()[8:40, 8:40]  # leave the data as found for the next child


def _child_random_reads(a: zarrcy.Array, seed: int, n: int) -> None:
    """A data-loader worker: random slices (and a few orthogonal selections)."""
    rng = random.Random(seed)
    exp = _expected()
    for _ in range(n):
        y0, x0 = rng.randrange(SHAPE[0]), rng.randrange(SHAPE[1])
        y1, x1 = rng.randrange(y0, SHAPE[0]) + 1, rng.randrange(x0, SHAPE[1]) + 1
        sy, sx = rng.randrange(1, 4), rng.randrange(1, 4)
        sel = (slice(y0, y1, sy), slice(x0, x1, sx))
        got = a[sel]
        assert (got == exp[sel]).all(), sel
    idx = sorted(rng.sample(range(SHAPE[0]), 5))
    assert (a.oindex[idx, :] == exp[idx, :]).all()


def _child_write_key(a: zarrcy.Array) -> None:
    """Writes the chunk whose object lock a parent thread held at the fork."""
    zarrcy.config(threads=4)
    a[0:8, 0:8] = 77  # the locked chunk alone
    a[0:30, 0:30] = 78  # and several chunks on the pool
    assert (a[0:30, 0:30] == 78).all()


# -- tests -----------------------------------------------------------------------------


def _use_pools(a: zarrcy.Array) -> None:
    """The parent uses every pool before it forks (the state that used to hang)."""
    assert (a[...] == _expected()).all()  # multi-chunk: runs on config.executor()
    assert zconfig.executor().submit(int, "1").result() == 1
    assert zconfig.named_pool("test-fork", 2).submit(int, "2").result() == 2


@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
def test_child_reads_and_writes(tmp_path, restore_config, method, sharded):
    if method not in mp.get_all_start_methods():
        pytest.skip(f"start method {method!r} not available on this platform")
    zarrcy.config(threads=4)
    a = _make(tmp_path / "a", sharded)
    _use_pools(a)
    _join([_start(method, _child_read_write, a)])
    assert (a[...] == _expected()).all()


@pytest.mark.parametrize("sharded", [False, True], ids=["unsharded", "sharded"])
def test_data_loader_pattern(tmp_path, restore_config, sharded):
    """Parent reads with the pool, then N forked workers read random slices at once."""
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    zarrcy.config(threads=4)
    a = _make(tmp_path / "a", sharded)
    _use_pools(a)
    procs = [_start("fork", _child_random_reads, a, seed, 25) for seed in range(4)]
    # the parent keeps reading while its children do (its pool stays its own)
    for _ in range(5):
        assert (a[::3, 1::2] == _expected()[::3, 1::2]).all()
    _join(procs)


def test_fork_while_another_thread_holds_locks(tmp_path, restore_config):
    """A parent thread holds the object lock of a chunk (and the guard of the lock table,
    the config lock and the pool-table lock) at the fork: the child must not inherit them
    held.  (The in-process locks only: the cross-process write lock of the chunk, held by
    the parent, rightly makes the child wait -- test_shared_shard_writers.py.)"""
    if "fork" not in mp.get_all_start_methods():
        pytest.skip("no fork on this platform")
    zarrcy.config(threads=4)
    a = _make(tmp_path / "a", sharded=False)
    _use_pools(a)
    key = a._key((0, 0))
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with zconfig.override(write_locks=False), zarray._object_lock(a.store, key):
            with zarray._OBJECT_LOCKS_GUARD, zconfig._lock, zconfig._POOLS_LOCK:
                held.set()
                release.wait(TIMEOUT)

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(TIMEOUT)
        p = _start("fork", _child_write_key, a)
        p.join(timeout=TIMEOUT)
        alive = p.is_alive()
        if alive:
            p.kill()
            p.join(5)
    finally:
        release.set()
        t.join(TIMEOUT)
    assert not alive, f"the child hung for {TIMEOUT} s on a lock held by a parent thread at fork"
    assert p.exitcode == 0
    assert (a[0:30, 0:30] == 78).all()
    # the parent's own lock table is intact: its lock was released and removed normally
    assert zarray._OBJECT_LOCKS == {}
    a[0:8, 0:8] = 5
    assert (a[0:8, 0:8] == 5).all()


def test_at_fork_reset_runs_callbacks_in_child(tmp_path):
    """The public hook other modules use: callbacks run in the forked child only, in
    registration order, and one failing callback does not stop the next."""
    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    log = tmp_path / "log"
    calls: list[str] = []

    def first() -> None:
        calls.append("first")
        raise RuntimeError("boom (expected in this test)")

    def second() -> None:
        calls.append("second")
        log.write_text(",".join(calls))

    n = len(zconfig._AT_FORK)
    zconfig.at_fork_reset(first)
    assert zconfig.at_fork_reset(second) is second
    try:
        pid = os.fork()
        if pid == 0:  # child: the hooks already ran
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        del zconfig._AT_FORK[n:]
    assert calls == []  # never in the parent
    assert log.read_text() == "first,second"


def _fork_while_held(locks, body):
    """Fork while a parent thread holds ``locks``; return what ``body()`` returns in the
    child (or the repr of what it raised).  Fails, instead of hanging, if the child does
    not finish within TIMEOUT seconds."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        for lk in locks:
            lk.acquire()
        held.set()
        release.wait(TIMEOUT)
        for lk in locks:
            lk.release()

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def child(q) -> None:
        try:
            q.put(body())
        except BaseException as e:  # report instead of hanging
            q.put(repr(e))

    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(timeout=TIMEOUT)
    release.set()
    t.join()
    alive = p.is_alive()
    if alive:
        p.kill()
    assert not alive, "forked child hung on a lock inherited from the parent"
    return q.get(timeout=5)


def test_zip_store_lock_reset_after_fork(tmp_path):
    """A ZipStore whose lock a parent thread holds at fork time stays usable in the child."""
    from zarrcy.storage.zip import ZipStore

    path = tmp_path / "a.zip"
    with ZipStore(str(path), mode="w") as z:
        z.set("k", b"value")
    store = ZipStore(str(path), mode="r")

    def body() -> bytes:
        with store._st.lock:
            pass
        return bytes(store.get("k"))

    assert _fork_while_held([store._st.lock], body) == b"value"


def test_module_locks_held_at_fork(tmp_path):
    """Parent threads hold the codec registry, pipeline cache and zstd library locks at
    the fork: the child still resolves codecs and decodes zstd chunks (it hung before)."""
    from zarrcy.codecs import ZstdCodec

    path = str(tmp_path / "z.zarr")
    a = zarrcy.create_array(path, shape=(64, 64), chunks=(16, 16), dtype="int32", compressors=[ZstdCodec(level=1)])
    a[...] = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    mods = [importlib.import_module(m) for m in ("zarrcy.codecs.registry", "zarrcy.codecs.pipeline", "zarrcy.codecs.zstd")]

    def body() -> tuple[int, int]:
        b = zarrcy.create_array(path + "2", shape=(32,), chunks=(8,), dtype="uint8", compressors=[ZstdCodec(level=3)])
        b[...] = 7
        return int(zarrcy.open_array(path)[...].sum()), int(b[...].sum())

    got = _fork_while_held([mods[0]._lock, mods[1]._CACHE_LOCK, mods[2]._lib_lock], body)
    assert got == (int(np.arange(64 * 64).sum()), 7 * 32)
