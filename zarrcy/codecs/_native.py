"""The native codec engine seen from the codecs (issue 21): which libraries are loaded,
each codec's declared kernel step, and one chunk's bytes->bytes chain decoded or encoded
in C without the GIL (``zarrcy._kernels._compress``).

**Where the libraries come from.**  No compression library is built into zarrcy; the
engine calls the ones inside wheels zarrcy already depends on, resolved once (on first
use) from the already imported extension module with ``dlopen(RTLD_NOLOAD)`` +
``dlsym``: c-blosc 1 (the library that writes every blosc chunk numcodecs,
zarr-python and tensorstore users have; its ``*_ctx`` calls take no global lock) and
libzstd (from backports-zstd, the standard library's ``_zstd`` or numcodecs' ``zstd``
module, the first found: :data:`ZSTD_MODULES`), ``crc32c_extend`` from
google-crc32c's libcrc32c, libdeflate from the ``deflate`` wheel (``_deflate``).  A
library that cannot be found leaves its codec on the Python path (numcodecs), which
decodes the same bytes: :func:`available` is the one switch.

**Declared capability.**  A bytes->bytes codec says what it asks of the engine with
``native_step(spec)`` (:class:`Step`, or None: not native); :func:`chain_of` composes a
pipeline's bytes->bytes codecs into the engine's chain tuple -- a compressor (or none),
then optionally ``crc32c`` -- once per pipeline, never per chunk.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from typing import Any, NoReturn, Sequence

import numpy as np

from zarrcy._kernels import _compress as K
from zarrcy.codecs._common import as_uint8
from zarrcy.config import at_fork_reset
from zarrcy.errors import CorruptChunkError

__all__ = ["Step", "CRC32C", "KernelPlan", "available", "chain_of", "decode_into", "decode_code", "decode_range_into",
           "encode", "describe", "fail", "RETRY_IN_PYTHON", "ZSTD_MODULES", "zstd_source"]

#: a chain tuple: (codec, crc32c, level, checksum, cname, shuffle, typesize, blocksize)
Chain = tuple[int, bool, int, bool, str, int, int, int]

RAW, GZIP, ZSTD, BLOSC, ZLIB = K.RAW, K.GZIP, K.ZSTD, K.BLOSC, K.ZLIB


@dataclass(frozen=True)
class Step:
    """One bytes->bytes codec as the engine runs it: a compressor (``codec`` one of
    ``GZIP``, ``ZSTD``, ``BLOSC``, ``ZLIB`` with its settings) or the ``crc32c``
    checksum (``codec = -1``)."""

    codec: int
    level: int = 0
    checksum: bool = False
    cname: str = ""
    shuffle: int = 0
    typesize: int = 0
    blocksize: int = 0


CRC32C = Step(-1)


@dataclass(frozen=True)
class KernelPlan:
    """A whole chunk codec chain as the per-inner-chunk kernels run it, composed once
    per pipeline from the codecs' declared capabilities: an optional ``transpose``
    (``order``: the stored array's axes), ``bytes`` (``swap``: 0 none, 1 elements,
    2/4/8 words), then the bytes->bytes ``chain``."""

    order: tuple[int, ...] | None
    swap: int
    chain: Chain

_lock = threading.Lock()
_loaded: dict[int, bool] = {}


@at_fork_reset
def _reset_lock_after_fork() -> None:
    global _lock
    _lock = threading.Lock()


#: modules carrying a libzstd that exports its entry points, the preferred first:
#: backports-zstd (Python < 3.14) and the standard library's ``_zstd`` (3.14) bring
#: libzstd 1.5.7, which encodes 16-20 % faster than numcodecs 0.17's 1.5.6 on chunk-sized
#: data (same levels, same frame format); numcodecs' copy is the fallback
ZSTD_MODULES = ("backports.zstd._zstd", "_zstd", "numcodecs.zstd")


def _load_zstd() -> bool:
    for name in ZSTD_MODULES:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        path = getattr(mod, "__file__", None)
        if path and K.load_zstd(path):
            _zstd_source[0] = name
            return True
    return False


#: which of :data:`ZSTD_MODULES` the engine's libzstd came from (None: not loaded)
_zstd_source: list[str | None] = [None]


def zstd_source() -> str | None:
    """The module whose libzstd the engine uses (``zarrcy info``, benchmarks); None when
    zstd is not native here."""
    _load(ZSTD)
    return _zstd_source[0]


def _load(codec: int) -> bool:
    """Resolve the entry points of ``codec``'s library (-1: crc32c) once; True if found."""
    got = _loaded.get(codec)
    if got is not None:
        return got
    with _lock:
        got = _loaded.get(codec)
        if got is None:
            try:
                if codec == ZSTD:
                    got = _load_zstd()
                elif codec == BLOSC:
                    import numcodecs.blosc as mod

                    got = bool(K.load_blosc(mod.__file__))
                elif codec == -1:
                    import google_crc32c._crc32c as mod  # the C extension (links libcrc32c)

                    got = bool(K.load_crc32c(mod.__file__))
                else:  # gzip, zlib: libdeflate, from the deflate wheel's extension module
                    import deflate._deflate as mod

                    from zarrcy._kernels import _deflate

                    got = bool(_deflate.load(mod.__file__)) and bool(K.available(codec))
            except (ImportError, AttributeError, OSError):  # pragma: no cover - depends on the wheels
                got = False
            _loaded[codec] = got
    return got


