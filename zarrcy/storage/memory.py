"""``MemoryStore``: a thread-safe dict of bytes.

Its URL is ``memory://<name>``; each store registers itself in a process-wide weak
registry under that name, so ``store_from_url`` (and unpickling, within the same
process) finds the very same store again while it is alive.  A MemoryStore does not
cross process boundaries: unpickling it in another process raises ``StoreError``.

``memory://NAME`` opened with a mode that may create (zarr-python's spelling, e.g.
``create_array("memory://demo", ...)``) makes a store of that name when none is live;
such a named store lives until the end of the process (like fsspec's memory file
system, which zarr-python uses for these URLs) or until ``MemoryStore.forget(NAME)``.
"""

from __future__ import annotations

import builtins
import itertools
import threading
import weakref
from typing import Callable, Hashable, Iterable, Iterator, Mapping, Sequence

from zarrcy.byte_access import BytesSnapshot, IdentityToken, ValueSnapshot
from zarrcy.byte_range import ByteRequest
from zarrcy.errors import StoreError, expected
from zarrcy.storage._base import Buffer, Store, check_splice_part
from zarrcy.storage._common import as_bytes_view, check_key, check_prefix, resolve_range

__all__ = ["MemoryStore", "lookup_memory_store"]

_registry: "weakref.WeakValueDictionary[str, MemoryStore]" = weakref.WeakValueDictionary()
_registry_lock = threading.Lock()
_names = itertools.count(1)
_named: dict[str, "MemoryStore"] = {}  # stores made from ``memory://NAME`` URLs: kept alive


