# The fast block loops of cast_value (_cast_fast.pyx): what the fused scale_offset loops
# call per block (void pointers + storage type codes; fused functions cannot be shared).
from libc.stdint cimport uint64_t
from zarrcy._kernels._cast_types cimport cfg_t


cdef Py_ssize_t drive(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n,
                      const cfg_t* c) noexcept nogil
cdef int dso_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t m, int nk,
                   const void* key, const void* val, double o, double s) noexcept nogil
