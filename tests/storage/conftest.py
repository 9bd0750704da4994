"""Fixtures for the shared store suite: one ``store`` fixture parametrised over every store."""

from __future__ import annotations


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
def make_factory():
    """The ``StoreFactory`` class (test files cannot import conftest under importlib mode)."""
    return StoreFactory


