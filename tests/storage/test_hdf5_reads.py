"""User-level reads of HDF5 datasets through zarrcy (zarrcy/storage/hdf5.py, the one read
path: the store's chunk table + one ``pread`` per stored chunk, the ``zarrcy.hdf5_chunk``
codec without the GIL, the array's bounded runner), checked against h5py's own reads
of the same file (the oracle) for every layout and selection kind; hostile files
(truncated, chunk offsets past the end, a damaged deflate stream, a hostile chunk
index) raise zarrcy errors naming file, dataset and chunk; the per-thread served-chunk
buffer is never overwritten while held and is reset in a forked child."""

from __future__ import annotations

import multiprocessing as mp
import os
import threading

import numpy as np
import pytest

h5py = pytest.importorskip("h5py", reason="HDF5 sources need the 'hdf5' extra (h5py)")

import zarrcy  # noqa: E402
from zarrcy.errors import CorruptChunkError, StoreError  # noqa: E402
from zarrcy.storage.hdf5 import HDF5SourceError, HDF5Store  # noqa: E402
from zarrcy.storage.hdf5_file import build_chunk_table  # noqa: E402



@pytest.fixture
def restore_config():
    """Snapshot zarrcy.config() and restore it after the test."""
    before = zarrcy.config()
    yield
    zarrcy.config(**before)


SHAPE = (11, 9, 7)
CHUNKS = (4, 3, 5)  # edge chunks on every axis

LAYOUTS = {
    "chunked": {},
    "deflate": {"compression": "gzip", "compression_opts": 4},
    "deflate+shuffle": {"compression": "gzip", "shuffle": True},
    "fletcher32": {"fletcher32": True},
    "deflate+shuffle+fletcher32": {"compression": "gzip", "shuffle": True, "fletcher32": True},
    "lzf (h5py fallback)": {"compression": "lzf"},
    "scaleoffset (h5py fallback)": "scaleoffset",
    "contiguous": None,
    "compact": "compact",
}


def _data(dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(SHAPE) * 1000).astype(dtype)


def _write(path: str, name: str, data: np.ndarray, layout) -> None:
    with h5py.File(path, "a") as f:
        if layout is None:
            f.create_dataset(name, data=data)
        elif layout == "compact":  # data inside the object header (at most 64 KiB)
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_layout(h5py.h5d.COMPACT)
            space = h5py.h5s.create_simple(data.shape)
            tid = h5py.h5t.py_create(data.dtype)
            h5py.h5d.create(f.id, name.encode(), tid, space, dcpl=dcpl)
            f[name][...] = data
        elif layout == "scaleoffset":  # lossy for floats (2 decimals): h5py's read is the oracle
            f.create_dataset(name, data=data, chunks=CHUNKS, scaleoffset=2 if data.dtype.kind == "f" else 0)
        else:
            f.create_dataset(name, data=data, chunks=CHUNKS, **layout)


def _selections(rng: np.random.Generator):
    """(label, zarrcy read, the same selection on a numpy array) for every kind."""
    mask = rng.random(SHAPE) < 0.3
    pts = tuple(rng.integers(0, n, 17) for n in SHAPE)
    rows = np.array([0, 3, 4, 10])
    yield "all", lambda a: a[...], lambda w: w[...]
    yield "slices", lambda a: a[2:10, 1:8, 0:6], lambda w: w[2:10, 1:8, 0:6]
    yield "steps", lambda a: a[1:11:3, ::2, 1:7:4], lambda w: w[1:11:3, ::2, 1:7:4]
    yield "int", lambda a: a[5], lambda w: w[5]
    yield "negative ints", lambda a: a[-1, :, -3], lambda w: w[-1, :, -3]
    yield "point", lambda a: a[7, 4, 2], lambda w: w[7, 4, 2]
    yield "int array", lambda a: a[[9, 0, 4, 4]], lambda w: w[[9, 0, 4, 4]]
    yield "oindex", lambda a: a.oindex[rows, 2:7, [6, 0]], lambda w: w[np.ix_(rows, np.arange(2, 7), [6, 0])]
    yield "vindex", lambda a: a.vindex[pts], lambda w: w[pts]
    yield "mask", lambda a: a.vindex[mask], lambda w: w[mask]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("dtype", ["<f4", ">i8", "<u2"])
