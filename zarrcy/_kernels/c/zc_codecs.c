/* zarrcy's native codec engine (see zc_codecs.h). */
#include "zc_codecs.h"
#include "zc_dl.h"

#include <stdlib.h>
#include <string.h>

#if !defined(_WIN32)
#include <pthread.h>
#endif

/* resolve each name of a table of (address of a function pointer, symbol name) from the
   loaded module at path; 1 when every one was found */
typedef struct { void **slot; const char *name; } zc_entry;

static int zc_resolve(const char *path, const zc_entry *e, size_t n) {
    size_t i;
    void *h = zc_dl_open(path);
    if (!h) return 0;
    for (i = 0; i < n; i++) {
        if (!(*e[i].slot = zc_dl_sym(h, e[i].name))) return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------------------------
   libzstd: the prototypes of zstd.h that are called here (contexts as void *)
   --------------------------------------------------------------------------------- */
typedef struct { const void *src; size_t size; size_t pos; } zc_zin;
typedef struct { void *dst; size_t size; size_t pos; } zc_zout;

#define ZC_ZSTD_MAGIC 0xFD2FB528u
#define ZC_ZSTD_SKIPPABLE 0x184D2A50u           /* ZSTD_MAGIC_SKIPPABLE_START */
#define ZC_ZSTD_SKIPPABLE_MASK 0xFFFFFFF0u
#define ZC_CONTENTSIZE_UNKNOWN (0ULL - 1)
#define ZC_CONTENTSIZE_ERROR (0ULL - 2)
#define ZC_c_compressionLevel 100
#define ZC_c_checksumFlag 201
#define ZC_d_stableOutBuffer 1001                /* ZSTD_d_experimentalParam2 */
#define ZC_reset_session_and_parameters 3

static struct {
    void *(*createDCtx)(void);
    size_t (*freeDCtx)(void *);
    size_t (*DCtx_reset)(void *, int);
    size_t (*DCtx_setParameter)(void *, int, int);
    size_t (*decompressDCtx)(void *, void *, size_t, const void *, size_t);
    size_t (*decompressStream)(void *, zc_zout *, zc_zin *);
    size_t (*findFrameCompressedSize)(const void *, size_t);
    unsigned long long (*getFrameContentSize)(const void *, size_t);
    unsigned (*getDictID_fromFrame)(const void *, size_t);
    unsigned (*isError)(size_t);
    void *(*createCCtx)(void);
    size_t (*freeCCtx)(void *);
    size_t (*CCtx_reset)(void *, int);
    size_t (*CCtx_setParameter)(void *, int, int);
    size_t (*compress2)(void *, void *, size_t, const void *, size_t);
    size_t (*compressBound)(size_t);
    int ok;
} Z;

#define ZC_E(table, field, name) { (void **)&table.field, name }

int zc_load_zstd(const char *path) {
    const zc_entry e[] = {
        ZC_E(Z, createDCtx, "ZSTD_createDCtx"), ZC_E(Z, freeDCtx, "ZSTD_freeDCtx"),
        ZC_E(Z, DCtx_reset, "ZSTD_DCtx_reset"), ZC_E(Z, DCtx_setParameter, "ZSTD_DCtx_setParameter"),
        ZC_E(Z, decompressDCtx, "ZSTD_decompressDCtx"), ZC_E(Z, decompressStream, "ZSTD_decompressStream"),
        ZC_E(Z, findFrameCompressedSize, "ZSTD_findFrameCompressedSize"),
        ZC_E(Z, getFrameContentSize, "ZSTD_getFrameContentSize"),
        ZC_E(Z, getDictID_fromFrame, "ZSTD_getDictID_fromFrame"), ZC_E(Z, isError, "ZSTD_isError"),
        ZC_E(Z, createCCtx, "ZSTD_createCCtx"), ZC_E(Z, freeCCtx, "ZSTD_freeCCtx"),
        ZC_E(Z, CCtx_reset, "ZSTD_CCtx_reset"), ZC_E(Z, CCtx_setParameter, "ZSTD_CCtx_setParameter"),
        ZC_E(Z, compress2, "ZSTD_compress2"), ZC_E(Z, compressBound, "ZSTD_compressBound"),
    };
    if (!Z.ok) Z.ok = zc_resolve(path, e, sizeof e / sizeof e[0]);
    return Z.ok;
}

int zc_zstd_loaded(void) { return Z.ok; }

/* ---------------------------------------------------------------------------------
   c-blosc 1: the prototypes of blosc.h that are called here
   --------------------------------------------------------------------------------- */
#define ZC_BLOSC_VERSION_FORMAT 2
#define ZC_BLOSC_MEMCPYED 0x2

static struct {
    int (*cbuffer_validate)(const void *, size_t, size_t *);
    int (*decompress_ctx)(const void *, void *, size_t, int);
    int (*getitem)(const void *, int, int, void *);
    int (*compress_ctx)(int, int, size_t, size_t, const void *, void *, size_t, const char *, size_t, int);
    int ok;
} B;

int zc_load_blosc(const char *path) {
    const zc_entry e[] = {
        ZC_E(B, cbuffer_validate, "blosc_cbuffer_validate"), ZC_E(B, decompress_ctx, "blosc_decompress_ctx"),
        ZC_E(B, getitem, "blosc_getitem"), ZC_E(B, compress_ctx, "blosc_compress_ctx"),
    };
    if (!B.ok) B.ok = zc_resolve(path, e, sizeof e / sizeof e[0]);
    return B.ok;
}

int zc_blosc_loaded(void) { return B.ok; }

/* ---------------------------------------------------------------------------------
   crc32c (google/crc32c's C API: crc32c_extend)
   --------------------------------------------------------------------------------- */
static struct { uint32_t (*extend)(uint32_t, const uint8_t *, size_t); } C;

int zc_load_crc32c(const char *path) {
    const zc_entry e[] = { ZC_E(C, extend, "crc32c_extend") };
    return C.extend != NULL || zc_resolve(path, e, 1);
}

int zc_crc32c_loaded(void) { return C.extend != NULL; }

uint32_t zc_crc32c(uint32_t crc, const uint8_t *data, size_t n) { return C.extend(crc, data, n); }

/* ---------------------------------------------------------------------------------
   per-thread state
   --------------------------------------------------------------------------------- */
static zc_free_fn zc_free_gz_dec = NULL, zc_free_gz_comp = NULL;

static void zc_state_free(void *p) {
    zc_state *s = (zc_state *)p;
    if (!s) return;
    free(s->scratch);
    if (s->gz_dec && zc_free_gz_dec) zc_free_gz_dec(s->gz_dec);
    if (s->gz_comp && zc_free_gz_comp) zc_free_gz_comp(s->gz_comp);
    if (s->zd && Z.ok) Z.freeDCtx(s->zd);
    if (s->zc && Z.ok) Z.freeCCtx(s->zc);
    free(s);
}

#if defined(_WIN32)
static __declspec(thread) zc_state zc_one;
int zc_state_init(zc_free_fn fd, zc_free_fn fc) { zc_free_gz_dec = fd; zc_free_gz_comp = fc; return 0; }
static zc_state *zc_state_here(void) { return &zc_one; }
#else
static pthread_key_t zc_key;
int zc_state_init(zc_free_fn fd, zc_free_fn fc) {
    zc_free_gz_dec = fd;
    zc_free_gz_comp = fc;
    return pthread_key_create(&zc_key, zc_state_free);
}
static zc_state *zc_state_here(void) {
    zc_state *s = (zc_state *)pthread_getspecific(zc_key);
    if (!s) {
        s = (zc_state *)calloc(1, sizeof *s);
        if (!s) return NULL;
        s->gz_level = -1;
        if (pthread_setspecific(zc_key, s) != 0) { free(s); return NULL; }
    }
    return s;
}
#endif

zc_state *zc_state_get(size_t need) {
    zc_state *s = zc_state_here();
    if (!s) return NULL;
    if (s->cap < need) {
        uint8_t *p = (uint8_t *)malloc(need ? need : 1);
        if (!p) return NULL;
        free(s->scratch);
        s->scratch = p;
        s->cap = need;
    }
    return s;
}

/* ---------------------------------------------------------------------------------
   zstd
   --------------------------------------------------------------------------------- */
static uint32_t zc_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void *zc_dctx(zc_state *st) {
    if (!st->zd) st->zd = Z.createDCtx();
    return st->zd;
}

int zc_zstd_decode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n) {
    size_t pos = 0, w = 0, fsz, got, cap;
    unsigned long long fcs;
    int frames = 0;
    void *d;
    if (!Z.ok) return ZC_UNAVAILABLE;
    d = zc_dctx(st);
    if (!d) return ZC_NO_MEMORY;
    Z.DCtx_reset(d, ZC_reset_session_and_parameters);
    while (pos < n) {
        if (n - pos >= 4 && (zc_rd32(src + pos) & ZC_ZSTD_SKIPPABLE_MASK) == ZC_ZSTD_SKIPPABLE) {
            uint32_t sz;
            if (n - pos < 8) return ZC_ZSTD_BAD_DATA;
            sz = zc_rd32(src + pos + 4);
            if (sz > n - pos - 8) return ZC_ZSTD_BAD_DATA;
            pos += 8 + (size_t)sz;
            continue;
        }
        fsz = Z.findFrameCompressedSize(src + pos, n - pos);
        if (Z.isError(fsz) || fsz == 0 || fsz > n - pos) return ZC_ZSTD_BAD_DATA;
        if (Z.getDictID_fromFrame(src + pos, fsz) != 0) return ZC_ZSTD_DICTIONARY;
        fcs = Z.getFrameContentSize(src + pos, fsz);
        if (fcs == ZC_CONTENTSIZE_ERROR) return ZC_ZSTD_BAD_DATA;
        cap = dst_n - w;
        if (fcs != ZC_CONTENTSIZE_UNKNOWN) {
            if (fcs > cap) return ZC_ZSTD_TOO_LONG;
            cap = (size_t)fcs;
        }
        /* the one-shot decoder writes at most cap bytes (an error otherwise) and
           allocates nothing from the frame's window size */
        got = Z.decompressDCtx(d, dst + w, cap, src + pos, fsz);
        if (Z.isError(got)) return fcs == ZC_CONTENTSIZE_UNKNOWN && w + cap == dst_n ? ZC_ZSTD_TOO_LONG
                                                                                       : ZC_ZSTD_BAD_DATA;
        if (fcs != ZC_CONTENTSIZE_UNKNOWN && got != fcs) return ZC_ZSTD_BAD_DATA;
        w += got;
        pos += fsz;
        frames++;
    }
    if (frames == 0) return ZC_ZSTD_BAD_DATA;
    return w == dst_n ? ZC_OK : ZC_ZSTD_TOO_SHORT;
}

int zc_zstd_prefix_ok(const uint8_t *src, size_t n, size_t dst_n) {
    size_t fsz;
    if (!Z.ok || n < 6 || zc_rd32(src) != ZC_ZSTD_MAGIC) return 0;
    if (src[4] & 0x04) return 0;  /* Content_Checksum_flag: decode everything to check it */
    fsz = Z.findFrameCompressedSize(src, n);
    if (Z.isError(fsz) || fsz != n) return 0;
    if (Z.getDictID_fromFrame(src, n) != 0) return 0;
    return Z.getFrameContentSize(src, n) == (unsigned long long)dst_n;
}

int zc_zstd_decode_prefix(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n,
                          size_t want) {
    zc_zin in;
    zc_zout out;
    size_t r, step = (size_t)1 << 15;
    void *d;
    /* most of the frame needed: one-shot decoding is faster than streaming */
    if (want > dst_n - dst_n / 4 || !zc_zstd_prefix_ok(src, n, dst_n)) return zc_zstd_decode(st, src, n, dst, dst_n);
    d = zc_dctx(st);
    if (!d) return ZC_NO_MEMORY;
    Z.DCtx_reset(d, ZC_reset_session_and_parameters);
    /* a stable output buffer of the frame's whole content size: the decoder writes
       straight into it, with no window buffer of its own */
    if (Z.isError(Z.DCtx_setParameter(d, ZC_d_stableOutBuffer, 1)))
        return zc_zstd_decode(st, src, n, dst, dst_n);
    in.src = src; in.size = 0; in.pos = 0;
    out.dst = dst; out.size = dst_n; out.pos = 0;
    /* feed the input a piece at a time; stop once `want` bytes came out */
    while (out.pos < want) {
        size_t in0 = in.pos, out0 = out.pos, size0 = in.size;
        in.size = n - in.size > step ? in.size + step : n;
        r = Z.decompressStream(d, &out, &in);
        if (Z.isError(r)) { Z.DCtx_reset(d, ZC_reset_session_and_parameters); return ZC_ZSTD_BAD_DATA; }
        if (r == 0) break;  /* frame complete */
        if (size0 == n && in.pos == in0 && out.pos == out0) {  /* no progress on the whole input */
            Z.DCtx_reset(d, ZC_reset_session_and_parameters);
            return ZC_ZSTD_BAD_DATA;
        }
    }
    Z.DCtx_reset(d, ZC_reset_session_and_parameters);
    return out.pos >= want ? ZC_OK : ZC_ZSTD_TOO_SHORT;
}

size_t zc_zstd_bound(size_t n) { return Z.ok ? Z.compressBound(n) : 0; }

size_t zc_zstd_encode(zc_state *st, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                      int level, int checksum, int *code) {
    size_t r;
    if (!Z.ok) { *code = ZC_UNAVAILABLE; return 0; }
    if (!st->zc) st->zc = Z.createCCtx();
    if (!st->zc) { *code = ZC_NO_MEMORY; return 0; }
    Z.CCtx_reset(st->zc, ZC_reset_session_and_parameters);
    if (Z.isError(Z.CCtx_setParameter(st->zc, ZC_c_compressionLevel, level))
        || Z.isError(Z.CCtx_setParameter(st->zc, ZC_c_checksumFlag, checksum ? 1 : 0))) {
        *code = ZC_ENCODE_FAILED;
        return 0;
    }
    r = Z.compress2(st->zc, dst, cap, src, n);
    if (Z.isError(r) || r == 0) {
        *code = cap < Z.compressBound(n) ? ZC_NO_SPACE : ZC_ENCODE_FAILED;
        return 0;
    }
    *code = ZC_OK;
    return r;
}

/* ---------------------------------------------------------------------------------
   blosc
   --------------------------------------------------------------------------------- */
int zc_blosc_header(const uint8_t *src, size_t n, size_t *nbytes, size_t *blocksize, size_t *typesize) {
    size_t nb, bs, cb, ts;
    if (!B.ok) return ZC_UNAVAILABLE;
    if (n < 16) return ZC_BLOSC_BAD_HEADER;
    ts = src[3];
    nb = zc_rd32(src + 4);
    bs = zc_rd32(src + 8);
    cb = zc_rd32(src + 12);
    if (src[0] == 0 || cb != n) return ZC_BLOSC_BAD_HEADER;
    /* c-blosc allocates temporaries of about three blocks: a block never larger than
       the chunk keeps that within the chunk's own size */
    if (nb && (ts == 0 || bs == 0 || bs > nb)) return ZC_BLOSC_BAD_HEADER;
    if (B.cbuffer_validate(src, n, &nb) != 0) return ZC_BLOSC_BAD_HEADER;
    *nbytes = nb;
    *blocksize = bs;
    *typesize = ts;
    return ZC_OK;
}

int zc_blosc_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n) {
    size_t nb, bs, ts;
    int r = zc_blosc_header(src, n, &nb, &bs, &ts);
    if (r != ZC_OK) return r;
    if (nb != dst_n) return ZC_BLOSC_SIZE;
    if (nb == 0) return ZC_OK;
    r = B.decompress_ctx(src, dst, dst_n, 1);
    return r >= 0 && (size_t)r == dst_n ? ZC_OK : ZC_BLOSC_BAD_DATA;
}

