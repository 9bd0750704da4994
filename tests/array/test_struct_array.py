"""struct arrays through the array API: numpy structured dtypes in and out, every kind of
selection (read and write) against numpy, sharding, fill values, empty chunks."""

from __future__ import annotations

import json
import os

import ml_dtypes
import numpy as np
import pytest

import zarrcy
from zarrcy.errors import MetadataError

DT = np.dtype([("id", "<i4"), ("pos", [("x", "<f4"), ("y", ">f8")]), ("tag", "S3"), ("b", ml_dtypes.bfloat16)])
NATIVE = np.dtype([("id", "i4"), ("pos", [("x", "f4"), ("y", "f8")]), ("tag", "S3"), ("b", ml_dtypes.bfloat16)])
SHAPE = (11, 9)


def _data() -> np.ndarray:
    a = np.zeros(SHAPE, dtype=NATIVE)
    a["id"] = np.arange(a.size).reshape(SHAPE)
    a["pos"]["x"] = a["id"] * 0.5
    a["pos"]["y"] = -a["id"] / 3
    a["tag"] = np.array([b"ab", b"c", b"xyz"])[a["id"] % 3]
    a["b"] = (a["id"] % 7).astype(ml_dtypes.bfloat16)
    return a


def _same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.fixture(params=["plain", "sharded", "big-endian"])
def arr(request, tmp_path):
    kw: dict = {"chunks": (4, 3)}
    if request.param == "sharded":
        kw["shards"] = (8, 6)
    if request.param == "big-endian":
        kw["serializer"] = {"name": "bytes", "configuration": {"endian": "big"}}
    a = zarrcy.create_array(str(tmp_path / "s.zarr"), shape=SHAPE, dtype=DT, fill_value=(-1, (0.0, 1.5), b"f", 2),
                            **kw)
    data = _data()
    a[...] = data
    return a, data


def test_dtype_in_and_out(arr):
    a, data = arr
    assert a.dtype == NATIVE  # byte order of the fields is the bytes codec's business
    assert a.metadata.data_type.name == "struct"
    _same(a[...], data)
    assert a.fill_value.tobytes() == np.array((-1, (0.0, 1.5), b"f", 2), dtype=NATIVE).tobytes()


SELECTIONS = [(slice(None),), (slice(2, 9, 3), slice(None, None, 2)), (3, slice(1, 8)), (-1, -2), (Ellipsis, 4), ()]


@pytest.mark.parametrize("sel", SELECTIONS)
def test_basic_selection(arr, sel):
    a, data = arr
    _same(np.asarray(a[sel]), np.asarray(data[sel]))
    _same(np.asarray(a.get_basic_selection(sel)), np.asarray(data[sel]))


def test_orthogonal_coordinate_mask_block(arr):
    a, data = arr
    rows, cols = np.array([0, 3, 3, 10]), np.array([8, 1, 4])
    _same(a.oindex[rows, cols], data[np.ix_(rows, cols)])
    _same(a.get_orthogonal_selection((rows, slice(2, 7))), data[rows][:, 2:7])
    bm = np.zeros(SHAPE[1], bool)
    bm[[0, 5, 8]] = True
    _same(a.oindex[1:4, bm], data[1:4][:, bm])
    pts = (np.array([0, 10, 5, 5]), np.array([8, 0, 4, 4]))
    _same(a.vindex[pts], data[pts])
    _same(a.get_coordinate_selection(pts), data[pts])
    mask = (data["id"] % 5) == 0
    _same(a.vindex[mask], data[mask])
    _same(a.get_mask_selection(mask), data[mask])
    r, c = a.shards or a.chunks  # blocks are the stored objects (shards when sharded)
    _same(a.blocks[1, 0], data[r : 2 * r, 0:c])
    _same(a.get_block_selection((slice(0, 2), 1)), data[0 : 2 * r, c : 2 * c])


def test_writes_every_kind(arr):
    a, data = arr
    rec = np.array((99, (1.25, -7.0), b"zz", 3), dtype=NATIVE)
    data[2, 3] = rec
    a[2, 3] = rec[()]                                   # a record scalar
    data[0, :3] = [(5, (1, 2), b"a", 1)] * 3
    a[0, :3] = [(5, (1, 2), b"a", 1)] * 3               # tuples, numpy's conversion
    be = np.array([(7, (2.0, 4.0), b"q", 0)], dtype=DT)  # big-endian fields in: converted
    data[5, 5] = be[0]
    a[5, 5] = be[0]
    rows, cols = np.array([1, 9]), np.array([0, 8])
    data[np.ix_(rows, cols)] = rec
    a.oindex[rows, cols] = rec[()]
    pts = (np.array([10, 4]), np.array([1, 7]))
    data[pts] = rec
    a.vindex[pts] = rec[()]
    mask = np.zeros(SHAPE, bool)
    mask[6, ::2] = True
    data[mask] = rec
    a.set_mask_selection(mask, rec[()])
    r, c = a.shards or a.chunks
    block = data[r : 2 * r, 0:c][::-1].copy()  # the (possibly partial) block, reversed
    data[r : 2 * r, 0:c] = block
    a.blocks[1, 0] = block
    _same(a[...], data)


