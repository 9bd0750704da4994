/* C helpers of zarrcy/_kernels/_cast_exact.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_CAST_EXACT_H
#define ZC_CAST_EXACT_H

static const int zc_little_endian = (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);

#endif