int zc_blosc_decode_range(const uint8_t *src, size_t n, uint8_t *dst, size_t dst_n, size_t lo, size_t hi) {
    size_t nb, bs, ts, start, stop;
    int r = zc_blosc_header(src, n, &nb, &bs, &ts);
    if (r != ZC_OK) return r;
    if (nb != dst_n) return ZC_BLOSC_SIZE;
    if (hi > dst_n) hi = dst_n;
    /* whole-chunk decodes are faster than item access once most blocks are needed;
       getitem reads the current format version, items of the header's typesize only */
    if (lo >= hi || 2 * (hi - lo) > dst_n || src[0] != ZC_BLOSC_VERSION_FORMAT || nb % ts || bs >= nb)
        return zc_blosc_decode(src, n, dst, dst_n);
    start = lo / ts;
    stop = (hi + ts - 1) / ts;
    r = B.getitem(src, (int)start, (int)(stop - start), dst + start * ts);
    return r >= 0 && (size_t)r == (stop - start) * ts ? ZC_OK : ZC_BLOSC_BAD_DATA;
}

size_t zc_blosc_bound(size_t n) { return n + 16; }  /* BLOSC_MAX_OVERHEAD */

size_t zc_blosc_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const char *cname,
                       int clevel, int shuffle, size_t typesize, size_t blocksize, int *code) {
    int r;
    if (!B.ok) { *code = ZC_UNAVAILABLE; return 0; }
    r = B.compress_ctx(clevel, shuffle, typesize, n, src, dst, cap, cname, blocksize, 1);
    if (r <= 0) {
        *code = r == 0 ? ZC_NO_SPACE : ZC_ENCODE_FAILED;
        return 0;
    }
    *code = ZC_OK;
    return (size_t)r;
}
