"""The workload of RESULTS.md's "where a small sharded read spends its work" (session 31),
to run under callgrind: instruction counts do not depend on the machine's load.

    python -m bench.small_read_profile DIR --codec zstd|blosc|gzip            # write DIR once (zarr-python)
    valgrind --tool=callgrind python -m bench.small_read_profile DIR --codec zstd --reads 0
    valgrind --tool=callgrind python -m bench.small_read_profile DIR --codec zstd --reads 200

The difference of the two runs' totals is the work of the reads (the ``bench sharded``
layout: uint16 512³, shards 256³, inner chunks 32³; the "random unaligned 40³ reads" row,
seed 1); ``callgrind_annotate --inclusive=yes`` splits it by function.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from bench.bench_sharding import _data

N, SHARD, INNER, BOX = 512, 256, 32, 40


def _write(root: str, codec: str) -> None:
    import zarr
    from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec

    comp = {"zstd": ZstdCodec(level=0, checksum=False), "gzip": GzipCodec(level=1),
            "blosc": BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=2)}[codec]
    d = _data(N)
    z = zarr.create_array(root, shape=d.shape, dtype=d.dtype, chunks=(INNER,) * 3, shards=(SHARD,) * 3,
                          compressors=[comp], fill_value=0)
    z[...] = d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--codec", choices=("zstd", "blosc", "gzip"), default="zstd")
    ap.add_argument("--reads", type=int, default=None, help="reads to run (default: only write the array)")
    args = ap.parse_args()
    root = os.path.join(args.dir, f"{args.codec}.zarr")
    if not os.path.exists(root):
        _write(root, args.codec)
    if args.reads is None:
        return
    import zarrcy

    a = zarrcy.open_array(root, mode="r")
    rng = np.random.default_rng(1)
    sels = [tuple(slice(int(o), int(o) + BOX) for o in rng.integers(0, N - BOX, 3)) for _ in range(200)]
    for s in sels[:5]:  # warm-up: imports, pools, the index cache of the first shards
        a[s]
    for s in sels[:args.reads]:
        a[s]


if __name__ == "__main__":
    main()
