"""The ``zstd`` codec (spec: ../shared/specs/ext-codec-zstd.md).

``bytes -> bytes``, Zstandard frames (RFC 8878).  Configuration:

* ``level``: integer -131072..22; 0 = the library's default level.
* ``checksum``: optional boolean (a content checksum in the frame), default false.
  The spec says it "should be omitted if false", but zarr-python 3.4 and tensorstore
  both write ``"checksum": false``; zarrcy writes it always, like them, so that the
  metadata of the default chain is byte-for-byte theirs.  Both forms are read.

Engine: zarrcy's native codec engine (``zarrcy.codecs._native``: libzstd's one-shot
``ZSTD_decompressDCtx`` / ``ZSTD_compress2`` from numcodecs' extension module, called
without the GIL with a per-thread context): with a known decoded size, every frame is
decoded straight into the destination and must fill it exactly (skippable frames are
skipped, as libzstd and numcodecs do; a frame that needs a dictionary is refused).
numcodecs.zstd is the fallback when the entry points cannot be found.

Bounded decoding (decompression bombs): numcodecs' ``decompress`` has no output
limit for frames without Frame_Content_Size.  :func:`decompress_capped` stops at a
cap instead: it drives libzstd's streaming decoder (``ZSTD_decompressStream``, the
symbols numcodecs' extension module exports; resolved with ctypes, which releases
the GIL during the call) into an output buffer that grows only as output arrives,
never beyond ``cap + 1`` bytes.  If the symbols cannot be found it falls back to a
bound read from the block headers (RFC 8878, 3.1.1.2: a block decodes to at most
Block_Maximum_Size = 128 KiB; a frame with a content size decodes to exactly that)
and refuses frames whose bound exceeds the cap (+ 64 MiB of rounding slack) before
decoding them.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy.config import at_fork_reset
from zarrcy.codecs._base import ArraySpec, BytesBytesCodec
from zarrcy.codecs._limits import CAP_HINT, decode_cap
from zarrcy.codecs import _native
from zarrcy.codecs._common import as_uint8, config_dict, get_bool, get_int, max_compressed_size
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["ZstdCodec", "frame_content_size", "check_frames", "decompress_capped"]

_MAGIC = 0xFD2FB528


def _skip_skippable(src: np.ndarray) -> int:
    """Offset of the first frame that is not a skippable frame (RFC 8878, 3.1.2)."""
    pos, n = 0, src.shape[0]
    while n - pos >= 8 and int.from_bytes(src[pos : pos + 4].tobytes(), "little") & 0xFFFFFFF0 == 0x184D2A50:
        pos += 8 + int.from_bytes(src[pos + 4 : pos + 8].tobytes(), "little")
    return min(pos, n)


def _numcodecs_zstd() -> Any:
    import numcodecs.zstd

    return numcodecs.zstd


def frame_content_size(data: Any) -> int | None:
    """Frame_Content_Size of the first zstd frame (RFC 8878, 3.1.1.1; skippable frames
    before it are skipped), or None if absent.

    Raises CorruptChunkError if that frame does not start with a complete frame header.
    """
    src = as_uint8(data)
    src = src[_skip_skippable(src):]
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


def check_frames(data: Any) -> int:
    """Walk the frames and block headers (RFC 8878, 3.1.1) without decoding; raise
    CorruptChunkError unless ``data`` is a sequence of complete frames (skippable
    frames allowed).  Run before numcodecs' streaming decompression (content size not
    in the header), which never returns on some truncated or trailing-garbage input.

    Returns an upper bound of the decoded size: Frame_Content_Size where the header
    has one, else the sum over blocks of their largest decoded size (raw: its size,
    RLE: its repeat count, compressed: Block_Maximum_Size = 128 KiB, RFC 8878 3.1.1.2.3)."""
    src = bytes(as_uint8(data))
    n = len(src)
    pos = 0
    bound = 0
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
        fcs_len = (1 if single else 0, 2, 4, 8)[fhd >> 6]
        fcs_pos = pos + 5 + (0 if single else 1) + (0, 1, 2, 4)[fhd & 3]
        pos = fcs_pos + fcs_len
        fcs: int | None = None
        if fcs_len and pos <= n:
            fcs = int.from_bytes(src[fcs_pos:pos], "little") + (256 if fcs_len == 2 else 0)
        blocks = 0
        while True:
            if pos + 3 > n:
                raise CorruptChunkError(expected("zstd", "a complete frame", "truncated data"))
            h = int.from_bytes(src[pos : pos + 3], "little")
            btype = (h >> 1) & 3
            if btype == 3:
                raise CorruptChunkError(expected("zstd", "a valid block type", "reserved (3)"))
            blocks += (h >> 3) if btype < 2 else _BLOCK_MAX
            pos += 3 + (1 if btype == 1 else h >> 3)
            if h & 1:
                break
        bound += blocks if fcs is None else min(fcs, blocks)
        pos += 4 if fhd & 4 else 0  # content checksum
    if pos != n:
        raise CorruptChunkError(expected("zstd", "a complete frame", "truncated data"))
    return bound


_BLOCK_MAX = 128 << 10  # Block_Maximum_Size upper bound (RFC 8878, 3.1.1.2.4)


# -- libzstd's streaming decoder through ctypes (see the module docstring) ----------------
class _Buf(ctypes.Structure):  # ZSTD_inBuffer / ZSTD_outBuffer: {ptr, size, pos}
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


_lib: Any = None
_lib_lock = threading.Lock()
_tls = threading.local()


@at_fork_reset
def _reset_lock_after_fork() -> None:
    global _lib_lock
    _lib_lock = threading.Lock()


def _zstd_lib() -> Any:
    """libzstd's streaming entry points from numcodecs' extension module (False if absent)."""
    global _lib
    if _lib is None:
        with _lib_lock:
            if _lib is None:
                try:
                    lib = ctypes.CDLL(_numcodecs_zstd().__file__)
                    for name, res, args in (
                        ("ZSTD_createDCtx", ctypes.c_void_p, []),
                        ("ZSTD_freeDCtx", ctypes.c_size_t, [ctypes.c_void_p]),
                        ("ZSTD_DCtx_reset", ctypes.c_size_t, [ctypes.c_void_p, ctypes.c_int]),
                        ("ZSTD_decompressStream", ctypes.c_size_t,
                         [ctypes.c_void_p, ctypes.POINTER(_Buf), ctypes.POINTER(_Buf)]),
                        ("ZSTD_isError", ctypes.c_uint, [ctypes.c_size_t]),
                        ("ZSTD_getErrorName", ctypes.c_char_p, [ctypes.c_size_t]),
                    ):
                        f = getattr(lib, name)
                        f.restype, f.argtypes = res, args
                    _lib = lib
                except (OSError, AttributeError):  # pragma: no cover - depends on the wheel
                    _lib = False
    return _lib


class _DCtx:
    """One ZSTD_DCtx per thread (contexts are not thread-safe), freed with the thread."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self.p = lib.ZSTD_createDCtx()
        if not self.p:  # pragma: no cover
            raise MemoryError("ZSTD_createDCtx failed")

    def __del__(self) -> None:
        try:
            self.lib.ZSTD_freeDCtx(self.p)
        except Exception:  # pragma: no cover - interpreter shutdown
            pass


