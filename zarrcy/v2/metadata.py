"""Zarr v2 (read/write) and v1 (read) metadata, translated onto zarrcy's array machinery.

Specs: ../shared/specs/v2.rst ("Metadata", "Attributes", "Groups", consolidated
``.zmetadata`` as zarr-python writes it), ../shared/specs/v1.rst, and
../shared/specs/v3-chunk-key-encoding-v2.rst for chunk keys.

:class:`V2ArrayMetadata` provides :class:`zarrcy.document.ArrayMetadataLike`, what an
Array needs (``shape``, ``data_type``, ``chunk_grid``, ``chunk_key_encoding`` (``v2``),
``fill_value``, ``codecs``, ``attributes``, ``dimension_names``, ``spec``,
``to_json``/``to_bytes``, ``with_changes``); its ``write_to(store, prefix)`` writes
``.zarray`` and ``.zattrs``.  This module builds documents only: the Array/Group
objects over them are made by ``zarrcy.nodes`` (opening) and ``zarrcy.creation``.  ``to_json()`` is the ``.zarray`` document with ``attributes`` added
when there are any (as zarr-python 3 does internally); ``from_json`` accepts it back.

``fill_value`` is the value missing chunks read as; a v2 ``null`` reads as zeros (see
:mod:`zarrcy.v2.dtypes`) and ``fill_value_json`` keeps the ``null`` to write back.
``dimension_names`` come from xarray's ``_ARRAY_DIMENSIONS`` attribute when present.

v1 arrays (``meta`` + ``attrs`` keys, chunk keys ``"i.j"``) are read-only:
:class:`V1ArrayMetadata` maps ``compression``/``compression_opts`` onto numcodecs.
"""

from __future__ import annotations

import json
import math
from dataclasses import InitVar, dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from zarrcy.chunk_grid import RegularChunkGrid
from zarrcy.chunk_key_encoding import V2ChunkKeyEncoding
from zarrcy.codecs._base import ArraySpec, Codec
from zarrcy.errors import ContainsNodeError, MetadataError, ReadOnlyError, expected
from zarrcy.document.array import ArrayShapeViews
from zarrcy.metadata.names import check_new_name
from zarrcy.metadata._parse import INT64_MAX, check_rank, expect_int_list, load_json_object, normalize_json_value
from zarrcy.storage._common import get_metadata
from zarrcy.v2.codecs import numcodecs_codec, v2_codecs
from zarrcy.v2.dtypes import (
    V2DataType,
    effective_fill_value,
    parse_v2_dtype,
    parse_v2_fill_value,
    v2_dtype_to_json,
    v2_fill_value_to_json,
)

__all__ = [
    "V2ArrayMetadata",
    "V1ArrayMetadata",
    "V2GroupMetadata",
    "ZARRAY",
    "ZGROUP",
    "ZATTRS",
    "ZMETADATA",
    "read_consolidated",
    "write_consolidated",
    "load_v2_metadata",
    "is_v2_node",
    "check_new_v2",
    "ensure_parents_v2",
    "vlen_filter_for",
]

ZARRAY, ZGROUP, ZATTRS, ZMETADATA = ".zarray", ".zgroup", ".zattrs", ".zmetadata"
V2_KEYS = frozenset((ZARRAY, ZGROUP, ZATTRS, ZMETADATA))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _dumps(doc: Any) -> bytes:
    """JSON as zarr-python 2 writes it: sorted keys, 4-space indent, NaN allowed in attrs."""
    return json.dumps(doc, indent=4, sort_keys=True, ensure_ascii=True, allow_nan=True).encode("ascii")


def _load_attrs(raw: bytes | None, key: str) -> dict[str, Any]:
    if raw is None:
        return {}
    doc = load_json_object(raw, key)
    return dict(doc)


def _attributes_path(doc_path: str) -> str:
    """Where a v2 node's attributes live: ``.zattrs`` beside its ``.zarray``/``.zgroup``."""
    for k in (ZARRAY, ZGROUP):
        if doc_path.endswith(k):
            return doc_path[: -len(k)] + ZATTRS
    return _join(doc_path, "attributes")


