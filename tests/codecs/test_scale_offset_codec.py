"""scale_offset codec: configuration, fill-value transform, numcodecs.fixedscaleoffset alias, pipeline fusion."""

from __future__ import annotations

import numpy as np
import pytest

from zarrcy.codecs._base import ArraySpec
from zarrcy.codecs.cast_value import CastValueCodec
from zarrcy.codecs.pipeline import CodecPipeline
from zarrcy.codecs.registry import codec_from_dict
from zarrcy.codecs.scale_offset import FixedScaleOffsetCodec, ScaleOffsetCastCodec, ScaleOffsetCodec
from zarrcy.errors import MetadataError, OutOfRangeError


def spec(dtype="float64", fill=0, shape=(4,)):
    dt = np.dtype(dtype)
    return ArraySpec(shape, dt, np.asarray(fill).astype(dt)[()])


def test_json_round_trip():
    for conf in (None, {"offset": 5}, {"scale": 0.1}, {"offset": -10, "scale": 0.1}, {"offset": "0x3ff0000000000000"}):
        c = ScaleOffsetCodec.from_dict(conf, "c")
        d = c.to_dict()
        assert ScaleOffsetCodec.from_dict(d.get("configuration"), "c") == c
    assert ScaleOffsetCodec.from_dict(None, "c").to_dict() == {"name": "scale_offset"}
    assert codec_from_dict("scale_offset") == ScaleOffsetCodec()


@pytest.mark.parametrize("conf", [{"offset": 1, "bias": 2}, {"scale": 0}, {"scale": 0.0}, {"offset": [1]},
                                  {"offset": None}, {"scale": True}])
def test_bad_configuration(conf):
    with pytest.raises(MetadataError):
        ScaleOffsetCodec.from_dict(conf, "c")


@pytest.mark.parametrize("conf,dtype", [({"offset": 128}, "int8"), ({"offset": -1}, "uint8"), ({"scale": 0.5}, "int16"),
                                        ({"scale": "0x0000"}, "float16"), ({"offset": "NaN"}, "float32"),
                                        ({"offset": 1e39}, "float32"), ({"scale": "Infinity"}, "float64")])
def test_bad_for_type(conf, dtype):
    with pytest.raises(MetadataError):
        ScaleOffsetCodec.from_dict(conf, "c").validate(spec(dtype), "c")


def test_fill_value_transformed():
    c = ScaleOffsetCodec(5, 2)
    assert c.resolve(spec("int32", 7)).fill_value == 4
    assert ScaleOffsetCodec(-10, 0.1).resolve(spec("float64", 0.0)).fill_value == (0.0 + 10) * 0.1
    with pytest.raises(MetadataError):
        ScaleOffsetCodec(-1, -1).resolve(spec("int8", 127), "c")


def test_spec_example_uint16_range_reduction():
    codecs = [{"name": "scale_offset", "configuration": {"offset": 1000}},
              {"name": "cast_value", "configuration": {"data_type": "uint8"}}, "bytes"]
    p = CodecPipeline.from_codecs(codecs, spec("uint16", 1000))
    x = np.array([1000, 1255, 1100, 1001], dtype=np.uint16)
    b = bytes(p.encode(x))
    assert list(b) == [0, 255, 100, 1]
    assert (p.decode(b) == x).all()
    with pytest.raises(OutOfRangeError):
        p.encode(np.array([999, 1000, 1000, 1000], dtype=np.uint16))


def test_pipeline_runs_fused():
    codecs = [ScaleOffsetCodec(-10, 0.1), CastValueCodec("uint8", out_of_range="clamp"), "bytes"]
    p = CodecPipeline.from_codecs(codecs, spec("float64", 0.0))
    assert isinstance(p._aa_exec[0][0], ScaleOffsetCastCodec)
    x = np.array([0.0, 2540.0, 5000.0, -100.0])
    assert list(bytes(p.encode(x))) == [1, 255, 255, 0]


def test_fixedscaleoffset_alias():
    conf = {"astype": "|u1", "dtype": "<f4", "scale": 0.1, "offset": 10}
    c = codec_from_dict({"name": "numcodecs.fixedscaleoffset", "configuration": conf})
    assert isinstance(c, FixedScaleOffsetCodec)
    assert c.to_dict() == {"name": "numcodecs.fixedscaleoffset", "configuration": conf}
    so, cv = c.unfused()
    assert so.to_dict() == {"name": "scale_offset", "configuration": {"offset": 10, "scale": 0.1}}
    assert cv.to_dict()["configuration"] == {"data_type": "uint8", "rounding": "nearest-even", "out_of_range": "wrap"}
    # spec example: float32 fill 10.0 -> uint8 fill 0; values [10, 100] -> [0, 9] (0.1 is rounded in float32)
    s = spec("float32", 10.0, (3,))
    assert c.resolve(s).fill_value == 0
    p = CodecPipeline.from_codecs([conf and {"name": "numcodecs.fixedscaleoffset", "configuration": conf}, "bytes"], s)
    x = np.array([10.0, 100.0, 55.0], dtype=np.float32)
    enc = bytes(p.encode(x))
    import numcodecs

    ref = numcodecs.FixedScaleOffset(offset=10, scale=0.1, dtype="<f4", astype="|u1").encode(x)
    assert enc == bytes(ref)
    with pytest.raises(MetadataError):
        codec_from_dict({"name": "numcodecs.fixedscaleoffset", "configuration": {"scale": 1, "offset": 0}})
