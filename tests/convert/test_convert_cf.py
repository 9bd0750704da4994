"""Issue 22: conversions keep what CF data means.

A corpus of CF layouts -- float with a numeric ``_FillValue``, packed int16 with
``_FillValue``, ``missing_value`` only, string coordinates, a group, time with per-file
units in the standard and a non-standard (``noleap``) calendar -- written *by xarray* as
Zarr v2, NetCDF-4 (netCDF4; one file and several) and HDF5 (h5netcdf), converted with
default options, ``--shards``, ``--quantize`` and ``--cf-packing chain``, and read back by
xarray with ``engine="zarr"`` (zarr-python) and ``engine="zarrcy"``: the oracle is
xarray's own reading of the source (``open_dataset`` / ``open_mfdataset``), never zarrcy.
``assert_identical`` holds, or for ``--quantize`` the reported error bound (masks equal).
Arrays are tiny: the point is the metadata and the masks, not the volume.
"""

from __future__ import annotations

import json
import os
import warnings

import numpy as np
import pytest

xr = pytest.importorskip("xarray", reason="the CF corpus is written and read by xarray")
pytest.importorskip("netCDF4", reason="the NetCDF-4 sources are written with netCDF4-python")
pytest.importorskip("h5netcdf", reason="the HDF5 sources are written with h5netcdf")
pytest.importorskip("cftime", reason="the noleap calendar needs cftime")

import zarrcy  # noqa: E402
from zarrcy.convert import convert_main  # noqa: E402

Q = ["--progress", "off"]
#: the packed variable: int16 with a power-of-two scale factor (CF multiplies, the
#: scale_offset codec divides: they agree for every code only then; see test_chain_*)
SCALE = 2.0 ** -10
QUANT = "offset=250,scale=100,dtype=uint16,nan=65535"  # t2m ~ N(280, 5), sst ~ N(290, 2): codes 2000..8000


def cf_dataset(start: str = "2021-01-01", n: int = 6, calendar: str = "standard", seed: int = 0) -> "xr.Dataset":
    rng = np.random.default_rng(seed)
    t = xr.date_range(start, periods=n, freq="D", calendar=calendar, use_cftime=calendar != "standard")
    shape = (n, 4, 5)
    t2m = rng.normal(280, 5, shape).astype("f4")
    t2m[0, 0, 0] = t2m[-1, 1, 2] = np.nan
    tp = np.round(rng.random(shape) * 20 / SCALE) * SCALE  # exact in the packing
    tp[1, 1, 1] = np.nan
    sst = rng.normal(290, 2, shape).astype("f4")
    sst[0, 2, 2] = np.nan
    return xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m, {"units": "K", "long_name": "2 m temperature"}),
         "tp": (("time", "lat", "lon"), tp, {"units": "mm"}),
         "sst": (("time", "lat", "lon"), sst, {"units": "K"})},
        coords={"time": t, "lat": np.linspace(-30.0, 30.0, 4), "lon": np.arange(5.0) * 10,
                "station": ("lat", np.array(["north", "mid-n", "mid-s", "south"]))},
        attrs={"title": "cf corpus"})


def encoding(time_units: str | None = None, calendar: str | None = None) -> dict:
    enc = {"t2m": {"_FillValue": -9999.0},
           "tp": {"dtype": "int16", "scale_factor": SCALE, "add_offset": 0.0, "_FillValue": -32768},
           "sst": {"_FillValue": None, "missing_value": -1e20}}
    if time_units is not None:
        enc["time"] = {"units": time_units, "calendar": calendar or "standard", "dtype": "int64"}
    return enc


def sub_dataset() -> "xr.Dataset":
    return xr.Dataset({"tz": (("z",), np.array([271.5, 272.5, np.nan], "f4"))}, coords={"z": [0, 1, 2]},
                      attrs={"level": "sub"})


