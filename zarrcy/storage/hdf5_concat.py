"""The order of the files an HDF5Store joins along ``concat_dim`` (zarrcy/storage/hdf5.py):
sorted by their coordinate values, with non-monotonic coordinates, overlaps and gaps
refused.  Storage layer (layer 2)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zarrcy.storage.hdf5_cf import recoded, time_recoders
from zarrcy.storage.hdf5_errors import HDF5SourceError
from zarrcy.storage.hdf5_file import describe

__all__ = ["concat_values", "order_files"]


def _same_step(x: Any, y: Any, values: Any) -> bool:
    """Two steps of a --concat-dim coordinate are equal: exactly for integers and times;
    for floating-point values within 64 units in the last place of the largest magnitude
    among ``values`` and the steps (coordinates computed as ``start + i * step`` are
    rounded: a 1/24-day or 0.1 step never repeats exactly)."""
    dt = np.result_type(x, y)
    if dt.kind not in "fc":
        return bool(x == y)
    mag = max(float(np.max(np.abs(values))) if np.size(values) else 0.0, abs(float(x)), abs(float(y)))
    return abs(float(x) - float(y)) <= 64 * float(np.finfo(dt).eps) * mag


def concat_values(f: Any, dim: str) -> np.ndarray | None:
    """The 1-D ``dim`` coordinate of file ``f`` (None when it has none)."""
    try:
        ds = f.h5.get(dim)
    except (OSError, RuntimeError, KeyError, ValueError):
        ds = None
    if ds is None or not hasattr(ds, "shape") or len(ds.shape) != 1:
        return None
    try:
        with f.lock:
            return np.asarray(ds[...])
    except (OSError, RuntimeError, ValueError, TypeError) as e:
        raise HDF5SourceError(f"{f.path}: variable /{dim}: cannot read the --concat-dim coordinate: {e}") from None


def order_files(files_in: list[Any], dim: str, time_units: str | None) -> list[Any]:
    """The files sorted by their ``dim`` coordinate (CF time with per-file units compared
    on one unit, :func:`zarrcy.storage.hdf5_cf.time_recoders`); non-monotonic
    coordinates, overlaps and gaps (when the coordinate has a regular step) raise
    HDF5SourceError naming the file."""
    vals = [concat_values(f, dim) for f in files_in]
    if any(v is None for v in vals):
        if all(v is None for v in vals):
            return files_in  # no coordinate variable: the files stay in the order given
        bad = files_in[[v is None for v in vals].index(True)]
        raise HDF5SourceError(f"{bad.path}: variable /{dim}: expected a 1-D --concat-dim coordinate as in the "
                              "other files, received none")
    got = [v for v in vals if v is not None]
    assert len(got) == len(vals)  # all present (checked above)
    # CF time with per-file units: compared on one unit (its values are served alike)
    recode = time_recoders(files_in, dim, [describe(f, dim)[1] for f in files_in], time_units)
    if recode is not None:
        got = [v if fn is None else recoded(fn, v, f, dim) for f, v, fn in zip(files_in, got, recode)]
    for f, v in zip(files_in, got):
        if v.size > 1 and not bool(np.all(np.diff(v) > 0)):
            raise HDF5SourceError(f"{f.path}: variable /{dim}: expected strictly increasing --concat-dim "
                                  "coordinate values, received non-monotonic values")
    order = sorted(range(len(got)), key=lambda i: (got[i].size == 0, got[i][0] if got[i].size else 0))
    files = [files_in[i] for i in order]
    vs = [got[i] for i in order]
    steps: list[Any] = []
    for v in vs:
        if v is not None and v.size > 1:
            d = np.diff(v)
            steps.append(d[0] if all(_same_step(x, d[0], v) for x in d) else None)
    step = steps[0] if steps and all(x is not None and _same_step(x, steps[0], x) for x in steps) else None
    for i in range(1, len(files)):
        a, b = vs[i - 1], vs[i]
        if a is None or b is None or a.size == 0 or b.size == 0:
            continue
        if not b[0] > a[-1]:
            raise HDF5SourceError(
                f"{files[i].path}: variable /{dim}: expected values after those of {files[i - 1].path} "
                f"(last {a[-1].item()!r}), received an overlap (first {b[0].item()!r})")
        if step is not None and not _same_step(b[0] - a[-1], step, np.array([a[-1], b[0]])):
            raise HDF5SourceError(
                f"{files[i].path}: variable /{dim}: expected the next value {(a[-1] + step).item()!r} after "
                f"{files[i - 1].path}, received {b[0].item()!r} (a gap)")
    return files
