"""The regular chunk grid (v3-chunk-grid-regular.rst).

``RegularChunkGrid(chunk_shape)``; the JSON form is
``{"name": "regular", "configuration": {"chunk_shape": [...]}}``.  Chunks at the upper
edge overhang the array: :meth:`chunk_region` clips them to the array.

Per-array arithmetic here works on ``ndim``-length tuples of Python ints (exact, and
faster than converting to arrays for a handful of dimensions); the per-chunk and
per-selection arithmetic of large grids lives in ``zarrcy._kernels._grid``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterator, Protocol

import numpy as np

from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid, rectilinear_from_configuration
from zarrcy.errors import MetadataError, UnknownExtensionError, expected
from zarrcy.metadata._parse import config_dict, name_path, parse_extension

__all__ = ["RegularChunkGrid", "ChunkGridGeometry", "parse_chunk_grid"]

_INT64_MAX = (1 << 63) - 1
_REGULAR_KEYS = ("chunk_shape",)


def _check_chunk_shape(value: Any, path: str) -> tuple[int, ...]:
    if type(value) is not list and type(value) is not tuple:
        raise MetadataError(expected(path, "an array of integers >= 1", value), path)
    out = []
    for i, v in enumerate(value):
        if type(v) is not int:
            if isinstance(v, np.integer):
                v = int(v)
            else:
                raise MetadataError(expected(f"{path}[{i}]", f"an integer in [1, {_INT64_MAX}]", v), f"{path}[{i}]")
        if v < 1 or v > _INT64_MAX:
            raise MetadataError(expected(f"{path}[{i}]", f"an integer in [1, {_INT64_MAX}]", v), f"{path}[{i}]")
        out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class RegularChunkGrid:
    """Every chunk has shape ``chunk_shape``; the grid starts at the array origin."""

    chunk_shape: tuple[int, ...]
    name = "regular"

    def __post_init__(self) -> None:
        object.__setattr__(self, "chunk_shape", _check_chunk_shape(self.chunk_shape, "chunk_shape"))

    @classmethod
    def from_dict(cls, data: Any, path: str = "chunk_grid") -> RegularChunkGrid:
        """From the ``chunk_grid`` JSON value (object form; the short-hand has no shape)."""
        name, config, _ = parse_extension(data, path, ignorable=False, what="chunk grid")
        if name != "regular":
            p = name_path(data, path)
            raise MetadataError(expected(p, "'regular'", name), p)
        return _regular_from_configuration(config, path)

    def to_dict(self) -> dict[str, Any]:
        return {"name": "regular", "configuration": {"chunk_shape": list(self.chunk_shape)}}

    @property
    def ndim(self) -> int:
        return len(self.chunk_shape)

    def _check_rank(self, what: str, value: tuple[int, ...]) -> None:
        if len(value) != len(self.chunk_shape):
            raise ValueError(expected(what, f"{len(self.chunk_shape)} dimensions", tuple(value)))

    def grid_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]:
        """``ceil(array_shape / chunk_shape)`` per dimension."""
        self._check_rank("array_shape", array_shape)
        return tuple(-(-s // c) for s, c in zip(array_shape, self.chunk_shape))

    def nchunks(self, array_shape: tuple[int, ...]) -> int:
        n = 1
        for g in self.grid_shape(array_shape):
            n *= g
        return n

    def chunk_origin(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]:
        """Array coordinates of the chunk's first element."""
        self._check_rank("chunk_coords", chunk_coords)
        return tuple(i * c for i, c in zip(chunk_coords, self.chunk_shape))

    def chunk_region(self, array_shape: tuple[int, ...], chunk_coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The slices of the array that chunk ``chunk_coords`` covers, clipped at the edge.

        Raises IndexError for coordinates outside the grid.
        """
        self._check_rank("chunk_coords", chunk_coords)
        self._check_rank("array_shape", array_shape)
        out = []
        for i, c, s in zip(chunk_coords, self.chunk_shape, array_shape):
            start = i * c
            if i < 0 or start >= s:
                raise IndexError(expected("chunk_coords", f"coordinates inside grid {self.grid_shape(array_shape)}", tuple(chunk_coords)))
            out.append(slice(start, min(start + c, s)))
        return tuple(out)

    def all_chunk_coords(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """Every chunk's grid coordinates in C order (lazily; the grid may be huge)."""
        return itertools.product(*(range(g) for g in self.grid_shape(array_shape)))

    def all_chunk_coords_array(self, array_shape: tuple[int, ...]) -> np.ndarray:
        """``(nchunks, ndim)`` int64 array of every chunk's coordinates, C order."""
        g = self.grid_shape(array_shape)
        if not g:
            return np.zeros((1, 0), dtype=np.int64)
        return np.indices(g, dtype=np.int64).reshape(len(g), -1).T.copy()

    def axis_extent(self, axis: int, index: int) -> tuple[int, int]:
        """``(origin, edge length)`` of chunk ``index`` along ``axis``."""
        c = self.chunk_shape[axis]
        return index * c, c

    def chunk_shape_at(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]:
        """The chunk's (codec) shape: ``chunk_shape`` for every chunk, edge chunks
        included (they overhang the array; see :meth:`chunk_region`)."""
        return self.chunk_shape

    def chunk_extent(self, chunk_coords: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(chunk_origin, chunk_shape_at)`` of one chunk."""
        return tuple(i * c for i, c in zip(chunk_coords, self.chunk_shape)), self.chunk_shape

    def axis_chunk_sizes(self, axis: int, size: int) -> tuple[int, ...]:
        """The clipped edge lengths along ``axis`` for an axis of length ``size`` (dask's
        chunks convention: they sum to ``size``)."""
        c = self.chunk_shape[axis]
        full, rest = divmod(size, c)
        return (c,) * full + ((rest,) if rest else ())

    def axis_edges(self, axis: int, size: int) -> tuple[int, ...]:
        """The distinct edge lengths along ``axis``: one."""
        return (self.chunk_shape[axis],)

    def max_chunk_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The largest chunk (codec) shape: ``chunk_shape``."""
        return self.chunk_shape

    def chunk_shapes_in(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """Every distinct chunk (codec) shape: ``chunk_shape`` alone."""
        return iter((self.chunk_shape,))


class ChunkGridGeometry(Protocol):
    """The geometry both chunk grids offer (:class:`RegularChunkGrid`,
    ``RectilinearChunkGrid``), in the spec's vocabulary: ``grid_shape`` is the number of
    chunks per axis that hold array elements; a chunk's *origin* is the array index of
    its first element, its *shape* (``chunk_shape_at``, what its codecs see) may extend
    past the array at the upper edge, and ``chunk_region`` clips it to the array."""

    @property
    def ndim(self) -> int: ...
    def grid_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]: ...
    def nchunks(self, array_shape: tuple[int, ...]) -> int: ...
    def axis_extent(self, axis: int, index: int) -> tuple[int, int]: ...
    def chunk_origin(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]: ...
    def chunk_shape_at(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]: ...
    def chunk_extent(self, chunk_coords: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]: ...
    def chunk_region(self, array_shape: tuple[int, ...], chunk_coords: tuple[int, ...]) -> tuple[slice, ...]: ...
    def axis_chunk_sizes(self, axis: int, size: int) -> tuple[int, ...]: ...
    def axis_edges(self, axis: int, size: int) -> tuple[int, ...]: ...
    def max_chunk_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]: ...
    def chunk_shapes_in(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]: ...
    def all_chunk_coords(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]: ...
    def all_chunk_coords_array(self, array_shape: tuple[int, ...]) -> np.ndarray: ...


def parse_chunk_grid(value: Any, path: str = "chunk_grid") -> RegularChunkGrid | RectilinearChunkGrid:
    """The ``chunk_grid`` member -> a chunk grid object.

    Parsed by :func:`zarrcy.metadata._parse.parse_extension`: ``must_understand: false``
    is not allowed for chunk grids (v3-core.rst "must_understand"); unknown names raise
    UnknownExtensionError.  Both grids require a configuration, so the short-hand name
    is refused at ``<path>.configuration``.
    """
    name, config, _ = parse_extension(value, path, ignorable=False, what="chunk grid")
    if name == "rectilinear":  # ext-chunk-grid-rectilinear.md
        return rectilinear_from_configuration(config, path)
    if name != "regular":
        p = name_path(value, path)
        raise UnknownExtensionError(expected(p, "a known chunk grid ('regular', 'rectilinear')", name), p)
    return _regular_from_configuration(config, path)


def _regular_from_configuration(configuration: Any, path: str) -> RegularChunkGrid:
    cfg = config_dict(configuration, path, _REGULAR_KEYS, required=_REGULAR_KEYS)
    grid = RegularChunkGrid.__new__(RegularChunkGrid)
    object.__setattr__(grid, "chunk_shape", _check_chunk_shape(cfg["chunk_shape"], f"{path}.configuration.chunk_shape"))
    return grid