def write_source(kind: str, d: str) -> tuple[str, list[str], list[str]]:
    """(source argument, files for open_mfdataset, extra convert options)."""
    os.makedirs(d, exist_ok=True)
    ds = cf_dataset()
    if kind in ("zarr2", "zarr3"):
        p = os.path.join(d, "src.zarr")
        fmt = int(kind[-1])
        ds.to_zarr(p, zarr_format=fmt, encoding=encoding(), mode="w", consolidated=False)
        sub_dataset().to_zarr(p, group="sub", zarr_format=fmt, mode="a", consolidated=False)
        return p, [p], []
    if kind in ("nc", "h5"):
        p = os.path.join(d, "src.nc" if kind == "nc" else "src.h5")
        engine = "netcdf4" if kind == "nc" else "h5netcdf"
        ds.to_netcdf(p, engine=engine, encoding=encoding())
        sub_dataset().to_netcdf(p, engine=engine, group="sub", mode="a")
        return p, [p], []
    calendar = "noleap" if kind == "mf-noleap" else "standard"
    paths = []
    for i, (a, b) in enumerate(((0, 2), (2, 5), (5, 9))):  # one "month" per file, each with its own units
        part = cf_dataset(n=9, calendar=calendar).isel(time=slice(a, b))
        first = str(part.time.values[0])[:10]
        p = os.path.join(d, f"part_{i}.nc")
        part.to_netcdf(p, encoding=encoding(f"days since {first}", calendar))
        paths.append(p)
    return os.path.join(d, "part_*.nc"), paths, ["--concat-dim", "time"]


def open_source(kind: str, files: list[str], group: str | None = None) -> "xr.Dataset":
    if kind in ("zarr2", "zarr3"):
        return xr.open_dataset(files[0], engine="zarr", group=group).load()
    if kind in ("nc", "h5"):
        return xr.open_dataset(files[0], engine="netcdf4" if kind == "nc" else "h5netcdf", group=group).load()
    return xr.open_mfdataset(files, combine="by_coords").load()


def open_out(path: str, engine: str, group: str | None = None) -> "xr.Dataset":
    return xr.open_dataset(path, engine=engine, group=group).load()


KINDS = ["zarr2", "zarr3", "nc", "h5", "mf", "mf-noleap"]
MODES = {"default": [], "shards": ["--shards", "4,4,5", "--chunks", "2,2,5"], "quantize": ["--quantize", QUANT],
         "chain": ["--cf-packing", "chain"], "v2": ["--format", "2"]}


# --cf-packing concerns HDF5 / NetCDF-4 sources (a Zarr source keeps its attributes); a
# Zarr v2 source written as v2 is copied as it is; zarr3 default/shards mirror zarr2's
CASES = [(k, m) for k in KINDS for m in MODES
         if not (k.startswith("zarr") and m == "chain") and not (k == "zarr2" and m == "v2")
         and not (k == "zarr3" and m in ("shards", "quantize"))]


