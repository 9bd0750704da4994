"""The ``zarrcy`` command line as a new user meets it (issue 14 items 1, 2, 9, 10): check
on a wrong path, a demo that never deletes foreign files, --version, help, one-line
cast-check errors, quiet closed pipes, and what info / check --path print."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import zarrcy
from zarrcy.cli import main
from zarrcy.cli.demo import MARKER


@pytest.fixture
def store(tmp_path):
    root = str(tmp_path / "s.zarr")
    g = zarrcy.open_group(root, mode="w", attributes={"k": 1})
    a = g.create_array("a", shape=(40, 40), dtype="float32", chunks=(10, 10), fill_value=float("nan"))
    a[...] = np.arange(1600, dtype="float32").reshape(40, 40)
    s = g.create_array("sub/s", shape=(64, 64), dtype="uint16", chunks=(8, 8), shards=(32, 32), fill_value=0)
    s[:32, :32] = 7
    return root


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = os.path.dirname(os.path.dirname(zarrcy.__file__))
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


# ---- item 1: check on a missing / non-Zarr path ------------------------------------------
@pytest.mark.parametrize("kind", ["missing", "empty", "not-zarr"])
def test_check_without_zarr_is_exit_2(tmp_path, capsys, kind):
    p = tmp_path / "x"
    if kind != "missing":
        p.mkdir()
    if kind == "not-zarr":
        (p / "notes.txt").write_text("hello")
    assert main(["check", str(p)]) == 2
    cap = capsys.readouterr()
    assert f"zarrcy check: error: no Zarr array or group at {p}" in cap.err
    assert main(["check", str(p), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is False and "no Zarr array or group" in doc["error"]


def test_check_path_and_progress(store, capsys, monkeypatch):
    import zarrcy.cli.check as check

    assert main(["check", store, "--path", "sub", "--data"]) == 0
    out = capsys.readouterr().out
    assert "1 node(s)" in out or "2 node(s)" in out
    assert "(path /sub)" in out
    doc_all = main(["check", store, "--json"]) or json.loads(capsys.readouterr().out)
    assert doc_all["nodes"] == 4  # root, a, sub, sub/s
    assert main(["check", store, "--path", "nope"]) == 2
    assert "no Zarr array or group at" in capsys.readouterr().err
    monkeypatch.setattr(check, "PROGRESS_INTERVAL", 0.0)
    assert main(["check", store, "--data"]) == 0
    err = capsys.readouterr().err
    assert "chunk(s) checked (" in err and "%" in err


# ---- item 2: the demo never deletes foreign files -------------------------------------------
def test_demo_refuses_a_foreign_non_empty_directory(tmp_path, capsys):
    d = tmp_path / "mine"
    d.mkdir()
    (d / "thesis.tex").write_text("precious")
    assert main(["demo", "--output", str(d), "--size", "small"]) == 2
    assert "nothing was deleted" in capsys.readouterr().err
    assert (d / "thesis.tex").read_text() == "precious" and os.listdir(d) == ["thesis.tex"]
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["demo", "--output", str(f), "--size", "small"]) == 2
    assert f.read_text() == "x"


def test_demo_reruns_into_its_own_output_only(tmp_path, capsys):
    d = tmp_path / "demo.zarr"
    assert main(["demo", "--output", str(d), "--size", "small"]) == 0
    assert (d / MARKER).exists()
    assert main(["demo", "--output", str(d), "--size", "small"]) == 0  # its own output: replaced
    capsys.readouterr()
    (d / "mine.txt").write_text("keep")  # something the demo did not write
    assert main(["demo", "--output", str(d), "--size", "small"]) == 2
    assert "mine.txt" in capsys.readouterr().err and (d / "mine.txt").read_text() == "keep"
    e = tmp_path / "empty"
    e.mkdir()
    assert main(["demo", "--output", str(e), "--size", "small"]) == 0


# ---- item 9: version, help, cast-check errors, closed pipes -----------------------------------
def test_version_and_bare_command(capsys):
    with pytest.raises(SystemExit) as ex:
        main(["--version"])
    assert ex.value.code == 0
    assert capsys.readouterr().out.strip() == f"zarrcy {zarrcy.__version__}"
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: zarrcy") and "convert" in out and "demo" in out


def test_cast_check_errors_are_one_line(tmp_path, store, capsys):
    np.save(tmp_path / "v.npy", np.arange(10.0))
    (tmp_path / "plain.txt").write_text("not numbers")
    cases = {
        str(tmp_path / "missing.npy"): "no such file",
        str(tmp_path / "missing"): "no such file or directory",
        store: "received a group",
        os.path.join(store, "sub"): "received a group",
        str(tmp_path / "plain.txt"): "not .npy",
        str(tmp_path / "plain.txt" / "x"): "no such file or directory",
    }
    for path, why in cases.items():
        assert main(["cast-check", path, "--dtype", "uint8"]) == 2, path
        err = capsys.readouterr().err
        assert err.startswith("zarrcy cast-check: error: ") and why in err, (path, err)
        assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["cast-check", os.path.join(store, "a"), "--dtype", "uint16"]) == 0
    assert main(["cast-check", str(tmp_path / "v.npy"), "--dtype", "uint8"]) == 0


def test_broken_pipe_is_quiet(store, monkeypatch):
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["check", store, "--json"]) == 141


def test_broken_pipe_subprocess(store):
    """``zarrcy check --json | head -c 1``: no traceback, no 'Exception ignored' message."""
    p = subprocess.Popen([sys.executable, "-m", "zarrcy", "tree", store], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=_env())
    p.stdout.close()  # the reader is gone before zarrcy writes
    err = p.stderr.read().decode()
    p.wait(timeout=60)
    p.stderr.close()
    assert "Traceback" not in err and "Exception ignored" not in err and "BrokenPipe" not in err, err


def test_no_crc32c_deprecation_warning_dependency():
    """numcodecs warns when it finds only the `crc32c` package (DeprecationWarning in the
    demo output); zarrcy depends on google-crc32c, which numcodecs prefers."""
    import tomllib

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml"), "rb") as f:
        deps = tomllib.load(f)["project"]["dependencies"]
    assert any(d.replace("_", "-").startswith("google-crc32c") for d in deps), deps


# ---- item 10: info ------------------------------------------------------------------------------
def test_info_array_and_group(store, capsys):
    assert main(["info", store, "--path", "a"]) == 0
    out = capsys.readouterr().out
    rows = dict(line.split(" : ", 1) for line in out.splitlines())
    rows = {k.strip(): v for k, v in rows.items()}
    assert rows["Zarr format"] == "3"
    assert rows["Fill value"] == '"NaN"'
    assert rows["Chunks"] == "16 (16 stored)"
    assert rows["Size"].startswith("6.2 KiB (6,400 bytes")
    assert "ratio" in rows["Stored"] and "16 object(s)" in rows["Stored"]
    assert main(["info", store, "--path", "sub/s"]) == 0
    rows = {k.strip(): v for k, v in (ln.split(" : ", 1) for ln in capsys.readouterr().out.splitlines())}
    assert rows["Shards"] == "4 (1 stored)"
    assert rows["Inner chunks"] == "16 per shard, 64 in all"
    assert rows["Fill value"] == "0"
    assert main(["info", store]) == 0
    out = capsys.readouterr().out
    assert "Zarr format : 3" in out and "Members     : a, sub" in out


def test_info_v2_array(tmp_path, capsys):
    import numcodecs

    a = zarrcy.create_array(str(tmp_path / "v2.zarr"), name="t", shape=(10,), dtype="<i2", chunks=(5,),
                            zarr_format=2, compressors=numcodecs.Zstd(1), fill_value=-1)
    a[...] = 3
    assert main(["info", str(tmp_path / "v2.zarr"), "--path", "t"]) == 0
    rows = {k.strip(): v for k, v in (ln.split(" : ", 1) for ln in capsys.readouterr().out.splitlines())}
    assert rows["Zarr format"] == "2" and rows["Fill value"] == "-1" and rows["Data type"] == '"<i2"'
    assert json.loads(rows["Compressor"])["id"] == "zstd"
