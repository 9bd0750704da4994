"""Zarr v2 reading and ``zarrcy convert`` (issue 6).

1. Read a zarr-python-written v2 float32 (4096, 4096) array, chunks (512, 512), with
   Blosc(lz4, shuffle) and with Zstd(0) (zarr-python 3.4's v2 default): zarrcy,
   zarr-python, zarr-python + zarrs pipeline, tensorstore, and the decode floor
   (numcodecs decoding every chunk payload on N threads, no I/O, no assembly).
2. Convert a zarr-python-written 1 GiB v2 array (float32, chunks 256², Blosc lz4
   shuffle) into v3 with shards 4096² / inner chunks 256² / zstd, and the same with
   ``--quantize`` to uint8: ``zarrcy convert`` vs the zarr-python way (``zarr.open`` +
   ``create_array`` + a shard-by-shard copy).  Each conversion runs in its own
   subprocess so its peak RSS is measured alone (shown in the row label, MiB).

``run(quick=True)`` shrinks everything (a smoke run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench.common import Table, scratch_dir, timeit


def _field(r0: int, r1: int, n: int) -> np.ndarray:
    y = np.linspace(0, 6 * np.pi, n, dtype=np.float32)[r0:r1, None]
    x = np.linspace(0, 6 * np.pi, n, dtype=np.float32)[None, :]
    rng = np.random.default_rng(r0)
    f = np.sin(y) + np.sin(1.3 * x) + rng.normal(0, 0.01, (r1 - r0, n)).astype(np.float32)
    return np.round(f, 3).astype(np.float32)


def _write_v2(path: str, n: int, chunks: int, compressor) -> None:
    import zarr

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(path, shape=(n, n), dtype="float32", chunks=(chunks, chunks), zarr_format=2,
                              compressors=compressor, overwrite=True)
        step = max(chunks, (64 << 20) // (4 * n) // chunks * chunks)
        for r in range(0, n, step):
            z[r:r + step] = _field(r, min(n, r + step), n)


def _decode_floor(path: str, threads: int, codec) -> float:
    keys = [os.path.join(path, k) for k in os.listdir(path) if not k.startswith(".")]
    payloads = []
    for k in keys:
        with open(k, "rb") as f:
            payloads.append(f.read())
    with ThreadPoolExecutor(threads) as ex:
        return timeit(lambda: list(ex.map(codec.decode, payloads)), 3)


def _read_rows(table: Table, d: str, n: int, c: int, threads: int, quick: bool) -> None:
    import numcodecs

    import zarrcy

    repeat = 1 if quick else 5
    for label, comp in (("Blosc(lz4, shuffle)", numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE)),
                        ("Zstd(0)", numcodecs.Zstd(0))):
        path = f"{d}/read-{label[:4]}.zarr"
        _write_v2(path, n, c, comp)
        res: dict[str, float | None] = {}
        za = zarrcy.open_array(path, mode="r")
        res["zarrcy"] = timeit(lambda: za[...], repeat)
        try:
            import zarr

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                zp = zarr.open_array(path, mode="r")
                res["zarr-python"] = timeit(lambda: zp[...], repeat)
                try:
                    import zarrs  # noqa: F401

                    with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}):
                        zs = zarr.open_array(path, mode="r")
                        res["zarrs"] = timeit(lambda: zs[...], repeat)
                except Exception:  # zarrs missing or unable to read this v2 array
                    res["zarrs"] = None
        except ImportError:
            pass
        try:
            import tensorstore as ts

            t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": path}}, open=True).result()
            res["tensorstore"] = timeit(lambda: t.read().result(), repeat)
        except ImportError:
            pass
        res[f"floor-{threads}t"] = _decode_floor(path, threads, comp)
        table.add(f"read v2 {n}² {label}", res)


_CHILD = r"""
import json, sys, time, warnings
warnings.simplefilter("ignore")
job = json.loads(sys.argv[1])
import zarrcy, zarrcy.convert, zarrcy.v2, zarrcy.codecs.sharding, zarrcy.codecs.zstd, zarrcy.codecs.blosc
import zarrcy.codecs.cast_value, zarrcy.codecs.scale_offset, zarrcy.casting, numcodecs.blosc, numcodecs.zstd, crc32c
zarrcy.config(threads=job["threads"])
t0 = time.perf_counter()  # imports excluded (both sides)
zarrcy.convert(job["src"], job["dst"], shards=job["shards"], chunks=job["chunks"], compressor="zstd:0",
               quantize=job["quantize"], quantize_check=job.get("check", "inline"), workers=job["workers"],
               progress="off", overwrite=True)
"""

_CHILD_ZP = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
job = json.loads(sys.argv[1])
import numpy as np, zarr
from zarr.codecs import ZstdCodec
t0 = time.perf_counter()  # imports excluded (both sides)
src = zarr.open_array(job["src"], mode="r")
filters = job["filters"]
dst = zarr.create_array(job["dst"], shape=src.shape, dtype=src.dtype, chunks=tuple(job["chunks"]),
                        shards=tuple(job["shards"]), compressors=[ZstdCodec(level=0)], filters=filters,
                        fill_value=src.fill_value if src.fill_value is not None else 0, overwrite=True)
s0, s1 = job["shards"]
for i in range(0, src.shape[0], s0):
    for j in range(0, src.shape[1], s1):
        dst[i:i + s0, j:j + s1] = src[i:i + s0, j:j + s1]
"""