def test_missing_chunks_read_fill_and_empty_chunks_not_stored(tmp_path):
    p = str(tmp_path / "e.zarr")
    fill = np.array((3, (0.5, -0.0), b"", 1), dtype=NATIVE)
    a = zarrcy.create_array(p, shape=(4, 4), chunks=(2, 2), dtype=NATIVE, fill_value=fill[()])
    _same(a[...], np.full((4, 4), fill, dtype=NATIVE))
    a[:2, :2] = fill[()]
    assert not os.path.exists(os.path.join(p, "c", "0", "0"))  # all fill value: not written
    a[0, 0] = (4, (0.5, 0.0), b"", 1)  # -0.0 vs 0.0 differs in bits: stored
    assert os.path.exists(os.path.join(p, "c", "0", "0"))
    with open(os.path.join(p, "zarr.json")) as f:
        assert json.load(f)["fill_value"] == {"id": 3, "pos": {"x": 0.5, "y": -0.0}, "tag": "", "b": 1.0}


def test_default_fill_value_and_dict_fill(tmp_path):
    a = zarrcy.create_array(str(tmp_path / "d.zarr"), shape=(2,), dtype=[("a", "<u2"), ("t", "M8[s]")])
    assert a.metadata.to_json()["fill_value"] == {"a": 0, "t": -(2**63)}
    b = zarrcy.create_array(str(tmp_path / "f.zarr"), shape=(2,), dtype=[("a", "<u2"), ("b", "f4")],
                            fill_value={"a": 9, "b": "NaN"})
    assert b.metadata.to_json()["fill_value"] == {"a": 9, "b": "NaN"}
    with pytest.raises(MetadataError, match=r"fill_value\.b"):
        zarrcy.create_array(str(tmp_path / "g.zarr"), shape=(2,), dtype=[("a", "<u2"), ("b", "f4")],
                            fill_value={"a": 9})


def test_aligned_dtype_refused_with_advice(tmp_path):
    with pytest.raises(MetadataError, match="repack_fields"):
        zarrcy.create_array(str(tmp_path / "x.zarr"), shape=(2,), dtype=np.dtype([("a", "u1"), ("b", "<i8")], align=True))


def test_struct_needs_endian_for_multibyte_fields(tmp_path):
    meta = {"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": {"name": "struct", "configuration": {
        "fields": [{"name": "a", "data_type": "uint16"}]}},
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": {"a": 0}, "codecs": [{"name": "bytes"}]}
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.endian"):
        zarrcy.create_array(str(tmp_path / "n.zarr"), metadata=meta)
    # single-byte fields only: endian may be omitted (struct.md "Endianness")
    meta["data_type"]["configuration"]["fields"] = [{"name": "a", "data_type": "uint8"}, {"name": "b", "data_type": "int8"}]
    meta["fill_value"] = {"a": 0, "b": -1}
    a = zarrcy.create_array(str(tmp_path / "o.zarr"), metadata=meta)
    a[...] = [(1, 2), (3, -4)]
    assert a[...].tolist() == [(1, 2), (3, -4)]


# ------------------------------------------------------------------ property: random records

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_LEAVES = ["i1", "<u2", ">i4", "<u8", "<f2", ">f4", "<f8", ">c8", "S3", "V2", "<M8[s]", "?",
           ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fnuz, ml_dtypes.float8_e8m0fnu, ml_dtypes.int4]
_ZARR_PYTHON_LEAVES = {np.dtype(t) for t in ["i1", "<u2", ">i4", "<u8", "<f2", ">f4", "<f8", ">c8", "S3", "<M8[s]", "?"]}


@st.composite
def _record_dtype(draw, depth=0):
    n = draw(st.integers(1, 4))
    names = draw(st.lists(st.text("abcxyz_", min_size=1, max_size=3), min_size=n, max_size=n, unique=True))
    fields = []
    for name in names:
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            fields.append((name, draw(_record_dtype(depth + 1))))
        else:
            fields.append((name, draw(st.sampled_from(_LEAVES))))
    return np.dtype(fields)


def _leaves(dt: np.dtype):
    for name in dt.names:
        f = dt[name]
        yield from (_leaves(f) if f.names else [f])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(dt=_record_dtype(), endian=st.sampled_from(["little", "big"]), seed=st.integers(0, 2**32 - 1),
       sharded=st.booleans())
def test_random_records_round_trip(tmp_path_factory, dt, endian, seed, sharded):
    """Random record layouts: what is written reads back bit for bit (the bits of each
    field as numpy holds them in native order), and zarr-python 3.4 reads the same records
    where it knows every field type."""
    import warnings

    import zarr

    native = zarrcy.metadata.from_numpy(dt).dtype
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, 10 * 6 * native.itemsize, dtype=np.uint8)
    data = np.zeros((10, 6), dtype=native)
    data[...] = raw.view(native).reshape(10, 6)  # random bits in every field (NaN payloads too)
    p = str(tmp_path_factory.mktemp("rec") / "r.zarr")
    a = zarrcy.create_array(p, shape=data.shape, chunks=(4, 4), shards=(8, 4) if sharded else None, dtype=dt,
                            serializer={"name": "bytes", "configuration": {"endian": endian}})
    a[...] = data
    got = a[...]
    assert got.tobytes() == data.tobytes()
    sub = a[1:9:3, 2:]
    assert sub.tobytes() == np.ascontiguousarray(data[1:9:3, 2:]).tobytes()
    if all(f in _ZARR_PYTHON_LEAVES for f in _leaves(dt)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zp = zarr.open_array(p, mode="r")[...]
        assert zp.astype(native).tobytes() == data.tobytes()
