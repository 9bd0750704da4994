"""The ``zstd`` codec (spec: ../shared/specs/ext-codec-zstd.md).

``bytes -> bytes``, Zstandard frames (RFC 8878).  Configuration:

* ``level``: integer -131072..22; 0 = the library's default level.
* ``checksum``: optional boolean (a content checksum in the frame), default false.
  The spec says it "should be omitted if false", but zarr-python 3.4 and tensorstore
  both write ``"checksum": false``; zarrcy writes it always, like them, so that the
  metadata of the default chain is byte-for-byte theirs.  Both forms are read.

Engine: numcodecs.zstd (the ``zstandard`` package is not a dependency); both its
compress and decompress release the GIL.  With a known decoded size, frames are
decompressed straight into the destination after the frame header's content size
has been checked against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.config import get as _config_get
from zarrcy.codecs._base import ArraySpec, BytesBytesCodec
from zarrcy.codecs._common import as_uint8, config_dict, get_bool, get_int, max_compressed_size, nbytes_of
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["ZstdCodec", "frame_content_size"]

_MAGIC = 0xFD2FB528


def _numcodecs_zstd() -> Any:
    import numcodecs.zstd

    return numcodecs.zstd


def frame_content_size(data: Any) -> int | None:
    """Frame_Content_Size of the first frame (RFC 8878, 3.1.1.1), or None if absent.

    Raises CorruptChunkError if ``data`` does not start with a complete frame header.
    """
    src = as_uint8(data)
    if src.shape[0] < 6 or int.from_bytes(src[:4].tobytes(), "little") != _MAGIC:
        raise CorruptChunkError(expected("zstd", "a zstd frame (magic 28 b5 2f fd)", bytes(src[:4]).hex(" ")))
    fhd = int(src[4])
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    did = (0, 1, 2, 4)[fhd & 3]
    fcs = (1 if single else 0, 2, 4, 8)[fcs_flag]
    pos = 5 + (0 if single else 1) + did
    if fcs == 0:
        return None
    if src.shape[0] < pos + fcs:
        raise CorruptChunkError(expected("zstd", "a complete frame header", "truncated data"))
    v = int.from_bytes(src[pos : pos + fcs].tobytes(), "little")
    return v + 256 if fcs == 2 else v


def check_frames(data: Any) -> None:
    """Walk the frames and block headers (RFC 8878, 3.1.1) without decoding; raise
    CorruptChunkError unless ``data`` is a sequence of complete frames (skippable
    frames allowed).  Run before numcodecs' streaming decompression (content size not
    in the header), which never returns on some truncated or trailing-garbage input."""
    src = bytes(as_uint8(data))
    n = len(src)
    pos = 0
    while pos < n:
        if n - pos < 8:
            raise CorruptChunkError(expected("zstd", "complete frames", f"{n - pos} trailing bytes"))
        magic = int.from_bytes(src[pos : pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            pos += 8 + int.from_bytes(src[pos + 4 : pos + 8], "little")
            continue
        if magic != _MAGIC:
            raise CorruptChunkError(expected("zstd", "a zstd frame (magic 28 b5 2f fd)", src[pos : pos + 4].hex(" ")))
        fhd = src[pos + 4]
        single = (fhd >> 5) & 1
        pos += 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3] + (1 if single else 0, 2, 4, 8)[fhd >> 6]
        while True:
            if pos + 3 > n:
                raise CorruptChunkError(expected("zstd", "a complete frame", "truncated data"))
            h = int.from_bytes(src[pos : pos + 3], "little")
            btype = (h >> 1) & 3
            if btype == 3:
                raise CorruptChunkError(expected("zstd", "a valid block type", "reserved (3)"))
            pos += 3 + (1 if btype == 1 else h >> 3)
            if h & 1:
                break
        pos += 4 if fhd & 4 else 0  # content checksum
    if pos != n:
        raise CorruptChunkError(expected("zstd", "a complete frame", "truncated data"))


@dataclass(frozen=True)
class ZstdCodec(BytesBytesCodec):
    level: int = 0
    checksum: bool = False

    name: ClassVar[str] = "zstd"

    def __post_init__(self) -> None:
        lv = self.level
        if isinstance(lv, bool) or not isinstance(lv, (int, np.integer)) or not -131072 <= lv <= 22:
            raise MetadataError(expected("zstd.level", "an integer in [-131072, 22]", lv), "level")

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("level", "checksum"))
        return cls(level=get_int(cfg, "level", path, -131072, 22), checksum=get_bool(cfg, "checksum", path, False))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"level": int(self.level), "checksum": bool(self.checksum)}}

    def max_encoded_size(self, n: int) -> int:
        return max_compressed_size(n)

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        return _numcodecs_zstd().compress(as_uint8(data), int(self.level), bool(self.checksum))

    def _decompress(self, data: Any, dest: Any = None) -> Any:
        try:
            return _numcodecs_zstd().decompress(data, dest)
        except (RuntimeError, ValueError, MemoryError) as e:
            raise CorruptChunkError(expected("zstd", "a valid zstd stream", f"{type(e).__name__}: {e}")) from None

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        limit = int(_config_get("max_chunk_bytes"))
        fcs = frame_content_size(data)
        if fcs is not None and fcs > limit:
            raise CorruptChunkError(expected("zstd", f"at most {limit} decoded bytes", fcs))
        if fcs == 0:
            return np.empty(0, dtype=np.uint8)
        if fcs is None:
            check_frames(data)  # numcodecs' streaming path can hang on malformed frames
        out = self._decompress(data)
        if nbytes_of(out) > limit:
            raise CorruptChunkError(expected("zstd", f"at most {limit} decoded bytes", nbytes_of(out)))
        return out

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> Any:
        out = np.empty(size, dtype=np.uint8)
        self.decode_into(data, out, spec)
        return out

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        n = dst.shape[0]
        fcs = frame_content_size(data)
        if fcs == n == 0:
            return True  # numcodecs refuses empty frames; nothing to write
        if fcs == n:
            # numcodecs checks that exactly the frame's content size came out
            self._decompress(data, dst)
            return True
        if fcs is not None and fcs > n:
            raise CorruptChunkError(expected("zstd", f"{n} decoded bytes", fcs))
        if fcs is None:
            # size not in the header: decompress into dst, whose size we know (numcodecs
            # then needs no streaming, which can hang on malformed frames)
            check_frames(data)
            self._decompress(data, dst)
            return True
        # several frames: decode fully, then compare
        out = self._decompress(data)
        if nbytes_of(out) != n:
            raise CorruptChunkError(expected("zstd", f"{n} decoded bytes", nbytes_of(out)))
        dst[:] = as_uint8(out)
        return True
