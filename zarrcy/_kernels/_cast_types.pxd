# Shared declarations of the cast_value / scale_offset kernels (fused types declared once):
# _cast_exact (generic exact caster, CastFormat), _cast_fast (block loops, AVX2/baseline
# dispatch, cast_into), _cast_scale_offset (fused scale_offset + cast loops), _scale_offset.
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

# every numpy storage type a cast can read or write (ml_dtypes types are passed as their
# storage integers: uint8/uint16 bit patterns, narrow ints as int8/uint8)
ctypedef fused src_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double

ctypedef fused dst_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double

# narrower fused sets for the fast float -> int loops and the fused quantize path (fewer
# specialisations -> shorter builds)
ctypedef fused flt_t:
    float
    double

ctypedef fused ivec_t:
    int8_t
    int16_t
    int32_t
    uint8_t
    uint16_t
    uint32_t

# scale_offset arithmetic types (native ones; narrow floats are done in float64 + rounding)
ctypedef fused so_t:
    int8_t
    int16_t
    int32_t
    int64_t
    uint8_t
    uint16_t
    uint32_t
    uint64_t
    float
    double

# storage type codes, used only where a block crosses a module boundary (void pointers):
# the order of src_t / dst_t above
cdef enum:
    T_INT8 = 0
    T_INT16 = 1
    T_INT32 = 2
    T_INT64 = 3
    T_UINT8 = 4
    T_UINT16 = 5
    T_UINT32 = 6
    T_UINT64 = 7
    T_FLOAT32 = 8
    T_FLOAT64 = 9

# per-element status codes (check_cast); >= ST_FAIL_NONFINITE means "fails"
cdef enum:
    ST_EXACT = 0
    ST_ROUNDED = 1
    ST_CLAMPED = 2
    ST_WRAPPED = 3
    ST_MAPPED = 4
    ST_FAIL_NONFINITE = 5
    ST_FAIL_RANGE = 6

cdef enum:
    R_NEAREST_EVEN = 0
    R_TOWARDS_ZERO = 1
    R_TOWARDS_POSITIVE = 2
    R_TOWARDS_NEGATIVE = 3
    R_NEAREST_AWAY = 4

cdef enum:
    OOR_NONE = 0
    OOR_CLAMP = 1
    OOR_WRAP = 2

# elements per block of the fast loops (flags live on the stack)
cdef enum:
    BLOCK = 1024

# A target format.  kind: 0 signed int, 1 unsigned int, 2 binary float.
ctypedef struct fmt_t:
    int kind
    int nbits        # value bits (int: N of the two's complement; float: total bits)
    int itemsize     # storage bytes
    int natural      # 1 if the storage C type *is* the format (int8..uint64, float, double)
    int64_t lo       # ints: range
    uint64_t hi
    int p            # floats: significand bits including the implicit one
    int emin         # minimum normal exponent (unbiased)
    int emax         # maximum exponent (unbiased)
    int bias
    int has_inf
    int has_nan
    uint64_t nan_bits
    int no_neg_zero  # "fnuz" floats: a zero is +0 (the sign bit alone is their NaN)
    int unsigned_f   # float8_e8m0fnu: no sign bit, no zero, no subnormals (p == 1)
    uint64_t max_frac  # largest fraction field at exponent emax (float8_e4m3fn: one below all ones)

# an exactly decoded number: (-1)^neg * m * 2^e, cls 0 finite / 1 infinite / 2 NaN
ctypedef struct num_t:
    int cls
    int neg
    uint64_t m
    int e

# one cast call's configuration (built by _cast_exact.setup_cfg, keys by setup_keys)
ctypedef struct cfg_t:
    fmt_t f
    int rmode
    int oor
    Py_ssize_t nkeys
    const void* keys      # nkeys elements of the source storage type
    const void* vals      # nkeys elements of the target storage type
    num_t* knums          # keys decoded
    uint64_t* vbits       # values as target storage bits
    int keys_general      # 1: some key is finite -> mapping pass over every element
    int flag_nonfinite    # fast float paths must flag NaN/Inf (deferred NaN/Inf keys)
    int nan_key           # the map is exactly one NaN key: fast loops select its value inline
    uint64_t nan_val      # ... its value (target storage bits)

# bit casts and limits (memcpy: no aliasing questions; compiles to one move)
cdef extern from "zc_cast_types.h":
    int zc_clz64(uint64_t x) noexcept nogil
    int zc_ctz64(uint64_t x) noexcept nogil
    uint32_t zc_f2u(float f) noexcept nogil
    float zc_u2f(uint32_t u) noexcept nogil
    uint64_t zc_d2u(double f) noexcept nogil
    double zc_u2d(uint64_t u) noexcept nogil
    double ZC_DBL_MAX
    double ZC_FLT_MAX


cdef inline uint64_t _nz(uint64_t a) noexcept nogil:
    """1 if a != 0 else 0, without a compare (keeps the loop in 64-bit lanes)."""
    return ((a | ((<uint64_t>0) - a)) >> 63) & 1


cdef inline int code_of_src(const src_t* p) noexcept nogil:
    """The storage type code of ``src_t`` (``p`` only selects the specialisation)."""
    if src_t is int8_t:
        return T_INT8
    elif src_t is int16_t:
        return T_INT16
    elif src_t is int32_t:
        return T_INT32
    elif src_t is int64_t:
        return T_INT64
    elif src_t is uint8_t:
        return T_UINT8
    elif src_t is uint16_t:
        return T_UINT16
    elif src_t is uint32_t:
        return T_UINT32
    elif src_t is uint64_t:
        return T_UINT64
    elif src_t is float:
        return T_FLOAT32
    else:
        return T_FLOAT64


cdef inline int code_of_dst(const dst_t* p) noexcept nogil:
    """The storage type code of ``dst_t``."""
    if dst_t is int8_t:
        return T_INT8
    elif dst_t is int16_t:
        return T_INT16
    elif dst_t is int32_t:
        return T_INT32
    elif dst_t is int64_t:
        return T_INT64
    elif dst_t is uint8_t:
        return T_UINT8
    elif dst_t is uint16_t:
        return T_UINT16
    elif dst_t is uint32_t:
        return T_UINT32
    elif dst_t is uint64_t:
        return T_UINT64
    elif dst_t is float:
        return T_FLOAT32
    else:
        return T_FLOAT64
