"""zarrcy benchmarks: ``python -m bench [--quick] [workload ...]``.

Benchmarks run against the *installed* zarrcy (like the tests), side by side with the
peers (zarr-python, zarr-python + zarrs pipeline, tensorstore) in one process.
"""

import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# ``python -m bench`` puts the repo root first on sys.path; drop it so that ``import
# zarrcy`` finds the installed (compiled) package, not the source tree.  An editable
# install still maps to the tree through its own finder.
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.getcwd()) != _root]
