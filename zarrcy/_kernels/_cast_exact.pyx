"""The exact generic caster of cast_value (ext-codec-cast_value.md "Procedure").

Decodes any source element to an exact ``(-1)^neg * m * 2^e`` and rounds it to any target
format (ints of any width N, binary floats given by significand bits / exponent range /
inf / NaN rules).  It is exact in every mode and also reports a per-element status (exact,
rounded, clamped, wrapped...).  The fast block loops (``_cast_fast``) only *flag* unusual
elements; ``fix_block`` decides them here (``scalar_map`` first, then ``_cast_num``), so
the fast paths never decide an edge case on their own.  ``classify`` is the status loop
behind ``check_cast``.

Also here: :class:`CastFormat`, the typed description of a target format that the entry
points take, and the per-call configuration (``setup_cfg`` / ``setup_keys``).  Functions
the other cast modules call take void pointers and storage type codes (``T_*``): fused
functions cannot cross a module boundary, and a block-level switch costs nothing.

Loops are ``noexcept nogil`` and return -1 or the index of the first failing element.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.math cimport fabs, frexp, isnan, isinf

from zarrcy._kernels._cast_types cimport (
    src_t, dst_t, fmt_t, num_t, cfg_t,
    T_INT8, T_INT16, T_INT32, T_INT64, T_UINT8, T_UINT16, T_UINT32, T_UINT64, T_FLOAT32, T_FLOAT64,
    ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED, ST_FAIL_NONFINITE, ST_FAIL_RANGE,
    R_NEAREST_EVEN, R_TOWARDS_ZERO, R_TOWARDS_POSITIVE, R_TOWARDS_NEGATIVE, R_NEAREST_AWAY,
    OOR_NONE, OOR_CLAMP, OOR_WRAP,
    zc_clz64, zc_ctz64, zc_f2u, zc_u2f, zc_d2u, zc_u2d,
)

# ---------------------------------------------------------------------------------------
# exact decoding
# ---------------------------------------------------------------------------------------

cdef inline num_t _norm(num_t v) noexcept nogil:
    cdef int tz
    if v.cls != 0:
        return v
    if v.m == 0:
        v.e = 0
        v.neg = 0  # -0 and 0 compare equal; callers that need the sign read it before
    else:
        tz = zc_ctz64(v.m)
        v.m >>= tz
        v.e += tz
    return v


cdef inline num_t _from_double(double d) noexcept nogil:
    cdef num_t v
    cdef int ex
    cdef double f
    v.neg = zc_d2u(d) >> 63
    v.m = 0
    v.e = 0
    if isnan(d):
        v.cls = 2
        return v
    if isinf(d):
        v.cls = 1
        return v
    v.cls = 0
    if d == 0.0:
        return v
    f = frexp(fabs(d), &ex)          # f in [0.5, 1): f * 2^53 is an exact integer
    v.m = <uint64_t>(f * 9007199254740992.0)
    v.e = ex - 53
    return v


cdef inline num_t _from_i64(int64_t x) noexcept nogil:
    cdef num_t v
    v.cls = 0
    v.e = 0
    if x < 0:
        v.neg = 1
        v.m = (<uint64_t>0) - <uint64_t>x
    else:
        v.neg = 0
        v.m = <uint64_t>x
    return v


cdef inline num_t _from_u64(uint64_t x) noexcept nogil:
    cdef num_t v
    v.cls = 0
    v.e = 0
    v.neg = 0
    v.m = x
    return v


cdef inline num_t _dec(src_t x) noexcept nogil:
    if src_t is float or src_t is double:
        return _from_double(<double>x)
    elif src_t is int8_t or src_t is int16_t or src_t is int32_t or src_t is int64_t:
        return _from_i64(<int64_t>x)
    else:
        return _from_u64(<uint64_t>x)


cdef inline bint _num_eq(num_t a, num_t b) noexcept nogil:
    """Numerical equality of two *normalised* numbers (any NaN equals any NaN)."""
    if a.cls != b.cls:
        return False
    if a.cls == 2:
        return True
    if a.cls == 1:
        return a.neg == b.neg
    return a.m == b.m and a.e == b.e and (a.neg == b.neg or a.m == 0)


cdef inline Py_ssize_t _map_find(num_t v, const cfg_t* c) noexcept nogil:
    cdef Py_ssize_t k
    v = _norm(v)
    for k in range(c.nkeys):  # first occurrence wins
        if _num_eq(v, c.knums[k]):
            return k
    return -1


# ---------------------------------------------------------------------------------------
# exact rounding
# ---------------------------------------------------------------------------------------

cdef inline uint64_t _shift_round(uint64_t m, int sh, int neg, int rmode, int* inexact) noexcept nogil:
    """round(m / 2^sh) to an integer magnitude per ``rmode`` (``neg``: sign of the value); sh >= 1."""
    cdef uint64_t ip, rem, half
    cdef int cmp, up = 0
    if sh >= 64:
        ip = 0
        if m == 0:
            inexact[0] = 0
            return 0
        if sh == 64:
            half = (<uint64_t>1) << 63
            cmp = 1 if m > half else (0 if m == half else -1)
        else:
            cmp = -1
    else:
        ip = m >> sh
        rem = m & (((<uint64_t>1) << sh) - 1)
        if rem == 0:
            inexact[0] = 0
            return ip
        half = (<uint64_t>1) << (sh - 1)
        cmp = 1 if rem > half else (0 if rem == half else -1)
    inexact[0] = 1
    if rmode == R_NEAREST_EVEN:
        up = cmp > 0 or (cmp == 0 and (ip & 1))
    elif rmode == R_NEAREST_AWAY:
        up = cmp >= 0
    elif rmode == R_TOWARDS_POSITIVE:
        up = not neg
    elif rmode == R_TOWARDS_NEGATIVE:
        up = neg
    return ip + <uint64_t>up


cdef inline uint64_t _mask(int nbits) noexcept nogil:
    if nbits >= 64:
        return <uint64_t>0xFFFFFFFFFFFFFFFF
    return ((<uint64_t>1) << nbits) - 1


cdef int _cast_num(num_t v, const fmt_t* f, int rmode, int oor, uint64_t* out) noexcept nogil:
    """Cast one exact number to format ``f``; write the target storage bits; return a status."""
    cdef uint64_t mag = 0, low = 0, mm, sign
    cdef int big = 0, inexact = 0, L, ex, q, er
    cdef bint inrange
    if f.kind != 2:
        # ---- integer target
        if v.cls != 0:
            return ST_FAIL_NONFINITE
        if v.m == 0:
            out[0] = 0
            return ST_EXACT
        if v.e >= 0:
            if v.e >= 64:
                big = 1
                low = 0
            elif v.e > 0 and (v.m >> (64 - v.e)) != 0:
                big = 1
                low = v.m << v.e
            else:
                mag = v.m << v.e
        else:
            mag = _shift_round(v.m, -v.e, v.neg, rmode, &inexact)
        if not big and mag == 0:
            out[0] = 0
            return ST_ROUNDED if inexact else ST_EXACT
        if big:
            inrange = False
        elif v.neg:
            inrange = mag <= (<uint64_t>0) - <uint64_t>f.lo
        else:
            inrange = mag <= f.hi
        if inrange:
            out[0] = (((<uint64_t>0) - mag) if v.neg else mag) & _mask(f.nbits)
            return ST_ROUNDED if inexact else ST_EXACT
        if oor == OOR_CLAMP:
            out[0] = ((<uint64_t>f.lo) if v.neg else f.hi) & _mask(f.nbits)
            return ST_CLAMPED
        if oor == OOR_WRAP:
            if not big:
                low = mag
            out[0] = (((<uint64_t>0) - low) if v.neg else low) & _mask(f.nbits)
            return ST_WRAPPED
        return ST_FAIL_RANGE
    # ---- binary float target
    sign = (<uint64_t>v.neg) << (f.nbits - 1)
    if v.cls == 2:
        if not f.has_nan:
            return ST_FAIL_NONFINITE
        out[0] = f.nan_bits
        return ST_EXACT
    if v.cls == 1:
        if not f.has_inf:
            return ST_FAIL_NONFINITE
        out[0] = sign | ((((<uint64_t>1) << (f.nbits - f.p)) - 1) << (f.p - 1))
        return ST_EXACT
    if f.unsigned_f:
        return _cast_pow2(v, f, rmode, oor, out)
    if f.no_neg_zero:
        sign = sign if v.m != 0 else 0
    if v.m == 0:
        out[0] = sign
        return ST_EXACT
    L = 64 - zc_clz64(v.m)
    ex = v.e + L - 1
    q = (ex if ex > f.emin else f.emin) - (f.p - 1)
    if q <= v.e:
        mm = v.m << (v.e - q)
    else:
        mm = _shift_round(v.m, q - v.e, v.neg, rmode, &inexact)
    if mm == ((<uint64_t>1) << f.p):
        mm >>= 1
        q += 1
    if mm == 0:
        # a zero produced by rounding keeps the input's sign (fnuz formats: +0 only)
        out[0] = 0 if f.no_neg_zero else sign
        return ST_ROUNDED
    if mm >= ((<uint64_t>1) << (f.p - 1)):
        er = q + f.p - 1
        if er > f.emax or (er == f.emax and mm - ((<uint64_t>1) << (f.p - 1)) > f.max_frac):
            # beyond the largest finite value (after rounding with an unbounded exponent)
            if oor == OOR_CLAMP:
                if f.has_inf:
                    out[0] = sign | ((((<uint64_t>1) << (f.nbits - f.p)) - 1) << (f.p - 1))
                else:
                    out[0] = sign | ((<uint64_t>(f.emax + f.bias)) << (f.p - 1)) | f.max_frac
                return ST_CLAMPED
            return ST_FAIL_RANGE
        out[0] = sign | ((<uint64_t>(er + f.bias)) << (f.p - 1)) | (mm - ((<uint64_t>1) << (f.p - 1)))
    else:
        out[0] = sign | mm       # subnormal: biased exponent 0
    return ST_ROUNDED if inexact else ST_EXACT


cdef int _cast_pow2(num_t v, const fmt_t* f, int rmode, int oor, uint64_t* out) noexcept nogil:
    """A finite number to a format of powers of two ``2^emin .. 2^emax`` (float8_e8m0fnu:
    no sign, no zero, biased exponent = the bits).  Zero and negative values are out of
    range; a positive value below ``2^emin`` rounds to it in the nearest modes and
    towards-positive (there is nothing below it); ties go up (the one-bit significand is odd)."""
    cdef int L, ex, inexact = 0
    cdef uint64_t mm
    cdef bint low = v.neg or v.m == 0
    if not low:
        L = 64 - zc_clz64(v.m)
        ex = v.e + L - 1                 # 2^ex <= v < 2^(ex+1)
        if ex < f.emin:
            if rmode == R_TOWARDS_ZERO or rmode == R_TOWARDS_NEGATIVE:
                low = True
            else:
                out[0] = <uint64_t>(f.emin + f.bias)
                return ST_ROUNDED
        else:
            mm = _shift_round(v.m, L - 1, 0, rmode, &inexact) if L > 1 else 1
            if mm == 2:
                ex += 1
            if ex <= f.emax:
                out[0] = <uint64_t>(ex + f.bias)
                return ST_ROUNDED if inexact else ST_EXACT
    if oor == OOR_CLAMP:
        out[0] = <uint64_t>((f.emin if low else f.emax) + f.bias)
        return ST_CLAMPED
    return ST_FAIL_RANGE


cdef inline dst_t _from_bits(uint64_t b, dst_t* dummy) noexcept nogil:
    if dst_t is float:
        return zc_u2f(<uint32_t>b)
    elif dst_t is double:
        return zc_u2d(b)
    else:
        return <dst_t>b


cdef inline uint64_t _to_bits(dst_t x) noexcept nogil:
    if dst_t is float:
        return zc_f2u(x)
    elif dst_t is double:
        return zc_d2u(x)
    elif dst_t is int8_t:
        return <uint8_t>x
    elif dst_t is int16_t:
        return <uint16_t>x
    elif dst_t is int32_t:
        return <uint32_t>x
    else:
        return <uint64_t>x


# ---------------------------------------------------------------------------------------
# flagged elements and the status loop
# ---------------------------------------------------------------------------------------

cdef bint _fix_one(const src_t* xb, dst_t* yb, Py_ssize_t i, const cfg_t* c) noexcept nogil:
    """scalar_map (deferred NaN/Inf keys) then the generic caster for one flagged element;
    True if the element fails."""
    cdef num_t v = _dec(xb[i])
    cdef Py_ssize_t k
    cdef uint64_t bits
    cdef int st
    cdef const dst_t* vals = <const dst_t*>c.vals
    if not c.keys_general and c.nkeys:
        k = _map_find(v, c)
        if k >= 0:
            yb[i] = vals[k]
            return False
    st = _cast_num(v, &c.f, c.rmode, c.oor, &bits)
    if st >= ST_FAIL_NONFINITE:
        return True
    yb[i] = _from_bits(bits, yb)
    return False


cdef Py_ssize_t _fix_block(const src_t* xb, dst_t* yb, const uint8_t* fl, Py_ssize_t m,
                           const cfg_t* c) noexcept nogil:
    """Decide every flagged element of one block; -1 or the index of the first failure."""
    cdef Py_ssize_t i = 0
    while i < m:
        if i + 8 <= m and (<const uint64_t*>(fl + i))[0] == 0:   # skip 8 clean elements at once
            i += 8
            continue
        if fl[i] and _fix_one(xb, yb, i, c):
            return i
        i += 1
    return -1


cdef Py_ssize_t _classify(const src_t* x, dst_t* y, uint8_t* status, Py_ssize_t n, const cfg_t* c) noexcept nogil:
    """Generic loop recording every element's status; returns the first failing index or -1."""
    cdef Py_ssize_t i, k, first = -1
    cdef const dst_t* vals = <const dst_t*>c.vals
    cdef uint64_t bits
    cdef int st
    cdef num_t v
    for i in range(n):
        v = _dec(x[i])
        if c.nkeys:
            k = _map_find(v, c)
            if k >= 0:
                y[i] = vals[k]
                status[i] = ST_MAPPED
                continue
        st = _cast_num(v, &c.f, c.rmode, c.oor, &bits)
        status[i] = <uint8_t>st
        if st >= ST_FAIL_NONFINITE:
            if first < 0:
                first = i
            y[i] = 0
        else:
            y[i] = _from_bits(bits, y)
    return first


