"""Regression (issue 12, item 4): decompression bombs through every decode path stop at
the chunk's expected decoded size.

Before the fix, a few-hundred-byte bz2 chunk of a 1 KiB v2 array inflated to gigabytes
before the size was compared (numcodecs decodes without a limit); so did v2 zlib/lzma,
v2 filter chains, zstd frames without a content size, v3 ``string``/``bytes`` chunks
with zstd (no decoded size to compare with), zip members compressed with bzip2 (a raw
MemoryError) and ``zarrcy check --data`` (read every chunk file whole).

Each case runs in its own process (forked from one runner that imported zarrcy once:
``_forkrun.py``) that builds a 512 MiB bomb (a few KB to 550 KB stored),
opens the array, resets its peak RSS (``_peak.py``: not ``ru_maxrss``, which a child
inherits from its parent), reads the chunk (refused with
CorruptChunkError) and checks that the peak RSS grew by at most
``2 x the chunk's decoded size + 64 MiB``.  Fixed-size chunks are 64 KiB (v2: large
enough that the stored-size guard, ~35 x the chunk, lets a 530 KB deflate bomb through
to the decoder) or 1 KiB (zip, check); for
variable-length chunks (no decoded size) the bound is ``max_chunk_bytes``, set to
32 MiB here.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import run_cases  # noqa: E402
from _peak import PEAK  # noqa: E402

SCRIPT = PEAK + textwrap.dedent('''
    import base64, bz2, json, lzma, os, sys, zipfile, zlib
    root, case = sys.argv[1], sys.argv[2]
    MIB = 1 << 20
    N = 512  # MiB of zeros in every bomb
    BZ2_512 = base64.b64decode(sys.argv[3])  # one bzip2 stream of 512 MiB of zeros

    def deflate_raw(n_mib=N):
        """A raw deflate stream of n_mib MiB of zeros, built from one repeated full-flush segment."""
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        z = bytes(MIB)
        first = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
        seg = c.compress(z) + c.flush(zlib.Z_FULL_FLUSH)
        return first + seg * (n_mib - 1) + b"\\x03\\x00"  # final empty fixed-Huffman block

    # the trailers' checksums are never reached (a capped decoder stops long before, an
    # uncapped one has inflated everything by then): zeros keep the bombs cheap to build
    def zlib_bomb():
        return b"\\x78\\xda" + deflate_raw() + bytes(4)

    def gzip_bomb(isize=None):
        size = (N * MIB) & 0xFFFFFFFF if isize is None else isize
        return b"\\x1f\\x8b\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\xff" + deflate_raw() + bytes(4) + size.to_bytes(4, "little")

    def bz2_bomb():  # one stream; several concatenated ones go through the same loop
        return BZ2_512

    def xz_bomb():
        return lzma.compress(bytes(16 * MIB), preset=0) * (N // 16)

    def zstd_bomb():  # one frame, no Frame_Content_Size, 128 KiB RLE blocks
        blocks = [((128 << 10) << 3 | 2 | (i == N * 8 - 1)).to_bytes(3, "little") + b"\\x00" for i in range(N * 8)]
        return bytes.fromhex("28b52ffd") + bytes([0x00, 0x38]) + b"".join(blocks)

    def v2_array(compressor, filters=None, dtype="|u1", shape=(1 << 16,), fill=0):
        os.makedirs(root, exist_ok=True)
        meta = {"zarr_format": 2, "shape": list(shape), "chunks": list(shape), "dtype": dtype,
                "compressor": compressor, "filters": filters, "fill_value": fill, "order": "C"}
        with open(root + "/.zarray", "w") as f:
            json.dump(meta, f)

    def write_chunk(key, data):
        os.makedirs(os.path.dirname(os.path.join(root, key)) or root, exist_ok=True)
        with open(os.path.join(root, key), "wb") as f:
            f.write(data)

    decoded = 1024 if case in ("zip-bzip2", "zip-deflate", "check-data") else 1 << 16
    if case == "v2-bz2":
        v2_array({"id": "bz2", "level": 9}); write_chunk("0", bz2_bomb())
    elif case == "v2-zlib":
        v2_array({"id": "zlib", "level": 1}); write_chunk("0", zlib_bomb())
    elif case == "v2-lzma":
        v2_array({"id": "lzma", "format": 1, "check": -1, "preset": None, "filters": None}); write_chunk("0", xz_bomb())
    elif case == "v2-gzip":
        v2_array({"id": "gzip", "level": 1}); write_chunk("0", gzip_bomb())
    elif case == "v2-filters-bz2":
        v2_array({"id": "bz2", "level": 9}, [{"id": "delta", "dtype": "|u1"}]); write_chunk("0", bz2_bomb())
    elif case == "v2-filters-zstd":
        v2_array({"id": "zstd", "level": 1}, [{"id": "delta", "dtype": "|u1"}]); write_chunk("0", zstd_bomb())
    elif case == "v2-filter-is-zlib":
        v2_array(None, [{"id": "zlib", "level": 1}]); write_chunk("0", zlib_bomb())
    elif case == "v2-vlen-bz2":
        v2_array({"id": "bz2", "level": 9}, [{"id": "vlen-utf8"}], dtype="|O", shape=(4,), fill="")
        write_chunk("0", bz2_bomb()); decoded = 32 * MIB
    elif case in ("v3-string-gzip", "v3-string-gzip-isize", "v3-string-zstd", "v3-bytes-zstd"):
        import zarrcy
        comp = zarrcy.codecs.Gzip(1) if "gzip" in case else zarrcy.codecs.ZstdCodec(level=1)
        zarrcy.create_array(root, shape=(4,), chunks=(4,), dtype=str if "string" in case else bytes,
                            compressors=[comp], fill_value="" if "string" in case else b"")
        bomb = zstd_bomb() if "zstd" in case else gzip_bomb(isize=16 if case.endswith("isize") else None)
        write_chunk("c/0", bomb); decoded = 32 * MIB
    elif case in ("zip-bzip2", "zip-deflate"):
        meta = {"zarr_format": 3, "node_type": "array", "shape": [1024], "data_type": "uint8",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1024]}},
                "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}
        method = zipfile.ZIP_BZIP2 if case == "zip-bzip2" else zipfile.ZIP_DEFLATED
        payload = BZ2_512 if case == "zip-bzip2" else deflate_raw()
        root = root + ".zip"
        with zipfile.ZipFile(root, "w") as z:
            z.writestr("zarr.json", json.dumps(meta))
            z.writestr("c/0", b"x" * 1024, compress_type=method)
        # swap the member's data for the bomb (sizes/CRC in the central directory: 1 KiB)
        raw = open(root, "rb").read()
        with zipfile.ZipFile(root) as z:
            info = z.getinfo("c/0")
        lh = info.header_offset
        nlen, elen = int.from_bytes(raw[lh + 26:lh + 28], "little"), int.from_bytes(raw[lh + 28:lh + 30], "little")
        start = lh + 30 + nlen + elen
        body = raw[:start] + payload
        cd = raw[start + info.compress_size:]
        # central directory: fix c/0's compressed size and every later offset
        delta = len(payload) - info.compress_size
        import struct
        cdb = bytearray(cd)
        i = cdb.find(b"PK\\x01\\x02")
        while i >= 0:
            name = bytes(cdb[i + 46:i + 46 + int.from_bytes(cdb[i + 28:i + 30], "little")])
            if name == b"c/0":
                struct.pack_into("<I", cdb, i + 20, len(payload))
            i = cdb.find(b"PK\\x01\\x02", i + 4)
        j = cdb.find(b"PK\\x05\\x06")
        struct.pack_into("<I", cdb, j + 16, int.from_bytes(cdb[j + 16:j + 20], "little") + delta)
        open(root, "wb").write(body + bytes(cdb))
    elif case == "check-data":
        import zarrcy
        zarrcy.create_array(root, shape=(1024,), chunks=(1024,), dtype="uint8")
        os.makedirs(root + "/c", exist_ok=True)
        with open(root + "/c/0", "wb") as f:
            f.truncate(3 << 30)  # sparse: 3 GiB on paper
    else:
        raise SystemExit(f"unknown case {case}")

    import zarrcy
    from zarrcy.errors import CorruptChunkError
    zarrcy.config(max_chunk_bytes=32 * MIB)
    if case == "check-data":
        from zarrcy.cli.check import check_store
        base = peak_reset()
        rc = check_store(root, data=True)
        assert rc == 1, rc
    else:
        a = zarrcy.open_array(root, mode="r")
        base = peak_reset()
        try:
            a[...]
        except CorruptChunkError as e:
            print("refused:", str(e)[:200])
        else:
            raise SystemExit("the bomb was decoded")
    grew = peak_growth(base)
    limit = 2 * decoded + 64 * MIB
    print(f"rss grew by {grew >> 20} MiB (limit {limit >> 20} MiB)")
    if grew > limit:
        raise SystemExit(f"peak RSS grew by {grew} bytes > {limit}")
    print("ok")
''')

BZ2_512 = (
    "QlpoOTFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQVkmU1kOCeLfAV+OQAD"
    "AAAAIIAAwgE1GQqAlqQqAlzFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQV"
    "kmU1kOCeLfAV+OQADAAAAIIAAwgE1GQqAlqQqAlzFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3wFfjkAAwAAACCAAM"
    "IBNRkKgJakKgJcxQVkmU1kOCeLfAV+OQADAAAAIIAAwgE1GQqAlqQqAlzFBWSZTWQ4J4t8BX45AAMAAAAggADCATUZCoCWpCoCXMUFZJlNZDgni3"
    "wFfjkAAwAAACCAAMIBNRkKgJakKgJcxQVkmU1kCGMe7APTw4ADAAAAEAAggADDMCapplUFIbVKgpDxdyRThQkIPy1I4"
)

CASES = [
    "v2-bz2", "v2-zlib", "v2-lzma", "v2-gzip", "v2-filters-bz2", "v2-filters-zstd", "v2-filter-is-zlib",
    "v2-vlen-bz2", "v3-string-gzip", "v3-string-gzip-isize", "v3-string-zstd", "v3-bytes-zstd",
    "zip-bzip2", "zip-deflate", "check-data",
]


@pytest.fixture(scope="module")
def bomb_results(tmp_path_factory):
    """Every case, each in its own (forked) process: ``_forkrun.py``."""
    dirs = {case: tmp_path_factory.mktemp(case) for case in CASES}
    return run_cases(SCRIPT, {case: [str(dirs[case] / "a"), case, BZ2_512] for case in CASES}, timeout=60 + 30 * len(CASES))


@pytest.mark.parametrize("case", CASES)
def test_bomb_is_refused_within_the_memory_bound(bomb_results, case):
    r = bomb_results[case]
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


# -- the capped decoders give numcodecs' results (in process) --------------------------
import bz2 as _bz2  # noqa: E402
import lzma as _lzma  # noqa: E402
import zipfile  # noqa: E402

import numcodecs  # noqa: E402
import numpy as np  # noqa: E402

from zarrcy.codecs import zstd as _zstd  # noqa: E402
from zarrcy.errors import CorruptChunkError  # noqa: E402
from zarrcy.v2.codecs import decode_capped  # noqa: E402

_PAYLOAD = (np.arange(50_000, dtype="<u4") % 251).tobytes() + bytes(range(256)) * 40

_CODECS = [
    {"id": "zlib", "level": 1}, {"id": "gzip", "level": 5}, {"id": "bz2", "level": 9},
    {"id": "lzma", "format": 1, "check": -1, "preset": None, "filters": None},
    {"id": "lzma", "format": 2, "check": -1, "preset": 1, "filters": None},
    {"id": "lzma", "format": 3, "check": -1, "preset": None, "filters": [{"id": _lzma.FILTER_LZMA2, "preset": 1}]},
    {"id": "zstd", "level": 3}, {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}, {"id": "lz4", "acceleration": 1},
    {"id": "shuffle", "elementsize": 4},  # no stream format: decoded by numcodecs, checked after
]


def _same(a, b) -> bool:
    return bytes(np.asarray(memoryview(a)).reshape(-1).view(np.uint8)) == bytes(np.asarray(memoryview(b)).reshape(-1).view(np.uint8))


@pytest.mark.parametrize("config", _CODECS, ids=lambda c: f"{c['id']}-{c.get('format', '')}")
def test_capped_decode_matches_numcodecs(config):
    codec = numcodecs.get_codec(dict(config))
    enc = bytes(memoryview(codec.encode(_PAYLOAD)).cast("B"))
    out = decode_capped(codec, enc, len(_PAYLOAD))
    assert _same(out, codec.decode(enc)) and _same(out, _PAYLOAD)
    with pytest.raises(CorruptChunkError, match="decoded bytes"):
        decode_capped(codec, enc, len(_PAYLOAD) - 1)
    if config["id"] in ("zlib", "gzip", "bz2", "lzma", "zstd"):
        with pytest.raises(CorruptChunkError):
            decode_capped(codec, enc[: len(enc) // 2], len(_PAYLOAD))  # truncated


@pytest.mark.parametrize("tail", [b"", b"\0" * 7, b"garbage!"])
@pytest.mark.parametrize("cid", ["zlib", "gzip", "bz2", "lzma"])
def test_several_streams_and_trailing_bytes_as_numcodecs(cid, tail):
    codec = numcodecs.get_codec({"id": cid})
    enc = bytes(memoryview(codec.encode(b"first ")).cast("B")) + bytes(memoryview(codec.encode(b"second")).cast("B")) + tail
    try:
        want = bytes(memoryview(codec.decode(enc)).cast("B"))
    except Exception:  # numcodecs refuses: so must zarrcy (as CorruptChunkError)
        with pytest.raises(CorruptChunkError):
            decode_capped(codec, enc, 100)
        return
    assert bytes(memoryview(decode_capped(codec, enc, 100)).cast("B")) == want


def test_zstd_fallback_bound_from_block_headers(monkeypatch):
    import subprocess as sp

    raw = _PAYLOAD
    r = sp.run(["zstd", "-q", "-c"], input=raw, capture_output=True)  # stdin: no content size
    if r.returncode != 0:
        pytest.skip("zstd command line tool not available")
    frame = r.stdout
    assert _zstd.frame_content_size(frame) is None
    for streaming in (True, False):
        monkeypatch.setattr(_zstd, "USE_STREAMING", streaming)
        assert bytes(_zstd.decompress_capped(frame, len(raw))) == raw
        with pytest.raises(CorruptChunkError):
            _zstd.decompress_capped(frame, 1000)
    # the fallback refuses from the headers alone when they allow far more than the cap
    monkeypatch.setattr(_zstd, "_FALLBACK_SLACK", 0)
    rle = bytes.fromhex("28b52ffd") + bytes([0x00, 0x38]) + b"".join(
        ((128 << 10) << 3 | 2 | (i == 99)).to_bytes(3, "little") + b"\0" for i in range(100))
    with pytest.raises(CorruptChunkError, match="block headers allow 13107200"):
        _zstd.decompress_capped(rle, 1 << 20)


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_zip_members_of_every_method_read_whole_and_ranged(tmp_path, method):
    from zarrcy.byte_range import RangeRequest, SuffixRequest
    from zarrcy.storage import ZipStore

    p = tmp_path / "m.zip"
    big = _PAYLOAD * 6  # > 1 MiB: more than one compressed piece for stored-like data
    with zipfile.ZipFile(p, "w", compression=method) as z:
        z.writestr("k", big)
        z.writestr("e", b"")
    with ZipStore(p) as s:
        assert s.get("k") == big and s.get("e") == b""
        assert s.get("k", RangeRequest(1000, 50)) == big[1000:1050]
        assert s.get("k", SuffixRequest(9)) == big[-9:]
