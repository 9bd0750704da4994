"""zarr-python with codec_pipeline.path = zarrcy's pipeline: same bytes and values as its own."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.codecs import BloscCodec, Crc32cCodec, GzipCodec, TransposeCodec, ZstdCodec  # noqa: E402

import zarrcy.zarr_plugin  # noqa: E402,F401  (registers the pipeline class; installed builds use the entry point)

PLUGIN = "zarrcy.zarr_plugin.ZarrcyCodecPipeline"

CASES = [
    dict(dtype="float32", chunks=(8, 8), compressors=[GzipCodec(level=1)]),
    dict(dtype="int16", chunks=(4, 16), compressors=[ZstdCodec(level=1), Crc32cCodec()]),
    dict(dtype=">u4", chunks=(16, 4), compressors=None, filters=[TransposeCodec(order=(1, 0))]),
    dict(dtype="float64", chunks=(4, 4), shards=(8, 16), compressors=[BloscCodec(cname="lz4", clevel=3)]),
    dict(dtype="uint8", chunks=(4, 4), shards=(16, 16), compressors=[GzipCodec(level=5)]),
]


def _write_read(tmp_path, name, case, data, pipeline):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            a = zarr.create_array(str(tmp_path / name), shape=data.shape, fill_value=0, **case)
            a[...] = data
            a[1:3, 2:5] = 7  # partial chunk/shard update
            return a[...], a[2:11, 3:9], a.oindex[[0, 15], [1, 2]]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_plugin_matches_default_pipeline(tmp_path, case):
    data = (np.arange(16 * 16) % 251).reshape(16, 16).astype(case["dtype"])
    ours = _write_read(tmp_path, "ours.zarr", case, data, PLUGIN)
    theirs = _write_read(tmp_path, "theirs.zarr", case, data, "zarr.core.codec_pipeline.BatchedCodecPipeline")
    for x, y in zip(ours, theirs):
        np.testing.assert_array_equal(x, y)
    # stored bytes read back by the other pipeline
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "ours.zarr"))[...], theirs[0])
        with zarr.config.set({"codec_pipeline.path": PLUGIN}):
            np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "theirs.zarr"))[...], ours[0])


def test_plugin_is_used(tmp_path, monkeypatch):
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = []
    orig = CodecPipeline.decode
    monkeypatch.setattr(CodecPipeline, "decode", lambda self, data: calls.append(1) or orig(self, data))
    data = np.arange(256, dtype="int32").reshape(16, 16)
    _write_read(tmp_path, "u.zarr", dict(dtype="int32", chunks=(4, 4), compressors=[GzipCodec(level=1)]), data, PLUGIN)
    assert calls


def test_plugin_falls_back_for_strings(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zarr.config.set({"codec_pipeline.path": PLUGIN}):
            a = zarr.create_array(str(tmp_path / "s.zarr"), shape=(3,), dtype=str, chunks=(2,))
            a[...] = np.array(["a", "bb", "ccc"])
            assert list(a[...]) == ["a", "bb", "ccc"]
