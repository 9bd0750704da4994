"""Reading a few entries of a large shard index without holding the index (issue 23.8).

A point read (one element) or a whole-inner-chunk read needs one index entry: 16 bytes
(offset, nbytes; little-endian uint64).  Holding the whole index for it costs 16 bytes
per inner chunk -- 256 MiB for 2^24 inner chunks, and a sparse 2 GiB index raised
MemoryError.  Here, for an index of more than ``RANGED_INDEX_MIN`` bytes in the
recommended chain (``bytes`` little-endian, optionally ``crc32c``), read through a
*pinned*, ``random_access`` snapshot of known size (``ByteGetter.pinned_snapshot``;
:func:`usable` decides):

* LocalStore, MemoryStore, stored -- not compressed -- ZipStore members: the snapshot
  pins the version (a file descriptor, an immutable value; ``zarrcy.byte_access``);
* object stores with a strong ETag: one HEAD gives the size and the ETag, and every
  range GET of the read (index entries, index pieces, inner chunks) carries
  ``If-Match`` on it (``zarrcy.storage._etag_snapshot``).  A 412 or a response of
  another ETag raises ``VersionChanged`` -- the reader's ``Stale``: the read starts
  again from a new HEAD (at most ``STALE_RETRIES`` times), never mixing versions.

Then:

* without ``crc32c``: each run of consecutive wanted entries is one range read; the
  runs within ``INDEX_PIECE`` bytes of the first go in one ``get_ranges`` call (an
  object store coalesces them and runs the GETs concurrently), so a read of entries
  all over the index makes at most as many calls as the index has pieces;
* with ``crc32c`` (the checksum covers the whole index): the index is streamed in
  ``INDEX_PIECE``-byte range reads (``ValueSnapshot.iter_ranges``: on an object store
  up to ``PIECES_IN_FLIGHT`` If-Match GETs in flight at once, bounded by the store's
  I/O concurrency, answered in order), the crc32c computed incrementally in index order
  (the running value of ``crc32c.crc32c(data, value)``), the wanted entries kept; the
  stored checksum is compared before any entry is used.  Memory stays at most
  ``PIECES_IN_FLIGHT`` pieces, never the index.

The entries used are validated with the same kernel and rules as a whole index (half-empty
marker, overflow, past the end, into the index: CorruptChunkError naming the entry and its
inner chunk).  Kept on the whole-index path (``reader.load_index``): other index chains;
compressed zip members; object stores *without a strong ETag* (none, or a weak ``W/``
one): nothing ties two of their range GETs to one version, and streamed pieces of two
versions could pass unnoticed (or fail the checksum as if corrupt), so the index is read
in one GET and its bytes re-checked by the data read (``zarrcy.storage.remote``); and an
object store's index already in the cache (keyed by its ETag, checked by the data GET:
a point read then costs one request).
"""

from __future__ import annotations

from typing import Any, Sequence

import crc32c as _crc32c
import numpy as np

from zarrcy.byte_access import OWNED_PIECE, OWNED_WINDOW, ValueSnapshot
from zarrcy.byte_range import RangeRequest, pieces as byte_pieces
from zarrcy.codecs.sharding.format import SENTINEL, ShardLayout, flat_bytes
from zarrcy.errors import CorruptChunkError

__all__ = ["RANGED_INDEX_MIN", "INDEX_PIECE", "PIECES_IN_FLIGHT", "MAX_ENTRIES", "SparseIndex", "compact", "ranged", "usable", "load_entries"]

#: indexes above this many bytes are not read whole for a point / one-inner-chunk read
RANGED_INDEX_MIN = 4 << 20
#: bytes per range read when a checksummed index is streamed (a multiple of 16; the
#: same pieces as a writer's index read whole, ``ValueSnapshot.get_owned``)
INDEX_PIECE = OWNED_PIECE
#: pieces of a streamed index in flight at once (at most the snapshot's ``io_concurrency``:
#: an object store's concurrent If-Match GETs); the pieces held stay at most this many
PIECES_IN_FLIGHT = OWNED_WINDOW
#: reads touching more inner chunks than this load the index whole
MAX_ENTRIES = 4096


