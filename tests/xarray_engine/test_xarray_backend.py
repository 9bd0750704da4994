"""engine="zarrcy" against xarray's own zarr engine on the same stores, and to_zarrcy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

import zarrcy  # noqa: E402
from zarrcy.xarray import ZarrcyBackendArray, ZarrcyBackendEntrypoint, to_zarrcy  # noqa: E402

# the entry point is registered at install time; an older editable install may lack it
ENGINE = "zarrcy" if "zarrcy" in xr.backends.list_engines() else ZarrcyBackendEntrypoint


def _dataset() -> xr.Dataset:
    rng = np.random.default_rng(0)
    t = pd.date_range("2020-01-01", periods=6, freq="D")
    temp = rng.normal(size=(6, 4, 5)).astype("float32")
    temp[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "K", "long_name": "temperature"}),
            "count": (("y", "x"), rng.integers(0, 100, (4, 5)).astype("int16")),
            "scaled": (("time",), np.arange(6) * 0.5),
        },
        coords={"time": t, "y": np.arange(4.0), "x": np.arange(5) * 10, "label": ("x", np.arange(5, dtype="i8"))},
        attrs={"title": "test", "n": 3},
    )
    ds["count"].encoding["_FillValue"] = -1
    ds["scaled"].encoding.update(scale_factor=0.5, dtype="int16", _FillValue=-999)
    return ds


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_same_as_zarr_engine(tmp_path, zarr_format):
    path = tmp_path / "d.zarr"
    _dataset().to_zarr(path, zarr_format=zarr_format, consolidated=False)
    ref = xr.open_dataset(path, engine="zarr", consolidated=False)
    got = xr.open_dataset(path, engine=ENGINE)
    xr.testing.assert_identical(got, ref)
    for name in ref.variables:
        assert got[name].encoding.get("_FillValue") == ref[name].encoding.get("_FillValue") or (
            np.isnan(got[name].encoding.get("_FillValue", 0)) and np.isnan(ref[name].encoding.get("_FillValue", 0))
        )
    ref.close()


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_raw_no_decoding_same_as_zarr_engine(tmp_path, zarr_format):
    path = tmp_path / "d.zarr"
    _dataset().to_zarr(path, zarr_format=zarr_format, consolidated=False)
    kw = dict(mask_and_scale=False, decode_times=False)
    ref = xr.open_dataset(path, engine="zarr", consolidated=False, **kw)
    got = xr.open_dataset(path, engine=ENGINE, **kw)
    xr.testing.assert_identical(got, ref)


def test_lazy_outer_indexing(tmp_path):
    path = tmp_path / "d.zarr"
    _dataset().to_zarr(path, zarr_format=3, consolidated=False)
    ref = xr.open_dataset(path, engine="zarr", consolidated=False)
    got = xr.open_dataset(path, engine=ENGINE)
    assert not got["temp"].variable._in_memory  # lazy until loaded
    sel = dict(time=[0, 2, 5], x=slice(1, 4), y=[3, 0])
    xr.testing.assert_identical(got.isel(sel).load(), ref.isel(sel).load())
    xr.testing.assert_identical(got["temp"][::2, 1, [4, 0]].load(), ref["temp"][::2, 1, [4, 0]].load())
    # vectorized indexing is emulated by xarray on top of outer indexing
    pts = dict(time=xr.DataArray([0, 1], dims="p"), x=xr.DataArray([2, 3], dims="p"))
    xr.testing.assert_identical(got["temp"].isel(pts).load(), ref["temp"].isel(pts).load())


def test_backend_array_uses_oindex(tmp_path):
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), shape=(6, 7), dtype="int32", chunks=(2, 3), fill_value=0,
                            dimension_names=("y", "x"))
    a[...] = np.arange(42).reshape(6, 7)
    ba = ZarrcyBackendArray(a)
    key = xr.core.indexing.OuterIndexer((np.array([5, 0, 3]), slice(1, 6, 2)))
    np.testing.assert_array_equal(ba[key], np.arange(42).reshape(6, 7)[np.ix_([5, 0, 3], [1, 3, 5])])


def test_preferred_chunks_follow_shards(tmp_path):
    path = str(tmp_path / "s.zarr")
    g = zarrcy.open_group(path, mode="w")
    a = g.create_array("v", shape=(40, 30), dtype="float64", chunks=(5, 10), shards=(20, 30), fill_value=0,
                       dimension_names=("y", "x"))
    a[...] = np.arange(1200.0).reshape(40, 30)
    ds = xr.open_dataset(path, engine=ENGINE)
    assert ds["v"].encoding["preferred_chunks"] == {"y": 20, "x": 30}
    assert ds["v"].encoding["chunks"] == (5, 10)
    pytest.importorskip("dask")
    dd = xr.open_dataset(path, engine=ENGINE, chunks={})
    assert dd["v"].chunks == ((20, 20), (30,))
    np.testing.assert_array_equal(dd["v"].values, a[...])


def test_datatree(tmp_path):
    path = tmp_path / "t.zarr"
    tree = xr.DataTree.from_dict({"/": _dataset()[["count"]], "/child": _dataset()[["temp"]],
                                  "/child/leaf": xr.Dataset({"z": ("k", np.arange(3))})})
    tree.to_zarr(path, zarr_format=3, consolidated=False)
    ref = xr.open_datatree(path, engine="zarr", consolidated=False)
    got = xr.open_datatree(path, engine=ENGINE)
    xr.testing.assert_identical(got, ref)


def test_to_zarrcy_read_by_zarr_engine(tmp_path):
    ds = _dataset()
    path = str(tmp_path / "w.zarr")
    to_zarrcy(ds, path, chunks={"time": 2, "x": 5}, shards={"time": 4})
    for engine in ("zarr", ENGINE):
        kw = {"consolidated": False} if engine == "zarr" else {}
        back = xr.open_dataset(path, engine=engine, **kw)
        xr.testing.assert_identical(back, ds)
    a = zarrcy.open_array(path, path="temp", mode="r")
    assert a.dimension_names == ("time", "y", "x")
    assert a.shards == (4, 4, 5) and a.chunks == (2, 4, 5)
    with pytest.raises(zarrcy.ContainsNodeError):
        to_zarrcy(ds, path)
    to_zarrcy(ds.isel(time=slice(0, 2)), path, mode="w")
    assert xr.open_dataset(path, engine=ENGINE).sizes["time"] == 2


def test_to_zarrcy_then_zarr_python_interop_mask(tmp_path):
    ds = xr.Dataset({"v": (("x",), np.array([1.0, np.nan, 3.0]))})
    ds["v"].encoding["_FillValue"] = -9999.0
    path = str(tmp_path / "m.zarr")
    to_zarrcy(ds, path)
    raw = xr.open_dataset(path, engine="zarr", consolidated=False, mask_and_scale=False)
    assert raw["v"].values[1] == -9999.0
    xr.testing.assert_identical(xr.open_dataset(path, engine="zarr", consolidated=False), ds)


def test_missing_dimension_names(tmp_path):
    path = str(tmp_path / "n.zarr")
    g = zarrcy.open_group(path, mode="w")
    g.create_array("v", shape=(3,), dtype="int8", fill_value=0)
    with pytest.raises(KeyError, match="dimension_names"):
        xr.open_dataset(path, engine=ENGINE)


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_consolidated_by_xarray_and_group(tmp_path, zarr_format):
    path = tmp_path / "c.zarr"
    with __import__("warnings").catch_warnings():
        __import__("warnings").simplefilter("ignore")
        _dataset().to_zarr(path, zarr_format=zarr_format, consolidated=True)
        _dataset()[["count"]].to_zarr(path, group="inner", zarr_format=zarr_format, consolidated=True)
        ref = xr.open_dataset(path, engine="zarr", group="inner")
    got = xr.open_dataset(path, engine=ENGINE, group="inner", drop_variables=["label"])
    xr.testing.assert_identical(got, ref.drop_vars("label"))
    full = xr.open_dataset(path, engine=ENGINE, use_consolidated=True)
    assert set(full.data_vars) == {"temp", "count", "scaled"}