#: tests set this to False to exercise the fallback (block-header bound)
USE_STREAMING = True
_FALLBACK_SLACK = 64 << 20


def _stream_capped(lib: Any, src: np.ndarray, cap: int) -> np.ndarray:
    ctx = getattr(_tls, "dctx", None)
    if ctx is None:
        ctx = _tls.dctx = _DCtx(lib)
    lib.ZSTD_DCtx_reset(ctx.p, 1)  # ZSTD_reset_session_only
    n_in = src.shape[0]
    out = np.empty(min(cap + 1, max(1 << 16, 4 * n_in)), dtype=np.uint8)
    inb = _Buf(src.ctypes.data, n_in, 0)
    outb = _Buf(out.ctypes.data, out.shape[0], 0)
    ret = 1
    while True:
        before = (inb.pos, outb.pos)
        ret = lib.ZSTD_decompressStream(ctx.p, ctypes.byref(outb), ctypes.byref(inb))
        if lib.ZSTD_isError(ret):
            err = lib.ZSTD_getErrorName(ret).decode(errors="replace")
            raise CorruptChunkError(expected("zstd", "a valid zstd stream", err))
        if outb.pos == outb.size:  # output full: grow (realloc: no second copy), up to cap + 1
            if outb.size > cap:
                raise CorruptChunkError(expected("zstd", f"at most {cap} decoded bytes ({CAP_HINT})", "more"))
            new = min(cap + 1, 2 * outb.size)
            out.resize(new, refcheck=False)
            outb.ptr, outb.size = out.ctypes.data, new
            continue
        if inb.pos == n_in:
            break
        if (inb.pos, outb.pos) == before:  # pragma: no cover - no progress: never loop
            raise CorruptChunkError(expected("zstd", "a valid zstd stream", "no progress"))
    if ret != 0:
        raise CorruptChunkError(expected("zstd", "a complete frame", "truncated data"))
    used = outb.pos
    out.resize(used, refcheck=False)
    return out


