"""Fixtures of the conversion tests; helpers live in convert_helpers.py."""

from __future__ import annotations

import pytest
from convert_helpers import make_v2_hierarchy


@pytest.fixture
def v2_tree(tmp_path):
    root = str(tmp_path / "src.zarr")
    expect = make_v2_hierarchy(root)
    return root, expect


@pytest.fixture(params=["zarr-python", "zarrcy"])
def v2_tree_any(tmp_path, request):
    """The fixture hierarchy written by zarr-python and by zarrcy's own v2 writer."""
    root = str(tmp_path / "src.zarr")
    expect = make_v2_hierarchy(root, request.param)
    return root, expect
