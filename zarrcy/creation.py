"""Creating nodes: :func:`create_array` and :func:`create_group` (v3, and Zarr v2 with
``zarr_format=2``), :func:`create_hierarchy`, and the store arguments every public
function accepts (:func:`open_store`).  Part of the API layer (docs/ARCHITECTURE.md):
``zarrcy.api`` re-exports these names, and groups reach ``create_array`` /
``create_group`` through the :class:`zarrcy.nodes.base.NodeApi` it registers."""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from zarrcy.codecs import default_compressors
from zarrcy.codecs.registry import CODECS, get_codec_class
from zarrcy.document.array import ArrayMetadata
from zarrcy.document.group import GroupMetadata, parse_node_metadata
from zarrcy.errors import (
    ContainsArrayError,
    ContainsGroupError,
    ContainsNodeError,
    MetadataError,
    UnknownCodecError,
)
from zarrcy.metadata._parse import load_json_object
from zarrcy.metadata.data_type import DataType
from zarrcy.metadata.names import check_new_name, normalize_path
from zarrcy.nodes.array import Array
from zarrcy.nodes.base import META_KEY
from zarrcy.nodes.base import prefix as _prefix
from zarrcy.nodes.group import Group, parse_node
from zarrcy.storage import LocalStore, MemoryStore, Store, store_from_url
from zarrcy.storage._common import get_metadata
from zarrcy.v2.metadata import V2ArrayMetadata, V2GroupMetadata, check_new_v2, ensure_parents_v2, vlen_filter_for

__all__ = [
    "Mode",
    "StoreLike",
    "open_store",
    "guess_chunks",
    "create_array",
    "create_group",
    "create_array_v2",
    "create_group_v2",
    "create_hierarchy",
    "ensure_parents",
    "array",
]

Mode = Literal["r", "r+", "a", "w", "w-"]

StoreLike = Store | str | Any


_STORES: dict[tuple[str, str], LocalStore] = {}


def open_store(store: StoreLike, mode: Mode, storage_options: dict | None = None) -> Store:
    """``store`` as a :class:`Store` opened with ``mode``: a Store, a URL or path, a dict
    (a copy in memory) or None (a new in-memory store)."""
    if mode not in ("r", "r+", "a", "w", "w-"):
        raise ValueError(f"mode: expected one of 'r', 'r+', 'a', 'w', 'w-', received {mode!r}")
    if isinstance(store, dict):  # zarr-python: a dict is an in-memory store (here: a copy of it)
        store = MemoryStore(store, read_only=mode == "r")
    elif store is None:  # zarr-python: no store means a new in-memory one
        store = MemoryStore()
    # LocalStores are stateless apart from their resolved root: reuse them for repeated
    # opens of the same path (opening 200 arrays should not resolve the root 200 times)
    key = (store, mode) if isinstance(store, str) and mode in ("r", "r+") and not storage_options else None
    if key is not None:
        hit = _STORES.get(key)
        if hit is not None and os.path.isdir(hit.root):
            return hit
    st = store_from_url(store, mode=mode, storage_options=storage_options)
    if key is not None and isinstance(st, LocalStore):
        if len(_STORES) > 256:
            _STORES.clear()
        _STORES[key] = st
    return st


