"""``_kernels._fletcher32`` against a slow exact reference written from the definition
(HDF5 ``H5_checksum_fletcher32``: 16-bit big-endian words, the odd last byte as
``byte << 8``, ``sum2`` accumulating ``sum1`` after every word, both modulo 65535)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels._fletcher32 import fletcher32


def _reference(data: bytes) -> tuple[int, int]:
    s1 = s2 = 0
    for i in range(0, len(data) - 1, 2):
        s1 = (s1 + (data[i] << 8 | data[i + 1])) % 65535
        s2 = (s2 + s1) % 65535
    if len(data) & 1:
        s1 = (s1 + (data[-1] << 8)) % 65535
        s2 = (s2 + s1) % 65535
    return s1, s2


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=3000))
def test_matches_reference(data):
    assert fletcher32(data) == _reference(data)


def test_empty_and_tiny():
    assert fletcher32(b"") == (0, 0)
    assert fletcher32(b"\x01") == _reference(b"\x01")
    assert fletcher32(b"\xff\xff") == (0, 0)  # 65535 == 0 modulo 65535


def test_across_reduction_blocks_with_largest_words():
    # more than one 2**20-word block, all words 0xFFFE (the largest nonzero residue) and
    # an odd tail: the accumulators run at their maxima between reductions
    n = 2 * (1 << 20) + 12345
    data = b"\xff\xfe" * n + b"\xff"
    count = n + 1
    w = 0xFFFE
    s1 = (w * n + (0xFF << 8)) % 65535
    s2 = (w * (count * (count + 1) // 2 - 1) + (0xFF << 8)) % 65535  # weights count .. 2, then 1
    assert fletcher32(data) == (s1, s2)


def test_random_large_against_numpy_formula():
    rng = np.random.default_rng(3)
    b = rng.integers(0, 256, size=3_000_001, dtype=np.uint8)
    words = b[:-1].view(">u2").astype(np.int64)
    count = words.shape[0] + 1
    weights = count - np.arange(words.shape[0], dtype=np.int64)
    s1 = (int(words.sum()) + (int(b[-1]) << 8)) % 65535
    s2 = (int((words % 65535 * (weights % 65535) % 65535).sum()) + (int(b[-1]) << 8)) % 65535
    assert fletcher32(b.tobytes()) == (s1, s2)
    assert fletcher32(memoryview(b)) == (s1, s2)  # any contiguous buffer, read-only or not
