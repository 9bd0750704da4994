"""The byte plan of a spliced shard rewrite (``writer._rewrite_spliced``), computed in
blocks of inner chunks so that a partial write into a shard of millions of inner chunks
holds no array of the index's size beside the index itself (issue 23.8: writing
one element of a shard of 2^24 inner chunks, a 256 MiB index, peaked at 1.09 GB).

The new shard lists its inner chunks in the physical write order (``format.write_order``;
the offsets ``format.lay_out_in_place`` assigns grow along it), so the plan walks that
order block by block: runs of kept chunks that are back to back in the old shard become
one byte range of the old version, each re-encoded touched chunk its bytes.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zarrcy.codecs.sharding.format import SENTINEL, ShardLayout
from zarrcy.errors import CorruptChunkError

__all__ = ["check_kept", "spliced_parts", "BLOCK"]

#: inner chunks per step
BLOCK = 1 << 18


def _blocks(n: int, order: np.ndarray | None) -> Any:
    for lo in range(0, n, BLOCK):
        hi = min(n, lo + BLOCK)
        yield np.arange(lo, hi, dtype=np.int64) if order is None else order[lo:hi]


def check_kept(layout: ShardLayout, keep: np.ndarray, old_off: np.ndarray, old_nb: np.ndarray, size: int | None) -> None:
    """The checks a read of the kept inner chunks would make (they are copied, not read):
    ``ShardLayout.check_fetch`` and inside a shard of ``size`` bytes, naming the first bad
    entry; block by block."""
    for ids in _blocks(keep.shape[0], None):
        which = ids[keep[ids]]
        if not which.size:
            continue
        offs, nbs = old_off[which], old_nb[which]
        layout.check_fetch(which, nbs)
        if size is None:
            continue
        over = offs + nbs > np.uint64(size)
        if over.any():
            bad = int(np.argmax(over))
            raise CorruptChunkError(
                f"{layout.chunk_name(int(which[bad]))}: points past the end of the shard "
                f"(offset={int(offs[bad])}, nbytes={int(nbs[bad])}, shard size {size}; truncated?)"
            )


def spliced_parts(present: np.ndarray, order: np.ndarray | None, keep: np.ndarray, old_off: np.ndarray,
                  old_nb: np.ndarray, linear: Sequence[int], new_bytes: Sequence[Any]) -> list[Any]:
    """The data parts of the new shard in physical order: ``(start, stop)`` byte ranges of
    the old version for runs of kept chunks, the bytes of re-encoded touched chunks
    (``new_bytes[k]`` of inner chunk ``linear[k]``).  ``present[i]``: inner chunk ``i`` is
    stored in the new shard (kept, or re-encoded and not empty)."""
    k_of = {int(i): k for k, i in enumerate(linear)}
    parts: list[Any] = []
    run: list[int] | None = None  # [start, stop) of the current run of kept chunks
    for ids in _blocks(keep.shape[0], order):
        ids = ids[present[ids]]  # stored in the new shard
        if not ids.size:
            continue
        is_kept = keep[ids]
        src_a = np.where(is_kept, old_off[ids], np.uint64(0))
        src_b = src_a + np.where(is_kept, old_nb[ids], np.uint64(0))
        joined = is_kept[1:] & is_kept[:-1] & (src_a[1:] == src_b[:-1])
        starts = np.flatnonzero(np.r_[True, ~joined]).tolist()
        ends = starts[1:] + [ids.size]
        for j0, j1 in zip(starts, ends):
            if is_kept[j0]:
                a, b = int(src_a[j0]), int(src_b[j1 - 1])
                if run is not None and run[1] == a:  # continues across the block boundary
                    run[1] = b
                    continue
                if run is not None:
                    parts.append((run[0], run[1]))
                run = [a, b]
            else:  # a re-encoded touched chunk (never joined with a neighbour)
                if run is not None:
                    parts.append((run[0], run[1]))
                    run = None
                parts.append(new_bytes[k_of[int(ids[j0])]])
    if run is not None:
        parts.append((run[0], run[1]))
    return parts
