/* C helpers of zarrcy/_kernels/_cast_simd.pxd (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_CAST_SIMD_H
#define ZC_CAST_SIMD_H

#include <stdint.h>
#include <string.h>
#if defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function"   /* each module calls a subset */
#endif
#define ZC_MAGIC 6755399441055744.0
#define ZC_EXP 0x7ff0000000000000ULL
#define ZC_ONE_EXP 0x0010000000000000ULL
static inline uint64_t zc_bits(double f) { uint64_t u; memcpy(&u, &f, 8); return u; }
/* FUSED: v = (x - o) * s first (the scale_offset encode step, in float64 arithmetic);
   a finite x giving a non-finite v, NaN/Inf outside the NaN key, or (OCLAMP == 0) a
   value that clamping moved -> return 1 */
#define ZC_RNE_BODY(T, NK, OCLAMP, FUSED)                                              \
    uint64_t accn = 0, accd = 0, acco = 0; Py_ssize_t i;                             \
    for (i = 0; i < m; i++) {                                                         \
        double v = x[i];                                                              \
        if (FUSED) { double t = (v - o) * s;                                          \
            acco |= (~((zc_bits(v) & ZC_EXP) + ZC_ONE_EXP)) & ((zc_bits(t) & ZC_EXP) + ZC_ONE_EXP); \
            v = t; }                                                                  \
        uint64_t b = zc_bits(v);                                                      \
        double cc = v > lo ? v : lo;                                                  \
        cc = cc < hi ? cc : hi;                                                       \
        uint64_t k = zc_bits(cc + ZC_MAGIC);                                          \
        if (NK) {                                                                     \
            uint64_t nanm = (uint64_t)0 - (((b & 0x7fffffffffffffffULL) + 0x000fffffffffffffULL) >> 63); \
            k = (k & ~nanm) | (nanv & nanm);                                          \
            accn |= ((b & ZC_EXP) + ZC_ONE_EXP) & ~nanm;                              \
            if (!OCLAMP) accd |= (zc_bits(cc - v) << 1) & ~nanm;                      \
        } else {                                                                      \
            accn |= (b & ZC_EXP) + ZC_ONE_EXP;                                        \
            if (!OCLAMP) accd |= zc_bits(cc - v) << 1;                                \
        }                                                                             \
        y[i] = (T)k;                                                                  \
    }                                                                                 \
    return (((accn | acco) >> 63) | (accd != 0)) != 0;

