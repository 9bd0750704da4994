"""Array metadata documents (v3-core.rst "Array metadata", "Extensions").

:class:`ArrayMetadata` is a frozen dataclass; :meth:`ArrayMetadata.from_json` validates
a ``zarr.json`` document (bytes, str or dict) and :meth:`ArrayMetadata.to_bytes` writes
it deterministically, in the key order ``zarr_format, node_type, shape, data_type,
chunk_grid, chunk_key_encoding, fill_value, codecs, attributes, dimension_names,
storage_transformers`` followed by preserved extra keys.  ``attributes`` (when
empty), ``dimension_names`` (when absent) and ``storage_transformers`` (when empty)
are omitted.  NaN/Infinity never appear as bare JSON tokens: float NaN/inf inside
``attributes`` are written as the strings ``"NaN"``/``"Infinity"``/``"-Infinity"``
(bare tokens, as zarr-python writes them, are accepted on read).

Unknown top-level keys are accepted only when their value is an object with
``"must_understand": false`` (kept in ``extra`` and written back); storage transformers
likewise (none is implemented).  Codec parsing is delegated to
``zarrcy.codecs.parse_codecs``.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field, replace
from decimal import Decimal
from functools import cached_property
from typing import Any, Protocol, Sequence

import numpy as np

from zarrcy.chunk_grid import RegularChunkGrid, parse_chunk_grid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.chunk_key_encoding import ChunkKeyEncoding, parse_chunk_key_encoding
from zarrcy.codecs import parse_codecs
from zarrcy.codecs._base import ArrayArrayCodec, ArrayBytesCodec, ArraySpec, Codec
from zarrcy.codecs.registry import resolve_codecs
from zarrcy.errors import MetadataError, UnknownExtensionError, expected
from zarrcy.metadata._parse import (
    INT64_MAX,
    check_rank,
    dumps,
    expect_int_list,
    expect_list,
    expect_object,
    load_json_object,
    normalize_json_value,
    parse_extension,
)
from zarrcy.metadata.data_type import DataType, parse_data_type
from zarrcy.metadata.fill_value import fill_value_to_json, needs_exact_text, parse_fill_value

__all__ = ["ArrayMetadata", "ArrayMetadataLike", "DataTypeLike"]

_MANDATORY = ("zarr_format", "node_type", "shape", "data_type", "chunk_grid", "chunk_key_encoding", "fill_value", "codecs")
_KNOWN = frozenset((*_MANDATORY, "attributes", "dimension_names", "storage_transformers"))


def _parse_codecs(value: list[Any], spec: ArraySpec, path: str) -> list[Codec]:
    return parse_codecs(value, spec, path)


def _check_codecs_per_edge(
    codecs: Sequence[Codec], grid: RectilinearChunkGrid, shape: tuple[int, ...], spec: ArraySpec, path: str
) -> None:
    """A rectilinear grid's codecs must accept every chunk shape (e.g. sharding's inner
    chunks divide every shard edge, as zarr-python requires).  Codec constraints are per
    axis, so each distinct edge is checked once against the largest other edges: work
    bounded by the runs, never by the product of distinct edges.  The common chains are
    checked directly: without array->array codecs only the array->bytes codec's inner
    chunks constrain the shape (by divisibility; resolving a sharding layout per edge
    would cost ~1 ms each)."""
    if not any(isinstance(c, ArrayArrayCodec) for c in codecs):
        for i, c in enumerate(codecs):
            if isinstance(c, ArrayBytesCodec):
                inner = c.inner_chunk_shape
                if inner is None:
                    return
                for axis, size in enumerate(shape):
                    for e in grid.axis_edges(axis, size):
                        if e % inner[axis]:
                            p = f"{path}[{i}].configuration.chunk_shape[{axis}]"
                            raise MetadataError(
                                expected(p, f"a divisor of every shard edge of axis {axis} (edge {e})", inner[axis]), p)
                return
    for axis, size in enumerate(shape):
        for e in grid.axis_edges(axis, size)[:-1]:
            s = spec.shape[:axis] + (e,) + spec.shape[axis + 1 :]
            resolve_codecs(list(codecs), ArraySpec(s, spec.dtype, spec.fill_value, spec.data_type), path)


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def check_format(doc: dict[str, Any], node_type: str, path: str) -> None:
    """``zarr_format`` must be 3 and ``node_type`` must be ``node_type``."""
    if "zarr_format" not in doc:
        raise MetadataError(expected(_join(path, "zarr_format"), "3 (member missing)", None), _join(path, "zarr_format"))
    zf = doc["zarr_format"]
    if type(zf) is not int or zf != 3:
        raise MetadataError(expected(_join(path, "zarr_format"), "3", zf), _join(path, "zarr_format"))
    if "node_type" not in doc:
        raise MetadataError(expected(_join(path, "node_type"), f"{node_type!r} (member missing)", None), _join(path, "node_type"))
    nt = doc["node_type"]
    if nt != node_type or type(nt) is not str:
        raise MetadataError(expected(_join(path, "node_type"), repr(node_type), nt), _join(path, "node_type"))


def split_extra(doc: dict[str, Any], known: frozenset[str], path: str) -> dict[str, Any]:
    """Unknown top-level keys: kept if ``{"must_understand": false, ...}``, else an error."""
    extra: dict[str, Any] = {}
    for k, v in doc.items():
        if k in known:
            continue
        if type(v) is dict and v.get("must_understand") is False:
            extra[k] = v
        else:
            p = _join(path, k)
            raise UnknownExtensionError(
                f"{p}: unknown metadata field {k!r}; expected an object with \"must_understand\": false, received {v!r}", p
            )
    return extra


def parse_attributes(doc: dict[str, Any], path: str) -> dict[str, Any]:
    """The ``attributes`` member (values are checked by :func:`checked_attributes`)."""
    if "attributes" not in doc:
        return {}
    # a shallow copy: the metadata must not change when the caller's dict does
    return dict(expect_object(doc["attributes"], _join(path, "attributes")))


def checked_attributes(attributes: Any, path: str) -> dict[str, Any]:
    """Attributes as the plain JSON they read back as (MetadataError for values that
    are not JSON, nest deeper than MAX_JSON_DEPTH or contain themselves).  Runs on
    every metadata object built -- parsed or created (e.g. ``attrs[1] = v`` stores the
    key ``"1"`` at once, as a reopen would show it)."""
    p = _join(path, "attributes")
    if type(attributes) is not dict:
        if not isinstance(attributes, dict):
            raise MetadataError(expected(p, "an object", attributes), p)
    return normalize_json_value(attributes, p)


def _product(values: Sequence[int]) -> int:
    n = 1
    for v in values:
        n *= v
    return n


class DataTypeLike(Protocol):
    """A data type as an Array uses it: v3's :class:`DataType`, Zarr v2's ``V2DataType``."""

    @property
    def dtype(self) -> np.dtype: ...

    def to_json(self) -> Any: ...


class ArrayShapeViews:
    """Derived views every array-metadata class (v3, and Zarr v2 in zarrcy.v2) shares."""

    # the fields these views read (each subclass is a dataclass declaring them)
    shape: tuple[int, ...]
    chunk_grid: RegularChunkGrid | RectilinearChunkGrid
    data_type: DataTypeLike

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def chunks(self) -> tuple[int, ...]:
        return self.chunk_shape

    @property
    def chunk_shape(self) -> tuple[int, ...]:
        """The regular grid's chunk shape (NotImplementedError for a rectilinear grid,
        whose chunks differ: see ``chunk_grid``)."""
        grid = self.chunk_grid
        if isinstance(grid, RectilinearChunkGrid):
            raise NotImplementedError("chunk_shape: the chunk grid is rectilinear (chunks differ in shape)")
        return grid.chunk_shape

    @property
    def dtype(self) -> np.dtype:
        return self.data_type.dtype


class ArrayMetadataLike(Protocol):
    """What :class:`zarrcy.Array` needs from an array's metadata document: provided by
    :class:`ArrayMetadata` (v3) and by ``zarrcy.v2``'s ``V2ArrayMetadata`` /
    ``V1ArrayMetadata`` (which sit above this layer and satisfy it structurally)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def data_type(self) -> DataTypeLike: ...
    @property
    def chunk_grid(self) -> RegularChunkGrid | RectilinearChunkGrid: ...
    @property
    def chunk_key_encoding(self) -> ChunkKeyEncoding: ...
    @property
    def fill_value(self) -> Any: ...
    @property
    def codecs(self) -> tuple[Codec, ...]: ...
    @property
    def attributes(self) -> dict[str, Any]: ...
    @property
    def dimension_names(self) -> tuple[str | None, ...] | None: ...
    @property
    def zarr_format(self) -> int: ...
    @property
    def spec(self) -> ArraySpec: ...

    def to_json(self) -> dict[str, Any]: ...

    def to_bytes(self) -> bytes: ...

    def write_to(self, store: Any, prefix: str) -> None:
        """Store the document(s) under ``prefix`` (v3: ``zarr.json``; v2: ``.zarray`` + ``.zattrs``)."""
        ...

    def with_changes(self, *, validate: bool = True, **changes: Any) -> ArrayMetadataLike:
        """A copy with fields replaced (``shape``, ``chunk_grid``, ``attributes``);
        ``validate``: parsed again from its JSON, as a new document would be."""
        ...


