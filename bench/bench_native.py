"""Native codec engine, dense rows (issue 21 item 6): float32 (4096, 4096), chunks
(512, 512), one row per codec -- Zarr v2 ``blosc`` (lz4 5 + shuffle), v2 ``zstd`` (0),
v2 ``zlib`` (1), v3 ``zstd`` (0, no checksum), v3 ``blosc`` (lz4 5 + shuffle), v3
``gzip`` (1) -- full read and full write beside zarr-python + the zarrs pipeline and
tensorstore (v3 only: tensorstore's zarr driver for v2 is not installed with it here),
each with its CPU/wall ratio (process CPU seconds over wall seconds: 2.0 = both cores
busy), and the codec's pure 2-thread decode limit: zarrcy's own engine decoding the
same stored chunks from memory on 2 threads (no store, no scatter).

Implementations are interleaved (each op runs once per implementation in turn; one
warm-up round, then ``repeat`` rounds; medians), so load changes hit all alike.
``python -m bench native [--quick] [--codec zstd,blosc]``.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from bench.common import Table, scratch_dir, smooth_field

CASES: dict[str, tuple[int, dict[str, Any] | list[dict[str, Any]]]] = {
    "v2 blosc-lz4": (2, {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
    "v2 zstd-0": (2, {"id": "zstd", "level": 0}),
    "v2 zlib-1": (2, {"id": "zlib", "level": 1}),
    "v3 zstd-0": (3, [{"name": "zstd", "configuration": {"level": 0, "checksum": False}}]),
    "v3 blosc-lz4": (3, [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                             "typesize": 4, "blocksize": 0}}]),
    "v3 gzip-1": (3, [{"name": "gzip", "configuration": {"level": 1}}]),
}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _timed(fn: Callable[[], Any]) -> tuple[float, float]:
    c0, t0 = _cpu(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return wall, (_cpu() - c0) / wall if wall > 0 else 0.0


def _meta(version: int, comp: Any, n: int, c: int) -> dict[str, Any]:
    if version == 2:
        return {"zarr_format": 2, "shape": [n, n], "chunks": [c, c], "dtype": "<f4", "compressor": comp,
                "fill_value": 0.0, "order": "C", "filters": None}
    return {"zarr_format": 3, "node_type": "array", "shape": [n, n], "data_type": "float32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, c]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0.0, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, *comp]}


def _write_meta(path: str, meta: dict[str, Any]) -> None:
    import json

    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    name = ".zarray" if meta["zarr_format"] == 2 else "zarr.json"
    with open(os.path.join(path, name), "w") as f:
        json.dump(meta, f)


def _decode_limit(path: str, version: int, threads: int) -> Callable[[], Any]:
    """zarrcy's engine over the stored chunks, in memory, on ``threads`` threads."""
    import zarrcy

    a = zarrcy.open_array(path, mode="r")
    pipe = a._pipeline  # noqa: SLF001 - the engine chain of this array's chunks
    chain = pipe.native_chain
    payloads = []
    for dirpath, _, files in os.walk(path):
        for f in files:
            if not f.startswith(".") and f != "zarr.json":
                with open(os.path.join(dirpath, f), "rb") as fh:
                    payloads.append(np.frombuffer(fh.read(), np.uint8))
    size = pipe.spec.nbytes
    outs = [np.empty(size, np.uint8) for _ in range(threads)]
    from zarrcy.codecs import _native

    def part(k: int) -> None:
        for p in payloads[k::threads]:
            _native.decode_into(chain, p, outs[k])

    ex = ThreadPoolExecutor(threads)
    return lambda: list(ex.map(part, range(threads)))


def run(quick: bool = False, threads: int | None = None, codec: list[str] | None = None) -> Table:
    import zarrcy

    n, c = (1024, 256) if quick else (4096, 512)
    repeat = 1 if quick else 5
    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    data = smooth_field((n, n))
    mb = data.nbytes / 2**20
    peers = ["zarrcy", "zarrs", "tensorstore", f"limit-{threads}t"]
    table = Table(f"Dense native codecs: float32 {data.shape}, chunks ({c}, {c}) ({mb:.0f} MiB), {threads} threads; "
                  "CPU/wall in the rows marked cpu", peers)
    d = scratch_dir()
    import zarr

    try:
        import tensorstore as ts
    except ImportError:  # pragma: no cover
        ts = None
    cases = {k: v for k, v in CASES.items() if not codec or any(x in k for x in codec)}
    for name, (version, comp) in cases.items():
        meta = _meta(version, comp, n, c)
        paths = {k: f"{d}/{name.replace(' ', '_')}-{k}" for k in ("zc", "zs", "ts")}
        impls: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}

        def zc_write(p: str = paths["zc"], m: dict[str, Any] = meta) -> None:
            _write_meta(p, m)
            zarrcy.open_array(p, mode="r+")[...] = data

        zc_write()
        zc = zarrcy.open_array(paths["zc"], mode="r")
        assert np.array_equal(zc[...], data)
        impls["zarrcy"] = (zc_write, lambda a=zc: a[...])
        try:
            import zarrs  # noqa: F401

            cfg = {"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": False}

            def zs_write(p: str = paths["zs"], m: dict[str, Any] = meta) -> None:
                _write_meta(p, m)
                with zarr.config.set(cfg):
                    zarr.open_array(p, mode="r+")[...] = data

            zs_write()

            def zs_read(p: str = paths["zs"]) -> Any:
                with zarr.config.set(cfg):
                    return zarr.open_array(p, mode="r")[...]

            impls["zarrs"] = (zs_write, zs_read)
        except ImportError:  # pragma: no cover
            pass
        if ts is not None and version == 3:
            spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": paths["ts"]}}

            def ts_write(p: str = paths["ts"], m: dict[str, Any] = meta) -> None:
                _write_meta(p, m)
                ts.open(spec | {"kvstore": {"driver": "file", "path": p}}).result().write(data).result()

            ts_write()
            tt = ts.open(spec, context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})).result()
            impls["tensorstore"] = (ts_write, lambda t=tt: t.read().result())
        limit = _decode_limit(paths["zc"], version, threads)
        reads: dict[str, list[tuple[float, float]]] = {k: [] for k in impls}
        writes: dict[str, list[tuple[float, float]]] = {k: [] for k in impls}
        lims: list[tuple[float, float]] = []
        for r in range(repeat + 1):  # round 0 warms up
            for k, (w, rd) in impls.items():
                t = _timed(rd)
                if r:
                    reads[k].append(t)
                if not quick or r == 0:
                    t = _timed(w)
                    if r:
                        writes[k].append(t)
            t = _timed(limit)
            if r:
                lims.append(t)

        def med(v: list[tuple[float, float]], i: int) -> float | None:
            return statistics.median(x[i] for x in v) if v else None

        lk = f"limit-{threads}t"
        table.add(f"{name} full read", {**{k: med(v, 0) for k, v in reads.items()}, lk: med(lims, 0)})
        table.add(f"{name} full read cpu", {**{k: med(v, 1) for k, v in reads.items()}, lk: med(lims, 1)}, unit="")
        table.add(f"{name} full write", {k: med(v, 0) for k, v in writes.items()})
        table.add(f"{name} full write cpu", {k: med(v, 1) for k, v in writes.items()}, unit="")
    shutil.rmtree(d, ignore_errors=True)
    return table
