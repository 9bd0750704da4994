"""zarrcy convert says what it did (issue 14 items 3-6): quantize counts and round-trip
errors per array, nan=V collisions refused, --quantize on float arrays only, no empty
destination after a failed run, --chunks/--shards rank checks, --workers 0, and the
default compressor / filters of a v2 source kept (or the change explained)."""

from __future__ import annotations

import json
import os

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.casting import chain_report, check_cast
from zarrcy.convert import ConvertError, convert_main
from zarrcy.convert.options import parse_quantize
from zarrcy.storage import LocalStore


def _float_src(path: str, values: np.ndarray, fill=float("nan"), name: str = "x") -> str:
    """A single array (the returned URL names the array itself, not a hierarchy)."""
    a = zarrcy.create_array(path, name=name, shape=values.shape, dtype=values.dtype, chunks=(50,) * values.ndim,
                            fill_value=fill)
    a[...] = values
    return os.path.join(path, name)


def _data(n: int = 200) -> np.ndarray:
    rng = np.random.default_rng(3)
    x = rng.random((n, n))  # [0, 1)
    x[::17, ::13] = np.nan
    x[1, 1] = 0.0
    x[2, 2] = 0.5
    return x


# ---- item 3: the report ---------------------------------------------------------------
def test_quantize_summary_and_json_report_counts(tmp_path, capsys):
    x = _data()
    src = _float_src(str(tmp_path / "s.zarr"), x)
    dst = str(tmp_path / "d.zarr")
    q = "scale=250,offset=0,dtype=uint8,out_of_range=clamp,nan=255"
    assert convert_main([src, dst, "--quantize", q, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rep = doc["plans"][0]["quantize_report"]
    want = check_cast(x, parse_quantize(q)).to_json()  # the slow, element-wise engine is the oracle
    for k in ("count", "exact", "rounded", "clamped", "wrapped", "scalar_mapped", "failing", "round_trip_mismatches",
              "max_abs_error", "max_rel_error"):
        assert rep[k] == want[k], k
    assert rep["scalar_mapped"] == int(np.isnan(x).sum()) and rep["exact"] >= 2
    assert 0 < rep["max_abs_error"] <= 0.5 / 250 + 1e-12
    # the text summary says the same
    assert convert_main([src, str(tmp_path / "d2.zarr"), "--quantize", q, "--progress", "off"]) == 0
    out = capsys.readouterr().out
    assert "quantized /x" not in out  # a single array: its path is the root of the destination
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("quantized /"))
    assert f"{want['exact']:,} exact" in line and f"{want['scalar_mapped']:,} scalar-mapped" in line
    assert "clamped" in line and "max round-trip error" in line


def test_quantize_report_counts_clamped_values(tmp_path):
    x = _data()
    src = _float_src(str(tmp_path / "s.zarr"), x)
    rep = zarrcy.convert(src, str(tmp_path / "d.zarr"), quantize="scale=1000,offset=-0.01,dtype=uint8,out_of_range=clamp,nan=0",
                         progress="off")
    q = rep.plans[0].quantize_report
    assert q["clamped"] == int(((np.nan_to_num(x, nan=0) + 0.01) * 1000 > 255.5).sum()) > 0
    assert "clamped" in rep.summary()


@pytest.mark.parametrize("check", ["first", "inline"])
def test_nan_code_collision_is_refused_before_writing(tmp_path, capsys, check):
    """The README's old example: nan=0 while real values encode to 0 (they would read back as NaN)."""
    x = _data()
    src = _float_src(str(tmp_path / "s.zarr"), x)
    dst = str(tmp_path / "d.zarr")
    rc = convert_main([src, dst, "--quantize", "scale=100,offset=0,dtype=uint8,out_of_range=clamp,nan=0",
                       "--quantize-check", check, "--progress", "off"])
    assert rc == 5
    err = capsys.readouterr().err
    assert "nan=0 collides" in err and "read back as a different kind of value" in err
    assert not os.path.exists(dst)


@pytest.mark.parametrize("block", [1 << 20, 7, 1000])
def test_chain_report_matches_check_cast(block, monkeypatch):
    """The fast report equals check_cast's (the element-wise oracle) on every counter, with
    NaN, +-Infinity, zeros, clamping, wrapping and failing data — also when it is computed
    in blocks (bounded memory) and merged."""
    import zarrcy.casting.report as casting

    monkeypatch.setattr(casting, "_REPORT_BLOCK", block)
    rng = np.random.default_rng(5)
    chains = ["scale=100,offset=-1,dtype=uint8,out_of_range=clamp,nan=255", "scale=300,dtype=uint8,out_of_range=wrap,nan=7",
              "scale=1000,offset=0.5,dtype=int16,nan=0,out_of_range=clamp", "scale=10,dtype=uint8",
              "scale=1,dtype=float16,nan=0", "scale=2,dtype=int32,out_of_range=clamp"]
    # 7-element blocks: 300 values still merge 43 blocks and hold every special value below
    n = 300 if block < 100 else 3000
    for trial in range(48):
        x = (rng.random(n) * (1, 3, 300)[trial % 3] - trial % 2).astype(("float32", "float64")[trial % 2])
        kind = (trial // 6) % 4
        if kind >= 1:
            x[::37] = np.nan
        if kind >= 2:
            x[5] = np.inf
        if kind >= 3:
            x[9], x[11] = -np.inf, 0.0
        chain = parse_quantize(chains[trial % len(chains)])
        want = check_cast(x, chain, max_indices=0).to_json()
        assert chain_report(x, chain).to_json() == want, (trial, chains[trial % len(chains)])


def test_quantize_report_survives_resume(tmp_path):
    """Regions journaled by an interrupted run keep their counts for the final summary."""
    x = _data(400)
    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, name="x", shape=x.shape, dtype=x.dtype, chunks=(100, 100), fill_value=float("nan"))
    a[...] = x
    dst = str(tmp_path / "d.zarr")
    q = "scale=250,dtype=uint8,out_of_range=clamp,nan=255"
    full = zarrcy.convert(src, str(tmp_path / "full.zarr"), quantize=q, chunks="100,100", shards="200,200",
                          progress="off").plans[0].quantize_report
    # a complete run, then pretend it was interrupted after the first region: the journal
    # of the others is gone and --resume redoes them (inline report) and reuses region 0's
    from zarrcy.convert.engine import JOURNAL_DIR
    from zarrcy.storage import store_from_url

    import zarrcy.convert.execute as execute

    calls = []
    orig = execute.run_region

    def stop_after_one(task, ctx=None):
        if calls:
            raise KeyboardInterrupt
        calls.append(task.rid)
        return orig(task, ctx)

    execute.run_region = stop_after_one
    try:
        with pytest.raises(ConvertError):
            zarrcy.convert(src, dst, quantize=q, chunks="100,100", shards="200,200", progress="off", workers=1)
    finally:
        execute.run_region = orig
    st = store_from_url(dst, mode="r")
    assert any(k.startswith(JOURNAL_DIR) for k in st.list())
    rep = zarrcy.convert(src, dst, quantize=q, chunks="100,100", shards="200,200", progress="off", resume=True)
    got = rep.plans[0].quantize_report
    for k in ("count", "exact", "rounded", "clamped", "scalar_mapped", "max_abs_error"):
        assert got[k] == full[k], k


# ---- item 4: hierarchies, failed runs ---------------------------------------------------
def test_quantize_in_hierarchy_applies_to_float_arrays_only(tmp_path, capsys):
    src = str(tmp_path / "s.zarr")
    g = zarrcy.open_group(src, mode="w")
    f = g.create_array("f", shape=(40, 40), dtype="float64", chunks=(20, 20), fill_value=float("nan"))
    f[...] = np.linspace(0, 0.9, 1600).reshape(40, 40)
    i = g.create_array("i", shape=(40,), dtype="int32", chunks=(10,), fill_value=0)
    i[...] = np.arange(40) * 1000
    dst = str(tmp_path / "d.zarr")
    assert convert_main([src, dst, "--quantize", "scale=250,dtype=uint8,nan=255", "--progress", "off"]) == 0
    out = capsys.readouterr().out
    assert "note /i: not quantized: int32 is not a floating-point type" in out
    assert "quantized /f" in out
    assert np.array_equal(zarrcy.open_array(dst, path="i")[...], np.arange(40) * 1000)
    assert zarrcy.open_array(dst, path="f").metadata.to_json()["codecs"][0]["name"] == "scale_offset"
    # a single integer array: an error, not a silent copy
    assert convert_main([src, str(tmp_path / "e.zarr"), "--path", "i", "--quantize", "scale=2,dtype=uint8"]) == 2
    assert "applies to floating-point arrays" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "e.zarr")


