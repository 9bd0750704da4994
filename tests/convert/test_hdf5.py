"""HDF5 / NetCDF-4 sources (issue 17): zarrcy.storage.hdf5 (the read-only Zarr view),
the internal zarrcy.hdf5_chunk codec, and ``zarrcy convert`` from HDF5 files (one, or
several along ``--concat-dim``), checked against h5py / netCDF4 / xarray as oracles."""

from __future__ import annotations

import json
import os
import threading
import warnings
import zlib

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 sources need the 'hdf5' extra (h5py)")
netCDF4 = pytest.importorskip("netCDF4", reason="the NetCDF-4 fixtures are written with netCDF4-python (test extra)")

import zarrcy  # noqa: E402
from zarrcy.convert import convert_main  # noqa: E402
from zarrcy.errors import CorruptChunkError  # noqa: E402
from zarrcy.storage import store_from_url  # noqa: E402
from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store, is_hdf5  # noqa: E402
from convert_helpers import kill_convert_after, stored_objects  # noqa: E402

Q = ["--progress", "off"]


# --------------------------------------------------------------------------------------
# fixtures
# --------------------------------------------------------------------------------------
def make_nc(path: str, seed: int = 1) -> dict[str, np.ndarray]:
    """A NetCDF-4 file with every case the mapping handles; returns raw (packed) values."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    with netCDF4.Dataset(path, "w") as ds:
        ds.title = "fixture"
        ds.setncattr("version", np.float32(1.5))
        ds.createDimension("time", None)  # unlimited
        ds.createDimension("lat", 5)
        ds.createDimension("lon", 7)
        ds.createDimension("nchar", 4)
        t = ds.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = out["time"] = np.arange(10.0)
        lat = ds.createVariable("lat", "f4", ("lat",))
        lat.units = "degrees_north"
        lat[:] = out["lat"] = np.linspace(-10, 10, 5).astype("f4")
        v = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True, complevel=4,
                              chunksizes=(3, 5, 4), fill_value=np.float32(-999.0))
        a = rng.standard_normal((10, 5, 7)).astype("f4")
        a[0, 0, 0] = -999.0  # a missing value
        v[:] = out["t2m"] = a
        v.units = "K"
        v.valid_range = np.array([-100, 400], "f4")
        p = ds.createVariable("packed", "i2", ("time", "lat"), zlib=True, shuffle=True, fletcher32=True,
                              chunksizes=(4, 5))
        p.scale_factor = np.float32(0.01)
        p.add_offset = np.float32(273.15)
        p.set_auto_maskandscale(False)
        p[:] = out["packed"] = rng.integers(-1000, 1000, (10, 5)).astype("i2")
        c = ds.createVariable("contig", "i4", ("lat", "lon"), contiguous=True)
        c[:] = out["contig"] = np.arange(35, dtype="i4").reshape(5, 7)
        s = ds.createVariable("name", str, ("lat",))
        names = np.array(["a", "bb", "ccc", "", "é"], dtype=object)
        s[:] = names
        out["name"] = names
        ch = ds.createVariable("code", "S1", ("lat", "nchar"))
        chars = netCDF4.stringtochar(np.array(["ab", "cd", "ef", "gh", "ij"], "S4"))
        ch[:] = out["code"] = chars
        g = ds.createGroup("sub")
        g.note = "inner"
        gv = g.createVariable("x", "u1", ("lat",), zlib=True)
        gv[:] = out["sub/x"] = np.arange(5, dtype="u1")
        be = ds.createVariable("big", ">i4", ("lon",), endian="big")
        be[:] = out["big"] = np.arange(7, dtype="i4") * 1000
        ct = ds.createCompoundType(np.dtype([("a", "i4"), ("b", "f8")]), "pair")
        ds.createVariable("comp", ct, ("lat",))
    return out


@pytest.fixture
def nc(tmp_path):
    path = str(tmp_path / "data.nc")
    return path, make_nc(path)


def make_h5(path: str) -> dict[str, np.ndarray]:
    """Plain HDF5 (h5py): bool, enum, fixed strings, scalar, unallocated chunks,
    dimension scales, a user block, fletcher32 alone, deflate without shuffle."""
    out: dict[str, np.ndarray] = {}
    with h5py.File(path, "w", userblock_size=512) as f:
        out["flags"] = np.array([True, False, True, True])
        f["flags"] = out["flags"]
        et = h5py.enum_dtype({"RED": 0, "GREEN": 1, "BLUE": 42}, basetype="i1")
        e = f.create_dataset("color", (6,), dtype=et)
        e[...] = out["color"] = np.array([0, 1, 42, 42, 0, 1], dtype="i1")
        f["fixed"] = out["fixed"] = np.array([b"abc", b"de", b"fghij"], dtype="S5")
        f["scalar"] = out["scalar"] = np.float64(3.25)
        sp = f.create_dataset("sparse", (20, 20), dtype="i8", chunks=(5, 5), fillvalue=-7, compression="gzip")
        sp[0:5, 0:5] = 1
        sp[15:20, 10:15] = 2
        out["sparse"] = sp[...]
        fl = f.create_dataset("fl", data=np.arange(1000, dtype="<u2").reshape(10, 100), chunks=(3, 33), fletcher32=True)
        out["fl"] = fl[...]
        dz = f.create_dataset("dz", data=np.linspace(0, 1, 999).astype(">f8"), chunks=(100,), compression="gzip")
        out["dz"] = dz[...]
        x = f.create_dataset("x", data=np.arange(4.0))
        x.make_scale("x")
        y = f.create_dataset("y", data=np.arange(3.0))
        y.make_scale("y")
        m = f.create_dataset("m", data=np.ones((3, 4)), chunks=(2, 2), compression="lzf")  # through h5py
        m.dims[0].attach_scale(y)
        m.dims[1].attach_scale(x)
        out["m"] = m[...]
        out["x"], out["y"] = x[...], y[...]
        g = f.create_group("deep/er")
        g.attrs["n"] = np.int64(5)
        g["v"] = out["deep/er/v"] = np.arange(3, dtype="c8")
    return out


def _read(store: HDF5Store, path: str) -> np.ndarray:
    return np.asarray(zarrcy.open_array(store, path=path, mode="r")[...])


# --------------------------------------------------------------------------------------
# the store
# --------------------------------------------------------------------------------------
def test_store_maps_netcdf(nc):
    path, want = nc
    store = store_from_url(path)
    assert isinstance(store, HDF5Store)
    assert "comp" in store.unsupported and "compound" in store.unsupported["comp"]
    g = zarrcy.open_group(store, mode="r")
    assert g.attrs["title"] == "fixture" and g.attrs["version"] == 1.5
    assert "_NCProperties" not in g.attrs
    assert g["sub"].attrs["note"] == "inner"
    for name in ("time", "lat", "t2m", "packed", "contig", "code", "sub/x", "big"):
        got = _read(store, name)
        assert got.dtype == want[name].dtype.newbyteorder("="), name
        assert np.array_equal(got, want[name]), name
    assert list(_read(store, "name")) == list(want["name"])
    t2m = zarrcy.open_array(store, path="t2m", mode="r")
    assert t2m.metadata.dimension_names == ("time", "lat", "lon")
    assert t2m.chunks == (3, 5, 4)
    assert t2m.fill_value == -999.0
    attrs = dict(t2m.attrs)
    assert attrs["units"] == "K" and attrs["valid_range"] == [-100.0, 400.0]
    for internal in ("DIMENSION_LIST", "_Netcdf4Dimid", "_Netcdf4Coordinates", "CLASS", "NAME", "REFERENCE_LIST"):
        assert internal not in attrs
    for name in ("time", "lat"):  # coordinate variables (dimension scales) are arrays
        assert zarrcy.open_array(store, path=name, mode="r").metadata.dimension_names == (name,)
    p = zarrcy.open_array(store, path="packed", mode="r")
    assert p.attrs["scale_factor"] == float(np.float32(0.01))  # the float32 value, exactly
    assert p.metadata.codecs[0].to_dict()["configuration"]["filters"][0]["id"] == 3  # fletcher32 first
    # the "lon"/"nchar" dimensions without coordinate variables are not arrays
    names = {rel for rel, _ in g.walk()}
    assert "lon" not in names and "nchar" not in names
    store.close()


def test_store_maps_plain_hdf5(tmp_path):
    path = str(tmp_path / "plain.h5")
    want = make_h5(path)
    assert is_hdf5(path)  # signature at 512 (user block)
    store = store_from_url(path)
    for name, w in want.items():
        got = _read(store, name)
        assert np.array_equal(got, w), name
    color = zarrcy.open_array(store, path="color", mode="r")
    assert color.dtype == np.dtype("i1")
    assert color.attrs["flag_values"] == [0, 1, 42] and color.attrs["flag_meanings"] == "RED GREEN BLUE"
    assert zarrcy.open_array(store, path="flags", mode="r").dtype == np.dtype(bool)
    assert zarrcy.open_array(store, path="fixed", mode="r").metadata.data_type.to_json()["name"] == "null_terminated_bytes"
    sparse = zarrcy.open_array(store, path="sparse", mode="r")
    assert sparse.fill_value == -7
    assert sum(1 for k in store.list_prefix("sparse/c/")) == 2  # unallocated chunks are missing keys
    assert zarrcy.open_array(store, path="m", mode="r").metadata.dimension_names == ("y", "x")
    assert zarrcy.open_group(store, path="deep/er", mode="r").attrs["n"] == 5
    store.close()


def test_store_is_read_only_and_pickles(nc):
    import pickle

    path, want = nc
    with pytest.raises(zarrcy.errors.ReadOnlyError):
        store_from_url(path, mode="a")
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="t2m", mode="r")
    b = pickle.loads(pickle.dumps(a))
    assert np.array_equal(b[...], want["t2m"])
    b.store.close()
    store.close()


def test_threads_decode_concurrently_like_h5py(tmp_path):
    """Chunks decode outside h5py in parallel threads: many threads reading at once
    give exactly what h5py gives."""
    path = str(tmp_path / "many.h5")
    rng = np.random.default_rng(3)
    data = rng.standard_normal((64, 40, 30)).astype("f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 40, 30), compression="gzip", shuffle=True)
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for k in range(i, 64, 8):
                assert np.array_equal(a[k], data[k])
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    store.close()


def test_fletcher32_matches_numcodecs():
    """Independent oracle: numcodecs' Fletcher32 is HDF5's checksum."""
    numcodecs_f = pytest.importorskip("numcodecs.fletcher32")
    from zarrcy.codecs.hdf5 import fletcher32

    rng = np.random.default_rng(5)
    # across the float64 blocks (2**16 words) and slabs (16 blocks) of the implementation
    assert fletcher32(b"") == (0, 0)  # (numcodecs refuses empty input)
    for n in (1, 2, 3, 359 * 2, 720, 721, 5000, 65537, 2**17, 2**17 + 1, 2**21 + 7, 2**22 + 2**17 + 3):
        for data in (rng.integers(0, 256, n).astype("u1").tobytes(), b"\xff" * n):  # random; the largest words
            enc = bytes(numcodecs_f.Fletcher32().encode(np.frombuffer(data, "u1")))
            v = int.from_bytes(enc[-4:], "little")
            assert fletcher32(data) == ((v & 0xFFFF) % 65535, (v >> 16) % 65535), n


def test_damaged_chunk_is_corrupt(tmp_path):
    path = str(tmp_path / "bad.h5")
    data = np.arange(2000, dtype="<i4").reshape(20, 100)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(10, 100), fletcher32=True)
        f.create_dataset("z", data=data, chunks=(10, 100), compression="gzip")
    with h5py.File(path, "r") as f:
        infos = []
        f["v"].id.chunk_iter(infos.append)
        zinfo = []
        f["z"].id.chunk_iter(zinfo.append)
    with open(path, "r+b") as fh:
        for off in (infos[1].byte_offset + 17, zinfo[0].byte_offset + 40):
            fh.seek(off)
            b = fh.read(1)
            fh.seek(off)
            fh.write(bytes([b[0] ^ 0xFF]))
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[:10], data[:10])
    with pytest.raises(CorruptChunkError, match="fletcher32"):
        a[10:]
    with pytest.raises(CorruptChunkError):
        zarrcy.open_array(store, path="z", mode="r")[:10]
    store.close()
    # convert: exit 1, the chunk named; --on-error skip writes the fill value
    assert convert_main([path, str(tmp_path / "o.zarr"), *Q]) == 1
    assert convert_main([path, str(tmp_path / "o2.zarr"), "--on-error", "skip", *Q]) == 0


def test_internal_codec_never_parsed_for_writing(nc, tmp_path):
    path, _ = nc
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="t2m", mode="r")
    codec = a.metadata.codecs[0]
    with pytest.raises(zarrcy.errors.MetadataError, match="internal"):
        codec.encode(np.zeros((3, 5, 4), "f4"), None)
    store.close()


# --------------------------------------------------------------------------------------
# convert: one file
# --------------------------------------------------------------------------------------
def _xr():
    return pytest.importorskip("xarray", reason="the xarray comparison needs xarray")


def test_convert_netcdf_equals_xarray(nc, tmp_path):
    xr = _xr()
    path, _ = nc
    out = str(tmp_path / "out.zarr")
    assert convert_main([path, out, *Q]) == 2  # the compound variable: refused by default
    assert not os.path.exists(os.path.join(out, "zarr.json"))
    assert convert_main([path, out, "--on-unsupported", "skip", "--verify", "--json", "--progress", "off"]) == 0
    # no internal codec in the output; every array re-encoded with Zarr codecs
    for dirpath, _d, files in os.walk(out):
        if "zarr.json" in files:
            with open(os.path.join(dirpath, "zarr.json")) as fh:
                assert "hdf5" not in fh.read()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = xr.open_dataset(path).drop_vars("comp", errors="ignore")
        b = xr.open_zarr(out, consolidated=False)
        # JSON numbers carry no float32 type: xarray unpacks CF-packed integers of a Zarr
        # source with the float64 of the same scale_factor (float64 values, not float32)
        xr.testing.assert_allclose(a["packed"].astype("f8"), b["packed"], rtol=1e-6)
        xr.testing.assert_identical(a.drop_vars("packed").load(), b.drop_vars("packed").load())
        assert bool(np.isnan(b["t2m"][0, 0, 0]))  # _FillValue masks in both
        a.close()
        b.close()
        a = xr.open_dataset(path, group="sub")
        b = xr.open_zarr(out, group="sub", consolidated=False)
        xr.testing.assert_identical(a.load(), b.load())
        a.close()
        b.close()


def test_convert_default_layout_and_quantize(tmp_path):
    path = str(tmp_path / "f.nc")
    rng = np.random.default_rng(9)
    data = (rng.random((24, 120, 160)) * 50 + 250).astype("f4")
    with netCDF4.Dataset(path, "w") as ds:
        for d, n in zip(("time", "y", "x"), data.shape):
            ds.createDimension(d, n)
        v = ds.createVariable("v", "f4", ("time", "y", "x"), zlib=True, complevel=4, chunksizes=(1, 120, 160),
                              fill_value=np.float32("nan"))  # the NetCDF default fill (9.97e36) has no uint16 form
        v[:] = data
    out = str(tmp_path / "o.zarr")
    # HDF5 chunks of 75 KiB grow to whole multiples of about 256 KiB (3 steps); shards of
    # about --region-mb (1 MiB: 4 chunks)
    assert convert_main([path, out, "--region-mb", "1", *Q]) == 0
    a = zarrcy.open_array(out, path="v", mode="r")
    assert np.array_equal(a[...], data)
    assert a.chunks == (3, 120, 160) and a.shards == (12, 120, 160)
    names = [c.to_dict()["name"] for c in a.metadata.codecs]
    assert names == ["sharding_indexed"]
    inner = [c["name"] for c in a.metadata.codecs[0].to_dict()["configuration"]["codecs"]]
    assert inner == ["bytes", "blosc"]  # deflate + shuffle (netCDF4's default with zlib=True): blosc, byte shuffle
    q = str(tmp_path / "q.zarr")
    assert convert_main([path, q, "--quantize", "offset=250,scale=1000,dtype=uint16,nan=65535", "--verify", *Q]) == 0
    b = zarrcy.open_array(q, path="v", mode="r")
    assert np.allclose(b[...], data, atol=1e-3)


def test_cf_packing_chain_is_exact(nc, tmp_path):
    """``--cf-packing chain`` decodes exactly as CF does or is refused: the scale_offset
    codec divides by its scale where CF multiplies by scale_factor, which agree for every
    packed value only for some scale factors (powers of two)."""
    xr = _xr()
    path, want = nc
    out = str(tmp_path / "chain.zarr")
    # scale_factor 0.01 (float32): x / 100 differs from x * 0.01 for thousands of codes
    assert convert_main([path, out, "--cf-packing", "chain", "--on-unsupported", "skip", *Q]) == 2
    assert not os.path.exists(os.path.join(out, "zarr.json"))
    p2 = str(tmp_path / "pow2.nc")
    with netCDF4.Dataset(p2, "w") as ds:
        ds.createDimension("time", 10)
        ds.createDimension("lat", 5)
        v = ds.createVariable("packed", "i2", ("time", "lat"), zlib=True, chunksizes=(4, 5), fill_value=np.int16(-32767))
        v.scale_factor = np.float32(0.25)
        v.add_offset = np.float32(273.15)
        v.set_auto_maskandscale(False)
        ints = want["packed"].copy()
        ints[0, 0] = -32767  # a missing value
        v[:] = ints
    assert convert_main([p2, out, "--cf-packing", "chain", "--verify", *Q]) == 0
    p = zarrcy.open_array(out, path="packed", mode="r")
    assert p.dtype == np.dtype("f4") and "scale_factor" not in p.attrs
    chain = [c.to_dict() for c in p.metadata.codecs[0].codecs][:2] if p.shards else [c.to_dict() for c in p.metadata.codecs][:2]
    assert [c["name"] for c in chain] == ["scale_offset", "cast_value"]
    # CF decoding (xarray / netCDF4) and the Zarr chain agree bit for bit
    cf = ints.astype("f4") * np.float32(0.25) + np.float32(273.15)
    cf[0, 0] = np.nan
    assert np.array_equal(p[...], cf, equal_nan=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = xr.open_dataset(p2).load()
        for engine in ("zarr", "zarrcy"):
            xr.testing.assert_identical(a, xr.open_dataset(out, engine=engine).load())
    # and the stored integers are the source's, exactly
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.pipeline import CodecPipeline

    spec = ArraySpec(ints.shape, np.dtype("f4"), np.float32("nan"))
    pipe = CodecPipeline.from_codecs([*chain, {"name": "bytes", "configuration": {"endian": "little"}}], spec)
    got = np.frombuffer(bytes(pipe.encode(np.ascontiguousarray(p[...]))), "<i2").reshape(ints.shape)
    assert np.array_equal(got, ints)


def test_cf_packing_chain_refuses_inexact(tmp_path):
    path = str(tmp_path / "p.nc")
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("n", 4)
        v = ds.createVariable("v", "i2", ("n",))
        v.scale_factor = np.float32(3.0e-8)  # float32 cannot tell 32767 steps of this size apart from 273
        v.add_offset = np.float32(273.0)
        v.set_auto_maskandscale(False)
        v[:] = np.array([0, 1, 2, 3], "i2")
    out = str(tmp_path / "o.zarr")
    assert convert_main([path, out, "--cf-packing", "chain", *Q]) == 2
    assert not os.path.exists(os.path.join(out, "zarr.json"))
    assert convert_main([path, out, *Q]) == 0  # keep (the default) is always exact


# --------------------------------------------------------------------------------------
# convert: several files along --concat-dim
# --------------------------------------------------------------------------------------
def make_months(d: str, lens=(31, 28, 31, 30), first: int = 0, chunk_t: int = 1, fill: float = -1e30) -> list[str]:
    """Files named in the reverse of time order (sorting by the coordinate matters)."""
    rng = np.random.default_rng(11)
    os.makedirs(d, exist_ok=True)
    paths = []
    start = first
    for i, n in enumerate(lens):
        p = os.path.join(d, f"f{len(lens) - 1 - i}.nc")
        with netCDF4.Dataset(p, "w") as ds:
            ds.title = "months"
            ds.createDimension("time", None)
            ds.createDimension("lat", 6)
            ds.createDimension("lon", 8)
            t = ds.createVariable("time", "i4", ("time",))
            t.units = "days since 2000-01-01"
            t.calendar = "standard"
            t[:] = np.arange(start, start + n)
            lat = ds.createVariable("lat", "f4", ("lat",))
            lat[:] = np.arange(6)
            v = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, shuffle=True,
                                  chunksizes=(chunk_t, 6, 8), fill_value=np.float32(fill))
            v[:] = rng.standard_normal((n, 6, 8)).astype("f4")
            v.units = "K"
            v[0, 0, 0] = np.ma.masked
            w = ds.createVariable("w", "i2", ("time", "lon"), zlib=True, chunksizes=(5, 8))  # 5 divides no month
            w[:] = rng.integers(0, 100, (n, 8))
            s = ds.createVariable("static", "f8", ("lat", "lon"))
            s[:] = np.arange(48).reshape(6, 8)
        paths.append(p)
        start += n
    return paths


def test_concat_equals_open_mfdataset(tmp_path):
    xr = _xr()
    paths = make_months(str(tmp_path / "m"))
    out = str(tmp_path / "out.zarr")
    pattern = str(tmp_path / "m" / "*.nc")
    assert convert_main([pattern, out, "--concat-dim", "time", "--verify", *Q]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = xr.open_mfdataset(sorted(paths), combine="by_coords", data_vars="minimal", coords="minimal",
                              compat="override")
        b = xr.open_zarr(out, consolidated=False)
        xr.testing.assert_identical(a.load(), b.load())
        a.close()
        b.close()
    t = zarrcy.open_array(out, path="t2m", mode="r")
    assert t.shape == (120, 6, 8)


def test_concat_dask_equals_threads(tmp_path):
    pytest.importorskip("distributed")
    make_months(str(tmp_path / "m"), lens=(10, 10))
    pattern = str(tmp_path / "m" / "*.nc")
    a, b = str(tmp_path / "a.zarr"), str(tmp_path / "b.zarr")
    opts = ["--concat-dim", "time", "--shards", "4,6,8", "--chunks", "2,6,8", *Q]
    assert convert_main([pattern, a, *opts]) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert convert_main([pattern, b, *opts, "--dask", "local:2"]) == 0
    assert stored_objects(a) == stored_objects(b)


@pytest.mark.parametrize("case", ["overlap", "gap", "nonmonotonic", "dtype", "attrs", "missing"])
def test_concat_refuses_mismatches(tmp_path, case, capsys):
    d = str(tmp_path / "m")
    paths = make_months(d, lens=(5, 5))
    bad = paths[1]  # the later file (named f0.nc)
    if case == "overlap":
        with netCDF4.Dataset(bad, "a") as ds:
            ds["time"][:] = np.arange(3, 8)
    elif case == "gap":
        with netCDF4.Dataset(bad, "a") as ds:
            ds["time"][:] = np.arange(6, 11)
    elif case == "nonmonotonic":
        with netCDF4.Dataset(bad, "a") as ds:
            ds["time"][:] = np.array([5, 7, 6, 8, 9])
    elif case == "dtype":
        with netCDF4.Dataset(bad, "a") as ds:
            v = ds.createVariable("extra", "f8", ("lat",))
            v[:] = 0
        with netCDF4.Dataset(paths[0], "a") as ds:
            v = ds.createVariable("extra", "f4", ("lat",))
            v[:] = 0
    elif case == "attrs":
        with netCDF4.Dataset(bad, "a") as ds:
            ds["t2m"].units = "degC"
    elif case == "missing":
        with netCDF4.Dataset(paths[0], "a") as ds:
            v = ds.createVariable("only_here", "f4", ("lat",))
            v[:] = 0
    out = str(tmp_path / "o.zarr")
    assert convert_main([os.path.join(d, "*.nc"), out, "--concat-dim", "time", *Q]) == 2
    err = capsys.readouterr().err
    assert os.path.basename(bad) in err or os.path.basename(paths[0]) in err
    want_var = {"dtype": "extra", "attrs": "t2m", "missing": "only_here"}.get(case, "time")
    assert f"/{want_var}" in err
    assert not os.path.exists(out) or not os.listdir(out)


# --------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------
def test_bad_sources_exit_2(tmp_path, nc, capsys):
    path, _ = nc
    out = str(tmp_path / "o.zarr")
    junk = tmp_path / "junk.nc"
    junk.write_bytes(b"CDF\x01" + b"\0" * 100)  # NetCDF-3 (classic), not HDF5
    assert convert_main([str(junk), out, *Q]) == 2
    assert "junk.nc" in capsys.readouterr().err
    # truncated: the header survives, the data is cut off
    trunc = tmp_path / "trunc.nc"
    with open(path, "rb") as fh:
        raw = fh.read()
    with h5py.File(path, "r") as f:
        infos = []
        f["t2m"].id.chunk_iter(infos.append)
    cut = max(i.byte_offset for i in infos) + 5
    trunc.write_bytes(raw[:cut])
    rc = convert_main([str(trunc), out, "--on-unsupported", "skip", *Q])
    assert rc == 2
    err = capsys.readouterr().err
    assert "trunc.nc" in err
    assert not os.path.exists(os.path.join(out, "zarr.json"))
    # cut in the superblock / object headers: h5py cannot open it
    head = tmp_path / "head.nc"
    head.write_bytes(raw[:600])
    assert convert_main([str(head), out, *Q]) == 2
    assert "head.nc" in capsys.readouterr().err
    # a glob that matches nothing, several files without --concat-dim, an unknown dimension
    assert convert_main([str(tmp_path / "nothing*.nc"), out, "--concat-dim", "time", *Q]) == 2
    make_months(str(tmp_path / "m"), lens=(2, 2))
    assert convert_main([str(tmp_path / "m" / "*.nc"), out, *Q]) == 2
    assert "--concat-dim" in capsys.readouterr().err
    assert convert_main([str(tmp_path / "m" / "*.nc"), out, "--concat-dim", "tme", *Q]) == 2
    assert "'tme'" in capsys.readouterr().err


def test_unavailable_filter_exit_2(tmp_path, capsys):
    """A dataset compressed with an HDF5 filter this installation lacks: exit 2 naming
    the file and the variable (the lzf filter id is patched to an unregistered one)."""
    path = str(tmp_path / "f.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("ok", data=np.arange(10))
        f.create_dataset("odd", data=np.arange(100.0), chunks=(10,), compression="lzf")
    with open(path, "rb") as fh:
        raw = bytearray(fh.read())
    i = raw.find(b"lzf\x00")
    assert i > 8 and raw[i - 8: i - 6] == (32000).to_bytes(2, "little")
    raw[i - 8: i - 6] = (32123).to_bytes(2, "little")
    with open(path, "wb") as fh:
        fh.write(bytes(raw))
    assert convert_main([path, str(tmp_path / "o.zarr"), *Q]) == 2
    err = capsys.readouterr().err
    assert "f.h5" in err and "/odd" in err and "32123" in err
    assert not os.path.exists(tmp_path / "o.zarr" / "zarr.json")
    # the other variables convert when it is left out (or skipped)
    assert convert_main([path, str(tmp_path / "o.zarr"), "--exclude", "odd", *Q]) == 0
    assert np.array_equal(zarrcy.open_array(str(tmp_path / "o.zarr"), path="ok", mode="r")[...], np.arange(10))


# --------------------------------------------------------------------------------------
# resume after kill -9
# --------------------------------------------------------------------------------------
def test_kill9_then_resume_is_identical(tmp_path):
    make_months(str(tmp_path / "m"), lens=(12, 12, 12))
    src = str(tmp_path / "m" / "*.nc")
    opts = ["--concat-dim", "time", "--shards", "2,6,8", "--chunks", "1,6,8", "--compressor", "zstd:1", *Q]
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *opts]) == 0
    dst = str(tmp_path / "dst.zarr")
    kill_convert_after([src, dst, *opts], dst, 5)
    assert os.path.exists(os.path.join(dst, "__zarrcy_convert", "plan.json"))
    assert convert_main([src, dst, *opts]) == 2  # interrupted: a plain rerun refuses
    assert convert_main([src, dst, *opts, "--resume", "--verify"]) == 0
    assert stored_objects(dst) == stored_objects(ref)


def test_json_summary_lists_skipped(nc, tmp_path, capsys):
    path, _ = nc
    out = str(tmp_path / "o.zarr")
    assert convert_main([path, out, "--on-unsupported", "skip", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and [s[0] for s in doc["skipped_arrays"]] == ["comp"]


def test_quantize_leaves_coordinates_exact_and_dry_run(tmp_path, capsys):
    make_months(str(tmp_path / "m"), lens=(4, 4), fill=float("nan"))  # a fill value --quantize can map (nan=)
    src = str(tmp_path / "m" / "*.nc")
    out = str(tmp_path / "q.zarr")
    assert convert_main([src, out, "--concat-dim", "time", "--dry-run", *Q]) == 0
    assert "t2m" in capsys.readouterr().out and not os.path.exists(out)
    q = "offset=-5,scale=5000,dtype=uint16,nan=65535"
    assert convert_main([src, out, "--concat-dim", "time", "--quantize", q, "--include", "t2m", "--include", "time",
                         "--include", "lat", "--verify", *Q]) == 0
    t2m = zarrcy.open_array(out, path="t2m", mode="r")
    assert [c.to_dict()["name"] for c in t2m.metadata.codecs][:2] == ["scale_offset", "cast_value"]
    for coord in ("time", "lat"):
        a = zarrcy.open_array(out, path=coord, mode="r")
        names = json.dumps([c.to_dict() for c in a.metadata.codecs])
        assert "cast_value" not in names, coord
    assert np.array_equal(zarrcy.open_array(out, path="time", mode="r")[...], np.arange(8))


def test_concat_files_chunked_differently(tmp_path, monkeypatch):
    """Files whose HDF5 chunks differ: the array gets its own grid (4 steps here, which
    divides the file lengths), read through h5py -- not taken as either file's chunks."""
    import zarrcy.storage.hdf5 as h5store

    monkeypatch.setattr(h5store, "CONTIGUOUS_CHUNK_BYTES", 4 * 6 * 8 * 4)
    d = str(tmp_path / "m")
    a = make_months(d, lens=(4,), first=0, chunk_t=1)
    os.rename(a[0], os.path.join(d, "a.nc"))
    b = make_months(d, lens=(4,), first=4, chunk_t=2)
    os.rename(b[0], os.path.join(d, "b.nc"))
    want = []
    for name in ("a.nc", "b.nc"):
        with netCDF4.Dataset(os.path.join(d, name)) as ds:
            ds.set_auto_mask(False)
            want.append(ds["t2m"][...])
    store = HDF5Store([os.path.join(d, "b.nc"), os.path.join(d, "a.nc")], concat_dim="time")
    arr = zarrcy.open_array(store, path="t2m", mode="r")
    assert arr.chunks == (4, 6, 8)
    assert np.array_equal(arr[...], np.concatenate(want))
    assert np.array_equal(zarrcy.open_array(store, path="time", mode="r")[...], np.arange(8))
    store.close()


