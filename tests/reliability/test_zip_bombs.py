"""Regression: a deflated zip member is inflated only as far as the read needs.

Before the fix, ZipStore inflated every compressed member completely before looking at
the requested range or the declared size: a 1.5 MB archive whose chunk member inflates
to 1.5 GB of zeros made reading one element of a 1 KiB chunk allocate 1.5 GB
(here: 900 MB under an 800 MB address-space limit -> MemoryError).  Now a whole read inflates at most
``file_size + 1`` bytes (a member lying about its size is corrupt), a ranged read at most
the range's end, and the array layer asks for no more than the chunk can need.
"""

from __future__ import annotations

import functools
import io
import json
import lzma
import os
import sys
import textwrap
import zipfile
import zlib

import pytest

from zarrcy.errors import CorruptChunkError
from zarrcy.byte_range import RangeRequest, SuffixRequest
from zarrcy.storage import ZipStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import run  # noqa: E402

SCRIPT = textwrap.dedent('''
    import json, resource, sys, zipfile, zlib
    zp = sys.argv[1]
    MIB = bytes(1 << 20)


    class RepeatedBlock:
        """Deflates a stream of zero MiBs at the cost of one: after a full flush the
        compressor starts afresh (no reference reaches back past it), so every MiB
        compresses to the same bytes -- checked: two of them and the end inflate."""

        def __init__(self):
            self.c = zlib.compressobj(1, zlib.DEFLATED, -15)
            self.block = self.c.compress(MIB) + self.c.flush(zlib.Z_FULL_FLUSH)
            end = zlib.compressobj(1, zlib.DEFLATED, -15).flush()
            assert zlib.decompress(self.block * 2 + end, -15) == MIB * 2

        def compress(self, data):
            assert data == MIB
            return self.block

        def flush(self):
            return self.c.flush()

    meta = {"zarr_format": 3, "node_type": "array", "shape": [1024], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1024]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}
    with zipfile.ZipFile(zp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("zarr.json", json.dumps(meta))
        zipfile._get_compressor = lambda *args: RepeatedBlock()  # for c/0, in this child only
        with z.open("c/0", "w", force_zip64=True) as f:
            for _ in range(900):
                f.write(MIB)
    with zipfile.ZipFile(zp) as z:  # a real 900 MiB member (CRC over it all), ~0.5 MB stored
        info = z.getinfo("c/0")
        assert info.file_size == 900 << 20 and info.compress_size < 5 << 20, info
        with z.open("c/0") as f:
            assert f.read(3 << 20) == MIB * 3
    resource.setrlimit(resource.RLIMIT_AS, (800 << 20, 800 << 20))
    import zarrcy
    from zarrcy.errors import CorruptChunkError
    a = zarrcy.open_array(zp, mode="r")
    for sel in (0, slice(None)):
        try:
            a[sel]
        except CorruptChunkError as e:
            print("refused:", e)
        else:
            raise SystemExit("zip bomb chunk was read")
    print("ok")
''')


