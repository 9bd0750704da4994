"""Arrays on rectilinear chunk grids (ext-chunk-grid-rectilinear.md).

Oracles: numpy on the same data (every selection kind, reads and writes), a pure-Python
expansion of the written ``chunk_shapes`` (block boundaries, chunk sizes) and
zarr-python 3.4 with ``array.rectilinear_chunks`` on (interop both ways).
"""

from __future__ import annotations

import itertools
import json
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.errors import MetadataError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}


# -- the oracle: expand the JSON form of one axis (independent of zarrcy's run tables) ----
def expand(form, n: int) -> list[int]:
    """Full edge lengths of the chunks holding elements of an axis of length ``n``."""
    if isinstance(form, int):
        return [form] * max(1, -(-n // form)) if n else []
    edges: list[int] = []
    for item in form:
        if isinstance(item, list):
            edges.extend([item[0]] * min(item[1], n + 1))  # enough to cover n
        else:
            edges.append(item)
    out, total = [], 0
    for e in edges:
        if total >= n:
            break
        out.append(e)
        total += e
    return out


def clipped(form, n: int) -> tuple[int, ...]:
    out, start = [], 0
    for e in expand(form, n):
        out.append(min(e, n - start))
        start += e
    return tuple(out)


def bounds(form, n: int) -> list[int]:
    return [0, *itertools.accumulate(clipped(form, n))]


def _rle(edges: list[int], mix: bool) -> list:
    """Run-length form of ``edges``; with ``mix``, runs of 1 stay plain integers."""
    out: list = []
    for e, g in itertools.groupby(edges):
        k = len(list(g))
        out.append(e if (k == 1 and mix) else [e, k])
    return out


@st.composite
def axis_form(draw, n: int, multiple: int = 1):
    """One axis of ``chunk_shapes`` covering ``n``: integer, explicit, run-length or mixed;
    every edge a multiple of ``multiple`` (sharded grids)."""
    kind = draw(st.sampled_from(["int", "explicit", "rle", "mixed"]))
    if kind == "int":
        return multiple * draw(st.integers(1, max(1, -(-n // multiple) + 1)))
    edges: list[int] = []
    while sum(edges) < n:
        edges.append(multiple * draw(st.sampled_from([1, 1, 2, 3, 5])))
    if draw(st.booleans()):  # overflow chunks past the shape are allowed
        edges.extend(multiple * draw(st.integers(1, 3)) for _ in range(draw(st.integers(1, 2))))
    if kind == "explicit":
        return edges
    return _rle(edges, mix=kind == "mixed")


@st.composite
def rect_array(draw, sharded: bool = False):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(ndim))
    inner = tuple(draw(st.integers(1, 3)) for _ in range(ndim)) if sharded else (1,) * ndim
    forms = [draw(axis_form(n, k)) for n, k in zip(shape, inner)]
    return shape, forms, (inner if sharded else None)


def _doc(shape, forms, inner=None, dtype="int32", fill=-1) -> dict:
    codecs: list = [BYTES]
    if inner is not None:
        codecs = [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": list(inner), "codecs": [BYTES], "index_codecs": [BYTES, {"name": "crc32c"}],
            "index_location": "end"}}]
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": forms}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill, "codecs": codecs,
    }


def _make(shape, forms, inner=None):
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc(shape, forms, inner))
    ref = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) * 3 - 7
    a[...] = ref
    return a, ref


@st.composite
def basic_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(-n - 2, n + 2)), draw(st.none() | st.integers(-n - 2, n + 2)),
                             draw(st.none() | st.integers(1, 5))))
        else:
            sel.append(slice(None))
    if draw(st.booleans()):
        sel.insert(draw(st.integers(0, len(sel))), None)
    return tuple(sel)


@st.composite
def orthogonal_selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "ints", "mask"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            sel.append(slice(draw(st.none() | st.integers(0, n)), draw(st.none() | st.integers(0, n)), draw(st.integers(1, 3))))
        elif kind == "ints":
            sel.append(np.array(draw(st.lists(st.integers(-n, n - 1), max_size=6)), dtype=np.int64))
        else:
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
    return tuple(sel)


