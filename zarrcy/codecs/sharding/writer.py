"""Writing part of a shard: the ``rewrite`` strategy (default) and the opt-in ``append``
strategy (``zarrcy.config(shard_write_strategy="append")``; runtime configuration only,
never metadata, as the spec requires).

``rewrite`` reads the index and the encoded bytes of the partially covered touched
inner chunks (decoded and merged); only touched inner chunks are encoded.  The new
shard replaces the old one atomically with one ``setter.set_spliced``: untouched inner
chunks are named as byte ranges of the snapshot that was read (LocalStore copies them
in the kernel, never through this process), new chunks and the index as bytes.  Where
the snapshot's size is unknown or reads are ETag-conditional (object stores), the
surviving chunks are read in one coalesced read and the shard assembled in memory for
one ``setter.set`` (:func:`_rewrite_assembled`); both give identical bytes.  Either
way ``setter.delete()`` when
nothing is left (on stores without deletes, e.g. zip: an index-only shard, which reads
as all fill value).  Index memory: the new index is built once, straight into the
output buffer when it is aligned, sizes first and offsets in place
(``format.lay_out_in_place``); the spliced rewrite's checks and byte plan walk the
inner chunks in bounded blocks (``splice_plan``): a write into a shard holds its old
index and the new one, nothing else of their size.

``append`` writes the re-encoded touched inner chunks (and, for an ``end`` index, a new
index) after the old end of the object, in place; see :func:`_append` for what a crash
or a write error leaves.
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import crc32c as _crc32c
import numpy as np

from zarrcy._kernels import _sharding as K
from zarrcy.codecs._base import ByteSetter, Selection, ValueSnapshot, assign, select
from zarrcy.codecs.sharding import scatter, splice_plan
from zarrcy.codecs.sharding.format import (
    SENTINEL, ShardLayout, contiguous, flat_bytes, lay_out, lay_out_in_place, write_order,
)
from zarrcy.codecs.sharding.projection import Projection
from zarrcy.codecs.sharding.reader import drop_index, fetch_ranges, with_index
from zarrcy.config import get as _config_get
from zarrcy.errors import CorruptChunkError, expected
from zarrcy.execution import ExecContext

__all__ = ["encode_partial", "encode_points", "WriteStrategy", "empty_shard"]

WriteStrategy = Literal["rewrite", "append"]
_LITTLE = np.little_endian


def empty_shard(layout: ShardLayout) -> bytearray:
    """A shard without any stored inner chunk (every entry empty): index bytes only."""
    return layout.encode_index(np.full(2 * layout.n, SENTINEL, np.uint64))


def _remove(setter: ByteSetter, layout: ShardLayout) -> None:
    if setter.supports_deletes:
        setter.delete()
    else:  # append-only stores (zip): a shard that reads as all fill value
        setter.set(empty_shard(layout))


class _Update:
    """What a partial write changes: the touched inner chunks (``linear``, C-order
    indices, distinct), which of them it overwrites completely (``full``), and
    ``merge(old_bytes)``: the encoded bytes of every touched chunk after the write."""

    linear: np.ndarray
    full: np.ndarray
    #: the call's execution context (threads encoding the touched inner chunks, coalescing)
    ctx: ExecContext

    def merge(self, old_bytes: Callable[[int], Any]) -> list[memoryview | None]:
        raise NotImplementedError


class _SelectionUpdate(_Update):
    def __init__(self, layout: ShardLayout, proj: Projection, value: np.ndarray, ctx: ExecContext) -> None:
        self.layout, self.proj, self.value, self.ctx = layout, proj, value, ctx
        self.linear = proj.linear
        self.full = proj.full_tasks()

    def merge(self, old_bytes: Callable[[int], Any]) -> list[memoryview | None]:
        return merge_touched(self.layout, self.proj, self.value, old_bytes, self.ctx)


class _PointsUpdate(_Update):
    """vindex writes: ``values[k]`` at in-shard coordinates ``coords[:, k]``."""

    def __init__(self, layout: ShardLayout, coords: np.ndarray, values: np.ndarray, ctx: ExecContext) -> None:
        self.layout = layout
        self.ctx = ctx
        cs = np.asarray(layout.chunk_shape, np.int64)[:, None]
        q = coords // cs
        self.local = coords - q * cs
        lin = np.ravel_multi_index(tuple(q), layout.cps).astype(np.int64) if layout.cps else \
            np.zeros(coords.shape[1], np.int64)
        order = np.argsort(lin, kind="stable")  # stable: a repeated point keeps the last value
        ls = lin[order]
        cuts = np.flatnonzero(ls[1:] != ls[:-1]) + 1
        self.linear = ls[np.r_[0, cuts].astype(np.int64)] if ls.size else ls
        self.groups = np.split(order, cuts) if ls.size else []
        self.values = values
        self.full = np.zeros(self.linear.size, bool)

    def merge(self, old_bytes: Callable[[int], Any]) -> list[memoryview | None]:
        layout = self.layout
        inner = layout.inner
        cs = layout.chunk_shape
        if cs and scatter.usable(layout):  # decode, set, encode in two kernel calls

            def put(k: int, chunk: np.ndarray) -> None:
                idx = self.groups[k]
                chunk[tuple(self.local[:, idx])] = self.values[idx]

            return scatter.merge_chunks(self.ctx, layout, self.linear, self.full, old_bytes, put)
        new_bytes: list[memoryview | None] = [None] * self.linear.size
        keep_empty = bool(_config_get("write_empty_chunks"))
        lin_l = self.linear.tolist()
        ctx = self.ctx

        def task(k: int) -> None:
            old = old_bytes(lin_l[k])
            chunk = np.array(inner.decode(old, ctx=ctx)) if old is not None else \
                np.full(cs, layout.fill, dtype=layout.spec.dtype)
            idx = self.groups[k]
            chunk[tuple(self.local[:, idx])] = self.values[idx]
            if not keep_empty and layout.chunk_is_empty(chunk):
                return
            enc = inner.encode(chunk, ctx=ctx)
            new_bytes[k] = None if enc is None else flat_bytes(enc)

        self.ctx.map_inner(self.linear.size, task, self.linear.size * layout.inner_spec.nbytes)
        return new_bytes


def encode_partial(
    layout: ShardLayout, setter: ByteSetter, selection: Selection, value: Any, write_strategy: WriteStrategy | None,
    ctx: ExecContext,
) -> None:
    """Write ``value`` (shaped like the selection) into ``selection`` of the shard."""
    spec = layout.spec
    proj = Projection(selection, layout)
    value = np.broadcast_to(np.asarray(value, dtype=spec.dtype), proj.out_shape)
    if proj.m == 0 or 0 in proj.out_shape:
        return
    _apply(layout, setter, _SelectionUpdate(layout, proj, value, ctx), write_strategy)


def encode_points(
    layout: ShardLayout, setter: ByteSetter, coords: np.ndarray, values: Any, write_strategy: WriteStrategy | None,
    ctx: ExecContext,
) -> None:
    """Write ``values[k]`` at in-shard coordinates ``coords[:, k]`` (vindex): only the
    inner chunks holding the points are decoded and re-encoded."""
    k = coords.shape[1] if coords.ndim == 2 else 0
    if k == 0:
        return
    values = np.broadcast_to(np.asarray(values, dtype=layout.spec.dtype), (k,))
    _apply(layout, setter, _PointsUpdate(layout, np.asarray(coords, np.int64), values, ctx), write_strategy)


def _apply(layout: ShardLayout, setter: ByteSetter, upd: _Update, write_strategy: WriteStrategy | None) -> None:
    strategy = write_strategy or _config_get("shard_write_strategy")
    if strategy not in ("rewrite", "append"):
        raise ValueError(expected("shard_write_strategy", "'rewrite' or 'append'", strategy))
    try:
        with_index(
            setter, layout,
            lambda snap, flat, version: _write(snap, setter, layout, upd, strategy, flat, version),
            fresh=True,  # a write starts from the current index, never a cached one
            owned=True,  # a large index in its own buffer: the rewrite updates it in place
        )
    finally:
        drop_index(setter, layout)  # the shard was (or may have been) rewritten


def _write(
    snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, upd: _Update,
    strategy: str, flat: Any, version: Any,
) -> None:
    if strategy == "append" and flat is not None and _append(snap, setter, layout, upd, flat, version):
        return
    _rewrite(snap, setter, layout, upd, flat, version)


def merge_touched(
    layout: ShardLayout, proj: Projection, value: np.ndarray, old_bytes: Callable[[int], Any], ctx: ExecContext,
) -> list[memoryview | None]:
    """Encoded bytes of every touched inner chunk after the write (None: now empty).

    ``old_bytes(i)`` gives the stored bytes of inner chunk ``i`` (None if it is not
    stored); it is only called for chunks the selection covers partially."""
    inner = layout.inner
    cs = layout.chunk_shape
    if cs and scatter.usable(layout):  # decode, merge, encode in two kernel calls

        def put(k: int, chunk: np.ndarray) -> None:
            csel, osel, full = proj.task(k)
            piece = select(value, osel)
            if full:
                chunk[...] = np.asarray(piece).reshape(cs)
            else:
                assign(chunk, csel, piece)

        return scatter.merge_chunks(ctx, layout, proj.linear, proj.full_tasks(), old_bytes, put)
    lin_l = proj.linear.tolist()
    new_bytes: list[memoryview | None] = [None] * proj.m
    keep_empty = bool(_config_get("write_empty_chunks"))
    dtype = layout.spec.dtype

    def task(k: int) -> None:
        csel, osel, full = proj.task(k)
        piece = select(value, osel)
        if full:
            chunk = contiguous(np.asarray(piece)).reshape(cs)
        else:
            old = old_bytes(lin_l[k])
            chunk = np.array(inner.decode(old, ctx=ctx)) if old is not None else np.full(cs, layout.fill, dtype=dtype)
            assign(chunk, csel, piece)
        if not keep_empty and layout.chunk_is_empty(chunk):
            return
        enc = inner.encode(chunk, ctx=ctx)
        new_bytes[k] = None if enc is None else flat_bytes(enc)

    ctx.map_inner(proj.m, task, proj.m * layout.inner_spec.nbytes)
    return new_bytes


class _StoredChunks:
    """The stored bytes of the inner chunks ``need`` (sorted linear indices), fetched once
    with ``fetch`` (:func:`_fetch_old` or :func:`fetch_ranges`); calling it with a linear
    index gives that chunk's bytes (None: not among ``need``) -- the ``old_bytes`` that
    :meth:`merge` asks for.  ``bufs``/``g_of``/``rel``: the fetched buffers, each needed
    chunk's buffer and its offset in it (for the kernel that copies kept chunks)."""

    def __init__(self, fetch: Callable[..., tuple[list[memoryview], Any, np.ndarray]], snap: ValueSnapshot,
                 setter: ByteSetter, layout: ShardLayout, need: np.ndarray, old_off: np.ndarray | None,
                 old_nb: np.ndarray | None, version: Any, ctx: ExecContext) -> None:
        self.need = need
        self.old_nb = old_nb
        self.bufs: list[memoryview] = []
        self.g_of: Any = np.empty(0, np.int64)
        self.rel = np.empty(0, np.uint64)
        if need.size and old_off is not None and old_nb is not None:
            self.bufs, self.g_of, gs = fetch(snap, setter, layout, need, old_off[need], old_nb[need], version, ctx)
            self.rel = old_off[need] - gs[self.g_of]

    def __call__(self, i: int) -> Any:
        k = int(np.searchsorted(self.need, i))
        if k >= self.need.size or int(self.need[k]) != i or self.old_nb is None:
            return None
        r = int(self.rel[k])
        return self.bufs[int(self.g_of[k])][r:r + int(self.old_nb[i])]