def test_zip_bomb_member_is_not_inflated(tmp_path):
    r = run(["-c", SCRIPT, tmp_path / "bomb.zip"], timeout=300)  # its own process, forked: ``_forkrun.py``
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def _zip_with(tmp_path, name: str, payload: bytes, declared: int | None = None):
    zp = tmp_path / "m.zip"
    with zipfile.ZipFile(zp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr(name, payload)
    if declared is not None:  # patch the declared size in the central directory
        raw = bytearray(zp.read_bytes())
        cd = raw.rfind(b"PK\x01\x02")
        raw[cd + 24 : cd + 28] = declared.to_bytes(4, "little")
        zp.write_bytes(bytes(raw))
    return ZipStore(zp, mode="r")


def test_ranges_of_deflated_members(tmp_path):
    payload = bytes(range(256)) * 64
    s = _zip_with(tmp_path, "k", payload)
    try:
        assert s.get("k") == payload
        assert s.get("k", RangeRequest(10, 20)) == payload[10:30]
        assert s.get("k", SuffixRequest(7)) == payload[-7:]
        assert s.get_partial_values([("k", RangeRequest(0, 3)), ("k", RangeRequest(100, 5))]) == [payload[:3], payload[100:105]]
        assert s.get_partial_values([("k", None), ("k", SuffixRequest(2))]) == [payload, payload[-2:]]
    finally:
        s.close()


@pytest.mark.parametrize("declared", [10, 1 << 20])
def test_member_lying_about_its_size_is_corrupt(tmp_path, declared):
    s = _zip_with(tmp_path, "k", bytes(100_000), declared=declared)
    try:
        with pytest.raises(CorruptChunkError):
            s.get("k")
    finally:
        s.close()


def test_truncated_deflate_stream_is_corrupt(tmp_path):
    payload = bytes(range(256)) * 64
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = comp.compress(payload) + comp.flush()
    zp = tmp_path / "t.zip"
    with zipfile.ZipFile(zp, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("k", payload)
    raw = zp.read_bytes()
    i = raw.find(data)
    assert i > 0
    # replace the last bytes of the stream with garbage of the same length
    bad = raw[: i + len(data) - 4] + b"\xff\xff\xff\xff" + raw[i + len(data) :]
    zp.write_bytes(bad)
    s = ZipStore(zp, mode="r")
    try:
        with pytest.raises(CorruptChunkError):
            s.get("k")
    finally:
        s.close()


class _CountingLZMA:
    """lzma.LZMADecompressor counting the bytes it produces."""

    produced = 0

    def __init__(self, *args, **kwargs) -> None:
        self._d = _REAL_LZMA(*args, **kwargs)

    def decompress(self, data, max_length=-1):
        out = self._d.decompress(data, max_length)
        type(self).produced += len(out)
        return out

    def __getattr__(self, name):
        return getattr(self._d, name)


_REAL_LZMA = lzma.LZMADecompressor


@functools.lru_cache(maxsize=None)
def _lzma_zip_bytes(payload_size: int, declared: int | None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_LZMA) as z:
        z.writestr("k", bytes(payload_size))
    raw = bytearray(buf.getvalue())
    if declared is not None:  # the size in the central directory (what zipfile reads)
        cd = raw.rfind(b"PK\x01\x02")
        raw[cd + 24 : cd + 28] = declared.to_bytes(4, "little")
    return bytes(raw)


def _lzma_zip(tmp_path, payload_size: int, declared: int | None) -> ZipStore:
    zp = tmp_path / "lzma.zip"
    zp.write_bytes(_lzma_zip_bytes(payload_size, declared))
    return ZipStore(zp, mode="r")


@pytest.mark.parametrize("how", ["get", "range", "capped read"])
def test_lzma_bomb_lying_about_its_size_is_refused_without_inflating(tmp_path, monkeypatch, how):
    """Issue 23.11: 4 MiB of zeros in ~0.6 KB of LZMA, declared as 4 GiB - 1: refused from
    the directory entry alone (the declared size is beyond any LZMA stream of that
    compressed size), not after inflating the whole stream (50 s of CPU for a big one)."""
    s = _lzma_zip(tmp_path, 4 << 20, declared=(1 << 32) - 1)
    monkeypatch.setattr(lzma, "LZMADecompressor", _CountingLZMA)
    _CountingLZMA.produced = 0
    try:
        with pytest.raises(CorruptChunkError, match="more than compression method"):
            if how == "get":
                s.get("k")
            elif how == "range":
                s.get("k", RangeRequest(1 << 30, 10))
            else:
                s.get("k", RangeRequest(0, (8 << 30) + 1))  # an array's read of a vlen chunk
    finally:
        s.close()
    assert _CountingLZMA.produced == 0


def test_honest_lzma_member_still_reads(tmp_path):
    s = _lzma_zip(tmp_path, 1 << 20, declared=None)
    try:
        assert s.get("k") == bytes(1 << 20)
        assert s.get("k", RangeRequest(5, 3)) == b"\0\0\0"
    finally:
        s.close()
