"""Both chunk grids offer one geometry API (zarrcy.chunk_grid.ChunkGridGeometry), and an
Array takes its grid arithmetic from it (issue 15, item 5).

Oracle: a rectilinear grid whose axes all use the integer form (``chunk_shapes: [c, ...]``)
tiles the array exactly as ``RegularChunkGrid(c)``; every geometry method must agree,
and both must agree with a plain-Python enumeration of the chunks.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import zarrcy
from zarrcy.chunk_grid import ChunkGridGeometry, RegularChunkGrid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid

CASES = [((10,), (3,)), ((12, 7), (4, 7)), ((0, 5), (2, 2)), ((5, 9, 4), (5, 2, 3)), ((), ())]
GEOMETRY = [name for name in dir(ChunkGridGeometry) if not name.startswith("_")]


@pytest.mark.parametrize("cls", [RegularChunkGrid, RectilinearChunkGrid])
def test_both_grids_offer_the_whole_geometry_api(cls) -> None:
    assert GEOMETRY, "the protocol lists no methods"
    missing = [name for name in GEOMETRY if not hasattr(cls, name)]
    assert not missing, f"{cls.__name__} lacks {missing}"


@pytest.mark.parametrize("shape,chunks", CASES)
def test_regular_and_integer_form_rectilinear_agree(shape, chunks) -> None:
    reg = RegularChunkGrid(chunks)
    rect = RectilinearChunkGrid(tuple(chunks))
    # the oracle: ceil division and an explicit walk over every chunk
    want_grid = tuple(-(-s // c) for s, c in zip(shape, chunks))
    for g in (reg, rect):
        assert g.grid_shape(shape) == want_grid
        assert g.nchunks(shape) == math.prod(want_grid)
        assert g.max_chunk_shape(shape) == tuple(chunks)
        assert list(g.chunk_shapes_in(shape)) == [tuple(chunks)]
        coords = list(g.all_chunk_coords(shape))
        assert coords == list(itertools.product(*(range(n) for n in want_grid)))
        assert g.all_chunk_coords_array(shape).tolist() == ([list(c) for c in coords] if shape else [[]])
        for a, (s, c) in enumerate(zip(shape, chunks)):
            sizes = g.axis_chunk_sizes(a, s)
            assert sum(sizes) == s and all(0 < x <= c for x in sizes)
            assert g.axis_edges(a, s) == (c,)
            for i in range(want_grid[a]):
                assert g.axis_extent(a, i) == (i * c, c)
        for cc in coords:
            origin = tuple(i * c for i, c in zip(cc, chunks))
            assert g.chunk_origin(cc) == origin
            assert g.chunk_shape_at(cc) == tuple(chunks)
            assert g.chunk_extent(cc) == (origin, tuple(chunks))
            assert g.chunk_region(shape, cc) == tuple(
                slice(o, min(o + c, s)) for o, c, s in zip(origin, chunks, shape))


@pytest.mark.parametrize("rectilinear", [False, True], ids=["regular", "rectilinear"])
def test_array_grid_shape_is_the_grids(rectilinear) -> None:
    chunks = [[2, 3, 5], [4, 4]] if rectilinear else (3, 4)
    a = zarrcy.create_array(zarrcy.storage.MemoryStore(), shape=(10, 8), dtype="i2", chunks=chunks)
    grid = a.metadata.chunk_grid
    assert a.grid_shape == grid.grid_shape((10, 8)) == a.cdata_shape
    assert a.nchunks == grid.nchunks((10, 8))
    assert a.write_chunk_sizes == tuple(grid.axis_chunk_sizes(k, s) for k, s in enumerate((10, 8)))
    a[...] = np.arange(80, dtype="i2").reshape(10, 8)  # every chunk's valid region, edges included
    assert (a[...] == np.arange(80).reshape(10, 8)).all()
