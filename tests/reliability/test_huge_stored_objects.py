"""Regression: huge stored objects are refused before they are read into memory.

A LocalStore chunk file can be sparse: 3 GB on paper, nothing on disk.  Before the
fixes, reading one element read the whole file (MemoryError under a 1.5 GB address
space limit); a shard index entry claiming a multi-GB inner chunk inside such a file
was fetched whole as well.  Now a whole-chunk read fetches at most
``pipeline.stored_size_limit() + 1`` bytes, and an inner chunk whose size exceeds the
inner chain's limit is refused before its range is fetched.

Each case runs in its own process (forked from a runner that imported zarrcy once:
``_forkrun.py``) with RLIMIT_AS = 1.5 GB, so a regression fails with a
MemoryError instead of exhausting the machine.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _forkrun import run  # noqa: E402

SCRIPT = textwrap.dedent('''
    import os, resource, struct, sys
    import crc32c
    resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))
    import zarrcy
    from zarrcy.errors import CorruptChunkError
    root, case = sys.argv[1], sys.argv[2]
    size = 3 << 30
    if case == "chunk":
        a = zarrcy.create_array(root, shape=(1024,), chunks=(1024,), dtype="uint8")
        os.makedirs(root + "/c", exist_ok=True)
        with open(root + "/c/0", "wb") as f:
            f.truncate(size)
        sels = [0, slice(None)]
    else:
        a = zarrcy.create_array(root, shape=(16,), chunks=(4,), shards=(16,), dtype="uint8")
        a[...] = 1
        idx = struct.pack("<8Q", *([0, size - 100] * 4))
        with open(root + "/c/0", "wb") as f:
            f.truncate(size - 68)
            f.seek(size - 68)
            f.write(idx + struct.pack("<I", crc32c.crc32c(idx)))
        sels = [slice(0, 4), 5, slice(None)]
    b = zarrcy.open_array(root, mode="r")
    for sel in sels:
        try:
            b[sel]
        except CorruptChunkError as e:
            print("refused:", e)
        else:
            raise SystemExit(f"read {sel} of a hostile object succeeded")
    print("ok")
''')


@pytest.mark.parametrize("case", ["chunk", "shard"])
def test_sparse_huge_object_is_refused_without_reading_it(tmp_path, case):
    r = run(["-c", SCRIPT, tmp_path / "a", case], timeout=120)  # its own process, forked: ``_forkrun.py``
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr
