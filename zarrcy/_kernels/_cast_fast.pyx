"""The fast block loops of cast_value (ext-codec-cast_value.md "Procedure") and ``cast_into``.

Specialised block loops for the hot pairs (float -> int <= 32 bits in ``_cast_f2i``,
float64 -> float32, int -> int, exact widenings here).  A fast loop handles the common case
and only *flags* anything unusual (NaN, Inf, out of range, huge values, ties it does not
handle); ``_drive`` sends flagged elements through ``scalar_map`` and then the exact
generic caster (``_cast_exact``).  So the fast paths never decide an edge case on their own.

The hottest loops are C bodies compiled for the x86-64 baseline and for AVX2, picked at run
time (``_cast_simd.pxd``, :func:`dispatch_isa`); ``drive`` / ``dso_block`` (and
``_cast_f2i.rne_block``) are what the fused scale_offset loops (``_cast_scale_offset``)
call per block.

Loops are ``noexcept nogil`` and return -1 or the index of the first failing element.
"""

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset
from libc.math cimport fabs

from zarrcy._kernels._cast_types cimport (
    src_t, dst_t, cfg_t, code_of_src, code_of_dst, _nz,
    T_INT8, T_INT16, T_INT32, T_INT64, T_UINT8, T_UINT16, T_UINT32, T_UINT64, T_FLOAT32, T_FLOAT64,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP, BLOCK,
    zc_f2u, zc_u2f, zc_d2u, ZC_DBL_MAX, ZC_FLT_MAX,
)
from zarrcy._kernels._cast_exact cimport Arrays, CastFormat, setup_cfg, release_cfg, setup_keys, fix_block, classify
from zarrcy._kernels._cast_simd cimport (
    ZC_HAVE_AVX2_BUILD, zc_use_avx2, zc_set_avx2_state, zc_narrow,
    zc_dso_u8_d, zc_dso_i8_d, zc_dso_u16_d, zc_dso_i16_d, zc_dso_u32_d, zc_dso_i32_d,
    zc_dso_u8_f, zc_dso_i8_f, zc_dso_u16_f, zc_dso_i16_f,
)
from zarrcy._kernels._cast_f2i cimport fp1_block, set_isa as f2i_set_isa, uses_avx2 as f2i_uses_avx2


cdef inline float _d2f(double v, int rmode, uint8_t flagnf, uint8_t* fl) noexcept nogil:
    """float64 -> float32 for |v| <= FLT_MAX; larger finite values are flagged."""
    cdef double av = fabs(v)
    cdef uint8_t bad = (av > ZC_FLT_MAX) & (av <= ZC_DBL_MAX)
    cdef float r
    cdef double rb, ar, ob
    cdef uint32_t b
    cdef int32_t away, toward, neg, tie
    if flagnf:
        bad = bad | (not (av <= ZC_DBL_MAX))
    fl[0] = bad
    v = 0.0 if bad else v
    r = <float>v
    if rmode == R_NEAREST_EVEN:
        return r
    rb = <double>r
    ar = fabs(rb)
    av = fabs(v)
    b = zc_f2u(r)
    away = ar < av          # magnitude rounded down
    toward = ar > av        # magnitude rounded up
    neg = (zc_d2u(v) >> 63) != 0
    if rmode == R_TOWARDS_ZERO:
        b = b - <uint32_t>toward
    elif rmode == R_TOWARDS_POSITIVE:
        b = b + <uint32_t>((not neg) & away) - <uint32_t>(neg & toward)
    elif rmode == R_TOWARDS_NEGATIVE:
        b = b + <uint32_t>(neg & away) - <uint32_t>((not neg) & toward)
    else:  # nearest-away: differs from nearest-even only at a tie rounded down in magnitude
        ob = fabs(<double>zc_u2f(b + 1))
        tie = away & ((ob - av) == (av - ar))
        b = b + <uint32_t>tie
    return zc_u2f(b)