def test_chunk_filter_mask_is_honoured(tmp_path):
    """A chunk stored with a filter skipped (HDF5 records it in the chunk's filter mask)
    decodes without that filter, as h5py reads it."""
    path = str(tmp_path / "mask.h5")
    data = np.arange(200, dtype="<i4").reshape(2, 100)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=(2, 100), dtype="<i4", chunks=(1, 100), compression="gzip", shuffle=True)
        d[0] = data[0]
        # row 1: shuffled by hand, deflate (filter 1 of the pipeline [shuffle, deflate]) skipped
        shuffled = np.ascontiguousarray(data[1].view(np.uint8).reshape(100, 4).T).tobytes()
        d.id.write_direct_chunk((1, 0), shuffled, filter_mask=0b10)
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["v"][...], data)  # the oracle
    store = HDF5Store(path)
    assert np.array_equal(zarrcy.open_array(store, path="v", mode="r")[...], data)
    store.close()


FILTERS = {
    "none": {},
    "gzip": {"compression": "gzip", "compression_opts": 1},
    "gzip+shuffle": {"compression": "gzip", "shuffle": True},
    "shuffle+fletcher32": {"shuffle": True, "fletcher32": True},
    "all": {"compression": "gzip", "shuffle": True, "fletcher32": True},
    "lzf (through h5py)": {"compression": "lzf"},
    "contiguous": None,
}


