"""The ``bytes`` codec (spec: ../shared/specs/v3-codec-bytes.rst).

``array -> bytes``: elements in C (lexicographical) order, each in the configured
byte order.  Configuration:

* ``endian``: ``"little"`` or ``"big"``; required exactly when endianness applies
  (multi-byte numeric types, incl. complex -- each component swapped -- and the
  multi-byte ml_dtypes types such as ``bfloat16``).  Single-byte types and raw
  ``r*`` types (numpy ``V``) ignore it; it is dropped from their metadata.

Fixed-length strings (zarr-python's ``fixed_length_utf32``, numpy ``U<n>``) are UTF-32
code units in the configured ``endian`` (it is required for them); decoded and encoded
code units must be Unicode scalar values (no surrogates, at most ``0x10FFFF``) --
anything else in a stored chunk is a :class:`CorruptChunkError`, and an array holding
lone surrogates is refused on write (:class:`CastError`).  ``null_terminated_bytes``
(numpy ``S<n>``) has no byte order: its bytes are copied as they are.

Records (``struct``, numpy structured dtypes) and ml_dtypes' ``complex32`` /
``bcomplex32`` swap each byte-ordered unit on its own (every multi-byte field, each
complex component; :func:`zarrcy.metadata.struct.byte_order_units`); a legacy
``structured`` array whose codec has no ``endian`` is little-endian
(ext-data-types/structured.md "Missing endian configuration").

Decoding in native order is zero-copy (``np.frombuffer`` + ``reshape``); the
other order is one byte-swapping copy straight into the destination (numpy's
casting copy, which runs without the GIL).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, Self

import numpy as np

from zarrcy._kernels import _utf32
from zarrcy.codecs._base import ArrayBytesCodec, ArraySpec
from zarrcy.codecs._common import NATIVE_ENDIAN, MISSING, config_dict, get_choice, nbytes_of
from zarrcy.errors import CastError, CorruptChunkError, MetadataError, expected
from zarrcy.metadata.struct import byte_order_units, swap_units

__all__ = ["BytesCodec", "Endian", "endian_applies"]

Endian = Literal["little", "big"]
_ENDIANS: tuple[str, ...] = ("little", "big")


def endian_applies(dtype: np.dtype) -> bool:
    """True when the byte order of ``dtype``'s elements matters (v3-codec-bytes.rst)."""
    if dtype.itemsize <= 1:
        return False
    if dtype.kind in "biufcmMU":
        return True
    if _by_units(dtype):
        return bool(byte_order_units(dtype))
    # kind "V": raw bits (np.void, no byte order) or an ml_dtypes scalar (has one)
    return dtype.kind == "V" and dtype.type is not np.void and dtype.fields is None


def _upper_bits_masks() -> dict[np.dtype, int]:
    """Sub-byte floats (float4_e2m1fn, float6_*, and complex pairs of them) -> the mask of
    their value bits: the upper bits of each byte are ignored on read (their specs, "bytes")
    and ml_dtypes would read them as the sign.  (ml_dtypes' sub-byte ints mask themselves.)"""
    from zarrcy.metadata.data_type import DATA_TYPES

    out = {}
    for d in DATA_TYPES.values():
        fmt = d.float_format
        if fmt is not None and fmt.nbits < 8:
            out[d.dtype] = (1 << fmt.nbits) - 1
    return out


_UPPER_BITS = _upper_bits_masks()


def _clear_upper_bits(arr: np.ndarray) -> np.ndarray:
    """``arr`` (a sub-byte float type) with the ignored bits cleared: in place when writable."""
    mask = _UPPER_BITS[arr.dtype]
    if not arr.flags.writeable:
        arr = arr.copy()
    for part in [arr[n] for n in arr.dtype.names] if arr.dtype.names else [arr]:  # complex pairs: each byte
        bits = part.view(np.uint8)  # one-byte elements: a view of any strides
        np.bitwise_and(bits, mask, out=bits)
    return arr