_TAIL = r"""
seconds = time.perf_counter() - t0
hwm = 0.0
with open("/proc/self/status") as f:  # VmHWM: this process image's peak RSS (ru_maxrss survives exec)
    for line in f:
        if line.startswith("VmHWM:"):
            hwm = int(line.split()[1]) / 1024
if not hwm:
    import resource
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "maxrss_mib": hwm}))
"""


def _child(code: str, job: dict) -> dict | None:
    env = dict(os.environ)  # -P: the child imports the installed zarrcy, never the source tree
    p = subprocess.run([sys.executable, "-P", "-c", code + _TAIL, json.dumps(job)], capture_output=True, text=True, env=env)
    if p.returncode != 0:
        print(f"  ({job['who']} conversion failed: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else p.returncode})")
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def _compress_floor(src: str, n: int, c: int, threads: int) -> tuple[float, float]:
    """The destination's compression alone: zstd level 0 of every (c, c) chunk on
    ``threads`` threads, no I/O, no decoding, no quantizing -- float32 chunks for the plain
    conversion, the quantized uint8 chunks for ``--quantize``.  Timed on a quarter of the
    rows (at most 4096) and scaled to the whole array."""
    import numcodecs.zstd as nz

    import zarrcy

    rows = min(n, 4096)
    block = zarrcy.open_array(src, mode="r")[:rows]
    f32 = [np.ascontiguousarray(block[i:i + c, j:j + c]) for i in range(0, rows, c) for j in range(0, n, c)]
    u8 = [np.clip(np.rint((x + np.float32(2.5)) * np.float32(50)), 0, 255).astype(np.uint8) for x in f32]
    scale = n / rows
    with ThreadPoolExecutor(threads) as ex:
        return tuple(scale * timeit(lambda xs=xs: list(ex.map(lambda x: nz.compress(x, 0), xs)), 1) for xs in (f32, u8))


def _convert_rows(table: Table, d: str, n: int, c: int, shard: int, threads: int) -> None:
    import numcodecs

    src = f"{d}/big-v2.zarr"
    _write_v2(src, n, c, numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    size_mib = n * n * 4 / 2**20
    quant = "scale=50,offset=-2.5,dtype=uint8,rounding=nearest-even,out_of_range=clamp"
    floors = _compress_floor(src, n, c, threads)
    for label, q, check in (("zstd", None, "inline"), ("quantize uint8 + zstd", quant, "inline"),
                            ("quantize uint8 + zstd, --quantize-check first", quant, "first")):
        job = {"src": src, "dst": f"{d}/out-zc.zarr", "shards": f"{shard},{shard}", "chunks": f"{c},{c}",
               "quantize": q, "check": check, "workers": threads, "threads": threads, "who": "zarrcy"}
        zc = _child(_CHILD, job)
        zp_filters = None
        if q:
            zp_filters = [{"name": "scale_offset", "configuration": {"offset": -2.5, "scale": 50}},
                          {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                                   "out_of_range": "clamp"}}]
        zpj = {"src": src, "dst": f"{d}/out-zp.zarr", "shards": [shard, shard], "chunks": [c, c], "filters": zp_filters,
               "who": "zarr-python"}
        zp = _child(_CHILD_ZP, zpj)
        rss = f"peak RSS MiB zarrcy {zc['maxrss_mib']:.0f}" if zc else "peak RSS MiB zarrcy n/a"
        rss += f" / zarr-python {zp['maxrss_mib']:.0f}" if zp else " / zarr-python n/a"
        budget = 4 * (shard * shard * 4 / 2**20) * threads + 200
        table.add(f"convert {size_mib:.0f} MiB v2 -> v3 shards {shard}² {label} ({rss}; budget {budget:.0f})",
                  {"zarrcy": zc["seconds"] if zc else None, "zarr-python": zp["seconds"] if zp else None,
                   f"floor-{threads}t": floors[bool(q)]})
        for k in ("out-zc.zarr", "out-zp.zarr"):
            shutil.rmtree(f"{d}/{k}", ignore_errors=True)


def run(quick: bool = False, threads: int | None = None) -> Table:
    import zarrcy

    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    n, c = (1024, 256) if quick else (4096, 512)
    big_n, big_c, shard = (2048, 128, 512) if quick else (16384, 256, 4096)
    peers = ["zarrcy", "zarr-python", "zarrs", "tensorstore", f"floor-{threads}t"]
    table = Table(f"Zarr v2 read and convert ({threads} threads)", peers)
    d = scratch_dir("zarrcy-bench-convert-")
    try:
        _read_rows(table, d, n, c, threads, quick)
        _convert_rows(table, d, big_n, big_c, shard, threads)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return table


if __name__ == "__main__":  # pragma: no cover
    t = run(quick="--quick" in sys.argv)
    print(t.markdown())
