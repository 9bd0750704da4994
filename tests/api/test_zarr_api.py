"""zarr-python's common API under the name ``zarrcy`` (issue 14, "API parity").

Each snippet is written against a module called ``zarr`` and run twice: with
zarr-python and with zarrcy bound to that name; what it prints must be the same
(snippets print values, never reprs).  tests/api/userguide.py measures the same thing
on zarr-python's own user guide.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import textwrap

import numpy as np
import pytest

import zarrcy

zarr_python = pytest.importorskip("zarr", reason="zarr-python is the oracle of these tests")

_names = itertools.count()

SNIPPETS = {
    "memory_url_creates_a_store": """
        z = zarr.create_array(store=f"memory://{NAME}", shape=(6, 4), chunks=(3, 2), dtype="int32")
        z[:] = np.arange(24).reshape(6, 4)
        again = zarr.open_array(f"memory://{NAME}", mode="r")
        print(again[1:3].tolist(), again.shape, again.chunks)
        g = zarr.create_group(store=f"memory://{NAME}-g")
        g.create_group("a")
        print(list(zarr.open_group(f"memory://{NAME}-g").keys()))
    """,
    "zeros_ones_full_empty": """
        for z in (zarr.zeros((5,), chunks=(2,), dtype="i2"), zarr.ones((2, 3), chunks=(1, 3)),
                  zarr.full((3,), fill_value=7.5, chunks=(2,)), zarr.empty((4,), chunks=(4,), dtype="u1")):
            print(z.shape, z.dtype, z.fill_value, z.chunks, z[:].tolist() if z.dtype.kind != "u" else z.shape)
    """,
    "array_and_from_array": """
        a = zarr.array(np.arange(10, dtype="f8"), chunks=(4,))
        print(a[:].tolist(), a.chunks, a.dtype)
        b = zarr.from_array(zarr.storage.MemoryStore(), data=a)
        print(b[:].tolist(), b.chunks, b.fill_value)
        c = zarr.from_array(zarr.storage.MemoryStore(), data=np.arange(6).reshape(2, 3), chunks=(1, 3))
        print(c[:].tolist(), c.chunks)
    """,
    "save_load": """
        zarr.save(f"{TMP}/one.zarr", np.arange(5))
        print(zarr.load(f"{TMP}/one.zarr").tolist())
        zarr.save_array(f"{TMP}/one.zarr", np.arange(3), mode="w")
        print(zarr.load(f"{TMP}/one.zarr").tolist())
        zarr.save(f"{TMP}/many.zarr", np.arange(2), np.ones(2), named=np.zeros(3))
        g = zarr.open_group(f"{TMP}/many.zarr", mode="r")
        print(sorted(g.array_keys()), [g[k][:].tolist() for k in sorted(g.array_keys())])
    """,
    "groups": """
        root = zarr.group(f"{TMP}/g.zarr", attributes={"k": 1})
        foo = root.create_group("foo")
        bar = foo.create_array(name="bar", shape=(4,), chunks=(2,), dtype="i4")
        root.create_array(name="top", shape=(2,), dtype="f4")
        print(root.get_group("foo").name, root.get_array("foo/bar").name, root.get_array("foo/bar").shape)
        try:
            root.get_array("foo")
        except zarr.errors.ContainsGroupError:
            print("ContainsGroupError")
        print(sorted(n for n, _ in root.members()), type(root.members()).__name__)  # zarr-python: store order
        print(sorted(n for n, _ in root.members(max_depth=None)), root.nmembers(), root.nmembers(max_depth=None))
        print(sorted(root.group_keys()), sorted(root.array_keys()), "foo" in root, "nope" in root)
        g = root.update_attributes({"x": [1, 2]})
        print(dict(g.attrs), dict(zarr.open_group(f"{TMP}/g.zarr").attrs))
        del root["foo/bar"]
        print(sorted(n for n, _ in root.members(max_depth=None)))
        print(str(root.info).splitlines()[1:4])
    """,
    "array_properties": """
        z = zarr.create_array(zarr.storage.MemoryStore(), shape=(8, 8), chunks=(4, 4), dtype="u2",
                              compressors=zarr.codecs.BloscCodec(cname="zstd", clevel=3, shuffle="bitshuffle"))
        print([type(c).__name__ for c in z.compressors], z.filters, type(z.serializer).__name__, z.order)
        z2 = zarr.create_array(zarr.storage.MemoryStore(), shape=(4,), dtype="i4", compressors=None)
        print(z2.compressors, z.nbytes, z.nbytes_stored() > 0)
        s = zarr.create_array(zarr.storage.MemoryStore(), shape=(8,), chunks=(2,), shards=(4,), dtype="i1",
                              compressors=zarr.codecs.ZstdCodec(level=1))
        print(s.chunks, s.shards, [type(c).__name__ for c in s.compressors], type(s.serializer).__name__)
        print("No. bytes stored" in str(z.info_complete()), "Storage ratio" in str(z.info_complete()))
        z3 = z2.update_attributes({"a": 1})
        print(dict(z3.attrs), dict(z2.attrs))
        import numcodecs
        v2 = zarr.create_array(zarr.storage.MemoryStore(), shape=(16,), chunks=(4,), dtype="i4", zarr_format=2,
                               filters=[numcodecs.Delta("i4")], compressors=numcodecs.Zlib(1))
        print(v2.filters, v2.serializer, v2.compressors)  # numcodecs objects (their reprs agree)
    """,
    "array_config": """
        arr = zarr.create_array({}, shape=(10,), chunks=(5,), dtype="int8", config={"write_empty_chunks": True})
        print(arr.config.write_empty_chunks, arr.config.order)
        arr[:] = 0
        print(arr.nchunks_initialized)
        f = arr.with_config({"order": "F"})
        print(f.config.order, f.config.write_empty_chunks, arr.config.order)
        quiet = arr.with_config({"write_empty_chunks": False})
        quiet[:] = 0
        print(quiet.nchunks_initialized)
    """,
    "global_config": """
        with zarr.config.set({"array.write_empty_chunks": True}):
            print(zarr.config.get("array.write_empty_chunks"))
            a = zarr.create_array(zarr.storage.MemoryStore(), shape=(4,), chunks=(2,), dtype="i1")
            a[:] = 0
            print(a.nchunks_initialized)
        print(zarr.config.get("array.write_empty_chunks"))
    """,
    "mask_selection": """
        z = zarr.create_array(zarr.storage.MemoryStore(), shape=(4, 5), chunks=(2, 2), dtype="i4")
        z[:] = np.arange(20).reshape(4, 5)
        sel = np.zeros((4, 5), dtype=bool)
        sel[1, 2] = sel[3, 0] = sel[0, 4] = True
        print(z.get_mask_selection(sel).tolist())
        z.set_mask_selection(sel, [-1, -2, -3])
        print(z[:].tolist())
        z.set_mask_selection(sel, 9)
        print(z.get_mask_selection(sel).tolist(), z.vindex[sel].tolist())
        print(z.get_basic_selection((slice(0, 2), 1)).tolist())
    """,
    "consolidated": """
        g = zarr.create_group(store=f"memory://{NAME}")
        g.create_array(shape=(2,), name="a", dtype="float64")
        g.create_group("child", attributes={"kind": "child"})
        zarr.consolidate_metadata(f"memory://{NAME}")
        c = zarr.open_group(f"memory://{NAME}")
        cm = c.metadata.consolidated_metadata
        print(sorted(cm.metadata), cm.kind, cm.metadata["a"].shape, cm.metadata["child"].attributes)
        print(zarr.open_consolidated(f"memory://{NAME}")["a"].shape)
        print(zarr.open_group(f"memory://{NAME}", use_consolidated=False).metadata.consolidated_metadata)
        plain = zarr.create_group(zarr.storage.MemoryStore())
        print(plain.metadata.consolidated_metadata)
    """,
    "create_hierarchy": """
        from zarr.core.group import GroupMetadata
        nodes = dict(zarr.create_hierarchy(store=zarr.storage.LocalStore(f"{TMP}/h"),
                                           nodes={"a/b/c": GroupMetadata(attributes={"x": 1})}))
        print(sorted(nodes), dict(nodes["a/b/c"].attrs))
        print(sorted(zarr.open_group(f"{TMP}/h").members(max_depth=None).__class__.__name__))
        root = zarr.group(f"{TMP}/src.zarr", attributes={"name": "root"})
        root.create_array(name="bar", shape=(10,), chunks=(5,), dtype="f4")
        spec = {"": root.metadata} | {k: v.metadata for k, v in root.members()}
        made = dict(zarr.create_hierarchy(store=zarr.storage.MemoryStore(), nodes=spec))
        print(sorted(made), dict(made[""].attrs), made["bar"].shape, made["bar"].chunks)
    """,
    "zip_read_only": """
        store = zarr.storage.ZipStore(f"{TMP}/x.zip", mode="w")
        z = zarr.create_array(store=store, shape=(4,), chunks=(2,), dtype="i2")
        z[:] = [1, 2, 3, 4]
        store.close()
        ro = zarr.storage.ZipStore(f"{TMP}/x.zip", read_only=True)
        print(zarr.open_array(ro, mode="r")[:].tolist(), ro.read_only)
        ro.close()
    """,
}


def _run(module, code: str, tmp: str, name: str) -> str:
    ns = {"zarr": module, "np": np, "TMP": tmp, "NAME": name}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(textwrap.dedent(code), ns)
    return buf.getvalue()


@pytest.mark.filterwarnings("ignore::UserWarning")  # zarr-python's own warnings (numcodecs, ...)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("case", sorted(SNIPPETS))
def test_snippet_matches_zarr_python(case: str, tmp_path) -> None:
    n = next(_names)
    (tmp_path / "zarr").mkdir()
    (tmp_path / "zarrcy").mkdir()
    want = _run(zarr_python, SNIPPETS[case], str(tmp_path / "zarr"), f"parity-zarr-{case}-{n}")
    got = _run(zarrcy, SNIPPETS[case], str(tmp_path / "zarrcy"), f"parity-zarrcy-{case}-{n}")
    assert got == want


# -- what zarr-python does not define (or differs in): zarrcy's own behaviour ----------------
def test_array_and_group_are_callable_modules() -> None:
    from zarrcy.array import Array
    from zarrcy.group import Group

    a = zarrcy.array(np.arange(3))
    assert isinstance(a, Array) and a[:].tolist() == [0, 1, 2]
    assert isinstance(zarrcy.group(), Group)
    assert zarrcy.array.Array is Array and zarrcy.group.Group is Group


def test_memory_url_read_mode_does_not_create() -> None:
    name = f"memory://parity-missing-{next(_names)}"
    for mode in ("r", "r+"):
        with pytest.raises(zarrcy.StoreError):
            zarrcy.open_array(name, mode=mode)
    g = zarrcy.open_group(name)  # mode "a": made, and found again by name
    g.attrs["x"] = 1
    assert zarrcy.open_group(name, mode="r").attrs["x"] == 1
    zarrcy.MemoryStore.forget(name[len("memory://"):])


def test_config_call_and_set() -> None:
    old = zarrcy.config()["threads"]
    with zarrcy.config.set({"threading.max_workers": 1}):
        assert zarrcy.config()["threads"] == 1
        assert zarrcy.config.get("threads") == 1
    assert zarrcy.config()["threads"] == old
    zarrcy.config.set(threads=old)
    with pytest.raises(KeyError):
        zarrcy.config.set({"no_such_option": 1})
    with zarrcy.config.set({"async.concurrency": 3}):  # a zarr-python option zarrcy has no use for
        assert zarrcy.config.get("async.concurrency") == 3
    assert zarrcy.config.get("async.concurrency") is None


def test_error_texts_in_the_users_terms() -> None:
    st = zarrcy.MemoryStore()
    with pytest.raises(zarrcy.MetadataError, match=r"shards \(50, 50\) must be a multiple of chunks \(30, 30\)"):
        zarrcy.create_array(st, shape=(100, 100), dtype="f4", chunks=(30, 30), shards=(50, 50))
    with pytest.raises(zarrcy.UnknownCodecError, match=r"unknown codec 'lz4'; known codecs: .*blosc.*gzip.*zstd.*BloscCodec"):
        zarrcy.create_array(st, shape=(10,), dtype="f4", compressors="lz4")
    a = zarrcy.create_array(st, name="a", shape=(3,), dtype="i4")
    ro = zarrcy.open_array(st, path="a", mode="r")
    with pytest.raises(zarrcy.ReadOnlyError, match=r'reopen it with mode="r\+"'):
        ro[0] = 1
    g = zarrcy.open_group(st, mode="r")
    with pytest.raises(zarrcy.ReadOnlyError, match=r'reopen it with mode="r\+"'):
        g.attrs["x"] = 1
    with pytest.raises(zarrcy.ContainsArrayError):
        zarrcy.create_array(st, name="a", shape=(3,), dtype="i4")
    with pytest.raises(zarrcy.ContainsGroupError):
        zarrcy.create_group(st)
    with pytest.raises(zarrcy.ContainsArrayError):
        g.get_group("a")
    assert a.shape == (3,)


def test_load_group_gives_a_dict(tmp_path) -> None:  # zarr-python 3.4: NotImplementedError
    zarrcy.save(str(tmp_path / "g.zarr"), np.arange(2), b=np.ones(1))
    d = zarrcy.load(str(tmp_path / "g.zarr"))
    assert sorted(d) == ["arr_0", "b"] and d["arr_0"].tolist() == [0, 1]


def test_mask_selection_rejects_wrong_shape() -> None:
    z = zarrcy.zeros((3, 3), chunks=(2, 2))
    with pytest.raises(IndexError):
        z.get_mask_selection(np.ones((3,), dtype=bool))


def test_copy_keeps_codecs_and_data(tmp_path) -> None:
    src = zarrcy.group(str(tmp_path / "src.zarr"), attributes={"r": 1})
    a = src.create_array("sub/a", shape=(10,), chunks=(3,), shards=(6,), dtype="i2", attributes={"u": "m"})
    a[:] = np.arange(10)
    dst = zarrcy.group(str(tmp_path / "dst.zarr"))
    n, skipped, nbytes = zarrcy.copy(src["sub"], dst)
    assert (n, skipped, nbytes) == (2, 0, 20)
    b = dst["sub/a"]
    assert b[:].tolist() == list(range(10)) and b.chunks == (3,) and b.shards == (6,) and dict(b.attrs) == {"u": "m"}
    assert zarrcy.copy(src["sub"], dst, if_exists="skip") == (0, 1, 0)
    with pytest.raises(zarrcy.ContainsGroupError):
        zarrcy.copy(src["sub"], dst)


def test_members_max_depth_is_iterative() -> None:
    g = zarrcy.group()
    g.create_group("/".join(f"n{i}" for i in range(50)))
    assert len(g.members(max_depth=None)) == 50
    assert [n for n, _ in g.members(max_depth=1)] == ["n0", "n0/n1"]