def _np_index(sel, shape):
    """numpy's ``np.ix_`` form of an orthogonal selection (ints keep a length-1 axis)."""
    parts = []
    for s, n in zip(sel, shape):
        if isinstance(s, np.ndarray):
            parts.append(np.flatnonzero(s) if s.dtype == bool else np.where(s < 0, s + n, s))
        elif isinstance(s, slice):
            parts.append(np.arange(*s.indices(n)))
        else:
            parts.append(np.array([s % n]))
    return np.ix_(*parts), tuple(k for k, s in enumerate(sel) if not (isinstance(s, (slice, np.ndarray))))


def _np_ortho(ref, sel):
    ix, dropped = _np_index(sel, ref.shape)
    out = ref[ix]
    return out.reshape(tuple(d for k, d in enumerate(out.shape) if k not in dropped))


# -- properties: every selection kind against numpy -----------------------------------------
@SETTINGS
@given(st.data())
def test_basic_read_write(data):
    sharded = data.draw(st.booleans())
    shape, forms, inner = data.draw(rect_array(sharded))
    a, ref = _make(shape, forms, inner)
    sel = data.draw(basic_selection(shape))
    np.testing.assert_array_equal(a[sel], ref[sel])
    value = np.arange(ref[sel].size, dtype=np.int32).reshape(ref[sel].shape) + 1000
    ref[sel] = value
    a[sel] = value
    np.testing.assert_array_equal(a[...], ref)


@SETTINGS
@given(st.data())
def test_oindex_read_write(data):
    sharded = data.draw(st.booleans())
    shape, forms, inner = data.draw(rect_array(sharded))
    a, ref = _make(shape, forms, inner)
    sel = data.draw(orthogonal_selection(shape))
    np.testing.assert_array_equal(a.oindex[sel], _np_ortho(ref, sel))
    # the write uses a selection as drawn (negative, unsorted, duplicate indices, masks);
    # each cell's value depends only on its coordinates, so duplicates agree
    wsel = data.draw(orthogonal_selection(shape))
    ix, _ = _np_index(wsel, shape)
    full = np.full(np.broadcast_shapes(*(p.shape for p in ix)), 500, dtype=np.int32)
    for k, p in enumerate(ix):
        full += (p * 10**k).astype(np.int32)
    ref[ix] = full
    a.oindex[wsel] = full.reshape(_np_ortho(ref, wsel).shape)
    np.testing.assert_array_equal(a[...], ref)


@SETTINGS
@given(st.data())
def test_vindex_read_write(data):
    sharded = data.draw(st.booleans())
    shape, forms, inner = data.draw(rect_array(sharded))
    a, ref = _make(shape, forms, inner)
    npts = data.draw(st.integers(0, 10))
    idx = tuple(np.array(data.draw(st.lists(st.integers(-n, n - 1), min_size=npts, max_size=npts)), dtype=np.int64)
                for n in shape)
    np.testing.assert_array_equal(a.vindex[idx], ref[idx])
    if npts:
        flat = np.ravel_multi_index(tuple(np.where(i < 0, i + n, i) for i, n in zip(idx, shape)), shape)
        _, first = np.unique(flat, return_index=True)
        uidx = tuple(i[first] for i in idx)
        new = np.arange(len(first), dtype=np.int32) + 9000
        ref[uidx] = new
        a.vindex[uidx] = new
        np.testing.assert_array_equal(a[...], ref)
    mask = (ref % 4) == 1
    np.testing.assert_array_equal(a.vindex[mask], ref[mask])


@SETTINGS
@given(st.data())
def test_blocks_and_chunk_sizes(data):
    shape, forms, _ = data.draw(rect_array())
    a, ref = _make(shape, forms)
    b = [bounds(f, n) for f, n in zip(forms, shape)]
    assert a.write_chunk_sizes == a.read_chunk_sizes == tuple(clipped(f, n) for f, n in zip(forms, shape))
    assert a.cdata_shape == tuple(len(x) - 1 for x in b)
    assert a.nchunks == int(np.prod(a.cdata_shape))
    sel = []
    region = []
    for bb in b:
        k = len(bb) - 1
        if data.draw(st.booleans()):
            i = data.draw(st.integers(-k, k - 1))
            sel.append(i)
            i %= k
            region.append(slice(bb[i], bb[i + 1]))
        else:
            lo = data.draw(st.integers(0, k))
            hi = data.draw(st.integers(lo, k + 1))
            sel.append(slice(lo, hi))
            region.append(slice(bb[min(lo, k)], bb[min(hi, k)]))
    sel, region = tuple(sel), tuple(region)
    np.testing.assert_array_equal(a.blocks[sel], ref[region])
    value = np.full(ref[region].shape, 77, dtype=np.int32)
    a.blocks[sel] = value
    ref[region] = value
    np.testing.assert_array_equal(a[...], ref)