def guess_chunks(shape: Sequence[int], itemsize: int, target: int = 1 << 20) -> tuple[int, ...]:
    """A chunk shape of roughly ``target`` bytes: halve the largest dimension until it fits."""
    if not shape:
        return ()
    chunks = [max(1, int(s)) for s in shape]
    while math.prod(chunks) * itemsize > target and max(chunks) > 1:
        i = int(np.argmax(chunks))
        chunks[i] = -(-chunks[i] // 2)
    return tuple(chunks)


def _codec_json(c: Any, role: str = "codecs") -> Any:
    if isinstance(c, str):
        try:
            get_codec_class(c)
        except UnknownCodecError:
            hint = " (lz4, lz4hc, zlib, zstd and snappy are BloscCodec(cname=...))" if c in ("lz4", "lz4hc", "snappy", "zlib") else ""
            raise UnknownCodecError(
                f"{role}: unknown codec {c!r}; known codecs: {', '.join(sorted(CODECS))}{hint}", role
            ) from None
        return c
    if isinstance(c, dict):
        return c
    if hasattr(c, "to_dict"):
        return c.to_dict()
    raise TypeError(f"codec: expected a codec object, a dict or a name, received {c!r}")


def _as_list(x: Any) -> list:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _normalize_key_encoding(cke: Any) -> Any:
    if cke is None:
        return {"name": "default", "configuration": {"separator": "/"}}
    if isinstance(cke, dict) and "separator" in cke and "configuration" not in cke:
        return {"name": cke["name"], "configuration": {"separator": cke["separator"]}}
    if hasattr(cke, "to_dict"):
        return cke.to_dict()
    return cke


def _is_rectilinear_spec(chunks: Any) -> bool:
    """A sequence whose items include a sequence: per-axis edge lengths."""
    return (isinstance(chunks, (list, tuple))
            and any(isinstance(c, (list, tuple, np.ndarray)) for c in chunks))


def _rectilinear_json(chunks: Sequence[Any], what: str) -> dict:
    """``chunks=[[10, 20, 30], [50, 50]]`` -> the rectilinear ``chunk_grid`` JSON, each
    axis run-length compacted as zarr-python 3.4 writes it (``[[50, 2]]``; an integer
    axis stays an integer)."""
    axes: list[Any] = []
    for i, axis in enumerate(chunks):
        if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            axes.append(int(axis))
            continue
        if not isinstance(axis, (list, tuple, np.ndarray)) or not len(axis):
            raise ValueError(f"{what}[{i}]: expected an integer or a non-empty sequence of edge lengths, received {axis!r}")
        runs: list[list[Any]] = []
        for e in axis:
            k: Any = 1
            if isinstance(e, (list, tuple)) and len(e) == 2:  # a run-length pair [edge, count]
                e, k = e
            if any(isinstance(x, bool) or not isinstance(x, (int, np.integer)) for x in (e, k)):
                raise ValueError(f"{what}[{i}]: expected integer edge lengths or [edge, count] pairs, received {e!r}")
            if runs and runs[-1][0] == int(e):
                runs[-1][1] += int(k)
            else:
                runs.append([int(e), int(k)])
        axes.append([e if n == 1 else [e, n] for e, n in runs])
    return {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": axes}}


def _sharding_codec(chunks: Sequence[int], inner: list[Any]) -> dict[str, Any]:
    """The ``sharding_indexed`` codec ``create_array(shards=...)`` builds, as zarr-python
    does: inner chunks of ``chunks`` encoded by ``inner``, index ``bytes`` + ``crc32c`` at
    the end."""
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": list(chunks),
            "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end",
        },
    }


