"""``zarrcy check``: validate a store's metadata documents (and optionally its chunks)."""

from __future__ import annotations

import json
import sys

from zarrcy.errors import ZarrcyError


def check_store(url: str, *, data: bool = False, as_json: bool = False) -> int:
    """Parse every ``zarr.json`` below ``url``; with ``data`` decode every stored chunk.
    Prints a report; returns 0 when everything is valid, 1 otherwise."""
    from zarrcy.api import _store
    from zarrcy.group import open_node

    store = _store(url, "r")
    problems: list[dict] = []
    nodes = 0
    chunks = 0
    # v3 zarr.json, Zarr v2 .zarray/.zgroup (v1 is read through the same opener)
    names = ("zarr.json", ".zarray", ".zgroup")
    seen: set[str] = set()
    meta_keys = []
    for k in sorted(store.list()):
        base = k.rsplit("/", 1)[-1]
        if base in names:
            path = k[: -len(base)].rstrip("/")
            if path not in seen:
                seen.add(path)
                meta_keys.append((k, path))
    for key, path in meta_keys:
        nodes += 1
        try:
            node = open_node(store, path)
        except ZarrcyError as e:
            problems.append({"key": key, "error": type(e).__name__, "message": str(e)})
            continue
        if data and hasattr(node, "_pipeline"):
            decode = node.metadata.chunk_key_encoding.decode_chunk_key
            plen = len(node._prefix)
            for ck in store.list_prefix(node._prefix):
                coords = decode(ck[plen:])
                if coords is None or len(coords) != node.ndim:
                    continue
                chunks += 1
                try:
                    # read with the array's stored-size cap (a sparse huge file is refused
                    # unread); decoding is bounded by the chunk's decoded size
                    raw = node._get_stored(ck)
                    if raw is not None:
                        node._decode(ck, raw)
                except ZarrcyError as e:
                    problems.append({"key": ck, "error": type(e).__name__, "message": str(e)})
    report = {"url": url, "nodes": nodes, "chunks_checked": chunks, "problems": problems, "ok": not problems}
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{url}: {nodes} node(s), {chunks} chunk(s) checked, {len(problems)} problem(s)")
        for p in problems:
            print(f"  {p['key']}: {p['error']}: {p['message']}", file=sys.stdout)
    return 0 if not problems else 1