def available(codec: int, crc32c: bool = False) -> bool:
    """True when chains of ``codec`` (and a crc32c step if asked) run natively here."""
    return (codec == RAW or _load(codec)) and (not crc32c or _load(-1)) and bool(K.available(codec, crc32c))


def chain_of(steps: Sequence[Step | None]) -> Chain | None:
    """The engine's chain for a pipeline's bytes->bytes codecs (innermost first), or
    None when some codec is not native, the order is not ``[compressor] [crc32c]``, or
    a library is missing."""
    if any(s is None for s in steps):
        return None
    st = [s for s in steps if s is not None]
    crc = bool(st) and st[-1] is CRC32C
    if crc:
        st = st[:-1]
    if len(st) > 1 or any(s is CRC32C for s in st):
        return None
    s = st[0] if st else Step(RAW)
    if not available(s.codec, crc):
        return None
    return (s.codec, crc, s.level, s.checksum, s.cname, s.shuffle, s.typesize, s.blocksize)


#: result codes that may only mean "valid, but not in one call": a gzip stream of several
#: members (or zero padding the kernel does not stitch); the Python codec decides
RETRY_IN_PYTHON = (K.GZIP_TOO_SHORT, K.GZIP_TRAILING)


def describe(code: int) -> str:
    return str(K.describe(code))


def decode_code(chain: Chain, data: Any, dst: np.ndarray) -> int:
    """:func:`decode_into` returning the result code (0 ok) instead of raising."""
    return int(K.decode_into(chain, as_uint8(data), dst))


def decode_into(chain: Chain, data: Any, dst: np.ndarray, what: str = "") -> None:
    """Decode one stored chunk into the 1-d uint8 ``dst`` (its exact decoded size);
    CorruptChunkError naming what failed otherwise."""
    code = K.decode_into(chain, as_uint8(data), dst)
    if code:
        fail(code, what)


def decode_range_into(chain: Chain, data: Any, dst: np.ndarray, lo: int, hi: int, what: str = "") -> None:
    """:func:`decode_into` where only ``dst[lo:hi]`` is needed (see
    ``_compress.decode_range_into``)."""
    code = K.decode_range_into(chain, as_uint8(data), dst, lo, hi)
    if code:
        fail(code, what)


def fail(code: int, what: str = "") -> NoReturn:
    """Raise for a result code: MemoryError for no memory, else CorruptChunkError."""
    if code == K.NO_MEMORY:
        raise MemoryError(K.describe(code))
    raise CorruptChunkError(f"{what}: {K.describe(code)}" if what else str(K.describe(code)))


def encode(chain: Chain, data: Any) -> Any:
    """One chunk's bytes encoded through ``chain`` (bytes-like)."""
    src = as_uint8(data)
    bound = K.encode_bound(chain, src.shape[0])
    out = np.empty(bound, dtype=np.uint8)
    n, code = K.encode_into(chain, src, out)
    if code:  # pragma: no cover - the bound makes NO_SPACE impossible
        if code == K.NO_MEMORY:
            raise MemoryError(K.describe(code))
        raise RuntimeError(f"native encode failed: {K.describe(code)}")
    # a tight copy when it saves much memory, else a view of the (mostly full) buffer
    return out[:n].tobytes() if n < bound // 2 else memoryview(out[:n])
