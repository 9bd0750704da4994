# The exact generic caster (_cast_exact.pyx): what the block loops and the fused
# scale_offset loops call across the module boundary (void pointers + storage type codes).
from cpython.buffer cimport Py_buffer
from libc.stdint cimport uint8_t
from zarrcy._kernels._cast_types cimport cfg_t, fmt_t


cdef class CastFormat:
    cdef fmt_t f
    cdef readonly int code       # storage type code (T_INT8 .. T_FLOAT64)


cdef class Arrays:
    # the array arguments of one entry-point call, as held buffers (released on dealloc)
    cdef Py_buffer views[5]
    cdef bint held[5]
    cdef int code[5]             # storage type code, -1 for an absent (None) argument
    cdef Py_ssize_t n[5]         # elements
    cdef void* ptr[5]            # first element (NULL when empty or absent)
    cdef int take(self, int i, object obj, bint writable, str name) except -1


cdef int setup_cfg(cfg_t* c, const fmt_t* f, int rounding, int out_of_range,
                   const void* keys, Py_ssize_t nkeys, const void* vals, Py_ssize_t nvals) except -1
cdef void release_cfg(cfg_t* c) noexcept nogil
cdef void setup_keys(cfg_t* c, int src_code, int dst_code) noexcept nogil
cdef Py_ssize_t fix_block(const void* x, int src_code, void* y, int dst_code, const uint8_t* fl,
                          Py_ssize_t m, const cfg_t* c) noexcept nogil
cdef Py_ssize_t classify(const void* x, int src_code, void* y, int dst_code, uint8_t* status,
                         Py_ssize_t n, const cfg_t* c) noexcept nogil
