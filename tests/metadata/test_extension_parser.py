"""One extension parser (issue 15, item 2): every extension point -- chunk grids, chunk
key encodings, data types, codecs (also nested in ``sharding_indexed``) -- reads
``{"name", "configuration", "must_understand"}`` through ``metadata/_parse.parse_extension``
and its configuration through ``config_dict``, so an unknown key reads the same
everywhere: ``<json path of the key>: expected one of the keys (<allowed>), received '<key>'``,
and ``must_understand`` is JSON ``true``/``false`` and nothing else (v3-core.rst
"must_understand")."""

from __future__ import annotations

import re
from typing import Any, Callable

import numpy as np
import pytest

from zarrcy.chunk_grid import RegularChunkGrid, parse_chunk_grid
from zarrcy.chunk_grid_rectilinear import RectilinearChunkGrid
from zarrcy.chunk_key_encoding import parse_chunk_key_encoding
from zarrcy.codecs import ArraySpec, codec_from_dict, parse_codecs
from zarrcy.errors import MetadataError, UnknownExtensionError
from zarrcy.metadata import parse_data_type
from zarrcy.metadata._parse import config_dict, parse_extension

LE = {"name": "bytes", "configuration": {"endian": "little"}}
EXT = "name, configuration, must_understand"
SPEC = ArraySpec((4, 4), np.dtype("float32"), np.float32(0))


def _codec(obj: Any, path: str = "codecs[0]") -> Any:
    return codec_from_dict(obj, path)


def _sharded(inner: Any) -> Any:
    return parse_codecs([{"name": "sharding_indexed",
                          "configuration": {"chunk_shape": [2, 2], "codecs": [LE, inner]}}], SPEC)


# (parser, JSON value with the key "bogus" somewhere, JSON path of that key, allowed keys)
CASES: list[tuple[Callable[[Any], Any], Any, str, str]] = [
    (parse_chunk_grid, {"name": "regular", "configuration": {"chunk_shape": [2]}, "bogus": 1}, "chunk_grid", EXT),
    (parse_chunk_grid, {"name": "regular", "configuration": {"chunk_shape": [2], "bogus": 1}},
     "chunk_grid.configuration", "chunk_shape"),
    (parse_chunk_grid, {"name": "rectilinear", "configuration": {"kind": "inline", "chunk_shapes": [2], "bogus": 1}},
     "chunk_grid.configuration", "kind, chunk_shapes"),
    (RegularChunkGrid.from_dict, {"name": "regular", "configuration": {"chunk_shape": [2], "bogus": 1}},
     "chunk_grid.configuration", "chunk_shape"),
    (RectilinearChunkGrid.from_dict, {"name": "rectilinear", "bogus": 1}, "chunk_grid", EXT),
    (parse_chunk_key_encoding, {"name": "default", "bogus": 1}, "chunk_key_encoding", EXT),
    (parse_chunk_key_encoding, {"name": "v2", "configuration": {"separator": ".", "bogus": 1}},
     "chunk_key_encoding.configuration", "separator"),
    (parse_data_type, {"name": "float32", "bogus": 1}, "data_type", EXT),
    (parse_data_type, {"name": "float32", "configuration": {"bogus": 1}}, "data_type.configuration", ""),
    (parse_data_type, {"name": "raw_bytes", "configuration": {"length_bytes": 2, "bogus": 1}},
     "data_type.configuration", "length_bytes"),
    (parse_data_type, {"name": "fixed_length_utf32", "configuration": {"length_bytes": 8, "bogus": 1}},
     "data_type.configuration", "length_bytes"),
    (parse_data_type, {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1, "bogus": 1}},
     "data_type.configuration", "unit, scale_factor"),
    (_codec, {"name": "gzip", "configuration": {"level": 1}, "bogus": 1}, "codecs[0]", EXT),
    (_codec, {"name": "gzip", "configuration": {"level": 1, "bogus": 1}}, "codecs[0].configuration", "level"),
    (_codec, {"name": "bytes", "configuration": {"bogus": 1}}, "codecs[0].configuration", "endian"),
    (_codec, {"name": "transpose", "configuration": {"order": [0], "bogus": 1}}, "codecs[0].configuration", "order"),
    (_codec, {"name": "zstd", "configuration": {"level": 1, "checksum": False, "bogus": 1}},
     "codecs[0].configuration", "level, checksum"),
    (_codec, {"name": "blosc", "configuration": {"bogus": 1}}, "codecs[0].configuration",
     "cname, clevel, shuffle, typesize, blocksize"),
    (_codec, {"name": "crc32c", "configuration": {"bogus": 1}}, "codecs[0].configuration", ""),
    (_codec, {"name": "vlen-utf8", "configuration": {"bogus": 1}}, "codecs[0].configuration", ""),
    (_codec, {"name": "cast_value", "configuration": {"data_type": "uint8", "bogus": 1}},
     "codecs[0].configuration", "data_type, rounding, out_of_range, scalar_map"),
    (_codec, {"name": "cast_value", "configuration": {"data_type": "uint8", "scalar_map": {"bogus": []}}},
     "codecs[0].configuration.scalar_map", "encode, decode"),
    (_codec, {"name": "scale_offset", "configuration": {"offset": 1, "bogus": 1}},
     "codecs[0].configuration", "offset, scale"),
    (_codec, {"name": "numcodecs.fixedscaleoffset",
              "configuration": {"offset": 0, "scale": 1, "astype": "u1", "dtype": "f4", "bogus": 1}},
     "codecs[0].configuration", "offset, scale, astype, dtype"),
    (_codec, {"name": "sharding_indexed", "configuration": {"chunk_shape": [2], "codecs": [LE], "bogus": 1}},
     "codecs[0].configuration", "chunk_shape, codecs, index_codecs, index_location"),
    (_sharded, {"name": "gzip", "configuration": {"level": 1, "bogus": 1}},
     "codecs[0].configuration.codecs[1].configuration", "level"),
    (_sharded, {"name": "gzip", "bogus": 1}, "codecs[0].configuration.codecs[1]", EXT),
]