def test_point_reads_each_chunk():
    forms = [[[2, 3], 5, 1], 4]
    a, ref = _make((12, 10), forms)
    for i, j in itertools.product(range(12), range(10)):
        assert a[i, j] == ref[i, j]
    assert a[-1, -1] == ref[-1, -1]
    with pytest.raises(IndexError):
        a[12, 0]


# -- the API ------------------------------------------------------------------------------------
def test_create_array_nested_chunks_like_zarr_python():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(60, 100), dtype="int16", chunks=[[10, 20, 30], [50, 50]])
    assert a.metadata.to_json()["chunk_grid"] == {
        "name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [[10, 20, 30], [[50, 2]]]}}
    assert a.write_chunk_sizes == ((10, 20, 30), (50, 50))
    assert a.shards is None
    with pytest.raises(NotImplementedError, match="read_chunk_sizes"):
        a.chunks
    assert "<variable>" in a.info


def test_chunk_sizes_regular_and_sharded():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(100, 80), dtype="i1", chunks=(30, 40))
    assert a.read_chunk_sizes == a.write_chunk_sizes == ((30, 30, 30, 10), (40, 40))
    s = zarrcy.create_array(zarrcy.MemoryStore(), shape=(40,), dtype="i1", chunks=(10,), shards=(20,))
    assert s.read_chunk_sizes == ((10, 10, 10, 10),)
    assert s.write_chunk_sizes == ((20, 20),)


def test_rectilinear_shards():
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(60, 100), dtype="int32", chunks=(10, 25),
                            shards=[[20, 40], [50, 50]])
    assert a.chunks == (10, 25)
    assert a.write_chunk_sizes == ((20, 40), (50, 50))
    assert a.read_chunk_sizes == ((10,) * 6, (25,) * 4)
    with pytest.raises(NotImplementedError, match="write_chunk_sizes"):
        a.shards
    ref = np.arange(6000, dtype=np.int32).reshape(60, 100)
    a[...] = ref
    np.testing.assert_array_equal(a[5:59:4, ::3], ref[5:59:4, ::3])
    for i, j in itertools.product(range(0, 60, 7), range(0, 100, 9)):
        assert a[i, j] == ref[i, j]
    a[59, 99] = -5
    assert a[59, 99] == -5 and a[-1, -1] == -5
    with pytest.raises(ValueError, match="rectilinear"):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(60,), dtype="i4", chunks=[[30, 30]], shards=(60,))


def test_inner_chunks_must_divide_every_shard_edge():
    with pytest.raises(MetadataError, match=r"^metadata\.codecs\[0\]\.configuration\.chunk_shape"):
        zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc((30,), [[20, 10]], inner=(4,)))
    # the edge that fails need not be the largest, nor the first
    with pytest.raises(MetadataError, match=r"^metadata\.codecs\[0\]\.configuration\.chunk_shape\[1\]"):
        zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc((8, 30), [4, [[8, 2], 6, 8]], inner=(4, 4)))
    # behind an array->array codec every edge's chain is resolved
    doc = _doc((8, 30), [4, [[8, 2], 6, 8]], inner=(4, 4))
    doc["codecs"].insert(0, {"name": "transpose", "configuration": {"order": [1, 0]}})
    doc["codecs"][1]["configuration"]["chunk_shape"] = [4, 4]
    with pytest.raises(MetadataError, match=r"^metadata\.codecs\[1\]\.configuration\.chunk_shape\[0\]"):
        zarrcy.create_array(zarrcy.MemoryStore(), metadata=doc)
    doc["codecs"][1]["configuration"]["chunk_shape"] = [2, 4]
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=doc)
    ref = np.arange(240, dtype=np.int32).reshape(8, 30)
    a[...] = ref
    np.testing.assert_array_equal(a[1:8:3, 2:29:5], ref[1:8:3, 2:29:5])


