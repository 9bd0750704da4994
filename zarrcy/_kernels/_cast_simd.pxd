# The runtime-dispatched C loops of the cast kernels, cimported by _cast_f2i (RNE) and
# _cast_fast (narrowing, fused decode).  Each module gets its own copy and its own dispatch
# state (_cast_fast.dispatch_isa sets both); loops a module does not call are dropped by
# the compiler.
#
# The hottest block loops -- float64 -> int (<= 32 bits) nearest-even, plain and fused with
# the scale_offset encode; the fused decode from integers; integer narrowing with wrap --
# are one C body each, compiled for the x86-64 baseline (SSE2) and, with a target
# attribute, for AVX2, picked at run time by __builtin_cpu_supports (so wheels still run on
# any x86-64).  Only IEEE add/sub/mul/div, compares and integer bit operations: no FMA is
# enabled (target "avx2" does not imply "fma"), so both builds give bit-identical results.
# Like the Cython loops they only *flag* a block; a flagged block is redone by the careful
# path.  The RNE body is the same arithmetic as _cast_fast._fp1_vec_loop with _RNE.
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t, uint16_t, uint32_t, uint64_t

cdef extern from "zc_cast_simd.h":
    int ZC_HAVE_AVX2_BUILD
    void zc_set_avx2_state(int v) noexcept nogil
    int zc_use_avx2() noexcept nogil
    int zc_narrow(const void* x, int ssz, void* y, int dsz, Py_ssize_t m) noexcept nogil
    int zc_dso_u8_d(const uint8_t* x, double* y, Py_ssize_t m, int nk, uint8_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i8_d(const int8_t* x, double* y, Py_ssize_t m, int nk, int8_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u16_d(const uint16_t* x, double* y, Py_ssize_t m, int nk, uint16_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i16_d(const int16_t* x, double* y, Py_ssize_t m, int nk, int16_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u32_d(const uint32_t* x, double* y, Py_ssize_t m, int nk, uint32_t key, double val, double o, double s) noexcept nogil
    int zc_dso_i32_d(const int32_t* x, double* y, Py_ssize_t m, int nk, int32_t key, double val, double o, double s) noexcept nogil
    int zc_dso_u8_f(const uint8_t* x, float* y, Py_ssize_t m, int nk, uint8_t key, float val, float o, float s) noexcept nogil
    int zc_dso_i8_f(const int8_t* x, float* y, Py_ssize_t m, int nk, int8_t key, float val, float o, float s) noexcept nogil
    int zc_dso_u16_f(const uint16_t* x, float* y, Py_ssize_t m, int nk, uint16_t key, float val, float o, float s) noexcept nogil
    int zc_dso_i16_f(const int16_t* x, float* y, Py_ssize_t m, int nk, int16_t key, float val, float o, float s) noexcept nogil
    int zc_rne_i8(const double* x, int8_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_i16(const double* x, int16_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_i32(const double* x, int32_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u8(const double* x, uint8_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u16(const double* x, uint16_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
    int zc_rne_u32(const double* x, uint32_t* y, Py_ssize_t m, double lo, double hi, int nk, int clamp, int fused, uint64_t nanv, double o, double s) noexcept nogil
