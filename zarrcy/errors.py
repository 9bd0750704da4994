"""zarrcy's exception hierarchy (CONVENTIONS.md rule 4).

Every error is a ``ZarrcyError`` and also the builtin a numpy/zarr-python user would
catch.  Messages follow ``<json path or key>: expected <what>, received <value!r>``.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ZarrcyError",
    "MetadataError",
    "UnknownCodecError",
    "UnknownExtensionError",
    "CorruptChunkError",
    "CastError",
    "OutOfRangeError",
    "CastTypeError",
    "NodeNotFoundError",
    "ContainsNodeError",
    "ContainsGroupError",
    "ContainsArrayError",
    "ReadOnlyError",
    "StoreError",
    "expected",
]


class ZarrcyError(Exception):
    """Base class of every error zarrcy raises on purpose."""


class MetadataError(ZarrcyError, ValueError):
    """A metadata document (or a codec configuration) is invalid.

    ``path`` is the JSON path of the offending field, e.g. ``codecs[1].configuration.level``.
    """

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class UnknownExtensionError(MetadataError):
    """An extension (data type, chunk grid, key encoding, storage transformer) is unknown."""


class UnknownCodecError(UnknownExtensionError):
    """A codec name is not known to zarrcy (and ``must_understand`` is not false)."""


class CorruptChunkError(ZarrcyError, ValueError):
    """Stored bytes cannot be decoded: truncated, checksum mismatch, bad shard index..."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class CastError(ZarrcyError, ValueError):
    """A value cannot be cast as requested (not representable, NaN into an integer...)."""

    def __init__(self, message: str, index: int | tuple[int, ...] | None = None, value: Any = None) -> None:
        super().__init__(message)
        self.index = index
        self.value = value


class OutOfRangeError(CastError, OverflowError):
    """A value lies outside the target type's range and no ``out_of_range`` mode applies."""


class CastTypeError(CastError, TypeError):
    """A value of the wrong type for the target data type (e.g. a complex number assigned
    to a real array, ``None`` to an integer array): numpy raises TypeError there."""


class NodeNotFoundError(ZarrcyError, KeyError):
    """No array or group at the requested path."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ContainsNodeError(ZarrcyError, FileExistsError):
    """A node already exists where a new one was to be created (and overwrite is off)."""


class ContainsGroupError(ContainsNodeError):
    """A group is where an array was expected or was to be created (zarr-python's name)."""


class ContainsArrayError(ContainsNodeError):
    """An array is where a group was expected or was to be created (zarr-python's name)."""


#: the end of a ReadOnlyError for a node opened read-only
REOPEN_HINT = 'opened read-only; reopen it with mode="r+" (or "a") to write'


class ReadOnlyError(ZarrcyError, PermissionError):
    """A write was attempted on a read-only store or array."""


class StoreError(ZarrcyError, OSError):
    """The store refused an operation (bad key, key escaping the root, I/O failure)."""


class LockTimeoutError(StoreError, TimeoutError):
    """Another writer held a stored object's write lock for longer than
    ``zarrcy.config(write_lock_timeout=...)`` seconds."""


class WriteConflictError(StoreError):
    """A conditional write kept losing to other writers of the same object (object
    stores: the object changed between the read and the write of every attempt)."""


def expected(path: str, what: str, received: Any) -> str:
    """Format the standard message ``<path>: expected <what>, received <value!r>``."""
    return f"{path}: expected {what}, received {received!r}"