def _fetch_old(
    snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, need: np.ndarray, offs: np.ndarray,
    nbs: np.ndarray, version: Any, ctx: ExecContext,
) -> tuple[list[memoryview], Any, np.ndarray]:
    """Bytes of the stored inner chunks ``need``: one read of the whole shard when it
    is hardly larger than what is needed (no per-chunk grouping arrays), else coalesced."""
    if need.size > 1 and snap.size is not None:
        total = int(nbs.sum(dtype=np.uint64))
        if snap.size <= 2 * total + (1 << 20):
            layout.check_fetch(need, nbs)
            ends = offs + nbs
            if int(ends.max()) > snap.size:
                bad = int(np.argmax(ends > np.uint64(snap.size)))
                raise CorruptChunkError(
                    f"{layout.chunk_name(int(need[bad]))}: points past the end of the shard "
                    f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard size {snap.size}; truncated?)"
                )
            whole = snap.get(None) if version is None else None
            if whole is not None and len(whole) == snap.size:
                return [flat_bytes(whole)], np.broadcast_to(np.int64(0), need.shape), np.zeros(1, np.uint64)
    return fetch_ranges(snap, setter, layout, need, offs, nbs, version, ctx)


def _rewrite(
    snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, upd: _Update, flat: Any, version: Any,
) -> None:
    if flat is not None and version is None and snap.size is not None:
        _rewrite_spliced(snap, setter, layout, upd, flat)
    else:  # a new shard, an ETag-conditional read (object stores), or an unknown size
        _rewrite_assembled(snap, setter, layout, upd, flat, version)


