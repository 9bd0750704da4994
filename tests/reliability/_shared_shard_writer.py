"""Writer process for test_shared_shard_writers.py.

    python _shared_shard_writer.py ROOT WORKER N_WRITES SEED LOCKS

Performs N_WRITES writes of the rectangles ``plan(SEED, WORKER, N_WRITES)`` one after
the other, each filled with its own code ``code(WORKER, j)``; LOCKS is 1 or 0
(``zarrcy.config(write_locks=...)``).
"""

from __future__ import annotations

import sys

import numpy as np

SHAPE = (64, 64)


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


def main() -> None:
    import zarrcy

    root, worker, n, seed, locks = sys.argv[1:6]
    worker, n, seed = int(worker), int(n), int(seed)
    zarrcy.config(write_locks=locks == "1", threads=1)
    a = zarrcy.open_array(root, mode="r+")
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    sys.stdin.readline()  # start together
    for j, sel in enumerate(plan(seed, worker, n)):
        a[sel] = code(worker, j)


if __name__ == "__main__":
    main()
