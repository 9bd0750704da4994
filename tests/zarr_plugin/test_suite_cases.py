"""Cases from zarr-python 3.4.2's own test suite that failed with zarrcy's pipeline
plugin (issue 14), and the plugin's fallback reporting."""

from __future__ import annotations

import logging
import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
numcodecs = pytest.importorskip("numcodecs")

import zarrcy.zarr_plugin as plugin  # noqa: E402

PLUGIN = "zarrcy.zarr_plugin.ZarrcyCodecPipeline"
DEFAULT = "zarr.core.codec_pipeline.BatchedCodecPipeline"


def _stored(store) -> dict[str, bytes]:
    return {k: v.to_bytes() for k, v in store._store_dict.items()}


def _run(pipeline: str, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            return fn()


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", ["float64", "int16", "bool"])
def test_zero_dimensional_arrays(zarr_format, dtype):
    """0-d chunks: np.ascontiguousarray made them 1-d (write: 'chunk shape: expected (),
    received (1,)') and out[()] is a scalar, not a view (read: TypeError in copyto)."""

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(), dtype=dtype, fill_value=1, zarr_format=zarr_format)
        first = a[...]
        a[...] = 0
        second = a[()]
        a[...] = np.array(1, dtype=dtype)
        return first, second, a[...], _stored(st)

    ours = _run(PLUGIN, go)
    theirs = _run(DEFAULT, go)
    assert [np.asarray(x).tolist() for x in ours[:3]] == [np.asarray(x).tolist() for x in theirs[:3]]
    assert ours[3] == theirs[3]


V2_CASES = [
    dict(dtype="<i4", compressors=numcodecs.Zlib(1)),
    dict(dtype=">f8", compressors=numcodecs.Blosc("lz4", 5, 1), order="F"),
    dict(dtype="u2", compressors=numcodecs.Zstd(3), filters=[numcodecs.Delta("u2")]),
    dict(dtype="i8", compressors=numcodecs.GZip(1)),
    dict(dtype="i8", compressors=None),
    dict(dtype="S3", compressors=None),
    dict(dtype="V3", compressors=numcodecs.Zstd()),
    dict(dtype="U3", compressors=numcodecs.Blosc("zstd", 1, 2)),
]


def _v2_data(dtype: str) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind in "SV":
        return np.array([b"ab", b"c", b"", b"xyz"] * 15, dtype=dtype).reshape(6, 10)
    if dt.kind == "U":
        return np.array(["ab", "cé", "", "xyz"] * 15, dtype=dtype).reshape(6, 10)
    return (np.arange(60) % 200).astype(dtype).reshape(6, 10)


@pytest.mark.parametrize("case", V2_CASES, ids=lambda c: f"{c['dtype']}-{type(c['compressors']).__name__}")
def test_v2_arrays_run_natively(case, caplog):
    """Zarr v2 arrays (zarr-python's V2Codec with numcodecs codecs) run through zarrcy's
    pipeline instead of falling back; values match and stored bytes are read by both."""
    data = _v2_data(case["dtype"])
    kw = {k: v for k, v in case.items() if k != "dtype"}

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=data.shape, chunks=(4, 3), dtype=data.dtype, zarr_format=2, **kw)
        a[...] = data
        a[1:3, 1] = data[0, 0]
        return a[...], a[2:5, 1:9], st

    plugin.reset_fallback_counts()
    ours = _run(PLUGIN, go)
    assert plugin.fallback_counts() == {}
    theirs = _run(DEFAULT, go)
    np.testing.assert_array_equal(ours[0], theirs[0])
    np.testing.assert_array_equal(ours[1], theirs[1])
    # each reads what the other wrote
    np.testing.assert_array_equal(_run(DEFAULT, lambda: zarr.open_array(ours[2], mode="r")[...]), theirs[0])
    np.testing.assert_array_equal(_run(PLUGIN, lambda: zarr.open_array(theirs[2], mode="r")[...]), ours[0])


def test_fallback_reported_once_per_reason(caplog):
    """A chain zarrcy cannot run falls back to zarr-python's pipeline; the reason is
    logged once (no warning: -W error must not break it) and counted per call."""
    plugin.reset_fallback_counts()

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(4,), chunks=(2,), dtype="i4", zarr_format=2,
                              compressors=None, filters=[numcodecs.Pickle()])  # pickle: never ours
        a[...] = np.arange(4)
        a[...] = np.arange(4)
        return a

    with caplog.at_level(logging.WARNING, logger="zarrcy.zarr_plugin"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            warnings.filterwarnings("ignore", module="zarr")
            warnings.filterwarnings("ignore", module="numcodecs")
            with zarr.config.set({"codec_pipeline.path": PLUGIN}):
                go()
    records = [r for r in caplog.records if r.name == "zarrcy.zarr_plugin"]
    assert len(records) == 1 and "pickle" in records[0].getMessage()
    counts = plugin.fallback_counts()
    assert len(counts) == 1 and next(iter(counts.values())) >= 2
