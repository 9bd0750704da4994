"""The abstract store interface (v3-core.rst "Abstract store interface").

Keys are ``str`` without a leading or trailing ``/``; values are bytes.  ``get``
returns ``None`` for a missing key (never raises for absence).  Capability flags say
which optional operations a store supports; calling an unsupported one raises
``StoreError`` (or ``ReadOnlyError`` for writes on a read-only store).
"""

from __future__ import annotations

import builtins
import collections.abc
import contextlib
from abc import ABC, abstractmethod
from typing import ContextManager, Hashable, Iterable, Iterator, Self, Sequence

from zarrcy.byte_access import ValueSnapshot
from zarrcy.byte_range import ByteRequest, RangeRequest
from zarrcy.errors import ReadOnlyError, StoreError, expected

__all__ = ["Store"]

#: what ``set`` takes: any C-contiguous buffer (bytes, bytearray, memoryview, numpy arrays)
Buffer = collections.abc.Buffer


class Store(ABC):
    supports_writes: bool = True
    supports_deletes: bool = True
    supports_partial_reads: bool = True
    supports_partial_writes: bool = False
    supports_listing: bool = True
    #: ``get_ranges_if_version`` is enforced by the server (HTTP ``If-Match`` on the
    #: version ``get_versioned`` reported), so a reader may cache what it derived from
    #: one read and check it with the *next* data request instead of a separate one
    supports_conditional_reads: bool = False
    #: writes inside ``write_lock(key)`` are conditional on the version read (object stores)
    supports_conditional_writes: bool = False
    #: chunk/shard reads worth keeping in flight at once on a latency-bound store (an
    #: object store: each read waits ~ms for the network, not for a CPU); 0 = a local,
    #: CPU-bound store: the array layer runs ``config(threads)`` tasks
    io_concurrency: int = 0

    def __init__(self, *, read_only: bool = False) -> None:
        self.read_only = read_only

    # -- identity ------------------------------------------------------------------------
    @property
    @abstractmethod
    def url(self) -> str:
        """A URL that ``zarrcy.storage.store_from_url`` turns back into an equal store."""

    def lock_key(self, key: str) -> object:
        """A hashable name of the stored object behind ``key`` for in-process write locks:
        equal for every path that reaches the same object (stores that can alias, such as
        a symlinked directory, override it).  Default: ``(url, key)``."""
        return (self.url, key)

    def write_lock(self, key: str) -> ContextManager[object]:
        """Held by a writer across the read-modify-write of ``key``'s object (a partial
        chunk or shard write): excludes the writers of that object in *other processes*
        (threads of one process are already excluded by the array layer's in-process
        locks).  Default: nothing -- a store only this process writes (memory), or one
        whose writers cannot share objects safely at all (zip: one writer).  LocalStore
        takes an advisory file lock (``zarrcy.storage._filelock``)."""
        return contextlib.nullcontext()

    def in_write_session(self, key: str) -> bool:
        """Whether a ``write_lock(key)`` session that validates by what it reads
        (object stores' conditional writes) is open in this process: readers for that
        session must then read the object itself, never a cached copy of part of it."""
        return False

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError(f"{self.url}: store is read-only")

    # -- reads ---------------------------------------------------------------------------
    @abstractmethod
    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        """Value of ``key`` (or the requested range of it); None if ``key`` does not exist."""

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        """Several (key, range) reads; results in request order."""
        return [self.get(k, r) for k, r in key_ranges]

    def version(self, key: str) -> object | None:
        """A cheap token that changes whenever ``key``'s value changes (None: unknown or
        missing).  Lets readers cache what they derived from a value (e.g. a shard
        index) and revalidate it without reading the value again."""
        return None

    def cache_token(self, key: str) -> Hashable | None:
        """The decoded-chunk cache's token of ``key``'s current version without pinning
        it (``ValueSnapshot.cache_token``'s rules; None: unknown, read through a
        snapshot).  Used only to find entries that are all cached; a miss takes a
        snapshot, whose own token keys what it reads."""
        return None

    def get_versioned(self, key: str, byte_range: ByteRequest = None) -> tuple[bytes | None, object | None]:
        """``(value or range, version token)``: the token names the version the bytes
        came from (None: unknown).  Default: ``version(key)`` taken *before* the read,
        so a concurrent change can only make the token look older than the bytes
        (a cache keyed by it then misses; it never serves stale bytes)."""
        token = self.version(key)
        return self.get(key, byte_range), token

    def get_ranges_if_version(
        self, key: str, byte_ranges: Sequence[ByteRequest], version: object
    ) -> list[bytes | None] | None:
        """Ranges of ``key`` read from version ``version`` only; ``None`` when ``key``
        is no longer at that version (changed or deleted) -- the caller then re-reads
        whatever it derived from the old version.  Default (stores without
        ``supports_conditional_reads``): compare ``version(key)``, then read."""
        if self.version(key) != version:
            return None
        return self.get_partial_values([(key, r) for r in byte_ranges])

    def snapshot(self, key: str) -> ValueSnapshot:
        """Reads of one version of ``key`` (``zarrcy.byte_access.ValueSnapshot``).
        Default: not pinned (each read sees the current value); LocalStore and
        MemoryStore pin the version they opened."""
        return _LiveKey(self, key)

    def pinned_snapshot(self, key: str) -> ValueSnapshot:
        """``ByteGetter.pinned_snapshot``: reads of one version of ``key`` even where that
        costs a request (object stores: a HEAD for the ETag, then If-Match reads raising
        ``VersionChanged``).  Default: :meth:`snapshot`."""
        return self.snapshot(key)

    def exists(self, key: str) -> bool:
        return self.get(key, None) is not None

    def getsize(self, key: str) -> int | None:
        """Size in bytes of the value at ``key`` (None if missing); stores override this
        with a metadata call (the default reads the value)."""
        value = self.get(key, None)
        return None if value is None else len(value)

    # -- writes --------------------------------------------------------------------------
    @abstractmethod
    def set(self, key: str, value: Buffer) -> None:
        """Store ``value`` under ``key`` atomically (readers see old or new, never a mix)."""

    def set_spliced(self, key: str, parts: Sequence[Buffer | tuple[int, int]], source: ValueSnapshot | None = None) -> None:
        """Store under ``key``, atomically like ``set``, the concatenation of ``parts``:
        a buffer is written as is, a ``(start, stop)`` pair copies those bytes of the
        value being replaced -- read through ``source`` (a ``snapshot(key)`` of this
        store: when the snapshot is ``pinned``, every range comes from the version it
        pinned, as the caller's other reads did) or, with ``source=None``, from the
        current value.  A range outside
        that value (missing, or shorter than ``stop``) raises StoreError and stores
        nothing.  Default: read the ranges, join, ``set``; LocalStore copies them inside
        the kernel (``copy_file_range``), with no copy through user space."""
        self._check_writable()
        ranges = [p for p in parts if isinstance(p, tuple)]
        got: list[bytes | None] = []
        if ranges:
            reqs = [RangeRequest(a, b - a) for a, b in (check_splice_part(key, p) for p in ranges)]
            got = source.get_ranges(reqs) if source is not None else self.get_partial_values([(key, r) for r in reqs])
        it = iter(got)
        pieces: list[Buffer] = []
        for p in parts:
            if isinstance(p, tuple):
                raw = next(it)
                if raw is None or len(raw) != p[1] - p[0]:
                    raise StoreError(expected(
                        f"{key}: bytes [{p[0]}, {p[1]}) of the value being replaced",
                        "present", "missing" if raw is None else f"{len(raw)} bytes (truncated?)"))
                pieces.append(raw)
            else:
                pieces.append(p)
        self.set(key, b"".join(pieces))

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        """Write ``value`` at byte offset ``start`` of ``key`` for each triple."""
        raise StoreError(f"{self.url}: store does not support partial writes")

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        """Cut ``key``'s value back to ``length`` bytes (stores with partial writes: the
        undo of a failed in-place append); with ``identity`` (from ``snapshot``), only
        while ``key`` is still that object."""
        raise StoreError(f"{self.url}: store does not support truncate")

    @abstractmethod
    def erase(self, key: str) -> None:
        """Delete ``key``; no error if absent."""

    def erase_values(self, keys: Iterable[str]) -> None:
        for k in keys:
            self.erase(k)

    @abstractmethod
    def erase_prefix(self, prefix: str) -> None:
        """Delete every key starting with ``prefix`` (``""``: everything)."""

    # -- listing -------------------------------------------------------------------------
    @abstractmethod
    def list(self) -> Iterator[str]:
        """Every key in the store."""

    def list_prefix(self, prefix: str) -> Iterator[str]:
        """Every key starting with ``prefix`` (full keys)."""
        return (k for k in self.list() if k.startswith(prefix))

    def node_types(self, prefix: str) -> dict[str, str] | None:
        """``{child name: "array" | "group"}``, sorted by name, of the group whose keys
        start with ``prefix`` when the store knows them without reading a document per child
        (consolidated metadata: ``zarrcy.consolidated.ConsolidatedStore``), else None
        (the default: callers open the children).  Lets ``Group.keys()`` list a
        million consolidated members without building a million nodes."""
        return None

    @abstractmethod
    def list_dir(self, prefix: str) -> builtins.list[str]:
        """Names directly under ``prefix`` (a ``""`` or ``"a/b/"`` style prefix): keys and
        child "directories" alike, without the prefix and without a trailing ``/``; sorted."""

    def remove_temp_files(self) -> int:
        """Delete what interrupted atomic writes left behind (call when no writer is
        active); returns the count.  Stores that write through temporary files
        (LocalStore) override it; the others have nothing to remove."""
        return 0

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_splice_part(key: str, part: tuple[int, int]) -> tuple[int, int]:
    """A ``set_spliced`` range part: ``(start, stop)`` ints with ``0 <= start <= stop``."""
    if len(part) != 2 or type(part[0]) is not int or type(part[1]) is not int or not 0 <= part[0] <= part[1]:
        raise StoreError(expected(f"{key}: splice range", "(start, stop) ints with 0 <= start <= stop", part))
    return part


class _LiveKey(ValueSnapshot):
    """``Store.snapshot`` default: every read goes to the store (nothing pinned)."""

    __slots__ = ("store", "key")

    def __init__(self, store: Store, key: str) -> None:
        self.store = store
        self.key = key
        self.in_place_ok = bool(store.supports_partial_writes)

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        return self.store.get(self.key, byte_range)

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        return self.store.get_partial_values([(self.key, r) for r in byte_ranges])