def _build_metadata(
    *,
    shape: Sequence[int],
    dtype: Any,
    chunks: Any,
    shards: Any,
    filters: Any,
    serializer: Any,
    compressors: Any,
    fill_value: Any,
    attributes: dict | None,
    chunk_key_encoding: Any,
    dimension_names: Any,
) -> dict:
    dt = DataType.from_numpy(dtype) if not isinstance(dtype, DataType) else dtype
    shape = tuple(int(s) for s in shape)
    # a nested sequence of edge lengths (chunks=[[10, 20, 30], [50, 50]], or shards= with
    # regular inner chunks) is a rectilinear grid, as in zarr-python 3.4
    rect_grid = None
    if shards is not None and _is_rectilinear_spec(shards):
        rect_grid, shards = _rectilinear_json(shards, "shards"), None
        if chunks in (None, "auto") or _is_rectilinear_spec(chunks):
            raise ValueError("create_array: a rectilinear shards= grid needs regular inner chunks=(size, ...)")
        shards_rect = True
    elif _is_rectilinear_spec(chunks):
        if shards is not None:
            raise ValueError("create_array: rectilinear chunks= cannot be sharded; use regular chunks= with "
                             "rectilinear shards=[[...], ...]")
        rect_grid, chunks = _rectilinear_json(chunks, "chunks"), (1,) * len(shape)
        shards_rect = False
    if chunks in (None, "auto"):
        chunks = guess_chunks(shape, dt.itemsize) if shards is None else None
    elif isinstance(chunks, int):
        chunks = (chunks,) * len(shape)
    if shards is not None:
        if isinstance(shards, int):
            shards = (shards,) * len(shape)
        shards = tuple(int(s) for s in shards)
        if chunks is None:
            chunks = guess_chunks(shards, dt.itemsize)
    chunks = tuple(int(c) for c in chunks)
    if shards is not None and len(shards) == len(chunks) and any(c > 0 and s % c for s, c in zip(shards, chunks)):
        # the user's words, not the sharding codec's JSON path (v3-codec-sharding-indexed "chunk_shape")
        raise MetadataError(f"shards {shards} must be a multiple of chunks {chunks}", "shards")
    if fill_value is None:
        fill_json = dt.fill_value_to_json(dt.default_fill_value())
    elif dt.category == "fixed_string" or dt.category == "fixed_bytes":
        # U<n>/S<n>: a value longer than the element is refused (numpy would truncate it)
        fv = fill_value
        if dt.category == "fixed_bytes" and isinstance(fv, str):
            try:
                fv = fv.encode("ascii")  # numpy's str -> S conversion
            except UnicodeEncodeError:
                raise MetadataError(f"fill_value: expected ASCII text or bytes for {dt.dtype}, received {fill_value!r}") from None
        fill_json = dt.fill_value_to_json(fv)
    elif dt.category == "struct" or dt.category == "complex":
        # a record, a tuple of field values or {field: JSON value}; a number or [re, im]
        fv = fill_value
        same = isinstance(fv, np.generic) and fv.dtype == dt.dtype  # kept bit for bit (NaN payloads)
        if dt.category == "complex" and not same and isinstance(fv, (int, float, complex, np.number, np.bool_)):
            fv = complex(fv)
        fill_json = dt.fill_value_to_json(fv)
    elif dt.category == "datetime" or dt.category == "timedelta":
        try:  # numbers, "2020-01-01", "NaT", datetime64/timedelta64 scalars: numpy's conversion
            fv = np.asarray(fill_value, dtype=dt.dtype)[()]
        except (OverflowError, ValueError, TypeError) as e:
            raise MetadataError(f"fill_value: expected a value of type {dt.dtype}, received {fill_value!r} ({e})") from None
        fill_json = dt.fill_value_to_json(fv)
    else:
        try:
            fv = np.asarray(fill_value, dtype=dt.dtype)[()] if not isinstance(fill_value, str) else fill_value
        except (OverflowError, ValueError) as e:
            raise MetadataError(f"fill_value: expected a value of type {dt.dtype}, received {fill_value!r} ({e})") from None
        fill_json = dt.fill_value_to_json(fv) if not isinstance(fv, str) else fv
    if filters == "auto":
        filters = []
    if compressors == "auto":
        compressors = default_compressors(dt.dtype)
    if serializer == "auto":
        if dt.variable_length:  # zarr-extensions: "string" <-> vlen-utf8, "bytes" <-> vlen-bytes
            serializer = {"name": "vlen-utf8" if dt.category == "string" else "vlen-bytes"}
        else:
            serializer = (
                {"name": "bytes", "configuration": {"endian": "little"}} if dt.itemsize > 1 else {"name": "bytes"}
            )
    inner = [
        *(_codec_json(c, "filters") for c in _as_list(filters)),
        _codec_json(serializer, "serializer"),
        *(_codec_json(c, "compressors") for c in _as_list(compressors)),
    ]
    if shards is not None:
        codecs = [_sharding_codec(chunks, inner)]
        grid_chunks = shards
    elif rect_grid is not None and shards_rect:
        codecs = [_sharding_codec(chunks, inner)]
        grid_chunks = chunks
    else:
        codecs = inner
        grid_chunks = chunks
    doc: dict[str, Any] = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": dt.to_json(),
        "chunk_grid": rect_grid if rect_grid is not None else {"name": "regular", "configuration": {"chunk_shape": list(grid_chunks)}},
        "chunk_key_encoding": _normalize_key_encoding(chunk_key_encoding),
        "fill_value": fill_json,
        "codecs": codecs,
        "attributes": dict(attributes or {}),
    }
    if dimension_names is not None:
        doc["dimension_names"] = list(dimension_names)
    return doc


