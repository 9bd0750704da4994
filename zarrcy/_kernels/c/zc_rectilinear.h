/* C helpers of zarrcy/_kernels/_rectilinear.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_RECTILINEAR_H
#define ZC_RECTILINEAR_H

static inline int zarrcy_add_sat(long long a, long long b, long long *r) {
    if (__builtin_add_overflow(a, b, r)) { *r = 0x7fffffffffffffffLL; return 1; }
    return 0;
}
static inline int zarrcy_mul_sat(long long a, long long b, long long *r) {
    if (__builtin_mul_overflow(a, b, r)) { *r = 0x7fffffffffffffffLL; return 1; }
    return 0;
}

#endif
