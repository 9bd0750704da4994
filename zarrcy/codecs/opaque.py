"""Pass-through stand-ins for unknown codecs marked ``"must_understand": false``.

v3-core.rst, "must_understand": an implementation may ignore an extension object
that sets ``must_understand`` to false.  Such a codec is kept in the chain as an
identity transform that writes its JSON back unchanged.  Its kind follows its
position: before the ``array -> bytes`` codec it is an ``array -> array`` identity,
after it a ``bytes -> bytes`` identity.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, BytesBytesCodec

__all__ = ["OpaqueCodec", "OpaqueArrayArrayCodec", "OpaqueBytesBytesCodec"]


class OpaqueCodec:
    """Mixin: the original JSON object, returned as is by ``to_dict``."""

    name: ClassVar[str] = "<opaque>"
    json: dict[str, Any]

    @property
    def codec_name(self) -> str:
        return str(self.json.get("name"))

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.json)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size


def _freeze(obj: Any) -> Any:  # hashable form for dataclass equality/hash
    if isinstance(obj, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in obj.items()))
    if isinstance(obj, list):
        return tuple(_freeze(v) for v in obj)
    return obj


@dataclass(frozen=True, eq=False)
class OpaqueBytesBytesCodec(OpaqueCodec, BytesBytesCodec):
    json: dict[str, Any] = field(default_factory=dict)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OpaqueCodec) and _freeze(self.json) == _freeze(other.json)

    def __hash__(self) -> int:
        return hash(_freeze(self.json))

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:  # pragma: no cover
        raise TypeError("opaque codecs are built by zarrcy.codecs.codec_from_dict")

    to_dict = OpaqueCodec.to_dict
    compute_encoded_size = OpaqueCodec.compute_encoded_size

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        return data

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        return data


@dataclass(frozen=True, eq=False)
class OpaqueArrayArrayCodec(OpaqueCodec, ArrayArrayCodec):
    json: dict[str, Any] = field(default_factory=dict)

    __eq__ = OpaqueBytesBytesCodec.__eq__
    __hash__ = OpaqueBytesBytesCodec.__hash__

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:  # pragma: no cover
        raise TypeError("opaque codecs are built by zarrcy.codecs.codec_from_dict")

    to_dict = OpaqueCodec.to_dict
    compute_encoded_size = OpaqueCodec.compute_encoded_size

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk

    supports_encoded_view: ClassVar[bool] = True

    def encoded_view(self, out: np.ndarray) -> np.ndarray:
        return out