def _checked_attributes(node: Any, doc_path: str) -> None:
    """Attributes as plain JSON (see zarrcy.metadata._parse.normalize_json_value)."""
    p = _attributes_path(doc_path)
    if not isinstance(node.attributes, dict):
        raise MetadataError(expected(p, "an object", node.attributes), p)
    attrs = normalize_json_value(node.attributes, p)
    if attrs is not node.attributes:
        object.__setattr__(node, "attributes", attrs)


# numcodecs compressor parameters checked at open (numcodecs accepts some bad ones and
# fails per chunk, or never: blosc {"cname": "evil", "clevel": 99} used to open)
_BLOSC_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd", "snappy")
_LEVELS = {"zlib": ("level", -1, 9), "gzip": ("level", 0, 9), "bz2": ("level", 1, 9), "zstd": ("level", -131072, 22),
           "lzma": ("preset", 0, 9)}


def _check_compressor(config: dict[str, Any], path: str) -> None:
    def bad(key: str, what: str) -> MetadataError:
        p = f"{path}.{key}"
        return MetadataError(expected(p, what, config.get(key)), p)

    def int_in(key: str, lo: int, hi: int, optional: bool = True) -> None:
        if key not in config and optional:
            return
        v = config.get(key)
        if type(v) is not int or not lo <= v <= hi:
            if not (key == "preset" and v is None):
                raise bad(key, f"an integer in [{lo}, {hi}]")

    cid = config.get("id")
    if cid == "blosc":
        if "cname" in config and config["cname"] not in _BLOSC_CNAMES:
            raise bad("cname", f"one of {_BLOSC_CNAMES}")
        int_in("clevel", 0, 9)
        if "shuffle" in config and (type(config["shuffle"]) is not int or config["shuffle"] not in (-1, 0, 1, 2)):
            raise bad("shuffle", "one of -1 (auto), 0 (none), 1 (byte), 2 (bit)")
        int_in("blocksize", 0, INT64_MAX)
    elif cid in _LEVELS:
        key, lo, hi = _LEVELS[cid]
        int_in(key, lo, hi)


def _dimension_names(attrs: dict[str, Any], ndim: int) -> tuple[str | None, ...] | None:
    dims = attrs.get("_ARRAY_DIMENSIONS")
    if isinstance(dims, list) and len(dims) == ndim and all(isinstance(d, str) for d in dims):
        return tuple(dims)
    return None


def _check_codec_list(value: Any, path: str) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise MetadataError(expected(path, "a list of codec configurations or null", value), path)
    out = []
    for i, f in enumerate(value):
        numcodecs_codec(f, f"{path}[{i}]")  # unknown ids fail at open time
        out.append(dict(f))
    return out or None


