"""``zarrcy.hdf5_chunk``: the internal, read-only codec of HDF5 sources (issue 17).

:class:`zarrcy.storage.hdf5.HDF5Store` serves each HDF5 chunk as it is stored in the
file, prefixed with the chunk's 4-byte little-endian *filter mask* (bit ``i`` set:
filter ``i`` of the pipeline was skipped for this chunk, as HDF5 records it; all
bits set: the bytes are the raw chunk).  This codec undoes the HDF5 filter pipeline
itself, so chunks decode in parallel threads outside h5py's global lock:

* deflate (filter 1): a zlib stream (RFC 1950), decompressed by libdeflate's C API
  (``_kernels/_deflate.zlib_decompress_into``, GIL released) straight into the output
  array when it is the last step, else into the thread's reused scratch buffer;
* shuffle (filter 2, ``values[0]`` = element size): HDF5's byte shuffle, undone straight
  into the output array by the ``_kernels/_shuffle`` kernel (no GIL);
* fletcher32 (filter 3): the 4-byte checksum after the data (H5checksum.c
  ``H5_checksum_fletcher32``), checked modulo 65535 and stripped.

Configuration: ``filters`` (the HDF5 pipeline in encode order: ``{"id", "values"}``
objects) and ``endian`` of the stored elements.  This codec is internal: it only
decodes (encoding raises), and the converter never writes it into destination
metadata (zarrcy/convert/engine.py always re-encodes HDF5 sources).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar, Self

import numpy as np

from zarrcy._kernels import _deflate as _k
from zarrcy._kernels._fletcher32 import fletcher32 as _fletcher32
from zarrcy._kernels._shuffle import unshuffle_into as _unshuffle_into
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec
from zarrcy.codecs._common import thread_bytes
from zarrcy.metadata._parse import config_dict
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["HDF5ChunkCodec", "fletcher32"]

_KNOWN = {1: "deflate", 2: "shuffle", 3: "fletcher32"}
_ENDIANS = ("little", "big")


def fletcher32(data: Any) -> tuple[int, int]:
    """``(sum1, sum2)`` of HDF5's Fletcher-32 over ``data``, each modulo 65535
    (16-bit big-endian words; an odd last byte counts as ``byte << 8``): the
    :mod:`~zarrcy._kernels._fletcher32` kernel, without the GIL."""
    return _fletcher32(memoryview(data).cast("B"))


def _check_fletcher(payload: memoryview) -> memoryview:
    if len(payload) < 4:
        raise CorruptChunkError(expected("hdf5 fletcher32", "at least 4 bytes (the checksum)", len(payload)))
    data, stored = payload[:-4], bytes(payload[-4:])
    s1, s2 = fletcher32(data)
    for order in ("little", "big"):  # H5Zfletcher32.c also accepts the byte-reversed form
        v = int.from_bytes(stored, order)
        if (v & 0xFFFF) % 65535 == s1 and (v >> 16) % 65535 == s2:
            return data
    raise CorruptChunkError(expected("hdf5 fletcher32", "a matching checksum", "a mismatch (damaged chunk)"))


def _load_libdeflate() -> bool:
    """Resolve libdeflate's entry points (idempotent; see zarrcy/_kernels/_deflate.pyx)."""
    try:
        import deflate._deflate as mod
    except ImportError:  # pragma: no cover - deflate is a dependency
        return False
    return bool(_k.load(mod.__file__))


_HAVE_LIBDEFLATE = _load_libdeflate()


def _inflate_into(payload: Any, dst: np.ndarray) -> None:
    """Decompress the zlib stream ``payload`` (HDF5's deflate filter) into ``dst``, which
    it must fill exactly.  libdeflate without the GIL; bytes after the stream are
    ignored, as H5Zdeflate.c ignores them."""
    nbytes = dst.shape[0]
    src = np.frombuffer(payload, dtype=np.uint8)
    if _HAVE_LIBDEFLATE:
        code, _ = _k.zlib_decompress_into(src, dst)
        if code != _k.UNAVAILABLE:
            if code < 0:
                why = "more data" if code == _k.INSUFFICIENT_SPACE else "a damaged stream"
                raise CorruptChunkError(expected("hdf5 deflate", f"a zlib stream of {nbytes} bytes", why))
            if code != nbytes:
                raise CorruptChunkError(expected("hdf5 deflate", f"{nbytes} decoded bytes", code))
            return
    d = zlib.decompressobj()  # libdeflate without zlib entry points: Python's zlib
    try:
        out = d.decompress(src, nbytes + 1)
    except zlib.error as e:
        raise CorruptChunkError(expected("hdf5 deflate", "a zlib stream", f"{e}")) from None
    if len(out) != nbytes or not d.eof:
        raise CorruptChunkError(expected("hdf5 deflate", f"{nbytes} decoded bytes", len(out)))
    dst[:] = np.frombuffer(out, np.uint8)


