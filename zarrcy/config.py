"""Runtime configuration: thread count and tunables; the process-wide thread pools.

``zarrcy.config(threads=N)`` sets values; ``zarrcy.config()`` returns the current dict;
``zarrcy.config.set({...})`` / ``zarrcy.config.get(key)`` as in zarr-python.
The environment variable ``ZARRCY_THREADS`` sets the initial thread count.

Fork safety (CONVENTIONS.md 13).  A forked child has only the thread that called
``fork``: pools whose worker threads stayed behind would accept tasks nobody runs, and a
lock some other thread held at the fork stays held forever.  :func:`at_fork_reset`
registers a callback run in every forked child (``os.register_at_fork(after_in_child=)``,
one hook for the whole package, callbacks in registration order); each module that keeps
a pool, a lock or a cache touched by threads at module level (or in long-lived
instances) registers one that forgets the pools, recreates the locks and clears the
caches those locks guarded (their invariants may have been mid-update).  The pools here
(:func:`executor`, :func:`named_pool`) use it themselves: a child makes fresh pools on
first use.  ``spawn``/``forkserver`` children start from a fresh interpreter and need
none of this.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

__all__ = ["config", "Config", "get", "override", "executor", "named_pool", "at_fork_reset"]

_F = TypeVar("_F", bound=Callable[[], None])
_AT_FORK: list[Callable[[], None]] = []


def at_fork_reset(callback: _F) -> _F:
    """Run ``callback()`` in every child this process forks from now on, before any
    zarrcy code runs there (usable as a decorator; returns ``callback``).

    The callback runs with only the forking thread alive: it must not wait for other
    threads or acquire locks they may have held.  Typical body: ``global _LOCK;
    _LOCK = threading.Lock(); _CACHE.clear()`` (assign new objects, never ``release()``
    an inherited lock).  An exception does not stop the other callbacks; the first one
    is re-raised at the end (Python reports it as unraisable)."""
    _AT_FORK.append(callback)
    return callback


def _after_fork_in_child() -> None:
    first: BaseException | None = None
    for cb in list(_AT_FORK):
        try:
            cb()
        except BaseException as e:  # keep resetting the others
            first = first or e
    if first is not None:
        raise first


if hasattr(os, "register_at_fork"):  # POSIX; elsewhere there is no fork
    os.register_at_fork(after_in_child=_after_fork_in_child)

_lock = threading.Lock()
_values: dict[str, Any] = {
    "threads": int(os.environ.get("ZARRCY_THREADS", "0") or 0) or (os.cpu_count() or 1),
    "write_empty_chunks": False,
    # largest decoded chunk we agree to allocate (hostile-store guard), bytes
    "max_chunk_bytes": int(os.environ.get("ZARRCY_MAX_CHUNK_BYTES", str(8 << 30))),
    # variable-length (string/bytes) chunks: mean decoded bytes per element we agree to
    # inflate to, checked while decoding (zarrcy/codecs/_limits.py)
    "max_vlen_element_bytes": int(os.environ.get("ZARRCY_MAX_VLEN_ELEMENT_BYTES", str(64 << 10))),
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
    # physical order of the inner chunks inside a written shard (the index is always in
    # C order): "morton" (zarr-python 3.4's default: shard bytes equal zarr-python's) or
    # "lexicographic" (C order)
    "subchunk_write_order": "morton",
    # bytes of decoded chunks kept for repeated reads (0: off; zarrcy/chunk_cache.py)
    "cache_bytes": 0,
    # writers in other processes: a partial chunk/shard write holds the object's advisory
    # lock (LocalStore: zarrcy/storage/_filelock.py) across its read-modify-write; False
    # for single-writer jobs; a writer waiting longer than the timeout (s) gets
    # LockTimeoutError
    "write_locks": True,
    "write_lock_timeout": 60.0,
}
_executor: ThreadPoolExecutor | None = None
_executor_threads = 0


def _set(kwargs: dict[str, Any]) -> dict[str, Any]:
    with _lock:
        for k, v in kwargs.items():
            if k not in _values:
                raise KeyError(f"config: unknown option {k!r}; known: {sorted(_values)}")
            if k == "threads":
                v = int(v)
                if v < 1:
                    raise ValueError(f"config.threads: expected >= 1, received {v}")
            elif k in ("cache_bytes", "max_vlen_element_bytes"):
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise ValueError(f"config.{k}: expected an integer >= 0 (bytes), received {v!r}")
            elif k == "write_locks" and not isinstance(v, bool):
                raise TypeError(f"config.write_locks: expected True or False, received {v!r}")
            elif k == "write_lock_timeout" and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
                raise ValueError(f"config.write_lock_timeout: expected a positive number of seconds, received {v!r}")
        _values.update({k: (int(v) if k == "threads" else v) for k, v in kwargs.items()})
        return dict(_values)


#: zarr-python's dotted option names that mean one of zarrcy's options
_ZARR_NAMES = {
    "array.write_empty_chunks": "write_empty_chunks",
    "threading.max_workers": "threads",
    "array.sharding_coalesce_max_gap_bytes": "coalesce_gap",
    "array.sharding_coalesce_max_bytes": "coalesce_max",
}
_foreign: dict[str, Any] = {}  # other dotted (zarr-python) options: kept for get(), no effect


class _Restore:
    """What ``config.set`` returns: the change is already made; used as a context
    manager, it is undone on exit (as zarr-python's ``zarr.config.set``)."""

    def __init__(self, old: dict[str, Any], old_foreign: dict[str, Any]) -> None:
        self._old, self._old_foreign = old, old_foreign

    def __enter__(self) -> "_Restore":
        return self

    def __exit__(self, *exc: Any) -> None:
        _set(self._old)
        _foreign.clear()
        _foreign.update(self._old_foreign)


class Config:
    """``zarrcy.config``: call it as before (``zarrcy.config(threads=4)`` sets options and
    returns the current dict), or use zarr-python's spelling ``zarrcy.config.set({...})``
    / ``zarrcy.config.get(key)``.  ``set`` also works as a context manager.  Dotted
    zarr-python names map to zarrcy's options where one exists (``array.write_empty_chunks``,
    ``threading.max_workers``, ``array.sharding_coalesce_max_*``); other dotted names are
    remembered (``get`` returns them) but have no effect."""

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        return _set(kwargs)

    def set(self, options: dict[str, Any] | None = None, **kwargs: Any) -> _Restore:
        merged = {**(options or {}), **kwargs}
        mine, foreign = {}, {}
        for k, v in merged.items():
            k2 = _ZARR_NAMES.get(k, k)
            if k2 in _values:
                mine[k2] = v
            elif "." in k:
                foreign[k] = v
            else:
                raise KeyError(f"config: unknown option {k!r}; known: {sorted(_values)}")
        restore = _Restore({k: _values[k] for k in mine}, dict(_foreign))
        _set(mine)
        _foreign.update(foreign)
        return restore

    def get(self, key: str, default: Any = None) -> Any:
        k2 = _ZARR_NAMES.get(key, key)
        if k2 in _values:
            return _values[k2]
        return _foreign.get(key, default)

    def __repr__(self) -> str:
        return f"zarrcy.config({dict(_values)!r})"


config = Config()


def get(name: str) -> Any:
    if _n_overrides:  # some thread has an override (cheap test in the common case)
        over = getattr(_thread, "over", None)
        if over and name in over:
            return over[name]
    return _values[name]


_thread = threading.local()
_n_overrides = 0


class override:
    """``with override(coalesce_gap=...):`` values seen by :func:`get` in this thread
    only (e.g. zarr-python's per-array sharding coalescing settings through the codec
    pipeline plugin), restored on exit; other threads see the global values."""

    def __init__(self, **values: Any) -> None:
        for k in values:
            if k not in _values:
                raise KeyError(f"config: unknown option {k!r}; known: {sorted(_values)}")
        self._values = values

    def __enter__(self) -> "override":
        global _n_overrides
        self._old = getattr(_thread, "over", None)
        _thread.over = {**(self._old or {}), **self._values}
        with _lock:
            _n_overrides += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        global _n_overrides
        _thread.over = self._old
        with _lock:
            _n_overrides -= 1


def executor() -> ThreadPoolExecutor:
    """The shared thread pool, sized to ``config()['threads']`` (a forked child makes its own)."""
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
    across them.  A forked child makes its own (the parent's threads do not exist there;
    see :func:`at_fork_reset`).
    Tasks on it must never wait on the same pool (callers blocking on it cannot deadlock)."""
    k = (name, n)
    pool = _POOLS.get(k)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.get(k)
            if pool is None:
                pool = _POOLS[k] = ThreadPoolExecutor(n, thread_name_prefix=f"zarrcy-{name}")
    return pool


@at_fork_reset
def _forget_pools_after_fork() -> None:
    """The parent's pools have no threads here (and their internal locks may be held):
    drop them without ``shutdown`` (which could wait on such a lock); the child makes
    its own on first use."""
    global _lock, _executor, _executor_threads, _POOLS_LOCK
    _lock = threading.Lock()
    _executor = None
    _executor_threads = 0
    _POOLS_LOCK = threading.Lock()
    _POOLS.clear()
