"""Boundary tables for the newest code (issue 23): each row one edge case, with the
outcome written out (never derived from zarrcy's own second path).

* ``--concat-dim`` ordering of HDF5 files: equal boundary values (an overlap), regular
  and irregular steps, a gap, single-value files, floating-point steps that never repeat
  exactly (1/24 day, 0.1: before, a spurious "gap" refused them, and a real gap between
  such files went unnoticed);
* the first chunk key past an HDF5 array's grid on every axis, huge and non-canonical
  keys (``c/01`` used to alias ``c/1``);
* attributes holding shared (non-cyclic) sub-objects: accepted and written once per
  reference; a shared object pushed past the depth limit through a deeper reference;
  a small value whose written form is exponential (before: 10 minutes and a document
  no reader accepts; now refused at once);
* a zip archive keeping its file mode across an append (whatever the umask).

Rectilinear resizes to exactly the sum of the edges and growth in two dimensions at once
are in test_crash_ordering.py, at every kill point.
"""

from __future__ import annotations

import os
import stat
import time

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import MetadataError

h5py = pytest.importorskip("h5py")


# --------------------------------------------------------------------------------------
# HDF5 --concat-dim
# --------------------------------------------------------------------------------------
def _h5(path: str, t) -> str:
    t = np.asarray(t)
    with h5py.File(path, "w") as f:
        f.create_dataset("time", data=t)
        f["time"].make_scale("time")
        v = f.create_dataset("v", data=np.arange(t.size, dtype="i4") + 100 * int(os.path.basename(path)[0]))
        v.dims[0].attach_scale(f["time"])
    return path


H = 1 / 24
CONCAT = [
    # id, first file's values, second file's values, None (accepted) or the error's words
    ("equal-boundary", [0, 1, 2], [2, 3, 4], "overlap"),
    ("equal-single-values", [5], [5], "overlap"),
    ("overlap-inside", [0, 1, 2], [1.5, 3], "overlap"),
    ("regular-step", [0, 1, 2], [3, 4], None),
    ("gap", [0, 1, 2], [4, 5], "gap"),
    ("gap-after-single-value", [0, 1, 2], [5], "gap"),
    ("single-values", [0], [7], None),  # no step known: no gap check
    ("irregular-steps", [0, 1, 3], [4, 7], None),  # no regular step: no gap check
    ("different-steps", [0, 1, 2], [4, 6, 8], None),
    ("float-hours-single", np.arange(3) * H, [3 * H], None),
    ("float-hours", np.arange(3) * H, np.arange(3, 6) * H, None),
    ("float-hours-gap", np.arange(3) * H, np.arange(4, 6) * H, "gap"),
    ("float-tenths", [0.0, 0.1, 0.2], [0.3], None),
    ("float-large-values", 730000 + np.arange(3) * H, 730000 + np.arange(3, 5) * H, None),
    ("float32-hours", np.arange(3, dtype="f4") / np.float32(24), np.arange(3, 5, dtype="f4") / np.float32(24), None),
    ("float-tiny-step", [0.0, 1e-300, 2e-300], [3e-300], None),
]


@pytest.mark.parametrize("first,second,error", [c[1:] for c in CONCAT], ids=[c[0] for c in CONCAT])
def test_hdf5_concat_ordering(tmp_path, first, second, error):
    from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store

    a = _h5(str(tmp_path / "1a.h5"), first)
    b = _h5(str(tmp_path / "2b.h5"), second)
    if error is not None:
        with pytest.raises(HDF5SourceError, match=error) as e:
            HDF5Store([b, a], concat_dim="time")  # given in reverse: sorted by the coordinate
        assert "/time" in str(e.value) and "2b.h5" in str(e.value)
        return
    st = HDF5Store([b, a], concat_dim="time")
    t = zarrcy.open_array(st, path="time", mode="r")[...]
    np.testing.assert_array_equal(t, np.concatenate([np.asarray(first), np.asarray(second)]).astype(t.dtype))
    v = zarrcy.open_array(st, path="v", mode="r")[...]
    assert v.tolist() == [100 + i for i in range(len(first))] + [200 + i for i in range(len(second))]


# --------------------------------------------------------------------------------------
# HDF5: chunk keys at and past the grid
# --------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def h5store(tmp_path_factory):
    from zarrcy.storage.hdf5 import HDF5Store

    p = str(tmp_path_factory.mktemp("h5") / "grid.h5")
    with h5py.File(p, "w") as f:
        f.create_dataset("v", data=np.arange(100, dtype="i4").reshape(10, 10), chunks=(4, 5))  # grid 3 x 2, ragged
        f.create_dataset("w", data=np.arange(12, dtype="i4"), chunks=(4,))  # grid 3, exact
        f.create_dataset("c1", data=np.arange(12, dtype="i4"))  # contiguous: one chunk
        f.create_dataset("sparse", shape=(8,), dtype="i4", chunks=(2,))  # nothing written
        f["sparse"][4:6] = 7
    return HDF5Store(p)


