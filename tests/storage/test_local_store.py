"""LocalStore specifics: containment (symlinks), crash safety, temp files, paths and URLs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.errors import ReadOnlyError, StoreError
from zarrcy.storage import LocalStore, store_from_url
from zarrcy.storage.local import TEMP_PREFIX


def _temp_files(root) -> list[str]:
    return [f for _d, _s, files in os.walk(root) for f in files if f.startswith(TEMP_PREFIX)]


@pytest.fixture(params=["native", "portable"])
def local(request, tmp_path, monkeypatch):
    if request.param == "portable":  # the code paths for systems without /proc/self/fd and dir_fd
        import zarrcy.storage.local as local_mod

        monkeypatch.setattr(local_mod, "_PROC_FD", False)
        monkeypatch.setattr(local_mod, "_DIR_FD", False)
    return LocalStore(tmp_path / "root")


# -- symlinks -------------------------------------------------------------------------------
def test_symlinked_directory_escaping_root_is_refused(local, outside, take_snapshot):
    os.symlink(outside, os.path.join(local.root, "link"))
    before = take_snapshot(outside)
    with pytest.raises(StoreError, match="outside the store root"):
        local.get("link/secret")
    with pytest.raises(StoreError):
        local.get("link/secret", RangeRequest(0, 2))
    with pytest.raises(StoreError):
        local.get_partial_values([("link/secret", None)])
    with pytest.raises(StoreError):
        local.exists("link/secret")
    with pytest.raises(StoreError):
        local.set("link/new", b"x")
    with pytest.raises(StoreError):
        local.set("link/deeper/new", b"x")
    with pytest.raises(StoreError):
        local.set("link/secret", b"overwritten?")
    with pytest.raises(StoreError):
        local.erase("link/secret")
    with pytest.raises(StoreError):
        local.set_partial_values([("link/secret", 0, b"XX")])
    with pytest.raises(StoreError):
        list(local.list_prefix("link/"))
    with pytest.raises(StoreError):
        local.list_dir("link/")
    assert list(local.list()) == []  # the outside link is not part of the store
    assert local.list_dir("") == []
    assert take_snapshot(outside) == before
    assert sorted(os.listdir(outside)) == ["secret"]


def test_symlinked_file_escaping_root_is_refused(local, outside):
    os.symlink(outside / "secret", os.path.join(local.root, "key"))
    with pytest.raises(StoreError):
        local.get("key")
    with pytest.raises(StoreError):
        local.set_partial_values([("key", 0, b"XX")])
    assert (outside / "secret").read_bytes() == b"secret"
    # erase removes the link itself, never the target
    local.erase("key")
    assert not os.path.lexists(os.path.join(local.root, "key"))
    assert (outside / "secret").read_bytes() == b"secret"


def test_set_replaces_an_escaping_file_link_not_its_target(local, outside):
    os.symlink(outside / "secret", os.path.join(local.root, "key"))
    local.set("key", b"new")  # rename replaces the link entry itself
    assert local.get("key") == b"new"
    assert (outside / "secret").read_bytes() == b"secret"


def test_symlinked_root_works(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    s = LocalStore(tmp_path / "alias")
    s.set("a/b", b"1")
    assert s.get("a/b") == b"1"
    assert (real / "a" / "b").read_bytes() == b"1"
    assert list(s.list()) == ["a/b"]


def test_symlink_inside_root_is_followed(local):
    local.set("data/c/0", b"chunk")
    os.symlink(os.path.join(local.root, "data"), os.path.join(local.root, "alias"))
    assert local.get("alias/c/0") == b"chunk"
    local.set("alias/c/1", b"via link")
    assert local.get("data/c/1") == b"via link"
    assert sorted(local.list()) == ["alias/c/0", "alias/c/1", "data/c/0", "data/c/1"]
    local.erase_prefix("alias/")  # removes the link, not the data behind it
    assert sorted(local.list()) == ["data/c/0", "data/c/1"]


def test_symlink_cycle_does_not_hang_listing(local):
    local.set("a/k", b"1")
    os.symlink(os.path.join(local.root, "a"), os.path.join(local.root, "a", "loop"))
    keys = sorted(local.list())
    assert "a/k" in keys and len(keys) < 10


# -- atomicity and temp files ---------------------------------------------------------------
def test_no_temp_files_left(local):
    for i in range(20):
        local.set(f"c/{i % 3}", os.urandom(1000 + i))
    local.set_partial_values([("p", 0, b"abc")])
    assert _temp_files(local.root) == []


def test_failed_write_leaves_no_temp_file(local):
    os.makedirs(os.path.join(local.root, "isdir", "child"))
    with pytest.raises(StoreError, match="directory"):
        local.set("isdir", b"x")
    assert _temp_files(local.root) == []
    local.set("file", b"x")
    with pytest.raises(StoreError, match="file, not a directory"):
        local.set("file/below", b"y")
    assert _temp_files(local.root) == []


def test_temp_names_are_not_keys(local):
    with pytest.raises(StoreError):
        local.set(TEMP_PREFIX + "x", b"1")
    with pytest.raises(StoreError):
        local.get("a/" + TEMP_PREFIX + "x")
    # a stray temp file (as a crash would leave) is invisible and removable
    os.makedirs(os.path.join(local.root, "a"))
    Path(local.root, "a", TEMP_PREFIX + "123-4-5-dead").write_bytes(b"junk")
    local.set("a/k", b"v")
    assert list(local.list()) == ["a/k"]
    assert local.list_dir("a/") == ["k"]
    assert local.remove_temp_files() == 1
    assert _temp_files(local.root) == []


_CRASH_CHILD = textwrap.dedent(
    """
    import sys
    from zarrcy.storage import LocalStore
    s = LocalStore(sys.argv[1])
    a, b = b"A" * (4 << 20), b"B" * (4 << 20)
    s.set("k/v", a)
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        s.set("k/v", b if i % 2 else a)
    """
)


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.11])
def test_sigkill_mid_write_leaves_old_or_new(tmp_path, delay):
    root = tmp_path / "crash"
    p = subprocess.Popen([sys.executable, "-c", _CRASH_CHILD, str(root)], stdout=subprocess.PIPE)
    try:
        assert p.stdout.readline().strip() == b"ready"
        time.sleep(delay)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        p.stdout.close()
    s = LocalStore(root, read_only=True)
    v = s.get("k/v")
    assert v in (b"A" * (4 << 20), b"B" * (4 << 20))
    assert list(s.list()) == ["k/v"]  # a half-written temp file, if any, is not a key
    LocalStore(root).remove_temp_files()
    assert _temp_files(root) == []


# -- misc behaviour -------------------------------------------------------------------------
def test_parent_is_file_and_key_is_directory(local):
    local.set("a", b"file")
    assert local.get("a/b") is None  # a path component is a file
    assert local.get("a/b", SuffixRequest(1)) is None
    assert not local.exists("a/b")
    local.erase("a/b")  # no error
    local.set("d/e", b"1")
    assert local.get("d") is None  # a directory is not a key
    local.erase("d")
    assert local.get("d/e") == b"1"


def test_special_files_are_not_keys(local):
    os.mkfifo(os.path.join(local.root, "fifo"))
    assert local.get("fifo") is None  # and does not block
    assert "fifo" not in list(local.list())


def test_backslash_is_refused_as_on_every_store(local):
    """A separator on Windows and to zip tools (``a\\..\\..\\y``): refused by every store
    alike (issue 23.9), even where the file system would take it."""
    with pytest.raises(StoreError):
        local.set("a\\b", b"1")
    with pytest.raises(StoreError):
        local.get("a\\b")
    assert list(local.list()) == []


def test_create_flag_and_read_only_missing_root(tmp_path):
    LocalStore(tmp_path / "lazy", create=False)
    assert not (tmp_path / "lazy").exists()
    s = LocalStore(tmp_path / "lazy", create=False)
    s.set("x/y", b"1")  # created by the first write
    assert (tmp_path / "lazy" / "x" / "y").read_bytes() == b"1"
    r = LocalStore(tmp_path / "missing", read_only=True)
    assert r.get("a") is None and list(r.list()) == [] and r.list_dir("") == []
    assert not (tmp_path / "missing").exists()


def test_root_that_is_a_file(tmp_path):
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(StoreError):
        LocalStore(tmp_path / "f")


def test_erase_prefix_root_keeps_root_and_prunes(local):
    for k in ["a/b/c/d", "a/b/e", "f"]:
        local.set(k, b"1")
    local.erase_prefix("a/b/c/")
    assert not os.path.exists(os.path.join(local.root, "a", "b", "c"))
    local.erase_prefix("")
    assert os.path.isdir(local.root) and os.listdir(local.root) == []


def test_fsync_option(tmp_path):
    s = LocalStore(tmp_path / "s", fsync=True)
    s.set("a/b", b"durable")
    s.set_partial_values([("a/b", 0, b"D")])
    assert s.get("a/b") == b"Durable"
    assert pickle_round_trip(s).fsync


def pickle_round_trip(obj):
    import pickle

    return pickle.loads(pickle.dumps(obj))


def test_getsize(local):
    local.set("k", b"12345")
    assert local.getsize("k") == 5 and local.getsize("nope") is None


def test_read_only_message_names_store(tmp_path):
    r = LocalStore(tmp_path, read_only=True)
    with pytest.raises(ReadOnlyError, match=str(tmp_path)):
        r.set("k", b"1")
    assert not (tmp_path / "k").exists()


# -- URLs and store_from_url ----------------------------------------------------------------
def test_url_is_file_uri(tmp_path):
    s = LocalStore(tmp_path / "my data")
    assert s.url == "file://" + str(tmp_path / "my%20data").replace(" ", "%20")
    assert s.url.startswith("file:///") and "%20" in s.url
    s.set("k", b"v")
    s2 = store_from_url(s.url, mode="r")
    assert isinstance(s2, LocalStore) and s2.root == s.root and s2.get("k") == b"v"


def test_file_urls(tmp_path):
    s = LocalStore("file://" + str(tmp_path / "u"))
    assert s.root == str(tmp_path / "u")
    s.set("k", b"v")
    assert store_from_url("file://localhost" + str(tmp_path / "u")).get("k") == b"v"
    assert LocalStore(f"file:{tmp_path}/u").get("k") == b"v"
    with pytest.raises(StoreError, match="host"):
        store_from_url("file://otherhost/data")
    with pytest.raises(StoreError):
        store_from_url("file://")


def test_store_from_url_paths_and_modes(tmp_path):
    p = tmp_path / "plain"
    e = store_from_url(p, mode="r+")  # creates nothing: an empty store, nodes are "not found"
    assert not p.exists() and list(e.list()) == [] and e.get("zarr.json") is None
    s = store_from_url(p, mode="w")
    assert isinstance(s, LocalStore) and not s.read_only and p.is_dir()
    s.set("k", b"v")
    r = store_from_url(str(p))
    assert r.read_only and r.get("k") == b"v"
    assert not store_from_url(p, mode="r+").read_only
    assert not store_from_url(p, mode="a").read_only
    assert not store_from_url(p, mode="w-").read_only
    with pytest.raises(StoreError, match="mode"):
        store_from_url(p, mode="rw")
    with pytest.raises(StoreError, match="storage_options"):
        store_from_url(p, storage_options={"anon": True})


@pytest.mark.parametrize("url", ["s3://bucket/data.zarr", "gs://b/x", "https://example.com/x.zarr", "S3://b/x"])
def test_remote_urls_are_object_stores(url):
    pytest.importorskip("obstore")
    from zarrcy.storage import ObjectStore

    s = store_from_url(url)  # configured only: no request is made (tests/remote talks to servers)
    assert isinstance(s, ObjectStore) and s.read_only


@pytest.mark.parametrize("url", ["ftp://host/x.zarr", "hdfs://n/x"])
def test_unsupported_url_schemes(url):
    with pytest.raises(StoreError, match="not supported"):
        store_from_url(url)


def test_store_from_url_rejects_non_paths():
    with pytest.raises(StoreError):
        store_from_url(12)
    with pytest.raises(StoreError):
        store_from_url("")


def test_store_from_url_memory():
    from zarrcy.storage import MemoryStore

    m = MemoryStore({"a": b"1"})
    assert store_from_url(m.url, mode="a") is m
    r = store_from_url(m.url)
    assert r.read_only and r.get("a") == b"1"
    with pytest.raises(StoreError, match="no MemoryStore"):
        store_from_url("memory://does-not-exist")
    with pytest.raises(ReadOnlyError):
        store_from_url(r.url.replace("memory://", "memory://"), mode="r").set("a", b"2")


@pytest.mark.parametrize("name", ["a#b", "q?x=1", "sp ace", "per%cent", "colon:s", "x://y"])
def test_odd_root_names_round_trip_through_url(tmp_path, name):
    root = tmp_path / name
    s = store_from_url(str(root), mode="w")
    assert isinstance(s, LocalStore) and s.root == str(root)
    s.set("k", b"v")
    s2 = store_from_url(s.url)
    assert s2.root == s.root and s2.get("k") == b"v"
    import pickle

    assert pickle.loads(pickle.dumps(s)).root == s.root


def test_get_partial_values_opens_each_file_once(local, monkeypatch):
    local.set("a", b"0123456789")
    local.set("b/c", b"abcdef")
    opened = []
    real_open = os.open

    def spy(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    got = local.get_partial_values(
        [("a", RangeRequest(0, 2)), ("b/c", SuffixRequest(2)), ("a", SuffixRequest(3)), ("a", None), ("b/c", None)]
    )
    monkeypatch.undo()
    assert got == [b"01", b"ef", b"789", b"0123456789", b"abcdef"]
    assert len(opened) == 2


def test_listing_walks_only_the_prefix_subtree(local, monkeypatch):
    for k in ["a/c/0", "a/c/1", "b/c/0", "b/d/1", "zarr.json"]:
        local.set(k, b"1")
    scanned = []
    real_scandir = os.scandir

    def spy(path="."):
        where = os.readlink(f"/proc/self/fd/{path}") if isinstance(path, int) else path  # a descriptor
        scanned.append(os.path.relpath(where, os.path.realpath(local.root) if isinstance(path, int) else local.root))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", spy)
    assert sorted(local.list_prefix("b/c/")) == ["b/c/0"]
    assert scanned == ["b/c"]
    scanned.clear()
    assert local.list_dir("a/") == ["c"]
    assert scanned == ["a"]
    monkeypatch.undo()


def test_get_does_no_stat_before_open(local, monkeypatch):
    import zarrcy.storage.local as local_mod

    if not local_mod._PROC_FD:
        pytest.skip("the portable containment check uses realpath (lstat per component)")
    local.set("a/b", b"v")
    calls = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)
        monkeypatch.setattr(os, name, lambda *a, _r=real, _n=name, **k: calls.append(_n) or _r(*a, **k))
    monkeypatch.setattr(os.path, "exists", lambda *a: calls.append("exists") or True)
    assert local.get("a/b") == b"v"
    assert local.get("a/missing") is None
    monkeypatch.undo()
    assert calls == []


def test_snapshot_get_ranges_equals_get_of_each_range(tmp_path):
    """``_FileSnapshot.get_ranges`` (the shard reader's batched path) reads what
    ``get`` reads for every kind of range, clipped at the end, and refuses bad ones as
    ``get`` does."""
    from zarrcy.byte_range import RangeRequest, SuffixRequest
    from zarrcy.errors import StoreError

    store = LocalStore(tmp_path)
    data = bytes(range(256)) * 40
    store.set("k", data)
    ranges = [RangeRequest(0, 10), RangeRequest(5, 0), RangeRequest(10_000, 5), RangeRequest(10_230, 100),
              RangeRequest(3, None), SuffixRequest(7), None, RangeRequest(20_000, 3), RangeRequest(True, 2)]
    with store.snapshot("k") as snap:
        got = snap.get_ranges(ranges)
        assert got == [snap.get(r) for r in ranges]
        assert got[0] == data[:10] and got[2] == data[10_000:10_005] and got[3] == data[10_230:]
        assert got[7] == b""
        with pytest.raises(StoreError):
            snap.get_ranges([RangeRequest(0, 4), RangeRequest(-1, 2)])
        with pytest.raises(StoreError):
            snap.get_ranges([RangeRequest(0, -2)])
    with store.snapshot("missing") as snap:
        assert snap.get_ranges([RangeRequest(0, 1), None]) == [None, None]


def test_snapshot_read_errors_name_the_file(tmp_path, monkeypatch):
    """An I/O error while reading a pinned file (EIO from a failing disk) is a
    ``StoreError`` naming the file, from every read of the snapshot."""
    import errno

    store = LocalStore(tmp_path)
    store.set("k", b"x" * 100)

    def eio(*args):
        raise OSError(errno.EIO, "Input/output error")

    with store.snapshot("k") as snap:
        monkeypatch.setattr(os, "pread", eio)
        monkeypatch.setattr(os, "preadv", eio)
        for read in (lambda: snap.get(), lambda: snap.get(RangeRequest(0, 4)),
                     lambda: snap.get_ranges([RangeRequest(0, 4)]), lambda: snap.get_ranges([SuffixRequest(3)]),
                     lambda: snap.get_owned(RangeRequest(1, 5))):
            with pytest.raises(StoreError, match=r"k: read failed: .*Input/output error") as info:
                read()
            assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.EIO