def test_resize_and_append_semantics():
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, shape=(60, 10), dtype="int32", chunks=[[10, 10, 10, 30], 5], fill_value=0)
    ref = np.arange(600, dtype=np.int32).reshape(60, 10)
    a[...] = ref
    a.resize(100, 10)  # past the edges: one chunk covering the new extent (a plain edge)
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [[[10, 3], 30, 40], 5]
    assert a.write_chunk_sizes == ((10, 10, 10, 30, 40), (5, 5))
    a.resize(25, 10)  # shrinking keeps the edges
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [[[10, 3], 30, 40], 5]
    assert a.write_chunk_sizes == ((10, 10, 5), (5, 5))
    assert a.nchunks_initialized == 6
    np.testing.assert_array_equal(a[...], ref[:25])
    a.resize(28, 10)  # within the edges: nothing appended
    assert a.write_chunk_sizes == ((10, 10, 8), (5, 5))
    new = np.full((2, 10), 5, dtype=np.int32)
    assert a.append(new) == (30, 10)
    assert a.write_chunk_sizes == ((10, 10, 10), (5, 5))
    a.append(np.ones((3, 10), np.int32), axis=0)
    assert a.write_chunk_sizes == ((10, 10, 10, 3), (5, 5))
    a.append(np.ones((33, 4), np.int32), axis=1)  # the integer form grows regularly
    assert a.write_chunk_sizes == ((10, 10, 10, 3), (5, 5, 4))
    reopened = zarrcy.open_array(st_)
    assert reopened.write_chunk_sizes == a.write_chunk_sizes
    np.testing.assert_array_equal(reopened[...], a[...])


