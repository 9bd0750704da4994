"""zarrcy's native codec engine: one chunk's bytes->bytes steps (gzip, zlib, zstd,
blosc, then an optional crc32c) decoded and encoded in C without the GIL, into caller
buffers of known size (issue 21).

The libraries come from wheels the package already depends on; nothing of theirs is
compiled into zarrcy.  :func:`load_zstd`, :func:`load_blosc` and :func:`load_crc32c`
resolve the entry points once from shared objects Python has already imported
(``c/zc_codecs.c``: ``dlopen(path, RTLD_NOLOAD)`` + ``dlsym``): libzstd and c-blosc 1
from numcodecs' extension modules, ``crc32c_extend`` from google-crc32c's libcrc32c;
gzip/zlib are libdeflate's (``_deflate``).

Bounded decoding: every decoder writes into the destination (the chunk's decoded size)
and never beyond it; a stream claiming or producing another size is refused with a
result code (:func:`describe`), before anything is allocated from a size it states.

Per-thread state (scratch buffer, libdeflate and zstd contexts) lives in a pthread key
freed when the thread ends, so Python threads and the native pool's helpers
(``_workers``) each have their own; there is no global lock.  Nothing here holds
process-wide mutable state besides the resolved entry points, which stay valid in a
forked child.

A *chain* is the tuple ``(codec, crc32c, level, checksum, cname, shuffle, typesize,
blocksize)``: ``codec`` one of :data:`RAW`, :data:`GZIP`, :data:`ZSTD`, :data:`BLOSC`,
:data:`ZLIB`; ``crc32c`` true when 4 bytes of CRC32C (little-endian) of the compressed
bytes follow them; the rest are the compressor's settings (unused ones 0 / ``""``).
"""

from libc.stdint cimport uint8_t, uint32_t
from libc.string cimport memcpy, strlen

from zarrcy._kernels cimport _deflate as dfl

cdef extern from "zc_codecs.h":
    ctypedef void (*zc_free_fn)(void *) noexcept nogil
    int zc_load_zstd(const char *path) noexcept nogil
    int zc_load_blosc(const char *path) noexcept nogil
    int zc_load_crc32c(const char *path) noexcept nogil
    int zc_zstd_loaded() noexcept nogil
    int zc_blosc_loaded() noexcept nogil
    int zc_crc32c_loaded() noexcept nogil
    int zc_state_init(zc_free_fn free_dec, zc_free_fn free_comp) noexcept
    zc_state *zc_state_get(size_t scratch) noexcept nogil
    int zc_zstd_decode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n) noexcept nogil
    int zc_zstd_decode_prefix(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                              size_t want) noexcept nogil
    size_t zc_zstd_bound(size_t n) noexcept nogil
    size_t zc_zstd_encode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                          int level, int checksum, int *code) noexcept nogil
    int zc_blosc_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n) noexcept nogil
    int zc_blosc_decode_range(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t lo,
                              size_t hi) noexcept nogil
    int zc_blosc_header(const uint8_t *src, size_t n, size_t *nbytes, size_t *blocksize,
                        size_t *typesize) noexcept nogil
    size_t zc_blosc_bound(size_t n) noexcept nogil
    size_t zc_blosc_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const char *cname,
                           int clevel, int shuffle, size_t typesize, size_t blocksize, int *code) noexcept nogil
    uint32_t zc_crc32c(uint32_t crc, const uint8_t *data, size_t n) noexcept nogil

# result codes (0 = ok) and codecs, as Python ints
OK = ZC_OK
GZIP_BAD_DATA = ZC_GZIP_BAD_DATA
GZIP_TOO_LONG = ZC_GZIP_TOO_LONG
GZIP_TOO_SHORT = ZC_GZIP_TOO_SHORT
GZIP_TRAILING = ZC_GZIP_TRAILING
RAW_SIZE = ZC_RAW_SIZE
NO_SPACE = ZC_NO_SPACE
ZSTD_BAD_DATA = ZC_ZSTD_BAD_DATA
ZSTD_TOO_LONG = ZC_ZSTD_TOO_LONG
ZSTD_TOO_SHORT = ZC_ZSTD_TOO_SHORT
ZSTD_DICTIONARY = ZC_ZSTD_DICTIONARY
BLOSC_BAD_HEADER = ZC_BLOSC_BAD_HEADER
BLOSC_SIZE = ZC_BLOSC_SIZE
BLOSC_BAD_DATA = ZC_BLOSC_BAD_DATA
CRC32C_MISMATCH = ZC_CRC32C_MISMATCH
CRC32C_SHORT = ZC_CRC32C_SHORT
NO_MEMORY = ZC_NO_MEMORY
ENCODE_FAILED = ZC_ENCODE_FAILED
UNAVAILABLE = ZC_UNAVAILABLE
NOT_RUN = ZC_NOT_RUN
RAW = ZC_RAW
GZIP = ZC_GZIP
ZSTD = ZC_ZSTD
BLOSC = ZC_BLOSC
ZLIB = ZC_ZLIB

