"""``zarrcy convert``: Zarr v1/v2/v3 -> (sharded, quantized) Zarr v3 or v2, restartable,
verifiable, on threads or a Dask cluster.  See :mod:`zarrcy.convert.engine`."""

from zarrcy.convert.cli import convert_main
from zarrcy.convert.engine import ConvertError, ConvertOptions, ConvertReport, convert

__all__ = ["convert", "convert_main", "ConvertError", "ConvertOptions", "ConvertReport"]


# ``zarrcy.convert`` is both this package and the function ``zarrcy.convert(...)``: once the
# submodule is imported, the package attribute is the module, so the module is callable too.
import sys as _sys
import types as _types


class _CallableModule(_types.ModuleType):
    def __call__(self, src, dst, **kwargs):  # type: ignore[no-untyped-def]
        return convert(src, dst, **kwargs)


_sys.modules[__name__].__class__ = _CallableModule