def ensure_parents(store: Store, path: str) -> None:
    """Create the missing parent groups of ``path`` (v3 has no implicit groups)."""
    parts = path.split("/")[:-1] if path else []
    parents = [""] + ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for p in parents:
        key = _prefix(p) + META_KEY
        raw = get_metadata(store, key)
        if raw is None:
            check_new_name(store, p)
            store.set(key, GroupMetadata().to_bytes())
        elif b'"array"' in raw:
            node = parse_node(store, p, raw)
            if isinstance(node, Array):
                raise ContainsNodeError(f"{store.url}: cannot create a node below the array at '/{p}'")


def _check_new_node(store: Store, path: str, overwrite: bool) -> None:
    key = _prefix(path) + META_KEY
    raw = get_metadata(store, key)
    if raw is None:
        check_new_name(store, path)
    else:
        if not overwrite:
            kind = _node_type(raw)
            err = ContainsGroupError if kind == "group" else ContainsArrayError if kind == "array" else ContainsNodeError
            what = f"an {kind}" if kind == "array" else f"a {kind}" if kind else "a node"
            raise err(f"{store.url}: {what} already exists at '/{path}' (pass overwrite=True)")
        store.erase_prefix(_prefix(path))


def _node_type(raw: bytes) -> str | None:
    try:
        doc = load_json_object(raw, "zarr.json")
    except MetadataError:
        return None
    nt = doc.get("node_type")
    return nt if nt in ("array", "group") else None


def create_array(
    store: StoreLike,
    *,
    name: str | None = None,
    shape: Sequence[int] | int | None = None,
    dtype: Any = None,
    data: Any = None,
    chunks: Any = "auto",
    shards: Any = None,
    filters: Any = "auto",
    compressors: Any = "auto",
    serializer: Any = "auto",
    fill_value: Any = None,
    attributes: dict | None = None,
    chunk_key_encoding: Any = None,
    dimension_names: Iterable[str | None] | None = None,
    overwrite: bool = False,
    metadata: dict | None = None,
    storage_options: dict | None = None,
    zarr_format: int = 3,
    config: dict | None = None,
    order: str | None = None,
    write_data: bool = True,
) -> Array:
    """Create a Zarr v3 array (parents groups are created as needed).

    Either give the parts (``shape``, ``dtype``, ``chunks``, ``shards``, codecs...) or a
    complete ``zarr.json`` document as ``metadata=`` for exact control.  ``data``
    (array-like) sets shape/dtype when they are omitted and is written after creation
    (unless ``write_data=False``).  ``config`` is the array's runtime configuration
    (``{"write_empty_chunks": bool, "order": "C"|"F"}``, as zarr-python's ``ArrayConfig``).
    """
    arr = _create_array(store, name=name, shape=shape, dtype=dtype, data=data if write_data else None,
                        shape_from=data, chunks=chunks, shards=shards, filters=filters, compressors=compressors,
                        serializer=serializer, fill_value=fill_value, attributes=attributes,
                        chunk_key_encoding=chunk_key_encoding, dimension_names=dimension_names, overwrite=overwrite,
                        metadata=metadata, storage_options=storage_options, zarr_format=zarr_format)
    if config is not None or order is not None:
        arr = arr.with_config({**(config or {}), **({"order": order} if order is not None else {})})
    return arr


