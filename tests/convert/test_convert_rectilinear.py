"""zarrcy convert with a rectilinear source: rechunked to a regular (sharded) grid with
--chunks/--shards (values exact, read back by zarr-python too); without them the array is
refused (exit 2) or skipped with --on-unsupported skip, naming what to pass."""

from __future__ import annotations

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main


@pytest.fixture
def rect_src(tmp_path):
    path = str(tmp_path / "src.zarr")
    g = zarrcy.create_group(path)
    a = g.create_array("r", shape=(50, 37), dtype="f4", chunks=[[10, 20, 20], [[12, 3], 1]], fill_value=-1)
    want = np.arange(50 * 37, dtype="f4").reshape(50, 37)
    want[30:45, 5:9] = -1  # partly unwritten: fill value
    a[:30] = want[:30]
    a[45:] = want[45:]
    a[30:45, :5] = want[30:45, :5]
    a[30:45, 9:] = want[30:45, 9:]
    g.create_array("plain", shape=(50, 37), dtype="i2", chunks=(10, 10))[...] = 3
    return path, want


@pytest.mark.parametrize("opts", [["--chunks", "8,8"], ["--chunks", "5,8", "--shards", "10,16"]])
def test_rectilinear_source_to_regular_grid(rect_src, tmp_path, opts):
    src, want = rect_src
    dst = str(tmp_path / "dst.zarr")
    assert convert_main([src, dst, "--path", "r", *opts, "--verify", "--progress", "off"]) == 0
    out = zarrcy.open_array(dst, mode="r")
    assert out.metadata.chunk_grid.name == "regular"
    np.testing.assert_array_equal(out[...], want)
    zarr = pytest.importorskip("zarr")
    np.testing.assert_array_equal(zarr.open_array(dst, mode="r")[...], want)


def test_rectilinear_source_without_chunks_is_refused_or_skipped(rect_src, tmp_path, capsys):
    src, _ = rect_src
    dst = str(tmp_path / "dst.zarr")
    assert convert_main([src, dst, "--path", "r", "--progress", "off"]) == 2
    assert "--chunks" in capsys.readouterr().err
    dst2 = str(tmp_path / "dst2.zarr")
    assert convert_main([src, dst2, "--on-unsupported", "skip", "--progress", "off"]) == 0
    assert "rectilinear" in capsys.readouterr().out
    np.testing.assert_array_equal(zarrcy.open_array(dst2, path="plain", mode="r")[...], 3)
