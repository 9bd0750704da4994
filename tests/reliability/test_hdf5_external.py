"""HDF5 data kept outside the source file (issue 23, item 3): external raw data storage,
virtual-dataset sources in other files and external links are refused by default (the
dataset is listed as unsupported, reading it raises a zarrcy error naming the dataset
and the path, ``zarrcy convert`` exits 2); with ``allow_external=True`` /
``--allow-external`` they are read only inside the source file's directory.  Files are
written by h5py; h5py's own reads are the oracle."""

from __future__ import annotations

import os

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 sources need the 'hdf5' extra (h5py)")

import zarrcy  # noqa: E402
from zarrcy.convert import convert_main  # noqa: E402
from zarrcy.storage import store_from_url  # noqa: E402
from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store  # noqa: E402

Q = ["--progress", "off"]
SECRET = bytes(range(7, 71))  # 64 bytes that must never reach an output


@pytest.fixture
def dirs(tmp_path):
    """``src/`` (the source's directory) and ``outside/secret`` beside it."""
    src, out = tmp_path / "src", tmp_path / "outside"
    src.mkdir()
    out.mkdir()
    (out / "secret").write_bytes(SECRET)
    return src, out


def _external(path, name: str, segments, shape=(64,), dtype="u1") -> None:
    with h5py.File(path, "a") as f:
        f.create_dataset(name, shape=shape, dtype=dtype, external=segments)


def _all_output_bytes(root) -> bytes:
    out = b""
    for dirpath, _d, files in os.walk(root):
        for n in files:
            with open(os.path.join(dirpath, n), "rb") as fh:
                out += fh.read()
    return out


# --------------------------------------------------------------------------------------
# external raw data storage
# --------------------------------------------------------------------------------------
def test_external_storage_is_refused_by_default(dirs, capsys):
    src, out = dirs
    evil = str(src / "evil.nc")
    secret = str(out / "secret")
    _external(evil, "x", [(secret, 0, 64)])
    with h5py.File(evil, "a") as f:
        f.create_dataset("ok", data=np.arange(5))
    for store in (HDF5Store(evil), store_from_url(evil, mode="r")):
        assert "x" not in store._arrays and secret in store.unsupported["x"]
        assert sorted(store.list_prefix("")) == ["ok/c/0", "ok/zarr.json", "zarr.json"]
        with pytest.raises(HDF5SourceError, match=f"/x: external storage in '{secret}'"):
            zarrcy.open_array(store, path="x", mode="r")
        assert np.array_equal(zarrcy.open_array(store, path="ok", mode="r")[...], np.arange(5))
        store.close()
    dst = str(src.parent / "o.zarr")
    assert convert_main([evil, dst, *Q]) == 2
    err = capsys.readouterr().err
    assert "/x" in err and secret in err and "--allow-external" in err
    assert SECRET not in _all_output_bytes(src.parent / "o.zarr")
    # --on-unsupported skip leaves it out; the rest converts
    assert convert_main([evil, dst, "--on-unsupported", "skip", *Q]) == 0
    assert SECRET not in _all_output_bytes(dst)
    assert np.array_equal(zarrcy.open_array(dst, path="ok", mode="r")[...], np.arange(5))
    assert not os.path.exists(os.path.join(dst, "x"))


def test_external_storage_allowed_inside_the_directory(dirs, monkeypatch):
    src, _ = dirs
    data = np.arange(30 * 7, dtype="<i4").reshape(30, 7)
    raw = data.tobytes()
    (src / "a.bin").write_bytes(b"head" + raw[:400])
    (src / "sub").mkdir()
    (src / "sub" / "b.bin").write_bytes(raw[400:])
    path = str(src / "ext.h5")
    _external(path, "v", [("a.bin", 4, 400), ("sub/b.bin", 0, len(raw) - 400)], shape=data.shape, dtype="<i4")
    monkeypatch.chdir(src)  # h5py (the oracle) resolves external names against the working directory
    with h5py.File(path, "r") as f:
        assert np.array_equal(f["v"][...], data)
    monkeypatch.chdir(src.parent)  # zarrcy: against the source file's directory, wherever it runs
    store = HDF5Store(path, allow_external=True)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], data) and np.array_equal(a[3:29:4, 1:6], data[3:29:4, 1:6])
    store.close()
    dst = str(src.parent / "o.zarr")
    assert convert_main([path, dst, *Q]) == 2  # refused without the flag
    assert convert_main([path, dst, "--allow-external", *Q]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="v", mode="r")[...], data)