class MemoryStore(Store):
    """``MemoryStore(mapping=None, read_only=False)``: keys to immutable ``bytes``.

    ``mapping`` seeds the store (values are copied to bytes; keys are validated).  All
    operations take one lock, so concurrent readers and writers are safe and every
    ``set`` is atomic.  ``with_read_only()`` gives a read-only view of the same data.
    """

    supports_writes = True
    supports_deletes = True
    supports_partial_reads = True
    supports_partial_writes = True
    supports_listing = True
    #: a read-only view's reference to the store it views (keeps the registered store
    #: alive while a view of it is); None on the store itself
    _origin: MemoryStore | None = None

    def __init__(self, mapping: Mapping[str, Buffer] | None = None, *, read_only: bool = False) -> None:
        super().__init__(read_only=read_only)
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()
        if mapping is not None:
            for k, v in mapping.items():
                self._data[check_key(k)] = bytes(as_bytes_view(v))
        self._register()

    def _register(self, name: str | None = None) -> None:
        with _registry_lock:
            if name is not None and name in _registry:
                raise StoreError(f"memory://{name}: a MemoryStore of that name already exists")
            self.name = f"{next(_names)}-{id(self):x}" if name is None else name
            _registry[self.name] = self

    @classmethod
    def named(cls, name: str) -> "MemoryStore":
        """The live store ``memory://name``, made (empty, kept alive until the end of the
        process or :meth:`forget`) if there is none."""
        with _registry_lock:
            store = _registry.get(name)
        if store is not None:
            return store
        store = cls.__new__(cls)
        Store.__init__(store, read_only=False)
        store._data = {}
        store._lock = threading.Lock()
        try:
            store._register(name)
        except StoreError:  # made meanwhile by another thread
            return cls.named(name)
        _named[name] = store
        return store

    @staticmethod
    def forget(name: str) -> None:
        """Release the named store ``memory://name`` made by :meth:`named`."""
        _named.pop(name, None)

    # -- identity ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"memory://{self.name}"

    def __repr__(self) -> str:
        return f"MemoryStore({self.url!r}, {len(self._data)} keys{', read_only' if self.read_only else ''})"

    def __reduce__(self) -> tuple[Callable[[str, bool], MemoryStore], tuple[str, bool]]:
        return (lookup_memory_store, (self.url, self.read_only))

    def with_read_only(self, read_only: bool = True) -> "MemoryStore":
        """A view sharing this store's data, lock and URL, with another ``read_only`` flag."""
        if read_only == self.read_only:
            return self
        view = MemoryStore.__new__(MemoryStore)
        Store.__init__(view, read_only=read_only)
        view._data = self._data
        view._lock = self._lock
        view.name = self.name
        view._origin = self._origin if self._origin is not None else self  # keeps the registered store alive
        return view

    def __len__(self) -> int:
        return len(self._data)

    # -- reads ---------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        check_key(key)
        value = self._data.get(key)  # dict reads are atomic; values are immutable bytes
        if value is None or byte_range is None:
            return value
        start, stop = resolve_range(byte_range, len(value))
        return value[start:stop]

    def version(self, key: str) -> object | None:
        """The stored bytes object itself: values are immutable and replaced on every
        write, so identity (``is``) tells whether it changed."""
        return self._data.get(key)

    def cache_token(self, key: str) -> Hashable | None:
        value = self._data.get(key)
        return IdentityToken(value) if type(value) is bytes else None

    def snapshot(self, key: str) -> ValueSnapshot:
        """The current value object (immutable: replaced, never changed, on writes)."""
        return BytesSnapshot(self._data.get(check_key(key)))

    def exists(self, key: str) -> bool:
        return check_key(key) in self._data

    def getsize(self, key: str) -> int | None:
        value = self._data.get(check_key(key))
        return None if value is None else len(value)

    # -- writes --------------------------------------------------------------------------
    def set(self, key: str, value: Buffer) -> None:
        self._check_writable()
        check_key(key)
        data = bytes(as_bytes_view(value))
        with self._lock:
            self._data[key] = data

    def set_spliced(self, key: str, parts: Sequence[Buffer | tuple[int, int]], source: ValueSnapshot | None = None) -> None:
        """``Store.set_spliced`` with one copy: ranges are views of the source value (a
        ``snapshot(key)``'s pinned bytes, or the current value), joined straight into
        the new value."""
        self._check_writable()
        check_key(key)
        if source is not None and not isinstance(source, BytesSnapshot):
            super().set_spliced(key, parts, source)
            return
        old = source.value if source is not None else self._data.get(key)
        view = memoryview(old) if old is not None else None
        pieces: list[Buffer] = []
        for p in parts:
            if isinstance(p, tuple):
                a, b = check_splice_part(key, p)
                if view is None or b > len(view):
                    raise StoreError(expected(f"{key}: bytes [{a}, {b}) of the value being replaced", "present",
                                              "missing" if view is None else f"a value of {len(view)} bytes"))
                pieces.append(view[a:b])
            else:
                pieces.append(as_bytes_view(p))
        data = b"".join(pieces)
        with self._lock:
            self._data[key] = data

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        """Write each value at its offset (zero-filling any gap); each key is replaced atomically."""
        self._check_writable()
        by_key: dict[str, list[tuple[int, memoryview]]] = {}
        for key, start, value in key_start_values:
            check_key(key)
            if type(start) is not int or start < 0:
                raise StoreError(expected(f"{key}: start", "a non-negative int", start))
            by_key.setdefault(key, []).append((start, as_bytes_view(value)))
        with self._lock:
            for key, items in by_key.items():
                buf = bytearray(self._data.get(key, b""))
                for start, mv in items:
                    end = start + len(mv)
                    if end > len(buf):
                        buf.extend(bytes(end - len(buf)))
                    buf[start:end] = mv
                self._data[key] = bytes(buf)

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        """Cut the value back to ``length`` bytes (zero-extended if shorter): the undo of
        a failed in-place append, which partial writes promise (without it, the undo did
        nothing here).  ``identity`` is not checked: a value has no identity that
        survives an in-place write, and the array layer serialises writers of one key."""
        self._check_writable()
        check_key(key)
        if type(length) is not int or length < 0:
            raise StoreError(expected(f"{key}: length", "a non-negative int", length))
        with self._lock:
            value = self._data.get(key)
            if value is None:
                raise StoreError(expected(f"{key}: the value to truncate", "present", "missing"))
            self._data[key] = value[:length] + bytes(max(0, length - len(value)))

    def erase(self, key: str) -> None:
        self._check_writable()
        check_key(key)
        with self._lock:
            self._data.pop(key, None)

    def erase_values(self, keys: Iterable[str]) -> None:
        self._check_writable()
        keys = [check_key(k) for k in keys]
        with self._lock:
            for k in keys:
                self._data.pop(k, None)

    def erase_prefix(self, prefix: str) -> None:
        self._check_writable()
        check_prefix(prefix)
        with self._lock:
            if prefix == "":
                self._data.clear()
                return
            for k in [k for k in self._data if k.startswith(prefix)]:
                del self._data[k]

    # -- listing -------------------------------------------------------------------------
    def _keys(self) -> list[str]:
        with self._lock:
            return list(self._data)

    def list(self) -> Iterator[str]:
        return iter(self._keys())

    def list_prefix(self, prefix: str) -> Iterator[str]:
        check_prefix(prefix)
        return iter([k for k in self._keys() if k.startswith(prefix)])

    def list_dir(self, prefix: str) -> builtins.list[str]:
        check_prefix(prefix)
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        n = len(prefix)
        names = {k[n:].partition("/")[0] for k in self._keys() if k.startswith(prefix)}
        return sorted(names)


def lookup_memory_store(url: str, read_only: bool | None = None, *, create: bool = False) -> MemoryStore:
    """The live MemoryStore registered under ``memory://<name>`` in this process
    (as a view with the given ``read_only`` flag if it differs); with ``create``, a
    new named store when there is none (see the module docstring)."""
    name = url[len("memory://") :] if url.startswith("memory://") else url
    with _registry_lock:
        store = _registry.get(name)
    if store is None and create and name:
        store = MemoryStore.named(name)
    if store is None:
        raise StoreError(
            f"{url}: no MemoryStore of that name in this process (memory stores cannot be "
            "shared across processes, and this one may have been garbage-collected)"
        )
    if read_only is not None:
        store = store.with_read_only(read_only)
    return store
