"""``zarrcy convert`` on string / bytes arrays: rechunk, reshard and re-compress keep the
values (the serializer becomes the vlen codec of the data type)."""

from __future__ import annotations

import numpy as np
import pytest
from vlen_helpers import STRING

import zarrcy
from zarrcy.convert.engine import convert


@pytest.mark.parametrize("kw", [{"chunks": (10,), "shards": (20,)}, {}, {"compressor": "gzip"}, {"chunks": (3,)}])
def test_convert_strings_and_bytes(tmp_path, kw) -> None:
    src = str(tmp_path / "src")
    a = zarrcy.create_array(src, name="s", shape=(50,), chunks=(7,), dtype=str, fill_value="-")
    a[:40] = np.array(["x" * (i * 37) + "é\x00" for i in range(40)], dtype=STRING)
    b = zarrcy.create_array(src, name="b", shape=(5,), chunks=(2,), dtype="bytes")
    b[:] = [b"a\x00", b"", b"c", b"\xff", b"e"]
    report = convert(src, str(tmp_path / "dst"), verify=True, **kw)
    assert report.verified
    s2 = zarrcy.open_array(str(tmp_path / "dst" / "s"))
    b2 = zarrcy.open_array(str(tmp_path / "dst" / "b"))
    assert s2.dtype == STRING and s2[:].tolist() == a[:].tolist() and s2.fill_value == "-"
    assert b2[:].tolist() == b[:].tolist()
    inner = s2.metadata.to_json()["codecs"]
    if inner[0]["name"] == "sharding_indexed":
        inner = inner[0]["configuration"]["codecs"]
    assert inner[0] == {"name": "vlen-utf8"}
