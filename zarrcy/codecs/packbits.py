"""The ``packbits`` codec (spec: ../shared/specs/ext-codec-packbits.md) and zarr-python's
``numcodecs.packbits``, both run by the nogil kernels of :mod:`zarrcy._kernels._bits`.

``packbits`` is ``array -> bytes``: every element's components (two for complex types)
are cut to bits ``first_bit .. last_bit`` of their ``N``-bit value and laid end to end
in C order, component ``i`` at stream bits ``[i*b, (i+1)*b)``, stream bit ``j`` in bit
``j % 8`` of byte ``j // 8`` (least significant first, as zarrs writes it); the stream
is padded with 0 bits to whole bytes.  Decoding shifts the bits back to ``first_bit``
and sign-extends signed integer types from the last kept bit (all the way up, also
into the byte that holds a 2/4-bit ``int2``/``int4`` in memory); other types are
zero-extended.  Configuration:

* ``padding_encoding``: ``"none"`` (default), ``"first_byte"`` or ``"last_byte"`` -- a
  byte holding the number of padding bits before or after the stream.  Decoding checks
  it (a wrong value is a CorruptChunkError);
* ``first_bit`` (default 0 / ``null``), ``last_bit`` (default ``N - 1`` / ``null``):
  ``first_bit <= last_bit < N``, else a MetadataError at the key.

The registry's ``schema.json`` for this codec spells the keys of an earlier draft
(``start_bit``, ``end_bit``, ``start_byte``, ``end_byte``); they are read as the
README's names, which are written back.

Data types (``N`` per component): ``bool`` 1, ``int2/uint2`` 2, ``int4/uint4/
float4_e2m1fn`` 4, ``float6_e2m3fn/float6_e3m2fn`` 6, ``int8..uint64``, ``float32/64``,
``bfloat16`` and the complex types of these (``complex_float4_e2m1fn``,
``complex_float6_*``, ``complex_bfloat16``, ``complex_float32/64``) where the data type
exists -- the spec's list; also ``float16``, ``complex64/128``, ``complex_float16`` and
the 8-bit ``float8_*`` types, whose bits are as plain (zarrs packs ``float16`` too).
Whole-byte types without ``first_bit``/``last_bit`` encode as the ``bytes`` codec
with ``endian: little`` does (the kernel copies).

The stored size is exact (``ceil(n * k / 8)`` plus the padding byte), so a stored value
of any other length is refused before decoding (CorruptChunkError).

Partial reads (selections, points, single elements) when no compressor follows: element
``i`` is at stream bits ``[i*k, (i+1)*k)``, so one range read fetches the bytes of the
flat span the selection covers (from a byte-aligned element), beside the padding byte,
which is checked; a short read (truncated value) is a CorruptChunkError.

``numcodecs.packbits`` (zarr-python's wrapper of numcodecs' ``PackBits``) is *not* an
alias: it is an ``array -> array`` codec for ``bool`` arrays whose output is a 1-d
``uint8`` array of ``1 + ceil(n / 8)`` bytes -- the padding-bit count, then
``numpy.packbits`` order (most significant bit first).  The v3 codec with
``"first_byte"`` has the same header but the opposite bit order within each byte, so
the two layouts differ unless every byte reads the same in both bit orders.  :class:`NumcodecsPackBits` reads and writes numcodecs' layout
(bit for bit numcodecs' output, tested) under its own name.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, NamedTuple, Self, cast

import numpy as np

from zarrcy.byte_range import RangeRequest
from zarrcy.codecs._base import ArrayArrayCodec, ArrayBytesCodec, ArraySpec, ByteGetter, Selection, selection_shape
from zarrcy.codecs._common import NoConfiguration, as_uint8, config_dict, nbytes_of, selection_indices
from zarrcy.errors import CorruptChunkError, MetadataError, expected

__all__ = ["PackBitsCodec", "NumcodecsPackBits", "PaddingEncoding", "components_for"]

PaddingEncoding = Literal["none", "first_byte", "last_byte"]
_PADDINGS: tuple[str, ...] = ("none", "first_byte", "last_byte")
#: the schema.json's (earlier draft's) spellings -> the README's
_OLD_KEYS = {"start_bit": "first_bit", "end_bit": "last_bit"}
_OLD_PADDINGS = {"start_byte": "first_byte", "end_byte": "last_byte"}

#: type name -> bits per component (N), when not 8 * the component's storage bytes
_NARROW = {"bool": 1, "int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4,
           "float6_e2m3fn": 6, "float6_e3m2fn": 6}
_WHOLE = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "bfloat16"}
_COMPLEX = {"complex64": "float32", "complex128": "float64"}
_SIGNED = {"int2", "int4", "int8", "int16", "int32", "int64"}


class Components(NamedTuple):
    """How ``packbits`` sees one data type: ``ncomp`` components of ``bits`` (N) bits,
    each stored in ``word`` bytes; ``signed``: sign-extended on decode."""

    ncomp: int
    bits: int
    word: int
    signed: bool


def _type_name(spec: ArraySpec) -> str:
    dt = spec.data_type
    name = dt.name if dt is not None else None
    return name if isinstance(name, str) else spec.dtype.name


def components_for(spec: ArraySpec) -> Components | None:
    """The :class:`Components` of ``spec``'s data type; None when unsupported."""
    name = _type_name(spec)
    size = spec.dtype.itemsize
    comp = _COMPLEX.get(name) or (name[len("complex_"):] if name.startswith("complex_") else None)
    ncomp = 1
    if comp is not None:
        if size % 2:
            return None
        name, size, ncomp = comp, size // 2, 2
    if size not in (1, 2, 4, 8):
        return None
    if name in _NARROW:
        bits = _NARROW[name]
    elif name in _WHOLE or (name.startswith("float8_") and size == 1):
        bits = 8 * size
    else:
        return None
    return Components(ncomp, bits, size, name in _SIGNED)


