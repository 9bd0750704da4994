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


@pytest.mark.parametrize("zarr_format", [2, 3])
def test_big_endian_generic_datetime(zarr_format):
    """numpy's astype between byte orders of generic "M8"/"m8" does not swap: values
    given big-endian were stored swapped (zarr-python's test_generic_time_array_roundtrip)."""
    counts = np.array([0, 1, -2, 100], dtype=">i8")

    def go():
        a = zarr.create_array(store={}, data=counts.view(">M8"), chunks=2, zarr_format=zarr_format, compressors=None)
        a.resize((6,))
        r = np.asarray(zarr.open_array(a.store, mode="r")[:])
        return r.view(r.dtype.byteorder.replace("=", "") + "i8" if r.dtype.byteorder in "<>" else "i8")

    np.testing.assert_array_equal(_run(PLUGIN, go)[:4], counts)
    np.testing.assert_array_equal(_run(PLUGIN, go), _run(DEFAULT, go))


def test_zarrcy_big_endian_generic_datetime():
    """The same numpy behaviour in zarrcy's own pipeline (CodecPipeline.encode)."""
    import zarrcy

    x = np.array([0, 1, -2, 100], dtype=">i8").view(">M8")
    a = zarrcy.create_array(zarrcy.MemoryStore(), data=x, chunks=(2,))
    assert a[:].view("i8").tolist() == [0, 1, -2, 100]


def test_scale_offset_error_texts():
    """zarrcy's scale_offset errors carry zarr-python's wording."""
    from zarr.codecs import ScaleOffset

    def go():
        arr = zarr.create_array(store={}, shape=(3,), dtype="uint8", chunks=(3,), filters=[ScaleOffset(offset=10, scale=1)],
                                compressors=None, fill_value=10)
        arr[:] = np.array([20, 5, 30], dtype="uint8")

    with pytest.raises(ValueError, match="outside the range of dtype uint8"):
        _run(PLUGIN, go)


def test_sharding_coalescing_settings_are_honoured(monkeypatch):
    """zarr-python's array.sharding_coalesce_max_gap_bytes / _max_bytes reach zarrcy's
    coalescing of inner-chunk reads (the plugin's partial shard reads)."""
    seen = []
    import zarrcy.codecs.sharding.reader as sh  # where the coalescing settings are used

    orig = sh.plan_and_fetch

    def spy(snap, getter, layout, flat, linear, version, ctx):
        seen.append(("coalesce_gap", ctx.coalesce_gap))
        seen.append(("coalesce_max", ctx.coalesce_max))
        return orig(snap, getter, layout, flat, linear, version, ctx)

    monkeypatch.setattr(sh, "plan_and_fetch", spy)

    def go():
        a = zarr.create_array(zarr.storage.MemoryStore(), shape=(64,), chunks=(4,), shards=(64,), dtype="i4",
                              fill_value=-1, config={"sharding_coalesce_max_gap_bytes": 7, "sharding_coalesce_max_bytes": 777})
        a[:] = np.arange(64)
        return a[0:40:5]

    np.testing.assert_array_equal(_run(PLUGIN, go), np.arange(0, 40, 5))
    assert ("coalesce_gap", 7) in seen and ("coalesce_max", 777) in seen


def test_index_read_returning_nothing_gives_fill_value(monkeypatch):
    """The behaviour zarr-python's (white-box) test_sharding_partial_shard_read__index_load_fails
    checks, through the synchronous reads the plugin makes."""

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(16,), chunks=(8,), shards=(16,), dtype="f4", fill_value=-999)
        a[:] = np.arange(16)
        monkeypatch.setattr(type(st), "get_sync", lambda self, *args, **kw: None)
        return a[0]

    assert _run(PLUGIN, go) == -999


def test_configured_codec_class_is_used():
    """A codec implementation configured in zarr-python (``codecs.<name>``) runs: the
    plugin leaves chains with codec classes other than zarr-python's own to zarr-python."""
    from zarr.codecs import BloscCodec

    calls = []

    class MyBlosc(BloscCodec):
        def _encode_sync(self, chunk_bytes, chunk_spec):
            calls.append(1)
            return super()._encode_sync(chunk_bytes, chunk_spec)

        async def _encode_single(self, chunk_bytes, chunk_spec):
            calls.append(1)
            return await super()._encode_single(chunk_bytes, chunk_spec)

    def go():
        a = zarr.create_array(zarr.storage.MemoryStore(), shape=(10,), chunks=(5,), dtype="i4", compressors=[MyBlosc()])
        a[:] = np.arange(10)
        return a[:]

    np.testing.assert_array_equal(_run(PLUGIN, go), np.arange(10))
    assert calls


