"""The public functions: create/open arrays and groups (names as in zarr-python 3)."""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Literal, Sequence

import numpy as np

from zarrcy.array import META_KEY, Array, _prefix
from zarrcy.errors import ContainsNodeError, MetadataError, NodeNotFoundError
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
]

Mode = Literal["r", "r+", "a", "w", "w-"]

StoreLike = Store | str | Any


_STORES: dict[tuple[str, str], Store] = {}


def _store(store: StoreLike, mode: str, storage_options: dict | None = None) -> Store:
    if mode not in ("r", "r+", "a", "w", "w-"):
        raise ValueError(f"mode: expected one of 'r', 'r+', 'a', 'w', 'w-', received {mode!r}")
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


def _codec_json(c: Any) -> Any:
    if isinstance(c, (dict, str)):
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
    inner = [*map(_codec_json, _as_list(filters)), _codec_json(serializer), *map(_codec_json, _as_list(compressors))]
    if shards is not None:
        codecs = [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": list(chunks),
                    "codecs": inner,
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }
        ]
        grid_chunks = shards
    elif rect_grid is not None and shards_rect:
        codecs = [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": list(chunks),
                    "codecs": inner,
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }
        ]
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
    if get_metadata(store, key) is not None:
        if not overwrite:
            raise ContainsNodeError(f"{store.url}: a node already exists at '/{path}' (pass overwrite=True)")
        store.erase_prefix(_prefix(path))


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
) -> Array:
    """Create a Zarr v3 array (parents groups are created as needed).

    Either give the parts (``shape``, ``dtype``, ``chunks``, ``shards``, codecs...) or a
    complete ``zarr.json`` document as ``metadata=`` for exact control.  ``data``
    (array-like) sets shape/dtype when they are omitted and is written after creation.
    """
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
                raise ContainsNodeError(f"{st.url}: '/{p}' is an array, not a group")
            return v2node
        if mode == "a":
            return create_group(st, path=p, attributes=attributes, zarr_format=fmt)
        raise NodeNotFoundError(f"{st.url}: no group at path '/{p}'")
    node = _parse_node(st, p, raw)
    if not isinstance(node, Group):
        raise ContainsNodeError(f"{st.url}: '/{p}' is an array, not a group")
    return node


group = open_group


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