@dataclass(frozen=True, eq=False)
class V2ArrayMetadata(ArrayShapeViews):
    """A parsed ``.zarray`` (+ ``.zattrs``); see the module docstring."""

    shape: tuple[int, ...]
    data_type: V2DataType
    chunk_grid: RegularChunkGrid
    chunk_key_encoding: V2ChunkKeyEncoding
    fill_value: Any
    codecs: tuple[Codec, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    order: str = "C"
    filters: list[dict[str, Any]] | None = None
    compressor: dict[str, Any] | None = None
    fill_value_json: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the document's key, for error messages (not stored)
    doc_path: InitVar[str] = ""

    zarr_format = 2
    node_type = "array"

    def __post_init__(self, doc_path: str) -> None:
        _checked_attributes(self, doc_path)
        check_rank(self.shape, _join(doc_path, "shape"))

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_json(cls, data: bytes | str | dict[str, Any], path: str = ".zarray",
                  attributes: dict[str, Any] | None = None) -> V2ArrayMetadata:
        doc = load_json_object(data, path)
        zf = doc.get("zarr_format")
        if type(zf) is not int or zf != 2:
            raise MetadataError(expected(_join(path, "zarr_format"), "2", zf), _join(path, "zarr_format"))
        for k in ("shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters"):
            if k not in doc:
                raise MetadataError(expected(_join(path, k), "a value (mandatory member missing)", None), _join(path, k))
        shape = expect_int_list(doc["shape"], _join(path, "shape"), 0)
        check_rank(shape, _join(path, "shape"))
        chunks = expect_int_list(doc["chunks"], _join(path, "chunks"), 1)
        if len(chunks) != len(shape):
            p = _join(path, "chunks")
            raise MetadataError(expected(p, f"{len(shape)} dimensions (the rank of shape)", list(chunks)), p)
        if math.prod(chunks) > INT64_MAX or math.prod(shape) > INT64_MAX:
            raise MetadataError(expected(path, "sizes that fit in int64", doc["shape"]), path)
        filters = _check_codec_list(doc["filters"], _join(path, "filters"))
        dtype = parse_v2_dtype(doc["dtype"], _join(path, "dtype"), filters)
        order = doc["order"]
        if order not in ("C", "F"):
            raise MetadataError(expected(_join(path, "order"), "'C' or 'F'", order), _join(path, "order"))
        sep = doc.get("dimension_separator", ".")
        if sep is None:
            sep = "."
        if sep not in (".", "/"):
            p = _join(path, "dimension_separator")
            raise MetadataError(expected(p, "'.' or '/'", sep), p)
        compressor = doc["compressor"]
        if compressor is not None:
            numcodecs_codec(compressor, _join(path, "compressor"))
            _check_compressor(compressor, _join(path, "compressor"))
            compressor = dict(compressor)
        fv_json = doc["fill_value"]
        fv = parse_v2_fill_value(dtype, fv_json, _join(path, "fill_value"))
        attrs = dict(attributes) if attributes is not None else dict(doc.get("attributes") or {})
        known = {"zarr_format", "shape", "chunks", "dtype", "compressor", "fill_value", "order", "filters",
                 "dimension_separator", "attributes"}
        extra = {k: v for k, v in doc.items() if k not in known}
        codecs = v2_codecs(dtype, order, filters, compressor, len(shape), path)
        return cls(
            shape=shape,
            data_type=dtype,
            chunk_grid=RegularChunkGrid(chunks),
            chunk_key_encoding=V2ChunkKeyEncoding(sep),
            fill_value=effective_fill_value(dtype, fv),
            codecs=codecs,
            attributes=attrs,
            order=order,
            filters=filters,
            compressor=compressor,
            fill_value_json=v2_fill_value_to_json(dtype, fv),
            extra=extra,
            doc_path=path,
        )

    @classmethod
    def create(cls, *, shape: Any, dtype: Any, chunks: Any, fill_value: Any = 0, order: str = "C",
               filters: Any = None, compressor: Any = None, dimension_separator: str = ".",
               attributes: dict[str, Any] | None = None) -> V2ArrayMetadata:
        """Build from parts; ``filters``/``compressor`` may be numcodecs objects or configs."""

        def cfg(c: Any) -> dict[str, Any]:
            d = dict(c) if isinstance(c, dict) else c.get_config()
            if d.get("id") == "zstd" and d.get("checksum") is False:
                del d["checksum"]  # as zarr-python writes it (older readers, e.g. tensorstore, reject the key)
            return d

        vlen = vlen_filter_for(dtype)
        if vlen is not None:  # variable-length strings / bytes as zarr-python writes them
            tmp = V2DataType(np.dtype(object), "|O", vlen)
            rest = [f for f in (filters or []) if cfg(f).get("id") != vlen]
            filters = [{"id": vlen}, *rest]
        else:
            dt = np.dtype(dtype)
            tmp = V2DataType(dt, v2_dtype_to_json(dt))
        fv_json = None if fill_value is None else v2_fill_value_to_json(tmp, fill_value)
        doc = {
            "zarr_format": 2,
            "shape": [int(s) for s in shape],
            "chunks": [int(c) for c in chunks],
            "dtype": tmp.to_json(),
            "compressor": None if compressor is None else cfg(compressor),
            "fill_value": fv_json,
            "order": order,
            "filters": [cfg(f) for f in filters] if filters else None,
            "dimension_separator": dimension_separator,
        }
        return cls.from_json(doc, path="metadata", attributes=attributes or {})

    # ------------------------------------------------------------------ writing
    def zarray_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "chunks": list(self.chunk_grid.chunk_shape),
            "compressor": self.compressor,
            "dimension_separator": self.chunk_key_encoding.separator,
            "dtype": self.data_type.to_json(),
            "fill_value": self.fill_value_json,
            "filters": self.filters,
            "order": self.order,
            "shape": list(self.shape),
            "zarr_format": 2,
        }
        for k, v in self.extra.items():
            doc.setdefault(k, v)
        return doc

    def to_json(self) -> dict[str, Any]:
        doc = self.zarray_json()
        if self.attributes:
            doc["attributes"] = self.attributes
        return doc

    def to_bytes(self) -> bytes:
        return _dumps(self.zarray_json())

    def with_changes(self, *, validate: bool = True, **changes: Any) -> V2ArrayMetadata:
        new = replace(self, **changes)
        return type(self).from_json(new.to_json()) if validate else new

    def write_to(self, store: Any, prefix: str) -> None:
        """Write ``.zarray`` and ``.zattrs`` (erased when there are no attributes)."""
        store.set(prefix + ZARRAY, self.to_bytes())
        if self.attributes:
            store.set(prefix + ZATTRS, _dumps(self.attributes))
        elif get_metadata(store, prefix + ZATTRS) is not None:
            store.erase(prefix + ZATTRS)

    # ------------------------------------------------------------------ derived
    @cached_property
    def spec(self) -> ArraySpec:
        return ArraySpec(self.chunk_grid.chunk_shape, self.data_type.dtype, self.fill_value, self.data_type.v3)

    @property
    def dimension_names(self) -> tuple[str | None, ...] | None:
        return _dimension_names(self.attributes, len(self.shape))

    @property
    def storage_transformers(self) -> tuple:
        return ()


    @property
    def fill_value_is_null(self) -> bool:
        return self.fill_value_json is None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, V2ArrayMetadata):
            return NotImplemented
        return type(self) is type(other) and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]


