"""HDF5 / NetCDF-4 -> Zarr v3 conversion (issue 17): ``zarrcy convert`` beside
``xarray.open_mfdataset(...).to_zarr`` (zarr-python 3.4, dask threads).

The benchmark writes a NetCDF-4 file (netCDF4-python): a float32 (365, 721, 1440)
smooth field with noise (1.4 GiB decoded), HDF5 chunks (1, 721, 1440), zlib level 4,
time/lat/lon coordinate variables; and the same data split into 12 monthly files.
Rows (each conversion in its own subprocess: its peak RSS is measured alone and shown
in the label with the issue's budget, 4 x (shard size x workers) + 200 MB):

1. one file -> v3, shards (12, 721, 1440) of (1, 721, 1440) chunks, zstd level 0;
2. the 12 files -> one array along time (``--concat-dim time``; xarray
   ``open_mfdataset`` then ``.chunk`` to the shard size);
3. as 2 with ``--quantize`` to uint16 (xarray: ``encoding`` scale_factor/add_offset/
   dtype uint16);
4. as 2, but each monthly file carries its own time units (``days since`` the first day
   of its month, values 0, 1, ...: how files written one month at a time by xarray /
   netCDF4 usually look; issue 22): zarrcy re-encodes the time values onto the first
   file's units, xarray decodes and re-encodes them in ``open_mfdataset(...).to_zarr``.

xarray's dask chunks are one shard (12 steps), as in the issue's reference timing.
Both sides write the same codecs: ``bytes`` + ``zstd`` level 0 (libzstd's default, 3;
no checksum) inside ``sharding_indexed`` shards of 12 (1, 721, 1440) chunks.

The ``limit-Nt`` column is the codec-bound floor of each row (:func:`limit`):
every source chunk inflated by libdeflate (+ HDF5's unshuffle) and every destination
chunk zstd-encoded at the same level, on the same N threads, from memory (no file
I/O, no shard assembly); the label splits it into its inflate and encode parts.  The
labels also give each child's CPU seconds (user + system): on a shared machine they
say more than wall times.

``run(quick=True)``: a (36, 91, 180) field in 12 files of 3 steps (a smoke run).
``ZARRCY_BENCH_HDF5_STEPS=N``: N full-size (721, 1440) steps (the full run: 365) in 12
files, for reduced runs on a shared machine.  ``ZARRCY_BENCH_HDF5_ZSTD_LEVEL=L``: zstd
level L on both sides and in the limit (default 0, libzstd's default level 3).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench.common import Table, scratch_dir

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
QUANT = {"offset": -4.0, "scale": 8000.0}  # the field lies in [-3.1, 3.1]: (x + 4) * 8000 < 65535


def _step(t: int, ny: int, nx: int) -> np.ndarray:
    """Time step ``t`` (the same in the yearly and the monthly files)."""
    rng = np.random.default_rng(t)
    y = np.linspace(0, np.pi, ny, dtype=np.float32)[:, None]
    x = np.linspace(0, 2 * np.pi, nx, dtype=np.float32)[None, :]
    ph = np.float32(t * 2 * np.pi / 365)
    f = np.sin(y * 3 + ph) + np.cos(x * 2 - ph) + np.float32(0.5) * np.sin(x * 5 + y * 7)
    f = f + rng.normal(0, 0.02, (ny, nx)).astype(np.float32)
    return np.round(f, 3).astype(np.float32)


def _write(path: str, t0: int, nt: int, ny: int, nx: int, own_units: bool = False) -> None:
    """``own_units``: time in days since this file's first day (values 0, 1, ...)."""
    import netCDF4

    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", ny)
        ds.createDimension("lon", nx)
        t = ds.createVariable("time", "f8", ("time",))
        first = np.datetime64("2001-01-01") + np.timedelta64(t0, "D")
        t.units = f"days since {first if own_units else '2001-01-01'}"
        t.calendar = "standard"
        t[:] = np.arange(0 if own_units else t0, (0 if own_units else t0) + nt, dtype="f8")
        la = ds.createVariable("lat", "f4", ("lat",))
        la.units = "degrees_north"
        la[:] = np.linspace(90, -90, ny, dtype="f4")
        lo = ds.createVariable("lon", "f4", ("lon",))
        lo.units = "degrees_east"
        lo[:] = np.linspace(0, 360, nx, endpoint=False, dtype="f4")
        v = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), zlib=True, complevel=4,
                              chunksizes=(1, ny, nx), fill_value=np.float32("nan"))
        v.units = "1"
        for i in range(nt):
            v[i] = _step(t0 + i, ny, nx)


