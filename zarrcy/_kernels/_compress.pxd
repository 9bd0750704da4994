# C-level access to zarrcy's native codec engine (``cimport zarrcy._kernels._compress``;
# see _compress.pyx and c/zc_codecs.h).
#
# A ``Chain`` is one chunk's bytes->bytes steps as the kernels run them: a compression
# step (raw, gzip, zstd, blosc, zlib) optionally followed by a crc32c of its output.
# ``chain_check`` (with the GIL) validates one and that its libraries are loaded; the
# ``chain_*`` calls then run without the GIL on the calling thread's ``zc_state``
# (``state``: scratch buffer and codec contexts, freed when the thread ends).

from libc.stdint cimport uint8_t, uint32_t

cdef extern from "zc_codecs.h":
    enum:
        ZC_OK
        ZC_GZIP_BAD_DATA
        ZC_GZIP_TOO_LONG
        ZC_GZIP_TOO_SHORT
        ZC_GZIP_TRAILING
        ZC_RAW_SIZE
        ZC_NO_SPACE
        ZC_ZSTD_BAD_DATA
        ZC_ZSTD_TOO_LONG
        ZC_ZSTD_TOO_SHORT
        ZC_ZSTD_DICTIONARY
        ZC_BLOSC_BAD_HEADER
        ZC_BLOSC_SIZE
        ZC_BLOSC_BAD_DATA
        ZC_CRC32C_MISMATCH
        ZC_CRC32C_SHORT
        ZC_NO_MEMORY
        ZC_ENCODE_FAILED
        ZC_UNAVAILABLE
        ZC_NOT_RUN
    enum:
        ZC_RAW
        ZC_GZIP
        ZC_ZSTD
        ZC_BLOSC
        ZC_ZLIB
    const size_t ZC_BOUND_ERROR
    ctypedef struct zc_state:
        uint8_t *scratch
        size_t cap
        void *gz_dec
        void *gz_comp
        int gz_level


cdef struct Chain:
    int codec          # ZC_RAW / ZC_GZIP / ZC_ZSTD / ZC_BLOSC / ZC_ZLIB
    int crc32c         # 1: a crc32c of the compressed bytes follows them
    int level          # gzip / zlib (libdeflate 0..12), zstd, blosc clevel
    int checksum       # zstd: write a content checksum
    int shuffle        # blosc: 0 none, 1 byte, 2 bit
    int typesize       # blosc
    int blocksize      # blosc (0: automatic)
    char cname[16]     # blosc compressor name, NUL-terminated


# fill ``c`` from a chain tuple (see _compress.chain docstring); ValueError/RuntimeError
cdef int chain_check(Chain *c, object spec) except -1
cdef zc_state *state(size_t scratch) noexcept nogil
# one chunk's stored bytes -> exactly dst_n decoded bytes; a result code
cdef int chain_decode(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                      size_t dst_n) noexcept nogil
# the same, where only decoded bytes [lo, hi) are needed (the rest of dst may be left
# unwritten when the format allows skipping it without skipping an integrity check)
cdef int chain_decode_range(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                            size_t dst_n, size_t lo, size_t hi) noexcept nogil
# the worst-case stored size of n decoded bytes (ZC_BOUND_ERROR: no memory for a compressor)
cdef size_t chain_bound(const Chain *c, size_t n) noexcept nogil
# encode n bytes into dst (cap bytes, at least chain_bound); bytes written (``code``
# ZC_OK), or ``code`` set to the failure
cdef size_t chain_encode(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t cap, int *code) noexcept nogil
