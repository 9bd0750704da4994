"""U<n>/S<n> arrays shared with zarr-python 3.4 both ways (fixed_length_utf32 /
null_terminated_bytes): each writes, the other reads equal values, fill values and
metadata; sharded, both byte orders, compressors; zarr-python with zarrcy's pipeline."""

from __future__ import annotations

import json

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")
from zarr.codecs import BytesCodec as ZBytes  # noqa: E402

import zarrcy  # noqa: E402
import zarrcy.zarr_plugin  # noqa: E402,F401  (registers the pipeline class for zarr.config)

pytestmark = [
    pytest.mark.interop,
    pytest.mark.filterwarnings("ignore::zarr.errors.UnstableSpecificationWarning"),
]

UVALS = ["", "a", "abcd", "🙂🚀", "\U0010FFFFz", "a\x00b", "日本語", "ßé "]  # "abcd"/"日本語 " fill U4
SVALS = [b"", b"a", b"abcd", b"\x00\x00zz", b"a\x00b", b"\xff\xfe\xfd\xfc", b"x\x00"]

COMPRESSORS = {
    "none": None,
    "zstd": [{"name": "zstd", "configuration": {"level": 3, "checksum": True}}],
    "gzip": [{"name": "gzip", "configuration": {"level": 5}}],
}


def _grid(kind: str, shape: tuple[int, int], seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vals = UVALS if kind == "U" else SVALS
    return np.array([vals[i] for i in rng.integers(0, len(vals), shape[0] * shape[1])],
                    dtype="U4" if kind == "U" else "S4").reshape(shape)


def _fill(kind: str):
    return "🙂?" if kind == "U" else b"?\x00"


@pytest.mark.parametrize("comp", sorted(COMPRESSORS))
@pytest.mark.parametrize("shards", [None, (6, 4)])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("kind", ["U", "S"])
def test_zarrcy_writes_zarr_python_reads(tmp_path, kind: str, endian: str, shards, comp: str) -> None:
    shape = (11, 7)  # edge chunks; the last rows are left missing
    ser = {"name": "bytes", "configuration": {"endian": endian}}
    a = zarrcy.create_array(str(tmp_path), name="a", shape=shape, chunks=(3, 2), shards=shards,
                            dtype=f"{kind}4", fill_value=_fill(kind), compressors=COMPRESSORS[comp], serializer=ser)
    data = _grid(kind, shape, 1)
    a[:9] = data[:9]
    z = zarr.open_array(str(tmp_path / "a"), mode="r")
    want = data.copy()
    want[9:] = _fill(kind)
    got = z[:]
    assert got.dtype == want.dtype and got.tolist() == want.tolist()
    assert z.fill_value == _fill(kind).rstrip("\x00" if kind == "U" else b"\x00")
    # zarr-python's partial writes into our chunks, read back by zarrcy
    zw = zarr.open_array(str(tmp_path / "a"), mode="r+")
    zw[2:5, 1:6] = data[:3, :5][::-1]
    want[2:5, 1:6] = data[:3, :5][::-1]
    assert zarrcy.open_array(str(tmp_path / "a"))[...].tolist() == want.tolist()


@pytest.mark.parametrize("shards", [None, (4, 6)])
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("kind", ["U", "S"])
def test_zarr_python_writes_zarrcy_reads(tmp_path, kind: str, endian: str, shards) -> None:
    shape = (9, 6)
    z = zarr.create_array(str(tmp_path / "z"), shape=shape, chunks=(2, 3), shards=shards, dtype=f"{kind}4",
                          fill_value=_fill(kind), serializer=ZBytes(endian=endian))
    data = _grid(kind, shape, 2)
    z[:8] = data[:8]
    want = data.copy()
    want[8:] = _fill(kind)
    a = zarrcy.open_array(str(tmp_path / "z"))
    assert a.dtype == np.dtype(f"{kind}4")
    assert a.metadata.data_type.to_json() == z.metadata.data_type.to_json(zarr_format=3)
    # as numpy values (zarr-python's np.bytes_ may keep the NUL padding of its base64 inside)
    assert np.array(a.fill_value, dtype=a.dtype) == np.array(z.fill_value, dtype=a.dtype)
    assert a[...].tolist() == want.tolist()
    assert a.oindex[[0, 8], [1, 5]].tolist() == want[np.ix_([0, 8], [1, 5])].tolist()
    assert a[8, 5] == want[8, 5] and a[3, 4] == want[3, 4]
    # our partial writes into their chunks, read back by zarr-python
    a[1:4, 2:5] = data[5:8, 0:3]
    want[1:4, 2:5] = data[5:8, 0:3]
    assert zarr.open_array(str(tmp_path / "z"), mode="r")[:].tolist() == want.tolist()


@pytest.mark.parametrize("kind", ["U", "S"])
def test_same_metadata_as_zarr_python(tmp_path, kind: str) -> None:
    """Created with the same arguments, both write the same zarr.json (data type, fill
    value, codecs)."""
    fill = _fill(kind)
    zarr.create_array(str(tmp_path / "z"), shape=(5,), chunks=(2,), dtype=f"{kind}3", fill_value=fill)
    zarrcy.create_array(str(tmp_path), name="c", shape=(5,), chunks=(2,), dtype=f"{kind}3", fill_value=fill)
    mz = json.loads((tmp_path / "z" / "zarr.json").read_text())
    mc = json.loads((tmp_path / "c" / "zarr.json").read_text())
    for key in ("data_type", "codecs", "shape", "chunk_grid", "chunk_key_encoding"):
        assert mc[key] == mz[key], key
    # the fill value reads back the same (zarr-python may keep NUL padding in the base64)
    assert zarrcy.open_array(str(tmp_path / "z")).fill_value == zarrcy.open_array(str(tmp_path / "c")).fill_value


@pytest.mark.parametrize("kind", ["U", "S"])
def test_zarr_python_with_zarrcy_pipeline(tmp_path, kind: str) -> None:
    """zarr-python configured with zarrcy's codec pipeline reads/writes the same values."""
    data = _grid(kind, (6, 5), 3)
    with zarr.config.set({"codec_pipeline.path": "zarrcy.zarr_plugin.ZarrcyCodecPipeline"}):
        z = zarr.create_array(str(tmp_path / "p"), shape=(6, 5), chunks=(4, 2), dtype=f"{kind}4",
                              fill_value=_fill(kind))
        z[:5] = data[:5]
        got = zarr.open_array(str(tmp_path / "p"), mode="r")[:]
    want = data.copy()
    want[5:] = _fill(kind)
    assert got.tolist() == want.tolist()
    assert zarr.open_array(str(tmp_path / "p"), mode="r")[:].tolist() == want.tolist()
    assert zarrcy.open_array(str(tmp_path / "p"))[...].tolist() == want.tolist()
