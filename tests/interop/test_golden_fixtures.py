"""Committed arrays written by zarr-python 3.4 and tensorstore (tests/fixtures/, made by
tests/fixtures/make_fixtures.py) read bit-exactly by zarrcy — without the peers installed —
and, where the peers' compressor is byte-deterministic (numcodecs' zstd and blosc), zarrcy
writes the same chunk bytes for the same metadata and values."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

import zarrcy

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))
from cases import CASES, expected, path  # noqa: E402


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    return a.view(np.uint8) if a.dtype.kind != "b" else a


@pytest.mark.parametrize("name", sorted(CASES))
def test_fixture_reads_bit_exactly(name: str) -> None:
    a = zarrcy.open_array(str(path(name)), mode="r")
    want = expected(name)
    assert a.shape == want.shape
    assert a.dtype == want.dtype.newbyteorder("=") or a.dtype == want.dtype
    got = a[...]
    np.testing.assert_array_equal(_bits(got.astype(want.dtype)), _bits(want))
    # a partial, strided read through the same chunks (and inner chunks of shards)
    sel = tuple(slice(1, None, 2) for _ in want.shape)
    np.testing.assert_array_equal(_bits(np.ascontiguousarray(a[sel]).astype(want.dtype)),
                                  _bits(np.ascontiguousarray(want[sel])))


def test_fixtures_are_committed_and_complete() -> None:
    for name in CASES:
        p = path(name)
        doc = p / ("zarr.json" if CASES[name].get("zarr_format", 3) == 3 else ".zarray")
        assert doc.is_file(), f"{doc} missing: run tests/fixtures/make_fixtures.py and commit its output"
        assert any(f.is_file() and f.name not in ("zarr.json", ".zarray", ".zattrs") for f in p.rglob("*")), name


@pytest.mark.parametrize("name", ["v3-zstd-bool", "v3-c8-zstd", "v3-f4-be-transpose-blosc-crc"])
def test_same_chunk_bytes_as_zarr_python(name: str, tmp_path: Path) -> None:
    src = path(name)
    doc = json.loads((src / "zarr.json").read_text())
    out = tmp_path / "a.zarr"
    a = zarrcy.create_array(str(out), metadata=doc)
    a[...] = expected(name)
    theirs = {f.relative_to(src).as_posix(): f.read_bytes() for f in src.rglob("*") if f.is_file() and f.name != "zarr.json"}
    ours = {f.relative_to(out).as_posix(): f.read_bytes() for f in out.rglob("*") if f.is_file() and f.name != "zarr.json"}
    assert sorted(ours) == sorted(theirs)
    for k in theirs:
        assert ours[k] == theirs[k], k
    shutil.rmtree(out)
