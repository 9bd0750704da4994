"""Shared helpers of the reliability suite (issue 7).

* ``slow`` tests are skipped unless ``ZARRCY_SLOW=1`` (the default run still exercises
  every guarantee, with fewer iterations; see ``iterations``).
* ``fuzz_targets`` loads ``ci/fuzz/targets.py`` (the atheris targets) as a module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

import zarrcy

REPO = Path(__file__).resolve().parents[2]
SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")


def iterations(default: int, slow: int) -> int:
    """How many repetitions a stress test runs: ``slow`` with ZARRCY_SLOW=1."""
    return slow if SLOW else default


def pytest_collection_modifyitems(config, items):
    if SLOW:
        return
    skip = pytest.mark.skip(reason="slow: set ZARRCY_SLOW=1")
    for item in items:
        if "slow" in item.keywords and str(item.fspath).startswith(str(Path(__file__).parent)):
            item.add_marker(skip)


def load_fuzz_targets():
    name = "zarrcy_fuzz_targets"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "ci" / "fuzz" / "targets.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def restore_config():
    """Snapshot zarrcy.config() and restore it after the test."""
    before = zarrcy.config()
    yield
    zarrcy.config(**before)
