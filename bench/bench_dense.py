"""Dense-gzip workload (issue: arrays): float32 (4096, 4096), chunks (512, 512),
bytes + gzip(level 1), smooth field + small noise rounded to 3 decimals.

Side by side in one process: zarrcy, zarr-python 3.4 (default pipeline), zarr-python +
zarrs pipeline, tensorstore; plus the codec-bound limit (libdeflate through the
``deflate`` package over the same chunk payloads, 1 and N threads)."""

from __future__ import annotations

import os
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from bench.common import Table, scratch_dir, smooth_field, timeit


def run(quick: bool = False, threads: int | None = None) -> Table:
    import zarrcy
    from zarrcy.codecs import GzipCodec

    n = 1024 if quick else 4096
    c = 256 if quick else 512
    repeat = 1 if quick else 5
    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    data = smooth_field((n, n))
    mb = data.nbytes / 2**20
    peers = ["zarrcy", "zarr-python", "zarrs", "tensorstore", "limit-1t", f"limit-{threads}t"]
    table = Table(f"Dense gzip workload: float32 {data.shape}, chunks ({c}, {c}), gzip 1 ({mb:.0f} MiB), {threads} threads", peers)
    d = scratch_dir()
    paths = {k: f"{d}/{k}" for k in ("zc", "zp", "zs", "ts")}

    def zc_write() -> None:
        a = zarrcy.create_array(paths["zc"], shape=data.shape, dtype=data.dtype, chunks=(c, c),
                                compressors=[GzipCodec(level=1)], overwrite=True)
        a[...] = data

    write: dict[str, float | None] = {"zarrcy": timeit(zc_write, repeat)}
    zc = zarrcy.open_array(paths["zc"], mode="r")
    assert np.array_equal(zc[...], data)
    read: dict[str, float | None] = {"zarrcy": timeit(lambda: zc[...], repeat)}
    i, j = n // 3 + 1, n // 5 + 2
    point: dict[str, float | None] = {"zarrcy": timeit(lambda: zc[i, j], max(repeat, 20))}

    try:
        import zarr
        from zarr.codecs import GzipCodec as ZGzip

        def zp_write(path: str) -> None:
            a = zarr.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(c, c),
                                  compressors=[ZGzip(level=1)], overwrite=True)
            a[...] = data

        write["zarr-python"] = timeit(lambda: zp_write(paths["zp"]), repeat)
        zp = zarr.open_array(paths["zp"], mode="r")
        read["zarr-python"] = timeit(lambda: zp[...], repeat)
        point["zarr-python"] = timeit(lambda: zp[i, j], max(repeat, 20))
        try:
            import zarrs  # noqa: F401

            with zarr.config.set({"codec_pipeline.path": "zarrs.ZarrsCodecPipeline", "codec_pipeline.strict": True}):
                write["zarrs"] = timeit(lambda: zp_write(paths["zs"]), repeat)
                zs = zarr.open_array(paths["zs"], mode="r")
                read["zarrs"] = timeit(lambda: zs[...], repeat)
                point["zarrs"] = timeit(lambda: zs[i, j], max(repeat, 20))
        except ImportError:
            pass
    except ImportError:
        pass
    try:
        import tensorstore as ts

        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": paths["ts"]},
            "metadata": {
                "shape": list(data.shape), "data_type": "float32",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, c]}},
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}],
            },
        }

        def ts_write() -> None:
            t = ts.open(spec, create=True, delete_existing=True).result()
            t.write(data).result()

        write["tensorstore"] = timeit(ts_write, repeat)
        tt = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": paths["ts"]}},
                     context=ts.Context({"cache_pool": {"total_bytes_limit": 0}})).result()
        read["tensorstore"] = timeit(lambda: tt.read().result(), repeat)
        point["tensorstore"] = timeit(lambda: tt[i, j].read().result(), max(repeat, 20))
    except ImportError:
        pass

    # codec-bound limit: libdeflate over the very same payloads
    import deflate

    root = paths["zc"]
    payloads = []
    for dirpath, _, files in os.walk(os.path.join(root, "c")):
        for f in files:
            with open(os.path.join(dirpath, f), "rb") as fh:
                payloads.append(fh.read())
    raw_chunks = [np.ascontiguousarray(data[a:a + c, b:b + c]).tobytes() for a in range(0, n, c) for b in range(0, n, c)]
    size = c * c * 4
    for nt in sorted({1, threads}):
        with ThreadPoolExecutor(nt) as ex:
            read[f"limit-{nt}t"] = timeit(lambda: list(ex.map(lambda p: deflate.gzip_decompress(p, size), payloads)), repeat)
            write[f"limit-{nt}t"] = timeit(lambda: list(ex.map(lambda r: deflate.gzip_compress(r, 1), raw_chunks)), repeat)
    zc_bytes = sum(len(p) for p in payloads)
    lib_bytes = sum(len(deflate.gzip_compress(r, 1)) for r in raw_chunks)
    print(f"  stored bytes: zarrcy {zc_bytes}  libdeflate level 1 {lib_bytes}  ratio {zc_bytes / lib_bytes:.4f}")

    table.add(f"full read {mb:.0f} MiB", read)
    table.add(f"full write {mb:.0f} MiB", write)
    table.add("single-element read", point)
    if threads > 1:
        zarrcy.config(threads=1)
        t1 = timeit(lambda: zc[...], repeat)
        zarrcy.config(threads=threads)
        tn = timeit(lambda: zc[...], repeat)
        print(f"  zarrcy read scaling: 1 thread {t1:.4f}s, {threads} threads {tn:.4f}s -> {t1 / tn:.2f}x")
    shutil.rmtree(d, ignore_errors=True)
    return table
