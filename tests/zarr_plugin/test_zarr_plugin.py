"""zarr-python with codec_pipeline.path = zarrcy's pipeline: same bytes and values as its own."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.codecs import (  # noqa: E402
    BloscCodec,
    BytesCodec,
    Crc32cCodec,
    GzipCodec,
    ShardingCodec,
    TransposeCodec,
    ZstdCodec,
)

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
    monkeypatch.setattr(CodecPipeline, "decode", lambda self, data, *ctx: calls.append(1) or orig(self, data, *ctx))
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


@pytest.mark.parametrize("dtype", [str, "bytes"])
def test_variable_length_values_match_default(tmp_path, dtype, monkeypatch):
    """``string`` chunks go through zarrcy's vlen-utf8; ``bytes`` ones stay with
    zarr-python's own codec (its object chunks may hold 0-d arrays)."""
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = []
    orig = CodecPipeline.encode
    monkeypatch.setattr(CodecPipeline, "encode", lambda self, c, *ctx: calls.append(1) or orig(self, c, *ctx))
    words = ["a", "bb", "ccc", "", "é", "f", "gg"]
    vals = np.array(words) if dtype is str else np.array([w.encode() for w in words], dtype=object)
    got = {}
    for label, pipeline in (("ours", PLUGIN), ("theirs", "zarr.core.codec_pipeline.BatchedCodecPipeline")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zarr.config.set({"codec_pipeline.path": pipeline}):
                a = zarr.create_array(str(tmp_path / f"{label}.zarr"), shape=(7,), dtype=dtype, chunks=(3,))
                a[...] = vals
                a[2:5] = vals[4:1:-1]
                a[6:7] = vals[0:1]
                got[label] = (list(a[...]), list(a.oindex[[0, 6]]))
    assert got["ours"] == got["theirs"]
    assert bool(calls) == (dtype is str)


SELECTIONS = [
    (Ellipsis,),
    (3, slice(None)),  # drop_axes
    (slice(None), 5),
    (slice(1, 14, 3), slice(2, 9)),
    (7, 9),
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_read_write_paths_match_default(tmp_path, case):
    """Fast read/write paths: dropped axes, strided and point selections, missing
    chunks (fill value), scalar and partial writes, all-fill chunks erased."""
    data = (np.arange(16 * 16) % 251).reshape(16, 16).astype(case["dtype"])
    results = {}
    for label, pipeline in (("ours", PLUGIN), ("theirs", "zarr.core.codec_pipeline.BatchedCodecPipeline")):
        path = tmp_path / f"{label}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zarr.config.set({"codec_pipeline.path": pipeline}):
                a = zarr.create_array(str(path), shape=data.shape, fill_value=0, **case)
                got = [a[...].copy()]  # nothing written yet: fill value everywhere
                a[:8, :] = data[:8]
                got += [np.asarray(a[sel]).copy() for sel in SELECTIONS]
                a[9, 10] = 3
                a[0:4, 0:8] = 0  # all-fill chunks: erased
                a[5:12, 3:13] = data[5:12, 3:13] + 1
                got += [np.asarray(a[sel]).copy() for sel in SELECTIONS]
                got.append(a.vindex[[0, 5, 15], [1, 9, 2]])
                got.append(a.oindex[[14, 2, 2, 9], [0, 15, 3]])
                got.append(a.oindex[3, [15, 0]])
                got.append(a[-1, ::5])
                got.append(a.oindex[np.arange(16) % 3 == 0, 4:6])  # boolean mask: default path
                keys = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
        results[label] = (got, keys)
    for x, y in zip(results["ours"][0], results["theirs"][0]):
        np.testing.assert_array_equal(x, y)
    assert results["ours"][1] == results["theirs"][1]


def test_fast_paths_used(tmp_path, monkeypatch):
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = {"decode_into": 0, "encode": 0}
    for name in calls:
        orig = getattr(CodecPipeline, name)

        def wrapped(self, *a, _orig=orig, _name=name, **k):
            calls[_name] += 1
            return _orig(self, *a, **k)

        monkeypatch.setattr(CodecPipeline, name, wrapped)
    data = np.arange(256, dtype="float32").reshape(16, 16)
    with zarr.config.set({"codec_pipeline.path": PLUGIN}):
        a = zarr.create_array(str(tmp_path / "f.zarr"), shape=data.shape, dtype=data.dtype, chunks=(4, 4),
                              compressors=[GzipCodec(level=1)], fill_value=0)
        a[...] = data
        np.testing.assert_array_equal(a[...], data)
    assert calls == {"decode_into": 16, "encode": 16}


def test_sharded_reads_use_zarrcy_partial_decode(tmp_path, monkeypatch):
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = []
    orig = CodecPipeline.decode_partial
    monkeypatch.setattr(CodecPipeline, "decode_partial",
                        lambda self, g, sel, *rest: calls.append(sel) or orig(self, g, sel, *rest))
    data = (np.arange(32 * 32) % 1000).reshape(32, 32).astype("uint16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with zarr.config.set({"codec_pipeline.path": PLUGIN}):
            a = zarr.create_array(str(tmp_path / "s.zarr"), shape=data.shape, dtype=data.dtype, chunks=(4, 4),
                                  shards=(16, 16), compressors=[GzipCodec(level=1)], fill_value=0)
            a[:16, :] = data[:16]  # shards (1, 0), (1, 1) stay missing
            np.testing.assert_array_equal(a[...], np.where(np.arange(32)[:, None] < 16, data, 0))
            np.testing.assert_array_equal(a[5, 3:29:3], data[5, 3:29:3])
            np.testing.assert_array_equal(a.oindex[[1, 7, 30], [31, 0]], np.array([[data[1, 31], data[1, 0]],
                                                                                [data[7, 31], data[7, 0]], [0, 0]]))
            assert a[20, 20] == 0
    assert len(calls) >= 4


def test_sharded_writes_use_zarrcy_partial_encode(tmp_path, monkeypatch):
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = []
    orig = CodecPipeline.encode_partial
    monkeypatch.setattr(CodecPipeline, "encode_partial",
                        lambda self, s, sel, v, *ctx: calls.append(sel) or orig(self, s, sel, v, *ctx))
    data = (np.arange(32 * 32) % 1000).reshape(32, 32).astype("int32")
    got = {}
    for label, pipeline in (("ours", PLUGIN), ("theirs", "zarr.core.codec_pipeline.BatchedCodecPipeline")):
        path = tmp_path / f"{label}.zarr"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with zarr.config.set({"codec_pipeline.path": pipeline}):
                # zarrcy writes inner chunks in C order: zarr-python's "lexicographic" (its
                # default "morton" layout is left to zarr-python: test_suite_cases.py)
                shard = ShardingCodec(chunk_shape=(4, 4), codecs=[BytesCodec(), GzipCodec(level=1)],
                                      subchunk_write_order="lexicographic")
                a = zarr.create_array(str(path), shape=data.shape, dtype=data.dtype, chunks=(16, 16),
                                      serializer=shard, compressors=None, filters=None, fill_value=0)
                a[...] = data
                a[3, 5:30] = -1  # integer selection: a dropped dimension
                a[10:20, 10:20] = 7  # scalar over four shards
                a[16:32, 0:16] = 0  # a whole shard back to the fill value: deleted
                assert not (path / "c" / "1" / "0").exists()
                a.oindex[[1, 30], [2, 17]] = 5  # orthogonal: zarr-python's path (shard 1/0 again)
                a[31, 31] = 9
                vals = a[...]
        keys = sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())
        got[label] = (vals, keys)
    np.testing.assert_array_equal(got["ours"][0], got["theirs"][0])
    assert got["ours"][1] == got["theirs"][1]
    assert len(calls) >= 4