# -- v1 ------------------------------------------------------------------------------------
_V1_COMPRESSION = {"blosc", "zlib", "bz2", "lzma", "none", None}


def _v1_compressor(name: Any, opts: Any, path: str) -> dict[str, Any] | None:
    if name in (None, "none"):
        return None
    cfg: dict[str, Any]
    if name == "blosc":
        cfg = {"id": "blosc"}
        if isinstance(opts, dict):
            cfg.update({k: v for k, v in opts.items() if k in ("cname", "clevel", "shuffle", "blocksize")})
        return cfg
    if name in ("zlib", "bz2"):
        cfg = {"id": name}
        if isinstance(opts, int) and not isinstance(opts, bool):
            cfg["level"] = opts
        return cfg
    if name == "lzma":
        cfg = {"id": "lzma"}
        if isinstance(opts, dict):
            cfg.update(opts)
        return cfg
    # later zarr 1.x builds accept any numcodecs id
    cfg = {"id": str(name)}
    if isinstance(opts, dict):
        cfg.update(opts)
    elif isinstance(opts, int) and not isinstance(opts, bool):
        cfg["level"] = opts
    return cfg


@dataclass(frozen=True, eq=False)
class V1ArrayMetadata(V2ArrayMetadata):
    """A Zarr v1 array (``meta`` + ``attrs``): read-only, chunk keys ``"i.j"``."""

    zarr_format = 1

    @classmethod
    def from_v1_json(cls, data: bytes | str | dict[str, Any], path: str = "meta",
                     attributes: dict[str, Any] | None = None) -> V1ArrayMetadata:
        doc = load_json_object(data, path)
        if doc.get("zarr_format") != 1:
            raise MetadataError(expected(_join(path, "zarr_format"), "1", doc.get("zarr_format")), _join(path, "zarr_format"))
        for k in ("shape", "chunks", "dtype", "compression", "fill_value", "order"):
            if k not in doc:
                raise MetadataError(expected(_join(path, k), "a value (mandatory member missing)", None), _join(path, k))
        comp = _v1_compressor(doc["compression"], doc.get("compression_opts"), _join(path, "compression"))
        fv = doc["fill_value"]
        if isinstance(fv, float) and not math.isfinite(fv):  # v1 writers put bare NaN tokens
            fv = "NaN" if math.isnan(fv) else ("Infinity" if fv > 0 else "-Infinity")
        v2doc = {
            "zarr_format": 2,
            "shape": doc["shape"],
            "chunks": doc["chunks"],
            "dtype": doc["dtype"],
            "compressor": comp,
            "fill_value": fv,
            "order": doc["order"],
            "filters": None,
        }
        m = V2ArrayMetadata.from_json(v2doc, path, attributes=attributes or {})
        return cls(**{f: getattr(m, f) for f in m.__dataclass_fields__})

    def write_to(self, store: Any, prefix: str) -> None:
        raise ReadOnlyError(f"{store.url}/{prefix}: Zarr v1 arrays are read-only (convert them with `zarrcy convert`)")


