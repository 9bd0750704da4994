"""The public functions: create/open arrays and groups (names as in zarr-python 3)."""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from zarrcy.array import META_KEY, Array, _prefix
from zarrcy.errors import (
    ContainsArrayError,
    ContainsGroupError,
    ContainsNodeError,
    MetadataError,
    NodeNotFoundError,
    UnknownCodecError,
)
from zarrcy.group import Group, _parse_node, ensure_parents, open_node
from zarrcy.metadata import normalize_path
from zarrcy.metadata.array import ArrayMetadata
from zarrcy.metadata.data_type import DataType
from zarrcy.metadata.group import GroupMetadata
from zarrcy.storage import LocalStore, Store, store_from_url
from zarrcy.storage._common import get_metadata

__all__ = [
    "create_array",
    "open_array",
    "create_group",
    "open_group",
    "group",
    "open",
    "array",
    "guess_chunks",
    "create",
    "zeros",
    "ones",
    "full",
    "empty",
    "zeros_like",
    "ones_like",
    "full_like",
    "empty_like",
    "from_array",
    "open_consolidated",
    "save",
    "save_array",
    "save_group",
    "load",
    "copy",
    "copy_all",
    "create_hierarchy",
    "tree",
]

Mode = Literal["r", "r+", "a", "w", "w-"]

StoreLike = Store | str | Any


_STORES: dict[tuple[str, str], Store] = {}


def _store(store: StoreLike, mode: str, storage_options: dict | None = None) -> Store:
    if mode not in ("r", "r+", "a", "w", "w-"):
        raise ValueError(f"mode: expected one of 'r', 'r+', 'a', 'w', 'w-', received {mode!r}")
    if isinstance(store, dict):  # zarr-python: a dict is an in-memory store (here: a copy of it)
        from zarrcy.storage import MemoryStore

        store = MemoryStore(store, read_only=mode == "r")
    elif store is None:  # zarr-python: no store means a new in-memory one
        from zarrcy.storage import MemoryStore

        store = MemoryStore()
    # LocalStores are stateless apart from their resolved root: reuse them for repeated
    # opens of the same path (opening 200 arrays should not resolve the root 200 times)
    key = (store, mode) if isinstance(store, str) and mode in ("r", "r+") and not storage_options else None
    if key is not None:
        hit = _STORES.get(key)
        if hit is not None and os.path.isdir(hit.root):  # type: ignore[attr-defined]
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
        from zarrcy.codecs.registry import CODECS, get_codec_class

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
        from zarrcy.codecs import default_compressors

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


def _check_new_node(store: Store, path: str, overwrite: bool) -> None:
    key = _prefix(path) + META_KEY
    raw = get_metadata(store, key)
    if raw is not None:
        if not overwrite:
            kind = _node_type(raw)
            err = ContainsGroupError if kind == "group" else ContainsArrayError if kind == "array" else ContainsNodeError
            what = f"an {kind}" if kind == "array" else f"a {kind}" if kind else "a node"
            raise err(f"{store.url}: {what} already exists at '/{path}' (pass overwrite=True)")
        store.erase_prefix(_prefix(path))


def _node_type(raw: bytes) -> str | None:
    import json

    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    nt = doc.get("node_type") if isinstance(doc, dict) else None
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
    st = _store(store, "w" if overwrite else "a", storage_options)
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
    from zarrcy.v2.metadata import V2ArrayMetadata, _check_new, create_array_v2, ensure_parents_v2

    if metadata is not None:
        meta = V2ArrayMetadata.from_json(metadata, "metadata", attributes=attributes)
        arr = Array(st, path, meta)  # type: ignore[arg-type]
        _check_new(st, path, overwrite)
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
    from zarrcy.storage import MemoryStore

    return create_array(MemoryStore() if store is None else store, data=data, **kwargs)


def open_array(
    store: StoreLike,
    *,
    path: str | None = None,
    mode: Mode = "r+",
    storage_options: dict | None = None,
    **create_kwargs: Any,
) -> Array:
    """Open an existing array (``mode='r'`` read-only, ``'r+'`` read/write).  With
    ``mode='a'`` or ``'w'`` the array is created from ``create_kwargs`` if needed."""
    p = normalize_path(path or "")
    if mode in ("w", "w-") or (mode == "a" and create_kwargs):
        st = _store(store, mode, storage_options)
        if mode == "a" and (get_metadata(st, _prefix(p) + META_KEY) is not None or get_metadata(st, _prefix(p) + ".zarray") is not None):
            return _expect_array(open_node(st, p))
        return create_array(st, name=p, overwrite=(mode == "w"), **create_kwargs)
    st = _store(store, mode, storage_options)
    return _expect_array(open_node(st, p))


