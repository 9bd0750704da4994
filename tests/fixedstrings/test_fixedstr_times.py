"""numpy.datetime64 / numpy.timedelta64 (zarr-python 3.4's spelling of numpy M8/m8):
JSON, fill values, arrays, interop both ways, xarray engines on such a store."""

from __future__ import annotations

import json

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import MetadataError
from zarrcy.metadata.data_type import from_numpy, parse_data_type

zarr = pytest.importorskip("zarr")

NAT = -(1 << 63)
DT = "numpy.datetime64"
TD = "numpy.timedelta64"


def _t(name: str, unit: object = "ns", k: object = 1) -> dict:
    return {"name": name, "configuration": {"unit": unit, "scale_factor": k}}


@pytest.mark.parametrize("name,unit,k,numpy", [(DT, "ns", 1, "M8[ns]"), (DT, "s", 10, "M8[10s]"), (TD, "D", 1, "m8[D]"),
                                               (TD, "us", 3, "m8[3us]"), (DT, "generic", 1, "M8"), (DT, "μs", 1, "M8[us]")])
def test_parse_and_back(name: str, unit: str, k: int, numpy: str) -> None:
    d = parse_data_type(_t(name, unit, k))
    assert d.dtype == np.dtype(numpy) and d.itemsize == 8
    assert d.to_json() == _t(name, unit, k)
    assert d.fill_value_to_json(d.default_fill_value()) == NAT
    assert d.parse_fill_value(12345).view(np.int64) == 12345
    assert d.fill_value_to_json(d.parse_fill_value(-7)) == -7


@pytest.mark.parametrize("spelling,json_", [("M8[ns]", _t(DT, "ns")), (">m8[s]", _t(TD, "s")), ("M8[10m]", _t(DT, "m", 10)),
                                            ("M8", _t(DT, "generic"))])
def test_from_numpy(spelling: str, json_: dict) -> None:
    assert from_numpy(spelling).to_json() == json_


@pytest.mark.parametrize("doc,where", [
    (_t(DT, "sec"), "unit"), (_t(DT, 1), "unit"), (_t(TD, "ns", 0), "scale_factor"), (_t(TD, "ns", 1 << 31), "scale_factor"),
    (_t(DT, "ns", 1.0), "scale_factor"), (_t(DT, "ns", True), "scale_factor"), (_t(DT, "generic", 2), "scale_factor"),
    ({"name": DT, "configuration": {"unit": "ns"}}, "scale_factor"), ({"name": DT, "configuration": {"scale_factor": 1}}, "unit"),
    ({"name": DT, "configuration": {"unit": "ns", "scale_factor": 1, "tz": "UTC"}}, "tz"), (DT, "unit"),
])
def test_bad_configuration(doc: object, where: str) -> None:
    with pytest.raises(MetadataError) as e:
        parse_data_type(doc, "data_type")
    assert e.value.path is not None and e.value.path.endswith(where)


@pytest.mark.parametrize("bad", [1.5, "NaT", None, True, 1 << 63, [1], np.timedelta64(1, "s")])
def test_bad_fill_values(bad: object) -> None:
    with pytest.raises(MetadataError, match="fill_value"):
        parse_data_type(_t(DT)).parse_fill_value(bad, "fill_value")


@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("dtype", ["M8[ns]", "m8[10s]", "M8[D]"])
def test_interop_both_ways(tmp_path, dtype: str, endian: str) -> None:
    rng = np.random.default_rng(0)
    data = rng.integers(-10**12, 10**12, (7, 5)).view(dtype)
    data[0, 0] = np.array(NAT).view(dtype)
    ser = {"name": "bytes", "configuration": {"endian": endian}}
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(7, 5), chunks=(3, 2), dtype=dtype, serializer=ser)
    a[:6] = data[:6]
    want = data.copy()
    want[6:] = np.array(NAT).view(dtype)
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    assert z.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(z[:].view(np.int64), want.view(np.int64))
    np.testing.assert_array_equal(a[...].view(np.int64), want.view(np.int64))
    assert a.nchunks_initialized == 6  # the last row of chunks holds only the fill value (NaT)
    zm = zarr.create_array(str(tmp_path / "z"), shape=(7, 5), chunks=(2, 3), dtype=dtype,
                           serializer=zarr.codecs.BytesCodec(endian=endian), fill_value=data[1, 1])
    zm[2:] = data[2:]
    b = zarrcy.open_array(str(tmp_path / "z"))
    assert b.dtype == np.dtype(dtype) and b.fill_value.view(np.int64) == data[1, 1].view(np.int64)
    want = data.copy()
    want[:2] = data[1, 1]
    np.testing.assert_array_equal(b[...].view(np.int64), want.view(np.int64))
    mz = json.loads((tmp_path / "z" / "zarr.json").read_text())
    assert parse_data_type(mz["data_type"]) == b.metadata.data_type


def test_same_metadata_as_zarr_python(tmp_path) -> None:
    zarr.create_array(str(tmp_path / "z"), shape=(4,), chunks=(2,), dtype="M8[ms]")
    zarrcy.create_array(str(tmp_path), name="c", shape=(4,), chunks=(2,), dtype="M8[ms]")
    mz = json.loads((tmp_path / "z" / "zarr.json").read_text())
    mc = json.loads((tmp_path / "c" / "zarr.json").read_text())
    for key in ("data_type", "fill_value", "codecs"):
        assert mc[key] == mz[key], key


def test_xarray_engines_agree_on_native_datetimes(tmp_path) -> None:
    xr = pytest.importorskip("xarray")
    from zarrcy.xarray import ZarrcyBackendEntrypoint

    engine = "zarrcy" if "zarrcy" in xr.backends.list_engines() else ZarrcyBackendEntrypoint
    root = zarr.open_group(str(tmp_path / "g.zarr"), mode="w", zarr_format=3)
    t = root.create_array("t", shape=(4,), chunks=(2,), dtype="M8[s]", dimension_names=("t",))
    t[:] = np.array(["2020-01-01", "2020-01-02", "NaT", "2021-06-01T12:00"], dtype="M8[s]")
    d = root.create_array("d", shape=(4,), chunks=(4,), dtype="m8[ms]", dimension_names=("t",))
    d[:] = np.array([1, 2, 3, 4], dtype="m8[ms]")
    ref = xr.open_dataset(tmp_path / "g.zarr", engine="zarr", consolidated=False).load()
    got = xr.open_dataset(tmp_path / "g.zarr", engine=engine).load()
    xr.testing.assert_identical(got, ref)


@pytest.mark.parametrize("fill,want", [("2020-01-01", np.datetime64("2020-01-01", "ns")), ("NaT", np.datetime64("NaT", "ns")),
                                       (0, np.datetime64(0, "ns")), (np.datetime64("1999-12-31", "D"), np.datetime64("1999-12-31", "ns"))])
def test_create_array_fill_spellings(tmp_path, fill: object, want: np.datetime64) -> None:
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(2,), dtype="M8[ns]", fill_value=fill)
    assert a.fill_value.view(np.int64) == want.view(np.int64)
    assert a[0].view(np.int64) == want.view(np.int64)


def test_create_array_bad_time_fill(tmp_path) -> None:
    with pytest.raises(MetadataError, match="fill_value"):
        zarrcy.create_array(str(tmp_path), name="a", shape=(2,), dtype="M8[ns]", fill_value="yesterday")
