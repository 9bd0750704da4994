# The exact generic caster (_cast_exact.pyx): what the block loops and the fused
# scale_offset loops call across the module boundary (void pointers + storage type codes).
from libc.stdint cimport uint8_t
from zarrcy._kernels._cast_types cimport cfg_t, fmt_t


cdef class CastFormat:
    cdef fmt_t f
    cdef readonly int code       # storage type code (T_INT8 .. T_FLOAT64)


cdef int setup_cfg(cfg_t* c, const fmt_t* f, int rounding, int out_of_range,
                   const void* keys, Py_ssize_t nkeys, const void* vals, Py_ssize_t nvals) except -1
cdef void release_cfg(cfg_t* c) noexcept nogil
cdef void setup_keys(cfg_t* c, int src_code, int dst_code) noexcept nogil
cdef Py_ssize_t fix_block(const void* x, int src_code, void* y, int dst_code, const uint8_t* fl,
                          Py_ssize_t m, const cfg_t* c) noexcept nogil
cdef Py_ssize_t classify(const void* x, int src_code, void* y, int dst_code, uint8_t* status,
                         Py_ssize_t n, const cfg_t* c) noexcept nogil
