"""``zarrcy.config.run_bounded``: the one bounded-window runner (issue 15 item 3).

Bounded in flight (items consumed lazily), every result yielded, the first error raised
with no task of the call still running afterwards (also when the consumer stops early),
inline for a window of 1, and usable in a forked child (the pools are reset there)."""

from __future__ import annotations

import importlib
import itertools
import multiprocessing as mp
import threading
import time

import pytest

zconfig = importlib.import_module("zarrcy.config")  # (zarrcy.config is the function)

pytestmark = pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")


class Probe:
    """Counts tasks running now, the most at once, and items taken from the iterator."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.taken = 0
        self.finished = 0

    def items(self, n):
        for i in range(n):
            with self.lock:
                self.taken += 1
            yield i

    def fn(self, i: int, fail_at: int | None = None) -> int:
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            time.sleep(0.002)
            if i == fail_at:
                raise ValueError(f"item {i}")
            return i * i
        finally:
            with self.lock:
                self.running -= 1
                self.finished += 1


def test_all_results_and_a_bounded_window():
    p = Probe()
    pool = zconfig.named_pool("test-run-bounded", 4)
    out = []
    for r in zconfig.run_bounded(p.fn, p.items(50), max_in_flight=3, pool=pool):
        assert p.taken - len(out) <= 3  # never more than the window submitted and unconsumed
        out.append(r)
    assert sorted(out) == [i * i for i in range(50)]
    assert p.most <= 3 and p.running == 0


def test_default_pool_is_the_shared_executor():
    p = Probe()
    assert sorted(zconfig.run_bounded(p.fn, range(10), max_in_flight=4)) == [i * i for i in range(10)]


def test_window_of_one_runs_inline_in_order():
    seen = []
    out = list(zconfig.run_bounded(lambda i: seen.append(threading.current_thread()) or i, range(5), max_in_flight=1))
    assert out == list(range(5)) and set(seen) == {threading.current_thread()}


def test_error_raised_and_nothing_left_running():
    p = Probe()
    pool = zconfig.named_pool("test-run-bounded", 4)
    with pytest.raises(ValueError, match="item 7"):
        for _ in zconfig.run_bounded(lambda i: p.fn(i, fail_at=7), p.items(1000), max_in_flight=4, pool=pool):
            pass
    assert p.running == 0  # running tasks finished before the error reached us
    assert p.taken < 20  # the rest was never submitted
    done = p.finished
    time.sleep(0.02)
    assert p.finished == done  # and nothing started afterwards


def test_consumer_stopping_early_cancels_the_rest():
    p = Probe()
    pool = zconfig.named_pool("test-run-bounded", 4)
    gen = zconfig.run_bounded(p.fn, p.items(1000), max_in_flight=4, pool=pool)
    for r in itertools.islice(gen, 3):
        pass
    gen.close()
    assert p.running == 0 and p.taken < 20


def _child(q) -> None:
    pool = zconfig.named_pool("test-run-bounded", 2)
    q.put(sorted(zconfig.run_bounded(lambda i: i + 1, range(20), max_in_flight=4, pool=pool)))


@pytest.mark.skipif("fork" not in mp.get_all_start_methods(), reason="no fork on this platform")
def test_in_a_forked_child():
    pool = zconfig.named_pool("test-run-bounded", 2)
    assert sorted(zconfig.run_bounded(lambda i: i, range(8), max_in_flight=4, pool=pool)) == list(range(8))  # threads live
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(q,))
    proc.start()
    try:
        assert q.get(timeout=60) == list(range(1, 21))
    finally:
        proc.join(10)
        if proc.is_alive():  # pragma: no cover
            proc.kill()
    assert proc.exitcode == 0


def test_caller_runs_nested_on_one_pool_does_not_deadlock():
    """Each outer task runs an inner loop on the same (2-thread) pool: with caller_runs
    the inner callers never wait for queued work, so this finishes."""
    pool = zconfig.named_pool("test-run-bounded-nested", 2)

    def inner(i: int) -> int:
        time.sleep(0.001)
        return i

    def outer(j: int) -> int:
        return sum(zconfig.run_bounded(inner, range(20), max_in_flight=4, pool=pool, caller_runs=True))

    result: list[int] = []
    t = threading.Thread(target=lambda: result.extend(
        zconfig.run_bounded(outer, range(6), max_in_flight=4, pool=pool, caller_runs=True)), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "nested run_bounded deadlocked"
    assert result == [190] * 6


def test_caller_runs_bounded_and_complete():
    p = Probe()
    pool = zconfig.named_pool("test-run-bounded", 4)
    out = []
    for r in zconfig.run_bounded(p.fn, p.items(40), max_in_flight=3, pool=pool, caller_runs=True):
        assert p.taken - len(out) <= 3
        out.append(r)
    assert sorted(out) == [i * i for i in range(40)] and p.most <= 3 and p.running == 0


def test_caller_runs_error_leaves_nothing_running():
    p = Probe()
    pool = zconfig.named_pool("test-run-bounded", 4)
    with pytest.raises(ValueError, match="item 5"):
        list(zconfig.run_bounded(lambda i: p.fn(i, fail_at=5), p.items(1000), max_in_flight=4, pool=pool,
                                 caller_runs=True))
    assert p.running == 0 and p.taken < 20
