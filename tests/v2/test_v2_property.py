"""Property tests: random v2 arrays (shape, chunks, dtype, order, separator, compressor,
selection) written by zarrcy read back equal in zarr-python (the oracle) and in zarrcy;
random selections read by zarrcy equal numpy's on zarr-python-written arrays."""

from __future__ import annotations

import shutil
import tempfile
import warnings

import numcodecs
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcy

DTYPES = ["|b1", "|i1", "<i2", ">i4", "<u8", ">f4", "<f8", ">c8"]
COMPRESSORS = [None, numcodecs.Blosc("lz4", 1, 1), numcodecs.Zstd(1), numcodecs.Zlib(1), numcodecs.GZip(1)]


@st.composite
def v2_case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(0, 12), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    dtype = draw(st.sampled_from(DTYPES))
    order = draw(st.sampled_from(["C", "F"]))
    sep = draw(st.sampled_from([".", "/"]))
    comp = draw(st.sampled_from(range(len(COMPRESSORS))))
    filt = draw(st.booleans()) and np.dtype(dtype).kind in "iu"
    seed = draw(st.integers(0, 2**31))
    sel = tuple(slice(draw(st.integers(0, max(0, s))), None, draw(st.integers(1, 3))) for s in shape)
    return shape, chunks, dtype, order, sep, comp, filt, seed, sel


def _values(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) > 0.5
    if dt.kind in "iu":
        return rng.integers(0, 100, shape).astype(dt)
    if dt.kind == "c":
        return (rng.normal(size=shape) + 1j * rng.normal(size=shape)).astype(dt)
    return rng.normal(size=shape).astype(dt)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v2_case())
def test_zarrcy_writes_zarr_python_reads(case):
    shape, chunks, dtype, order, sep, comp, filt, seed, sel = case
    import zarr

    data = _values(shape, dtype, seed)
    d = tempfile.mkdtemp()
    try:
        from zarrcy.v2 import V2ArrayMetadata

        meta = V2ArrayMetadata.create(shape=shape, dtype=dtype, chunks=chunks, fill_value=0, order=order,
                                      filters=[numcodecs.Delta(dtype)] if filt else None,
                                      compressor=COMPRESSORS[comp], dimension_separator=sep)
        a = zarrcy.create_array(d, zarr_format=2, metadata=meta.to_json())
        a[...] = data
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = zarr.open_array(d, mode="r")
            assert np.array_equal(z[...], data)
            assert np.array_equal(z[sel], data[sel])
        assert np.array_equal(zarrcy.open_array(d, mode="r")[sel], data[sel])
    finally:
        shutil.rmtree(d)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(v2_case())
def test_zarr_python_writes_zarrcy_reads(case):
    shape, chunks, dtype, order, sep, comp, filt, seed, sel = case
    import zarr

    data = _values(shape, dtype, seed)
    d = tempfile.mkdtemp()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = zarr.create_array(d, shape=shape, dtype=dtype, chunks=chunks, zarr_format=2, order=order,
                                  chunk_key_encoding={"name": "v2", "separator": sep}, compressors=COMPRESSORS[comp],
                                  filters=[numcodecs.Delta(np.dtype(dtype).newbyteorder("="))] if filt else None,
                                  fill_value=0)
            z[...] = data
        a = zarrcy.open_array(d, mode="r")
        assert np.array_equal(a[...], data)
        assert np.array_equal(a[sel], data[sel])
    finally:
        shutil.rmtree(d)
