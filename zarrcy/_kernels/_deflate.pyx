"""gzip (RFC 1952) and zlib (RFC 1950) through libdeflate's C API, without the GIL,
into caller buffers.

The ``deflate`` wheel links libdeflate statically and exports its public C entry
points from its extension module.  :func:`load` resolves them at run time from
that already-loaded module (``dlopen(path, RTLD_NOLOAD)`` + ``dlsym``); the
signatures below are libdeflate.h's public API, declared here by hand.
Other kernels reach the same entry points at C level through ``_deflate.pxd``.

libdeflate (de)compressor objects are not thread-safe, so every thread keeps
its own (a ``threading.local`` cache: one decompressor, one compressor per
level); they are freed when the thread ends.

This module knows nothing of zarrcy: callers validate sizes and map result
codes to errors.  Result codes of the ``*_into`` functions:

* ``>= 0``: bytes written (decompress: also see ``consumed``),
* ``BAD_DATA`` (-1), ``SHORT_OUTPUT`` (-2), ``INSUFFICIENT_SPACE`` (-3):
  libdeflate's ``enum libdeflate_result`` values, negated,
* ``UNAVAILABLE`` (-10): the symbols were not found (call :func:`load` first).
"""

from libc.stdint cimport uint8_t
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer

import threading

cdef extern from "zc_dl.h":
    void *zc_dl_open(const char *path) nogil
    void *zc_dl_sym(void *h, const char *name) nogil

# libdeflate.h public API (opaque structs as void*; enum libdeflate_result as int)
ctypedef void *(*alloc_decompressor_t)() noexcept nogil
ctypedef void (*free_decompressor_t)(void *) noexcept nogil
ctypedef int (*gzip_decompress_ex_t)(void *, const void *, size_t, void *, size_t,
                                     size_t *, size_t *) noexcept nogil
ctypedef void *(*alloc_compressor_t)(int) noexcept nogil
ctypedef void (*free_compressor_t)(void *) noexcept nogil
ctypedef size_t (*gzip_compress_t)(void *, const void *, size_t, void *, size_t) noexcept nogil
ctypedef size_t (*gzip_compress_bound_t)(void *, size_t) noexcept nogil
ctypedef size_t (*zlib_compress_t)(void *, const void *, size_t, void *, size_t) noexcept nogil

cdef alloc_decompressor_t p_alloc_decompressor = NULL
cdef free_decompressor_t p_free_decompressor = NULL
cdef gzip_decompress_ex_t p_gzip_decompress_ex = NULL
cdef alloc_compressor_t p_alloc_compressor = NULL
cdef free_compressor_t p_free_compressor = NULL
cdef gzip_compress_t p_gzip_compress = NULL
cdef gzip_compress_bound_t p_gzip_compress_bound = NULL
# zlib streams (HDF5's deflate filter); optional: gzip works without it
cdef gzip_decompress_ex_t p_zlib_decompress_ex = NULL
cdef zlib_compress_t p_zlib_compress = NULL
cdef bint _loaded = False

BAD_DATA = -1
SHORT_OUTPUT = -2
INSUFFICIENT_SPACE = -3
UNAVAILABLE = -10
MAX_LEVEL = 12

_local = threading.local()


cdef void _free_decompressor(object capsule) noexcept:
    cdef void *p = PyCapsule_GetPointer(capsule, b"zarrcy.libdeflate_decompressor")
    if p != NULL and p_free_decompressor != NULL:
        p_free_decompressor(p)


cdef void _free_compressor(object capsule) noexcept:
    cdef void *p = PyCapsule_GetPointer(capsule, b"zarrcy.libdeflate_compressor")
    if p != NULL and p_free_compressor != NULL:
        p_free_compressor(p)