_TEXT = {
    ZC_OK: "ok",
    ZC_GZIP_BAD_DATA: "invalid deflate (gzip/zlib) data",
    ZC_GZIP_TOO_LONG: "deflate (gzip/zlib) data decodes to more bytes than the chunk holds",
    ZC_GZIP_TOO_SHORT: "the first deflate (gzip/zlib) member decodes to fewer bytes than the chunk holds",
    ZC_GZIP_TRAILING: "non-zero bytes after the first gzip/zlib member",
    ZC_RAW_SIZE: "stored size differs from the chunk's size",
    ZC_NO_SPACE: "encoded chunk does not fit its output slot",
    ZC_ZSTD_BAD_DATA: "invalid zstd data (not a sequence of complete zstd frames)",
    ZC_ZSTD_TOO_LONG: "zstd frames decode to more bytes than the chunk holds",
    ZC_ZSTD_TOO_SHORT: "zstd frames decode to fewer bytes than the chunk holds",
    ZC_ZSTD_DICTIONARY: "a zstd frame needs a dictionary (none is configured)",
    ZC_BLOSC_BAD_HEADER: "invalid blosc header (version, sizes, or cbytes not the stored length)",
    ZC_BLOSC_SIZE: "the blosc header's decoded size differs from the chunk's size",
    ZC_BLOSC_BAD_DATA: "invalid blosc data (c-blosc could not decode its blocks)",
    ZC_CRC32C_MISMATCH: "crc32c checksum mismatch",
    ZC_CRC32C_SHORT: "fewer than 4 bytes where a crc32c checksum is expected",
    ZC_NO_MEMORY: "no memory for a codec context",
    ZC_ENCODE_FAILED: "the compression library reported an error",
    ZC_UNAVAILABLE: "the compression library's entry points are not loaded",
}


def describe(int code):
    """A short English text for a result code (the caller adds which chunk, which key)."""
    return _TEXT.get(code, f"unknown result code {code}")


cdef void _free_gz_dec(void *p) noexcept nogil:
    dfl.c_free_decompressor(p)


cdef void _free_gz_comp(void *p) noexcept nogil:
    dfl.c_free_compressor(p)


if zc_state_init(_free_gz_dec, _free_gz_comp) != 0:  # pragma: no cover - out of thread-local keys
    raise MemoryError("pthread_key_create failed")


def load_zstd(str path):
    """Resolve libzstd's entry points from the loaded module at ``path``; True on success."""
    return bool(zc_load_zstd(path.encode()))


def load_blosc(str path):
    """Resolve c-blosc 1's entry points from the loaded module at ``path``; True on success."""
    return bool(zc_load_blosc(path.encode()))


def load_crc32c(str path):
    """Resolve ``crc32c_extend`` from the loaded module at ``path`` (or a library it
    links); True on success."""
    return bool(zc_load_crc32c(path.encode()))


cdef bint _codec_ready(int codec) noexcept nogil:
    if codec == ZC_RAW:
        return True
    if codec == ZC_GZIP:
        return dfl.loaded()
    if codec == ZC_ZLIB:
        return dfl.zlib_loaded()
    if codec == ZC_ZSTD:
        return zc_zstd_loaded() != 0
    if codec == ZC_BLOSC:
        return zc_blosc_loaded() != 0
    return False


def available(int codec, bint crc32c=False):
    """True when chains of ``codec`` (with a crc32c step if ``crc32c``) can run here."""
    return _codec_ready(codec) and (not crc32c or zc_crc32c_loaded() != 0)


