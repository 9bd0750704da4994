"""Codec abstractions (v3-core.rst "Chunk encoding", "Codecs").

Three kinds, named after the spec: ``ArrayArrayCodec``, ``ArrayBytesCodec``,
``BytesBytesCodec``.  Codecs are frozen dataclasses with symmetric
``from_dict`` / ``to_dict`` (CONVENTIONS.md rule 3).  Per-chunk work touches no JSON:
``resolve`` runs once per array (through :class:`zarrcy.codecs.pipeline.CodecPipeline`).

Codecs never see stores: partial reads go through the :class:`ByteGetter` protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, Self, Sequence

import numpy as np

from zarrcy.byte_range import ByteRequest

__all__ = [
    "ArraySpec",
    "ByteGetter",
    "ByteSetter",
    "Codec",
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BytesBytesCodec",
    "CodecKind",
]

CodecKind = Literal["array->array", "array->bytes", "bytes->bytes"]


@dataclass(frozen=True)
class ArraySpec:
    """The decoded representation a codec sees: chunk shape, numpy dtype, fill value.

    ``dtype`` is always in native byte order (endianness is the ``bytes`` codec's job).
    ``fill_value`` is a numpy scalar of ``dtype``.  ``data_type`` is the Zarr data type
    object (``zarrcy.metadata.data_type.DataType``) when known; codecs that need a
    Zarr-level type (``cast_value``) use it, all others ignore it.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    data_type: Any = None

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for s in self.shape:
            n *= s
        return n


class ByteGetter(Protocol):
    """Read access to one stored value (a chunk or shard), as codecs see it."""

    def get(self, byte_range: ByteRequest = None) -> bytes | None:
        """The value (or a range of it); ``None`` if the value does not exist."""

    def get_ranges(self, byte_ranges: Sequence[ByteRequest]) -> list[bytes | None]:
        """Several ranges of the value at once (stores may coalesce/batch)."""


class ByteSetter(ByteGetter, Protocol):
    """Read/write access to one stored value."""

    def set(self, value: bytes | bytearray | memoryview) -> None: ...

    def delete(self) -> None: ...


class Codec(ABC):
    """Base of every codec.  Subclasses set ``name`` (the spec's identifier) and ``kind``."""

    name: ClassVar[str]
    kind: ClassVar[CodecKind]
    #: older identifiers read as this codec (written back as ``name``)
    aliases: ClassVar[tuple[str, ...]] = ()

    @classmethod
    @abstractmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        """Build from the ``configuration`` object; ``path`` is the JSON path for errors.

        Unknown keys, missing required keys and wrong types raise MetadataError.
        """

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "configuration": {...}}`` fully resolved (round-trips)."""

    def validate(self, spec: ArraySpec, path: str) -> None:
        """Check this codec against its decoded representation; raise MetadataError."""

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        """Encoded representation for a decoded ``spec`` (identity unless array->array)."""
        return spec

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        """Encoded size in bytes for ``input_size`` (elements or bytes), or None if variable."""
        return None


class ArrayArrayCodec(Codec):
    kind: ClassVar[CodecKind] = "array->array"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """``spec`` is the decoded (input) representation."""

    @abstractmethod
    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """``spec`` is the decoded (output) representation."""


class ArrayBytesCodec(Codec):
    kind: ClassVar[CodecKind] = "array->bytes"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytes | bytearray | memoryview | None:
        """Encode; ``None`` means "nothing to store" (e.g. an all-fill shard)."""

    @abstractmethod
    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> np.ndarray:
        """Decode to an array of ``spec.shape`` / ``spec.dtype``."""

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, spec: ArraySpec) -> bool:
        """Decode straight into ``out`` (shape ``spec.shape``); False if not supported."""
        return False


class BytesBytesCodec(Codec):
    kind: ClassVar[CodecKind] = "bytes->bytes"

    @abstractmethod
    def encode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> bytes | bytearray | memoryview:
        ...

    @abstractmethod
    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> bytes | bytearray | memoryview:
        ...
