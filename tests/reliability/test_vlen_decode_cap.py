"""Regression (issue 23, item 8): variable-length chunks are capped *while* inflating by
a limit derived from the chunk (``zarrcy.codecs._limits.decode_cap``), not only by
``max_chunk_bytes`` (8 GiB by default).

Before the fix, with the default configuration, a few-KB zstd stream in a 4-element
``string`` chunk inflated to all its 64 MiB before the vlen header was checked (1.59 GB
in the campaign), and a gzip member whose trailer claims 3 GiB made the libdeflate route
allocate 3 GiB.  Now such a chunk decodes to at most
``4 + 4 n + max(n * max_vlen_element_bytes, 16 MiB)`` bytes (about 16 MiB here): the
decoders get the cap before they start, and the error names the options that raise it.
Peak memory is measured with tracemalloc (numpy's buffers are traced).
"""

from __future__ import annotations

import gzip
import json
import os
import tracemalloc

import numpy as np
import pytest

import zarrcy
from zarrcy.codecs import _limits
from zarrcy.codecs._limits import VLEN_MIN_BUDGET, decode_cap
from zarrcy.codecs._base import ArraySpec
from zarrcy.errors import CorruptChunkError

MIB = 1 << 20


def _zstd_bomb(n_mib: int) -> bytes:
    """One zstd frame without Frame_Content_Size: n_mib MiB of zeros in 128 KiB RLE blocks."""
    n = n_mib * 8
    blocks = [((128 << 10) << 3 | 2 | (i == n - 1)).to_bytes(3, "little") + b"\x00" for i in range(n)]
    return bytes.fromhex("28b52ffd") + bytes([0x00, 0x38]) + b"".join(blocks)


def _gzip_claiming(data: bytes, isize: int) -> bytes:
    g = bytearray(gzip.compress(data, 1))
    g[-4:] = isize.to_bytes(4, "little")
    return bytes(g)


def _vlen(items: list[bytes]) -> bytes:
    out = bytearray(len(items).to_bytes(4, "little"))
    for it in items:
        out += len(it).to_bytes(4, "little") + it
    return bytes(out)


def _put(root: str, key: str, data: bytes) -> None:
    path = os.path.join(root, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def _peak_of(fn):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            fn()
        except CorruptChunkError as e:
            err = e
        else:
            err = None
        return tracemalloc.get_traced_memory()[1], err
    finally:
        tracemalloc.stop()


def _v3_string(root: str, comp) -> None:
    zarrcy.create_array(root, shape=(4,), chunks=(4,), dtype=str, compressors=[comp], fill_value="")


@pytest.mark.parametrize("kind", ["zstd", "gzip-isize"])
def test_v3_string_bomb_stops_at_the_vlen_cap(tmp_path, kind):
    root = str(tmp_path / "a")
    if kind == "zstd":
        _v3_string(root, zarrcy.codecs.ZstdCodec(level=1))
        _put(root, "c/0", _zstd_bomb(64))
    else:
        _v3_string(root, zarrcy.codecs.Gzip(1))
        _put(root, "c/0", _gzip_claiming(_vlen([b"a", b"b", b"c", b"d"]), 3 << 30))
    a = zarrcy.open_array(root, mode="r")
    peak, err = _peak_of(lambda: a[...])
    assert err is not None, "the bomb was decoded"
    assert "c/0" in str(err)
    if kind == "zstd":  # the decoder stopped at the cap and says how to raise it
        assert "max_vlen_element_bytes" in str(err), err
    assert peak < 40 * MIB, f"peak {peak >> 20} MiB"


def test_v2_object_bomb_stops_at_the_vlen_cap(tmp_path):
    root = tmp_path / "a"
    root.mkdir()
    meta = {"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "|O", "compressor": {"id": "zstd", "level": 1},
            "filters": [{"id": "vlen-utf8"}], "fill_value": "", "order": "C"}
    (root / ".zarray").write_text(json.dumps(meta))
    (root / "0").write_bytes(_zstd_bomb(64))
    a = zarrcy.open_array(str(root), mode="r")
    peak, err = _peak_of(lambda: a[...])
    assert err is not None and "max_vlen_element_bytes" in str(err), err
    assert peak < 40 * MIB, f"peak {peak >> 20} MiB"


def test_long_values_read_after_raising_the_option(tmp_path, monkeypatch):
    monkeypatch.setattr(_limits, "VLEN_MIN_BUDGET", MIB)  # a 1 MiB floor: small values here
    root = str(tmp_path / "a")
    _v3_string(root, zarrcy.codecs.ZstdCodec(level=1))
    a = zarrcy.open_array(root, mode="a")
    big = "x" * (MIB + 100)  # one value above the cap of a 4-element chunk (floor 1 MiB)
    a[0] = big
    with pytest.raises(CorruptChunkError, match="max_vlen_element_bytes"):
        a[...]
    with zarrcy.config.set(max_vlen_element_bytes=MIB):
        assert a[0] == big and a[1] == ""


def test_cap_formula():
    string = np.dtype(np.dtypes.StringDType())
    spec = ArraySpec((1000,), string, "")
    with zarrcy.config.set(max_vlen_element_bytes=64 << 10):
        assert decode_cap(spec) == 4 + 4000 + 1000 * (64 << 10)
        assert decode_cap(ArraySpec((4,), string, "")) == 4 + 16 + VLEN_MIN_BUDGET
        assert decode_cap(ArraySpec((4,), np.dtype("u1"), 0)) == zarrcy.config.get("max_chunk_bytes")
        with zarrcy.config.set(max_chunk_bytes=MIB):
            assert decode_cap(spec) == MIB
    with pytest.raises(ValueError, match="max_vlen_element_bytes"):
        zarrcy.config.set(max_vlen_element_bytes=-1)
