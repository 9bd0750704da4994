"""xarray integration: ``xr.open_dataset(url, engine="zarrcy")``, ``xr.open_datatree(...,
engine="zarrcy")`` and :func:`to_zarrcy` (a Dataset writer).

Reading follows xarray's own zarr engine (docs: "Zarr Encoding Specification") so both
engines decode a store to equal datasets:

* dimensions: v3 ``dimension_names``; v2 the ``_ARRAY_DIMENSIONS`` attribute (hidden);
* fill value: for v2 arrays the Zarr ``fill_value`` becomes the ``_FillValue``
  attribute (CF masking); for v3 it does not (xarray's v3 default), but a
  ``_FillValue`` *attribute* is decoded (floats are stored base64 of a little-endian
  float64 so NaN/inf survive JSON);
* CF decoding (scale_factor/add_offset, times, coordinates) is xarray's own:
  variables go through ``StoreBackendEntrypoint`` like every xarray backend.

Data is lazy: a :class:`ZarrcyBackendArray` answers xarray's outer (orthogonal) indexers
with zarrcy's ``oindex``.  ``encoding["preferred_chunks"]`` is the shard shape (the
chunk shape when unsharded), so ``chunks={}`` gives Dask one task per stored object.

Strings: ``string`` arrays (vlen-utf8) are read as ``StringDType`` variables,
``bytes`` arrays as object arrays of ``bytes``, and the fixed-length types xarray's zarr
writer uses for ``U<n>`` / ``S<n>`` variables (``fixed_length_utf32`` /
``null_terminated_bytes``) as ``U<n>`` / ``S<n>``, as xarray's zarr engine reads them.

Writing: :func:`to_zarrcy` is ``Dataset.to_zarr`` for zarrcy -- same CF encoding (xarray's
zarr coders), same modes (``w``, ``w-``, ``a``, ``a-``, ``r+``), ``append_dim`` (new values
encoded with the stored encoding), ``region`` (dict or ``"auto"``), Dask data written
block by block on shard boundaries.  Its output reads back identically through xarray's
zarr engine, and it appends to / writes regions of stores xarray wrote (v3 and v2).

Modules: :mod:`~zarrcy.xarray.backend` (the ``engine="zarrcy"`` entry point),
:mod:`~zarrcy.xarray.store` (a group as an xarray data store, arrays as lazy backend
arrays), :mod:`~zarrcy.xarray.writer` (:func:`to_zarrcy`) and ``_conventions`` (dimension
names and ``_FillValue`` attributes, shared by reader and writer).  This package re-exports
their public names.

Uses zarrcy's public API only (layer 8; see docs/ARCHITECTURE.md).
"""

from zarrcy.xarray._conventions import DIMENSION_KEY
from zarrcy.xarray.backend import ZarrcyBackendEntrypoint
from zarrcy.xarray.store import ZarrcyBackendArray, ZarrcyDataStore, open_zarrcy_store
from zarrcy.xarray.writer import WriteMode, to_zarrcy

__all__ = [
    "ZarrcyBackendEntrypoint",
    "ZarrcyBackendArray",
    "ZarrcyDataStore",
    "to_zarrcy",
    "open_zarrcy_store",
    "WriteMode",
    "DIMENSION_KEY",
]
