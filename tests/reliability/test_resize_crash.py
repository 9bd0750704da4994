"""A resize killed at any moment never leaves stored chunks beyond the shape (issue 12 item 7).

``_resize_writer.py`` shrinks and grows an array of one-element chunks and fills it, as
fast as it can; the test SIGKILLs it after a random delay, many times, on the same
store, and after every kill asserts:

* no stored chunk lies wholly outside the shape recorded in ``zarr.json`` (shrinking
  erases before the smaller metadata is written);
* growing the array shows the fill value in the whole new region (growing erases
  leftovers beyond the old shape first).

Before the fix (metadata first, erase after) most kills during a shrink left chunks
beyond the shape that reappeared on the next grow.

The kill campaign depends on timing, so it runs only with ``ZARRCY_SLOW=1`` (100 kills);
the default run checks the same ordering deterministically at every kill point
(test_crash_ordering.py: failure injection before each erase and the metadata write).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import zarrcy
from zarrcy.storage import LocalStore

HERE = Path(__file__).resolve().parent
SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")
KILLS = 100


def _stored_coords(root: Path) -> list[int]:
    out = []
    for key in LocalStore(root).list():
        if key.startswith("c/"):
            out.append(int(key.split("/")[1]))
    return out


def _run_and_kill(root: Path, seed: int, ready: Path, delay: float) -> None:
    p = subprocess.Popen([sys.executable, str(HERE / "_resize_writer.py"), str(root), str(seed), str(ready)],
                         env=dict(os.environ, ZARRCY_THREADS="1"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        t0 = time.monotonic()
        while not ready.exists():
            if p.poll() is not None:
                raise AssertionError(f"writer exited early: {p.stderr.read().decode()[-2000:]}")
            assert time.monotonic() - t0 < 60, "writer did not start"
            time.sleep(0.005)
        time.sleep(delay)
        if p.poll() is not None:
            raise AssertionError(f"writer died by itself: {p.stderr.read().decode()[-2000:]}")
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
        p.stderr.close()


@pytest.mark.slow
def test_sigkill_during_resize_leaves_no_chunk_outside_the_shape(tmp_path):
    root = tmp_path / "arr"
    a = zarrcy.create_array(str(root), shape=(200,), chunks=(1,), dtype="uint8", fill_value=0)
    a[:] = 1
    rng = random.Random(1234)
    for it in range(KILLS):
        ready = tmp_path / f"ready{it}"
        _run_and_kill(root, rng.randrange(1 << 30), ready, rng.uniform(0.02, 0.25))
        LocalStore(root).remove_temp_files()
        a = zarrcy.open_array(str(root), mode="r+")
        n = a.shape[0]
        outside = sorted(c for c in _stored_coords(root) if c >= n)
        assert not outside, f"kill {it}: chunks {outside[:10]}... stored beyond shape ({n},)"
        a.resize(n + 400)
        tail = a[n:]
        assert not tail.any(), f"kill {it}: growing from {n} shows stale data at {np.flatnonzero(tail)[:10] + n}"
        a.resize(n)


def test_growing_hides_leftovers_beyond_the_old_shape(tmp_path):
    """Chunks beyond the shape (an older version's interrupted resize) stay hidden."""
    a = zarrcy.create_array(str(tmp_path / "a"), shape=(10,), chunks=(2,), dtype="uint8", fill_value=0)
    a[:] = 7
    a.resize(4, delete_outside=False)  # chunks 2..4 stay, as a killed resize left them
    assert sorted(_stored_coords(tmp_path / "a")) == [0, 1, 2, 3, 4]
    a.append(np.array([1], dtype=np.uint8))  # few new chunks: blind erase
    assert a[:].tolist() == [7, 7, 7, 7, 1]
    a.resize(10)
    assert a[:].tolist() == [7, 7, 7, 7, 1, 0, 0, 0, 0, 0]
    # many new chunks: one listing instead
    b = zarrcy.create_array(str(tmp_path / "b"), shape=(6000,), chunks=(1,), dtype="uint8", fill_value=0)
    b[5990:] = 3
    b.resize(10, delete_outside=False)
    b.resize(6000)
    assert not b[10:].any()
    assert sorted(_stored_coords(tmp_path / "b")) == []


def test_delete_outside_false_keeps_and_shows(tmp_path):
    a = zarrcy.create_array(str(tmp_path / "a"), shape=(10,), chunks=(2,), dtype="uint8", fill_value=0)
    a[:] = 7
    a.resize(4, delete_outside=False)
    a.resize(10, delete_outside=False)
    assert a[:].tolist() == [7] * 10  # v3-core.rst "Resizing": kept data is shown


def test_resize_takes_integers_only():
    a = zarrcy.create_array(zarrcy.storage.MemoryStore(), shape=(10,), chunks=(2,), dtype="uint8")
    for bad in (10.7, 10.0, "10", True, None):
        try:
            a.resize(bad)
        except TypeError as e:
            assert "expected integer sizes" in str(e)
        else:
            raise AssertionError(f"resize({bad!r}) accepted")
    assert a.shape == (10,)
    a.resize(np.int64(12))
    assert a.shape == (12,)
    a.resize((np.uint8(3),))
    assert a.shape == (3,)