def test_user_reads_equal_h5py(tmp_path, layout, dtype, threads, restore_config):
    path = str(tmp_path / "d.h5")
    data = _data(dtype)
    _write(path, "v", data, LAYOUTS[layout])
    with h5py.File(path, "r") as f:
        ds = f["v"]
        want = ds[...]  # the oracle: h5py's own read
        # h5py's own selections where it has them (positive steps, one index list, masks)
        own = {"slices": ds[2:10, 1:8, 0:6], "int": ds[5], "point": ds[7, 4, 2], "rows": ds[[0, 4, 9]],
               "mask": ds[want > 0], "strided": ds[1:11:3, ::2, 1:7:2]}
    zarrcy.config(threads=threads)
    store = HDF5Store(path)
    try:
        a = zarrcy.open_array(store, path="v", mode="r")
        assert a.dtype == want.dtype.newbyteorder("=")
        for label, ours, theirs in _selections(np.random.default_rng(1)):
            got = np.asarray(ours(a))
            assert got.dtype == a.dtype, label
            assert np.array_equal(got, theirs(want)), (layout, label)
        c = a.chunks  # blocks: the array's chunk grid (HDF5 chunks; rows of a contiguous dataset)
        last = (SHAPE[0] - 1) // c[0] * c[0]
        assert np.array_equal(a.blocks[-1, 0], want[last:, : c[1]])
        assert np.array_equal(a[2:10, 1:8, 0:6], own["slices"])
        assert np.array_equal(a[5], own["int"]) and a[7, 4, 2] == own["point"]
        assert np.array_equal(a[[0, 4, 9]], own["rows"])
        assert np.array_equal(a.vindex[want > 0], own["mask"])
        assert np.array_equal(a[1:11:3, ::2, 1:7:2], own["strided"])
    finally:
        store.close()


def test_open_array_on_the_file_path(tmp_path):
    """``zarrcy.open_array("file.h5", path=...)``: the HDF5 file detected by signature."""
    path = str(tmp_path / "p.h5")
    data = _data("<f8", 4)
    _write(path, "g/v", data, LAYOUTS["deflate+shuffle"])
    a = zarrcy.open_array(path, path="g/v", mode="r")
    assert isinstance(a.store, HDF5Store)
    with h5py.File(path, "r") as f:
        assert np.array_equal(a[1:9:2, 3:], f["g/v"][1:9:2, 3:])
    a.store.close()


def test_unallocated_chunks_read_as_the_fill_value(tmp_path):
    path = str(tmp_path / "s.h5")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=SHAPE, dtype="<i4", chunks=CHUNKS, fillvalue=-3, compression="gzip")
        d[4:8, 3:6, :] = 9
        want = d[...]
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], want) and np.array_equal(a[::3, 1::4], want[::3, 1::4])
    assert len(store._arrays["v"].parts[0].chunk_index()) == 2  # only the stored chunks are in the table
    store.close()


def test_a_large_grid_with_few_chunks_uses_the_sorted_table(tmp_path):
    """Memory of the chunk table follows the stored chunks, not the grid: a 10^6-chunk
    grid with 3 stored chunks keeps no dense index and still finds every chunk."""
    path = str(tmp_path / "big.h5")
    with h5py.File(path, "w") as f:
        d = f.create_dataset("v", shape=(1000, 1000), dtype="<i2", chunks=(1, 1), fillvalue=0)
        for i in (3, 500, 999):
            d[i, i] = i
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    table = store._arrays["v"].parts[0].chunk_index()
    assert len(table) == 3 and table._pos is None
    assert [int(x) for x in a.vindex[[3, 500, 999, 4], [3, 500, 999, 4]]] == [3, 500, 999, 0]
    assert sorted(store.list_prefix("v/c/")) == ["v/c/3/3", "v/c/500/500", "v/c/999/999"]
    store.close()


# --------------------------------------------------------------------------------------
# hostile files
# --------------------------------------------------------------------------------------
def _deflate_file(path: str) -> tuple[np.ndarray, list]:
    data = np.arange(4 * 100, dtype="<i4").reshape(4, 100)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 100), compression="gzip")
        info: list = []
        f["v"].id.chunk_iter(info.append)
    return data, info