# ---- across the module boundary: storage type codes -> specialisations

cdef Py_ssize_t _fix_block_d(const src_t* x, void* y, int dst_code, const uint8_t* fl, Py_ssize_t m,
                             const cfg_t* c) noexcept nogil:
    if dst_code == T_INT8:
        return _fix_block(x, <int8_t*>y, fl, m, c)
    elif dst_code == T_INT16:
        return _fix_block(x, <int16_t*>y, fl, m, c)
    elif dst_code == T_INT32:
        return _fix_block(x, <int32_t*>y, fl, m, c)
    elif dst_code == T_INT64:
        return _fix_block(x, <int64_t*>y, fl, m, c)
    elif dst_code == T_UINT8:
        return _fix_block(x, <uint8_t*>y, fl, m, c)
    elif dst_code == T_UINT16:
        return _fix_block(x, <uint16_t*>y, fl, m, c)
    elif dst_code == T_UINT32:
        return _fix_block(x, <uint32_t*>y, fl, m, c)
    elif dst_code == T_UINT64:
        return _fix_block(x, <uint64_t*>y, fl, m, c)
    elif dst_code == T_FLOAT32:
        return _fix_block(x, <float*>y, fl, m, c)
    else:
        return _fix_block(x, <double*>y, fl, m, c)


cdef Py_ssize_t fix_block(const void* x, int src_code, void* y, int dst_code, const uint8_t* fl,
                          Py_ssize_t m, const cfg_t* c) noexcept nogil:
    """``scalar_map`` (deferred NaN/Inf keys) then the generic caster for the flagged
    elements (``fl[i] != 0``) of one block; -1 or the index of the first failing element."""
    if src_code == T_INT8:
        return _fix_block_d(<const int8_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_INT16:
        return _fix_block_d(<const int16_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_INT32:
        return _fix_block_d(<const int32_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_INT64:
        return _fix_block_d(<const int64_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_UINT8:
        return _fix_block_d(<const uint8_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_UINT16:
        return _fix_block_d(<const uint16_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_UINT32:
        return _fix_block_d(<const uint32_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_UINT64:
        return _fix_block_d(<const uint64_t*>x, y, dst_code, fl, m, c)
    elif src_code == T_FLOAT32:
        return _fix_block_d(<const float*>x, y, dst_code, fl, m, c)
    else:
        return _fix_block_d(<const double*>x, y, dst_code, fl, m, c)


cdef Py_ssize_t _classify_d(const src_t* x, void* y, int dst_code, uint8_t* status, Py_ssize_t n,
                            const cfg_t* c) noexcept nogil:
    if dst_code == T_INT8:
        return _classify(x, <int8_t*>y, status, n, c)
    elif dst_code == T_INT16:
        return _classify(x, <int16_t*>y, status, n, c)
    elif dst_code == T_INT32:
        return _classify(x, <int32_t*>y, status, n, c)
    elif dst_code == T_INT64:
        return _classify(x, <int64_t*>y, status, n, c)
    elif dst_code == T_UINT8:
        return _classify(x, <uint8_t*>y, status, n, c)
    elif dst_code == T_UINT16:
        return _classify(x, <uint16_t*>y, status, n, c)
    elif dst_code == T_UINT32:
        return _classify(x, <uint32_t*>y, status, n, c)
    elif dst_code == T_UINT64:
        return _classify(x, <uint64_t*>y, status, n, c)
    elif dst_code == T_FLOAT32:
        return _classify(x, <float*>y, status, n, c)
    else:
        return _classify(x, <double*>y, status, n, c)


cdef Py_ssize_t classify(const void* x, int src_code, void* y, int dst_code, uint8_t* status,
                         Py_ssize_t n, const cfg_t* c) noexcept nogil:
    """The generic loop recording every element's status; -1 or the first failing index."""
    if src_code == T_INT8:
        return _classify_d(<const int8_t*>x, y, dst_code, status, n, c)
    elif src_code == T_INT16:
        return _classify_d(<const int16_t*>x, y, dst_code, status, n, c)
    elif src_code == T_INT32:
        return _classify_d(<const int32_t*>x, y, dst_code, status, n, c)
    elif src_code == T_INT64:
        return _classify_d(<const int64_t*>x, y, dst_code, status, n, c)
    elif src_code == T_UINT8:
        return _classify_d(<const uint8_t*>x, y, dst_code, status, n, c)
    elif src_code == T_UINT16:
        return _classify_d(<const uint16_t*>x, y, dst_code, status, n, c)
    elif src_code == T_UINT32:
        return _classify_d(<const uint32_t*>x, y, dst_code, status, n, c)
    elif src_code == T_UINT64:
        return _classify_d(<const uint64_t*>x, y, dst_code, status, n, c)
    elif src_code == T_FLOAT32:
        return _classify_d(<const float*>x, y, dst_code, status, n, c)
    else:
        return _classify_d(<const double*>x, y, dst_code, status, n, c)


# ---------------------------------------------------------------------------------------
# per-call configuration
# ---------------------------------------------------------------------------------------

cdef inline num_t _dec_at(const void* p, int code, Py_ssize_t k) noexcept nogil:
    if code == T_INT8:
        return _dec((<const int8_t*>p)[k])
    elif code == T_INT16:
        return _dec((<const int16_t*>p)[k])
    elif code == T_INT32:
        return _dec((<const int32_t*>p)[k])
    elif code == T_INT64:
        return _dec((<const int64_t*>p)[k])
    elif code == T_UINT8:
        return _dec((<const uint8_t*>p)[k])
    elif code == T_UINT16:
        return _dec((<const uint16_t*>p)[k])
    elif code == T_UINT32:
        return _dec((<const uint32_t*>p)[k])
    elif code == T_UINT64:
        return _dec((<const uint64_t*>p)[k])
    elif code == T_FLOAT32:
        return _dec((<const float*>p)[k])
    else:
        return _dec((<const double*>p)[k])


cdef inline uint64_t _bits_at(const void* p, int code, Py_ssize_t k) noexcept nogil:
    if code == T_INT8:
        return _to_bits((<const int8_t*>p)[k])
    elif code == T_INT16:
        return _to_bits((<const int16_t*>p)[k])
    elif code == T_INT32:
        return _to_bits((<const int32_t*>p)[k])
    elif code == T_INT64:
        return _to_bits((<const int64_t*>p)[k])
    elif code == T_UINT8:
        return _to_bits((<const uint8_t*>p)[k])
    elif code == T_UINT16:
        return _to_bits((<const uint16_t*>p)[k])
    elif code == T_UINT32:
        return _to_bits((<const uint32_t*>p)[k])
    elif code == T_UINT64:
        return _to_bits((<const uint64_t*>p)[k])
    elif code == T_FLOAT32:
        return _to_bits((<const float*>p)[k])
    else:
        return _to_bits((<const double*>p)[k])


cdef void setup_keys(cfg_t* c, int src_code, int dst_code) noexcept nogil:
    """Decode the scalar_map keys (source storage ``src_code``) and values (``dst_code``) and
    pick the strategy: a mapping pass for finite keys, flags for NaN/Inf keys, one NaN key inline."""
    cdef Py_ssize_t k
    c.keys_general = 0
    c.flag_nonfinite = 0
    for k in range(c.nkeys):
        c.knums[k] = _norm(_dec_at(c.keys, src_code, k))
        c.vbits[k] = _bits_at(c.vals, dst_code, k)
        if c.knums[k].cls == 0:
            c.keys_general = 1
        else:
            c.flag_nonfinite = 1
    c.nan_key = c.nkeys == 1 and c.knums[0].cls == 2
    c.nan_val = c.vbits[0] if c.nan_key else 0


cdef int setup_cfg(cfg_t* c, const fmt_t* f, int rounding, int out_of_range,
                   const void* keys, Py_ssize_t nkeys, const void* vals, Py_ssize_t nvals) except -1:
    """Fill ``c`` for one call (keys / vals: the scalar_map in source / target storage, or
    NULL); ``release_cfg`` frees what this allocates.  Raises on bad modes or map lengths."""
    c.f = f[0]
    c.knums = NULL
    c.vbits = NULL
    c.nkeys = 0
    c.keys = NULL
    c.vals = NULL
    if not (R_NEAREST_EVEN <= rounding <= R_NEAREST_AWAY):
        raise ValueError(f"cast kernel: rounding: expected 0..4, received {rounding}")
    if not (OOR_NONE <= out_of_range <= OOR_WRAP):
        raise ValueError(f"cast kernel: out_of_range: expected 0..2, received {out_of_range}")
    c.rmode = rounding
    c.oor = out_of_range
    if nkeys:
        if nvals != nkeys:
            raise ValueError(f"cast kernel: scalar_map: expected as many values as keys ({nkeys}), received {nvals}")
        c.nkeys = nkeys
        c.keys = keys
        c.vals = vals
        c.knums = <num_t*>malloc(nkeys * sizeof(num_t))
        c.vbits = <uint64_t*>malloc(nkeys * sizeof(uint64_t))
        if c.knums == NULL or c.vbits == NULL:
            release_cfg(c)
            raise MemoryError()
    return 0


cdef void release_cfg(cfg_t* c) noexcept nogil:
    free(c.knums)
    free(c.vbits)
    c.knums = NULL
    c.vbits = NULL


# ---------------------------------------------------------------------------------------
# the typed format the entry points take
# ---------------------------------------------------------------------------------------

cdef class CastFormat:
    """A real-number format as the cast kernels see it (typed, checked once; replaces the
    positional 13-tuple).  ``kind``: 0 signed int, 1 unsigned int, 2 binary float;
    ``nbits`` value bits; ``itemsize`` storage bytes; ``natural``: the storage type *is* the
    format (int8..uint64, float32, float64), else the value is stored in the low bits of an
    unsigned integer (int4 in uint8, float16 / bfloat16 in uint16, ...).  Integers: range
    ``lo..hi`` (that of ``nbits``).  Floats: ``p`` significand bits including the implicit
    one, normal exponents ``emin..emax``, ``bias``, ``has_inf`` / ``has_nan``, ``nan_bits``
    (the NaN written).  ``code`` is the storage type code the kernels dispatch on.
    """

    def __init__(self, *, int kind, int nbits, int itemsize, bint natural, int64_t lo=0, uint64_t hi=0,
                 int p=0, int emin=0, int emax=0, int bias=0, bint has_inf=False, bint has_nan=False,
                 uint64_t nan_bits=0, bint no_neg_zero=False, bint unsigned=False, int64_t max_frac=-1):
        cdef int signed_codes[9]
        cdef object one = 1       # range bounds in Python ints: no C overflow at 64 bits
        if kind < 0 or kind > 2:
            raise ValueError(f"CastFormat: kind: expected 0, 1 or 2, received {kind}")
        if itemsize not in (1, 2, 4, 8):
            raise ValueError(f"CastFormat: itemsize: expected 1, 2, 4 or 8, received {itemsize}")
        if not (2 <= nbits <= 8 * itemsize):
            raise ValueError(f"CastFormat: nbits: expected 2..{8 * itemsize}, received {nbits}")
        if natural and nbits != 8 * itemsize:
            raise ValueError(f"CastFormat: nbits: expected {8 * itemsize} for a natural format, received {nbits}")
        if kind != 2:
            # the kernels derive wrap masks from nbits and clamp bounds from lo / hi: they must agree
            if kind == 0:
                exp_lo = -(one << (nbits - 1))
                exp_hi = (one << (nbits - 1)) - 1
            else:
                exp_lo = 0
                exp_hi = (one << nbits) - 1
            if lo != exp_lo or hi != exp_hi:
                raise ValueError(f"CastFormat: lo, hi: expected {exp_lo}, {exp_hi} for {nbits} bits, received {lo}, {hi}")
        else:
            if not ((1 if unsigned else 2) <= p < nbits) or emin > emax or bias < 0:
                raise ValueError(f"CastFormat: p, emin, emax, bias: expected {1 if unsigned else 2} <= p < nbits, "
                                 f"emin <= emax, bias >= 0, received {p}, {emin}, {emax}, {bias}")
            if unsigned and (p != 1 or has_inf or natural or no_neg_zero):
                raise ValueError("CastFormat: unsigned: expected p == 1 and no infinity (float8_e8m0fnu)")
            if max_frac >= (one << (p - 1)) or max_frac < -1:
                raise ValueError(f"CastFormat: max_frac: expected -1 (all ones) or a {p - 1}-bit fraction, "
                                 f"received {max_frac}")
            if natural and (nbits, p) not in ((32, 24), (64, 53)):
                raise ValueError(f"CastFormat: nbits, p: expected (32, 24) or (64, 53) for a natural float, "
                                 f"received {nbits}, {p}")
            if nbits < 64 and nan_bits >> nbits:
                raise ValueError(f"CastFormat: nan_bits: expected a {nbits}-bit pattern, received {nan_bits:#x}")
        self.f.kind = kind
        self.f.nbits = nbits
        self.f.itemsize = itemsize
        self.f.natural = natural
        self.f.lo = lo
        self.f.hi = hi
        self.f.p = p
        self.f.emin = emin
        self.f.emax = emax
        self.f.bias = bias
        self.f.has_inf = has_inf
        self.f.has_nan = has_nan
        self.f.nan_bits = nan_bits
        self.f.no_neg_zero = no_neg_zero
        self.f.unsigned_f = unsigned
        self.f.max_frac = <uint64_t>max_frac if max_frac >= 0 else ((<uint64_t>1) << (p - 1)) - 1 if p >= 1 else 0
        signed_codes[1] = T_INT8
        signed_codes[2] = T_INT16
        signed_codes[4] = T_INT32
        signed_codes[8] = T_INT64
        if natural and kind == 2:
            self.code = T_FLOAT32 if itemsize == 4 else T_FLOAT64
        elif natural and kind == 0:
            self.code = signed_codes[itemsize]
        else:   # unsigned ints, and every non-natural format's bit pattern
            self.code = signed_codes[itemsize] + (T_UINT8 - T_INT8)

    @property
    def kind(self) -> int:
        return self.f.kind

    @property
    def nbits(self) -> int:
        return self.f.nbits

    @property
    def itemsize(self) -> int:
        return self.f.itemsize

    @property
    def natural(self) -> bool:
        return bool(self.f.natural)

    def __repr__(self) -> str:
        return (f"CastFormat(kind={self.f.kind}, nbits={self.f.nbits}, itemsize={self.f.itemsize}, "
                f"natural={bool(self.f.natural)}, lo={self.f.lo}, hi={self.f.hi}, p={self.f.p}, "
                f"emin={self.f.emin}, emax={self.f.emax}, bias={self.f.bias}, has_inf={bool(self.f.has_inf)}, "
                f"has_nan={bool(self.f.has_nan)}, nan_bits={self.f.nan_bits:#x}, "
                f"no_neg_zero={bool(self.f.no_neg_zero)}, unsigned={bool(self.f.unsigned_f)}, "
                f"max_frac={self.f.max_frac})")


# ---------------------------------------------------------------------------------------
# typed array arguments
# ---------------------------------------------------------------------------------------

cdef extern from "zc_cast_exact.h":
    const int zc_little_endian


cdef class Arrays:
    """The array arguments of one call: each a 1-d C-contiguous buffer of one of the ten
    storage types, its type read from the buffer format (what a typed ``const T[::1]``
    argument checks, without a fused ``def`` -- 100 Python wrappers -- per entry point)."""

    def __cinit__(self):
        cdef int i
        for i in range(5):
            self.held[i] = False
            self.code[i] = -1
            self.n[i] = 0
            self.ptr[i] = NULL

    def __dealloc__(self):
        cdef int i
        for i in range(5):
            if self.held[i]:
                PyBuffer_Release(&self.views[i])
                self.held[i] = False

    cdef int take(self, int i, object obj, bint writable, str name) except -1:
        """Hold ``obj``'s buffer in slot ``i`` (None: absent); raises unless it is a 1-d
        C-contiguous native-order array of int8..uint64 / float32 / float64."""
        cdef Py_buffer* v = &self.views[i]
        cdef const char* f
        cdef char ch
        cdef int code = -1
        if obj is None:
            return 0
        PyObject_GetBuffer(obj, v, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (PyBUF_WRITABLE if writable else 0))
        self.held[i] = True
        if v.ndim != 1:
            raise ValueError(f"{name}: expected a 1-d array, received {v.ndim} dimensions")
        f = v.format
        if f == NULL:
            f = "B"     # no format: unsigned bytes (the buffer protocol's default)
        if f[0] == b"@" or f[0] == b"=" or (f[0] == b"<" and zc_little_endian) or (f[0] == b">" and not zc_little_endian):
            f += 1
        ch = f[0]
        if f[0] != 0 and f[1] == 0:
            if ch == b"b" or ch == b"h" or ch == b"i" or ch == b"l" or ch == b"q":
                code = T_INT8 if v.itemsize == 1 else (T_INT16 if v.itemsize == 2 else (
                    T_INT32 if v.itemsize == 4 else (T_INT64 if v.itemsize == 8 else -1)))
            elif ch == b"B" or ch == b"H" or ch == b"I" or ch == b"L" or ch == b"Q":
                code = T_UINT8 if v.itemsize == 1 else (T_UINT16 if v.itemsize == 2 else (
                    T_UINT32 if v.itemsize == 4 else (T_UINT64 if v.itemsize == 8 else -1)))
            elif ch == b"f" and v.itemsize == 4:
                code = T_FLOAT32
            elif ch == b"d" and v.itemsize == 8:
                code = T_FLOAT64
        if code < 0:
            raise ValueError(f"{name}: expected a native int8..uint64, float32 or float64 array, "
                             f"received buffer format {v.format.decode('ascii', 'replace')!r}")
        self.code[i] = code
        self.n[i] = v.shape[0] if v.ndim == 1 else 0
        self.ptr[i] = v.buf if self.n[i] else NULL
        return 0
