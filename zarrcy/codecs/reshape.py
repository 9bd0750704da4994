"""The ``reshape`` codec (spec: ../shared/specs/ext-codec-reshape.md).

``array -> array``: the encoded array ``B`` holds the elements of the decoded array ``A``
in the same C order (``ravel(B) == ravel(A)``) under another shape.  Configuration:

* ``shape``: one entry per dimension of ``B``, each a positive integer (that size), an
  array of input dimensions ``input_dims`` (``B_shape[i] = prod(A_shape[input_dims])``,
  useful with variable chunk shapes) or ``-1`` (at most once: whatever makes
  ``prod(B_shape) == prod(A_shape)``).  Written back exactly as given: ``-1`` and
  ``input_dims`` are resolved per chunk shape, never frozen into sizes.

Checks (spec "Configuration parameters"): at parse time, the entries' types, one ``-1``
at most and the flattened ``input_dims`` strictly increasing; against the chunk shape in
``validate``, input dimensions inside its rank, the products multiplying out and, for an
``input_dims`` entry of ``k > 0`` dimensions, ``prod(B_shape[:i]) == prod(A_shape[:d0])``
and ``prod(B_shape[i+1:]) == prod(A_shape[d_{k-1}+1:])``.  Every failure is a
MetadataError at ``<codec path>.configuration.shape[...]``.

Encoding and decoding are numpy reshapes: views of C-ordered chunks, no copy.

**Partial decode and encode** (inside ``sharding_indexed``, like ``transpose``): the
dimensions of ``A`` and ``B`` split into runs with equal products (a run of ``A``
dimensions merged into one ``B`` dimension, one split into several, an unchanged one...).
A selection on ``A`` is carried to ``B`` run by run (:func:`map_selection`):

* an unchanged dimension passes its selection (int, slice, index array) through;
* a run selected whole, or by integers only, maps to whole slices / integers;
* otherwise the run's selected flat indices are factored into one selection per ``B``
  dimension of the run (a slice where they form a progression, else an index array).
  Merged dimensions always factor (one ``B`` dimension takes the flat indices).  A split
  dimension factors when the selection is a product in ``B``'s coordinates -- e.g. whole
  rows of the split (``a[8:16]`` of a 32 -> (4, 8) split), a single row's range
  (``a[9:13]``), a step that is a multiple of the inner size (``a[::8]``), any integer.
  Anything else (``a[6:10]`` crossing a row boundary of the split) decodes the whole
  chunk, then selects: the pipeline falls back per selection, never wrong data.

Points (``vindex``) always map (flat index -> ``B`` coordinates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, Selection, selection_shape
from zarrcy.codecs._common import MISSING, config_dict, selection_indices
from zarrcy.errors import MetadataError, expected

__all__ = ["ReshapeCodec", "map_selection", "output_shape", "runs"]

#: one entry of ``shape``: a size, ``-1``, or a tuple of input dimensions
ShapeEntry = int | tuple[int, ...]


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _parse_shape(value: Any, p: str) -> tuple[ShapeEntry, ...]:
    """The ``shape`` configuration at JSON path ``p``: types, one ``-1`` at most, the
    flattened input dimensions strictly increasing (spec "Configuration parameters")."""
    if not isinstance(value, (list, tuple)):
        raise MetadataError(expected(p, "an array of sizes, -1 or arrays of input dimensions", value), p)
    out: list[ShapeEntry] = []
    auto = None
    last = -1
    for i, e in enumerate(value):
        pi = f"{p}[{i}]"
        if _is_int(e):
            if e == -1:
                if auto is not None:
                    raise MetadataError(expected(pi, f"-1 at most once (already at shape[{auto}])", e), pi)
                auto = i
            elif e < 1:
                raise MetadataError(expected(pi, "a positive size, -1 or an array of input dimensions", e), pi)
            out.append(int(e))
        elif isinstance(e, (list, tuple)):
            dims = []
            for j, d in enumerate(e):
                if not _is_int(d) or d < 0:
                    raise MetadataError(expected(f"{pi}[{j}]", "a non-negative input dimension", d), f"{pi}[{j}]")
                if d <= last:
                    raise MetadataError(
                        expected(f"{pi}[{j}]", f"input dimensions in strictly increasing order (after {last})", d),
                        f"{pi}[{j}]",
                    )
                last = int(d)
                dims.append(int(d))
            out.append(tuple(dims))
        else:
            raise MetadataError(expected(pi, "a positive size, -1 or an array of input dimensions", e), pi)
    return tuple(out)


def output_shape(shape: tuple[ShapeEntry, ...], a_shape: tuple[int, ...], p: str = "shape") -> tuple[int, ...]:
    """``B_shape`` for the decoded chunk shape ``a_shape`` (spec "Configuration
    parameters"); MetadataError at ``p`` (the ``shape`` JSON path) when it cannot be
    satisfied."""
    return _output_shape(shape, tuple(int(n) for n in a_shape), p)


@lru_cache(maxsize=256)
def _output_shape(shape: tuple[ShapeEntry, ...], a: tuple[int, ...], p: str) -> tuple[int, ...]:
    rank = len(a)
    sizes: list[int] = []
    auto = None
    for i, e in enumerate(shape):
        if isinstance(e, tuple):
            for j, d in enumerate(e):
                if d >= rank:
                    pj = f"{p}[{i}][{j}]"
                    raise MetadataError(expected(pj, f"an input dimension below the chunk rank {rank}", d), pj)
            sizes.append(math.prod(a[d] for d in e))
        elif e == -1:
            auto = i
            sizes.append(1)
        else:
            sizes.append(e)
    total = math.prod(a)
    known = math.prod(sizes)
    if auto is not None:
        if known == 0 or total % known:
            raise MetadataError(
                expected(f"{p}[{auto}]", f"a size making prod(shape) == {total} (chunk shape {list(a)})",
                         f"-1 with the other sizes multiplying to {known}"), f"{p}[{auto}]")
        sizes[auto] = total // known
    elif known != total:
        raise MetadataError(
            expected(p, f"sizes multiplying to {total} (chunk shape {list(a)})", f"{list(shape)} -> {sizes}"), p)
    for i, e in enumerate(shape):
        if isinstance(e, tuple) and e:
            if math.prod(sizes[:i]) != math.prod(a[: e[0]]) or math.prod(sizes[i + 1 :]) != math.prod(a[e[-1] + 1 :]):
                pi = f"{p}[{i}]"
                raise MetadataError(
                    expected(pi, "input dimensions whose coordinates are the raveled index along output dimension "
                             f"{i} (prod(B_shape[:{i}]) == prod(A_shape[:{e[0]}]) and prod(B_shape[{i + 1}:]) == "
                             f"prod(A_shape[{e[-1] + 1}:])), chunk shape {list(a)}", f"{list(e)} with B_shape {sizes}"),
                    pi)
    return tuple(sizes)


@lru_cache(maxsize=256)
def runs(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
    """The shortest consecutive runs of ``A`` and ``B`` dimensions with equal products
    (``prod(a) == prod(b)``, sizes >= 1); size-1 dimensions join a neighbouring run."""
    out = []
    i = j = 0
    na, nb = len(a), len(b)
    while i < na or j < nb:
        ga: list[int] = []
        gb: list[int] = []
        pa = pb = 1
        while not (pa == pb and (pa > 1 or (i >= na and j >= nb))):
            if (pa <= pb and i < na) or j >= nb:
                pa *= a[i]
                ga.append(i)
                i += 1
            else:
                pb *= b[j]
                gb.append(j)
                j += 1
        while i < na and a[i] == 1:
            ga.append(i)
            i += 1
        while j < nb and b[j] == 1:
            gb.append(j)
            j += 1
        out.append((tuple(ga), tuple(gb)))
    return tuple(out)


def _full(s: Any, n: int) -> bool:
    return isinstance(s, slice) and s.indices(n) == (0, n, 1)


def _compact(x: np.ndarray) -> Any:
    """A slice when ``x`` is an increasing arithmetic progression, else ``x``."""
    first = int(x[0])
    if x.size == 1:
        return slice(first, first + 1, 1)
    step = int(x[1]) - first
    if step > 0 and bool((np.diff(x) == step).all()):
        return slice(first, int(x[-1]) + 1, step)
    return x


def _factor(idx: np.ndarray, radices: tuple[int, ...]) -> list[Any] | None:
    """Selections ``x_0 .. x_{k-1}`` on dimensions of sizes ``radices`` whose orthogonal
    product, raveled in C order, is ``idx`` (flat indices); None when there are none."""
    n = idx.size
    k = len(radices)
    if k == 0:
        return [] if n == 1 else None
    if n == 0:
        return [slice(0, 0, 1)] + [slice(0, r, 1) for r in radices[1:]]
    if k == 1:
        return [_compact(idx)]
    cur = list(np.unravel_index(idx, radices))
    parts: list[Any] = [None] * k
    for d in range(k - 1, 0, -1):
        size = cur[0].size
        changed = np.zeros(size, dtype=bool)
        for c in cur[:d]:
            changed |= c != c[0]
        m = int(np.argmax(changed)) if changed.any() else size
        if size % m:
            return None
        inner = cur[d].reshape(-1, m)
        if not bool((inner == inner[0]).all()):
            return None
        for c in cur[:d]:
            blocks = c.reshape(-1, m)
            if not bool((blocks == blocks[:, :1]).all()):
                return None
        parts[d] = _compact(inner[0])
        cur = [c[::m] for c in cur[:d]]
    parts[0] = _compact(cur[0])
    return parts


def map_selection(selection: Selection, a: tuple[int, ...], b: tuple[int, ...]) -> Selection | None:
    """``selection`` (per ``A`` dimension: int, slice with a positive step, int64 index
    array; orthogonal) as a selection on ``B`` picking the same elements in the same C
    order, or None when no orthogonal selection on ``B`` does (see the module docstring)."""
    out: list[Any] = [None] * len(b)
    for ga, gb in runs(a, b):
        sa = [selection[d] for d in ga]
        if len(ga) == 1 and len(gb) == 1:
            out[gb[0]] = sa[0]
            continue
        if all(_is_int(s) for s in sa):
            flat = int(np.ravel_multi_index(tuple(int(s) for s in sa), tuple(a[d] for d in ga))) if ga else 0
            for d, c in zip(gb, np.unravel_index(flat, tuple(b[d] for d in gb)) if gb else ()):
                out[d] = int(c)
            continue
        if all(_full(s, a[d]) for s, d in zip(sa, ga)):
            for d in gb:
                out[d] = slice(0, b[d], 1)
            continue
        dims = tuple(a[d] for d in ga)
        grids = np.ix_(*(selection_indices(s, n) for s, n in zip(sa, dims)))
        idx = np.ravel_multi_index(grids, dims).reshape(-1)
        # size-1 B dimensions take their one element; the others share the flat indices
        # (so a merge, one B dimension of size > 1, always maps -- repeated indices too;
        # a run of size-1 dimensions only: the first one takes them all, e.g. [0, 0])
        wide = [d for d in gb if b[d] > 1] or list(gb[:1])
        parts = _factor(idx, tuple(b[d] for d in wide))
        if parts is None:
            return None
        for d in gb:
            out[d] = slice(0, 1, 1)
        for d, s in zip(wide, parts):
            out[d] = s
    return tuple(out)


def _view(x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray | None:
    """``x`` reshaped to ``shape`` as a view of the same memory, or None (a copy would be needed)."""
    try:
        return np.reshape(x, shape, copy=False)
    except ValueError:
        return None


@dataclass(frozen=True)
class ReshapeCodec(ArrayArrayCodec):
    """``shape`` as configured (sizes, ``-1``, tuples of input dimensions)."""

    shape: tuple[ShapeEntry, ...]

    name: ClassVar[str] = "reshape"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _parse_shape(self.shape, "reshape.configuration.shape"))

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("shape",))
        p = f"{path}.configuration.shape"
        if "shape" not in cfg:
            raise MetadataError(expected(p, "an array of sizes, -1 or arrays of input dimensions", MISSING), p)
        return cls(shape=_parse_shape(cfg["shape"], p))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name,
                "configuration": {"shape": [list(e) if isinstance(e, tuple) else e for e in self.shape]}}

    def encoded_shape(self, a_shape: tuple[int, ...]) -> tuple[int, ...]:
        return output_shape(self.shape, a_shape)

    def validate(self, spec: ArraySpec, path: str) -> None:
        output_shape(self.shape, spec.shape, f"{path}.configuration.shape")

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        from dataclasses import replace

        return replace(spec, shape=self.encoded_shape(spec.shape))

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk.reshape(self.encoded_shape(spec.shape))

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk.reshape(spec.shape)

    supports_encoded_view: ClassVar[bool] = True

    def encoded_view(self, out: np.ndarray) -> np.ndarray | None:
        """``out`` (decoded shape) as a view of the encoded shape; None when ``out`` is
        strided so that no view exists (the pipeline then decodes and copies)."""
        return _view(out, self.encoded_shape(out.shape))

    def encode_selection(self, selection: Selection, spec: ArraySpec) -> Selection | None:
        return map_selection(selection, spec.shape, self.encoded_shape(spec.shape))

    def encode_coords(self, coords: np.ndarray, spec: ArraySpec) -> np.ndarray:
        flat = np.ravel_multi_index(tuple(coords), spec.shape)
        b = self.encoded_shape(spec.shape)
        return np.array(np.unravel_index(flat, b), dtype=np.int64).reshape(len(b), -1)

    def encoded_piece(self, piece: np.ndarray, selection: Selection, encoded: Selection,
                      spec: ArraySpec, view: bool) -> np.ndarray | None:
        shape = selection_shape(encoded, self.encoded_shape(spec.shape))
        return _view(piece, shape) if view else piece.reshape(shape)
