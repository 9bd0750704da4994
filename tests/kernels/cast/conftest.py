"""The cast reference (cast_reference.py) as a fixture, for tests that prefer one."""

from __future__ import annotations

from typing import Any

import pytest

import cast_reference


@pytest.fixture(scope="session")
def ref() -> Any:
    return cast_reference
