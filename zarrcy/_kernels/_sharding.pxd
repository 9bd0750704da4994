# Declarations shared by the sharding kernels (v3-codec-sharding-indexed.rst).
from libc.stdint cimport int64_t, uint64_t

# validation verdicts (returned through ``validate_index``)
cpdef enum IndexFault:
    FAULT_NONE = 0
    FAULT_HALF_EMPTY = 1      # exactly one of offset/nbytes is 2^64-1
    FAULT_OVERFLOW = 2        # offset + nbytes does not fit in uint64
    FAULT_PAST_END = 3        # offset + nbytes > size of the shard
    FAULT_INTO_INDEX = 4      # bytes overlap the shard index
