"""String / bytes arrays through the public API: creation, selections, writes, fill,
missing and edge chunks, sharding, corrupt chunks naming their key, bad values."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import zarr
import zarr.storage
from hypothesis import given, settings
from hypothesis import strategies as st
from vlen_helpers import STRING, ref_decode, ref_encode, texts
from zarr.core.buffer import cpu

import zarrcy
from zarrcy.errors import CorruptChunkError, MetadataError

WORDS = np.array(["", "a", "βγδ", "日本語", "x" * 5000, "tab\tnul\x00", "🙂", "end"], dtype=object)


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return WORDS[rng.integers(0, len(WORDS), shape)].astype(STRING)


def _meta(store: zarrcy.MemoryStore, name: str) -> dict:
    return json.loads(bytes(store.get(f"{name}/zarr.json")))


@pytest.mark.parametrize("dtype", [str, "T", STRING, object, "string"])
def test_create_writes_string_metadata(dtype: object) -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(5,), chunks=(2,), dtype=dtype)
    m = _meta(st_, "s")
    assert m["data_type"] == "string"
    assert m["fill_value"] == ""
    assert m["codecs"][0] == {"name": "vlen-utf8"}
    assert a.dtype == STRING
    r = a[:]
    assert r.dtype == STRING and r.tolist() == [""] * 5


@pytest.mark.parametrize("dtype", [bytes, "bytes", "variable_length_bytes"])
def test_create_writes_bytes_metadata(dtype: object) -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="b", shape=(3,), chunks=(2,), dtype=dtype, fill_value=b"\x00z")
    m = _meta(st_, "b")
    assert m["data_type"] == "bytes"
    assert m["fill_value"] == "AHo="  # base64, as zarr-python writes it
    assert m["codecs"][0] == {"name": "vlen-bytes"}
    assert a.dtype == object
    assert a[:].tolist() == [b"\x00z"] * 3
    assert type(a[1]) is bytes and a[1] == b"\x00z"


def test_create_with_compressors_and_fill() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(4,), chunks=(3,), dtype=str, fill_value="–",
                            compressors=[{"name": "gzip", "configuration": {"level": 1}}])
    m = _meta(st_, "s")
    assert m["codecs"] == [{"name": "vlen-utf8"}, {"name": "gzip", "configuration": {"level": 1}}]
    assert m["fill_value"] == "–" and a.fill_value == "–"
    a[1] = "x"
    assert a[:].tolist() == ["–", "x", "–", "–"]


def test_na_object_string_dtype_is_refused() -> None:
    with pytest.raises(MetadataError, match="na_object"):
        zarrcy.create_array(zarrcy.MemoryStore(), shape=(2,), dtype=np.dtypes.StringDType(na_object=None))


def test_data_argument() -> None:
    st_ = zarrcy.MemoryStore()
    for data in (np.array(["ab", "c", "déf"], dtype=STRING), np.array(["ab", "c", "déf"], dtype=object)):
        a = zarrcy.create_array(st_, name="s", data=data, chunks=(2,), overwrite=True)
        assert _meta(st_, "s")["data_type"] == "string"
        assert a[:].tolist() == ["ab", "c", "déf"]
    blob = np.empty(2, object)
    blob[:] = [b"\x00a", b""]
    b = zarrcy.create_array(st_, name="b", data=blob, chunks=(2,))
    assert _meta(st_, "b")["data_type"] == "bytes" and b[:].tolist() == [b"\x00a", b""]
    # fixed-width numpy strings are accepted as values of a string array
    a[:] = np.array(["u", "vw", "xyz"])
    assert a[:].tolist() == ["u", "vw", "xyz"]


@pytest.mark.parametrize("threads", [1, 2])
def test_selections_and_partial_writes(threads: int) -> None:
    zarrcy.config(threads=threads)
    try:
        st_ = zarrcy.MemoryStore()
        shape = (11, 7)  # edge chunks in both dimensions
        a = zarrcy.create_array(st_, name="s", shape=shape, chunks=(4, 3), dtype=str, fill_value="fill")
        ref = np.full(shape, "fill", dtype=STRING)
        # missing chunks read as fill
        assert a[:].tolist() == ref.tolist()
        assert a[10, 6] == "fill"
        # partial writes: read-modify-write of existing and missing chunks
        d = _data((5, 4), 1)
        a[2:7, 1:5] = d
        ref[2:7, 1:5] = d
        assert a[:].tolist() == ref.tolist()
        a[::3, 6] = ["p", "q", "r", "s"]
        ref[::3, 6] = ["p", "q", "r", "s"]
        a[10] = "last row"
        ref[10] = "last row"
        # full overwrite of interior chunk, strided source
        full = _data((8, 6), 2)
        a[0:4, 0:3] = full[::2, ::2]
        ref[0:4, 0:3] = full[::2, ::2]
        assert a[:].tolist() == ref.tolist()
        # reads: basic, steps, negative, points, oindex, vindex, blocks
        assert a[1:9:2, :].tolist() == ref[1:9:2].tolist()
        assert a[-1, -1] == ref[-1, -1]
        assert a[3, 2] == ref[3, 2] and isinstance(a[3, 2], str)
        assert a.oindex[[0, 5, 10], [1, 6]].tolist() == ref[np.ix_([0, 5, 10], [1, 6])].tolist()
        assert a.vindex[[0, 5, 10], [1, 6, 0]].tolist() == ref[[0, 5, 10], [1, 6, 0]].tolist()
        mask = np.zeros(11, bool)
        mask[[1, 4, 9]] = True
        assert a.oindex[mask, :].tolist() == ref[mask].tolist()
        assert a.blocks[2, 2].tolist() == ref[8:11, 6:7].tolist()
        # writes through oindex / vindex
        a.oindex[[1, 3], [0, 2]] = np.array([["A", "B"], ["C", "D"]])
        ref[np.ix_([1, 3], [0, 2])] = [["A", "B"], ["C", "D"]]
        a.vindex[[0, 9], [6, 1]] = ["V", "W"]
        ref[[0, 9], [6, 1]] = ["V", "W"]
        assert a[:].tolist() == ref.tolist()
        assert a[...].dtype == STRING
    finally:
        zarrcy.config(threads=2)


def test_all_fill_chunks_are_not_stored() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(6,), chunks=(2,), dtype=str)
    a[:] = ["a", "", "", "", "", "b"]
    assert a.nchunks_initialized == 2
    a[:] = ""
    assert a.nchunks_initialized == 0
    b = zarrcy.create_array(st_, name="b", shape=(4,), chunks=(2,), dtype="bytes")
    b[:] = [b"", b"", b"x", b""]
    assert b.nchunks_initialized == 1


def test_bytes_arrays() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="b", shape=(5,), chunks=(2,), dtype="bytes")
    a[:] = [b"a\x00", b"", b"\xff" * 3000, b"\x00", b"z"]  # trailing NULs survive
    assert a[:].tolist() == [b"a\x00", b"", b"\xff" * 3000, b"\x00", b"z"]
    a[1:3] = np.array([b"p", b"q"], dtype=object)
    a[4] = b"last"
    assert a[:].tolist() == [b"a\x00", b"p", b"q", b"\x00", b"last"]
    assert a.vindex[[4, 0]].tolist() == [b"last", b"a\x00"]


def test_zero_dim_and_empty_arrays() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="z", shape=(), dtype=str)
    assert a[()] == ""
    a[()] = "solo"
    assert a[()] == "solo" and a[...] == "solo"
    e = zarrcy.create_array(st_, name="e", shape=(0, 3), chunks=(2, 2), dtype=str)
    assert e[:].shape == (0, 3) and e[:].dtype == STRING


@pytest.mark.parametrize("bad", [5, 1.5, [1, 2, 3], b"x", np.array([b"a", b"b", b"c"]), np.array(["a", 2, "c"], dtype=object), None])
def test_non_strings_are_refused(bad: object) -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(3,), chunks=(2,), dtype=str)
    a[:] = ["keep", "me", "!"]
    with pytest.raises(TypeError):
        a[:] = bad
    with pytest.raises(TypeError):
        a.vindex[[0, 1, 2]] = bad
    assert a[:].tolist() == ["keep", "me", "!"]  # nothing written


@pytest.mark.parametrize("bad", ["text", 3, ["a", "b"], np.array([1, 2])])
def test_non_bytes_are_refused(bad: object) -> None:
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(2,), chunks=(2,), dtype="bytes")
    with pytest.raises(TypeError):
        a[:] = bad


def test_sharded_strings() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(10, 5), chunks=(2, 2), shards=(4, 4), dtype=str,
                            compressors=[{"name": "zstd", "configuration": {"level": 1, "checksum": False}}])
    inner = _meta(st_, "s")["codecs"][0]["configuration"]["codecs"]
    assert inner[0] == {"name": "vlen-utf8"}
    ref = np.full((10, 5), "", dtype=STRING)
    d = _data((10, 5), 3)
    a[:] = d
    ref[:] = d
    a[3:6, 1] = ["x", "y", "z"]  # partial shard write
    ref[3:6, 1] = ["x", "y", "z"]
    assert a[:].tolist() == ref.tolist()
    assert a[5, 1] == "z"
    assert a.oindex[[0, 9], [4]].tolist() == ref[np.ix_([0, 9], [4])].tolist()
    assert a.vindex[[9, 0], [0, 4]].tolist() == ref[[9, 0], [0, 4]].tolist()


@pytest.mark.parametrize(
    "payload",
    [b"", b"\x01", struct_bad := ref_encode(["a"]), ref_encode(["a", "b"]) + b"!", ref_encode([b"\xff", b"a"])],
)
def test_corrupt_chunk_names_key(payload: bytes) -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(4,), chunks=(2,), dtype=str, compressors=None)
    a[:] = ["a", "b", "c", "d"]
    st_.set("s/c/1", payload)
    for read in (lambda: a[:], lambda: a[3], lambda: a[2:4], lambda: a.vindex[[3]], lambda: a.oindex[[2]]):
        with pytest.raises(CorruptChunkError, match="s/c/1") as e:
            read()
        assert e.value.key == "s/c/1"
    with pytest.raises(CorruptChunkError, match="s/c/1"):
        a[3] = "x"  # read-modify-write of a corrupt chunk


def test_long_strings_are_not_refused_by_the_stored_size_guard() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(2,), chunks=(2,), dtype=str, compressors=None)
    big = "é" * (1 << 20)  # 2 MiB of UTF-8 in a 2-element chunk
    a[:] = [big, "small"]
    assert a[0] == big and a[:].tolist() == [big, "small"]


def test_open_existing_and_reopen() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(3,), chunks=(2,), dtype=str)
    a[:] = ["x", "y", "z"]
    b = zarrcy.open_array(st_, path="s")
    assert b.dtype == STRING and b[:].tolist() == ["x", "y", "z"]
    assert "string" in b.info


@settings(max_examples=40, deadline=None)
@given(st.lists(texts, min_size=1, max_size=30), st.integers(1, 7), st.data())
def test_hypothesis_write_read(items: list[str], chunk: int, data: st.DataObject) -> None:
    """Read back by zarrcy, by the reference decoder of the stored chunks and by zarr-python."""
    n = len(items)
    store = zarrcy.MemoryStore()
    a = zarrcy.create_array(store, name="s", shape=(n,), chunks=(chunk,), dtype=str, compressors=None)
    a[:] = items
    assert a[:].tolist() == items
    lo = data.draw(st.integers(0, n - 1))
    hi = data.draw(st.integers(lo, n))
    assert a[lo:hi].tolist() == items[lo:hi]
    # independent readers: the vlen format reference, chunk by chunk (edge chunk padded
    # with the fill value ""), and zarr-python
    decoded: list[str] = []
    for c in range(-(-n // chunk)):
        raw = store.get(f"s/c/{c}")  # None: a chunk of fill values only is not stored
        decoded += [""] * chunk if raw is None else ref_decode(raw, True)
    assert decoded[:n] == items and all(x == "" for x in decoded[n:])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zs = zarr.storage.MemoryStore({k: cpu.Buffer.from_bytes(store.get(k)) for k in store.list()})
        assert [str(x) for x in zarr.open_array(zs, path="s", mode="r")[:].tolist()] == items


def test_corrupt_inner_chunk_of_a_shard() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(4,), chunks=(2,), shards=(4,), dtype=str, compressors=None)
    a[:] = ["ab", "cd", "ef", "gh"]
    raw = bytearray(bytes(st_.get("s/c/0")))
    # the first inner chunk starts at offset 0 (index at the end): claim 3 items instead of 2
    assert raw[:4] == b"\x02\x00\x00\x00"
    raw[0] = 3
    st_.set("s/c/0", bytes(raw))
    for read in (lambda: a[:], lambda: a[0], lambda: a.vindex[[1]]):
        with pytest.raises(CorruptChunkError, match="s/c/0"):
            read()
    assert a[2:].tolist() == ["ef", "gh"]  # the other inner chunk is intact


def test_trailing_nuls_survive_lists_and_scalars() -> None:
    a = zarrcy.create_array(zarrcy.MemoryStore(), shape=(3,), chunks=(2,), dtype=str)
    a[:] = ["a\x00", "\x00", "b"]
    a[2] = "c\x00\x00"
    assert a[:].tolist() == ["a\x00", "\x00", "c\x00\x00"]
    a.vindex[[1]] = ["\x00\x00"]
    assert a[1] == "\x00\x00"


def test_trailing_nuls_survive_element_reads() -> None:
    st_ = zarrcy.MemoryStore()
    a = zarrcy.create_array(st_, name="s", shape=(2, 3), chunks=(2, 2), dtype=str)
    a[:] = [["a\x00", "\x00", "b"], ["", "c\x00\x00", "\x00d\x00"]]
    assert a[0, 0] == "a\x00" and a[1, 1] == "c\x00\x00"
    assert a[1][2] == "\x00d\x00" and a[0][1] == "\x00"
    assert a[1, 1:].tolist() == ["c\x00\x00", "\x00d\x00"]
    assert a.oindex[1, [1, 2]].tolist() == ["c\x00\x00", "\x00d\x00"]
    b = zarrcy.create_array(st_, name="b", shape=(3,), chunks=(2,), dtype="bytes")
    b[:] = [b"x\x00", b"\x00", b""]
    assert [b[0], b[1], b[2]] == [b"x\x00", b"\x00", b""]
    assert all(type(b[i]) is bytes for i in range(3)) and type(a[0, 0]) is str and type(a[1][2]) is str


@pytest.mark.parametrize("shards", [None, (4, 4)])
def test_fill_values_with_trailing_nuls(shards) -> None:
    st_ = zarrcy.MemoryStore()
    b = zarrcy.create_array(st_, name="b", shape=(6, 5), chunks=(2, 2), shards=shards, dtype="bytes", fill_value=b"F\x00")
    s = zarrcy.create_array(st_, name="s", shape=(6, 5), chunks=(2, 2), shards=shards, dtype=str, fill_value="f\x00")
    for a, fill, x in ((b, b"F\x00", b"x\x00"), (s, "f\x00", "x\x00")):
        a[1, 1] = x  # the rest of the shard / chunk stays fill
        want = [[fill] * 5 for _ in range(6)]
        want[1][1] = x
        assert a[:].tolist() == want
        assert a[0, 0] == fill and a[5, 4] == fill and a[1, 1] == x
        assert a.vindex[[0, 5, 1], [0, 4, 1]].tolist() == [fill, fill, x]
        assert a.oindex[[0, 1], [1, 4]].tolist() == [[fill, fill], [x, fill]]
        a[4:, 3:] = x
        want[4][3] = want[4][4] = want[5][3] = want[5][4] = x
        assert a[:].tolist() == want


@pytest.mark.parametrize("shards", [None, (4,)])
def test_long_distinct_fill_values_do_not_share_cached_pipelines(shards) -> None:
    """Long StringDType values live in an arena: their buffer bytes (offset, size) are
    equal for different strings of one length, so caches must key fills by value."""
    st_ = zarrcy.MemoryStore()
    arrays = {}
    for ch in "ABC":
        arrays[ch] = zarrcy.create_array(st_, name=ch, shape=(8,), chunks=(2,), shards=shards, dtype=str, fill_value=ch * 40)
        arrays[ch][0] = "x"
    for ch, a in arrays.items():
        assert a[3] == ch * 40 and a[:].tolist()[1:] == [ch * 40] * 7
    for ch in "DE":
        b = zarrcy.create_array(st_, name=ch, shape=(2,), chunks=(2,), shards=shards and (2,), dtype="bytes",
                                fill_value=ch.encode() * 40)
        assert b[1] == ch.encode() * 40
