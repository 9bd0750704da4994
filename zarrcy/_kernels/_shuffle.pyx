"""HDF5's byte shuffle filter undone (H5Zshuffle.c), without the GIL, into a caller buffer.

A shuffled buffer of ``n`` elements of ``size`` bytes holds byte 0 of every element,
then byte 1 of every element, ...; bytes after the last whole element (``len % size``)
are stored as they are.  :func:`unshuffle_into` writes the elements back in order.
The loop runs in blocks of elements so that both the ``size`` source runs and the
destination block stay in L1 cache.  Knows nothing of zarrcy: the caller checks sizes.
"""

from libc.stdint cimport uint8_t
from libc.string cimport memcpy

cdef enum:
    BLOCK = 2048


cdef void _unshuffle(const uint8_t* src, uint8_t* dst, Py_ssize_t nbytes, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t n = nbytes // size
    cdef Py_ssize_t start, stop, i, b
    cdef const uint8_t* s
    cdef uint8_t* d
    start = 0
    while start < n:
        stop = start + BLOCK if n - start > BLOCK else n
        for b in range(size):
            s = src + b * n
            d = dst + b
            for i in range(start, stop):
                d[i * size] = s[i]
        start = stop
    if nbytes > n * size:
        memcpy(dst + n * size, src + n * size, nbytes - n * size)


cdef void _unshuffle4(const uint8_t* src, uint8_t* dst, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    cdef const uint8_t* s0 = src
    cdef const uint8_t* s1 = src + n
    cdef const uint8_t* s2 = src + 2 * n
    cdef const uint8_t* s3 = src + 3 * n
    for i in range(n):
        dst[4 * i] = s0[i]
        dst[4 * i + 1] = s1[i]
        dst[4 * i + 2] = s2[i]
        dst[4 * i + 3] = s3[i]


def unshuffle_into(const uint8_t[::1] src, uint8_t[::1] dst, Py_ssize_t size) -> int:
    """Unshuffle ``src`` (elements of ``size`` bytes) into ``dst``; returns the bytes
    written, or ``-1`` when the lengths differ or ``size < 1``."""
    cdef Py_ssize_t nbytes = src.shape[0]
    if dst.shape[0] != nbytes or size < 1:
        return -1
    if nbytes == 0:
        return 0
    with nogil:
        if size == 1:
            memcpy(&dst[0], &src[0], nbytes)
        elif size == 4 and nbytes % 4 == 0:
            _unshuffle4(&src[0], &dst[0], nbytes // 4)
        else:
            _unshuffle(&src[0], &dst[0], nbytes, size)
    return nbytes
