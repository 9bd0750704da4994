"""Regression (issue 12, item 5): metadata documents are read with a size cap.

Before the fix every metadata read (v3 ``zarr.json``, v2 ``.zarray``/``.zgroup``/
``.zattrs``/``.zmetadata``, v1 ``meta``/``attrs``, consolidated metadata) read the whole
stored value: a sparse 3 GB ``zarr.json``, a zip central directory claiming a 3 GB
``zarr.json`` or a deflated member inflating to 3 GiB ended in a raw MemoryError.  Now
at most ``zarrcy.config(max_metadata_bytes=...)`` + 1 bytes are requested (default
64 MiB, env ``ZARRCY_MAX_METADATA_BYTES``) and a larger document raises MetadataError
naming the key (or, for a zip member whose data contradicts its directory entry,
CorruptChunkError).

The huge cases run each in its own process (forked from one runner that imported zarrcy
once: ``_forkrun.py``) with RLIMIT_AS = 1.5 GB, so a regression fails with a MemoryError
instead of exhausting the machine; they set the cap to 4 MiB (the documents claim 3 GB).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import zarrcy
from zarrcy.errors import MetadataError
from zarrcy.storage import MemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _forkrun import run_cases  # noqa: E402

SCRIPT = textwrap.dedent('''
    import json, os, resource, struct, sys, zipfile, zlib
    root, case = sys.argv[1], sys.argv[2]
    BIG = 3 << 30

    def sparse(path, size=BIG):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(size)

    def v2_zarray():
        return json.dumps({"zarr_format": 2, "shape": [4], "chunks": [4], "dtype": "<u1", "compressor": None,
                           "filters": None, "fill_value": 0, "order": "C"})

    def write(path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)

    key = None
    if case == "v3":
        sparse(root + "/zarr.json"); key = "zarr.json"
    elif case == "v3-child":  # a group whose child's zarr.json is huge
        write(root + "/zarr.json", json.dumps({"zarr_format": 3, "node_type": "group"}))
        sparse(root + "/x/zarr.json"); key = "x/zarr.json"
    elif case == "v2-zarray":
        sparse(root + "/.zarray"); key = ".zarray"
    elif case == "v2-zgroup":
        sparse(root + "/.zgroup"); key = ".zgroup"
    elif case == "v2-zattrs":
        write(root + "/.zarray", v2_zarray()); sparse(root + "/.zattrs"); key = ".zattrs"
    elif case == "v2-zmetadata":
        write(root + "/.zgroup", json.dumps({"zarr_format": 2})); sparse(root + "/.zmetadata"); key = ".zmetadata"
    elif case == "v1-meta":
        sparse(root + "/meta"); key = "meta"
    elif case in ("zip-stored", "zip-deflated"):
        zp = root + ".zip"
        with zipfile.ZipFile(zp, "w") as z:
            if case == "zip-stored":
                z.writestr("zarr.json", b"{}")
            else:
                z.writestr("zarr.json", b"x", compress_type=zipfile.ZIP_DEFLATED)
        raw = bytearray(open(zp, "rb").read())
        if case == "zip-deflated":  # swap in a raw deflate stream of 3 GiB of zeros
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            first = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
            seg = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
            bomb = first + seg * 3071 + b"\\x03\\x00"
            start = 30 + 9  # local header + name "zarr.json", no extra field
            old_len = struct.unpack_from("<I", raw, 18)[0]
            tail = raw[start + old_len:]
            struct.pack_into("<I", raw, 18, len(bomb))
            raw = raw[:start] + bomb + tail
            cd = raw.find(b"PK\\x01\\x02", start + len(bomb))
            struct.pack_into("<I", raw, cd + 20, len(bomb))
            eocd = raw.rfind(b"PK\\x05\\x06")
            struct.pack_into("<I", raw, eocd + 16, cd)
        cd = raw.rfind(b"PK\\x01\\x02")
        struct.pack_into("<I", raw, cd + 24, BIG)  # the directory claims 3 GB uncompressed
        open(zp, "wb").write(bytes(raw))
        root, key = zp, "zarr.json"
    else:
        raise SystemExit(f"unknown case {case}")

    resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))
    import zarrcy
    from zarrcy.errors import CorruptChunkError, MetadataError
    # the same refusal as with the 64 MiB default (whose value test_max_metadata_bytes_is_configurable
    # checks), on 4 MiB read per attempt instead of 64: still 3 GB short of the document
    zarrcy.config(max_metadata_bytes=4 << 20)

    opens = [lambda: zarrcy.open(root, mode="r"), lambda: zarrcy.open_group(root, mode="r"),
             lambda: zarrcy.open_array(root, mode="r")]
    if case == "v2-zmetadata":  # read by open_group(mode="r") only (zarrcy.open does not consolidate v2)
        opens = [lambda: zarrcy.open_group(root, mode="r")]
    if case == "v3-child":
        opens = [lambda: zarrcy.open_group(root, mode="r")["x"], lambda: list(zarrcy.open_group(root, mode="r").members())]
    for f in opens:
        try:
            f()
        except MetadataError as e:
            assert key in str(e) and "max_metadata_bytes" in str(e), e
            print("refused:", e)
        except CorruptChunkError as e:  # a stored zip member shorter than its directory entry claims
            assert case == "zip-stored" and key in str(e), e
            print("refused:", e)
        else:
            raise SystemExit("a huge metadata document was accepted")
    print("ok")
''')

CASES = ["v3", "v3-child", "v2-zarray", "v2-zgroup", "v2-zattrs", "v2-zmetadata", "v1-meta", "zip-stored", "zip-deflated"]


@pytest.fixture(scope="module")
def huge_results(tmp_path_factory):
    """Every case, each in its own (forked) process: ``_forkrun.py``."""
    dirs = {case: tmp_path_factory.mktemp(case) for case in CASES}
    return run_cases(SCRIPT, {case: [str(dirs[case] / "a"), case] for case in CASES}, timeout=60 + 30 * len(CASES))


@pytest.mark.parametrize("case", CASES)
def test_huge_metadata_document_is_refused_unread(huge_results, case):
    r = huge_results[case]
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), r.stdout + r.stderr


def test_max_metadata_bytes_is_configurable(restore_config):
    store = MemoryStore()
    g = zarrcy.create_group(store, attributes={"pad": "x" * 5000})
    zarrcy.create_array(store, name="a", shape=(4,), dtype="uint8", attributes={"pad": "y" * 5000})
    assert zarrcy.config()["max_metadata_bytes"] == 64 << 20
    zarrcy.config(max_metadata_bytes=4096)
    for f in (lambda: zarrcy.open_group(store, mode="r"), lambda: zarrcy.open_array(store, path="a", mode="r")):
        with pytest.raises(MetadataError, match="max_metadata_bytes=4096"):
            f()
    zarrcy.config(max_metadata_bytes=1 << 20)
    assert zarrcy.open_group(store, mode="r").attrs["pad"] == g.attrs["pad"]
    assert zarrcy.open_array(store, path="a", mode="r").shape == (4,)


def test_environment_sets_the_default(tmp_path):
    zarrcy.create_group(str(tmp_path / "g"), attributes={"pad": "x" * 5000})
    code = ("import sys, zarrcy\nfrom zarrcy.errors import MetadataError\n"
            "assert zarrcy.config()['max_metadata_bytes'] == 1000\n"
            "try:\n    zarrcy.open_group(sys.argv[1], mode='r')\nexcept MetadataError as e:\n    print('refused', e)\n")
    import os

    env = dict(os.environ, ZARRCY_MAX_METADATA_BYTES="1000")
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "g")], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "refused" in r.stdout and "zarr.json" in r.stdout, r.stdout + r.stderr


def test_v2_consolidated_reads_are_capped(tmp_path, restore_config):
    root = tmp_path / "v2"
    zarrcy.create_group(str(root), zarr_format=2, attributes={"pad": "z" * 5000})
    zarrcy.consolidate_metadata(str(root))
    assert json.loads((root / ".zmetadata").read_text())["metadata"]
    zarrcy.config(max_metadata_bytes=2048)
    with pytest.raises(MetadataError, match=r"\.zmetadata|\.zattrs"):
        zarrcy.open_group(str(root), mode="r")
