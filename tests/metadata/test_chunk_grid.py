"""Regular chunk grid (v3-chunk-grid-regular.rst)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.chunk_grid import RegularChunkGrid, parse_chunk_grid
from zarrcy.errors import MetadataError, UnknownExtensionError


def test_spec_example() -> None:
    g = RegularChunkGrid((5, 20, 400))
    assert g.grid_shape((10, 200, 3000)) == (2, 10, 8)
    # element (7, 150, 900) lies in chunk (1, 7, 2) at (2, 10, 100)
    coords = (7, 150, 900)
    chunk = tuple(c // s for c, s in zip(coords, g.chunk_shape))
    assert chunk == (1, 7, 2)
    origin = g.chunk_origin(chunk)
    assert tuple(c - o for c, o in zip(coords, origin)) == (2, 10, 100)


def test_dict_round_trip() -> None:
    d = {"name": "regular", "configuration": {"chunk_shape": [2, 5]}}
    g = RegularChunkGrid.from_dict(d)
    assert g == RegularChunkGrid((2, 5)) and g.chunk_shape == (2, 5)
    assert g.to_dict() == d
    assert parse_chunk_grid(g.to_dict()) == g
    assert parse_chunk_grid({**d, "must_understand": True}) == g
    assert g.ndim == 2


def test_edge_chunks_overhang_and_clip() -> None:
    g = RegularChunkGrid((16, 16))
    assert g.grid_shape((30, 30)) == (2, 2)
    assert g.chunk_region((30, 30), (0, 1)) == (slice(0, 16), slice(16, 30))
    assert g.chunk_region((30, 30), (1, 1)) == (slice(16, 30), slice(16, 30))
    with pytest.raises(IndexError):
        g.chunk_region((30, 30), (2, 0))
    with pytest.raises(IndexError):
        g.chunk_region((30, 30), (-1, 0))
    with pytest.raises(ValueError):
        g.chunk_region((30,), (0, 0))


def test_zero_dim_and_empty() -> None:
    g = RegularChunkGrid(())
    assert g.grid_shape(()) == ()
    assert list(g.all_chunk_coords(())) == [()]
    assert g.chunk_region((), ()) == ()
    assert g.all_chunk_coords_array(()).shape == (1, 0)
    g = RegularChunkGrid((4, 4))
    assert g.grid_shape((0, 10)) == (0, 3)
    assert list(g.all_chunk_coords((0, 10))) == []
    assert g.nchunks((0, 10)) == 0


@settings(max_examples=100, deadline=None)
@given(
    dims=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 12)), min_size=0, max_size=3),
)
def test_against_slow_reference(dims: list[tuple[int, int]]) -> None:
    shape = tuple(s for s, _ in dims)
    chunks = tuple(c for _, c in dims)
    g = RegularChunkGrid(chunks)
    gs = g.grid_shape(shape)
    assert gs == tuple(math.ceil(s / c) for s, c in dims)
    coords = list(g.all_chunk_coords(shape))
    assert coords == list(itertools.product(*(range(x) for x in gs)))
    arr = g.all_chunk_coords_array(shape)
    assert [tuple(r) for r in arr.tolist()] == coords or (not coords and arr.shape[0] == 0)
    # every element belongs to exactly one chunk region
    cover = np.zeros(shape, dtype=np.int32)
    for cc in coords:
        cover[g.chunk_region(shape, cc)] += 1
    assert (cover == 1).all()


def test_large_grid_is_lazy() -> None:
    g = RegularChunkGrid((1, 1, 1))
    it = g.all_chunk_coords((10**6, 10**6, 10**6))
    assert next(it) == (0, 0, 0)
    assert g.nchunks((10**6, 10**6, 10**6)) == 10**18


@pytest.mark.parametrize(
    "value,path,err",
    [
        ("regular", "chunk_grid.configuration.chunk_shape", MetadataError),
        # the short-hand name of a grid that needs a configuration (v3-core.rst "Short-hand names")
        ("rectilinear", "chunk_grid.configuration.kind", MetadataError),
        ("rectangular", "chunk_grid", UnknownExtensionError),
        ({"name": "rectilinear"}, "chunk_grid.configuration.kind", MetadataError),
        ({"name": "rectangular"}, "chunk_grid.name", UnknownExtensionError),
        ({"name": "regular", "configuration": {"chunk_shape": [2]}, "must_understand": False}, "chunk_grid.must_understand", MetadataError),
        ({"name": "regular", "configuration": {"chunk_shape": [0]}}, r"chunk_grid.configuration.chunk_shape\[0\]", MetadataError),
        ({"name": "regular", "configuration": {"chunk_shape": 4}}, "chunk_grid.configuration.chunk_shape", MetadataError),
        ({"name": "regular", "configuration": {"chunk_shape": [2**63]}}, r"chunk_grid.configuration.chunk_shape\[0\]", MetadataError),
        ({"name": 1}, "chunk_grid.name", MetadataError),
        ({"configuration": {}}, "chunk_grid.name", MetadataError),
        (None, "chunk_grid", MetadataError),
    ],
)
def test_bad_chunk_grid(value: object, path: str, err: type) -> None:
    with pytest.raises(err, match=rf"^{path}: "):
        parse_chunk_grid(value)


def test_constructor_validates() -> None:
    with pytest.raises(MetadataError):
        RegularChunkGrid((0,))
    with pytest.raises(MetadataError):
        RegularChunkGrid((True,))  # type: ignore[arg-type]
    assert RegularChunkGrid([np.int64(3)]).chunk_shape == (3,)  # type: ignore[arg-type]
