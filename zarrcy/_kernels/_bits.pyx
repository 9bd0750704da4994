"""Bit-level kernels of the ``bitround`` and ``packbits`` codecs, without the GIL.

Elements (or complex components) are passed as unsigned integers of their storage
width (``uint_t``): bit patterns, never values, so every kernel is exact and the same
on every byte order.  Knows nothing of zarrcy: callers check sizes and configurations;
the kernels return ``-1`` on inconsistent lengths or parameters and write nothing then.

* :func:`round_mantissa_into`: numcodecs' ``BitRound`` (round half to even on the bit
  pattern, ``maskbits`` low bits cleared; the addition wraps as numpy's does);
* :func:`round_integer_into`: the ``bitround`` codec on integers (zarrs' rule: keep
  ``keepbits`` bits from the most significant set bit, round half to even, the addition
  saturating at the type's maximum);
* :func:`pack_into` / :func:`unpack_into`: the ``packbits`` bit stream (bits
  ``first_bit..first_bit+b-1`` of each component, component ``i`` at stream bits
  ``[i*b, (i+1)*b)``, stream bit ``j`` in bit ``j % 8`` (least significant first) of
  byte ``j // 8``), unpacking with sign extension from the last kept bit on request.
"""

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

ctypedef fused uint_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


def round_mantissa_into(const uint_t[::1] src, uint_t[::1] dst, int maskbits) -> int:
    """``dst[i] = src[i]`` rounded to clear its ``maskbits`` low bits (half to even);
    ``src`` and ``dst`` may be the same memory.  Returns the count, ``-1`` on bad input."""
    cdef Py_ssize_t n = src.shape[0]
    cdef Py_ssize_t i
    cdef uint_t b, mask, half
    cdef int width = 8 * sizeof(uint_t)
    if dst.shape[0] != n or maskbits < 0 or maskbits >= width:
        return -1
    with nogil:
        if maskbits == 0:
            for i in range(n):
                dst[i] = src[i]
        else:
            mask = <uint_t>(~(<uint_t>0)) << maskbits
            half = <uint_t>((<uint_t>1 << (maskbits - 1)) - 1)
            for i in range(n):
                b = src[i]
                b = <uint_t>(b + ((b >> maskbits) & 1) + half)
                dst[i] = b & mask
    return n


cdef inline int _bit_length(uint64_t x) noexcept nogil:
    cdef int n = 0
    if x >> 32:
        x >>= 32
        n += 32
    if x >> 16:
        x >>= 16
        n += 16
    if x >> 8:
        x >>= 8
        n += 8
    if x >> 4:
        x >>= 4
        n += 4
    if x >> 2:
        x >>= 2
        n += 2
    if x >> 1:
        x >>= 1
        n += 1
    return n + <int>x


def round_integer_into(const uint_t[::1] src, uint_t[::1] dst, int keepbits) -> int:
    """``dst[i]``: ``src[i]`` keeping ``keepbits`` bits from its most significant set bit
    (round half to even, saturating); ``src`` and ``dst`` may be the same memory.
    Returns the count, ``-1`` on bad input (``keepbits`` outside ``1..width``)."""
    cdef Py_ssize_t n = src.shape[0]
    cdef Py_ssize_t i
    cdef uint_t b, s, inc
    cdef int width = 8 * sizeof(uint_t)
    cdef int m
    if dst.shape[0] != n or keepbits < 1 or keepbits > width:
        return -1
    with nogil:
        for i in range(n):
            b = src[i]
            m = _bit_length(b) - keepbits
            if m > 0:  # m < width: keepbits >= 1
                inc = <uint_t>(((b >> m) & 1) + ((<uint_t>1 << (m - 1)) - 1))
                s = <uint_t>(b + inc)
                if s < b:  # saturate
                    s = <uint_t>(~(<uint_t>0))
                b = s & <uint_t>(<uint_t>(~(<uint_t>0)) << m)
            dst[i] = b
    return n


cdef void _pack_small(const uint_t* src, uint8_t* dst, Py_ssize_t n, int first_bit, int nbits) noexcept nogil:
    """``nbits`` in 1, 2, 4: whole bytes of ``8 // nbits`` elements, then the tail."""
    cdef int per = 8 // nbits
    cdef uint64_t mask = (<uint64_t>1 << nbits) - 1
    cdef Py_ssize_t nfull = n // per
    cdef Py_ssize_t j, i
    cdef int t
    cdef uint64_t byte
    cdef const uint_t* s
    for j in range(nfull):
        s = src + j * per
        byte = 0
        for t in range(per):
            byte |= ((<uint64_t>s[t] >> first_bit) & mask) << (t * nbits)
        dst[j] = <uint8_t>byte
    if nfull * per < n:
        byte = 0
        t = 0
        for i in range(nfull * per, n):
            byte |= ((<uint64_t>src[i] >> first_bit) & mask) << (t * nbits)
            t += 1
        dst[nfull] = <uint8_t>byte


