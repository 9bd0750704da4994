"""Regression (fuzz finding): a zstd frame without Frame_Content_Size plus one trailing
byte made numcodecs' streaming decompression (used when the header has no content size)
loop forever.  zarrcy now decompresses such frames into the known-size destination and
walks the frame/block headers first (``check_frames``), so malformed input is refused
quickly; valid frames without a content size (other writers' streaming output) still
decode.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.zstd import check_frames
from zarrcy.errors import CorruptChunkError

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import run  # noqa: E402

REPRO = Path(__file__).resolve().parents[2] / "ci" / "fuzz" / "reproducers" / "codec_zstd" / "no-content-size-trailing-byte-hang"
_MAGIC = bytes.fromhex("28b52ffd")


def _pipeline(n: int = 64) -> CodecPipeline:
    return CodecPipeline.from_codecs(
        [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
        ArraySpec((n,), np.dtype("uint8"), np.uint8(0)),
    )


def _raw_frame(payload: bytes, last: bool = True) -> bytes:
    """A frame without Frame_Content_Size holding one raw block (window 1 KiB)."""
    assert len(payload) <= 1024
    header = ((len(payload) << 3) | (1 if last else 0)).to_bytes(3, "little")
    return _MAGIC + bytes([0x00, 0x00]) + header + payload


def test_fuzz_input_is_refused_quickly():
    code = (
        "import sys, numpy as np\n"
        "from zarrcy.codecs._base import ArraySpec\n"
        "from zarrcy.codecs.pipeline import CodecPipeline\n"
        "from zarrcy.errors import CorruptChunkError\n"
        "p = CodecPipeline.from_codecs([{'name': 'bytes', 'configuration': {'endian': 'little'}}, {'name': 'zstd', 'configuration': {'level': 3, 'checksum': True}}],"
        " ArraySpec((4, 4), np.dtype('int32'), np.int32(0)))\n"
        "data = open(sys.argv[1], 'rb').read()[1:]\n"
        "for f in (p.decode, lambda d: p.decode_into(d, np.empty((4, 4), np.int32))):\n"
        "    try:\n"
        "        f(data)\n"
        "    except CorruptChunkError:\n"
        "        pass\n"
        "print('ok')\n"
    )
    r = run(["-c", code, REPRO], timeout=60)  # a forked child (``_forkrun.py``), killed on a hang
    assert r.stdout.strip() == "ok", r.stderr


def test_frames_without_content_size_still_decode():
    payload = bytes(range(64))
    p = _pipeline(64)
    frame = _raw_frame(payload)
    assert p.decode(frame).tobytes() == payload
    out = np.empty(64, np.uint8)
    p.decode_into(frame, out)
    assert out.tobytes() == payload
    # two frames, and a skippable frame in between
    two = _raw_frame(payload[:10]) + (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"xyz" + _raw_frame(payload[10:])
    check_frames(two)
    assert p.decode(two).tobytes() == payload


@pytest.mark.parametrize("cut", [1, 3, 6, 9, 20, 70])
def test_truncated_or_padded_frames_are_refused(cut):
    frame = _raw_frame(bytes(range(64)))
    p = _pipeline(64)
    for bad in (frame[:-cut] if cut < len(frame) else frame[:1], frame + frame[:cut]):
        with pytest.raises(CorruptChunkError):
            check_frames(bad)
        with pytest.raises(CorruptChunkError):
            p.decode(bad)
        with pytest.raises(CorruptChunkError):
            p.decode_into(bad, np.empty(64, np.uint8))