@pytest.mark.parametrize("dtype", ["i1", "<u2", ">i4", "<f4", ">f8", "<c16", "?", "S3"])
@pytest.mark.parametrize("flt", list(FILTERS))
def test_every_dtype_and_filter_like_h5py(tmp_path, dtype, flt):
    rng = np.random.default_rng(abs(hash((dtype, flt))) % 2**32)
    shape = (13, 7, 5)
    if dtype == "S3":
        data = np.array([bytes(rng.integers(97, 123, 3).astype("u1")) for _ in range(13 * 7 * 5)], "S3").reshape(shape)
    elif dtype == "?":
        data = rng.integers(0, 2, shape).astype(bool)
    else:
        data = (rng.standard_normal(shape) * 100).astype(dtype)
    path = str(tmp_path / "d.h5")
    with h5py.File(path, "w") as f:
        kw = FILTERS[flt]
        if kw is None:
            f.create_dataset("v", data=data)
        else:
            f.create_dataset("v", data=data, chunks=(4, 3, 5), **kw)
    with h5py.File(path, "r") as f:
        want = f["v"][...]
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], want)
    assert np.array_equal(a[3:11, 1:6:2, 1:], want[3:11, 1:6:2, 1:])
    store.close()


@pytest.mark.parametrize("n_decoded", [399, 401, 800])
def test_deflate_stream_of_the_wrong_size_is_corrupt(tmp_path, n_decoded):
    """A stored chunk whose zlib stream decodes to fewer or more bytes than the chunk
    (400 here) is a CorruptChunkError, with or without the shuffle filter after it."""
    path = str(tmp_path / "size.h5")
    with h5py.File(path, "w") as f:
        for name, shuffle in (("plain", False), ("shuffled", True)):
            d = f.create_dataset(name, shape=(2, 100), dtype="<i4", chunks=(1, 100), compression="gzip",
                                 shuffle=shuffle)
            d[0] = np.arange(100)
            d.id.write_direct_chunk((1, 0), zlib.compress((bytes(range(256)) * 4)[:n_decoded], 4))
    store = HDF5Store(path)
    for name in ("plain", "shuffled"):
        a = zarrcy.open_array(store, path=name, mode="r")
        assert np.array_equal(a[0], np.arange(100))
        with pytest.raises(CorruptChunkError, match="deflate"):
            a[1]
    store.close()


