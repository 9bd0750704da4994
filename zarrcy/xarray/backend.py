"""``engine="zarrcy"``: the xarray backend entry point (``open_dataset``,
``open_groups_as_dict``, ``open_datatree``); registered in pyproject.toml as
``zarrcy.xarray:ZarrcyBackendEntrypoint``."""

from __future__ import annotations

import os
from typing import Any, Iterable

import xarray as xr
from xarray.backends import BackendEntrypoint
from xarray.backends.store import StoreBackendEntrypoint

from zarrcy.nodes.group import Group
from zarrcy.xarray.store import ZarrcyDataStore, open_zarrcy_store

__all__ = ["ZarrcyBackendEntrypoint"]

_DECODE_ARGS = ("mask_and_scale", "decode_times", "concat_characters", "decode_coords", "drop_variables",
                "use_cftime", "decode_timedelta")


class ZarrcyBackendEntrypoint(BackendEntrypoint):
    """``engine="zarrcy"``: Zarr v3 and v2 hierarchies read through zarrcy."""

    description = "Open Zarr v3/v2 stores (local, s3://, gs://, az://, https://) with zarrcy"
    url = "https://github.com/zarrcy/zarrcy"
    open_dataset_parameters = ("filename_or_obj", *_DECODE_ARGS, "group", "storage_options",
                               "use_consolidated", "use_zarr_fill_value_as_mask")
    supports_groups = True

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, (str, os.PathLike)):
            _, ext = os.path.splitext(os.fspath(filename_or_obj).rstrip("/"))
            return ext == ".zarr"
        return False

    def open_dataset(
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: Any = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        storage_options: dict | None = None,
        use_consolidated: bool | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
    ) -> xr.Dataset:
        g = open_zarrcy_store(filename_or_obj, group=group, storage_options=storage_options,
                              use_consolidated=use_consolidated)
        store = ZarrcyDataStore(g, use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
        return StoreBackendEntrypoint().open_dataset(
            store, mask_and_scale=mask_and_scale, decode_times=decode_times, concat_characters=concat_characters,
            decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        storage_options: dict | None = None,
        use_consolidated: bool | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        **decode: Any,
    ) -> dict[str, xr.Dataset]:
        root = open_zarrcy_store(filename_or_obj, group=group, storage_options=storage_options,
                                 use_consolidated=use_consolidated)
        groups = [("/", root)] + [("/" + p, n) for p, n in root.walk() if isinstance(n, Group)]
        out: dict[str, xr.Dataset] = {}
        for path, g in groups:
            store = ZarrcyDataStore(g, use_zarr_fill_value_as_mask=use_zarr_fill_value_as_mask)
            out[path] = StoreBackendEntrypoint().open_dataset(store, **decode)
        return out

    def open_datatree(
        self,
        filename_or_obj: Any,
        **kwargs: Any,
    ) -> Any:
        return xr.DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))
