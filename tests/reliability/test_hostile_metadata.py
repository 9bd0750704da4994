"""Hostile metadata documents are refused with MetadataError, never another exception."""

from __future__ import annotations

import json

import pytest

import zarrcy
from zarrcy.errors import MetadataError
from zarrcy.document.node import parse_node_metadata
from zarrcy.storage import MemoryStore

_ARRAY = {
    "zarr_format": 3, "node_type": "array", "shape": [10], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [5]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "bytes"}],
}


def _with(**kw):
    d = json.loads(json.dumps(_ARRAY))
    d.update(kw)
    return json.dumps(d).encode()


HOSTILE = {
    # regression (fuzz reproducer ci/fuzz/reproducers/metadata/deep-json-nesting):
    # RecursionError escaped from json.loads
    "deep nesting": b"[" * 100_000 + b"]" * 100_000,
    "deep nesting in attributes": b'{"zarr_format":3,"node_type":"group","attributes":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}",
    "not utf-8": b"\xff\xfe{}",
    "empty": b"",
    "not an object": b"[1, 2]",
    "shape product overflows int64": _with(shape=[1 << 62, 1 << 62]),
    "chunk product overflows int64": _with(shape=[4, 4], chunk_grid={"name": "regular", "configuration": {"chunk_shape": [1 << 62, 1 << 62]}}),
    "shape beyond int64": _with(shape=[1 << 64]),
    "negative shape": _with(shape=[-1]),
    "float shape": _with(shape=[1.5]),
    "bool shape": _with(shape=[True]),
    "zero chunk": _with(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [0]}}),
    "rank mismatch": _with(chunk_grid={"name": "regular", "configuration": {"chunk_shape": [5, 5]}}),
    "4301-digit integer": b'{"zarr_format":3,"node_type":"array","shape":[' + b"9" * 4301 + b"]}",
    "1e400": _with(fill_value=1e308).replace(b"1e+308", b"1e400"),
    "NaN in shape": _with().replace(b'"shape": [10]', b'"shape": [NaN]'),
    "unknown codec": _with(codecs=[{"name": "evil_codec"}]),
    "codec config not an object": _with(codecs=[{"name": "bytes", "configuration": [1]}]),
    "sharding inner chunk not dividing": _with(codecs=[{"name": "sharding_indexed", "configuration": {"chunk_shape": [3], "codecs": [{"name": "bytes"}]}}]),
    "fill value out of range": _with(fill_value=256),
    "fill value string": _with(fill_value="zero"),
    "huge attributes key nesting ok but unknown top-level": _with(evil={"must_understand": True}),
    # issue 12 item 12: RecursionError / numpy ValueError before
    "65 dimensions": _with(shape=[1] * 65, chunk_grid={"name": "regular", "configuration": {"chunk_shape": [1] * 65}}),
    "200-level nested sharding": _with(codecs=[]).replace(
        b'"codecs": []',
        b'"codecs": [' + b'{"name": "sharding_indexed", "configuration": {"chunk_shape": [5], "codecs": [' * 200
        + b'{"name": "bytes"}' + b"]}}" * 200 + b"]"),
    "attribute nested 300 deep": _with(attributes={}).replace(b'"attributes": {}', b'"attributes": {"a": ' + b"[" * 300 + b"]" * 300 + b"}"),
}


@pytest.mark.parametrize("doc", list(HOSTILE.values()), ids=list(HOSTILE))
def test_refused_with_metadata_error(doc):
    with pytest.raises(MetadataError):
        parse_node_metadata(doc)


@pytest.mark.parametrize("doc", list(HOSTILE.values()), ids=list(HOSTILE))
def test_open_refuses_cleanly(doc):
    s = MemoryStore()
    s.set("zarr.json", doc)
    with pytest.raises(MetadataError):
        zarrcy.open_array(s)
