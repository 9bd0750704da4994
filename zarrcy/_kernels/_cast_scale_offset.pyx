"""The fused quantize loops: scale_offset and cast_value in one pass over memory.

(ext-codec-scale_offset.md "Algorithm" then ext-codec-cast_value.md "Procedure", or the
reverse on decode.)  Per block of ``BLOCK`` elements: the one-pass dispatched C loop of
``_cast_f2i`` / ``_cast_fast`` where it applies (float64 -> int nearest-even encode, integer -> float
decode), else the two steps in turn -- the scale_offset arithmetic in the array type, then
the plain cast block driver.  A block the one-pass loop flags is redone by the two-step
path, which decides every edge case, so results and the reported (index, stage) are those
of the two codecs run one after the other.

Loops are ``noexcept nogil`` and return -1 or the index of the first failing element.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.math cimport fabs

from zarrcy._kernels._cast_types cimport (
    src_t, dst_t, flt_t, cfg_t, code_of_src, code_of_dst,
    T_INT8, T_INT16, T_INT32, T_INT64, T_UINT8, T_UINT16, T_UINT32, T_UINT64, T_FLOAT32, T_FLOAT64,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP, BLOCK, zc_d2u, ZC_DBL_MAX,
    ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED,
)
from zarrcy._kernels._cast_exact cimport Arrays, CastFormat, setup_cfg, release_cfg, setup_keys, classify
from zarrcy._kernels._cast_fast cimport drive, dso_block
from zarrcy._kernels._cast_f2i cimport rne_block


# ---- fused quantize path: scale_offset (float array type) then cast, one pass over memory

cdef inline uint64_t _nfbits(double v) noexcept nogil:
    """bit 63 set iff v is NaN or +-Inf."""
    return (zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000


cdef inline bint _finite(double v) noexcept nogil:
    return fabs(v) <= ZC_DBL_MAX


cdef Py_ssize_t _so_cast(const flt_t* x, dst_t* y, Py_ssize_t n, double od, double sd,
                         cfg_t* c, int* stage) noexcept nogil:
    """encode: t = (x - offset) * scale in src_t arithmetic, then cast t -> dst_t, per block.

    float64 -> int (<= 32 bits), nearest-even, clamp / none, no key or one NaN key: each
    block first tries the one-pass C loop; a block it flags (overflow, NaN/Inf outside the
    key, out of range) is redone below by the two-step path, which decides every edge case
    (so results and the reported index / stage are the same as without the fast loop).
    """
    cdef flt_t tmp[BLOCK]
    cdef double tmpd[BLOCK]
    cdef Py_ssize_t start = 0, m, i, r
    cdef uint64_t accb
    cdef uint8_t acc
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef int fast = 0
    cdef double flo = <double>c.f.lo, fhi = <double>c.f.hi
    cdef int sc = code_of_src(x), dc = code_of_dst(<const dst_t*>y)
    setup_keys(c, sc, dc)
    if (dst_t is int8_t or dst_t is int16_t or dst_t is int32_t or dst_t is uint8_t
            or dst_t is uint16_t or dst_t is uint32_t):
        fast = (c.f.natural and c.rmode == R_NEAREST_EVEN and c.oor != OOR_WRAP
                and not c.keys_general and (c.nkeys == 0 or c.nan_key))
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if flt_t is double:
            if fast and rne_block(x + start, y + start, dc, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 1,
                                  c.nan_val, o, s) == 0:
                start += m
                continue
        else:
            # float32: t = (x - o) * s in float32 arithmetic (scale_offset spec: the input
            # type's arithmetic), widened exactly to double, then the same one-pass RNE cast
            # loop as float64 sources.  A block the loop flags (an overflow to Inf is flagged
            # as a non-finite value) is redone below by the two-step path.
            if fast:
                for i in range(m):
                    tmpd[i] = <double>((x[start + i] - o) * s)
                if rne_block(<const double*>tmpd, y + start, dc, m, flo, fhi, c.nan_key, c.oor == OOR_CLAMP, 0,
                             c.nan_val, 0.0, 1.0) == 0:
                    start += m
                    continue
        acc = 0
        if flt_t is double:
            accb = 0
            for i in range(m):
                tmp[i] = (x[start + i] - o) * s
                accb |= (~_nfbits(x[start + i])) & _nfbits(tmp[i])
            acc = (accb >> 63) != 0
        else:
            for i in range(m):
                tmp[i] = (x[start + i] - o) * s
                acc |= _finite(<double>x[start + i]) & (not _finite(<double>tmp[i]))
        if acc:
            for i in range(m):
                if _finite(<double>x[start + i]) and not _finite(<double>tmp[i]):
                    stage[0] = 0
                    return start + i
        r = drive(<const flt_t*>tmp, sc, y + start, dc, m, c)
        if r >= 0:
            stage[0] = 1
            return start + r
        start += m
    return -1


cdef Py_ssize_t _cast_so(const src_t* x, flt_t* y, Py_ssize_t n, double od, double sd,
                         cfg_t* c, int* stage) noexcept nogil:
    """decode: t = cast(x) -> dst_t, then y = t / scale + offset in dst_t arithmetic, per block.

    Integer sources exact in dst_t (<= 32 bits into float64, <= 16 bits into float32) with
    no key or one (finite) scalar_map key: each block first tries the one-pass C loop; a
    flagged block (scale_offset overflow) is redone by the two-step path below.
    """
    cdef flt_t tmp[BLOCK]
    cdef Py_ssize_t start = 0, m, i, r
    cdef uint8_t acc
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef int fast = 0
    cdef int sc = code_of_src(x), dc = code_of_dst(<const flt_t*>y)
    setup_keys(c, sc, dc)
    if c.f.natural and (c.nkeys == 0 or (c.nkeys == 1 and c.keys_general)):
        if src_t is uint8_t or src_t is int8_t or src_t is uint16_t or src_t is int16_t:
            fast = 1
        elif src_t is uint32_t or src_t is int32_t:
            if flt_t is double:
                fast = 1
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        if fast and dso_block(x + start, sc, y + start, dc, m, <int>c.nkeys, c.keys, c.vals, <double>o,
                              <double>s) == 0:
            start += m
            continue
        r = drive(x + start, sc, tmp, dc, m, c)
        if r >= 0:
            stage[0] = 1
            return start + r
        acc = 0
        for i in range(m):
            y[start + i] = tmp[i] / s + o
            acc |= _finite(<double>tmp[i]) & (not _finite(<double>y[start + i]))
        if acc:
            for i in range(m):
                if _finite(<double>tmp[i]) and not _finite(<double>y[start + i]):
                    stage[0] = 0
                    return start + i
        start += m
    return -1


cdef Py_ssize_t _so_cast_dst(const flt_t* x, void* y, int dst_code, Py_ssize_t n, double o, double s,
                             cfg_t* c, int* stage) noexcept nogil:
    if dst_code == T_INT8:
        return _so_cast(x, <int8_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT16:
        return _so_cast(x, <int16_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT32:
        return _so_cast(x, <int32_t*>y, n, o, s, c, stage)
    elif dst_code == T_INT64:
        return _so_cast(x, <int64_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT8:
        return _so_cast(x, <uint8_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT16:
        return _so_cast(x, <uint16_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT32:
        return _so_cast(x, <uint32_t*>y, n, o, s, c, stage)
    elif dst_code == T_UINT64:
        return _so_cast(x, <uint64_t*>y, n, o, s, c, stage)
    elif dst_code == T_FLOAT32:
        return _so_cast(x, <float*>y, n, o, s, c, stage)
    else:
        return _so_cast(x, <double*>y, n, o, s, c, stage)


cdef Py_ssize_t _cast_so_src(const void* x, int src_code, flt_t* y, Py_ssize_t n, double o, double s,
                             cfg_t* c, int* stage) noexcept nogil:
    if src_code == T_INT8:
        return _cast_so(<const int8_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT16:
        return _cast_so(<const int16_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT32:
        return _cast_so(<const int32_t*>x, y, n, o, s, c, stage)
    elif src_code == T_INT64:
        return _cast_so(<const int64_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT8:
        return _cast_so(<const uint8_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT16:
        return _cast_so(<const uint16_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT32:
        return _cast_so(<const uint32_t*>x, y, n, o, s, c, stage)
    elif src_code == T_UINT64:
        return _cast_so(<const uint64_t*>x, y, n, o, s, c, stage)
    elif src_code == T_FLOAT32:
        return _cast_so(<const float*>x, y, n, o, s, c, stage)
    else:
        return _cast_so(<const double*>x, y, n, o, s, c, stage)


# ---------------------------------------------------------------------------------------
# Python entry points (zarrcy.codecs.scale_offset validates everything before calling)
# ---------------------------------------------------------------------------------------

cdef int _take_all(Arrays a, str name, src, dst, CastFormat fmt, keys, values) except -1:
    a.take(0, src, False, name + ": src")
    a.take(1, dst, True, name + ": dst")
    a.take(2, keys, False, name + ": keys")
    a.take(3, values, False, name + ": values")
    if a.n[1] != a.n[0]:
        raise ValueError(f"{name}: dst: expected {a.n[0]} elements, received {a.n[1]}")
    if a.code[1] != fmt.code:
        raise ValueError(f"{name}: dst: expected the storage type of {fmt!r}")
    if (keys is not None and a.code[2] != a.code[0]) or (values is not None and a.code[3] != a.code[1]):
        raise ValueError(f"{name}: keys, values: expected the source and the target storage types")
    return 0


def scale_offset_cast_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range,
                           double offset, double scale, keys=None, values=None):
    """Fused encode: ``cast((x - offset) * scale)`` for a float32/float64 source into ``dst``
    (1-d C-contiguous, the storage type of the cast's target format ``fmt``); modes and
    scalar_map as in :func:`zarrcy._kernels._cast_fast.cast_into`.

    Returns ``(index, stage)``: index -1 on success; stage 0 = scale_offset failed, 1 = cast failed.
    """
    cdef Arrays a = Arrays()
    cdef cfg_t c
    cdef Py_ssize_t n, r = -1
    cdef int stage = -1, sc, dc
    cdef const void* xp
    cdef void* yp
    _take_all(a, "scale_offset_cast_into", src, dst, fmt, keys, values)
    n = a.n[0]
    sc = a.code[0]
    dc = a.code[1]
    if sc != T_FLOAT32 and sc != T_FLOAT64:
        raise ValueError("scale_offset_cast_into: src: expected float32 or float64")
    setup_cfg(&c, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    if n:
        xp = a.ptr[0]
        yp = a.ptr[1]
        with nogil:
            if sc == T_FLOAT32:
                r = _so_cast_dst(<const float*>xp, yp, dc, n, offset, scale, &c, &stage)
            else:
                r = _so_cast_dst(<const double*>xp, yp, dc, n, offset, scale, &c, &stage)
    release_cfg(&c)
    return r, stage


def cast_scale_offset_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range,
                           double offset, double scale, keys=None, values=None):
    """Fused decode: ``cast(x) / scale + offset`` into a float32/float64 output ``dst`` (``fmt``:
    its format, the cast's target).  Returns ``(index, stage)`` like :func:`scale_offset_cast_into`.
    """
    cdef Arrays a = Arrays()
    cdef cfg_t c
    cdef Py_ssize_t n, r = -1
    cdef int stage = -1, sc, dc
    cdef const void* xp
    cdef void* yp
    _take_all(a, "cast_scale_offset_into", src, dst, fmt, keys, values)
    n = a.n[0]
    sc = a.code[0]
    dc = a.code[1]
    if dc != T_FLOAT32 and dc != T_FLOAT64:
        raise ValueError("cast_scale_offset_into: dst: expected float32 or float64")
    setup_cfg(&c, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    if n:
        xp = a.ptr[0]
        yp = a.ptr[1]
        with nogil:
            if dc == T_FLOAT32:
                r = _cast_so_src(xp, sc, <float*>yp, n, offset, scale, &c, &stage)
            else:
                r = _cast_so_src(xp, sc, <double*>yp, n, offset, scale, &c, &stage)
    release_cfg(&c)
    return r, stage


# ---------------------------------------------------------------------------------------
# encode + exactness report in one pass (zarrcy convert --quantize; zarrcy.casting.chain_report)
# ---------------------------------------------------------------------------------------

ctypedef struct qrep_t:
    Py_ssize_t counts[5]   # ST_EXACT .. ST_MAPPED
    Py_ssize_t mismatches  # NaN-ness / finiteness / an infinity changed by the round trip
    double max_abs         # over elements finite before and after
    double max_rel         # ... with a non-zero original
    int zero_err           # an original 0 read back as something else (relative error: inf)


# The two report loops in C: one body per (source type, rounding mode), comparisons turned
# into 0/1 integers and bit masks (the maxima of non-negative doubles as maxima of their
# bit patterns), so that the compiler vectorises them; built for the x86-64 baseline and,
# with a target attribute, for AVX2 (64-bit lane compares), picked at run time as in
# _cast_simd.pxd.  Only IEEE add/sub/div, compares and integer operations: no FMA is
# enabled, so both builds give bit-identical results.  "no-trapping-math" only lets the
# compiler evaluate both sides of a select (no value changes).
cdef extern from "zc_cast_scale_offset.h":
    void zq_status_f(const float* t, Py_ssize_t m, int mode, double lo, double hi, int64_t* n) noexcept nogil
    void zq_status_d(const double* t, Py_ssize_t m, int mode, double lo, double hi, int64_t* n) noexcept nogil
    void zq_stats_f(const float* x, const float* back, Py_ssize_t m, int64_t* st, double* e) noexcept nogil
    void zq_stats_d(const double* x, const double* back, Py_ssize_t m, int64_t* st, double* e) noexcept nogil
    int zq_set_isa(int state) noexcept nogil


def report_isa(force=None):
    """The build the report loops run (``"avx2"`` or ``"baseline"``); ``force``: ``"baseline"``
    or ``"avx2"`` (where the CPU has it) for tests, ``"auto"`` to detect again."""
    cdef int state = -2
    if force == "baseline":
        state = 0
    elif force == "avx2":
        state = 1
    elif force == "auto":
        state = -1
    elif force is not None:
        raise ValueError(f"report_isa: force: expected 'baseline', 'avx2', 'auto' or None, received {force!r}")
    if state == -2:
        return "avx2" if zq_set_isa(-2) == 1 else "baseline"
    return "avx2" if zq_set_isa(state) == 1 else "baseline"


cdef int _int_status(const flt_t* t, Py_ssize_t m, const cfg_t* c, qrep_t* q) noexcept nogil:
    """Per-element status counts of the cast ``t -> integer`` (natural target of <= 32 bits,
    no scalar_map or one NaN key): the same classes as ``_cast_exact._cast_num`` -- exact,
    rounded (inexact, in range after rounding), clamped / wrapped (out of range after
    rounding: outside [lo - 1, hi + 1] whatever the mode), mapped (NaN on the NaN key).
    1 if an element fails (NaN without the key, an infinity, out of range without
    out_of_range): the caller falls back."""
    cdef int64_t n[4]
    cdef double lo = <double>c.f.lo, hi = <double>c.f.hi
    n[0] = n[1] = n[2] = n[3] = 0
    if flt_t is float:
        zq_status_f(t, m, c.rmode, lo, hi, n)
    else:
        zq_status_d(t, m, c.rmode, lo, hi, n)
    if n[3] or (n[2] and not c.nan_key) or (n[1] and c.oor == OOR_NONE):
        return 1
    q.counts[ST_MAPPED] += n[2]
    q.counts[ST_ROUNDED] += n[0]
    if c.oor == OOR_CLAMP:
        q.counts[ST_CLAMPED] += n[1]
    else:
        q.counts[ST_WRAPPED] += n[1]
    q.counts[ST_EXACT] += m - n[0] - n[1] - n[2]
    return 0


cdef void _round_trip_stats(const flt_t* x, const flt_t* back, Py_ssize_t m, qrep_t* q) noexcept nogil:
    """``zarrcy.casting.check_cast``'s round-trip rule per element, in float64: a mismatch
    when NaN-ness or finiteness changed or an infinity changed sign; the absolute / relative
    error over elements finite on both sides (relative: over non-zero originals; an original
    zero read back as non-zero makes it infinite)."""
    cdef int64_t st[2]
    cdef double e[2]
    st[0] = 0
    st[1] = 0
    e[0] = q.max_abs
    e[1] = q.max_rel
    if flt_t is float:
        zq_stats_f(x, back, m, st, e)
    else:
        zq_stats_d(x, back, m, st, e)
    q.mismatches += st[0]
    q.max_abs = e[0]
    q.max_rel = e[1]
    q.zero_err |= <int>st[1]


cdef Py_ssize_t _quantize_report(const flt_t* x, void* y, int dc, Py_ssize_t isz, Py_ssize_t n, double od,
                                 double sd, cfg_t* ce, cfg_t* cdec, bint fast_status, qrep_t* q) noexcept nogil:
    """Per block of ``BLOCK`` elements: the encode loop of the codec (``_so_cast``: the same
    bytes), the cast statuses of ``t = (x - offset) * scale``, the codec's decode loop
    (``_cast_so``) back to ``back`` and the round-trip statistics, while the block is in
    the cache.  ``y`` NULL: a scratch block.  -1, or the start of the first block where a
    value fails or a kernel refuses (the caller then runs the exact element-wise check)."""
    cdef flt_t t[BLOCK]
    cdef flt_t back[BLOCK]
    cdef uint8_t st[BLOCK]
    cdef uint64_t scratch[BLOCK]
    cdef uint64_t scratch2[BLOCK]
    cdef Py_ssize_t start = 0, m, i, r
    cdef int stage = -1
    cdef int sc = code_of_src(x)
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef void* yb
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        yb = <void*>((<char*>y) + start * isz) if y != NULL else <void*>scratch
        if _so_cast_dst(x + start, yb, dc, m, od, sd, ce, &stage) >= 0:
            return start
        for i in range(m):
            t[i] = (x[start + i] - o) * s
        if fast_status:
            if _int_status(<const flt_t*>t, m, ce, q):
                return start
        else:
            setup_keys(ce, sc, dc)
            if classify(<const void*>t, sc, <void*>scratch2, dc, st, m, ce) >= 0:
                return start
            for i in range(m):
                q.counts[st[i]] += 1
        if _cast_so_src(<const void*>yb, dc, back, m, od, sd, cdec, &stage) >= 0:
            return start
        _round_trip_stats(x + start, <const flt_t*>back, m, q)
        start += m
    return -1


def quantize_report_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range, double offset,
                         double scale, keys, values, CastFormat dec_fmt not None, int dec_rounding,
                         int dec_out_of_range, dec_keys, dec_values):
    """``scale_offset`` + ``cast_value`` encode of a float32/float64 ``src`` into ``dst``
    (as :func:`scale_offset_cast_into`; None: report only) and, in the same pass, the
    exactness report of :func:`zarrcy.casting.chain_report`: the cast statuses and the
    round trip through the decode (``dec_fmt``: the float format decoded to, i.e. ``src``'s;
    ``dec_*``: the decode cast's modes and scalar_map in encoded / float storage).

    Returns ``(index, counts, mismatches, max_abs, max_rel)``: ``index`` -1 when every
    element encodes and decodes (``counts``: exact, rounded, clamped, wrapped, mapped;
    ``max_rel`` inf when an original zero reads back non-zero), else the start of a
    block where one does not (nothing else is meaningful then, and ``dst`` is partly
    written).
    """
    cdef Arrays a = Arrays()
    cdef Arrays d = Arrays()
    cdef cfg_t ce
    cdef cfg_t cd
    cdef qrep_t q
    cdef Py_ssize_t n, r = -1, k
    cdef int sc, dc
    cdef Py_ssize_t isz
    cdef const void* xp
    cdef void* yp = NULL
    cdef bint fast
    a.take(0, src, False, "quantize_report_into: src")
    a.take(1, dst, True, "quantize_report_into: dst")
    a.take(2, keys, False, "quantize_report_into: keys")
    a.take(3, values, False, "quantize_report_into: values")
    d.take(0, dec_keys, False, "quantize_report_into: dec_keys")
    d.take(1, dec_values, False, "quantize_report_into: dec_values")
    n = a.n[0]
    sc = a.code[0]
    dc = fmt.code
    if sc != T_FLOAT32 and sc != T_FLOAT64:
        raise ValueError("quantize_report_into: src: expected float32 or float64")
    if dst is not None and (a.n[1] != n or a.code[1] != dc):
        raise ValueError(f"quantize_report_into: dst: expected {n} elements of the storage type of {fmt!r}")
    if dec_fmt.code != sc:
        raise ValueError(f"quantize_report_into: dec_fmt: expected the source's format, received {dec_fmt!r}")
    if (keys is not None and a.code[2] != sc) or (values is not None and a.code[3] != dc):
        raise ValueError("quantize_report_into: keys, values: expected the source and the target storage types")
    if (dec_keys is not None and d.code[0] != dc) or (dec_values is not None and d.code[1] != sc):
        raise ValueError("quantize_report_into: dec_keys, dec_values: expected the target and the source storage types")
    isz = fmt.f.itemsize
    setup_cfg(&ce, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    try:
        setup_cfg(&cd, &dec_fmt.f, dec_rounding, dec_out_of_range, d.ptr[0], d.n[0], d.ptr[1], d.n[1])
    except BaseException:
        release_cfg(&ce)
        raise
    for k in range(5):
        q.counts[k] = 0
    q.mismatches = 0
    q.max_abs = 0.0
    q.max_rel = 0.0
    q.zero_err = 0
    if n:
        xp = a.ptr[0]
        if dst is not None:
            yp = a.ptr[1]
        with nogil:
            setup_keys(&ce, sc, dc)
            # the status arithmetic in float64 is exact for natural integer targets of <= 32 bits
            fast = (fmt.f.natural and fmt.f.kind != 2 and fmt.f.nbits <= 32
                    and (ce.nkeys == 0 or ce.nan_key))
            if sc == T_FLOAT32:
                r = _quantize_report(<const float*>xp, yp, dc, isz, n, offset, scale, &ce, &cd, fast, &q)
            else:
                r = _quantize_report(<const double*>xp, yp, dc, isz, n, offset, scale, &ce, &cd, fast, &q)
    release_cfg(&ce)
    release_cfg(&cd)
    counts = tuple(q.counts[k] for k in range(5))
    return r, counts, q.mismatches, q.max_abs, (float("inf") if q.zero_err else q.max_rel)