cdef void _pack_acc(const uint_t* src, uint8_t* dst, Py_ssize_t n, int first_bit, int nbits) noexcept nogil:
    """``nbits <= 56``: a 64-bit accumulator, whole bytes flushed as they fill."""
    cdef uint64_t mask = (~(<uint64_t>0)) >> (64 - nbits)
    cdef uint64_t acc = 0
    cdef int have = 0
    cdef Py_ssize_t i, o = 0
    for i in range(n):
        acc |= ((<uint64_t>src[i] >> first_bit) & mask) << have
        have += nbits
        while have >= 8:
            dst[o] = <uint8_t>acc
            o += 1
            acc >>= 8
            have -= 8
    if have:
        dst[o] = <uint8_t>acc


def pack_into(const uint_t[::1] src, uint8_t[::1] dst, int first_bit, int nbits) -> int:
    """Append bits ``first_bit .. first_bit + nbits - 1`` of every ``src[i]`` to the bit
    stream ``dst`` (padding bits 0).  ``dst`` must be exactly ``ceil(len(src) * nbits / 8)``
    bytes.  Returns that length, ``-1`` on bad input."""
    cdef Py_ssize_t n = src.shape[0]
    cdef Py_ssize_t nbytes = dst.shape[0]
    cdef int width = 8 * sizeof(uint_t)
    cdef Py_ssize_t i, pos, byte
    cdef int sh, written
    cdef uint64_t v, mask
    if nbits < 1 or first_bit < 0 or first_bit + nbits > width:
        return -1
    if n > (<Py_ssize_t>0x7FFFFFFFFFFFFFFF - 7) // nbits or nbytes != (n * nbits + 7) // 8:
        return -1
    if n == 0:
        return 0
    with nogil:
        if nbits == 8 and first_bit == 0 and width == 8:
            for i in range(n):
                dst[i] = <uint8_t>src[i]
        elif nbits == 1 and width == 8:
            _pack_bits1_u8(<const uint8_t*>&src[0], &dst[0], n, first_bit)
        elif nbits == 1 or nbits == 2 or nbits == 4:
            _pack_small(&src[0], &dst[0], n, first_bit, nbits)
        elif nbits <= 56:
            _pack_acc(&src[0], &dst[0], n, first_bit, nbits)
        else:
            memset(&dst[0], 0, nbytes)
            mask = (~(<uint64_t>0)) >> (64 - nbits)
            pos = 0
            for i in range(n):
                v = (<uint64_t>src[i] >> first_bit) & mask
                byte = pos >> 3
                sh = <int>(pos & 7)
                dst[byte] |= <uint8_t>(v << sh)
                written = 8 - sh
                while written < nbits:
                    byte += 1
                    dst[byte] |= <uint8_t>(v >> written)
                    written += 8
                pos += nbits
    return nbytes


cdef inline void _unpack_small(const uint8_t* src, uint_t* dst, Py_ssize_t n, int first_bit, int nbits,
                               uint64_t ext) noexcept nogil:
    """``nbits`` in 1, 2, 4 (inlined per constant): ``8 // nbits`` elements per byte."""
    cdef int per = 8 // nbits
    cdef uint64_t mask = (<uint64_t>1 << nbits) - 1
    cdef uint64_t top = (<uint64_t>1) << (nbits - 1)
    cdef Py_ssize_t nfull = n // per
    cdef Py_ssize_t j, i
    cdef int t
    cdef uint64_t b, v
    for j in range(nfull):
        b = src[j]
        for t in range(per):
            v = (b >> (t * nbits)) & mask
            if v & top:
                v |= ext
            dst[j * per + t] = <uint_t>(v << first_bit)
    if nfull * per < n:
        b = src[nfull]
        for i in range(nfull * per, n):
            v = (b >> ((i - nfull * per) * nbits)) & mask
            if v & top:
                v |= ext
            dst[i] = <uint_t>(v << first_bit)


cdef uint64_t _SPREAD[256]  # byte b -> 8 bytes, byte t = bit t of b (least significant first)


cdef void _init_spread() noexcept:
    cdef int b, t
    cdef uint64_t w
    cdef uint8_t* p
    for b in range(256):
        w = 0
        p = <uint8_t*>&w
        for t in range(8):
            p[t] = (b >> t) & 1  # memory order: endian-independent
        _SPREAD[b] = w


_init_spread()


cdef void _unpack_bits1_u8(const uint8_t* src, uint8_t* dst, Py_ssize_t n, int first_bit) noexcept nogil:
    """1-bit elements into bytes (bool, or bit ``first_bit`` of uint8), 8 per table load."""
    cdef Py_ssize_t nfull = n // 8
    cdef Py_ssize_t j, i
    cdef uint64_t w
    for j in range(nfull):
        w = _SPREAD[src[j]] << first_bit  # each byte is 0/1: the shift stays inside it
        memcpy(dst + 8 * j, &w, 8)
    for i in range(8 * nfull, n):
        dst[i] = <uint8_t>(((src[nfull] >> (i - 8 * nfull)) & 1) << first_bit)


