"""The ``vlen-utf8`` and ``vlen-bytes`` codecs: variable-length strings and byte strings.

Registered zarr extensions (no spec file under ../shared/specs; the text is in the
zarr-extensions repository): codecs ``codecs/vlen-utf8`` and ``codecs/vlen-bytes``, data
types ``data-types/string`` and ``data-types/bytes``.  Each codec is only valid with its
data type (``vlen-utf8`` with ``"string"``, ``vlen-bytes`` with ``"bytes"``, which
zarr-python 3.4 writes as ``"variable_length_bytes"``).  Configuration: none (an
empty ``configuration`` object, as zarr-python writes it, is accepted; zarrcy writes
just the name).

``array -> bytes``.  Chunk format (the numcodecs ``VLenUTF8``/``VLenBytes`` layout that
zarr-python 3.4 uses for both Zarr v2 filters and v3 codecs), all integers unsigned
32-bit little-endian::

    count                      number of items = number of elements of the chunk
    len_0  bytes_0             item 0: its byte length, then its bytes
    ...                        (elements in C order)
    len_{count-1} bytes_{count-1}

``vlen-utf8`` items are UTF-8 text (decoding is strict: invalid UTF-8 is an error),
``vlen-bytes`` items are raw bytes.  A chunk cannot hold an item or an item count of
2**32 or more.

Reading is strict: fewer than 4 bytes, a count larger than the buffer can hold (checked
before anything is allocated), a count different from the chunk's element count, a
length running past the end, bytes left over after the last item, or invalid UTF-8 all
raise :class:`~zarrcy.errors.CorruptChunkError` (the array layer adds the chunk key).

Decoded values: ``string`` chunks are numpy ``StringDType()`` arrays (what zarr-python
3.4 returns), ``bytes`` chunks object arrays of ``bytes``.  The kernels live in
:mod:`zarrcy._kernels._vlen`: the header walk, UTF-8 validation and the packing of
strings into ``StringDType`` arrays (numpy's NpyString C API) all run without the GIL
and create no Python objects -- about 10x faster than going through Python ``str``
objects (zarr-python's path).  Packing holds the target array's string allocator lock,
so chunks decoded into one output array pack one at a time (header scans and UTF-8
validation, done before the lock is taken, still run in parallel).  ``bytes`` items become ``bytes`` objects in one C loop.  Encoding reads
``StringDType`` arrays the same way; object arrays go through the CPython API.

A stored chunk's size does not follow from its shape here, so the array layer caps a
stored ``string``/``bytes`` chunk at ``zarrcy.config(max_chunk_bytes=...)`` instead of
the fixed-size bound, and a compressor before this codec decodes at most
``zarrcy.codecs._limits.decode_cap`` bytes (about ``max_vlen_element_bytes`` per
element), checked while it inflates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from zarrcy._kernels import _vlen
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec
from zarrcy.codecs._common import NoConfiguration, as_uint8
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["VLenUTF8Codec", "VLenBytesCodec", "STRING_DTYPE"]

STRING_DTYPE = np.dtype(np.dtypes.StringDType())


class _VLenCodec(NoConfiguration, ArrayBytesCodec):
    """Shared parts of the two codecs (subclasses set ``name``, ``_utf8``, ``_data_type``)."""

    _utf8: ClassVar[bool]
    _data_type: ClassVar[str]
    _kind: ClassVar[str]  # numpy dtype kind of the decoded array

    def validate(self, spec: ArraySpec, path: str) -> None:
        dt = spec.data_type
        if dt is not None:
            ok = getattr(dt, "name", None) == self._data_type
            got = dt.to_json() if hasattr(dt, "to_json") else dt
        else:
            ok = spec.dtype.kind == self._kind
            got = str(spec.dtype)
        if not ok:
            raise MetadataError(expected(path, f"the {self._data_type!r} data type for the {self.name} codec", got), path)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return None

    # -- decode -----------------------------------------------------------------------
    def _scan(self, data: Any, spec: ArraySpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Validate the item headers: (buffer, starts, stops) of the chunk's items."""
        buf = as_uint8(data)
        size = buf.shape[0]
        n = math.prod(spec.shape)
        count = _vlen.read_count(buf)
        if count < 0:
            raise CorruptChunkError(expected(self.name, "at least 4 bytes (the item count)", f"{size} bytes"))
        # bound the count by the buffer before allocating anything for it
        if count > (size - 4) // 4:
            raise CorruptChunkError(
                expected(self.name, f"an item count that fits in {size} bytes (at most {(size - 4) // 4})", count)
            )
        if count != n:
            raise CorruptChunkError(expected(f"{self.name} item count", f"{n} (chunk shape {spec.shape})", count))
        starts = np.empty(n, dtype=np.int64)
        stops = np.empty(n, dtype=np.int64)
        bad = _vlen.scan_items(buf, starts, stops)
        if bad >= 0:
            raise CorruptChunkError(
                expected(f"{self.name} item {bad}", f"a length field and bytes within the {size}-byte chunk", "data past the end")
            )
        end = int(stops[-1]) if n else 4
        if end != size:
            raise CorruptChunkError(expected(self.name, f"{end} bytes (the end of item {n - 1})", f"{size} bytes"))
        return buf, starts, stops

    def _pack_into(self, data: Any, out: np.ndarray, spec: ArraySpec) -> None:
        """vlen-utf8 into a C-contiguous writable StringDType array of ``spec.shape``."""
        buf, starts, stops = self._scan(data, spec)
        bad = _vlen.pack_str(buf, starts, stops, out)
        if bad >= 0:
            raw = bytes(buf[starts[bad] : stops[bad]][:40])
            raise CorruptChunkError(expected(f"{self.name} item {bad}", "valid UTF-8", raw))

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        if self._utf8:
            out = np.empty(spec.shape, dtype=STRING_DTYPE)
            self._pack_into(data, out, spec)
            return out
        buf, starts, stops = self._scan(data, spec)
        flat = np.empty(starts.shape[0], dtype=object)
        _vlen.build_bytes(buf, starts, stops, flat)
        return flat.reshape(spec.shape)

    def decode_into(self, data: Any, out: np.ndarray, spec: ArraySpec) -> bool:
        if (
            self._utf8
            and out.dtype == STRING_DTYPE
            and out.flags.c_contiguous
            and out.flags.writeable
            and tuple(out.shape) == tuple(spec.shape)
        ):
            self._pack_into(data, out, spec)
        else:
            np.copyto(out, self.decode(data, spec), casting="unsafe")
        return True

    # -- encode -----------------------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytearray:
        arr = np.asarray(chunk)
        want = str if self._utf8 else bytes
        if self._utf8 and arr.dtype.kind in "TU":
            # C order through numpy's string API: no Python objects
            if arr.dtype.kind == "U":
                arr = arr.astype(STRING_DTYPE)
            out, bad = _vlen.encode_strings(np.ascontiguousarray(arr))
            flat = arr.reshape(-1)
            if out is None:
                if bad == flat.shape[0]:
                    raise ValueError(expected(self.name, f"at most {_vlen.MAX_U32} items per chunk", bad))
                raise ValueError(
                    expected(f"{self.name} element {bad}", f"a string (not missing) of at most {_vlen.MAX_U32} bytes", flat[bad])
                )
            return out
        if arr.dtype.kind != "O":
            raise TypeError(expected(self.name, f"{want.__name__} elements", f"an array of {arr.dtype}"))
        flat = arr.reshape(-1)  # C order (a copy when arr is not C-contiguous)
        if not (flat.flags.c_contiguous and flat.flags.writeable):
            flat = flat.copy()  # the kernel takes a writable object memoryview
        out, bad = _vlen.encode_items(flat, self._utf8)
        if out is None:
            if bad == flat.shape[0]:
                raise ValueError(expected(self.name, f"at most {_vlen.MAX_U32} items per chunk", bad))
            item = flat[bad]
            if isinstance(item, want):
                raise ValueError(expected(f"{self.name} element {bad}", f"at most {_vlen.MAX_U32} bytes", len(item)))
            raise TypeError(expected(f"{self.name} element {bad}", f"a {want.__name__}", item))
        return out


@dataclass(frozen=True)
class VLenUTF8Codec(_VLenCodec):
    """``vlen-utf8``: variable-length UTF-8 strings (data type ``string``)."""

    name: ClassVar[str] = "vlen-utf8"
    _utf8: ClassVar[bool] = True
    _data_type: ClassVar[str] = "string"
    _kind: ClassVar[str] = "T"


@dataclass(frozen=True)
class VLenBytesCodec(_VLenCodec):
    """``vlen-bytes``: variable-length byte strings (data type ``bytes``)."""

    name: ClassVar[str] = "vlen-bytes"
    _utf8: ClassVar[bool] = False
    _data_type: ClassVar[str] = "bytes"
    _kind: ClassVar[str] = "O"