def test_chunk_offset_past_eof_is_refused(tmp_path):
    """The chunk index points past the end of the file (its B-tree record patched):
    a StoreError naming the file, the dataset and the chunk, before any read."""
    path = str(tmp_path / "past.h5")
    _, info = _deflate_file(path)
    with open(path, "rb") as fh:
        raw = bytearray(fh.read())
    pat = info[2].byte_offset.to_bytes(8, "little")
    assert raw.count(pat) == 1
    i = raw.find(pat)
    raw[i:i + 8] = (len(raw) + 4096).to_bytes(8, "little")
    with open(path, "wb") as fh:
        fh.write(bytes(raw))
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    with pytest.raises(StoreError) as ei:
        a[0]
    msg = str(ei.value)
    assert "past.h5" in msg and "/v" in msg and "chunk [2, 0]" in msg and "truncated" in msg
    assert isinstance(ei.value, HDF5SourceError)
    store.close()


def test_truncated_file(tmp_path):
    """Cut inside the last chunk before opening (the chunk table refuses it) and after
    opening (the positioned read comes up short): StoreErrors naming file, dataset and
    chunk -- never a crash, never garbage."""
    path = str(tmp_path / "t.h5")
    data, info = _deflate_file(path)
    last = max(info, key=lambda i: i.byte_offset)
    with open(path, "rb") as fh:
        raw = fh.read()
    cut = str(tmp_path / "cut.h5")
    with open(cut, "wb") as fh:
        fh.write(raw[: last.byte_offset + 5])
    try:
        store = HDF5Store(cut)
    except HDF5SourceError as e:  # an HDF5 library that checks the end of file at open
        assert "cut.h5" in str(e)
    else:
        with pytest.raises(StoreError, match=r"cut\.h5.*/v.*chunk \[\d, 0\]"):
            zarrcy.open_array(store, path="v", mode="r")[...]
        store.close()
    # truncated while open: the table was built on the whole file
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], data)
    os.truncate(path, last.byte_offset + 5)
    row = [i.chunk_offset[0] for i in info if i.byte_offset == last.byte_offset][0]
    with pytest.raises(StoreError) as ei:
        a[row]
    assert "t.h5" in str(ei.value) and "/v" in str(ei.value) and f"chunk [{row}, 0]" in str(ei.value)
    store.close()


def test_contiguous_dataset_truncated_while_open(tmp_path, monkeypatch):
    """A contiguous dataset's rows are read with one pread each: a file cut after it was
    opened gives a StoreError naming the file, the dataset and the rows -- also for rows
    still inside the file (the file changed since it was opened: issue 23, item 2)."""
    import zarrcy.storage.hdf5 as h5store

    monkeypatch.setattr(h5store, "CONTIGUOUS_CHUNK_BYTES", 8 * 40 * 10)  # chunks of 10 rows
    path = str(tmp_path / "c.h5")
    data = np.arange(50 * 40, dtype="<f8").reshape(50, 40)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data)
        off = f["v"].id.get_offset()
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert a.chunks == (10, 40)
    assert np.array_equal(a[10:20, ::3], data[10:20, ::3])
    os.truncate(path, off + 8 * 40 * 30)  # rows 30.. are gone
    for sel in (slice(0, 30), slice(None)):
        with pytest.raises(StoreError) as ei:
            a[sel]
        assert "c.h5" in str(ei.value) and "variable /v rows" in str(ei.value)
    store.close()


def test_damaged_deflate_stream_names_the_chunk(tmp_path):
    path = str(tmp_path / "bad.h5")
    data, info = _deflate_file(path)
    with open(path, "r+b") as fh:
        fh.seek(info[2].byte_offset + 10)
        b = fh.read(1)
        fh.seek(info[2].byte_offset + 10)
        fh.write(bytes([b[0] ^ 0xFF]))
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[:2], data[:2])
    for read in (lambda: a[1:4], lambda: a[2, 5], lambda: a.vindex[[2], [7]], lambda: a.oindex[[0, 2], :]):
        with pytest.raises(CorruptChunkError) as ei:
            read()
        assert ei.value.key == "v/c/2/0"
    store.close()


GOOD = ((0, 0), 100, 10, 0)


