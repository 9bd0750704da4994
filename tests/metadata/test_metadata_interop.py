"""Metadata interop with zarr-python 3.4 and tensorstore (both are test dependencies).

* documents zarr-python writes (every core data type, fill-value forms) parse in zarrcy
  and mean the same fill value, bit for bit where zarr-python keeps the bits;
* documents zarrcy writes open in zarr-python and tensorstore with the same dtype,
  shape, chunking and fill value (checked through the fill of an unwritten array).

zarr-python 3.4 knows none of the ml_dtypes extension types and writes raw types as
its own ``raw_bytes`` (read and written back as such); tensorstore lacks ``float8_e4m3``/``uint2``/``uint4`` and
handles ``r*`` differently (extra byte dimension), so those pairs are left out.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorstore as ts
import zarr
from zarr.storage import MemoryStore

from zarrcy.document import ArrayMetadata, GroupMetadata
from zarrcy.metadata import parse_data_type

pytestmark = pytest.mark.interop


SUB_BYTE_INTS = ("int2", "int4", "uint2", "uint4")


def _bits(value: Any, dtype: np.dtype) -> bytes:
    """Bytes of the value; for sub-byte ints the value (their upper bits are arbitrary)."""
    arr = np.asarray(value, dtype=dtype)
    if dtype.name in SUB_BYTE_INTS:
        return arr.astype(np.int8).tobytes()
    return arr.reshape(1).tobytes() if arr.ndim == 0 else arr.tobytes()


def _zarr_python_doc(dtype: str, fill_value: Any, **kw: Any) -> tuple[bytes, Any]:
    store = MemoryStore()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = zarr.create_array(store=store, shape=(7, 5), chunks=(3, 5), dtype=dtype, fill_value=fill_value, **kw)
    return store._store_dict["zarr.json"].to_bytes(), a


ZP_CASES = [
    ("bool", None), ("bool", True),
    ("int8", -128), ("int16", 32767), ("int32", -5), ("int64", -(2**63)),
    ("uint8", 255), ("uint16", 7), ("uint32", 2**32 - 1), ("uint64", 2**64 - 1),
    ("float16", None), ("float16", np.nan), ("float16", -np.inf), ("float16", 0.1),
    ("float32", None), ("float32", np.nan), ("float32", np.inf), ("float32", -0.0), ("float32", 0.1), ("float32", 3.4028235e38),
    ("float64", np.nan), ("float64", -np.inf), ("float64", 1e-310), ("float64", 0.1),
    ("complex64", None), ("complex64", complex(1, np.nan)), ("complex64", complex(-np.inf, 0.5)),
    ("complex128", complex(0.1, -0.0)), ("complex128", complex(np.nan, np.inf)),
]


@pytest.mark.parametrize("dtype,fill_value", ZP_CASES, ids=str)
@pytest.mark.parametrize("compressed", [False, True])
def test_zarr_python_documents_parse(dtype: str, fill_value: Any, compressed: bool) -> None:
    raw, a = _zarr_python_doc(dtype, fill_value, compressors="auto" if compressed else None, dimension_names=["y", None], attributes={"k": [1, "v"]})
    m = ArrayMetadata.from_json(raw)
    assert m.data_type == parse_data_type(dtype)
    assert m.dtype == np.dtype(dtype)
    assert m.shape == (7, 5) and m.chunks == (3, 5)
    assert m.dimension_names == ("y", None)
    assert m.attributes == {"k": [1, "v"]}
    assert _bits(m.fill_value, m.dtype) == _bits(a.fill_value, m.dtype)
    # and what we write back reads as the same bits (zarr-python may spell it longer)
    again = ArrayMetadata.from_json(m.to_bytes())
    assert _bits(again.fill_value, m.dtype) == _bits(a.fill_value, m.dtype)


def test_zarr_python_group_parses() -> None:
    store = MemoryStore()
    g = zarr.create_group(store=store, attributes={"a": float("nan"), "b": [float("inf")], "c": "x"})
    zarr.consolidate_metadata(store)
    m = GroupMetadata.from_json(store._store_dict["zarr.json"].to_bytes())
    assert np.isnan(m.attributes["a"]) and m.attributes["c"] == "x"
    assert "consolidated_metadata" in m.extra
    assert g is not None


@pytest.mark.parametrize("fill_value", [None, b"abc"])
def test_zarr_python_raw_bytes_round_trip(tmp_path: Path, fill_value: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw, a = _zarr_python_doc("V3", fill_value, compressors=None)
    m = ArrayMetadata.from_json(raw)
    assert m.dtype == np.dtype("V3")
    assert m.data_type.to_json() == {"name": "raw_bytes", "configuration": {"length_bytes": 3}}
    assert m.fill_value.tobytes() == (fill_value or b"\0\0\0")
    assert m.to_json()["fill_value"] == json.loads(raw)["fill_value"]
    # written back, zarr-python still reads it
    (tmp_path / "zarr.json").write_bytes(m.to_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.open_array(str(tmp_path), mode="r")
        assert z[...].tobytes() == (fill_value or b"\0\0\0") * 7 * 5


# ------------------------------------------------------------------- zarrcy -> peers

LE = [{"name": "bytes", "configuration": {"endian": "little"}}]
BE = [{"name": "bytes", "configuration": {"endian": "big"}}]
ONE_BYTE = [{"name": "bytes"}]

ZC_CASES: list[tuple[str, Any]] = [
    ("bool", False), ("bool", True),
    ("int8", -7), ("int16", -32768), ("int32", 2**31 - 1), ("int64", -(2**63)),
    ("uint8", 200), ("uint16", 65535), ("uint32", 12345), ("uint64", 2**64 - 1),
    ("float16", "NaN"), ("float16", "-Infinity"), ("float16", 0.1), ("float16", "0x7e01"),
    ("float32", "NaN"), ("float32", "Infinity"), ("float32", -0.0), ("float32", 0.1), ("float32", "0x7fc00001"), ("float32", 1e-45),
    ("float64", "NaN"), ("float64", "-Infinity"), ("float64", 0.1), ("float64", "0x7ff8000000000001"), ("float64", "0xfff0000000000001"),
    ("complex64", [1.0, "NaN"]), ("complex64", ["-Infinity", "0x7fc00001"]), ("complex128", [0.1, -0.0]),
]
TS_ONLY: list[tuple[str, Any]] = [
    ("bfloat16", "NaN"), ("bfloat16", 0.1), ("bfloat16", "-Infinity"),
    ("float8_e5m2", 0.5), ("float8_e5m2", "NaN"),
    ("float8_e4m3fn", "NaN"), ("float8_e4m3fn", -448.0),
    ("float4_e2m1fn", -1.5), ("float4_e2m1fn", 6.0),
    ("int4", -3), ("int4", 7), ("int2", -2),
]


def _write_zarrcy(tmp_path: Path, dtype: str, fill_value: Any, codecs: list[Any], **extra: Any) -> tuple[Path, ArrayMetadata]:
    doc = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [7, 5],
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3, 5]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        **extra,
    }
    m = ArrayMetadata.from_json(doc)
    path = tmp_path / "arr.zarr"
    path.mkdir()
    (path / "zarr.json").write_bytes(m.to_bytes())
    return path, m


def _codecs_for(dtype: str, big: bool = False) -> list[Any]:
    if parse_data_type(dtype).itemsize == 1:
        return ONE_BYTE
    return BE if big else LE


@pytest.mark.parametrize("dtype,fill_value", ZC_CASES, ids=str)
def test_zarrcy_documents_open_in_zarr_python(tmp_path: Path, dtype: str, fill_value: Any) -> None:
    path, m = _write_zarrcy(
        tmp_path, dtype, fill_value, _codecs_for(dtype, big=dtype.endswith("32")),
        attributes={"title": "t", "n": [1, 2]}, dimension_names=["y", "x"],
    )
    a = zarr.open_array(str(path), mode="r")
    assert a.dtype == m.dtype and a.shape == (7, 5) and a.chunks == (3, 5)
    assert dict(a.attrs) == {"title": "t", "n": [1, 2]}
    assert a.metadata.dimension_names == ("y", "x")
    data = a[...]
    expect = np.full((7, 5), m.fill_value, dtype=m.dtype)
    if dtype == "float16" and "0x" in json.dumps(fill_value):
        # zarr-python 3.4 reads the float16 NaN payload as the default NaN (its limitation)
        assert np.isnan(data).all()
    else:
        assert data.tobytes() == expect.tobytes()


@pytest.mark.parametrize("dtype,fill_value", ZC_CASES + TS_ONLY, ids=str)
def test_zarrcy_documents_open_in_tensorstore(tmp_path: Path, dtype: str, fill_value: Any) -> None:
    path, m = _write_zarrcy(tmp_path, dtype, fill_value, _codecs_for(dtype), dimension_names=["y", None])
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result()
    assert np.dtype(t.dtype.numpy_dtype) == m.dtype
    assert tuple(t.shape) == (7, 5)
    assert tuple(t.chunk_layout.read_chunk.shape) == (3, 5)
    data = t.read().result()
    expect = np.full((7, 5), m.fill_value, dtype=m.dtype)
    assert _bits(data, m.dtype) == _bits(expect, m.dtype)


def test_tensorstore_documents_parse(tmp_path: Path) -> None:
    cases = [("float32", "NaN"), ("float64", 0.1), ("bfloat16", "Infinity"), ("int4", -2), ("float8_e5m2", 0.25),
             ("complex64", [1.0, -2.0]), ("float4_e2m1fn", 3.0), ("uint64", 2**64 - 1)]
    for i, (dtype, fv) in enumerate(cases):
        p = tmp_path / f"t{i}"
        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(p)},
            "metadata": {
                "shape": [4, 6],
                "data_type": dtype,
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
                "fill_value": fv,
                "dimension_names": ["a", "b"],
            },
        }
        t = ts.open(spec, create=True).result()
        m = ArrayMetadata.from_json((p / "zarr.json").read_bytes())
        assert m.dtype == np.dtype(t.dtype.numpy_dtype)
        assert m.shape == (4, 6) and m.chunks == (2, 3) and m.dimension_names == ("a", "b")
        assert _bits(m.fill_value, m.dtype) == _bits(t.fill_value, m.dtype)


@pytest.mark.parametrize(
    "kw",
    [
        {"chunk_key_encoding": {"name": "v2", "separator": "."}},
        {"chunk_key_encoding": {"name": "default", "separator": "."}},
        {"shards": (6, 5)},
        {"serializer": {"name": "bytes", "configuration": {"endian": "big"}}},
        {"filters": [{"name": "transpose", "configuration": {"order": [1, 0]}}]},
        {"compressors": [{"name": "gzip", "configuration": {"level": 3}}, {"name": "crc32c"}]},
    ],
    ids=str,
)
def test_zarr_python_layouts_parse(kw: dict[str, Any]) -> None:
    kw = dict(kw)
    if "compressors" not in kw:
        kw["compressors"] = None
    raw, a = _zarr_python_doc("int16", 3, **kw)
    m = ArrayMetadata.from_json(raw)
    zp = json.loads(raw)
    out = m.to_json()
    assert out["chunk_key_encoding"] == zp["chunk_key_encoding"]
    assert out["chunk_grid"] == zp["chunk_grid"]
    assert [c["name"] for c in out["codecs"]] == [c["name"] for c in zp["codecs"]]
    assert m.fill_value == np.int16(3)


def test_zero_dim_both_ways(tmp_path: Path) -> None:
    raw, a = _zarr_python_doc_0d()
    m = ArrayMetadata.from_json(raw)
    assert m.shape == () and m.chunks == () and m.fill_value == np.float64(2.5)
    path, m2 = _write_zarrcy_0d(tmp_path)
    assert zarr.open_array(str(path), mode="r")[()] == np.float32(-1.5)
    t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}).result()
    assert t.read().result()[()] == np.float32(-1.5)


def _zarr_python_doc_0d() -> tuple[bytes, Any]:
    store = MemoryStore()
    a = zarr.create_array(store=store, shape=(), dtype="float64", fill_value=2.5, compressors=None)
    return store._store_dict["zarr.json"].to_bytes(), a


def _write_zarrcy_0d(tmp_path: Path) -> tuple[Path, ArrayMetadata]:
    doc = {
        "zarr_format": 3, "node_type": "array", "shape": [], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": []}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": -1.5,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    m = ArrayMetadata.from_json(doc)
    path = tmp_path / "s.zarr"
    path.mkdir()
    (path / "zarr.json").write_bytes(m.to_bytes())
    return path, m


def test_zarrcy_group_opens_in_zarr_python(tmp_path: Path) -> None:
    g = GroupMetadata(attributes={"title": "x", "bad": float("nan"), "u": "é"})
    (tmp_path / "zarr.json").write_bytes(g.to_bytes())
    zg = zarr.open_group(str(tmp_path), mode="r")
    assert dict(zg.attrs) == {"title": "x", "bad": "NaN", "u": "é"}
