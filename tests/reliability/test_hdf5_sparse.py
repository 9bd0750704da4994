"""Huge, mostly unallocated HDF5 datasets (issue 23, items 4 and 5): listing
(``list_prefix``, ``nchunks_initialized``), ``zarrcy convert`` and ``--dry-run`` follow
the stored chunks (the chunk table), never the chunk grid -- a few-KB file declaring
``2**50`` elements with one chunk written lists one key and converts one region, and
regions holding no stored chunk write nothing (as a full run writes nothing for
all-fill chunks).  h5py's reads are the oracle."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 sources need the 'hdf5' extra (h5py)")

import zarrcy  # noqa: E402
from zarrcy.convert import convert_main  # noqa: E402
from zarrcy.storage.hdf5 import HDF5Store  # noqa: E402

Q = ["--progress", "off"]
HUGE = 2**50
AT = 2**49 + 3 * 65536  # where the one chunk is written (a chunk boundary)


def _huge(path: str, chunk: int = 1024, **kw) -> np.ndarray:
    """/v: int16, 2**50 elements in chunks of ``chunk``, one chunk written at AT."""
    block = (np.arange(chunk, dtype="<i2") * 7 - 300).astype("<i2")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=(HUGE,), dtype="<i2", chunks=(chunk,), fillvalue=-9, **kw)
        d[AT: AT + chunk] = block
    assert os.path.getsize(path) < 2 * chunk + (64 << 10)  # a few KB besides the chunk
    return block


@pytest.mark.parametrize("filters", [{"compression": "gzip"}, {"compression": "lzf"}])
def test_listing_a_huge_grid_follows_the_chunk_table(tmp_path, filters):
    """2**40 chunks (2**34 for the second dataset, read through h5py): one key each."""
    path = str(tmp_path / "big.h5")
    _huge(path, **filters)
    with h5py.File(path, "a") as f:
        d = f.create_dataset("w", shape=(2**40, 4), dtype="u1", chunks=(64, 4), **filters)
        d[5 * 64: 5 * 64 + 3] = 1
    store = HDF5Store(path)
    assert list(store.list_prefix("v/")) == ["v/zarr.json", f"v/c/{AT // 1024}"]
    assert sorted(store.list_prefix("w/c")) == ["w/c/5/0"]
    a, w = (zarrcy.open_array(store, path=p, mode="r") for p in "vw")
    assert a.nchunks == 2**40 and a.nchunks_initialized == 1
    assert w.nchunks == 2**34 and w.nchunks_initialized == 1
    assert sorted(store.list()) == ["v/c/" + str(AT // 1024), "v/zarr.json", "w/c/5/0", "w/zarr.json", "zarr.json"]
    store.close()


def test_listing_concatenated_sparse_files(tmp_path):
    """Several files along time, each a huge grid with a few chunks: the keys are the
    chunks holding the stored chunks of each file, shifted to its place (one file read
    through h5py: the chunks are then rows of 4 MiB, each HDF5 chunk touching two)."""
    paths = []
    for i in range(3):
        p = str(tmp_path / f"m{i}.h5")
        with h5py.File(p, "w") as f:
            t = f.create_dataset("time", data=np.arange(4.0) + 4 * i)
            t.make_scale("time")
            x = f.create_dataset("x", shape=(2**31,), dtype="u1", chunks=(1 << 20,))  # nothing written
            x.make_scale("x")
            v = f.create_dataset("v", shape=(4, 2**31), dtype="<f4", chunks=(2, 1024), fillvalue=0.5,
                                 compression="lzf" if i == 1 else "gzip")
            v.dims[0].attach_scale(t)
            v.dims[1].attach_scale(x)
            v[2 * (i % 2): 2 * (i % 2) + 1, 1024 * i: 1024 * i + 10] = i + 1
        paths.append(p)
    store = HDF5Store(paths, concat_dim="time")
    a = zarrcy.open_array(store, path="v", mode="r")
    assert a.shape == (12, 2**31) and a.chunks == (1, 1 << 20)
    assert sorted(store.list_prefix("v/c/")) == ["v/c/0/0", "v/c/1/0", "v/c/6/0", "v/c/7/0", "v/c/8/0", "v/c/9/0"]
    assert a.nchunks_initialized == 6
    assert list(store.list_prefix("x/c")) == []
    assert float(a[6, 1024 + 3]) == 2.0 and float(a[8, 2048]) == 3.0 and float(a[11, 5]) == 0.5
    store.close()


def test_convert_huge_sparse_dataset(tmp_path, capsys):
    """``convert`` of 2**50 elements with one chunk written: one region, one stored
    object, the data and the fill value exact; ``--dry-run`` estimates from the stored
    chunk (no MemoryError, no 1-PiB estimate)."""
    src = str(tmp_path / "huge.h5")
    block = _huge(src, 1 << 16, compression="gzip")  # (a region: 512 source chunks, 511 of them fill)
    dst = str(tmp_path / "o.zarr")
    assert convert_main([src, dst, "--dry-run", "--json", *Q]) == 0
    plan = json.loads(capsys.readouterr().out)
    (p,) = plan["plans"]
    assert p["n_regions"] == 1 and p["nbytes"] == 2 * HUGE
    with h5py.File(src, "r") as f:
        stored = f["v"].id.get_chunk_info(0).size
    assert p["src_stored_bytes"] == stored + 4 and p["estimated_output_bytes"] < 1 << 20
    assert convert_main([src, dst, "--json", *Q]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["regions_done"] == 1 and rep["objects_written"] == 1
    a = zarrcy.open_array(dst, path="v", mode="r")
    assert a.shape == (HUGE,) and a.nchunks_initialized == 1
    assert np.array_equal(a[AT - 5: AT + block.size + 6], np.concatenate([np.full(5, -9), block, np.full(6, -9)]))
    assert int(a[0]) == -9 and int(a[HUGE - 1]) == -9
    assert not os.path.exists(os.path.join(dst, "__zarrcy_convert"))


def _sparse(path: str) -> tuple[np.ndarray, list[int]]:
    """(100, 40) float32 in (10, 8) chunks, 3 chunk rows written sparsely."""
    want = np.full((100, 40), np.float32(-1), dtype="<f4")
    rows = [1, 2, 7]
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=want.shape, dtype="<f4", chunks=(10, 8), fillvalue=-1, compression="gzip")
        for r in rows:
            want[r * 10: r * 10 + 3, 9:20] = np.arange(33, dtype="f4").reshape(3, 11) + r
            d[r * 10: r * 10 + 3, 9:20] = want[r * 10: r * 10 + 3, 9:20]
    return want, rows


@pytest.mark.parametrize("write_empty", [False, True])
def test_regions_without_stored_chunks_write_nothing(tmp_path, capsys, write_empty):
    """The destination holds exactly the objects a full run stores: with
    ``write_empty_chunks`` off, only those holding stored source chunks; on, every one."""
    src = str(tmp_path / "s.h5")
    want, rows = _sparse(src)
    dst = str(tmp_path / "o.zarr")
    zarrcy.config(write_empty_chunks=write_empty)
    args = [src, dst, "--chunks", "10,40", "--shards", "20,40", "--json", *Q]
    assert convert_main(args) == 0
    rep = json.loads(capsys.readouterr().out)
    a = zarrcy.open_array(dst, path="v", mode="r")
    with h5py.File(src, "r") as f:
        assert np.array_equal(a[...], f["v"][...]) and np.array_equal(a[...], want)
    shards = sorted(os.listdir(os.path.join(dst, "v", "c")))
    expect = sorted({str(r // 2) for r in rows}) if not write_empty else [str(i) for i in range(5)]
    assert shards == expect
    assert rep["regions"] == len(expect) and rep["decoded_bytes"] == want.nbytes


def test_virtual_dataset_over_a_sparse_source(tmp_path, capsys):
    """A virtual dataset mapping a huge, sparse source of the same file: its stored data
    are the source's stored chunks seen through the mapping."""
    path = str(tmp_path / "vds.h5")
    block = _huge(path, 1 << 16, compression="gzip")
    with h5py.File(path, "a") as f:
        lay = h5py.VirtualLayout(shape=(HUGE + 100,), dtype="<i2")
        lay[100:] = h5py.VirtualSource(f["v"])
        f.create_virtual_dataset("w", lay, fillvalue=-9)
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="w", mode="r")
    keys = sorted(store.list_prefix("w/c/"))
    cs = a.chunks[0]
    assert keys == sorted({f"w/c/{(AT + 100) // cs}", f"w/c/{(AT + 100 + block.size - 1) // cs}"})
    assert np.array_equal(a[AT + 100: AT + 100 + block.size], block)
    store.close()
    dst = str(tmp_path / "o.zarr")
    assert convert_main([path, dst, "--include", "w", "--json", *Q]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["regions"] == 1
    out = zarrcy.open_array(dst, path="w", mode="r")
    assert np.array_equal(out[AT + 90: AT + 100 + block.size + 5],
                          np.concatenate([np.full(10, -9), block, np.full(5, -9)]))


def test_virtual_dataset_whose_source_fill_differs(tmp_path):
    """Unallocated source chunks read as the *source's* fill value: they are data of the
    virtual dataset, converted (never skipped as its fill value)."""
    path = str(tmp_path / "vds.h5")
    with h5py.File(path, "w") as f:
        s = f.create_dataset("s", shape=(4000,), dtype="<i4", chunks=(100,), fillvalue=7)
        s[1000:1100] = 1
        lay = h5py.VirtualLayout(shape=(4000,), dtype="<i4")
        lay[:] = h5py.VirtualSource(s)
        f.create_virtual_dataset("w", lay, fillvalue=-1)
        want = f["w"][...]
    assert int(want[0]) == 7
    dst = str(tmp_path / "o.zarr")
    assert convert_main([path, dst, "--include", "w", "--chunks", "500", *Q]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="w", mode="r")[...], want)


def test_whole_parts_are_listed_lazily():
    """A part stored whole is listed chunk by chunk without materialising its axes
    (``itertools.product`` would first copy a 2**50-long range into a tuple)."""
    import itertools

    from zarrcy.storage.hdf5_stored import range_coords

    first = list(itertools.islice(range_coords((0, 4), (2**50, 9), (1, 2)), 5))
    assert first == [(0, 2), (0, 3), (0, 4), (1, 2), (1, 3)]
    assert list(range_coords((), (), ())) == [()]
    assert list(range_coords((5,), (5,), (2,))) == []