def test_failed_run_leaves_no_empty_destination(tmp_path, capsys):
    src = _float_src(str(tmp_path / "s.zarr"), _data(), fill=0.0)
    dst = tmp_path / "d.zarr"
    # the fill value 0 cannot be code 0 (nan=0): it gets a code of its own (255), and the
    # data values that encode to 0 would read back as NaN: refused (exit 5) after writing
    # began, the partly written destination removed
    assert convert_main([src, str(dst), "--quantize", "scale=100,dtype=uint8,out_of_range=clamp,nan=0"]) == 5
    assert not dst.exists()
    # an existing (empty) directory is left as it was
    dst.mkdir()
    assert convert_main([src, str(dst), "--quantize", "scale=100,dtype=uint8,out_of_range=clamp,nan=0"]) == 5
    assert dst.is_dir()
    # a fill code the type has not: exit 2 before anything is written, naming the option
    assert convert_main([src, str(dst), "--quantize", "scale=100,dtype=uint8,nan=0,fill=256"]) == 2
    assert "--quantize.fill" in capsys.readouterr().err
    assert dst.is_dir() and not os.listdir(dst)


# ---- item 5: rank checks, workers ----------------------------------------------------------
def test_wrong_rank_chunks_or_shards_is_an_error_for_one_array(tmp_path, capsys):
    src = _float_src(str(tmp_path / "s.zarr"), _data())
    for opt in (["--chunks", "10,10,10"], ["--shards", "100"], ["--chunks", "10", "--shards", "20"]):
        assert convert_main([src, str(tmp_path / "d.zarr"), *opt]) == 2, opt
        err = capsys.readouterr().err
        assert "expected 2 sizes" in err, err
    assert not os.path.exists(tmp_path / "d.zarr")