def _expect_array(node: Any) -> Array:
    if not isinstance(node, Array):
        raise NodeNotFoundError(f"{node.store.url}: '/{node.path}' is a group, not an array")
    return node


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
    st = _store(store, "w" if overwrite else "a", storage_options)
    p = normalize_path(path or "")
    if zarr_format == 2:  # Zarr v2 (.zgroup/.zattrs): zarrcy.v2
        from zarrcy.v2.metadata import create_group_v2

        return create_group_v2(st, p, attributes=attributes, overwrite=overwrite)
    if zarr_format != 3:
        raise ValueError(f"zarr_format: expected 2 or 3, received {zarr_format!r}")
    _check_new_node(st, p, overwrite)
    ensure_parents(st, p)
    meta = GroupMetadata(attributes=dict(attributes or {}))
    st.set(_prefix(p) + META_KEY, meta.to_bytes())
    return Group(st, p, meta)


def open_group(
    store: StoreLike = None,
    *,
    path: str | None = None,
    mode: Mode = "a",
    attributes: dict | None = None,
    storage_options: dict | None = None,
    zarr_format: int | None = None,
    use_consolidated: bool | None = None,
) -> Group:
    """Open a group; with mode 'a' (default) create it if missing, 'w' overwrite, 'r' read-only.
    ``zarr_format`` (2 or 3, default 3) is the format of a group this creates.
    ``use_consolidated`` (mode 'r' only): None uses the group's consolidated metadata when
    it has some, True requires it, False ignores it (zarrcy.consolidated)."""
    if use_consolidated and mode != "r":
        raise ValueError(f"use_consolidated=True: needs mode='r', received mode={mode!r}")
    fmt = 3 if zarr_format is None else zarr_format
    if store is None:
        from zarrcy.storage import MemoryStore

        store = MemoryStore()
    p = normalize_path(path or "")
    st = _store(store, mode, storage_options)
    if mode in ("w", "w-"):
        return create_group(st, path=p, attributes=attributes, overwrite=mode == "w", zarr_format=fmt)
    raw = get_metadata(st, _prefix(p) + META_KEY)
    if mode == "r" and use_consolidated is not False:
        from zarrcy.consolidated import open_consolidated_store

        overlay = open_consolidated_store(st, p, raw, required=bool(use_consolidated))
        if overlay is not None:
            st = overlay
    if raw is None:
        from zarrcy.v2.metadata import open_v2_node  # Zarr v2 groups (.zgroup)

        v2node = open_v2_node(st, p)
        if v2node is not None:
            if not isinstance(v2node, Group):
                raise ContainsArrayError(f"{st.url}: '/{p}' is an array, not a group")
            return v2node
        if mode == "a":
            return create_group(st, path=p, attributes=attributes, zarr_format=fmt)
        raise NodeNotFoundError(f"{st.url}: no group at path '/{p}'")
    node = _parse_node(st, p, raw)
    if not isinstance(node, Group):
        raise ContainsArrayError(f"{st.url}: '/{p}' is an array, not a group")
    if use_consolidated is False and "consolidated_metadata" in node.metadata.extra:
        # as zarr-python: the group is seen without its consolidated metadata
        import dataclasses

        extra = {k: v for k, v in node.metadata.extra.items() if k != "consolidated_metadata"}
        node = Group(node.store, node.path, dataclasses.replace(node.metadata, extra=extra))
    return node


def group(
    store: StoreLike = None,
    *,
    overwrite: bool = False,
    path: str | None = None,
    attributes: dict | None = None,
    zarr_format: int | None = None,
    storage_options: dict | None = None,
) -> Group:
    """zarr-python's ``zarr.group``: open the group at ``path``, creating it if missing
    (``overwrite=True``: replace whatever is there)."""
    return open_group(store, path=path, mode="w" if overwrite else "a", attributes=attributes,
                      zarr_format=zarr_format, storage_options=storage_options)


