"""The execution context: one per API call, and the one place that decides concurrency
(CONVENTIONS.md 15; docs/ARCHITECTURE.md "Execution context").

An API call -- ``a[sel]``, ``a[sel] = v``, every ``get_*`` / ``set_*`` selection method,
``zarrcy.convert`` (:meth:`ExecContext.for_regions`), each call zarr-python makes into
the codec-pipeline plugin -- creates one :class:`ExecContext`
(:meth:`ExecContext.for_call`, from ``zarrcy.config`` and the store's I/O
concurrency) and passes it down explicitly: nodes -> codec pipeline -> codecs (the
sharding reader and writer) -> kernels.  Nothing below the API reads a thread count or
a coalescing option from global configuration, nests a pool or overrides the budget:
it asks its context.

What a context holds: the thread budget (``threads`` and a :class:`Budget` counting the
threads working for the call, in C so the native helpers use it too), the pool its
Python helpers run on, the I/O concurrency and the coalescing options of inner-chunk
reads.  (The shard-index cache and the decoded-chunk cache are process-wide and decide
no concurrency: ``codecs/sharding/reader.py``, ``zarrcy/chunk_cache.py``.)

The policy (all of it is here):

* **Top level** (:meth:`ExecContext.map`: one item per stored chunk or shard, per
  convert region, per plugin chunk).  One thread: inline.  Otherwise the calling thread
  and up to ``threads - 1`` helpers on the pool claim items one at a time; each helper
  takes a budget slot before working (it quits at once when none is free).  A partial
  read of at most :data:`FEW_ITEMS` shards, none whole, runs in the calling thread in
  turn: each shard is one kernel call whose inner chunks the native helpers share,
  cheaper than a Python task per shard.
* **Latency-bound stores** (I/O concurrency above ``threads``, object stores): up to
  ``io_concurrency`` items are in flight on the I/O task pool, holding no slot while
  they wait for the network; their CPU parts run inside :meth:`ExecContext.cpu`, which
  takes a slot (waiting for one) -- so fetches overlap while decoding stays within
  the budget.
* **Nested level** (inner chunks of one shard): the thread running an item keeps its
  slot and runs the nested work in it; native kernels get the budget
  (:meth:`ExecContext.kernel_threads`) and their helpers join only with a free slot --
  also late, when another thread of the call finishes (a many-shard read whose last
  shards get the idle threads); Python-path loops (:meth:`ExecContext.map_inner`)
  submit helpers only for the slots free at that moment.  Work items are about one
  inner chunk; below :data:`PARALLEL_MIN_BYTES` of decoded data nothing is split.
* Never more busy threads than ``threads``: every thread working for the call holds a
  slot of its budget; ``Budget.peak`` records the most held at once.

Fork safety: a context lives for one call; the pools are ``config``'s (reset in a
forked child); the native helpers and their budget counters are ``_workers``' (reset in
the child by its fork handler).
"""

from __future__ import annotations

import threading
from concurrent.futures import Executor, Future, wait
from typing import Any, Callable, Iterable, Iterator, TypeVar

from zarrcy._kernels._workers import Budget
from zarrcy.config import at_fork_reset, named_pool
from zarrcy.config import get as _config_get

__all__ = ["ExecContext", "Budget", "PARALLEL_MIN_BYTES", "FEW_ITEMS", "observe"]

_T = TypeVar("_T")

#: below this many decoded bytes per call, inner chunks are processed inline (two
#: 64 KiB inner chunks already pay for a second thread; a wake-up costs 0.07-0.27 ms)
PARALLEL_MIN_BYTES = 1 << 17

#: a partial read of at most this many shards, none whole, runs in the calling thread
#: in turn, each shard one kernel call shared with the native helpers (measured: 50
#: cross-shard 40^3 reads 58 -> 52 ms at 2 threads); whole shards, or more of them, use
#: the pool, which overlaps one shard's file read with another's decode
FEW_ITEMS = 4

