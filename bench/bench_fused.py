"""``zarrcy convert --quantize`` with and without the fused cast (issue 22): the region's
report and encoded values from one kernel pass, written through the destination minus
the quantize codecs, against the unfused path (report pass, then the whole codec chain
casting again).  Both run in this process, interleaved (fused, unfused, fused, ...), on
two sources of N (721, 1440) float32 steps (``bench_hdf5``'s field), shards of 12 steps,
--quantize to uint16: the NetCDF-4 files of ``bench_hdf5`` (12 monthly files,
``--concat-dim time``, zstd level 0: the issue's row), and an uncompressed Zarr v3
array converted without compression (the cast's share isolated).  Interleaving makes a
shared machine's load affect both alike; the table gives the medians of wall and CPU
seconds (user + system of this process) and their ratios.

``python -m bench.bench_fused [STEPS] [ROUNDS]`` (defaults 24 and 3)."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import time
from typing import Any

from bench.bench_hdf5 import QUANT, _step, _write
from bench.common import scratch_dir


def _convert(src: str, dst: str, fused: bool, threads: int, **kw: Any) -> tuple[float, float]:
    import zarrcy
    import zarrcy.convert.engine as engine

    real = engine.encoded_recorder
    if not fused:
        engine.encoded_recorder = lambda rec, quantize: None  # the unfused path: the whole chain casts
    q = f"offset={QUANT['offset']},scale={QUANT['scale']},dtype=uint16,nan=65535"
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        zarrcy.convert(src, dst, shards="12,721,1440", chunks="1,721,1440", quantize=q, workers=threads,
                       progress="off", overwrite=True, **kw)
        return time.perf_counter() - t0, time.process_time() - c0
    finally:
        engine.encoded_recorder = real


def run(steps: int = 24, rounds: int = 3, threads: int | None = None) -> dict[str, Any]:
    import numpy as np

    import zarrcy

    threads = threads or os.cpu_count() or 1
    d = scratch_dir("zarrcy-bench-fused-")
    out: dict[str, Any] = {}
    try:
        t0 = 0
        for i in range(12):
            n = steps // 12 + (1 if i < steps % 12 else 0)
            _write(f"{d}/month{i + 1:02d}.nc", t0, n, 721, 1440)
            t0 += n
        z = zarrcy.create_array(f"{d}/src.zarr", shape=(steps, 721, 1440), chunks=(1, 721, 1440), dtype="f4",
                                compressors=None, fill_value=np.nan)
        for t in range(steps):
            z[t] = _step(t, 721, 1440)
        rows = {"NetCDF-4 12 files --concat-dim time, zstd level 0": (f"{d}/month*.nc",
                                                                       {"concat_dim": "time", "compressor": "zstd:0"}),
                "Zarr v3 uncompressed -> uncompressed (the cast isolated)": (f"{d}/src.zarr", {"compressor": "none"})}
        print(f"--quantize uint16, {steps} steps x (721, 1440) float32 ({steps * 721 * 1440 * 4 / 2**20:.0f} MiB), "
              f"{threads} threads, {rounds} interleaved rounds (medians)")
        for label, (src, kw) in rows.items():
            res: dict[str, list[tuple[float, float]]] = {"fused": [], "unfused": []}
            _convert(src, f"{d}/warm.zarr", True, threads, **kw)  # imports, page cache
            for _ in range(rounds):
                for name in ("fused", "unfused"):
                    res[name].append(_convert(src, f"{d}/{name}.zarr", name == "fused", threads, **kw))
            med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in res.items()}
            (fw, fc), (uw, uc) = med["fused"], med["unfused"]
            print(f"  {label} (load avg {os.getloadavg()[0]:.2f})")
            print(f"    fused   : wall {fw:.3f} s  CPU {fc:.3f} s")
            print(f"    unfused : wall {uw:.3f} s  CPU {uc:.3f} s")
            print(f"    unfused / fused: wall {uw / fw:.2f}x  CPU {uc / fc:.2f}x")
            out[label] = res
        return out
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    run(*(int(a) for a in sys.argv[1:3]))