# --------------------------------------------------------------------------------------
# region reads: the converter reads ``src[sel]``, the one HDF5 read path
# --------------------------------------------------------------------------------------
def _regions(shape: tuple[int, ...], rng: np.random.Generator, n: int = 12) -> list[tuple[slice, ...]]:
    out = [tuple(slice(0, s) for s in shape)]
    for _ in range(n):
        sel = []
        for s in shape:
            a = int(rng.integers(0, s))
            sel.append(slice(a, int(rng.integers(a, s + 1))))
        out.append(tuple(sel))
    return out


def _in_thread(fn):
    """Run ``fn()`` in a worker thread (as the converter's region workers do)."""
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def test_region_reads_equal_h5py(nc, tmp_path):
    """Every array kind (deflate+shuffle, +fletcher32, contiguous, big-endian, through
    h5py, unallocated chunks = fill, a user block) read by region in a worker thread
    equals h5py's read of the same region, for aligned, unaligned and empty regions."""
    h5 = str(tmp_path / "plain.h5")
    make_h5(h5)
    rng = np.random.default_rng(7)
    seen = 0
    for path, names in ((nc[0], ("t2m", "packed", "contig", "big", "sub/x", "time")),
                        (h5, ("sparse", "fl", "dz", "m", "color", "flags", "fixed"))):
        store = HDF5Store(path)
        with h5py.File(path, "r") as f:
            for name in names:
                a = zarrcy.open_array(store, path=name, mode="r")
                for sel in _regions(a.shape, rng):
                    got = _in_thread(lambda: a[sel])
                    want = f[name][sel] if all(s.stop > s.start for s in sel) else np.empty(
                        tuple(s.stop - s.start for s in sel), f[name].dtype)
                    assert got.dtype == want.dtype.newbyteorder("="), name
                    assert np.array_equal(got, want), (name, sel)
                    seen += 1
        store.close()
    assert seen > 100


