"""The one-pass ``--quantize`` report kernel (``_cast_report``, issue 22) in each build the
CPU runs: baseline, AVX2 and AVX-512 (``report_isa``), in one process, interleaved
(level by level, round after round), single-threaded.

Input: ``bench_hdf5``'s field (STEPS (721, 1440) float32 steps, 1 % NaN) through the chain
``--quantize offset=-4,scale=8000,dtype=uint16,nan=65535`` builds (the HDF5 bench's
quantize row: scale_offset, then cast_value uint16, nearest-even, NaN <-> 65535), and the
same values as float64 through ``offset=-4,scale=30,dtype=uint8,nan=255``:
``quantize_with_report`` (report and encoded codes from one pass, fill counts included:
what convert runs per region).  Every level's report and codes are checked equal to the
first level's.  The table gives the median nanoseconds per element and each level's
speed-up over AVX2.

``python -m bench.bench_report_isa [STEPS] [ROUNDS]`` (defaults 4 and 5)."""

from __future__ import annotations

import statistics
import sys
import time
import numpy as np

from bench.bench_hdf5 import _step


def run(steps: int = 4, rounds: int = 5) -> dict[str, dict[str, float]]:
    from zarrcy._kernels._cast_report import report_isa
    from zarrcy.casting import quantize_with_report
    from zarrcy.convert.options import parse_quantize  # the chain ``--quantize`` builds

    x32 = np.stack([_step(t, 721, 1440) for t in range(steps)])
    x32.reshape(-1)[::100] = np.nan
    cases = {
        "float32 -> uint16 (scale 8000)": (x32, parse_quantize("offset=-4,scale=8000,dtype=uint16,nan=65535"),
                                           (np.float32("nan"), np.uint16(65535))),
        "float64 -> uint8 (scale 30)": (x32.astype(np.float64), parse_quantize("offset=-4,scale=30,dtype=uint8,nan=255"),
                                        (np.float64("nan"), np.uint8(255))),
    }
    levels = []
    try:
        for name in ("baseline", "avx2", "avx512"):
            if report_isa(name) == name:
                levels.append(name)
        out: dict[str, dict[str, float]] = {}
        for label, (x, chain, fills) in cases.items():
            times: dict[str, list[float]] = {lv: [] for lv in levels}
            ref = None
            for _ in range(rounds):
                for lv in levels:
                    report_isa(lv)
                    t0 = time.perf_counter()
                    enc, rep = quantize_with_report(x, chain, fills=fills)
                    times[lv].append(time.perf_counter() - t0)
                    got = (enc.tobytes() if enc is not None else None, rep.to_json())
                    if ref is None:
                        ref = got
                    elif got != ref:
                        raise AssertionError(f"bench_report_isa: {lv} gives another report or codes for {label}")
            out[label] = {lv: statistics.median(ts) / x.size * 1e9 for lv, ts in times.items()}
    finally:
        report_isa("auto")
    return out


if __name__ == "__main__":  # pragma: no cover
    from bench.common import machine

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    res = run(steps, rounds)
    print(f"machine: {machine()}\ncommand: python -m bench.bench_report_isa {steps} {rounds}")
    lv = list(next(iter(res.values())))
    print("| chain | " + " | ".join(f"{v} ns/element" for v in lv) + " | AVX-512 / AVX2 speed-up |")
    print("|---|" + "---|" * (len(lv) + 1))
    for label, r in res.items():
        sp = f"{r['avx2'] / r['avx512']:.2f}x" if "avx2" in r and "avx512" in r else "n/a"
        print(f"| {label} | " + " | ".join(f"{r[v]:.2f}" for v in lv) + f" | {sp} |")
