"""Unit tests of the convert pieces: option parsing, region planning, globs, progress,
exit codes of verification failures and interruptions, pickling of v2 arrays."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest

import zarrcy
from zarrcy.convert import convert_main, engine, execute, regions
from zarrcy.convert.options import compressor_to_numcodecs, parse_compressor, parse_quantize, parse_shape
from zarrcy.convert.progress import Progress, human_bytes
from zarrcy.errors import MetadataError


def test_parse_shape():
    assert parse_shape("256, 128", "--chunks") == (256, 128)
    assert parse_shape((3,), "--chunks") == (3,)
    assert parse_shape(None, "--chunks") is None
    for bad in ("", "0,1", "a", "-1"):
        with pytest.raises(MetadataError, match="--chunks"):
            parse_shape(bad, "--chunks")


def test_parse_compressor():
    assert parse_compressor("gzip:1") == [{"name": "gzip", "configuration": {"level": 1}}]
    assert parse_compressor("zstd:3+crc32c")[1] == {"name": "crc32c"}
    assert parse_compressor("blosc:lz4:5:bitshuffle")[0]["configuration"] == {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle"}
    assert parse_compressor("none") == []
    for bad in ("lz77", "gzip:x", "blosc:lz4:5:sideways", "zstd:1:2"):
        with pytest.raises(MetadataError, match="--compressor"):
            parse_compressor(bad)
    assert compressor_to_numcodecs(parse_compressor("blosc:zstd:5:shuffle")) == {
        "id": "blosc", "cname": "zstd", "clevel": 5, "shuffle": 1, "blocksize": 0}
    assert compressor_to_numcodecs([]) is None


def test_parse_quantize():
    so, cv = parse_quantize("scale=100,offset=-1.5,dtype=uint8,rounding=nearest-away,out_of_range=clamp,nan=0")
    assert so == {"name": "scale_offset", "configuration": {"offset": -1.5, "scale": 100}}
    assert cv["configuration"] == {"data_type": "uint8", "rounding": "nearest-away", "out_of_range": "clamp",
                                   "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}
    assert parse_quantize({"dtype": "int16"})[1]["configuration"] == {"data_type": "int16"}
    for bad in ("scale=1", "dtype=uint8,foo=1", "dtype"):
        with pytest.raises(MetadataError, match="--quantize"):
            parse_quantize(bad)


def test_region_shape_and_objects():
    # sharded: one shard per region
    assert regions._region_shape((1000, 1000), (256, 256), 4, 1 << 30, True) == (256, 256)
    # unsharded: whole chunks grown from the last dimension up to the target
    r = regions._region_shape((1000, 1000), (100, 100), 8, 8 * 100 * 1000 * 3, False)
    assert r == (300, 1000)
    sel = regions._region_selection((1000, 1000), r, 3)
    assert sel == (slice(900, 1000), slice(0, 1000))
    assert list(regions._object_coords((slice(128, 256), slice(0, 5)), (64, 5))) == [(2, 0), (3, 0)]


def test_globs():
    assert engine._matches("a/b/c", ["a"])
    assert engine._matches("a/b/c", ["/a/b/"])
    assert engine._matches("a/b/c", ["*/c"])  # fnmatch: * spans "/"
    assert not engine._matches("x/y", ["a*"])


def test_progress_modes():
    s = io.StringIO()
    p = Progress(1000, mode="lines", stream=s, interval=0)
    p.update(500)
    p.close()
    assert "50.0%" in s.getvalue() and "ETA" in s.getvalue()
    s = io.StringIO()
    p = Progress(1000, mode="bar", stream=s)
    p.update(1000)
    p.close()
    assert "1000" in s.getvalue() or "100%" in s.getvalue()
    s = io.StringIO()
    p = Progress(10, mode="off", stream=s)
    p.update(10)
    p.close()
    assert s.getvalue() == ""
    assert Progress(1, stream=io.StringIO()).mode == "lines"  # not a TTY
    assert human_bytes(1536) == "1.5 KiB"


def _small_src(tmp_path):
    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, name="a", shape=(20, 20), dtype="<f4", chunks=(5, 5), zarr_format=2)
    a[...] = np.arange(400, dtype="f4").reshape(20, 20)
    return src


def test_verify_failure_exit_code(tmp_path, monkeypatch, capsys):
    src = _small_src(tmp_path)
    monkeypatch.setattr(execute, "_same", lambda a, b: False)
    assert convert_main([src, str(tmp_path / "d.zarr"), "--rewrite", "--verify", "--progress", "off"]) == 4
    assert "verify" in capsys.readouterr().err


def test_interrupt_exit_code(tmp_path, monkeypatch, capsys):
    src = _small_src(tmp_path)

    def boom(task, ctx=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(execute, "run_region", boom)
    assert convert_main([src, str(tmp_path / "d.zarr"), "--progress", "off", "--workers", "1"]) == 130
    assert "--resume" in capsys.readouterr().err
    monkeypatch.undo()
    assert convert_main([src, str(tmp_path / "d.zarr"), "--progress", "off", "--resume"]) == 0


def test_json_error_output(tmp_path, capsys):
    assert convert_main([str(tmp_path / "nothing"), str(tmp_path / "d.zarr"), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and doc["exit_code"] == 2


def test_v2_array_pickles(tmp_path):
    src = _small_src(tmp_path)
    a = zarrcy.open_array(src, path="a", mode="r")
    b = pickle.loads(pickle.dumps(a))
    assert b.metadata == a.metadata and np.array_equal(b[...], a[...])
    assert "Shape" in a.info
