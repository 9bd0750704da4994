"""Micro-benchmark of the per-inner-chunk kernels (``zarrcy._kernels._inner_chunks``).

One uint16 shard of 256^3 with 32^3 inner chunks, bytes + gzip(1) (``--quick``: 128^3),
decoded whole:

* ``libdeflate only``: a loop of ``_deflate.gzip_decompress_into`` over the inner chunks
  into one scratch buffer (no scatter): the decompression limit on 1 and 2 threads
  (halves, each thread its own buffer);
* ``decode_scatter``: the kernel on 1 and 2 threads (tasks split in halves, each thread
  its own scratch), i.e. decompression + scatter into the shard-shaped array;
* ``decode_scatter_all``: one call, the caller plus native pool helpers (``_workers``);
* ``ShardingCodec.decode``: the current Python path (``zarrcy.config(threads=1/2)``).

And encoded whole: libdeflate level 1 alone (the encode limit) and ``gather_encode`` on
1 and 2 threads vs ``ShardingCodec.encode``.
Standalone: ``python bench/bench_inner_chunks.py [--quick] [--min]``.  Prints MB/s of
the decoded shard size (median of a few runs after a warm-up).
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np


MIN = False  # --min: the fastest run instead of the median (a loaded machine)


def timeit(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time after one warm-up run (``bench.common.timeit``'s rule; not imported
    so that this script runs against whichever zarrcy ``PYTHONPATH`` names)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times) if MIN else statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="a 128^3 shard, 3 runs: a smoke run")
    p.add_argument("--min", action="store_true", help="report the fastest run, not the median")
    args = p.parse_args(argv)
    global MIN
    MIN = args.min

    import zarrcy
    from zarrcy._kernels import _deflate
    from zarrcy._kernels import _inner_chunks as K
    from zarrcy.codecs import BytesCodec, GzipCodec
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.sharding import ShardingCodec

    n, inner = (128, 32) if args.quick else (256, 32)
    repeat = 3 if args.quick else 7
    rng = np.random.default_rng(0)
    r = np.arange(n, dtype=np.uint16)
    data = (r[:, None, None] * 3 + r[None, :, None] * 2 + r[None, None, :]) % np.uint16(4096)
    data += rng.integers(0, 16, data.shape, dtype=np.uint16)
    spec = ArraySpec((n,) * 3, np.dtype("uint16"), np.uint16(0))
    codec = ShardingCodec(chunk_shape=(inner,) * 3, codecs=(BytesCodec(), GzipCodec(1)), index_codecs=(BytesCodec(),))
    enc = codec.encode(data, spec)
    assert enc is not None
    shard = bytes(enc)
    grid = (n // inner,) * 3
    nchunks = int(np.prod(grid))
    index = np.frombuffer(shard[-16 * nchunks:], "<u8").reshape(-1, 2).astype(np.int64)
    coords = np.array(list(itertools.product(*map(range, grid))), np.int64)
    chunk_shape = np.array((inner,) * 3, np.int64)
    cb = inner**3 * 2
    # CSR tables for the whole shard: along each dimension, chunk c holds local 0..inner-1
    starts = np.arange(grid[0] + 1, dtype=np.int64) * inner
    dim_start = np.concatenate([starts[:-1] + d * n for d in range(3)] + [[3 * n]]).astype(np.int64)
    dim_base = np.array([0, grid[0], 2 * grid[0]], np.int64)
    dim_local = np.tile(np.arange(n, dtype=np.int64) % inner, 3)
    dim_out = np.tile(np.arange(n, dtype=np.int64), 3)
    src = np.frombuffer(shard, np.uint8)
    fill = bytes(2)
    mb = data.nbytes / 1e6
    print(f"shard uint16 {data.shape}, inner {(inner,) * 3}, gzip 1: {mb:.1f} MB decoded, "
          f"{len(shard) / 1e6:.1f} MB stored, {nchunks} inner chunks")

    scratch = [np.empty(cb, np.uint8) for _ in range(2)]
    pool = ThreadPoolExecutor(2)

    def libdeflate_only(nthreads: int = 1) -> None:
        def part(k: int) -> None:
            s = scratch[k]
            for off, ln in index[k * nchunks // nthreads:(k + 1) * nchunks // nthreads]:
                _deflate.gzip_decompress_into(src[off:off + ln], s)

        list(pool.map(part, range(nthreads))) if nthreads > 1 else part(0)

    def kernel(out: np.ndarray, nthreads: int) -> None:
        bounds = np.linspace(0, nchunks, nthreads + 1).astype(int)

        def part(k: int) -> tuple[int, int]:
            return K.decode_scatter(src, coords, index[:, 0].copy(), index[:, 1].copy(), int(bounds[k]),
                                    int(bounds[k + 1]), dim_base, dim_start, dim_local, dim_out, chunk_shape, 2, 0,
                                    K.GZIP, fill, out, scratch[k])

        res = list(pool.map(part, range(nthreads))) if nthreads > 1 else [part(0)]
        assert all(r == (-1, 0) for r in res), res

    out = np.empty(data.shape, np.uint16)
    kernel(out, 1)
    np.testing.assert_array_equal(out, data)
    rows = [(f"libdeflate only (decompress, no scatter), {t} thread(s)", timeit(lambda: libdeflate_only(t), repeat))
            for t in (1, 2)]
    for t in (1, 2):
        rows.append((f"decode_scatter, {t} thread(s)", timeit(lambda: kernel(out, t), repeat)))
    task_src = np.zeros(nchunks, np.int64)
    status = np.empty(nchunks, np.uint8)

    def kernel_all(nthreads: int) -> None:
        K.decode_scatter_all([src], task_src, coords, index[:, 0].copy(), index[:, 1].copy(), dim_base, dim_start,
                             dim_local, dim_out, chunk_shape, 2, 0, K.GZIP, fill, out, status, nthreads)

    rows.append(("decode_scatter_all (native pool), 2 threads", timeit(lambda: kernel_all(2), repeat)))
    for t in (1, 2):
        zarrcy.config(threads=t)
        rows.append((f"ShardingCodec.decode, threads={t}", timeit(lambda: codec.decode(shard, spec), repeat)))

    # full-shard writes
    slot = K.slot_size(K.GZIP, 1, cb)
    buf = np.empty(nchunks * slot, np.uint8)
    offsets = np.arange(nchunks + 1, dtype=np.int64) * slot
    nbytes = np.empty(nchunks, np.int64)
    flags = np.empty(nchunks, np.uint8)

    def encode(nthreads: int) -> None:
        bounds = np.linspace(0, nchunks, nthreads + 1).astype(int)

        def part(k: int) -> tuple[int, int]:
            return K.gather_encode(data, chunk_shape, 2, 0, K.GZIP, 1, fill, False, int(bounds[k]),
                                   int(bounds[k + 1]), buf, offsets, nbytes, flags, scratch[k])

        res = list(pool.map(part, range(nthreads))) if nthreads > 1 else [part(0)]
        assert all(r == (-1, 0) for r in res), res

    chunk_list = [np.ascontiguousarray(data[tuple(slice(c * inner, (c + 1) * inner) for c in cc)]).view(np.uint8)
                  .reshape(-1) for cc in coords.tolist()]

    def libdeflate_encode(nthreads: int) -> None:
        def part(k: int) -> None:
            for i in range(k * nchunks // nthreads, (k + 1) * nchunks // nthreads):
                _deflate.gzip_compress_into(chunk_list[i], buf[offsets[i]:offsets[i + 1]], 1)

        list(pool.map(part, range(nthreads))) if nthreads > 1 else part(0)

    for t in (1, 2):
        rows.append((f"libdeflate only (compress level 1, no gather), {t} thread(s)",
                     timeit(lambda: libdeflate_encode(t), repeat)))
    for t in (1, 2):
        rows.append((f"gather_encode gzip 1, {t} thread(s)", timeit(lambda: encode(t), repeat)))
    for t in (1, 2):
        zarrcy.config(threads=t)
        rows.append((f"ShardingCodec.encode, threads={t}", timeit(lambda: codec.encode(data, spec), repeat)))
    pool.shutdown()

    w = max(len(name) for name, _ in rows)
    for name, sec in rows:
        print(f"  {name:<{w}}  {sec * 1e3:8.2f} ms  {mb / sec:8.0f} MB/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
