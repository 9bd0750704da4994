/* zarrcy's native codec engine: bounded zstd / blosc decoding and encoding, crc32c,
   and per-thread codec state, without the GIL (issue 21).

   The compression libraries are not part of zarrcy.  Their entry points are resolved
   once, at import, from shared objects that Python has already loaded (dlopen with
   RTLD_NOLOAD, then dlsym): libzstd from numcodecs' `zstd` extension module, c-blosc 1
   from numcodecs' `blosc` extension module, crc32c_extend from google-crc32c's bundled
   libcrc32c.  Only the prototypes called here are declared (zc_codecs.c), from each
   library's public header (zstd.h, blosc.h, crc32c/crc32c.h).

   Every decoder writes into a caller buffer of the expected decoded size and never
   beyond it; a stream that would decode to more (or fewer) bytes is refused with a
   result code, and nothing is allocated from a size read out of the stream.
*/
#ifndef ZC_CODECS_H
#define ZC_CODECS_H

#include <stddef.h>
#include <stdint.h>

/* result codes of every per-chunk step (0 = ok); texts in _inner_chunks.describe */
enum {
    ZC_OK = 0,
    ZC_GZIP_BAD_DATA = 1,     /* libdeflate: not a valid gzip member */
    ZC_GZIP_TOO_LONG = 2,     /* the member decodes to more than the chunk's bytes */
    ZC_GZIP_TOO_SHORT = 3,    /* the first member decodes to fewer bytes (maybe more members) */
    ZC_GZIP_TRAILING = 4,     /* non-zero bytes after the first member (maybe more members) */
    ZC_RAW_SIZE = 5,          /* raw bytes are not exactly one chunk */
    ZC_NO_SPACE = 6,          /* an encoder's output slot was too small */
    ZC_ZSTD_BAD_DATA = 7,     /* not a sequence of valid zstd frames */
    ZC_ZSTD_TOO_LONG = 8,     /* the frames decode to more bytes than the chunk holds */
    ZC_ZSTD_TOO_SHORT = 9,    /* the frames decode to fewer bytes */
    ZC_ZSTD_DICTIONARY = 10,  /* a frame needs a dictionary */
    ZC_BLOSC_BAD_HEADER = 11, /* blosc header invalid, or its cbytes is not the stored length */
    ZC_BLOSC_SIZE = 12,       /* the header's decoded size is not the chunk's */
    ZC_BLOSC_BAD_DATA = 13,   /* c-blosc could not decode the blocks */
    ZC_CRC32C_MISMATCH = 14,  /* the stored crc32c differs from the computed one */
    ZC_CRC32C_SHORT = 15,     /* fewer than 4 bytes where a crc32c is expected */
    ZC_NO_MEMORY = 16,        /* a codec context could not be allocated */
    ZC_ENCODE_FAILED = 17,    /* the library reported an encoding error */
    ZC_UNAVAILABLE = 18,      /* the library's entry points are not loaded */
    ZC_NOT_RUN = 255          /* a task no thread ran */
};

/* a size that is not one: a bound that could not be computed */
#define ZC_BOUND_ERROR ((size_t)-1)

/* codecs of a chain's compression step */
enum { ZC_RAW = 0, ZC_GZIP = 1, ZC_ZSTD = 2, ZC_BLOSC = 3, ZC_ZLIB = 4 };

/* loading: path of an already loaded shared object (an extension module); 1 = found */
int zc_load_zstd(const char *path);
int zc_load_blosc(const char *path);
int zc_load_crc32c(const char *path);
int zc_zstd_loaded(void);
int zc_blosc_loaded(void);
int zc_crc32c_loaded(void);

/* this thread's codec state: a scratch buffer of at least `scratch` bytes and lazily
   created contexts; freed when the thread ends (pool helpers and Python threads alike).
   NULL when out of memory. */
typedef struct zc_state {
    uint8_t *scratch;
    size_t cap;
    void *gz_dec;     /* libdeflate decompressor */
    void *gz_comp;    /* libdeflate compressor of level gz_level */
    int gz_level;
    void *zd;         /* ZSTD_DCtx */
    void *zc;         /* ZSTD_CCtx */
} zc_state;

typedef void (*zc_free_fn)(void *);
/* libdeflate's free functions, for the thread-exit destructor; 0 = ok */
int zc_state_init(zc_free_fn free_dec, zc_free_fn free_comp);
zc_state *zc_state_get(size_t scratch);

/* zstd (RFC 8878): every frame of src[0:n] (skippable frames skipped) decoded into
   dst, which must come out exactly dst_n bytes */
int zc_zstd_decode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n);
/* 1 when src holds exactly one frame with Frame_Content_Size == dst_n and no content
   checksum, so a prefix of it can be decoded alone (zc_zstd_decode_prefix) */
int zc_zstd_prefix_ok(const uint8_t *src, size_t n, size_t dst_n);
/* the first `want` bytes (or more) of that frame into dst (dst_n bytes of room) */
int zc_zstd_decode_prefix(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                          size_t want);
size_t zc_zstd_bound(size_t n);
/* one frame (content size in the header) of src at level, with a checksum or not;
   bytes written (> 0) or 0 with *code set */
size_t zc_zstd_encode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                      int level, int checksum, int *code);

/* blosc (c-blosc 1 container format) */
int zc_blosc_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n);
/* bytes [lo, hi) of the decoded chunk into dst + lo (only the blocks they touch are
   decoded); lo and hi multiples of the header's typesize are not required */
int zc_blosc_decode_range(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t lo,
                          size_t hi);
/* header facts of a stream zc_blosc_decode would accept: 0 ok, else a result code */
int zc_blosc_header(const uint8_t *src, size_t n, size_t *nbytes, size_t *blocksize, size_t *typesize);
size_t zc_blosc_bound(size_t n);
size_t zc_blosc_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const char *cname,
                       int clevel, int shuffle, size_t typesize, size_t blocksize, int *code);

/* CRC32C (RFC 3720) of data, continuing from crc (0 to start) */
uint32_t zc_crc32c(uint32_t crc, const uint8_t *data, size_t n);

#endif
