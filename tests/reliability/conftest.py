"""Shared helpers of the reliability suite (issue 7).

* ``slow`` tests are skipped unless ``ZARRCY_SLOW=1`` (the default run still exercises
  every guarantee, with fewer iterations).
* ``restore_config`` snapshots ``zarrcy.config()`` and restores it.

Test modules here do not import this file (``conftest`` is not a unique module name
in tests/); they read ``ZARRCY_SLOW`` themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import zarrcy

REPO = Path(__file__).resolve().parents[2]
SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")


def pytest_collection_modifyitems(config, items):
    if SLOW:
        return
    skip = pytest.mark.skip(reason="slow: set ZARRCY_SLOW=1")
    for item in items:
        if "slow" in item.keywords and str(item.fspath).startswith(str(Path(__file__).parent)):
            item.add_marker(skip)


@pytest.fixture
def restore_config():
    """Snapshot zarrcy.config() and restore it after the test."""
    before = zarrcy.config()
    yield
    zarrcy.config(**before)