def _create_array(
    store: StoreLike,
    *,
    name: str | None,
    shape: Any,
    dtype: Any,
    data: Any,
    shape_from: Any,
    chunks: Any,
    shards: Any,
    filters: Any,
    compressors: Any,
    serializer: Any,
    fill_value: Any,
    attributes: dict | None,
    chunk_key_encoding: Any,
    dimension_names: Any,
    overwrite: bool,
    metadata: dict | None,
    storage_options: dict | None,
    zarr_format: int,
) -> Array:
    if data is None and shape_from is not None:  # write_data=False: shape and dtype still come from it
        shape_from = np.asarray(shape_from) if not hasattr(shape_from, "dtype") else shape_from
        shape = shape_from.shape if shape is None else shape
        dtype = shape_from.dtype if dtype is None else dtype
    st = open_store(store, "w" if overwrite else "a", storage_options)
    path = normalize_path(name or "")
    if zarr_format == 2:  # Zarr v2 (.zarray/.zattrs): zarrcy.v2
        return _create_array_v2(st, path, shape=shape, dtype=dtype, data=data, chunks=chunks, filters=filters,
                                compressors=compressors, fill_value=fill_value, attributes=attributes,
                                chunk_key_encoding=chunk_key_encoding, overwrite=overwrite, metadata=metadata)
    if zarr_format != 3:
        raise ValueError(f"zarr_format: expected 2 or 3, received {zarr_format!r}")
    if metadata is not None:
        meta = ArrayMetadata.from_json(metadata, path="metadata")
    else:
        if data is not None:
            data = np.asarray(data)
            shape = data.shape if shape is None else shape
            if dtype is None:
                dtype = data.dtype
                # an object array of bytes is variable-length bytes (object alone means "string")
                if dtype.kind == "O" and data.size and isinstance(data.flat[0], bytes):
                    dtype = "bytes"
        if shape is None or dtype is None:
            raise TypeError("create_array: shape and dtype are required (or data=, or metadata=)")
        if isinstance(shape, (int, np.integer)):
            shape = (int(shape),)
        doc = _build_metadata(
            shape=shape,
            dtype=dtype,
            chunks=chunks,
            shards=shards,
            filters=filters,
            serializer=serializer,
            compressors=compressors,
            fill_value=fill_value,
            attributes=attributes,
            chunk_key_encoding=chunk_key_encoding,
            dimension_names=dimension_names,
        )
        meta = ArrayMetadata.from_json(doc)
    _check_new_node(st, path, overwrite)
    ensure_parents(st, path)
    raw = meta.to_bytes()
    arr = Array(st, path, meta)  # builds the codec pipeline: fails before anything is written
    st.set(_prefix(path) + META_KEY, raw)
    if data is not None:
        arr[...] = data
    return arr


def _create_array_v2(st: Store, path: str, *, shape: Any, dtype: Any, data: Any, chunks: Any, filters: Any,
                     compressors: Any, fill_value: Any, attributes: Any, chunk_key_encoding: Any, overwrite: bool,
                     metadata: Any) -> Array:
    """``create_array(..., zarr_format=2)``: filters/compressors are numcodecs codecs or
    their configurations (one compressor at most); ``chunk_key_encoding={"name": "v2",
    "separator": "/"}`` picks the dimension separator; ``metadata=`` a ``.zarray`` dict."""
    if metadata is not None:
        meta = V2ArrayMetadata.from_json(metadata, "metadata", attributes=attributes)
        arr = Array(st, path, meta)
        check_new_v2(st, path, overwrite)
        ensure_parents_v2(st, path)
        meta.write_to(st, _prefix(path))
        if data is not None:
            arr[...] = data
        return arr
    if data is not None:
        data = np.asarray(data)
        shape = data.shape if shape is None else shape
        dtype = data.dtype if dtype is None else dtype
    if shape is None or dtype is None:
        raise TypeError("create_array: shape and dtype are required (or data=, or metadata=)")
    comp = _as_list(compressors) if compressors != "auto" else ["auto"]
    if len(comp) > 1:
        raise ValueError(f"compressors: Zarr v2 allows at most one compressor, received {compressors!r}")
    sep = "."
    cke = _normalize_key_encoding(chunk_key_encoding) if chunk_key_encoding is not None else None
    if cke is not None:
        sep = (cke.get("configuration") or {}).get("separator", ".") if isinstance(cke, dict) else "."
    return create_array_v2(
        st, path, shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value,
        filters=None if filters == "auto" else (_as_list(filters) or None), compressor=comp[0] if comp else None,
        dimension_separator=sep, attributes=attributes, overwrite=overwrite, data=data,
    )


def array(data: Any, store: StoreLike = None, **kwargs: Any) -> Array:
    """Create an array from ``data`` (in memory unless ``store`` is given)."""
    return create_array(MemoryStore() if store is None else store, data=data, **kwargs)


def create_group(
    store: StoreLike,
    *,
    path: str | None = None,
    attributes: dict | None = None,
    overwrite: bool = False,
    storage_options: dict | None = None,
    zarr_format: int = 3,
) -> Group:
    """Create a group (and its missing parents); ``zarr_format=2`` writes ``.zgroup``."""
    st = open_store(store, "w" if overwrite else "a", storage_options)
    p = normalize_path(path or "")
    if zarr_format == 2:  # Zarr v2 (.zgroup/.zattrs): zarrcy.v2
        return create_group_v2(st, p, attributes=attributes, overwrite=overwrite)
    if zarr_format != 3:
        raise ValueError(f"zarr_format: expected 2 or 3, received {zarr_format!r}")
    _check_new_node(st, p, overwrite)
    ensure_parents(st, p)
    meta = GroupMetadata(attributes=dict(attributes or {}))
    st.set(_prefix(p) + META_KEY, meta.to_bytes())
    return Group(st, p, meta)


