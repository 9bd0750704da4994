"""HDF5's Fletcher-32 checksum (filter 3, ``H5checksum.c`` ``H5_checksum_fletcher32``)
without the GIL.

The data are read as 16-bit big-endian words (an odd last byte counts as the word
``byte << 8``).  ``sum1`` is the sum of the words and ``sum2`` the sum of the running
``sum1`` after each word -- i.e. word ``j`` of ``count`` weighted by ``count - j`` -- both
modulo 65535.  The sums are kept in 64-bit accumulators and reduced every ``BLOCK`` words
(``sum1 < 2**36`` and ``sum2 < 2**57`` between reductions: no overflow), so the loop is
two additions per word.  Knows nothing of zarrcy: the caller compares the sums with the
stored checksum.
"""

from libc.stdint cimport uint8_t, uint64_t


cdef enum:
    BLOCK = 1 << 20


cdef void _sums(const uint8_t* p, Py_ssize_t n, uint64_t* out1, uint64_t* out2) noexcept nogil:
    cdef uint64_t s1 = 0, s2 = 0
    cdef Py_ssize_t words = n >> 1
    cdef Py_ssize_t i = 0, stop
    while i < words:
        stop = i + BLOCK if words - i > BLOCK else words
        while i < stop:
            s1 += (<uint64_t>p[2 * i] << 8) | p[2 * i + 1]
            s2 += s1
            i += 1
        s1 %= 65535
        s2 %= 65535
    if n & 1:
        s1 += <uint64_t>p[n - 1] << 8
        s2 += s1
    out1[0] = s1 % 65535
    out2[0] = s2 % 65535


def fletcher32(const uint8_t[::1] data not None):
    """``(sum1, sum2)`` of HDF5's Fletcher-32 over ``data``, each in ``[0, 65535)``."""
    cdef uint64_t s1 = 0, s2 = 0
    cdef Py_ssize_t n = data.shape[0]
    if n:
        with nogil:
            _sums(&data[0], n, &s1, &s2)
    return int(s1), int(s2)
