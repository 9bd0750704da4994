"""zarrcy._kernels._deflate (libdeflate's gzip wrapper) against the zlib reference:
round trips at every level, result codes (too small an output, bad data, empty input,
several members), compress-bound overflow.  The gzip codec on top: tests/codecs/test_gzip_codec.py;
the zlib entry point (HDF5's deflate filter): tests/kernels/test_deflate_kernel.py."""

from __future__ import annotations

import gzip as std_gzip
import zlib

import deflate._deflate
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _deflate as K


@pytest.fixture(autouse=True, scope="module")
def _entry_points_loaded() -> None:
    """The kernel calls libdeflate through the entry points the ``deflate`` wheel's
    module exports; load them here (zarrcy.codecs.gzip does it on import) so these tests
    run alone (``pytest tests/kernels`` against the debug build)."""
    assert K.load(deflate._deflate.__file__)

def test_kernel_loaded() -> None:
    assert K.available()


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=5000), st.integers(0, 9))
def test_kernel_matches_zlib(data: bytes, level: int) -> None:
    out = np.empty(K.gzip_compress_bound(level, len(data)), dtype=np.uint8)
    n = K.gzip_compress_into(data, out, level)
    assert n > 0
    assert zlib.decompress(out[:n].tobytes(), 31) == data
    ref = zlib.compress(data, level, wbits=31) if hasattr(zlib, "compress") else std_gzip.compress(data, level)
    dst = np.empty(len(data), dtype=np.uint8)
    code, used = K.gzip_decompress_into(ref, dst)
    assert (code, used) == (len(data), len(ref))
    assert dst.tobytes() == data


def test_kernel_result_codes() -> None:
    data = b"abc" * 1000
    g = std_gzip.compress(data)
    assert K.gzip_decompress_into(g, np.empty(10, np.uint8))[0] == K.INSUFFICIENT_SPACE
    assert K.gzip_decompress_into(b"nonsense" * 4, np.empty(10, np.uint8))[0] == K.BAD_DATA
    assert K.gzip_decompress_into(b"", np.empty(10, np.uint8))[0] == K.BAD_DATA
    code, used = K.gzip_decompress_into(g + g, np.empty(3000, np.uint8))
    assert (code, used) == (3000, len(g))  # first member only: callers check `used`
    assert K.gzip_compress_into(data, np.empty(5, np.uint8), 9) == K.INSUFFICIENT_SPACE