@pytest.mark.parametrize("kind,mode", CASES)
def test_cf_corpus(kind, mode, tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src, files, extra = write_source(kind, str(tmp_path / "src"))
        out = str(tmp_path / "out.zarr")
        assert convert_main([src, out, *extra, *MODES[mode], "--verify", "--json", *Q]) == 0, capsys.readouterr()
        report = json.loads(capsys.readouterr().out)
        if mode == "chain":  # tp is stored as float64 through the chain (its packing exact), not attributes
            tp = zarrcy.open_array(out, path="tp")
            assert tp.dtype == np.dtype("f8") and "scale_factor" not in tp.attrs
            assert "scale_offset" in json.dumps(tp.metadata.to_json()["codecs"])
        groups = [None] if kind.startswith("mf") else [None, "sub"]
        for group in groups:
            want = open_source(kind, files, group)
            for engine in ("zarr", "zarrcy"):
                got = open_out(out, engine, group)
                if mode != "quantize":
                    xr.testing.assert_identical(want, got)
                    continue
                plans = {p["rel"]: p for p in report["plans"]}
                for name in want.variables:
                    q = plans[f"{group}/{name}" if group else name].get("quantize_report")
                    if q is None:
                        xr.testing.assert_identical(want[name], got[name])
                        continue
                    # the reported bound holds, the masks are the same, the metadata identical
                    a, b = want[name].values, got[name].values
                    assert np.array_equal(np.isnan(a), np.isnan(b)), name
                    err = np.nanmax(np.abs(a.astype("f8") - b.astype("f8")))
                    assert err <= q["max_abs_error"] + 1e-12 and q["max_abs_error"] <= 0.005 + 1e-3, (name, err, q)
                    assert want[name].attrs == got[name].attrs and want[name].dims == got[name].dims
                    assert q["sentinel_collisions"] == 0
                    if name == "t2m":  # its _FillValue has a code of its own, counted
                        fills = [s for s in q["sentinels"] if s["what"] == "_FillValue"]
                        assert fills and fills[0]["count"] == int(np.isnan(a).sum()) and fills[0]["chosen"]


# --------------------------------------------------------------------------------------
# item 1: the case, Zarr v2 -> v3
# --------------------------------------------------------------------------------------
def test_v2_fill_values_masked_after_v3_conversion(tmp_path, capsys):
    """Issue 22 item 1: xarray takes a v2 array's fill_value as _FillValue; v3 needs the
    attribute.  Before: -9999 and packed -32768 read back as numbers."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src, _files, _ = write_source("zarr2", str(tmp_path / "s"))
        out = str(tmp_path / "o.zarr")
        assert convert_main([src, out, *Q]) == 0
        summary = capsys.readouterr().out
        assert "_FillValue attribute added from the v2 fill_value" in summary and "/t2m" in summary
        want = xr.open_dataset(src, engine="zarr")
        for engine in ("zarr", "zarrcy"):
            got = xr.open_dataset(out, engine=engine)
            assert int(np.isnan(got["t2m"]).sum()) == int(np.isnan(want["t2m"]).sum()) == 2
            assert int(np.isnan(got["tp"]).sum()) == 1 and int(np.isnan(got["sst"]).sum()) == 1
            assert "_ARRAY_DIMENSIONS" not in got["t2m"].attrs
    a = zarrcy.open_array(out, path="t2m")
    assert a.dimension_names == ("time", "lat", "lon") and a.fill_value == -9999.0
    assert "_ARRAY_DIMENSIONS" not in a.attrs and isinstance(a.attrs["_FillValue"], str)  # xarray's base64 form


# --------------------------------------------------------------------------------------
# item 2: per-file time units and calendars
# --------------------------------------------------------------------------------------
def _months(d: str, units: list[str], calendars: list[str | None], values: list[list[float]] | None = None,
            dtype: str = "i8") -> str:
    import netCDF4

    os.makedirs(d, exist_ok=True)
    for i, u in enumerate(units):
        with netCDF4.Dataset(os.path.join(d, f"m{i}.nc"), "w") as ds:
            ds.createDimension("time", None)
            t = ds.createVariable("time", dtype, ("time",))
            t.units = u
            if calendars[i] is not None:
                t.calendar = calendars[i]
            t[:] = np.asarray(values[i] if values else [0, 1, 2], dtype)
            v = ds.createVariable("v", "f4", ("time",))
            v[:] = np.arange(3, dtype="f4") + 10 * i
    return os.path.join(d, "m*.nc")


def test_time_units_reencoded_onto_the_first_files(tmp_path, capsys):
    src = _months(str(tmp_path / "m"), ["days since 2020-01-01", "days since 2020-01-04", "hours since 2020-01-07"],
                  ["standard", "gregorian", None], [[0, 1, 2], [0, 1, 2], [0, 24, 48]])
    out = str(tmp_path / "o.zarr")
    assert convert_main([src, out, "--concat-dim", "time", *Q]) == 0
    summary = capsys.readouterr().out
    assert "m1.nc (days since 2020-01-04), m2.nc (hours since 2020-01-07) re-encoded onto 'days since 2020-01-01'" \
        in summary
    t = zarrcy.open_array(out, path="time")
    assert t.attrs["units"] == "days since 2020-01-01" and list(t[...]) == [0, 1, 2, 3, 4, 5, 6, 7, 8]
    assert t.dtype == np.dtype("int64")


def test_time_units_exact_or_refused(tmp_path, capsys):
    # hours that are whole days: exact
    src = _months(str(tmp_path / "a"), ["days since 2020-01-01", "hours since 2020-01-04"], ["standard", "standard"],
                  [[0, 1, 2], [0, 24, 48]])
    assert convert_main([src, str(tmp_path / "a.zarr"), "--concat-dim", "time", *Q]) == 0
    assert list(zarrcy.open_array(str(tmp_path / "a.zarr"), path="time")[...]) == [0, 1, 2, 3, 4, 5]
    capsys.readouterr()
    # 6 hours after a day: not an integer number of days -> exit 2 naming file, variable, value
    src = _months(str(tmp_path / "b"), ["days since 2020-01-01", "hours since 2020-01-04"], ["standard", "standard"],
                  [[0, 1, 2], [0, 6, 24]])
    out = str(tmp_path / "b.zarr")
    assert convert_main([src, out, "--concat-dim", "time", *Q]) == 2
    err = capsys.readouterr().err
    assert "m1.nc" in err and "variable /time" in err and "value 6" in err and "not an integer" in err, err
    assert not os.path.exists(out)
    # ... and exact on a finer unit given with --time-units
    assert convert_main([src, out, "--concat-dim", "time", "--time-units", "hours since 2020-01-01", *Q]) == 0
    t = zarrcy.open_array(out, path="time")
    assert t.attrs["units"] == "hours since 2020-01-01" and list(t[...]) == [0, 24, 48, 72, 78, 96]


def test_time_bounds_checked_before_writing(tmp_path, capsys):
    """A second time variable along the concat dimension (bounds) is re-encoded too, and a
    value that is not an integer there refuses the run before anything is written."""
    import netCDF4

    d = tmp_path / "b"
    d.mkdir()
    for i, (u, bnds) in enumerate((("days since 2020-01-01", [[0, 1], [1, 2]]),
                                   ("days since 2020-01-03", [[0, 1], [1, 2]]))):
        with netCDF4.Dataset(str(d / f"m{i}.nc"), "w") as ds:
            ds.createDimension("time", None)
            ds.createDimension("nv", 2)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = u
            t[:] = [0, 1]
            b = ds.createVariable("time_bnds", "f8", ("time", "nv"))
            b.units = u
            b[:] = bnds
    out = str(tmp_path / "o.zarr")
    assert convert_main([str(d / "m*.nc"), out, "--concat-dim", "time", *Q]) == 0
    assert zarrcy.open_array(out, path="time_bnds")[...].tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    with netCDF4.Dataset(str(d / "m1.nc"), "a") as ds:
        ds["time_bnds"][1, 1] = 2.5  # 4.5 days since 2020-01-01: not an integer
    assert convert_main([str(d / "m*.nc"), str(tmp_path / "p.zarr"), "--concat-dim", "time", *Q]) == 2
    err = capsys.readouterr().err
    assert "m1.nc" in err and "variable /time_bnds" in err and "value 2.5" in err and "not an integer" in err, err
    assert not os.path.exists(tmp_path / "p.zarr")


def test_time_calendars_must_agree(tmp_path, capsys):
    src = _months(str(tmp_path / "c"), ["days since 2020-01-01", "days since 2020-01-04"], ["standard", "noleap"])
    out = str(tmp_path / "c.zarr")
    assert convert_main([src, out, "--concat-dim", "time", *Q]) == 2
    err = capsys.readouterr().err
    assert "m1.nc" in err and "variable /time" in err and "calendar 'noleap' differs from 'standard'" in err, err
    assert not os.path.exists(out)
    # months are not a fixed duration (CF 4.4): refused too
    src = _months(str(tmp_path / "d"), ["days since 2020-01-01", "months since 2020-02-01"], ["standard", "standard"])
    assert convert_main([src, out, "--concat-dim", "time", *Q]) == 2
    assert "m1.nc" in capsys.readouterr().err
    # a bad --time-units, and --time-units without --concat-dim
    src = _months(str(tmp_path / "e"), ["days since 2020-01-01", "days since 2020-01-04"], ["standard", "standard"])
    assert convert_main([src, out, "--concat-dim", "time", "--time-units", "fortnights since 2020", *Q]) == 2
    assert "--time-units" in capsys.readouterr().err
    assert convert_main([os.path.join(str(tmp_path / "e"), "m0.nc"), out, "--time-units", "days since 2020-01-01",
                         *Q]) == 2
    assert "--time-units" in capsys.readouterr().err
    assert not os.path.exists(out)


def test_float_time_values_reencoded_exactly(tmp_path):
    src = _months(str(tmp_path / "f"), ["hours since 2020-01-01 00:00", "hours since 2020-01-01 03:00:00"],
                  ["standard", "standard"], [[0.0, 1.5, 2.5], [0.0, 0.5, 1.0]], dtype="f8")
    out = str(tmp_path / "f.zarr")
    # 1.5 hours are not whole hours, but the first file is not re-encoded: only the second
    # file's values must be integers in the target unit... 3.5 is not -> refused
    assert convert_main([src, out, "--concat-dim", "time", *Q]) == 2
    assert convert_main([src, out, "--concat-dim", "time", "--time-units", "minutes since 2020-01-01", *Q]) == 0
    assert list(zarrcy.open_array(out, path="time")[...]) == [0, 90, 150, 180, 210, 240]


# --------------------------------------------------------------------------------------
# item 3: --quantize with numeric fill values
# --------------------------------------------------------------------------------------
def _fill_src(path: str, data: np.ndarray, fill: float) -> str:
    ds = xr.Dataset({"t2m": (("y", "x"), data)})
    ds.to_zarr(path, zarr_format=2, encoding={"t2m": {"_FillValue": fill}}, mode="w")
    return path


def test_quantize_maps_a_numeric_fill_value(tmp_path, capsys):
    rng = np.random.default_rng(1)
    data = (rng.random((40, 30)) * 10 + 270).astype("f4")
    data[::7, ::3] = np.nan
    src = _fill_src(str(tmp_path / "s.zarr"), data, -9999.0)
    out = str(tmp_path / "o.zarr")
    # the user's code for the fill value, in encoded units
    assert convert_main([src, out, "--quantize", "offset=260,scale=1000,dtype=uint16,nan=65535,fill=0", "--json",
                         *Q]) == 0
    rep = json.loads(capsys.readouterr().out)
    q = next(p for p in rep["plans"] if p["rel"] == "t2m")["quantize_report"]
    assert {(s["what"], s["code"], s["count"], s["chosen"]) for s in q["sentinels"]} == {
        ("NaN", 65535, 0, False), ("_FillValue", 0, int(np.isnan(data).sum()), False)}
    assert q["sentinel_collisions"] == 0 and q["max_abs_error"] <= 0.0005 + 1e-4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = xr.open_dataset(out, engine="zarr")["t2m"].values
    assert np.array_equal(np.isnan(got), np.isnan(data))
    assert np.nanmax(np.abs(got - data)) <= q["max_abs_error"]
    raw = zarrcy.open_array(out, path="t2m")
    assert raw.fill_value == -9999.0 and float(np.nanmin(raw[...])) == -9999.0  # fills decode exactly
    # chosen automatically (the largest free code), and said so
    out2 = str(tmp_path / "o2.zarr")
    assert convert_main([src, out2, "--quantize", "offset=260,scale=1000,dtype=uint16,nan=65535", *Q]) == 0
    s = capsys.readouterr().out
    assert "the _FillValue -9999 is stored as code 65534 (chosen automatically" in s, s
    assert "_FillValue=65534" in s or "65534" in s


def test_quantize_sentinel_collisions_refused_unless_allowed(tmp_path, capsys):
    data = np.linspace(0, 65.535, 200, dtype="f8").reshape(20, 10)  # encodes to 0..65535 with scale 1000
    data[0, 0] = -9999.0
    src = _fill_src(str(tmp_path / "s.zarr"), data, -9999.0)
    out = str(tmp_path / "o.zarr")
    q = "offset=0,scale=1000,dtype=uint16,fill=65535"
    assert convert_main([src, out, "--quantize", q, *Q]) == 5
    err = capsys.readouterr().err
    assert "fill=65535 collides" in err and "value 65.535" in err and "code 65535" in err, err
    assert not os.path.exists(os.path.join(out, "zarr.json"))
    assert convert_main([src, out, "--quantize", q, "--quantize-check", "first", *Q]) == 5
    capsys.readouterr()
    assert convert_main([src, out, "--quantize", q + ",collisions=allow", "--json", *Q]) == 0
    rep = json.loads(capsys.readouterr().out)
    qr = rep["plans"][0]["quantize_report"]
    assert qr["sentinel_collisions"] == 1
    # "read back as another kind" names the colliding data value alone, not the fill value
    kind = qr["causes"]["kind_changed"]
    assert (kind["count"], kind["min"], kind["max"], kind["first_index"]) == (1, 65.535, 65.535, [19, 9]), kind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = xr.open_dataset(out, engine="zarr")["t2m"].values
    assert int(np.isnan(got).sum()) == 2  # the real fill, and the colliding 65.535 (now missing)


def test_quantize_fill_code_errors_name_the_option(tmp_path, capsys):
    data = np.ones((4, 4), "f4")
    src = _fill_src(str(tmp_path / "s.zarr"), data, -9999.0)
    out = str(tmp_path / "o.zarr")
    for q, what in (("offset=0,scale=10,dtype=uint8,fill=300", "--quantize.fill"),
                    ("offset=0,scale=10,dtype=uint8,nan=255,fill=255", "--quantize.fill"),
                    ("offset=0,scale=10,dtype=uint8,fill=1.5", "--quantize.fill"),
                    ("offset=0,scale=10,dtype=uint8,collisions=maybe", "--quantize.collisions")):
        assert convert_main([src, out, "--quantize", q, *Q]) == 2, q
        err = capsys.readouterr().err
        assert what in err and err.count("\n") == 1, err
    assert not os.path.exists(out)


# --------------------------------------------------------------------------------------
# item 4: --cf-packing chain decodes as CF does, or is refused
# --------------------------------------------------------------------------------------
def test_chain_refused_when_division_differs_from_cf(tmp_path, capsys):
    ds = cf_dataset()
    p = str(tmp_path / "p.nc")
    enc = encoding()
    enc["tp"]["scale_factor"] = 0.001  # x / 1000 != x * 0.001 for about 1 value in 7
    ds.to_netcdf(p, encoding=enc)
    out = str(tmp_path / "o.zarr")
    assert convert_main([p, out, "--cf-packing", "chain", *Q]) == 2
    err = capsys.readouterr().err
    assert "p.nc" in err and "variable /tp" in err and "decode differently from CF" in err, err
    assert not os.path.exists(out)
    assert convert_main([p, out, *Q]) == 0  # keep (the default): identical
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        xr.testing.assert_identical(xr.open_dataset(p).load(), xr.open_dataset(out, engine="zarr").load())


# --------------------------------------------------------------------------------------
# item 5: compressors
# --------------------------------------------------------------------------------------
def _du(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


@pytest.mark.parametrize("shuffle", [True, False])
def test_deflate_source_keeps_its_ratio(tmp_path, capsys, shuffle):
    """A deflate (+ shuffle) NetCDF-4 source: the default output is no bigger than 1.1x
    the source, and one note per cause says what changed (never "no compressor")."""
    import netCDF4

    p = str(tmp_path / "d.nc")
    rng = np.random.default_rng(3)
    y, x = np.meshgrid(np.linspace(0, 3, 90), np.linspace(0, 6, 120), indexing="ij")
    with netCDF4.Dataset(p, "w") as ds:
        ds.createDimension("time", 24)
        ds.createDimension("y", 90)
        ds.createDimension("x", 120)
        for name in ("a", "b"):
            v = ds.createVariable(name, "f4", ("time", "y", "x"), zlib=True, complevel=4, shuffle=shuffle,
                                  chunksizes=(1, 90, 120))
            v[:] = np.round(np.sin(y + x)[None] + np.arange(24)[:, None, None] * 0.01
                            + rng.normal(0, 0.01, (24, 90, 120)), 3).astype("f4")
    out = str(tmp_path / "o.zarr")
    assert convert_main([p, out, *Q]) == 0
    summary = capsys.readouterr().out
    notes = [ln for ln in summary.splitlines() if "note" in ln]
    assert len(notes) == 1 and "/a, /b" in notes[0] and "no compressor" not in summary, summary
    assert f"HDF5 deflate level 4{' + shuffle' if shuffle else ''} is re-encoded as" in notes[0]
    data_bytes = sum(_du(os.path.join(out, n)) for n in ("a", "b"))
    assert data_bytes <= 1.1 * os.path.getsize(p), (data_bytes, os.path.getsize(p))


# --------------------------------------------------------------------------------------
# item 6 and bad input: one line, naming the option / file, variable and value
# --------------------------------------------------------------------------------------
def test_options_refuse_mistakes(tmp_path, capsys):
    src, _f, _ = write_source("zarr2", str(tmp_path / "s"))
    out = str(tmp_path / "o.zarr")
    cases = [(["--shards", "100,100"], "--shards"), (["--include", "nothing*"], "--include"),
             (["--exclude", "nope"], "--exclude"), (["--region-mb", "0"], "--region-mb"),
             (["--region-mb", "-1"], "--region-mb"), (["--progress-interval", "-5"], "--progress-interval"),
             (["--compressor", "zstd:x"], "--compressor"), (["--chunks", "2,2", "--shards", "4,4,4"], "--chunks"),
             (["--quantize", "dtype=uint8,rounding=sideways"], "--quantize")]
    for opts, name in cases:
        assert convert_main([src, out, *opts, *Q]) == 2, opts
        err = capsys.readouterr().err
        assert err.startswith(f"zarrcy convert: error: {name}") and err.count("\n") == 1, (opts, err)
        assert "source /" not in err  # blamed on the option, not on the first array
    assert not os.path.exists(out)


def test_bad_cf_attributes_are_refused(tmp_path, capsys):
    import h5py

    p = str(tmp_path / "bad.h5")
    with h5py.File(p, "w") as f:
        d = f.create_dataset("packed", data=np.arange(6, dtype="i2"))
        d.attrs["scale_factor"] = np.float32(0.0)
    out = str(tmp_path / "o.zarr")
    assert convert_main([p, out, *Q]) == 2
    err = capsys.readouterr().err
    assert "bad.h5" in err and "/packed" in err and "scale_factor 0.0" in err, err
    with h5py.File(p, "a") as f:
        f["packed"].attrs["scale_factor"] = np.float32("nan")
    assert convert_main([p, out, *Q]) == 2
    assert "scale_factor 'NaN'" in capsys.readouterr().err
    with h5py.File(p, "a") as f:
        del f["packed"].attrs["scale_factor"]
        f["packed"].attrs["missing_value"] = np.float64(0.5)  # no int16 holds it
    assert convert_main([p, out, *Q]) == 2
    assert "missing_value 0.5" in capsys.readouterr().err
    with h5py.File(p, "a") as f:
        del f["packed"].attrs["missing_value"]
        f["packed"].attrs["_FillValue"] = np.float64(-1.5)  # the wrong type for int16
    assert convert_main([p, out, *Q]) == 2
    err = capsys.readouterr().err
    assert "bad.h5" in err and "/packed" in err and "_FillValue -1.5" in err, err
    assert not os.path.exists(out)


def test_help_mentions_hdf5(capsys):
    from zarrcy.cli import main

    with pytest.raises(SystemExit):
        main(["--help"])
    assert "HDF5" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        convert_main(["-h"])
    out = capsys.readouterr().out
    assert "HDF5 / NetCDF-4" in out and "--concat-dim" in out and "--time-units" in out and "fill=" in out


def test_convert_does_not_import_xarray(tmp_path):
    """The CF mapping uses xarray's conventions, not xarray: importing it (and pandas)
    cost a conversion ~45 MiB of peak RSS and a second of start-up."""
    import subprocess
    import sys

    src, _f, _ = write_source("zarr2", str(tmp_path / "s"))
    code = ("import sys, zarrcy; zarrcy.convert(sys.argv[1], sys.argv[2], progress='off'); "
            "print(sorted(m for m in ('xarray', 'pandas', 'h5py') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code, src, str(tmp_path / "o.zarr")], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out


def test_chain_for_wide_packed_integers_checks_the_stored_values(tmp_path):
    """int32 packing: the exactness check runs over the distinct values the file holds
    (zarrcy.storage.hdf5_cf.distinct_values), and xarray decodes int32 packing as float64."""
    import netCDF4

    p = str(tmp_path / "w.nc")
    ints = np.array([[-70000, 0, 5], [123456, -1, 70000]], "i4")
    with netCDF4.Dataset(p, "w") as ds:
        ds.createDimension("y", 2)
        ds.createDimension("x", 3)
        v = ds.createVariable("w", "i4", ("y", "x"), fill_value=np.int32(-2147483647))
        v.scale_factor = np.float32(0.125)
        v.add_offset = np.float32(10.0)
        v.set_auto_maskandscale(False)
        v[:] = ints
    out = str(tmp_path / "o.zarr")
    assert convert_main([p, out, "--cf-packing", "chain", "--verify", *Q]) == 0
    a = zarrcy.open_array(out, path="w")
    assert a.dtype == np.dtype("f8") and np.array_equal(a[...], ints * 0.125 + 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for engine in ("zarr", "zarrcy"):
            xr.testing.assert_identical(xr.open_dataset(p).load(), xr.open_dataset(out, engine=engine).load())
