"""The ``crc32c`` codec (spec: ../shared/specs/v3-codec-crc32c.rst).

``bytes -> bytes``: appends the CRC32C (RFC 3720) of the input as a 4-byte
little-endian unsigned integer.  No configuration.  Decoding verifies the
checksum (mismatch -> CorruptChunkError) and returns a zero-copy view of the
payload.  The checksum runs in the ``crc32c`` package, which releases the GIL.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import crc32c as _crc32c
import numpy as np

from zarrcy.codecs._base import ArraySpec, BytesBytesCodec
from zarrcy.codecs._common import NoConfiguration, as_uint8
from zarrcy.codecs._native import CRC32C, Step
from zarrcy.errors import CorruptChunkError, expected

__all__ = ["Crc32cCodec"]


@dataclass(frozen=True)
class Crc32cCodec(NoConfiguration, BytesBytesCodec):
    name: ClassVar[str] = "crc32c"

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size + 4

    def max_encoded_size(self, n: int) -> int:
        return n + 4

    def native_step(self, spec: ArraySpec | None) -> Step:
        return CRC32C

    def encode(self, data: Any, spec: ArraySpec) -> memoryview:
        src = as_uint8(data)
        n = src.shape[0]
        out = np.empty(n + 4, dtype=np.uint8)
        out[:n] = src
        out[n:] = np.frombuffer(_crc32c.crc32c(src).to_bytes(4, "little"), dtype=np.uint8)
        return memoryview(out)

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        src = as_uint8(data)
        n = src.shape[0] - 4
        if n < 0:
            raise CorruptChunkError(expected("crc32c", "at least 4 bytes", int(src.shape[0])))
        payload = src[:n]
        stored = int.from_bytes(src[n:].tobytes(), "little")
        actual = _crc32c.crc32c(payload)
        if stored != actual:
            raise CorruptChunkError(expected("crc32c checksum", f"{stored:#010x} (stored)", f"{actual:#010x}"))
        return payload

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> np.ndarray:
        out = self.decode(data, spec)
        if out.shape[0] != size:
            raise CorruptChunkError(expected("crc32c payload", f"{size} bytes", int(out.shape[0])))
        return out
