"""Nodes reach the API layer only through the NodeApi it injects (zarrcy/nodes/base.py;
docs/ARCHITECTURE.md): unpickling imports and registers it, so an Array or Group
unpickled in a fresh interpreter works fully, group child creation included."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np

import zarrcy
from zarrcy.nodes.base import node_api

CHILD = """
import pickle, sys
g, a = pickle.loads(sys.stdin.buffer.read())
assert "zarrcy.api" in sys.modules, "unpickling did not load the API layer"
b = g.create_array("made_in_child", shape=(3,), dtype="i2", fill_value=7)
print(a[...].tolist(), b[...].tolist(), g.read_only, a.read_only)
"""


def test_unpickled_nodes_in_a_fresh_process(tmp_path) -> None:
    g = zarrcy.open_group(str(tmp_path / "h.zarr"), mode="w")
    a = g.create_array("a", data=np.arange(4, dtype="u1"))
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(zarrcy.__file__)))
    out = subprocess.run([sys.executable, "-c", CHILD], input=pickle.dumps((g, a)), env=env,
                         capture_output=True, check=True, timeout=120)
    assert out.stdout.decode().split() == ["[0,", "1,", "2,", "3]", "[7,", "7,", "7]", "False", "False"]
    assert zarrcy.open_array(str(tmp_path / "h.zarr"), path="made_in_child", mode="r")[...].tolist() == [7, 7, 7]


def test_the_api_layer_registers_its_functions() -> None:
    api = node_api()
    assert api.create_array is zarrcy.create_array and api.create_group is zarrcy.create_group
    assert api.reopen_array.__module__ == "zarrcy.api" and api.reopen_group.__module__ == "zarrcy.api"
