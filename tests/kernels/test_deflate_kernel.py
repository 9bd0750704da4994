"""``_kernels/_deflate.zlib_decompress_into`` (HDF5's deflate filter: zlib streams,
RFC 1950) against Python's zlib as the oracle: exact output, result codes for damaged,
truncated and oversized streams, trailing bytes, read-only input, and threads."""

from __future__ import annotations

import threading
import zlib

import numpy as np
import pytest

import deflate._deflate

from zarrcy._kernels import _deflate as K


@pytest.fixture(autouse=True, scope="module")
def _libdeflate() -> None:
    """libdeflate's entry points (the ``deflate`` wheel, a hard dependency) are loaded, or
    every test here fails: a missing libdeflate must not turn into silent skips."""
    assert K.load(deflate._deflate.__file__), "libdeflate entry points not found in the deflate wheel"


def payload(n: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 7, n).astype(np.uint8) + np.arange(n, dtype=np.uint8) // 64).tobytes()


@pytest.mark.parametrize("n", [0, 1, 100, 65536 + 3, 1 << 20])
@pytest.mark.parametrize("level", [0, 1, 4, 9])
def test_matches_zlib(n, level):
    raw = payload(n, n + level)
    z = np.frombuffer(zlib.compress(raw, level), np.uint8)  # read-only input works
    assert not z.flags.writeable
    out = np.empty(n, np.uint8)
    code, used = K.zlib_decompress_into(z, out)
    assert (code, used) == (n, len(z))
    assert out.tobytes() == raw


def test_result_codes():
    raw = payload(5000)
    z = zlib.compress(raw, 4)
    out = np.empty(5000, np.uint8)
    assert K.zlib_decompress_into(np.frombuffer(z[:-5], np.uint8), out)[0] == K.BAD_DATA  # truncated
    bad = bytearray(z)
    bad[len(bad) // 2] ^= 0xFF
    assert K.zlib_decompress_into(np.frombuffer(bytes(bad), np.uint8), out)[0] < 0  # damaged (data or adler32)
    assert K.zlib_decompress_into(np.frombuffer(z, np.uint8), out[:4999])[0] == K.INSUFFICIENT_SPACE
    assert K.zlib_decompress_into(np.frombuffer(zlib.compress(raw, 4)[:0], np.uint8), out)[0] == K.BAD_DATA  # empty
    # gzip is not zlib
    import gzip

    assert K.zlib_decompress_into(np.frombuffer(gzip.compress(raw), np.uint8), out)[0] == K.BAD_DATA
    # a shorter stream than the buffer: the count says so (callers compare it)
    big = np.empty(6000, np.uint8)
    assert K.zlib_decompress_into(np.frombuffer(z, np.uint8), big) == (5000, len(z))
    # trailing bytes: consumed tells where the stream ended
    assert K.zlib_decompress_into(np.frombuffer(z + b"junk", np.uint8), out) == (5000, len(z))


def test_threads():
    raws = [payload(300000, i) for i in range(8)]
    zs = [np.frombuffer(zlib.compress(r, 4), np.uint8) for r in raws]
    errors: list[str] = []

    def work(i: int) -> None:
        out = np.empty(len(raws[i]), np.uint8)
        for _ in range(10):
            code, _ = K.zlib_decompress_into(zs[i], out)
            if code != len(raws[i]) or out.tobytes() != raws[i]:
                errors.append(f"thread {i}")

    ts = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
