"""``zarrcy check --data`` and bit rot (issue 22 item 9): per array, whether its codec
chain detects a damaged stored chunk -- checked by flipping bits in a stored chunk of each
chain.  A chain reported as detecting must turn every flip into an error (or the same
values: damage to bits the decoder ignores); a chain reported as not detecting must have a
flip that decodes, without an error, to different values (the silent case the report warns
about).  Deterministic: every 3rd bit of the chunk, no randomness in the outcome."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np
import pytest

import zarrcy
from zarrcy.cli import main
from zarrcy.cli.integrity import chain_protection

N = 32  # one chunk of float64 values, incompressible: compressors store most of it as is


def _values() -> np.ndarray:
    return np.random.default_rng(7).normal(0, 1, N)


def _v3(path: str, codecs: list[dict[str, Any]]) -> str:
    doc = {"zarr_format": 3, "node_type": "array", "shape": [N], "data_type": "float64",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [N]}},
           "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
           "fill_value": 0.0, "codecs": codecs, "attributes": {}}
    a = zarrcy.create_array(path, metadata=doc, overwrite=True)
    a[...] = _values()
    return os.path.join(path, "c", "0")


def _v2(path: str, compressor: dict[str, Any] | None) -> str:
    zarrcy.create_array(path, zarr_format=2, shape=(N,), dtype="float64", chunks=(N,),
                        compressors=[] if compressor is None else [compressor], data=_values(), overwrite=True)
    return os.path.join(path, "0")


_BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
_SHARD = {"name": "sharding_indexed", "configuration": {
    "chunk_shape": [N // 4], "codecs": [_BYTES, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
    "index_codecs": [_BYTES, {"name": "crc32c"}], "index_location": "end"}}
CHAINS: list[tuple[str, Any, bool]] = [
    ("v3 bytes", [_BYTES], False),
    ("v3 zstd", [_BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}], False),
    ("v3 zstd checksum", [_BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": True}}], True),
    ("v3 gzip", [_BYTES, {"name": "gzip", "configuration": {"level": 5}}], True),
    ("v3 crc32c", [_BYTES, {"name": "crc32c"}], True),
    ("v3 zstd+crc32c", [_BYTES, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}, {"name": "crc32c"}],
     True),
    ("v3 blosc lz4", [_BYTES, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle",
                                                                  "typesize": 8, "blocksize": 0}}], False),
    ("v3 sharded zstd", [_SHARD], False),
    ("v3 sharded crc32c", [{"name": "sharding_indexed", "configuration": {
        **_SHARD["configuration"], "codecs": [_BYTES, {"name": "crc32c"}]}}], True),
    ("v2 zlib", {"id": "zlib", "level": 1}, True),
    ("v2 zstd", {"id": "zstd", "level": 1}, False),
    ("v2 zstd checksum", {"id": "zstd", "level": 1, "checksum": True}, True),
    ("v2 bz2", {"id": "bz2", "level": 1}, True),
    ("v2 lzma xz", {"id": "lzma", "format": 1, "check": -1, "preset": None, "filters": None}, True),
    ("v2 lz4", {"id": "lz4", "acceleration": 1}, False),
    ("v2 none", None, False),
]


def _make(tmp_path: Any, name: str, chain: Any) -> tuple[str, str]:
    path = str(tmp_path / name.replace(" ", "_"))
    key = _v2(path, chain) if name.startswith("v2") else _v3(path, chain)
    return path, key


def _flips(path: str, key: str) -> tuple[int, int, int]:
    """(detected, harmless, silent) over single-bit flips of the stored chunk."""
    with open(key, "rb") as f:
        orig = f.read()
    want = _values()
    arr = zarrcy.open_array(path, mode="r")  # reads the chunk's bytes again at every read
    detected = harmless = silent = 0
    try:
        for bit in range(0, 8 * len(orig), 7):
            bad = bytearray(orig)
            bad[bit // 8] ^= 1 << (bit % 8)
            with open(key, "wb") as f:
                f.write(bad)
            try:
                got = arr[...]
            except zarrcy.errors.ZarrcyError:
                detected += 1
                continue
            if got.tobytes() == want.tobytes():
                harmless += 1
            else:
                silent += 1
    finally:
        with open(key, "wb") as f:
            f.write(orig)
    return detected, harmless, silent


@pytest.mark.parametrize("name,chain,detects", CHAINS, ids=[c[0] for c in CHAINS])
def test_flipped_bits_detected_as_reported(tmp_path: Any, capsys: pytest.CaptureFixture[str], name: str, chain: Any,
                                           detects: bool) -> None:
    path, key = _make(tmp_path, name, chain)
    assert main(["check", path, "--data", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    (entry,) = rep["bit_rot"]
    assert entry["detects_bit_rot"] is detects, entry
    assert (entry["hint"] is None) is detects
    detected, harmless, silent = _flips(path, key)
    if detects:
        assert silent == 0 and detected > 0, (detected, harmless, silent)
    else:
        assert silent > 0, (detected, harmless, silent)


def _damage(key: str) -> None:
    """One bit flipped in the middle of a stored object."""
    with open(key, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0x10
        f.seek(0)
        f.write(data)


def test_text_report_and_a_damaged_unchecksummed_chunk(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: garbage in a zstd chunk without checksum decodes silently (exit 0)
    -- and the report says so, with the command for a checksummed copy; the same damage in
    a crc32c-protected chunk is a problem (exit 1)."""
    path, key = _make(tmp_path, "v3 zstd", CHAINS[1][1])
    _damage(key)
    assert main(["check", path, "--data"]) == 0
    out = capsys.readouterr().out
    assert "NOT detected" in out and "zstd (checksum false)" in out and "+crc32c" in out
    path2, key2 = _make(tmp_path, "v3 crc32c", CHAINS[4][1])
    _damage(key2)
    assert main(["check", path2, "--data"]) == 1
    out = capsys.readouterr().out
    assert "detected by crc32c" in out and "CorruptChunkError" in out


def test_chain_protection_table() -> None:
    assert chain_protection([{"name": "bytes"}, {"name": "crc32c"}])["by"] == ["crc32c"]
    p = chain_protection([_SHARD])
    assert p["chunks"] is False and p["index"] is True
    p = chain_protection([_SHARD, {"name": "crc32c"}])
    assert p["chunks"] is True and p["index"] is True
    assert chain_protection([{"id": "lzma", "format": 2}], v2=True)["chunks"] is False
    assert chain_protection([{"id": "lzma", "format": 1, "check": 0}], v2=True)["chunks"] is False
    assert chain_protection([{"name": "numcodecs.adler32"}])["chunks"] is True
    assert chain_protection([{"id": "blosc", "cname": "zlib"}], v2=True)["chunks"] is False
