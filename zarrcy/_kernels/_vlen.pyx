"""Length-prefixed item lists: the chunk format of the ``vlen-utf8`` / ``vlen-bytes``
codecs (zarr-extensions ``codecs/vlen-utf8``, ``codecs/vlen-bytes``).

Layout (all integers u32 little-endian)::

    count | len_0 | bytes_0 | len_1 | bytes_1 | ... | len_{count-1} | bytes_{count-1}

This module knows nothing of zarrcy.  :func:`scan_items` walks the headers without
the GIL and records where each item's bytes are; only after it succeeded are the items
touched: :func:`pack_str` validates UTF-8 and stores strings straight into a numpy
``StringDType`` array through numpy's NpyString C API (no Python objects, no GIL);
:func:`build_bytes` creates ``bytes`` objects (needs the GIL).  Encoding reads
``StringDType`` arrays the same way (:func:`encode_strings`) and object arrays of
``str``/``bytes`` through the CPython API (:func:`encode_items`).  Functions return
``-1`` on success or the index of the first bad item; the Python layer raises with the
chunk key.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.object cimport PyObject
from libc.stdint cimport int64_t, uint32_t, uint8_t
from libc.string cimport memcpy

from zarrcy._kernels._endian cimport load_le32 as _load_le32, store_le32 as _store_le32

import numpy as np

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object u, Py_ssize_t* size) except NULL
    bint PyUnicode_CheckExact(object o)
    bint PyBytes_CheckExact(object o)
    char* PyBytes_AS_STRING(object o)
    Py_ssize_t PyBytes_GET_SIZE(object o)

# numpy's StringDType C API (NpyString_*, numpy >= 2.0; zarrcy requires numpy >= 2).
# Only this block includes numpy's headers, so the API table is private to this module.
cdef extern from "zc_vlen.h":
    int zv_import_numpy() except -1
    bint zv_utf8_valid(const unsigned char* s, Py_ssize_t n) noexcept nogil
    bint zv_is_string_array(object o)
    char* zv_data(object o)
    Py_ssize_t zv_size(object o)
    Py_ssize_t zv_itemsize(object o)
    Py_ssize_t zv_pack(PyObject* arr, char* dst, Py_ssize_t stride, const char* base,
                       const int64_t* starts, const int64_t* stops, Py_ssize_t n) noexcept nogil
    Py_ssize_t zv_sizes(PyObject* arr, const char* src, Py_ssize_t stride, int64_t* sizes, Py_ssize_t n) noexcept nogil
    Py_ssize_t zv_write(PyObject* arr, const char* src, Py_ssize_t stride, const int64_t* sizes,
                        Py_ssize_t n, unsigned char* out) noexcept nogil

zv_import_numpy()

#: largest item length / item count the u32 fields can hold
MAX_U32 = 0xFFFFFFFF


def read_count(const uint8_t[::1] buf) -> int:
    """The leading u32 item count, or ``-1`` when the buffer is shorter than 4 bytes."""
    if buf.shape[0] < 4:
        return -1
    return _load_le32(&buf[0])


cdef Py_ssize_t _scan(const uint8_t* p, Py_ssize_t size, Py_ssize_t n,
                      int64_t* starts, int64_t* stops) noexcept nogil:
    cdef Py_ssize_t pos = 4, i
    cdef Py_ssize_t length
    for i in range(n):
        if size - pos < 4:
            return i
        length = _load_le32(p + pos)
        pos += 4
        if length > size - pos:
            return i
        starts[i] = pos
        pos += length
        stops[i] = pos
    return -1


def scan_items(const uint8_t[::1] buf, int64_t[::1] starts, int64_t[::1] stops) -> int:
    """Record ``[starts[i], stops[i])``, the bytes of item ``i``, for ``len(starts)`` items
    following the 4-byte count.  Returns ``-1``, or the index of the first item whose
    length field or bytes run past the end of ``buf``.  ``len(stops) == len(starts)``."""
    cdef Py_ssize_t n = starts.shape[0]
    if stops.shape[0] != n:
        raise ValueError("scan_items: starts and stops differ in length")
    if buf.shape[0] < 4:
        return 0 if n else -1
    if n == 0:
        return -1
    cdef Py_ssize_t r
    with nogil:
        r = _scan(&buf[0], buf.shape[0], n, &starts[0], &stops[0])
    return r


def build_bytes(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] stops, object[::1] out) -> int:
    """``out[i] = bytes(buf[starts[i]:stops[i]])``; returns ``-1``."""
    cdef Py_ssize_t n = starts.shape[0], i
    if stops.shape[0] != n or out.shape[0] != n:
        raise ValueError("build_bytes: starts, stops and out differ in length")
    if n == 0:
        return -1
    cdef const char* base = <const char*>&buf[0]
    for i in range(n):
        out[i] = PyBytes_FromStringAndSize(base + starts[i], stops[i] - starts[i])
    return -1


def encode_items(object[::1] items, bint utf8):
    """The encoded list of ``items`` (``str`` when ``utf8`` else ``bytes``, exact types
    or subclasses).  Returns ``(bytearray, -1)``, or ``(None, i)`` where item ``i`` has
    the wrong type or is longer than ``MAX_U32`` bytes (also ``(None, len(items))``
    when there are more than ``MAX_U32`` items)."""
    cdef Py_ssize_t n = items.shape[0], i
    cdef Py_ssize_t length, total = 4
    if n > <Py_ssize_t>0xFFFFFFFF:
        return None, n
    lens_arr = np.empty(n, dtype=np.intp)
    cdef Py_ssize_t[::1] lens = lens_arr
    # pointers stay valid while `items` holds the objects (utf-8 of a str is cached in it)
    ptrs_arr = np.empty(n, dtype=np.uintp)
    cdef size_t[::1] pv = ptrs_arr
    cdef const char* ptr
    for i in range(n):
        o = items[i]
        if utf8:
            if not isinstance(o, str):
                return None, i
            ptr = PyUnicode_AsUTF8AndSize(o, &length)
        else:
            if PyBytes_CheckExact(o) or isinstance(o, bytes):
                ptr = PyBytes_AS_STRING(o)
                length = PyBytes_GET_SIZE(o)
            else:
                return None, i
        if length > <Py_ssize_t>0xFFFFFFFF:
            return None, i
        lens[i] = length
        pv[i] = <size_t>ptr
        total += 4 + length
    out = bytearray(total)
    cdef uint8_t[::1] dst = out
    cdef Py_ssize_t pos = 4
    with nogil:
        _store_le32(&dst[0], <uint32_t>n)
        for i in range(n):
            _store_le32(&dst[pos], <uint32_t>lens[i])
            pos += 4
            if lens[i]:
                memcpy(&dst[pos], <const char*>pv[i], lens[i])
            pos += lens[i]
    return out, -1


def first_wrong_type(object[::1] items, bint utf8) -> int:
    """Index of the first item that is not a ``str`` (``utf8``) / ``bytes``, or ``-1``.
    (Cython has no read-only object memoryviews: pass a writable array.)"""
    cdef Py_ssize_t n = items.shape[0], i
    if utf8:
        for i in range(n):
            if not isinstance(items[i], str):
                return i
    else:
        for i in range(n):
            if not isinstance(items[i], bytes):
                return i
    return -1


def utf8_valid(const uint8_t[::1] buf) -> bool:
    """True when ``buf`` is well-formed UTF-8 (what Python's strict decoder accepts)."""
    if buf.shape[0] == 0:
        return True
    cdef bint ok
    with nogil:
        ok = zv_utf8_valid(&buf[0], buf.shape[0])
    return ok


def pack_str(const uint8_t[::1] buf, const int64_t[::1] starts, const int64_t[::1] stops, out) -> int:
    """Validate item ``i`` as UTF-8 and store it into element ``i`` of ``out`` (a
    C-contiguous, writable numpy ``StringDType`` array of ``len(starts)`` elements, any
    shape), without creating Python objects and without the GIL.  Returns ``-1``, or
    the index of the first item that is not valid UTF-8 (``out`` is then untouched).
    Offsets must come from a successful :func:`scan_items` over the same ``buf``."""
    cdef Py_ssize_t n = starts.shape[0]
    if stops.shape[0] != n:
        raise ValueError("pack_str: starts and stops differ in length")
    if not zv_is_string_array(out) or not out.flags.writeable:
        raise TypeError("pack_str: out must be a writable C-contiguous StringDType array")
    if zv_size(out) != n:
        raise ValueError(f"pack_str: out has {zv_size(out)} elements, expected {n}")
    if n == 0:
        return -1
    cdef const char* base = <const char*>&buf[0]
    cdef char* dst = zv_data(out)
    cdef Py_ssize_t stride = zv_itemsize(out), r
    cdef PyObject* arr = <PyObject*>out
    with nogil:
        r = zv_pack(arr, dst, stride, base, &starts[0], &stops[0], n)
    if r == -2:
        raise MemoryError("pack_str: StringDType allocation failed")
    return r


def encode_strings(arr):
    """The encoded list of the elements of ``arr`` (a C-contiguous numpy ``StringDType``
    array, any shape, C order), read through numpy's string API without the GIL.
    Returns ``(bytearray, -1)``, or ``(None, i)`` where element ``i`` is missing (NA)
    or longer than ``MAX_U32`` bytes (``(None, n)`` for more than ``MAX_U32`` elements)."""
    if not zv_is_string_array(arr):
        raise TypeError("encode_strings: expected a C-contiguous StringDType array")
    cdef Py_ssize_t n = zv_size(arr), r, i
    if n > <Py_ssize_t>0xFFFFFFFF:
        return None, n
    sizes_arr = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] sizes = sizes_arr
    cdef const char* src = zv_data(arr)
    cdef Py_ssize_t stride = zv_itemsize(arr)
    cdef PyObject* a = <PyObject*>arr
    cdef int64_t total = 4
    r = -1
    if n:
        with nogil:
            r = zv_sizes(a, src, stride, &sizes[0], n)
            if r < 0:
                for i in range(n):
                    total += 4 + sizes[i]
    if r >= 0:
        return None, r
    out = bytearray(total)
    cdef unsigned char[::1] dst = out
    _store_le32(&dst[0], <uint32_t>n)
    if n:
        with nogil:
            r = zv_write(a, src, stride, &sizes[0], n, &dst[0])
        if r >= 0:
            raise RuntimeError(f"encode_strings: element {r} changed while the array was being encoded")
    return out, -1
