"""Crash safety: kill -9 mid-conversion then --resume gives output byte-identical to an
uninterrupted run; running out of disk space mid-run; resume rules."""

from __future__ import annotations

import errno
import os
import threading

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main
from zarrcy.storage import LocalStore
from zarrcy.storage._base import Store
from convert_helpers import journal_done, kill_convert_after, same, stored_objects

OPTS = ["--rewrite", "--shards", "16,16", "--chunks", "8,8", "--compressor", "zstd:1", "--progress", "off"]


def test_kill9_then_resume_is_identical(v2_tree, tmp_path):
    src, expect = v2_tree
    ref = str(tmp_path / "ref.zarr")
    assert convert_main([src, ref, *OPTS]) == 0
    dst = str(tmp_path / "dst.zarr")
    kill_convert_after([src, dst, *OPTS], dst, 6)
    done = journal_done(dst)
    assert done >= 6
    assert os.path.exists(os.path.join(dst, "__zarrcy_convert", "plan.json"))  # interrupted, journal kept
    # a plain rerun refuses; --resume finishes
    assert convert_main([src, dst, *OPTS]) == 2
    rep = zarrcy.convert(src, dst, rewrite=True, shards="16,16", chunks="8,8", compressor="zstd:1", resume=True,
                         progress="off", verify=True)
    assert rep.regions_skipped >= done - 2  # regions journaled are skipped (verified by checksum)
    assert rep.regions_done + rep.regions_skipped == rep.regions
    assert stored_objects(dst) == stored_objects(ref)
    for path, want in expect.items():
        assert same(zarrcy.open_array(dst, path=path, mode="r")[...], want)


class FullDisk(Store):
    """A LocalStore that fails with ENOSPC after ``limit`` writes (None: never)."""

    def __init__(self, inner: LocalStore, limit: int | None) -> None:
        super().__init__()
        self.inner = inner
        self.limit = limit
        self.writes = 0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return self.inner.url

    def get(self, key, byte_range=None):
        return self.inner.get(key, byte_range)

    def getsize(self, key):
        return self.inner.getsize(key)

    def set(self, key, value) -> None:
        with self._lock:  # regions write from several threads: count each write once
            if self.limit is not None and self.writes >= self.limit:
                raise OSError(errno.ENOSPC, "No space left on device", key)
            self.writes += 1
        self.inner.set(key, value)

    def erase(self, key) -> None:
        self.inner.erase(key)

    def erase_prefix(self, prefix) -> None:
        self.inner.erase_prefix(prefix)

    def list(self):
        return self.inner.list()

    def list_prefix(self, prefix):
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix):
        return self.inner.list_dir(prefix)


@pytest.mark.parametrize("limit", [3, 20])
def test_enospc_then_resume(v2_tree, tmp_path, limit):
    src, expect = v2_tree
    ref = str(tmp_path / "ref.zarr")
    kw = dict(rewrite=True, shards="16,16", chunks="8,8", compressor="zstd:1", progress="off")
    zarrcy.convert(src, ref, **kw)
    dst = FullDisk(LocalStore(str(tmp_path / "dst.zarr")), limit)
    with pytest.raises(zarrcy.convert.ConvertError, match="out of disk space") as ei:
        zarrcy.convert(src, dst, **kw)
    assert ei.value.exit_code == 3
    dst.limit = None  # space freed
    rep = zarrcy.convert(src, dst, resume=True, **kw)
    assert rep.regions_done + rep.regions_skipped == rep.regions
    assert stored_objects(str(tmp_path / "dst.zarr")) == stored_objects(ref)


def test_resume_rules(v2_tree, tmp_path, capsys):
    src, _ = v2_tree
    dst = str(tmp_path / "d.zarr")
    store = FullDisk(LocalStore(dst), 25)
    with pytest.raises(zarrcy.convert.ConvertError):
        zarrcy.convert(src, store, rewrite=True, progress="off")
    # different options than the interrupted run: refused
    assert convert_main([src, dst, "--resume", "--compressor", "gzip:1", "--progress", "off"]) == 2
    assert "different options" in capsys.readouterr().err
    assert convert_main([src, dst, "--resume", "--rewrite", "--progress", "off"]) == 0
    # complete output: --resume has nothing to do
    assert convert_main([src, dst, "--resume", "--rewrite", "--progress", "off"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    # --resume on an empty destination is a normal run
    assert convert_main([src, str(tmp_path / "new.zarr"), "--resume", "--progress", "off"]) == 0


def test_resume_redoes_damaged_regions(v2_tree, tmp_path):
    """A journaled region whose stored object changed (checksum mismatch) is rewritten.
    One worker: regions run in order, so the first shard is written and journaled long
    before the disk fills (with two, a region delayed past the 30th write -- a busy CI
    machine -- failed too, and the shard to damage did not exist)."""
    src, expect = v2_tree
    dst = str(tmp_path / "d.zarr")
    store = FullDisk(LocalStore(dst), 30)
    kw = dict(rewrite=True, shards="16,16", chunks="8,8", progress="off", include=["temp"], workers=1)
    with pytest.raises(zarrcy.convert.ConvertError):
        zarrcy.convert(src, store, **kw)
    shard = os.path.join(dst, "temp", "c", "0", "0")
    assert os.path.exists(shard)
    with open(shard, "r+b") as f:
        f.write(b"\xff\xff\xff\xff")
    rep = zarrcy.convert(src, dst, resume=True, **kw)
    assert rep.regions_done >= 1
    assert same(zarrcy.open_array(dst, path="temp", mode="r")[...], expect["temp"])
