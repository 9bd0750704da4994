"""Benchmark harness (CONVENTIONS.md rule 10): median of N after a warm-up, MB/s,
ratios to peers measured in the same run, machine facts and load average."""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import tempfile
import time
from typing import Callable

import numpy as np


def machine() -> str:
    la = os.getloadavg()
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return (f"{platform.node()} | {cpu} | {os.cpu_count()} cores | Python {platform.python_version()} | "
            f"numpy {np.__version__} | load avg {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}")


def versions() -> str:
    out = []
    for mod in ("zarrcy", "zarr", "zarrs", "tensorstore", "numcodecs", "deflate", "cast_value_rs"):
        try:
            m = __import__(mod)
            out.append(f"{mod} {getattr(m, '__version__', '?')}")
        except ImportError:
            pass
    return ", ".join(out)


def timeit(fn: Callable[[], object], repeat: int = 5, warmup: int = 1, setup: Callable[[], object] | None = None) -> float:
    """Median wall time of ``fn`` over ``repeat`` runs after ``warmup`` runs."""
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    times = []
    for _ in range(repeat):
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def scratch_dir(prefix: str = "zarrcy-bench-") -> str:
    base = "/dev/shm" if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > (2 << 30) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


def smooth_field(shape: tuple[int, ...], seed: int = 0, decimals: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.linspace(0, 6 * np.pi, n, dtype=np.float32) for n in shape], indexing="ij", sparse=True)
    f = np.zeros(shape, dtype=np.float32)
    for k, g in enumerate(grids):
        f += np.sin(g * (1 + 0.3 * k)).astype(np.float32)
    f += rng.normal(0, 0.01, shape).astype(np.float32)
    return np.round(f, decimals)


class Table:
    """Result rows per op and implementation: seconds by default, or any other unit
    (``add(..., unit=" MB")`` for counts such as requests or bytes fetched)."""

    def __init__(self, title: str, peers: list[str]) -> None:
        self.title = title
        self.peers = peers
        self.rows: list[tuple[str, dict[str, float | None]]] = []
        self.units: dict[str, str] = {}

    @staticmethod
    def _fmt(v: float, unit: str, sep: str) -> str:
        return f"{v:.4f}{sep}s" if unit == "s" else f"{v:g}{unit}"

    def add(self, op: str, results: dict[str, float | None], unit: str = "s") -> None:
        self.units[op] = unit
        self.rows.append((op, results))
        cells = "  ".join(f"{p}={self._fmt(results[p], unit, '')}" if results.get(p) is not None else f"{p}=n/a"
                          for p in self.peers)
        print(f"  {op:<34} {cells}", flush=True)

    def markdown(self) -> str:
        head = "| op | " + " | ".join(self.peers) + " | zarrcy ratio to best peer |"
        sep = "|---" * (len(self.peers) + 2) + "|"
        lines = [f"### {self.title}", "", head, sep]
        for op, r in self.rows:
            unit = self.units.get(op, "s")
            peers = [r[p] for p in self.peers if p != "zarrcy" and r.get(p) is not None and not p.startswith(("limit", "floor"))]
            ratio = f"{r['zarrcy'] / min(peers):.2f}×" if r.get("zarrcy") and peers and min(peers) > 0 else "—"
            cells = " | ".join(self._fmt(r[p], unit, " ") if r.get(p) is not None else "—" for p in self.peers)
            lines.append(f"| {op} | {cells} | {ratio} |")
        return "\n".join(lines)
