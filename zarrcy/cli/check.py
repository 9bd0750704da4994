"""``zarrcy check``: validate a store's metadata documents (and optionally its chunks).

With ``--data`` every stored chunk is decoded, and each array's codec chain is judged for
bit rot (:mod:`zarrcy.cli.integrity`): a chunk decodes without error only proves it is
*decodable*; whether damage is noticed depends on a checksum in the chain, which the report
says per array (and how to rewrite the array with one)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, TextIO

from zarrcy.cli.integrity import array_protection
from zarrcy.errors import ZarrcyError

#: seconds between progress lines of a long ``--data`` run (stderr)
PROGRESS_INTERVAL = 5.0


class _Progress:
    """One ``checked i/n chunks`` line on stderr every ``interval`` seconds (none for a run
    shorter than that)."""

    def __init__(self, total: int, stream: TextIO, interval: float) -> None:
        self.total, self.stream, self.interval = total, stream, interval
        self.t0 = self.last = time.monotonic()

    def tick(self, done: int, key: str) -> None:
        now = time.monotonic()
        if now - self.last >= self.interval:
            self.last = now
            pct = 100.0 * done / self.total if self.total else 100.0
            print(f"zarrcy check: {done}/{self.total} chunk(s) checked ({pct:.0f}%, {now - self.t0:.0f} s; at {key})",
                  file=self.stream, flush=True)


def check_store(url: str, *, data: bool = False, as_json: bool = False, path: str | None = None,
                progress_interval: float | None = None, stderr: TextIO | None = None) -> int:
    """Parse every ``zarr.json`` (and v2 ``.zarray``/``.zgroup``) at or below ``path`` in
    ``url``; with ``data`` decode every stored chunk.  Prints a report; returns 0 when
    everything is valid, 1 on any problem, 2 when there is no Zarr node there at all."""
    from zarrcy.api import _store
    from zarrcy.group import open_node
    from zarrcy.metadata.names import normalize_path

    err = stderr if stderr is not None else sys.stderr
    root = normalize_path(path or "")
    where = url + (f" (path /{root})" if root else "")
    store = _store(url, "r")
    problems: list[dict] = []
    nodes = 0
    chunks = 0
    # v3 zarr.json, Zarr v2 .zarray/.zgroup (v1 is read through the same opener)
    names = ("zarr.json", ".zarray", ".zgroup")
    seen: set[str] = set()
    meta_keys = []
    base_prefix = root + "/" if root else ""
    for k in sorted(store.list_prefix(base_prefix) if base_prefix else store.list()):
        base = k.rsplit("/", 1)[-1]
        if base in names:
            p = k[: -len(base)].rstrip("/")
            if p not in seen:
                seen.add(p)
                meta_keys.append((k, p))
    if not meta_keys:
        msg = f"no Zarr array or group at {where}"
        if as_json:
            print(json.dumps({"url": url, "path": root, "nodes": 0, "chunks_checked": 0, "problems": [],
                              "ok": False, "error": msg}, indent=2))
        else:
            print(f"zarrcy check: error: {msg}", file=err)
        return 2
    opened: list[Any] = []
    for key, p in meta_keys:
        nodes += 1
        try:
            node = open_node(store, p)
        except ZarrcyError as e:
            problems.append({"key": key, "error": type(e).__name__, "message": str(e)})
            continue
        if data and hasattr(node, "_pipeline"):
            opened.append(node)
    # list every chunk first, so long runs can say how far they are
    work: list[tuple[Any, str]] = []
    for node in opened:
        decode = node.metadata.chunk_key_encoding.decode_chunk_key
        plen = len(node._prefix)
        for ck in store.list_prefix(node._prefix):
            coords = decode(ck[plen:])
            if coords is None or len(coords) != node.ndim:
                continue
            work.append((node, ck))
    progress = _Progress(len(work), err, PROGRESS_INTERVAL if progress_interval is None else progress_interval)
    for node, ck in work:
        chunks += 1
        try:
            # read with the array's stored-size cap (a sparse huge file is refused
            # unread); decoding is bounded by the chunk's decoded size
            raw = node._get_stored(ck)
            if raw is not None:
                node._decode(ck, raw)
        except ZarrcyError as e:
            problems.append({"key": ck, "error": type(e).__name__, "message": str(e)})
        progress.tick(chunks, ck)
    report: dict[str, Any] = {"url": url, "path": root, "nodes": nodes, "chunks_checked": chunks,
                              "problems": problems, "ok": not problems}
    integrity = [array_protection(node, url) for node in opened] if data else []
    if data:
        report["bit_rot"] = integrity
    if as_json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{where}: {nodes} node(s), {chunks} chunk(s) checked, {len(problems)} problem(s)")
        for pr in problems:
            print(f"  {pr['key']}: {pr['error']}: {pr['message']}", file=sys.stdout)
        if integrity:
            print("bit rot (a damaged stored chunk):")
            for it in integrity:
                print(f"  {it['path']}: {it['verdict']}")
                if it["hint"]:
                    print(f"    checksummed copy: {it['hint']}")
    return 0 if not problems else 1
