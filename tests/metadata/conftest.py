"""Shared helpers for the metadata tests.

``codecs`` are always parsed by the real registry (no fallback: a broken codec layer
must fail these tests, not be papered over).
"""

from __future__ import annotations

from typing import Any

import pytest



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