def load(str path):
    """Resolve libdeflate's entry points from the loaded module at ``path``; True on success."""
    global p_alloc_decompressor, p_free_decompressor, p_gzip_decompress_ex
    global p_alloc_compressor, p_free_compressor, p_gzip_compress, p_gzip_compress_bound, _loaded
    global p_zlib_decompress_ex, p_zlib_compress
    if _loaded:
        return True
    cdef bytes bpath = path.encode()
    cdef void *h = zc_dl_open(bpath)
    if h == NULL:
        return False
    cdef void *s1 = zc_dl_sym(h, b"libdeflate_alloc_decompressor")
    cdef void *s2 = zc_dl_sym(h, b"libdeflate_free_decompressor")
    cdef void *s3 = zc_dl_sym(h, b"libdeflate_gzip_decompress_ex")
    cdef void *s4 = zc_dl_sym(h, b"libdeflate_alloc_compressor")
    cdef void *s5 = zc_dl_sym(h, b"libdeflate_free_compressor")
    cdef void *s6 = zc_dl_sym(h, b"libdeflate_gzip_compress")
    cdef void *s7 = zc_dl_sym(h, b"libdeflate_gzip_compress_bound")
    # the handle stays open on purpose: it pins the module, whose code we call
    if s1 == NULL or s2 == NULL or s3 == NULL or s4 == NULL or s5 == NULL or s6 == NULL or s7 == NULL:
        return False
    p_alloc_decompressor = <alloc_decompressor_t>s1
    p_free_decompressor = <free_decompressor_t>s2
    p_gzip_decompress_ex = <gzip_decompress_ex_t>s3
    p_alloc_compressor = <alloc_compressor_t>s4
    p_free_compressor = <free_compressor_t>s5
    p_gzip_compress = <gzip_compress_t>s6
    p_gzip_compress_bound = <gzip_compress_bound_t>s7
    # same signature as libdeflate_gzip_decompress_ex (libdeflate.h)
    p_zlib_decompress_ex = <gzip_decompress_ex_t>zc_dl_sym(h, b"libdeflate_zlib_decompress_ex")
    # same signature as libdeflate_gzip_compress (libdeflate.h); the bound of a zlib
    # stream is the gzip bound minus 12 bytes of header/trailer difference, so the gzip
    # bound is a safe one
    p_zlib_compress = <zlib_compress_t>zc_dl_sym(h, b"libdeflate_zlib_compress")
    _loaded = True
    return True


def available():
    """True once :func:`load` has found every entry point."""
    return _loaded


cdef void *_decompressor() except? NULL:
    cap = getattr(_local, "d", None)
    if cap is None:
        p = p_alloc_decompressor()
        if p == NULL:
            raise MemoryError("libdeflate_alloc_decompressor failed")
        cap = PyCapsule_New(p, b"zarrcy.libdeflate_decompressor", _free_decompressor)
        _local.d = cap
    return PyCapsule_GetPointer(cap, b"zarrcy.libdeflate_decompressor")


cdef void *_compressor(int level) except? NULL:
    cache = getattr(_local, "c", None)
    if cache is None:
        cache = _local.c = {}
    cap = cache.get(level)
    if cap is None:
        p = p_alloc_compressor(level)
        if p == NULL:
            raise MemoryError(f"libdeflate_alloc_compressor({level}) failed")
        cap = PyCapsule_New(p, b"zarrcy.libdeflate_compressor", _free_compressor)
        cache[level] = cap
    return PyCapsule_GetPointer(cap, b"zarrcy.libdeflate_compressor")


cdef void *c_alloc_decompressor() noexcept nogil:
    if not _loaded:
        return NULL
    return p_alloc_decompressor()


cdef void c_free_decompressor(void *d) noexcept nogil:
    if d != NULL and p_free_decompressor != NULL:
        p_free_decompressor(d)


cdef void *c_alloc_compressor(int level) noexcept nogil:
    if not _loaded:
        return NULL
    return p_alloc_compressor(level)


cdef void c_free_compressor(void *c) noexcept nogil:
    if c != NULL and p_free_compressor != NULL:
        p_free_compressor(c)


cdef bint loaded() noexcept nogil:
    return _loaded


cdef bint zlib_loaded() noexcept nogil:
    return _loaded and p_zlib_decompress_ex != NULL and p_zlib_compress != NULL


cdef int c_zlib_decompress_ex(void *d, const void *src, size_t src_n, void *dst, size_t dst_n,
                              size_t *consumed, size_t *written) noexcept nogil:
    return p_zlib_decompress_ex(d, src, src_n, dst, dst_n, consumed, written)


cdef size_t c_zlib_compress(void *c, const void *src, size_t src_n, void *dst, size_t dst_n) noexcept nogil:
    return p_zlib_compress(c, src, src_n, dst, dst_n)


