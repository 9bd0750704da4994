"""ZipStore specifics: modes, append-only overwrite, compression, CRC checks, zip-slip."""

from __future__ import annotations

import os
import pickle
import zipfile

import pytest

from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.errors import CorruptChunkError, ReadOnlyError, StoreError
from zarrcy.storage import ZipStore, store_from_url


def test_modes(tmp_path):
    p = tmp_path / "m.zip"
    with pytest.raises(StoreError, match="does not exist"):
        ZipStore(p, mode="r")
    with ZipStore(p, mode="x") as z:
        z.set("a", b"1")
    with pytest.raises(StoreError, match="already exists"):
        ZipStore(p, mode="x")
    with ZipStore(p, mode="a") as z:
        assert z.get("a") == b"1"
        z.set("b", b"2")
    with ZipStore(p) as z:
        assert sorted(z.list()) == ["a", "b"] and z.read_only and z.mode == "r"
        with pytest.raises(ReadOnlyError):
            z.set("c", b"3")
    with ZipStore(p, mode="w") as z:  # truncates
        assert list(z.list()) == []
    with pytest.raises(StoreError, match="mode"):
        ZipStore(p, mode="rw")  # type: ignore[arg-type]


def test_append_mode_refuses_non_zip_file(tmp_path):
    p = tmp_path / "not.zip"
    p.write_bytes(b"precious data, not a zip")
    with pytest.raises(StoreError, match="not a zip"):
        ZipStore(p, mode="a")
    assert p.read_bytes() == b"precious data, not a zip"
    with pytest.raises(StoreError, match="not a valid zip"):
        ZipStore(p, mode="r")


def test_overwrite_latest_wins_and_central_directory_is_unique(tmp_path):
    p = tmp_path / "o.zip"
    with ZipStore(p, mode="w") as z:
        z.set("k", b"old")
        z.set("k", b"newer")
        z.set("j", b"x")
        assert z.get("k") == b"newer"
    names = [i.filename for i in zipfile.ZipFile(p).infolist()]
    assert sorted(names) == ["j", "k"]
    assert zipfile.ZipFile(p).read("k") == b"newer"
    with ZipStore(p, mode="a") as z:
        z.set("k", b"newest")
    with ZipStore(p) as z:
        assert z.get("k") == b"newest"
    assert zipfile.ZipFile(p).testzip() is None


