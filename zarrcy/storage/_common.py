"""Helpers shared by the stores: key/prefix validation, buffers, and ``StorePath``.

Key rules (v3-core.rst "Abstract store interface": a key is a Unicode string whose
last character is not ``/``) plus the safety rules every zarrcy store applies so that
a key can never name something outside the store, on any store or platform: no empty
key, no leading or trailing ``/``, no empty component (``a//b``), no ``.`` or ``..``
component, no NUL, no ``\\`` (a separator on Windows and to zip tools) and no drive
letter (``c:x``).  Node names have further rules (``zarrcy.metadata.names``).
"""

from __future__ import annotations

import collections.abc
import operator
from typing import Hashable, Iterator, Sequence, SupportsIndex

from zarrcy.chunk_cache import forget as _forget
from zarrcy.byte_access import ByteSetter, ValueSnapshot
from zarrcy.byte_range import ByteRequest, RangeRequest, SuffixRequest, resolve
from zarrcy.errors import StoreError, expected
from zarrcy.storage._base import Buffer, Store

__all__ = ["check_key", "check_prefix", "as_bytes_view", "check_byte_request", "resolve_range", "join_key", "StorePath",
           "get_metadata"]

_BAD_KEY = "a key without empty, '.' or '..' components, leading/trailing '/', '\\', a drive letter or NUL"


def check_key(key: str, what: str = "key") -> str:
    """Return ``key`` if it is a valid store key, else raise ``StoreError``.

    Fast path first: chunk keys like ``c/0/1`` contain no ``.`` and need no split.
    """
    if type(key) is not str:
        raise StoreError(expected(what, "a str", key))
    if (
        not key
        or key[0] == "/"
        or key[-1] == "/"
        or "//" in key
        or "\x00" in key
        or "\\" in key
        or (key[1:2] == ":" and key[0].isalpha())
    ):
        raise StoreError(expected(what, _BAD_KEY, key))
    if "." in key:  # "." / ".." components, found by substring search (no per-component loop)
        k = "/" + key + "/"
        if "/./" in k or "/../" in k:
            raise StoreError(expected(what, _BAD_KEY, key))
    return key


def check_prefix(prefix: str) -> str:
    """Validate a listing/erasing prefix: ``""`` or a key-like string, optionally ending in ``/``.

    A prefix without a trailing ``/`` (``"a/b"``) matches keys by plain string prefix
    (``"a/b"``, ``"a/bc"``, ``"a/b/c"``); the spec leaves that case open, and zarrcy
    chooses the simple string meaning.
    """
    if type(prefix) is not str:
        raise StoreError(expected("prefix", "a str", prefix))
    if prefix == "":
        return prefix
    check_key(prefix[:-1] if prefix[-1] == "/" else prefix, "prefix")
    return prefix


def as_bytes_view(value: collections.abc.Buffer) -> memoryview:
    """A flat, byte-format memoryview of any C-contiguous buffer (bytes, numpy arrays...)."""
    try:
        mv = memoryview(value)
    except TypeError:
        raise StoreError(expected("value", "a bytes-like object", type(value).__name__)) from None
    if mv.format != "B" or mv.ndim != 1:
        if not mv.c_contiguous:
            raise StoreError(expected("value", "a C-contiguous buffer", "a non-contiguous buffer"))
        mv = mv.cast("B")
    return mv


def _is_nonneg_int(x: object) -> bool:
    if type(x) is int:  # the common case, without the Protocol check (~1 us)
        return x >= 0
    if not isinstance(x, SupportsIndex):
        return False
    try:
        return operator.index(x) >= 0
    except TypeError:
        return False


def check_byte_request(byte_range: ByteRequest) -> None:
    """Reject malformed requests before any I/O (``resolve`` would only see them later)."""
    if byte_range is None:
        return
    if isinstance(byte_range, RangeRequest):
        off, length = byte_range
        if not _is_nonneg_int(off) or (length is not None and not _is_nonneg_int(length)):
            raise StoreError(expected("byte_range", "non-negative integer offset/length", byte_range))
    elif isinstance(byte_range, SuffixRequest):
        if not _is_nonneg_int(byte_range.length):
            raise StoreError(expected("byte_range", "a non-negative suffix length", byte_range))
    else:
        raise StoreError(expected("byte_range", "None, RangeRequest or SuffixRequest", byte_range))


def resolve_range(byte_range: ByteRequest, size: int) -> tuple[int, int]:
    """``(start, stop)`` of a (checked) request in a value of ``size`` bytes; clipped at the end."""
    check_byte_request(byte_range)
    return resolve(byte_range, size)