cdef int chain_check(Chain *c, object spec) except -1:
    cdef tuple t = spec
    if len(t) != 8:
        raise ValueError(f"chain: expected (codec, crc32c, level, checksum, cname, shuffle, typesize, blocksize), "
                         f"received {spec!r}")
    codec, crc, level, checksum, cname, shuffle, typesize, blocksize = t
    c.codec = int(codec)
    if c.codec not in (ZC_RAW, ZC_GZIP, ZC_ZSTD, ZC_BLOSC, ZC_ZLIB):
        raise ValueError(f"chain codec: expected 0..4, received {codec!r}")
    c.crc32c = 1 if crc else 0
    c.level = int(level)
    c.checksum = 1 if checksum else 0
    c.shuffle = int(shuffle)
    c.typesize = int(typesize)
    c.blocksize = int(blocksize)
    cdef bytes name = str(cname).encode()
    if len(name) > 15:
        raise ValueError(f"chain cname: expected at most 15 bytes, received {cname!r}")
    memcpy(c.cname, <const char *>name, len(name))
    c.cname[len(name)] = 0
    if c.codec in (ZC_GZIP, ZC_ZLIB) and not 0 <= c.level <= 12:
        raise ValueError(f"chain level: expected 0..12 for gzip/zlib, received {level!r}")
    if c.codec == ZC_BLOSC and (not 0 <= c.level <= 9 or not 0 <= c.shuffle <= 2 or c.typesize < 1
                                 or c.blocksize < 0 or not name):
        raise ValueError(f"chain: invalid blosc settings {spec!r}")
    if not _codec_ready(c.codec):
        raise RuntimeError(f"chain: the library of codec {c.codec} is not loaded")
    if c.crc32c and not zc_crc32c_loaded():
        raise RuntimeError("chain: crc32c_extend is not loaded")
    return 0


cdef zc_state *state(size_t scratch) noexcept nogil:
    return zc_state_get(scratch)


