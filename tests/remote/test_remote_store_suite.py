"""The shared store suite (tests/storage/test_store_suite.py) run against ``ObjectStore``
over the local moto S3 server: the test functions are loaded from that file and pick up
this directory's ``factory``/``store`` fixtures."""

from __future__ import annotations

import importlib.util
import pathlib

_SUITE = pathlib.Path(__file__).parent.parent / "storage" / "test_store_suite.py"
_spec = importlib.util.spec_from_file_location("_zarrcy_shared_store_suite", _SUITE)
_mod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_mod)

# store-kind tables (capability flags), and the dict-model test that builds its own local stores
_SKIP = {"test_capability_flags", "test_matches_dict_model"}
for _name in dir(_mod):
    if _name.startswith("test_") and _name not in _SKIP:
        globals()[_name] = getattr(_mod, _name)
