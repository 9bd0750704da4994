"""The ``sharding_indexed`` codec (../shared/specs/v3-codec-sharding-indexed.rst).

Configuration keys (the JSON keys, verbatim):

* ``chunk_shape`` -- inner chunk shape; must evenly divide the shard shape, same rank;
* ``codecs`` -- codec chain of the inner chunks (required in metadata);
* ``index_codecs`` -- codec chain of the index (default ``bytes`` little-endian +
  ``crc32c``); must have a fixed encoded size;
* ``index_location`` -- ``"start"`` or ``"end"`` (default ``"end"``).

Binary layout written by zarrcy: inner chunks back to back in C order of the inner
chunk grid (readers accept any order, gaps and shared bytes), index at the start or end.
Inner chunks whose bytes all equal the fill value are not stored (index entry
``2^64-1``); a shard without any stored inner chunk is not written at all (on stores
without deletes: an index-only shard).  With ``zarrcy.config(write_empty_chunks=True)``
every inner chunk is stored (as zarr-python).

The package is split as zarrs and tensorstore split it:

* :mod:`.format` -- index layout, encode/decode/validate, fault texts (``ShardLayout``);
* :mod:`.reader` -- index fetch / cache / version checks, coalescing, point, point-set
  and partial reads;
* :mod:`.projection` -- a selection projected onto the inner chunks (``_grid`` kernels);
* :mod:`.writer` -- partial writes: ``rewrite`` and ``append`` strategies;
* :mod:`.codec` -- the ``ShardingCodec`` object: configuration, whole-shard encode/decode;
* :mod:`.scatter` -- the per-inner-chunk loops in C (``_kernels._inner_chunks``) for
  ``bytes`` (+ ``gzip``) inner chunks: partial, point-set and whole-shard decodes in one
  kernel call per shard, split over the caller and native pool helpers
  (``_kernels._workers``); whole-shard encodes (``_kernels._inner_encode``).

Index arithmetic, validation, the lookup + checks + coalescing of a read
(``plan_reads``) are Cython kernels (``zarrcy._kernels._sharding``); other inner codec chains are decoded/encoded in parallel
on the shared pool with a caller-runs scheme (:func:`._parallel.run`).

Call path of a sharded read: ``Array.__getitem__`` -> ``indexing`` (chunk projections)
-> ``CodecPipeline.decode_partial`` (through transposes) -> :func:`.reader.decode_partial`
(one snapshot of the shard: index, projection with the ``_grid`` kernels, coalesced
ranges; exactly one whole inner chunk: no projection) -> ``_inner_chunks.decode_scatter_all``.  Nothing here imports ``zarrcy.array``.
"""

from __future__ import annotations

from zarrcy.codecs.sharding.codec import IndexLocation, ShardingCodec
from zarrcy.codecs.sharding.format import SENTINEL, ShardLayout
from zarrcy.codecs.sharding.reader import STALE_RETRIES, clear_index_cache, decode_stats

_Layout = ShardLayout  # older name
_STALE_RETRIES = STALE_RETRIES

__all__ = ["ShardingCodec", "IndexLocation", "clear_index_cache", "SENTINEL", "decode_stats"]
