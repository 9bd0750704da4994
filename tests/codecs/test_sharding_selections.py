"""Selections reach the sharding codec intact (issue 13.1): every selection kind on
sharded arrays (plain, nested sharding, transpose before sharding, index at the start
or end) equals numpy, and the inner chunks decoded equal the inner chunks touched."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.codecs.sharding import decode_stats

BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
BYTES_BIG = {"name": "bytes", "configuration": {"endian": "big"}}
GZIP = {"name": "gzip", "configuration": {"level": 1}}


def _meta(shape, shard, codecs, dtype="int32"):
    return {
        "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(shard)}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": [0, 0] if dtype.startswith("complex") else 0,
        "codecs": codecs,
    }


def _sharding(inner, codecs=(BYTES,), location="end"):
    return {"name": "sharding_indexed", "configuration": {
        "chunk_shape": list(inner), "codecs": list(codecs), "index_location": location}}


@pytest.fixture
def counting():
    decode_stats.reset(True)
    yield decode_stats
    decode_stats.reset(False)


def _filled(shape=(4096,), inner=(64,), codecs=(BYTES,)):
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta(shape, shape, [_sharding(inner, codecs)]))
    data = np.arange(1, math.prod(shape) + 1, dtype="int32").reshape(shape)  # no fill values: every chunk stored
    a[...] = data
    return a, data


def _touched(sel_per_dim, shape, inner):
    """Independent oracle: distinct inner chunks per dimension, multiplied."""
    n = 1
    for s, size, c in zip(sel_per_dim, shape, inner):
        idx = np.arange(size)[s] if isinstance(s, slice) else np.atleast_1d(np.asarray(s))
        n *= len(np.unique(idx // c))
    return n


@pytest.mark.parametrize("codecs", [(BYTES,), (BYTES, GZIP)])
def test_decoded_equals_touched_1d(counting, codecs, inner_loop):
    a, data = _filled(codecs=codecs)
    for sel, touched in [(np.s_[0:4000:1000], 4), (np.s_[5:6], 1), (np.s_[63:65], 2), (np.s_[::640], 7)]:
        counting.reset()
        np.testing.assert_array_equal(a[sel], data[sel])
        assert counting.decoded == touched, (sel, counting.decoded)
    counting.reset()
    np.testing.assert_array_equal(a.oindex[[0, 3999]], data[[0, 3999]])
    assert counting.decoded == 2
    counting.reset()
    np.testing.assert_array_equal(a.vindex[[3999, 0, 4]], data[[3999, 0, 4]])
    assert counting.decoded == 2
    counting.reset()
    mask = np.zeros(4096, bool)
    mask[[7, 700, 701]] = True
    np.testing.assert_array_equal(a.oindex[mask], data[mask])
    assert counting.decoded == 2


def test_decoded_equals_touched_3d(counting, inner_loop):
    shape, inner = (32, 32, 32), (8, 8, 8)
    a, data = _filled(shape, inner)
    cases = [
        np.s_[::16, :, :], np.s_[::10, ::10, ::10], np.s_[3, ::9, 1:30:7], np.s_[0:32:31, 5, 5],
    ]
    for sel in cases:
        counting.reset()
        np.testing.assert_array_equal(a[sel], data[sel])
        assert counting.decoded == _touched(sel, shape, inner), (sel, counting.decoded)
    counting.reset()
    idx = ([3, 20, 30], slice(None), [0, 31])
    np.testing.assert_array_equal(a.oindex[idx], data[np.ix_([3, 20, 30], np.arange(32), [0, 31])])
    assert counting.decoded == _touched(idx, shape, inner)
    # vindex: the inner chunks holding the points, not their orthogonal product
    counting.reset()
    pts = ([0, 31, 1, 17], [0, 31, 2, 9], [0, 31, 3, 30])
    np.testing.assert_array_equal(a.vindex[pts], data[pts])
    assert counting.decoded == 3


def test_huge_steps_behave_as_numpy():
    a, data = _filled()
    for step in (4095, 4096, 2**62):
        np.testing.assert_array_equal(a[::step], data[::step])
        np.testing.assert_array_equal(a[5::step], data[5::step])
    # the codec itself, with steps up to 2^63 - 1 (the array layer's projection of such
    # steps is the _grid kernel's: issue 12.3)
    pipe = a._pipeline
    getter = zarrcy.storage.StorePath(a.store, "c/0")
    for step in (2**63 - 1, 2**62 + 3):
        for start in (0, 5, 4095):
            got = pipe.decode_partial(getter, (slice(start, 4096, step),))
            np.testing.assert_array_equal(got, data[start::step])


def test_transpose_before_sharding_keeps_partial_reads(counting):
    shape = (16, 24)
    codecs = [{"name": "transpose", "configuration": {"order": [1, 0]}}, _sharding((8, 4))]
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta(shape, shape, codecs))
    data = np.arange(1, 16 * 24 + 1, dtype="int32").reshape(shape)
    a[...] = data
    assert a._pipeline.supports_partial_decode
    counting.reset()
    np.testing.assert_array_equal(a[1:3, 5:7], data[1:3, 5:7])
    assert counting.decoded == 1  # encoded (24, 16) with (8, 4) inner chunks: (5:7, 1:3) is one
    counting.reset()
    assert a[9, 17] == data[9, 17] and counting.decoded == 1
    a[2, 3:20:5] = -1
    data[2, 3:20:5] = -1
    np.testing.assert_array_equal(a[...], data)


# -- hypothesis: random arrays x random selections of every kind == numpy -------------

@st.composite
def setups(draw):
    ndim = draw(st.integers(1, 3))
    inner = [draw(st.integers(1, 4)) for _ in range(ndim)]
    shard = [c * draw(st.integers(1, 3)) for c in inner]
    shape = [draw(st.integers(0, 3 * s)) for s in shard]
    location = draw(st.sampled_from(["start", "end"]))
    kind = draw(st.sampled_from(["plain", "gzip", "nested", "transpose"]))
    bc = draw(st.sampled_from([BYTES, BYTES_BIG]))  # big-endian: the kernel byte-swaps
    if kind == "plain":
        codecs = [_sharding(inner, (bc,), location)]
    elif kind == "gzip":
        codecs = [_sharding(inner, (bc, GZIP), location)]
    elif kind == "nested":
        inner2 = [max(1, c // 2) if c % 2 == 0 else c for c in inner]
        codecs = [_sharding(inner, (_sharding(inner2, (BYTES,), "start"),), location)]
    else:
        order = draw(st.permutations(range(ndim)))
        enc_shard = [shard[o] for o in order]
        enc_inner = [inner[o] for o in order]
        assert all(s % c == 0 for s, c in zip(enc_shard, enc_inner))
        codecs = [{"name": "transpose", "configuration": {"order": list(order)}}, _sharding(enc_inner, (BYTES,), location)]
    dtype = draw(st.sampled_from(["int32", "uint16", "float64", "complex64", "int8"]))
    return shape, shard, codecs, draw(st.integers(0, 2**32 - 1)), dtype


def _dim_sel(rng, n, allow_array=True):
    k = int(rng.integers(0, 6 if allow_array else 4))
    if n == 0 or k == 0:
        return slice(None)
    if k == 1:
        return int(rng.integers(-n, n))
    if k == 2:
        a, b = sorted(rng.integers(0, n + 1, size=2).tolist())
        return slice(a, b, int(rng.integers(1, 6)))
    if k == 3:
        return slice(int(rng.integers(0, n)), None, int(rng.choice([1, 2, n + 7, 2**62])))
    if k == 4:
        return rng.integers(0, n, size=int(rng.integers(0, 5))).tolist()  # unsorted, duplicates
    return rng.random(n) < 0.3  # boolean mask


def _oracle_oindex(data, sel):
    parts = []
    drop = []
    for d, (s, n) in enumerate(zip(sel, data.shape)):
        if isinstance(s, slice):
            parts.append(np.arange(n)[s])
        elif isinstance(s, int):
            parts.append(np.array([s % n]))
            drop.append(d)
        else:
            s = np.asarray(s)
            parts.append(np.flatnonzero(s) if s.dtype == bool else s.astype(np.int64))
    out = data[np.ix_(*parts)] if parts else data[()]
    return out.reshape([len(p) for d, p in enumerate(parts) if d not in drop]) if parts else out


@pytest.fixture(params=["kernel", "kernel-pool", "python"])
def inner_loop(request, monkeypatch):
    """Partial reads through the C scatter kernel (on the calling thread, or split over
    the calling thread and native pool helpers even for tiny reads), and through the
    Python path."""
    from zarrcy import execution
    from zarrcy.codecs.sharding import scatter

    monkeypatch.setattr(scatter, "ENABLED", request.param != "python")
    if request.param == "kernel-pool":
        monkeypatch.setattr(execution, "PARALLEL_MIN_BYTES", 0)
        before = zarrcy.config()["threads"]
        zarrcy.config(threads=3)
        yield request.param
        zarrcy.config(threads=before)
        return
    yield request.param


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(setup=setups())
def test_every_selection_kind_equals_numpy(inner_loop, setup):
    shape, shard, codecs, seed, dtype = setup
    rng = np.random.default_rng(seed)
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta(shape, shard, codecs, dtype))
    data = rng.integers(-50, 50, size=shape).astype(dtype)
    if dtype == "complex64":
        data = data + 1j * rng.integers(-3, 3, size=shape)
    data[data < -30] = 0  # some inner chunks of fill values
    a[...] = data
    for _ in range(4):
        # basic: ints, slices with steps, at most one array
        sel = tuple(_dim_sel(rng, n, allow_array=False) for n in shape)
        np.testing.assert_array_equal(a[sel], data[sel])
        # orthogonal: arrays (unsorted, duplicates) and masks per dimension
        osel = tuple(_dim_sel(rng, n) for n in shape)
        np.testing.assert_array_equal(a.oindex[osel], _oracle_oindex(data, osel))
        if math.prod(shape):
            m = int(rng.integers(0, 6))
            vsel = tuple(rng.integers(0, n, size=m) for n in shape)
            np.testing.assert_array_equal(a.vindex[vsel], data[vsel])
        # partial writes with steps and arrays, mirrored in numpy
        wsel = tuple(_dim_sel(rng, n, allow_array=False) for n in shape)
        v = rng.integers(-9, 9, size=data[wsel].shape).astype(dtype)
        a[wsel] = v
        data[wsel] = v
        np.testing.assert_array_equal(a[...], data)
        if math.prod(shape):  # vindex writes (distinct points)
            flat = rng.choice(math.prod(shape), size=min(5, math.prod(shape)), replace=False)
            pts = np.unravel_index(flat, shape)
            pv = rng.integers(-9, 9, size=flat.size).astype(dtype)
            a.vindex[pts] = pv
            data[pts] = pv
            np.testing.assert_array_equal(a[...], data)


def _gzip_shard_array(members=1):
    """A 1-d sharded gzip array whose inner chunk 1 is stored as ``members`` gzip members."""
    import gzip

    import crc32c

    n, c = 64, 8
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta((n,), (n,), [_sharding((c,), (BYTES, GZIP))]))
    data = np.arange(1, n + 1, dtype="int32")
    pieces = []
    for i in range(n // c):
        raw = data[i * c:(i + 1) * c].tobytes()
        if i == 1 and members > 1:
            half = len(raw) // 2
            pieces.append(gzip.compress(raw[:half]) + gzip.compress(raw[half:]))
        else:
            pieces.append(gzip.compress(raw))
    offs = np.cumsum([0] + [len(p) for p in pieces[:-1]])
    idx = np.empty(2 * len(pieces), "<u8")
    idx[0::2] = offs
    idx[1::2] = [len(p) for p in pieces]
    raw_idx = idx.tobytes()
    a.store.set("c/0", b"".join(pieces) + raw_idx + crc32c.crc32c(raw_idx).to_bytes(4, "little"))
    return a, data, pieces


def test_kernel_path_multi_member_gzip_falls_back(inner_loop):
    a, data, _ = _gzip_shard_array(members=2)
    pipe_gzip_multi_ok = True
    try:
        got = a[0:64:3]
    except zarrcy.CorruptChunkError:
        pipe_gzip_multi_ok = False
    if pipe_gzip_multi_ok:  # the Python gzip codec accepts several members: so must the kernel path
        np.testing.assert_array_equal(got, data[0:64:3])
        np.testing.assert_array_equal(a[...], data)


def test_kernel_path_corrupt_inner_chunk_names_it(inner_loop):
    a, data, pieces = _gzip_shard_array()
    blob = bytearray(a.store.get("c/0"))
    start = len(pieces[0]) + len(pieces[1]) + len(pieces[2]) // 2
    blob[start:start + 4] = b"\xff\xff\xff\xff"  # inner chunk 2's deflate stream
    a.store.set("c/0", bytes(blob))
    with pytest.raises(zarrcy.CorruptChunkError, match=r"c/0.*inner chunk \(2,\)"):
        a[0:64:3]
    with pytest.raises(zarrcy.CorruptChunkError, match=r"c/0"):
        a[...]
    np.testing.assert_array_equal(a[0:16], data[0:16])


@given(st.integers(1, 9), st.integers(0, 200), st.integers(0, 80), st.integers(1, 40))
def test_slice_runs_against_numpy(c, start, n_sel, step):
    from zarrcy.codecs.sharding.projection import slice_runs

    idx = start + step * np.arange(n_sel)
    ch, cs, ce, os_, oe = slice_runs(c, start, n_sel, step)
    assert ch == sorted(set((idx // c).tolist()))
    got = []
    for q, a, b, o0, o1 in zip(ch, cs, ce, os_, oe):
        local = np.arange(a, b, step)
        assert local.size == o1 - o0 and (local < c).all()
        got.extend((q * c + local).tolist())
        assert (idx[o0:o1] == q * c + local).all()
    assert got == idx.tolist()


@pytest.mark.parametrize("kernel", [True, False])
def test_vindex_write_touches_only_the_inner_chunks_of_the_points(monkeypatch, kernel):
    from zarrcy.codecs.pipeline import CodecPipeline
    from zarrcy.codecs.sharding import decode_stats, scatter

    monkeypatch.setattr(scatter, "ENABLED", kernel)
    a, data = _filled((4096,), (64,), (BYTES, GZIP))
    calls = []
    real = CodecPipeline.decode

    def counting_decode(self, raw, ctx=None):
        calls.append(self.spec.shape)
        return real(self, raw, ctx)

    monkeypatch.setattr(CodecPipeline, "decode", counting_decode)
    decode_stats.reset()
    try:
        a.vindex[[5, 4000, 6]] = [-1, -2, -3]
        kernel_decoded = decode_stats.decoded
    finally:
        decode_stats.reset(False)
    data[[5, 4000, 6]] = [-1, -2, -3]
    # two inner chunks decoded, not the 4096-element shard: by the kernel (merge_chunks)
    # or by the Python path (one pipeline decode each)
    assert (kernel_decoded, calls) == ((2, []) if kernel else (0, [(64,), (64,)]))
    monkeypatch.setattr(CodecPipeline, "decode", real)
    np.testing.assert_array_equal(a[...], data)


@pytest.mark.parametrize("location", ["start", "end"])
@pytest.mark.parametrize("codecs", [(BYTES,), (BYTES, GZIP), (BYTES_BIG, GZIP)])
def test_whole_shards_decode_into_strided_output(counting, location, codecs):
    """A read covering whole shards decodes each straight into its (strided) region of
    the output -- the kernel scatters with the output's strides, no scratch shard and
    copy (ShardingCodec.decodes_into_strided) -- equal to numpy, interior and edge
    shards, missing inner chunks and missing shards filled; every stored inner chunk
    decoded once."""
    shape, shard, inner = (20, 18, 14), (8, 6, 4), (4, 3, 2)
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta(shape, shard, [_sharding(inner, codecs, location)]))
    data = np.arange(1, math.prod(shape) + 1, dtype="int32").reshape(shape)
    data[8:16, 0:6, 0:4] = 0  # one whole shard of fill: not stored
    data[0:4, 0:3, 4:6] = 0  # one inner chunk of fill: not stored
    a[...] = data
    assert a._pipeline.decodes_into_strided
    stored = sum(1 for c in np.ndindex(5, 6, 7)
                 if data[tuple(slice(i * k, (i + 1) * k) for i, k in zip(c, inner))].any())
    counting.reset()
    np.testing.assert_array_equal(a[...], data)
    assert counting.decoded == stored
    for sel in (np.s_[8:16, 6:12, 4:12], np.s_[0:16, :, 8:], np.s_[16:, 12:, 12:], np.s_[3:17, 5:13, 1:13]):
        np.testing.assert_array_equal(a[sel], data[sel])
    np.testing.assert_array_equal(a.oindex[[1, 9, 17], :, 4:8], data[[1, 9, 17]][:, :, 4:8])


def test_partial_reads_of_few_shards_run_in_the_calling_thread(monkeypatch):
    """A partial read touching 2-4 shards (an unaligned box across shard edges) reads
    them in the calling thread, one kernel call each, no Python task per shard; more
    shards, or whole ones, still go to the pool (``ExecContext.map``), where the threads
    idle at the end of the read join the kernels within the budget.  Results equal
    numpy either way."""
    import threading

    from zarrcy.execution import ExecContext, observe

    shape, shard, inner = (24, 24, 24), (8, 8, 8), (4, 4, 4)
    a = zarrcy.create_array(zarrcy.MemoryStore(), metadata=_meta(shape, shard, [_sharding(inner, (BYTES, GZIP))]))
    data = np.arange(1, math.prod(shape) + 1, dtype="int32").reshape(shape)
    a[...] = data
    zarrcy.config(threads=2)
    pooled = []
    real_fan_out = ExecContext._fan_out

    def spy(self, fn, items, helpers):
        items = list(items)
        pooled.append(len(items))
        real_fan_out(self, fn, iter(items), helpers)

    monkeypatch.setattr(ExecContext, "_fan_out", spy)
    main = threading.get_ident()
    readers = set()
    real_partial = type(a._pipeline).decode_partial

    def record(self, *args, **kw):
        readers.add(threading.get_ident())
        return real_partial(self, *args, **kw)

    monkeypatch.setattr(type(a._pipeline), "decode_partial", record)
    for sel in (np.s_[6:10, 1:5, 2:7], np.s_[6:10, 6:10, 1:3], np.s_[3, 6:10, 1:3]):
        pooled.clear()
        readers.clear()
        np.testing.assert_array_equal(a[sel], data[sel])
        assert sum(pooled) == 0 and readers == {main}
    pooled.clear()
    np.testing.assert_array_equal(a[6:10, 6:10, 6:10], data[6:10, 6:10, 6:10])  # 8 shards: the pool
    assert sum(pooled) == 8
    pooled.clear()
    with observe() as seen:
        np.testing.assert_array_equal(a[5:20, 5:20, 5:20], data[5:20, 5:20, 5:20])  # 27 shards: the pool
    assert sum(pooled) == 27
    # ... within the call's budget of two threads (tests/reliability/test_execution_context.py)
    assert len(seen) == 1 and seen[0].budget.peak <= 2 and seen[0].budget.busy == 1
    pooled.clear()
    np.testing.assert_array_equal(a[0:8, 0:8, 0:12], data[0:8, 0:8, 0:12])  # one shard whole: the pool
    assert sum(pooled) == 2