def _bit_or_null(cfg: dict[str, Any], key: str, path: str) -> int | None:
    v = cfg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 0 <= v <= 63:
        p = f"{path}.configuration.{key}"
        raise MetadataError(expected(p, "null or a bit index in [0, 63]", v), p)
    return int(v)


@dataclass(frozen=True)
class PackBitsCodec(ArrayBytesCodec):
    padding_encoding: PaddingEncoding = "none"
    first_bit: int | None = None
    last_bit: int | None = None

    name: ClassVar[str] = "packbits"

    def __post_init__(self) -> None:
        p = f"{self.name}.configuration"
        if self.padding_encoding not in _PADDINGS:
            raise MetadataError(expected(f"{p}.padding_encoding", f"one of {_PADDINGS}", self.padding_encoding),
                                f"{p}.padding_encoding")
        _check_order(self.first_bit, self.last_bit, self.name)

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        raw = config_dict(configuration, path, ("padding_encoding", "first_bit", "last_bit", *_OLD_KEYS))
        cfg: dict[str, Any] = {}
        for k, v in raw.items():
            new = _OLD_KEYS.get(k, k)
            if new in cfg:
                p = f"{path}.configuration.{k}"
                raise MetadataError(expected(p, f"one of {new!r} and {k!r}", "both"), p)
            cfg[new] = v
        pad = cfg.get("padding_encoding", "none")
        pad = _OLD_PADDINGS.get(pad, pad) if isinstance(pad, str) else pad
        if pad not in _PADDINGS:
            p = f"{path}.configuration.padding_encoding"
            raise MetadataError(expected(p, f"one of {_PADDINGS}", cfg.get("padding_encoding")), p)
        first = _bit_or_null(cfg, "first_bit", path)
        last = _bit_or_null(cfg, "last_bit", path)
        _check_order(first, last, path)
        return cls(padding_encoding=cast(PaddingEncoding, pad), first_bit=first, last_bit=last)

    def to_dict(self) -> dict[str, Any]:
        cfg: dict[str, Any] = {"padding_encoding": self.padding_encoding}
        if self.first_bit is not None:
            cfg["first_bit"] = self.first_bit
        if self.last_bit is not None:
            cfg["last_bit"] = self.last_bit
        return {"name": self.name, "configuration": cfg}

    # -- the data type ------------------------------------------------------------------
    def _layout(self, spec: ArraySpec, path: str) -> tuple[Components, int, int]:
        """(components, first bit, bits kept per component) for ``spec``; MetadataError
        at ``path`` (the codec's JSON path) when the data type or the bits do not fit."""
        c = components_for(spec)
        if c is None:
            p = f"{path}.name"
            raise MetadataError(expected(p, f"a codec for data type {_type_name(spec)!r} (packbits packs bool, "
                                         "int2/4, uint2/4, float4/6/8, integer, float and complex types)",
                                         self.name), p)
        first = 0 if self.first_bit is None else self.first_bit
        last = c.bits - 1 if self.last_bit is None else self.last_bit
        for key, v in (("first_bit", first), ("last_bit", last)):
            if v >= c.bits:
                p = f"{path}.configuration.{key}"
                raise MetadataError(expected(p, f"a bit index below {c.bits} (the bits per component of "
                                             f"{_type_name(spec)!r})", v), p)
        if last < first:
            p = f"{path}.configuration.last_bit"
            raise MetadataError(expected(p, f"a bit index >= first_bit ({first})", last), p)
        return c, first, last - first + 1

    def validate(self, spec: ArraySpec, path: str) -> None:
        self._layout(spec, path)

    def _sizes(self, n_elements: int, spec: ArraySpec) -> tuple[int, int, int]:
        """(stream bytes, padding bits, header bytes) for ``n_elements`` elements."""
        c, _, b = self._layout(spec, self.name)
        nbits = n_elements * c.ncomp * b
        return (nbits + 7) // 8, -nbits % 8, 0 if self.padding_encoding == "none" else 1

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        body, _, head = self._sizes(input_size, spec)
        return body + head

    # -- encode / decode ----------------------------------------------------------------
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytes | bytearray | memoryview:
        from zarrcy._kernels import _bits

        c, first, b = self._layout(spec, self.name)
        body, pad, head = self._sizes(chunk.size, spec)
        out = np.empty(body + head, dtype=np.uint8)
        start = 1 if self.padding_encoding == "first_byte" else 0
        words = np.ascontiguousarray(chunk, dtype=spec.dtype).reshape(-1).view(f"u{c.word}")
        dst = out[start:start + body]
        if b == 8 * c.word and sys.byteorder == "little":
            dst[...] = words.view(np.uint8)  # the bytes codec's little-endian layout
        elif _bits.pack_into(words, dst, first, b) != body:  # pragma: no cover - sizes checked above
            raise ValueError("packbits: kernel refused the chunk")
        if head:
            out[0 if start else body] = pad
        return memoryview(out)

    def _body(self, data: Any, spec: ArraySpec) -> np.ndarray:
        """The stream bytes of a stored value, after checking its length and padding byte."""
        n = math.prod(spec.shape)
        body, pad, head = self._sizes(n, spec)
        buf = as_uint8(data)
        if buf.shape[0] != body + head:
            raise CorruptChunkError(expected(f"{self.name} chunk", f"{body + head} bytes ({n} elements of "
                                             f"{_type_name(spec)}, padding {self.padding_encoding})",
                                             f"{nbytes_of(data)} bytes"))
        if head:
            at = 0 if self.padding_encoding == "first_byte" else body
            if int(buf[at]) != pad:
                raise CorruptChunkError(expected(f"{self.name} {self.padding_encoding} (padding bits)", f"{pad}",
                                                 int(buf[at])))
            buf = buf[1:] if at == 0 else buf[:body]
        return buf

    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> np.ndarray:
        out = np.empty(spec.shape, dtype=spec.dtype)
        self._unpack(self._body(data, spec), out, spec)
        return out

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, spec: ArraySpec) -> bool:
        if not (out.flags.c_contiguous and out.flags.writeable and out.dtype == spec.dtype):
            return False
        self._unpack(self._body(data, spec), out, spec)
        return True

    # -- partial reads: element i sits at stream bits [i*k, (i+1)*k), so a selection needs
    # only the bytes of the flat span it covers (when no compressor follows: the pipeline
    # routes partial reads here only then) --------------------------------------------------
    supports_partial_decode: ClassVar[bool] = True

    def decode_partial(
        self, getter: ByteGetter, selection: Selection, spec: ArraySpec, out: np.ndarray | None = None
    ) -> np.ndarray | None:
        shape = selection_shape(selection, spec.shape)
        parts = [selection_indices(s, n) for s, n in zip(selection, spec.shape)]
        flat = np.ravel_multi_index(np.ix_(*parts), spec.shape).reshape(-1) if parts else np.zeros(1, np.int64)
        span = self._read_span(getter, flat, spec)
        if span is None:
            return None
        values, start = span
        piece = values[flat - start].reshape(shape) if flat.size else np.empty(shape, spec.dtype)
        if out is None:
            return piece
        out[...] = piece
        return out

    def decode_points(self, getter: ByteGetter, coords: np.ndarray, spec: ArraySpec) -> np.ndarray | None:
        flat = np.ravel_multi_index(tuple(coords), spec.shape).reshape(-1)
        span = self._read_span(getter, flat, spec)
        if span is None:
            return None
        values, start = span
        return values[flat - start]

    def _read_span(self, getter: ByteGetter, flat: np.ndarray, spec: ArraySpec) -> tuple[np.ndarray, int] | None:
        """The elements ``min(flat) .. max(flat)`` (widened down to a byte boundary of the
        stream) decoded from one range read, and the first one's flat index; None when the
        value is missing.  The padding byte is read beside it and checked; a short read
        (a truncated value) is a CorruptChunkError."""
        c, first, b = self._layout(spec, self.name)
        n = math.prod(spec.shape)
        body, pad, head = self._sizes(n, spec)
        k = c.ncomp * b  # bits per element
        align = 8 // math.gcd(8, k)  # elements per byte-aligned group
        lo = int(flat.min()) if flat.size else 0
        hi = int(flat.max()) + 1 if flat.size else 0
        start = lo - lo % align
        count = hi - start
        off = (start * k) // 8 + (1 if self.padding_encoding == "first_byte" else 0)
        nbytes = (count * k + 7) // 8
        ranges = [RangeRequest(off, nbytes)]
        if head:
            ranges.append(RangeRequest(0 if self.padding_encoding == "first_byte" else body, 1))
        got = getter.get_ranges(ranges)
        if got[0] is None:
            return None
        data = as_uint8(got[0])
        if data.shape[0] != nbytes or (head and (got[1] is None or len(got[1]) != 1)):
            raise CorruptChunkError(expected(f"{self.name} chunk", f"{body + head} bytes ({n} elements of "
                                             f"{_type_name(spec)})", "fewer (a truncated value)"))
        if head and int(as_uint8(got[1])[0]) != pad:
            raise CorruptChunkError(expected(f"{self.name} {self.padding_encoding} (padding bits)", f"{pad}",
                                             int(as_uint8(got[1])[0])))
        values = np.empty(count, dtype=spec.dtype)
        self._unpack(data, values, spec)
        return values, start

    def _unpack(self, body: np.ndarray, out: np.ndarray, spec: ArraySpec) -> None:
        from zarrcy._kernels import _bits

        c, first, b = self._layout(spec, self.name)
        words = out.reshape(-1).view(f"u{c.word}")
        if b == 8 * c.word and sys.byteorder == "little":
            words.view(np.uint8)[...] = body
        elif _bits.unpack_into(body, words, first, b, c.signed) != words.shape[0]:  # pragma: no cover
            raise ValueError("packbits: kernel refused the chunk")


