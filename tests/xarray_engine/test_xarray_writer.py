"""to_zarrcy as a Dataset.to_zarr replacement: append_dim, region, modes, Dask; every
result read back by xarray's own zarr engine (and engine="zarrcy")."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

xr = pytest.importorskip("xarray")
zarr = pytest.importorskip("zarr")

import zarrcy  # noqa: E402
from zarrcy.xarray import ZarrcyBackendEntrypoint, to_zarrcy  # noqa: E402
from zarrcy.xarray.writer import _aligned_chunks  # noqa: E402

ENGINE = "zarrcy" if "zarrcy" in xr.backends.list_engines() else ZarrcyBackendEntrypoint


def _ds(nt: int = 6, t0: str = "2020-01-01", seed: int = 0) -> xr.Dataset:
    rng = np.random.default_rng(seed)
    t = pd.date_range(t0, periods=nt, freq="6h")
    temp = rng.normal(size=(nt, 4, 5)).astype("float32")
    temp[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "y", "x"), temp, {"units": "K"}),
            "count": (("y", "x"), np.arange(20, dtype="int16").reshape(4, 5)),
            "scaled": (("time",), rng.integers(-20, 20, nt) * 0.5),
        },
        coords={"time": t, "y": np.arange(4.0), "x": np.arange(5) * 10, "label": ("x", np.arange(5, dtype="i8"))},
        attrs={"title": "t"},
    )
    ds["count"].encoding["_FillValue"] = -1
    ds["scaled"].encoding.update(scale_factor=0.5, dtype="int16", _FillValue=-999)
    ds["time"].encoding.update(units="hours since 2020-01-01", dtype="int64")
    return ds


def _zarr_engine(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr-python: consolidated metadata is not in the v3 spec
        return xr.open_dataset(path, engine="zarr", **kw).load()


def _both_engines(path, expected, **kw):
    xr.testing.assert_identical(_zarr_engine(path, consolidated=False, **kw), expected)
    xr.testing.assert_identical(xr.open_dataset(path, engine=ENGINE, **kw).load(), expected)


def _xarray_to_zarr(ds, path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.to_zarr(path, zarr_format=3, consolidated=False, **kw)


# -- append ---------------------------------------------------------------------------------
def test_append_along_time(tmp_path):
    ds = _ds()
    path = str(tmp_path / "a.zarr")
    to_zarrcy(ds.isel(time=slice(0, 2)), path, chunks={"time": 2}, shards={"time": 4})
    to_zarrcy(ds.isel(time=slice(2, 3)), path, append_dim="time")
    to_zarrcy(ds.isel(time=slice(3, 6)), path, append_dim="time")
    _both_engines(path, ds)
    a = zarrcy.open_array(path, path="temp", mode="r")
    assert a.shape == (6, 4, 5) and a.shards == (4, 4, 5) and a.chunks == (2, 4, 5)
    raw = _zarr_engine(path, consolidated=False, mask_and_scale=False, decode_times=False)
    assert raw["scaled"].dtype == np.int16 and raw["scaled"].attrs["scale_factor"] == 0.5
    assert raw["time"].attrs["units"] == "hours since 2020-01-01"
    np.testing.assert_array_equal(raw["time"].values, np.arange(6) * 6)
    # consolidated metadata (written by default) is refreshed after the append
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert xr.open_dataset(path, engine="zarr", consolidated=True).sizes["time"] == 6
    assert xr.open_dataset(path, engine=ENGINE, use_consolidated=True).sizes["time"] == 6


def test_append_keeps_stored_encoding(tmp_path):
    ds = _ds()
    path = str(tmp_path / "e.zarr")
    to_zarrcy(ds.isel(time=slice(0, 3)), path)
    new = ds.isel(time=slice(3, 6))
    new["time"].encoding = {"units": "days since 1990-01-01", "dtype": "float64"}  # ignored: stored wins
    new["scaled"].encoding = {}
    new["temp"] = new["temp"].astype("float64")  # cast to the stored float32
    to_zarrcy(new, path, append_dim="time")
    raw = _zarr_engine(path, consolidated=False, mask_and_scale=False, decode_times=False)
    assert raw["time"].attrs["units"] == "hours since 2020-01-01" and raw["time"].dtype == np.int64
    assert raw["scaled"].dtype == np.int16 and raw["temp"].dtype == np.float32
    _both_engines(path, ds)


def test_append_fill_value_masked(tmp_path):
    ds = _ds()
    ds["scaled"][4] = np.nan
    path = str(tmp_path / "f.zarr")
    to_zarrcy(ds.isel(time=slice(0, 3)), path)
    to_zarrcy(ds.isel(time=slice(3, 6)), path, append_dim="time")
    raw = _zarr_engine(path, consolidated=False, mask_and_scale=False)
    assert raw["scaled"].values[4] == -999
    _both_engines(path, ds)


@pytest.mark.parametrize("first", ["xarray", "zarrcy"])
def test_append_interop_with_xarray_zarr_writer(tmp_path, first):
    ds = _ds()
    path = str(tmp_path / "i.zarr")
    if first == "xarray":
        _xarray_to_zarr(ds.isel(time=slice(0, 4)), path)
        to_zarrcy(ds.isel(time=slice(4, 6)), path, append_dim="time")
    else:
        to_zarrcy(ds.isel(time=slice(0, 4)), path, consolidated=False)
        _xarray_to_zarr(ds.isel(time=slice(4, 6)), path, append_dim="time")
    _both_engines(path, ds)


def test_append_transposed_variable(tmp_path):
    ds = _ds()
    path = str(tmp_path / "tr.zarr")
    to_zarrcy(ds.isel(time=slice(0, 3)), path)
    new = ds.isel(time=slice(3, 6))
    new["temp"] = new["temp"].transpose("x", "time", "y")
    to_zarrcy(new, path, append_dim="time")
    _both_engines(path, ds)


def test_append_mismatch_errors(tmp_path):
    ds = _ds()
    path = str(tmp_path / "m.zarr")
    to_zarrcy(ds.isel(time=slice(0, 3)), path)
    bad = ds.isel(time=slice(3, 6), x=slice(0, 4))
    with pytest.raises(ValueError, match="'temp'|'count'|'x'"):
        to_zarrcy(bad, path, append_dim="time")
    other = ds.isel(time=slice(3, 6)).rename_dims(y="z")
    with pytest.raises(ValueError, match="variable 'temp'"):
        to_zarrcy(other, path, append_dim="time")
    with pytest.raises(ValueError, match="append_dim='nope'"):
        to_zarrcy(ds.expand_dims("nope"), path, append_dim="nope")
    with pytest.raises(ValueError, match="append_dim"):
        to_zarrcy(ds, path, append_dim="time", mode="w")
    # nothing was changed by the refused appends
    _both_engines(path, ds.isel(time=slice(0, 3)))


def test_append_minus_mode_leaves_other_variables(tmp_path):
    ds = _ds()
    path = str(tmp_path / "am.zarr")
    to_zarrcy(ds.isel(time=slice(0, 3)), path)
    new = ds.isel(time=slice(3, 6)).copy()
    new["count"] = new["count"] * 0 + 7  # would overwrite with mode="a"
    to_zarrcy(new, path, append_dim="time", mode="a-")
    _both_engines(path, ds)
    to_zarrcy(new, path.replace("am", "am2"), mode="w")
    to_zarrcy(new, path.replace("am", "am2"), append_dim="time", mode="a")
    assert (xr.open_dataset(path.replace("am", "am2"), engine=ENGINE)["count"] == 7).all()


def test_mode_a_adds_variables_and_r_plus_refuses(tmp_path):
    ds = _ds()
    path = str(tmp_path / "n.zarr")
    to_zarrcy(ds[["temp"]], path)
    to_zarrcy(ds[["count"]], path, mode="a")
    got = xr.open_dataset(path, engine=ENGINE)
    assert set(got.data_vars) == {"temp", "count"}
    with pytest.raises(ValueError, match="'scaled'"):
        to_zarrcy(ds[["scaled"]], path, mode="r+")
    with pytest.raises(ValueError, match="mode"):
        to_zarrcy(ds, path, mode="x")  # type: ignore[arg-type]


# -- region ---------------------------------------------------------------------------------
def test_region_misaligned_across_chunks_and_shards(tmp_path):
    ds = _ds()
    path = str(tmp_path / "r.zarr")
    to_zarrcy(ds, path, chunks={"time": 2, "x": 2}, shards={"time": 4, "x": 4})
    upd = ds.isel(time=slice(1, 5), x=slice(1, 4)).copy(deep=True)
    upd["temp"] = upd["temp"] + 100
    upd["count"] = upd["count"] * 0 - 5
    upd = upd.drop_vars(["y"])  # shares no dimension with the region: refused otherwise (as xarray)
    expected = ds.copy(deep=True)
    expected["temp"][1:5, :, 1:4] = upd["temp"].values
    expected["count"][:, 1:4] = -5
    expected["label"][1:4] = upd["label"].values
    to_zarrcy(upd, path, region={"time": slice(1, 5), "x": slice(1, 4)})
    _both_engines(path, expected)


def test_region_refuses_variables_without_region_dims(tmp_path):
    ds = _ds()
    path = str(tmp_path / "rr.zarr")
    to_zarrcy(ds, path)
    with pytest.raises(ValueError, match="drop_vars"):
        to_zarrcy(ds.isel(x=slice(0, 2)), path, region={"x": slice(0, 2)})
    with pytest.raises(ValueError, match="step 1"):
        to_zarrcy(ds[["temp"]].isel(x=slice(0, 4, 2)), path, region={"x": slice(0, 4, 2)})
    with pytest.raises(ValueError, match="'temp'"):  # size does not match the region
        to_zarrcy(ds[["temp"]].isel(x=slice(0, 2)).drop_vars(["time", "y"]), path, region={"x": slice(0, 3)})
    with pytest.raises(ValueError, match="region"):
        to_zarrcy(ds[["temp"]], path, region={"x": slice(0, 5)}, mode="w")


def test_region_auto(tmp_path):
    ds = _ds()
    path = str(tmp_path / "ra.zarr")
    to_zarrcy(ds, path, chunks={"time": 4})
    part = ds[["temp", "scaled"]].isel(time=slice(2, 5)).copy(deep=True)
    part["temp"] = part["temp"] * 0 + 1
    part["scaled"] = part["scaled"] * 0 + 2
    to_zarrcy(part, path, region="auto")
    expected = ds.copy(deep=True)
    expected["temp"][2:5] = 1
    expected["scaled"][2:5] = 2
    _both_engines(path, expected)
    moved = part.assign_coords(time=part["time"] + pd.Timedelta("1D"))
    with pytest.raises(KeyError, match="time"):
        to_zarrcy(moved, path, region="auto")


def test_region_into_xarray_written_store_and_back(tmp_path):
    ds = _ds()
    path = str(tmp_path / "rx.zarr")
    _xarray_to_zarr(ds, path, encoding={"temp": {"chunks": (2, 4, 2)}})
    part = ds[["temp"]].isel(x=slice(1, 4)).drop_vars(["time", "y"]).copy(deep=True)
    part["temp"] = part["temp"] * 0 + 3
    to_zarrcy(part, path, region={"x": slice(1, 4)})
    expected = ds.copy(deep=True)
    expected["temp"][:, :, 1:4] = 3
    _both_engines(path, expected)


# -- Dask -------------------------------------------------------------------------------------
def _record_writes(monkeypatch):
    seen = []
    orig = zarrcy.Array.__setitem__

    def rec(self, sel, value):
        seen.append((self.path, sel, np.shape(value)))
        return orig(self, sel, value)

    monkeypatch.setattr(zarrcy.Array, "__setitem__", rec)
    return seen


def test_dask_written_block_by_block_aligned_to_shards(tmp_path, monkeypatch):
    pytest.importorskip("dask")
    ds = _ds(nt=12)
    path = str(tmp_path / "d.zarr")
    lazy = ds.chunk({"time": 3})
    seen = _record_writes(monkeypatch)
    to_zarrcy(lazy, path, chunks={"time": 2}, shards={"time": 4})
    temp_writes = [s for p, s, _ in seen if p == "temp"]
    assert len(temp_writes) == 3  # one per shard (dask blocks of 3 moved to shard edges 4, 8)
    assert sorted(s[0].start for s in temp_writes) == [0, 4, 8]
    _both_engines(path, ds)
    # no chunks given: regular dask chunks become the Zarr chunks
    to_zarrcy(lazy, str(tmp_path / "d2.zarr"))
    assert zarrcy.open_array(str(tmp_path / "d2.zarr"), path="temp", mode="r").chunks == (3, 4, 5)


def test_dask_append_and_region(tmp_path, monkeypatch):
    pytest.importorskip("dask")
    ds = _ds(nt=12)
    path = str(tmp_path / "da.zarr")
    to_zarrcy(ds.isel(time=slice(0, 5)), path, chunks={"time": 2}, shards={"time": 4})
    seen = _record_writes(monkeypatch)
    to_zarrcy(ds.isel(time=slice(5, 12)).chunk({"time": 2}), path, append_dim="time")
    starts = sorted(s[0].start for p, s, _ in seen if p == "temp")
    assert starts[0] == 5 and all(x % 4 == 0 for x in starts[1:])  # first block fills shard 1, then shards
    _both_engines(path, ds)
    part = ds[["temp"]].isel(time=slice(3, 10)).drop_vars(["y", "x", "label"]).copy(deep=True)
    part["temp"] = part["temp"] * 0 - 1
    to_zarrcy(part.chunk({"time": 1}), path, region={"time": slice(3, 10)})
    expected = ds.copy(deep=True)
    expected["temp"][3:10] = -1
    _both_engines(path, expected)


def test_aligned_chunks():
    assert _aligned_chunks(((3, 3, 3, 3),), (0,), (4,)) == ((4, 4, 4),)
    assert _aligned_chunks(((2, 2, 2),), (5,), (4,)) == ((3, 3),)  # edges at 8 (global)
    assert _aligned_chunks(((10,),), (0,), (4,)) == ((10,),)
    assert _aligned_chunks(((1,) * 8,), (1,), (4,)) == ((3, 4, 1),)


# -- strings ------------------------------------------------------------------------------
def _text_ds() -> xr.Dataset:
    words = ["a", "bb", "", "dddd"]
    return xr.Dataset(
        {
            "o": ("x", np.array(words, dtype=object)),
            "u": ("x", np.array(words)),
            "t": ("x", np.array(words, dtype=np.dtypes.StringDType())),
            "s": ("x", np.array([w.encode() for w in words])),
            "v": ("x", np.arange(4.0)),
        },
        coords={"x": np.array(["p", "q", "r", "s"], dtype=object)},
    )


def _as_read(ds: xr.Dataset) -> xr.Dataset:
    """What both engines give back: str objects as StringDType; U<n>/S<n> as they are
    (fixed_length_utf32 / null_terminated_bytes, as xarray's zarr writer stores them)."""
    out = ds.copy()
    for k, v in ds.variables.items():
        if v.dtype.kind in "OT" and not (v.dtype.kind == "O" and isinstance(v.values.flat[0], bytes)):
            out[k] = v.astype(np.dtypes.StringDType())
    return out


def test_string_variables_vlen(tmp_path):
    ds = _text_ds()
    path = str(tmp_path / "s.zarr")
    to_zarrcy(ds, path, chunks={"x": 3})
    assert str(zarrcy.open_array(path, path="o", mode="r").metadata.data_type.name) == "string"
    assert str(zarrcy.open_array(path, path="u", mode="r").metadata.data_type.name) == "fixed_length_utf32"
    assert str(zarrcy.open_array(path, path="s", mode="r").metadata.data_type.name) == "null_terminated_bytes"
    _both_engines(path, _as_read(ds))
    more = ds.assign_coords(x=np.array(["w", "ww", "www", "wwww"], dtype=object))
    to_zarrcy(more, path, append_dim="x")
    _both_engines(path, _as_read(xr.concat([ds, more], dim="x")))
    part = xr.Dataset({"o": ("x", np.array(["X", "YY"], dtype=object))})
    to_zarrcy(part, path, region={"x": slice(2, 4)})  # across the chunk edge at 3
    back = xr.open_dataset(path, engine=ENGINE)
    assert list(back["o"].values) == ["a", "bb", "X", "YY", "a", "bb", "", "dddd"]


def test_string_append_to_xarray_written_store(tmp_path):
    ds = _text_ds()[["o", "t", "v"]]
    path = str(tmp_path / "xs.zarr")
    _xarray_to_zarr(ds, path)
    more = ds.assign_coords(x=np.array(["w", "ww", "www", "wwww"], dtype=object))
    to_zarrcy(more, path, append_dim="x")
    _both_engines(path, _as_read(xr.concat([ds, more], dim="x")))


def test_unstorable_variable_refused_by_name(tmp_path):
    ds = xr.Dataset({"raw": (("x",), np.zeros(2, dtype="V4")), "v": (("x",), [1, 2])})
    with pytest.raises(TypeError, match="'raw'"):
        to_zarrcy(ds, str(tmp_path / "r.zarr"))
    to_zarrcy(_text_ds()[["v"]], str(tmp_path / "n.zarr"))
    with pytest.raises(ValueError, match="'v'"):  # text into a float array
        to_zarrcy(_text_ds()[["o"]].rename(o="v"), str(tmp_path / "n.zarr"), append_dim="x")


def test_encoding_argument(tmp_path):
    ds = _ds()
    path = str(tmp_path / "enc.zarr")
    to_zarrcy(ds, path, encoding={"temp": {"chunks": (3, 2, 5), "dtype": "float64"}})
    a = zarrcy.open_array(path, path="temp", mode="r")
    assert a.chunks == (3, 2, 5) and a.dtype == np.float64
    back = xr.open_dataset(path, engine=ENGINE)
    xr.testing.assert_allclose(back["temp"].astype("float32"), ds["temp"])
    with pytest.raises(ValueError, match="already exist"):
        to_zarrcy(ds.isel(time=slice(0, 1)), path, append_dim="time", encoding={"temp": {"dtype": "f4"}})
    with pytest.raises(ValueError, match="unknown keys"):
        to_zarrcy(ds, str(tmp_path / "e2.zarr"), encoding={"temp": {"bogus": 1}})


def test_append_to_v2_store_written_by_xarray(tmp_path):
    ds = _ds()
    path = str(tmp_path / "v2.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.isel(time=slice(0, 4)).drop_vars("count").to_zarr(path, zarr_format=2, consolidated=False)
    to_zarrcy(ds.isel(time=slice(4, 6)), path, append_dim="time")  # "count" is new: a v2 array
    _both_engines(path, ds)
    assert ".zarray" in {p.name for p in (tmp_path / "v2.zarr" / "count").iterdir()}


def test_compute_false_not_supported(tmp_path):
    with pytest.raises(NotImplementedError, match="compute=False"):
        to_zarrcy(_ds(), str(tmp_path / "c.zarr"), compute=False)
    assert not (tmp_path / "c.zarr").exists()


def test_append_refreshes_metadata_consolidated_by_xarray(tmp_path):
    ds = _ds()
    path = str(tmp_path / "cx.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds.isel(time=slice(0, 4)).to_zarr(path, zarr_format=3, consolidated=True)
    to_zarrcy(ds.isel(time=slice(4, 6)), path, append_dim="time", consolidated=False)
    xr.testing.assert_identical(_zarr_engine(path, consolidated=True), ds)
    xr.testing.assert_identical(xr.open_dataset(path, engine=ENGINE, use_consolidated=True).load(), ds)


@pytest.mark.parametrize("writer", ["zarrcy", "xarray"])
@pytest.mark.parametrize("width", [1, 2])
def test_region_auto_with_a_bytes_dimension_coordinate(tmp_path, writer, width):
    """region="auto" looks the labels of an ``S<n>`` dimension coordinate up in the store.
    ``S1`` labels used to be decoded as one character array (a 0-d string) and the
    lookup failed with "IndexVariable objects must be 1-dimensional" (xarray's own zarr
    engine still fails there, with an AssertionError)."""
    labels = np.array([b"a", b"", b"c", b"d", b"e"], dtype=f"S{width}")
    ds = xr.Dataset({"v": (("k", "y"), np.arange(10.0).reshape(5, 2)),
                     "tag": (("k",), np.array([b"p", b"q", b"r", b"s", b"t"], dtype="S1"))},
                    coords={"k": labels, "y": np.array([b"u", b"w"], dtype="S1")})
    path = str(tmp_path / "sb.zarr")
    if writer == "zarrcy":
        to_zarrcy(ds, path)
    else:
        _xarray_to_zarr(ds, path)
    part = ds.isel(k=slice(1, 4)).copy(deep=True)
    part["v"] = part["v"] * 0 + 7
    part["tag"] = part["tag"].copy(data=np.array([b"X", b"Y", b"Z"], dtype="S1"))
    to_zarrcy(part, path, region="auto")
    expected = ds.copy(deep=True)
    expected["v"][1:4] = 7
    expected["tag"][1:4] = [b"X", b"Y", b"Z"]
    _both_engines(path, expected)
    with pytest.raises(KeyError, match="'k'"):  # labels that are not stored
        to_zarrcy(part.assign_coords(k=np.array([b"x", b"y", b"z"], dtype=f"S{width}")), path, region="auto")