def _rewrite_assembled(
    snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, upd: _Update, flat: Any, version: Any,
) -> None:
    """The rewrite assembled in memory: every surviving inner chunk is read (one
    coalesced read, conditional on ``version`` when given) and copied into the new
    shard, which is stored with one ``setter.set``."""
    n = layout.n
    existed = flat is not None
    lin = upd.linear
    full_t = upd.full
    touched = np.zeros(n, bool)
    touched[lin] = True
    if existed:
        old_off = flat[0::2]
        old_nb = flat[1::2]
        stored = old_off != SENTINEL
        overwritten = np.zeros(n, bool)
        overwritten[lin[full_t]] = True
        need = np.flatnonzero(stored & ~overwritten)
        del overwritten
    else:
        need = np.empty(0, np.int64)
    old_bytes = _StoredChunks(_fetch_old, snap, setter, layout, need, old_off if existed else None,
                              old_nb if existed else None, version, upd.ctx)
    bufs, g_of, rel = old_bytes.bufs, old_bytes.g_of, old_bytes.rel
    with upd.ctx.cpu():
        new_bytes = upd.merge(old_bytes)
    lin_l = lin.tolist()

    # sizes of the new shard, C order: kept old chunks + re-encoded touched ones
    new_nb = np.full(n, SENTINEL, np.uint64)
    if existed:
        keep = stored & ~touched
        np.copyto(new_nb, old_nb, where=keep)
        del stored
    else:
        keep = None
    del touched
    for k, b in enumerate(new_bytes):
        if b is not None:
            new_nb[lin_l[k]] = len(b)
    if not (new_nb != SENTINEL).any():
        if existed:
            _remove(setter, layout)
        return
    start = layout.start
    isz = layout.index_size
    data_end = int(np.add.reduce(new_nb, where=new_nb != SENTINEL, dtype=np.uint64))
    base = isz if start else 0
    total = data_end + isz
    out = np.empty(total, np.uint8)
    idx_off = 0 if start else data_end
    # build the index straight into the output when it has the stored layout (no copy)
    direct = layout.fast_index and _LITTLE and (out.ctypes.data + idx_off) % 8 == 0
    new_flat = out[idx_off:idx_off + 16 * n].view(np.uint64) if direct else np.empty(2 * n, np.uint64)
    end = lay_out(new_nb, base, new_flat, write_order(layout))
    if end != base + data_end:  # pragma: no cover - kernel contract
        raise CorruptChunkError("shard index: inconsistent sizes while assembling")
    del new_nb
    new_off = new_flat[0::2]
    if keep is not None:
        kept = np.flatnonzero(keep)
        del keep
        if kept.size:
            slot = np.searchsorted(need, kept)
            kept_group = g_of[slot]
            order = np.argsort(kept_group, kind="stable") if len(bufs) > 1 else None
            if order is not None:
                kept, slot, kept_group = kept[order], slot[order], kept_group[order]
                cuts = np.flatnonzero(np.diff(kept_group)) + 1
                parts = list(zip(np.split(kept, cuts), np.split(slot, cuts)))
            else:
                parts = [(kept, slot)]
            for sel, sl in parts:
                g = int(g_of[sl[0]])
                bad = K.copy_ranges(
                    bufs[g], np.ascontiguousarray(rel[sl], np.uint64), np.ascontiguousarray(old_nb[sel], np.uint64),
                    out, np.ascontiguousarray(new_off[sel], np.uint64),
                )
                if bad != -1:  # pragma: no cover - ranges were validated above
                    raise CorruptChunkError(f"{layout.chunk_name(int(sel[bad]))}: bytes out of range")
    for k, b in enumerate(new_bytes):
        if b is not None:
            o = int(new_off[lin_l[k]])
            out[o:o + len(b)] = np.frombuffer(b, np.uint8)
    mv = memoryview(out)
    if direct:
        layout.seal_index(mv[idx_off:idx_off + isz])  # the entries are in place: add the checksum
    else:
        layout.encode_index_into(new_flat, mv[idx_off:idx_off + isz])
    setter.set(mv)