def _check_order(first: int | None, last: int | None, path: str) -> None:
    if first is not None and last is not None and last < first:
        p = f"{path}.configuration.last_bit"
        raise MetadataError(expected(p, f"a bit index >= first_bit ({first})", last), p)


@dataclass(frozen=True)
class NumcodecsPackBits(NoConfiguration, ArrayArrayCodec):
    """zarr-python's ``numcodecs.packbits``: ``bool`` -> 1-d ``uint8`` (padding-bit
    count, then ``numpy.packbits`` order), as numcodecs' ``PackBits``."""

    name: ClassVar[str] = "numcodecs.packbits"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {}}  # zarr-python requires the key

    def validate(self, spec: ArraySpec, path: str) -> None:
        if spec.dtype != np.bool_:
            p = f"{path}.name"
            raise MetadataError(expected(p, f"a codec for data type {_type_name(spec)!r} "
                                         "(numcodecs.packbits packs bool arrays only)", self.name), p)

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        n = math.prod(spec.shape)
        return replace(spec, shape=(1 + (n + 7) // 8,), dtype=np.dtype(np.uint8), fill_value=np.uint8(0),
                       data_type=None)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return 1 + (input_size + 7) // 8

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        flat = np.ascontiguousarray(chunk, dtype=np.bool_).reshape(-1)
        out = np.empty(1 + (flat.size + 7) // 8, dtype=np.uint8)
        out[0] = -flat.size % 8
        out[1:] = np.packbits(flat)  # numpy's C loop, most significant bit first
        return out

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        n = math.prod(spec.shape)
        buf = np.ascontiguousarray(chunk).reshape(-1).view(np.uint8)
        if buf.shape[0] != 1 + (n + 7) // 8:
            raise CorruptChunkError(expected(f"{self.name} chunk", f"{1 + (n + 7) // 8} bytes", int(buf.shape[0])))
        if int(buf[0]) != -n % 8:
            raise CorruptChunkError(expected(f"{self.name} header (padding bits)", f"{-n % 8}", int(buf[0])))
        return np.unpackbits(buf[1:], count=n).view(np.bool_).reshape(spec.shape)
