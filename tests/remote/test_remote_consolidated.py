"""Consolidated metadata over the local servers: a hierarchy opens with one request,
and HTTP (which cannot list) can walk groups."""

from __future__ import annotations

import shutil

import numpy as np

import zarrcy
from zarrcy.consolidated import ConsolidatedStore


def test_http_group_walk_through_consolidated(http_server, tmp_path):
    base, root, handler = http_server
    local = tmp_path / "c.zarr"
    g = zarrcy.open_group(str(local), mode="w")
    for i in range(5):
        a = g.create_group(f"g{i}").create_array("v", shape=(8,), dtype="int32", chunks=(4,), fill_value=0)
        a[...] = np.arange(8) * i
    zarrcy.consolidate_metadata(str(local))
    shutil.copytree(local, root / "c.zarr")
    handler.log.clear()
    r = zarrcy.open_group(f"{base}/c.zarr", mode="r")
    assert isinstance(r.store, ConsolidatedStore)
    assert [p for p, _ in r.walk()] == [x for i in range(5) for x in (f"g{i}", f"g{i}/v")]
    assert len(handler.log) == 1  # the root zarr.json, nothing else
    np.testing.assert_array_equal(r["g3/v"][...], np.arange(8) * 3)


def test_s3_consolidated_xarray_round_trip(s3_url, s3_server):
    import pytest

    xr = pytest.importorskip("xarray")
    from zarrcy.xarray import ZarrcyBackendEntrypoint, to_zarrcy

    ds = xr.Dataset({"v": (("t", "x"), np.arange(12.0).reshape(3, 4))}, coords={"t": [1, 2, 3]}, attrs={"a": "b"})
    to_zarrcy(ds, s3_url, storage_options=s3_server[1], shards={"t": 3}, chunks={"t": 1})
    back = xr.open_dataset(s3_url, engine=ZarrcyBackendEntrypoint, storage_options=s3_server[1])
    xr.testing.assert_identical(back, ds)
    g = zarrcy.open_group(s3_url, mode="r", storage_options=s3_server[1])
    assert isinstance(g.store, ConsolidatedStore)
