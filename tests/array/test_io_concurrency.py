"""Latency-bound stores (``Store.io_concurrency``) get that many chunk tasks in flight."""

from __future__ import annotations

import threading
import time

import numpy as np

import zarrcy
from zarrcy.storage import MemoryStore


class _SlowStore(MemoryStore):
    """A MemoryStore whose chunk reads wait like network requests and record how many overlap."""

    def __init__(self, io: int) -> None:
        super().__init__()
        self.io_concurrency = io
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0

    def get(self, key, byte_range=None):
        if key.endswith("zarr.json"):
            return super().get(key, byte_range)
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.02)
            return super().get(key, byte_range)
        finally:
            with self.lock:
                self.now -= 1


def test_latency_bound_store_overlaps_more_than_threads():
    store = _SlowStore(io=8)
    a = zarrcy.create_array(store, shape=(64, 64), chunks=(8, 8), dtype="int32")
    data = np.arange(64 * 64, dtype="int32").reshape(64, 64)
    a[...] = data
    old = zarrcy.config()["threads"]
    zarrcy.config(threads=2)
    try:
        store.peak = 0
        np.testing.assert_array_equal(a[...], data)
        assert store.peak > 2  # more reads in flight than CPU threads
        assert store.peak <= 8
    finally:
        zarrcy.config(threads=old)


def test_cpu_bound_store_keeps_config_threads():
    store = _SlowStore(io=0)
    a = zarrcy.create_array(store, shape=(32, 32), chunks=(8, 8), dtype="int32")
    a[...] = 1
    old = zarrcy.config()["threads"]
    zarrcy.config(threads=2)
    try:
        store.peak = 0
        assert int(a[...].sum()) == 32 * 32
        assert store.peak <= 2
    finally:
        zarrcy.config(threads=old)
