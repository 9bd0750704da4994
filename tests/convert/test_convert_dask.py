"""Dask: ``--dask local:N`` gives output identical to the threaded run; zarrcy arrays work
with ``dask.array.from_array`` / ``dask.array.store``."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main
from convert_helpers import stored_objects

pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")


def test_dask_local_cluster_identical(v2_tree, tmp_path):
    src, _ = v2_tree
    opts = ["--rewrite", "--shards", "32,32", "--chunks", "16,16", "--progress", "off"]
    threaded = str(tmp_path / "threads.zarr")
    assert convert_main([src, threaded, *opts, "--workers", "2"]) == 0
    dasked = str(tmp_path / "dask.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up warnings
        assert convert_main([src, dasked, *opts, "--dask", "local:2"]) == 0
    assert stored_objects(dasked) == stored_objects(threaded)


def test_dask_array_roundtrip(tmp_path):
    data = np.arange(40 * 30, dtype="f4").reshape(40, 30)
    a = zarrcy.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype=data.dtype, chunks=(10, 10), shards=(20, 30))
    a[...] = data
    x = da.from_array(zarrcy.open_array(str(tmp_path / "a.zarr"), mode="r"), chunks=(20, 30))
    assert np.array_equal((x * 2).compute(scheduler="threads"), data * 2)
    b = zarrcy.create_array(str(tmp_path / "b.zarr"), shape=data.shape, dtype=data.dtype, chunks=(10, 10), shards=(20, 30))
    da.store(x + 1, b, lock=False, scheduler="threads")  # shard-aligned dask chunks: no two tasks share a shard
    assert np.array_equal(zarrcy.open_array(str(tmp_path / "b.zarr"))[...], data + 1)
    # v2 arrays too
    c = zarrcy.create_array(str(tmp_path / "c.zarr"), shape=data.shape, dtype=data.dtype, chunks=(10, 10), zarr_format=2)
    da.store(x, c, lock=False, scheduler="threads")
    assert np.array_equal(da.from_array(c, chunks=(10, 10)).compute(scheduler="threads"), data)


def test_dask_quantize_refusal_leaves_nothing(tmp_path, capsys):
    """The single-pass --quantize check on a Dask cluster: a region that cannot be encoded
    stops the run (exit 5); regions in flight finish before the destination is removed, so
    nothing is written afterwards."""
    import os
    import time

    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, shape=(64, 64), dtype="f4", chunks=(8, 8))
    x = np.zeros((64, 64), dtype="f4")
    x[40:, :] = 1000.0  # cannot be encoded in uint8 with scale 1 (out_of_range: error)
    a[...] = x
    dst = str(tmp_path / "d.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up warnings
        rc = convert_main([src, dst, "--quantize", "scale=1,dtype=uint8", "--shards", "8,64", "--chunks", "8,8",
                           "--dask", "local:2", "--progress", "off"])
    assert rc == 5
    assert "checked while converting" in capsys.readouterr().err
    time.sleep(0.3)
    assert not os.path.exists(dst) or not any(files for _, _, files in os.walk(dst))
