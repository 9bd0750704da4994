"""Which zarrcy the tests run against (loaded by pytest before any test module).

``python -m pytest`` (and IDEs) put the clone's directory first on ``sys.path``, and pytest
itself prepends this directory because of this file; a source tree that was installed with
``pip install .`` has no compiled kernels in it, so ``import zarrcy`` would find the bare
sources and fail (``cannot import name '_deflate' from 'zarrcy._kernels'``).  The rule:

* the source tree has its kernels compiled in place (``python setup.py build_ext
  --inplace``, the developer setup): test the source tree;
* it has not: drop it from ``sys.path`` and test the installed package (``pip install .``),
  unless ``PYTHONPATH`` names the tree (then: a message saying to build it in place);
* neither works: stop with a message saying what to run.

The header of the pytest run names the zarrcy under test.
"""

from __future__ import annotations

import glob
import importlib
import importlib.machinery
import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.abspath(__file__))
_KERNELS = os.path.join(ROOT, "zarrcy", "_kernels")


def _tree_is_built() -> bool:
    """Every ``_kernels/*.pyx`` has a compiled module for this interpreter beside it."""
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    for pyx in glob.glob(os.path.join(_KERNELS, "*.pyx")):
        base = os.path.splitext(pyx)[0]
        if not any(os.path.exists(base + s) for s in suffixes):
            return False
    return True


def _is_root(entry: str) -> bool:
    try:
        return os.path.realpath(entry or os.getcwd()) == os.path.realpath(ROOT)
    except OSError:  # pragma: no cover
        return False


def _select() -> str:
    if _tree_is_built():
        return "source tree (kernels compiled in place)"
    if any(_is_root(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p):
        # the developer asked for this tree explicitly: do not test another package instead
        raise pytest.UsageError(
            f"PYTHONPATH names the source tree {ROOT}, whose kernels are not all compiled: run "
            "`python setup.py build_ext --inplace` (or drop it from PYTHONPATH to test the installed package)")
    sys.path[:] = [p for p in sys.path if not _is_root(p)]
    for name in [m for m in sys.modules if m == "zarrcy" or m.startswith("zarrcy.")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    if importlib.util.find_spec("zarrcy") is None:
        raise pytest.UsageError(
            "zarrcy is not installed and this source tree has no compiled kernels: run `pip install \".[test]\"` "
            "(or, for development, `python setup.py build_ext --inplace`) first")
    return "installed package (the source tree has no compiled kernels)"


_WHICH = _select()
import zarrcy  # noqa: E402  (pins the selected package for every test module)

if _WHICH.startswith("installed") and _is_root(os.path.dirname(os.path.dirname(zarrcy.__file__))):
    raise pytest.UsageError("zarrcy resolves to the unbuilt source tree; run `pip install \".[test]\"` first")


def pytest_report_header(config):  # type: ignore[no-untyped-def]
    return f"zarrcy {zarrcy.__version__} under test: {os.path.dirname(zarrcy.__file__)} ({_WHICH})"
