"""The rectilinear chunk grid (ext-chunk-grid-rectilinear.md).

``{"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [...]}}``:
one entry of ``chunk_shapes`` per array axis, each either

* an integer ``m`` — a regular axis: edges of ``m`` repeated until they cover the axis
  ("Chunk edge lengths", first form), or
* an array of edge lengths whose items are integers or run-length pairs ``[edge, count]``
  ("Run-length encoding").

The grid keeps every axis as *runs* ``(edge, count)``: a repeat of 2**40 is one run, so
opening an array never costs memory proportional to its number of chunks.  The per-axis
lookups (which chunk holds index ``i``, where chunk ``c`` starts) are binary searches over
the runs' cumulative origins in ``zarrcy._kernels._rectilinear``; the JSON form given is
kept and written back unchanged (``from_dict(g.to_dict()) == g``).

Validation against the array shape (edges must cover it: "The sum of the edge lengths
MUST equal or exceed L") needs the shape, so it is :meth:`validate`, called with the
array metadata.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import numpy as np

from zarrcy.errors import MetadataError, expected
from zarrcy.metadata._parse import INT64_MAX, config_dict, expect_int, name_path, parse_extension

__all__ = ["RectilinearChunkGrid", "parse_rectilinear", "rectilinear_from_configuration"]

# one axis: an int (regular) or a tuple of ints and (edge, count) pairs (as written)
AxisForm = Union[int, tuple[Union[int, tuple[int, int]], ...]]


def _axis_runs(form: AxisForm) -> tuple[tuple[int, int], ...] | None:
    """Merged runs ``((edge, count), ...)`` of an explicit axis; None for the integer form."""
    if isinstance(form, int):
        return None
    runs: list[list[int]] = []
    for item in form:
        e, n = (item, 1) if isinstance(item, int) else item
        if runs and runs[-1][0] == e:
            runs[-1][1] += n
        else:
            runs.append([e, n])
    return tuple((e, n) for e, n in runs)


@dataclass(frozen=True)
class RectilinearChunkGrid:
    """Chunks whose edge lengths vary along each axis (``chunk_shapes`` per axis)."""

    chunk_shapes: tuple[AxisForm, ...]
    name = "rectilinear"
    _tables: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...] = field(
        init=False, repr=False, compare=False, hash=False
    )

    def __post_init__(self) -> None:
        forms = tuple(_check_axis(a, f"chunk_shapes[{i}]") for i, a in enumerate(self.chunk_shapes))
        object.__setattr__(self, "chunk_shapes", forms)
        object.__setattr__(self, "_tables", tuple(_tables(f) for f in forms))

    # -- JSON ---------------------------------------------------------------------------
    @classmethod
    def from_dict(cls, data: Any, path: str = "chunk_grid") -> RectilinearChunkGrid:
        """From the ``chunk_grid`` JSON value (the whole extension object)."""
        return parse_rectilinear(data, path)

    def to_dict(self) -> dict[str, Any]:
        axes: list[Any] = []
        for form in self.chunk_shapes:
            if isinstance(form, int):
                axes.append(form)
            else:
                axes.append([item if isinstance(item, int) else list(item) for item in form])
        return {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": axes}}

    # -- geometry -----------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.chunk_shapes)

    def tables(self, axis: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(origin, first_chunk, edge)`` int64 run tables of ``axis`` for the kernels."""
        return self._tables[axis]

    def validate(self, array_shape: tuple[int, ...], path: str = "chunk_grid") -> None:
        """The edges of every explicit axis cover the array (spec: sum >= L)."""
        if len(array_shape) != self.ndim:
            raise MetadataError(
                expected(f"{path}.configuration.chunk_shapes", f"{len(array_shape)} axes (one per dimension of shape)",
                         self.ndim),
                f"{path}.configuration.chunk_shapes",
            )
        for axis, (form, size) in enumerate(zip(self.chunk_shapes, array_shape)):
            runs = _axis_runs(form)
            if runs is None:
                continue
            total = sum(e * n for e, n in runs)
            if total < size:
                p = f"{path}.configuration.chunk_shapes[{axis}]"
                raise MetadataError(expected(p, f"edge lengths summing to at least the shape {size}", total), p)

    def _axis_nchunks(self, axis: int, size: int) -> int:
        """Chunks of ``axis`` that start inside an axis of length ``size``."""
        if size <= 0:
            return 0
        origin, first, edge = self._tables[axis]
        r = int(np.searchsorted(origin, size - 1, side="right")) - 1
        return int(first[r]) + (size - 1 - int(origin[r])) // int(edge[r]) + 1

    def grid_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]:
        """Chunks per axis that hold array elements (overflow chunks past the shape are
        allowed by the spec and not counted)."""
        return tuple(self._axis_nchunks(a, s) for a, s in enumerate(array_shape))

    def nchunks(self, array_shape: tuple[int, ...]) -> int:
        n = 1
        for g in self.grid_shape(array_shape):
            n *= g
        return n

    def axis_extent(self, axis: int, c: int) -> tuple[int, int]:
        """``(origin, edge length)`` of chunk ``c`` along ``axis`` (a binary search over the runs)."""
        origin, first, edge = self._tables[axis]
        r = int(np.searchsorted(first, c, side="right")) - 1
        e = int(edge[r])
        return int(origin[r]) + (c - int(first[r])) * e, e

    def chunk_origin(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]:
        """Array coordinates of the chunk's first element."""
        return tuple(self.axis_extent(a, c)[0] for a, c in enumerate(chunk_coords))

    def chunk_shape_at(self, chunk_coords: tuple[int, ...]) -> tuple[int, ...]:
        """The chunk's edge lengths (its stored shape: not clipped at the array edge)."""
        return tuple(self.axis_extent(a, c)[1] for a, c in enumerate(chunk_coords))

    def chunk_extent(self, chunk_coords: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(chunk_origin, chunk_shape_at)`` of one chunk, with one search per axis."""
        ext = [self.axis_extent(a, c) for a, c in enumerate(chunk_coords)]
        return tuple(o for o, _ in ext), tuple(e for _, e in ext)

    def chunk_region(self, array_shape: tuple[int, ...], chunk_coords: tuple[int, ...]) -> tuple[slice, ...]:
        """The slices of the array that chunk ``chunk_coords`` covers, clipped at the edge."""
        grid = self.grid_shape(array_shape)
        if len(chunk_coords) != self.ndim or any(not 0 <= c < g for c, g in zip(chunk_coords, grid)):
            raise IndexError(expected("chunk_coords", f"coordinates inside grid {grid}", tuple(chunk_coords)))
        out = []
        for a, (c, s) in enumerate(zip(chunk_coords, array_shape)):
            start, e = self.axis_extent(a, c)
            out.append(slice(start, min(start + e, s)))
        return tuple(out)

    def axis_chunk_sizes(self, axis: int, size: int) -> tuple[int, ...]:
        """The clipped edge lengths of ``axis`` for an axis of length ``size`` (dask's
        chunks convention: they sum to ``size``)."""
        out: list[int] = []
        for c in range(self._axis_nchunks(axis, size)):
            start, e = self.axis_extent(axis, c)
            out.append(min(e, size - start))
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

    def axis_edges(self, axis: int, size: int) -> tuple[int, ...]:
        """The distinct edge lengths of the chunks of ``axis`` that hold elements of an
        axis of length ``size`` (the first edge when ``size`` is 0), sorted.  At most one
        per run: never proportional to the number of chunks."""
        origin, _first, edge = self._tables[axis]
        if size <= 0:
            return (int(edge[0]),)
        r = int(np.searchsorted(origin, size - 1, side="right"))
        return tuple(sorted(set(edge[:r].tolist())))

    def max_chunk_shape(self, array_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The largest edge per axis among chunks holding elements (the largest codec
        shape: bounds per-chunk memory)."""
        return tuple(self.axis_edges(a, s)[-1] for a, s in enumerate(array_shape))

    def chunk_shapes_in(self, array_shape: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        """Every distinct chunk (codec) shape of an array of ``array_shape``: the product
        of the distinct edges per axis (small: bounded by the runs, not the chunks)."""
        return itertools.product(*(self.axis_edges(a, s) for a, s in enumerate(array_shape)))

    def resized(self, old_shape: tuple[int, ...], new_shape: tuple[int, ...]) -> RectilinearChunkGrid:
        """The grid after ``resize(new_shape)``, with zarr-python 3.4's semantics
        (``VaryingDimension.resize``): an explicit axis grown past the sum of its edges
        gains one chunk covering the new extent (a plain edge appended to the written
        form, which stays run-length compact); shrinking keeps every edge; the integer
        form is unchanged."""
        forms: list[AxisForm] = []
        changed = False
        for form, old, new in zip(self.chunk_shapes, old_shape, new_shape):
            runs = _axis_runs(form)
            if runs is not None and new != old:
                total = sum(e * n for e, n in runs)
                if new > total:
                    assert not isinstance(form, int)
                    form = tuple(form) + (new - total,)
                    changed = True
            forms.append(form)
        return RectilinearChunkGrid(tuple(forms)) if changed else self


def _check_axis(value: Any, path: str) -> AxisForm:
    if type(value) is int or isinstance(value, np.integer):
        return expect_int(value, path, 1)
    if type(value) is not list and type(value) is not tuple:
        raise MetadataError(expected(path, "an integer >= 1 or an array of edge lengths", value), path)
    if not value:
        raise MetadataError(expected(path, "at least one edge length", list(value)), path)
    items: list[int | tuple[int, int]] = []
    for i, item in enumerate(value):
        p = f"{path}[{i}]"
        if type(item) is list or type(item) is tuple:
            if len(item) != 2:
                raise MetadataError(expected(p, "a run-length pair [edge, count]", list(item)), p)
            items.append((expect_int(item[0], f"{p}[0]", 1), expect_int(item[1], f"{p}[1]", 1)))
        else:
            items.append(expect_int(item, p, 1))
    return tuple(items)


def _tables(form: AxisForm) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run tables of one axis; runs past INT64_MAX (unreachable by any index) are dropped,
    so every stored origin fits int64 and the kernels never overflow."""
    runs = _axis_runs(form)
    if runs is None:  # the integer form: one unbounded run
        assert isinstance(form, int)
        return (np.zeros(1, np.int64), np.zeros(1, np.int64), np.array([form], np.int64))
    origin: list[int] = []
    first: list[int] = []
    edge: list[int] = []
    o = c = 0
    for e, n in runs:
        if o > INT64_MAX or c > INT64_MAX:
            break
        origin.append(o)
        first.append(c)
        edge.append(e)
        o += e * n
        c += n
    return (np.array(origin, np.int64), np.array(first, np.int64), np.array(edge, np.int64))


_CONFIG_KEYS = ("kind", "chunk_shapes")


def parse_rectilinear(value: Any, path: str = "chunk_grid") -> RectilinearChunkGrid:
    """The ``chunk_grid`` extension object of a rectilinear grid."""
    name, config, _ = parse_extension(value, path, ignorable=False, what="chunk grid")
    if name != "rectilinear":
        p = name_path(value, path)
        raise MetadataError(expected(p, "'rectilinear'", name), p)
    return rectilinear_from_configuration(config, path)


def rectilinear_from_configuration(configuration: Any, path: str = "chunk_grid") -> RectilinearChunkGrid:
    """The grid of a rectilinear ``chunk_grid``'s ``configuration`` (the extension object
    itself is parsed by :func:`zarrcy.chunk_grid.parse_chunk_grid`); ``path`` is the grid's."""
    config = config_dict(configuration, path, _CONFIG_KEYS, required=_CONFIG_KEYS)
    cpath = f"{path}.configuration"
    kind = config["kind"]
    if kind != "inline":
        raise MetadataError(expected(f"{cpath}.kind", "'inline'", kind), f"{cpath}.kind")
    shapes = config["chunk_shapes"]
    if type(shapes) is not list and type(shapes) is not tuple:
        raise MetadataError(expected(f"{cpath}.chunk_shapes", "an array with one entry per dimension", shapes),
                            f"{cpath}.chunk_shapes")
    forms = tuple(_check_axis(a, f"{cpath}.chunk_shapes[{i}]") for i, a in enumerate(shapes))
    grid = RectilinearChunkGrid.__new__(RectilinearChunkGrid)
    object.__setattr__(grid, "chunk_shapes", forms)
    object.__setattr__(grid, "_tables", tuple(_tables(f) for f in forms))
    return grid
