"""The ``bitround`` codec (spec: ../shared/specs/ext-codec-bitround.md) and zarr-python's
``numcodecs.bitround``, both run by the nogil kernels of :mod:`zarrcy._kernels._bits`.

``array -> array``, same shape and data type.  Configuration:

* ``keepbits`` (required): for floating-point types the mantissa bits kept, ``0 ..
  mantissa`` (float16 10, bfloat16 7, float32 23, float64 52; complex types per
  component); for integer types the bits kept from the most significant set bit,
  ``1 .. width``.  Outside that range: MetadataError at ``...configuration.keepbits``
  when the codec meets the array's data type.  (The spec's prose says "at least 1",
  its schema ``minimum: 0``; numcodecs and zarrs take 0 for floats: so do we.)

Encoding rounds; decoding returns the stored values unchanged (rounding is lossy).

* **Floats** (spec "Compatibility": as numcodecs): round half to even on the bit
  pattern, ``maskbits = mantissa - keepbits`` low bits cleared, the addition wrapping
  as numcodecs' numpy arithmetic does -- bit for bit numcodecs' ``BitRound`` (tested).
  zarrs differs only for NaNs whose pattern is within half a quantum of all ones
  (it saturates and keeps a NaN, numcodecs wraps to ``+0.0``); older zarrs releases
  rounded bfloat16 as if it had float16's 10 mantissa bits (current zarrs: 7, as here).
* **Integers** (``int8..uint64``, ``numpy.datetime64``/``timedelta64`` as int64):
  zarrs' rule, the only implementation: keep ``keepbits`` bits from the most
  significant set bit of the two's complement pattern, round half to even, the
  addition saturating at the all-ones pattern (so ``uint8`` 255 keeps 224, and a
  negative integer rounds on its pattern: ``int8 -1`` (``0xff``) -> ``-32``).

Data types (spec "Supported data types"): ``float16, float32, float64, bfloat16,
complex64, complex128`` and ``complex_float16 / complex_bfloat16 / complex_float32 /
complex_float64`` where the data type exists, the integer types and the numpy time
types; others are a MetadataError naming the data type.

**``numcodecs.bitround``** (the spec's deprecated alias) is :class:`NumcodecsBitRound`:
the same rounding, limited to what numcodecs' ``BitRound`` accepts (``float16/32/64``,
``keepbits`` 0..52), and **written back under the name it was read with**:
zarr-python 3.4 and numcodecs know only ``numcodecs.bitround``, so rewriting an
array's metadata (a resize, an attribute update) must not make it unreadable to them.
New arrays should use ``bitround`` (the spec: the alias SHOULD NOT be used for new data).

Partial reads and writes pass through (the codec is elementwise): inside
``sharding_indexed``, a selection decodes only the inner chunks it touches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Self

import numpy as np

from zarrcy.codecs._base import ArrayArrayCodec, ArraySpec, Selection
from zarrcy.codecs._common import config_dict, get_int
from zarrcy.errors import MetadataError, expected

__all__ = ["BitroundCodec", "NumcodecsBitRound", "rounding_for"]

#: float types -> mantissa bits (spec "Supported data types"); complex_<f> uses <f>'s
MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
_COMPLEX = {"complex64": "float32", "complex128": "float64"}
_TIME = ("numpy.datetime64", "numpy.timedelta64")


class Rounding(NamedTuple):
    """How ``bitround`` treats one data type: float (mantissa bits) or integer (width),
    on unsigned storage words of ``word`` bytes (complex: one per component)."""

    is_float: bool
    bits: int
    word: int


def _type_name(spec: ArraySpec) -> str:
    """The Zarr data type name of ``spec`` (numpy's name when the pipeline has none:
    after a codec that changes the data type)."""
    dt = spec.data_type
    name = dt.name if dt is not None else None
    if isinstance(name, str):
        return name
    d = spec.dtype
    if d.kind == "M":
        return "numpy.datetime64"
    if d.kind == "m":
        return "numpy.timedelta64"
    return d.name


def rounding_for(spec: ArraySpec) -> Rounding | None:
    """The :class:`Rounding` of ``spec``'s data type, None when unsupported."""
    name = _type_name(spec)
    size = spec.dtype.itemsize
    comp = _COMPLEX.get(name) or (name[len("complex_"):] if name.startswith("complex_") else None)
    if comp is not None:
        if comp in MANTISSA_BITS and size % 2 == 0:
            return Rounding(True, MANTISSA_BITS[comp], size // 2)
        return None
    if name in MANTISSA_BITS:
        return Rounding(True, MANTISSA_BITS[name], size)
    if name in _TIME:
        return Rounding(False, 64, 8)
    kind = spec.dtype.kind
    if name.startswith(("int", "uint")) and kind in "iu" and size in (1, 2, 4, 8):
        return Rounding(False, 8 * size, size)
    return None


@dataclass(frozen=True)
class BitroundCodec(ArrayArrayCodec):
    keepbits: int

    name: ClassVar[str] = "bitround"

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = config_dict(configuration, path, ("keepbits",), required=("keepbits",))
        return cls(keepbits=get_int(cfg, "keepbits", path, 0, cls._max_keepbits()))

    @classmethod
    def _max_keepbits(cls) -> int:
        return 64

    def __post_init__(self) -> None:
        k = self.keepbits
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k <= self._max_keepbits():
            p = f"{self.name}.configuration.keepbits"
            raise MetadataError(expected(p, f"an integer in [0, {self._max_keepbits()}]", k), p)
        object.__setattr__(self, "keepbits", int(k))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "configuration": {"keepbits": self.keepbits}}

    def _supported(self, r: Rounding, spec: ArraySpec) -> bool:
        return True

    def _rounding(self, spec: ArraySpec, path: str) -> Rounding:
        r = rounding_for(spec)
        if r is None or not self._supported(r, spec):
            p = f"{path}.name"
            raise MetadataError(expected(p, f"a codec for data type {_type_name(spec)!r} "
                                         f"({self.name} rounds {self._types_text()})", self.name), p)
        return r

    def _types_text(self) -> str:
        return "float16/32/64, bfloat16, complex and integer types"

    def validate(self, spec: ArraySpec, path: str) -> None:
        r = self._rounding(spec, path)
        lo = 0 if r.is_float else 1
        if not lo <= self.keepbits <= r.bits:
            p = f"{path}.configuration.keepbits"
            what = f"{r.bits} mantissa bits" if r.is_float else f"{r.bits} bits"
            raise MetadataError(
                expected(p, f"an integer in [{lo}, {r.bits}] for data type {_type_name(spec)!r} ({what})",
                         self.keepbits), p)

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        return input_size

    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return self.encode_values(chunk, spec)

    def encode_values(self, values: np.ndarray, spec: ArraySpec) -> np.ndarray:
        from zarrcy._kernels import _bits

        r = self._rounding(spec, self.name)
        src = np.ascontiguousarray(values)
        out = np.empty(src.shape, dtype=src.dtype)
        if not src.size:
            return out
        word = np.dtype(f"u{r.word}")
        s = src.reshape(-1).view(word)
        d = out.reshape(-1).view(word)
        if r.is_float:
            n = _bits.round_mantissa_into(s, d, r.bits - self.keepbits)
        else:
            n = _bits.round_integer_into(s, d, self.keepbits)
        if n != s.shape[0]:  # pragma: no cover - validate() checked keepbits
            raise ValueError(f"{self.name}: kernel refused keepbits={self.keepbits} for {spec.dtype}")
        return out

    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        return chunk

    supports_encoded_view: ClassVar[bool] = True

    def encoded_view(self, out: np.ndarray) -> np.ndarray:
        return out

    # elementwise: partial reads pass through (decode is the identity), partial writes
    # round the values written
    def encode_selection(self, selection: Selection, spec: ArraySpec) -> Selection:
        return selection

    def encoded_piece(self, piece: np.ndarray, selection: Selection, encoded: Selection,
                      spec: ArraySpec, view: bool) -> np.ndarray:
        return piece if view else self.encode_values(piece, spec)


@dataclass(frozen=True)
class NumcodecsBitRound(BitroundCodec):
    """zarr-python's ``numcodecs.bitround`` (written back under that name): numcodecs'
    ``BitRound`` natively, for the float types numcodecs accepts."""

    name: ClassVar[str] = "numcodecs.bitround"
    codec_id: ClassVar[str] = "bitround"

    @classmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        cfg = dict(config_dict(configuration, path, ("keepbits", "id"), required=("keepbits",)))
        if "id" in cfg and cfg.pop("id") != "bitround":  # tolerated when it names the codec
            p = f"{path}.configuration.id"
            raise MetadataError(expected(p, "'bitround'", (configuration or {}).get("id")), p)
        return cls(keepbits=get_int(cfg, "keepbits", path, 0, cls._max_keepbits()))

    @classmethod
    def _max_keepbits(cls) -> int:
        return 52

    def _supported(self, r: Rounding, spec: ArraySpec) -> bool:
        # numcodecs: "Only float arrays (16-64bit) can be bit-rounded" (numpy kind "f")
        return spec.dtype.kind == "f"

    def _types_text(self) -> str:
        return "float16, float32 and float64 only; use 'bitround' for other types"
