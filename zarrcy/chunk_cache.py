"""The decoded-chunk cache: ``zarrcy.config(cache_bytes=N)`` (0, the default: off).

An LRU of decoded chunks (inner chunks of shards, and unsharded chunks), shared by every
array of the process and bounded by bytes (an entry larger than the budget is not
cached).  Repeated small reads of the same region then skip the store read and the
decode; cached chunks reach the output through the same native scatter as decoded ones.

**Never stale.**  A key holds the stored object's *version token*, which no other
content of that object can ever have while the entry lives (``ValueSnapshot.cache_token``
in :mod:`zarrcy.byte_access`; None: the object is not cached):

* MemoryStore: the immutable value object itself (identity; the key holds a reference,
  so the identity cannot be reused while the entry lives);
* LocalStore: ``(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`` of the open
  descriptor the read goes through, trusted only when the file's ctime is older than the
  read's start by more than ``storage.local.RACY_NS`` (git's "racy entry" rule: a file
  changed in the same clock tick as it was read, or within the margin, is not cached;
  ctime cannot be set by users and moves forward on every change, so a later version
  gets a new token);
* object stores: the strong ETag of the version the data were read from (a read asks
  the server for the current ETag first; no strong ETag: not cached);
* other stores (zip, HDF5, consolidated overlays, ...): not cached.

Writes through zarrcy forget the entries of the objects they write (memory; the token
already makes them unreachable).  Cached arrays are read-only and never handed out:
reads copy (scatter) from them.  Reset in a forked child (:func:`zarrcy.config.at_fork_reset`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Hashable, Sequence

from zarrcy.config import at_fork_reset
from zarrcy.config import get as _config_get

__all__ = ["FILL", "enabled", "get_many", "get_keys", "put_many", "forget", "clear", "stats"]

#: the entry of a chunk that is not stored (reads give the fill value)
FILL: Any = object()
#: bytes charged per entry besides its data (key, dict slot, array header)
ENTRY_OVERHEAD = 256


_lock = threading.Lock()
_lru: "OrderedDict[Hashable, tuple[Any, int]]" = OrderedDict()  # key -> (entry, cost)
_by_cid: dict[Hashable, set[Hashable]] = {}
_state = {"bytes": 0, "hits": 0, "misses": 0, "evictions": 0}


def enabled() -> bool:
    """True when ``cache_bytes`` > 0 (turning the cache off drops what it holds)."""
    if int(_config_get("cache_bytes")) > 0:
        return True
    if _lru:
        clear()
    return False


def get_many(prefix: tuple[Hashable, ...], ids: Sequence[int], count_misses: bool = True) -> list[Any]:
    """The cached entries of ``prefix + (i,)`` for each ``i`` in ``ids`` (None: not
    cached); a hit becomes the most recently used entry.  ``count_misses=False``: a
    probe that counts nothing unless everything hits (the caller looks again)."""
    return get_keys([prefix + (i,) for i in ids], count_misses)


def get_keys(keys: Sequence[tuple[Hashable, ...]], count_misses: bool = True) -> list[Any]:
    """:func:`get_many` of whole keys (``prefix + (i,)``; several prefixes in one call)."""
    out: list[Any] = []
    hits = 0
    with _lock:
        for k in keys:
            got = _lru.get(k)
            if got is None:
                out.append(None)
            else:
                _lru.move_to_end(k)
                out.append(got[0])
                hits += 1
        if count_misses or hits == len(out):
            _state["hits"] += hits
            _state["misses"] += len(out) - hits
    return out


def put_many(prefix: tuple[Hashable, ...], ids: Sequence[int], entries: Sequence[Any]) -> None:
    """Cache ``entries[j]`` (a read-only array, or :data:`FILL`) under ``prefix +
    (ids[j],)``; the least recently used entries go when over budget.  ``prefix[0]`` is
    the stored object's ``cache_id`` (:func:`forget` drops its entries)."""
    budget = int(_config_get("cache_bytes"))
    if budget <= 0:
        return
    cid = prefix[0]
    with _lock:
        for i, e in zip(ids, entries):
            cost = ENTRY_OVERHEAD + (0 if e is FILL else int(e.nbytes))
            if cost > budget:
                continue
            k = prefix + (i,)
            old = _lru.pop(k, None)
            if old is not None:
                _state["bytes"] -= old[1]
            _lru[k] = (e, cost)
            _by_cid.setdefault(cid, set()).add(k)
            _state["bytes"] += cost
        while _state["bytes"] > budget and _lru:
            old_key, (_, cost) = _lru.popitem(last=False)
            _state["bytes"] -= cost
            _state["evictions"] += 1
            _unlink(old_key)


def _unlink(k: Any) -> None:
    keys = _by_cid.get(k[0])
    if keys is not None:
        keys.discard(k)
        if not keys:
            del _by_cid[k[0]]


def forget(cid: Hashable | None) -> None:
    """Drop every entry of the stored object ``cid`` (a write replaced it)."""
    if cid is None or cid not in _by_cid:
        return
    with _lock:
        for k in _by_cid.pop(cid, ()):
            got = _lru.pop(k, None)
            if got is not None:
                _state["bytes"] -= got[1]


def clear() -> None:
    """Drop every entry (the counters stay)."""
    with _lock:
        _lru.clear()
        _by_cid.clear()
        _state["bytes"] = 0


def stats(reset: bool = False) -> dict[str, int]:
    """``{"hits", "misses", "evictions", "entries", "bytes"}`` since the last reset
    (``reset=True`` zeroes the counters after reading them)."""
    with _lock:
        got = dict(_state, entries=len(_lru))
        if reset:
            _state.update(hits=0, misses=0, evictions=0)
    return got


@at_fork_reset
def _reset_after_fork() -> None:
    """A parent thread may have held the lock mid-update: new lock, empty cache."""
    global _lock
    _lock = threading.Lock()
    _lru.clear()
    _by_cid.clear()
    _state.update(bytes=0, hits=0, misses=0, evictions=0)
