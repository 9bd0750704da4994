"""xarray: datasets with U<n>/S<n> coordinates written by xarray's zarr writer open with
engine="zarrcy" equal to engine="zarr"; to_zarrcy stores them as xarray's writer does."""

from __future__ import annotations

import json

import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")

import zarrcy  # noqa: E402
from zarrcy.xarray import ZarrcyBackendEntrypoint, to_zarrcy  # noqa: E402

ENGINE = "zarrcy" if "zarrcy" in xr.backends.list_engines() else ZarrcyBackendEntrypoint

pytestmark = pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning")


def _ds() -> xr.Dataset:
    names = np.array(["a", "", "🙂🚀x", "ßéü", "abcd"], dtype="U4")  # empty, beyond BMP, full length
    codes = np.array([b"A", b"", b"\xff\x00z", b"abc", b"zz"], dtype="S3")  # NUL inside, non-ASCII bytes
    return xr.Dataset(
        {
            "v": (("station", "t"), np.arange(15.0).reshape(5, 3)),
            "label": (("t",), np.array(["x", "yy", "zzz"], dtype="U3")),
            "flag": (("t",), np.array([b"p", b"q", b"r"], dtype="S1")),
        },
        coords={"station": names, "code": ("station", codes), "t": [10, 20, 30]},
    )


@pytest.mark.parametrize("zarr_format", [3, 2])
@pytest.mark.parametrize("kw", [{}, {"mask_and_scale": False}])
def test_xarray_written_opens_equal(tmp_path, zarr_format: int, kw: dict) -> None:
    path = tmp_path / "d.zarr"
    _ds().to_zarr(path, zarr_format=zarr_format, consolidated=False)
    ref = xr.open_dataset(path, engine="zarr", consolidated=False, **kw).load()
    got = xr.open_dataset(path, engine=ENGINE, **kw).load()
    xr.testing.assert_identical(got, ref)
    for name in ("station", "code", "label", "flag"):
        assert got[name].dtype == ref[name].dtype == _ds()[name].dtype
    # lazily indexed reads keep the element width too
    lazy = xr.open_dataset(path, engine=ENGINE, **kw)
    assert lazy["station"][2].values.dtype == np.dtype("U4") and lazy["station"][2].item() == "🙂🚀x"
    assert lazy["code"].isel(station=[2, 0]).values.tolist() == [b"\xff\x00z", b"A"]
    if zarr_format == 3:
        meta = json.loads((path / "station" / "zarr.json").read_text())
        assert meta["data_type"] == {"name": "fixed_length_utf32", "configuration": {"length_bytes": 16}}


def test_dask_chunks_open_equal(tmp_path) -> None:
    pytest.importorskip("dask")
    path = tmp_path / "d.zarr"
    _ds().to_zarr(path, zarr_format=3, consolidated=False, encoding={"label": {"chunks": (2,)}})
    ref = xr.open_dataset(path, engine="zarr", consolidated=False).load()
    got = xr.open_dataset(path, engine=ENGINE, chunks={}).load()
    xr.testing.assert_identical(got, ref)


def test_to_zarrcy_matches_xarray_writer(tmp_path) -> None:
    ours, theirs = tmp_path / "ours.zarr", tmp_path / "theirs.zarr"
    ds = _ds()
    to_zarrcy(ds, str(ours))
    ds.to_zarr(theirs, zarr_format=3, consolidated=False)
    for name in ("station", "code", "label", "flag"):
        mo = json.loads((ours / name / "zarr.json").read_text())
        mt = json.loads((theirs / name / "zarr.json").read_text())
        assert mo["data_type"] == mt["data_type"], name
        assert mo["codecs"][0] == mt["codecs"][0], name
        assert zarrcy.open_array(str(ours / name)).fill_value == zarrcy.open_array(str(theirs / name)).fill_value
    ref = xr.open_dataset(theirs, engine="zarr", consolidated=False).load()
    xr.testing.assert_identical(xr.open_dataset(ours, engine="zarr").load(), ref)
    xr.testing.assert_identical(xr.open_dataset(ours, engine=ENGINE).load(), ref)


@pytest.mark.parametrize("first", ["zarrcy", "xarray"])
def test_append_fixed_strings(tmp_path, first: str) -> None:
    path = tmp_path / "a.zarr"
    ds = _ds()
    if first == "zarrcy":
        to_zarrcy(ds, str(path))
    else:
        ds.to_zarr(path, zarr_format=3, consolidated=False)
    more = ds.assign_coords(station=np.array(["e", "f", "g", "h", "i"], dtype="U4"))
    to_zarrcy(more, str(path), append_dim="station")
    got = xr.open_dataset(path, engine=ENGINE).load()
    xr.testing.assert_identical(got, xr.open_dataset(path, engine="zarr").load())
    assert got["station"].values.tolist() == ds["station"].values.tolist() + list("efghi")
    assert got["code"].values.tolist() == ds["code"].values.tolist() * 2
    assert got["station"].dtype == np.dtype("U4") and got["code"].dtype == np.dtype("S3")