@pytest.mark.parametrize("entry,match", [
    (((0, 0), -1, 10, 0), "stored size|byte -1"),
    (((0, 0), 1000, 10, 0), "truncated"),                    # past the end of the 1000-byte file
    (((0, 0), 2**63, 10, 0), "truncated"),                   # far past it
    (((0, 0), 990, 2**40, 0), "stored size"),                # huge stored size
    (((0, 0), 900, -5, 0), "stored size"),
    (((0, 3), 100, 10, 0), "multiple of the chunk shape"),   # not on a chunk boundary
    (((8, 0), 100, 10, 0), "outside the dataset"),           # beyond the dataset
    (((-4, 0), 100, 10, 0), "outside the dataset"),
    (((0,), 100, 10, 0), "outside the dataset"),             # wrong rank
])
def test_hostile_chunk_index_entries(entry, match):
    """Every chunk_iter entry is checked before a read trusts it (HDF5SourceError, a
    StoreError, naming the file, the dataset and the chunk)."""
    with pytest.raises(HDF5SourceError, match=match) as ei:
        build_chunk_table([GOOD, entry], (8, 10), (4, 10), 4, 1000, "f.h5: variable /v")
    assert "f.h5: variable /v" in str(ei.value) and isinstance(ei.value, StoreError)


def test_duplicate_chunk_entries_are_refused():
    with pytest.raises(HDF5SourceError, match="one stored chunk per grid cell"):
        build_chunk_table([GOOD, ((0, 0), 200, 10, 0)], (8, 10), (4, 10), 4, 1000, "f.h5: variable /v")
    t = build_chunk_table([GOOD, ((4, 0), 300, 20, 1), ((0, 0), None, 0, 0)], (8, 10), (4, 10), 4, 1000, "w")
    assert t.get((0, 0)) == (100, 10, 0) and t.get((1, 0)) == (300, 20, 1) and len(t) == 2
    assert t.get((2, 0)) is None and t.get((-1, 0)) is None and (1, 0) in t and (5, 5) not in t


# --------------------------------------------------------------------------------------
# the served-chunk buffer
# --------------------------------------------------------------------------------------
def _in_thread(fn):
    box: list = []
    t = threading.Thread(target=lambda: box.append(fn()))
    t.start()
    t.join()
    return box[0]


def test_served_chunks_are_never_overwritten_while_held(tmp_path):
    """``get`` serves a view of the thread's reused buffer: a held result keeps its bytes
    while later chunks are read; once dropped, the buffer is used again (no fresh pages
    per chunk).  A range covering the whole value is served without a copy."""
    path = str(tmp_path / "r.h5")
    data = np.random.default_rng(2).standard_normal((6, 50, 40)).astype("<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 50, 40), compression="gzip", shuffle=True)
    store = HDF5Store(path)

    def work() -> tuple[bool, bool, bool]:
        first = store.get("v/c/0/0/0")
        snapshot = bytes(first)
        second = store.get("v/c/1/0/0")
        kept = bytes(first) == snapshot and bytes(second) != snapshot
        addr = np.frombuffer(second, np.uint8).__array_interface__["data"][0]
        del first, second
        third = store.get("v/c/2/0/0")
        reused = np.frombuffer(third, np.uint8).__array_interface__["data"][0] == addr
        whole = store.get("v/c/2/0/0", zarrcy.byte_range.RangeRequest(0, 10**9))
        return kept, reused, bytes(whole) == bytes(third)

    kept, reused, whole = _in_thread(work)
    assert kept and reused and whole
    assert store.get("v/c/0/0/0", zarrcy.byte_range.RangeRequest(0, 4)) == b"\0\0\0\0"  # the filter mask
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], data)
    store.close()


def _child_reads(path: str, want: np.ndarray, q) -> None:
    import zarrcy.storage.hdf5 as h

    fresh = "buf" not in h._SERVED.__dict__
    a = zarrcy.open_array(h.HDF5Store(path), path="v", mode="r")
    q.put((fresh, bool(np.array_equal(a[...], want)), bool(np.array_equal(a[3], want[3]))))


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_forked_child_reads_correctly(tmp_path, restore_config):
    """A child forked while the parent holds a served chunk and pool threads have read
    chunks starts with no served buffer and reads the right values (its own descriptors)."""
    path = str(tmp_path / "f.h5")
    data = np.random.default_rng(3).standard_normal((8, 30, 20)).astype("<f4")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 30, 20), compression="gzip", shuffle=True)
    zarrcy.config(threads=2)
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    assert np.array_equal(a[...], data)
    held = store.get("v/c/5/0/0")  # the main thread's buffer is in use at the fork
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads, args=(path, data, q))
    p.start()
    try:
        got = q.get(timeout=60)
    finally:
        p.join(timeout=60)
        if p.is_alive():  # pragma: no cover - a hang is a failure, not a stuck CI job
            p.kill()
    assert p.exitcode == 0 and got == (True, True, True)
    # the parent's own store still reads after the fork, and its held view is intact
    assert np.array_equal(a[5], data[5]) and held is not None and len(held) > 4
    store.close()


