"""One execution context per API call, and never more busy threads than ``threads``
(issue 21 item 4; ``zarrcy/execution.py``).

Every read and write kind runs inside :class:`zarrcy.execution.observe` with
``rendezvous=True`` (each fan-out waits until its first helper has started, so "the
budget is used" is seen deterministically on a loaded machine); each context records in
its C :class:`~zarrcy.execution.Budget` the most threads that held a slot at once
(``peak``).  The rule: ``peak <= threads`` for every context; the calls that have work
for several threads (many shards, whole shards, big unsharded reads) reach
``peak >= 2`` -- the idle threads of a many-shard read join the kernels (whether a
third thread starts before the work runs out depends on the machine's load).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys

import numpy as np
import pytest

import zarrcy
from zarrcy.execution import Budget, ExecContext, observe
from zarrcy.storage import MemoryStore

THREADS = (2, 3)


def _sharded(kind: str = "native") -> zarrcy.Array:
    """64^3 int32 in 4 x 4 x 4 = 64 shards of 16^3, inner chunks 4^3 (64 per shard)."""
    codecs = None if kind == "native" else [{"name": "bytes"}, {"name": "numcodecs.zlib", "configuration": {"level": 1}}]
    kw = {} if codecs is None else {"compressors": None, "serializer": None}
    a = zarrcy.create_array(MemoryStore(), shape=(64, 64, 64), chunks=(4, 4, 4), shards=(16, 16, 16), dtype="int32",
                            fill_value=0)
    a[...] = np.arange(64 ** 3, dtype=np.int32).reshape(64, 64, 64)
    return a


def _unsharded() -> zarrcy.Array:
    a = zarrcy.create_array(MemoryStore(), shape=(256, 256), chunks=(64, 64), dtype="float64", fill_value=0)
    a[...] = np.arange(256 * 256, dtype=np.float64).reshape(256, 256)
    return a


def _check(seen: list[ExecContext], threads: int, *, calls: int = 1, busy: bool = False) -> None:
    assert len(seen) == calls, f"expected {calls} context(s) for the call, saw {len(seen)}"
    for ctx in seen:
        assert ctx.threads == threads
        assert 1 <= ctx.budget.peak <= threads, ctx
        assert ctx.budget.busy == 1, ctx  # every slot given back (the caller's remains)
    if busy:  # (rendezvous: the first helper has taken its slot before the work runs out)
        assert max(c.budget.peak for c in seen) >= 2, seen


REF = np.arange(64 ** 3, dtype=np.int32).reshape(64, 64, 64)

READS = {
    # name: (selection function, expected values, several threads' worth of work)
    "whole": (lambda a: a[...], lambda: REF, True),
    "many shards, partial": (lambda a: a[1:63, 1:63, 1:63], lambda: REF[1:63, 1:63, 1:63], True),
    "few shards, partial": (lambda a: a[10:22, 10:22, 10:22], lambda: REF[10:22, 10:22, 10:22], False),
    "steps": (lambda a: a[::3, ::5, ::7], lambda: REF[::3, ::5, ::7], False),
    "point": (lambda a: a[5, 6, 7], lambda: REF[5, 6, 7], False),
    "vindex": (lambda a: a.vindex[[1, 40, 63], [2, 50, 0], [3, 9, 63]], lambda: REF[[1, 40, 63], [2, 50, 0], [3, 9, 63]],
               False),
    "oindex": (lambda a: a.oindex[[0, 17, 40], :, [5, 60]], lambda: REF[[0, 17, 40]][:, :, [5, 60]], True),
}


@pytest.fixture(scope="module")
def sharded() -> zarrcy.Array:
    """One array for the tests that only read it (``_sharded`` rebuilds per test)."""
    return _sharded()


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("name", sorted(READS))
def test_sharded_reads_stay_within_the_budget(restore_config, sharded, threads, name):
    a = sharded
    zarrcy.config(threads=threads)
    sel, want, busy = READS[name]
    with observe(rendezvous=True) as seen:
        got = sel(a)
    np.testing.assert_array_equal(got, want())
    # a point read runs in the calling thread alone: no context per call (the latency
    # path; ExecContext.for_point)
    _check(seen, threads, calls=0 if name == "point" else 1, busy=busy)


@pytest.fixture(scope="module")
def python_codec() -> zarrcy.Array:
    """Inner chunks compressed by a Python codec (read only by the test below)."""
    a = zarrcy.create_array(MemoryStore(), shape=(64, 64, 64), chunks=(4, 4, 4), shards=(16, 16, 16), dtype="int32",
                            fill_value=0, compressors=[{"name": "numcodecs.zlib", "configuration": {"level": 1}}])
    a[...] = REF
    return a


@pytest.mark.parametrize("threads", THREADS)
def test_python_codec_path_stays_within_the_budget(restore_config, python_codec, threads):
    """Inner chunks decoded through the Python codecs (``ExecContext.map_inner``)."""
    a = python_codec
    zarrcy.config(threads=threads)
    with observe(rendezvous=True) as seen:
        np.testing.assert_array_equal(a[...], REF)
    _check(seen, threads, busy=True)
    with observe(rendezvous=True) as seen:
        np.testing.assert_array_equal(a[3:9, 3:40, 1:2], REF[3:9, 3:40, 1:2])
    _check(seen, threads)


@pytest.mark.parametrize("threads", THREADS)
def test_unsharded_reads_stay_within_the_budget(restore_config, threads):
    a = _unsharded()
    want = np.arange(256 * 256, dtype=np.float64).reshape(256, 256)
    zarrcy.config(threads=threads)
    for sel, busy in (((Ellipsis,), True), ((slice(3, 200), slice(7, 9)), False), ((5, 7), False)):
        with observe(rendezvous=True) as seen:
            np.testing.assert_array_equal(a[sel], want[sel])
        _check(seen, threads, calls=0 if sel == (5, 7) else 1, busy=busy)


WRITES = {
    "whole": (lambda a, v: a.__setitem__(Ellipsis, v), (slice(None),) * 3, True),
    "many shards, partial": (lambda a, v: a.__setitem__((slice(1, 63),) * 3, v[1:63, 1:63, 1:63]),
                             (slice(1, 63),) * 3, True),
    "one shard, partial": (lambda a, v: a.__setitem__((slice(2, 9),) * 3, v[2:9, 2:9, 2:9]), (slice(2, 9),) * 3, False),
    "vindex": (lambda a, v: a.vindex.__setitem__(([1, 40, 63], [2, 50, 0], [3, 9, 63]), v[[1, 40, 63], [2, 50, 0], [3, 9, 63]]),
               ([1, 40, 63], [2, 50, 0], [3, 9, 63]), False),
}


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("name", sorted(WRITES))
def test_sharded_writes_stay_within_the_budget(restore_config, threads, name):
    a = _sharded()
    new = -REF
    zarrcy.config(threads=threads)
    write, sel, busy = WRITES[name]
    with observe(rendezvous=True) as seen:
        write(a, new)
    want = REF.copy()
    want[sel] = new[sel]
    np.testing.assert_array_equal(a[...], want)
    _check(seen, threads, busy=busy)


@pytest.mark.parametrize("threads", THREADS)
def test_unsharded_writes_stay_within_the_budget(restore_config, threads):
    a = _unsharded()
    zarrcy.config(threads=threads)
    with observe(rendezvous=True) as seen:
        a[...] = 1.5
    _check(seen, threads, busy=True)
    with observe(rendezvous=True) as seen:
        a[10:20, 100:101] = 2.5
    _check(seen, threads)
    assert a[15, 100] == 2.5 and a[0, 0] == 1.5


@pytest.mark.parametrize("threads", THREADS)
def test_zarr_python_plugin_calls_stay_within_the_budget(restore_config, threads):
    zarr = pytest.importorskip("zarr")
    store = zarr.storage.MemoryStore()
    with zarr.config.set({"codec_pipeline.path": "zarrcy.zarr_plugin.ZarrcyCodecPipeline", "threading.max_workers": threads}):
        z = zarr.create_array(store, shape=(64, 64, 64), chunks=(4, 4, 4), shards=(16, 16, 16), dtype="int32")
        with observe(rendezvous=True) as seen:
            z[...] = REF
        for ctx in seen:
            assert 1 <= ctx.budget.peak <= ctx.threads <= threads
        with observe(rendezvous=True) as seen:
            np.testing.assert_array_equal(z[1:63, 1:63, 1:63], REF[1:63, 1:63, 1:63])
        assert seen
        for ctx in seen:
            assert 1 <= ctx.budget.peak <= ctx.threads <= threads


def test_contexts_are_passed_not_remade(restore_config):
    """A call made with ``context=`` (as ``zarrcy.convert`` does) makes no context of its own."""
    a = _sharded()
    zarrcy.config(threads=2)
    ctx = ExecContext.for_call()
    with observe() as seen:
        a.get_basic_selection((slice(1, 63),) * 3, context=ctx)
        a.set_basic_selection((slice(0, 3),) * 3, 7, context=ctx)
    assert seen == []
    assert ctx.budget.peak <= 2 and ctx.budget.busy == 1


def test_budget_counts_slots():
    b = Budget(2)
    assert (b.limit, b.busy, b.peak) == (2, 1, 1)
    assert b.try_acquire()
    assert not b.try_acquire()
    assert (b.busy, b.peak) == (2, 2)
    b.release()
    b.acquire()
    b.release()
    assert (b.busy, b.peak) == (1, 2)


def _child_reads(q) -> None:  # pragma: no cover - runs in the child
    try:
        zarrcy.config(threads=2)
        a = _sharded()
        with observe(rendezvous=True) as seen:
            ok = bool((a[...] == REF).all())
        q.put((ok, max(c.budget.peak for c in seen)))
    except BaseException as e:
        q.put((False, repr(e)))


@pytest.mark.skipif(sys.platform == "win32", reason="fork")
@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_budget_and_native_helpers_after_fork_or_spawn(restore_config, method):
    """The parent's native helpers are busy with a budgeted call just before the fork:
    the child's pools and helpers start afresh and its reads keep the budget."""
    a = _sharded()
    zarrcy.config(threads=2)
    np.testing.assert_array_equal(a[...], REF)
    mp_ctx = mp.get_context(method)
    q = mp_ctx.Queue()
    p = mp_ctx.Process(target=_child_reads, args=(q,))
    p.start()
    ok, peak = q.get(timeout=120)
    p.join(60)
    assert ok, peak
    assert peak == 2
    assert p.exitcode == 0
    assert os.getpid()  # the parent still reads
    np.testing.assert_array_equal(a[1:5, 1:5, 1:5], REF[1:5, 1:5, 1:5])