@pytest.mark.parametrize("case", ["absolute", "dotdot", "symlink out", "fifo", "missing", "directory"])
def test_external_storage_allowed_never_leaves_the_directory(dirs, case, capsys):
    src, out = dirs
    secret = str(out / "secret")
    name = {"absolute": secret, "dotdot": "../outside/secret", "symlink out": "link", "fifo": "pipe",
            "missing": "nothing.bin", "directory": "sub"}[case]
    if case == "symlink out":
        os.symlink(secret, src / "link")
    elif case == "fifo":
        os.mkfifo(src / "pipe")  # opening it would block: it is never opened
    elif case == "directory":
        (src / "sub").mkdir()
    path = str(src / "evil.h5")
    _external(path, "x", [(name, 0, 64)])
    store = HDF5Store(path, allow_external=True)
    assert "x" not in store._arrays
    why = store.unsupported["x"]
    assert repr(name) in why
    if case in ("absolute", "dotdot", "symlink out"):
        assert "outside the source file's directory" in why
    with pytest.raises(HDF5SourceError, match="/x"):
        zarrcy.open_array(store, path="x", mode="r")
    store.close()
    dst = str(src.parent / "o.zarr")
    assert convert_main([path, dst, "--allow-external", *Q]) == 2
    assert repr(name) in capsys.readouterr().err
    assert SECRET not in _all_output_bytes(dst)


def test_external_file_shorter_than_declared_is_refused(dirs):
    src, _ = dirs
    (src / "short.bin").write_bytes(b"\x01" * 40)
    path = str(src / "e.h5")
    _external(path, "x", [("short.bin", 0, 64)])
    store = HDF5Store(path, allow_external=True)
    assert "truncated" in store.unsupported["x"]
    store.close()


# --------------------------------------------------------------------------------------
# virtual datasets
# --------------------------------------------------------------------------------------
def _vds(path, sources, shape=(20,)) -> None:
    """A virtual dataset /v of int64 mapping each (file, dataset, n) after the other."""
    lay = h5py.VirtualLayout(shape=shape, dtype="i8")
    at = 0
    for fname, dname, n in sources:
        lay[at: at + n] = h5py.VirtualSource(fname, dname, shape=(n,))
        at += n
    with h5py.File(path, "a") as f:
        f.create_virtual_dataset("v", lay, fillvalue=-1)


def test_virtual_dataset_sources(dirs, monkeypatch, capsys):
    src, out = dirs
    with h5py.File(src / "other.h5", "w") as f:
        f.create_dataset("d", data=np.arange(100, 110))
    with h5py.File(out / "far.h5", "w") as f:
        f.create_dataset("d", data=np.arange(200, 210))
    same = str(src / "same.h5")
    with h5py.File(same, "w") as f:
        f.create_dataset("s", data=np.arange(10))
    _vds(same, [(".", "s", 10)], shape=(10,))
    store = HDF5Store(same)  # sources in the same file: read by default
    assert np.array_equal(zarrcy.open_array(store, path="v", mode="r")[...], np.arange(10))
    store.close()

    path = str(src / "vds.h5")
    _vds(path, [("other.h5", "d", 10), ("other.h5", "d", 10)])
    store = HDF5Store(path)
    assert "other.h5" in store.unsupported["v"] and "--allow-external" in store.unsupported["v"]
    store.close()
    assert convert_main([path, str(src.parent / "o.zarr"), *Q]) == 2
    assert "other.h5" in capsys.readouterr().err
    monkeypatch.chdir(src.parent)
    store = HDF5Store(path, allow_external=True)
    with h5py.File(path, "r") as f:
        want = f["v"][...]
    assert np.array_equal(zarrcy.open_array(store, path="v", mode="r")[...], want)
    assert np.array_equal(want, np.concatenate([np.arange(100, 110)] * 2))
    store.close()

    far = str(src / "far_vds.h5")
    _vds(far, [(str(out / "far.h5"), "d", 10), ("../outside/far.h5", "d", 10)])
    store = HDF5Store(far, allow_external=True)
    assert "outside the source file's directory" in store.unsupported["v"]
    store.close()


def test_virtual_dataset_of_an_external_dataset_is_refused(dirs):
    src, out = dirs
    path = str(src / "vx.h5")
    _external(path, "x", [(str(out / "secret"), 0, 64)], dtype="u1")
    lay = h5py.VirtualLayout(shape=(64,), dtype="u1")
    with h5py.File(path, "a") as f:
        lay[:] = h5py.VirtualSource(f["x"])
        f.create_virtual_dataset("v", lay)
    for allow in (False, True):
        store = HDF5Store(path, allow_external=allow)
        assert "v" not in store._arrays and "x" not in store._arrays
        assert "not a plain dataset" in store.unsupported["v"]
        store.close()


