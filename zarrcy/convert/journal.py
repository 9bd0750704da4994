"""The resume journal of a conversion (see :mod:`zarrcy.convert.engine`, "Journal").

``<dst>/__zarrcy_convert/plan.json`` holds the options' fingerprint; after a region's
objects are written, the CRC32C of each (or null: absent) goes to
``__zarrcy_convert/arrays/<array path>/__done/<region id>``.  A journaled region is
skipped on ``--resume`` only while every object still has its checksum (there is no
per-array shortcut: an object erased or replaced after its region was journaled is
converted again).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from zarrcy.convert.model import ArrayPlan, ConvertOptions, RegionResult
from zarrcy.metadata._parse import load_json_object

__all__ = ["JOURNAL_DIR"]

JOURNAL_DIR = "__zarrcy_convert"


def _cast_report_from_json(d: dict[str, Any]) -> Any:
    from zarrcy.casting import CastReport

    d = dict(d)
    d.pop("partial", None)
    for k in ("max_abs_error", "max_rel_error"):
        d[k] = float(d.get(k, 0.0))
    if isinstance(d.get("first_failing_index"), list):
        d["first_failing_index"] = tuple(d["first_failing_index"])
    return CastReport(**d)


def _crc(data: Any) -> str | None:
    if data is None:
        return None
    import crc32c

    return format(crc32c.crc32c(data), "08x")


def _journal_ok(store: Any, journal_key: str, rid: int) -> RegionResult | None:
    """The journaled result of region ``rid`` if its objects still have their checksums."""
    raw = store.get(journal_key)
    if raw is None:
        return None
    try:
        entry = load_json_object(raw, journal_key)  # MetadataError (a ValueError) if not a JSON object
        keys = entry["keys"]
    except (ValueError, KeyError, TypeError):
        return None
    out = 0
    n = 0
    for key, crc in keys.items():
        data = store.get(key)
        if _crc(data) != crc:
            return None
        if data is not None:
            out += len(data)
            n += 1
    cast = entry.get("cast")
    return RegionResult(rid, skipped=True, decoded_bytes=int(entry.get("decoded_bytes", 0)),
                        bytes_in=int(entry.get("bytes_in", 0)), bytes_out=out, objects=n,
                        cast=_cast_report_from_json(cast) if isinstance(cast, dict) else None)


def _write_entry(store: Any, journal_key: str, keys: dict[str, str | None], res: RegionResult) -> None:
    """Journal a finished region: the checksum of each object it wrote (None: absent)."""
    entry: dict[str, Any] = {"keys": keys, "decoded_bytes": res.decoded_bytes, "bytes_in": res.bytes_in}
    if res.cast is not None:
        entry["cast"] = res.cast.to_json()
    store.set(journal_key, json.dumps(entry, sort_keys=True).encode())


def _fingerprint(o: ConvertOptions, plans: list[ArrayPlan], groups: list[str], source: Any = None) -> str:
    """The options' and plans' fingerprint; ``source``: what the source files were (HDF5:
    device, inode, size, times), so a resume refuses a source changed since."""
    doc = {
        "plans": [[p.rel, p.mode, p.dst_doc, list(p.region_shape)]
                  + ([[list(b) for b in p.region_bounds]] if p.region_bounds is not None else []) for p in plans],
        "groups": groups,
    }
    if source is not None:
        doc["source"] = source
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()

