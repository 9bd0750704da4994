"""Assignment casting follows numpy 2's ``__setitem__`` (issue 12 item 13, issue 14 item 7).

The oracle is numpy itself: every (dtype, value, selection) is assigned to a numpy array
and to a zarrcy array (plain and sharded; basic, orthogonal and vectorised writes); both
must either store the same bytes or raise the same builtin exception with the same text.
Before the fix, ``a[0] = 300`` on uint8 stored 44 and ``1+2j`` lost its imaginary part.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import zarrcy
from zarrcy.errors import CastError, CastTypeError, OutOfRangeError, ZarrcyError
from zarrcy.storage import MemoryStore

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"]

SCALARS = [0, 1, -1, 127, 128, 255, 256, 300, -129, 70000, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, -2**63,
           2.7, -0.5, 300.0, 1e300, float("nan"), float("inf"), True, False, 1 + 0j, 1 + 2j, None, "5", "300"]
# numpy scalars are cast like numpy arrays (unsafely, ``astype``); numpy's own basic-index
# setitem is not consistent there (int8 ``x[0] = np.int64(300)`` raises, ``x[[0]] = ...``
# stores 44, uint8 stores 44 both ways), so they are compared with ``astype`` below
NUMPY_SCALARS = [np.int64(300), np.int64(-1), np.float64(2.5), np.complex128(1 + 2j), np.uint8(7)]
SEQUENCES = [[300, -1, 256, 2], [1, 2.5, 3, 4], [1 + 2j, 0, 0, 0], (1, 2, 3, 300), [np.int64(300), 1, 2, 3],
             [True, 0, 2, 1], np.array([300, 1, 2, 3]), np.array([1.5, 2, 3, 4]), np.array([True, False, True, False]),
             np.array([1 + 2j, 0, 0, 0])]


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            fn()
        except (Exception, Warning) as e:  # noqa: BLE001 - compared with numpy's outcome
            return e
    return None


def _numpy_outcome(dtype, how, sel, value):
    x = np.zeros(4, dtype=dtype)

    def assign():
        x[sel] = value

    return x, _outcome(assign)


def _zarrcy_array(dtype, sharded):
    kw = dict(chunks=(1,), shards=(2,)) if sharded else dict(chunks=(2,))
    return zarrcy.create_array(MemoryStore(), shape=(4,), dtype=dtype, fill_value=0, **kw)


def _assign(a, how, sel, value):
    if how == "basic":
        a[sel] = value
    elif how == "oindex":
        a.oindex[sel] = value
    else:
        a.vindex[sel] = value


def _check(dtype, how, sel, value, sharded):
    expected_arr, expected_err = _numpy_outcome(dtype, how, sel, value)
    a = _zarrcy_array(dtype, sharded)
    err = _outcome(lambda: _assign(a, how, sel, value))
    if expected_err is None:
        assert err is None, f"numpy stores {expected_arr!r}, zarrcy raised {err!r}"
        assert a[:].tobytes() == expected_arr.tobytes(), (a[:], expected_arr)
    else:
        assert err is not None, f"numpy raised {expected_err!r}, zarrcy stored {a[:]!r}"
        assert isinstance(err, type(expected_err)), (err, expected_err)
        assert str(err) == str(expected_err)
        if not isinstance(err, Warning):
            assert isinstance(err, ZarrcyError), f"raw builtin {err!r}"
        assert a.nchunks_initialized == 0  # nothing was written


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_scalars_like_numpy(dtype, sharded):
    for value in SCALARS:
        for how, sel in (("basic", 0), ("basic", slice(None)), ("oindex", [0, 2]), ("vindex", [1, 3])):
            _check(dtype, how, sel, value, sharded)


@pytest.mark.parametrize("sharded", [False, True], ids=["plain", "sharded"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_sequences_like_numpy(dtype, sharded):
    for value in SEQUENCES:
        _check(dtype, "basic", slice(None), value, sharded)
        _check(dtype, "oindex", [0, 1, 2, 3], value, sharded)
        _check(dtype, "vindex", [3, 2, 1, 0], value, sharded)


def test_issue_repros():
    a = _zarrcy_array("uint8", False)
    with pytest.raises(OutOfRangeError, match=r"^Python integer 300 out of bounds for uint8$") as info:
        a[0] = 300
    assert isinstance(info.value, OverflowError)
    with pytest.raises(OverflowError, match="Python integer 300 out of bounds for uint8"):
        a[0:4] = [300, -1, 256, 2]
    with pytest.raises(OverflowError, match="Python integer 256 out of bounds for uint8"):
        a[0] = 256
    b = _zarrcy_array("int16", True)
    with pytest.raises(OverflowError, match="Python integer 70000 out of bounds for int16"):
        b[0] = 70000
    c = _zarrcy_array("float64", False)
    with pytest.raises(CastTypeError) as info:
        c[0] = 1 + 2j
    assert isinstance(info.value, TypeError)
    u = _zarrcy_array("uint8", False)
    with pytest.raises(CastError, match="cannot convert float NaN to integer"):
        u[0] = float("nan")
    assert a[:].tolist() == [0, 0, 0, 0] and b[:].tolist() == [0, 0, 0, 0] and c[:].tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_scalars_cast_like_astype(dtype):
    for value in NUMPY_SCALARS:
        ref = _outcome(lambda: np.full(4, value).astype(dtype))
        for sharded in (False, True):
            a = _zarrcy_array(dtype, sharded)
            err = _outcome(lambda: _assign(a, "basic", slice(None), value))
            if ref is None:
                assert err is None, err
                assert a[:].tobytes() == np.full(4, value).astype(dtype).tobytes()
            else:
                assert type(err) is type(ref) and str(err) == str(ref), (err, ref)


def test_append_follows_the_same_rules():
    a = zarrcy.create_array(MemoryStore(), shape=(2,), chunks=(2,), dtype="uint8")
    with pytest.raises(OutOfRangeError, match="Python integer 300 out of bounds for uint8"):
        a.append([1, 300])
    assert a.shape == (2,)  # refused before the array grew
    a.append(np.array([1, 300]))  # numpy arrays cast unsafely, as numpy's setitem does
    assert a[:].tolist() == [0, 0, 1, 44]


def test_numpy_arrays_cast_unsafely_like_numpy():
    a = _zarrcy_array("uint8", False)
    a[:] = np.array([300, -1, 256, 2])
    x = np.zeros(4, np.uint8)
    x[:] = np.array([300, -1, 256, 2])
    assert a[:].tolist() == x.tolist() == [44, 255, 0, 2]
