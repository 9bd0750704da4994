"""Plain helpers of the string tests and the _vlen kernel tests (imported by name, like
tests/codecs/codec_helpers.py; it sits in tests/, whose conftest.py puts it on sys.path,
so tests/strings and tests/kernels both see it):
a slow, obviously-correct reference of the vlen chunk format (u32le count, then per item
u32le length + bytes) and hypothesis strategies for items."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import strategies as st

STRING = np.dtypes.StringDType()


def ref_encode(items: list) -> bytes:
    """Reference encoder: ``str`` items are UTF-8 encoded, ``bytes`` kept."""
    out = [struct.pack("<I", len(items))]
    for it in items:
        raw = it.encode("utf-8") if isinstance(it, str) else bytes(it)
        out.append(struct.pack("<I", len(raw)))
        out.append(raw)
    return b"".join(out)


def ref_decode(buf: bytes, utf8: bool) -> list:
    """Reference decoder; raises ValueError on any malformed input (strict)."""
    if len(buf) < 4:
        raise ValueError("short")
    (n,) = struct.unpack_from("<I", buf, 0)
    pos = 4
    items = []
    for _ in range(n):
        if pos + 4 > len(buf):
            raise ValueError("length field past the end")
        (k,) = struct.unpack_from("<I", buf, pos)
        pos += 4
        if pos + k > len(buf):
            raise ValueError("item past the end")
        raw = buf[pos : pos + k]
        pos += k
        items.append(raw.decode("utf-8") if utf8 else raw)  # UnicodeDecodeError is a ValueError
    if pos != len(buf):
        raise ValueError("trailing bytes")
    return items


# text: any code point except lone surrogates (not encodable as UTF-8, and not storable
# in StringDType); includes NUL, astral characters, combining marks
texts = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40)
blobs = st.binary(max_size=40)
