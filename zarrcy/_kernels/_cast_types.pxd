# Shared declarations for the cast_value / scale_offset kernels (fused types declared once).
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

# an exactly decoded number: (-1)^neg * m * 2^e, cls 0 finite / 1 infinite / 2 NaN
ctypedef struct num_t:
    int cls
    int neg
    uint64_t m
    int e