def _rewrite_spliced(snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, upd: _Update, flat: Any) -> None:
    """The rewrite of an existing shard read through a snapshot of known size, as one
    ``setter.set_spliced``: the untouched inner chunks are named as byte ranges of the
    version the snapshot pinned (LocalStore copies them inside the kernel; nothing of
    them passes through this process), the re-encoded touched chunks and the new index
    are passed as bytes.  Only partially covered touched chunks are read.  The bytes
    stored are exactly those of the assembling rewrite (same layout, same index), and
    the replace is as atomic as ``set``."""
    n = layout.n
    lin = upd.linear
    old_off = flat[0::2]
    old_nb = flat[1::2]
    stored = old_off != SENTINEL
    touched = np.zeros(n, bool)
    touched[lin] = True
    keep = stored & ~touched
    del touched
    splice_plan.check_kept(layout, keep, old_off, old_nb, snap.size)
    part = lin[~upd.full]
    need = np.unique(part[stored[part]])
    old_bytes = _StoredChunks(fetch_ranges, snap, setter, layout, need, old_off, old_nb, None, upd.ctx)
    with upd.ctx.cpu():
        new_bytes = upd.merge(old_bytes)
    lin_l = lin.tolist()
    in_place = bool(flat.flags.writeable) and layout.fast_index and _LITTLE
    present = keep.copy()  # stored in the new shard: kept, or re-encoded and not empty
    written = [(lin_l[k], len(b)) for k, b in enumerate(new_bytes) if b is not None]
    for i, _ in written:
        present[i] = True
    if not present.any():
        _remove(setter, layout)
        return
    order = write_order(layout)
    # the byte plan first, from the old entries: one range per run of kept chunks that
    # are also back to back in the old shard
    parts: list[Any] = splice_plan.spliced_parts(present, order, keep, old_off, old_nb, lin_l, new_bytes)
    # then the new index: the new sizes in its size slots, the offsets laid out over
    # them.  A large index read into the writer's own buffer (load_index(owned=True))
    # becomes the new one in place -- the index is held once (issue 23.8) -- else the
    # new one is built in its own buffer.
    idx = None if in_place else np.empty(layout.index_size, np.uint8)  # the new index's bytes
    direct = idx is not None and layout.fast_index and _LITTLE and idx.ctypes.data % 8 == 0
    new_flat = flat if idx is None else idx[:16 * n].view(np.uint64) if direct else np.empty(2 * n, np.uint64)
    new_nb = new_flat[1::2]
    if in_place:
        np.copyto(new_nb, SENTINEL, where=~present)
    else:
        new_nb[...] = SENTINEL
        np.copyto(new_nb, old_nb, where=keep)
    for i, nb in written:
        new_nb[i] = nb
    data_end = int(np.add.reduce(new_nb, where=present, dtype=np.uint64))
    start = layout.start
    base = layout.index_size if start else 0
    if lay_out_in_place(new_flat, base, order) != base + data_end:  # pragma: no cover - kernel contract
        raise CorruptChunkError("shard index: inconsistent sizes while assembling")
    index: list[Any]
    if idx is None:  # the old buffer holds the entries as they are stored; + their crc32c
        index = [memoryview(new_flat.view(np.uint8))]
        if layout.index_size == 16 * n + 4:
            index.append(_crc32c.crc32c(index[0]).to_bytes(4, "little"))
    else:
        index = [memoryview(idx)]
        if direct:
            layout.seal_index(index[0])
        else:
            layout.encode_index_into(new_flat, index[0])
    setter.set_spliced(index + parts if start else parts + index, snap)


