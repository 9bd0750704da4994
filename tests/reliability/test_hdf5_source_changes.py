"""An HDF5 source rewritten or replaced while ``zarrcy convert`` reads it (issue 23,
item 2): the run fails with exit 1 naming the file, nothing is reported as success, the
destination stays unfinished (its journal is kept) and ``--resume`` refuses the changed
source.  The change is injected deterministically between regions (a wrapper around the
real ``run_region``), never by a timing race.  Also: an optional HDF5 filter that is not
installed (issue 23, item 11) is skipped per chunk as HDF5 skips it, and a chunk stored
through it is refused naming the dataset and the filter."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 sources need the 'hdf5' extra (h5py)")

import zarrcy  # noqa: E402
import zarrcy.convert.execute as execute  # noqa: E402
from zarrcy.convert import convert_main  # noqa: E402
from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store, SourceChangedError  # noqa: E402

Q = ["--progress", "off", "--workers", "1", "--chunks", "4,50", "--shards", "4,50"]
SHAPE = (24, 50)


def _write(path: str, base: float, compression: str | None = "gzip") -> np.ndarray:
    data = np.random.default_rng(int(base)).standard_normal(SHAPE) + base  # (compresses little)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(4, 50), compression=compression)
    return data


def _rewrite_in_place(path: str) -> None:
    """New values written over the stored chunks of the (uncompressed) dataset, in place,
    with plain file writes (HDF5 cannot open a file for writing that this process has
    open), the modification time moved on explicitly."""
    st = os.stat(path)
    with h5py.File(path, "r") as f:
        d = f["v"]
        places = [(d.id.get_chunk_info(i).byte_offset, d.id.get_chunk_info(i).size)
                  for i in range(d.id.get_num_chunks())]
    with open(path, "r+b") as fh:
        for off, size in places:
            fh.seek(off)
            fh.write(np.full(size // 8, 1234.5, "<f8").tobytes())
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def _replace(path: str) -> None:
    tmp = path + ".new"
    _write(tmp, 5000.0)
    os.replace(tmp, path)


def _same_size_same_mtime(path: str) -> None:
    """Overwritten in place by another file whose chunks lie elsewhere (other values,
    compressed differently), padded to the same size, the modification time put back:
    only the chunk table (or the status-change time) tells."""
    st = os.stat(path)
    alt = path + ".alt"
    with h5py.File(alt, "w") as f:
        f.create_dataset("pad", data=np.arange(10))  # (so that the chunks of /v lie elsewhere)
        f.create_dataset("v", data=np.full(SHAPE, 3.0, "<f8"), chunks=(4, 50), compression="gzip",
                         compression_opts=9)
    with open(alt, "rb") as fh:
        raw = fh.read()
    os.remove(alt)
    assert len(raw) < st.st_size
    with open(path, "r+b") as fh:
        fh.write(raw + bytes(st.st_size - len(raw)))
    assert os.path.getsize(path) == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


CHANGES = {"in place": _rewrite_in_place, "replaced": _replace, "same size and mtime": _same_size_same_mtime}


@pytest.mark.parametrize("after", [1, 6])  # between regions, or after the last one
@pytest.mark.parametrize("change", list(CHANGES))
def test_source_changed_during_convert_fails(tmp_path, monkeypatch, capsys, change, after):
    src = str(tmp_path / "s.h5")
    _write(src, 0.0, compression=None if change == "in place" else "gzip")
    dst = str(tmp_path / "o.zarr")
    real = execute.run_region
    done = []

    def run_region(task, ctx=None):  # the real region, then the injected change after the ``after``-th
        res = real(task, ctx)
        done.append(task.rid)
        if len(done) == after:
            CHANGES[change](src)
        return res

    monkeypatch.setattr(execute, "run_region", run_region)
    assert convert_main([src, dst, *Q]) == 1
    err = capsys.readouterr().err
    assert "s.h5" in err and "source changed during the conversion" in err and "--overwrite" in err
    assert len(done) == after  # stopped at the next read (or before finishing)
    assert os.path.exists(os.path.join(dst, "__zarrcy_convert", "plan.json"))  # never passes for complete
    monkeypatch.setattr(execute, "run_region", real)
    assert convert_main([src, dst, *Q, "--resume"]) == 2  # the journal holds the old file's regions
    assert "different options or source" in capsys.readouterr().err
    assert convert_main([src, dst, *Q, "--overwrite"]) == 0
    with h5py.File(src, "r") as f:
        assert np.array_equal(zarrcy.open_array(dst, path="v", mode="r")[...], f["v"][...])


@pytest.mark.parametrize("after", [1, 6])
def test_chunk_table_second_look(tmp_path, monkeypatch, capsys, after):
    """A change that leaves size, inode and times as they were (a coarse clock: the
    status-change time is blinded here) is caught by the second look at the chunk table:
    before the conversion is reported complete, or when a chunk read at its old place
    no longer decodes (the error then says the source changed, not that it is corrupt)."""
    import zarrcy.storage.hdf5_file as hf

    real_identity = hf._identity
    monkeypatch.setattr(hf, "_identity", lambda st: real_identity(st)[:4] + (0,))
    src = str(tmp_path / "s.h5")
    _write(src, 0.0)
    real = execute.run_region
    done = []

    def run_region(task, ctx=None):
        res = real(task, ctx)
        done.append(task.rid)
        if len(done) == after:
            _same_size_same_mtime(src)
        return res

    monkeypatch.setattr(execute, "run_region", run_region)
    dst = str(tmp_path / "o.zarr")
    assert convert_main([src, dst, *Q]) == 1
    err = capsys.readouterr().err
    assert "source changed during the conversion" in err
    assert "s.h5: the source file was rewritten while zarrcy read it (the chunk index of /v changed)" in err
    assert len(done) == after


def test_unchanged_source_resumes(tmp_path, monkeypatch, capsys):
    """The source identity in the fingerprint is stable: an interrupted run resumes."""
    src = str(tmp_path / "s.h5")
    want = _write(src, 0.0)
    dst = str(tmp_path / "o.zarr")
    real = execute.run_region
    calls = []

    def run_region(task, ctx=None):
        calls.append(task.rid)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(task, ctx)

    monkeypatch.setattr(execute, "run_region", run_region)
    assert convert_main([src, dst, *Q]) == 130
    monkeypatch.setattr(execute, "run_region", real)
    assert convert_main([src, dst, *Q, "--resume"]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="v", mode="r")[...], want)


def test_store_reads_and_pickles_refuse_a_changed_file(tmp_path):
    src = str(tmp_path / "s.h5")
    want = _write(src, 0.0, compression=None)
    store = HDF5Store(src)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], want)
    blob = pickle.dumps(store)
    _rewrite_in_place(src)
    with pytest.raises(SourceChangedError, match="s.h5: the source file was rewritten"):
        a[...]
    with pytest.raises(SourceChangedError, match="s.h5: the source file changed since"):
        pickle.loads(blob)  # a Dask worker's copy
    with pytest.raises(SourceChangedError):
        store.check_unchanged()
    store.close()


# --------------------------------------------------------------------------------------
# item 11: an optional filter that is not installed
# --------------------------------------------------------------------------------------
UNKNOWN = 32123  # a filter id registered nowhere


def _optional_filter_file(path: str, applied_chunk: bool) -> np.ndarray:
    data = np.arange(40 * 6, dtype="<i4").reshape(40, 6)
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", data=data, chunks=(10, 6), compression=UNKNOWN, shuffle=True,
                             allow_unknown_filter=True)
        f.create_dataset("ok", data=np.arange(3))
        if applied_chunk:  # a chunk whose mask says the unknown filter ran (as where it is installed)
            raw = np.ascontiguousarray(data[10:20].view(np.uint8).reshape(60, 4).T).tobytes()
            d.id.write_direct_chunk((10, 0), raw, filter_mask=0)
    return data


def test_optional_filter_not_installed_is_skipped_per_chunk(tmp_path):
    path = str(tmp_path / "opt.h5")
    data = _optional_filter_file(path, applied_chunk=False)
    with h5py.File(path, "r") as f:
        assert f["v"].id.get_create_plist().get_filter(1)[0] == UNKNOWN
        assert f["v"].id.get_chunk_info(0).filter_mask == 0b10  # HDF5 skipped it
        want = f["v"][...]
    assert np.array_equal(want, data)
    store = HDF5Store(path)
    assert "v" not in store.unsupported
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], want) and np.array_equal(a[3:37:5, 1:5], want[3:37:5, 1:5])
    store.close()
    dst = str(tmp_path / "o.zarr")
    assert convert_main([path, dst, "--progress", "off"]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="v", mode="r")[...], want)


def test_chunk_stored_through_a_missing_optional_filter_is_refused(tmp_path, capsys):
    path = str(tmp_path / "opt.h5")
    _optional_filter_file(path, applied_chunk=True)
    with h5py.File(path, "r") as f, pytest.raises(OSError):
        f["v"][10:20]  # h5py cannot read it either
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[0:10], np.arange(60, dtype="<i4").reshape(10, 6))  # the other chunks read
    with pytest.raises(HDF5SourceError, match=rf"opt.h5: variable /v chunk \[1, 0\]: stored through the optional "
                                              rf"HDF5 filter {UNKNOWN}"):
        a[10:20]
    store.close()
    assert convert_main([path, str(tmp_path / "o.zarr"), "--progress", "off"]) == 2  # before writing anything
    err = capsys.readouterr().err
    assert "/v" in err and str(UNKNOWN) in err
    assert not os.path.exists(tmp_path / "o.zarr" / "zarr.json")


def test_external_raw_data_rewritten_while_read(tmp_path):
    """Allowed external raw data files are watched as the source file is."""
    (tmp_path / "d.bin").write_bytes(np.arange(64, dtype="u1").tobytes())
    path = str(tmp_path / "e.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("x", shape=(64,), dtype="u1", external=[("d.bin", 0, 64)])
    store = HDF5Store(path, allow_external=True)
    a = zarrcy.open_array(store, path="x", mode="r")
    assert np.array_equal(a[...], np.arange(64))
    st = os.stat(tmp_path / "d.bin")
    with open(tmp_path / "d.bin", "r+b") as fh:
        fh.write(b"\xff" * 8)
    os.utime(tmp_path / "d.bin", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    with pytest.raises(SourceChangedError, match="the external storage file .*d.bin was rewritten"):
        a[...]
    with pytest.raises(SourceChangedError, match="d.bin"):
        store.check_unchanged()
    store.close()
