"""Writer process for test_resize_crash.py: shrinks, grows and fills an array until killed.

    python _resize_writer.py ROOT SEED READY

Each step resizes the array to a random length (chunks of one element, so a shrink
erases many chunk files) and writes a non-zero value to every element.  READY is
created once the array is open.
"""

from __future__ import annotations

import random
import sys

import numpy as np

import zarrcy


def main() -> None:
    root, seed, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    a = zarrcy.open_array(root, mode="r+")
    rng = random.Random(seed)
    open(ready, "w").close()
    g = 0
    while True:
        g += 1
        n = rng.choice((rng.randrange(1, 8), rng.randrange(100, 300)))
        a.resize(n)
        a[:] = np.full(n, 1 + g % 250, dtype=np.uint8)


if __name__ == "__main__":
    main()
