"""Per-thread scratch chunks of the sharding codec, and the count of inner chunks
decoded (tests, benchmarks).  How many threads decode a shard's inner chunks is the
execution context's decision (:mod:`zarrcy.execution`), never this package's."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from zarrcy.codecs._base import ArraySpec

__all__ = ["scratch", "decode_stats"]


_SCRATCH = threading.local()


def scratch(spec: ArraySpec) -> np.ndarray:
    """A per-thread decode buffer for one inner chunk of ``spec``."""
    k = (spec.shape, spec.dtype)  # not .str: ml_dtypes types and records share "|V<n>"
    d: dict[Any, Any] = _SCRATCH.__dict__
    buf = d.get(k)
    if buf is None:
        if len(d) > 8:
            d.clear()
        buf = d[k] = np.empty(spec.shape, dtype=spec.dtype)
    return buf


# here, not in reader.py: the scatter driver counts too (reader imports scatter)
class _DecodeStats:
    """Inner chunks decoded by partial and point reads, when enabled (tests, bench)."""

    def __init__(self) -> None:
        self.enabled = False
        self.decoded = 0
        self.lock = threading.Lock()

    def add(self, n: int) -> None:
        if self.enabled:
            with self.lock:
                self.decoded += n

    def reset(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.decoded = 0


decode_stats = _DecodeStats()
