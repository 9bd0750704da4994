"""Access to one stored value (a chunk or a shard) as codecs see it: the one
``ByteGetter`` / ``ByteSetter`` protocol (DESIGN.md "Codec pipeline"; CONVENTIONS.md
rule 11: every capability is a declared method with a default, never probed).

Layer 1: stores (layer 2) implement it (``zarrcy.storage.StorePath``, the one
implementation over a ``Store``); codecs (layer 3) use it and never see a store.

A :class:`ValueSnapshot` reads ONE version of a value: the sharding codec reads a
shard's index and the inner chunks it points to through one snapshot, so bytes of one
version are never combined with the index of another.  ``pinned`` says whether the
store can guarantee that (LocalStore: one open file descriptor, which keeps the inode
it opened even when the key is replaced by a rename; MemoryStore: the immutable value
object).  Stores that cannot pin (object stores) offer conditional reads instead
(``conditional_reads``: ETag + ``If-Match``), and a snapshot whose reads are each
conditional on the version its first request saw (``ByteGetter.pinned_snapshot``: a
changed value makes a read raise :class:`VersionChanged` instead of returning bytes).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Generator, Hashable, Sequence

from zarrcy.byte_range import ByteRequest, RangeRequest, pieces, resolve
from zarrcy.errors import StoreError

__all__ = ["ByteGetter", "ByteSetter", "ValueSnapshot", "LiveSnapshot", "BytesSnapshot", "IdentityToken",
           "VersionChanged"]

Buffer = Any  # bytes | bytearray | memoryview | numpy uint8 array

#: bytes per range read when a large range is read in pieces through a snapshot
#: (:meth:`ValueSnapshot.get_owned`; a shard index streamed, ``codecs/sharding/index_io``),
#: and the pieces in flight at once (an object store's concurrent If-Match GETs)
OWNED_PIECE = 4 << 20
OWNED_WINDOW = 4


class VersionChanged(Exception):
    """A read through a snapshot pinned by a version check (an object store's If-Match,
    :meth:`ByteGetter.pinned_snapshot`) found the value is another version now (or
    gone): nothing of that read may be combined with what the snapshot read before --
    the caller starts again on a new snapshot (the sharding reader's stale-retry path)."""


class IdentityToken:
    """A version token meaning "this very (immutable) object": equal only to a token
    of the same object, which it keeps alive (so its ``id`` cannot be reused)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __hash__(self) -> int:
        return id(self.obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IdentityToken) and other.obj is self.obj


class ValueSnapshot:
    """Reads of one stored value; a context manager (``close`` releases what pins it).

    * ``pinned``: True when every read comes from the version that existed when the
      snapshot was taken, even if the key is replaced meanwhile;
    * ``size``: that version's size in bytes, or None when unknown (then ``exists`` is
      None too until the first read);
    * ``exists``: False when the value did not exist (reads return None);
    * ``in_place_ok``: a partial write to this key changes this value only (False e.g.
      for a file with other hard links, which an in-place write would change too).
    """

    pinned: bool = False
    size: int | None = None
    exists: bool | None = None
    in_place_ok: bool = False
    #: a range read costs what it returns (a file, bytes in memory, a stored zip member),
    #: not a decode from the start (a compressed zip member): many small range reads are
    #: cheap (the shard index read in pieces, ``codecs/sharding/index_io.py``)
    random_access: bool = False
    #: what the store knows the pinned object by (LocalStore: (st_dev, st_ino)), or None
    identity: object | None = None
    #: a hashable token of the version this snapshot reads that no other content of the
    #: key can have while the token lives (the decoded-chunk cache's key,
    #: ``zarrcy.chunk_cache``), or None: data read through it are not cached
    cache_token: Hashable | None = None
    #: range reads :meth:`iter_ranges` may have in flight at once (the store's declared
    #: I/O concurrency; 1: one after another)
    io_concurrency: int = 1

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        raise NotImplementedError

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        return [self.get(r) for r in byte_ranges]

    def iter_ranges(self, byte_ranges: Sequence[ByteRequest], window: int = 1) -> Generator[bytes | None, None, None]:
        """The ranges one at a time, in order, each its own read (never merged).  A
        snapshot with :attr:`io_concurrency` above 1 (an object store) keeps up to
        ``window`` of them in flight ahead of the consumer, so the consumer holds at most
        ``window`` answers (the one it uses included); here: one read at a time."""
        for r in byte_ranges:
            yield self.get(r)

    def get_owned(self, byte_range: ByteRequest) -> bytearray | None:
        """The range read into a new writable buffer that nothing else references (a
        shard rewrite turns the old index into the new one in place, issue 23.8); None
        when the snapshot cannot read without an extra copy (then use :meth:`get`).

        Default: a ``pinned``, ``random_access`` snapshot of known size (a MemoryStore
        value, a stored zip member, an object with a strong ETag) reads the range in
        ``OWNED_PIECE``-byte range reads (:meth:`iter_ranges`, on an object store a few
        If-Match GETs in flight), each copied into the buffer as it arrives: the range
        is held once, plus the pieces in flight.  A short value gives a short buffer,
        as :meth:`get` would."""
        if not (self.pinned and self.random_access and self.exists and self.size is not None):
            return None
        start, stop = resolve(byte_range, self.size)
        out = bytearray(max(0, stop - start))
        spans = pieces(start, stop, OWNED_PIECE)
        got = 0
        for (a, n), piece in zip(spans, self.iter_ranges([RangeRequest(*s) for s in spans], OWNED_WINDOW)):
            k = 0 if piece is None else min(len(piece), n)
            out[a - start:a - start + k] = memoryview(piece or b"")[:k]
            got += k
            if k < n:  # the value is shorter than its size said: a short buffer, as get() gives
                break
        del out[got:]
        return out

    def close(self) -> None:
        pass

    def __enter__(self) -> "ValueSnapshot":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LiveSnapshot(ValueSnapshot):
    """The default: reads go to the getter each time (nothing pinned)."""

    __slots__ = ("getter",)

    def __init__(self, getter: "ByteGetter") -> None:
        self.getter = getter

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        return self.getter.get(byte_range)

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        return self.getter.get_ranges(byte_ranges)


class BytesSnapshot(ValueSnapshot):
    """A pinned snapshot of an immutable value (``bytes``; None: missing)."""

    pinned = True
    random_access = True
    in_place_ok = True

    def __init__(self, value: bytes | None) -> None:
        self.value = value
        self.exists = value is not None
        self.size = None if value is None else len(value)
        # immutable bytes: this object is this version (the token keeps it alive)
        self.cache_token = IdentityToken(value) if type(value) is bytes else None

    def get(self, byte_range: ByteRequest = None) -> Buffer | None:
        v = self.value
        if v is None or byte_range is None:
            return v
        start, stop = resolve(byte_range, len(v))
        return memoryview(v)[start:stop]  # zero-copy: the value is immutable

    def close(self) -> None:
        self.value = None


class ByteGetter(ABC):
    """Read access to one stored value.  Subclasses implement ``get``; everything else
    has a conservative default."""

    __slots__ = ()

    @abstractmethod
    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        """The value (or a range of it); ``None`` if the value does not exist."""

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        """Several ranges of the value at once (stores may coalesce or batch)."""
        return [self.get(r) for r in byte_ranges]

    def snapshot(self) -> ValueSnapshot:
        """Reads of one version of the value (see :class:`ValueSnapshot`)."""
        return LiveSnapshot(self)

    def pinned_snapshot(self) -> ValueSnapshot:
        """Like :meth:`snapshot`, but pinned where the store can pin at a price: many small
        range reads of one version (a large shard index read in pieces).  Stores that pin
        anyway return :meth:`snapshot`; object stores a snapshot whose reads are each
        conditional on the version a HEAD saw (``If-Match``; :class:`VersionChanged` when
        the object changed), ``pinned`` False when the server gives no strong ETag."""
        return self.snapshot()

    @property
    def cache_id(self) -> Hashable | None:
        """A process-wide identity of the stored object for caches of data derived from
        it (None: do not cache)."""
        return None

    @property
    def conditional_reads(self) -> bool:
        """True when ``get_ranges_if_version`` is enforced by the store (If-Match)."""
        return False

    @property
    def in_write_session(self) -> bool:
        """True inside a read-modify-write whose write is conditional on the versions
        read (``Store.in_write_session``): caches of derived data must not stand in for a read."""
        return False

    def cache_token(self) -> Hashable | None:
        """The current version's cache token without pinning it (``Store.cache_token``);
        None: take a snapshot."""
        return None

    def get_versioned(self, byte_range: ByteRequest = None) -> tuple[bytes | None, object | None]:
        """``(bytes, version token or None)`` -- used with ``conditional_reads``."""
        return self.get(byte_range), None

    def get_ranges_if_version(self, byte_ranges: Sequence[ByteRequest], version: object) -> list[bytes | None] | None:
        """Ranges read from version ``version`` only; None when the value changed.
        Only meaningful with ``conditional_reads``."""
        raise NotImplementedError("conditional reads are not supported by this getter")


class ByteSetter(ByteGetter):
    """Read/write access to one stored value."""

    __slots__ = ()

    @abstractmethod
    def set(self, value: Buffer) -> None:
        """Replace the value atomically."""

    @abstractmethod
    def delete(self) -> None:
        """Remove the value (no error if missing)."""

    @property
    def supports_deletes(self) -> bool:
        """False for append-only stores (zip): write an empty value instead of deleting."""
        return True

    @property
    def supports_partial_writes(self) -> bool:
        return False

    def set_spliced(self, parts: Sequence[Buffer | tuple[int, int]], source: ValueSnapshot | None = None) -> None:
        """Replace the value atomically with the concatenation of ``parts``: buffers as
        they are, ``(start, stop)`` pairs copied from the value being replaced, read
        through ``source`` (a snapshot of this value; None: the current value).  See
        ``Store.set_spliced``.  Default: read the ranges, join, ``set``."""
        pieces: list[Any] = []
        for p in parts:
            if isinstance(p, tuple):
                a, b = p
                raw = (source.get if source is not None else self.get)(RangeRequest(a, b - a))
                if raw is None or len(raw) != b - a:
                    raise StoreError(f"bytes [{a}, {b}) of the value being replaced: expected present, received "
                                     f"{'missing' if raw is None else f'{len(raw)} bytes (truncated?)'}")
                pieces.append(raw)
            else:
                pieces.append(p)
        self.set(b"".join(pieces))

    def set_partial(self, start: int, value: Buffer) -> None:
        """Write ``value`` at byte ``start`` in place (not atomic)."""
        raise NotImplementedError("partial writes are not supported by this setter")

    def truncate(self, length: int, identity: object | None = None) -> None:
        """Cut the value back to ``length`` bytes (undo of a failed partial write); with
        ``identity`` (a snapshot's), only if the value is still that object."""
        raise NotImplementedError("truncate is not supported by this setter")
