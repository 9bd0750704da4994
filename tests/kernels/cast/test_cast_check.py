"""zarrcy.check_cast report and the `zarrcy cast-check` CLI; public API wiring; threads."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import zarrcy
from zarrcy.casting import cast_check_main, check_cast
from zarrcy.errors import MetadataError

QUANT = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
         {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                   "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}}]


def test_public_names():
    x = np.array([1.4, np.nan])
    assert zarrcy.cast_value(x, "uint8", scalar_map=[["NaN", 0]]).tolist() == [1, 0]
    assert zarrcy.scale_offset_encode(np.array([5.0]), offset=1, scale=2)[0] == 8.0
    assert zarrcy.scale_offset_decode(np.array([8.0]), offset=1, scale=2)[0] == 5.0
    assert zarrcy.check_cast(x, QUANT).scalar_mapped == 1


def test_report_counts():
    x = np.array([0.0, 2540.0, np.nan, 15.0, 16.0, 3000.0, -20.0])
    r = check_cast(x, QUANT)
    # (x+10)*0.1: 1, 255, map, 2.5->2, 2.6->3, 301 fails, -1 fails
    assert r.count == 7
    assert r.scalar_mapped == 1 and r.failing == 2 and r.first_failing_index == 5
    assert r.exact + r.rounded == 4
    assert r.first_failing_reason and "cast_value" in r.first_failing_reason
    assert r.max_abs_error == pytest.approx(5.0)      # 15 -> 2 -> 10
    assert not r.ok
    clamp = [QUANT[0], {"name": "cast_value", "configuration": {**QUANT[1]["configuration"], "out_of_range": "clamp"}}]
    r2 = check_cast(x, clamp)
    assert r2.clamped == 2 and r2.failing == 0 and r2.ok
    wrap = [{"name": "cast_value", "configuration": {"data_type": "int8", "out_of_range": "wrap"}}]
    r3 = check_cast(np.array([1, 200, -300], np.int32), wrap)
    assert (r3.exact, r3.wrapped) == (1, 2) and r3.max_abs_error == 256
    js = r.to_json()
    json.dumps(js)
    assert js["failing"] == 2 and "table" not in js
    assert "scalar-mapped" in r.table()


def test_report_scale_offset_failures_and_multidim():
    x = np.array([[1, 2], [127, 3]], dtype=np.int8)
    r = check_cast(x, [{"name": "scale_offset", "configuration": {"offset": -1, "scale": -1}}])
    assert r.failing == 1 and r.first_failing_index == (1, 0)
    r = check_cast(np.array([1.0, 1e308, 3.0]), [{"name": "scale_offset", "configuration": {"scale": 10}}])
    assert r.failing == 1 and r.first_failing_index == 1


def test_fixedscaleoffset_in_check():
    conf = {"name": "numcodecs.fixedscaleoffset",
            "configuration": {"astype": "|u1", "dtype": "<f8", "scale": 1, "offset": 0}}
    r = check_cast(np.array([1.0, 257.0]), [conf])
    assert r.wrapped == 1


def test_cli(tmp_path, capsys):
    f = tmp_path / "v.npy"
    np.save(f, np.array([0.0, 2540.0, np.nan, 15.0]))
    sm = json.dumps({"encode": [["NaN", 0]], "decode": [[0, "NaN"]]})
    assert cast_check_main([str(f), "--scale", "0.1", "--offset", "-10", "--dtype", "uint8", "--scalar-map", sm]) == 0
    out = capsys.readouterr().out
    assert "scalar-mapped" in out
    assert cast_check_main([str(f), "--codecs", json.dumps(QUANT), "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["scalar_mapped"] == 1 and rep["failing"] == 0
    np.save(f, np.array([0.0, 5000.0]))
    assert cast_check_main([str(f), "--codecs", json.dumps(QUANT), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["first_failing_index"] == 1
    assert cast_check_main([str(f), "--dtype", "uint8", "--rounding", "up"]) == 2


def test_cli_zarr_array(tmp_path, capsys):
    a = zarrcy.create_array(str(tmp_path), name="a", shape=(4,), dtype="float64", chunks=(2,), fill_value=0.0)
    a[...] = np.array([1.0, 2.5, 3.0, 300.0])
    assert cast_check_main([str(tmp_path / "a"), "--dtype", "uint8", "--json"]) == 1
    rep = json.loads(capsys.readouterr().out)
    assert rep["rounded"] == 1 and rep["failing"] == 1


def test_bad_codecs():
    with pytest.raises(MetadataError):
        check_cast(np.zeros(2), [{"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "up"}}])
    with pytest.raises(MetadataError):
        check_cast(np.zeros(2), [{"name": "gzipp"}])
    with pytest.raises(MetadataError):
        check_cast(np.zeros(2), "not json")


def test_kernels_release_the_gil_and_are_thread_safe():
    rng = np.random.default_rng(3)
    chunks = [rng.uniform(-10, 300, 100_000) for _ in range(8)]
    for c in chunks:
        c[::97] = np.nan
    from zarrcy.codecs._base import ArraySpec
    from zarrcy.codecs.cast_value import CastValueCodec, ScalarMap
    from zarrcy.codecs.scale_offset import ScaleOffsetCodec

    fused = ScaleOffsetCodec(-10, 0.1).fuse_with(CastValueCodec("uint8", "towards-zero", "clamp", ScalarMap(encode=(("NaN", 0),))))
    spec = ArraySpec((100_000,), np.dtype("float64"), np.float64(0))
    serial = [fused.encode(c, spec) for c in chunks]
    with ThreadPoolExecutor(4) as ex:
        par = list(ex.map(lambda c: fused.encode(c, spec), chunks))
        par2 = list(ex.map(lambda c: zarrcy.cast_value(c, "int16", "nearest-away", "clamp", [["NaN", -1]]), chunks))
    assert all((a == b).all() for a, b in zip(serial, par))
    assert all((zarrcy.cast_value(c, "int16", "nearest-away", "clamp", [["NaN", -1]]) == p).all()
               for c, p in zip(chunks, par2))