#: the plugin: below this much decoded data in one call, no thread hop at all
INLINE_BYTES = 1 << 18


_END = object()


class _Work:
    """Items claimed one at a time by the calling thread and its helpers."""

    __slots__ = ("fn", "it", "lock", "error", "stop", "started")

    def __init__(self, fn: Callable[[Any], Any], it: Iterator[Any]) -> None:
        self.fn = fn
        self.it = it
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self.stop = False
        self.started: threading.Event | None = threading.Event() if _RENDEZVOUS[0] else None

    def claim(self) -> Any:
        with self.lock:
            if self.stop:
                return _END
            try:
                return next(self.it, _END)
            except BaseException as e:  # the items' generator failed
                self.fail(e)
                return _END

    def fail(self, e: BaseException) -> None:
        self.stop = True
        if self.error is None:
            self.error = e

    def loop(self) -> None:
        fn = self.fn
        while True:
            item = self.claim()
            if item is _END:
                return
            try:
                fn(item)
            except BaseException as e:  # re-raised by the calling thread
                with self.lock:
                    self.fail(e)
                return

    def helper(self, budget: Budget | None) -> None:
        """A pool helper: works only with a slot of ``budget`` (None: the I/O workers of a
        latency-bound call, which take slots in :meth:`ExecContext.cpu`)."""
        if budget is not None and not budget.try_acquire():
            if self.started is not None:
                self.started.set()
            return
        if self.started is not None:
            self.started.set()
        try:
            self.loop()
        finally:
            if budget is not None:
                budget.release()


#: tests only (:func:`observe`): callers wait for their first helper to start
_RENDEZVOUS = [False]
_OBSERVED: list[list["ExecContext"]] = []


class observe:
    """Tests: ``with observe() as seen:`` -- every context created meanwhile is appended
    to ``seen`` (their ``budget.peak`` is the most threads that worked for the call at
    once).  ``rendezvous=True`` also makes every fan-out wait (at most 10 s) until its
    first helper has started (Python pool and native kernels), so "the budget is used"
    is observed deterministically on a loaded machine."""

    def __init__(self, rendezvous: bool = False) -> None:
        self.rendezvous = rendezvous
        self.seen: list[ExecContext] = []

    def __enter__(self) -> list["ExecContext"]:
        from zarrcy._kernels import _workers

        _OBSERVED.append(self.seen)
        if self.rendezvous:
            _RENDEZVOUS[0] = True
            _workers.set_rendezvous(True)
        return self.seen

    def __exit__(self, *exc: Any) -> None:
        from zarrcy._kernels import _workers

        _OBSERVED.remove(self.seen)
        if self.rendezvous:
            _RENDEZVOUS[0] = False
            _workers.set_rendezvous(False)


class _Held(threading.local):
    depth = 0


