"""Stores (v3-core.rst "Stores"): where a hierarchy's keys and values live.

``store_from_url`` turns what a user passes to ``open_array``/``open_group`` into a
store: a ``Store`` passes through; ``memory://<name>`` finds the live ``MemoryStore``;
``s3://``, ``gs://``, ``az://``, ``http(s)://`` are an ``ObjectStore`` (storage/remote.py,
obstore; HTTP(S) read-only); ``file://...`` or a plain path is a ``LocalStore`` (v3-store-filesystem.rst "Canonical
URI": no scheme means a file system path), or a ``ZipStore`` when it ends in ``.zip``,
or a read-only ``HDF5Store`` when it is a file with the HDF5 signature (storage/hdf5.py).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from zarrcy.errors import ReadOnlyError, StoreError, expected
from zarrcy.storage._base import Store
from zarrcy.storage._common import StorePath, check_key, check_prefix, join_key
from zarrcy.storage.local import LocalStore, local_path_from_url
from zarrcy.storage.memory import MemoryStore, lookup_memory_store
from zarrcy.storage.remote import REMOTE_SCHEMES, ObjectStore
from zarrcy.storage.zip import ZipMode, ZipStore, find_open_zip

__all__ = [
    "Store",
    "LocalStore",
    "MemoryStore",
    "ZipStore",
    "ObjectStore",
    "StorePath",
    "AccessMode",
    "store_from_url",
    "check_key",
    "check_prefix",
    "join_key",
]

AccessMode = Literal["r", "r+", "a", "w", "w-"]
_MODES = ("r", "r+", "a", "w", "w-")
_ZIP_MODE: dict[str, ZipMode] = {"r": "r", "r+": "a", "a": "a", "w": "w", "w-": "x"}


def store_from_url(
    url_or_path_or_store: Any,
    *,
    mode: AccessMode = "r",
    storage_options: dict[str, Any] | None = None,
) -> Store:
    """Open the store named by a URL, a path or a ``Store`` (returned as is, or as a read-only view).

    ``mode``: ``"r"`` read-only; ``"r+"`` read/write, creates nothing (a ``.zip`` must
    exist; a missing directory is an empty store); ``"a"`` read/write, created if missing; ``"w"`` read/write (a ``.zip`` is truncated); ``"w-"``
    read/write, must not exist (a ``.zip`` file; for directories the node-level check
    is the caller's).  Clearing existing nodes for ``"w"`` is the caller's job too,
    since it concerns a path inside the store, not the store.
    """
    if mode not in _MODES:
        raise StoreError(expected("mode", f"one of {_MODES}", mode))
    writable = mode != "r"
    if isinstance(url_or_path_or_store, Store):
        store = url_or_path_or_store
        if storage_options:
            raise StoreError("storage_options: not allowed together with a Store instance")
        if writable and store.read_only:
            raise ReadOnlyError(f"{store.url}: store is read-only but mode={mode!r} asks to write")
        if not writable and not store.read_only:
            with_ro = getattr(store, "with_read_only", None)
            if with_ro is not None:
                return with_ro(True)
        return store
    if isinstance(url_or_path_or_store, StorePath):
        raise StoreError("store_from_url: pass StorePath.store (and its path separately), not a StorePath")
    try:
        target = os.fspath(url_or_path_or_store)
    except TypeError:
        raise StoreError(expected("store", "a Store, a URL or a path", url_or_path_or_store)) from None
    if isinstance(target, bytes):
        target = os.fsdecode(target)
    scheme, sep, _ = target.partition("://")
    if not sep or not scheme or not scheme[0].isalpha() or not all(c.isalnum() or c in "+-." for c in scheme):
        scheme = ""  # e.g. "/data/a://b" is a path, not a URL (RFC 3986 scheme syntax)
    scheme = scheme.lower()
    if scheme == "memory":
        if storage_options:
            raise StoreError("storage_options: not supported for memory:// stores")
        store = lookup_memory_store(target, create=mode in ("a", "w", "w-"))  # memory://NAME may name a new store
        if writable and store.read_only:
            raise ReadOnlyError(f"{target}: store is read-only but mode={mode!r} asks to write")
        return store.with_read_only(True) if not writable and not store.read_only else store
    if scheme == "file" or target.startswith("file:"):
        path = local_path_from_url(target)
    elif scheme in REMOTE_SCHEMES:  # s3://, gs://, az://, http(s):// through obstore (storage/remote.py)
        if scheme in ("http", "https"):
            # HTTP(S) is read-only: opening existing nodes ("r+", "a": the API defaults)
            # reads; modes that must create or truncate cannot be honoured
            if mode in ("w", "w-"):
                raise ReadOnlyError(f"{target}: HTTP(S) stores are read-only but mode={mode!r} asks to write")
            writable = False
        return ObjectStore(target, storage_options=storage_options, read_only=not writable)
    elif scheme:
        raise StoreError(
            f"{target}: {scheme}:// stores are not supported; use a local path, file://, memory://, "
            f"or one of {', '.join(s + '://' for s in REMOTE_SCHEMES)}"
        )
    else:
        path = target
    if storage_options:
        raise StoreError(f"{target}: storage_options are only meaningful for remote stores")
    if not path:
        raise StoreError(expected("store", "a non-empty path or URL", target))
    if path.lower().endswith(".zip") and not os.path.isdir(path):  # a directory named *.zip stays local
        zmode = _ZIP_MODE[mode]
        live = find_open_zip(path)
        if live is not None:  # this process is writing that archive: share it, never reopen
            if zmode in ("w", "x"):
                raise StoreError(f"{path}: already open for writing in this process; cannot mode={mode!r} it")
            return live.with_read_only(True) if mode == "r" else live
        if mode == "r+" and not os.path.isfile(path):
            raise StoreError(f"{path}: zip file does not exist (mode 'r+')")
        return ZipStore(path, mode=zmode)
    if os.path.isfile(path):  # an HDF5 / NetCDF-4 file (by signature): read-only (storage/hdf5.py)
        from zarrcy.storage.hdf5 import HDF5Store, is_hdf5

        if is_hdf5(path):
            if writable:
                raise ReadOnlyError(f"{path}: HDF5 / NetCDF-4 files are read-only sources (mode={mode!r})")
            return HDF5Store(path)
        if mode == "r":
            raise StoreError(expected(path, "a Zarr store (a directory), a .zip archive or an HDF5 / NetCDF-4 file",
                                      "a file without the HDF5 signature"))
    # "r+" must not create anything: a missing directory is an empty store, so opening a
    # node in it fails at the node level (NodeNotFoundError) like any other missing node
    return LocalStore(path, read_only=not writable, create=writable and mode != "r+")