def _by_units(dtype: np.dtype) -> bool:
    """Records and ml_dtypes complex types: byte order applies per field / component."""
    return dtype.fields is not None or dtype.kind == "W"


def _swap_rows(arr: np.ndarray, dtype: np.dtype) -> None:
    """Swap every byte-ordered unit of the C-contiguous ``arr`` in place."""
    swap_units(arr.reshape(-1).view(np.uint8).reshape(-1, dtype.itemsize), byte_order_units(dtype))


def _bits_dtype(dtype: np.dtype) -> np.dtype:
    """A builtin dtype whose copies move ``dtype``'s bytes unchanged (same shape when viewed).

    ml_dtypes types are copied as unsigned integers of the same width so that
    numpy's casting machinery (which can swap bytes, GIL-free) applies to them too.
    """
    if dtype.kind in "biufcmMUS" or dtype.type is np.void:
        return dtype
    return np.dtype(f"u{dtype.itemsize}")


def _first_bad_code_point(arr: np.ndarray) -> tuple[int, int] | None:
    """(element index in C order, code unit) of the first code unit of a native-order
    ``U`` array that is not a Unicode scalar value (a surrogate or above 0x10FFFF)."""
    if arr.size == 0:
        return None
    units = np.ascontiguousarray(arr).reshape(-1).view(np.uint32)
    i = _utf32.first_invalid_code_unit(units)  # GIL-free scan, no temporaries
    if i < 0:
        return None
    return i // (arr.dtype.itemsize // 4), int(units[i])


def _check_decoded_utf32(arr: np.ndarray) -> None:
    hit = _first_bad_code_point(arr)
    if hit is not None:
        raise CorruptChunkError(
            expected(f"bytes codec: element {hit[0]}", "UTF-32 code units that are Unicode scalar values "
                     "(no surrogates, at most 0x10FFFF)", f"0x{hit[1]:X}")
        )


