"""Writer process for test_crash_safety.py: rewrites chunks/shards/metadata until killed.

    python _crash_writer.py ROOT STRATEGY SEED FIRST_GEN LOG

Each step picks one or two units (a unit = one row = one chunk, or one inner chunk of a
shard; ``m`` = the array's metadata) and writes generation ``g`` (a global counter
starting at FIRST_GEN) to them.  Before the write it appends ``B <units> <g>`` to LOG,
after it returns ``A`` -- single ``write(2)`` calls on an O_APPEND descriptor, so a
SIGKILL leaves whole lines.  The parent knows from LOG, for every unit, the last
acknowledged generation and the one in flight.
"""

from __future__ import annotations

import os
import random
import sys

import numpy as np

import zarrcy

N = 8192  # int64 elements per unit: 64 KB


def pattern(u: int, g: int) -> np.ndarray:
    return (g * 16 + u) + np.arange(N, dtype=np.int64) * 100_000


def main() -> None:
    root, strategy, seed, first, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    zarrcy.config(threads=2, shard_write_strategy="append" if strategy == "append" else "rewrite")
    a = zarrcy.open_array(root, mode="r+")
    rows = a.shape[0]
    rng = random.Random(seed)
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, b"R\n")  # ready
    g = first
    while True:
        g += 1
        r = rng.random()
        if r < 0.1:
            os.write(fd, f"B m {g}\n".encode())
            a.attrs["gen"] = g
        elif r < 0.3 and rows > 1:
            u = rng.randrange(rows - 1)  # two adjacent units in one call (may span shards)
            os.write(fd, f"B {u},{u + 1} {g}\n".encode())
            a[u : u + 2] = np.stack([pattern(u, g), pattern(u + 1, g)])
        else:
            u = rng.randrange(rows)
            os.write(fd, f"B {u} {g}\n".encode())
            a[u] = pattern(u, g)
        os.write(fd, b"A\n")


if __name__ == "__main__":
    main()