@pytest.mark.parametrize("workers", [2, 3])
def test_convert_regions_and_their_reads_share_one_budget(tmp_path, restore_config, workers):
    """``zarrcy.convert`` makes one context for its regions (``workers`` threads); each
    region's read of the source and write of the destination runs in it, so regions and
    their kernels together stay within ``workers`` busy threads."""
    src = zarrcy.create_array(str(tmp_path / "src.zarr"), shape=(64, 64, 64), chunks=(8, 8, 8), dtype="int32",
                              fill_value=0)
    src[...] = REF
    with observe(rendezvous=True) as seen:
        zarrcy.convert(str(tmp_path / "src.zarr"), str(tmp_path / "dst.zarr"), shards="32,32,32", chunks="4,4,4",
                       workers=workers, verify=True, progress="off")
    np.testing.assert_array_equal(zarrcy.open_array(str(tmp_path / "dst.zarr"))[...], REF)
    # 8 regions, each read, written and verified: all within the one context
    assert len(seen) == 1, seen
    (ctx,) = seen
    assert ctx.threads == workers
    assert 2 <= ctx.budget.peak <= workers  # several regions at once, never more
    assert ctx.budget.busy == 1


def test_point_reads_share_one_single_thread_context(restore_config, sharded):
    """``a[i, j, k]`` decodes one inner chunk in the calling thread: the shared
    ``for_point`` context (threads 1) takes no slot, whatever ``threads`` is."""
    a = sharded
    zarrcy.config(threads=3)
    ctx = ExecContext.for_point()
    assert ctx.threads == 1 and ExecContext.for_point() is ctx
    for i in range(0, 64, 7):
        assert a[i, 63 - i, i // 2] == REF[i, 63 - i, i // 2]
    assert (ctx.budget.busy, ctx.budget.peak) == (1, 1)
