"""The stored objects of a local array (chunks and shards, not zarr.json), for tests that
compare what two writers stored."""

from __future__ import annotations

import os


def chunk_files(root: str) -> dict[str, bytes]:
    """Every file under ``root`` but ``zarr.json`` (relative path -> bytes)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f != "zarr.json":
                p = os.path.join(dirpath, f)
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root)] = fh.read()
    return out
