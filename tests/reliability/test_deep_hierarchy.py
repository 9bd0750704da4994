"""Issue 23.6: deep hierarchies.  Creating a node ``depth`` levels down costs work linear
in the depth (it used to resolve the whole path with ``realpath`` once per level:
7.6 s at 800 levels), and directories are made without recursion (``os.makedirs``
raised RecursionError at ~1,000 levels).  Complexity is asserted by counting the file
system calls, not by timing."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import StoreError
from zarrcy.storage import LocalStore

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
# deeper than the recursion limit (os.makedirs and shutil.rmtree recurse once per level);
# the 2,000 with ZARRCY_SLOW=1 (each system call re-walks the whole path in
# the kernel, so the time still grows with the square of the depth: ~20 s under load)
DEEP = 2000 if SLOW else 1200
_COUNTED = ("stat", "lstat", "open", "mkdir", "readlink", "scandir", "listdir", "rename", "replace", "unlink")


@pytest.fixture
def short_root():
    # 2,000 levels of "g/" are 4,000 bytes: most of Linux's PATH_MAX (4,096), so the
    # store root must be short (pytest's tmp_path is ~60 bytes); tmpfs where there is
    # one (an ext4 rmdir of a deep directory costs milliseconds)
    root = tempfile.mkdtemp(prefix="zd", dir="/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    try:
        yield root
    finally:
        _remove_tree(root)


def _remove_tree(root: str) -> None:
    """``shutil.rmtree`` recurses once per level (RecursionError at ~1,000): an explicit
    stack of directory descriptors, each entry removed relative to its directory."""
    stack = [(os.open(root, os.O_RDONLY | os.O_DIRECTORY), None)]
    while stack:
        fd, _ = stack[-1]
        sub = None
        with os.scandir(fd) as it:
            for e in it:
                if e.is_dir(follow_symlinks=False):
                    sub = e.name
                    break
                os.unlink(e.name, dir_fd=fd)
        if sub is not None:
            stack.append((os.open(sub, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd), sub))
            continue
        os.close(fd)
        _, name = stack.pop()
        if stack:
            os.rmdir(name, dir_fd=stack[-1][0])
    os.rmdir(root)


@pytest.fixture
def count_calls(monkeypatch):
    counts = {"n": 0}
    for name in _COUNTED:
        real = getattr(os, name)

        def counted(*args, __real=real, **kwargs):
            counts["n"] += 1
            return __real(*args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    return counts


def _create(root: str, depth: int, counts: dict) -> int:
    store = LocalStore(os.path.join(root, f"d{depth}"))
    before = counts["n"]
    a = zarrcy.create_array(store, name="g/" * (depth - 1) + "x", shape=(3,), dtype="uint8", fill_value=5)
    a[1] = 7
    calls = counts["n"] - before
    np.testing.assert_array_equal(zarrcy.open_array(store, path=a.path, mode="r")[...], [5, 7, 5])
    return calls


def test_create_array_linear_in_depth(short_root, count_calls):
    small = _create(short_root, DEEP // 8, count_calls)
    big = _create(short_root, DEEP, count_calls)
    # linear: 8x the depth costs ~8x the calls (quadratic would be ~64x)
    assert big <= 10 * small, (small, big)
    assert big <= 20 * DEEP, big


def test_deep_directories_without_recursion(short_root, count_calls):
    """A chunk key 1,200+ directories deep written into an empty store: one pass of
    mkdirs, no RecursionError."""
    store = LocalStore(os.path.join(short_root, "s"))
    key = "d/" * DEEP + "k"
    before = count_calls["n"]
    store.set(key, b"v")
    assert count_calls["n"] - before <= 4 * DEEP
    assert store.get(key) == b"v"
    assert list(store.list()) == [key]


def test_walk_deep(short_root, count_calls):
    store = LocalStore(os.path.join(short_root, "w"))
    zarrcy.create_group(store, path="g/" * (DEEP - 1) + "g")
    root = zarrcy.open_group(store, mode="r")
    before = count_calls["n"]
    assert sum(1 for _ in root.walk()) == DEEP
    assert count_calls["n"] - before <= 8 * DEEP  # no realpath (an lstat per level) per level


def test_path_beyond_path_max_is_a_store_error(short_root):
    store = LocalStore(os.path.join(short_root, "m"))
    with pytest.raises(StoreError):
        zarrcy.create_group(store, path="/".join(["n" * 250] * 20))  # 5,000 bytes
