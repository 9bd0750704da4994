"""``zarrcy convert``: Zarr v1/v2/v3 -> (sharded, quantized) Zarr v3 or v2, restartable,
verifiable, on threads or a Dask cluster.  See :mod:`zarrcy.convert.engine`.

``zarrcy.convert(src, dst, **options) -> ConvertReport`` calls
:func:`zarrcy.convert.engine.convert`: this package is itself callable, so
``zarrcy.convert`` is the same object whether it was reached as the package or through
the lazy ``zarrcy.convert`` attribute, and ``zarrcy.convert.ConvertError`` etc. always work.
"""

import sys as _sys
import types as _types
from typing import Any

from zarrcy.convert.cli import convert_main
from zarrcy.convert.engine import ConvertError, ConvertOptions, ConvertReport
from zarrcy.convert.engine import convert as _convert

__all__ = ["convert", "convert_main", "ConvertError", "ConvertOptions", "ConvertReport"]


class _CallableModule(_types.ModuleType):
    def __call__(self, src: Any, dst: Any, **kwargs: Any) -> ConvertReport:
        """Same as :func:`zarrcy.convert.engine.convert`."""
        return _convert(src, dst, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
#: ``from zarrcy.convert import convert`` / ``zarrcy.convert``: this callable package
convert = _sys.modules[__name__]