@dataclass(frozen=True)
class BytesCodec(ArrayBytesCodec):
    """``bytes`` codec; ``endian=None`` means "not given" (fine for single-byte types)."""

    endian: Endian | None = "little"

    name: ClassVar[str] = "bytes"
    aliases: ClassVar[tuple[str, ...]] = ("endian",)  # pre-PR #263 name of this codec

    # -- metadata -------------------------------------------------------------------
    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("endian",))
        return cls(endian=get_choice(cfg, "endian", path, _ENDIANS, default=None))

    def to_dict(self) -> dict[str, Any]:
        if self.endian is None:
            return {"name": self.name}
        return {"name": self.name, "configuration": {"endian": self.endian}}

    def validate(self, spec: ArraySpec, path: str) -> None:
        dt = spec.dtype
        if dt.hasobject or dt.itemsize == 0:
            raise MetadataError(expected(path, "a fixed-size data type for the bytes codec", str(dt)), path)
        legacy = spec.data_type is not None and spec.data_type.name == "structured"  # no endian: little
        if endian_applies(dt) and self.endian is None and not legacy:
            p = f"{path}.configuration.endian"
            raise MetadataError(expected(p, f"'little' or 'big' (required for {dt})", MISSING), p)

    def evolve(self, spec: ArraySpec) -> BytesCodec:
        """Drop ``endian`` where it does not apply (it is then not written back)."""
        if self.endian is not None and not endian_applies(spec.dtype):
            return replace(self, endian=None)
        return self

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size * spec.dtype.itemsize

    # -- per chunk ------------------------------------------------------------------
    def _swaps(self, dtype: np.dtype) -> bool:
        # records reaching here without an endian are legacy "structured" ones: little-endian
        endian = self.endian or ("little" if dtype.fields is not None else None)
        return endian is not None and endian != NATIVE_ENDIAN and endian_applies(dtype)

    def _stored_dtype(self, dtype: np.dtype) -> np.dtype:
        """The dtype of the stored bytes, as seen through :func:`_bits_dtype`."""
        bits = _bits_dtype(dtype)
        if self._swaps(dtype):
            return bits.newbyteorder(">" if self.endian == "big" else "<")
        return bits

    def _check_size(self, data: Any, spec: ArraySpec) -> None:
        n = nbytes_of(data)
        if n != spec.nbytes:
            raise CorruptChunkError(expected("bytes codec", f"{spec.nbytes} bytes for shape {spec.shape} {spec.dtype}", n))

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> memoryview:
        dt = spec.dtype
        if dt.kind == "U":
            hit = _first_bad_code_point(chunk)
            if hit is not None:
                raise CastError(
                    expected(f"element {hit[0]} of the chunk", "a string of Unicode scalar values for "
                             "fixed_length_utf32 (no lone surrogates)", f"U+{hit[1]:04X}"), hit[0], hit[1]
                )
        if self._swaps(dt) and _by_units(dt):
            out = np.array(chunk, dtype=dt, order="C")  # a copy, swapped in place
            _swap_rows(out, dt)
        elif self._swaps(dt):
            out = np.empty(chunk.shape, dtype=self._stored_dtype(dt))
            np.copyto(out, chunk.view(_bits_dtype(dt)), casting="unsafe")
        else:
            out = np.ascontiguousarray(chunk)
        return memoryview(out.reshape(-1).view(np.uint8))

    def decode(self, data: Any, spec: ArraySpec) -> np.ndarray:
        """An array of ``spec.shape``; a read-only view of ``data`` when no swap is needed."""
        self._check_size(data, spec)
        dt = spec.dtype
        src = np.frombuffer(data, dtype=self._stored_dtype(dt))
        if not self._swaps(dt):
            out = src.view(dt).reshape(spec.shape)
        elif _by_units(dt):
            out = src.view(dt).reshape(spec.shape).copy()
            _swap_rows(out, dt)
        else:
            out = np.empty(spec.shape, dtype=dt)
            np.copyto(out.view(_bits_dtype(dt)), src.reshape(spec.shape), casting="unsafe")
        if dt.kind == "U":
            _check_decoded_utf32(out)
        if dt in _UPPER_BITS:
            out = _clear_upper_bits(out)
        return out

    def decode_into(self, data: Any, out: np.ndarray, spec: ArraySpec) -> bool:
        self._check_size(data, spec)
        dt = spec.dtype
        if self._swaps(dt) and _by_units(dt):
            out[...] = self.decode(data, spec)
            return True
        src = np.frombuffer(data, dtype=self._stored_dtype(dt)).reshape(spec.shape)
        np.copyto(out.view(_bits_dtype(dt)), src, casting="unsafe")
        if dt.kind == "U":
            _check_decoded_utf32(out)
        if dt in _UPPER_BITS:
            _clear_upper_bits(out)
        return True

    def native_swap(self, spec: ArraySpec) -> int | None:
        dt = spec.dtype
        if dt.hasobject or dt.fields is not None or dt.kind not in "biufcmM":
            return None
        if not self._swaps(dt):
            return 0
        if dt.kind in "biufmM" and dt.itemsize in (2, 4, 8):
            return 1
        if dt.kind == "c" and dt.itemsize in (8, 16):
            return dt.itemsize // 2
        return None

    def fix_endian_inplace(self, out: np.ndarray, spec: ArraySpec) -> None:
        """Turn stored bytes already placed in ``out`` (C-contiguous) into native values."""
        if self._swaps(spec.dtype) and _by_units(spec.dtype):
            _swap_rows(out, spec.dtype)
        elif self._swaps(spec.dtype):
            v = out.view(_bits_dtype(spec.dtype))
            v.byteswap(inplace=True)
        if spec.dtype.kind == "U":
            _check_decoded_utf32(out)
        if spec.dtype in _UPPER_BITS:
            _clear_upper_bits(out)