# -- groups --------------------------------------------------------------------------------
@dataclass(frozen=True)
class V2GroupMetadata:
    attributes: dict[str, Any] = field(default_factory=dict)
    #: the document's key, for error messages (not stored)
    doc_path: InitVar[str] = ""

    zarr_format = 2
    node_type = "group"

    def __post_init__(self, doc_path: str) -> None:
        _checked_attributes(self, doc_path)

    @classmethod
    def from_json(cls, data: Any, path: str = ".zgroup", attributes: dict[str, Any] | None = None) -> V2GroupMetadata:
        doc = load_json_object(data, path)
        if doc.get("zarr_format") != 2:
            raise MetadataError(expected(_join(path, "zarr_format"), "2", doc.get("zarr_format")), _join(path, "zarr_format"))
        return cls(attributes=dict(attributes or {}), doc_path=path)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"zarr_format": 2}
        if self.attributes:
            doc["attributes"] = self.attributes
        return doc

    def to_bytes(self) -> bytes:
        return _dumps({"zarr_format": 2})

    def write_to(self, store: Any, prefix: str) -> None:
        store.set(prefix + ZGROUP, self.to_bytes())
        if self.attributes:
            store.set(prefix + ZATTRS, _dumps(self.attributes))
        elif get_metadata(store, prefix + ZATTRS) is not None:
            store.erase(prefix + ZATTRS)


# -- consolidated metadata -------------------------------------------------------------------
def read_consolidated(store: Any) -> dict[str, Any] | None:
    """The ``metadata`` mapping of the root ``.zmetadata`` (key -> JSON object), or None."""
    raw = get_metadata(store, ZMETADATA)
    if raw is None:
        return None
    doc = load_json_object(raw, ZMETADATA)
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise MetadataError(expected(f"{ZMETADATA}.metadata", "an object", meta), f"{ZMETADATA}.metadata")
    return meta


def write_consolidated(store: Any, path: str = "") -> None:
    """Write ``.zmetadata`` (``zarr_consolidated_format`` 1) for the v2 hierarchy at ``path``."""
    prefix = path + "/" if path else ""
    meta: dict[str, Any] = {}
    for key in sorted(store.list_prefix(prefix)):
        base = key.rsplit("/", 1)[-1]
        if base in (ZARRAY, ZGROUP, ZATTRS):
            raw = get_metadata(store, key)
            if raw is not None:  # (erased since the listing)
                meta[key[len(prefix):]] = load_json_object(raw, key)
    store.set(prefix + ZMETADATA, _dumps({"metadata": meta, "zarr_consolidated_format": 1}))


def _get_doc(store: Any, key: str, consolidated: dict[str, Any] | None) -> Any:
    raw = get_metadata(store, key)
    if raw is not None:
        return raw
    if consolidated is not None:
        doc = consolidated.get(key)
        if doc is not None:
            return doc
    return None


