# C-level access to libdeflate for other kernels (``cimport zarrcy._kernels._deflate``).
#
# The entry points are resolved at run time by ``_deflate.load`` (see _deflate.pyx);
# ``loaded()`` says whether that happened.  ``_decompressor()`` / ``_compressor(level)``
# return the calling thread's own libdeflate object (needs the GIL; libdeflate objects
# are not thread-safe, so a nogil loop must use the one its calling thread fetched).
# The ``c_*`` functions are libdeflate.h's calls; they may only run once ``loaded()``.

cdef void *_decompressor() except? NULL
cdef void *_compressor(int level) except? NULL
cdef bint loaded() noexcept nogil
# a decompressor owned by the caller (threads without Python state: the native pool);
# NULL when unavailable or out of memory; freed with c_free_decompressor
cdef void *c_alloc_decompressor() noexcept nogil
cdef void c_free_decompressor(void *d) noexcept nogil
# a compressor of ``level`` owned by the caller (NULL when unavailable); c_free_compressor
cdef void *c_alloc_compressor(int level) noexcept nogil
cdef void c_free_compressor(void *c) noexcept nogil
# zlib streams (RFC 1950): both entry points found (libdeflate_zlib_*)
cdef bint zlib_loaded() noexcept nogil
cdef int c_zlib_decompress_ex(void *d, const void *src, size_t src_n, void *dst, size_t dst_n,
                              size_t *consumed, size_t *written) noexcept nogil
cdef size_t c_zlib_compress(void *c, const void *src, size_t src_n, void *dst, size_t dst_n) noexcept nogil
cdef int c_gzip_decompress_ex(void *d, const void *src, size_t src_n, void *dst, size_t dst_n,
                              size_t *consumed, size_t *written) noexcept nogil
cdef size_t c_gzip_compress(void *c, const void *src, size_t src_n, void *dst, size_t dst_n) noexcept nogil
cdef size_t c_gzip_compress_bound(void *c, size_t n) noexcept nogil