def test_wrong_rank_in_hierarchy_is_an_error(tmp_path, capsys):
    """A --chunks/--shards rank no array of the hierarchy has: exit 2 naming the option
    (it was a warning, then the default layout: issue 22 item 6)."""
    src = str(tmp_path / "s.zarr")
    g = zarrcy.open_group(src, mode="w")
    g.create_array("a", shape=(10, 10), dtype="int8", chunks=(5, 5), fill_value=0)[...] = 1
    g.create_array("t", shape=(10,), dtype="int8", chunks=(5,), fill_value=0)[...] = 1
    assert convert_main([src, str(tmp_path / "d.zarr"), "--chunks", "4,4,4", "--progress", "off"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--chunks: expected sizes for the rank of an array here ([1, 2])" in err, err
    with pytest.raises(ConvertError, match="--shards"):
        zarrcy.convert(src, str(tmp_path / "e.zarr"), shards="8,8,8", progress="off")
    assert not os.path.exists(tmp_path / "d.zarr") and not os.path.exists(tmp_path / "e.zarr")
    # a rank some array has applies to those arrays; the others keep their chunking
    assert convert_main([src, str(tmp_path / "f.zarr"), "--chunks", "2", "--progress", "off"]) == 0
    assert zarrcy.open_array(str(tmp_path / "f.zarr"), path="t").chunks == (2,)
    assert zarrcy.open_array(str(tmp_path / "f.zarr"), path="a").chunks == (5, 5)


def test_workers_must_be_positive(tmp_path, capsys):
    src = _float_src(str(tmp_path / "s.zarr"), _data())
    assert convert_main([src, str(tmp_path / "d.zarr"), "--workers", "0"]) == 2
    assert "--workers: expected a positive integer, received 0" in capsys.readouterr().err
    with pytest.raises(ConvertError):
        zarrcy.convert(src, str(tmp_path / "d.zarr"), workers=-1)
    assert not os.path.exists(tmp_path / "d.zarr")


# ---- item 6: the default compressor and filters ---------------------------------------------
def test_v2_blosc_lz4_delta_keeps_the_compressor_and_explains_the_filter(tmp_path, capsys):
    src = str(tmp_path / "old.zarr")
    x = np.cumsum(np.ones((200, 200), dtype="<f4"), axis=1)
    a = zarrcy.create_array(src, name="t", shape=x.shape, dtype="<f4", chunks=(100, 100), zarr_format=2,
                            compressors=numcodecs.Blosc("lz4", 5, 1), filters=[numcodecs.Delta("<f4")])
    a[...] = x
    dst = str(tmp_path / "new.zarr")
    assert convert_main([src, dst, "--progress", "off"]) == 0
    out = capsys.readouterr().out
    assert "filter delta dropped" in out
    b = zarrcy.open_array(dst, path="t")
    codecs = b.metadata.to_json()["codecs"]
    assert codecs[-1]["name"] == "blosc"
    cfg = codecs[-1]["configuration"]
    assert (cfg["cname"], cfg["clevel"], cfg["shuffle"]) == ("lz4", 5, "shuffle")
    assert np.array_equal(b[...], x)


def test_v2_compressors_map_to_v3(tmp_path, capsys):
    x = np.arange(400, dtype="<i4").reshape(20, 20)
    cases = [(numcodecs.Zstd(7), "zstd", {"level": 7}), (numcodecs.GZip(2), "gzip", {"level": 2}),
             (numcodecs.Zlib(4), "gzip", {"level": 4}), (numcodecs.BZ2(1), "zstd", {"level": 0})]
    for i, (comp, name, cfg) in enumerate(cases):
        src = str(tmp_path / f"s{i}.zarr")
        zarrcy.create_array(src, name="t", shape=x.shape, dtype=x.dtype, chunks=(10, 10), zarr_format=2,
                            compressors=comp)[...] = x
        rep = zarrcy.convert(src, str(tmp_path / f"d{i}.zarr"), rewrite=True, progress="off")
        got = zarrcy.open_array(str(tmp_path / f"d{i}.zarr"), path="t").metadata.to_json()["codecs"][-1]
        assert got["name"] == name and all(got["configuration"][k] == v for k, v in cfg.items()), (comp, got)
        notes = rep.plans[0].notes
        if comp.codec_id in ("zlib", "bz2"):
            assert notes and comp.codec_id in notes[0], notes
        else:
            assert not notes, notes


def test_v2_fixedscaleoffset_filter_is_kept_as_v3_codecs(tmp_path):
    src = str(tmp_path / "old.zarr")
    q = np.linspace(0, 100, 40 * 30).reshape(40, 30)
    z = zarrcy.create_array(src, name="scaled", shape=q.shape, dtype="<f8", chunks=(16, 16), zarr_format=2,
                            filters=[numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f8", astype="<u2")],
                            compressors=numcodecs.GZip(1), fill_value=0)
    z[...] = q
    want = z[...]
    rep = zarrcy.convert(src, str(tmp_path / "new.zarr"), verify=True, progress="off")
    b = zarrcy.open_array(str(tmp_path / "new.zarr"), path="scaled")
    names = [c["name"] for c in b.metadata.to_json()["codecs"]]
    assert names == ["scale_offset", "cast_value", "bytes", "gzip"], names
    assert np.array_equal(b[...], want) and not rep.plans[0].notes


def test_v3_sharded_source_keeps_its_inner_compressor(tmp_path):
    from zarrcy.codecs import GzipCodec

    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, name="t", shape=(64, 64), dtype="uint16", chunks=(16, 16), shards=(32, 32),
                            compressors=[GzipCodec(level=3)], fill_value=0)
    a[...] = np.arange(64 * 64, dtype="uint16").reshape(64, 64)
    rep = zarrcy.convert(src, str(tmp_path / "d.zarr"), chunks="8,8", shards="32,32", progress="off")
    inner = zarrcy.open_array(str(tmp_path / "d.zarr"), path="t").metadata.to_json()["codecs"][0]["configuration"]["codecs"]
    assert inner[-1] == {"name": "gzip", "configuration": {"level": 3}}
    assert not rep.plans[0].notes


# ---- issue 17: the default --quantize path reads the source once ------------------------
class _CountingStore(LocalStore):
    """A LocalStore counting reads of chunk objects (keys under ``c/``)."""

    chunk_reads = 0

    def get(self, key, byte_range=None):
        if "/c/" in "/" + key:
            type(self).chunk_reads += 1
        return super().get(key, byte_range)


@pytest.mark.parametrize("check, reads", [(None, 1), ("inline", 1), ("first", 2)])
def test_quantize_default_reads_the_source_once(tmp_path, check, reads, monkeypatch):
    """Single pass by default: every source chunk is read once, the cast report is built
    per region while converting and merged; ``--quantize-check first`` keeps its pre-pass
    (a second read).  The report is the same either way."""
    x = _data()
    path = str(tmp_path / "s.zarr")
    _float_src(path, x)
    monkeypatch.setattr(_CountingStore, "chunk_reads", 0)
    src = _CountingStore(path, read_only=True)
    q = "scale=250,dtype=uint8,out_of_range=clamp,nan=255"
    kw = {} if check is None else {"quantize_check": check}
    rep = zarrcy.convert(src, str(tmp_path / "d.zarr"), path="x", quantize=q, chunks="50,50", shards="100,100",
                         progress="off", workers=2, **kw)
    assert _CountingStore.chunk_reads == reads * 16  # (200 / 50) ** 2 source chunks
    want = check_cast(x, parse_quantize(q)).to_json()
    got = rep.plans[0].quantize_report
    for k in ("count", "exact", "rounded", "clamped", "scalar_mapped", "round_trip_mismatches"):
        assert got[k] == want[k], k


def test_region_report_memory_is_bounded():
    """The cast report of a region is built in blocks (zarrcy.casting.report._REPORT_BLOCK): its
    temporaries stay a small fraction of the region (16 MiB here; ~46 MiB of float64
    temporaries with the former 1 Mi-element blocks, ~3 MiB now), so the single-pass
    default keeps the peak RSS of a conversion near the regions in flight."""
    import tracemalloc

    from zarrcy.convert.execute import QuantizeCheck, _region_cast_report

    q = QuantizeCheck(parse_quantize("scale=250,dtype=uint8,out_of_range=clamp,nan=255") or [])
    x = np.random.default_rng(0).random(1 << 22, dtype=np.float32).reshape(2048, 2048)
    x[::7, ::5] = np.nan
    sel = (slice(0, 2048), slice(0, 2048))
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        rep = _region_cast_report("x", x, sel, q).report
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert rep.count == x.size
    assert peak < 8 << 20, peak
