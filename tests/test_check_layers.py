"""ci/check_layers.py finds what it promises (issue 15 item 1): cycles held together by
function-level imports, cycles through a package's ``__init__``, imports of the package
root and upward imports; ``TYPE_CHECKING`` imports do not count.  Each case is a tiny
fake ``zarrcy`` package in a temporary directory; the last test runs the real one."""

from __future__ import annotations

import importlib.util
import pathlib
import textwrap

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "ci" / "check_layers.py"


@pytest.fixture(scope="module")
def checker():
    spec = importlib.util.spec_from_file_location("check_layers", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _package(tmp_path: pathlib.Path, files: dict[str, str]) -> pathlib.Path:
    root = tmp_path / "zarrcy"
    for rel, text in {"__init__.py": "", **files}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return root


def _check(checker, root):
    graph, bad = checker.build_graph(root)
    return checker.cycles(graph), bad


def test_function_level_import_closes_a_cycle(checker, tmp_path) -> None:
    root = _package(tmp_path, {
        "nodes/__init__.py": "",
        "nodes/group.py": "def make():\n    from zarrcy.api import create_group\n    return create_group()\n",
        "api.py": "from zarrcy.nodes.group import make\n\ndef create_group():\n    return make\n",
    })
    cycles, bad = _check(checker, root)
    assert cycles == [["zarrcy.api", "zarrcy.nodes.group"]]
    assert any("zarrcy.nodes.group (layer 6) imports zarrcy.api (layer 7)" in b for b in bad)


def test_type_checking_imports_do_not_count(checker, tmp_path) -> None:
    root = _package(tmp_path, {
        "metadata/__init__.py": "",
        "metadata/data_type.py": "from zarrcy.metadata import fill_value\n",
        "metadata/fill_value.py": (
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    from zarrcy.metadata.data_type import DataType\n"
        ),
    })
    assert _check(checker, root) == ([], [])


def test_a_package_init_that_imports_upward_is_a_cycle(checker, tmp_path) -> None:
    # codecs import metadata._parse, which runs metadata/__init__, whose lazy
    # __getattr__ imports the codecs again: a cycle through the package's __init__
    root = _package(tmp_path, {
        "metadata/__init__.py": "def __getattr__(name):\n    from zarrcy.codecs import gzip\n    return gzip\n",
        "metadata/_parse.py": "",
        "codecs/__init__.py": "",
        "codecs/gzip.py": "from zarrcy.metadata._parse import *\n",
    })
    cycles, _ = _check(checker, root)
    assert cycles == [["zarrcy.codecs.gzip", "zarrcy.metadata"]]


def test_importing_the_package_root_is_refused(checker, tmp_path) -> None:
    root = _package(tmp_path, {"casting.py": "def f():\n    import zarrcy\n    return zarrcy.open\n"})
    _, bad = _check(checker, root)
    assert len(bad) == 1 and "imports the package root zarrcy" in bad[0]


def test_the_package_passes(checker, capsys) -> None:
    assert checker.main([]) == 0, capsys.readouterr().out