cdef int c_gzip_decompress_ex(void *d, const void *src, size_t src_n, void *dst, size_t dst_n,
                              size_t *consumed, size_t *written) noexcept nogil:
    return p_gzip_decompress_ex(d, src, src_n, dst, dst_n, consumed, written)


cdef size_t c_gzip_compress(void *c, const void *src, size_t src_n, void *dst, size_t dst_n) noexcept nogil:
    return p_gzip_compress(c, src, src_n, dst, dst_n)


cdef size_t c_gzip_compress_bound(void *c, size_t n) noexcept nogil:
    return p_gzip_compress_bound(c, n)


def gzip_decompress_into(const uint8_t[::1] src, uint8_t[::1] dst):
    """Decompress the first gzip member of ``src`` into ``dst``.

    Returns ``(code, consumed)``: ``code`` is the number of bytes written (>= 0) or a
    negative result code; ``consumed`` is the number of input bytes the member used
    (callers compare it with ``len(src)`` to detect further members or trailing bytes).
    """
    if not _loaded:
        return UNAVAILABLE, 0
    cdef void *d = _decompressor()
    cdef size_t in_n = src.shape[0], out_n = dst.shape[0], got = 0, used = 0
    cdef const uint8_t *ip = &src[0] if in_n else NULL
    cdef uint8_t *op = &dst[0] if out_n else NULL
    cdef uint8_t dummy = 0
    cdef int r
    if op == NULL:
        op = &dummy  # libdeflate wants a valid pointer even for 0 bytes
    if in_n == 0:
        return BAD_DATA, 0
    with nogil:
        r = p_gzip_decompress_ex(d, ip, in_n, op, out_n, &used, &got)
    if r != 0:
        return -r, 0
    return <Py_ssize_t>got, <Py_ssize_t>used


def gzip_compress_bound(int level, Py_ssize_t n):
    """Worst-case gzip size of ``n`` input bytes at ``level`` (-1 if unavailable)."""
    if not _loaded:
        return UNAVAILABLE
    if level < 0 or level > MAX_LEVEL or n < 0:
        raise ValueError("gzip_compress_bound: bad level or size")
    return <Py_ssize_t>p_gzip_compress_bound(_compressor(level), <size_t>n)


def gzip_compress_into(const uint8_t[::1] src, uint8_t[::1] dst, int level):
    """Compress ``src`` as one gzip member into ``dst``; bytes written, or a negative code.

    ``INSUFFICIENT_SPACE`` when ``dst`` is too small (size it with :func:`gzip_compress_bound`).
    """
    if not _loaded:
        return UNAVAILABLE
    if level < 0 or level > MAX_LEVEL:
        raise ValueError("gzip_compress_into: level must be 0..12")
    cdef void *c = _compressor(level)
    cdef size_t in_n = src.shape[0], out_n = dst.shape[0], n
    cdef uint8_t dummy = 0
    cdef const uint8_t *ip = &src[0] if in_n else &dummy
    cdef uint8_t *op = &dst[0] if out_n else NULL
    if op == NULL:
        return INSUFFICIENT_SPACE
    with nogil:
        n = p_gzip_compress(c, ip, in_n, op, out_n)
    if n == 0:
        return INSUFFICIENT_SPACE
    return <Py_ssize_t>n


def zlib_decompress_into(const uint8_t[::1] src, uint8_t[::1] dst):
    """Decompress the zlib stream (RFC 1950) at the start of ``src`` into ``dst``.

    Returns ``(code, consumed)`` as :func:`gzip_decompress_into` does (``UNAVAILABLE``
    when libdeflate has no zlib entry point).  The GIL is released while decoding.
    """
    if not _loaded or p_zlib_decompress_ex == NULL:
        return UNAVAILABLE, 0
    cdef void *d = _decompressor()
    cdef size_t in_n = src.shape[0], out_n = dst.shape[0], got = 0, used = 0
    cdef const uint8_t *ip = &src[0] if in_n else NULL
    cdef uint8_t *op = &dst[0] if out_n else NULL
    cdef uint8_t dummy = 0
    cdef int r
    if op == NULL:
        op = &dummy  # libdeflate wants a valid pointer even for 0 bytes
    if in_n == 0:
        return BAD_DATA, 0
    with nogil:
        r = p_zlib_decompress_ex(d, ip, in_n, op, out_n, &used, &got)
    if r != 0:
        return -r, 0
    return <Py_ssize_t>got, <Py_ssize_t>used