def _check_in_shard(layout: ShardLayout, which: np.ndarray, offs: np.ndarray, nbs: np.ndarray, size: int | None) -> None:
    """The entries ``which`` lie inside a shard of ``size`` bytes (CorruptChunkError
    naming the first that does not), with :func:`fetch_ranges`' size guard."""
    layout.check_fetch(which, nbs)
    if size is None:
        return
    ends = offs + nbs
    over = ends > np.uint64(size)
    if over.any():
        bad = int(np.argmax(over))
        raise CorruptChunkError(
            f"{layout.chunk_name(int(which[bad]))}: points past the end of the shard "
            f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard size {size}; truncated?)"
        )


def _append(
    snap: ValueSnapshot, setter: ByteSetter, layout: ShardLayout, upd: _Update, flat: np.ndarray, version: Any,
) -> bool:
    """Append-only update of an existing shard; False if the rewrite path must run.

    Applies to an index protected by ``crc32c`` on a store with partial writes, read
    through a pinned snapshot of known size whose file has no other hard link (an
    in-place write through a hard link would change a file outside the store: issue
    12.11).  Reads only the index and the partially covered inner chunks.  The
    re-encoded touched inner chunks are appended at the old end of the object;
    replaced chunks (and, for an ``end`` index, the old index) become dead space.  When
    dead space would exceed ``shard_append_dead_ratio`` of the object, returns False so
    the caller rewrites (compacts) the shard.

    Crash / error behaviour (partial writes are NOT atomic):

    * a write error (ENOSPC, EFBIG, EIO...): the object is truncated back to its old
      size (and a ``start`` index restored), so it reads as before; the error is
      re-raised (issue 12.9);
    * ``end`` index: ONE partial write of ``new chunks + new index`` at the old end.
      Before it lands readers see the old shard.  A torn write (crash mid-write) leaves
      the object's last ``index_size`` bytes as a mix of chunk and index bytes: the
      index's crc32c fails and readers raise CorruptChunkError.  A torn shard is
      detected, never misread (up to crc32c's 2^-32 collision chance).
    * ``start`` index: first the new chunks are appended, then the index is
      overwritten in place.  A crash before the second write leaves the old index; a
      crash during it tears the index: crc32c mismatch, CorruptChunkError.
    """
    if not (setter.supports_partial_writes and layout.has_crc and snap.pinned and snap.in_place_ok):
        return False
    size = snap.size
    if size is None or version is not None:
        return False
    isz = layout.index_size
    old_off = flat[0::2]
    old_nb = flat[1::2]
    stored = old_off != SENTINEL
    lin = upd.linear
    kept = stored.copy()
    kept[lin] = False
    kept_ids = np.flatnonzero(kept)
    if kept_ids.size:  # the entries carried into the new index get a read's checks (as the rewrite's)
        _check_in_shard(layout, kept_ids, old_off[kept_ids], old_nb[kept_ids], size)
    del kept, kept_ids
    partial = lin[~upd.full]
    need = np.unique(partial[stored[partial]])
    old_bytes = _StoredChunks(fetch_ranges, snap, setter, layout, need, old_off, old_nb, version, upd.ctx)
    with upd.ctx.cpu():
        new_bytes = upd.merge(old_bytes)
    new_flat = np.array(flat, np.uint64)
    pos = size
    pieces: list[Any] = []
    for k, i in enumerate(lin.tolist()):
        b = new_bytes[k]
        if b is None:
            new_flat[2 * i] = new_flat[2 * i + 1] = SENTINEL
        else:
            new_flat[2 * i] = pos
            new_flat[2 * i + 1] = len(b)
            pos += len(b)
            pieces.append(b)
    live = new_flat[0::2] != SENTINEL
    if not live.any():
        _remove(setter, layout)
        return True
    start = layout.start
    new_size = pos if start else pos + isz
    live_bytes = int(new_flat[1::2][live].sum())
    if new_size - live_bytes - isz > float(_config_get("shard_append_dead_ratio")) * new_size:
        return False  # compact: the caller rewrites the shard tightly
    index = layout.encode_index(new_flat)
    try:
        if start:
            if pieces:
                setter.set_partial(size, b"".join(pieces))
            setter.set_partial(0, index)  # only after the chunks it points to exist
        else:
            pieces.append(index)
            setter.set_partial(size, b"".join(pieces))
    except BaseException:
        _undo_append(setter, layout, flat, size, snap.identity)
        raise
    return True


def _undo_append(setter: ByteSetter, layout: ShardLayout, flat: np.ndarray, size: int, identity: object) -> None:
    """After a failed in-place append: cut the object back to its old size (and put a
    ``start`` index back), so it reads as before the write.  Best effort: if even this
    fails, the crc32c of the index still reports the shard as corrupt."""
    try:
        setter.truncate(size, identity)
        if layout.start:
            setter.set_partial(0, layout.encode_index(np.asarray(flat, np.uint64)))
    except Exception:  # noqa: BLE001 - the original error is what the caller must see
        pass