KEYS = [
    ("v/c/2/1", True), ("v/c/3/0", False), ("v/c/0/2", False), ("v/c/3/2", False),
    ("w/c/2", True), ("w/c/3", False), ("c1/c/0", True), ("c1/c/1", False),
    ("sparse/c/2", True), ("sparse/c/1", False), ("sparse/c/3", False), ("sparse/c/4", False),
    ("w/c/" + str(2 ** 70), False), ("v/c/" + "9" * 40 + "/0", False),
    ("v/c/02/1", False), ("v/c/2/01", False), ("w/c/00", False), ("w/c/+1", False), ("w/c/-1", False),
    ("v/c/2", False), ("v/c/2/1/0", False), ("w/c", False), ("w/c/", False), ("v/c//1", False),
]


@pytest.mark.parametrize("key,present", KEYS)
def test_hdf5_chunk_keys_at_and_past_the_grid(h5store, key, present):
    got = h5store.get(key)
    assert (got is not None) == present, key
    assert h5store.exists(key) == present
    listed = set(h5store.list_prefix(key.split("/")[0] + "/"))
    assert (key in listed) == present


# --------------------------------------------------------------------------------------
# attributes with shared sub-objects
# --------------------------------------------------------------------------------------
def _array():
    return zarrcy.create_array(zarrcy.MemoryStore(), shape=(2,), chunks=(2,), dtype="i4")


def test_shared_sub_objects_are_written_once_per_reference():
    a = _array()
    d = {"x": [1, 2.5, None]}
    pair = [d, d]
    a.attrs.update({"a": d, "b": d, "c": pair, "e": [pair, pair], "t": (d, d)})
    want = {"a": {"x": [1, 2.5, None]}, "b": {"x": [1, 2.5, None]}, "c": [d, d], "e": [[d, d], [d, d]], "t": [d, d]}
    assert dict(zarrcy.open_array(a.store, mode="r").attrs) == want
    assert dict(a.attrs) == want


def test_a_shared_object_deeper_through_one_reference_is_refused():
    """The depth limit counts where an object is *used*: a sub-object fine at one place
    is too deep through another reference."""
    a = _array()
    deep = cur = []
    for _ in range(100):
        cur.append([])
        cur = cur[0]
    a.attrs["ok"] = {"p": deep, "q": [deep]}  # 102 levels
    w = deep
    for _ in range(30):
        w = [w]
    with pytest.raises(MetadataError, match=r"attributes\.bad\.q(\[0\]){30}: expected a JSON value nested at most 128"):
        a.attrs["bad"] = {"p": deep, "q": w}  # the first reference walks it; the second is too deep
    with pytest.raises(MetadataError, match="nested at most 128"):
        a.attrs["bad2"] = {"q": w, "p": deep}  # the deep reference first


def test_exponential_written_size_is_refused_at_once():
    a = _array()
    x: list = [0]
    for _ in range(10):
        x = [x, x]
    a.attrs["small"] = x  # 2**10 leaves once written: fine
    assert zarrcy.open_array(a.store, mode="r").attrs["small"] == x
    for _ in range(20):
        x = [x, x]
    t0 = time.process_time()
    with pytest.raises(MetadataError, match=r"at most \d+ values once written.*received '\d+ values'"):
        a.attrs["huge"] = x  # 2**30 leaves: a document of gigabytes
    assert time.process_time() - t0 < 5  # linear in the 31 distinct lists (was: minutes)
    assert "huge" not in zarrcy.open_array(a.store, mode="r").attrs


def test_cycles_stay_refused():
    a = _array()
    c: dict = {}
    c["self"] = c
    with pytest.raises(MetadataError, match=r"attributes\.cyc\.self: .*contains itself"):
        a.attrs["cyc"] = c
    lst: list = []
    lst.append([lst])
    with pytest.raises(MetadataError, match="contains itself"):
        a.attrs["cyc2"] = {"a": lst}


# --------------------------------------------------------------------------------------
# a zip archive keeps its file mode across an append
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o077, 0o000])
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o600, 0o664, 0o666, 0o604])
def test_zip_append_keeps_the_archive_mode(tmp_path, mode, umask):
    from zarrcy.storage import ZipStore

    p = str(tmp_path / "a.zip")
    with ZipStore(p, mode="w") as s:
        zarrcy.create_array(s, shape=(4,), chunks=(2,), dtype="i4")[:] = 1
    os.chmod(p, mode)
    old = os.umask(umask)
    try:
        with ZipStore(p, mode="a") as s:
            zarrcy.open_array(s, mode="r+")[2:] = 5
        assert stat.S_IMODE(os.stat(p).st_mode) == mode
        with ZipStore(p, mode="a") as s:  # an append session that writes nothing
            pass
        assert stat.S_IMODE(os.stat(p).st_mode) == mode
    finally:
        os.umask(old)
    with ZipStore(p, mode="r") as s:
        assert zarrcy.open_array(s, mode="r")[...].tolist() == [1, 1, 5, 5]
