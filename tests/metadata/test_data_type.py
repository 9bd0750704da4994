"""Data type identifiers (v3-data-types.rst, ext-data-types/*.md)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from zarrcy.errors import MetadataError, UnknownExtensionError
from zarrcy.metadata import DATA_TYPES, DataType, from_numpy, parse_data_type

CORE = {
    "bool": np.bool_,
    "int8": np.int8,
    "int16": np.int16,
    "int32": np.int32,
    "int64": np.int64,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "complex64": np.complex64,
    "complex128": np.complex128,
}
EXT = {
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e5m2": ml_dtypes.float8_e5m2,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "int2": ml_dtypes.int2,
    "int4": ml_dtypes.int4,
    "uint2": ml_dtypes.uint2,
    "uint4": ml_dtypes.uint4,
    "float8_e3m4": ml_dtypes.float8_e3m4,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "complex_float16": ml_dtypes.complex32,
    "complex_bfloat16": ml_dtypes.bcomplex32,
}
# only chosen by name (aliases of complex64/128; one-byte components are a structured pair):
# tests/metadata/test_lowp_types.py
BY_NAME_ONLY = {"complex_float32", "complex_float64", "complex_float4_e2m1fn", "complex_float6_e2m3fn",
                "complex_float6_e3m2fn", *(f"complex_float8_{v}" for v in (
                    "e3m4", "e4m3", "e4m3b11fnuz", "e4m3fnuz", "e5m2", "e5m2fnuz", "e8m0fnu"))}


@pytest.mark.parametrize("name,np_type", [*CORE.items(), *EXT.items()])
def test_named_types(name: str, np_type: type) -> None:
    d = parse_data_type(name)
    assert d.name == name and d.to_json() == name
    assert d.dtype == np.dtype(np_type)
    assert d.itemsize == np.dtype(np_type).itemsize
    assert from_numpy(np_type) is d
    assert from_numpy(np.dtype(np_type)) is d
    assert from_numpy(name) is d
    assert DataType.from_numpy(np_type) is d
    # the object form of a core name is the same type
    assert parse_data_type({"name": name}) is d
    assert parse_data_type({"name": name, "must_understand": True}) is d


def test_float8_e4m3_is_ieee_variant_with_infinity() -> None:
    # ext-data-types/float8_e4m3.md: IEEE-like, with NaN and +/-inf -> not the "fn" variant
    d = parse_data_type("float8_e4m3")
    assert d.dtype == np.dtype(ml_dtypes.float8_e4m3)
    assert d.dtype != np.dtype(ml_dtypes.float8_e4m3fn)
    assert np.isinf(d.parse_fill_value("Infinity"))


@pytest.mark.parametrize("spelling,name", [("<f4", "float32"), (">i2", "int16"), ("=u8", "uint64"), (">c16", "complex128"), ("?", "bool"), ("float32", "float32"), (float, "float64"), (int, "int64"), (np.longlong, "int64"), (np.ulonglong, "uint64")])
def test_from_numpy_drops_byte_order(spelling: object, name: str) -> None:
    d = from_numpy(spelling)
    assert d.name == name
    assert d.dtype.isnative


@pytest.mark.parametrize("spelling,nbits", [("V3", 24), ("r24", 24), ("r8", 8), (np.dtype("V1"), 8), ("V16", 128)])
def test_raw_types(spelling: object, nbits: int) -> None:
    d = from_numpy(spelling)
    assert d.name == f"r{nbits}"
    assert d.dtype == np.dtype(f"V{nbits // 8}")
    assert parse_data_type(f"r{nbits}") == d


# (packed structured dtypes are the struct type: tests/metadata/test_struct_type.py)
@pytest.mark.parametrize("bad", ["(2,)i4", [("a", "i4", (2,)), ("b", "f8")], np.dtype([("a", "u1"), ("b", "i4")], align=True),
                                 "f16" if np.dtype("g").itemsize == 16 else "(3,)u1"])
def test_from_numpy_unsupported(bad: object) -> None:
    with pytest.raises(MetadataError):
        from_numpy(bad)


@pytest.mark.parametrize("name", ["r12", "r0", "r08", "r-8", "r"])
def test_bad_raw_names(name: str) -> None:
    with pytest.raises(MetadataError):
        parse_data_type(name)


@pytest.mark.parametrize("name", ["urn:example:datetime", "float128", "numpy.float128", "vlen-utf8"])
def test_unknown_data_type_names_the_path(name: str) -> None:
    with pytest.raises(UnknownExtensionError, match="data_type") as e:
        parse_data_type(name, "data_type")
    assert name in str(e.value)
    with pytest.raises(UnknownExtensionError, match=name):
        parse_data_type({"name": name, "configuration": {"unit": "ns"}}, "data_type")


def test_must_understand_false_not_allowed() -> None:
    with pytest.raises(MetadataError, match="must_understand"):
        parse_data_type({"name": "float32", "must_understand": False})
    with pytest.raises(MetadataError, match="must_understand"):
        parse_data_type({"name": "made-up", "must_understand": False})


@pytest.mark.parametrize(
    "value",
    [None, 3, True, [], ["float32"], {"configuration": {}}, {"name": 3}, {"name": "float32", "configuration": 1},
     {"name": "float32", "configuration": {"x": 1}}, {"name": "float32", "extra": 1}, "Float32", "foo/bar", "",
     {"name": "float32", "must_understand": "no"}],
)
def test_bad_data_type_values(value: object) -> None:
    with pytest.raises(MetadataError):
        parse_data_type(value, "data_type")


def test_registry_is_complete() -> None:
    assert set(CORE) | set(EXT) | BY_NAME_ONLY == set(DATA_TYPES)


def test_data_type_is_frozen_and_hashable() -> None:
    d = parse_data_type("int8")
    with pytest.raises(AttributeError):
        d.name = "x"  # type: ignore[misc]
    assert {d: 1}[parse_data_type("int8")] == 1


def test_raw_bytes_configured_type() -> None:
    d = parse_data_type({"name": "raw_bytes", "configuration": {"length_bytes": 4}})
    assert d.dtype == np.dtype("V4") and d.itemsize == 4
    assert d.to_json() == {"name": "raw_bytes", "configuration": {"length_bytes": 4}}
    assert d != parse_data_type({"name": "raw_bytes", "configuration": {"length_bytes": 3}})
    assert d != parse_data_type("r32")
    assert d.fill_value_to_json(d.parse_fill_value("AQIDBA==")) == "AQIDBA=="
    assert d.fill_value_to_json(d.parse_fill_value([1, 2, 3, 4])) == "AQIDBA=="
    for bad in ({"name": "raw_bytes"}, {"name": "raw_bytes", "configuration": {}},
                {"name": "raw_bytes", "configuration": {"length_bytes": 0}},
                {"name": "raw_bytes", "configuration": {"length_bytes": True}},
                {"name": "raw_bytes", "configuration": {"length_bytes": 3, "x": 1}}):
        with pytest.raises(MetadataError, match="data_type.configuration"):
            parse_data_type(bad, "data_type")
