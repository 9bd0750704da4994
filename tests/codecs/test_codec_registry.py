"""Codec registry and codecs-list parsing (v3-core.rst "Codecs", "Extension definition")."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from codec_helpers import make_spec

import zarrcy.codecs as zc
from zarrcy.codecs import codec_from_dict, codecs_to_json, get_codec_class, parse_codecs, register_codec
from zarrcy.codecs.opaque import OpaqueArrayArrayCodec, OpaqueBytesBytesCodec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import CODECS, _classes, _registered
from zarrcy.errors import MetadataError, UnknownCodecError

LE = {"name": "bytes", "configuration": {"endian": "little"}}
SPEC = make_spec((4, 6), "float32")


def test_import_has_no_side_effects() -> None:
    code = (
        "import sys, zarrcy.codecs\n"
        "mods = [m for m in sys.modules if m.startswith(('zarrcy.codecs.', 'numcodecs'))]\n"
        "print(sorted(mods))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert eval(out) == ["zarrcy.codecs._base", "zarrcy.codecs.registry"]


def test_convenience_exports() -> None:
    from zarrcy.codecs.gzip import GzipCodec

    assert zc.Gzip is zc.GzipCodec is GzipCodec
    for name in ("BytesCodec", "TransposeCodec", "Crc32cCodec", "BloscCodec", "ZstdCodec", "CodecPipeline"):
        assert getattr(zc, name).__name__ == name
    with pytest.raises(AttributeError):
        zc.NoSuchCodec  # noqa: B018


def test_table_names() -> None:
    assert set(CODECS) >= {"bytes", "transpose", "gzip", "crc32c", "blosc", "zstd", "cast_value", "scale_offset", "sharding_indexed"}
    assert CODECS["cast_value"] == "zarrcy.codecs.cast_value:CastValueCodec"
    assert CODECS["scale_offset"] == "zarrcy.codecs.scale_offset:ScaleOffsetCodec"
    assert CODECS["sharding_indexed"] == "zarrcy.codecs.sharding:ShardingCodec"


def test_missing_module_is_unknown_codec() -> None:
    register_codec("zarrcy_test_missing", "zarrcy.codecs.does_not_exist:Nope")
    try:
        with pytest.raises(UnknownCodecError, match=r"codecs\[1\]\.name"):
            parse_codecs([LE, "zarrcy_test_missing"], SPEC)
    finally:
        _registered.pop("zarrcy_test_missing")


def test_short_hand_and_objects() -> None:
    codecs = parse_codecs([LE, "crc32c", {"name": "gzip", "configuration": {"level": 1}}], SPEC)
    assert codecs_to_json(codecs) == [LE, {"name": "crc32c"}, {"name": "gzip", "configuration": {"level": 1}}]
    assert codec_from_dict(codecs[2], "x") is codecs[2]


def test_unknown_codec() -> None:
    with pytest.raises(UnknownCodecError, match=r"codecs\[1\]\.name: expected a known codec, received 'lzma9'"):
        parse_codecs([LE, {"name": "lzma9"}], SPEC)
    with pytest.raises(UnknownCodecError, match=r"codecs\[1\]\.name"):
        parse_codecs([LE, {"name": "lzma9", "must_understand": True}], SPEC)


def test_must_understand_false_is_pass_through() -> None:
    j_bb = {"name": "example.checksum", "configuration": {"k": [1, 2]}, "must_understand": False}
    j_aa = {"name": "example.filter", "must_understand": False}
    p = CodecPipeline.from_codecs([j_aa, LE, j_bb, "crc32c"], SPEC)
    assert isinstance(p.array_array[0], OpaqueArrayArrayCodec)
    assert isinstance(p.bytes_bytes[0], OpaqueBytesBytesCodec)
    assert p.to_json() == [j_aa, LE, j_bb, {"name": "crc32c"}]
    a = np.arange(24, dtype="float32").reshape(4, 6)
    assert (p.decode(p.encode(a)) == a).all()
    assert p.compute_encoded_size() == 96 + 4


@pytest.mark.parametrize(
    "codecs, path",
    [
        ([], r"codecs:"),
        ("bytes", r"codecs:"),
        ([{"name": "gzip", "configuration": {"level": 1}}, LE], r"codecs\[0\]"),
        ([LE, {"name": "transpose", "configuration": {"order": [1, 0]}}], r"codecs\[1\]"),
        ([LE, LE], r"codecs\[1\]"),
        (["crc32c"], r"codecs\[0\]"),
        ([{"name": "transpose", "configuration": {"order": [1, 0]}}], r"codecs:"),
        ([{"configuration": {}}], r"codecs\[0\]\.name"),
        ([{"name": 3}], r"codecs\[0\]\.name"),
        ([{"name": "bytes", "extra": 1}], r"codecs\[0\]\.extra"),
        ([{"name": "bytes", "configuration": []}], r"codecs\[0\]\.configuration"),
        ([{"name": "bytes", "must_understand": "no"}], r"codecs\[0\]\.must_understand"),
        ([3], r"codecs\[0\]"),
    ],
)
def test_order_and_shape_errors(codecs: object, path: str) -> None:
    with pytest.raises(MetadataError, match=path):
        CodecPipeline.from_codecs(codecs, SPEC)  # type: ignore[arg-type]


def test_path_prefix_is_used() -> None:
    with pytest.raises(MetadataError, match=r"codecs\[0\]\.configuration\.codecs\[1\]\.configuration\.level"):
        parse_codecs([LE, {"name": "gzip", "configuration": {"level": 99}}], SPEC, "codecs[0].configuration.codecs")


def test_register_codec_and_entry_points(monkeypatch: pytest.MonkeyPatch) -> None:
    from zarrcy.codecs import registry

    class FakeEP:
        name = "zarrcy_test_ep"

        def load(self) -> type:
            from zarrcy.codecs.crc32c_ import Crc32cCodec

            return Crc32cCodec

    monkeypatch.setattr(registry, "_entry_points", {"zarrcy_test_ep": FakeEP()})
    try:
        assert get_codec_class("zarrcy_test_ep").__name__ == "Crc32cCodec"

        class NotACodec:
            pass

        register_codec("zarrcy_test_bad", NotACodec)  # type: ignore[arg-type]
        with pytest.raises(UnknownCodecError):
            get_codec_class("zarrcy_test_bad")
    finally:
        _classes.pop("zarrcy_test_ep", None)
        _registered.pop("zarrcy_test_bad", None)


def test_real_entry_point_group_is_read() -> None:
    from zarrcy.codecs import registry

    saved = registry._entry_points
    registry._entry_points = None
    try:
        assert isinstance(registry._load_entry_points(), dict)
    finally:
        registry._entry_points = saved


def test_fill_key_is_one_fingerprint_for_every_spec_cache() -> None:
    """Issue 15 item 5: the codec-list memo, the pipeline cache and the shard layout cache
    key the fill value through one helper: bytes tell -0.0 from 0.0 and NaN payloads
    apart (``==`` does not); object dtypes key by value (their buffer holds pointers)."""
    from zarrcy.codecs._base import ArraySpec, fill_key

    def spec(fill: object, dtype: str = "float32") -> ArraySpec:
        return ArraySpec((4, 6), np.dtype(dtype), fill)

    nan2 = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)[0]
    keys = [fill_key(spec(v)) for v in (np.float32(0), np.float32(-0.0), np.float32("nan"), nan2)]
    assert len(set(keys)) == 4 and all(isinstance(k, bytes) for k in keys)
    assert fill_key(spec("a", "O")) == repr("a") != fill_key(spec("b", "O"))
    assert fill_key(spec("not a number")) == repr("not a number")  # does not convert: no exception
    # every cache keyed by spec uses it: distinct fills never share a cached result
    shard = [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3], "codecs": [LE]}}]
    z, nz = spec(np.float32(0)), spec(np.float32(-0.0))
    assert parse_codecs(shard, z)[0].layout(z) is not parse_codecs(shard, nz)[0].layout(nz)
    codecs = tuple(parse_codecs([LE], z))
    assert CodecPipeline.from_codecs(codecs, z) is CodecPipeline.from_codecs(codecs, spec(np.float32(0)))
    assert CodecPipeline.from_codecs(codecs, z) is not CodecPipeline.from_codecs(codecs, nz)