cdef inline uint64_t _d2f_bits(double v, int rmode) noexcept nogil:
    """float64 -> float32 bits for |v| <= FLT_MAX (or non-finite), directed modes by bit
    arithmetic on d = v - float(v) (exact); 64-bit lanes only, so the loop vectorises."""
    cdef uint64_t vb = zc_d2u(v)
    cdef float r = <float>v
    cdef uint64_t b = <uint64_t>zc_f2u(r)
    cdef uint64_t db, fin, nzd, sv, up, down
    if rmode == R_NEAREST_EVEN:
        return b
    db = zc_d2u(v - <double>r)
    fin = 1 - (((vb & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63)
    nzd = _nz(db << 1) & fin
    sv = vb >> 63
    up = (1 - (db >> 63)) & nzd          # v above float(v)
    down = (db >> 63) & nzd              # v below float(v)
    if rmode == R_TOWARDS_ZERO:          # magnitude was rounded up: step back
        return b - (((db ^ vb) >> 63) & nzd)
    elif rmode == R_TOWARDS_POSITIVE:
        return b + (up & (1 - sv)) - (up & sv)
    else:  # R_TOWARDS_NEGATIVE
        return b + (down & sv) - (down & (1 - sv))


cdef inline uint64_t _ovf_cand(double v) noexcept nogil:
    """1 if FLT_MAX < |v| <= DBL_MAX (|v| bit patterns are ordered like the values)."""
    cdef uint64_t ab = zc_d2u(v) & <uint64_t>0x7fffffffffffffff
    return (((<uint64_t>0x47efffffe0000000) - ab) & ~((<uint64_t>0x7fefffffffffffff) - ab)) >> 63


cdef inline uint64_t _nonfin(double v) noexcept nogil:
    return ((zc_d2u(v) & <uint64_t>0x7ff0000000000000) + <uint64_t>0x0010000000000000) >> 63


cdef uint8_t _fp2(const double* x, float* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t acc8 = 0
    cdef uint8_t nf = <uint8_t>c.flag_nonfinite
    cdef uint64_t acc = 0, nfm = (<uint64_t>0) - <uint64_t>c.flag_nonfinite
    cdef uint32_t* yb = <uint32_t*>y
    if c.rmode == R_NEAREST_AWAY:
        for i in range(m):
            y[i] = _d2f(x[i], R_NEAREST_AWAY, nf, &fl[i])
            acc8 |= fl[i]
        return acc8
    # values beyond FLT_MAX (and NaN/Inf when a NaN/Inf key is deferred) go to the generic path
    if c.rmode == R_NEAREST_EVEN:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_NEAREST_EVEN)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    elif c.rmode == R_TOWARDS_ZERO:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_ZERO)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    elif c.rmode == R_TOWARDS_POSITIVE:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_POSITIVE)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    else:
        for i in range(m):
            yb[i] = <uint32_t>_d2f_bits(x[i], R_TOWARDS_NEGATIVE)
            acc |= _ovf_cand(x[i]) | (_nonfin(x[i]) & nfm)
    if acc == 0:
        return 0
    for i in range(m):
        fl[i] = <uint8_t>(_ovf_cand(x[i]) | (_nonfin(x[i]) & nfm))
    return 1


cdef inline void _i2i(src_t x, int64_t lo, uint64_t hi, int oor, uint8_t* fl, dst_t* out) noexcept nogil:
    cdef uint8_t below, above
    if oor == OOR_WRAP:
        fl[0] = 0
        out[0] = <dst_t>x   # conversion to a narrower integer type is modulo 2^N
        return
    if src_t is int8_t or src_t is int16_t or src_t is int32_t or src_t is int64_t:
        below = <int64_t>x < lo
        above = (<int64_t>x >= 0) & (<uint64_t><int64_t>x > hi)
    else:
        below = 0
        above = <uint64_t>x > hi
    if oor == OOR_CLAMP:
        fl[0] = 0
        out[0] = <dst_t>lo if below else (<dst_t>hi if above else <dst_t>x)
    else:
        fl[0] = below | above
        out[0] = <dst_t>x


