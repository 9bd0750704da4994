"""Chunk key encodings (v3-chunk-key-encoding-default.rst, v3-chunk-key-encoding-v2.rst).

* ``default``: ``"c"`` then ``<sep><index>`` per dimension (``"c/1/0"``; 0-d: ``"c"``);
  separator ``"/"`` (default) or ``"."``.
* ``v2``: indices joined by the separator (``"1.0"``; 0-d: ``"0"``); separator ``"."``
  (default) or ``"/"``.

Both encode and decode; :meth:`decode_chunk_key` returns ``None`` for keys that are not
chunk keys of the encoding (so listings can skip them).  ``to_dict`` always writes the
separator explicitly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from zarrcy.errors import MetadataError, UnknownExtensionError, expected
from zarrcy.metadata._parse import config_dict, name_path, parse_extension

__all__ = ["ChunkKeyEncoding", "DefaultChunkKeyEncoding", "V2ChunkKeyEncoding", "parse_chunk_key_encoding"]

Separator = Literal["/", "."]


def _index(part: str) -> int | None:
    """A canonical ASCII decimal (no sign, no leading zeros) -> int, else None."""
    if not part or not part.isascii() or not part.isdigit() or (part[0] == "0" and len(part) > 1):
        return None
    return int(part)


@dataclass(frozen=True)
class ChunkKeyEncoding:
    """Base of the chunk key encodings; ``separator`` is ``"/"`` or ``"."``."""

    separator: Separator
    name: ClassVar[str]
    default_separator: ClassVar[Separator]

    def __post_init__(self) -> None:
        if self.separator not in ("/", "."):
            raise MetadataError(expected("separator", "'/' or '.'", self.separator))

    def encode_chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        raise NotImplementedError

    def decode_chunk_key(self, key: str, ndim: int | None = None) -> tuple[int, ...] | None:
        """Grid coordinates of ``key``, or None if it is not a chunk key of this encoding
        (of rank ``ndim`` when given)."""
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"separator": self.separator}}

    @classmethod
    def from_dict(cls, data: Any, path: str = "chunk_key_encoding") -> ChunkKeyEncoding:
        return parse_chunk_key_encoding(data, path)


@dataclass(frozen=True)
class DefaultChunkKeyEncoding(ChunkKeyEncoding):
    separator: Separator = "/"
    name: ClassVar[str] = "default"
    default_separator: ClassVar[Separator] = "/"

    def encode_chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        if not chunk_coords:
            return "c"
        sep = self.separator
        return "c" + sep + sep.join(map(str, chunk_coords))

    def decode_chunk_key(self, key: str, ndim: int | None = None) -> tuple[int, ...] | None:
        if key == "c":
            return () if not ndim else None
        if key[:2] != "c" + self.separator:
            return None
        out = []
        for part in key[2:].split(self.separator):
            i = _index(part)
            if i is None:
                return None
            out.append(i)
        if ndim is not None and len(out) != ndim:
            return None
        return tuple(out)


@dataclass(frozen=True)
class V2ChunkKeyEncoding(ChunkKeyEncoding):
    separator: Separator = "."
    name: ClassVar[str] = "v2"
    default_separator: ClassVar[Separator] = "."

    def encode_chunk_key(self, chunk_coords: tuple[int, ...]) -> str:
        if not chunk_coords:
            return "0"
        return self.separator.join(map(str, chunk_coords))

    def decode_chunk_key(self, key: str, ndim: int | None = None) -> tuple[int, ...] | None:
        # "0" is both the 0-d key and the key of chunk (0,) of a 1-d array: without
        # ``ndim`` it decodes to (0,); with ndim=0 to ().
        if ndim == 0:
            return () if key == "0" else None
        out = []
        for part in key.split(self.separator):
            i = _index(part)
            if i is None:
                return None
            out.append(i)
        if ndim is not None and len(out) != ndim:
            return None
        return tuple(out)


_ENCODINGS: dict[str, type[ChunkKeyEncoding]] = {"default": DefaultChunkKeyEncoding, "v2": V2ChunkKeyEncoding}


def parse_chunk_key_encoding(value: Any, path: str = "chunk_key_encoding") -> ChunkKeyEncoding:
    """The ``chunk_key_encoding`` member (object or short-hand name) -> an encoding.

    Parsed by :func:`zarrcy.metadata._parse.parse_extension`: unknown names raise
    UnknownExtensionError; ``must_understand: false`` is not allowed for chunk key
    encodings (v3-core.rst "must_understand").
    """
    name, config, _ = parse_extension(value, path, ignorable=False, what="chunk key encoding")
    cls = _ENCODINGS.get(name)
    if cls is None:
        p = name_path(value, path)
        raise UnknownExtensionError(expected(p, f"a known chunk key encoding {tuple(_ENCODINGS)}", name), p)
    cfg = config_dict(config, path, ("separator",))
    sep = cfg.get("separator", cls.default_separator)
    if sep != "/" and sep != ".":
        raise MetadataError(expected(f"{path}.configuration.separator", "'/' or '.'", sep), f"{path}.configuration.separator")
    return cls(sep)
