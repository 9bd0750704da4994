# Little-endian loads and stores of the unsigned integers in stored formats (shard
# index entries: u64; vlen-utf8/vlen-bytes headers: u32), shared by the kernels that
# read or write them.  Byte by byte, so they are right on any host byte order and at any
# alignment (C compilers turn each into one load/store, plus a bswap on big-endian hosts).
from libc.stdint cimport uint8_t, uint32_t, uint64_t


cdef inline uint32_t load_le32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0]) | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline void store_le32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = <uint8_t>v
    p[1] = <uint8_t>(v >> 8)
    p[2] = <uint8_t>(v >> 16)
    p[3] = <uint8_t>(v >> 24)


cdef inline uint64_t load_le64(const uint8_t* p) noexcept nogil:
    return ((<uint64_t>p[0]) | (<uint64_t>p[1] << 8) | (<uint64_t>p[2] << 16)
            | (<uint64_t>p[3] << 24) | (<uint64_t>p[4] << 32) | (<uint64_t>p[5] << 40)
            | (<uint64_t>p[6] << 48) | (<uint64_t>p[7] << 56))


cdef inline void store_le64(uint8_t* p, uint64_t v) noexcept nogil:
    cdef int k
    for k in range(8):
        p[k] = <uint8_t>(v >> (8 * k))
