"""zarrcy._kernels._bits (bitround / packbits kernels) against slow pure-Python
references on Python integers: every word width, read-only inputs, in place, empty,
bad arguments, and several threads at once (the loops run without the GIL)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bits_helpers import ref_pack, ref_round_integer, ref_round_mantissa, ref_unpack

from zarrcy._kernels import _bits

WIDTHS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _words(width: int, values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.uint64).astype(WIDTHS[width])


# -- round_mantissa_into ----------------------------------------------------------------------
@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.data())
@example(4, None)  # the all-ones pattern: the addition wraps
def test_round_mantissa(width, data):
    bits = 8 * width
    if data is None:
        values, maskbits = [(1 << bits) - 1, 0x7FFFFFFF & ((1 << bits) - 1), 0], bits - 1
    else:
        values = data.draw(st.lists(st.integers(0, (1 << bits) - 1), max_size=40))
        maskbits = data.draw(st.integers(0, bits - 1))
    src = _words(width, values)
    dst = np.zeros_like(src)
    assert _bits.round_mantissa_into(src, dst, maskbits) == len(values)
    assert dst.astype(np.uint64).tolist() == [ref_round_mantissa(v, bits, maskbits) for v in values]
    # read-only input, and in place
    src.flags.writeable = False
    again = np.zeros_like(src)
    _bits.round_mantissa_into(src, again, maskbits)
    assert np.array_equal(again, dst)
    inplace = src.copy()
    _bits.round_mantissa_into(inplace, inplace, maskbits)
    assert np.array_equal(inplace, dst)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.data())
def test_round_integer(width, data):
    bits = 8 * width
    values = data.draw(st.lists(st.integers(0, (1 << bits) - 1), max_size=40))
    keepbits = data.draw(st.integers(1, bits))
    src = _words(width, values)
    dst = np.zeros_like(src)
    assert _bits.round_integer_into(src, dst, keepbits) == len(values)
    assert dst.astype(np.uint64).tolist() == [ref_round_integer(v, bits, keepbits) for v in values]


def test_round_integer_zarrs_vectors():
    # zarrs' own test vectors (codec_bitround_uint, codec_bitround_uint8; keepbits 3)
    src = np.array([0, 1024, 1280, 1664, 1685, 123145182, 4294967295], np.uint32)
    dst = np.zeros_like(src)
    _bits.round_integer_into(src, dst, 3)
    assert dst.tolist() == [0, 1024, 1280, 1536, 1792, 117440512, 3758096384]
    src8 = np.array([0, 3, 7, 15, 17, 54, 89, 128, 255], np.uint8)
    dst8 = np.zeros_like(src8)
    _bits.round_integer_into(src8, dst8, 3)
    assert dst8.tolist() == [0, 3, 7, 16, 16, 56, 96, 128, 224]


def test_round_bad_arguments():
    a = np.zeros(4, np.uint32)
    assert _bits.round_mantissa_into(a, np.zeros(3, np.uint32), 1) == -1
    assert _bits.round_mantissa_into(a, a, 32) == -1
    assert _bits.round_mantissa_into(a, a, -1) == -1
    assert _bits.round_integer_into(a, a, 0) == -1
    assert _bits.round_integer_into(a, a, 33) == -1
    with pytest.raises(ValueError, match="Buffer dtype mismatch"):
        _bits.round_mantissa_into(a, np.zeros(4, np.uint16), 1)  # one word type for both
    e = np.zeros(0, np.uint16)
    assert _bits.round_mantissa_into(e, e, 3) == 0


# -- pack_into / unpack_into --------------------------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(st.sampled_from([1, 2, 4, 8]), st.data())
@example(1, None)
def test_pack_unpack(width, data):
    bits = 8 * width
    if data is None:
        values, first, nbits, signed = [1, 0, 0, 0, 0, 0, 0, 0, 1], 0, 1, False
    else:
        values = data.draw(st.lists(st.integers(0, (1 << bits) - 1), max_size=30))
        nbits = data.draw(st.integers(1, bits))
        first = data.draw(st.integers(0, bits - nbits))
        signed = data.draw(st.booleans())
    src = _words(width, values)
    src.flags.writeable = False
    dst = np.full((len(values) * nbits + 7) // 8, 0xAA, np.uint8)  # garbage: the kernel zeroes it
    assert _bits.pack_into(src, dst, first, nbits) == dst.shape[0]
    expect = ref_pack(values, first, nbits)
    assert dst.tobytes() == expect
    out = np.full(len(values), 0x55, WIDTHS[width])
    dst.flags.writeable = False
    assert _bits.unpack_into(dst, out, first, nbits, signed) == len(values)
    assert out.astype(np.uint64).tolist() == ref_unpack(expect, len(values), bits, first, nbits, signed)


def test_pack_known_bytes():
    # bool-like 1-bit elements, least significant bit first
    src = np.array([1, 0, 0, 0, 0, 0, 0, 0, 1, 1], np.uint8)
    dst = np.zeros(2, np.uint8)
    _bits.pack_into(src, dst, 0, 1)
    assert dst.tolist() == [0x01, 0x03]
    # 4-bit values: element 0 in the low nibble
    src = np.array([0x1, 0x2, 0xF], np.uint8)
    dst = np.zeros(2, np.uint8)
    _bits.pack_into(src, dst, 0, 4)
    assert dst.tolist() == [0x21, 0x0F]
    # int4 -3 (stored 0xFD) comes back sign-extended through the whole byte
    out = np.zeros(3, np.uint8)
    _bits.unpack_into(np.array([0xD3, 0x07], np.uint8), out, 0, 4, True)
    assert out.tolist() == [0x03, 0xFD, 0x07]


def test_pack_bad_arguments():
    a = np.zeros(4, np.uint16)
    assert _bits.pack_into(a, np.zeros(1, np.uint8), 0, 3) == -1  # 12 bits need 2 bytes
    assert _bits.pack_into(a, np.zeros(2, np.uint8), 0, 4) == 2
    assert _bits.pack_into(a, np.zeros(2, np.uint8), 0, 0) == -1
    assert _bits.pack_into(a, np.zeros(2, np.uint8), 13, 4) == -1
    assert _bits.pack_into(a, np.zeros(2, np.uint8), -1, 4) == -1
    assert _bits.unpack_into(np.zeros(1, np.uint8), a, 0, 4, False) == -1
    assert _bits.unpack_into(np.zeros(2, np.uint8), a, 0, 17, False) == -1
    assert _bits.pack_into(np.zeros(0, np.uint8), np.zeros(0, np.uint8), 0, 1) == 0


def test_threads():
    """The loops release the GIL: many threads on separate buffers agree with one."""
    rng = np.random.default_rng(0)
    src = rng.integers(0, 1 << 63, 200_000, dtype=np.uint64)
    packed = np.zeros((src.size * 37 + 7) // 8, np.uint8)
    _bits.pack_into(src, packed, 5, 37)
    want_round = np.zeros_like(src)
    _bits.round_mantissa_into(src, want_round, 29)
    results: list[bool] = []

    def work():
        p = np.zeros_like(packed)
        _bits.pack_into(src, p, 5, 37)
        r = np.zeros_like(src)
        _bits.round_mantissa_into(src, r, 29)
        u = np.zeros_like(src)
        _bits.unpack_into(p, u, 5, 37, False)
        results.append(np.array_equal(p, packed) and np.array_equal(r, want_round)
                       and np.array_equal(u, src & (((1 << 37) - 1) << 5)))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert results == [True] * 4


@pytest.mark.parametrize("width", [1, 2, 4, 8])
@pytest.mark.parametrize("nbits", [1, 2, 3, 4, 7, 8, 12, 56, 57, 64])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 23])
@pytest.mark.parametrize("signed", [False, True])
def test_pack_unpack_every_loop(width, nbits, n, signed):
    """Each specialised loop (1-bit bytes via a multiply / a table, 1/2/4-bit bytes, the
    64-bit accumulator, the byte-wise general loop) with full groups and tails."""
    bits = 8 * width
    if nbits > bits:
        return
    rng = np.random.default_rng(n * 131 + nbits)
    values = [int(v) % (1 << bits) for v in rng.integers(0, 1 << 64, n, dtype=np.uint64)]
    for first in sorted({0, 1, bits - nbits}):
        if first + nbits > bits:
            continue
        src = _words(width, values)
        dst = np.zeros((n * nbits + 7) // 8, np.uint8)
        assert _bits.pack_into(src, dst, first, nbits) == dst.shape[0]
        assert dst.tobytes() == ref_pack(values, first, nbits)
        out = np.zeros(n, WIDTHS[width])
        assert _bits.unpack_into(dst, out, first, nbits, signed) == n
        assert out.astype(np.uint64).tolist() == ref_unpack(dst.tobytes(), n, bits, first, nbits, signed)