@pytest.mark.parametrize("parse, value, path, allowed", CASES)
def test_unknown_key_has_one_message(parse: Callable[[Any], Any], value: Any, path: str, allowed: str) -> None:
    what = f"one of the keys ({allowed})" if allowed else "no keys (this object takes none)"
    with pytest.raises(MetadataError) as e:
        parse(value)
    assert str(e.value) == f"{path}.bogus: expected {what}, received 'bogus'"
    assert e.value.path == f"{path}.bogus"


# -- must_understand (v3-core.rst "must_understand") ------------------------------------

NOT_BOOLEANS = [0, 1, "false", "true", None, 0.0, [], {}]


@pytest.mark.parametrize("mu", NOT_BOOLEANS, ids=repr)
@pytest.mark.parametrize(
    "parse, value, path",
    [
        (parse_chunk_grid, {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_grid"),
        (parse_chunk_key_encoding, {"name": "default"}, "chunk_key_encoding"),
        (parse_data_type, {"name": "float32"}, "data_type"),
        (_codec, {"name": "bytes"}, "codecs[0]"),
        (_codec, {"name": "example.unknown"}, "codecs[0]"),  # an unknown codec: never a pass-through
        (lambda v: parse_extension(v, "storage_transformers[0]"), {"name": "example.st"}, "storage_transformers[0]"),
    ],
)
def test_must_understand_is_true_or_false_only(parse: Callable[[Any], Any], value: dict, path: str, mu: Any) -> None:
    with pytest.raises(MetadataError) as e:
        parse({**value, "must_understand": mu})
    assert not isinstance(e.value, UnknownExtensionError)
    assert str(e.value).startswith(f"{path}.must_understand: expected true or false, received ")


@pytest.mark.parametrize(
    "parse, value, path, what",
    [
        (parse_chunk_grid, {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_grid", "chunk grids"),
        (parse_chunk_key_encoding, {"name": "default"}, "chunk_key_encoding", "chunk key encodings"),
        (parse_data_type, {"name": "float32"}, "data_type", "data types"),
    ],
)
def test_must_understand_false_refused_where_the_spec_says(parse: Callable[[Any], Any], value: dict, path: str,
                                                            what: str) -> None:
    assert parse({**value, "must_understand": True}) == parse(value)
    with pytest.raises(MetadataError, match=rf"^{re.escape(path)}\.must_understand: expected true "
                                            rf"\(must_understand=false is not allowed for {what}\), received False$"):
        parse({**value, "must_understand": False})


def test_must_understand_false_codecs() -> None:
    # a known codec is used (the flag only matters when the codec is unknown)
    assert _codec({"name": "gzip", "configuration": {"level": 3}, "must_understand": False}).to_dict() == \
        {"name": "gzip", "configuration": {"level": 3}}
    opaque = {"name": "example.unknown", "configuration": {"k": 1}, "must_understand": False}
    assert _codec(opaque).to_dict() == opaque
    with pytest.raises(UnknownExtensionError, match=r"^codecs\[0\]\.name: "):
        _codec({"name": "example.unknown", "must_understand": True})
    with pytest.raises(UnknownExtensionError, match=r"^codecs\[0\]\.name: "):
        _codec("example.unknown")  # short-hand: must_understand is implicitly true


# -- short-hand names and the configuration object ---------------------------------------

def test_short_hand_names() -> None:
    assert parse_chunk_key_encoding("v2") == parse_chunk_key_encoding({"name": "v2"})
    assert _codec("crc32c") == _codec({"name": "crc32c"}) == _codec({"name": "crc32c", "configuration": {}})
    # both grids need a configuration: their short-hand name is refused at the first required key
    for name, key in (("regular", "chunk_shape"), ("rectilinear", "kind")):
        with pytest.raises(MetadataError, match=rf"^chunk_grid\.configuration\.{key}: expected a value "
                                                r"\(the key is required\), received <missing>$"):
            parse_chunk_grid(name)


@pytest.mark.parametrize("config", [None, [], "x", 1])
def test_configuration_must_be_an_object(config: Any) -> None:
    for parse, value, path in (
        (parse_chunk_grid, {"name": "regular"}, "chunk_grid"),
        (parse_chunk_key_encoding, {"name": "default"}, "chunk_key_encoding"),
        (_codec, {"name": "gzip"}, "codecs[0]"),
    ):
        with pytest.raises(MetadataError, match=rf"^{re.escape(path)}\.configuration: expected an object"):
            parse({**value, "configuration": config})


def test_config_dict_required_and_free_form() -> None:
    assert config_dict(None, "x", ("a",)) == {}
    assert config_dict({"z": 1}, "x", None) == {"z": 1}
    for absent in (None, {"b": 1}):  # an absent configuration lacks its required keys too
        with pytest.raises(MetadataError, match=r"^x\.configuration\.a: expected a value \(the key is required\), "
                                                r"received <missing>$"):
            config_dict(absent, "x", ("a", "b"), required=("a",))


def test_missing_name() -> None:
    for parse, path in ((parse_chunk_grid, "chunk_grid"), (parse_chunk_key_encoding, "chunk_key_encoding"),
                        (_codec, "codecs[0]")):
        with pytest.raises(MetadataError, match=rf"^{re.escape(path)}\.name: expected an extension name"):
            parse({"configuration": {}})
