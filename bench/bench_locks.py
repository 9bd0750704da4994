"""Cost of the cross-process write locks when nobody contends (issue 24.5 goal: locked
writes <= 1.3x today's unlocked writes on disjoint shards).

One process writes partial regions of an int32 1024^2 array on a LocalStore (/dev/shm
when it has room): shards 128^2 of 32^2 inner chunks (zstd 0), and an unsharded layout
with 64^2 chunks; each write covers one 40^2 box inside one shard/chunk (a
read-modify-write), every box in another shard or chunk (disjoint).  ``write_locks``
True and False are interleaved round by round (medians of 5), so load hits both alike.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from bench.common import Table, scratch_dir


def _boxes(n_side: int, step: int, box: int) -> list[tuple[slice, slice]]:
    return [(slice(i * step + 3, i * step + 3 + box), slice(j * step + 5, j * step + 5 + box))
            for i in range(n_side) for j in range(n_side)]


def run(quick: bool = False, threads: int | None = None) -> Table:
    import importlib

    import zarrcy

    zconfig = importlib.import_module("zarrcy.config")  # (zarrcy.config is the function)
    n = 256 if quick else 1024
    rounds = 1 if quick else 5
    zarrcy.config(threads=1)
    root = scratch_dir("zarrcy-bench-locks-")
    layouts = {
        "sharded (shards 128², inner 32²)": {"chunks": (32, 32), "shards": (128, 128)},
        "unsharded (chunks 64²)": {"chunks": (64, 64)},
    }
    table = Table("Write locks, no contention: one writer, partial writes into disjoint shards/chunks",
                  ["zarrcy", "unlocked"])
    for label, kw in layouts.items():
        step = kw.get("shards", kw["chunks"])[0]
        boxes = _boxes(n // step, step, 40)
        times: dict[bool, list[float]] = {True: [], False: []}
        for r in range(rounds):
            for locks in (False, True) if r % 2 else (True, False):
                path = os.path.join(root, f"a{r}{int(locks)}{label[:3]}.zarr")
                a = zarrcy.create_array(path, shape=(n, n), dtype="int32", fill_value=0,
                                        compressors=[{"name": "zstd", "configuration": {"level": 0}}], **kw)
                a[...] = np.arange(n * n, dtype=np.int32).reshape(n, n)
                v = np.full((40, 40), 7, np.int32)
                with zconfig.override(write_locks=locks):
                    t0 = time.perf_counter()
                    for sel in boxes:
                        a[sel] = v
                    times[locks].append(time.perf_counter() - t0)
        table.add(f"{len(boxes)} partial writes, {label}",
                  {"zarrcy": statistics.median(times[True]), "unlocked": statistics.median(times[False])})
    return table
