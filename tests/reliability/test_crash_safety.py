"""Crash safety (issue 7.2): a writer SIGKILLed at random moments never corrupts data.

A writer process (``_crash_writer.py``) rewrites rows of an int64 array -- each row is
one chunk, or one inner chunk of a shard -- and the array's metadata (attributes), as
fast as it can, logging each write before it starts and after it returns.  The test
kills it with SIGKILL after a random delay, many times, on the same store, and after
every kill asserts:

* the store opens (``zarr.json`` parses) and its attributes hold the last acknowledged
  generation or the one that was in flight;
* every row decodes and equals, element for element, the pattern of the last
  acknowledged generation of that row or of the generation in flight -- never a mix of
  two generations, never anything else;
* listing the store shows only ``zarr.json`` and valid chunk keys (a killed atomic write
  may leave a temp file; it is never listed as a key, and ``remove_temp_files`` clears it).

Layouts: plain chunks (``bytes + gzip + crc32c``), shards with the default ``rewrite``
strategy (index at the end, and at the start), and shards with the opt-in ``append``
strategy (index at the end, and at the start).  For the **append strategy only**, a row
of a shard whose in-place append was torn may instead raise CorruptChunkError (the
documented behaviour: the crc32c of the index detects the torn write; see
``zarrcy/codecs/sharding.py``).  Wrong data is never accepted.  Detected torn shards are
counted and repaired by rewriting the whole shard (what a user does), and the writer
then continues on the same store.

Default run: 2 kills per layout (10 in all: the orderings themselves are covered
deterministically by test_crash_ordering.py); ``ZARRCY_SLOW=1``: 40 per layout (200).
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CorruptChunkError

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _crash_writer import N, pattern  # noqa: E402
from _forkrun import server  # noqa: E402

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
KILLS = 40 if SLOW else 2
ROWS = 8

_LE = {"name": "bytes", "configuration": {"endian": "little"}}
_CRC = {"name": "crc32c"}


def _codecs(layout: str) -> tuple[list, list]:
    """(chunk_shape, codecs) of a layout."""
    if layout == "chunks":
        return [1, N], [_LE, {"name": "gzip", "configuration": {"level": 1}}, _CRC]
    loc = "start" if layout.endswith("start") else "end"
    return [4, N], [{"name": "sharding_indexed", "configuration": {
        "chunk_shape": [1, N], "codecs": [_LE, _CRC], "index_location": loc}}]


LAYOUTS = {
    "chunks": "rewrite",
    "shards-rewrite-end": "rewrite",
    "shards-rewrite-start": "rewrite",
    "shards-append-end": "append",
    "shards-append-start": "append",
}


def _create(root: Path, layout: str) -> None:
    chunk_shape, codecs = _codecs(layout)
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [ROWS, N], "data_type": "int64",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk_shape}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs,
        "attributes": {"gen": 0},
    }
    a = zarrcy.create_array(str(root), metadata=meta)
    a[...] = np.stack([pattern(u, 0) for u in range(ROWS)])


def _parse_log(text: str, model: dict) -> tuple[dict, dict]:
    """(acknowledged generation per unit, in-flight generation per unit)."""
    acked = dict(model)
    pending: tuple[list[str], int] | None = None
    for line in text.splitlines():
        if line.startswith("B "):
            _, units, g = line.split()
            pending = (units.split(","), int(g))
        elif line == "A" and pending is not None:
            for u in pending[0]:
                acked[u] = pending[1]
            pending = None
    inflight = {u: pending[1] for u in pending[0]} if pending else {}
    return acked, inflight


def _run_writer(root: Path, strategy: str, seed: int, first: int, log: Path, delay: float, min_writes: int = 0) -> None:
    """Start the writer (a forked child of the runner that imported zarrcy once:
    ``_forkrun.py``), wait until it is ready (and has acknowledged ``min_writes`` writes),
    let it run ``delay`` seconds more, then SIGKILL it."""
    p = server().start([HERE / "_crash_writer.py", root, strategy, seed, first, log])
    try:
        t0 = time.monotonic()
        while not (log.exists() and log.read_bytes().startswith(b"R\n") and log.read_bytes().count(b"\nA") >= min_writes):
            if p.poll() is not None:
                raise AssertionError(f"writer exited early: {p.stderr[-2000:]}")
            if time.monotonic() - t0 > 60:
                raise AssertionError("writer did not start")
            time.sleep(0.005)
        time.sleep(delay)
        if p.poll() is not None:
            raise AssertionError(f"writer died by itself: {p.stderr[-2000:]}")
    finally:
        p.kill()
        p.communicate()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_sigkill_leaves_old_or_new(tmp_path, layout):
    strategy = LAYOUTS[layout]
    root = tmp_path / "arr"
    _create(root, layout)
    model = {str(u): 0 for u in range(ROWS)} | {"m": 0}
    rng = random.Random(hash(layout) & 0xFFFF)
    gen = 0
    stats = {"kills": 0, "writes": 0, "torn_detected": 0, "new_seen": 0}
    shard_rows = 1 if layout == "chunks" else 4
    for it in range(KILLS):
        log = tmp_path / f"log{it}"
        # the last run kills after at least one acknowledged write if none was seen yet (on
        # a loaded machine a short delay may kill every run before its first write)
        last_chance = it == KILLS - 1 and stats["writes"] == 0
        _run_writer(root, strategy, rng.randrange(1 << 30), gen, log, rng.uniform(0.0, 0.15), int(last_chance))
        stats["kills"] += 1
        text = log.read_text()
        stats["writes"] += text.count("\nA")
        acked, inflight = _parse_log(text, model)
        gen = max([gen, *acked.values(), *inflight.values()])

        # --- verify ---------------------------------------------------------------
        a = zarrcy.open_array(str(root), mode="r")
        g_meta = a.attrs["gen"]
        assert g_meta in {acked["m"], inflight.get("m", acked["m"])}, (g_meta, acked["m"], inflight)
        observed = {"m": g_meta}
        torn_shards = set()
        for u in range(ROWS):
            ok = {acked[str(u)], inflight.get(str(u), acked[str(u)])}
            try:
                row = a[u]
            except CorruptChunkError:
                assert strategy == "append", f"{layout}: row {u} corrupt after a kill"
                torn_shards.add(u // shard_rows)
                continue
            g = (int(row[0]) - u) // 16
            assert g in ok, f"{layout} kill {it}: row {u} holds generation {g}, expected one of {ok}"
            assert np.array_equal(row, pattern(u, g)), f"{layout} kill {it}: row {u} is a mix or garbage"
            observed[str(u)] = g
            stats["new_seen"] += g != acked[str(u)]
        keys = set(zarrcy.storage.LocalStore(root).list())
        valid = {"zarr.json"} | {f"c/{i}/0" for i in range(ROWS // shard_rows)}
        assert keys <= valid, keys - valid

        # --- repair torn shards (append strategy) from the acknowledged state ---------
        if torn_shards:
            stats["torn_detected"] += len(torn_shards)
            fix = zarrcy.open_array(str(root), mode="r+")
            for s in torn_shards:
                rows = range(s * shard_rows, (s + 1) * shard_rows)
                fix[rows.start : rows.stop] = np.stack([pattern(u, acked[str(u)]) for u in rows])
                for u in rows:
                    observed[str(u)] = acked[str(u)]
        model = {k: observed.get(k, acked[k]) for k in model}
        zarrcy.storage.LocalStore(root).remove_temp_files()

    # the final state reads back in one piece and equals the model
    a = zarrcy.open_array(str(root))
    full = a[...]
    for u in range(ROWS):
        assert np.array_equal(full[u], pattern(u, model[str(u)]))
    assert stats["writes"] > 0, stats
    print(f"{layout}: {stats}")
    _record(layout, stats)


def _record(layout: str, stats: dict) -> None:
    """Append the numbers to $ZARRCY_RELIABILITY_STATS (for the README's figures)."""
    out = os.environ.get("ZARRCY_RELIABILITY_STATS")
    if out:
        with open(out, "a") as f:
            f.write(json.dumps({"test": "crash", "layout": layout, **stats}) + "\n")
