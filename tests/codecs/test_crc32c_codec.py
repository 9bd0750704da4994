"""crc32c codec (v3-codec-crc32c.rst)."""

from __future__ import annotations

import crc32c
import numpy as np
import pytest
from codec_helpers import make_spec, same, sample
from hypothesis import given
from hypothesis import strategies as st

from zarrcy.codecs import Crc32cCodec, parse_codecs
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.errors import CorruptChunkError, MetadataError

SPEC = make_spec((10,), "uint8")


def _reference_crc32c(data: bytes) -> int:
    """Bitwise CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


@given(st.binary(max_size=300))
def test_checksum_matches_reference(data: bytes) -> None:
    enc = bytes(Crc32cCodec().encode(data, SPEC))
    assert enc[:-4] == data
    assert int.from_bytes(enc[-4:], "little") == _reference_crc32c(data) == crc32c.crc32c(data)
    assert bytes(Crc32cCodec().decode(enc, SPEC)) == data


def test_rfc3720_vector() -> None:
    # RFC 3720 B.4: 32 bytes of zeros -> 0x8A9136AA
    assert int.from_bytes(bytes(Crc32cCodec().encode(bytes(32), SPEC))[-4:], "little") == 0x8A9136AA


def test_mismatch_and_truncation_are_corrupt() -> None:
    enc = bytearray(Crc32cCodec().encode(b"hello world", SPEC))
    for bad in (enc[:-1], enc[:3], b"", bytes(enc[:-1]) + bytes([enc[-1] ^ 1]), b"x" + bytes(enc[1:])):
        with pytest.raises(CorruptChunkError):
            Crc32cCodec().decode(bytes(bad), SPEC)


def test_pipeline_sizes_and_interop() -> None:
    spec = make_spec((4, 4), "float32")
    p = CodecPipeline.from_codecs([{"name": "bytes", "configuration": {"endian": "little"}}, "crc32c"], spec)
    assert p.compute_encoded_size() == 64 + 4
    a = sample((4, 4), "float32")
    enc = bytes(p.encode(a))
    assert enc[:-4] == a.astype("<f4").tobytes()
    assert int.from_bytes(enc[-4:], "little") == crc32c.crc32c(enc[:-4])
    assert same(p.decode(enc), a)
    with pytest.raises(CorruptChunkError):
        p.decode(enc[:-4] + b"\0\0\0\0")
    with pytest.raises(CorruptChunkError):
        p.decode(enc + b"\0")


def test_configuration_rejected() -> None:
    with pytest.raises(MetadataError, match=r"codecs\[1\]\.configuration\.x"):
        parse_codecs(["bytes", {"name": "crc32c", "configuration": {"x": 1}}], SPEC)
    assert parse_codecs(["bytes", {"name": "crc32c", "configuration": {}}], SPEC)[1] == Crc32cCodec()
    assert Crc32cCodec().to_dict() == {"name": "crc32c"}