def open(
    store: StoreLike,
    *,
    path: str | None = None,
    mode: Mode = "r+",
    storage_options: dict | None = None,
    use_consolidated: bool | None = None,
) -> Array | Group:
    """Open whatever node is at ``path``: an :class:`Array` or a :class:`Group`.
    A group opened with ``mode='r'`` reads through its consolidated metadata as in
    :func:`open_group` (``use_consolidated``)."""
    st = _store(store, mode, storage_options)
    p = normalize_path(path or "")
    if mode == "r" and use_consolidated is not False:
        raw = get_metadata(st, _prefix(p) + META_KEY)
        if raw is not None:
            node = _parse_node(st, p, raw)
            if isinstance(node, Group) and "consolidated_metadata" in node.metadata.extra:
                return open_group(st, path=p, mode="r", use_consolidated=use_consolidated)
            if use_consolidated:
                raise NodeNotFoundError(f"{st.url}: no consolidated metadata at '/{p}'")
            return node
    elif use_consolidated:
        raise ValueError(f"use_consolidated=True: needs mode='r', received mode={mode!r}")
    return open_node(st, p)


# -- zarr-python's convenience functions ------------------------------------------------------
def create(shape: Sequence[int] | int, *, store: StoreLike = None, path: str | None = None, dtype: Any = None,
           **kwargs: Any) -> Array:
    """zarr-python's ``zarr.create``: :func:`create_array` with ``store`` optional (in
    memory) and ``path`` as the array's name; ``dtype`` defaults to float64."""
    name = kwargs.pop("name", None) or path
    return create_array(store, name=name, shape=shape, dtype="float64" if dtype is None else dtype, **kwargs)


def zeros(shape: Sequence[int] | int, **kwargs: Any) -> Array:
    """An array of zeros (only its metadata is written: fill value 0)."""
    return create(shape, fill_value=0, **kwargs)


def ones(shape: Sequence[int] | int, **kwargs: Any) -> Array:
    """An array of ones (only its metadata is written: fill value 1)."""
    return create(shape, fill_value=1, **kwargs)


def full(shape: Sequence[int] | int, fill_value: Any, **kwargs: Any) -> Array:
    """An array of ``fill_value`` (only its metadata is written)."""
    return create(shape, fill_value=fill_value, **kwargs)


def empty(shape: Sequence[int] | int, **kwargs: Any) -> Array:
    """An array with no chunks written (reads give the fill value, as in zarr-python)."""
    return create(shape, **kwargs)


def _chunking(a: Array) -> tuple[Any, Any]:
    """``(chunks, shards)`` to create an array chunked like ``a`` (a rectilinear grid is
    given by its ``chunk_shapes``, as written)."""
    grid = a.metadata.chunk_grid
    if getattr(grid, "name", "regular") != "rectilinear":
        return a.chunks, a.shards
    edges = grid.to_dict()["configuration"]["chunk_shapes"]
    inner = a._inner_chunk_shape()
    return (inner, edges) if inner is not None else (edges, None)


def _like(a: Any, kwargs: dict) -> dict:
    kwargs.setdefault("dtype", a.dtype)
    if isinstance(a, Array):
        chunks, shards = _chunking(a)
        kwargs.setdefault("chunks", chunks)
        if shards is not None:
            kwargs.setdefault("shards", shards)
    return kwargs


def zeros_like(a: Any, **kwargs: Any) -> Array:
    return zeros(np.shape(a) if not isinstance(a, Array) else a.shape, **_like(a, kwargs))


def ones_like(a: Any, **kwargs: Any) -> Array:
    return ones(np.shape(a) if not isinstance(a, Array) else a.shape, **_like(a, kwargs))


def full_like(a: Any, fill_value: Any = None, **kwargs: Any) -> Array:
    if fill_value is None and isinstance(a, Array):
        fill_value = a.fill_value
    return full(np.shape(a) if not isinstance(a, Array) else a.shape, fill_value, **_like(a, kwargs))


def empty_like(a: Any, **kwargs: Any) -> Array:
    return empty(np.shape(a) if not isinstance(a, Array) else a.shape, **_like(a, kwargs))


