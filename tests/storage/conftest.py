"""Fixtures for the shared store suite: one ``store`` fixture parametrised over every store."""

from __future__ import annotations

import os

import pytest

from zarrcy.storage import LocalStore, MemoryStore, ZipStore

# "local-portable" runs LocalStore with the code paths used where /proc/self/fd and
# dir_fd are unavailable (realpath containment checks, path-based temp + replace)
STORE_KINDS = ["local", "local-portable", "memory", "zip"]


class StoreFactory:
    """Makes writable stores of one kind and reopens them read-only."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.opened: list = []
        self.n = 0

    def new(self):
        self.n += 1
        if self.kind.startswith("local"):
            s = LocalStore(self.tmp_path / f"root{self.n}")
        elif self.kind == "memory":
            s = MemoryStore()
        else:
            s = ZipStore(self.tmp_path / f"store{self.n}.zip", mode="w")
        self.opened.append(s)
        return s

    def read_only(self, store):
        """A read-only store over the same data (a zip is closed and reopened with mode 'r')."""
        if self.kind.startswith("local"):
            s = LocalStore(store.root, read_only=True)
        elif self.kind == "memory":
            s = store.with_read_only()
        else:
            store.close()
            s = ZipStore(store.path, mode="r")
        self.opened.append(s)
        return s

    def close(self) -> None:
        for s in self.opened:
            s.close()


@pytest.fixture(params=STORE_KINDS)
def factory(request, tmp_path, monkeypatch):
    if request.param == "local-portable":
        import zarrcy.storage.local as local_mod

        monkeypatch.setattr(local_mod, "_PROC_FD", False)
        monkeypatch.setattr(local_mod, "_DIR_FD", False)
    f = StoreFactory(request.param, tmp_path)
    yield f
    f.close()


@pytest.fixture
def store(factory):
    return factory.new()


@pytest.fixture
def outside(tmp_path):
    """A directory beside the stores that no test may modify through a store."""
    d = tmp_path / "outside"
    d.mkdir()
    (d / "secret").write_bytes(b"secret")
    return d


def snapshot(path) -> dict[str, bytes]:
    """Every file under ``path`` (relative name -> content), following no symlinks."""
    out = {}
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, path)] = fh.read()
    return out


@pytest.fixture
def make_factory():
    """The ``StoreFactory`` class (test files cannot import conftest under importlib mode)."""
    return StoreFactory


@pytest.fixture
def take_snapshot():
    return snapshot
