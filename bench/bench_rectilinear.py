"""Rectilinear chunk grid workload (issue 16): the sharded benchmark's volume, uint16
(512, 512, 512), gzip 1, unsharded, chunked two ways with the same number of chunks:

* regular: chunks 32^3;
* rectilinear: along each axis a random permutation of the edges {24 x 4, 32 x 8, 40 x 4}
  (16 chunks per axis, summing to 512).

Ops: full write, full read, 1000 random single-element reads, 200 random unaligned 40^3
reads — zarrcy on both grids (the ratio rectilinear / regular is the figure of merit,
goal <= 1.15) beside zarr-python 3.4 on both (``array.rectilinear_chunks`` on).
Implementations interleaved per op (a warm-up round, then ``repeat`` rounds, median).
``--quick``: (128,)*3 with edges {6 x 4, 8 x 8, 10 x 4}.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from typing import Any, Callable

import numpy as np

from bench.common import Table, scratch_dir


def _data(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    r = np.arange(n, dtype=np.uint16)
    a = (r[:, None, None] * 3 + r[None, :, None] * 2 + r[None, None, :]) % np.uint16(4096)
    a += rng.integers(0, 16, a.shape, dtype=np.uint16)
    return a


def _edges(rng: np.random.Generator, unit: int) -> list[int]:
    e = [3 * unit] * 4 + [4 * unit] * 8 + [5 * unit] * 4  # 16 edges summing to 64 * unit
    rng.shuffle(e)
    return e


def run(quick: bool = False, threads: int | None = None, peers: list[str] | None = None) -> Table:
    import zarrcy
    from zarrcy.codecs import GzipCodec

    n, unit = (128, 2) if quick else (512, 8)
    regular = 4 * unit
    nops, npoints, unal = (20, 100, 10) if quick else (200, 1000, 40)
    repeat = 1 if quick else 3
    threads = threads or os.cpu_count() or 1
    zarrcy.config(threads=threads)
    data = _data(n)
    rng = np.random.default_rng(2)
    rect = [_edges(rng, unit) for _ in range(3)]
    points = [tuple(int(x) for x in rng.integers(0, n, 3)) for _ in range(npoints)]
    boxes = [tuple(int(x) for x in rng.integers(0, n - unal, 3)) for _ in range(nops)]
    names = ["zarrcy regular", "zarrcy rectilinear"]
    want_zp = peers is None or "zarr-python" in peers
    if want_zp:
        names += ["zarr-python regular", "zarr-python rectilinear"]
    table = Table(f"Rectilinear vs regular grid: uint16 {data.shape}, gzip 1, unsharded, {threads} threads "
                  f"(rectilinear edges: a permutation of {sorted(set(rect[0]))} per axis)", names)
    d = scratch_dir()
    impls: dict[str, tuple[Callable[[], None], Callable[[Any], Any]]] = {}

    def zc(name: str, chunks: Any) -> None:
        path = f"{d}/{name.replace(' ', '-')}"

        def write() -> None:
            a = zarrcy.create_array(path, shape=data.shape, dtype=data.dtype, chunks=chunks,
                                    compressors=[GzipCodec(level=1)], overwrite=True)
            a[...] = data

        write()
        a = zarrcy.open_array(path, mode="r")
        assert np.array_equal(a[...], data)
        impls[name] = (write, lambda s: a[s])

    zc("zarrcy regular", (regular,) * 3)
    zc("zarrcy rectilinear", rect)
    if want_zp:
        try:
            import zarr
            from zarr.codecs import GzipCodec as ZGzip

            def zp(name: str, chunks: Any) -> None:
                path = f"{d}/{name.replace(' ', '-')}"
                cfg = {"array.rectilinear_chunks": True}

                def write() -> None:
                    with zarr.config.set(cfg):
                        a = zarr.create_array(path, shape=data.shape, dtype=data.dtype, chunks=chunks,
                                              compressors=[ZGzip(level=1)], overwrite=True)
                        a[...] = data

                write()
                with zarr.config.set(cfg):
                    z = zarr.open_array(path, mode="r")

                def get(s: Any) -> Any:
                    with zarr.config.set(cfg):
                        return z[s]

                impls[name] = (write, get)

            zp("zarr-python regular", (regular,) * 3)
            zp("zarr-python rectilinear", rect)
        except ImportError:
            pass

    ops: dict[str, Callable[[tuple[Callable[[], None], Callable[[Any], Any]]], Any]] = {
        "full write": lambda impl: impl[0](),
        "full read": lambda impl: impl[1]((slice(None),) * 3),
        f"{npoints} random single-element reads": lambda impl: [impl[1](p) for p in points],
        f"{nops} random unaligned {unal}^3 reads": lambda impl: [impl[1](tuple(slice(o, o + unal) for o in c))
                                                             for c in boxes],
    }
    for op, fn in ops.items():
        times: dict[str, list[float]] = {name: [] for name in impls}
        for rnd in range(repeat + 1):
            for name, impl in impls.items():
                t0 = time.perf_counter()
                fn(impl)
                if rnd:
                    times[name].append(time.perf_counter() - t0)
        res = {name: statistics.median(t) for name, t in times.items()}
        table.add(op, res)
        table.add(f"{op}: zarrcy rectilinear / regular", {"zarrcy rectilinear": res["zarrcy rectilinear"]
                                                          / res["zarrcy regular"]}, unit="x")
    shutil.rmtree(d, ignore_errors=True)
    return table


if __name__ == "__main__":
    import sys

    print(run(quick="--quick" in sys.argv).markdown())