def decompress_capped(data: Any, cap: int) -> np.ndarray:
    """All frames of ``data`` decoded, refusing (CorruptChunkError) as soon as more than
    ``cap`` bytes come out; memory never exceeds ``cap + 1`` output bytes."""
    src = as_uint8(data)
    if not src.flags.c_contiguous:  # pragma: no cover - as_uint8 returns contiguous arrays
        src = np.ascontiguousarray(src)
    bound = check_frames(src)  # also refuses the malformed input numcodecs hangs on
    if bound == 0:
        return np.empty(0, dtype=np.uint8)
    lib = _zstd_lib() if USE_STREAMING else False
    if lib:
        return _stream_capped(lib, src, cap)
    # fallback: no streaming entry points; the block headers bound the output.  A
    # compressed block counts as 128 KiB (its maximum), so the bound exceeds the real
    # size by < 128 KiB per frame for ordinary encoders: allow 64 MiB of such slack
    # (memory stays within cap + 64 MiB), then check the real size
    if bound > cap + _FALLBACK_SLACK:
        raise CorruptChunkError(
            expected("zstd", f"frames decoding to at most {cap} bytes (block headers allow {bound})", "more")
        )
    fcs = frame_content_size(src)  # numcodecs allocates this much first: refuse a claim above the cap
    if fcs is not None and fcs > cap:
        raise CorruptChunkError(expected("zstd", f"at most {cap} decoded bytes ({CAP_HINT})", fcs))
    try:
        out = as_uint8(_numcodecs_zstd().decompress(src))
    except (RuntimeError, ValueError) as e:  # not MemoryError: out of memory is not a corrupt chunk
        raise CorruptChunkError(expected("zstd", "a valid zstd stream", f"{type(e).__name__}: {e}")) from e
    if out.shape[0] > cap:
        raise CorruptChunkError(expected("zstd", f"at most {cap} decoded bytes ({CAP_HINT})", out.shape[0]))
    return out


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

    def native_step(self, spec: ArraySpec | None) -> _native.Step:
        return _native.Step(_native.ZSTD, int(self.level), bool(self.checksum))

    @functools.cached_property
    def _chain(self) -> _native.Chain | None:
        """This codec alone as a native chain (None: the engine has no libzstd)."""
        return _native.chain_of([self.native_step(None)])

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        chain = self._chain
        if chain is not None:
            return _native.encode(chain, data)
        return _numcodecs_zstd().compress(as_uint8(data), int(self.level), bool(self.checksum))

    def _decompress(self, data: Any, dest: Any = None) -> Any:
        try:
            return _numcodecs_zstd().decompress(data, dest)
        except (RuntimeError, ValueError) as e:  # not MemoryError: out of memory is not a corrupt chunk
            raise CorruptChunkError(expected("zstd", "a valid zstd stream", f"{type(e).__name__}: {e}")) from e

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        limit = decode_cap(spec)
        fcs = frame_content_size(data)
        if fcs is not None and fcs > limit:
            raise CorruptChunkError(expected("zstd", f"at most {limit} decoded bytes ({CAP_HINT})", fcs))
        if fcs == 0 and self._chain is None:
            return np.empty(0, dtype=np.uint8)
        if fcs is not None:
            # one frame (what zarrcy and zarr-python write): straight into a buffer of
            # its content size; more frames overflow it and take the capped path below
            out = np.empty(fcs, dtype=np.uint8)
            chain = self._chain
            if chain is not None:
                code = _native.K.decode_into(chain, as_uint8(data), out)
                if code == 0:
                    return out
                if code != _native.K.ZSTD_TOO_LONG:
                    _native.decode_into(chain, data, out, "zstd")  # raises, naming the fault
            else:
                try:
                    _numcodecs_zstd().decompress(data, out)
                    return out
                except (RuntimeError, ValueError):  # several frames, or corrupt: the capped path decides
                    pass
            del out
        # decoded size unknown (variable-size chunks): stop at the cap while decoding
        return decompress_capped(data, limit)

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        chain = self._chain
        if chain is not None:  # every frame into dst, which it must fill exactly
            _native.decode_into(chain, data, dst, "zstd")
            return True
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
            # then needs no streaming, which can hang on malformed frames, and stops
            # with an error when the output would overflow dst)
            check_frames(data)
            self._decompress(data, dst)
            return True
        # several frames (the first smaller than n): decode with n as the cap, then compare
        out = decompress_capped(data, n)
        if out.shape[0] != n:
            raise CorruptChunkError(expected("zstd", f"{n} decoded bytes", int(out.shape[0])))
        dst[:] = out
        return True