def from_array(
    store: StoreLike,
    *,
    data: Any,
    write_data: bool = True,
    name: str | None = None,
    chunks: Any = "keep",
    shards: Any = "keep",
    filters: Any = "keep",
    compressors: Any = "keep",
    serializer: Any = "keep",
    fill_value: Any = None,
    attributes: dict | None = None,
    dimension_names: Any = None,
    overwrite: bool = False,
    **kwargs: Any,
) -> Array:
    """A new array holding a copy of ``data`` (a zarrcy Array or an array-like).  For a
    zarrcy source, ``"keep"`` copies its chunks, shards, codecs, fill value, attributes
    and dimension names; for anything else it means zarrcy's defaults."""
    src = data if isinstance(data, Array) else None
    if src is None:
        data = np.asarray(data)
    v2 = src is not None and getattr(src.metadata, "zarr_format", 3) == 2

    def keep(value: Any, from_src: Any, default: Any) -> Any:
        if isinstance(value, str) and value == "keep":
            return from_src() if src is not None and not v2 else default
        return value

    meta = None if src is None or v2 else src.metadata
    chunks = keep(chunks, lambda: _chunking(src)[0], "auto")
    shards = keep(shards, lambda: _chunking(src)[1], None)
    filters = keep(filters, lambda: list(src.filters), "auto")
    compressors = keep(compressors, lambda: list(src.compressors), "auto")
    serializer = keep(serializer, lambda: src.serializer, "auto")
    if src is not None:
        fill_value = src.fill_value if fill_value is None else fill_value
        attributes = dict(src.attrs) if attributes is None else attributes
        if dimension_names is None and meta is not None:
            dimension_names = meta.dimension_names
    arr = create_array(store, name=name, shape=data.shape, dtype=data.dtype, chunks=chunks, shards=shards,
                       filters=filters, compressors=compressors, serializer=serializer, fill_value=fill_value,
                       attributes=attributes, dimension_names=dimension_names, overwrite=overwrite, **kwargs)
    if write_data and arr.size:
        _copy_data(data, arr)
    return arr