def test_compressed_members(tmp_path):
    p = tmp_path / "c.zip"
    value = bytes(range(256)) * 64
    with ZipStore(p, mode="w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as z:
        z.set("d/v", value)
        assert z.get("d/v") == value
        assert z.get("d/v", RangeRequest(1000, 10)) == value[1000:1010]
    info = zipfile.ZipFile(p).getinfo("d/v")
    assert info.compress_type == zipfile.ZIP_DEFLATED and info.compress_size < len(value)
    with ZipStore(p) as z:
        assert z.get("d/v", SuffixRequest(5)) == value[-5:]
        assert z.get_partial_values([("d/v", RangeRequest(0, 3)), ("d/v", SuffixRequest(2)), ("x", None)]) == [
            value[:3],
            value[-2:],
            None,
        ]


@pytest.mark.parametrize("compression", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_other_compressions_read_back(tmp_path, compression):
    p = tmp_path / "o.zip"
    with zipfile.ZipFile(p, "w", compression=compression) as zf:
        zf.writestr("a/b", b"hello" * 100)
    with ZipStore(p) as z:
        assert z.get("a/b") == b"hello" * 100
        assert z.get("a/b", RangeRequest(5, 5)) == b"hello"


def test_stored_members_are_range_read_without_reading_all(tmp_path, monkeypatch):
    p = tmp_path / "s.zip"
    value = os.urandom(1 << 20)
    with ZipStore(p, mode="w") as z:
        z.set("big", value)
    z = ZipStore(p)
    sizes = []
    real_pread = os.pread

    def spy(fd, n, off):
        sizes.append(n)
        return real_pread(fd, n, off)

    monkeypatch.setattr(os, "pread", spy)
    assert z.get("big", RangeRequest(500_000, 100)) == value[500_000:500_100]
    assert z.get("big", SuffixRequest(64)) == value[-64:]
    assert max(sizes) <= 100  # local header (30) and the ranges only
    monkeypatch.undo()
    z.close()


def test_crc_mismatch_is_detected(tmp_path):
    p = tmp_path / "crc.zip"
    with ZipStore(p, mode="w") as z:
        z.set("k", b"A" * 100)
    raw = bytearray(p.read_bytes())
    i = raw.index(b"A" * 100)
    raw[i + 50] = ord("B")
    p.write_bytes(bytes(raw))
    with ZipStore(p) as z:
        with pytest.raises(CorruptChunkError, match="CRC"):
            z.get("k")
        assert z.get("k", RangeRequest(0, 10)) == b"A" * 10  # a range cannot be checked


def test_truncated_archive(tmp_path):
    p = tmp_path / "t.zip"
    with ZipStore(p, mode="w") as z:
        z.set("k", b"A" * 1000)
    raw = p.read_bytes()
    p.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(StoreError):
        ZipStore(p)


def test_closed_store_raises(tmp_path):
    z = ZipStore(tmp_path / "cl.zip", mode="w")
    z.set("k", b"v")
    z.close()
    z.close()  # idempotent
    assert z.closed
    for call in (lambda: z.get("k"), lambda: z.set("k", b"x"), lambda: list(z.list()), lambda: z.list_dir("")):
        with pytest.raises(StoreError, match="closed"):
            call()


def test_read_only_view_shares_archive(tmp_path):
    z = ZipStore(tmp_path / "v.zip", mode="w")
    z.set("k", b"v")
    r = z.with_read_only()
    assert r.read_only and not r.supports_writes and r.get("k") == b"v"
    with pytest.raises(ReadOnlyError):
        r.set("k", b"x")
    r.close()  # a view does not close the archive
    z.set("k2", b"w")
    assert r.get("k2") == b"w"
    z.close()
    assert r.closed


def test_store_from_url_zip(tmp_path):
    p = tmp_path / "u.zip"
    with pytest.raises(StoreError):
        store_from_url(p, mode="r+")
    z = store_from_url(p, mode="w")
    assert isinstance(z, ZipStore) and z.mode == "w"
    z.set("k", b"v")
    z.close()
    r = store_from_url(str(p))
    assert isinstance(r, ZipStore) and r.read_only and r.get("k") == b"v"
    r.close()
    with pytest.raises(StoreError):
        store_from_url(p, mode="w-")
    a = store_from_url("file://" + str(p), mode="a")
    assert a.mode == "a" and a.get("k") == b"v"
    a.close()


def test_pickle_reopens_read_only(tmp_path):
    p = tmp_path / "p.zip"
    with ZipStore(p, mode="w") as z:
        z.set("a", b"1")
    z2 = pickle.loads(pickle.dumps(z))
    assert z2.mode == "r" and z2.get("a") == b"1"
    z2.close()


# -- zip-slip -------------------------------------------------------------------------------
SLIP_NAMES = ["../evil", "a/../../evil", "/abs/path", "C:/windows", "c:evil", "a\\..\\evil", "a//b", "./a", "x/./b"]


@pytest.fixture
def slip_zip(tmp_path):
    p = tmp_path / "slip.zip"
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("ok/zarr.json", b"{}")
        zf.writestr("ok/dir/", b"")  # a directory entry: ignored
        for name in SLIP_NAMES:
            zf.writestr(zipfile.ZipInfo(name), b"pwned")
    return p


def test_zip_slip_members_refused_on_list(slip_zip):
    with ZipStore(slip_zip) as z:
        assert z.get("ok/zarr.json") == b"{}"
        assert sorted(z.list_prefix("ok/")) == ["ok/zarr.json"]
        assert z.list_dir("ok/") == ["zarr.json"]
        with pytest.raises(StoreError, match="zip-slip"):
            list(z.list())
        with pytest.raises(StoreError, match="zip-slip"):
            z.list_dir("")
        with pytest.raises(StoreError, match="zip-slip"):
            list(z.list_prefix("a/"))  # covers "a/../../evil"


@pytest.mark.parametrize("name", SLIP_NAMES)
def test_zip_slip_members_refused_on_read(slip_zip, name):
    with ZipStore(slip_zip) as z:
        with pytest.raises(StoreError):
            z.get(name)
        with pytest.raises(StoreError):
            z.get_partial_values([(name, None)])


@pytest.mark.parametrize("name", ["C:/x", "a\\b", "d:"])
def test_zip_refuses_writing_unsafe_names(tmp_path, name):
    with ZipStore(tmp_path / "w.zip", mode="w") as z:
        with pytest.raises(StoreError):
            z.set(name, b"x")
        assert list(z.list()) == []


def test_reads_zip_written_by_zarr_python(tmp_path):
    import numpy as np
    import zarr
    from zarr.storage import ZipStore as ZarrZipStore

    p = tmp_path / "zp.zip"
    zs = ZarrZipStore(p, mode="w")
    a = zarr.create_array(zs, name="a", shape=(10,), chunks=(5,), dtype="u1", fill_value=0)
    a[:] = np.arange(10, dtype="u1")
    zs.close()
    with ZipStore(p) as z:
        keys = sorted(z.list())
        assert "a/zarr.json" in keys and "a/c/0" in keys and "a/c/1" in keys
        assert b'"zarr_format": 3' in z.get("a/zarr.json") or b'"zarr_format":3' in z.get("a/zarr.json")
        assert z.list_dir("a/c/") == ["0", "1"]


def test_zarr_python_reads_our_zip(tmp_path):
    import json

    import zarr
    from zarr.storage import ZipStore as ZarrZipStore

    p = tmp_path / "ours.zip"
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [4],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "bytes"}],
    }
    with ZipStore(p, mode="w") as z:
        z.set("zarr.json", json.dumps(meta).encode())
        z.set("c/0", bytes([9, 9, 9, 9]))
        z.set("c/0", bytes([1, 2, 3, 4]))  # overwritten: the latest must win for zarr-python too
    arr = zarr.open_array(ZarrZipStore(p, mode="r"), mode="r")
    assert arr[:].tolist() == [1, 2, 3, 4]


