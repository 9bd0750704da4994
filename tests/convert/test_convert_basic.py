"""zarrcy convert: copy (metadata-only) and rewrite modes, sharding, quantize, v2 output,
filters, dry runs, the CLI, and bad input."""

from __future__ import annotations

import json
import os
import warnings

import numcodecs
import numpy as np
import pytest

import zarrcy
from zarrcy.convert import ConvertError, convert_main
from convert_helpers import make_v2_hierarchy, same, stored_objects


def _json(path: str):
    with open(path) as f:
        return json.load(f)


def _zarr():
    import zarr

    return zarr


def _check_tree(dst: str, expect: dict[str, np.ndarray]) -> None:
    g = zarrcy.open_group(dst, mode="r")
    for path, want in expect.items():
        assert same(g[path][...], want), path
    # zarr-python opens the result too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zg = _zarr().open_group(dst, mode="r")
        for path, want in expect.items():
            assert same(zg[path][...], want), path
        assert zg.attrs["title"] == "fixture"
        assert zg["sub"].attrs["level"] == 1


def _ts_read(path: str) -> np.ndarray:
    ts = pytest.importorskip("tensorstore")
    return ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}, open=True).result().read().result()


def test_copy_mode_v2_to_v3(v2_tree_any, tmp_path):
    src, expect = v2_tree_any
    dst = str(tmp_path / "dst.zarr")
    rep = zarrcy.convert(src, dst, progress="off")
    modes = {p.rel: p.mode for p in rep.plans}
    # native codecs (blosc, zstd, gzip, F order): chunk bytes copied as they are
    assert modes["temp"] == "copy" and modes["sub/fortran"] == "copy"
    assert modes["sub/delta"] == "rewrite" and modes["scaled"] == "rewrite"  # numcodecs filters
    doc = _json(os.path.join(dst, "sub/fortran/zarr.json"))
    assert doc["chunk_key_encoding"] == {"name": "v2", "configuration": {"separator": "/"}}
    assert doc["codecs"][0] == {"name": "transpose", "configuration": {"order": [1, 0]}}
    s, d = stored_objects(src), stored_objects(dst)
    for k, v in s.items():
        if k.startswith("temp/") and not k.endswith((".zarray", ".zattrs")):
            assert d[k] == v
    meta = _json(os.path.join(dst, "temp/zarr.json"))
    assert meta["dimension_names"] == ["y", "x"] and meta["attributes"]["units"] == "K"
    assert meta["fill_value"] == "NaN"
    _check_tree(dst, expect)
    assert same(_ts_read(os.path.join(dst, "temp")), expect["temp"])
    assert same(_ts_read(os.path.join(dst, "sub/fortran")), expect["sub/fortran"])
    assert not any(k.startswith("__zarrcy_convert") for k in d)  # journal removed when complete


def test_rewrite_sharded(v2_tree_any, tmp_path):
    src, expect = v2_tree_any
    dst = str(tmp_path / "dst.zarr")
    rep = zarrcy.convert(src, dst, shards="32,32", chunks="16,16", compressor="zstd:3", verify=True, workers=2,
                         progress="off")
    assert rep.verified and rep.regions_done == rep.regions
    a = zarrcy.open_array(dst, path="temp", mode="r")
    assert a.shards == (32, 32) and a.chunks == (16, 16)
    # 1-d arrays keep their chunking (the option is for the arrays of its rank)
    assert zarrcy.open_array(dst, path="sub/delta", mode="r").chunks == (32,)
    _check_tree(dst, expect)
    for path, want in expect.items():  # every array, filters re-encoded into v3 codecs included
        assert same(_ts_read(os.path.join(dst, path)), want), path


def test_rewrite_forced_and_codecs_json(v2_tree, tmp_path):
    src, expect = v2_tree
    dst = str(tmp_path / "dst.zarr")
    codecs = json.dumps([{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "gzip", "configuration": {"level": 1}}])
    rep = zarrcy.convert(src, dst, codecs=codecs, progress="off", include=["temp", "sub/fortran"])
    assert {p.rel for p in rep.plans} == {"temp", "sub/fortran"}
    a = zarrcy.open_array(dst, path="temp", mode="r")
    assert [c.name for c in a.metadata.codecs] == ["bytes", "gzip"]
    assert same(a[...], expect["temp"])
    assert same(zarrcy.open_array(dst, path="sub/fortran", mode="r")[...], expect["sub/fortran"])


