"""Codec hot paths: the two gzip routes (and zlib as the baseline), 1 and 2 threads.

Payloads: 1 MiB float32 chunks (512 x 512) of a smooth field + noise rounded to 3
decimals (``bench.common.smooth_field``), gzip level 1.  Routes:

* ``libdeflate``: zarrcy's ``_deflate`` kernel (libdeflate C API through dlsym, no GIL,
  decompression straight into a preallocated destination, one (de)compressor per thread);
* ``deflate``: the ``deflate`` package's ``gzip_compress``/``gzip_decompress`` (no GIL,
  a fresh output buffer per call), copied into the destination like a codec must;
* ``zlib``: the standard library (baseline).

Also: the full ``CodecPipeline.decode_into`` of ``bytes + gzip(1)`` and ``bytes + zstd(0)``
/ ``bytes + blosc(lz4)`` for reference.  Prints medians (seconds for the whole batch)
and MB/s of decoded data.  ``--quick``: 4 chunks of 256 KiB, one repeat.
"""

from __future__ import annotations

import zlib
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from bench.common import Table, smooth_field, timeit


def _batch(fn: Callable[[int], Any], n: int, threads: int, pool: ThreadPoolExecutor | None) -> Callable[[], None]:
    if threads == 1:
        return lambda: [fn(i) for i in range(n)] and None
    assert pool is not None
    return lambda: list(pool.map(fn, range(n))) and None


def run(quick: bool = False, threads: int | None = None) -> Table:
    from zarrcy.codecs import ArraySpec
    from zarrcy.codecs import gzip as G
    from zarrcy.codecs.pipeline import CodecPipeline

    side, nchunks, repeat = (256, 4, 1) if quick else (512, 16, 5)
    chunks = [smooth_field((side, side), seed=i) for i in range(nchunks)]
    raw = [c.tobytes() for c in chunks]
    nbytes = len(raw[0])
    total_mb = nbytes * nchunks / 1e6
    gz = [bytes(G.gzip_compress(r, 1, "libdeflate")) for r in raw]
    outs = [np.empty(nbytes, dtype=np.uint8) for _ in range(nchunks)]
    routes = [r for r in ("libdeflate", "deflate", "zlib") if r == "zlib" or _available(G, r)]
    thread_counts = [1, 2] if threads is None else sorted({1, threads})
    ratio = sum(len(g) for g in gz) / (nbytes * nchunks)
    table = Table(
        f"gzip routes: {nchunks} x {nbytes >> 10} KiB float32 chunks, level 1 (ratio {ratio:.2f}); "
        f"seconds per batch, MB/s of decoded data",
        routes,
    )

    def dec(route: str) -> Callable[[int], Any]:
        if route == "zlib":
            return lambda i: outs[i].__setitem__(slice(None), np.frombuffer(zlib.decompress(gz[i], 31), np.uint8))
        return lambda i: G.gzip_decompress_into(gz[i], outs[i], route)

    def comp(route: str) -> Callable[[int], Any]:
        return lambda i: G.gzip_compress(raw[i], 1, route)

    for t in thread_counts:
        with ThreadPoolExecutor(t) as pool:
            for label, make in (("decompress", dec), ("compress", comp)):
                res: dict[str, float | None] = {}
                for r in routes:
                    res[r] = timeit(_batch(make(r), nchunks, t, pool), repeat=repeat)
                table.add(f"{label} {t} thr", res)
                print("    MB/s: " + "  ".join(f"{r}={total_mb / s:.0f}" for r, s in res.items() if s), flush=True)

    # whole pipeline decode_into for the compressors zarrcy supports, for reference
    spec = ArraySpec((side, side), np.dtype("float32"), np.float32(0))
    le = {"name": "bytes", "configuration": {"endian": "little"}}
    chains = {
        "gzip(1)": [le, {"name": "gzip", "configuration": {"level": 1}}],
        "zstd(0)": [le, {"name": "zstd", "configuration": {"level": 0}}],
        "blosc(lz4,shuffle)": [le, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}],
    }
    out = np.empty((nchunks, side, side), dtype=np.float32)
    for name, codecs in chains.items():
        p = CodecPipeline.from_codecs(codecs, spec)
        enc = [bytes(p.encode(c)) for c in chunks]
        for t in thread_counts:
            with ThreadPoolExecutor(t) as pool:
                s = timeit(_batch(lambda i: p.decode_into(enc[i], out[i]), nchunks, t, pool), repeat=repeat)
            print(f"  pipeline decode_into {name:<20} {t} thr  {s:.4f}s  {total_mb / s:.0f} MB/s", flush=True)
    return table


def _available(G: Any, route: str) -> bool:
    try:
        old = G.set_route(route)
    except ValueError:
        return False
    G.set_route(old)
    return True


if __name__ == "__main__":
    import sys

    run(quick="--quick" in sys.argv)