# -- bad input ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "shape, forms, path",
    [
        ((10, 7), [[4, 4], 3], r"chunk_grid\.configuration\.chunk_shapes\[0\]"),  # 8 < 10
        ((10,), [[[2, 4], 1]], r"chunk_grid\.configuration\.chunk_shapes\[0\]"),  # 9 < 10
        ((10,), [[5, 0, 5]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[1\]"),
        ((10,), [[5, -5, 10]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[1\]"),
        ((10,), [[[5, 0], 10]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[0\]\[1\]"),
        ((10,), [[[5, -2], 10]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[0\]\[1\]"),
        ((10,), [[[0, 3], 10]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[0\]\[0\]"),
        ((10,), [0], r"chunk_grid\.configuration\.chunk_shapes\[0\]"),
        ((10,), [[]], r"chunk_grid\.configuration\.chunk_shapes\[0\]"),
        ((10,), [[[5, 1, 1]]], r"chunk_grid\.configuration\.chunk_shapes\[0\]\[0\]"),
        ((10,), [[10], [10]], r"chunk_grid\.configuration\.chunk_shapes"),  # more axes than shape
        ((10, 10), [[10]], r"chunk_grid\.configuration\.chunk_shapes"),
    ],
)
def test_bad_grids(shape, forms, path):
    with pytest.raises(MetadataError, match=rf"^metadata\.{path}: expected"):
        zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc(shape, forms))
    doc = json.dumps(_doc(shape, forms)).encode()
    st_ = zarrcy.MemoryStore()
    st_.set("zarr.json", doc)
    with pytest.raises(MetadataError, match=rf"chunk_shapes"):
        zarrcy.open_array(st_)


def test_bad_nested_chunks_argument():
    with pytest.raises(MetadataError, match=r"chunk_shapes\[0\]\[1\]"):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(10,), dtype="i4", chunks=[[5, 0, 5]])
    with pytest.raises(MetadataError, match=r"chunk_shapes\[0\]"):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(10,), dtype="i4", chunks=[[5, 4]])


def test_huge_repeat_counts_open_without_allocation():
    n = 2**40
    doc = _doc((n, 3), [[[1, n]], [[2, 2**62]]], dtype="uint8", fill=0)
    st_ = zarrcy.MemoryStore()
    st_.set("zarr.json", json.dumps(doc).encode())
    tracemalloc.start()
    try:
        a = zarrcy.open_array(st_)
        assert a.cdata_shape == (n, 2)
        assert a.nchunks == 2 * n
        a[n - 1, 2] = 9
        assert a[n - 1, 2] == 9
        np.testing.assert_array_equal(a[n - 3:, :], [[0, 0, 0], [0, 0, 0], [0, 0, 9]])
        assert a.vindex[[n - 1, 0], [2, 2]].tolist() == [9, 0]
        a.resize(n + 5, 3)  # grows past the edges: one appended chunk, still a few bytes
        assert a.cdata_shape == (n + 1, 2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == [[[1, n], 5], [[2, 2**62]]]


def test_max_chunk_bytes_uses_largest_edge():
    old = zarrcy.config()["max_chunk_bytes"]
    zarrcy.config(max_chunk_bytes=1000)
    try:
        with pytest.raises(MetadataError, match=r"chunk_grid\.configuration\.chunk_shapes"):
            zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc((400,), [[10, 300, 90]], dtype="int32"))
        zarrcy.create_array(zarrcy.MemoryStore(), metadata=_doc((400,), [[[10, 31], 90]], dtype="uint8", fill=0))
    finally:
        zarrcy.config(max_chunk_bytes=old)


def test_regular_append_on_huge_grid_erases_only_the_gained_slab():
    # regression: resize listed every chunk coordinate of the empty slabs of the gained
    # region (itertools.product copies its ranges: MemoryError for a 2**40-chunk axis)
    n = 2**40
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(n, 3), dtype="uint8", chunks=(1, 2), fill_value=0)
    a.resize(n + 1, 3)
    assert a.cdata_shape == (n + 1, 2)


# -- interop with zarr-python 3.4 (array.rectilinear_chunks on) -----------------------------------
zarr = pytest.importorskip("zarr", reason="zarr-python is needed for the interop tests")

INTEROP_GRIDS = [
    pytest.param((60, 100), [[10, 20, 30], [[50, 2]]], id="explicit+rle"),
    pytest.param((40, 30), [[10, 10, 10, 10], [15, 15]], id="regular-looking"),
    pytest.param((37, 11, 5), [[[4, 3], 13, [6, 2], 9], 4, [[1, 5]]], id="mixed-int-overflow"),
    pytest.param((9,), [[[2, 3], 1, 1, 50]], id="overflow-edge"),
]


@pytest.fixture
def rect_flag():
    with zarr.config.set({"array.rectilinear_chunks": True}):
        yield


def _ref(shape, dtype="float64"):
    rng = np.random.default_rng(sum(shape))
    return rng.normal(size=shape).astype(dtype)


def _zarr_sizes(za):
    return tuple(tuple(int(x) for x in axis) for axis in za.write_chunk_sizes)


@pytest.mark.parametrize("shape, forms", INTEROP_GRIDS)
def test_zarrcy_writes_zarr_python_reads(tmp_path, rect_flag, shape, forms):
    doc = _doc(shape, forms, dtype="float64", fill=0.0)
    doc["codecs"] = [BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}]
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), metadata=doc)
    ref = _ref(shape)
    a[...] = ref
    za = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    np.testing.assert_array_equal(za[...], ref)
    assert _zarr_sizes(za) == a.write_chunk_sizes == tuple(clipped(f, n) for f, n in zip(forms, shape))


@pytest.mark.parametrize("shape, forms", INTEROP_GRIDS)
def test_zarr_python_writes_zarrcy_reads(tmp_path, rect_flag, shape, forms):
    chunks = [list(clipped(f, n)) for f, n in zip(forms, shape)]  # its create_array wants sums == shape
    za = zarr.create_array(str(tmp_path / "z.zarr"), shape=shape, dtype="float64", chunks=chunks, fill_value=0.0)
    ref = _ref(shape)
    za[...] = ref
    a = zarrcy.open_array(str(tmp_path / "z.zarr"), mode="r")
    assert a.write_chunk_sizes == _zarr_sizes(za)
    np.testing.assert_array_equal(a[...], ref)
    sel = tuple(slice(1, None, 3) for _ in shape)
    np.testing.assert_array_equal(a[sel], ref[sel])


def test_resize_append_interop_both_ways(tmp_path, rect_flag):
    ref = _ref((60, 10))
    # zarrcy resizes and appends; zarr-python reads
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), shape=(60, 10), dtype="float64",
                            chunks=[[10, 10, 10, 30], [5, 5]], fill_value=0.0)
    a[...] = ref
    a.resize(25, 10)
    a.append(ref[25:40])
    a.append(ref[:30])  # past the edges (60): one new chunk of 10 rows covering 60..70
    expected = np.concatenate([ref[:40], ref[:30]])
    za = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    np.testing.assert_array_equal(za[...], expected)
    assert _zarr_sizes(za) == a.write_chunk_sizes
    # zarr-python resizes and appends; zarrcy reads
    zb = zarr.create_array(str(tmp_path / "b.zarr"), shape=(60, 10), dtype="float64",
                           chunks=[[10, 10, 10, 30], [5, 5]], fill_value=0.0)
    zb[...] = ref
    zb.resize((25, 10))
    zb.append(ref[25:40])
    zb.append(ref[:30])
    b = zarrcy.open_array(str(tmp_path / "b.zarr"), mode="r")
    np.testing.assert_array_equal(b[...], expected)
    assert b.write_chunk_sizes == _zarr_sizes(zb) == a.write_chunk_sizes
    # zarrcy keeps writing the array zarr-python grew; zarr-python reads the result
    b2 = zarrcy.open_array(str(tmp_path / "b.zarr"), mode="r+")
    b2.append(ref[:7])
    expected = np.concatenate([expected, ref[:7]])
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "b.zarr"), mode="r")[...], expected)


