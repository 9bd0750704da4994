"""Issue 23.9: the node-name table every store must answer the same way
(tests/storage/test_store_node_names.py runs it on LocalStore, MemoryStore and ZipStore,
tests/remote/test_remote_node_names.py on an S3 object store).

Each row: (siblings created first, the name then created, refused?).  Refused means a
zarrcy error (MetadataError for a bad node name, StoreError for a bad store key) and
nothing written; accepted means the node exists afterwards and its parent lists it.
"""

from __future__ import annotations

import zarrcy
from zarrcy.errors import ZarrcyError

NFC_E = "\u00e9"  # é, one code point
NFD_E = "e\u0301"  # e + COMBINING ACUTE ACCENT: the same name on a normalising file system
KELVIN = "\u212a"  # KELVIN SIGN: NFC is "K"

ROWS: list[tuple[tuple[str, ...], str, bool]] = [
    ((), "zarr.json", True),  # the parent's own metadata document
    ((), ".zarray", True),
    ((), ".zgroup", True),
    ((), ".zattrs", True),
    ((), ".zmetadata", True),
    ((), ".", True),
    ((), "..", True),
    ((), "...", True),
    ((), "a\\..\\..\\y", True),  # a path on Windows and to zip tools
    ((), "a\\b", True),
    ((), "__x", True),  # reserved prefix
    ((), "x\x00y", True),
    ((), "c:x", True),  # a drive letter
    ((), "a//b", True),  # an empty segment
    ((NFC_E,), NFD_E, True),
    ((NFD_E,), NFC_E, True),
    ((KELVIN,), "K", True),
    (("K",), KELVIN, True),
    ((NFC_E,), NFC_E + "x", False),
    ((), NFD_E, False),
    ((), "a", False),
    ((), "a.b", False),
    ((), "zarr.json.bak", False),
    ((), "_x", False),
    ((), "x y", False),
    ((), "\u65e5\u672c", False),
    (("k",), "K", False),  # case matters (v3-core: names are case sensitive)
]


def run_table(new_store, describe: str) -> list[str]:
    """Run every row on fresh stores from ``new_store()``; the rows that failed."""
    failures = []
    for siblings, name, refused in ROWS:
        store = new_store()
        zarrcy.create_group(store)
        for s in siblings:
            zarrcy.create_group(store, path=f"p/{s}")
            zarrcy.create_array(store, name=f"q/{s}", shape=(1,), dtype="u1")
        before = sorted(store.list())
        try:
            for how in ("group", "array"):
                if how == "group":
                    node = zarrcy.create_group(store, path=f"p/{name}")
                else:
                    node = zarrcy.create_array(store, name=f"q/{name}", shape=(2,), dtype="u1")
                member = node.path.rpartition("/")[2]
                parent = zarrcy.open_group(store, path=node.path.rpartition("/")[0], mode="r")
                if member not in [n for n, _ in parent.members()]:
                    failures.append(f"{describe}: {name!r} created as {how} but not listed by its parent")
        except ZarrcyError as e:
            if not refused:
                failures.append(f"{describe}: {name!r} refused: {type(e).__name__}: {e}")
            elif sorted(store.list()) != before:
                failures.append(f"{describe}: {name!r} refused but keys were written")
            continue
        except Exception as e:  # a raw builtin is a failure too
            failures.append(f"{describe}: {name!r}: {type(e).__name__}: {e}")
            continue
        if refused:
            failures.append(f"{describe}: {name!r} accepted")
    return failures


def run_sibling_table(new_store, describe: str) -> list[str]:
    """The NFC rows through ``Group.create_group``/``create_array`` at the root."""
    failures = []
    for siblings, name, refused in ROWS:
        if not siblings:
            continue
        store = new_store()
        root = zarrcy.create_group(store)
        for s in siblings:
            root.create_array(s, shape=(1,), dtype="u1")
        try:
            root.create_group(name)
        except ZarrcyError:
            if not refused:
                failures.append(f"{describe}: sibling {name!r} of {siblings} refused")
            continue
        if refused:
            failures.append(f"{describe}: sibling {name!r} of {siblings} accepted")
    return failures