def test_directory_named_zip_is_a_local_store(tmp_path):
    from zarrcy.storage import LocalStore

    d = tmp_path / "odd.zip"
    d.mkdir()
    s = store_from_url(d, mode="a")
    assert isinstance(s, LocalStore)


def test_open_writer_is_shared_not_reopened(tmp_path):
    p = tmp_path / "live.zip"
    w = store_from_url(p, mode="w")
    w.set("a/k", b"v")
    # the file has no central directory yet: a reader in this process gets a view of the writer
    r = store_from_url(str(p), mode="r")
    assert r.read_only and r.get("a/k") == b"v"
    assert store_from_url("file://" + str(p), mode="r+") is w
    with pytest.raises(StoreError, match="already open"):
        store_from_url(p, mode="w")
    with pytest.raises(StoreError, match="already open"):
        ZipStore(p, mode="a")
    w.close()
    r2 = store_from_url(p, mode="a")  # closed: a fresh appender is fine
    assert r2 is not w and r2.get("a/k") == b"v"
    r2.close()


def test_pickle_of_open_writer_in_same_process(tmp_path):
    w = ZipStore(tmp_path / "pw.zip", mode="w")
    w.set("k", b"v")
    r = pickle.loads(pickle.dumps(w))
    assert r.read_only and r.get("k") == b"v"
    w.close()