def create_array_v2(store: Any, path: str, *, shape: Any, dtype: Any, chunks: Any = None, fill_value: Any = 0,
                    order: str = "C", filters: Any = None, compressor: Any = "auto", dimension_separator: str = ".",
                    attributes: dict[str, Any] | None = None, overwrite: bool = False, data: Any = None) -> Any:
    """Create a Zarr v2 array (``.zarray`` + ``.zattrs``); ``compressor="auto"`` is
    ``Zstd(level=0)`` as in zarr-python 3.4."""
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if chunks in (None, "auto"):
        chunks = guess_chunks(shape, 16 if vlen_filter_for(dtype) else np.dtype(dtype).itemsize)
    elif isinstance(chunks, int):
        chunks = (chunks,) * len(shape)
    chunks = tuple(max(1, int(c)) for c in chunks)
    if isinstance(compressor, str) and compressor == "auto":
        compressor = {"id": "zstd", "level": 0}
    meta = V2ArrayMetadata.create(shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value, order=order,
                                  filters=filters, compressor=compressor, dimension_separator=dimension_separator,
                                  attributes=attributes)
    arr = Array(store, path, meta)  # builds the pipeline before writing
    check_new_v2(store, path, overwrite)
    ensure_parents_v2(store, path)
    meta.write_to(store, path + "/" if path else "")
    if data is not None:
        arr[...] = data
    return arr


def create_group_v2(store: Any, path: str, *, attributes: dict[str, Any] | None = None, overwrite: bool = False) -> Any:
    check_new_v2(store, path, overwrite)
    ensure_parents_v2(store, path)
    meta = V2GroupMetadata(attributes=dict(attributes or {}))
    meta.write_to(store, path + "/" if path else "")
    return Group(store, path, meta)


def create_hierarchy(*, store: StoreLike, nodes: dict[str, Any], overwrite: bool = False) -> Iterable[tuple[str, Array | Group]]:
    """Create the nodes ``{path: metadata}`` (``GroupMetadata`` / ``ArrayMetadata``, their
    JSON dicts, or zarr-python metadata objects with ``to_dict``), and the missing parent
    groups of each; yield ``(path, node)`` for every node created, parents included.
    Only metadata is written (copy data separately, e.g. with :func:`from_array`)."""
    st = open_store(store, "w" if overwrite else "a")
    parsed: dict[str, Any] = {}
    for key, meta in nodes.items():
        p = normalize_path(key)
        if isinstance(meta, (ArrayMetadata, GroupMetadata)):
            doc = meta
        else:
            d = meta if isinstance(meta, dict) else meta.to_dict()
            doc = parse_node_metadata(dict(d), f"nodes[{key!r}]")
        parsed[p] = doc
    # implicit parents (not given): groups
    for p in list(parsed):
        parts = p.split("/") if p else []
        for i in range(len(parts)):
            parent = "/".join(parts[:i])
            if parent not in parsed:
                parsed[parent] = None
            elif isinstance(parsed[parent], ArrayMetadata):
                raise ContainsArrayError(f"{st.url}: cannot create '/{p}' below the array at '/{parent}'")
    created = []
    for p in sorted(parsed, key=lambda q: (q.count("/") if q else -1, q)):
        meta = parsed[p]
        if meta is None:
            raw = st.get(_prefix(p) + META_KEY)
            if raw is not None:
                if _node_type(raw) == "array":
                    raise ContainsArrayError(f"{st.url}: cannot create nodes below the array at '/{p}'")
                continue  # an existing group stays as it is
            meta = GroupMetadata()
        else:
            _check_new_node(st, p, overwrite)
        st.set(_prefix(p) + META_KEY, meta.to_bytes())
        node = Array(st, p, meta) if isinstance(meta, ArrayMetadata) else Group(st, p, meta)
        created.append((p, node))
    return iter(created)


