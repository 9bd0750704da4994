"""cast_value codec: strict configuration, resolution through the chain, fill-value round trip, pipeline."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.cast_value import CastValueCodec, ScalarMap, parse_scalar, scalar_to_json
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.errors import CastError, MetadataError, OutOfRangeError


def spec(dtype="float64", fill=0, shape=(8,)):
    dt = np.dtype(dtype)
    return ArraySpec(shape, dt, np.asarray(fill).astype(dt)[()])


def test_round_trip_json():
    conf = {"data_type": "uint8", "rounding": "towards-zero", "out_of_range": "wrap",
            "scalar_map": {"encode": [["NaN", 0], ["+Infinity", 0], ["-Infinity", 0]]}}
    c = CastValueCodec.from_dict(conf, "codecs[0]")
    assert CastValueCodec.from_dict(c.to_dict()["configuration"], "x") == c
    assert c.to_dict()["configuration"]["rounding"] == "towards-zero"
    c2 = codec_from_dict({"name": "cast_value", "configuration": {"data_type": "int16"}})
    assert c2 == CastValueCodec("int16")


@pytest.mark.parametrize("conf", [
    {"data_type": "uint8", "extra": 1},
    {"data_type": "uint8", "rounding": "up"},
    {"data_type": "uint8", "out_of_range": "saturate"},
    {"data_type": "float32", "out_of_range": "wrap"},
    {"data_type": "bool"},
    {"data_type": "complex64"},
    {"rounding": "nearest-even"},
    {"data_type": "uint8", "scalar_map": {"encode": [["NaN"]]}},
    {"data_type": "uint8", "scalar_map": {"both": []}},
    {"data_type": "uint8", "scalar_map": {"encode": [[True, 1]]}},
])
def test_bad_configuration(conf):
    with pytest.raises(MetadataError):
        CastValueCodec.from_dict(conf, "codecs[0]")


def test_missing_configuration():
    with pytest.raises(MetadataError):
        CastValueCodec.from_dict(None, "codecs[0]")


def test_scalar_map_key_of_wrong_type():
    # "NaN" is not an int16 value; 1.5 is not an integer; 300 is out of uint8
    for sm in ({"encode": [["NaN", 0]]}, {"encode": [[1.5, 0]]}, {"decode": [[300, 0.0]]}, {"encode": [[0, 256]]}):
        c = CastValueCodec.from_dict({"data_type": "uint8", "scalar_map": sm}, "codecs[0]")
        with pytest.raises(MetadataError):
            c.validate(spec("int16"), "codecs[0]")


def test_resolve_and_fill_round_trip():
    c = CastValueCodec.from_dict(
        {"data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}, "c")
    assert c == CastValueCodec("uint8", scalar_map=ScalarMap(encode=(("NaN", 0),), decode=((0, "NaN"),)))
    out = c.resolve(spec("float64", np.nan))
    assert out.dtype == np.uint8 and out.fill_value == 0
    # NaN fill without a map: cannot be encoded -> metadata error
    with pytest.raises(MetadataError):
        CastValueCodec("uint8").resolve(spec("float64", np.nan), "codecs[0]")
    # 0.5 rounds to 0 and decodes to 0.0: does not round-trip -> metadata error
    with pytest.raises(MetadataError):
        CastValueCodec("uint8").resolve(spec("float64", 0.5), "codecs[0]")
    # NaN -> 0 on encode but 0 decodes to 0.0 (no decode map): not the same value
    with pytest.raises(MetadataError):
        CastValueCodec.from_dict({"data_type": "uint8", "scalar_map": {"encode": [["NaN", 0]]}}, "c").resolve(
            spec("float64", np.nan), "c")
    # -0.0 into float16 keeps its sign; into int it becomes 0 and decodes to +0.0 -> not identical bits
    assert math.copysign(1, CastValueCodec("float16").resolve(spec("float64", -0.0)).fill_value) < 0
    with pytest.raises(MetadataError):
        CastValueCodec("int8").resolve(spec("float64", -0.0), "c")


def test_encode_decode_errors_are_cast_errors():
    c = CastValueCodec("uint8")
    s = spec("float64")
    with pytest.raises(OutOfRangeError) as ei:
        c.encode(np.array([1.0, 2.0, 300.0, 1.0, 0, 0, 0, 0]), s)
    assert ei.value.index == 2 and "300.0" in str(ei.value)
    with pytest.raises(CastError):
        c.encode(np.array([np.nan] * 8), s)
    # decode: wrap into a float type acts like "absent" -> out of range is an error
    w = CastValueCodec("int64", out_of_range="wrap")
    with pytest.raises(OutOfRangeError):
        w.decode(np.array([2**62] * 8, dtype=np.int64), spec("float16"))


def test_pipeline_quantize_example():
    # ext-codec-scale_offset.md "Float64 to uint8 with NaN preservation"
    codecs = [{"name": "scale_offset", "configuration": {"offset": -10, "scale": 0.1}},
              {"name": "cast_value", "configuration": {"data_type": "uint8", "rounding": "nearest-even",
                                                        "scalar_map": {"encode": [["NaN", 0]], "decode": [[0, "NaN"]]}}},
              "bytes"]
    p = CodecPipeline.from_codecs(codecs, spec("float64", np.nan, (6,)))
    x = np.array([0.0, 2540.0, np.nan, 15.0, 25.0, 100.0])
    b = bytes(p.encode(x))
    assert list(b) == [1, 255, 0, 2, 4, 11]
    y = p.decode(b)
    assert np.isnan(y[2]) and y[1] == 2540.0 and y[0] == 0.0
    assert p.to_json()[1]["configuration"]["data_type"] == "uint8"


@pytest.mark.parametrize("ext", ["bfloat16", "float8_e4m3", "float8_e5m2", "float4_e2m1fn", "int4", "uint4", "int2", "uint2"])
def test_extension_types_through_bytes(ext):
    dt = np.dtype(getattr(ml_dtypes, ext))
    x = np.array([0.0, 1.0, -1.0, 1.5, 3.0, 0.4], dtype=np.float64)
    if ext.startswith("u"):
        x = np.abs(x)
    oor = "clamp"
    le = {"name": "bytes", "configuration": {"endian": "little"}}
    codecs = [{"name": "cast_value", "configuration": {"data_type": ext, "out_of_range": oor}}, le]
    p = CodecPipeline.from_codecs(codecs, spec("float64", 0, (6,)))
    b = bytes(p.encode(x))
    assert len(b) == 6 * dt.itemsize
    expect = np.empty(6, dtype=dt)
    from zarrcy.casting import cast_value

    expect = cast_value(x, ext, out_of_range=oor)
    assert b == expect.tobytes()
    back = p.decode(b)
    assert back.dtype == np.float64
    assert np.array_equal(back, expect.astype(np.float64))
    # arrays *of* the extension type itself store and load with the bytes codec
    p2 = CodecPipeline.from_codecs([le], ArraySpec((6,), dt, np.zeros((), dt)[()]))
    assert p2.decode(bytes(p2.encode(expect))).tobytes() == expect.tobytes()


def test_parse_scalar_rules():
    assert parse_scalar("+Infinity", "float32", "x") == np.inf
    assert np.isnan(parse_scalar("NaN", "bfloat16", "x").astype(np.float64))
    assert parse_scalar("0x3c00", "float16", "x") == 1.0
    for bad, t in [("0x3c0", "float16"), ("0x00003c00", "float16"), (1.0, "int8"), (128, "int8"), ("NaN", "int8"),
                   ("NaN", "float4_e2m1fn"), (True, "uint8"), ("nan", "float64"), ("0X3c00", "float16"),
                   (1e39, "float8_e4m3fn"), (7.0, "float4_e2m1fn")]:
        with pytest.raises(MetadataError):
            parse_scalar(bad, t, "x")
    # beyond the largest finite value: infinity where the type has one (as fill values)
    assert parse_scalar(1e39, "float32", "x") == np.inf
    assert parse_scalar(-65520, "float16", "x") == -np.inf
    assert parse_scalar(65519, "float16", "x") == np.float16(65504)
    # decimal rounded once from the exact value (ties to even)
    from decimal import Decimal

    assert parse_scalar(Decimal("0.1"), "float32", "x") == np.float32(0.1)
    assert parse_scalar(Decimal("1.00048828125"), "float16", "x") == 1.0        # exact tie -> even
    assert parse_scalar(Decimal("1.000488281250001"), "float16", "x") == np.float16(1.0009765625)
    assert scalar_to_json(np.float32(np.nan), "float32") == "NaN"
    assert scalar_to_json(np.float64(-np.inf), "float64") == "-Infinity"


@pytest.mark.parametrize("sm", [None, {}, {"encode": []}, {"decode": [[0, "NaN"]]},
                                {"encode": [["NaN", 0], [1.5, 2]], "decode": [[0, "NaN"]]}])
def test_scalar_map_attribute_uses_the_spec_vocabulary(sm):
    """``CastValueCodec.scalar_map`` mirrors the JSON member (CONVENTIONS rule 1):
    ``.encode``/``.decode`` pairs, None where absent; written back as it was read."""
    conf = {"data_type": "uint8", "rounding": "nearest-even"}
    if sm is not None:
        conf["scalar_map"] = sm
    c = CastValueCodec.from_dict(conf, "c")
    if sm is None:
        assert c.scalar_map is None
    else:
        assert c.scalar_map == ScalarMap(
            *(None if sm.get(k) is None else tuple(tuple(p) for p in sm[k]) for k in ("encode", "decode")))
    assert c.to_dict() == {"name": "cast_value", "configuration": conf}
    assert CastValueCodec.from_dict(c.to_dict()["configuration"], "c") == c
