"""_kernels._utf32.first_invalid_code_unit against a slow exact reference: hypothesis
data, block boundaries (4096 units), read-only input, empty input, threads."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels._utf32 import first_invalid_code_unit


def _ref(units) -> int:
    for i, u in enumerate(int(x) for x in units):
        if u > 0x10FFFF or 0xD800 <= u <= 0xDFFF:
            return i
    return -1


UNITS = st.one_of(st.integers(0, 0xD7FF), st.integers(0xD800, 0xDFFF), st.integers(0xE000, 0x10FFFF),
                  st.integers(0x110000, 0xFFFFFFFF), st.sampled_from([0, 0xD7FF, 0xD800, 0xDFFF, 0xE000, 0x10FFFF, 0x110000]))


@settings(max_examples=200, deadline=None)
@given(st.lists(UNITS, max_size=40))
def test_matches_reference(units: list[int]) -> None:
    a = np.array(units, dtype=np.uint32)
    assert first_invalid_code_unit(a) == _ref(units)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 3 * 4096 + 5), data=st.data())
def test_hits_across_blocks(n: int, data) -> None:
    a = np.full(n, 0x41, dtype=np.uint32)
    hits = data.draw(st.lists(st.integers(0, n - 1), max_size=3))
    for h in hits:
        a[h] = data.draw(st.sampled_from([0xD800, 0xDFFF, 0x110000, 0xFFFFFFFF]))
    assert first_invalid_code_unit(a) == (min(hits) if hits else -1)


def test_edges_and_read_only() -> None:
    assert first_invalid_code_unit(np.zeros(0, np.uint32)) == -1
    ok = np.array([0, 0xD7FF, 0xE000, 0x10FFFF], dtype=np.uint32)
    assert first_invalid_code_unit(ok) == -1
    ro = np.frombuffer(np.array([1, 2, 0xDC00], dtype=np.uint32).tobytes(), dtype=np.uint32)
    assert not ro.flags.writeable and first_invalid_code_unit(ro) == 2
    assert first_invalid_code_unit(memoryview(ro)) == 2
    with pytest.raises((ValueError, TypeError)):
        first_invalid_code_unit(np.zeros(4, np.uint32)[::2])  # not contiguous


def test_threads() -> None:
    rng = np.random.default_rng(5)
    arrays = []
    for k in range(16):
        a = rng.integers(0, 0xD000, 50_000).astype(np.uint32)
        if k % 2:
            a[k * 1000] = 0xDABC
        arrays.append(a)
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(first_invalid_code_unit, arrays * 3))
    assert got == [(-1 if k % 2 == 0 else k * 1000) for k in range(16)] * 3
