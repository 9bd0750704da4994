"""Helpers for the conversion tests: a Zarr v2 hierarchy written by zarr-python 3.4
(zarr_format=2) with F order, "/" separators, NaN fills, filters and attributes."""

from __future__ import annotations

import os
import warnings

import numcodecs
import numpy as np


def make_v2_hierarchy(root: str, writer: str = "zarr-python") -> dict[str, np.ndarray]:
    """Write the fixture with zarr-python (``writer="zarr-python"``) or zarrcy's own v2
    writer (``"zarrcy"``); returns {array path: expected values}."""
    if writer == "zarrcy":
        return _make_v2_hierarchy_zarrcy(root)
    import zarr

    rng = np.random.default_rng(7)
    out: dict[str, np.ndarray] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = zarr.open_group(root, mode="w", zarr_format=2)
        g.attrs["title"] = "fixture"
        a = rng.normal(size=(70, 50)).astype("<f4")
        a[3, 4] = np.nan
        z = g.create_array("temp", shape=a.shape, dtype=a.dtype, chunks=(16, 16), fill_value=np.nan,
                           compressors=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
        z[...] = a
        z[64:, 48:] = np.nan
        a[64:, 48:] = np.nan
        z.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
        z.attrs["units"] = "K"
        out["temp"] = a
        sub = g.create_group("sub")
        sub.attrs["level"] = 1
        f = np.arange(33 * 21, dtype=">i4").reshape(33, 21)
        zf = sub.create_array("fortran", shape=f.shape, dtype=f.dtype, chunks=(10, 8), order="F", fill_value=-1,
                              chunk_key_encoding={"name": "v2", "separator": "/"}, compressors=numcodecs.Zstd(1))
        zf[...] = f
        out["sub/fortran"] = f
        d = np.cumsum(rng.integers(0, 5, 200)).astype("<i8")
        zd = sub.create_array("delta", shape=d.shape, dtype=d.dtype, chunks=(32,), filters=[numcodecs.Delta("<i8")],
                              compressors=numcodecs.Zlib(3))
        zd[...] = d
        out["sub/delta"] = d
        q = np.linspace(0, 100, 40 * 30).reshape(40, 30)
        zq = g.create_array("scaled", shape=q.shape, dtype="<f8", chunks=(16, 16),
                            filters=[numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f8", astype="<u2")],
                            compressors=numcodecs.GZip(1), fill_value=0)
        zq[...] = q
        out["scaled"] = zq[...]
        e = g.create_array("empty", shape=(10, 10), dtype="<f8", chunks=(5, 5), fill_value=None)
        out["empty"] = e[...]
    return out


def stored_objects(root: str) -> dict[str, bytes]:
    """Every file under ``root`` (relative path -> bytes)."""
    out: dict[str, bytes] = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = fh.read()
    return out


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def _make_v2_hierarchy_zarrcy(root: str) -> dict[str, np.ndarray]:
    """The same hierarchy written by zarrcy's v2 writer."""
    import zarrcy
    from zarrcy.storage import store_from_url
    from zarrcy.creation import create_group_v2

    rng = np.random.default_rng(7)
    out: dict[str, np.ndarray] = {}
    st = store_from_url(root, mode="a")
    create_group_v2(st, "", attributes={"title": "fixture"}, overwrite=True)
    a = rng.normal(size=(70, 50)).astype("<f4")
    a[3, 4] = np.nan
    a[64:, 48:] = np.nan
    z = zarrcy.create_array(st, name="temp", shape=a.shape, dtype=a.dtype, chunks=(16, 16), zarr_format=2,
                            fill_value=np.nan, compressors=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE),
                            attributes={"_ARRAY_DIMENSIONS": ["y", "x"], "units": "K"})
    z[...] = a
    out["temp"] = a
    create_group_v2(st, "sub", attributes={"level": 1})
    f = np.arange(33 * 21, dtype=">i4").reshape(33, 21)
    from zarrcy.v2 import V2ArrayMetadata

    meta = V2ArrayMetadata.create(shape=f.shape, dtype=f.dtype, chunks=(10, 8), fill_value=-1, order="F",
                                  compressor=numcodecs.Zstd(1), dimension_separator="/")
    zf = zarrcy.create_array(st, name="sub/fortran", zarr_format=2, metadata=meta.to_json())
    zf[...] = f
    out["sub/fortran"] = f
    d = np.cumsum(rng.integers(0, 5, 200)).astype("<i8")
    zd = zarrcy.create_array(st, name="sub/delta", shape=d.shape, dtype=d.dtype, chunks=(32,), zarr_format=2,
                             filters=[numcodecs.Delta("<i8")], compressors=numcodecs.Zlib(3))
    zd[...] = d
    out["sub/delta"] = d
    q = np.linspace(0, 100, 40 * 30).reshape(40, 30)
    zq = zarrcy.create_array(st, name="scaled", shape=q.shape, dtype="<f8", chunks=(16, 16), zarr_format=2,
                             filters=[numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f8", astype="<u2")],
                             compressors=numcodecs.GZip(1), fill_value=0)
    zq[...] = q
    out["scaled"] = zq[...]
    e = zarrcy.create_array(st, name="empty", shape=(10, 10), dtype="<f8", chunks=(5, 5), zarr_format=2, fill_value=None)
    out["empty"] = e[...]
    return out


def journal_done(dst: str) -> int:
    """Regions the convert journal at ``dst`` records as finished."""
    n = 0
    for dirpath, _dirs, files in os.walk(os.path.join(dst, "__zarrcy_convert")):
        if os.path.basename(dirpath) == "__done":
            n += len(files)
    return n


def kill_convert_after(args: list[str], dst: str, regions: int, timeout: float = 60) -> None:
    """Run ``zarrcy convert *args`` (``--workers 2``, slowed regions) in a child and SIGKILL
    it once the journal at ``dst`` records ``regions`` finished regions."""
    import signal
    import subprocess
    import sys
    import time

    env = dict(os.environ, ZARRCY_CONVERT_REGION_DELAY="0.05")
    proc = subprocess.Popen([sys.executable, "-m", "zarrcy", "convert", *args, "--workers", "2"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while journal_done(dst) < regions:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:  # pragma: no cover
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()
