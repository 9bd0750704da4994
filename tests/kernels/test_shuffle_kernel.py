"""``_kernels/_shuffle.unshuffle_into`` (HDF5's shuffle filter undone) against a numpy
reference, every element size path (1, 4, generic), trailing bytes, read-only input,
bad sizes, and threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from zarrcy._kernels._shuffle import unshuffle_into


def reference(src: np.ndarray, size: int) -> np.ndarray:
    """H5Zshuffle.c: byte j of element i is at j * n + i; trailing bytes unchanged."""
    n = len(src) // size
    out = src.copy()
    for i in range(n):
        for j in range(size):
            out[i * size + j] = src[j * n + i]
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("nbytes", [0, 1, 7, 64, 4099, 2048 * 8 + 5])
def test_matches_reference(size, nbytes):
    src = np.random.default_rng(size * 1000 + nbytes).integers(0, 256, nbytes).astype(np.uint8)
    src.flags.writeable = False  # read-only input works
    dst = np.empty_like(src)
    assert unshuffle_into(src, dst, size) == nbytes
    assert np.array_equal(dst, reference(src, size))


def test_bad_sizes():
    src = np.zeros(8, np.uint8)
    assert unshuffle_into(src, np.zeros(7, np.uint8), 4) == -1
    assert unshuffle_into(src, np.zeros(8, np.uint8), 0) == -1


def test_threads():
    rng = np.random.default_rng(1)
    srcs = [rng.integers(0, 256, 40000).astype(np.uint8) for _ in range(8)]
    outs = [np.empty_like(s) for s in srcs]

    def work(i: int) -> None:
        for _ in range(20):
            unshuffle_into(srcs[i], outs[i], 4)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for s, o in zip(srcs, outs):
        assert np.array_equal(o, reference(s, 4))
