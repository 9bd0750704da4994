"""UTF-32 code-unit validation for fixed-length string chunks (zarr-python's
``fixed_length_utf32`` data type, numpy ``U<n>``).

Every stored code unit must be a Unicode scalar value: at most ``0x10FFFF`` and not a
surrogate (``0xD800..0xDFFF``).  :func:`first_invalid_code_unit` scans native-order
``uint32`` code units without the GIL and returns ``-1`` or the index of the first
invalid one; the Python layer raises with the chunk key.  Knows nothing of zarrcy.
"""

from libc.stdint cimport uint32_t

# code units checked per block without an early exit (the inner loop has no branch,
# so the compiler can vectorise it); a block with a hit is rescanned to locate it
cdef enum:
    BLOCK = 4096


cdef inline bint _invalid(uint32_t v) noexcept nogil:
    # unsigned wrap-around: (v - 0xD800) < 0x800 exactly for the surrogates
    return (v > 0x10FFFF) | ((v - <uint32_t>0xD800) < <uint32_t>0x800)


cdef Py_ssize_t _first_invalid(const uint32_t* units, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t start = 0, stop, j
    cdef uint32_t any_bad
    while start < n:
        stop = start + BLOCK if n - start > BLOCK else n
        any_bad = 0
        for j in range(start, stop):
            any_bad |= _invalid(units[j])
        if any_bad:
            for j in range(start, stop):
                if _invalid(units[j]):
                    return j
        start = stop
    return -1


def first_invalid_code_unit(const uint32_t[::1] units) -> int:
    """``-1`` when every code unit is a Unicode scalar value, else the first bad index."""
    cdef Py_ssize_t n = units.shape[0]
    cdef Py_ssize_t r
    if n == 0:
        return -1
    with nogil:
        r = _first_invalid(&units[0], n)
    return r
