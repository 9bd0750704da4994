"""Shared helpers of the core codecs: configuration parsing with JSON paths, buffers.

Every ``from_dict`` goes through :func:`zarrcy.metadata._parse.config_dict` (re-exported
here; unknown keys are an error, CONVENTIONS.md rule 3) and the typed getters below, so
messages all read ``<path>.configuration.<key>: expected <what>, received <value!r>``.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, ClassVar

import numpy as np

from zarrcy.errors import CorruptChunkError, MetadataError, expected
from zarrcy.metadata._parse import MISSING, config_dict

__all__ = [
    "thread_bytes",
    "NoConfiguration",
    "MISSING",
    "config_dict",
    "get_int",
    "get_bool",
    "get_choice",
    "as_uint8",
    "nbytes_of",
    "selection_indices",
    "NATIVE_ENDIAN",
    "max_compressed_size",
    "check_encoded_size",
]

NATIVE_ENDIAN = sys.byteorder  # "little" or "big"


def get_int(cfg: dict[str, Any], key: str, path: str, lo: int, hi: int, default: Any = MISSING) -> Any:
    p = f"{path}.configuration.{key}"
    if key not in cfg:
        if default is MISSING:
            raise MetadataError(expected(p, f"an integer in [{lo}, {hi}]", MISSING), p)
        return default
    v = cfg[key]
    # JSON booleans are not integers (bool is an int subclass in Python)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
        raise MetadataError(expected(p, f"an integer in [{lo}, {hi}]", v), p)
    return int(v)


def get_bool(cfg: dict[str, Any], key: str, path: str, default: Any = MISSING) -> Any:
    p = f"{path}.configuration.{key}"
    if key not in cfg:
        if default is MISSING:
            raise MetadataError(expected(p, "true or false", MISSING), p)
        return default
    v = cfg[key]
    if not isinstance(v, (bool, np.bool_)):
        raise MetadataError(expected(p, "true or false", v), p)
    return bool(v)


def get_choice(cfg: dict[str, Any], key: str, path: str, choices: tuple[Any, ...], default: Any = MISSING) -> Any:
    p = f"{path}.configuration.{key}"
    if key not in cfg:
        if default is MISSING:
            raise MetadataError(expected(p, f"one of {choices}", MISSING), p)
        return default
    v = cfg[key]
    if isinstance(v, bool) or v not in choices:
        raise MetadataError(expected(p, f"one of {choices}", v), p)
    return v


def as_uint8(data: Any) -> np.ndarray:
    """A 1-D uint8 view of a bytes-like object or array (no copy when contiguous)."""
    if isinstance(data, np.ndarray):
        if data.dtype == np.uint8 and data.ndim == 1 and data.flags.c_contiguous:
            return data
        return np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    return np.frombuffer(data, dtype=np.uint8)


def selection_indices(s: Any, n: int) -> np.ndarray:
    """One dimension of a chunk selection (int, slice, index array) as int64 indices."""
    if isinstance(s, slice):
        return np.arange(*s.indices(n), dtype=np.int64)
    if isinstance(s, np.ndarray):
        return s.astype(np.int64, copy=False).reshape(-1)
    return np.array([int(s)], dtype=np.int64)


def nbytes_of(data: Any) -> int:
    if isinstance(data, np.ndarray):
        return data.nbytes
    if isinstance(data, memoryview):
        return data.nbytes
    return len(data)


def max_compressed_size(n: int) -> int:
    """A generous upper bound on a compressed stream for ``n`` decoded bytes.

    Real compressors expand incompressible input by well under 1 %; anything far
    beyond this bound is a hostile or corrupt value, rejected before decoding.
    """
    return n + (n >> 3) + (64 << 10)


def check_encoded_size(data: Any, limit: int | None, what: str) -> None:
    if limit is not None and nbytes_of(data) > limit:
        raise CorruptChunkError(expected(what, f"at most {limit} encoded bytes", nbytes_of(data)))


class NoConfiguration:
    """Mixin for codecs without configuration members (``crc32c``, ``vlen-utf8``, ...):
    an absent or empty ``configuration`` is accepted (anything in it is refused), and the
    JSON form is the bare name."""

    name: ClassVar[str]

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Any:
        config_dict(configuration, path, ())
        return cls()

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name}


_THREAD_BYTES = threading.local()

#: per-thread buffers up to this size are kept between calls (:func:`thread_bytes`)
KEEP_THREAD_BYTES = 64 << 20


def thread_bytes(name: str, nbytes: int) -> np.ndarray:
    """A uint8 work buffer of ``nbytes`` owned by the calling thread until its next call
    with the same ``name``: reused across chunks and shards (a fresh buffer costs its
    page faults every time), kept only up to ``KEEP_THREAD_BYTES`` so memory stays
    bounded by one buffer per name and thread."""
    if nbytes > KEEP_THREAD_BYTES:
        return np.empty(nbytes, np.uint8)
    d: dict[str, np.ndarray] = _THREAD_BYTES.__dict__
    buf = d.get(name)
    if buf is None or buf.shape[0] < nbytes:
        buf = d[name] = np.empty(max(nbytes, 1), np.uint8)
    return buf[:nbytes]
