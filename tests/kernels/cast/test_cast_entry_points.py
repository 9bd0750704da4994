"""The typed contract of the cast kernels' entry points (CONVENTIONS rule 6): arrays of the
storage types (read from the buffer format, read-only inputs accepted), a checked
CastFormat instead of a positional tuple, and errors -- not wrong bits -- for arrays that do
not fit the format."""

from __future__ import annotations

import numpy as np
import pytest

from zarrcy._kernels._cast_exact import CastFormat
from zarrcy._kernels._cast_fast import cast_into
from zarrcy._kernels._cast_scale_offset import cast_scale_offset_into, scale_offset_cast_into
from zarrcy.codecs.cast_value import SUPPORTED_TYPES, ST_CLAMPED, ST_EXACT, ST_FAIL_RANGE, ST_MAPPED, ST_ROUNDED, get_format

CODES = {"int8": 0, "int16": 1, "int32": 2, "int64": 3, "uint8": 4, "uint16": 5, "uint32": 6, "uint64": 7,
         "float32": 8, "float64": 9}
U8 = get_format("uint8").kernel_format()
F64 = get_format("float64").kernel_format()


@pytest.mark.parametrize("name", SUPPORTED_TYPES)
def test_every_format_has_its_storage_code(name):
    fmt = get_format(name)
    kf = fmt.kernel_format()
    assert kf.code == CODES[fmt.storage]
    assert (kf.kind, kf.nbits, kf.itemsize, kf.natural) == (fmt.kind, fmt.nbits, np.dtype(fmt.storage).itemsize,
                                                            fmt.natural)
    assert fmt.kernel_format() is kf          # built once per format


@pytest.mark.parametrize("kwargs", [
    {"kind": 3, "nbits": 8, "itemsize": 1, "natural": True},
    {"kind": 0, "nbits": 8, "itemsize": 3, "natural": True},
    {"kind": 0, "nbits": 9, "itemsize": 1, "natural": False},
    {"kind": 0, "nbits": 4, "itemsize": 1, "natural": True, "lo": -8, "hi": 7},       # natural needs 8 bits
    {"kind": 1, "nbits": 8, "itemsize": 1, "natural": True, "lo": 0, "hi": 127},      # hi not 2^8 - 1
    {"kind": 0, "nbits": 64, "itemsize": 8, "natural": True, "lo": 0, "hi": 2**63 - 1},
    {"kind": 2, "nbits": 32, "itemsize": 4, "natural": True, "p": 11, "emin": -14, "emax": 15, "bias": 15},
    {"kind": 2, "nbits": 16, "itemsize": 2, "natural": False, "p": 11, "emin": -14, "emax": 15, "bias": 15,
     "nan_bits": 0x17E00},
])
def test_cast_format_rejects_inconsistent_fields(kwargs):
    with pytest.raises(ValueError, match="CastFormat"):
        CastFormat(**kwargs)


def test_cast_format_bounds_at_64_bits():
    kf = CastFormat(kind=1, nbits=64, itemsize=8, natural=True, lo=0, hi=2**64 - 1)
    assert kf.code == 7
    kf = CastFormat(kind=0, nbits=64, itemsize=8, natural=True, lo=-(2**63), hi=2**63 - 1)
    assert kf.code == 3


def _ro(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def test_cast_into_read_only_inputs_and_status():
    x = _ro(np.array([1.5, 2.5, -0.5, 300.0, np.nan, 7.0]))
    keys = _ro(np.array([np.nan]))
    vals = _ro(np.array([9], np.uint8))
    y = np.empty(6, np.uint8)
    assert cast_into(x, y, U8, 0, 1, keys, vals) == -1
    assert y.tolist() == [2, 2, 0, 255, 9, 7]
    st = np.empty(6, np.uint8)
    assert cast_into(x, y, U8, 0, 0, keys, vals, st) == 3
    assert st.tolist() == [ST_ROUNDED, ST_ROUNDED, ST_ROUNDED, ST_FAIL_RANGE, ST_MAPPED, ST_EXACT]
    assert cast_into(x, y, U8, 0, 1, keys, vals, st) == -1
    assert st[3] == ST_CLAMPED


def test_cast_into_empty():
    assert cast_into(np.empty(0), np.empty(0, np.uint8), U8, 0, 0) == -1


@pytest.mark.parametrize("case", ["dst type", "dst length", "keys type", "values type", "status type",
                                  "2-d", "byte order", "bool", "dst read-only", "rounding", "out_of_range",
                                  "map lengths"])
def test_cast_into_rejects(case):
    x = np.array([1.0, 2.0])
    y = np.empty(2, np.uint8)
    args: list = [x, y, U8, 0, 0]
    kw: dict = {}
    if case == "dst type":
        args[1] = np.empty(2, np.int8)
    elif case == "dst length":
        args[1] = np.empty(3, np.uint8)
    elif case == "keys type":
        kw = {"keys": np.array([1], np.float32), "values": np.array([1], np.uint8)}
    elif case == "values type":
        kw = {"keys": np.array([1.0]), "values": np.array([1], np.int8)}
    elif case == "status type":
        kw = {"status": np.empty(2, np.int8)}
    elif case == "2-d":
        args[0], args[1] = x.reshape(1, 2), y.reshape(1, 2)
    elif case == "byte order":
        args[0] = x.astype(">f8")
    elif case == "bool":
        args[0] = np.array([True, False])
    elif case == "dst read-only":
        args[1] = _ro(y)
    elif case == "rounding":
        args[3] = 5
    elif case == "out_of_range":
        args[4] = 3
    elif case == "map lengths":
        kw = {"keys": np.array([1.0, 2.0]), "values": np.array([1], np.uint8)}
    with pytest.raises((ValueError, BufferError, TypeError)):
        cast_into(*args, **kw)
    assert y.flags.writeable


def test_fused_entry_points():
    x = _ro(np.array([10.0, 20.0, np.nan]))
    y = np.empty(3, np.uint8)
    keys, vals = np.array([np.nan]), np.array([0], np.uint8)
    assert scale_offset_cast_into(x, y, U8, 0, 0, 0.0, 0.5, keys, vals) == (-1, -1)
    assert y.tolist() == [5, 10, 0]
    back = np.empty(3)
    assert cast_scale_offset_into(_ro(y), back, F64, 0, 0, 0.0, 0.5, vals, keys) == (-1, -1)
    assert back[:2].tolist() == [10.0, 20.0] and np.isnan(back[2])
    with pytest.raises(ValueError, match="src"):
        scale_offset_cast_into(np.array([1], np.int32), y[:1], U8, 0, 0, 0.0, 1.0)
    with pytest.raises(ValueError, match="dst"):
        cast_scale_offset_into(y, np.empty(3, np.int64), get_format("int64").kernel_format(), 0, 0, 0.0, 1.0)
    with pytest.raises(ValueError, match="dst"):
        cast_scale_offset_into(y, np.empty(3, np.float32), F64, 0, 0, 0.0, 1.0)
