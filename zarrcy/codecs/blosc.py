"""The ``blosc`` codec (spec: ../shared/specs/v3-codec-blosc.rst; old name
``https://purl.org/zarr/spec/codec/blosc`` from draft-2020-codecs-gzip-blosc.txt).

``bytes -> bytes``, the c-blosc 1 container format.  Configuration:

* ``cname``: ``"lz4"``, ``"lz4hc"``, ``"blosclz"``, ``"zstd"``, ``"zlib"``
  (``"snappy"`` is named by the spec but not built into numcodecs' c-blosc);
* ``clevel``: integer 0..9;
* ``shuffle``: ``"noshuffle"``, ``"shuffle"``, ``"bitshuffle"``; the numeric 0/1/2 of
  older metadata are read as aliases, and -1 ("automatic": bit-shuffle for 1-byte
  items, byte-shuffle otherwise) is resolved against ``typesize``; always written
  as a string;
* ``typesize``: positive integer, required unless ``shuffle`` is ``"noshuffle"``;
  when missing it is taken from the data type (the spec allows it) and written back;
* ``blocksize``: integer >= 0 (0 = automatic); default 0.

Engine: c-blosc 1 through zarrcy's native codec engine (``zarrcy.codecs._native``:
``blosc_decompress_ctx`` / ``blosc_compress_ctx`` from numcodecs' extension module,
without the GIL and without numcodecs' global lock; one internal thread per call, the
callers supply the parallelism).  The 16-byte header is checked (version, ``cbytes`` =
stored length, ``nbytes`` = expected size, a block no larger than the chunk, then
``blosc_cbuffer_validate``) before c-blosc reads the payload; decoding with a known
size goes straight into the destination.  numcodecs.blosc is the fallback when the
entry points cannot be found.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Self

import functools

import numpy as np

from zarrcy.codecs import _native
from zarrcy.codecs._base import ArraySpec, BytesBytesCodec
from zarrcy.codecs._limits import CAP_HINT, decode_cap
from zarrcy.codecs._common import MISSING, as_uint8, config_dict, get_choice, get_int, max_compressed_size
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["BloscCodec", "blosc_header"]

CName = Literal["lz4", "lz4hc", "blosclz", "zstd", "zlib"]
Shuffle = Literal["noshuffle", "shuffle", "bitshuffle"]
_CNAMES: tuple[str, ...] = ("lz4", "lz4hc", "blosclz", "zstd", "zlib")
_SHUFFLES: tuple[str, ...] = ("noshuffle", "shuffle", "bitshuffle")
_SHUFFLE_NUM = {0: "noshuffle", 1: "shuffle", 2: "bitshuffle"}


def _numcodecs_blosc() -> Any:
    import numcodecs.blosc

    return numcodecs.blosc


def blosc_header(data: Any) -> tuple[int, int, int, int]:
    """``(nbytes, cbytes, blocksize, typesize)`` from a blosc 1 header, validated.

    Raises CorruptChunkError unless the header is plausible and ``cbytes`` equals
    the length of ``data`` (README_CHUNK_FORMAT.rst of c-blosc).
    """
    src = as_uint8(data)
    if src.shape[0] < 16:
        raise CorruptChunkError(expected("blosc", "at least 16 bytes (header)", int(src.shape[0])))
    h = src[:16].tobytes()
    version, typesize = h[0], h[3]
    nbytes = int.from_bytes(h[4:8], "little")
    blocksize = int.from_bytes(h[8:12], "little")
    cbytes = int.from_bytes(h[12:16], "little")
    if version == 0 or version > 4:
        raise CorruptChunkError(expected("blosc header version", "1..4", version))
    if cbytes != src.shape[0]:
        raise CorruptChunkError(expected("blosc header cbytes", f"{src.shape[0]} (stored length)", cbytes))
    if nbytes and (blocksize == 0 or typesize == 0):
        raise CorruptChunkError(expected("blosc header", "non-zero blocksize and typesize", (blocksize, typesize)))
    return nbytes, cbytes, blocksize, typesize


@dataclass(frozen=True)
class BloscCodec(BytesBytesCodec):
    cname: CName = "zstd"
    clevel: int = 5
    #: None or -1 = automatic (resolved by ``evolve``: bit-shuffle for 1-byte items, else byte-shuffle),
    #: as zarr-python's default
    shuffle: Shuffle | int | None = None
    typesize: int | None = None
    blocksize: int = 0

    name: ClassVar[str] = "blosc"
    aliases: ClassVar[tuple[str, ...]] = ("https://purl.org/zarr/spec/codec/blosc",)

    def __post_init__(self) -> None:
        sh = self.shuffle
        if sh is None:
            object.__setattr__(self, "shuffle", -1)
        elif isinstance(sh, (int, np.integer)) and not isinstance(sh, bool) and int(sh) in _SHUFFLE_NUM:
            object.__setattr__(self, "shuffle", _SHUFFLE_NUM[int(sh)])
        elif not (sh in _SHUFFLES or (sh == -1 and not isinstance(sh, bool))):
            raise MetadataError(expected("blosc.shuffle", f"one of {_SHUFFLES}", sh), "shuffle")
        if self.cname not in _CNAMES:
            raise MetadataError(expected("blosc.cname", f"one of {_CNAMES}", self.cname), "cname")
        for k, lo, hi, v in (("clevel", 0, 9, self.clevel), ("blocksize", 0, 2**31 - 1, self.blocksize)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise MetadataError(expected(f"blosc.{k}", f"an integer in [{lo}, {hi}]", v), k)
        t = self.typesize
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, np.integer)) or t < 1):
            raise MetadataError(expected("blosc.typesize", "a positive integer", t), "typesize")

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("cname", "clevel", "shuffle", "typesize", "blocksize"))
        cname = get_choice(cfg, "cname", path, _CNAMES)
        clevel = get_int(cfg, "clevel", path, 0, 9)
        shuffle = get_choice(cfg, "shuffle", path, (*_SHUFFLES, 0, 1, 2, -1))
        typesize = get_int(cfg, "typesize", path, 1, 2**31 - 1, default=None)
        blocksize = get_int(cfg, "blocksize", path, 0, 2**31 - 1, default=0)
        return cls(cname=cname, clevel=clevel, shuffle=shuffle, typesize=typesize, blocksize=blocksize)

    def to_dict(self) -> dict[str, Any]:
        c: dict[str, Any] = {"cname": self.cname, "clevel": int(self.clevel), "shuffle": self.shuffle}
        if self.typesize is not None:
            c["typesize"] = int(self.typesize)
        c["blocksize"] = int(self.blocksize)
        return {"name": self.name, "configuration": c}

    def evolve(self, spec: ArraySpec) -> BloscCodec:
        """Fill in ``typesize`` from the data type and resolve automatic shuffle (-1)."""
        c = self
        if c.typesize is None:
            c = replace(c, typesize=max(1, spec.dtype.itemsize))
        if c.shuffle == -1:
            c = replace(c, shuffle="bitshuffle" if c.typesize == 1 else "shuffle")
        return c

    def validate(self, spec: ArraySpec, path: str) -> None:
        c = self.evolve(spec)
        if c.shuffle != "noshuffle" and c.typesize is None:  # pragma: no cover - evolve fills it
            p = f"{path}.configuration.typesize"
            raise MetadataError(expected(p, "a positive integer (shuffle is on)", MISSING), p)

    def max_encoded_size(self, n: int) -> int:
        return max_compressed_size(n)

    def native_step(self, spec: ArraySpec | None) -> _native.Step:
        c = self.evolve(spec) if spec is not None else self
        shuffle = _SHUFFLES.index(c.shuffle) if isinstance(c.shuffle, str) else 1
        return _native.Step(_native.BLOSC, int(c.clevel), cname=c.cname, shuffle=shuffle,
                            typesize=int(c.typesize or 1), blocksize=int(c.blocksize))

    @functools.cached_property
    def _decoder(self) -> _native.Chain | None:
        """A native chain that decodes any blosc stream (the header says how), or None."""
        return _native.chain_of([self.native_step(None)])

    def encode(self, data: Any, spec: ArraySpec) -> Any:
        c = self.evolve(spec)
        if self._decoder is not None:
            chain = _native.chain_of([c.native_step(spec)])
            if chain is not None:
                return _native.encode(chain, data)
        shuffle = _SHUFFLES.index(c.shuffle)
        # passed as is: c-blosc itself falls back to 1 above BLOSC_MAX_TYPESIZE (255)
        typesize = int(c.typesize or 1)
        return _numcodecs_blosc().compress(
            as_uint8(data), c.cname.encode(), int(c.clevel), shuffle, int(c.blocksize), typesize
        )

    def _decompress(self, data: Any, dest: Any = None) -> Any:
        try:
            return _numcodecs_blosc().decompress(data, dest)
        except (RuntimeError, ValueError) as e:
            raise CorruptChunkError(expected("blosc", "a valid blosc stream", f"{type(e).__name__}: {e}")) from None

    def decode(self, data: Any, spec: ArraySpec) -> Any:
        nbytes = blosc_header(data)[0]
        limit = decode_cap(spec)
        if nbytes > limit:
            raise CorruptChunkError(expected("blosc", f"at most {limit} decoded bytes ({CAP_HINT})", nbytes))
        out = np.empty(nbytes, dtype=np.uint8)
        self.decode_into(data, out, spec)
        return out

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        nbytes = blosc_header(data)[0]
        if nbytes != dst.shape[0]:
            raise CorruptChunkError(expected("blosc", f"{dst.shape[0]} decoded bytes", nbytes))
        chain = self._decoder
        if chain is not None:
            _native.decode_into(chain, data, dst, "blosc")
        elif nbytes:
            self._decompress(data, dst)
        return True
