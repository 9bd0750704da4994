/* C helpers of zarrcy/_kernels/_inner_common.pxd (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_INNER_COMMON_H
#define ZC_INNER_COMMON_H

#include <string.h>
#include <stdint.h>
/* in-place byte swap of nbytes / w words of w = 2, 4 or 8 bytes (the shift
   patterns compile to bswap instructions) */
static void zc_bswap(uint8_t *p, Py_ssize_t nbytes, int w) {
    Py_ssize_t i;
    if (w == 2) {
        for (i = 0; i + 2 <= nbytes; i += 2) {
            uint16_t v; memcpy(&v, p + i, 2);
            v = (uint16_t)((v >> 8) | (v << 8));
            memcpy(p + i, &v, 2);
        }
    } else if (w == 4) {
        for (i = 0; i + 4 <= nbytes; i += 4) {
            uint32_t v; memcpy(&v, p + i, 4);
            v = ((v & 0x000000FFu) << 24) | ((v & 0x0000FF00u) << 8)
              | ((v & 0x00FF0000u) >> 8) | ((v & 0xFF000000u) >> 24);
            memcpy(p + i, &v, 4);
        }
    } else if (w == 8) {
        for (i = 0; i + 8 <= nbytes; i += 8) {
            uint64_t v; memcpy(&v, p + i, 8);
            v = ((v & 0x00000000000000FFull) << 56) | ((v & 0x000000000000FF00ull) << 40)
              | ((v & 0x0000000000FF0000ull) << 24) | ((v & 0x00000000FF000000ull) << 8)
              | ((v & 0x000000FF00000000ull) >> 8) | ((v & 0x0000FF0000000000ull) >> 24)
              | ((v & 0x00FF000000000000ull) >> 40) | ((v & 0xFF00000000000000ull) >> 56);
            memcpy(p + i, &v, 8);
        }
    }
}

#endif