cdef uint8_t _fp3(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint8_t acc = 0
    cdef int64_t lo = c.f.lo
    cdef uint64_t hi = c.f.hi
    cdef uint8_t dummy
    if c.oor == OOR_WRAP:
        # narrowing: the dispatched C loop (AVX2 where available); same bits either way
        if sizeof(src_t) > sizeof(dst_t) and zc_narrow(x, sizeof(src_t), y, sizeof(dst_t), m):
            return 0
        for i in range(m):
            y[i] = <dst_t>x[i]      # conversion to a narrower integer type is modulo 2^N
        return 0
    if c.oor == OOR_CLAMP:
        for i in range(m):
            _i2i(x[i], lo, hi, OOR_CLAMP, &dummy, &y[i])
        return 0
    for i in range(m):
        _i2i(x[i], lo, hi, OOR_NONE, &fl[i], &y[i])
        acc |= fl[i]
    return acc


cdef uint8_t _fp4(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    """Exact conversions (every source value is a target value); NaN/Inf flagged on request."""
    cdef Py_ssize_t i
    cdef uint8_t acc = 0
    if (src_t is float or src_t is double) and c.flag_nonfinite:
        for i in range(m):
            y[i] = <dst_t>x[i]
            fl[i] = not (fabs(<double>x[i]) <= ZC_DBL_MAX)
            acc |= fl[i]
        return acc
    for i in range(m):
        y[i] = <dst_t>x[i]
    memset(fl, 0, <size_t>m)
    return 0


cdef inline uint8_t _flag_all(uint8_t* fl, Py_ssize_t m) noexcept nogil:
    memset(fl, 1, <size_t>m)
    return 1


cdef uint8_t _pass1(const src_t* x, dst_t* y, uint8_t* fl, Py_ssize_t m, const cfg_t* c) noexcept nogil:
    if not c.f.natural:
        return _flag_all(fl, m)
    if src_t is float or src_t is double:
        if dst_t is int8_t or dst_t is int16_t or dst_t is int32_t or dst_t is uint8_t or dst_t is uint16_t or dst_t is uint32_t:
            return fp1_block(x, code_of_src(x), y, code_of_dst(<const dst_t*>y), fl, m, c)
        elif dst_t is float:
            if src_t is double:
                return _fp2(x, y, fl, m, c)
            else:
                return _fp4(x, y, fl, m, c)
        elif dst_t is double:
            return _fp4(x, y, fl, m, c)
        else:
            return _flag_all(fl, m)
    else:
        if dst_t is float:
            if src_t is int8_t or src_t is int16_t or src_t is uint8_t or src_t is uint16_t:
                return _fp4(x, y, fl, m, c)
            return _flag_all(fl, m)
        elif dst_t is double:
            if src_t is int64_t or src_t is uint64_t:
                return _flag_all(fl, m)
            return _fp4(x, y, fl, m, c)
        else:
            return _fp3(x, y, fl, m, c)


# ---------------------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------------------

cdef Py_ssize_t _drive(const src_t* x, dst_t* y, Py_ssize_t n, const cfg_t* c) noexcept nogil:
    cdef uint8_t fl[BLOCK]
    cdef uint8_t matched[BLOCK]
    cdef Py_ssize_t start, m, i, k
    cdef uint8_t acc, h
    cdef const src_t* xb
    cdef dst_t* yb
    cdef const src_t* keys = <const src_t*>c.keys
    cdef const dst_t* vals = <const dst_t*>c.vals
    cdef src_t key
    cdef dst_t val
    cdef int sc = code_of_src(x), dc = code_of_dst(<const dst_t*>y)
    start = 0
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        xb = x + start
        yb = y + start
        acc = _pass1(xb, yb, fl, m, c)
        if c.keys_general:
            memset(matched, 0, <size_t>m)
            for k in range(c.nkeys):
                key = keys[k]
                val = vals[k]
                if c.knums[k].cls == 2:   # NaN key: any NaN
                    for i in range(m):
                        h = (xb[i] != xb[i]) & (not matched[i])
                        yb[i] = val if h else yb[i]
                        matched[i] |= h
                else:                     # numerical equality (-0.0 == 0)
                    for i in range(m):
                        h = (xb[i] == key) & (not matched[i])
                        yb[i] = val if h else yb[i]
                        matched[i] |= h
            acc = 0
            for i in range(m):
                fl[i] &= not matched[i]
                acc |= fl[i]
        if acc:
            # flagged elements: scalar_map, then the exact generic caster
            i = fix_block(xb, sc, yb, dc, fl, m, c)
            if i >= 0:
                return start + i
        start += m
    return -1


# ---- per block, for the fused scale_offset loops (_cast_scale_offset)

cdef Py_ssize_t _drive_d(const src_t* x, void* y, int dst_code, Py_ssize_t n, const cfg_t* c) noexcept nogil:
    if dst_code == T_INT8:
        return _drive(x, <int8_t*>y, n, c)
    elif dst_code == T_INT16:
        return _drive(x, <int16_t*>y, n, c)
    elif dst_code == T_INT32:
        return _drive(x, <int32_t*>y, n, c)
    elif dst_code == T_INT64:
        return _drive(x, <int64_t*>y, n, c)
    elif dst_code == T_UINT8:
        return _drive(x, <uint8_t*>y, n, c)
    elif dst_code == T_UINT16:
        return _drive(x, <uint16_t*>y, n, c)
    elif dst_code == T_UINT32:
        return _drive(x, <uint32_t*>y, n, c)
    elif dst_code == T_UINT64:
        return _drive(x, <uint64_t*>y, n, c)
    elif dst_code == T_FLOAT32:
        return _drive(x, <float*>y, n, c)
    else:
        return _drive(x, <double*>y, n, c)


cdef Py_ssize_t drive(const void* x, int src_code, void* y, int dst_code, Py_ssize_t n,
                      const cfg_t* c) noexcept nogil:
    """The plain cast of ``n`` elements (keys already set up); -1 or the first failing index."""
    if src_code == T_INT8:
        return _drive_d(<const int8_t*>x, y, dst_code, n, c)
    elif src_code == T_INT16:
        return _drive_d(<const int16_t*>x, y, dst_code, n, c)
    elif src_code == T_INT32:
        return _drive_d(<const int32_t*>x, y, dst_code, n, c)
    elif src_code == T_INT64:
        return _drive_d(<const int64_t*>x, y, dst_code, n, c)
    elif src_code == T_UINT8:
        return _drive_d(<const uint8_t*>x, y, dst_code, n, c)
    elif src_code == T_UINT16:
        return _drive_d(<const uint16_t*>x, y, dst_code, n, c)
    elif src_code == T_UINT32:
        return _drive_d(<const uint32_t*>x, y, dst_code, n, c)
    elif src_code == T_UINT64:
        return _drive_d(<const uint64_t*>x, y, dst_code, n, c)
    elif src_code == T_FLOAT32:
        return _drive_d(<const float*>x, y, dst_code, n, c)
    else:
        return _drive_d(<const double*>x, y, dst_code, n, c)


cdef int dso_block(const void* x, int src_code, void* y, int dst_code, Py_ssize_t m, int nk,
                   const void* key, const void* val, double o, double s) noexcept nogil:
    """The dispatched one-pass fused decode loop ``y = cast(x) / s + o`` for one block of an
    integer source exact in the float output (``dst_code`` float32 / float64); ``key`` /
    ``val``: the one scalar_map entry (source / output storage) when ``nk``.  ``o`` / ``s``
    are the output type's values (exact in double).  1: not handled, or flagged."""
    cdef float of = <float>o, sf = <float>s
    if dst_code == T_FLOAT64:
        if src_code == T_UINT8:
            return zc_dso_u8_d(<const uint8_t*>x, <double*>y, m, nk, (<const uint8_t*>key)[0] if nk else 0,
                               (<const double*>val)[0] if nk else 0, o, s)
        elif src_code == T_INT8:
            return zc_dso_i8_d(<const int8_t*>x, <double*>y, m, nk, (<const int8_t*>key)[0] if nk else 0,
                               (<const double*>val)[0] if nk else 0, o, s)
        elif src_code == T_UINT16:
            return zc_dso_u16_d(<const uint16_t*>x, <double*>y, m, nk, (<const uint16_t*>key)[0] if nk else 0,
                                (<const double*>val)[0] if nk else 0, o, s)
        elif src_code == T_INT16:
            return zc_dso_i16_d(<const int16_t*>x, <double*>y, m, nk, (<const int16_t*>key)[0] if nk else 0,
                                (<const double*>val)[0] if nk else 0, o, s)
        elif src_code == T_UINT32:
            return zc_dso_u32_d(<const uint32_t*>x, <double*>y, m, nk, (<const uint32_t*>key)[0] if nk else 0,
                                (<const double*>val)[0] if nk else 0, o, s)
        elif src_code == T_INT32:
            return zc_dso_i32_d(<const int32_t*>x, <double*>y, m, nk, (<const int32_t*>key)[0] if nk else 0,
                                (<const double*>val)[0] if nk else 0, o, s)
    elif dst_code == T_FLOAT32:
        if src_code == T_UINT8:
            return zc_dso_u8_f(<const uint8_t*>x, <float*>y, m, nk, (<const uint8_t*>key)[0] if nk else 0,
                               (<const float*>val)[0] if nk else 0, of, sf)
        elif src_code == T_INT8:
            return zc_dso_i8_f(<const int8_t*>x, <float*>y, m, nk, (<const int8_t*>key)[0] if nk else 0,
                               (<const float*>val)[0] if nk else 0, of, sf)
        elif src_code == T_UINT16:
            return zc_dso_u16_f(<const uint16_t*>x, <float*>y, m, nk, (<const uint16_t*>key)[0] if nk else 0,
                                (<const float*>val)[0] if nk else 0, of, sf)
        elif src_code == T_INT16:
            return zc_dso_i16_f(<const int16_t*>x, <float*>y, m, nk, (<const int16_t*>key)[0] if nk else 0,
                                (<const float*>val)[0] if nk else 0, of, sf)
    return 1


# ---------------------------------------------------------------------------------------
# Python entry points (zarrcy.codecs.cast_value validates everything before calling)
# ---------------------------------------------------------------------------------------

def dispatch_isa(force=None):
    """Which build of the dispatched loops runs: ``"avx2"`` or ``"baseline"``.

    ``force="baseline"`` makes every later call use the baseline build, ``force="auto"``
    goes back to detecting the CPU (tests use this to compare both builds; not thread-safe).
    Covers every dispatched cast loop, those the fused scale_offset loops call included.
    """
    if force == "baseline":
        zc_set_avx2_state(0)
        f2i_set_isa(0)
    elif force == "auto":
        zc_set_avx2_state(-1 if ZC_HAVE_AVX2_BUILD else 0)
        f2i_set_isa(-1 if ZC_HAVE_AVX2_BUILD else 0)
    elif force is not None:
        raise ValueError(f"dispatch_isa: expected None, 'baseline' or 'auto', received {force!r}")
    return "avx2" if zc_use_avx2() else "baseline"


def _isa_by_module():
    """``{module: "avx2" | "baseline"}`` for every module with dispatched loops (tests)."""
    return {"_cast_fast": "avx2" if zc_use_avx2() else "baseline",
            "_cast_f2i": "avx2" if f2i_uses_avx2() else "baseline"}


def cast_into(src, dst, CastFormat fmt not None, int rounding, int out_of_range, keys=None, values=None,
              status=None):
    """Cast ``src`` into ``dst`` (1-d C-contiguous arrays; ``dst`` in the storage type of the
    target format ``fmt``).

    ``rounding``: 0 nearest-even, 1 towards-zero, 2 towards-positive, 3 towards-negative,
    4 nearest-away; ``out_of_range``: 0 none (error), 1 clamp, 2 wrap.  ``keys``/``values``
    are the scalar_map in the source / target storage type (same count).  With ``status``
    (uint8, one per element) every element is classified and the loop does not stop at a
    failure.  Returns -1 or the index of the first failing element.
    """
    cdef Arrays a = Arrays()
    cdef cfg_t c
    cdef Py_ssize_t n, r = -1
    cdef int sc, dc
    cdef const void* xp
    cdef void* yp
    cdef uint8_t* st
    a.take(0, src, False, "cast_into: src")
    a.take(1, dst, True, "cast_into: dst")
    a.take(2, keys, False, "cast_into: keys")
    a.take(3, values, False, "cast_into: values")
    a.take(4, status, True, "cast_into: status")
    n = a.n[0]
    sc = a.code[0]
    dc = a.code[1]
    if a.n[1] != n:
        raise ValueError(f"cast_into: dst: expected {n} elements, received {a.n[1]}")
    if dc != fmt.code:
        raise ValueError(f"cast_into: dst: expected the storage type of {fmt!r}")
    if (keys is not None and a.code[2] != sc) or (values is not None and a.code[3] != dc):
        raise ValueError("cast_into: keys, values: expected the source and the target storage types")
    if status is not None and (a.code[4] != T_UINT8 or a.n[4] != n):
        raise ValueError(f"cast_into: status: expected {n} uint8 elements")
    setup_cfg(&c, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    if n:
        xp = a.ptr[0]
        yp = a.ptr[1]
        st = <uint8_t*>a.ptr[4]
        with nogil:
            setup_keys(&c, sc, dc)
            if st != NULL:
                r = classify(xp, sc, yp, dc, st, n, &c)
            else:
                r = drive(xp, sc, yp, dc, n, &c)
    release_cfg(&c)
    return r
