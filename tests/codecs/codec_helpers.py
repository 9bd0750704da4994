"""Shared helpers of the codec tests (imported by name: a plain `conftest` import
would pick up another directory's conftest when the whole suite runs) (tests/codecs/test_*_codec.py, test_codec_*.py)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from zarrcy.byte_access import ByteSetter
from zarrcy.byte_range import resolve
from zarrcy.codecs import ArraySpec

#: every fixed-size data type the core codecs must carry (core + ml_dtypes extensions + raw)
CORE_DTYPES: list[np.dtype] = [
    np.dtype(t)
    for t in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float16", "float32", "float64", "complex64", "complex128", "V1", "V3", "V8",
        ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4,
    )
]


def make_spec(shape: tuple[int, ...], dtype: Any) -> ArraySpec:
    dt = np.dtype(dtype)
    return ArraySpec(tuple(shape), dt, np.zeros((), dtype=dt)[()])


def sample(shape: tuple[int, ...], dtype: Any, seed: int = 0) -> np.ndarray:
    """Arbitrary bit patterns of ``dtype`` (every byte random), compared bitwise by ``same``."""
    dt = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape)) * dt.itemsize
    raw = rng.integers(0, 256, size=n, dtype=np.uint8)
    if dt == np.bool_:
        raw = raw & 1
    if dt == np.dtype(ml_dtypes.int4):
        raw = raw & 0x0F  # stored as one value per byte
    return raw.view(dt).reshape(shape)


def smooth(shape: tuple[int, ...], dtype: Any = "float32", seed: int = 0) -> np.ndarray:
    """A compressible field (smooth + rounded noise)."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(shape))
    x = np.sin(np.linspace(0, 20, n)) * 100 + rng.normal(0, 1, n)
    return x.round(3).astype(dtype).reshape(shape)


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Bitwise equality (NaNs and raw types included)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


class MemValue(ByteSetter):
    """One in-memory value; records the bytes every read fetched."""

    def __init__(self, value: bytes | None = None) -> None:
        self.value = value
        self.fetched = 0

    def _get(self, r):
        if self.value is None:
            return None
        a, b = resolve(r, len(self.value))
        self.fetched += b - a
        return self.value[a:b]

    def get(self, byte_range=None):
        return self._get(byte_range)

    def get_ranges(self, byte_ranges):
        return [self._get(r) for r in byte_ranges]

    def set(self, value):
        self.value = bytes(value)

    def delete(self):
        self.value = None