def test_region_reads_of_concatenated_files(tmp_path):
    paths = make_months(str(tmp_path / "m"), lens=(3, 4, 2), chunk_t=1)
    want = []
    for p in paths:
        with h5py.File(p, "r") as f:
            want.append(f["t2m"][...])
    whole = np.concatenate(want)
    store = HDF5Store(paths, concat_dim="time")
    a = zarrcy.open_array(store, path="t2m", mode="r")
    rng = np.random.default_rng(8)
    for sel in _regions(a.shape, rng, 20):
        assert np.array_equal(_in_thread(lambda: a[sel]), whole[sel]), sel
    store.close()


def test_convert_names_a_corrupt_chunk(tmp_path, capsys):
    """A damaged deflate stream: the conversion stops (exit 1) naming the source array
    and the chunk's key; --on-error skip writes the fill value for that chunk only."""
    path = str(tmp_path / "bad.h5")
    data = np.arange(4 * 100, dtype="<i4").reshape(4, 100)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 100), compression="gzip", fillvalue=-1)
        info = []
        f["v"].id.chunk_iter(info.append)
    with open(path, "r+b") as fh:
        fh.seek(info[2].byte_offset + 10)
        b = fh.read(1)
        fh.seek(info[2].byte_offset + 10)
        fh.write(bytes([b[0] ^ 0xFF]))
    assert convert_main([path, str(tmp_path / "o.zarr"), *Q]) == 1
    err = capsys.readouterr().err
    assert "source /v" in err and "v/c/2/0" in err
    assert convert_main([path, str(tmp_path / "o2.zarr"), "--on-error", "skip", *Q]) == 0
    got = zarrcy.open_array(str(tmp_path / "o2.zarr"), path="v", mode="r")[...]
    want = data.copy()
    want[2] = -1
    assert np.array_equal(got, want)