def _copy_data(src: Any, dst: Array, target_bytes: int = 64 << 20) -> int:
    """Copy ``src`` (array-like with numpy indexing) into ``dst`` in slabs along axis 0
    aligned to ``dst``'s stored chunks (bounded memory); return the bytes copied."""
    if dst.ndim == 0:
        dst[...] = src[...]
        return dst.nbytes
    row = max(1, dst.nbytes // max(1, dst.shape[0]))
    rows = max(1, target_bytes // row)
    start = stop = 0
    for edge in dst.write_chunk_sizes[0]:  # stored chunks along axis 0 (any chunk grid)
        stop += edge
        if stop - start >= rows:
            dst[start:stop] = src[start:stop]
            start = stop
    if start < dst.shape[0]:
        dst[start:] = src[start:]
    return dst.nbytes


def open_consolidated(store: StoreLike, *, path: str | None = None, mode: Mode = "r", **kwargs: Any) -> Group:
    """Open a group through its consolidated metadata (an error if it has none)."""
    return open_group(store, path=path, mode=mode, use_consolidated=True, **kwargs)


def save_array(store: StoreLike, arr: Any, *, path: str | None = None, zarr_format: int = 3, mode: Mode = "w",
               **kwargs: Any) -> None:
    """Write ``arr`` (array-like) as a new array at ``path``, replacing whatever is there
    (``mode="w-"``: fail instead if a node exists there)."""
    if mode not in ("w", "w-", "a", "r+"):
        raise ValueError(f"mode: expected 'w', 'w-', 'a' or 'r+' to save, received {mode!r}")
    arr = np.asarray(arr)
    create_array(store, name=path, data=arr, overwrite=mode != "w-", zarr_format=zarr_format, **kwargs)


def save_group(store: StoreLike, *args: Any, path: str | None = None, zarr_format: int = 3,
               storage_options: dict | None = None, **kwargs: Any) -> None:
    """Write several arrays into a group: positional ones as ``arr_0, arr_1, ...``,
    keyword ones under their names (the group is replaced)."""
    if not args and not kwargs:
        raise ValueError("save_group: at least one array is required")
    g = open_group(store, path=path, mode="w", zarr_format=zarr_format, storage_options=storage_options)
    for i, a in enumerate(args):
        g.create_array(f"arr_{i}", data=np.asarray(a), overwrite=True)
    for k, a in kwargs.items():
        g.create_array(k, data=np.asarray(a), overwrite=True)


def save(store: StoreLike, *args: Any, path: str | None = None, zarr_format: int = 3, **kwargs: Any) -> None:
    """One array: :func:`save_array`; several (or keyword ones): :func:`save_group`."""
    if len(args) == 1 and not kwargs:
        save_array(store, args[0], path=path, zarr_format=zarr_format)
    else:
        save_group(store, *args, path=path, zarr_format=zarr_format, **kwargs)


def load(store: StoreLike, path: str | None = None, zarr_format: int | None = None) -> Any:
    """The data at ``path``: a numpy array for an array, a dict name -> numpy array of
    a group's arrays (read when loaded: prefer open_group for large groups)."""
    node = open(store, path=path, mode="r")
    if isinstance(node, Array):
        return node[...]
    return {name: a[...] for name, a in node.arrays()}


def copy(source: Array | Group, dest: Group, name: str | None = None, *, if_exists: str = "raise",
         without_attrs: bool = False, dry_run: bool = False) -> tuple[int, int, int]:
    """Copy an array or a group (recursively) into the group ``dest`` under ``name``
    (default: the source's basename), keeping chunks, shards, codecs and attributes.
    ``if_exists``: "raise", "replace" or "skip".  Returns (copied, skipped, bytes copied)
    as zarr 2's ``copy``."""
    if if_exists not in ("raise", "replace", "skip"):
        raise ValueError(f"if_exists: expected 'raise', 'replace' or 'skip', received {if_exists!r}")
    name = name or source.basename
    if not name:
        raise ValueError("copy: a name is required to copy a root group")
    if name in dest:
        if if_exists == "raise":
            err = ContainsGroupError if isinstance(dest[name], Group) else ContainsArrayError
            raise err(f"{dest.store.url}: '{name}' exists in group '/{dest.path}' (if_exists='replace' or 'skip')")
        if if_exists == "skip":
            return (0, 1, 0)
    attrs = {} if without_attrs else dict(source.attrs)
    if isinstance(source, Array):
        if dry_run:
            return (1, 0, source.nbytes)
        target = from_array(dest.store, data=source, name=_join(dest.path, name), attributes=attrs,
                            overwrite=if_exists == "replace")
        return (1, 0, target.nbytes)
    if not dry_run:
        dest.create_group(name, attributes=attrs, overwrite=if_exists == "replace")
    sub = dest if dry_run else dest[name]
    return _copy_members(source, sub, if_exists, without_attrs, dry_run, (1, 0, 0))


def _copy_members(source: Group, dest: Group, if_exists: str, without_attrs: bool, dry_run: bool,
                  total: tuple[int, int, int]) -> tuple[int, int, int]:
    n, skipped, nbytes = total
    for child, _node in source.members():
        a, b, c = copy(_node, dest, child, if_exists=if_exists, without_attrs=without_attrs, dry_run=dry_run)
        n, skipped, nbytes = n + a, skipped + b, nbytes + c
    return n, skipped, nbytes


def copy_all(source: Group, dest: Group, **kwargs: Any) -> tuple[int, int, int]:
    """Copy every member of ``source`` into ``dest`` (see :func:`copy`)."""
    return _copy_members(source, dest, kwargs.pop("if_exists", "raise"), kwargs.pop("without_attrs", False),
                         kwargs.pop("dry_run", False), (0, 0, 0))


def _join(parent: str, name: str) -> str:
    return f"{parent}/{name}" if parent else name


def create_hierarchy(*, store: StoreLike, nodes: dict[str, Any], overwrite: bool = False) -> Iterable[tuple[str, Array | Group]]:
    """Create the nodes ``{path: metadata}`` (``GroupMetadata`` / ``ArrayMetadata``, their
    JSON dicts, or zarr-python metadata objects with ``to_dict``), and the missing parent
    groups of each; yield ``(path, node)`` for every node created, parents included.
    Only metadata is written (copy data separately, e.g. with :func:`from_array`)."""
    st = _store(store, "w" if overwrite else "a")
    parsed: dict[str, Any] = {}
    for key, meta in nodes.items():
        p = normalize_path(key)
        if isinstance(meta, (ArrayMetadata, GroupMetadata)):
            doc = meta
        else:
            d = meta if isinstance(meta, dict) else meta.to_dict()
            from zarrcy.metadata.node import parse_node_metadata

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


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> str:
    """zarr-python's ``zarr.tree``: ``grp.tree()``."""
    return grp.tree()
