"""Shared helpers of the fixed-length string tests: slow, obviously-correct references
of the chunk formats zarr-python 3.4 writes for numpy ``U<n>`` (``fixed_length_utf32``:
``n`` UTF-32 code units per element in the bytes codec's byte order, NUL-padded) and
``S<n>`` (``null_terminated_bytes``: ``n`` bytes per element, NUL-padded), and
hypothesis strategies for their values.  Exposed as the session fixture ``ref``."""

from __future__ import annotations

import struct
from types import SimpleNamespace

import pytest
from hypothesis import strategies as st

#: values that exercise the formats: empty, ASCII, BMP, beyond the BMP, NUL inside
TEXTS = ["", "a", "naïve", "日本", "🙂🚀", "a\x00b", "\U0010FFFF", "\u0301x", "end "]
BTEXTS = [b"", b"a", b"\x00z", b"\xff\xfe", b"a\x00b", b"\x01\x02\x03"]


def ref_encode_utf32(values: list[str], n: int, endian: str) -> bytes:
    fmt = "<I" if endian == "little" else ">I"
    out = []
    for v in values:
        assert len(v) <= n
        out.extend(struct.pack(fmt, ord(c)) for c in v)
        out.append(b"\x00" * 4 * (n - len(v)))
    return b"".join(out)


def ref_decode_utf32(buf: bytes, n: int, endian: str) -> list[str]:
    """Raises ValueError at the first code unit that is not a Unicode scalar value."""
    fmt = "<I" if endian == "little" else ">I"
    assert len(buf) % (4 * n) == 0
    out = []
    for e in range(len(buf) // (4 * n)):
        units = [struct.unpack_from(fmt, buf, 4 * (e * n + k))[0] for k in range(n)]
        for u in units:
            if u > 0x10FFFF or 0xD800 <= u <= 0xDFFF:
                raise ValueError(e)
        while units and units[-1] == 0:
            units.pop()
        out.append("".join(map(chr, units)))
    return out


def ref_encode_ntb(values: list[bytes], n: int) -> bytes:
    return b"".join(v + b"\x00" * (n - len(v)) for v in values)


def ref_decode_ntb(buf: bytes, n: int) -> list[bytes]:
    return [buf[i:i + n].rstrip(b"\x00") for i in range(0, len(buf), n)]


def texts(n: int):
    """Strings numpy keeps as they are in ``U<n>``: at most n code points, no
    surrogates, no trailing NUL (numpy drops trailing NULs)."""
    chars = st.characters(exclude_categories=("Cs",))
    return st.text(alphabet=chars, max_size=n).map(lambda s: s.rstrip("\x00"))


def blobs(n: int):
    return st.binary(max_size=n).map(lambda b: b.rstrip(b"\x00"))


@pytest.fixture(scope="session")
def ref() -> SimpleNamespace:
    return SimpleNamespace(
        encode_utf32=ref_encode_utf32, decode_utf32=ref_decode_utf32, encode_ntb=ref_encode_ntb,
        decode_ntb=ref_decode_ntb, texts=texts, blobs=blobs, TEXTS=TEXTS, BTEXTS=BTEXTS,
    )