#define ZC_RNE_FN(NAME, ATTR, T, NK, OCLAMP, FUSED)                                    \
    ATTR static int NAME(const double* __restrict x, T* __restrict y, Py_ssize_t m,    \
                         double lo, double hi, uint64_t nanv, double o, double s)      \
    { ZC_RNE_BODY(T, NK, OCLAMP, FUSED) }

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && !defined(ZC_NO_AVX2)
#define ZC_HAVE_AVX2_BUILD 1
static int zc_avx2_state = -1;
static inline int zc_use_avx2(void) {
    if (zc_avx2_state < 0) { __builtin_cpu_init(); zc_avx2_state = __builtin_cpu_supports("avx2") ? 1 : 0; }
    return zc_avx2_state;
}
#define ZC_RNE_VARIANTS(SUF, T, NK, OCLAMP, FUSED)                                     \
    ZC_RNE_FN(zc_rne_base_##SUF, __attribute__((noinline)), T, NK, OCLAMP, FUSED)      \
    ZC_RNE_FN(zc_rne_avx2_##SUF, __attribute__((noinline, target("avx2"))), T, NK, OCLAMP, FUSED) \
    static int zc_rne_##SUF(const double* x, T* y, Py_ssize_t m, double lo, double hi, \
                            uint64_t nanv, double o, double s) {                       \
        return zc_use_avx2() ? zc_rne_avx2_##SUF(x, y, m, lo, hi, nanv, o, s)          \
                             : zc_rne_base_##SUF(x, y, m, lo, hi, nanv, o, s); }
#else
#define ZC_HAVE_AVX2_BUILD 0
static int zc_avx2_state = 0;
static inline int zc_use_avx2(void) { return 0; }
#define ZC_RNE_VARIANTS(SUF, T, NK, OCLAMP, FUSED) ZC_RNE_FN(zc_rne_##SUF, , T, NK, OCLAMP, FUSED)
#endif

/* suffix: <target type>_<n: no key | k: one NaN key>_<c: clamp | x: no out_of_range>_<p: plain | f: fused> */
#define ZC_RNE_TYPE(TN, T)                                                             \
    ZC_RNE_VARIANTS(TN##_n_c_p, T, 0, 1, 0) ZC_RNE_VARIANTS(TN##_n_x_p, T, 0, 0, 0)     \
    ZC_RNE_VARIANTS(TN##_k_c_p, T, 1, 1, 0) ZC_RNE_VARIANTS(TN##_k_x_p, T, 1, 0, 0)     \
    ZC_RNE_VARIANTS(TN##_n_c_f, T, 0, 1, 1) ZC_RNE_VARIANTS(TN##_n_x_f, T, 0, 0, 1)     \
    ZC_RNE_VARIANTS(TN##_k_c_f, T, 1, 1, 1) ZC_RNE_VARIANTS(TN##_k_x_f, T, 1, 0, 1)
ZC_RNE_TYPE(i8, int8_t)
ZC_RNE_TYPE(i16, int16_t)
ZC_RNE_TYPE(i32, int32_t)
ZC_RNE_TYPE(u8, uint8_t)
ZC_RNE_TYPE(u16, uint16_t)
ZC_RNE_TYPE(u32, uint32_t)

/* integer -> narrower integer with wrap: conversion to the unsigned type of the target
   width is modulo 2^N, the same bits for signed and unsigned types of either side */
#define ZC_NARROW_FN(NAME, ATTR, S, D) \
    ATTR static void NAME(const S* __restrict x, D* __restrict y, Py_ssize_t m) { \
        Py_ssize_t i; for (i = 0; i < m; i++) y[i] = (D)x[i]; }
#if ZC_HAVE_AVX2_BUILD
#define ZC_NARROW(SUF, S, D) \
    ZC_NARROW_FN(zc_narrow_base_##SUF, __attribute__((noinline)), S, D) \
    ZC_NARROW_FN(zc_narrow_avx2_##SUF, __attribute__((noinline, target("avx2"))), S, D) \
    static void zc_narrow_##SUF(const S* x, D* y, Py_ssize_t m) { \
        if (zc_use_avx2()) zc_narrow_avx2_##SUF(x, y, m); else zc_narrow_base_##SUF(x, y, m); }
#else
#define ZC_NARROW(SUF, S, D) ZC_NARROW_FN(zc_narrow_##SUF, , S, D)
#endif
ZC_NARROW(2_1, uint16_t, uint8_t)
ZC_NARROW(4_1, uint32_t, uint8_t)
ZC_NARROW(4_2, uint32_t, uint16_t)
ZC_NARROW(8_1, uint64_t, uint8_t)
ZC_NARROW(8_2, uint64_t, uint16_t)
ZC_NARROW(8_4, uint64_t, uint32_t)
/* sizes in bytes; returns 0 if the pair is not a narrowing one (caller loops itself) */
static int zc_narrow(const void* x, int ssz, void* y, int dsz, Py_ssize_t m) {
    if (ssz == 2 && dsz == 1) { zc_narrow_2_1((const uint16_t*)x, (uint8_t*)y, m); return 1; }
    if (ssz == 4 && dsz == 1) { zc_narrow_4_1((const uint32_t*)x, (uint8_t*)y, m); return 1; }
    if (ssz == 4 && dsz == 2) { zc_narrow_4_2((const uint32_t*)x, (uint16_t*)y, m); return 1; }
    if (ssz == 8 && dsz == 1) { zc_narrow_8_1((const uint64_t*)x, (uint8_t*)y, m); return 1; }
    if (ssz == 8 && dsz == 2) { zc_narrow_8_2((const uint64_t*)x, (uint16_t*)y, m); return 1; }
    if (ssz == 8 && dsz == 4) { zc_narrow_8_4((const uint64_t*)x, (uint32_t*)y, m); return 1; }
    return 0;
}

/* fused decode: y = cast(x) / s + o for an integer source exact in F (no rounding, no
   range question), with at most one scalar_map key (x == key -> val before the division,
   so those elements get val / s + o).  Returns 1 if any result is non-finite (an
   integer source is always finite: that is scale_offset's overflow error, or a
   non-finite key value, both rare): the caller then redoes the block with the
   two-step path, which decides and names the element. */
#define ZC_DSO_FN(NAME, ATTR, S, F, NK, FB) \
    ATTR static int NAME(const S* __restrict x, F* __restrict y, Py_ssize_t m, S key, F val, F o, F s) { \
        FB acc = 0; Py_ssize_t i; \
        for (i = 0; i < m; i++) { \
            F r = (F)x[i] / s + o; \
            acc |= ZC_NFB_##F(r); \
            y[i] = r; } \
        if (NK) { \
            F vr = val / s + o;   /* the key's element: the same two operations on val */ \
            if (!(ZC_NFB_##F(val) >> (sizeof(FB) * 8 - 1)) && (ZC_NFB_##F(vr) >> (sizeof(FB) * 8 - 1))) \
                return 1; \
            i = 0; \
            if (sizeof(S) == 1) {  /* skip 8 elements at a time while none equals the key */ \
                uint64_t kk = 0x0101010101010101ULL * (uint8_t)key; \
                for (; i + 8 <= m; i += 8) { \
                    uint64_t w; memcpy(&w, x + i, 8); w ^= kk; \
                    if (((w - 0x0101010101010101ULL) & ~w & 0x8080808080808080ULL) == 0) continue; \
                    for (Py_ssize_t j = i; j < i + 8; j++) if (x[j] == key) y[j] = vr; } \
            } \
            for (; i < m; i++) if (x[i] == key) y[i] = vr; } \
        return (acc >> (sizeof(FB) * 8 - 1)) != 0; }
static inline uint64_t zc_nfb_double(double v) { return (zc_bits(v) & ZC_EXP) + ZC_ONE_EXP; }
static inline uint32_t zc_nfb_float(float v) { uint32_t u; memcpy(&u, &v, 4); return (u & 0x7f800000U) + 0x00800000U; }
#define ZC_NFB_double(v) zc_nfb_double(v)
#define ZC_NFB_float(v) zc_nfb_float(v)
#if ZC_HAVE_AVX2_BUILD
#define ZC_DSO(SUF, S, F, FB) \
    ZC_DSO_FN(zc_dso_base0_##SUF, __attribute__((noinline)), S, F, 0, FB) \
    ZC_DSO_FN(zc_dso_base1_##SUF, __attribute__((noinline)), S, F, 1, FB) \
    ZC_DSO_FN(zc_dso_avx20_##SUF, __attribute__((noinline, target("avx2"))), S, F, 0, FB) \
    ZC_DSO_FN(zc_dso_avx21_##SUF, __attribute__((noinline, target("avx2"))), S, F, 1, FB) \
    static int zc_dso_##SUF(const S* x, F* y, Py_ssize_t m, int nk, S key, F val, F o, F s) { \
        if (zc_use_avx2()) return nk ? zc_dso_avx21_##SUF(x, y, m, key, val, o, s) : zc_dso_avx20_##SUF(x, y, m, key, val, o, s); \
        return nk ? zc_dso_base1_##SUF(x, y, m, key, val, o, s) : zc_dso_base0_##SUF(x, y, m, key, val, o, s); }
#else
#define ZC_DSO(SUF, S, F, FB) \
    ZC_DSO_FN(zc_dso_base0_##SUF, , S, F, 0, FB) \
    ZC_DSO_FN(zc_dso_base1_##SUF, , S, F, 1, FB) \
    static int zc_dso_##SUF(const S* x, F* y, Py_ssize_t m, int nk, S key, F val, F o, F s) { \
        return nk ? zc_dso_base1_##SUF(x, y, m, key, val, o, s) : zc_dso_base0_##SUF(x, y, m, key, val, o, s); }
#endif
ZC_DSO(u8_d, uint8_t, double, uint64_t)
ZC_DSO(i8_d, int8_t, double, uint64_t)
ZC_DSO(u16_d, uint16_t, double, uint64_t)
ZC_DSO(i16_d, int16_t, double, uint64_t)
ZC_DSO(u32_d, uint32_t, double, uint64_t)
ZC_DSO(i32_d, int32_t, double, uint64_t)
ZC_DSO(u8_f, uint8_t, float, uint32_t)
ZC_DSO(i8_f, int8_t, float, uint32_t)
ZC_DSO(u16_f, uint16_t, float, uint32_t)
ZC_DSO(i16_f, int16_t, float, uint32_t)

/* one entry point per target type: the (key, clamp, fused) choice is per block, not per element */
#define ZC_RNE_PICK(TN, T)                                                             \
    static int zc_rne_##TN(const double* x, T* y, Py_ssize_t m, double lo, double hi,  \
                           int nk, int clamp, int fused, uint64_t nanv, double o, double s) { \
        if (fused) {                                                                   \
            if (nk) return clamp ? zc_rne_##TN##_k_c_f(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_k_x_f(x, y, m, lo, hi, nanv, o, s); \
            return clamp ? zc_rne_##TN##_n_c_f(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_n_x_f(x, y, m, lo, hi, nanv, o, s); } \
        if (nk) return clamp ? zc_rne_##TN##_k_c_p(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_k_x_p(x, y, m, lo, hi, nanv, o, s); \
        return clamp ? zc_rne_##TN##_n_c_p(x, y, m, lo, hi, nanv, o, s) : zc_rne_##TN##_n_x_p(x, y, m, lo, hi, nanv, o, s); }
ZC_RNE_PICK(i8, int8_t)
ZC_RNE_PICK(i16, int16_t)
ZC_RNE_PICK(i32, int32_t)
ZC_RNE_PICK(u8, uint8_t)
ZC_RNE_PICK(u16, uint16_t)
ZC_RNE_PICK(u32, uint32_t)

/* dispatch_isa: -1 detect the CPU on next use, 0 baseline */
static void zc_set_avx2_state(int v) { zc_avx2_state = v; }

#endif