# --------------------------------------------------------------------------------------
# external links
# --------------------------------------------------------------------------------------
def test_external_links(dirs, capsys):
    src, out = dirs
    with h5py.File(src / "t.h5", "w") as f:
        f.create_dataset("d", data=np.arange(10, 20), chunks=(4,), compression="gzip")
        g = f.create_group("g")
        g.create_dataset("e", data=np.arange(3.0))
        g.attrs["title"] = "linked"
    with h5py.File(out / "far.h5", "w") as f:
        f.create_dataset("d", data=np.frombuffer(SECRET, "u1"))
    path = str(src / "l.h5")
    with h5py.File(path, "w") as f:
        f.create_dataset("own", data=np.arange(4))
        f["ld"] = h5py.ExternalLink("t.h5", "/d")
        f["lg"] = h5py.ExternalLink("t.h5", "/g")
        f["far"] = h5py.ExternalLink(str(out / "far.h5"), "/d")
        f["up"] = h5py.ExternalLink("../outside/far.h5", "/d")
        f["self"] = h5py.ExternalLink("l.h5", "/")  # a cycle
    store = HDF5Store(path)
    assert set(store.unsupported) == {"ld", "lg", "far", "up", "self"}
    assert "t.h5:/d" in store.unsupported["ld"]
    with pytest.raises(HDF5SourceError, match="/ld: external link to t.h5:/d"):
        zarrcy.open_array(store, path="ld", mode="r")
    store.close()
    assert convert_main([path, str(src.parent / "o.zarr"), *Q]) == 2
    assert "external link" in capsys.readouterr().err

    store = HDF5Store(path, allow_external=True)
    assert np.array_equal(zarrcy.open_array(store, path="ld", mode="r")[...], np.arange(10, 20))
    assert np.array_equal(zarrcy.open_array(store, path="lg/e", mode="r")[...], np.arange(3.0))
    assert zarrcy.open_group(store, path="lg", mode="r").attrs["title"] == "linked"
    assert set(store.unsupported) == {"far", "up", "self"}
    assert "outside the source file's directory" in store.unsupported["far"]
    assert "outside the source file's directory" in store.unsupported["up"]
    assert "cycle" in store.unsupported["self"]
    store.close()
    dst = str(src.parent / "o2.zarr")
    assert convert_main([path, dst, "--allow-external", "--on-unsupported", "skip", *Q]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="ld", mode="r")[...], np.arange(10, 20))
    assert SECRET not in _all_output_bytes(dst)


def test_concatenated_file_with_an_external_link_is_refused(dirs):
    """Along --concat-dim, /v of the second file is an external link: refused, never
    followed (even with allow_external: links are followed for one source file only)."""
    src, out = dirs
    with h5py.File(out / "far.h5", "w") as f:
        f.create_dataset("v", data=np.arange(3.0))
    first, second = str(src / "m0.h5"), str(src / "m1.h5")
    with h5py.File(first, "w") as f:
        f.create_dataset("time", data=np.arange(3.0)).make_scale("time")
        f.create_dataset("v", data=np.arange(3.0)).dims[0].attach_scale(f["time"])
    with h5py.File(second, "w") as f:
        f.create_dataset("time", data=np.arange(3.0, 6.0)).make_scale("time")
        f["v"] = h5py.ExternalLink(str(out / "far.h5"), "/v")
    for allow in (False, True):
        with pytest.raises(HDF5SourceError, match="m1.h5: variable /v: reached through the external link"):
            HDF5Store([first, second], concat_dim="time", allow_external=allow)


def test_allow_external_travels_to_dask_workers(dirs):
    """The store pickles with its policy (and the files' identities): Dask workers read
    the allowed external data, as threads do."""
    pytest.importorskip("distributed", reason="--dask needs the 'dask' extra")
    import pickle

    src, _ = dirs
    data = np.arange(64, dtype="u1")
    (src / "d.bin").write_bytes(data.tobytes())
    path = str(src / "e.h5")
    _external(path, "x", [("d.bin", 0, 64)])
    store = HDF5Store(path, allow_external=True)
    copy = pickle.loads(pickle.dumps(zarrcy.open_array(store, path="x", mode="r")))
    assert np.array_equal(copy[...], data)
    copy.store.close()
    store.close()
    dst = str(src.parent / "o.zarr")
    assert convert_main([path, dst, "--allow-external", "--dask", "local:1", *Q]) == 0
    assert np.array_equal(zarrcy.open_array(dst, path="x", mode="r")[...], data)
