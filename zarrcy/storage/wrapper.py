"""A store that forwards every call to another one (:class:`StoreWrapper`): the base of
stores that watch what reaches a real store -- the checksum recorder of ``zarrcy
convert`` (zarrcy/convert/execute.py), the failure-injecting store of the crash tests.
A subclass overrides the calls it watches; everything else, the capabilities and the
identity (``url``, ``lock_key``) are the wrapped store's.  Storage layer (layer 2)."""

from __future__ import annotations

import builtins
from typing import ContextManager, Iterable, Iterator, Sequence

from zarrcy.byte_access import ValueSnapshot
from zarrcy.byte_range import ByteRequest
from zarrcy.storage._base import Buffer, Store

__all__ = ["StoreWrapper"]

_CAPABILITIES = ("supports_writes", "supports_deletes", "supports_partial_reads", "supports_partial_writes",
                 "supports_listing", "supports_conditional_reads", "supports_conditional_writes", "io_concurrency")


class StoreWrapper(Store):
    """Every call goes to ``inner``; the wrapper declares ``inner``'s capabilities."""

    def __init__(self, inner: Store) -> None:
        super().__init__(read_only=inner.read_only)
        self.inner = inner
        for flag in _CAPABILITIES:  # declared by the wrapped store, never probed
            setattr(self, flag, getattr(inner, flag))

    # -- identity ------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.inner.url

    def lock_key(self, key: str) -> object:
        return self.inner.lock_key(key)

    def write_lock(self, key: str) -> ContextManager[object]:
        return self.inner.write_lock(key)

    def in_write_session(self, key: str) -> bool:
        return self.inner.in_write_session(key)

    # -- reads ---------------------------------------------------------------------------
    def get(self, key: str, byte_range: ByteRequest = None) -> bytes | None:
        return self.inner.get(key, byte_range)

    def get_partial_values(self, key_ranges: Sequence[tuple[str, ByteRequest]]) -> list[bytes | None]:
        return self.inner.get_partial_values(key_ranges)

    def version(self, key: str) -> object | None:
        return self.inner.version(key)

    def get_versioned(self, key: str, byte_range: ByteRequest = None) -> tuple[bytes | None, object | None]:
        return self.inner.get_versioned(key, byte_range)

    def get_ranges_if_version(self, key: str, byte_ranges: Sequence[ByteRequest],
                              version: object) -> list[bytes | None] | None:
        return self.inner.get_ranges_if_version(key, byte_ranges, version)

    def snapshot(self, key: str) -> ValueSnapshot:
        return self.inner.snapshot(key)

    def pinned_snapshot(self, key: str) -> ValueSnapshot:
        return self.inner.pinned_snapshot(key)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def getsize(self, key: str) -> int | None:
        return self.inner.getsize(key)

    def list(self) -> Iterator[str]:
        return self.inner.list()

    def list_prefix(self, prefix: str) -> Iterator[str]:
        return self.inner.list_prefix(prefix)

    def list_dir(self, prefix: str) -> builtins.list[str]:
        return self.inner.list_dir(prefix)

    # -- writes --------------------------------------------------------------------------
    def set(self, key: str, value: Buffer) -> None:
        self.inner.set(key, value)

    def set_spliced(self, key: str, parts: Sequence[Buffer | tuple[int, int]],
                    source: ValueSnapshot | None = None) -> None:
        self.inner.set_spliced(key, parts, source)

    def set_partial_values(self, key_start_values: Sequence[tuple[str, int, Buffer]]) -> None:
        self.inner.set_partial_values(key_start_values)

    def truncate(self, key: str, length: int, identity: object | None = None) -> None:
        self.inner.truncate(key, length, identity)

    def erase(self, key: str) -> None:
        self.inner.erase(key)

    def erase_values(self, keys: Iterable[str]) -> None:
        self.inner.erase_values(keys)

    def erase_prefix(self, prefix: str) -> None:
        self.inner.erase_prefix(prefix)

    def remove_temp_files(self) -> int:
        return self.inner.remove_temp_files()