def test_sharded_interop_both_ways(tmp_path, rect_flag):
    ref = np.arange(6000, dtype=np.int32).reshape(60, 100)
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), shape=(60, 100), dtype="int32", chunks=(10, 25),
                            shards=[[20, 40], [50, 50]], fill_value=0)
    a[...] = ref
    a[3:57:5, 7:93:3] = -ref[3:57:5, 7:93:3]
    exp = ref.copy()
    exp[3:57:5, 7:93:3] = -ref[3:57:5, 7:93:3]
    za = zarr.open_array(str(tmp_path / "a.zarr"), mode="r")
    np.testing.assert_array_equal(za[...], exp)
    assert za.chunks == (10, 25)
    zb = zarr.create_array(str(tmp_path / "b.zarr"), shape=(60, 100), dtype="int32", chunks=(10, 25),
                           shards=[[20, 40], [50, 50]], fill_value=0)
    zb[...] = exp
    b = zarrcy.open_array(str(tmp_path / "b.zarr"), mode="r")
    assert b.write_chunk_sizes == ((20, 40), (50, 50))
    np.testing.assert_array_equal(b[...], exp)
    np.testing.assert_array_equal(b.oindex[[0, 59, 21], 3:99:7], exp[np.ix_([0, 59, 21], range(3, 99, 7))])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_grids_read_in_zarr_python(data):
    import tempfile

    sharded = data.draw(st.booleans())
    shape, forms, inner = data.draw(rect_array(sharded))
    with tempfile.TemporaryDirectory() as d, zarr.config.set({"array.rectilinear_chunks": True}):
        a = zarrcy.create_array(d, metadata=_doc(shape, forms, inner))
        ref = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape) - 5
        a[...] = ref
        za = zarr.open_array(d, mode="r")
        np.testing.assert_array_equal(za[...], ref)
        if not sharded:
            assert _zarr_sizes(za) == a.write_chunk_sizes


