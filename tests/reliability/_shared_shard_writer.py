"""Writer process for test_shared_shard_writers.py.

    python _shared_shard_writer.py ROOT WORKER N_WRITES SEED LOCKS

Performs N_WRITES writes of the rectangles ``plan(SEED, WORKER, N_WRITES)`` one after
the other, each filled with its own code ``code(WORKER, j)``; LOCKS is 1 or 0
(``zarrcy.config(write_locks=...)``).
"""

from __future__ import annotations

import json
import os
import sys

import numpy as np

SHAPE = (64, 64)
WRITES = 5


def code(worker: int, j: int) -> int:
    return worker * 100 + j + 1


def plan(seed: int, worker: int, n: int) -> list[tuple[slice, slice]]:
    """``n`` random rectangles of SHAPE (sides 1..40), one per write of ``worker``."""
    rng = np.random.default_rng([seed, worker])
    out = []
    for _ in range(n):
        sl = []
        for size in SHAPE:
            a, b = sorted(int(x) for x in rng.integers(0, size + 1, 2))
            if b - a > 40:
                b = a + 40
            if a == b:
                b = a + 1 if a < size else a
                a = b - 1
            sl.append(slice(a, b))
        out.append((sl[0], sl[1]))
    return out


def campaign(root: str, seed: int, locks: bool, writers: int, storage_options: dict | None = None) -> None:
    """Run ``writers`` writer processes on the array at ``root`` (a path or URL, opened
    with ``storage_options``), released together.  Each is a forked child of a runner
    that imported zarrcy once (``_forkrun.py``)."""
    from _forkrun import server

    env = {"SHARED_WRITER_OPTIONS": json.dumps(storage_options)}
    procs = [server().start([__file__, root, w, WRITES, seed, "1" if locks else "0"], env=env) for w in range(writers)]
    try:
        for p in procs:
            assert p.readline().strip() == "ready", p.stderr
        for p in procs:  # all imported and opened: release them together
            p.send("go\n")
        for p in procs:
            _, err = p.communicate(timeout=300)
            assert p.returncode == 0, err
    finally:
        for p in procs:
            p.kill()


def lost_updates(final: np.ndarray, seed: int, writers: int) -> int:
    """Elements whose value no sequential order of the writes can produce."""
    covering: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for w in range(writers):
        for j, (r, c) in enumerate(plan(seed, w, WRITES)):
            for i in range(r.start, r.stop):
                for k in range(c.start, c.stop):
                    covering.setdefault((i, k), []).append((w, j))
    bad = 0
    for i in range(SHAPE[0]):
        for k in range(SHAPE[1]):
            writes = covering.get((i, k), [])
            v = int(final[i, k])
            if not writes:
                bad += v != 0
                continue
            holder = [(w, j) for w, j in writes if code(w, j) == v]
            if not holder:
                bad += 1
                continue
            w, j = holder[0]
            bad += any(w2 == w and j2 > j for w2, j2 in writes)  # a later write of the same process
    return bad


def main() -> None:
    import zarrcy

    root, worker, n, seed, locks = sys.argv[1:6]
    worker, n, seed = int(worker), int(n), int(seed)
    zarrcy.config(write_locks=locks == "1", threads=1)
    a = zarrcy.open_array(root, mode="r+", storage_options=json.loads(os.environ.get("SHARED_WRITER_OPTIONS", "null")))
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()  # start together
    for j, sel in enumerate(plan(seed, worker, n)):
        a[sel] = code(worker, j)


if __name__ == "__main__":
    main()
