# The float -> int block loops (_cast_f2i.pyx): what _cast_fast's pass 1 and the fused
# scale_offset encode call per block (void pointers + storage type codes).
from libc.stdint cimport uint8_t, uint64_t
from zarrcy._kernels._cast_types cimport cfg_t


cdef uint8_t fp1_block(const void* x, int src_code, void* y, int dst_code, uint8_t* fl, Py_ssize_t m,
                       const cfg_t* c) noexcept nogil
cdef int rne_block(const double* x, void* y, int dst_code, Py_ssize_t m, double lo, double hi, int nk,
                   int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
cdef void set_isa(int state) noexcept nogil
cdef int uses_avx2() noexcept nogil
