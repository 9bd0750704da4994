"""A SIGKILL in the middle of LocalStore.set_spliced (ranges half copied into the temp
file) leaves the old value, whole, plus at most one temp file."""

from __future__ import annotations

import os
import signal
import sys
import textwrap

import pytest

from zarrcy.storage.local import TEMP_PREFIX, LocalStore

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import server  # noqa: E402

OLD = bytes(range(256)) * 4096  # 1 MiB

CHILD = textwrap.dedent("""
    import os, sys, time
    from zarrcy.storage import local
    real = local._copy_range
    def slow(src, start, length, dst, at, path):
        real(src, start, length // 2, dst, at, path)
        sys.stdout.write("ready\\n"); sys.stdout.flush()
        time.sleep(60)
    local._copy_range = slow
    s = local.LocalStore(sys.argv[1])
    with s.snapshot("c/0") as snap:
        s.set_spliced("c/0", [b"new", (0, 1 << 19), b"more"], snap)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_mid_splice_keeps_the_old_value(tmp_path):
    s = LocalStore(tmp_path / "s")
    s.set("c/0", OLD)
    p = server().start(["-c", CHILD, s.root])  # another process, forked: ``_forkrun.py``
    try:
        assert p.readline() == "ready\n", p.stderr
    finally:
        p.kill()
        p.communicate()
    assert s.get("c/0") == OLD
    temps = [f for f in os.listdir(tmp_path / "s" / "c") if f.startswith(TEMP_PREFIX)]
    assert len(temps) == 1
    assert s.remove_temp_files() == 1
    assert sorted(s.list()) == ["c/0"]
