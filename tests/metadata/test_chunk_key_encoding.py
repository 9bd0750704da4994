"""Chunk key encodings (v3-chunk-key-encoding-default.rst, v3-chunk-key-encoding-v2.rst)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy.chunk_key_encoding import (
    ChunkKeyEncoding,
    DefaultChunkKeyEncoding,
    V2ChunkKeyEncoding,
    parse_chunk_key_encoding,
)
from zarrcy.errors import MetadataError, UnknownExtensionError


def test_spec_examples() -> None:
    assert DefaultChunkKeyEncoding("/").encode_chunk_key((1, 23, 45)) == "c/1/23/45"
    assert DefaultChunkKeyEncoding(".").encode_chunk_key((1, 23, 45)) == "c.1.23.45"
    assert DefaultChunkKeyEncoding().encode_chunk_key(()) == "c"
    assert V2ChunkKeyEncoding(".").encode_chunk_key((1, 23, 45)) == "1.23.45"
    assert V2ChunkKeyEncoding("/").encode_chunk_key((1, 23, 45)) == "1/23/45"
    assert V2ChunkKeyEncoding().encode_chunk_key(()) == "0"
    assert DefaultChunkKeyEncoding().encode_chunk_key((1, 0)) == "c/1/0"


def test_defaults_and_dicts() -> None:
    assert parse_chunk_key_encoding("default") == DefaultChunkKeyEncoding("/")
    assert parse_chunk_key_encoding("v2") == V2ChunkKeyEncoding(".")
    assert parse_chunk_key_encoding({"name": "default"}) == DefaultChunkKeyEncoding("/")
    assert parse_chunk_key_encoding({"name": "v2", "configuration": {}}) == V2ChunkKeyEncoding(".")
    for enc in (DefaultChunkKeyEncoding("/"), DefaultChunkKeyEncoding("."), V2ChunkKeyEncoding("."), V2ChunkKeyEncoding("/")):
        assert parse_chunk_key_encoding(enc.to_dict()) == enc
        assert ChunkKeyEncoding.from_dict(enc.to_dict()) == enc
        assert enc.to_dict()["configuration"]["separator"] == enc.separator


encodings = st.sampled_from(
    [DefaultChunkKeyEncoding("/"), DefaultChunkKeyEncoding("."), V2ChunkKeyEncoding("."), V2ChunkKeyEncoding("/")]
)


@settings(max_examples=200, deadline=None)
@given(enc=encodings, coords=st.lists(st.integers(0, 10**12), min_size=1, max_size=5).map(tuple))
def test_round_trip(enc: ChunkKeyEncoding, coords: tuple[int, ...]) -> None:
    key = enc.encode_chunk_key(coords)
    assert enc.decode_chunk_key(key) == coords
    # slow reference
    sep = enc.separator
    ref = ("c" + sep if enc.name == "default" else "") + sep.join(str(c) for c in coords)
    assert key == ref


def test_zero_dim_decode() -> None:
    assert DefaultChunkKeyEncoding().decode_chunk_key("c") == ()
    assert V2ChunkKeyEncoding().decode_chunk_key("0") == (0,)  # rank unknown: read as 1-d
    assert V2ChunkKeyEncoding().decode_chunk_key("0", ndim=0) == ()
    assert V2ChunkKeyEncoding().decode_chunk_key("0", ndim=1) == (0,)
    assert V2ChunkKeyEncoding().decode_chunk_key("1", ndim=0) is None
    assert DefaultChunkKeyEncoding().decode_chunk_key("c", ndim=0) == ()
    assert DefaultChunkKeyEncoding().decode_chunk_key("c", ndim=1) is None


@pytest.mark.parametrize("enc", [DefaultChunkKeyEncoding("/"), DefaultChunkKeyEncoding("."), V2ChunkKeyEncoding("."), V2ChunkKeyEncoding("/")])
def test_decode_with_rank(enc: ChunkKeyEncoding) -> None:
    key = enc.encode_chunk_key((3, 4))
    assert enc.decode_chunk_key(key, ndim=2) == (3, 4)
    assert enc.decode_chunk_key(key, ndim=3) is None
    assert enc.decode_chunk_key(key, ndim=1) is None


@pytest.mark.parametrize(
    "enc,key",
    [
        (DefaultChunkKeyEncoding("/"), "zarr.json"),
        (DefaultChunkKeyEncoding("/"), "c.1.2"),
        (DefaultChunkKeyEncoding("/"), "c/1/x"),
        (DefaultChunkKeyEncoding("/"), "c/01"),
        (DefaultChunkKeyEncoding("/"), "c/-1"),
        (DefaultChunkKeyEncoding("/"), "c/1//2"),
        (DefaultChunkKeyEncoding("/"), "c/"),
        (DefaultChunkKeyEncoding("/"), "d/1"),
        (DefaultChunkKeyEncoding("/"), "c/+1"),
        (DefaultChunkKeyEncoding("/"), "c/١"),  # non-ASCII digit
        (DefaultChunkKeyEncoding("."), "c/1"),
        (V2ChunkKeyEncoding("."), ".zarray"),
        (V2ChunkKeyEncoding("."), "zarr.json"),
        (V2ChunkKeyEncoding("."), "1..2"),
        (V2ChunkKeyEncoding("."), ""),
        (V2ChunkKeyEncoding("."), "c.1"),
        (V2ChunkKeyEncoding("."), "1/2"),
        (V2ChunkKeyEncoding("/"), "1.2"),
    ],
)
def test_not_chunk_keys(enc: ChunkKeyEncoding, key: str) -> None:
    assert enc.decode_chunk_key(key) is None


@pytest.mark.parametrize(
    "value,path,err",
    [
        ("v3", "chunk_key_encoding", UnknownExtensionError),
        ({"name": "custom"}, "chunk_key_encoding.name", UnknownExtensionError),
        ({"name": "default", "must_understand": False}, "chunk_key_encoding.must_understand", MetadataError),
        ({"name": "default", "configuration": {"separator": "-"}}, "chunk_key_encoding.configuration.separator", MetadataError),
        ({"name": "v2", "configuration": {"separator": None}}, "chunk_key_encoding.configuration.separator", MetadataError),
        ({"name": "default", "configuration": {"x": "/"}}, "chunk_key_encoding.configuration.x", MetadataError),
        ({"name": "default", "configuration": "/"}, "chunk_key_encoding.configuration", MetadataError),
        ({"name": "default", "extra": 1}, "chunk_key_encoding.extra", MetadataError),
        ({"name": None}, "chunk_key_encoding.name", MetadataError),
        (3, "chunk_key_encoding", MetadataError),
    ],
)
def test_bad_encodings(value: object, path: str, err: type) -> None:
    with pytest.raises(err, match=rf"^{path}: "):
        parse_chunk_key_encoding(value)


def test_constructor_validates() -> None:
    with pytest.raises(MetadataError):
        DefaultChunkKeyEncoding("-")  # type: ignore[arg-type]
