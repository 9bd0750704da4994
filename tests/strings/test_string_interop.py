"""String / bytes arrays shared with zarr-python 3.4, both ways (v3), and zarr-python's v2
``|O`` + ``vlen-utf8`` arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr
from vlen_helpers import STRING
from zarr.core.dtype import VariableLengthBytes

import zarrcy

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
]

VALUES = ["", "a", "naïve", "日本語テキスト", "🙂🚀", "x" * 70000, "nul\x00inside", "\u0301combining", "end "]
BVALUES = [b"", b"a", b"\x00", b"\xff\xfe\x00\x01", b"z" * 70000, b"trail\x00\x00"]

COMPRESSORS = {
    "none": None,
    "zstd": [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
    "gzip": [{"name": "gzip", "configuration": {"level": 5}}],
}


def _grid(values: list, shape: tuple[int, int], seed: int) -> list:
    rng = np.random.default_rng(seed)
    return [values[i] for i in rng.integers(0, len(values), shape[0] * shape[1])]


def _strings(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    return np.array(_grid(VALUES, shape, seed), dtype=STRING).reshape(shape)


def _bytes(shape: tuple[int, int], seed: int = 0) -> np.ndarray:
    out = np.empty(shape[0] * shape[1], object)
    out[:] = _grid(BVALUES, shape, seed)
    return out.reshape(shape)


@pytest.mark.parametrize("comp", sorted(COMPRESSORS))
@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_zarrcy_strings_read_by_zarr_python(tmp_path, comp: str, shards) -> None:
    shape = (11, 7)  # edge chunks; the last row of chunks is left missing
    a = zarrcy.create_array(str(tmp_path), name="s", shape=shape, chunks=(3, 2), shards=shards,
                            dtype=str, fill_value="?", compressors=COMPRESSORS[comp])
    data = _strings(shape, 1)
    a[:9] = data[:9]
    z = zarr.open_array(str(tmp_path / "s"), mode="r")
    got = z[:]
    assert got.dtype == STRING
    want = data.copy()
    want[9:] = "?"
    assert got.tolist() == want.tolist()
    # zarr-python's partial writes into our chunks, read back by zarrcy
    zw = zarr.open_array(str(tmp_path / "s"), mode="r+")
    zw[2:5, 1] = ["p", "q", "é"]
    want[2:5, 1] = ["p", "q", "é"]
    assert zarrcy.open_array(str(tmp_path / "s"))[:].tolist() == want.tolist()


@pytest.mark.parametrize("comp", ["default", "none", "gzip"])
@pytest.mark.parametrize("shards", [None, (4, 6)])
def test_zarr_python_strings_read_by_zarrcy(tmp_path, comp: str, shards) -> None:
    shape = (9, 10)
    kw: dict = {} if comp == "default" else {"compressors": None if comp == "none" else zarr.codecs.GzipCodec(level=1)}
    z = zarr.create_array(str(tmp_path / "z"), shape=shape, chunks=(2, 3), shards=shards, dtype=str, **kw)
    data = _strings(shape, 2)
    z[:6] = data[:6]  # rows 6.. missing -> fill ""
    meta = json.loads((tmp_path / "z" / "zarr.json").read_text())
    assert meta["data_type"] == "string"
    a = zarrcy.open_array(str(tmp_path / "z"))
    want = data.copy()
    want[6:] = ""
    got = a[:]
    assert got.dtype == STRING and got.tolist() == want.tolist()
    assert a[4, 9] == want[4, 9]
    assert a.oindex[[0, 5, 8], [9, 0]].tolist() == want[np.ix_([0, 5, 8], [9, 0])].tolist()
    assert a.vindex[[8, 0], [3, 3]].tolist() == want[[8, 0], [3, 3]].tolist()
    # zarrcy writes into zarr-python's array; zarr-python reads it back
    a[7, :] = ["w"] * 10
    want[7, :] = "w"
    a[1, 2] = "ñ"
    want[1, 2] = "ñ"
    assert zarr.open_array(str(tmp_path / "z"), mode="r")[:].tolist() == want.tolist()


def test_bytes_both_ways(tmp_path) -> None:
    shape = (5, 4)
    data = _bytes(shape, 3)
    a = zarrcy.create_array(str(tmp_path), name="b", shape=shape, chunks=(2, 3), dtype="bytes",
                            compressors=[{"name": "gzip", "configuration": {"level": 1}}])
    a[:4] = data[:4]
    z = zarr.open_array(str(tmp_path / "b"), mode="r")
    got = z[:]
    want = data.copy()
    want[4] = b""
    assert got.tolist() == want.tolist()

    z2 = zarr.create_array(str(tmp_path / "zb"), shape=shape, chunks=(3, 2), dtype=VariableLengthBytes())
    z2[:] = data
    assert json.loads((tmp_path / "zb" / "zarr.json").read_text())["data_type"] == "variable_length_bytes"
    b = zarrcy.open_array(str(tmp_path / "zb"))
    assert b.dtype == object and b[:].tolist() == data.tolist()
    b[0, 0] = b"\x00new"
    assert zarr.open_array(str(tmp_path / "zb"), mode="r")[0, 0] == b"\x00new"


def test_fill_values_both_ways(tmp_path) -> None:
    z = zarr.create_array(str(tmp_path / "f"), shape=(3,), chunks=(2,), dtype=str, fill_value="n/a")
    assert zarrcy.open_array(str(tmp_path / "f"))[:].tolist() == ["n/a"] * 3
    zarrcy.create_array(str(tmp_path), name="g", shape=(3,), chunks=(2,), dtype=str, fill_value="—")
    assert zarr.open_array(str(tmp_path / "g"), mode="r")[:].tolist() == ["—"] * 3
    zarrcy.create_array(str(tmp_path), name="h", shape=(2,), chunks=(2,), dtype="bytes", fill_value=b"\x01\x02")
    assert zarr.open_array(str(tmp_path / "h"), mode="r")[:].tolist() == [b"\x01\x02"] * 2
    del z


def test_identical_chunk_bytes(tmp_path) -> None:
    """Without compression, both libraries store byte-identical chunks."""
    data = _strings((4, 3), 4)
    zarrcy.create_array(str(tmp_path), name="a", shape=(4, 3), chunks=(2, 3), dtype=str, compressors=None)[:] = data
    zarr.create_array(str(tmp_path / "b"), shape=(4, 3), chunks=(2, 3), dtype=str, compressors=None)[:] = data
    for key in ("c/0/0", "c/1/0"):
        assert (tmp_path / "a" / key).read_bytes() == (tmp_path / "b" / key).read_bytes()


def test_zarr_python_v2_object_strings(tmp_path) -> None:
    """zarr-python's v2 ``dtype "|O"`` + ``filters: [{"id": "vlen-utf8"}]`` reads through
    zarrcy.v2 (the vlen codecs as its serializer), and zarrcy's v2 string arrays read in
    zarr-python."""
    z = zarr.create_array(str(tmp_path / "v2"), shape=(5,), chunks=(2,), dtype=str, zarr_format=2)
    z[:4] = ["a", "β", "", "d\x00"]
    zarray = json.loads((tmp_path / "v2" / ".zarray").read_text())
    assert zarray["dtype"] == "|O" and zarray["filters"] == [{"id": "vlen-utf8"}]
    a = zarrcy.open_array(str(tmp_path / "v2"))
    assert a.dtype == STRING
    assert a[:].tolist() == z[:].tolist()
    w = zarrcy.create_array(str(tmp_path), name="mine", shape=(3,), chunks=(2,), dtype=str, zarr_format=2)
    w[:] = ["x", "日本", "\x00"]
    assert zarr.open_array(str(tmp_path / "mine"), mode="r")[:].tolist() == ["x", "日本", "\x00"]


@pytest.mark.parametrize("shards", [None, (6, 4)])
def test_zarr_python_with_the_zarrcy_pipeline_plugin(tmp_path, shards) -> None:
    """zarr-python using zarrcy's codec pipeline reads/writes string and bytes arrays
    exactly as with its own pipeline (same values; same stored bytes when unsharded)."""
    import zarrcy.zarr_plugin  # noqa: F401  (registers the pipeline class)

    data = _strings((9, 7), 5)
    blobs = _bytes((9, 7), 6)
    out = {}
    for label, pipeline in (("theirs", "zarr.core.codec_pipeline.BatchedCodecPipeline"),
                            ("ours", "zarrcy.zarr_plugin.ZarrcyCodecPipeline")):
        with zarr.config.set({"codec_pipeline.path": pipeline}):
            s = zarr.create_array(str(tmp_path / label / "s"), shape=(9, 7), chunks=(3, 2), shards=shards, dtype=str)
            s[:8] = data[:8]
            s[2, 3] = "ü"
            b = zarr.create_array(str(tmp_path / label / "b"), shape=(9, 7), chunks=(3, 2), shards=shards,
                                  dtype=VariableLengthBytes())
            b[1:] = blobs[1:]
            out[label] = (s[:].tolist(), s[2, 3], s.oindex[[0, 8], [1, 6]].tolist(), b[:].tolist())
    assert out["ours"] == out["theirs"]
    if shards is not None:
        return  # shard layouts (inner chunk order) may differ; the values above are what counts
    for key in ("s/c/0/0", "b/c/1/1"):
        assert (tmp_path / "ours" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes()