@dataclass(frozen=True)
class HDF5ChunkCodec(ArrayBytesCodec):
    """See the module docstring.  ``filters_json``: the pipeline as canonical JSON."""

    filters_json: str = "[]"
    endian: str = "little"

    name: ClassVar[str] = "zarrcy.hdf5_chunk"

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("filters", "endian"))
        filters = cfg.get("filters", [])
        if not isinstance(filters, list):
            raise MetadataError(expected(f"{path}.configuration.filters", "a list", filters))
        norm = []
        for i, f in enumerate(filters):
            p = f"{path}.configuration.filters[{i}]"
            if not isinstance(f, dict) or f.get("id") not in _KNOWN:
                raise MetadataError(expected(p, f"an HDF5 filter among {sorted(_KNOWN)}", f))
            vals = f.get("values", [])
            if not isinstance(vals, list) or not all(type(v) is int for v in vals):
                raise MetadataError(expected(f"{p}.values", "a list of integers", vals))
            norm.append({"id": f["id"], "values": vals})
        endian = cfg.get("endian", "little")
        if endian not in _ENDIANS:
            raise MetadataError(expected(f"{path}.configuration.endian", "'little' or 'big'", endian))
        return cls(json.dumps(norm, sort_keys=True), endian)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"filters": json.loads(self.filters_json), "endian": self.endian}}

    def validate(self, spec: ArraySpec, path: str) -> None:
        if spec.dtype.hasobject or spec.dtype.itemsize == 0:
            raise MetadataError(expected(path, "a fixed-size data type", str(spec.dtype)))

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return None

    def _filters(self) -> list[tuple[int, list[int]]]:
        cached = self.__dict__.get("_parsed")
        if cached is None:
            cached = [(int(f["id"]), list(f["values"])) for f in json.loads(self.filters_json)]
            object.__setattr__(self, "_parsed", cached)
        return cached

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> Any:
        raise MetadataError("zarrcy.hdf5_chunk: internal read-only codec of HDF5 sources; it cannot encode "
                            "(convert the source to write it with Zarr codecs)")

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        self.decode_into(data, out, spec)
        return out

    def decode_into(self, data: Any, out: np.ndarray, spec: ArraySpec) -> bool:
        mv = memoryview(data).cast("B")
        if len(mv) < 4:
            raise CorruptChunkError(expected("hdf5 chunk", "a 4-byte filter mask and the chunk", len(mv)))
        mask = int.from_bytes(mv[:4], "little")
        buf: Any = mv[4:]
        nbytes = spec.nbytes
        active = [f for i, f in enumerate(self._filters()) if not (mask >> i) & 1]
        dt = spec.dtype
        swap = dt.itemsize > 1 and dt.kind in "iufc" and self.endian != ("little" if np.little_endian else "big")
        # the last decode step writes straight into ``out`` when it can (no copy)
        target = out.reshape(-1).view(np.uint8) if out.flags.c_contiguous and out.flags.writeable else None
        placed = False
        # the size each filter's output has on encode: fletcher32 adds its 4 bytes
        sizes = [nbytes]
        for fid, _ in active:
            sizes.append(sizes[-1] + (4 if fid == 3 else 0))
        for step, (fid, vals) in enumerate(reversed(active)):
            k = len(active) - 1 - step  # the filter's position in the encode order
            last = k == 0
            direct = last and target is not None and sizes[k] == nbytes
            if fid == 3:
                buf = _check_fletcher(memoryview(buf).cast("B"))
            elif fid == 1:
                if direct:
                    assert target is not None
                    _inflate_into(buf, target)
                    placed = True
                else:  # an intermediate result: the thread's scratch buffer
                    dst = thread_bytes("hdf5-inflate", sizes[k])
                    _inflate_into(buf, dst)
                    buf = dst
            elif fid == 2:
                size = vals[0] if vals else dt.itemsize
                if len(buf) != sizes[k]:
                    raise CorruptChunkError(expected("hdf5 shuffle", f"{sizes[k]} bytes", len(buf)))
                if size > 1 and len(buf) >= size:
                    src = np.frombuffer(buf, dtype=np.uint8)
                    if direct:
                        assert target is not None
                        _unshuffle_into(src, target, size)  # straight into the output (nogil kernel)
                        placed = True
                    else:
                        tmp = np.empty(len(buf), dtype=np.uint8)
                        _unshuffle_into(src, tmp, size)
                        buf = tmp
        if not placed:
            if len(buf) != nbytes:
                raise CorruptChunkError(expected("hdf5 chunk", f"{nbytes} bytes for shape {spec.shape} {dt}", len(buf)))
            if target is None:
                stored = dt.newbyteorder("<" if self.endian == "little" else ">") if dt.itemsize > 1 else dt
                out[...] = np.frombuffer(buf, dtype=stored).reshape(spec.shape)
                return True
            np.copyto(target, np.frombuffer(buf, dtype=np.uint8))
        if swap:
            out.byteswap(inplace=True)
        return True
