"""Decoded-chunk cache: repeated small reads over one region, cache on vs off, beside
tensorstore with an equal ``cache_pool`` budget (issue 24.4).

uint16 256^3 on a LocalStore (/dev/shm when it has room), shards 128^3, inner chunks
32^3, zstd 0 (``--codec gzip|zstd|blosc``), written by zarrcy and read by both.  The
region is the 128^3 box at 64..192 (64 inner chunks, 8 MiB decoded); the ops are 1000
random single elements (one call each), 200 unaligned 40^3 boxes inside it, and the same
1000 points in one vindex call.  Every op is timed warm (a first pass filled the caches)
and the implementations are interleaved round by round (medians), so load changes hit
all alike.  zarrcy's cache budget and tensorstore's ``cache_pool.total_bytes_limit`` are
both ``64 MiB``; tensorstore keeps its default ``recheck_cached_data`` (revalidates by
stat on every read), zarrcy its racy-file rule (the files are older than
``RACY_NS`` when the timing starts).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any, Callable

import numpy as np

from bench.common import Table, scratch_dir

CODECS = {
    "gzip": {"name": "gzip", "configuration": {"level": 1}},
    "zstd": {"name": "zstd", "configuration": {"level": 0, "checksum": False}},
    "blosc": {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2,
                                                 "blocksize": 0}},
}
BUDGET = 64 << 20


def run(quick: bool = False, threads: int | None = None, peers: list[str] | None = None,
        codec: list[str] | None = None) -> Table:
    import zarrcy
    import zarrcy.chunk_cache as chunk_cache
    from zarrcy.codecs import codec_from_dict
    from zarrcy.storage import local as local_store

    cname = (codec or ["zstd"])[0]
    n, shard, inner = (64, 32, 8) if quick else (256, 128, 32)
    lo, hi = n // 4, 3 * n // 4
    box = 10 if quick else 40
    npoints, nboxes = (50, 10) if quick else (1000, 200)
    rounds = 1 if quick else 5
    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    rng = np.random.default_rng(0)
    data = (rng.integers(0, 64, (n, n, n)) + np.arange(n)[:, None, None]).astype(np.uint16)
    path = f"{scratch_dir()}/cache.zarr"
    a = zarrcy.create_array(path, shape=data.shape, dtype=data.dtype, chunks=(inner,) * 3, shards=(shard,) * 3,
                            compressors=[codec_from_dict(CODECS[cname], "compressors[0]")], overwrite=True)
    a[...] = data
    a = zarrcy.open_array(path, mode="r")
    points = [tuple(int(x) for x in rng.integers(lo, hi, 3)) for _ in range(npoints)]
    pts = tuple(np.array(c) for c in zip(*points))
    boxes = [tuple(slice(int(x), int(x) + box) for x in rng.integers(lo, hi - box, 3)) for _ in range(nboxes)]

    def zc() -> dict[str, Callable[[], Any]]:
        def p() -> None:
            for q in points:
                a[q]

        def b() -> None:
            for s in boxes:
                a[s]

        def v() -> None:
            a.vindex[pts]

        return {"points": p, "boxes": b, "vindex": v}

    impls: dict[str, dict[str, Callable[[], Any]]] = {"zarrcy": zc(), "zarrcy cache off": zc()}
    wanted_ts = peers is None or "tensorstore" in peers
    if wanted_ts:
        try:
            import tensorstore as ts

            def tsi(budget: int) -> dict[str, Callable[[], Any]]:
                t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}},
                            context=ts.Context({"cache_pool": {"total_bytes_limit": budget},
                                                "data_copy_concurrency": {"limit": threads}})).result()

                def p() -> None:
                    for q in points:
                        t[q].read().result()

                def b() -> None:
                    for s in boxes:
                        t[s].read().result()

                def v() -> None:
                    t.vindex[pts].read().result()

                return {"points": p, "boxes": b, "vindex": v}

            impls["tensorstore"] = tsi(BUDGET)
            impls["tensorstore cache off"] = tsi(0)
        except ImportError:
            pass
    # the racy-file rule: files changed less than RACY_NS before a read are not cached
    wait = local_store.RACY_NS / 1e9 - (time.time() - os.stat(f"{path}/zarr.json").st_ctime) + 0.1
    if wait > 0:
        time.sleep(wait)
    names = list(impls)
    table = Table(f"Decoded-chunk cache: uint16 {data.shape}, shards ({shard},)*3, inner ({inner},)*3, {cname}, "
                  f"region {lo}..{hi}, budget {BUDGET >> 20} MiB, {threads} threads", names)
    # correctness first (and the warm-up pass that fills the caches)
    zarrcy.config(cache_bytes=BUDGET)
    assert all(np.array_equal(a[s], data[s]) for s in boxes)
    assert np.array_equal(a.vindex[pts], data[pts])
    for impl in impls.values():
        for fn in impl.values():
            fn()
    zarrcy.config(cache_bytes=BUDGET)
    chunk_cache.stats(reset=True)
    times: dict[str, dict[str, list[float]]] = {op: {k: [] for k in names} for op in ("points", "boxes", "vindex")}
    for _ in range(rounds):
        for op in times:
            for k in names:
                # turning zarrcy's cache off drops it: an untimed pass refills it first
                zarrcy.config(cache_bytes=BUDGET if k == "zarrcy" else 0)
                if k == "zarrcy":
                    impls[k][op]()
                t0 = time.perf_counter()
                impls[k][op]()
                times[op][k].append(time.perf_counter() - t0)
    labels = {"points": f"{npoints} single elements a[i, j, k]", "boxes": f"{nboxes} unaligned {box}^3 boxes",
              "vindex": f"{npoints} points, one vindex call"}
    for op, label in labels.items():
        table.add(label, {k: statistics.median(v) for k, v in times[op].items()})
    print(f"  zarrcy cache (timed and refill passes): {chunk_cache.stats()}")
    zarrcy.config(cache_bytes=0)
    for op in times:
        on = statistics.median(times[op]["zarrcy"])
        off = statistics.median(times[op]["zarrcy cache off"])
        line = f"  {op}: cache on is {off / on:.1f}x faster than off"
        if "tensorstore" in times[op]:
            line += f"; zarrcy on / tensorstore on = {on / statistics.median(times[op]['tensorstore']):.2f}"
        print(line)
    return table