_CHILD_ZC = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
job = json.loads(sys.argv[1])
import zarrcy, zarrcy.convert, zarrcy.convert.hdf5, zarrcy.storage.hdf5, zarrcy.codecs.hdf5, h5py, deflate
import zarrcy.codecs.sharding, zarrcy.codecs.zstd, zarrcy.codecs.cast_value, zarrcy.codecs.scale_offset, crc32c
zarrcy.config(threads=job["threads"])
t0, c0 = time.perf_counter(), time.process_time()  # imports excluded (both sides)
zarrcy.convert(job["src"], job["dst"], concat_dim=job["concat_dim"], shards=job["shards"], chunks=job["chunks"],
               compressor=f"zstd:{job['level']}", quantize=job["quantize"], workers=job["threads"], progress="off", overwrite=True)
"""

_CHILD_XR = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
job = json.loads(sys.argv[1])
import dask, numpy as np, xarray as xr, zarr, netCDF4
from zarr.codecs import ZstdCodec
dask.config.set(scheduler="threads", num_workers=job["threads"])
t0, c0 = time.perf_counter(), time.process_time()  # imports excluded (both sides)
ds = xr.open_mfdataset(job["srcs"], combine="by_coords", data_vars="minimal", coords="minimal", compat="override",
                       chunks={"time": job["tchunk"]})
ds = ds.chunk({"time": job["tchunk"]})
enc = {"t2m": {"compressors": [ZstdCodec(level=job["level"])], "chunks": tuple(job["chunks"]), "shards": tuple(job["shards"])}}
if job["quantize"]:
    enc["t2m"].update(dtype="uint16", scale_factor=1 / job["quantize"]["scale"], add_offset=job["quantize"]["offset"],
                      _FillValue=65535)
ds.to_zarr(job["dst"], mode="w", zarr_format=3, encoding=enc, consolidated=False)
"""

_TAIL = r"""
seconds = time.perf_counter() - t0
cpu = time.process_time() - c0
hwm = 0.0
with open("/proc/self/status") as f:  # VmHWM: this process image's peak RSS
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
print(json.dumps({"seconds": seconds, "cpu": cpu, "maxrss_mib": hwm}))
"""


def _child(code: str, job: dict) -> dict | None:
    p = subprocess.run([sys.executable, "-P", "-c", code + _TAIL, json.dumps(job)], capture_output=True, text=True,
                       env=dict(os.environ))
    if p.returncode != 0:
        last = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode
        print(f"  ({job['who']} conversion failed: {last})")
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def _check(dst: str, src_file: str, t: int, quantized: bool) -> None:
    """One time step of zarrcy's output equals the source (quantized: within the step)."""
    import netCDF4

    import zarrcy

    got = zarrcy.open_array(dst, path="t2m", mode="r")[t]
    with netCDF4.Dataset(src_file) as ds:
        want = ds["t2m"][0].filled(np.nan)
    ok = np.allclose(got, want, atol=1 / QUANT["scale"]) if quantized else np.array_equal(got, want)
    if not ok:
        raise AssertionError(f"bench_hdf5: zarrcy output differs from the source at time step {t}")
    time = zarrcy.open_array(dst, path="time", mode="r")
    if time.attrs["units"] != "days since 2001-01-01" or not np.array_equal(time[...], np.arange(time.shape[0])):
        raise AssertionError("bench_hdf5: zarrcy's time coordinate is not days 0, 1, ... since 2001-01-01")


