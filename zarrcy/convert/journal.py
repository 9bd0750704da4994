"""The resume journal of a conversion (see :mod:`zarrcy.convert.engine`, "Journal").

``<dst>/__zarrcy_convert/plan.json`` holds the options' fingerprint; after a region's
objects are written, the CRC32C of each (or null: absent) goes to
``__zarrcy_convert/arrays/<array path>/__done/<region id>``.  A journaled region is
skipped on ``--resume`` only while every object still has its checksum (there is no
per-array shortcut: an object erased or replaced after its region was journaled is
converted again).

:class:`Journal` is the role object: its declared inputs are the destination store, the
destination root, the plan's fingerprint and format, and whether the store can hold a
journal at all (``Store.supports_deletes``: the journal is erased at the end; a zip
archive is written in one go, without one).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from zarrcy.convert.model import ArrayPlan, ConvertError, RegionResult, _prefix
from zarrcy.errors import MetadataError
from zarrcy.metadata._parse import load_json_object

__all__ = ["JOURNAL_DIR", "Journal", "erase_journal", "erase_except"]

JOURNAL_DIR = "__zarrcy_convert"


def _cast_report_from_json(d: dict[str, Any]) -> Any:
    from zarrcy.casting import CastReport

    d = dict(d)
    d.pop("partial", None)
    for k in ("max_abs_error", "max_rel_error"):
        d[k] = float(d.get(k, 0.0))
    if isinstance(d.get("first_failing_index"), list):
        d["first_failing_index"] = tuple(d["first_failing_index"])
    known = set(CastReport.__dataclass_fields__)
    return CastReport(**{k: v for k, v in d.items() if k in known})


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
                        cast=_cast_report_from_json(cast) if isinstance(cast, dict) else None,
                        collisions=int(entry.get("collisions", 0)), sentinel_counts=entry.get("sentinel_counts"))


def _write_entry(store: Any, journal_key: str, keys: dict[str, str | None], res: RegionResult) -> None:
    """Journal a finished region: the checksum of each object it wrote (None: absent)."""
    entry: dict[str, Any] = {"keys": keys, "decoded_bytes": res.decoded_bytes, "bytes_in": res.bytes_in}
    if res.cast is not None:
        entry["cast"] = res.cast.to_json()
    if res.collisions:
        entry["collisions"] = res.collisions
    if res.sentinel_counts:
        entry["sentinel_counts"] = res.sentinel_counts
    store.set(journal_key, json.dumps(entry, sort_keys=True).encode())


def _fingerprint(plans: list[ArrayPlan], groups: list[str], source: Any = None) -> str:
    """The plans' fingerprint; ``source``: what the source files were (HDF5: device,
    inode, size, times), so a resume refuses a source changed since."""
    doc = {
        "plans": [[p.rel, p.mode, p.dst_doc, list(p.region_shape)]
                  + ([[list(b) for b in p.region_bounds]] if p.region_bounds is not None else []) for p in plans],
        "groups": groups,
    }
    if source is not None:
        doc["source"] = source
    return hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()


def erase_journal(store: Any, jroot: str) -> None:
    """Erase a finished conversion's journal with ``plan.json`` last, so a run killed in
    the middle still has a journal: ``--resume`` then skips every region and erases the
    rest (erasing ``plan.json`` first would leave entries that no run ever removes)."""
    plan_key = jroot + "plan.json"
    store.erase_values([k for k in store.list_prefix(jroot) if k != plan_key])
    store.erase_prefix(jroot)


def erase_except(store: Any, prefix: str, keep: str) -> None:
    """Erase every key under ``prefix`` but ``keep``, in batches (bounded memory)."""
    batch: list[str] = []
    for k in store.list_prefix(prefix):
        if k != keep:
            batch.append(k)
            if len(batch) >= 4096:
                store.erase_values(batch)
                batch = []
    if batch:
        store.erase_values(batch)


@dataclass
class Start:
    """What :meth:`Journal.start` found: resume the journaled run, or start afresh (after
    erasing an old destination), or nothing to do (a complete destination, ``--resume``)."""

    resuming: bool = False
    already_complete: bool = False


class Journal:
    """The journal of one conversion at ``<dst>/<root>/__zarrcy_convert/`` (see the
    module docstring).  ``enabled`` is false for stores without deletes (zip): then
    there is no journal, no ``--resume`` and an existing destination is erased plainly."""

    def __init__(self, store: Any, root: str, fingerprint: str, fmt: int) -> None:
        self.store = store
        self.root = root
        self.prefix = _prefix(root)
        self.jroot = self.prefix + JOURNAL_DIR + "/"
        self.fingerprint = fingerprint
        self.fmt = fmt
        self.enabled = bool(store.supports_deletes)

    @property
    def plan_key(self) -> str:
        return self.jroot + "plan.json"

    def region_key(self, rel: str, rid: int) -> str:
        return f"{self.array_dir(rel)}__done/{rid}"

    def array_dir(self, rel: str) -> str:
        return self.jroot + "arrays/" + (rel or "_") + "/"

    def start(self, resume: bool, overwrite: bool, node_exists: bool,
              differs: Callable[[], str | None] = lambda: None) -> Start:
        """Check the destination against the options and prepare it: refuse a plain rerun
        onto an interrupted conversion, a ``--resume`` with other options, an existing
        node without ``--overwrite``, a ``--resume`` onto a node without a journal that is
        not what these options write (``differs``: the first such node, or None); erase an
        old destination (marking the journal first, so a kill in the middle is redone by
        ``--resume``)."""
        store, url = self.store, self.store.url
        if resume and not self.enabled:
            raise ConvertError(f"destination {url}: --resume needs a store that supports deletes "
                               "(a zip archive is written in one go; convert into a directory to resume)", 2)
        plan_raw = store.get(self.plan_key)
        doc: dict[str, Any] = {}
        if plan_raw is not None:
            if not resume and not overwrite:
                raise ConvertError(f"destination {url}/{self.root}: an interrupted conversion is there; "
                                   "rerun with --resume to finish it (or --overwrite to start over)", 2)
            if resume:  # (a damaged plan.json: named, never a crash; --overwrite replaces it)
                try:
                    doc = load_json_object(plan_raw, self.plan_key)
                except MetadataError as e:
                    raise ConvertError(f"destination {url}/{self.root}: --resume: {e} (rerun with --overwrite "
                                       "to start over)", 2) from None
            if resume and doc.get("fingerprint") != self.fingerprint:
                raise ConvertError(f"destination {url}/{self.root}: --resume with different options or source "
                                   "than the interrupted run (rerun with the same options, or --overwrite)", 2)
        elif node_exists:
            if resume and not overwrite:
                # no journal: "complete" only if the nodes are the ones these options write (an
                # --overwrite killed before its journal mark, other options, a node erased)
                bad = differs()
                if bad is not None:
                    raise ConvertError(f"destination {url}/{self.root}: --resume: no interrupted conversion is "
                                       f"journaled there, and /{bad} is not what these options write (another "
                                       "conversion, or an incomplete one: rerun with --overwrite)", 2)
                # a finished run killed while erasing its journal leaves entries without plan.json
                # (plan.json goes last, see erase_journal): finish that clean-up
                if self.enabled and next(iter(store.list_prefix(self.jroot)), None) is not None:
                    erase_journal(store, self.jroot)
                return Start(already_complete=True)
            if not overwrite:
                raise ConvertError(f"destination {url}/{self.root}: a node exists there (pass --overwrite)", 2)
        resuming = resume and plan_raw is not None and not doc.get("erasing")
        # (killed while --overwrite erased the old destination: erase again, start afresh)
        if (overwrite or plan_raw is not None) and not resuming and (node_exists or plan_raw is not None):
            if self.enabled:
                self._write_plan(erasing=True)
                erase_except(store, self.prefix, self.plan_key)
            else:
                store.erase_prefix(self.prefix)
        if resuming:
            store.remove_temp_files()
        return Start(resuming=resuming)

    def _write_plan(self, erasing: bool = False) -> None:
        doc: dict[str, Any] = {"fingerprint": self.fingerprint, "format": self.fmt}
        if erasing:
            doc["erasing"] = True
        self.store.set(self.plan_key, json.dumps(doc).encode())

    def begin(self) -> None:
        """Record the plan before anything else is written (a fresh run)."""
        if self.enabled:
            self._write_plan()

    def finish(self) -> None:
        """Every array is done: erase the journal (``plan.json`` last)."""
        if self.enabled:
            erase_journal(self.store, self.jroot)

    def discard(self) -> None:
        """Remove everything this run wrote (a refused ``--quantize``): the destination
        and the journal, ``plan.json`` last, so a kill in between leaves a journal, not a
        node that passes for complete."""
        if self.enabled:
            erase_except(self.store, self.prefix, self.plan_key)
        self.store.erase_prefix(self.prefix)
