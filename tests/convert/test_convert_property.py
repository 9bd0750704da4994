"""Property test: random shapes, source chunks, destination chunks/shards and region sizes
convert to arrays equal to the source (edge shards, empty dimensions, unaligned grids)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import zarrcy
from zarrcy.storage import MemoryStore


@st.composite
def case(draw):
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(0, 20)) for _ in range(ndim))
    src_chunks = tuple(draw(st.integers(1, 7)) for _ in range(ndim))
    chunks = tuple(draw(st.integers(1, 6)) for _ in range(ndim))
    sharded = draw(st.booleans())
    shards = tuple(c * draw(st.integers(1, 3)) for c in chunks) if sharded else None
    fmt = draw(st.sampled_from([3, 3, 2])) if not sharded else 3
    quant = draw(st.booleans()) and fmt == 3
    workers = draw(st.integers(1, 3))
    region_bytes = draw(st.sampled_from([1, 64, 1 << 20]))
    seed = draw(st.integers(0, 2**31))
    return shape, src_chunks, chunks, shards, fmt, quant, workers, region_bytes, seed


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_convert_equals_source(c):
    shape, src_chunks, chunks, shards, fmt, quant, workers, region_bytes, seed = c
    rng = np.random.default_rng(seed)
    data = np.round(rng.uniform(0, 2, shape), 2).astype("<f8")
    src = MemoryStore()
    a = zarrcy.create_array(src, name="a", shape=shape, dtype=data.dtype, chunks=src_chunks, zarr_format=2,
                            fill_value=float("nan"))
    a[...] = data
    dst = MemoryStore()
    kw = {"chunks": chunks, "shards": shards, "zarr_format": fmt, "workers": workers, "progress": "off",
          "verify": True, "region_bytes": region_bytes, "rewrite": True}
    if quant:
        kw["quantize"] = "scale=100,offset=0,dtype=uint8,nan=255"
    rep = zarrcy.convert(src, dst, **kw)
    assert rep.regions_done == rep.regions
    got = zarrcy.open_array(dst, path="a", mode="r")[...]
    assert np.array_equal(got, data, equal_nan=True)
    assert not [k for k in dst.list() if k.startswith("__zarrcy_convert")]
