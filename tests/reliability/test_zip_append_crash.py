"""Regression (issue 12, item 8): a ZipStore opened in mode "a" and killed before
``close()`` keeps the archive committed before the append.

Before the fix, appending wrote new members over the old central directory, so a
SIGKILL before ``close()`` left a file no zip reader could open: the whole archive was
lost.  Now mode "a" appends to a copy beside the archive and ``close()`` renames it over
the original atomically (zarrcy/storage/zip.py docstring).

Each test runs the writer in a child process (forked from a runner that imported zarrcy
once: ``_forkrun.py``) and kills it with SIGKILL; ``ZARRCY_SLOW=1``
runs the kill loop longer.
"""

from __future__ import annotations

import hashlib
import os
import random
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import zarrcy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import server  # noqa: E402

SLOW = os.environ.get("ZARRCY_SLOW", "") not in ("", "0")

WRITER = textwrap.dedent('''
    import sys, time
    import numpy as np
    import zarrcy
    from zarrcy.storage import ZipStore
    path, close = sys.argv[1], sys.argv[2] == "close"
    st = ZipStore(path, mode="a")
    g = zarrcy.open_group(st, mode="a")
    g["a"][...] = np.full(100, 7, dtype="int32")         # supersedes every chunk of "a"
    b = g.create_array("b", shape=(1000,), chunks=(10,), dtype="int32")
    b[...] = np.arange(1000, dtype="int32")              # 100 new members (> 64 KiB of entries)
    if close:
        st.close()
    print("ready", flush=True)
    time.sleep(120)
''')

LOOP = textwrap.dedent('''
    import sys
    import numpy as np
    import zarrcy
    from zarrcy.storage import ZipStore
    path, start = sys.argv[1], int(sys.argv[2])
    i = start
    while True:
        i += 1
        st = ZipStore(path, mode="a")
        a = zarrcy.open_array(st, path="a", mode="r+")
        a[...] = np.full(100, i, dtype="int32")
        st.close()
        print(i, flush=True)
''')


def _make_archive(p):
    with zarrcy.storage.ZipStore(p, mode="w") as st:
        g = zarrcy.create_group(st)
        g.create_array("a", shape=(100,), chunks=(10,), dtype="int32")[...] = np.arange(100, dtype="int32")


def _digest(p) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _run_until_ready(args):
    proc = server().start(["-c", *args])
    try:
        line = proc.readline()
        assert line.strip() == "ready", line + proc.stderr
    finally:
        proc.kill()
        proc.communicate()
    return proc


def test_kill_before_close_keeps_the_committed_archive(tmp_path):
    p = tmp_path / "data.zip"
    _make_archive(p)
    before = _digest(p)
    _run_until_ready([WRITER, str(p), "open"])
    assert _digest(p) == before  # untouched, byte for byte
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None
    g = zarrcy.open_group(str(p), mode="r")
    np.testing.assert_array_equal(g["a"][...], np.arange(100))
    assert "b" not in g
    # the abandoned copy is left beside the archive (documented); it is not the archive
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".zarrcy-append")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".data.zip.")


def test_kill_after_close_keeps_the_appended_archive(tmp_path):
    p = tmp_path / "data.zip"
    _make_archive(p)
    _run_until_ready([WRITER, str(p), "close"])
    g = zarrcy.open_group(str(p), mode="r")
    np.testing.assert_array_equal(g["a"][...], np.full(100, 7))
    np.testing.assert_array_equal(g["b"][...], np.arange(1000))
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".zarrcy-append")]


def test_append_through_a_symlink_keeps_the_link(tmp_path):
    real = tmp_path / "real.zip"
    _make_archive(real)
    link = tmp_path / "link.zip"
    link.symlink_to(real)
    with zarrcy.storage.ZipStore(link, mode="a") as st:
        zarrcy.open_array(st, path="a", mode="r+")[...] = np.full(100, 3, dtype="int32")
    assert link.is_symlink()
    np.testing.assert_array_equal(zarrcy.open_array(str(real), path="a", mode="r")[...], np.full(100, 3))


def test_failed_open_leaves_no_copy(tmp_path, monkeypatch):
    p = tmp_path / "a.zip"
    _make_archive(p)

    def refuse(*args, **kwargs):
        raise zipfile.BadZipFile("hostile central directory")

    monkeypatch.setattr(zipfile, "ZipFile", refuse)
    with pytest.raises(zarrcy.errors.StoreError, match="not a valid zip"):
        zarrcy.storage.ZipStore(p, mode="a")
    assert sorted(os.listdir(tmp_path)) == ["a.zip"]


def test_kill_loop_never_loses_a_committed_append(tmp_path):
    """Kill a writer that appends and closes in a loop at random moments (also during
    close: fsync, rename): the archive is always readable and holds the last value whose
    close() completed, or the one after it (killed between rename and print)."""
    p = tmp_path / "loop.zip"
    _make_archive(p)
    rng = random.Random(12)
    last = 0
    for _ in range(30 if SLOW else 4):
        proc = server().start(["-c", LOOP, p, last])
        try:
            first = proc.readline()  # one completed append, then kill at a random moment
            assert first.strip(), proc.stderr
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            proc.kill()
            rest, _ = proc.communicate()
        out = first + rest
        printed = [int(x) for x in out.split()]
        with zipfile.ZipFile(p) as z:
            assert z.testzip() is None
        got = zarrcy.open_array(str(p), path="a", mode="r")[...]
        assert len(set(got.tolist())) == 1, got
        v = int(got[0])
        assert v in (printed[-1], printed[-1] + 1), (v, printed)
        last = v
        for n in os.listdir(tmp_path):
            if n.endswith(".zarrcy-append"):
                os.unlink(tmp_path / n)
