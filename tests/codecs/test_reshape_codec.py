"""reshape codec (ext-codec-reshape.md): configuration, shapes, encode/decode, arrays,
sharding (outer filter with partial decode, and inner codec), selections mapped for
partial access against numpy as the oracle."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from codec_helpers import MemValue, make_spec, same, sample
from hypothesis import example, given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.codecs import parse_codecs
from zarrcy.codecs._base import select, selection_shape
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.codecs.reshape import ReshapeCodec, map_selection, output_shape, runs
from zarrcy.errors import CorruptChunkError, MetadataError

LE = {"name": "bytes", "configuration": {"endian": "little"}}
P = "codecs[0]"


def reshape(shape):
    return {"name": "reshape", "configuration": {"shape": shape}}


# -- the spec's example --------------------------------------------------------------------
# (the spec's JSON lacks the comma after "name": "bytes"; otherwise verbatim)
SPEC_EXAMPLE = """{
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [100, 50, 64, 3]}},
    "codecs": [
      {"name": "reshape", "configuration": {"shape": [[0, 1], [2], 3]}},
      {"name": "zstd", "configuration": {"level": 1, "checksum": true}},
      {"name": "bytes", "configuration": {"endian": "little"}}
    ]
}"""


def test_spec_example_parses_and_round_trips():
    doc = json.loads(SPEC_EXAMPLE)
    c = codec_from_dict(doc["codecs"][0], P)
    assert isinstance(c, ReshapeCodec)
    assert c.to_dict() == doc["codecs"][0]
    assert codec_from_dict(c.to_dict(), P) == c
    spec = make_spec(tuple(doc["chunk_grid"]["configuration"]["chunk_shape"]), "uint8")
    assert c.resolve(spec).shape == (5000, 64, 3)


def test_spec_example_chain_in_the_right_order_works():
    # the example lists zstd before bytes (an order the core spec forbids); the codecs
    # themselves work in the valid order, on the example's chunk shape
    spec = make_spec((100, 50, 64, 3), "uint16")
    a = sample(spec.shape, "uint16", 3)
    p = CodecPipeline.from_codecs([reshape([[0, 1], [2], 3]), LE, {"name": "zstd", "configuration": {"level": 1,
                                   "checksum": True}}], spec)
    assert same(p.decode(p.encode(a)), a)


# -- configuration: table-driven -----------------------------------------------------------
@pytest.mark.parametrize("shape, a_shape, b_shape", [
    ([[0, 1], 10, [3, 4]], (2, 3, 10, 4, 5), (6, 10, 20)),   # the spec's allowed example
    ([[0, 1], [2], 3], (100, 50, 64, 3), (5000, 64, 3)),
    ([[0, 1], -1, [3], 4], (2, 3, 12, 5, 4), (6, 12, 5, 4)),
    ([-1], (2, 3, 4), (24,)),
    ([[0], -1, [2, 3]], (2, 3, 4, 5), (2, 3, 20)),
    ([[0], -1, [3]], (2, 3, 4, 5), (2, 12, 5)),
    ([4, -1], (8,), (4, 2)),
    ([2, 2, 2], (8,), (2, 2, 2)),
    ([[0, 1, 2]], (2, 3, 4), (24,)),
    ([[], -1], (6,), (1, 6)),          # empty input_dims: a size-1 dimension
    ([1, 1], (1,), (1, 1)),
    ([], (1, 1), ()),                  # everything is size 1
    ([-1, 1], (), (1, 1)),             # a rank-0 chunk
])
def test_output_shapes(shape, a_shape, b_shape):
    c = codec_from_dict(reshape(shape), P)
    c.validate(make_spec(a_shape, "int8"), P)
    assert c.resolve(make_spec(a_shape, "int8")).shape == b_shape
    assert c.to_dict() == reshape(shape)  # written as given: -1 and input_dims kept


@pytest.mark.parametrize("cfg, path", [
    ({"shape": [[1], [0]]}, r"shape\[1\]\[0\]"),
    ({"shape": [[1, 0], 10, [3, 4]]}, r"shape\[0\]\[1\]"),
    ({"shape": [[3, 4], 10, [0, 1]]}, r"shape\[2\]\[0\]"),
    ({"shape": [[0, 0]]}, r"shape\[0\]\[1\]"),
    ({"shape": [-1, -1]}, r"shape\[1\]"),
    ({"shape": [0]}, r"shape\[0\]"),
    ({"shape": [-2]}, r"shape\[0\]"),
    ({"shape": [1.5]}, r"shape\[0\]"),
    ({"shape": [True]}, r"shape\[0\]"),
    ({"shape": ["4"]}, r"shape\[0\]"),
    ({"shape": [None]}, r"shape\[0\]"),
    ({"shape": [[-1]]}, r"shape\[0\]\[0\]"),
    ({"shape": [[0.0]]}, r"shape\[0\]\[0\]"),
    ({"shape": 4}, r"shape"),
    ({"shape": "C"}, r"shape"),
    ({"shape": {"a": 1}}, r"shape"),
    ({}, r"shape"),
    (None, r"shape"),
    ({"shape": [4], "order": "C"}, r"(order|configuration)"),
])
def test_bad_configurations(cfg, path):
    obj = {"name": "reshape"} if cfg is None else {"name": "reshape", "configuration": cfg}
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration\.?" + path + r".*: expected|"
                       r"^codecs\[0\]\.configuration(\.\w+)?: expected"):
        codec_from_dict(obj, P)


@pytest.mark.parametrize("shape, a_shape, path, what", [
    ([5], (2, 3), r"shape", "multiplying to 6"),                 # does not multiply out
    ([4, -1], (2, 3), r"shape\[1\]", "prod"),                    # -1 cannot make it
    ([[0], [2]], (2, 3), r"shape\[1\]\[0\]", "chunk rank 2"),    # no dimension 2
    ([[0, 1], -1, [2], 3], (2, 3, 4, 6), r"shape\[2\]", "raveled index"),  # prefix rule
    ([[0], 13], (2, 3, 4), r"shape", "multiplying to 24"),
    ([[1], 8], (2, 3, 4), r"shape\[0\]", "raveled index"),       # 3 * 8 = 24, but dimension 0 comes first
])
def test_shapes_that_do_not_fit_the_chunk(shape, a_shape, path, what):
    with pytest.raises(MetadataError, match=r"^codecs\[0\]\.configuration\." + path + ": expected .*" + what):
        parse_codecs([reshape(shape), LE], make_spec(a_shape, "int16"))


def test_suffix_rule_with_input_dims():
    # [[1, 2]] alone covers dims 1..2; dim 0 (size 2) must come before it in B
    with pytest.raises(MetadataError, match=r"shape\[0\]: expected"):
        parse_codecs([reshape([[1, 2], 2]), LE], make_spec((2, 3, 4), "int16"))
    parse_codecs([reshape([2, [1, 2]]), LE], make_spec((2, 3, 4), "int16"))


def test_array_creation_names_the_codec_path():
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.shape: expected sizes multiplying to 12"):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(8, 8), chunks=(3, 4), dtype="int32",
                            filters=[ReshapeCodec(shape=(5,))], compressors=None)


# -- encode / decode -----------------------------------------------------------------------
@pytest.mark.parametrize("a_shape, shape", [
    ((4, 6), [24]), ((4, 6), [[0, 1]]), ((4, 6), [2, 2, 6]), ((24,), [2, -1, 4]),
    ((2, 3, 4), [[0], -1]), ((2, 3, 4), [4, 6]), ((1, 5, 1), [5]), ((3, 1, 4), [-1, 1, 2]),
])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float64", "complex64", "bool"])
def test_round_trip_and_stored_bytes(a_shape, shape, dtype):
    spec = make_spec(a_shape, dtype)
    a = sample(a_shape, dtype, 7)
    p = CodecPipeline.from_codecs([reshape(shape), LE], spec)
    enc = p.encode(a)
    assert bytes(enc) == a.astype(a.dtype.newbyteorder("<")).tobytes()  # ravel order kept: the bytes codec's bytes
    assert same(p.decode(enc), a)
    out = np.zeros(a_shape, dtype)
    p.decode_into(enc, out)
    assert same(out, a)
    strided = np.zeros(tuple(2 * n for n in a_shape), dtype)[tuple(slice(None, None, 2) for _ in a_shape)]
    p.decode_into(enc, strided)  # no view of a strided target: decoded, then copied
    assert same(np.ascontiguousarray(strided), a)


def test_encode_decode_are_views():
    c = ReshapeCodec(shape=(-1,))
    spec = make_spec((3, 4), "int16")
    a = np.zeros((3, 4), "int16")
    assert np.shares_memory(c.encode(a, spec), a)
    assert np.shares_memory(c.decode(c.encode(a, spec), spec), a)


@pytest.mark.parametrize("order", [[1, 0, 2], [2, 0, 1]])
def test_with_transpose_matches_numpy(order):
    spec = make_spec((4, 6), "int32")
    a = sample((4, 6), "int32", 2)
    p = CodecPipeline.from_codecs([reshape([2, 2, 6]), {"name": "transpose", "configuration": {"order": order}}, LE],
                                  spec)
    enc = p.encode(a)
    assert bytes(enc) == np.ascontiguousarray(a.reshape(2, 2, 6).transpose(order)).astype("<i4").tobytes()
    assert same(p.decode(enc), a)


# -- arrays ----------------------------------------------------------------------------------
@pytest.mark.parametrize("chunks, shape", [((4, 6), [-1]), ((4, 6), [[0, 1]]), ((2, 3), [3, 2]),
                                           ((5, 5), [[0], [1]])])
def test_array_round_trip_with_partial_chunks(chunks, shape):
    a = np.arange(11 * 13, dtype="float32").reshape(11, 13)
    z = zarrcy.create_array(zarrcy.MemoryStore(), shape=a.shape, chunks=chunks, dtype="float32",
                            filters=[ReshapeCodec(shape=tuple(tuple(e) if isinstance(e, list) else e for e in shape))],
                            fill_value=-1)
    z[...] = a
    np.testing.assert_array_equal(z[...], a)
    np.testing.assert_array_equal(z[3:9, 2:11:3], a[3:9, 2:11:3])
    z[1:4, 5] = 7
    a[1:4, 5] = 7
    np.testing.assert_array_equal(z[...], a)
    assert z.metadata.to_json()["codecs"][0] == reshape(shape)


@pytest.mark.parametrize("stored", [b"", b"\0" * 47, b"\0" * 49, b"\0" * (1 << 20)])
def test_hostile_chunks_name_the_key(stored):
    store = zarrcy.MemoryStore()
    z = zarrcy.create_array(store, shape=(8, 12), chunks=(4, 6), dtype="uint16", compressors=None,
                            filters=[ReshapeCodec(shape=(-1,))])
    z[...] = 1
    store.set("c/1/0", stored)  # 24 elements of 2 bytes expected: 48 bytes
    with pytest.raises(CorruptChunkError, match=r"c/1/0"):
        z[...]


def test_rectilinear_chunks_with_input_dims():
    # input_dims follow each chunk's shape: the same configuration fits every chunk
    a = np.arange(10 * 6, dtype="int16").reshape(10, 6)
    z = zarrcy.create_array(zarrcy.MemoryStore(), shape=a.shape, chunks=[[3, 7], [2, 4]], dtype="int16",
                            filters=[ReshapeCodec(shape=((0, 1),))], compressors=None)
    z[...] = a
    np.testing.assert_array_equal(z[...], a)
    np.testing.assert_array_equal(z[2:9, 1:5], a[2:9, 1:5])


# -- sharding --------------------------------------------------------------------------------
def _sharded(b_inner):
    return {"name": "sharding_indexed", "configuration": {"chunk_shape": list(b_inner), "codecs": [LE],
                                                          "index_codecs": [LE, {"name": "crc32c"}]}}


# a (4, 32) shard stored as (4, 4, 8): dimension 1 split in 4 rows of 8; inner chunks (1, 1, 8)
A_SHAPE, B_SHAPE, INNER = (4, 32), (4, 4, 8), (1, 1, 8)


def _shard_pipeline():
    spec = make_spec(A_SHAPE, "uint16")
    return spec, CodecPipeline.from_codecs([reshape([[0], 4, 8]), _sharded(INNER)], spec)


@pytest.mark.parametrize("sel, partial", [
    ((1, slice(8, 16, 1)), True),          # one row of the split: one inner chunk
    ((slice(0, 4, 1), 9), True),           # an integer on the split dimension
    ((2, slice(9, 13, 1)), True),          # a range inside one row
    ((slice(1, 3, 1), slice(0, 32, 8)), True),  # a step that is the row size
    ((0, np.array([3, 11, 19], dtype=np.int64)), True),  # the same column of three rows
    ((3, slice(6, 10, 1)), False),         # crosses a row boundary: the whole shard
    ((0, np.array([1, 9, 2], dtype=np.int64)), False),
])
def test_partial_decode_through_reshape(sel, partial):
    spec, p = _shard_pipeline()
    assert p.supports_partial_decode
    a = sample(A_SHAPE, "uint16", 5)
    v = MemValue(bytes(p.encode(a)))
    got = p.decode_partial(v, sel)
    np.testing.assert_array_equal(got, select(a, sel))
    whole = len(v.value)
    if partial:  # the index and the inner chunks the selection touches (the reader may coalesce close ranges)
        assert v.fetched < whole, (v.fetched, whole)
    else:
        assert v.fetched >= whole
    # into a strided `out` (a region of a caller's array)
    big = np.zeros(tuple(2 * n for n in got.shape) or (), "uint16")
    out = big[tuple(slice(None, None, 2) for _ in got.shape)]
    assert p.decode_partial(MemValue(v.value), sel, out) is out
    np.testing.assert_array_equal(out, select(a, sel))


@pytest.mark.parametrize("sel", [(1, slice(8, 16, 1)), (3, slice(6, 10, 1)), (slice(0, 4, 2), slice(0, 32, 1))])
def test_partial_encode_through_reshape(sel):
    spec, p = _shard_pipeline()
    a = sample(A_SHAPE, "uint16", 6)
    v = MemValue(bytes(p.encode(a)))
    value = np.arange(math.prod(selection_shape(sel, A_SHAPE)), dtype="uint16").reshape(selection_shape(sel, A_SHAPE))
    p.encode_partial(v, sel, value)
    a[sel] = value
    np.testing.assert_array_equal(p.decode(v.value), a)


def test_points_through_reshape():
    spec, p = _shard_pipeline()
    a = sample(A_SHAPE, "uint16", 8)
    v = MemValue(bytes(p.encode(a)))
    coords = np.array([[0, 3, 2, 1], [31, 0, 17, 8]], dtype=np.int64)
    np.testing.assert_array_equal(p.decode_points(v, coords), a[tuple(coords)])
    assert p.read_point(v, (2, 17)) == a[2, 17]
    p.encode_points(v, coords, np.array([1, 2, 3, 4], "uint16"))
    a[tuple(coords)] = [1, 2, 3, 4]
    np.testing.assert_array_equal(p.decode(v.value), a)


def test_sharded_array_with_reshape_filter():
    a = np.arange(8 * 64, dtype="int32").reshape(8, 64)
    store = zarrcy.MemoryStore()
    z = zarrcy.create_array(store, shape=a.shape, shards=(4, 32), chunks=(1, 8), dtype="int32", compressors=None)
    # a reshape in front of the sharding codec: (4, 32) shards stored as (4, 4, 8)
    meta = z.metadata.to_json()
    meta["codecs"][0]["configuration"]["chunk_shape"] = list(INNER)
    meta["codecs"] = [reshape([[0], 4, 8])] + meta["codecs"]
    store.set("zarr.json", json.dumps(meta).encode())
    z = zarrcy.open_array(store)
    z[...] = a
    np.testing.assert_array_equal(z[...], a)
    np.testing.assert_array_equal(z[1:3, 8:16], a[1:3, 8:16])
    np.testing.assert_array_equal(z[5, 6:10], a[5, 6:10])
    assert z[6, 33] == a[6, 33]
    np.testing.assert_array_equal(z.vindex[[0, 7, 3], [63, 0, 12]], a[[0, 7, 3], [63, 0, 12]])
    np.testing.assert_array_equal(z.oindex[[1, 6], [3, 40, 41]], a[np.ix_([1, 6], [3, 40, 41])])
    z[2, 8:16] = -1
    z[5, 6:10] = -2
    z.vindex[[0, 7], [1, 2]] = [-3, -4]
    a[2, 8:16] = -1
    a[5, 6:10] = -2
    a[[0, 7], [1, 2]] = [-3, -4]
    np.testing.assert_array_equal(z[...], a)


def test_reshape_as_an_inner_codec_of_sharding():
    a = np.arange(8 * 12, dtype="float32").reshape(8, 12)
    store = zarrcy.MemoryStore()
    z = zarrcy.create_array(store, shape=a.shape, shards=(4, 12), chunks=(2, 6), dtype="float32", compressors=None)
    meta = z.metadata.to_json()
    meta["codecs"][0]["configuration"]["codecs"] = [reshape([-1]), LE]
    store.set("zarr.json", json.dumps(meta).encode())
    z = zarrcy.open_array(store)
    z[...] = a
    np.testing.assert_array_equal(z[...], a)
    np.testing.assert_array_equal(z[1:7, 3:9], a[1:7, 3:9])
    # the inner chunk is stored raveled: the shard's first inner chunk is a[0:2, 0:6] in C order
    raw = store.get("c/0/0")
    assert bytes(raw[:48]) == a[0:2, 0:6].astype("<f4").tobytes()


# -- the selection mapping against numpy -----------------------------------------------------
@st.composite
def _shapes(draw):
    """(A shape, B shape) with equal products, via a random regrouping of prime factors."""
    a = tuple(draw(st.lists(st.integers(1, 6), min_size=0, max_size=4)))
    n = math.prod(a)
    factors = []
    m = n
    for q in (2, 3, 5):
        while m % q == 0:
            factors.append(q)
            m //= q
    b: list[int] = []
    for f in draw(st.permutations(factors)):
        if b and draw(st.booleans()):
            b[-1] *= f
        else:
            b.append(f)
    for _ in range(draw(st.integers(0, 2))):
        b.insert(draw(st.integers(0, len(b))), 1)
    return a, tuple(b)


@st.composite
def _selection(draw, shape):
    sel = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full", "array"]))
        if kind == "int":
            sel.append(draw(st.integers(0, n - 1)))
        elif kind == "full":
            sel.append(slice(0, n, 1))
        elif kind == "slice":
            start = draw(st.integers(0, n - 1))
            stop = draw(st.integers(start + 1, n))
            sel.append(slice(start, stop, draw(st.integers(1, 3))))
        else:
            sel.append(np.array(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4)), dtype=np.int64))
    return tuple(sel)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_map_selection_matches_numpy(data):
    a_shape, b_shape = data.draw(_shapes())
    sel = data.draw(_selection(a_shape))
    a = np.arange(math.prod(a_shape)).reshape(a_shape)
    b = a.reshape(b_shape)
    enc = map_selection(sel, a_shape, b_shape)
    if enc is None:
        # only a split (several B dimensions in a run) or a run of size-1 dimensions B drops
        assert any(len(gb) != 1 for ga, gb in runs(a_shape, b_shape))
        return
    want = select(a, sel)
    got = select(b, enc)
    assert got.size == want.size
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    assert selection_shape(enc, b_shape) == got.shape


@settings(max_examples=200, deadline=None)
@given(st.data())
@example(data=None)  # found: A (2, 1) -> B (2, 1) (one run of both), a repeated index
def test_merges_always_map(data):
    # B dimensions that each merge whole runs of A dimensions: every selection maps
    if data is None:
        a_shape, b_shape, sel = (2, 1), (2, 1), (np.array([0, 0, 1], np.int64), 0)
    else:
        a_shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
        cuts = sorted(set(data.draw(st.lists(st.integers(1, len(a_shape) - 1), max_size=3)))) if len(a_shape) > 1 else []
        bounds = [0, *cuts, len(a_shape)]
        b_shape = tuple(math.prod(a_shape[i:j]) for i, j in zip(bounds, bounds[1:]))
        sel = data.draw(_selection(a_shape))
    enc = map_selection(sel, a_shape, b_shape)
    assert enc is not None
    a = np.arange(math.prod(a_shape)).reshape(a_shape)
    want = select(a, sel)
    np.testing.assert_array_equal(select(a.reshape(b_shape), enc).reshape(want.shape), want)


def test_runs():
    assert runs((2, 3, 4), (6, 4)) == (((0, 1), (0,)), ((2,), (1,)))
    assert runs((6, 4), (2, 3, 4)) == (((0,), (0, 1)), ((1,), (2,)))
    assert runs((1, 6, 1), (6,)) == (((0, 1, 2), (0,)),)
    assert runs((), (1, 1)) == (((), (0, 1)),)
    assert runs((4, 6), (6, 4)) == (((0, 1), (0, 1)),)


def test_output_shape_errors_name_the_path():
    with pytest.raises(MetadataError, match=r"^x\.shape: expected"):
        output_shape((5,), (2, 3), "x.shape")