cdef inline uint32_t _rd32(const uint8_t *p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef int _deflate_decode(int codec, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t dst_n) noexcept nogil:
    """One gzip member / zlib stream into exactly ``dst_n`` bytes; trailing zero padding
    is accepted (as by the gzip codec's other routes)."""
    cdef zc_state *s = st
    cdef size_t used = 0, got = 0, i
    cdef uint8_t dummy = 0
    cdef int r
    if n == 0:
        return ZC_GZIP_BAD_DATA
    if s.gz_dec == NULL:
        s.gz_dec = dfl.c_alloc_decompressor()
        if s.gz_dec == NULL:
            return ZC_NO_MEMORY
    if codec == ZC_GZIP:
        r = dfl.c_gzip_decompress_ex(s.gz_dec, src, n, dst if dst_n else &dummy, dst_n, &used, &got)
    else:
        r = dfl.c_zlib_decompress_ex(s.gz_dec, src, n, dst if dst_n else &dummy, dst_n, &used, &got)
    if r == 3:  # LIBDEFLATE_INSUFFICIENT_SPACE
        return ZC_GZIP_TOO_LONG
    if r != 0:
        return ZC_GZIP_BAD_DATA
    if got != dst_n:
        return ZC_GZIP_TOO_SHORT
    for i in range(used, n):
        if src[i] != 0:
            return ZC_GZIP_TRAILING
    return ZC_OK


cdef inline int _strip_crc(const Chain *c, const uint8_t *src, size_t *n) noexcept nogil:
    if not c.crc32c:
        return ZC_OK
    if n[0] < 4:
        return ZC_CRC32C_SHORT
    n[0] -= 4
    if zc_crc32c(0, src, n[0]) != _rd32(src + n[0]):
        return ZC_CRC32C_MISMATCH
    return ZC_OK


cdef int chain_decode(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                      size_t dst_n) noexcept nogil:
    cdef int r = _strip_crc(c, src, &n)
    if r != ZC_OK:
        return r
    if c.codec == ZC_RAW:
        if n != dst_n:
            return ZC_RAW_SIZE
        if n:
            memcpy(dst, src, n)
        return ZC_OK
    if c.codec == ZC_ZSTD:
        return zc_zstd_decode(st, src, n, dst, dst_n)
    if c.codec == ZC_BLOSC:
        return zc_blosc_decode(src, n, dst, dst_n)
    return _deflate_decode(c.codec, st, src, n, dst, dst_n)


cdef int chain_decode_range(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                            size_t dst_n, size_t lo, size_t hi) noexcept nogil:
    cdef int r
    if c.codec == ZC_ZSTD or c.codec == ZC_BLOSC:
        r = _strip_crc(c, src, &n)  # the whole stored value is checked either way
        if r != ZC_OK:
            return r
        if c.codec == ZC_ZSTD:  # frames with a content checksum are decoded whole
            return zc_zstd_decode_prefix(st, src, n, dst, dst_n, hi)
        return zc_blosc_decode_range(src, n, dst, dst_n, lo, hi)
    return chain_decode(c, st, src, n, dst, dst_n)  # gzip's CRC-32 covers the whole member


cdef size_t _deflate_bound(const Chain *c, size_t n) noexcept nogil:
    cdef zc_state *s = zc_state_get(0)
    if s == NULL:
        return 0
    if s.gz_comp == NULL or s.gz_level != c.level:
        dfl.c_free_compressor(s.gz_comp)
        s.gz_comp = dfl.c_alloc_compressor(c.level)
        s.gz_level = c.level
        if s.gz_comp == NULL:
            return 0
    # the zlib container is smaller than gzip's (6 vs 18 bytes): the gzip bound holds
    return dfl.c_gzip_compress_bound(s.gz_comp, n)


cdef size_t chain_bound(const Chain *c, size_t n) noexcept nogil:
    cdef size_t b
    if c.codec == ZC_RAW:
        b = n
    elif c.codec == ZC_ZSTD:
        b = zc_zstd_bound(n)
    elif c.codec == ZC_BLOSC:
        b = zc_blosc_bound(n)
    else:
        b = _deflate_bound(c, n)
    if b == 0 and c.codec != ZC_RAW:
        return ZC_BOUND_ERROR
    return b + (4 if c.crc32c else 0)


cdef size_t chain_encode(const Chain *c, zc_state *st, const uint8_t *src, size_t n, uint8_t *dst,
                         size_t cap, int *code) noexcept nogil:
    cdef zc_state *s = st
    cdef size_t room = cap - 4 if c.crc32c else cap, w = 0
    cdef uint32_t crc
    code[0] = ZC_OK
    if c.crc32c and cap < 4:
        code[0] = ZC_NO_SPACE
        return 0
    if c.codec == ZC_RAW:
        if room < n:
            code[0] = ZC_NO_SPACE
            return 0
        if n:
            memcpy(dst, src, n)
        w = n
    elif c.codec == ZC_ZSTD:
        w = zc_zstd_encode(st, src, n, dst, room, c.level, c.checksum, code)
    elif c.codec == ZC_BLOSC:
        w = zc_blosc_encode(src, n, dst, room, c.cname, c.level, c.shuffle, <size_t>c.typesize,
                            <size_t>c.blocksize, code)
    else:
        if s.gz_comp == NULL or s.gz_level != c.level:
            dfl.c_free_compressor(s.gz_comp)
            s.gz_comp = dfl.c_alloc_compressor(c.level)
            s.gz_level = c.level
            if s.gz_comp == NULL:
                code[0] = ZC_NO_MEMORY
                return 0
        if c.codec == ZC_GZIP:
            w = dfl.c_gzip_compress(s.gz_comp, src, n, dst, room)
        else:
            w = dfl.c_zlib_compress(s.gz_comp, src, n, dst, room)
        if w == 0:
            code[0] = ZC_NO_SPACE
    if code[0] != ZC_OK:
        return 0
    if c.crc32c:
        crc = zc_crc32c(0, dst, w)
        dst[w] = crc & 0xFF
        dst[w + 1] = (crc >> 8) & 0xFF
        dst[w + 2] = (crc >> 16) & 0xFF
        dst[w + 3] = (crc >> 24) & 0xFF
        w += 4
    return w


# -- Python entry points (the codec objects, tests, fuzz targets) -----------------------

cdef uint8_t _dummy = 0


cdef int _decode(object chain, const uint8_t[::1] src, uint8_t[::1] dst, Py_ssize_t lo, Py_ssize_t hi) except -1:
    cdef Chain c
    chain_check(&c, chain)
    cdef size_t n = src.shape[0], dn = dst.shape[0]
    if hi < 0:
        lo, hi = 0, dn
    elif not 0 <= lo <= hi <= <Py_ssize_t>dn:
        raise ValueError(f"lo, hi: expected 0 <= lo <= hi <= {dn}, received {lo}, {hi}")
    cdef const uint8_t *sp = &src[0] if n else &_dummy
    cdef uint8_t *dp = &dst[0] if dn else <uint8_t *>&_dummy
    cdef bint whole = lo == 0 and <size_t>hi == dn
    cdef zc_state *st
    cdef int r
    with nogil:
        st = zc_state_get(0)
        if st == NULL:
            r = ZC_NO_MEMORY
        elif whole:
            r = chain_decode(&c, st, sp, n, dp, dn)
        else:
            r = chain_decode_range(&c, st, sp, n, dp, dn, lo, hi)
    return r


def decode_into(chain, const uint8_t[::1] src, uint8_t[::1] dst):
    """Decode the stored bytes ``src`` through ``chain`` into ``dst``, which must come
    out exactly filled; a result code (0 ok, see :func:`describe`).  No GIL inside."""
    return _decode(chain, src, dst, 0, -1)


def decode_range_into(chain, const uint8_t[::1] src, uint8_t[::1] dst, Py_ssize_t lo, Py_ssize_t hi):
    """:func:`decode_into` where only ``dst[lo:hi]`` is needed (zstd frames without a
    checksum stop after ``hi``; blosc decodes only the blocks holding ``[lo, hi)``);
    other bytes of ``dst`` may stay unwritten."""
    if hi < 0:
        raise ValueError(f"lo, hi: expected 0 <= lo <= hi <= {dst.shape[0]}, received {lo}, {hi}")
    return _decode(chain, src, dst, lo, hi)


def encode_bound(chain, Py_ssize_t n):
    """The most bytes :func:`encode_into` writes for ``n`` input bytes."""
    cdef Chain c
    chain_check(&c, chain)
    if n < 0:
        raise ValueError(f"n: expected a size >= 0, received {n}")
    cdef size_t b = chain_bound(&c, <size_t>n)
    if b == ZC_BOUND_ERROR:
        raise MemoryError("no memory for a compressor")
    return <Py_ssize_t>b


def encode_into(chain, const uint8_t[::1] src, uint8_t[::1] dst):
    """Encode ``src`` through ``chain`` into ``dst`` (size it with :func:`encode_bound`);
    ``(bytes written, 0)`` or ``(0, result code)``.  No GIL inside."""
    cdef Chain c
    chain_check(&c, chain)
    cdef size_t n = src.shape[0], dn = dst.shape[0], w = 0
    cdef const uint8_t *sp = &src[0] if n else &_dummy
    cdef uint8_t *dp = &dst[0] if dn else <uint8_t *>&_dummy
    cdef zc_state *st
    cdef int code = ZC_OK
    with nogil:
        st = zc_state_get(0)
        if st == NULL:
            code = ZC_NO_MEMORY
        else:
            w = chain_encode(&c, st, sp, n, dp, dn, &code)
    return <Py_ssize_t>w, code


def blosc_header(const uint8_t[::1] src):
    """``(code, nbytes, blocksize, typesize)`` of a blosc stream (code 0: a header
    :func:`decode_into` accepts; its ``cbytes`` equals ``len(src)``)."""
    cdef size_t nb = 0, bs = 0, ts = 0
    cdef int r = zc_blosc_header(&src[0] if src.shape[0] else &_dummy, src.shape[0], &nb, &bs, &ts)
    return r, <Py_ssize_t>nb, <Py_ssize_t>bs, <Py_ssize_t>ts


def crc32c(const uint8_t[::1] data, uint32_t crc=0):
    """CRC32C of ``data`` (continuing from ``crc``) through the loaded ``crc32c_extend``."""
    if not zc_crc32c_loaded():
        raise RuntimeError("crc32c_extend is not loaded")
    cdef uint32_t r
    with nogil:
        r = zc_crc32c(crc, &data[0] if data.shape[0] else &_dummy, data.shape[0])
    return r
