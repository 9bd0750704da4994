"""The ``gzip`` codec (spec: ../shared/specs/v3-codec-gzip.rst; old name
``https://purl.org/zarr/spec/codec/gzip`` from draft-2020-codecs-gzip-blosc.txt).

``bytes -> bytes``, RFC 1952 output.  Configuration:

* ``level``: integer 0..9 (0 = stored blocks, no compression); passed unchanged to
  libdeflate, whose levels 0..9 have the same meaning (it also has 10..12, unused).

Three routes, all tested:

``"libdeflate"`` (default)
    libdeflate's C API resolved from the ``deflate`` wheel by ``zarrcy._kernels._deflate``:
    no GIL while bytes are processed, decompression straight into the destination
    (e.g. the caller's output array), one (de)compressor per thread.
``"deflate"``
    the ``deflate`` package's ``gzip_compress``/``gzip_decompress`` (also GIL-free,
    but each call allocates its result); used when the symbols cannot be found.
``"zlib"``
    the standard library; only for streams libdeflate does not take in one call
    (several gzip members, which libdeflate stops after the first of).

The decoded size must match the expected size exactly when the pipeline knows it
(CorruptChunkError otherwise); trailing bytes after the last member must be zeros.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self

import deflate as _deflate_pkg  # a dependency (pyproject.toml)
import numpy as np

from zarrcy._kernels import _deflate as _k
from zarrcy.codecs._base import ArraySpec, BytesBytesCodec
from zarrcy.codecs._limits import CAP_HINT, decode_cap
from zarrcy.codecs._common import as_uint8, config_dict, get_int, max_compressed_size
from zarrcy.codecs._native import GZIP, Step
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["GzipCodec", "Gzip", "ROUTES", "route", "set_route", "gzip_compress", "gzip_decompress", "gzip_decompress_into"]

Route = Literal["libdeflate", "deflate", "zlib"]
ROUTES: tuple[str, ...] = ("libdeflate", "deflate", "zlib")

try:  # the deflate wheel's extension module (a private name) exports libdeflate's C entry points
    import deflate._deflate as _deflate_mod

    _HAVE_LIBDEFLATE = bool(_k.load(_deflate_mod.__file__))
except (ImportError, AttributeError):  # pragma: no cover - another layout of the deflate wheel
    _HAVE_LIBDEFLATE = False

# the faster route on bench/bench_codecs.py (see the module docstring there)
_route: str = "libdeflate" if _HAVE_LIBDEFLATE else "deflate"


def route() -> str:
    """The route in use: ``"libdeflate"``, ``"deflate"`` or ``"zlib"``."""
    return _route


def set_route(name: str) -> str:
    """Select a route (tests, benchmarks); returns the previous one."""
    global _route
    if name not in ROUTES:
        raise ValueError(expected("gzip route", f"one of {ROUTES}", name))
    if name == "libdeflate" and not _HAVE_LIBDEFLATE:
        raise ValueError(f"gzip route {name!r} is not available in this environment")
    old, _route = _route, name
    return old


def _corrupt(what: str, received: Any) -> CorruptChunkError:
    return CorruptChunkError(expected("gzip", what, received))


# -- zlib: any number of members ---------------------------------------------------------
def _zlib_decompress(data: Any, limit: int) -> bytes:
    """All members of ``data``; more than ``limit`` bytes or a damaged stream -> corrupt."""
    buf = bytes(data) if not isinstance(data, bytes) else data
    parts: list[bytes] = []
    total = 0
    first = True
    while buf:
        if not first and not buf.strip(b"\0"):
            break  # trailing zero padding (as the gzip module accepts)
        first = False
        d = zlib.decompressobj(31)
        try:
            part = d.decompress(buf, limit - total + 1)
        except zlib.error as e:
            raise _corrupt("a valid gzip stream", f"zlib error: {e}") from None
        total += len(part)
        if total > limit or d.unconsumed_tail:
            raise _corrupt(f"at most {limit} decoded bytes ({CAP_HINT})", "more")
        if not d.eof:
            raise _corrupt("a complete gzip member", "truncated data")
        parts.append(part)
        buf = d.unused_data
    if first:
        raise _corrupt("a gzip stream", "0 bytes")
    return b"".join(parts)


def _isize(src: np.ndarray) -> int:
    """ISIZE of the last member: the decoded size mod 2**32 (RFC 1952, section 2.3.1)."""
    if src.shape[0] < 18:
        raise _corrupt("at least 18 bytes (gzip header + trailer)", int(src.shape[0]))
    return int.from_bytes(bytes(src[-4:]), "little")


def _trailing_ok(src: np.ndarray, used: int) -> bool:
    rest = src[used:]
    return rest.shape[0] == 0 or not rest.any()


# -- public functions ------------------------------------------------------------------
def gzip_decompress_into(data: Any, dst: np.ndarray, route: str | None = None) -> None:
    """Decompress ``data`` into the 1-D uint8 array ``dst``, which it must fill exactly."""
    r = route or _route
    n = dst.shape[0]
    if r == "libdeflate":
        src = as_uint8(data)
        code, used = _k.gzip_decompress_into(src, dst)
        if code == n and (used == src.shape[0] or _trailing_ok(src, used)):
            return
        if code == _k.BAD_DATA:
            raise _corrupt("a valid gzip stream", "bad data")
        if code == _k.INSUFFICIENT_SPACE:
            raise _corrupt(f"{n} decoded bytes", "more")
        if code == _k.UNAVAILABLE:  # pragma: no cover
            raise RuntimeError("libdeflate entry points are not loaded")
        # a short first member, or more members after it: let zlib read them all
    elif r == "deflate":
        got: bytearray | None
        try:
            got = _deflate_pkg.gzip_decompress(data, n)
        except Exception:
            got = None
        if got is not None and len(got) == n and _isize(as_uint8(data)) == n & 0xFFFFFFFF:
            dst[:] = np.frombuffer(got, dtype=np.uint8)
            return
    out = _zlib_decompress(data, n)
    if len(out) != n:
        raise _corrupt(f"{n} decoded bytes", len(out))
    dst[:] = np.frombuffer(out, dtype=np.uint8)


def gzip_decompress(data: Any, size: int | None = None, route: str | None = None, limit: int | None = None) -> Any:
    """Decompress ``data``; with ``size``, exactly that many bytes must come out, else
    at most ``limit`` (default: ``decode_cap`` of an unknown chunk, ``max_chunk_bytes``)."""
    r = route or _route
    if size is not None:
        out = np.empty(size, dtype=np.uint8)
        gzip_decompress_into(data, out, r)
        return out
    if limit is None:
        limit = decode_cap(None)
    src = as_uint8(data)
    if r == "libdeflate":
        guess = _isize(src)
        if guess <= limit:
            out = np.empty(guess, dtype=np.uint8)
            code, used = _k.gzip_decompress_into(src, out)
            if code == guess and (used == src.shape[0] or _trailing_ok(src, used)):
                return out
            if code == _k.BAD_DATA:
                raise _corrupt("a valid gzip stream", "bad data")
    elif r == "deflate":
        guess = _isize(src)
        if guess <= limit:
            try:
                res = _deflate_pkg.gzip_decompress(data, guess)
            except Exception:
                res = None
            if res is not None and len(res) == guess:
                return res
    return _zlib_decompress(data, limit)


def gzip_compress(data: Any, level: int, route: str | None = None) -> Any:
    """One RFC 1952 member of ``data`` at ``level`` (0..9)."""
    r = route or _route
    if r == "libdeflate":
        src = as_uint8(data)
        bound = _k.gzip_compress_bound(level, src.shape[0])
        out = np.empty(bound, dtype=np.uint8)
        n = _k.gzip_compress_into(src, out, level)
        if n < 0:  # pragma: no cover - the bound makes this impossible
            raise RuntimeError(f"libdeflate_gzip_compress failed ({n})")
        # a tight copy when it saves much memory, else a view of the (mostly full) buffer
        return out[:n].tobytes() if n < bound // 2 else memoryview(out[:n])
    if r == "deflate":
        return _deflate_pkg.gzip_compress(data, level)
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


@dataclass(frozen=True)
class GzipCodec(BytesBytesCodec):
    level: int = 5

    name: ClassVar[str] = "gzip"
    aliases: ClassVar[tuple[str, ...]] = ("https://purl.org/zarr/spec/codec/gzip",)

    def __post_init__(self) -> None:
        if isinstance(self.level, bool) or not isinstance(self.level, (int, np.integer)) or not 0 <= self.level <= 9:
            raise MetadataError(expected("gzip.level", "an integer in [0, 9]", self.level), "level")

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("level",))
        return cls(level=get_int(cfg, "level", path, 0, 9))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"level": int(self.level)}}

    def max_encoded_size(self, n: int) -> int:
        return max_compressed_size(n)

    def native_step(self, spec: ArraySpec | None) -> Step:
        return Step(GZIP, int(self.level))

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        return gzip_compress(data, int(self.level))

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        return gzip_decompress(data, limit=decode_cap(spec))

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> Any:
        return gzip_decompress(data, size)

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        gzip_decompress_into(data, dst)
        return True


#: zarr-python-style short name: ``Gzip(1)``
Gzip = GzipCodec