def test_morton_shards_are_written_by_zarr_python():
    """zarr-python lays a shard's inner chunks out in ``subchunk_write_order`` (default
    morton); zarrcy's writer uses C order, so such writes go to zarr-python: identical bytes."""

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(12, 8), chunks=(4, 4), shards=(12, 8), dtype="u1", compressors=None)
        a[:] = np.arange(96, dtype="u1").reshape(12, 8)
        a[1:3, 1] = 7
        return _stored(st)

    assert _run(PLUGIN, go) == _run(DEFAULT, go)


@pytest.mark.parametrize("dtype, value", [("U1", "a"), ("S1", b"a"), ("V2", b"ab")])
def test_zero_dimensional_v2_fixed_size_strings(dtype, value):
    """zarrcy's generic v2 chunk codec made a 0-d chunk 1-d (np.ascontiguousarray):
    zarr-python's test_scalar_array[2-a]."""
    import zarrcy

    def go():
        a = zarr.create_array(zarr.storage.MemoryStore(), shape=(), dtype=dtype, zarr_format=2)
        a[...] = np.array(value, dtype=dtype)
        return a[...]

    assert _run(PLUGIN, go) == _run(DEFAULT, go) == np.array(value, dtype=dtype)[()]
    z = zarrcy.create_array(zarrcy.MemoryStore(), shape=(), dtype=dtype, zarr_format=2)
    z[...] = np.array(value, dtype=dtype)
    assert z[...] == np.array(value, dtype=dtype)[()]


def test_v2_null_fill_value_runs_natively():
    """A v2 array with ``fill_value: null`` (zarr-python hands the pipeline None)."""
    plugin.reset_fallback_counts()

    def go():
        a = zarr.create_array(zarr.storage.MemoryStore(), shape=(6,), chunks=(4,), dtype="i2", zarr_format=2,
                              fill_value=None, compressors=numcodecs.Zstd(1))
        a[:3] = [1, 2, 3]
        return a[:3]

    np.testing.assert_array_equal(_run(PLUGIN, go), [1, 2, 3])
    assert plugin.fallback_counts() == {}


def test_one_dimensional_morton_shards_are_written_by_zarrcy(monkeypatch):
    """With at most one dimension split into inner chunks, morton order is C order:
    zarrcy writes those shards itself, and the bytes equal zarr-python's."""
    from zarrcy.codecs.pipeline import CodecPipeline

    calls = []
    orig = CodecPipeline.encode_partial
    monkeypatch.setattr(CodecPipeline, "encode_partial", lambda self, s, sel, v, *ctx: calls.append(1) or orig(self, s, sel, v, *ctx))

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(64, 3), chunks=(4, 3), shards=(32, 3), dtype="i4", compressors=None)
        a[:] = np.arange(192, dtype="i4").reshape(64, 3)
        a[5:9, 1] = -1
        return _stored(st)

    ours = _run(PLUGIN, go)
    assert calls
    assert ours == _run(DEFAULT, go)


@pytest.mark.parametrize("order", ["morton", "lexicographic", "unordered"])
def test_sharded_writes_in_zarr_python_order_stay_native(order):
    """zarr-python's subchunk_write_order (default "morton") is produced by zarrcy's
    writer: the plugin writes those shards itself (no fallback), byte for byte as
    zarr-python's own pipeline, for whole and partial shard writes."""
    from zarr.codecs import BytesCodec, ShardingCodec  # no gzip: zlib and libdeflate bytes differ

    def go():
        st = zarr.storage.MemoryStore()
        a = zarr.create_array(st, shape=(24, 40), dtype="u2", chunks=(12, 20), fill_value=0,
                              serializer=ShardingCodec(chunk_shape=(3, 5), codecs=[BytesCodec()],
                                                       subchunk_write_order=order),
                              compressors=None)
        a[...] = (np.arange(960, dtype="u2").reshape(24, 40) % 97) + 1
        a[4:9, 7:31] = 5
        return a[...], _stored(st)

    plugin.reset_fallback_counts()
    ours = _run(PLUGIN, go)
    counts = plugin.fallback_counts()
    theirs = _run(DEFAULT, go)
    assert not any("subchunk_write_order" in k for k in counts), counts
    np.testing.assert_array_equal(ours[0], theirs[0])
    assert ours[1] == theirs[1]
