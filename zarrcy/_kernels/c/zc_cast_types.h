/* C helpers of zarrcy/_kernels/_cast_types.pxd (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_CAST_TYPES_H
#define ZC_CAST_TYPES_H

#include <string.h>
static inline int zc_clz64(unsigned long long x) { return __builtin_clzll(x); }
static inline int zc_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
static inline unsigned int zc_f2u(float f) { unsigned int u; memcpy(&u, &f, 4); return u; }
static inline float zc_u2f(unsigned int u) { float f; memcpy(&f, &u, 4); return f; }
static inline unsigned long long zc_d2u(double f) { unsigned long long u; memcpy(&u, &f, 8); return u; }
static inline double zc_u2d(unsigned long long u) { double f; memcpy(&f, &u, 8); return f; }
#define ZC_DBL_MAX 1.7976931348623157e308
#define ZC_FLT_MAX 3.4028234663852886e38

#endif
