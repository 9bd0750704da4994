"""Slow exact references of the bitround / packbits bit rules on Python integers
(tests/kernels/test_bits_kernel.py, tests/codecs/test_bitround_codec.py)."""

from __future__ import annotations


def ref_round_mantissa(b: int, width: int, maskbits: int) -> int:
    """numcodecs.BitRound on one bit pattern (numpy's wrapping integer arithmetic)."""
    if maskbits == 0:
        return b
    full = (1 << width) - 1
    mask = (full >> maskbits) << maskbits
    half = (1 << (maskbits - 1)) - 1
    return ((b + ((b >> maskbits) & 1) + half) & full) & mask


def ref_round_integer(b: int, width: int, keepbits: int) -> int:
    """zarrs' integer bitround: keep ``keepbits`` bits from the top set bit, round half
    to even, saturating addition."""
    m = b.bit_length() - keepbits
    if m <= 0:
        return b
    full = (1 << width) - 1
    s = min(b + ((b >> m) & 1) + (1 << (m - 1)) - 1, full)
    return s & ((full >> m) << m)


def ref_pack(words: list[int], first: int, nbits: int) -> bytes:
    bits = [(w >> (first + j)) & 1 for w in words for j in range(nbits)]
    bits += [0] * (-len(bits) % 8)
    return bytes(sum(bits[i + j] << j for j in range(8)) for i in range(0, len(bits), 8))


def ref_unpack(data: bytes, n: int, width: int, first: int, nbits: int, signed: bool) -> list[int]:
    bits = [(data[i // 8] >> (i % 8)) & 1 for i in range(8 * len(data))]
    out = []
    for k in range(n):
        v = sum(bits[k * nbits + j] << j for j in range(nbits))
        if signed and v >> (nbits - 1):
            v -= 1 << nbits  # negative: sign-extend
        out.append((v << first) & ((1 << width) - 1))
    return out
