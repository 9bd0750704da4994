"""Helpers for the Zarr v2/v1 tests: fixtures written by zarr-python 3.4 (zarr_format=2)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest


@pytest.fixture
def zp():
    """zarr-python with its v2/v3-interop warnings silenced (pytest runs with -W error)."""
    zarr = pytest.importorskip("zarr")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield zarr