def is_v2_node(store: Any, path: str) -> bool:
    prefix = path + "/" if path else ""
    return get_metadata(store, prefix + ZARRAY) is not None or get_metadata(store, prefix + ZGROUP) is not None


def load_v2_metadata(store: Any, path: str) -> V2ArrayMetadata | V2GroupMetadata | None:
    """The metadata of the v2 (or v1: a read-only ``V1ArrayMetadata``) array or group at
    ``path``, or None if there is none; the node objects are built by the layer above
    (``zarrcy.nodes.group.open_v2_node``).

    Missing ``.zarray``/``.zgroup``/``.zattrs`` keys are looked up in the root's
    consolidated ``.zmetadata`` when there is one.
    """
    prefix = path + "/" if path else ""
    consolidated = None
    zarray = get_metadata(store, prefix + ZARRAY)
    zgroup = None if zarray is not None else get_metadata(store, prefix + ZGROUP)
    if zarray is None and zgroup is None:
        consolidated = read_consolidated(store)
        if consolidated is not None:
            zarray = consolidated.get(prefix + ZARRAY)
            zgroup = consolidated.get(prefix + ZGROUP) if zarray is None else None
    if zarray is not None or zgroup is not None:
        zattrs = _get_doc(store, prefix + ZATTRS, consolidated)
        attrs = dict(load_json_object(zattrs, prefix + ZATTRS)) if zattrs is not None else {}
        if zarray is not None:
            return V2ArrayMetadata.from_json(zarray, prefix + ZARRAY, attributes=attrs)
        return V2GroupMetadata.from_json(zgroup, prefix + ZGROUP, attributes=attrs)
    raw = get_metadata(store, prefix + "meta")
    if raw is not None:
        try:
            doc = load_json_object(raw, prefix + "meta")
        except MetadataError:
            return None
        if doc.get("zarr_format") == 1:
            attrs_raw = get_metadata(store, prefix + "attrs")
            attrs = dict(load_json_object(attrs_raw, prefix + "attrs")) if attrs_raw is not None else {}
            return V1ArrayMetadata.from_v1_json(doc, prefix + "meta", attributes=attrs)
    return None


# -- creation --------------------------------------------------------------------------------
def _has_node(store: Any, path: str) -> bool:
    prefix = path + "/" if path else ""
    return any(get_metadata(store, prefix + k) is not None for k in ("zarr.json", ZARRAY, ZGROUP))


def ensure_parents_v2(store: Any, path: str) -> None:
    """Write ``.zgroup`` for each missing parent of ``path`` (an array parent is an error)."""
    parts = path.split("/")[:-1] if path else []
    for i in range(len(parts) + 1):
        p = "/".join(parts[:i])
        prefix = p + "/" if p else ""
        if get_metadata(store, prefix + ZARRAY) is not None:
            raise ContainsNodeError(f"{store.url}: cannot create a node below the array at '/{p}'")
        if get_metadata(store, prefix + ZGROUP) is None and get_metadata(store, prefix + "zarr.json") is None:
            check_new_name(store, p)
            store.set(prefix + ZGROUP, V2GroupMetadata().to_bytes())


def check_new_v2(store: Any, path: str, overwrite: bool) -> None:
    if not _has_node(store, path):
        check_new_name(store, path)
    else:
        if not overwrite:
            raise ContainsNodeError(f"{store.url}: a node already exists at '/{path}' (pass overwrite=True)")
        store.erase_prefix(path + "/" if path else "")


def vlen_filter_for(dtype: Any) -> str | None:
    """``"vlen-utf8"`` / ``"vlen-bytes"`` when ``dtype`` asks for variable-length strings
    (``str``, ``"T"``, StringDType, width-0 ``U``) or bytes (``bytes``, width-0 ``S``)."""
    if dtype is str:
        return "vlen-utf8"
    if dtype is bytes:
        return "vlen-bytes"
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    if dt.kind == "T" or (dt.kind == "U" and dt.itemsize == 0):
        return "vlen-utf8"
    if dt.kind == "S" and dt.itemsize == 0:
        return "vlen-bytes"
    return None
