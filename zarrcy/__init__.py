"""zarrcy: Zarr v3 for Python with typed Cython hot paths."""

from zarrcy.config import config
from zarrcy.errors import *  # noqa: F403

__version__ = "0.1.0"
