"""The sharding codec's parallel loop over inner chunks (Python codec chains), per-thread
scratch chunks, and the count of inner chunks decoded (tests, benchmarks)."""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from zarrcy.codecs._base import ArraySpec
from zarrcy.config import get as _config_get
from zarrcy.config import run_bounded as _run_bounded

__all__ = ["run", "scratch", "PARALLEL_MIN_BYTES", "decode_stats"]

# below this many decoded bytes per call, inner chunks are processed inline
PARALLEL_MIN_BYTES = 1 << 17  # two 64 KiB inner chunks already pay for a second thread


def run(n: int, fn: Callable[[int], None], parallel: bool) -> None:
    """Call ``fn(i)`` for ``i in range(n)``, on the shared pool when ``parallel``.

    Caller-runs scheme: the calling thread claims items itself, and up to ``threads - 1``
    helper tasks on the shared pool claim items from the same counter.  When the items
    are exhausted, helpers that never started are cancelled; the caller only waits for
    helpers that are *running* (each finishes its current item).  So a call made from a
    task already running on the pool (the array layer runs one task per shard) cannot
    deadlock: it never waits for queued work, and it still gets help from idle workers.
    """
    threads = int(_config_get("threads"))
    if not parallel or n < 2 or threads < 2:
        for i in range(n):
            fn(i)
        return
    lock = threading.Lock()
    nxt = [0]
    errors: list[BaseException] = []

    def worker() -> None:
        while not errors:
            with lock:
                i = nxt[0]
                nxt[0] = i + 1
            if i >= n:
                return
            try:
                fn(i)
            except BaseException as e:  # re-raised in the caller
                errors.append(e)
                return

    # the package's one bounded runner: ``min(threads, n)`` claiming loops, the caller
    # running one of them itself (caller_runs: it never waits for queued work)
    for _ in _run_bounded(lambda _i: worker(), range(min(threads, n)), max_in_flight=threads, caller_runs=True):
        pass
    if errors:
        raise errors[0]


_SCRATCH = threading.local()


def scratch(spec: ArraySpec) -> np.ndarray:
    """A per-thread decode buffer for one inner chunk of ``spec``."""
    k = (spec.shape, spec.dtype)  # not .str: ml_dtypes types and records share "|V<n>"
    d: dict[Any, Any] = _SCRATCH.__dict__
    buf = d.get(k)
    if buf is None:
        if len(d) > 8:
            d.clear()
        buf = d[k] = np.empty(spec.shape, dtype=spec.dtype)
    return buf


# here, not in reader.py: the scatter driver counts too (reader imports scatter)
class _DecodeStats:
    """Inner chunks decoded by partial and point reads, when enabled (tests, bench)."""

    def __init__(self) -> None:
        self.enabled = False
        self.decoded = 0
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.enabled:
            with self.lock:
                self.decoded += n

    def reset(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.decoded = 0


decode_stats = _DecodeStats()
