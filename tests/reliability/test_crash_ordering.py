"""Crash and recovery ordering, by deterministic failure injection (issue 23).

Each test runs the real code (``Array.resize``, ``Array.append``, the sharding codec's
append strategy) on ``_faults.FaultyStore``, which dies before -- or fails at -- its
N-th mutation, for **every** N of the operation, and checks what the store holds then:

* **resize, shrinking**: the chunks wholly outside the new shape are erased *before* the
  smaller ``zarr.json`` is written: at every kill point, no stored chunk lies wholly
  outside the shape that ``zarr.json`` records, and every element inside it reads its old
  value or the fill value (a doomed chunk already erased);
* **resize, growing** (one or two dimensions at once, also shrinking one while growing
  another; regular, sharded, rectilinear): chunks left beyond the old shape (by
  ``delete_outside=False``, an interrupted resize, another implementation) are erased
  *before* the larger ``zarr.json``: whenever the new shape is recorded, the whole gained
  region reads as the fill value;
* **append strategy**: an in-place append that fails at any of its writes (also after a
  short write) is undone -- the shard is byte for byte what it was, including a
  ``start`` index that was half overwritten -- and the error reaches the caller.

After each kill the interrupted operation is repeated without faults and must give the
uninterrupted result.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import ZarrcyError
from zarrcy.storage import LocalStore, MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _faults import FaultyStore, Killed  # noqa: E402


def _stored_coords(store, prefix: str = "") -> list[tuple[int, ...]]:
    a = zarrcy.open_array(store, path=prefix, mode="r")
    dec = a.metadata.chunk_key_encoding.decode_chunk_key
    p = prefix + "/" if prefix else ""
    out = []
    for k in store.list_prefix(p):
        c = dec(k[len(p):])
        if c is not None and len(c) == a.ndim:
            out.append(tuple(c))
    return sorted(out)


def _grid(a) -> tuple[int, ...]:
    return tuple(a.metadata.chunk_grid.grid_shape(a.shape))


def _values(shape: tuple[int, ...]) -> np.ndarray:
    return (np.arange(math.prod(shape), dtype=np.int32).reshape(shape) % 97) + 1  # never the fill value 0


def _create(store, shape, chunks, shards=None, grid=None):
    if grid is not None:  # rectilinear
        meta = {
            "zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": "int32",
            "chunk_grid": {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": grid}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        }
        return zarrcy.create_array(store, metadata=meta)
    return zarrcy.create_array(store, shape=shape, chunks=chunks, shards=shards, dtype="int32", fill_value=0)


def _kill_points(store, op) -> int:
    """Mutations of ``op(array)`` run once, on a copy of ``store`` (nothing dies)."""
    probe = FaultyStore(MemoryStore({k: store.get(k) for k in store.list()}))
    op(zarrcy.open_array(probe, mode="r+"))
    return probe.ops


def _copy(store) -> MemoryStore:
    return MemoryStore({k: store.get(k) for k in store.list()})


def _after_each_kill(base, op, at_least: int = 1) -> list[tuple[int, MemoryStore]]:
    """For every kill point of ``op(array)`` on a copy of ``base``: (n, the store as the
    kill before mutation n left it)."""
    n_ops = _kill_points(base, op)
    assert n_ops >= at_least
    out = []
    for n in range(n_ops):
        st = _copy(base)
        with pytest.raises(Killed):
            op(zarrcy.open_array(FaultyStore(st, n), mode="r+"))
        out.append((n, st))
    return out


# --------------------------------------------------------------------------------------
# resize
# --------------------------------------------------------------------------------------
SHRINK = [
    pytest.param(dict(shape=(20,), chunks=(2,)), (7,), id="1d"),
    pytest.param(dict(shape=(6, 8), chunks=(2, 2)), (3, 5), id="2d-both"),
    pytest.param(dict(shape=(6, 8), chunks=(2, 2)), (6, 3), id="2d-one"),
    pytest.param(dict(shape=(8, 8), chunks=(2, 2), shards=(4, 4)), (3, 4), id="sharded"),
    pytest.param(dict(shape=(10, 6), chunks=None, grid=[[1, 2, 3, 4], 2]), (4, 6), id="rectilinear"),
    pytest.param(dict(shape=(10, 6), chunks=None, grid=[[1, 2, 3, 4], 2]), (0, 6), id="to-zero"),
]


@pytest.mark.parametrize("spec,new", SHRINK)
def test_shrink_erases_before_the_smaller_metadata_at_every_kill_point(spec, new):
    base = MemoryStore()
    a = _create(base, **spec)
    old = a.shape
    v = _values(old)
    a[...] = v
    for n, st in _after_each_kill(base, lambda x: x.resize(new), at_least=2):
        b = zarrcy.open_array(st, mode="r")
        assert b.shape in (old, new), n
        grid = _grid(b)
        outside = [c for c in _stored_coords(st) if any(x >= g for x, g in zip(c, grid))]
        assert not outside, f"kill {n}: chunks {outside} stored outside the recorded shape {b.shape}"
        got = b[...]
        want = v[tuple(slice(0, s) for s in b.shape)]
        assert np.all((got == want) | (got == 0)), f"kill {n}: a value that is neither old nor fill"
        # the interrupted resize, repeated, finishes it
        c = zarrcy.open_array(st, mode="r+")
        c.resize(new)
        assert c.shape == new and np.array_equal(c[...], v[tuple(slice(0, s) for s in new)]) or 0 in new
        assert all(x < g for crd in _stored_coords(st) for x, g in zip(crd, _grid(c)))


GROW = [
    # (create, shrink to with delete_outside=False (leaves leftovers), grow to)
    pytest.param(dict(shape=(20,), chunks=(2,)), (5,), (20,), id="1d"),
    pytest.param(dict(shape=(6, 8), chunks=(2, 2)), (2, 3), (7, 9), id="2d-both"),
    pytest.param(dict(shape=(6, 8), chunks=(2, 2)), (2, 8), (6, 8), id="2d-one"),
    pytest.param(dict(shape=(6, 8), chunks=(2, 2)), (6, 3), (3, 12), id="shrink-one-grow-other"),
    pytest.param(dict(shape=(8, 8), chunks=(2, 2), shards=(4, 4)), (3, 3), (8, 9), id="sharded"),
    pytest.param(dict(shape=(10, 6), chunks=None, grid=[[1, 2, 3, 4], 2]), (3, 2), (10, 6), id="rectilinear"),
    pytest.param(dict(shape=(10, 6), chunks=None, grid=[[1, 2, 3, 4], 2]), (3, 2), (13, 7),
                 id="rectilinear-past-the-edges"),
]


@pytest.mark.parametrize("spec,mid,new", GROW)
@pytest.mark.parametrize("blind", [True, False], ids=["blind-erase", "listing"])
def test_grow_erases_leftovers_before_the_larger_metadata_at_every_kill_point(spec, mid, new, blind, monkeypatch):
    from zarrcy.nodes.array_write import ArrayWrites

    if not blind:  # the listing path (many gained chunks), without making thousands
        monkeypatch.setattr(ArrayWrites, "_BLIND_ERASE_MAX", 0)
    base = MemoryStore()
    a = _create(base, **spec)
    a[...] = _values(a.shape)
    a.resize(mid, delete_outside=False)  # leftovers beyond `mid`, as an interrupted resize leaves them
    kept = a[...].copy()
    ref_store = _copy(base)
    ref = zarrcy.open_array(ref_store, mode="r+")
    ref.resize(new)
    want = ref[...]
    # chunks wholly beyond `mid` read as fill (edge chunks keep their data: v3-core
    # "Resizing", shown again on growing, as zarr-python does)
    mid_grid = _grid(a)
    for crd in _stored_coords(ref_store):
        assert all(x < g for x, g in zip(crd, mid_grid)), f"leftover chunk {crd} survived the grow"
    inner = tuple(slice(0, min(m, s)) for m, s in zip(mid, new))
    assert np.array_equal(want[inner], kept[inner])
    for n, st in _after_each_kill(base, lambda x: x.resize(new)):
        b = zarrcy.open_array(st, mode="r")
        assert b.shape in (tuple(mid), tuple(new)), n
        if b.shape == tuple(new):  # the new shape is recorded: the leftovers are gone
            assert np.array_equal(b[...], want), f"kill {n}: stale data in the grown region"
        else:  # shrinking an axis erased chunks first: those read as fill already
            got = b[...]
            assert np.all((got == kept) | (got == 0)), n
        c = zarrcy.open_array(st, mode="r+")
        c.resize(new)
        assert np.array_equal(c[...], want), n


def test_grow_in_two_dimensions_erases_every_gained_slab():
    """Growing both axes at once: the gained region is three slabs (new rows x old
    columns, old rows x new columns, the corner); a leftover in each must go."""
    st = MemoryStore()
    a = zarrcy.create_array(st, shape=(6, 6), chunks=(2, 2), dtype="int32", fill_value=0)
    a[...] = 5
    a.resize((2, 2), delete_outside=False)
    assert len(_stored_coords(st)) == 9
    a.resize((6, 6))
    assert _stored_coords(st) == [(0, 0)]
    assert a[...].sum() == 5 * 4


@pytest.mark.parametrize("edges,size", [([1, 2, 3, 4], 10), ([[3, 2], 4], 10), ([5], 5)])
def test_rectilinear_resize_to_exactly_the_sum_of_the_edges(edges, size):
    """Growing to exactly the sum of the edges keeps the grid (no edge appended); one past
    appends one edge of 1; shrinking keeps the edges and erases the chunks left outside."""
    st = MemoryStore()
    a = _create(st, shape=(1, 3), chunks=None, grid=[edges, 3])
    a[...] = 7
    before = a.metadata.chunk_grid.to_dict()
    a.resize((size, 3))
    assert a.metadata.chunk_grid.to_dict() == before
    assert a.shape == (size, 3) and a[...].sum() == 7 * 3
    assert _grid(a)[0] == sum(n for _, n in (e if isinstance(e, list) else (e, 1) for e in edges))
    a[...] = 1
    a.resize((size + 1, 3))
    axis = a.metadata.chunk_grid.to_dict()["configuration"]["chunk_shapes"][0]
    assert axis[-1] == 1 and a.shape == (size + 1, 3)
    assert a[size:, :].sum() == 0 and a[:size, :].sum() == size * 3
    a.resize((1, 3))
    assert _stored_coords(st) == [(0, 0)]
    assert a.metadata.chunk_grid.to_dict()["configuration"]["chunk_shapes"][0] == axis  # edges kept


def test_append_killed_at_every_point_never_shows_stale_data():
    """``append`` = grow (erase leftovers, then zarr.json) + write: at every kill point the
    array reads as the old data followed by fill or the appended data, never the
    leftovers of chunks wholly beyond the old shape."""
    base = MemoryStore()
    a = zarrcy.create_array(base, shape=(10,), chunks=(3,), dtype="int32", fill_value=0)
    a[...] = np.arange(1, 11)
    a.resize(4, delete_outside=False)  # leftovers 4..9 in chunks 1..3
    new = np.full(5, -1, np.int32)
    for n, st in _after_each_kill(base, lambda x: x.append(new), at_least=3):
        got = zarrcy.open_array(st, mode="r")[...]
        assert got.shape in ((4,), (9,)) and got[:4].tolist() == [1, 2, 3, 4]
        # 4, 5: the edge chunk's kept data (v3-core "Resizing"), then fill or the new data;
        # from 6 on (chunks wholly beyond the old shape): never the leftovers 7..10
        if got.shape == (9,):
            assert got[4] in (0, 5, -1) and got[5] in (0, 6, -1), f"kill {n}: {got.tolist()}"
            assert all(x in (0, -1) for x in got[6:].tolist()), f"kill {n}: {got.tolist()}"


# --------------------------------------------------------------------------------------
# the append strategy: a failed in-place append is undone
# --------------------------------------------------------------------------------------
def _append_array(st, location: str) -> None:
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [64], "data_type": "int32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": location}}],
    }
    a = zarrcy.create_array(st, metadata=meta)
    a[...] = np.arange(64, dtype=np.int32)


def _fresh(kind: str, root: Path, name: str, like=None):
    st = MemoryStore() if kind == "memory" else LocalStore(str(root / name))
    if like is not None:
        for k in like.list():
            st.set(k, like.get(k))
    return st


@pytest.mark.parametrize("kind", ["memory", "local"])
@pytest.mark.parametrize("torn", [False, True], ids=["error", "short-write-then-error"])
@pytest.mark.parametrize("location", ["start", "end"])
def test_failed_append_is_undone_at_every_write(restore_config, tmp_path, location, torn, kind):
    """Every partial write of an in-place append fails in turn (after half of it landed,
    with ``torn``): the undo cuts the shard back and puts a ``start`` index back, so the
    shard is byte for byte what it was (before: MemoryStore had no ``truncate``, so the
    undo silently did nothing there)."""
    zarrcy.config(shard_write_strategy="append", shard_append_dead_ratio=1.0)
    base = _fresh(kind, tmp_path, "base")
    _append_array(base, location)
    before = base.get("c/0")
    probe = FaultyStore(_fresh(kind, tmp_path, "probe", base))
    zarrcy.open_array(probe, mode="r+")[3:5] = -1
    writes = [i for i, (op, _) in enumerate(probe.log) if op == "set_partial"]
    assert len(writes) == (2 if location == "start" else 1), probe.log  # in place, not rewritten
    for n in writes:
        st = _fresh(kind, tmp_path, f"w{n}", base)
        fs = FaultyStore(st, fail_at=n, torn=torn)
        with pytest.raises((OSError, ZarrcyError), match="injected"):
            zarrcy.open_array(fs, mode="r+")[3:5] = -1
        assert fs.failed
        assert st.get("c/0") == before, f"{location}: write {n} failed and the shard was not restored"
        assert zarrcy.open_array(st, mode="r")[...].tolist() == list(range(64))
        # the write can be repeated once the store works again
        b = zarrcy.open_array(st, mode="r+")
        b[3:5] = -1
        assert b[...].tolist() == [*range(3), -1, -1, *range(5, 64)]
