"""Codec abstractions (v3-core.rst "Chunk encoding", "Codecs").

Three kinds, named after the spec: ``ArrayArrayCodec``, ``ArrayBytesCodec``,
``BytesBytesCodec``.  Codecs are frozen dataclasses with symmetric
``from_dict`` / ``to_dict`` (CONVENTIONS.md rule 3).  Per-chunk work touches no JSON:
``resolve`` runs once per array (through :class:`zarrcy.codecs.pipeline.CodecPipeline`).

Codecs never see stores: partial reads go through the :class:`ByteGetter` protocol.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, Self, Sequence

import numpy as np

from zarrcy.byte_access import ByteGetter, ByteSetter, ValueSnapshot
from zarrcy.errors import CorruptChunkError, expected
from zarrcy.ortho import select  # noqa: F401  (re-exported: the codecs apply selections with it)

if TYPE_CHECKING:
    from zarrcy.codecs._native import Step

__all__ = [
    "ArraySpec",
    "ByteGetter",
    "ByteSetter",
    "Codec",
    "ArrayArrayCodec",
    "ArrayBytesCodec",
    "BytesBytesCodec",
    "CodecKind",
    "ValueSnapshot",
    "Selection",
    "select",
    "assign",
    "fill_key",
]

#: a selection within one chunk, per dimension: an int (drops the axis), a slice with a
#: positive step (start/stop inside the chunk), or a 1-d int64 index array (orthogonal)
Selection = tuple[Any, ...]


def assign(a: np.ndarray, sel: Selection, value: Any) -> None:
    """``a[sel] = value`` with orthogonal semantics (``value`` shaped like ``select(a, sel)``)."""
    n_arr = sum(1 for s in sel if isinstance(s, np.ndarray))
    if n_arr == 0:
        a[tuple(sel) + (Ellipsis,)] = value
        return
    if n_arr == 1:
        # numpy counts an int as an advanced index too: an int and an index array apart
        # (a[0, :, [0, 1]]) would move the array's axis to the front and store the value
        # transposed.  Ints become length-1 slices and the value gains their axes.
        if not any(isinstance(s, (int, np.integer)) for s in sel):
            a[tuple(sel) + (Ellipsis,)] = value
            return
        wide = tuple(slice(int(s), int(s) + 1) if isinstance(s, (int, np.integer)) else s for s in sel)
        shape = selection_shape(wide, a.shape)
        v = np.broadcast_to(np.asarray(value), selection_shape(sel, a.shape))
        a[wide + (Ellipsis,)] = v.reshape(shape)
        return
    keep = [not isinstance(s, (int, np.integer)) for s in sel]
    parts = [
        (s if isinstance(s, np.ndarray) else np.arange(*s.indices(n)) if isinstance(s, slice) else np.array([s]))
        for s, n in zip(sel, a.shape)
    ]
    v = np.broadcast_to(np.asarray(value), tuple(len(p) for p, k in zip(parts, keep) if k))
    a[np.ix_(*parts)] = v.reshape(tuple(len(p) for p in parts))


def selection_shape(sel: Selection, shape: Sequence[int]) -> tuple[int, ...]:
    out = []
    for s, n in zip(sel, shape):
        if isinstance(s, slice):
            out.append(len(range(*s.indices(n))))
        elif isinstance(s, np.ndarray):
            out.append(int(s.shape[0]))
    return tuple(out)

CodecKind = Literal["array->array", "array->bytes", "bytes->bytes"]


@dataclass(frozen=True)
class ArraySpec:
    """The decoded representation a codec sees: chunk shape, numpy dtype, fill value.

    ``dtype`` is always in native byte order (endianness is the ``bytes`` codec's job).
    ``fill_value`` is a numpy scalar of ``dtype``.  ``data_type`` is the Zarr data type
    object (``zarrcy.metadata.data_type.DataType``) when known; codecs that need a
    Zarr-level type (``cast_value``) use it, all others ignore it.
    """

    shape: tuple[int, ...]
    dtype: np.dtype
    fill_value: Any
    data_type: Any = None

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for s in self.shape:
            n *= s
        return n


def fill_key(spec: ArraySpec) -> bytes | str:
    """A hashable fingerprint of ``spec.fill_value`` for caches keyed by chunk spec.

    The value's bytes in ``spec.dtype``: unlike ``==`` they tell -0.0 from 0.0 and NaN
    payloads apart.  Object dtypes (the string/bytes data types: their buffer holds
    pointers, not the value) and values that do not convert key by ``repr``.
    """
    if spec.dtype.hasobject:
        return repr(spec.fill_value)
    try:
        return np.asarray(spec.fill_value, dtype=spec.dtype).tobytes()
    except (TypeError, ValueError, OverflowError):
        return repr(spec.fill_value)


class Codec(ABC):
    """Base of every codec.  Subclasses set ``name`` (the spec's identifier) and ``kind``."""

    name: ClassVar[str]
    kind: ClassVar[CodecKind]
    #: older identifiers read as this codec (written back as ``name``)
    aliases: ClassVar[tuple[str, ...]] = ()

    @classmethod
    @abstractmethod
    def from_dict(cls, configuration: dict[str, Any] | None, path: str) -> Self:
        """Build from the ``configuration`` object; ``path`` is the JSON path for errors.

        Unknown keys, missing required keys and wrong types raise MetadataError.
        """

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "configuration": {...}}`` fully resolved (round-trips)."""

    def evolve(self, spec: ArraySpec) -> Self:
        """This codec specialised for ``spec`` (e.g. ``transpose`` "C"/"F" -> a permutation,
        ``bytes`` without ``endian`` for 1-byte types); default: unchanged."""
        return self

    def validate(self, spec: ArraySpec, path: str) -> None:
        """Check this codec against its decoded representation; raise MetadataError."""

    def resolve(self, spec: ArraySpec) -> ArraySpec:
        """Encoded representation for a decoded ``spec`` (identity unless array->array)."""
        return spec

    def compute_encoded_size(self, input_size: int, spec: ArraySpec) -> int | None:
        """Encoded size in bytes for ``input_size`` (elements or bytes), or None if variable."""
        return None


class ArrayArrayCodec(Codec):
    kind: ClassVar[CodecKind] = "array->array"

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """``spec`` is the decoded (input) representation."""

    @abstractmethod
    def decode(self, chunk: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """``spec`` is the decoded (output) representation."""

    #: :meth:`encoded_view` gives a writable view of a decoded-shape array in the encoded
    #: representation (the pipeline then decodes straight into the caller's array)
    supports_encoded_view: ClassVar[bool] = False
    #: declared: encodes each element on its own, keeping the chunk's shape (scale_offset,
    #: cast_value), so a writer may apply it to a whole selection's values itself
    #: (:meth:`zarrcy.codecs.pipeline.CodecPipeline.encoded_stage`)
    elementwise: ClassVar[bool] = False

    def encoded_view(self, out: np.ndarray) -> np.ndarray | None:
        """A view of ``out`` in the encoded representation, or None when this ``out``
        (strided) has none (``reshape``): the pipeline then decodes and copies."""
        raise NotImplementedError(f"{self.name}: no encoded view")

    def native_order(self, spec: ArraySpec) -> tuple[int, ...] | None:
        """Declared capability for the native kernels: this codec only permutes axes, and
        this is its permutation of ``spec``'s axes (a ``transpose``); None (the default):
        the kernels cannot run it."""
        return None

    def decode_into(self, chunk: np.ndarray, out: np.ndarray, spec: ArraySpec) -> bool:
        """Decode ``chunk`` straight into ``out`` (C-contiguous, decoded dtype and shape);
        False (nothing written) when not supported: the caller uses :meth:`decode`."""
        return False

    # -- partial I/O: codecs that only rearrange elements pass partial reads through --
    def encode_selection(self, selection: Selection, spec: ArraySpec) -> Selection | None:
        """``selection`` of the decoded chunk expressed on the encoded chunk, or None
        when partial access does not compose through this codec (the default) -- for
        the whole chunk, or (``reshape``) for this selection only: the pipeline then
        decodes the whole value and selects."""
        return None

    def encode_values(self, values: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """Encoded values of elements (any shape) written through a partial encode
        (vindex points); only codecs whose :meth:`encode_selection` passes partial
        access are asked.  Default: unchanged (codecs that only move elements)."""
        return values

    def encode_coords(self, coords: np.ndarray, spec: ArraySpec) -> np.ndarray:
        """Points (``(ndim, k)`` int64 chunk coordinates, vindex) on the encoded chunk.
        Default: the coordinate arrays as an orthogonal selection (right for codecs that
        only move axes); codecs whose :meth:`encode_selection` is not per axis override it."""
        enc = self.encode_selection(tuple(coords), spec)
        if enc is None:  # pragma: no cover - only called when partial access composes
            raise NotImplementedError(f"{self.name}: partial access does not compose")
        return np.asarray(enc, dtype=np.int64).reshape(len(enc), -1)

    def encoded_piece(
        self, piece: np.ndarray, selection: Selection, encoded: Selection, spec: ArraySpec, view: bool
    ) -> np.ndarray | None:
        """``piece`` (``selection`` of a decoded chunk, ints dropped) shaped as ``encoded``
        (what :meth:`encode_selection` returned) selects on the encoded chunk.

        ``view=True`` (a partial decode writes through it): a view of ``piece``, or None
        when none exists (``reshape`` of a strided piece); codecs that pass partial access
        decode elements unchanged.  ``view=False`` (a partial encode reads it): the
        encoded values, a copy where needed (``bitround`` rounds them)."""
        raise NotImplementedError(f"{self.name}: partial access does not compose")


class ArrayBytesCodec(Codec):
    kind: ClassVar[CodecKind] = "array->bytes"
    #: declared capability: ``encode`` / ``decode`` / ``decode_into`` and the partial
    #: methods take the call's execution context as an extra last argument ``ctx``
    #: (``zarrcy.execution.ExecContext``: sharding spreads inner chunks over its
    #: threads); the pipeline passes it only then
    uses_context: ClassVar[bool] = False

    @abstractmethod
    def encode(self, chunk: np.ndarray, spec: ArraySpec) -> bytes | bytearray | memoryview | None:
        """Encode; ``None`` means "nothing to store" (e.g. an all-fill shard)."""

    @abstractmethod
    def decode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> np.ndarray:
        """Decode to an array of ``spec.shape`` / ``spec.dtype``."""

    def decode_into(self, data: bytes | bytearray | memoryview, out: np.ndarray, spec: ArraySpec) -> bool:
        """Decode straight into ``out`` (shape ``spec.shape``); False if not supported."""
        return False

    def decodes_into_strided(self, spec: ArraySpec) -> bool:
        """True when :meth:`decode_into` writes a strided ``out`` (a chunk's region of a
        larger array) with no chunk-sized intermediate copy, so a caller should pass that
        view rather than decode into a contiguous scratch chunk and copy it (sharding:
        its kernel scatters every inner chunk with the view's strides).  Default: False."""
        return False

    def native_swap(self, spec: ArraySpec) -> int | None:
        """Declared capability for the native kernels: the chunk is its elements' bytes
        in C order, byte-swapped as this says (0 none, 1 whole elements, 2/4/8 words of
        that width: complex numbers); None (the default): the kernels cannot run it."""
        return None

    def fix_endian_inplace(self, out: np.ndarray, spec: ArraySpec) -> None:
        """After a compressor wrote this codec's encoded bytes into ``out``: make them
        native (default: nothing to do)."""

    @property
    def inner_chunk_shape(self) -> tuple[int, ...] | None:
        """The unit of encoding inside one stored value when it holds several (the
        sharding codec's inner chunks); None otherwise."""
        return None

    # -- partial I/O (DESIGN.md "Read", step 4) --------------------------------------
    #: True when :meth:`decode_partial` / :meth:`encode_partial` read or write less than
    #: the whole value (sharding); the defaults below decode / encode it whole
    supports_partial_decode: ClassVar[bool] = False
    supports_partial_encode: ClassVar[bool] = False

    def after_array_codecs(self, leading: Sequence[Codec], spec: ArraySpec) -> tuple[ArrayBytesCodec, ArraySpec] | None:
        """Declared capability of a codec with an inner chain (sharding): this codec for
        values already encoded by ``leading``, the first (elementwise) array->array codecs
        of its inner chain, and the spec of those values; None (the default): no inner chain."""
        return None

    def decode_partial(
        self, getter: ByteGetter, selection: Selection, spec: ArraySpec, out: np.ndarray | None = None
    ) -> np.ndarray | None:
        """Decode ``selection`` (see :data:`Selection`) of the value behind ``getter``.
        Writes into ``out`` when given (shape: the selection's, ints dropped) and returns
        it; None when the value does not exist (``out`` untouched).
        Default: read and decode the whole value, then select."""
        data = getter.get()
        if data is None:
            return None
        piece = select(self.decode(data, spec), selection)
        if out is None:
            return np.array(piece)
        out[...] = piece
        return out

    def read_cached_box(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], box: Sequence[tuple[int, int]],
                        spec: ArraySpec, out: np.ndarray) -> bool:
        """Serve the box ``box`` of the *array* (per dimension ``[start, stop)``; values
        of ``spec`` on a regular grid, ``getter_of(chunk coords)`` the stored values) into
        ``out`` (C order) from the decoded-chunk cache alone, across stored values: True
        when done, False when the caller must read value by value (nothing touched).
        Default: False (sharding serves cached inner chunks, ``sharding/cached.py``)."""
        return False

    def read_cached_points(self, getter_of: Callable[[tuple[int, ...]], ByteGetter], coords: np.ndarray,
                           spec: ArraySpec, out: np.ndarray) -> bool:
        """:meth:`read_cached_box` for points of the array (``coords``: (ndim, N) int64)
        into the 1-d ``out``.  Default: False."""
        return False

    def encode_partial(self, setter: ByteSetter, selection: Selection, value: np.ndarray, spec: ArraySpec) -> None:
        """Write ``value`` into ``selection`` of the value behind ``setter``.
        Default: read, decode, merge, encode and store the whole value."""
        data = setter.get()
        if data is None:
            chunk = np.full(spec.shape, spec.fill_value, dtype=spec.dtype)
        else:
            chunk = np.array(self.decode(data, spec))
        assign(chunk, selection, value)
        enc = self.encode(chunk, spec)
        if enc is None:
            setter.delete()
        else:
            setter.set(enc)

    def decode_points(self, getter: ByteGetter, coords: np.ndarray, spec: ArraySpec) -> np.ndarray | None:
        """Elements at chunk coordinates ``coords`` (int64, shape ``(ndim, k)``, in
        bounds): a 1-d array of ``k`` values; None when the value does not exist.
        Default: decode the whole value and gather."""
        data = getter.get()
        if data is None:
            return None
        return np.asarray(self.decode(data, spec)[tuple(coords)])

    def empty_encoding(self, spec: ArraySpec) -> bytes | bytearray | memoryview:
        """Stored bytes of an all-fill chunk, for stores that cannot delete (zip) when
        :meth:`encode` returned None; default: encode a chunk of fill values."""
        enc = self.encode(np.full(spec.shape, spec.fill_value, dtype=spec.dtype), spec)
        if enc is None:  # pragma: no cover - codec contract
            raise NotImplementedError(f"{self.name}: no stored form of an all-fill chunk")
        return enc

    def encode_points(self, setter: ByteSetter, coords: np.ndarray, values: np.ndarray, spec: ArraySpec) -> None:
        """Write ``values[k]`` at chunk coordinates ``coords[:, k]`` ((ndim, k) int64;
        vindex).  Default: read, decode, set, encode and store the whole value."""
        data = setter.get()
        if data is None:
            chunk = np.full(spec.shape, spec.fill_value, dtype=spec.dtype)
        else:
            chunk = np.array(self.decode(data, spec))
        chunk[tuple(coords)] = values
        enc = self.encode(chunk, spec)
        if enc is None:
            setter.delete()
        else:
            setter.set(enc)

    def read_point(self, getter: ByteGetter, local: Sequence[int], spec: ArraySpec) -> Any:
        """One element at chunk coordinates ``local``; the fill value if the value is missing."""
        piece = self.decode_partial(getter, tuple(int(i) for i in local), spec)
        if piece is None:
            return np.asarray(spec.fill_value, dtype=spec.dtype)[()]
        return piece[()]


class BytesBytesCodec(Codec):
    kind: ClassVar[CodecKind] = "bytes->bytes"

    @abstractmethod
    def encode(self, data: bytes | bytearray | memoryview, spec: ArraySpec) -> bytes | bytearray | memoryview:
        ...

    @abstractmethod
    def decode(
        self, data: bytes | bytearray | memoryview, spec: ArraySpec
    ) -> bytes | bytearray | memoryview | np.ndarray:
        """The decoded bytes: any buffer, or a 1-d uint8 array (e.g. a view of ``data``)."""

    def max_encoded_size(self, n: int) -> int | None:
        """Largest encoded size for ``n`` input bytes (None: no bound known)."""
        return None

    def native_step(self, spec: ArraySpec | None) -> Step | None:
        """Declared capability: this codec as a step of the native codec engine
        (``zarrcy.codecs._native``), or None (the default): Python only.  ``spec``:
        the chunk's decoded representation when known (settings derived from it)."""
        return None

    def decode_sized(self, data: Any, size: int, spec: ArraySpec) -> Any:
        """Decode when the decoded size is known to be ``size`` bytes (codecs with a
        streaming decoder stop there: no decompression bomb).  Default: :meth:`decode_into`
        a new buffer of ``size`` bytes (the decoder can never write more); codecs without
        it decode, then the size is checked."""
        buf = np.empty(size, dtype=np.uint8)  # uninitialised: costs nothing when unused
        if self.decode_into(data, buf, spec):
            return buf
        out = self.decode(data, spec)
        n = out.nbytes if isinstance(out, (memoryview, np.ndarray)) else len(out)
        if n != size:
            raise CorruptChunkError(expected(f"{self.to_dict().get('name')} output", f"{size} bytes", n))
        return out

    def decode_into(self, data: Any, dst: np.ndarray, spec: ArraySpec) -> bool:
        """Decode into ``dst`` (a uint8 array of the known decoded size); False when not
        supported (nothing written)."""
        return False