cdef void _pack_bits1_u8(const uint8_t* src, uint8_t* dst, Py_ssize_t n, int first_bit) noexcept nogil:
    """Bit ``first_bit`` of 8 bytes at a time into one byte (a multiply gathers the 8 bits:
    bit 8k of the masked word lands alone at bit 56 + k)."""
    cdef Py_ssize_t nfull = n // 8
    cdef Py_ssize_t j, i
    cdef uint64_t x
    cdef const uint8_t* s
    cdef uint8_t byte
    for j in range(nfull):
        s = src + 8 * j
        x = (<uint64_t>s[0] | (<uint64_t>s[1] << 8) | (<uint64_t>s[2] << 16) | (<uint64_t>s[3] << 24)
             | (<uint64_t>s[4] << 32) | (<uint64_t>s[5] << 40) | (<uint64_t>s[6] << 48) | (<uint64_t>s[7] << 56))
        x = (x >> first_bit) & <uint64_t>0x0101010101010101
        dst[j] = <uint8_t>((x * <uint64_t>0x0102040810204080) >> 56)
    if 8 * nfull < n:
        byte = 0
        for i in range(8 * nfull, n):
            byte |= ((src[i] >> first_bit) & 1) << (i - 8 * nfull)
        dst[nfull] = byte


cdef void _unpack_acc(const uint8_t* src, uint_t* dst, Py_ssize_t n, int first_bit, int nbits,
                      uint64_t ext) noexcept nogil:
    """``nbits <= 56``: a 64-bit accumulator refilled a byte at a time."""
    cdef uint64_t mask = (~(<uint64_t>0)) >> (64 - nbits)
    cdef uint64_t top = (<uint64_t>1) << (nbits - 1)
    cdef uint64_t acc = 0
    cdef uint64_t v
    cdef int have = 0
    cdef Py_ssize_t i, o = 0
    for i in range(n):
        while have < nbits:
            acc |= (<uint64_t>src[o]) << have
            o += 1
            have += 8
        v = acc & mask
        acc >>= nbits
        have -= nbits
        if v & top:
            v |= ext
        dst[i] = <uint_t>(v << first_bit)


def unpack_into(const uint8_t[::1] src, uint_t[::1] dst, int first_bit, int nbits, bint sign_extend) -> int:
    """The inverse of :func:`pack_into`: ``dst[i]`` gets stream bits ``[i*nbits,
    (i+1)*nbits)`` at ``first_bit``, the bits above sign-extended from the last one when
    ``sign_extend``, else zero.  ``src`` must be exactly ``ceil(len(dst) * nbits / 8)``
    bytes.  Returns ``len(dst)``, ``-1`` on bad input."""
    cdef Py_ssize_t n = dst.shape[0]
    cdef Py_ssize_t nbytes = src.shape[0]
    cdef int width = 8 * sizeof(uint_t)
    cdef Py_ssize_t i, pos, byte
    cdef int sh, got
    cdef uint64_t v, mask, top, ext
    if nbits < 1 or first_bit < 0 or first_bit + nbits > width:
        return -1
    if n > (<Py_ssize_t>0x7FFFFFFFFFFFFFFF - 7) // nbits or nbytes != (n * nbits + 7) // 8:
        return -1
    if n == 0:
        return 0
    mask = (~(<uint64_t>0)) >> (64 - nbits)
    top = (<uint64_t>1) << (nbits - 1)
    ext = ~mask if sign_extend else 0  # the bits above the kept ones, before the shift
    with nogil:
        if nbits == 8 and first_bit == 0 and width == 8:
            for i in range(n):
                dst[i] = <uint_t>src[i]
        elif nbits == 1 and width == 8 and not sign_extend:
            _unpack_bits1_u8(&src[0], <uint8_t*>&dst[0], n, first_bit)
        elif nbits == 1:
            _unpack_small(&src[0], &dst[0], n, first_bit, 1, ext)
        elif nbits == 2:
            _unpack_small(&src[0], &dst[0], n, first_bit, 2, ext)
        elif nbits == 4:
            _unpack_small(&src[0], &dst[0], n, first_bit, 4, ext)
        elif nbits <= 56:
            _unpack_acc(&src[0], &dst[0], n, first_bit, nbits, ext)
        else:
            pos = 0
            for i in range(n):
                byte = pos >> 3
                sh = <int>(pos & 7)
                v = <uint64_t>src[byte] >> sh
                got = 8 - sh
                while got < nbits:
                    byte += 1
                    v |= (<uint64_t>src[byte]) << got
                    got += 8
                v &= mask
                if v & top:
                    v |= ext
                dst[i] = <uint_t>(v << first_bit)
                pos += nbits
    return n
