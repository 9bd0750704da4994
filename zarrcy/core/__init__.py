"""zarr-python's ``zarr.core.*`` import paths for the names user code imports from
there (``from zarr.core.group import GroupMetadata``), so renaming ``zarr`` to
``zarrcy`` keeps such imports working.  zarrcy's own code never imports this package."""