def limit(path: str, threads: int, level: int = 0, var: str = "t2m",
          quant: dict[str, float] | None = None) -> tuple[float, float, float]:
    """(inflate seconds, encode seconds, CPU seconds of both): the codec work of converting ``var`` of ``path``
    on ``threads`` threads, from memory.  Batches of raw chunks are read first (not
    timed); each batch is inflated (libdeflate's zlib entry point, GIL released, into
    per-thread buffers) and unshuffled, then every decoded chunk is zstd-encoded at
    ``level`` (numcodecs, GIL released): the destination chunks are the source's.
    ``quant`` (``QUANT``): the chunks encoded are the uint16 codes of the ``--quantize``
    row instead (``(x - offset) * scale`` rounded, NaN as 65535), computed between the
    two timed steps and not timed: the floor of that row's codec work."""
    import h5py
    import numcodecs.zstd as nz

    import zarrcy.codecs.gzip  # noqa: F401  (resolves libdeflate's entry points)
    from zarrcy._kernels import _deflate as K
    from zarrcy._kernels._shuffle import unshuffle_into

    with h5py.File(path, "r") as f:
        ds = f[var]
        shuffle = bool(ds.shuffle)
        nbytes = int(np.prod(ds.chunks)) * ds.dtype.itemsize
        itemsize = ds.dtype.itemsize
        ds_dtype = ds.dtype
        idx: list[tuple[int, int]] = []
        ds.id.chunk_iter(lambda si: idx.append((int(si.byte_offset), int(si.size))))
    idx.sort()
    local = threading.local()

    def inflate(raw: np.ndarray) -> np.ndarray:
        out = np.empty(nbytes, np.uint8)
        tmp = getattr(local, "tmp", None)
        if tmp is None:
            tmp = local.tmp = np.empty(nbytes, np.uint8)
        code, _ = K.zlib_decompress_into(raw, tmp if shuffle else out)
        if code != nbytes:
            raise RuntimeError(f"limit: libdeflate returned {code}")
        if shuffle:
            unshuffle_into(tmp, out, itemsize)
        return out

    batch = 8 * threads
    t_inf = t_enc = cpu = 0.0
    fd = os.open(path, os.O_RDONLY)
    try:
        with ThreadPoolExecutor(threads) as ex:
            decoded = list(ex.map(inflate, [np.frombuffer(os.pread(fd, n, o), np.uint8) for o, n in idx[:threads]]))
            list(ex.map(lambda a: nz.compress(a, level), decoded))  # warm-up: thread-local buffers, pools
            for b in range(0, len(idx), batch):
                raws = [np.frombuffer(os.pread(fd, n, o), np.uint8) for o, n in idx[b:b + batch]]
                t0, c0 = time.perf_counter(), time.process_time()
                decoded = list(ex.map(inflate, raws))
                t1, c1 = time.perf_counter(), time.process_time()
                if quant is not None:
                    decoded = [_codes(a, ds_dtype, quant) for a in decoded]
                t1b, c1b = time.perf_counter(), time.process_time()
                list(ex.map(lambda a: nz.compress(a, level), decoded))
                t2 = time.perf_counter()
                cpu += time.process_time() - c0 - (c1b - c1)
                t_inf += t1 - t0
                t_enc += t2 - t1b
                del decoded
    finally:
        os.close(fd)
    return t_inf, t_enc, cpu


def _codes(raw: np.ndarray, dtype: np.dtype, quant: dict[str, float]) -> np.ndarray:
    """The ``--quantize`` row's uint16 codes of one decoded chunk (the limit's input)."""
    x = (raw.view(dtype).astype(np.float64) - quant["offset"]) * quant["scale"]
    nan = np.isnan(x)
    codes = np.clip(np.rint(np.where(nan, 0.0, x)), 0, 65534).astype(np.uint16)
    codes[nan] = 65535
    return codes


def _read_row(table: Table, path: str, steps: int, threads: int, step_mib: float) -> None:
    """User-level read of the first ``steps`` steps: ``zarrcy.open_array(file, path=...)[...]``
    (the HDF5 layer's own chunk reads and GIL-free decode, ``threads`` threads) against
    h5py's ``ds[...]``, in this process, interleaved, median of 3 after a warm-up."""
    import h5py

    import zarrcy

    def zc() -> np.ndarray:
        with zarrcy.config.set(threads=threads):
            return zarrcy.open_array(path, path="t2m", mode="r")[:steps]

    def h5() -> np.ndarray:
        with h5py.File(path, "r") as f:
            return f["t2m"][:steps]

    if not np.array_equal(zc(), h5(), equal_nan=True):  # warm-up and check
        raise SystemExit("bench hdf5: zarrcy's read differs from h5py's")
    times: dict[str, list[float]] = {"zarrcy": [], "h5py": []}
    for _ in range(3):
        for who, fn in (("zarrcy", zc), ("h5py", h5)):
            t = time.perf_counter()
            fn()
            times[who].append(time.perf_counter() - t)
    table.add(f"read {steps * step_mib:.0f} MiB ({steps} steps) of the NetCDF-4 file into numpy "
              f"(load {os.getloadavg()[0]:.2f})", {k: float(np.median(v)) for k, v in times.items()})


def _steps() -> int | None:
    raw = os.environ.get("ZARRCY_BENCH_HDF5_STEPS")
    if not raw:
        return None
    n = int(raw)
    if n < 12:
        raise SystemExit("ZARRCY_BENCH_HDF5_STEPS: expected at least 12 steps (one per monthly file)")
    return n


