"""Shared helpers for the metadata tests.

Until ``zarrcy.codecs.parse_codecs`` exists, ``codecs`` are parsed by a tiny fake that
knows the core codec names and echoes their JSON; once the real registry is
importable the tests use it.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from zarrcy.errors import MetadataError, UnknownCodecError

KNOWN_CODECS = {"bytes", "transpose", "gzip", "crc32c", "blosc", "zstd", "sharding_indexed", "cast_value", "scale_offset"}


def _real_parse_codecs() -> Any:
    try:
        from zarrcy.codecs import parse_codecs  # noqa: F401
    except ImportError:
        return None
    return parse_codecs


class FakeCodec:
    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self.d)


def fake_parse_codecs(value: list[Any], spec: Any, path: str = "codecs") -> list[FakeCodec]:
    out = []
    for i, c in enumerate(value):
        d = {"name": c} if isinstance(c, str) else c
        if not isinstance(d, dict) or not isinstance(d.get("name"), str):
            raise MetadataError(f"{path}[{i}]: expected a codec, received {c!r}")
        if d["name"] not in KNOWN_CODECS and d.get("must_understand", True):
            raise UnknownCodecError(f"{path}[{i}]: unknown codec {d['name']!r}")
        out.append(FakeCodec(d))
    return out


REAL_CODECS = _real_parse_codecs() is not None


@pytest.fixture(autouse=True)
def _codecs(monkeypatch: pytest.MonkeyPatch) -> None:
    if not REAL_CODECS:
        import zarrcy.metadata.array as array_mod

        monkeypatch.setattr(array_mod, "_parse_codecs", fake_parse_codecs)


def _array_doc(**overrides: Any) -> dict[str, Any]:
    """A valid minimal array document; ``overrides`` replace (or with None, delete) keys."""
    doc: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [10, 20],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5, 5]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    }
    for k, v in overrides.items():
        if v is _DELETE:
            doc.pop(k, None)
        else:
            doc[k] = v
    return doc


_DELETE = object()


@pytest.fixture
def array_doc() -> Any:
    """``array_doc(**overrides)`` -> a fresh valid array document (``DELETE`` removes a key)."""
    return _array_doc


@pytest.fixture
def DELETE() -> object:
    return _DELETE
