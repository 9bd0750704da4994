"""``ObjectStore.pinned_snapshot``: many range reads of ONE version of an object.

An object store cannot pin a version the way a file descriptor pins an inode.  What it
can do is refuse bytes of another version: the snapshot takes the object's size and
strong ETag from one HEAD, and every read is a GET with ``If-Match`` on that ETag
(``ObjectStore.get_ranges_if_version``: a 412, or a response carrying another ETag, is a
changed object).  A changed or deleted object makes the read raise
:class:`~zarrcy.byte_access.VersionChanged` -- never bytes to combine with those read
before.  The sharding reader streams a large shard index through it in bounded pieces
(``zarrcy.codecs.sharding.index_io``; the pieces fetched concurrently, each
If-Match, ``iter_ranges``) and retries a changed shard from a new snapshot.

Without a strong ETag (none, or a weak ``W/...`` one) nothing proves two responses came
from one version: the snapshot is then *not* pinned (``pinned`` False, size unknown,
reads go to the store unchecked, like ``Store.snapshot``), so callers keep their
version-safe path (for shard indexes: the whole index read with ``get_versioned``,
its bytes re-checked by the data read; ``zarrcy.storage.remote``).  A missing object
is a pinned snapshot of nothing (``exists`` False, reads return None).  Storage layer.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, wait
from itertools import islice
from typing import Any, Generator, Sequence

from zarrcy.byte_access import ValueSnapshot, VersionChanged
from zarrcy.byte_range import ByteRequest
from zarrcy.config import named_pool

__all__ = ["ETagSnapshot", "strong_etag"]


def strong_etag(meta: Any) -> str | None:
    """The ETag of a response/HEAD if it can be used with If-Match (strong), else None."""
    tag = meta.get("e_tag") if meta else None
    if not isinstance(tag, str) or not tag or tag.startswith("W/"):
        return None
    return tag


class ETagSnapshot(ValueSnapshot):
    """Reads of ``key`` on ``store`` (an ObjectStore) as of ``etag``, the strong ETag of
    an object of ``size`` bytes (from one HEAD); ``size`` None: the object was missing;
    ``etag`` None: no strong ETag, nothing pinned."""

    random_access = True  # a range GET transfers what it returns

    def __init__(self, store: Any, key: str, etag: str | None, size: int | None) -> None:
        self.store = store
        self.key = key
        self.etag = etag
        if size is None:
            self.pinned = True
            self.exists = False
        elif etag is not None:
            self.pinned = True
            self.exists = True
            self.size = size
            self.cache_token = etag  # a strong ETag names one content (the token of an index GET too)
            self.io_concurrency = store.io_concurrency  # iter_ranges: If-Match GETs in flight at once
        # else: not pinned, size and existence unknown (a later read may see another version)

    @classmethod
    def of_head(cls, store: Any, key: str, meta: dict | None) -> "ETagSnapshot":
        """The snapshot of the version a HEAD described (``meta``; None: missing)."""
        return cls(store, key, strong_etag(meta), None if meta is None else int(meta["size"]))

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        return self.get_ranges([byte_range])[0]

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        if self.exists is False:
            return [None] * len(byte_ranges)
        if self.etag is None:
            return self.store.get_partial_values([(self.key, r) for r in byte_ranges])
        got = self.store.get_ranges_if_version(self.key, byte_ranges, self.etag)
        if got is None:
            raise VersionChanged(f"{self.store.url}/{self.key}: the object changed while it was read "
                                 f"(no longer ETag {self.etag})")
        return list(got)

    def iter_ranges(self, byte_ranges: Sequence[ByteRequest], window: int = 1) -> Generator[bytes | None, None, None]:
        """Each range ONE ``If-Match`` GET (never merged: a piece stays a piece), answered
        in order, with up to ``window`` GETs (at most the store's ``io_concurrency``) in
        flight on the store's shared I/O pool: the consumer holds at most ``window``
        answers, the one it uses included (the next GET is submitted when it asks for the
        next answer).  A changed object raises VersionChanged once the GETs in flight have
        returned: no request of this read outlives it (a retry's follow its own HEAD)."""
        window = max(1, min(window, self.io_concurrency))
        if self.exists is False or self.etag is None or window == 1:
            yield from super().iter_ranges(byte_ranges, window)
            return
        pool = named_pool("io", self.io_concurrency)  # ObjectStore's request pool (its tasks never wait on it)
        todo = iter(byte_ranges)
        flight: deque[Future[bytes | None]] = deque(pool.submit(self.get, r) for r in islice(todo, window))
        try:
            while flight:
                data = flight.popleft().result()
                yield data
                del data
                flight.extend(pool.submit(self.get, r) for r in islice(todo, 1))
        finally:
            for fut in flight:
                fut.cancel()
            wait(flight)