def _child_reads_inherited(a, want: np.ndarray, q) -> None:
    """The child's first reads of the inherited store start together in several threads
    (each opening the child's own descriptor must not close another's)."""
    start = threading.Barrier(4)
    ok: list[bool] = []

    def read(i: int) -> None:
        start.wait()
        try:
            ok.append(bool(np.array_equal(a[i], want[i])))
        except Exception as e:  # reported to the parent
            ok.append(False)
            q.put(repr(e))

    ts = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    q.put(all(ok) and len(ok) == 4 and bool(np.array_equal(a[...], want)))


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_fork_while_another_thread_builds_the_chunk_table(tmp_path, monkeypatch):
    """A thread is inside the chunk table's build (reading the index under h5py) when
    the process forks: the child's read of the same, inherited store builds the table
    itself instead of waiting forever on a lock the parent's thread held (it hung when
    the build had a lock of its own, not reset at fork)."""
    import zarrcy.storage.hdf5_file as hf

    path = str(tmp_path / "b.h5")
    data = np.arange(6 * 40, dtype="<i4").reshape(6, 40)
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data, chunks=(1, 40), compression="gzip")
    store = HDF5Store(path)
    a = zarrcy.open_array(store, path="v", mode="r")
    inside, release = threading.Event(), threading.Event()
    real = hf._Var.dataset

    def slow_dataset(self):
        if threading.current_thread().name == "builder":
            inside.set()
            release.wait(30)
        return real(self)

    monkeypatch.setattr(hf._Var, "dataset", slow_dataset)
    builder = threading.Thread(target=lambda: store._arrays["v"].parts[0].chunk_index(), name="builder")
    builder.start()
    assert inside.wait(30)
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child_reads_inherited, args=(a, data, q))
    p.start()
    try:
        p.join(timeout=30)
        hung = p.is_alive()
        if hung:
            p.kill()
            p.join()
        assert not hung, "the forked child waited forever for the chunk table"
        assert q.get(timeout=10) is True and p.exitcode == 0
    finally:
        release.set()
        builder.join()
    assert np.array_equal(a[...], data)
    store.close()


def test_descriptor_is_reopened_once_in_a_child(tmp_path, monkeypatch):
    """After a fork (simulated: the file's pid is another process's), threads asking
    for the descriptor at once open it exactly once and all get the same, working one;
    none is ever closed under another thread (before: each thread reopened it, closing
    the descriptor another had just opened -- EBADF in a forked child's first reads)."""
    from zarrcy.storage.hdf5_file import _File

    path = str(tmp_path / "d.h5")
    data = np.arange(100, dtype="<i8")
    with h5py.File(path, "w") as f:
        f.create_dataset("v", data=data)
        off = f["v"].id.get_offset()
    fh = _File(path)
    fh.pid = -1  # as if inherited from a parent process
    opened: list[int] = []
    real_open = os.open

    def slow_open(*args, **kwargs):
        fd = real_open(*args, **kwargs)
        opened.append(fd)
        threading.Event().wait(0.05)  # a wide window for the other threads
        return fd

    monkeypatch.setattr(os, "open", slow_open)
    start = threading.Barrier(8)
    got: list[int] = []

    def ask() -> None:
        start.wait()
        got.append(fh.descriptor())

    ts = [threading.Thread(target=ask) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    monkeypatch.undo()
    assert len(opened) == 1 and got == opened * 8 and fh.pid == os.getpid()
    buf = bytearray(800)
    fh.pread_into(off, 800, memoryview(buf), "variable /v")
    assert np.array_equal(np.frombuffer(buf, "<i8"), data)
    fh.close()