def run(quick: bool = False, threads: int | None = None) -> Table:
    threads = threads or os.cpu_count() or 1
    steps = None if quick else _steps()
    nt, ny, nx = (36, 91, 180) if quick else (steps or 365, 721, 1440)
    months: tuple[int, ...] = (3,) * 12 if quick else MONTHS
    if steps is not None:  # reduced run: the steps spread over the 12 files
        months = tuple(steps // 12 + (1 if i < steps % 12 else 0) for i in range(12))
    tchunk = 12
    level = int(os.environ.get("ZARRCY_BENCH_HDF5_ZSTD_LEVEL", "0"))  # both sides and the limit
    lim = f"limit-{threads}t"
    peers = ["zarrcy", "xarray+zarr-python", "h5py", lim]
    table = Table(f"HDF5 / NetCDF-4 -> Zarr v3 ({threads} threads)", peers)
    d = scratch_dir("zarrcy-bench-hdf5-")
    try:
        one = f"{d}/year.nc"
        _write(one, 0, nt, ny, nx)
        monthly, own = [], []
        t0 = 0
        for i, n in enumerate(months):
            p = f"{d}/month{i + 1:02d}.nc"
            _write(p, t0, n, ny, nx)
            monthly.append(p)
            p = f"{d}/own{i + 1:02d}.nc"
            _write(p, t0, n, ny, nx, own_units=True)
            own.append(p)
            t0 += n
        step_mib = ny * nx * 4 / 2**20
        shard_mib = step_mib * tchunk
        budget = 4 * shard_mib * threads + 200
        chunks, shards = [1, ny, nx], [tchunk, ny, nx]
        t_inf, t_enc, t_cpu = limit(one, threads, level)
        print(f"  {lim}: libdeflate inflate + unshuffle {t_inf:.3f} s + zstd level {level} encode {t_enc:.3f} s "
              f"= {t_inf + t_enc:.3f} s, CPU {t_cpu:.2f} s (load avg {os.getloadavg()[0]:.2f})", flush=True)
        q_inf, q_enc, q_cpu = limit(one, threads, level, quant=QUANT)
        print(f"  {lim} of --quantize uint16: inflate + unshuffle {q_inf:.3f} s + zstd level {level} encode of the "
              f"codes {q_enc:.3f} s = {q_inf + q_enc:.3f} s, CPU {q_cpu:.2f} s (the cast not counted)", flush=True)
        _read_row(table, one, min(nt, 60), threads, step_mib)
        rows = (("1 file", one, [one], None, None),
                ("12 files --concat-dim time", f"{d}/month*.nc", monthly, "time", None),
                ("12 files --concat-dim time, --quantize uint16", f"{d}/month*.nc", monthly, "time", QUANT),
                ("12 files with per-file time units --concat-dim time", f"{d}/own*.nc", own, "time", None))
        for label, src, srcs, concat, quant in rows:
            qs = f"offset={quant['offset']},scale={quant['scale']},dtype=uint16,nan=65535" if quant else None
            zc = _child(_CHILD_ZC, {"src": src, "dst": f"{d}/zc.zarr", "concat_dim": concat,
                                    "shards": ",".join(map(str, shards)), "chunks": ",".join(map(str, chunks)),
                                    "quantize": qs, "threads": threads, "who": "zarrcy", "level": level})
            if zc is not None:
                _check(f"{d}/zc.zarr", (srcs if len(srcs) > 1 else monthly)[1], months[0], bool(quant))
            xr = _child(_CHILD_XR, {"srcs": srcs, "dst": f"{d}/xr.zarr", "tchunk": tchunk, "chunks": chunks,
                                    "shards": shards, "quantize": quant, "threads": threads, "who": "xarray",
                                    "level": level})
            rss = f"peak RSS MiB zarrcy {zc['maxrss_mib']:.0f}" if zc else "peak RSS MiB zarrcy n/a"
            rss += f" / xarray {xr['maxrss_mib']:.0f}" if xr else " / xarray n/a"
            cpu = f"CPU s zarrcy {zc['cpu']:.2f}" if zc else "CPU s zarrcy n/a"
            cpu += f" / xarray {xr['cpu']:.2f}" if xr else " / xarray n/a"
            cpu += f" / limit {q_cpu if quant else t_cpu:.2f}"
            table.add(f"{nt * step_mib:.0f} MiB NetCDF-4 {label} -> v3 shards {tchunk} steps zstd"
                      f"{'' if level == 0 else f' level {level}'} "
                      f"({rss}; budget {budget:.0f}; {cpu}; load {os.getloadavg()[0]:.2f})",
                      {"zarrcy": zc["seconds"] if zc else None, "xarray+zarr-python": xr["seconds"] if xr else None,
                       lim: q_inf + q_enc if quant else t_inf + t_enc})
            for k in ("zc.zarr", "xr.zarr"):
                shutil.rmtree(f"{d}/{k}", ignore_errors=True)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return table


if __name__ == "__main__":  # pragma: no cover
    t = run(quick="--quick" in sys.argv)
    print(t.markdown())
