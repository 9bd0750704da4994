"""zarrcy._kernels._vlen against the slow reference (conftest.ref_encode/ref_decode)."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest
from conftest import blobs, ref_decode, ref_encode, texts
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
    out = np.empty(count, object)
    bad = (_vlen.build_str if utf8 else _vlen.build_bytes)(buf, starts, stops, out)
    if bad >= 0:
        return f"utf8:{bad}"
    return list(out)


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
    assert _vlen.build_str(b"", e, e, np.empty(0, object)) == -1
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