def test_inflate_without_libdeflate_zlib_entry_point(tmp_path, monkeypatch):
    """The codec's fallback (Python's zlib, when libdeflate's zlib entry point is not
    found) decodes the same values and refuses streams of the wrong size alike."""
    import zarrcy.codecs.hdf5 as ch

    monkeypatch.setattr(ch, "_HAVE_LIBDEFLATE", False)
    path = str(tmp_path / "fb.h5")
    data = np.random.default_rng(9).standard_normal((4, 30, 20)).astype("<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 30, 20), compression="gzip", shuffle=True)
        f.create_dataset("p", data=data, chunks=(1, 30, 20), compression="gzip")
        d = f.create_dataset("bad", shape=(2, 100), dtype="<i4", chunks=(1, 100), compression="gzip")
        d.id.write_direct_chunk((0, 0), zlib.compress(bytes(399), 4))
        d.id.write_direct_chunk((1, 0), zlib.compress(bytes(401), 4))
    store = HDF5Store(path)
    for name in ("v", "p"):
        assert np.array_equal(zarrcy.open_array(store, path=name, mode="r")[...], data)
    bad = zarrcy.open_array(store, path="bad", mode="r")
    for i in (0, 1):
        with pytest.raises(CorruptChunkError, match="deflate"):
            bad[i]
    store.close()
