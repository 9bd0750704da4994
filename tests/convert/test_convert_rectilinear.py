"""zarrcy convert with a rectilinear source (ext-chunk-grid-rectilinear.md): by default the
destination keeps the grid (plain, or sharded under a rectilinear shard grid), dimension
names and codecs as for other sources; regions are whole source chunks (or groups of
them); resumable, verifiable, on threads or Dask; read back by zarr-python 3.4 with
``array.rectilinear_chunks`` on.  --chunks/--shards rechunk to a regular grid."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import ConvertError, convert_main, execute
from convert_helpers import journal_done, kill_convert_after, stored_objects

ROWS = [[10, 20, 20]]            # 50 rows
COLS = [[[12, 3], 1]]            # 37 columns: 12, 12, 12, 1


@pytest.fixture
def rect_src(tmp_path):
    path = str(tmp_path / "src.zarr")
    g = zarrcy.create_group(path)
    a = g.create_array("r", shape=(50, 37), dtype="f4", chunks=[*ROWS, *COLS], fill_value=-1,
                       dimension_names=("y", "x"), compressors={"name": "zstd", "configuration": {"level": 3}})
    want = np.arange(50 * 37, dtype="f4").reshape(50, 37)
    want[30:45, 5:9] = -1  # partly unwritten: fill value
    a[:30] = want[:30]
    a[45:] = want[45:]
    a[30:45, :5] = want[30:45, :5]
    a[30:45, 9:] = want[30:45, 9:]
    g.create_array("plain", shape=(50, 37), dtype="i2", chunks=(10, 10))[...] = 3
    return path, want


@pytest.fixture
def rect_sharded_src(tmp_path):
    """A sharded source under a rectilinear shard grid (regular inner chunks)."""
    path = str(tmp_path / "sh.zarr")
    a = zarrcy.create_array(path, shape=(120, 90), dtype="i4", chunks=(10, 30), shards=[[20, 40, 20, 40], [30, 60]],
                            fill_value=0, dimension_names=("t", "x"))
    want = np.arange(120 * 90, dtype="i4").reshape(120, 90)
    a[...] = want
    return path, want


def _grid(path, node=""):
    return zarrcy.open_array(path, path=node, mode="r").metadata.chunk_grid.to_dict()


def _zarr_read(path, node=""):
    zarr = pytest.importorskip("zarr")
    with zarr.config.set({"array.rectilinear_chunks": True}):
        z = zarr.open_array(path, path=node, mode="r")
        return z[...], tuple(tuple(int(x) for x in ax) for ax in z.write_chunk_sizes)


@pytest.mark.parametrize("opts", [[], ["--rewrite"], ["--compressor", "gzip:1"], ["--rewrite", "--workers", "1"]])
def test_rectilinear_grid_kept(rect_src, tmp_path, opts):
    src, want = rect_src
    dst = str(tmp_path / "dst.zarr")
    assert convert_main([src, dst, *opts, "--verify", "--progress", "off"]) == 0
    out = zarrcy.open_array(dst, path="r", mode="r")
    assert out.metadata.chunk_grid.to_dict() == _grid(src, "r")
    assert out.dimension_names == ("y", "x")
    assert out.write_chunk_sizes == ((10, 20, 20), (12, 12, 12, 1))
    np.testing.assert_array_equal(out[...], want)
    codecs = [c["name"] for c in out.metadata.to_json()["codecs"]]
    assert codecs[-1] == ("gzip" if "gzip:1" in opts else "zstd")
    assert not any(k.startswith("__zarrcy") for k in stored_objects(dst))
    np.testing.assert_array_equal(zarrcy.open_array(dst, path="plain", mode="r")[...], 3)
    values, sizes = _zarr_read(dst, "r")
    np.testing.assert_array_equal(values, want)
    assert sizes == ((10, 20, 20), (12, 12, 12, 1))


def test_rectilinear_sharded_grid_kept(rect_sharded_src, tmp_path):
    src, want = rect_sharded_src
    for opts in ([], ["--rewrite", "--compressor", "zstd:1"]):
        dst = str(tmp_path / f"dst{len(opts)}.zarr")
        rep = zarrcy.convert(src, dst, progress="off", verify=True, rewrite=bool(opts),
                             compressor="zstd:1" if opts else None)
        assert rep.objects_written == 8
        if opts:
            assert rep.regions == 8  # re-encoded: one region per shard
        out = zarrcy.open_array(dst, mode="r")
        assert out.metadata.chunk_grid.to_dict() == _grid(src)
        assert out.chunks == (10, 30) and out.write_chunk_sizes == ((20, 40, 20, 40), (30, 60))
        assert out.dimension_names == ("t", "x")
        np.testing.assert_array_equal(out[...], want)
        values, sizes = _zarr_read(dst)
        np.testing.assert_array_equal(values, want)
        assert sizes == ((20, 40, 20, 40), (30, 60))


def test_regions_group_whole_chunks(tmp_path):
    """Unsharded: regions group consecutive chunks while they stay under region_bytes; no
    two regions share a chunk (each chunk is written once, by one region)."""
    src = str(tmp_path / "s.zarr")
    rows = [3, 7, 1, 9, 4, 4, 12, 2, 8]  # 50
    a = zarrcy.create_array(src, shape=(50, 16), dtype="f8", chunks=[rows, [5, 11]])
    want = np.random.default_rng(0).normal(size=(50, 16))
    a[...] = want
    dst = str(tmp_path / "d.zarr")
    rep = zarrcy.convert(src, dst, rewrite=True, region_bytes=12 * 16 * 8, progress="off", verify=True)
    plan = rep.plans[0]
    assert plan.region_bounds == ((0, 11, 20, 28, 40, 50), (0, 16))  # whole chunks, at most 12 rows each
    assert rep.regions == 5 and rep.objects_written == 18
    np.testing.assert_array_equal(zarrcy.open_array(dst, mode="r")[...], want)
    # a region budget below one chunk: one chunk per region along the first axis, and the
    # second axis split into its chunks too
    rep = zarrcy.convert(src, str(tmp_path / "d2.zarr"), rewrite=True, region_bytes=8, progress="off", verify=True)
    assert rep.regions == 18 and rep.objects_written == 18
    np.testing.assert_array_equal(zarrcy.open_array(str(tmp_path / "d2.zarr"), mode="r")[...], want)


def test_rechunk_to_regular_grid_still_works(rect_src, tmp_path):
    src, want = rect_src
    for opts in (["--chunks", "8,8"], ["--chunks", "5,8", "--shards", "10,16"]):
        dst = str(tmp_path / f"dst{len(opts)}.zarr")
        assert convert_main([src, dst, "--path", "r", *opts, "--verify", "--progress", "off"]) == 0
        out = zarrcy.open_array(dst, mode="r")
        assert out.metadata.chunk_grid.name == "regular"
        np.testing.assert_array_equal(out[...], want)
        values, _ = _zarr_read(dst)
        np.testing.assert_array_equal(values, want)


def test_v2_destination_needs_chunks(rect_src, tmp_path, capsys):
    src, want = rect_src
    assert convert_main([src, str(tmp_path / "d.zarr"), "--path", "r", "--format", "2", "--progress", "off"]) == 2
    assert "--chunks" in capsys.readouterr().err
    assert convert_main([src, str(tmp_path / "d2.zarr"), "--path", "r", "--format", "2", "--chunks", "10,10",
                         "--progress", "off"]) == 0
    np.testing.assert_array_equal(zarrcy.open_array(str(tmp_path / "d2.zarr"), mode="r")[...], want)


def test_kill9_then_resume_is_identical(tmp_path):
    src = str(tmp_path / "sh.zarr")
    a = zarrcy.create_array(src, shape=(240, 90), dtype="i4", chunks=(10, 30), shards=[[20, 40] * 4, [30, 60]],
                            fill_value=0)
    want = np.arange(240 * 90, dtype="i4").reshape(240, 90)
    a[...] = want
    opts = ["--rewrite", "--compressor", "zstd:1", "--progress", "off"]
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *opts]) == 0
    dst = str(tmp_path / "dst.zarr")
    kill_convert_after([src, dst, *opts], dst, 3)
    assert 3 <= journal_done(dst) < 16
    rep = zarrcy.convert(src, dst, rewrite=True, compressor="zstd:1", resume=True, progress="off", verify=True)
    assert rep.regions_skipped >= 1 and rep.regions_done + rep.regions_skipped == 16
    assert stored_objects(dst) == stored_objects(ref)
    np.testing.assert_array_equal(zarrcy.open_array(dst, mode="r")[...], want)


def test_interrupt_then_resume_unsharded(rect_src, tmp_path, monkeypatch):
    src, want = rect_src
    kw = dict(path="r", rewrite=True, region_bytes=10 * 37 * 4, progress="off", workers=1)
    ref = str(tmp_path / "ref.zarr")
    zarrcy.convert(src, ref, **kw)
    dst = str(tmp_path / "dst.zarr")
    orig = execute.run_region
    calls: list[int] = []

    def stop_after_two(task, ctx=None):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(task.rid)
        return orig(task, ctx)

    monkeypatch.setattr(execute, "run_region", stop_after_two)
    with pytest.raises(ConvertError):
        zarrcy.convert(src, dst, **kw)
    monkeypatch.undo()
    assert journal_done(dst) == 2
    rep = zarrcy.convert(src, dst, resume=True, verify=True, **kw)
    assert rep.regions_skipped == 2 and rep.regions_done == rep.regions - 2
    assert stored_objects(dst) == stored_objects(ref)
    np.testing.assert_array_equal(zarrcy.open_array(dst, mode="r")[...], want)


def test_verify_detects_a_difference(rect_src, tmp_path, monkeypatch, capsys):
    src, _ = rect_src
    monkeypatch.setattr(execute, "_same", lambda a, b: False)
    assert convert_main([src, str(tmp_path / "d.zarr"), "--path", "r", "--rewrite", "--verify",
                         "--progress", "off"]) == 4
    assert "verify" in capsys.readouterr().err


def test_corrupt_chunk_skipped_to_fill(rect_src, tmp_path):
    """--on-error skip replaces exactly the corrupt rectilinear chunk by the fill value."""
    src, want = rect_src
    import os

    with open(os.path.join(src, "r", "c", "1", "1"), "wb") as f:  # rows 10:30, columns 12:24
        f.write(b"garbage")
    dst = str(tmp_path / "d.zarr")
    rep = zarrcy.convert(src, dst, path="r", rewrite=True, on_error="skip", progress="off")
    assert rep.corrupt_chunks == ["r/c/1/1"]
    expect = want.copy()
    expect[10:30, 12:24] = -1
    np.testing.assert_array_equal(zarrcy.open_array(dst, mode="r")[...], expect)


@pytest.mark.parametrize("check", ["inline", "first"])
def test_quantize_keeps_the_grid(rect_src, tmp_path, check):
    src, want = rect_src
    dst = str(tmp_path / "q.zarr")
    rep = zarrcy.convert(src, dst, path="r", quantize="scale=1,offset=-1,dtype=uint16", verify=True, progress="off",
                         quantize_check=check, region_bytes=10 * 37 * 4)
    assert rep.regions == 9  # 3 row chunks x 3 column groups (12, 12, 12 + 1)
    assert rep.plans[0].quantize_report["count"] == want.size
    out = zarrcy.open_array(dst, mode="r")
    assert out.write_chunk_sizes == ((10, 20, 20), (12, 12, 12, 1))
    np.testing.assert_array_equal(out[...], want)


def test_dask_identical_to_threads(rect_sharded_src, tmp_path):
    pytest.importorskip("distributed")
    src, _ = rect_sharded_src
    threaded = str(tmp_path / "t.zarr")
    assert convert_main([src, threaded, "--rewrite", "--progress", "off", "--workers", "2"]) == 0
    dasked = str(tmp_path / "d.zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # distributed's own start-up warnings
        assert convert_main([src, dasked, "--rewrite", "--progress", "off", "--dask", "local:2"]) == 0
    assert stored_objects(dasked) == stored_objects(threaded)


def _random_axis(rng, size: int):
    """Edges covering ``size`` (maybe overflowing it), as plain edges and run-length pairs."""
    form: list = []
    total = 0
    while total < size:
        e = int(rng.integers(1, 9))
        n = int(rng.integers(1, 4))
        form.append([e, n] if n > 1 else e)
        total += e * n
    return form


@pytest.mark.parametrize("seed", range(12))
def test_random_grids_round_trip(tmp_path, seed):
    """Random rectilinear grids (run-length forms, overflowing last edges, a 1-d or 3-d
    array), random region budgets: the kept grid reads back equal in zarrcy and in
    zarr-python (the independent oracle), every chunk written once."""
    rng = np.random.default_rng(seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 30)) for _ in range(ndim))
    forms = [_random_axis(rng, s) for s in shape]
    want = rng.normal(size=shape).astype("f8")
    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, shape=shape, dtype="f8", chunks=forms, fill_value=0)
    a[...] = want
    dst = str(tmp_path / "d.zarr")
    budget = int(rng.integers(8, 8 * int(np.prod(shape)) + 1))
    rep = zarrcy.convert(src, dst, rewrite=True, region_bytes=budget, progress="off", verify=True,
                         workers=int(rng.integers(1, 3)))
    out = zarrcy.open_array(dst, mode="r")
    assert out.metadata.chunk_grid.to_dict() == a.metadata.chunk_grid.to_dict()
    assert rep.objects_written == int(np.prod(a.cdata_shape))
    np.testing.assert_array_equal(out[...], want)
    values, _ = _zarr_read(dst)
    np.testing.assert_array_equal(values, want)


def test_empty_axis(tmp_path):
    src = str(tmp_path / "s.zarr")
    zarrcy.create_array(src, shape=(0, 7), dtype="i4", chunks=[[3, 4], [3, 4]])
    dst = str(tmp_path / "d.zarr")
    rep = zarrcy.convert(src, dst, rewrite=True, progress="off", verify=True)
    assert rep.regions == 0
    out = zarrcy.open_array(dst, mode="r")
    assert out.shape == (0, 7) and out.metadata.chunk_grid.name == "rectilinear"