class ExecContext:
    """How one API call runs (see the module docstring).  Made by the API layer with
    :meth:`for_call`; everything below receives it as an argument."""

    __slots__ = ("threads", "io_concurrency", "coalesce_gap", "coalesce_max", "budget", "_held")

    def __init__(self, threads: int, io_concurrency: int = 0, coalesce_gap: int = 64 << 10,
                 coalesce_max: int = 64 << 20, budget: Budget | None = None) -> None:
        # (ints by contract: ``threads`` is validated by config, for_call converts the rest)
        self.threads = threads if threads > 1 else 1
        self.io_concurrency = io_concurrency
        self.coalesce_gap = coalesce_gap
        self.coalesce_max = coalesce_max
        #: the calling thread holds the first slot
        self.budget = Budget(self.threads) if budget is None else budget
        # latency-bound calls: items hold no slot; ``cpu()`` takes one per thread
        self._held: _Held | None = None
        if io_concurrency > self.threads:
            self._held = _Held()
            self._held.depth = 1  # (the creating thread's slot)
        if _OBSERVED:
            for seen in _OBSERVED:
                seen.append(self)

    @classmethod
    def for_call(cls, io_concurrency: int = 0, *, threads: int | None = None, coalesce_gap: int | None = None,
                 coalesce_max: int | None = None) -> "ExecContext":
        """The context of one API call, from ``zarrcy.config`` (arguments given override
        it) and the store's I/O concurrency.  Made by the API layer only; everything
        below gets it passed (tests/reliability/test_execution_context.py counts one
        per call)."""
        return cls(
            _config_get("threads") if threads is None else threads,
            io_concurrency,
            int(_config_get("coalesce_gap")) if coalesce_gap is None else coalesce_gap,
            int(_config_get("coalesce_max")) if coalesce_max is None else coalesce_max,
        )

    @classmethod
    def for_point(cls) -> "ExecContext":
        """The context of a single-element read (``a[i, j, k]``): one thread, the
        calling one (one inner chunk to decode: nothing to share), so no budget is ever
        taken and one process-wide context serves every such call -- no per-call cost
        on the latency path.  Coalescing does not apply (one range read)."""
        return _POINT[0]

    @classmethod
    def for_regions(cls, workers: int | None) -> "ExecContext":
        """The context of one ``zarrcy.convert`` call: ``workers`` threads (default
        ``config.threads``) converting regions (:meth:`map`), the regions' own array
        reads and writes passed this context, so their kernels share the same budget."""
        return cls.for_call(threads=None if workers is None else max(1, int(workers)))

    def with_coalescing(self, gap: int | None, most: int | None) -> "ExecContext":
        """This context with other coalescing options (zarr-python's per-array settings
        through the plugin); same budget, so the threads of the call stay counted once."""
        if gap is None and most is None:
            return self
        return ExecContext(
            self.threads, io_concurrency=self.io_concurrency,
            coalesce_gap=self.coalesce_gap if gap is None else gap,
            coalesce_max=self.coalesce_max if most is None else most,
            budget=self.budget,
        )

    def __repr__(self) -> str:
        return (f"ExecContext(threads={self.threads}, io_concurrency={self.io_concurrency}, "
                f"busy={self.budget.busy}, peak={self.budget.peak})")

    # -- policy ----------------------------------------------------------------------------
    @property
    def io_bound(self) -> bool:
        """A latency-bound store: more requests in flight than threads."""
        return self.io_concurrency > self.threads

    @property
    def pool(self) -> Executor:
        """The pool this call's Python helpers run on (one per thread count, process-wide,
        reset in a forked child)."""
        return named_pool("cpu", self.threads)

    def cpu(self) -> "ExecContext":
        """``with ctx.cpu():`` around the CPU part of an item of a latency-bound call
        (decode after the fetch, encode before the store): takes a budget slot, waiting
        for one, unless this thread holds one already.  A no-op otherwise."""
        return self

    def __enter__(self) -> None:  # ``with ctx.cpu():`` (no object made per call)
        held = self._held
        if held is not None:
            if held.depth == 0:
                self.budget.acquire()
            held.depth += 1

    def __exit__(self, *exc: Any) -> None:
        held = self._held
        if held is not None:
            held.depth -= 1
            if held.depth == 0:
                self.budget.release()

    def kernel_threads(self, n_tasks: int, task_bytes: int) -> int:
        """Threads a native kernel call over ``n_tasks`` inner chunks of ``task_bytes``
        decoded bytes each may use (the caller plus helpers, which join only with a free
        slot of :attr:`budget`): all of the budget when there are two chunks and enough
        data to pay for a wake-up, else 1."""
        if self.threads < 2 or n_tasks < 2 or n_tasks * task_bytes < PARALLEL_MIN_BYTES:
            return 1
        return self.threads

    def parallel_worth(self, nbytes: int) -> bool:
        """Enough decoded data in a plugin call to pay for leaving the event loop."""
        return nbytes >= INLINE_BYTES

    # -- runners ---------------------------------------------------------------------------
    def map(self, fn: Callable[[_T], Any], items: Iterable[_T],
            inner_parallel: Callable[[_T], bool] | None = None) -> None:
        """``fn(item)`` for every item: the call's top-level tasks.  The first exception
        is raised after the running items finish; items not started then never run.
        ``inner_parallel(item)``: the item is a partial shard whose inner chunks the
        kernel spreads over the budget itself (few of them run in turn, see
        :data:`FEW_ITEMS`)."""
        it = iter(items)
        if self.threads < 2 and not self.io_bound:
            for item in it:
                fn(item)
            return
        first = []
        for item in it:
            first.append(item)
            if len(first) > FEW_ITEMS:
                break
        if len(first) <= 1 or (len(first) <= FEW_ITEMS and inner_parallel is not None
                               and all(inner_parallel(p) for p in first) and not self.io_bound):
            for item in first:
                fn(item)
            return
        rest = _chain(first, it)
        if self.io_bound:
            self._map_io(fn, rest)
        else:
            self._fan_out(fn, rest, self.threads - 1)

    def map_inner(self, n: int, fn: Callable[[int], Any], nbytes: int) -> None:
        """``fn(i)`` for ``i in range(n)``: nested work of an item (inner chunks through
        the Python codec path), run in the calling thread's slot plus helpers for the
        slots free now (none below :data:`PARALLEL_MIN_BYTES` of decoded data)."""
        helpers = 0
        if n > 1 and self.threads > 1 and nbytes >= PARALLEL_MIN_BYTES:
            helpers = min(n - 1, self.budget.limit - self.budget.busy)
        if helpers <= 0:
            for i in range(n):
                fn(i)
            return
        self._fan_out(fn, iter(range(n)), helpers)

    def _fan_out(self, fn: Callable[[Any], Any], it: Iterator[Any], helpers: int) -> None:
        """The calling thread (holding a slot) and ``helpers`` pool tasks (each taking a
        slot first) claim items; the caller never waits for queued work (helpers not
        started when the items run out are cancelled), so nested fan-outs on the same
        pool cannot deadlock.  While it waits for running helpers it gives its slot back
        (their kernels may use it) and takes one again before returning."""
        self._run_workers(fn, it, helpers, self.pool, self.budget)

    def _map_io(self, fn: Callable[[Any], Any], it: Iterator[Any]) -> None:
        """Latency-bound: ``io_concurrency`` workers (the caller among them) without slots;
        their CPU parts take one in :meth:`cpu`."""
        budget = self.budget
        held = self._held
        assert held is not None
        depth, held.depth = held.depth, 0
        if depth:  # the caller becomes an I/O worker too (a nested call's may hold none)
            budget.release()
        try:
            self._run_workers(fn, it, self.io_concurrency - 1, named_pool("io-tasks", self.io_concurrency), None)
        finally:
            held.depth = depth
            if depth:
                budget.acquire()

    def _run_workers(self, fn: Callable[[Any], Any], it: Iterator[Any], helpers: int, pool: Executor,
                     budget: Budget | None) -> None:
        work = _Work(fn, it)
        futures: list[Future[None]] = []
        try:
            for _ in range(helpers):
                try:
                    futures.append(pool.submit(work.helper, budget))
                except RuntimeError:  # pool shut down (interpreter exit): fewer helpers
                    break
            if work.started is not None and futures:
                work.started.wait(10)
            work.loop()
        except BaseException as e:
            with work.lock:
                work.fail(e)
        finally:
            work.stop = work.stop or work.error is not None
            running = [f for f in futures if not f.cancel()]
            if running and not all(f.done() for f in running):
                if budget is not None:
                    budget.release()
                try:
                    wait(running)
                finally:
                    if budget is not None:
                        budget.acquire()
        if work.error is not None:
            raise work.error


#: :meth:`ExecContext.for_point`'s context (remade in a forked child: a fresh budget)
_POINT = [ExecContext(1)]
at_fork_reset(lambda: _POINT.__setitem__(0, ExecContext(1)))


def _chain(first: list[_T], rest: Iterator[_T]) -> Iterator[_T]:
    yield from first
    yield from rest
