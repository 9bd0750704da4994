"""Writer process for test_concurrent_writers.py.

    python _concurrent_writer.py ROOT UNIT WORKER N_WORKERS THREADS ROUNDS STRATEGY [ROWS]

Blocks of UNIT rows (a chunk, or a shard) are dealt round-robin to every (worker,
thread) pair; each thread rewrites its rows one at a time (a row is one chunk or one
inner chunk) with ``value(row, worker, round)``, ROUNDS times; the last round stays.
With ROWS (comma-separated) the worker writes exactly those rows from one thread: used
to make two writers share a shard (the unsafe pattern).
"""

from __future__ import annotations

import sys
import threading

import numpy as np

import zarrcy

W = 4096  # int64 elements per row


def value(r: int, worker: int, rnd: int) -> np.ndarray:
    return (r * 1_000_000 + worker * 1000 + rnd) + np.arange(W, dtype=np.int64) * 10_000_000_000


def decode_value(r: int, row: np.ndarray) -> tuple[int, int] | None:
    """(worker, round) of a row written by value(), or None if it is not such a row."""
    base = int(row[0]) - r * 1_000_000
    worker, rnd = divmod(base, 1000)
    if not np.array_equal(row, value(r, worker, rnd)):
        return None
    return worker, rnd


def main() -> None:
    root, unit, worker, n_workers, threads, rounds, strategy = sys.argv[1:8]
    unit, worker, n_workers, threads, rounds = int(unit), int(worker), int(n_workers), int(threads), int(rounds)
    zarrcy.config(shard_write_strategy=strategy, threads=2)
    a = zarrcy.open_array(root, mode="r+")
    if len(sys.argv) > 8:  # explicit rows, one thread (the unsafe pattern: rows shared with others' shards)
        plans = [[int(x) for x in sys.argv[8].split(",")]]
    else:
        # units (blocks of `unit` rows: a chunk or a shard) go round-robin to every
        # (worker, thread) pair: no two threads anywhere share a unit
        n_units = a.shape[0] // unit
        plans = []
        for t in range(threads):
            owner = worker * threads + t
            plans.append([r for k in range(n_units) if k % (n_workers * threads) == owner
                          for r in range(k * unit, (k + 1) * unit)])

    def run(rows: list[int]) -> None:
        for rnd in range(rounds):
            for r in rows:
                a[r] = value(r, worker, rnd)

    ts = [threading.Thread(target=run, args=(rows,)) for rows in plans]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


if __name__ == "__main__":
    main()