def test_quantize(v2_tree, tmp_path):
    src, expect = v2_tree
    dst = str(tmp_path / "q.zarr")
    rep = zarrcy.convert(src, dst, include=["scaled"], quantize="scale=2,offset=0,dtype=uint8,rounding=nearest-even",
                         shards="32,32", chunks="16,16", verify=True, progress="off")
    assert rep.arrays == 1
    a = zarrcy.open_array(dst, path="scaled", mode="r")
    got = a[...]
    assert np.max(np.abs(got - expect["scaled"])) <= 0.25 + 1e-12
    names = [c["name"] for c in a.metadata.to_json()["codecs"][0]["configuration"]["codecs"]]
    assert names[:2] == ["scale_offset", "cast_value"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert same(_zarr().open_array(os.path.join(dst, "scaled"), mode="r")[...], got)


def test_quantize_refuses_with_report(v2_tree, tmp_path, capsys):
    src, _ = v2_tree
    dst = str(tmp_path / "q.zarr")
    rc = convert_main([src, dst, "--include", "scaled", "--quantize", "scale=10,dtype=uint8", "--quantize-check", "first"])
    assert rc == 5
    err = capsys.readouterr().err
    assert "refusing to start" in err and "failing" in err and "first failing index" in err
    assert not os.path.exists(os.path.join(dst, "scaled"))
    # NaN without a mapping cannot be encoded either (fill value NaN): clear error
    rc = convert_main([src, dst, "--include", "temp", "--quantize", "scale=10,offset=-10,dtype=uint8"])
    assert rc in (2, 5)


@pytest.mark.parametrize("check", [[], ["--quantize-check", "inline"]])
def test_quantize_check_inline(v2_tree, tmp_path, capsys, check):
    """The default (--quantize-check inline): no pre-pass; a value that cannot be encoded
    stops the run with the same report and exit code 5, and the partly written destination
    is removed."""
    src, expect = v2_tree
    dst = str(tmp_path / "q.zarr")
    args = [src, dst, "--include", "scaled", *check, "--progress", "off"]
    assert convert_main([*args, "--quantize", "scale=10,dtype=uint8"]) == 5
    err = capsys.readouterr().err
    assert "refusing" in err and "first failing index" in err and "checked while converting" in err
    assert not os.path.exists(dst) or not os.listdir(dst)
    # a good chain converts exactly as with the pre-check (--quantize-check first)
    q = "scale=4,offset=-0.5,dtype=uint8,out_of_range=clamp"
    assert convert_main([*args, "--quantize", q]) == 0
    first = str(tmp_path / "first.zarr")
    assert convert_main([src, first, "--include", "scaled", "--progress", "off", "--quantize", q,
                         "--quantize-check", "first"]) == 0
    a, b = zarrcy.open_array(dst, path="scaled")[...], zarrcy.open_array(first, path="scaled")[...]
    assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    with pytest.raises(ConvertError, match="quantize-check"):
        zarrcy.convert(src, str(tmp_path / "x.zarr"), quantize=q, quantize_check="later", progress="off")


def test_convert_error_pickles_with_its_exit_code():
    import pickle

    e = pickle.loads(pickle.dumps(ConvertError("boom", 5, {"a": 1})))
    assert (str(e), e.exit_code, e.report) == ("boom", 5, {"a": 1})


def test_quantize_nan_mapping(v2_tree, tmp_path):
    src, expect = v2_tree
    dst = str(tmp_path / "q.zarr")
    zarrcy.convert(src, dst, include=["temp"], quantize="scale=20,offset=-6,dtype=uint8,out_of_range=clamp,nan=0",
                   progress="off", verify=True)
    got = zarrcy.open_array(dst, path="temp", mode="r")[...]
    want = expect["temp"]
    assert np.isnan(got[3, 4]) and np.array_equal(np.isnan(got), np.isnan(want))


def test_format2_output(v2_tree_any, tmp_path):
    src, expect = v2_tree_any
    dst = str(tmp_path / "v2out.zarr")
    zarrcy.convert(src, dst, zarr_format=2, compressor="blosc:zstd:5:shuffle", chunks="20,20", progress="off")
    assert os.path.exists(os.path.join(dst, ".zgroup"))
    for path, want in expect.items():
        a = zarrcy.open_array(dst, path=path, mode="r")
        assert a.metadata.zarr_format == 2
        assert same(a[...], want)
    _check_tree(dst, expect)
    # and back: v3 -> v2
    v3 = str(tmp_path / "v3.zarr")
    zarrcy.convert(src, v3, progress="off", shards="40,40", chunks="20,20")
    back = str(tmp_path / "back.zarr")
    zarrcy.convert(v3, back, zarr_format=2, progress="off")
    _check_tree(back, expect)


def test_zarrcy_written_v2_and_v1_sources(tmp_path):
    data = np.arange(30 * 20, dtype=">f8").reshape(30, 20)
    src = str(tmp_path / "s.zarr")
    a = zarrcy.create_array(src, name="x", shape=data.shape, dtype=data.dtype, chunks=(7, 6), zarr_format=2,
                            compressors=numcodecs.Zlib(1), fill_value=float("nan"))
    a[...] = data
    zarrcy.convert(src, str(tmp_path / "d.zarr"), progress="off", shards="14,12", chunks="7,6")
    assert same(zarrcy.open_array(str(tmp_path / "d.zarr"), path="x")[...], data)
    # a v1 array (meta/attrs) as source
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "meta").write_text(json.dumps({"zarr_format": 1, "shape": [5], "chunks": [2], "dtype": "<i2",
                                         "compression": "blosc", "compression_opts": {"cname": "lz4", "clevel": 1, "shuffle": 1},
                                         "fill_value": 9, "order": "C"}))
    (v1 / "attrs").write_text('{"from": "v1"}')
    codec = numcodecs.Blosc("lz4", 1, 1)
    (v1 / "0").write_bytes(codec.encode(np.array([1, 2], "<i2").tobytes()))
    out = str(tmp_path / "v1out.zarr")
    rep = zarrcy.convert(str(v1), out, progress="off")
    assert rep.plans[0].mode == "copy"
    b = zarrcy.open_array(out, mode="r")
    assert b[...].tolist() == [1, 2, 9, 9, 9] and b.attrs["from"] == "v1"


