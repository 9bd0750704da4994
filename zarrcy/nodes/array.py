"""Zarr arrays: numpy-style reads and writes over a store (docs/ARCHITECTURE.md).

This is the one place (with nodes/group.py) where stores and codecs meet.  Reads and
writes are split into per-stored-chunk tasks (per shard when sharded) that run on the
shared thread pool; every hot step inside a task (decompression, byte shuffling, index
arithmetic) runs in C with the GIL released, so tasks overlap.

The class is assembled from three parts: ``array_base`` (state, chunk access),
``array_read`` (the read path) and ``array_write`` (the write path, resize, append);
this module adds the properties, ``info`` and the zarr-python API.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.codecs._base import ArrayArrayCodec, BytesBytesCodec, Codec
from zarrcy.codecs.sharding import ShardingCodec
from zarrcy.config import get as _config_get
from zarrcy.document.array import ArrayMetadataLike
from zarrcy.errors import REOPEN_HINT, ReadOnlyError
from zarrcy.nodes.array_base import ArrayConfig, chunk_errors
from zarrcy.nodes.array_read import ArrayReads
from zarrcy.nodes.array_write import ArrayWrites
from zarrcy.nodes.base import node_api
from zarrcy.storage import Store, StorePath
from zarrcy.v2.metadata import V2ArrayMetadata

__all__ = ["Array", "ArrayConfig", "StoreValue", "RectilinearChunksError", "chunk_errors"]


class RectilinearChunksError(NotImplementedError, AttributeError):
    """``chunks``/``shards`` of a rectilinear grid (chunks differ in shape): a
    NotImplementedError as in zarr-python 3.4, and an AttributeError so duck-typed
    ``getattr(a, "chunks", None)`` (dask's ``from_array``) treats it as absent."""


# the one ByteGetter/ByteSetter implementation (zarrcy.byte_access) over a store key
StoreValue = StorePath


class Array(ArrayReads, ArrayWrites):
    """A Zarr v3 array.  Obtain one with :func:`zarrcy.open_array` / :func:`zarrcy.create_array`."""

    #: the leading codecs a view from :meth:`encoded_by` leaves to its writer (None: a plain array)
    _encoded: tuple[Codec, ...] | None = None

    def __init__(self, store: Store, path: str, metadata: ArrayMetadataLike, *, read_only: bool = False) -> None:
        self.store = store
        self.path = path
        self.read_only = read_only or store.read_only
        self._set_metadata(metadata)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def shards(self) -> tuple[int, ...] | None:
        """Shard shape if the array is sharded (the stored-object grid), else None.
        NotImplementedError for a rectilinear shard grid (as zarr-python 3.4): see
        :attr:`write_chunk_sizes`."""
        inner = self._inner_chunk_shape()
        if inner is not None and self._rect is not None:
            raise RectilinearChunksError(
                "shards: the shard grid is rectilinear (shards differ in shape); use write_chunk_sizes"
            )
        return self._chunk_shape if inner is not None else None

    @property
    def chunks(self) -> tuple[int, ...]:
        """The (inner) chunk shape: the unit of encoding, as in zarr-python 3.
        NotImplementedError for an unsharded rectilinear array (as zarr-python 3.4):
        see :attr:`read_chunk_sizes`."""
        inner = self._inner_chunk_shape()
        if inner is None and self._rect is not None:
            raise RectilinearChunksError(
                "chunks: the chunk grid is rectilinear (chunks differ in shape); use read_chunk_sizes"
            )
        return inner if inner is not None else self._chunk_shape

    @property
    def write_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the sizes of the stored chunks (shards when sharded) clipped to the
        array (dask's ``chunks`` convention), for regular and rectilinear grids."""
        return tuple(self._grid.axis_chunk_sizes(a, s) for a, s in enumerate(self._shape))

    @property
    def read_chunk_sizes(self) -> tuple[tuple[int, ...], ...]:
        """Per axis, the sizes of the chunks read (inner chunks when sharded: they tile
        the array regularly, since they divide every shard edge), clipped to the array."""
        inner = self._inner_chunk_shape()
        if inner is None:
            return self.write_chunk_sizes
        inner_grid = RegularChunkGrid(inner)  # inner chunks tile the array regularly
        return tuple(inner_grid.axis_chunk_sizes(a, s) for a, s in enumerate(self._shape))

    @property
    def fill_value(self) -> Any:
        return self.metadata.fill_value

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return self.metadata.dimension_names

    @property
    def nchunks(self) -> int:
        return self._grid.nchunks(self._shape)

    @property
    def nchunks_initialized(self) -> int:
        """Number of stored chunks (shards when sharded) that exist in the store."""
        decode = self.metadata.chunk_key_encoding.decode_chunk_key
        n = 0
        plen = len(self._prefix)
        grid = self.grid_shape
        for key in self.store.list_prefix(self._prefix):
            coords = decode(key[plen:])
            if coords is not None and len(coords) == len(grid) and all(0 <= c < g for c, g in zip(coords, grid)):
                n += 1
        return n

    def _set_attributes(self, attributes: dict) -> None:
        self._check_writable()
        self._check_node_exists()
        self._write_metadata(self.metadata.with_changes(attributes=attributes, validate=False))

    def __repr__(self) -> str:
        return f"<zarrcy.Array {self.store.url!s} /{self.path} shape={self.shape} dtype={self.dtype}>"

    @property
    def info(self) -> str:
        m = self.metadata
        lines = [
            f"Type               : Array",
            f"Path               : /{self.path}",
            f"Store              : {self.store.url}",
            f"Data type          : {m.data_type.to_json()}",
            f"Shape              : {self.shape}",
            f"Chunk shape        : {self._info_chunks()}",
            f"Shard shape        : {self._info_shards()}",
            f"Fill value         : {m.fill_value!r}",
            f"Codecs             : {[c.to_dict() for c in m.codecs]}",
            f"No. bytes          : {self.nbytes}",
            f"Chunks initialized : {self.nchunks_initialized}/{self.nchunks}",
        ]
        return "\n".join(lines)

    def _info_chunks(self) -> Any:
        if self._rect is not None and self._inner_chunk_shape() is None:
            return f"<variable> {self._rect.to_dict()['configuration']['chunk_shapes']}"
        return self.chunks

    def _info_shards(self) -> Any:
        if self._rect is not None and self._inner_chunk_shape() is not None:
            return f"<variable> {self._rect.to_dict()['configuration']['chunk_shapes']}"
        return self.shards

    # -- pickling: (store URL, path, read_only) --------------------------------------
    def __reduce__(self):
        # the store object pickles itself (root / URL + storage options), so remote
        # credentials and options travel with the array (Dask workers, processes)
        if self._encoded is not None:  # a view from encoded_by: its metadata is not the stored one
            return (_reopen_encoded, (self.store, self.path, self.read_only, self._encoded))
        return (node_api().reopen_array, (self.store, self.path, self.read_only))

    # -- zarr-python API parity (issue 14): keep these together ------------------------
    def _codec_parts(self) -> tuple[tuple[Any, ...], Any, tuple[Any, ...]]:
        """(filters, serializer, compressors) as zarr-python reports them: for a sharded
        array, those of the inner chunks; for a Zarr v2 array, numcodecs objects (and no
        serializer)."""
        m = self.metadata
        if isinstance(m, V2ArrayMetadata):
            import numcodecs  # optional dependency, needed only for a v2 array's parts

            filters = tuple(numcodecs.get_codec(dict(f)) for f in (m.filters or ()))
            comp = m.compressor
            return filters, None, (numcodecs.get_codec(dict(comp)),) if comp else ()
        codecs = tuple(m.codecs)
        ab = self._pipeline.array_bytes
        if self._inner_chunk_shape() is not None and isinstance(ab, ShardingCodec):  # also on a rectilinear shard grid
            codecs = tuple(ab.codecs)
        filters = tuple(c for c in codecs if isinstance(c, ArrayArrayCodec))
        compressors = tuple(c for c in codecs if isinstance(c, BytesBytesCodec))
        rest = [c for c in codecs if not isinstance(c, (ArrayArrayCodec, BytesBytesCodec))]
        return filters, (rest[0] if rest else None), compressors

    @property
    def filters(self) -> tuple[Any, ...]:
        """The array -> array codecs (of the inner chunks when sharded)."""
        return self._codec_parts()[0]

    @property
    def serializer(self) -> Any:
        """The array -> bytes codec (of the inner chunks when sharded)."""
        return self._codec_parts()[1]

    @property
    def compressors(self) -> tuple[Any, ...]:
        """The bytes -> bytes codecs (of the inner chunks when sharded)."""
        return self._codec_parts()[2]

    @property
    def config(self) -> "ArrayConfig":
        """Runtime settings of this Array object (zarr-python's ``ArrayConfig``)."""
        cfg = self.__dict__.get("_array_config")
        if cfg is None:
            cfg = ArrayConfig(write_empty_chunks=bool(_config_get("write_empty_chunks")))
        return cfg

    @property
    def order(self) -> str:
        return self.config.order

    def with_config(self, config: Any = None, **kwargs: Any) -> "Array":
        """A new Array object over the same stored array with other runtime settings
        (``{"write_empty_chunks": bool, "order": "C" | "F"}``)."""
        cfg = config if isinstance(config, ArrayConfig) else dataclasses.replace(self.config, **{**(config or {}), **kwargs})
        if cfg.order not in ("C", "F"):
            raise ValueError(f"config.order: expected 'C' or 'F', received {cfg.order!r}")
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._array_config = cfg
        return new

    def encoded_by(self, codecs: Any) -> "Array | None":
        """This array as a writer sees it that encodes the values itself with ``codecs``
        (codec objects or JSON): the array's leading array->array codecs, the same
        configurations, each declared elementwise (``scale_offset``, ``cast_value``; of
        the inner chunks when sharded).  The same store, path, grid and chunk keys; the
        data type and fill value are those codecs' encoded ones (the fill value as they
        encode it: ext-codec-cast_value.md, ext-codec-scale_offset.md), the codecs the
        rest of the chain.  Writing through it stores exactly what writing the unencoded
        values here would, provided that the caller's values equal this array's fill
        value exactly where they equal the encoded fill value (all-fill chunks are
        detected in the encoded type).  Nothing is written; None: ``codecs`` are not
        such a prefix (or a Zarr v2 array)."""
        from zarrcy.codecs.registry import codec_from_dict

        m = self.metadata
        if isinstance(m, V2ArrayMetadata):
            return None
        leading = [c if isinstance(c, Codec) else codec_from_dict(c, f"codecs[{i}]") for i, c in enumerate(codecs)]
        got = self._pipeline.encoded_stage(leading)
        if got is None:
            return None
        rest, spec = got
        meta = m.with_changes(data_type=spec.data_type, fill_value=spec.fill_value, codecs=rest)
        new = Array(self.store, self.path, meta, read_only=self.read_only)
        if "_array_config" in self.__dict__:
            new = new.with_config(self.config)
        new._encoded = tuple(leading)
        return new

    def nbytes_stored(self) -> int:
        """Bytes stored for this array: its metadata and every chunk (or shard)."""
        return sum(self.store.getsize(k) or 0 for k in self.store.list_prefix(self._prefix))

    def info_complete(self) -> str:
        """:attr:`info` plus what needs listing the store: bytes stored, storage ratio."""
        stored = self.nbytes_stored()
        ratio = self.nbytes / stored if stored else 0.0
        return "\n".join([self.info, f"No. bytes stored   : {stored}", f"Storage ratio      : {ratio:.1f}"])

    def update_attributes(self, new_attributes: dict) -> "Array":
        """Merge ``new_attributes`` into the attributes (one metadata write); return self."""
        self.attrs.update(new_attributes)
        return self


def _reopen_encoded(store: Store, path: str, read_only: bool, codecs: tuple[Codec, ...]) -> Array | None:
    """Unpickling a view from :meth:`Array.encoded_by`: the stored array, viewed again."""
    return node_api().reopen_array(store, path, read_only).encoded_by(codecs)
