"""Node names and paths (v3-core.rst "Node names")."""

from __future__ import annotations

import pytest

from zarrcy.errors import MetadataError
from zarrcy.metadata import normalize_path, validate_node_name


@pytest.mark.parametrize("name", ["foo", "FOO", "a.b", "a-b_c", "...a", "a..", "é", "_x", "x__", "0"])
def test_valid_names(name: str) -> None:
    assert validate_node_name(name) == name


@pytest.mark.parametrize("name", ["", ".", "..", "...", "a/b", "/", "__x", "__zarr", "__", 3, None,
                                  # zarrcy's rules beyond the spec (issue 23.9)
                                  "zarr.json", ".zarray", ".zgroup", ".zattrs", ".zmetadata", "a\\b", "x\x00", "c:x"])
def test_invalid_names(name: object) -> None:
    with pytest.raises(MetadataError):
        validate_node_name(name)


@pytest.mark.parametrize(
    "path,expected",
    [("", ""), ("/", ""), ("foo", "foo"), ("/foo", "foo"), ("foo/", "foo"), ("/foo/bar/", "foo/bar"), ("a/b/c", "a/b/c")],
)
def test_normalize(path: str, expected: str) -> None:
    assert normalize_path(path) == expected


@pytest.mark.parametrize("path", ["a//b", "./a", "a/..", "a/./b", "a/__b", "__a", "//", "a//", "//a", ".", 5, None])
def test_normalize_rejects(path: object) -> None:
    with pytest.raises(MetadataError):
        normalize_path(path)