def test_include_exclude(v2_tree, tmp_path):
    src, _ = v2_tree
    dst = str(tmp_path / "d.zarr")
    rep = zarrcy.convert(src, dst, exclude=["sub"], progress="off")
    assert {p.rel for p in rep.plans} == {"temp", "scaled", "empty"}
    g = zarrcy.open_group(dst, mode="r")
    assert "sub" not in g
    dst2 = str(tmp_path / "d2.zarr")
    rep = zarrcy.convert(src, dst2, include=["sub/*"], exclude=["*/delta"], progress="off")
    assert {p.rel for p in rep.plans} == {"sub/fortran"}
    assert zarrcy.open_group(dst2, mode="r")["sub"].attrs["level"] == 1


def test_single_array_and_paths(v2_tree, tmp_path):
    src, expect = v2_tree
    dst = str(tmp_path / "d.zarr")
    zarrcy.convert(src, dst, path="sub/fortran", dst_path="out/f", progress="off")
    assert same(zarrcy.open_array(dst, path="out/f")[...], expect["sub/fortran"])
    assert isinstance(zarrcy.open(dst, path="out", mode="r"), zarrcy.Group)


def test_dry_run_and_json(v2_tree, tmp_path, capsys):
    src, _ = v2_tree
    dst = str(tmp_path / "d.zarr")
    assert convert_main([src, dst, "--dry-run", "--shards", "32,32", "--chunks", "16,16"]) == 0
    out = capsys.readouterr().out
    assert "dry run" in out and "estimated output" in out
    assert not os.path.exists(dst)
    assert convert_main([src, dst, "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["dry_run"] and len(doc["plans"]) == 5
    assert all(p["estimated_output_bytes"] is not None for p in doc["plans"])
    assert convert_main([src, dst, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["arrays"] == 5 and doc["bytes_out"] > 0 and doc["compression_ratio"] > 0


def test_cli_progress_lines_and_summary(v2_tree, tmp_path, capsys):
    src, _ = v2_tree
    rc = convert_main([src, str(tmp_path / "d.zarr"), "--progress", "lines", "--progress-interval", "0.001", "--rewrite"])
    assert rc == 0
    cap = capsys.readouterr()
    assert "convert:" in cap.err and "ETA" in cap.err
    assert "converted 5 array(s)" in cap.out and "compression ratio" in cap.out
    # through the main CLI too
    from zarrcy.cli import main

    assert main(["convert", src, str(tmp_path / "e.zarr"), "--progress", "off"]) == 0


def test_destination_exists(v2_tree, tmp_path, capsys):
    src, expect = v2_tree
    dst = str(tmp_path / "d.zarr")
    assert convert_main([src, dst, "--progress", "off"]) == 0
    assert convert_main([src, dst, "--progress", "off"]) == 2
    assert "exists" in capsys.readouterr().err
    assert convert_main([src, dst, "--progress", "off", "--overwrite", "--shards", "32,32"]) == 0
    assert zarrcy.open_array(dst, path="temp").shards == (32, 32)
    _check_tree(dst, expect)


def test_not_zarr_source(tmp_path, capsys):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "file.txt").write_text("hello")
    assert convert_main([str(tmp_path / "junk"), str(tmp_path / "d.zarr")]) == 2
    assert "not a Zarr" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "d.zarr" / "zarr.json")


def test_bad_options(v2_tree, tmp_path, capsys):
    src, _ = v2_tree
    dst = str(tmp_path / "d.zarr")
    for argv in (["--chunks", "a,b"], ["--shards", "30,30", "--chunks", "16,16"], ["--compressor", "snappy:1"],
                 ["--quantize", "scale=1"], ["--codecs", "{bad"], ["--format", "2", "--shards", "32,32"]):
        assert convert_main([src, dst, "--progress", "off", *argv]) == 2, argv
    assert not os.path.exists(os.path.join(dst, "zarr.json"))


def test_unsupported_dtype(tmp_path, capsys):
    src = str(tmp_path / "s.zarr")
    rec = [("a", "<i4", (2,)), ("b", "<f8")]  # a subarray field: no v3 struct form (records convert)
    recs = [((1, 0), 2.0), ((3, 0), 4.0), ((5, 0), 6.5)]
    zarrcy.create_array(src, name="recs", shape=(3,), dtype=rec, chunks=(2,), zarr_format=2)[...] = recs
    zarrcy.create_array(src, name="vals", shape=(3,), dtype="<i4", chunks=(2,), zarr_format=2)[...] = [1, 2, 3]
    assert convert_main([src, str(tmp_path / "d.zarr"), "--progress", "off"]) == 2
    assert "no Zarr v3 equivalent" in capsys.readouterr().err
    assert convert_main([src, str(tmp_path / "d.zarr"), "--progress", "off", "--on-unsupported", "skip"]) == 0
    out = capsys.readouterr().out
    assert "skipped /recs" in out
    assert zarrcy.open_array(str(tmp_path / "d.zarr"), path="vals")[...].tolist() == [1, 2, 3]
    # to v2 everything is representable
    assert convert_main([src, str(tmp_path / "e.zarr"), "--progress", "off", "--format", "2", "--rewrite"]) == 0
    got = zarrcy.open_array(str(tmp_path / "e.zarr"), path="recs")[...]
    assert [(tuple(a.tolist()), b) for a, b in got.tolist()] == recs


def test_v2_strings_bytes_times_raw_convert_to_v3(tmp_path):
    """v2 U<n> / S<n> / M8 / V<n> become zarr-python 3.4's fixed_length_utf32 /
    null_terminated_bytes / numpy.datetime64 / r<bits> (values, NULs and NaT kept),
    and zarr-python reads the result equal."""
    import zarr

    src, dst = str(tmp_path / "s.zarr"), str(tmp_path / "d.zarr")
    values = {
        "names": (">U4", np.array(["a", "bb", "c\u00e9\U0001F600", ""], dtype="U4")),
        "raw": ("|S3", np.array([b"a", b"b\x00c", b"xyz", b""], dtype="S3")),
        "t": (">M8[s]", np.array(["2020-01-01", "NaT", "1970-01-02", "1900-03-04"], dtype="M8[s]")),
        "dt": ("<m8[ms]", np.array([1, -2, 3, 4], dtype="m8[ms]")),
        "v": ("|V2", np.array([b"ab", b"cd", b"ef", b"gh"], dtype="V2")),
    }
    for name, (dt, v) in values.items():
        zarrcy.create_array(src, name=name, shape=(4,), dtype=dt, chunks=(3,), zarr_format=2)[...] = v
    assert convert_main([src, dst, "--progress", "off", "--shards", "4", "--chunks", "2"]) == 0
    names = {"names": "fixed_length_utf32", "raw": "null_terminated_bytes", "t": "numpy.datetime64",
             "dt": "numpy.timedelta64"}
    for name, (dt, v) in values.items():
        a = zarrcy.open_array(dst, path=name, mode="r")
        assert getattr(a.metadata, "zarr_format", 3) == 3
        j = a.metadata.data_type.to_json()
        assert (j["name"] if isinstance(j, dict) else j) == names.get(name, "r16")
        got = a[...]
        assert got.tobytes() == v.astype(got.dtype).tobytes()
        if name != "v":  # zarr-python 3.4 reads the same values
            np.testing.assert_array_equal(zarr.open_array(dst, path=name, mode="r")[...], v)


def test_corrupt_source_chunk(v2_tree, tmp_path, capsys):
    src, expect = v2_tree
    with open(os.path.join(src, "temp", "1.1"), "wb") as f:
        f.write(b"garbage, not blosc")
    dst = str(tmp_path / "d.zarr")
    rc = convert_main([src, dst, "--progress", "off", "--rewrite", "--include", "temp"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "temp/1.1" in err
    rc = convert_main([src, dst, "--progress", "off", "--rewrite", "--include", "temp", "--on-error", "skip", "--overwrite"])
    assert rc == 0
    assert "temp/1.1" in capsys.readouterr().out
    got = zarrcy.open_array(dst, path="temp", mode="r")[...]
    assert np.isnan(got[16:32, 16:32]).all()  # the fill value
    want = expect["temp"].copy()
    want[16:32, 16:32] = np.nan
    assert same(got, want)


def test_python_api_errors(v2_tree, tmp_path):
    src, _ = v2_tree
    with pytest.raises(TypeError):
        zarrcy.convert(src, str(tmp_path / "d"), no_such_option=1)
    with pytest.raises(ConvertError):
        zarrcy.convert(src, str(tmp_path / "d"), on_error="maybe")
    import zarrcy.convert as module

    assert callable(module)  # the package is callable: zarrcy.convert(...) works either way


def test_fixture_sources_interoperate(v2_tree_any):
    """Both fixture writers produce v2 that zarr-python and tensorstore read back equal."""
    src, expect = v2_tree_any
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zg = _zarr().open_group(src, mode="r")
        for path, want in expect.items():
            assert same(zg[path][...], want), path
    ts = pytest.importorskip("tensorstore")
    for path in ("temp", "sub/fortran"):  # tensorstore supports no v2 filters
        t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(src, path)}}, open=True).result()
        assert same(t.read().result(), expect[path]), path


def test_in_place_metadata_only_migration(tmp_path):
    """SRC == DST: zarr.json documents are added beside the v2 ones, chunks untouched."""
    src = str(tmp_path / "s.zarr")
    expect = make_v2_hierarchy(src)
    before = stored_objects(src)
    # filters/numcodecs-only arrays need rewriting: refused in place
    assert convert_main([src, src, "--progress", "off"]) == 2
    rep = zarrcy.convert(src, src, exclude=["sub/delta", "scaled"], verify=True, progress="off")
    assert {p.mode for p in rep.plans} == {"in-place"} and rep.verified
    after = stored_objects(src)
    assert {k: v for k, v in after.items() if k in before} == before  # nothing rewritten
    assert set(after) - set(before) == {"zarr.json", "sub/zarr.json", "temp/zarr.json", "sub/fortran/zarr.json",
                                        "empty/zarr.json"}
    g = zarrcy.open_group(src, mode="r")
    from zarrcy.document.array import ArrayMetadata

    assert g.metadata.zarr_format == 3 and isinstance(g["temp"].metadata, ArrayMetadata)  # v3 documents win
    for path in ("temp", "sub/fortran", "empty"):
        assert same(g[path][...], expect[path])
    assert same(_ts_read(os.path.join(src, "temp")), expect["temp"])
    # a destination inside the source (or the source inside it) is refused
    assert convert_main([src, src, "--dst-path", "inner", "--progress", "off"]) == 2
    assert stored_objects(src) == after
    # and --overwrite never erases a source
    assert convert_main([src, src, "--overwrite", "--rewrite", "--progress", "off"]) == 2
    assert stored_objects(src) == after


def test_overlap_across_store_roots(tmp_path):
    """A destination store that contains the source store's directory is refused (even with
    --overwrite), and so is one inside it."""
    src = str(tmp_path / "s.zarr")
    make_v2_hierarchy(src)
    before = stored_objects(src)
    assert convert_main([os.path.join(src, "sub"), src, "--overwrite", "--rewrite", "--progress", "off"]) == 2
    assert convert_main([src, os.path.join(src, "sub", "new.zarr"), "--progress", "off"]) == 2
    assert stored_objects(src) == before


def test_zip_destination(v2_tree, tmp_path):
    """An append-only zip archive: no journal (no --resume), finalised on close."""
    src, expect = v2_tree
    out = str(tmp_path / "out.zip")
    assert convert_main([src, out, "--shards", "32,32", "--chunks", "16,16", "--progress", "off"]) == 0
    from zarrcy.storage import store_from_url

    st = store_from_url(out, mode="r")
    try:
        assert not any(k.startswith("__zarrcy_convert") for k in st.list())
    finally:
        st.close()
    for path, want in expect.items():
        assert same(zarrcy.open_array(out, path=path, mode="r")[...], want)
    assert convert_main([src, str(tmp_path / "o2.zip"), "--resume", "--progress", "off"]) == 2
