"""``zarrcy demo``: write a sample hierarchy, read it back, verify, print sizes and timings."""

from __future__ import annotations

import os
import shutil
import time
from typing import Any

import numpy as np


def _field(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    """A smooth field plus small noise, rounded to 3 decimals (compresses like real data)."""
    rng = np.random.default_rng(seed)
    grids = np.meshgrid(*[np.linspace(0, 4 * np.pi, n, dtype=np.float32) for n in shape], indexing="ij", sparse=True)
    f = np.zeros(shape, dtype=np.float32)
    for k, g in enumerate(grids):
        f += np.sin(g * (k + 1) / 2).astype(np.float32)
    f += rng.normal(0, 0.01, shape).astype(np.float32)
    return np.round(f, 3)


def _du(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


#: file that marks a directory as written by ``zarrcy demo`` (so a rerun may replace it)
MARKER = ".zarrcy-demo"
#: what the demo writes at the top of its output directory (and all it ever deletes)
_OWN = frozenset((MARKER, "zarr.json", "dense", "volume", "quantized", "legacy_v2", "converted"))


class DemoOutputError(Exception):
    """The ``--output`` directory cannot be used without deleting someone else's files."""


def prepare_output(output: str) -> None:
    """Make ``output`` ready for the demo without ever deleting what zarrcy did not create:
    a missing or empty directory is used as is; an earlier demo output (it has the marker
    file and nothing but what the demo writes) is cleared; anything else is refused."""
    if not os.path.exists(output):
        os.makedirs(output)
    elif not os.path.isdir(output):
        raise DemoOutputError(f"--output {output}: exists and is not a directory")
    entries = set(os.listdir(output))
    if entries:
        if MARKER not in entries:
            raise DemoOutputError(
                f"--output {output}: the directory is not empty and is not an earlier zarrcy demo output; "
                "nothing was deleted (give a new or empty directory)")
        foreign = sorted(entries - _OWN)
        if foreign:
            raise DemoOutputError(
                f"--output {output}: an earlier demo output, but it also holds {', '.join(foreign[:5])}"
                f"{' ...' if len(foreign) > 5 else ''}, which the demo did not write; nothing was deleted")
        for name in sorted(entries - {MARKER}):
            path = os.path.join(output, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)
    with open(os.path.join(output, MARKER), "w") as f:
        f.write("written by `zarrcy demo`; a later `zarrcy demo` may replace this directory\n")


def run_demo(output: str = "zarrcy-demo.zarr", size: str = "default") -> int:
    import sys

    from zarrcy import api as zarrcy  # the public functions, as a user would call them
    from zarrcy._version import __version__
    from zarrcy.codecs import BloscCodec, GzipCodec, ZstdCodec
    from zarrcy.config import config
    from zarrcy.convert.engine import convert

    n = 2048 if size == "default" else 256
    n3 = 256 if size == "default" else 64
    try:
        prepare_output(output)
    except DemoOutputError as e:
        print(f"zarrcy demo: error: {e}", file=sys.stderr)
        return 2
    root = zarrcy.open_group(output, mode="w-", attributes={"title": "zarrcy demo", "created_by": f"zarrcy {__version__}"})
    dense = _field((n, n))
    vol = (np.clip(_field((n3, n3, n3), 1) + 3, 0, 6) * 600).astype(np.uint16)
    # (array name, data, create_array keywords, how to check what reads back)
    cases: list[tuple[str, np.ndarray, dict[str, Any], str]] = [
        ("dense/gzip1", dense, dict(chunks=(n // 4, n // 4), compressors=[GzipCodec(level=1)]), "exact"),
        ("dense/zstd", dense, dict(chunks=(n // 4, n // 4), compressors=[ZstdCodec(level=3)]), "exact"),
        ("dense/blosc_lz4", dense, dict(chunks=(n // 4, n // 4), compressors=[BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4)]), "exact"),
        ("volume/sharded", vol, dict(chunks=(32, 32, 32), shards=(n3 // 2,) * 3, compressors=[GzipCodec(level=1)]), "exact"),
    ]
    quant = dense.astype(np.float64)
    quant[::97, ::89] = np.nan
    cases.append((
        "quantized/uint8", quant,
        dict(chunks=(n // 4, n // 4), fill_value=float("nan"),
             filters=[{"name": "scale_offset", "configuration": {"offset": -2.5, "scale": 50}},
                      {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                              "out_of_range": "clamp",
                                                              "scalar_map": {"encode": [["NaN", 255]], "decode": [[255, "NaN"]]}}}],
             compressors=[GzipCodec(level=1)]),
        "quantized",
    ))
    print(f"zarrcy {__version__} demo -> {os.path.abspath(output)}  (threads: {config()['threads']})")
    print(f"{'array':<18} {'shape':<18} {'dtype':<8} {'MB':>7} {'stored MB':>10} {'write s':>8} {'read s':>8}  check")
    ok = True
    for name, data, kw, check in cases:
        t0 = time.perf_counter()
        a = root.create_array(name, shape=data.shape, dtype=data.dtype, **kw)
        a[...] = data
        t1 = time.perf_counter()
        back = zarrcy.open_array(output, path=name, mode="r")[...]
        t2 = time.perf_counter()
        if check == "exact":
            good = np.array_equal(back, data)
        else:
            finite = np.isfinite(data)
            good = bool(np.array_equal(np.isnan(back), ~finite)) and float(np.max(np.abs(back[finite] - data[finite]))) <= 0.5 / 50 + 1e-12
        ok &= good
        stored = _du(os.path.join(output, name))
        print(f"{name:<18} {str(data.shape):<18} {str(data.dtype):<8} {data.nbytes / 1e6:7.1f} {stored / 1e6:10.2f} "
              f"{t1 - t0:8.3f} {t2 - t1:8.3f}  {'ok' if good else 'MISMATCH'}")
    # the batch-conversion job: a Zarr v2 array (as zarr-python 2 writes it) -> sharded v3
    import numcodecs

    v2 = zarrcy.create_array(os.path.join(output, "legacy_v2"), shape=dense.shape, dtype="<f4", chunks=(n // 8, n // 8),
                             zarr_format=2, compressors=numcodecs.Blosc("lz4", 5, numcodecs.Blosc.SHUFFLE))
    v2[...] = dense
    t0 = time.perf_counter()
    report = convert(os.path.join(output, "legacy_v2"), output, dst_path="converted/v3_sharded",
                            shards=(n // 2, n // 2), chunks=(n // 8, n // 8), compressor="zstd:3", verify=True,
                            progress=False)
    t1 = time.perf_counter()
    good = np.array_equal(zarrcy.open_array(output, path="converted/v3_sharded", mode="r")[...], dense)
    ok &= good
    print(f"{'convert v2->v3':<18} {str(dense.shape):<18} {'float32':<8} {dense.nbytes / 1e6:7.1f} "
          f"{_du(os.path.join(output, 'converted')) / 1e6:10.2f} {t1 - t0:8.3f} {'':>8}  {'ok' if good else 'MISMATCH'}"
          f"  (sharded {n // 2}x{n // 2}, zstd 3, verified)")
    _ = report
    print()
    print(root.tree())
    print("\nverified: all arrays read back as written" if ok else "\nverification FAILED")
    return 0 if ok else 1
