# The fused scale_offset + cast_value loops (_cast_scale_offset.pyx), per block, for the
# report kernel (_cast_report.pyx): void pointers + storage type codes.
from zarrcy._kernels._cast_types cimport cfg_t


cdef Py_ssize_t so_cast_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n, double offset,
                              double scale, cfg_t* c, int* stage) noexcept nogil
cdef Py_ssize_t cast_so_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n, double offset,
                              double scale, cfg_t* c, int* stage) noexcept nogil