@dataclass(frozen=True, eq=False)
class ArrayMetadata(ArrayShapeViews):
    """A parsed array ``zarr.json``.  Equality compares the written JSON (bit-exact fill)."""

    zarr_format = 3
    node_type = "array"

    shape: tuple[int, ...]
    data_type: DataType
    chunk_grid: RegularChunkGrid | RectilinearChunkGrid
    chunk_key_encoding: ChunkKeyEncoding
    fill_value: Any
    codecs: tuple[Codec, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    dimension_names: tuple[str | None, ...] | None = None
    storage_transformers: tuple[dict[str, Any], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    #: the document's key, for error messages (not stored)
    doc_path: InitVar[str] = ""

    def __post_init__(self, doc_path: str) -> None:
        attrs = checked_attributes(self.attributes, doc_path)
        if attrs is not self.attributes:
            object.__setattr__(self, "attributes", attrs)
        check_rank(self.shape, _join(doc_path, "shape"))

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_json(cls, data: bytes | str | dict[str, Any], path: str = "") -> ArrayMetadata:
        """Validate and parse an array metadata document; raise MetadataError naming the field.

        ``path`` prefixes every JSON path in error messages (e.g. the document's key).
        When given the JSON text, a decimal fill value is rounded once from its exact
        text (see :func:`zarrcy.metadata.fill_value.needs_exact_text`).
        """
        return cls._from_doc(load_json_object(data, path), data, path)

    @classmethod
    def _from_doc(cls, doc: dict[str, Any], data: Any, path: str) -> ArrayMetadata:
        """``doc`` is the loaded object; ``data`` the original input (text or the dict)."""
        check_format(doc, "array", path)
        for k in _MANDATORY:
            if k not in doc:
                raise MetadataError(expected(_join(path, k), "a value (mandatory member missing)", None), _join(path, k))
        extra = split_extra(doc, _KNOWN, path)

        p_shape = _join(path, "shape")
        shape = expect_int_list(doc["shape"], p_shape, 0)
        check_rank(shape, p_shape)
        if _product(shape) > INT64_MAX:
            raise MetadataError(expected(p_shape, "a shape whose element count fits in int64", list(shape)), p_shape)
        ndim = len(shape)

        data_type = parse_data_type(doc["data_type"], _join(path, "data_type"))

        p_grid = _join(path, "chunk_grid")
        chunk_grid = parse_chunk_grid(doc["chunk_grid"], p_grid)
        if isinstance(chunk_grid, RectilinearChunkGrid):
            chunk_grid.validate(shape, p_grid)
            # the codecs see each chunk's full edge lengths (zarr-python's "codec shape");
            # they are parsed against the largest and checked against every edge below
            chunk_shape = chunk_grid.max_chunk_shape(shape)
            p_cs = f"{p_grid}.configuration.chunk_shapes"
        else:
            chunk_shape = chunk_grid.chunk_shape
            p_cs = f"{p_grid}.configuration.chunk_shape"
        if len(chunk_shape) != ndim:
            raise MetadataError(expected(p_cs, f"{ndim} dimensions (the rank of shape)", list(chunk_shape)), p_cs)
        if _product(chunk_shape) > INT64_MAX:
            raise MetadataError(expected(p_cs, "a chunk whose element count fits in int64", list(chunk_shape)), p_cs)

        chunk_key_encoding = parse_chunk_key_encoding(doc["chunk_key_encoding"], _join(path, "chunk_key_encoding"))

        fv_json = doc["fill_value"]
        if type(data) is not dict and needs_exact_text(data_type, fv_json):
            # re-read the number's exact decimal text: round once, not via binary64
            fv_json = load_json_object(data, path, parse_float=Decimal)["fill_value"]
        fill_value = parse_fill_value(data_type, fv_json, _join(path, "fill_value"))

        attributes = parse_attributes(doc, path)

        dimension_names = None
        dn = doc.get("dimension_names")
        if dn is not None:
            p_dn = _join(path, "dimension_names")
            expect_list(dn, p_dn)
            if len(dn) != ndim:
                raise MetadataError(expected(p_dn, f"an array of {ndim} strings or nulls (the rank of shape)", dn), p_dn)
            for i, name in enumerate(dn):
                if name is not None and type(name) is not str:
                    raise MetadataError(expected(f"{p_dn}[{i}]", "a string or null", name), f"{p_dn}[{i}]")
            dimension_names = tuple(dn)

        storage_transformers: tuple[dict[str, Any], ...] = ()
        if "storage_transformers" in doc:
            p_st = _join(path, "storage_transformers")
            st = expect_list(doc["storage_transformers"], p_st)
            kept = []
            for i, t in enumerate(st):
                name, _config, mu = parse_extension(t, f"{p_st}[{i}]")
                if mu:  # no storage transformer is implemented
                    raise UnknownExtensionError(f"{p_st}[{i}]: unknown storage transformer {name!r}", f"{p_st}[{i}]")
                kept.append(t)
            storage_transformers = tuple(kept)

        p_codecs = _join(path, "codecs")
        codecs_json = expect_list(doc["codecs"], p_codecs)
        if not codecs_json:
            raise MetadataError(expected(p_codecs, "a non-empty array of codecs (an array->bytes codec is required)", codecs_json), p_codecs)
        spec = ArraySpec(chunk_shape, data_type.dtype, fill_value, data_type)
        codecs = tuple(_parse_codecs(codecs_json, spec, p_codecs))
        if isinstance(chunk_grid, RectilinearChunkGrid):
            _check_codecs_per_edge(codecs, chunk_grid, shape, spec, p_codecs)

        meta = cls(
            shape=shape,
            data_type=data_type,
            chunk_grid=chunk_grid,
            chunk_key_encoding=chunk_key_encoding,
            fill_value=fill_value,
            codecs=codecs,
            attributes=attributes,
            dimension_names=dimension_names,
            storage_transformers=storage_transformers,
            extra=extra,
            doc_path=path,
        )
        meta.__dict__["spec"] = spec  # seed the cached property
        return meta

    # ------------------------------------------------------------------ writing
    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "zarr_format": 3,
            "node_type": "array",
            "shape": list(self.shape),
            "data_type": self.data_type.to_json(),
            "chunk_grid": self.chunk_grid.to_dict(),
            "chunk_key_encoding": self.chunk_key_encoding.to_dict(),
            "fill_value": fill_value_to_json(self.data_type, self.fill_value),
            "codecs": [c.to_dict() for c in self.codecs],
        }
        if self.attributes:
            doc["attributes"] = self.attributes
        if self.dimension_names is not None:
            doc["dimension_names"] = list(self.dimension_names)
        if self.storage_transformers:
            doc["storage_transformers"] = list(self.storage_transformers)
        for k, v in self.extra.items():
            if k not in doc:
                doc[k] = v
        return doc

    def to_bytes(self) -> bytes:
        return dumps(self.to_json())

    def write_to(self, store: Any, prefix: str) -> None:
        store.set(prefix + "zarr.json", self.to_bytes())

    def with_changes(self, *, validate: bool = True, **changes: Any) -> ArrayMetadata:
        new = replace(self, **changes)
        return type(self).from_json(new.to_json()) if validate else new

    # ------------------------------------------------------------------ derived
    @cached_property
    def spec(self) -> ArraySpec:
        """The chunk's decoded representation, as the codec pipeline sees it."""
        grid = self.chunk_grid
        shape = grid.max_chunk_shape(self.shape) if isinstance(grid, RectilinearChunkGrid) else grid.chunk_shape
        return ArraySpec(shape, self.data_type.dtype, self.fill_value, self.data_type)


    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArrayMetadata):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]
