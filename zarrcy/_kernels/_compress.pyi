from collections.abc import Buffer

import numpy as np
import numpy.typing as npt

# (codec, crc32c, level, checksum, cname, shuffle, typesize, blocksize)
_Chain = tuple[int, bool, int, bool, str, int, int, int]

OK: int
GZIP_BAD_DATA: int
GZIP_TOO_LONG: int
GZIP_TOO_SHORT: int
GZIP_TRAILING: int
RAW_SIZE: int
NO_SPACE: int
ZSTD_BAD_DATA: int
ZSTD_TOO_LONG: int
ZSTD_TOO_SHORT: int
ZSTD_DICTIONARY: int
BLOSC_BAD_HEADER: int
BLOSC_SIZE: int
BLOSC_BAD_DATA: int
CRC32C_MISMATCH: int
CRC32C_SHORT: int
NO_MEMORY: int
ENCODE_FAILED: int
UNAVAILABLE: int
NOT_RUN: int
RAW: int
GZIP: int
ZSTD: int
BLOSC: int
ZLIB: int

def describe(code: int) -> str: ...
def load_zstd(path: str) -> bool: ...
def load_blosc(path: str) -> bool: ...
def load_crc32c(path: str) -> bool: ...
def available(codec: int, crc32c: bool = False) -> bool: ...
def decode_into(chain: _Chain, src: Buffer, dst: npt.NDArray[np.uint8] | bytearray | memoryview) -> int: ...
def decode_range_into(
    chain: _Chain, src: Buffer, dst: npt.NDArray[np.uint8] | bytearray | memoryview, lo: int, hi: int
) -> int: ...
def encode_bound(chain: _Chain, n: int) -> int: ...
def encode_into(chain: _Chain, src: Buffer, dst: npt.NDArray[np.uint8] | bytearray | memoryview) -> tuple[int, int]: ...
def blosc_header(src: Buffer) -> tuple[int, int, int, int]: ...
def crc32c(data: Buffer, crc: int = 0) -> int: ...
