"""zarrcy._kernels._vlen against the slow reference (tests/vlen_helpers.ref_encode/ref_decode)."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest
from vlen_helpers import STRING, blobs, ref_decode, ref_encode, texts
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrcy._kernels import _vlen


def _decode(buf: bytes, utf8: bool) -> list | int | str:
    """Kernel decode the way the codec drives it; a short failure tag instead of raising."""
    count = _vlen.read_count(buf)
    if count < 0:
        return "short"
    if count > (len(buf) - 4) // 4:
        return "count"
    starts = np.empty(count, np.int64)
    stops = np.empty(count, np.int64)
    bad = _vlen.scan_items(buf, starts, stops)
    if bad >= 0:
        return bad
    if (int(stops[-1]) if count else 4) != len(buf):
        return "trailing"
    out = np.empty(count, STRING if utf8 else object)
    bad = (_vlen.pack_str if utf8 else _vlen.build_bytes)(buf, starts, stops, out)
    if bad >= 0:
        return f"utf8:{bad}"
    return out.tolist()


@given(st.lists(texts, max_size=30))
def test_encode_str_matches_reference(items: list[str]) -> None:
    out, bad = _vlen.encode_items(np.array(items + [None], dtype=object)[:-1], True)
    assert bad == -1
    assert bytes(out) == ref_encode(items)


@given(st.lists(blobs, max_size=30))
def test_encode_bytes_matches_reference(items: list[bytes]) -> None:
    arr = np.empty(len(items), object)
    arr[:] = items
    out, bad = _vlen.encode_items(arr, False)
    assert bad == -1
    assert bytes(out) == ref_encode(items)


@given(st.lists(texts, max_size=30))
def test_decode_str_round_trip(items: list[str]) -> None:
    buf = ref_encode(items)
    assert _decode(buf, True) == items == ref_decode(buf, True)


@given(st.lists(blobs, max_size=30))
def test_decode_bytes_round_trip(items: list[bytes]) -> None:
    buf = ref_encode(items)
    assert _decode(buf, False) == items == ref_decode(buf, False)


@settings(max_examples=300)
@given(st.binary(max_size=64), st.booleans())
def test_decode_arbitrary_bytes_agrees_with_reference(buf: bytes, utf8: bool) -> None:
    """Any input: the kernel succeeds exactly when the strict reference does, with the same items."""
    got = _decode(buf, utf8)
    try:
        want = ref_decode(buf, utf8)
    except ValueError:
        assert not isinstance(got, list)
    else:
        assert got == want


@given(st.lists(texts, min_size=1, max_size=10), st.data())
def test_truncation_reports_the_first_bad_item(items: list[str], data: st.DataObject) -> None:
    buf = ref_encode(items)
    cut = data.draw(st.integers(4 + 4 * len(items), len(buf) - 1)) if len(buf) - 1 >= 4 + 4 * len(items) else None
    if cut is None:
        return
    # the first item whose end lies past the cut
    end, first_bad = 4, None
    for i, it in enumerate(items):
        end += 4 + len(it.encode())
        if end > cut:
            first_bad = i
            break
    assert _decode(buf[:cut], True) == first_bad


def test_edge_cases() -> None:
    assert _vlen.read_count(b"") == -1
    assert _vlen.read_count(b"\x01\x02\x03") == -1
    assert _vlen.read_count(b"\xff\xff\xff\xff") == 0xFFFFFFFF
    assert _decode(b"\x00\x00\x00\x00", True) == []
    assert _decode(b"\x00\x00\x00\x00x", True) == "trailing"
    assert _decode(struct.pack("<II", 1, 0), True) == [""]
    assert _decode(struct.pack("<II", 1, 5) + b"abcd", True) == 0  # length past the end
    assert _decode(struct.pack("<II", 2, 1) + b"a" + b"\x00\x00", True) == "count"
    assert _decode(struct.pack("<II", 2, 1) + b"a" + b"\x00\x00\x00", False) == 1  # truncated length field
    assert _decode(struct.pack("<II", 1, 1) + b"\xff", True) == "utf8:0"
    assert _decode(struct.pack("<II", 1, 1) + b"\xff", False) == [b"\xff"]
    for bad in (b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82"):  # overlong, surrogate, > U+10FFFF, cut
        assert _decode(ref_encode([b"ok", bad]), True) == "utf8:1"
    # a hostile count never reaches an allocation: the bound check comes first
    assert _decode(struct.pack("<I", 0xFFFFFFFF) + b"\x00" * 8, True) == "count"
    # empty outputs and empty buffers
    e = np.empty(0, np.int64)
    assert _vlen.scan_items(b"", e, e) == -1
    assert _vlen.scan_items(b"", np.empty(1, np.int64), np.empty(1, np.int64)) == 0
    assert _vlen.pack_str(b"", e, e, np.empty(0, STRING)) == -1
    assert _vlen.build_bytes(b"", e, e, np.empty(0, object)) == -1
    one = np.empty(1, np.int64)
    with pytest.raises(TypeError):
        _vlen.pack_str(b"\x01\x00\x00\x00\x00\x00\x00\x00", one, one, np.empty(1, object))
    with pytest.raises(TypeError):  # not C-contiguous
        _vlen.pack_str(b"", e, e, np.empty((2, 2), STRING).T)
    with pytest.raises(ValueError):
        _vlen.pack_str(b"\x01\x00\x00\x00\x00\x00\x00\x00", one, one, np.empty(2, STRING))
    ro = np.empty(1, STRING)
    ro.flags.writeable = False
    with pytest.raises(TypeError):
        _vlen.pack_str(b"\x01\x00\x00\x00\x00\x00\x00\x00", one, one, ro)
    with pytest.raises(ValueError):
        _vlen.scan_items(b"\x00" * 8, np.empty(1, np.int64), np.empty(2, np.int64))


def test_read_only_and_memoryview_inputs() -> None:
    buf = ref_encode(["a", "βγ", ""])
    ro = np.frombuffer(buf, np.uint8)
    assert not ro.flags.writeable
    assert _decode(ro, True) == ["a", "βγ", ""]  # type: ignore[arg-type]
    assert _decode(memoryview(buf), True) == ["a", "βγ", ""]  # type: ignore[arg-type]


def test_encode_rejects_wrong_types_with_index() -> None:
    assert _vlen.encode_items(np.array(["a", 1, "b"], dtype=object), True) == (None, 1)
    assert _vlen.encode_items(np.array(["a", b"x"], dtype=object), True) == (None, 1)
    assert _vlen.encode_items(np.array([b"a", "x"], dtype=object), False) == (None, 1)
    assert _vlen.encode_items(np.array([None], dtype=object), False) == (None, 0)
    out, bad = _vlen.encode_items(np.empty(0, object), True)
    assert (bytes(out), bad) == (b"\x00\x00\x00\x00", -1)
    assert _vlen.first_wrong_type(np.array(["a", "b", 3], dtype=object), True) == 2
    assert _vlen.first_wrong_type(np.array([b"a", np.bytes_(b"b")], dtype=object), False) == -1
    assert _vlen.first_wrong_type(np.array([b"a", bytearray(b"b")], dtype=object), False) == 1


def test_str_subclasses_encode_as_their_text() -> None:
    class S(str):
        pass

    out, bad = _vlen.encode_items(np.array([S("ab")], dtype=object), True)
    assert bad == -1 and bytes(out) == ref_encode(["ab"])


def test_scan_is_thread_safe() -> None:
    items = [f"item-{i}-" + "é" * (i % 7) for i in range(20000)]
    buf = ref_encode(items)
    want = _decode(buf, True)
    results: list = []

    def work() -> None:
        for _ in range(5):
            results.append(_decode(buf, True) == want)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [True] * 20


# -- UTF-8 validation and the StringDType paths ------------------------------------------
def _python_valid(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


@settings(max_examples=500)
@given(st.binary(max_size=12) | st.lists(st.sampled_from([0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2,
                                                          0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]), max_size=8).map(bytes))
def test_utf8_validation_matches_python(b: bytes) -> None:
    assert _vlen.utf8_valid(b) == _python_valid(b)


@given(texts)
def test_utf8_validation_accepts_all_text(t: str) -> None:
    assert _vlen.utf8_valid(t.encode("utf-8"))


def test_utf8_boundaries() -> None:
    for cp in (0, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF):
        assert _vlen.utf8_valid(chr(cp).encode())
    for bad in (b"\xc0\x80", b"\xc1\xbf", b"\xe0\x9f\xbf", b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf0\x8f\xbf\xbf",
                b"\xf4\x90\x80\x80", b"\xf5\x80\x80\x80", b"\x80", b"\xe2\x82", b"\xf0\x9f\x99"):
        assert not _vlen.utf8_valid(bad)


@given(st.lists(texts, max_size=30), st.booleans())
def test_encode_strings_matches_reference(items: list[str], fortran: bool) -> None:
    arr = np.array(items, dtype=STRING)
    out, bad = _vlen.encode_strings(arr)
    assert bad == -1 and bytes(out) == ref_encode(items)
    if len(items) >= 2 and len(items) % 2 == 0:
        two = arr.reshape(2, -1)
        out, bad = _vlen.encode_strings(two)
        assert bytes(out) == ref_encode(two.reshape(-1).tolist())


def test_encode_strings_errors() -> None:
    na = np.dtypes.StringDType(na_object=None)
    assert _vlen.encode_strings(np.array(["a", None, "c"], dtype=na)) == (None, 1)
    with pytest.raises(TypeError):
        _vlen.encode_strings(np.array(["a"], dtype=object))
    with pytest.raises(TypeError):
        _vlen.encode_strings(np.array(["a", "b", "c", "d"], dtype=STRING)[::2])
    out, bad = _vlen.encode_strings(np.empty(0, STRING))
    assert (bytes(out), bad) == (b"\x00\x00\x00\x00", -1)


def test_pack_str_overwrites_existing_strings() -> None:
    """Packing into an array that already holds (heap-allocated) strings replaces them."""
    out = np.array(["long " * 50, "short", "", "x" * 10000], dtype=STRING).reshape(2, 2)
    for items in (["a", "b" * 300, "c", ""], ["é" * 1000, "", "z", "w" * 20]):
        buf = ref_encode(items)
        starts, stops = np.empty(4, np.int64), np.empty(4, np.int64)
        assert _vlen.scan_items(buf, starts, stops) == -1
        assert _vlen.pack_str(buf, starts, stops, out) == -1
        assert out.reshape(-1).tolist() == items


def test_pack_is_thread_safe_on_shared_and_separate_outputs() -> None:
    items = [f"v{i}" + "ü" * (i % 40) for i in range(20000)]
    buf = ref_encode(items)
    starts, stops = np.empty(len(items), np.int64), np.empty(len(items), np.int64)
    assert _vlen.scan_items(buf, starts, stops) == -1
    shared = np.empty(len(items), STRING)
    ok: list[bool] = []

    def work() -> None:
        own = np.empty(len(items), STRING)
        for _ in range(3):
            assert _vlen.pack_str(buf, starts, stops, own) == -1
            assert _vlen.pack_str(buf, starts, stops, shared) == -1
            ok.append(own.tolist() == items)

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert ok == [True] * 12
    assert shared.tolist() == items


def test_pack_str_leaves_out_untouched_on_invalid_utf8() -> None:
    buf = ref_encode([b"fine", b"also fine", b"\xff"])
    starts, stops = np.empty(3, np.int64), np.empty(3, np.int64)
    assert _vlen.scan_items(buf, starts, stops) == -1
    out = np.array(["keep", "these", "three"], dtype=STRING)
    assert _vlen.pack_str(buf, starts, stops, out) == 2
    assert out.tolist() == ["keep", "these", "three"]
