"""zarr-python codec-pipeline plugins (issue 8): zarr-python 3.4 with its default
``BatchedCodecPipeline`` vs the same zarr-python with ``codec_pipeline.path =
"zarrcy.zarr_plugin.ZarrcyCodecPipeline"`` (column ``zarrcy``) vs the zarrs pipeline.

Workloads are the ones of ``bench_dense`` (float32 (4096, 4096), chunks 512², gzip 1:
full read, full write) and ``bench_sharding`` (uint16 512³, shards 256³, inner 32³,
gzip 1: full read, 200 unaligned 40³ reads, 1000 point reads).  Reads of one
workload all go to the same stored array (written once by the default pipeline);
each pipeline writes its own copy.  ``--quick``: the small sizes of those modules.
"""

from __future__ import annotations

import os
import shutil
import warnings
from typing import Any, Callable

import numpy as np

from bench.bench_sharding import _data as sharded_data
from bench.common import Table, scratch_dir, smooth_field, timeit

DEFAULT = "zarr.core.codec_pipeline.BatchedCodecPipeline"
PLUGIN = "zarrcy.zarr_plugin.ZarrcyCodecPipeline"
ZARRS = "zarrs.ZarrsCodecPipeline"


def _pipelines() -> dict[str, str]:
    out = {"zarr-python": DEFAULT, "zarrcy": PLUGIN}
    try:
        import zarrs  # noqa: F401

        out["zarrs"] = ZARRS
    except ImportError:
        pass
    return out


def run(quick: bool = False, threads: int | None = None) -> Table:
    import zarr
    from zarr.codecs import GzipCodec

    import zarrcy.zarr_plugin  # noqa: F401  (registers the pipeline class)

    threads = threads or os.cpu_count() or 1
    repeat = 1 if quick else 3
    # dense workload (bench_dense)
    n, c = (1024, 256) if quick else (4096, 512)
    dense = smooth_field((n, n))
    # sharded workload (bench_sharding)
    sn, shard, inner = (128, 64, 16) if quick else (512, 256, 32)
    nops, npoints, unal = (20, 100, 20) if quick else (200, 1000, 40)
    cube = sharded_data(sn)
    rng = np.random.default_rng(1)
    points = [tuple(int(x) for x in rng.integers(0, sn, 3)) for _ in range(npoints)]
    rng.integers(0, sn // inner, (nops, 3))  # keep the same random stream as bench_sharding
    unaligned = [tuple(int(x) for x in rng.integers(0, sn - unal, 3)) for _ in range(nops)]

    pipes = _pipelines()
    peers = ["zarrcy", "zarr-python", "zarrs"]
    table = Table(
        f"zarr-python codec pipelines (zarrcy = zarr-python + zarrcy plugin): dense float32 {dense.shape} "
        f"chunks ({c}, {c}) gzip 1; sharded uint16 {cube.shape} shards ({shard},)*3 inner ({inner},)*3 gzip 1; "
        f"{threads} threads",
        peers,
    )
    d = scratch_dir()
    res: dict[str, dict[str, float | None]] = {
        op: {} for op in ("dense_read", "dense_write", "sh_read", "sh_unaligned", "sh_points")}

    def dense_create(path: str) -> Any:
        return zarr.create_array(path, shape=dense.shape, dtype=dense.dtype, chunks=(c, c),
                                 compressors=[GzipCodec(level=1)], overwrite=True)

    def sharded_create(path: str) -> Any:
        return zarr.create_array(path, shape=cube.shape, dtype=cube.dtype, chunks=(inner,) * 3,
                                 shards=(shard,) * 3, compressors=[GzipCodec(level=1)], overwrite=True)

    def in_pipeline(path: str, fn: Callable[[], Any]) -> Any:
        with zarr.config.set({"codec_pipeline.path": path, "codec_pipeline.strict": True,
                              "threading.max_workers": threads, "codec_pipeline.max_workers": threads}):
            return fn()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # reference copies, written once by the default pipeline
        in_pipeline(DEFAULT, lambda: dense_create(f"{d}/dense_ref").__setitem__(Ellipsis, dense))
        in_pipeline(DEFAULT, lambda: sharded_create(f"{d}/sharded_ref").__setitem__(Ellipsis, cube))
        for name, cls in pipes.items():
            def work(name: str = name) -> None:
                def dense_write() -> None:
                    dense_create(f"{d}/dense_{name}")[...] = dense

                res["dense_write"][name] = timeit(dense_write, repeat)
                z = zarr.open_array(f"{d}/dense_{name}", mode="r")
                assert np.array_equal(z[...], dense), name
                z = zarr.open_array(f"{d}/dense_ref", mode="r")
                res["dense_read"][name] = timeit(lambda: z[...], repeat)
                s = zarr.open_array(f"{d}/sharded_ref", mode="r")
                assert np.array_equal(s[...], cube), name
                res["sh_read"][name] = timeit(lambda: s[...], repeat)
                res["sh_unaligned"][name] = timeit(
                    lambda: [s[tuple(slice(o, o + unal) for o in p)] for p in unaligned], repeat)
                res["sh_points"][name] = timeit(lambda: [s[p] for p in points], repeat)

            in_pipeline(cls, work)

    mb, smb = dense.nbytes / 2**20, cube.nbytes / 2**20
    table.add(f"dense full read {mb:.0f} MiB", res["dense_read"])
    table.add(f"dense full write {mb:.0f} MiB", res["dense_write"])
    table.add(f"sharded full read {smb:.0f} MiB", res["sh_read"])
    table.add(f"sharded {nops} unaligned {unal}^3 reads", res["sh_unaligned"])
    table.add(f"sharded {npoints} point reads", res["sh_points"])
    shutil.rmtree(d, ignore_errors=True)
    return table


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
