"""RectilinearChunkGrid: the spec's example, run-length forms, geometry, bad input."""

from __future__ import annotations

import tracemalloc

import pytest

from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid, parse_rectilinear
from zarrcy.errors import MetadataError


def grid(shapes):
    return parse_rectilinear({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": shapes}})


def test_spec_example():
    # ext-chunk-grid-rectilinear.md "Example": shape [6]*5
    g = grid([4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]])
    shape = (6, 6, 6, 6, 6)
    g.validate(shape)
    assert g.grid_shape(shape) == (2, 3, 2, 4, 2)  # [4, 4,] overflow chunk past 6 is not counted
    assert [g.axis_chunk_sizes(a, 6) for a in range(5)] == [(4, 2), (1, 2, 3), (4, 2), (1, 1, 1, 3), (4, 2)]
    assert g.to_dict()["configuration"]["chunk_shapes"] == [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]
    assert RectilinearChunkGrid.from_dict(g.to_dict()) == g


def test_indexing_example():
    # "Indexing": edges [[16, 10], [24, 14]]; index (20, 15) -> chunk (1, 0), in-chunk (4, 15)
    g = grid([[16, 10], [24, 14]])
    assert g.chunk_origin((1, 0)) == (16, 0)
    assert g.chunk_shape_at((1, 0)) == (10, 24)
    assert g.chunk_region((26, 38), (1, 1)) == (slice(16, 26), slice(24, 38))
    assert g.grid_shape((26, 38)) == (2, 2)
    assert list(g.all_chunk_coords((26, 38))) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    with pytest.raises(IndexError):
        g.chunk_region((26, 38), (2, 0))


def test_huge_repeat_is_not_expanded():
    tracemalloc.start()
    try:
        g = grid([[[7, 1 << 40], 3]])
        g.validate((7 << 40,))
        assert g.grid_shape((7 << 40,)) == (1 << 40,)
        assert g.grid_shape(((7 << 40) + 2,)) == ((1 << 40) + 1,)
        assert g.chunk_origin(((1 << 40) - 1,)) == ((7 << 40) - 7,)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize(
    "shapes, shape, path",
    [
        ([[3, 3]], (7,), r"chunk_shapes\[0\]: expected edge lengths summing to at least the shape 7, received 6"),
        ([[0, 3]], (3,), r"chunk_shapes\[0\]\[0\]: expected an integer"),
        ([[-2]], (3,), r"chunk_shapes\[0\]\[0\]: expected an integer"),
        ([[[2, 0]]], (3,), r"chunk_shapes\[0\]\[0\]\[1\]: expected an integer"),
        ([[[2, -1]]], (3,), r"chunk_shapes\[0\]\[0\]\[1\]"),
        ([[[2, 3, 4]]], (3,), r"chunk_shapes\[0\]\[0\]: expected a run-length pair"),
        ([[]], (3,), r"chunk_shapes\[0\]: expected at least one edge length"),
        ([0], (3,), r"chunk_shapes\[0\]: expected an integer"),
        ([True], (3,), r"chunk_shapes\[0\]"),
        ([[2.0]], (3,), r"chunk_shapes\[0\]\[0\]"),
        (["4"], (3,), r"chunk_shapes\[0\]"),
        ([4, 4], (3,), r"chunk_shapes: expected 1 axes"),
    ],
)
def test_bad_chunk_shapes(shapes, shape, path):
    with pytest.raises(MetadataError, match=path):
        g = grid(shapes)
        g.validate(shape)


@pytest.mark.parametrize(
    "doc, path",
    [
        ({"name": "rectilinear"}, r"configuration\.kind: expected a value \(the key is required\)"),
        ({"name": "rectilinear", "configuration": {"kind": "external", "chunk_shapes": [1]}}, r"configuration.kind"),
        ({"name": "rectilinear", "configuration": {"chunk_shapes": [1]}}, r"configuration.kind"),
        ({"name": "rectilinear", "configuration": {"kind": "inline"}}, r"configuration.chunk_shapes"),
        ({"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [1], "x": 1}}, r"configuration.x"),
        ([1], r"chunk_grid: expected a name or an object"),
    ],
)
def test_bad_documents(doc, path):
    with pytest.raises(MetadataError, match=path):
        parse_rectilinear(doc)


def test_edges_past_int64_are_unreachable_and_dropped():
    g = grid([[[1 << 62, 3], 5]])
    origin, first, edge = g.tables(0)
    assert origin.tolist() == [0]  # the run ending past 2**63 - 1 keeps only its start
    assert g.grid_shape(((1 << 63) - 1,)) == (2,)
