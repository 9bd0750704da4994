"""Progress reporting for ``zarrcy convert``: a tqdm bar (bytes/s, ETA) on a terminal,
plain periodic lines otherwise, nothing when disabled."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from tqdm import tqdm

__all__ = ["Progress", "human_bytes"]


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"  # pragma: no cover


class Progress:
    """Counts decoded bytes; ``mode`` is ``"auto"`` (tqdm on a TTY, else lines), ``"bar"``,
    ``"lines"`` or ``"off"``.  Thread-safe."""

    def __init__(self, total: int, *, mode: str = "auto", stream: TextIO | None = None, interval: float = 5.0,
                 desc: str = "convert") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total = int(total)
        self.done = 0
        self.interval = interval
        self._lock = threading.Lock()
        self._t0 = time.monotonic()
        self._last = self._t0
        self._bar: Any = None
        if mode == "auto":
            isatty = getattr(self.stream, "isatty", None)
            mode = "bar" if isatty is not None and isatty() else "lines"
        self.mode = mode
        if mode == "bar":
            self._bar = tqdm(total=self.total, unit="B", unit_scale=True, unit_divisor=1024, desc=desc,
                             file=self.stream, dynamic_ncols=True)

    def update(self, nbytes: int) -> None:
        with self._lock:
            self.done += int(nbytes)
            if self._bar is not None:
                self._bar.update(int(nbytes))
                return
            if self.mode != "lines":
                return
            now = time.monotonic()
            if now - self._last >= self.interval:
                self._last = now
                self._line(now)

    def _line(self, now: float) -> None:
        el = max(now - self._t0, 1e-9)
        rate = self.done / el
        pct = 100.0 * self.done / self.total if self.total else 100.0
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        print(f"convert: {pct:5.1f}% {human_bytes(self.done)}/{human_bytes(self.total)} "
              f"{human_bytes(rate)}/s ETA {eta:.0f}s", file=self.stream, flush=True)

    def close(self) -> None:
        with self._lock:
            if self._bar is not None:
                self._bar.close()
                self._bar = None
            elif self.mode == "lines" and self.done:
                self._line(time.monotonic())
