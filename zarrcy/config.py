"""Runtime configuration: thread count and tunables.

``zarrcy.config(threads=N)`` sets values; ``zarrcy.config()`` returns the current dict.
The environment variable ``ZARRCY_THREADS`` sets the initial thread count.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

__all__ = ["config", "get", "executor", "named_pool"]

_lock = threading.Lock()
_values: dict[str, Any] = {
    "threads": int(os.environ.get("ZARRCY_THREADS", "0") or 0) or (os.cpu_count() or 1),
    "write_empty_chunks": False,
    # largest decoded chunk we agree to allocate (hostile-store guard), bytes
    "max_chunk_bytes": int(os.environ.get("ZARRCY_MAX_CHUNK_BYTES", str(8 << 30))),
    # largest metadata document (zarr.json, .zarray, .zmetadata, ...) we agree to read, bytes
    "max_metadata_bytes": int(os.environ.get("ZARRCY_MAX_METADATA_BYTES", str(64 << 20))),
    # sharding: merge byte ranges whose gap is below this; cap merged ranges at this size
    "coalesce_gap": 64 << 10,
    "coalesce_max": 64 << 20,
    # bytes of validated shard indexes kept for repeated partial reads (0: off);
    # entries are revalidated against the store's version token on every use
    "shard_index_cache": 64 << 20,
    # sharding: partial shard writes "rewrite" the object atomically (default) or
    # "append" new inner chunks + a new index in place (stores with partial writes only;
    # see zarrcy/codecs/sharding.py for the crash behaviour); an appended shard is
    # rewritten tightly once dead bytes would exceed this fraction of it
    "shard_write_strategy": "rewrite",
    "shard_append_dead_ratio": 0.5,
}
_executor: ThreadPoolExecutor | None = None
_executor_threads = 0


def config(**kwargs: Any) -> dict[str, Any]:
    """Update configuration values; return a copy of the current configuration."""
    global _executor
    with _lock:
        for k, v in kwargs.items():
            if k not in _values:
                raise KeyError(f"config: unknown option {k!r}; known: {sorted(_values)}")
            if k == "threads":
                v = int(v)
                if v < 1:
                    raise ValueError(f"config.threads: expected >= 1, received {v}")
            _values[k] = v
        return dict(_values)


def get(name: str) -> Any:
    return _values[name]


def executor() -> ThreadPoolExecutor:
    """The shared thread pool, sized to ``config()['threads']``."""
    global _executor, _executor_threads
    n = _values["threads"]
    if _executor is None or _executor_threads != n:
        with _lock:
            if _executor is None or _executor_threads != n:
                old = _executor
                _executor = ThreadPoolExecutor(max_workers=n, thread_name_prefix="zarrcy")
                _executor_threads = n
                if old is not None:
                    old.shutdown(wait=False)
    return _executor


_POOLS: dict[tuple[str, int], ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def named_pool(name: str, n: int) -> ThreadPoolExecutor:
    """A process-wide pool of ``n`` threads for one purpose (``name``), made once and
    shared by all callers: no thread start per call, and ``n`` bounds the tasks in flight
    across them.  A forked child makes its own (the parent's threads do not exist there).
    Tasks on it must never wait on the same pool (callers blocking on it cannot deadlock)."""
    k = (name, n)
    pool = _POOLS.get(k)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.get(k)
            if pool is None:
                pool = _POOLS[k] = ThreadPoolExecutor(n, thread_name_prefix=f"zarrcy-{name}")
    return pool


def _forget_pools_after_fork() -> None:
    global _POOLS_LOCK
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)