def join_key(*parts: str) -> str:
    """Join path parts with ``/``, dropping empty parts and stray slashes."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


class StorePath(ByteSetter):
    """A ``(store, path)`` pair: one key (or one prefix) of a store.

    ``sp / "c/0/0"`` joins with ``/``.  It is THE implementation of the codecs'
    ``ByteGetter`` / ``ByteSetter`` protocol (``zarrcy.byte_access``) for the key
    ``path``: a codec reads and writes one chunk or shard without knowing the store.
    """

    __slots__ = ("store", "path")

    def __init__(self, store: Store, path: str = "") -> None:
        self.store = store
        self.path = join_key(path) if ("/" in path[:1] or path[-1:] == "/" or "//" in path) else path

    def __truediv__(self, other: str) -> "StorePath":
        return StorePath(self.store, join_key(self.path, other))

    def __repr__(self) -> str:
        return f"StorePath({self.store.url!r}, {self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, StorePath) and other.store is self.store and other.path == self.path

    def __hash__(self) -> int:
        return hash((id(self.store), self.path))

    # -- ByteGetter / ByteSetter ------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.path

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        return self.store.get(self.path, byte_range)

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        key = self.path
        return self.store.get_partial_values([(key, r) for r in byte_ranges])

    def snapshot(self) -> ValueSnapshot:
        return self.store.snapshot(self.path)

    def pinned_snapshot(self) -> ValueSnapshot:
        return self.store.pinned_snapshot(self.path)

    @property
    def cache_id(self) -> tuple[str, str]:
        return (self.store.url, self.path)

    def version(self) -> object | None:
        return self.store.version(self.path)

    def cache_token(self) -> Hashable | None:
        return self.store.cache_token(self.path)

    @property
    def conditional_reads(self) -> bool:
        return bool(self.store.supports_conditional_reads)

    @property
    def in_write_session(self) -> bool:
        return self.store.in_write_session(self.path)

    def get_versioned(self, byte_range: ByteRequest = None) -> tuple[bytes | None, object | None]:
        return self.store.get_versioned(self.path, byte_range)

    def get_ranges_if_version(self, byte_ranges: Sequence[ByteRequest], version: object) -> list[bytes | None] | None:
        return self.store.get_ranges_if_version(self.path, byte_ranges, version)

    def set(self, value: Buffer) -> None:
        self.store.set(self.path, value)
        _forget(self.cache_id)  # decoded-chunk cache: the old version's entries (memory)

    def set_spliced(self, parts: Sequence[Buffer | tuple[int, int]], source: ValueSnapshot | None = None) -> None:
        self.store.set_spliced(self.path, parts, source)
        _forget(self.cache_id)

    @property
    def supports_deletes(self) -> bool:
        return bool(self.store.supports_deletes)

    @property
    def supports_partial_writes(self) -> bool:
        return bool(self.store.supports_partial_writes)

    def set_partial(self, start: int, value: Buffer) -> None:
        """Write ``value`` at byte ``start`` of this key (stores with ``supports_partial_writes``)."""
        self.store.set_partial_values([(self.path, start, value)])
        _forget(self.cache_id)

    def truncate(self, length: int, identity: object | None = None) -> None:
        self.store.truncate(self.path, length, identity)

    def delete(self) -> None:
        self.store.erase(self.path)
        _forget(self.cache_id)

    def exists(self) -> bool:
        return self.store.exists(self.path)

    # -- prefix helpers ------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """``path + "/"`` (or ``""`` at the root): the prefix of everything below this path."""
        return self.path + "/" if self.path else ""

    def list_dir(self) -> list[str]:
        return self.store.list_dir(self.prefix)

    def list_prefix(self) -> Iterator[str]:
        return self.store.list_prefix(self.prefix)

    def erase_prefix(self) -> None:
        self.store.erase_prefix(self.prefix)


def get_metadata(store: Store, key: str) -> bytes | None:
    """A metadata document (``zarr.json``, ``.zarray``, ``.zmetadata``, ...) read with a
    size cap, ``zarrcy.config(max_metadata_bytes=...)``: at most cap + 1 bytes are
    requested (a sparse, huge or zip-bomb document is never read whole) and a larger
    document raises MetadataError naming the key.  None if the key does not exist."""
    from zarrcy.config import get
    from zarrcy.errors import MetadataError

    limit = int(get("max_metadata_bytes"))
    raw = store.get(key, RangeRequest(0, limit + 1))
    if raw is not None and len(raw) > limit:
        raise MetadataError(
            expected(key, f"a metadata document of at most max_metadata_bytes={limit} bytes (zarrcy.config)", "more"), key
        )
    return raw
