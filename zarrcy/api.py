"""The public functions (names as in zarr-python 3): opening arrays and groups, the
convenience constructors, copying, saving and loading.  Creation itself is
:mod:`zarrcy.creation` (re-exported here).  This module is the top of the API layer
(docs/ARCHITECTURE.md): it registers the :class:`zarrcy.nodes.base.NodeApi` through
which groups create children and nodes unpickle."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.consolidated import open_consolidated_store
from zarrcy.creation import (
    Mode,
    StoreLike,
    array,
    create_array,
    create_group,
    create_hierarchy,
    guess_chunks,
    open_store,
)
from zarrcy.errors import (
    ContainsArrayError,
    ContainsGroupError,
    NodeNotFoundError,
    ReadOnlyError,
    StoreError,
)
from zarrcy.metadata._parse import load_json_object
from zarrcy.metadata.names import normalize_path
from zarrcy.document.group import GroupMetadata
from zarrcy.nodes.array import Array
from zarrcy.nodes.base import META_KEY, NodeApi, set_node_api
from zarrcy.nodes.base import prefix as _prefix
from zarrcy.nodes.group import Group, open_node, open_v2_node, parse_node
from zarrcy.storage import MemoryStore, Store, store_from_url
from zarrcy.storage._common import get_metadata
from zarrcy.v2.metadata import write_consolidated

_store = open_store  # the name zarrcy.cli.check uses

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
    "consolidate_metadata",
]

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
        store = MemoryStore()
    p = normalize_path(path or "")
    st = _store(store, mode, storage_options)
    if mode in ("w", "w-"):
        return create_group(st, path=p, attributes=attributes, overwrite=mode == "w", zarr_format=fmt)
    raw = get_metadata(st, _prefix(p) + META_KEY)
    if mode == "r" and use_consolidated is not False:
        overlay = open_consolidated_store(st, p, raw, required=bool(use_consolidated))
        if overlay is not None:
            st = overlay
    if raw is None:
        v2node = open_v2_node(st, p)
        if v2node is not None:
            if not isinstance(v2node, Group):
                raise ContainsArrayError(f"{st.url}: '/{p}' is an array, not a group")
            return v2node
        if mode == "a":
            return create_group(st, path=p, attributes=attributes, zarr_format=fmt)
        raise NodeNotFoundError(f"{st.url}: no group at path '/{p}'")
    node = parse_node(st, p, raw)
    if not isinstance(node, Group):
        raise ContainsArrayError(f"{st.url}: '/{p}' is an array, not a group")
    if use_consolidated is False and isinstance(node.metadata, GroupMetadata) \
            and "consolidated_metadata" in node.metadata.extra:
        # as zarr-python: the group is seen without its consolidated metadata
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
            node = parse_node(st, p, raw)
            if isinstance(node, Group) and isinstance(node.metadata, GroupMetadata) \
                    and "consolidated_metadata" in node.metadata.extra:
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
    if not isinstance(grid, RectilinearChunkGrid):
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
    v2 = src is not None and src.metadata.zarr_format == 2

    def keep(value: Any, from_src: Callable[[Array], Any], default: Any) -> Any:
        if isinstance(value, str) and value == "keep":
            return from_src(src) if src is not None and not v2 else default
        return value

    meta = None if src is None or v2 else src.metadata
    chunks = keep(chunks, lambda s: _chunking(s)[0], "auto")
    shards = keep(shards, lambda s: _chunking(s)[1], None)
    filters = keep(filters, lambda s: list(s.filters), "auto")
    compressors = keep(compressors, lambda s: list(s.compressors), "auto")
    serializer = keep(serializer, lambda s: s.serializer, "auto")
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
    sub = dest if dry_run else dest.get_group(name)
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


def tree(grp: Group, expand: bool | None = None, level: int | None = None) -> str:
    """zarr-python's ``zarr.tree``: ``grp.tree()``."""
    return grp.tree()


# -- consolidated metadata (reading: zarrcy.consolidated) -------------------------------------
_FIELD = "consolidated_metadata"


def _dumps(doc: Any) -> bytes:
    return json.dumps(doc, indent=2, allow_nan=False).encode()


def consolidate_metadata(store: Any, path: str = "", *, storage_options: dict | None = None) -> Any:
    """Write the consolidated metadata of the group at ``path`` (v3: into its
    ``zarr.json``; v2: ``.zmetadata``) and return the group reopened through it.

    Documents are copied verbatim from the stored ``zarr.json`` files (extension fields
    included; stale nested ``consolidated_metadata`` removed)."""
    st = store if isinstance(store, Store) else store_from_url(store, mode="r+", storage_options=storage_options)
    if st.read_only:
        raise ReadOnlyError(f"{st.url}: cannot write consolidated metadata to a read-only store")
    path = path.strip("/")
    group = open_group(st, path=path or None, mode="r+", use_consolidated=False)
    if group.metadata.zarr_format == 2:
        write_consolidated(st, path)
        return open_group(st, path=path or None, mode="r")
    prefix = _prefix(path)
    metadata: dict[str, Any] = {}
    for rel, node in group.walk():
        key = f"{prefix}{rel}/{META_KEY}"
        raw = get_metadata(st, key)
        if raw is None:  # a v2 node inside a v3 hierarchy: not consolidated here
            continue
        doc = dict(load_json_object(raw, key))
        doc.pop(_FIELD, None)
        if isinstance(node, Group):
            doc[_FIELD] = {"kind": "inline", "must_understand": False, "metadata": {}}
        metadata[rel] = doc
    root_key = prefix + META_KEY
    root_raw = get_metadata(st, root_key)
    if root_raw is None:
        raise StoreError(f"{st.url}: {root_key} disappeared while consolidating")
    root_doc = dict(load_json_object(root_raw, root_key))
    root_doc[_FIELD] = {"kind": "inline", "must_understand": False, "metadata": metadata}
    st.set(root_key, _dumps(root_doc))
    return open_group(st, path=path or None, mode="r")


# -- what nodes need from this layer (zarrcy.nodes.base.NodeApi) ------------------------------
def _reopen_array(store: Any, path: str, read_only: bool) -> Array:
    """Unpickling an Array (``Array.__reduce__``): open it again by store and path."""
    return open_array(store, path=path, mode="r" if read_only else "r+")


def _reopen_group(store: Any, path: str, read_only: bool) -> Group:
    """Unpickling a Group (``Group.__reduce__``)."""
    return open_group(store, path=path, mode="r" if read_only else "r+")


set_node_api(NodeApi(create_array=create_array, create_group=create_group,
                     reopen_array=_reopen_array, reopen_group=_reopen_group))
