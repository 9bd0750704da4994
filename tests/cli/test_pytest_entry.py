"""``python -m pytest`` from an unbuilt clone tests the installed zarrcy (issue 14 item 9):
the root conftest.py keeps the source tree (no compiled kernels) off ``sys.path``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _installed_zarrcy_outside(root: str) -> str | None:
    """Where ``import zarrcy`` goes in a clean interpreter started outside the tree."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([sys.executable, "-c", "import zarrcy, os; print(os.path.dirname(zarrcy.__file__))"],
                       cwd="/", env=env, capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def test_python_m_pytest_in_an_unbuilt_clone_uses_the_installed_package(tmp_path):
    installed = _installed_zarrcy_outside(ROOT)
    if installed is None:
        pytest.skip("no installed zarrcy in this interpreter (developer setup with PYTHONPATH only)")
    clone = tmp_path / "clone"
    ignore = shutil.ignore_patterns("*.so", "*.pyd", "*.c", "__pycache__", "build", "*.egg-info")
    shutil.copytree(os.path.join(ROOT, "zarrcy"), clone / "zarrcy", ignore=ignore)
    for f in ("conftest.py", "pyproject.toml"):
        shutil.copy(os.path.join(ROOT, f), clone / f)
    (clone / "tests").mkdir()
    (clone / "tests" / "test_kernels_import.py").write_text(
        "import os\nimport zarrcy\nfrom zarrcy._kernels import _deflate, _grid\n\n\n"
        "def test_which():\n    print('ZARRCY', os.path.dirname(zarrcy.__file__))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for cmd in ([sys.executable, "-m", "pytest"], [os.path.join(os.path.dirname(sys.executable), "pytest")]):
        if not os.path.exists(cmd[0]):
            continue
        r = subprocess.run([*cmd, "-p", "no:cacheprovider", "-s", "tests"], cwd=clone, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
        assert f"under test: {installed} (installed package" in r.stdout
        assert f"ZARRCY {installed}" in r.stdout