class SparseIndex:
    """Some validated entries of a shard index: ``ids`` (sorted inner-chunk indices) and
    ``flat`` (their offset/nbytes pairs).  Indexed like the flat uint64 index array
    (``index[2 * i]`` offset, ``index[2 * i + 1]`` nbytes of inner chunk ``i``)."""

    __slots__ = ("ids", "flat", "_pos")

    def __init__(self, ids: np.ndarray, flat: np.ndarray) -> None:
        self.ids = ids
        self.flat = flat
        self._pos = {int(i): k for k, i in enumerate(ids.tolist())}

    def __getitem__(self, j: int) -> int:
        return int(self.flat[2 * self._pos[j // 2] + (j & 1)])


def compact(index: Any, linear: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(flat index, positions)`` to pass to the reader's range planner for inner chunks
    ``linear``: a whole index as it is, a :class:`SparseIndex` as its loaded entries and
    the positions of ``linear`` among them."""
    if isinstance(index, SparseIndex):
        return index.flat, np.searchsorted(index.ids, linear).astype(np.int64)
    return index, linear


def ranged(layout: ShardLayout, count: int = 1) -> bool:
    """Whether a read of ``count`` entries of ``layout``'s index should not load it whole."""
    return layout.fast_index and layout.index_size > RANGED_INDEX_MIN and count <= MAX_ENTRIES


def usable(snap: ValueSnapshot) -> bool:
    """Whether ``snap`` (from ``ByteGetter.pinned_snapshot``) can serve the ranged index
    reads: pinned (one version for every read: a file descriptor, an immutable value, or
    an object store's If-Match on the ETag of one HEAD), ``random_access`` (not a
    compressed zip member, which inflates from its start for every range) with a known
    size, or known to be missing.  The one place this capability is decided."""
    return snap.pinned and snap.random_access and (snap.size is not None or snap.exists is False)


def _checked(raw: bytes | None, start: int, n: int) -> memoryview:
    """The answer of a ``(start, n)`` range read of the shard, checked for its length."""
    if raw is None:
        raise CorruptChunkError("shard disappeared while its index was read")
    view = flat_bytes(raw)
    if len(view) != n:
        raise CorruptChunkError(f"shard index: expected {n} bytes at offset {start}, received {len(view)} "
                                "(shard truncated?)")
    return view


def _read_many(snap: ValueSnapshot, spans: list[tuple[int, int]]) -> list[memoryview]:
    """``(start, length)`` ranges of the shard in one ``get_ranges`` call (an object store
    coalesces and runs them concurrently), each checked for its length."""
    return [_checked(raw, start, n)
            for (start, n), raw in zip(spans, snap.get_ranges([RangeRequest(a, b) for a, b in spans]))]


def _batches(ids: np.ndarray) -> list[list[tuple[int, int]]]:
    """Runs ``(a, b)`` of consecutive entries (``ids[a:b]``), grouped so that each group
    spans at most ``INDEX_PIECE`` bytes of the index (one bounded ``get_ranges`` call;
    each group starts more than a piece after the previous one: at most as many groups
    as the index has pieces)."""
    cuts = (np.flatnonzero(np.diff(ids) != 1) + 1).tolist()
    groups: list[list[tuple[int, int]]] = []
    first = 0
    for a, b in zip([0] + cuts, cuts + [ids.size]):
        if not groups or 16 * (int(ids[b - 1]) + 1 - first) > INDEX_PIECE:
            groups.append([])
            first = int(ids[a])
        groups[-1].append((a, b))
    return groups


def load_entries(snap: ValueSnapshot, layout: ShardLayout, linear: Sequence[int] | np.ndarray) -> SparseIndex | None:
    """The validated index entries of inner chunks ``linear`` (None: the shard does not
    exist), read through ``snap`` (:func:`usable`) without loading the whole index."""
    if snap.exists is False:
        return None
    size = snap.size
    assert size is not None  # usable() checked it
    isz = layout.index_size
    if size < isz:
        raise CorruptChunkError(f"shard is {size} bytes, shorter than its index ({isz} bytes)")
    base = 0 if layout.start else size - isz
    ids = np.unique(np.asarray(linear, dtype=np.int64))
    flat = np.empty(2 * ids.size, np.uint64)
    payload = 16 * layout.n
    if not layout.has_crc:
        for batch in _batches(ids):  # one range read per run of consecutive entries
            views = _read_many(snap, [(base + 16 * int(ids[a]), 16 * (b - a)) for a, b in batch])
            for (a, b), view in zip(batch, views):
                flat[2 * a:2 * b] = np.frombuffer(view, "<u8")
    else:  # streamed: the checksum covers the whole index
        spans = byte_pieces(base, base + payload, INDEX_PIECE)
        spans.append((base + payload, 4))  # the stored crc32c: the last answer
        window = min(PIECES_IN_FLIGHT, snap.io_concurrency)
        pieces = snap.iter_ranges([RangeRequest(a, n) for a, n in spans], window)
        crc = 0
        k = 0
        try:  # the answers come in order: the running crc32c and the entries as each arrives
            for start, n in spans[:-1]:
                view = _checked(next(pieces, None), start, n)  # (no other reference: freed below)
                crc = _crc32c.crc32c(view, crc)
                off = start - base
                stop = int(np.searchsorted(ids, (off + n) // 16))
                if stop > k:
                    at = (ids[k:stop] - off // 16).astype(np.intp)
                    pairs = np.frombuffer(view, "<u8").reshape(-1, 2)
                    flat[2 * k:2 * stop] = pairs[at].reshape(-1)
                    k = stop
                del view
            stored = int.from_bytes(_checked(next(pieces, None), base + payload, 4), "little")
        finally:
            pieces.close()  # (an error: the reads still in flight are waited for)
        if stored != crc:
            raise CorruptChunkError(f"shard index: crc32c checksum mismatch (stored {stored:#010x}, computed {crc:#010x})")
    layout.validate(flat, size, ids.tolist())
    present = flat[0::2] != np.uint64(SENTINEL)
    layout.check_fetch(ids[present], flat[1::2][present])  # names the entry (the planner would not)
    return SparseIndex(ids, flat)