def test_check_decodes_every_rectilinear_chunk(tmp_path, capsys):
    # ``zarrcy check --data`` decodes stored chunks by key: each with its own shape
    from zarrcy.cli.check import check_store

    a = zarrcy.create_array(str(tmp_path / "c.zarr"), shape=(9, 5), dtype="int32", chunks=[[2, 3, 4], [[2, 2], 1]])
    a[...] = np.arange(45, dtype=np.int32).reshape(9, 5)
    assert check_store(str(tmp_path / "c.zarr"), data=True, as_json=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and report["chunks_checked"] == 9


def test_dask_with_the_arrays_own_chunks():
    da = pytest.importorskip("dask.array", reason="dask is needed for this test")
    a, ref = _make((37, 11), [[[4, 3], 13, [6, 2], 9], [[3, 3], 2]])
    x = da.from_array(a, chunks=a.read_chunk_sizes)
    assert x.chunks == a.write_chunk_sizes
    np.testing.assert_array_equal(x.compute(scheduler="synchronous"), ref)
    b = zarrcy.create_array(zarrcy.MemoryStore(), shape=(37, 11), dtype="int32", chunks=[list(c) for c in x.chunks])
    da.store(x + 1, b, lock=False, scheduler="synchronous")  # chunk-aligned: no locks needed
    np.testing.assert_array_equal(b[...], ref + 1)


def test_convert_keeps_rectilinear_grids(tmp_path):
    """zarrcy convert keeps a rectilinear source grid by default; a Zarr v2 destination
    (no such grid) is refused naming --chunks (tests/convert/test_convert_rectilinear.py
    covers the rest)."""
    from zarrcy.convert import ConvertError, convert

    a = zarrcy.create_array(str(tmp_path / "s.zarr"), shape=(9,), dtype="int32", chunks=[[2, 3, 4]])
    a[...] = 1
    convert(str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr"), progress="off")
    assert zarrcy.open_array(str(tmp_path / "d.zarr")).write_chunk_sizes == ((2, 3, 4),)
    with pytest.raises(ConvertError, match="Zarr v2 has no rectilinear chunk grid: pass --chunks"):
        convert(str(tmp_path / "s.zarr"), str(tmp_path / "d2.zarr"), zarr_format=2)


def test_xarray_backend_prefers_the_arrays_own_chunks(tmp_path):
    xr = pytest.importorskip("xarray", reason="xarray is needed for this test")
    from zarrcy.xarray import ZarrcyBackendEntrypoint

    g = zarrcy.create_group(str(tmp_path / "x.zarr"))
    a = zarrcy.create_array(g.store, name="v", shape=(37, 11), dtype="float32", chunks=[[[4, 3], 13, [6, 2], 9], 4],
                            dimension_names=("y", "x"), fill_value=0.0)
    ref = np.arange(37 * 11, dtype=np.float32).reshape(37, 11)
    a[...] = ref
    ds = xr.open_dataset(str(tmp_path / "x.zarr"), engine=ZarrcyBackendEntrypoint, chunks={})
    assert ds["v"].encoding["preferred_chunks"] == {"y": (4, 4, 4, 13, 6, 6), "x": (4, 4, 3)}
    assert ds["v"].chunks == ((4, 4, 4, 13, 6, 6), (4, 4, 3))
    np.testing.assert_array_equal(ds["v"].values, ref)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_resize_sequences_match_zarr_python(data):
    # the same grid resized the same way in both libraries: the same chunk sizes, and
    # each library reads the other's metadata with those sizes
    shape, forms, _ = data.draw(rect_array())
    sizes = [list(clipped(f, n)) for f, n in zip(forms, shape)]
    steps = data.draw(st.lists(st.tuples(*(st.integers(0, 2 * n + 5) for n in shape)), min_size=1, max_size=4))
    with zarr.config.set({"array.rectilinear_chunks": True}):
        za = zarr.create_array(zarr.storage.MemoryStore(), shape=shape, dtype="int8", chunks=sizes, fill_value=0)
        st_ = zarrcy.MemoryStore()
        a = zarrcy.create_array(st_, shape=shape, dtype="int8", chunks=sizes, fill_value=0)
        for new in steps:
            za.resize(new)
            a.resize(new)
            assert a.write_chunk_sizes == _zarr_sizes(za), new
        zs = zarr.storage.MemoryStore()
        zs._store_dict["zarr.json"] = zarr.core.buffer.cpu.Buffer.from_bytes(st_.get("zarr.json"))
        assert _zarr_sizes(zarr.open_array(zs, mode="r")) == a.write_chunk_sizes
        doc = za.metadata.to_dict()
        back = zarrcy.create_array(zarrcy.MemoryStore(), metadata=json.loads(json.dumps(doc)))
        assert back.write_chunk_sizes == a.write_chunk_sizes


def test_the_spec_example(tmp_path, rect_flag):
    # ext-chunk-grid-rectilinear.md "Example": every form of chunk_shapes in one grid
    forms = [4, [1, 2, 3], [[4, 2]], [[1, 3], 3], [4, 4, 4]]
    a = zarrcy.create_array(str(tmp_path / "e.zarr"), metadata=_doc((6,) * 5, forms, dtype="int32", fill=0))
    assert a.write_chunk_sizes == ((4, 2), (1, 2, 3), (4, 2), (1, 1, 1, 3), (4, 2))
    assert a.metadata.to_json()["chunk_grid"]["configuration"]["chunk_shapes"] == forms
    ref = np.arange(6**5, dtype=np.int32).reshape((6,) * 5)
    a[...] = ref
    assert a.nchunks_initialized == 2 * 3 * 2 * 4 * 2
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "e.zarr"), mode="r")[...], ref)
    np.testing.assert_array_equal(a[1::2, ::3, 2:5, 3, -2:], ref[1::2, ::3, 2:5, 3, -2:])
