"""What a ``[scale_offset,] cast_value`` chain does to float32 / float64 values, in one pass.

The kernel behind :func:`zarrcy.casting.check_cast`, ``zarrcy cast-check`` and the
per-array report of ``zarrcy convert --quantize``: per block of ``BLOCK`` elements the
codec's encode (the bytes it writes, into ``dst`` when given), every element's cause, the
codec's decode and the round-trip errors, while the block is in the cache.

Causes (``K_*``: each element has exactly one class; ``F_*``: flags on top of it):

* ``K_EXACT``, ``K_ROUNDED`` (in range, inexact), ``K_HIGH`` / ``K_LOW`` (beyond the
  largest / smallest value of the target after rounding: clamped, wrapped or failing per
  ``out_of_range``), ``K_SOHIGH`` / ``K_SOLOW`` (the scale_offset result of a finite value
  overflows to +-Infinity: failing), ``K_NAN``, ``K_POSINF``, ``K_NEGINF`` (not mapped: propagated to a float target, failing
  for an integer one), ``K_MAP_*`` (matched a ``scalar_map`` key; by the kind of source
  value);
* ``F_FAIL`` the element cannot be encoded, ``F_COLLISION`` it encodes (without a map) to
  a code that is a key of the decode ``scalar_map`` (a sentinel: it reads back as the
  sentinel's value), ``F_KIND`` it reads back as a different kind of value (NaN-ness,
  finiteness or an infinity changed) or does not decode.

Per cause the kernel keeps the count, the smallest and largest source value and the first
flat index (``S_*`` slots: the classes, then collision, kind, fail).

Two paths per block.  The **fast** one (natural integer targets of <= 32 bits without a
scalar_map or with a single NaN key, no per-element codes asked for): the codec's own
encode and decode loops, then vectorised loops that count the classes and take the
minima / maxima of the source values with selects (built for the x86-64 baseline and, with a
target attribute, for AVX2, picked at run time; only IEEE add/sub/div and compares: both
builds give identical results).  A block where a value fails, a class shows up for the first
time, a value collides with a decode key or changes kind goes to the **exact** path instead:
``classify`` (the exact generic caster) both ways and one scalar loop over the elements,
which decides every edge case.  So the fast path only ever counts blocks whose elements
are ordinary, and both paths give the same report (tests compare them with a Fraction
reference).

Loops are ``noexcept nogil``; the entry point validates every buffer before them.
"""

import numpy as np

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.math cimport fabs, INFINITY

from zarrcy._kernels._cast_types cimport (
    flt_t, ivec_t, cfg_t,
    T_INT8, T_INT16, T_INT32, T_INT64, T_UINT8, T_UINT16, T_UINT32, T_UINT64, T_FLOAT32, T_FLOAT64,
    OOR_NONE, OOR_CLAMP, BLOCK, ZC_DBL_MAX,
    ST_EXACT, ST_ROUNDED, ST_CLAMPED, ST_WRAPPED, ST_MAPPED, ST_FAIL_NONFINITE, ST_FAIL_RANGE,
)
from zarrcy._kernels._cast_exact cimport Arrays, CastFormat, setup_cfg, release_cfg, setup_keys, classify
from zarrcy._kernels._cast_fast cimport drive
from zarrcy._kernels._cast_scale_offset cimport so_cast_block, cast_so_block

cdef enum:
    K_EXACT = 0
    K_ROUNDED = 1
    K_HIGH = 2
    K_LOW = 3
    K_SOHIGH = 4
    K_SOLOW = 5
    K_NAN = 6
    K_POSINF = 7
    K_NEGINF = 8
    K_MAP_NUM = 9
    K_MAP_NAN = 10
    K_MAP_POSINF = 11
    K_MAP_NEGINF = 12
    S_COLLISION = 13
    S_KIND = 14
    S_FAIL = 15
    NSLOT = 16
    F_COLLISION = 16
    F_KIND = 32
    F_FAIL = 64
    O_FAIL = 5        # outcome slot of failing elements (after ST_EXACT .. ST_MAPPED)

# for the Python layer (zarrcy.casting): the code layout
CLASS_NAMES = ("exact", "rounded", "high", "low", "so_high", "so_low", "nan", "posinf", "neginf", "mapped_number",
               "mapped_nan", "mapped_posinf", "mapped_neginf")
SLOT_NAMES = CLASS_NAMES + ("collision", "kind_changed", "failing")
FLAG_COLLISION = F_COLLISION
FLAG_KIND = F_KIND
FLAG_FAIL = F_FAIL
CLASS_MASK = 15


ctypedef struct rep_t:
    int64_t cnt[NSLOT]
    double mn[NSLOT]        # smallest / largest source value (NaN never counts)
    double mx[NSLOT]
    int64_t first[NSLOT]    # first flat index, -1: none
    int64_t outc[6]         # exact, rounded, clamped, wrapped, mapped, failing
    int first_fail_code     # the code of the first failing element
    double max_abs          # round trip, over elements finite before and after
    int64_t i_abs
    double max_rel          # ... with a non-zero original
    int64_t i_rel
    int64_t i_zero          # first original 0 read back non-zero (relative error: inf)
    int64_t nfc             # codes equal to the fill code, values bit-equal to the fill value
    int64_t nfv


# The vectorisable loops in C: one body per (source type, rounding mode); comparisons are
# 0/1 integers, minima / maxima are selects, the error maxima are maxima of the bit patterns
# of non-negative doubles.  "no-trapping-math" only lets the compiler evaluate both sides
# of a select (no value changes); no FMA is enabled.
cdef extern from "zc_cast_report.h":
    void zr_status_f(const float* x, const float* t, Py_ssize_t m, int mode, int oor, double lo, double hi,
                     int64_t* n, double* a) noexcept nogil
    void zr_status_d(const double* x, const double* t, Py_ssize_t m, int mode, int oor, double lo, double hi,
                     int64_t* n, double* a) noexcept nogil
    void zr_stats_f(const float* x, const float* back, Py_ssize_t m, int64_t* st, double* e) noexcept nogil
    void zr_stats_d(const double* x, const double* back, Py_ssize_t m, int64_t* st, double* e) noexcept nogil
    int zr_set_isa(int state) noexcept nogil
    ctypedef struct zr_one_t:
        int64_t n[4]
        double a[2]
        double e[2]
        int64_t zero, fc, fv
    # the parameters of the one-pass blocks, fixed for a call
    ctypedef struct zr_par_t:
        int on              # the chain takes the one-pass path
        int mode
        double od, sd       # scale_offset (0, 1 without: the same values)
        double lo, hi
        int clamp, nank, hasdk, hasfc, hasfv
        int64_t nanc, dkey
        uint64_t fcode, fbits
    int zr_one(int dbl, int dc, const void* x, void* y, Py_ssize_t m, const zr_par_t* p, zr_one_t* q) noexcept nogil


def report_isa(force=None):
    """The build the report loops run (``"avx512"``: the one-pass loops in AVX-512, the
    others in AVX2; ``"avx2"``; ``"baseline"``); ``force``: one of those (capped at what the
    CPU has) for tests, ``"auto"`` to detect again."""
    cdef int state = -2
    names = ("baseline", "avx2", "avx512")
    if force in names:
        state = names.index(force)
    elif force == "auto":
        state = -1
    elif force is not None:
        raise ValueError(f"report_isa: force: expected 'baseline', 'avx2', 'avx512', 'auto' or None, received {force!r}")
    return names[zr_set_isa(state)]


cdef inline bint _fin(double v) noexcept nogil:
    return fabs(v) <= ZC_DBL_MAX


cdef inline void _note(rep_t* q, int k, double xv, int64_t i) noexcept nogil:
    """Count element ``i`` (source value ``xv``) under slot ``k``."""
    q.cnt[k] += 1
    if q.first[k] < 0:
        q.first[k] = i
    if xv < q.mn[k]:
        q.mn[k] = xv
    if xv > q.mx[k]:
        q.mx[k] = xv


cdef void _exact_block(const flt_t* x, const flt_t* t, Py_ssize_t m, int64_t base, void* yb, int sc, int dc,
                       cfg_t* ce, cfg_t* cd, bint so, flt_t o, flt_t s, rep_t* q, uint8_t* codes) noexcept nogil:
    """Every element of one block, exactly: ``classify`` the cast of ``t`` (the scale_offset
    result, or ``x``), ``classify`` its decode, then the scale_offset decode, the class,
    flags and round-trip error of each element."""
    cdef uint8_t st[BLOCK]
    cdef uint8_t st2[BLOCK]
    cdef flt_t tb[BLOCK]
    cdef Py_ssize_t i
    cdef int cls, code, s1
    cdef double xv, tv, bv, err, rel
    cdef flt_t b
    cdef bint sof, fail, decfail, xn, bn
    setup_keys(ce, sc, dc)
    classify(<const void*>t, sc, yb, dc, st, m, ce)
    setup_keys(cd, dc, sc)
    classify(<const void*>yb, dc, <void*>tb, sc, st2, m, cd)
    for i in range(m):
        xv = <double>x[i]
        tv = <double>t[i]
        s1 = st[i]
        sof = so and _fin(xv) and not _fin(tv)
        fail = sof or s1 >= ST_FAIL_NONFINITE
        xn = xv != xv
        if s1 == ST_MAPPED:
            cls = K_MAP_NAN if xn else (K_MAP_NUM if _fin(xv) else (K_MAP_POSINF if xv > 0 else K_MAP_NEGINF))
        elif xn:
            cls = K_NAN
        elif not _fin(xv):
            cls = K_POSINF if xv > 0 else K_NEGINF
        elif sof:
            cls = K_SOHIGH if tv > 0 else K_SOLOW
        elif s1 == ST_CLAMPED or s1 == ST_WRAPPED or s1 >= ST_FAIL_NONFINITE:
            cls = K_HIGH if tv > 0 else K_LOW
        elif s1 == ST_ROUNDED:
            cls = K_ROUNDED
        else:
            cls = K_EXACT
        code = cls
        _note(q, cls, xv, base + i)
        if fail:
            code |= F_FAIL
            if q.first[S_FAIL] < 0:
                q.first_fail_code = code
            _note(q, S_FAIL, xv, base + i)
            q.outc[O_FAIL] += 1
        else:
            q.outc[s1] += 1
            if s1 != ST_MAPPED and st2[i] == ST_MAPPED:
                code |= F_COLLISION
                _note(q, S_COLLISION, xv, base + i)
            decfail = st2[i] >= ST_FAIL_NONFINITE
            b = tb[i]
            bv = <double>b
            if so and not decfail:
                b = b / s + o
                decfail = _fin(bv) and not _fin(<double>b)
                bv = <double>b
            bn = bv != bv
            if decfail or xn != bn or _fin(xv) != _fin(bv) or (not xn and not _fin(xv) and xv != bv):
                code |= F_KIND
                _note(q, S_KIND, xv, base + i)
            elif _fin(xv) and _fin(bv):
                err = fabs(bv - xv)
                if err > q.max_abs:
                    q.max_abs = err
                    q.i_abs = base + i
                if xv != 0.0:
                    rel = err / fabs(xv)
                    if rel > q.max_rel:
                        q.max_rel = rel
                        q.i_rel = base + i
                elif bv != 0.0 and q.i_zero < 0:
                    q.i_zero = base + i
        if codes != NULL:
            codes[i] = <uint8_t>code


cdef Py_ssize_t _collide(const ivec_t* y, const flt_t* x, Py_ssize_t m, const ivec_t* keys, Py_ssize_t nk) noexcept nogil:
    """Elements that are not NaN and encoded to one of the decode keys (sentinel collisions)."""
    cdef Py_ssize_t i, k, n = 0
    cdef ivec_t kv
    for k in range(nk):
        kv = keys[k]
        for i in range(m):
            n += (y[i] == kv) & (x[i] == x[i])
    return n


cdef Py_ssize_t _collisions(const void* y, int dc, const flt_t* x, Py_ssize_t m, const void* keys,
                            Py_ssize_t nk) noexcept nogil:
    if dc == T_INT8:
        return _collide(<const int8_t*>y, x, m, <const int8_t*>keys, nk)
    elif dc == T_INT16:
        return _collide(<const int16_t*>y, x, m, <const int16_t*>keys, nk)
    elif dc == T_INT32:
        return _collide(<const int32_t*>y, x, m, <const int32_t*>keys, nk)
    elif dc == T_UINT8:
        return _collide(<const uint8_t*>y, x, m, <const uint8_t*>keys, nk)
    elif dc == T_UINT16:
        return _collide(<const uint16_t*>y, x, m, <const uint16_t*>keys, nk)
    else:
        return _collide(<const uint32_t*>y, x, m, <const uint32_t*>keys, nk)


cdef Py_ssize_t _first_err(const flt_t* x, const flt_t* back, Py_ssize_t m, double target, bint rel) noexcept nogil:
    """The first element of a block whose abs (rel) round-trip error is ``target``, computed
    as the stats loop does."""
    cdef Py_ssize_t i
    cdef double o, b, e
    for i in range(m):
        o = <double>x[i]
        b = <double>back[i]
        if not (_fin(o) and _fin(b)):
            continue
        e = fabs(b - o)
        if rel:
            if o == 0.0:
                continue
            e = e / fabs(o)
        if e == target:
            return i
    return -1


cdef Py_ssize_t _first_zero_err(const flt_t* x, const flt_t* back, Py_ssize_t m) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(m):
        if <double>x[i] == 0.0 and _fin(<double>back[i]) and <double>back[i] != 0.0:
            return i
    return -1


cdef inline void _merge(rep_t* q, int64_t ex, const int64_t* n, const double* a, int oor_outcome) noexcept nogil:
    """Add an ordinary block's counts: ``ex`` exact, ``n`` rounded / high / low / NaN
    mapped, ``a`` the minima / maxima of the rounded / high / low source values; the out
    of range ones count under ``oor_outcome`` (clamped or wrapped)."""
    cdef int k
    q.cnt[K_EXACT] += ex
    q.cnt[K_ROUNDED] += n[0]
    q.cnt[K_HIGH] += n[1]
    q.cnt[K_LOW] += n[2]
    q.cnt[K_MAP_NAN] += n[3]
    for k in range(3):
        if a[2 * k] < q.mn[K_ROUNDED + k]:
            q.mn[K_ROUNDED + k] = a[2 * k]
        if a[2 * k + 1] > q.mx[K_ROUNDED + k]:
            q.mx[K_ROUNDED + k] = a[2 * k + 1]
    q.outc[ST_EXACT] += ex
    q.outc[ST_ROUNDED] += n[0]
    q.outc[ST_MAPPED] += n[3]
    q.outc[oor_outcome] += n[1] + n[2]


cdef bint _fast_block(const flt_t* x, const flt_t* t, Py_ssize_t m, int64_t base, void* yb, int sc, int dc,
                      cfg_t* ce, cfg_t* cd, bint so, double od, double sd, bint finite_keys, rep_t* q) noexcept nogil:
    """The block by the codec's own loops and the vectorised counts; False (nothing counted)
    when it needs the exact path: a value fails, a class appears for the first time, a value
    collides with a decode key or changes kind."""
    cdef flt_t back[BLOCK]
    cdef int64_t n[4]
    cdef int64_t n2[4]
    cdef double a[6]
    cdef int64_t st[2]
    cdef double e[2]
    cdef int stage = -1, k
    cdef Py_ssize_t r, j
    cdef int64_t ex
    if so:
        r = so_cast_block(<const void*>x, sc, yb, dc, m, od, sd, ce, &stage)
    else:
        setup_keys(ce, sc, dc)
        r = drive(<const void*>x, sc, yb, dc, m, ce)
    if r >= 0:
        return False
    n[0] = n[1] = n[2] = n[3] = 0
    a[0] = a[2] = a[4] = INFINITY
    a[1] = a[3] = a[5] = -INFINITY
    if flt_t is float:
        zr_status_f(x, t, m, ce.rmode, 0, <double>ce.f.lo, <double>ce.f.hi, n, a)
    else:
        zr_status_d(x, t, m, ce.rmode, 0, <double>ce.f.lo, <double>ce.f.hi, n, a)
    ex = m - n[0] - n[1] - n[2] - n[3]
    if ((ex and q.first[K_EXACT] < 0) or (n[0] and q.first[K_ROUNDED] < 0) or (n[1] and q.first[K_HIGH] < 0)
            or (n[2] and q.first[K_LOW] < 0) or (n[3] and q.first[K_MAP_NAN] < 0)):
        return False
    # a collision with a NaN / +-Infinity sentinel changes the kind (the stats loop sees it);
    # one with a finite sentinel (a fill value's code) needs a look at the codes
    if finite_keys and _collisions(yb, dc, x, m, cd.keys, cd.nkeys):
        return False
    if so:
        r = cast_so_block(<const void*>yb, dc, <void*>back, sc, m, od, sd, cd, &stage)
    else:
        setup_keys(cd, dc, sc)
        r = drive(<const void*>yb, dc, <void*>back, sc, m, cd)
    if r >= 0:
        return False
    st[0] = st[1] = 0
    e[0] = e[1] = 0.0
    if flt_t is float:
        zr_stats_f(x, back, m, st, e)
    else:
        zr_stats_d(x, back, m, st, e)
    if st[0]:
        return False
    if n[1] or n[2]:  # values out of range: their minima / maxima in a second pass
        n2[0] = n2[1] = n2[2] = n2[3] = 0
        if flt_t is float:
            zr_status_f(x, t, m, ce.rmode, 1, <double>ce.f.lo, <double>ce.f.hi, n2, a)
        else:
            zr_status_d(x, t, m, ce.rmode, 1, <double>ce.f.lo, <double>ce.f.hi, n2, a)
    # an ordinary block: merge its counts
    _merge(q, ex, n, a, ST_CLAMPED if ce.oor == OOR_CLAMP else ST_WRAPPED)
    if e[0] > q.max_abs:
        j = _first_err(x, back, m, e[0], False)
        q.max_abs = e[0]
        q.i_abs = base + j
    if e[1] > q.max_rel:
        j = _first_err(x, back, m, e[1], True)
        q.max_rel = e[1]
        q.i_rel = base + j
    if st[1] and q.i_zero < 0:
        q.i_zero = base + _first_zero_err(x, back, m)
    return True


cdef inline bint _dec_nan(const void* v, int sc) noexcept nogil:
    """The decode map's one value (source type) is a NaN."""
    cdef double f = <double>(<const float*>v)[0] if sc == T_FLOAT32 else (<const double*>v)[0]
    return f != f


cdef bint _one_block(const flt_t* x, Py_ssize_t m, int64_t base, void* yb, int sc, int dc, cfg_t* cd, bint so,
                     const zr_par_t* p, rep_t* q) noexcept nogil:
    """The block in one pass (``_one_call``): encode, classes, minima / maxima, round trip
    and fill counts; False (nothing counted) when it needs the exact path -- as
    ``_fast_block``, also when a class appears for the first time (its first index)."""
    cdef zr_one_t z
    cdef flt_t back[BLOCK]
    cdef flt_t t[BLOCK]
    cdef int64_t n2[4]
    cdef double a[6]
    cdef int64_t ex
    cdef int k, stage = -1
    cdef Py_ssize_t r, i, ja = -1, jr = -1, jz = -1
    cdef flt_t o = <flt_t>p.od
    cdef flt_t s = <flt_t>p.sd
    z.n[0] = z.n[1] = z.n[2] = z.n[3] = 0
    z.a[0] = INFINITY
    z.a[1] = -INFINITY
    z.e[0] = z.e[1] = 0.0
    z.zero = z.fc = z.fv = 0
    if zr_one(flt_t is double, dc, <const void*>x, yb, m, p, &z):
        return False
    ex = m - z.n[0] - z.n[1] - z.n[2] - z.n[3]
    if ((ex and q.first[K_EXACT] < 0) or (z.n[0] and q.first[K_ROUNDED] < 0) or (z.n[1] and q.first[K_HIGH] < 0)
            or (z.n[2] and q.first[K_LOW] < 0) or (z.n[3] and q.first[K_MAP_NAN] < 0)):
        return False
    if z.e[0] > q.max_abs or z.e[1] > q.max_rel or (z.zero and q.i_zero < 0):
        # a new largest error (rare after the first blocks): its first index, from the
        # codec's own decode of the block
        if so:
            r = cast_so_block(<const void*>yb, dc, <void*>back, sc, m, p.od, p.sd, cd, &stage)
        else:
            setup_keys(cd, dc, sc)
            r = drive(<const void*>yb, dc, <void*>back, sc, m, cd)
        if r >= 0:
            return False
        if z.e[0] > q.max_abs:
            ja = _first_err(x, back, m, z.e[0], False)
            if ja < 0:
                return False
        if z.e[1] > q.max_rel:
            jr = _first_err(x, back, m, z.e[1], True)
            if jr < 0:
                return False
        if z.zero and q.i_zero < 0:
            jz = _first_zero_err(x, back, m)
            if jz < 0:
                return False
    a[0] = z.a[0]
    a[1] = z.a[1]
    a[2] = a[4] = INFINITY
    a[3] = a[5] = -INFINITY
    if z.n[1] or z.n[2]:  # values out of range (clamped): their minima / maxima in a second pass
        for i in range(m):
            t[i] = (x[i] - o) * s
        n2[0] = n2[1] = n2[2] = n2[3] = 0
        if flt_t is float:
            zr_status_f(x, t, m, p.mode, 1, p.lo, p.hi, n2, a)
        else:
            zr_status_d(x, t, m, p.mode, 1, p.lo, p.hi, n2, a)
    if ja >= 0:
        q.max_abs = z.e[0]
        q.i_abs = base + ja
    if jr >= 0:
        q.max_rel = z.e[1]
        q.i_rel = base + jr
    if jz >= 0:
        q.i_zero = base + jz
    _merge(q, ex, z.n, a, ST_CLAMPED)
    q.nfc += z.fc
    q.nfv += z.fv
    return True


cdef int64_t _bits_equal(const void* p, Py_ssize_t isz, Py_ssize_t m, uint64_t bits) noexcept nogil:
    """Elements of ``p`` (``isz`` bytes each) whose bit pattern is ``bits``."""
    cdef Py_ssize_t i
    cdef int64_t c = 0
    if isz == 1:
        for i in range(m):
            c += (<const uint8_t*>p)[i] == <uint8_t>bits
    elif isz == 2:
        for i in range(m):
            c += (<const uint16_t*>p)[i] == <uint16_t>bits
    elif isz == 4:
        for i in range(m):
            c += (<const uint32_t*>p)[i] == <uint32_t>bits
    else:
        for i in range(m):
            c += (<const uint64_t*>p)[i] == bits
    return c


cdef void _report(const flt_t* x, void* y, int dc, Py_ssize_t isz, Py_ssize_t n, bint so, double od, double sd,
                  cfg_t* ce, cfg_t* cd, bint fast, bint finite_keys, const zr_par_t* p, rep_t* q,
                  uint8_t* codes) noexcept nogil:
    cdef flt_t t[BLOCK]
    cdef uint64_t scratch[BLOCK]
    cdef Py_ssize_t start = 0, m, i
    cdef int sc = T_FLOAT32 if flt_t is float else T_FLOAT64
    cdef flt_t o = <flt_t>od
    cdef flt_t s = <flt_t>sd
    cdef const flt_t* tp
    cdef void* yb
    while start < n:
        m = n - start
        if m > BLOCK:
            m = BLOCK
        yb = <void*>((<char*>y) + start * isz) if y != NULL else <void*>scratch
        if p.on and _one_block(x + start, m, start, yb, sc, dc, cd, so, p, q):
            start += m
            continue
        if so:
            for i in range(m):
                t[i] = (x[start + i] - o) * s
            tp = t
        else:
            tp = x + start
        if not (fast and _fast_block(x + start, tp, m, start, yb, sc, dc, ce, cd, so, od, sd, finite_keys, q)):
            _exact_block(x + start, tp, m, start, yb, sc, dc, ce, cd, so, o, s, q,
                         codes + start if codes != NULL else NULL)
        if p.hasfc:
            q.nfc += _bits_equal(yb, isz, m, p.fcode)
        if p.hasfv:
            q.nfv += _bits_equal(<const void*>(x + start), sizeof(flt_t), m, p.fbits)
        start += m


def cast_report_into(src, dst, codes, CastFormat fmt not None, int rounding, int out_of_range, bint scale_offset,
                     double offset, double scale, keys, values, CastFormat dec_fmt not None, int dec_rounding,
                     int dec_out_of_range, dec_keys, dec_values, fill_code=None, fill_value=None):
    """The report of ``[scale_offset{offset, scale},] cast_value`` over a float32 / float64
    ``src`` (1-d C-contiguous; ``scale_offset`` false: the cast alone).

    ``dst``: None or the encoded values (the storage type of the cast's natural target
    format ``fmt``; failing elements get 0); ``codes``: None or a uint8 array that receives
    every element's class | flags.  ``keys`` / ``values``: the encode scalar_map (source /
    target storage), ``dec_*``: the decode cast's format (``src``'s), modes and map.

    Returns ``(counts, minima, maxima, firsts, outcomes, first_fail_code, max_abs, i_abs,
    max_rel, i_rel, i_zero)``: per slot (:data:`SLOT_NAMES`) the count, the smallest and
    largest source value (+inf / -inf when none) and the first flat index (-1: none);
    the outcome counts exact, rounded, clamped, wrapped, mapped, failing; the largest
    round-trip errors and their first indices (-1: none); the first original zero read back
    non-zero (-1: none); then ``fill_codes, fill_values``: the encoded values bit-equal to
    ``fill_code`` (None or one element of ``fmt``'s storage type) and the source values
    bit-equal to ``fill_value`` (None or one element of ``src``'s type), 0 when not given.

    Chains whose codes convert back to the source type exactly (float64 with integers of
    <= 32 bits, float32 with <= 16 bits), without per-element codes, with at most a NaN key
    each way, take one pass per block (``zr_one_*``); blocks it cannot decide, and every
    other chain, the fast / exact paths.
    """
    cdef Arrays a = Arrays()
    cdef Arrays d = Arrays()
    cdef cfg_t ce
    cdef cfg_t cd
    cdef rep_t q
    cdef Py_ssize_t n, k
    cdef int sc, dc
    cdef Py_ssize_t isz
    cdef const void* xp
    cdef void* yp = NULL
    cdef uint8_t* cp = NULL
    cdef bint fast, finite_keys
    cdef zr_par_t p
    cdef object u
    a.take(0, src, False, "cast_report_into: src")
    a.take(1, dst, True, "cast_report_into: dst")
    a.take(2, keys, False, "cast_report_into: keys")
    a.take(3, values, False, "cast_report_into: values")
    a.take(4, codes, True, "cast_report_into: codes")
    d.take(0, dec_keys, False, "cast_report_into: dec_keys")
    d.take(1, dec_values, False, "cast_report_into: dec_values")
    d.take(2, fill_code, False, "cast_report_into: fill_code")
    d.take(3, fill_value, False, "cast_report_into: fill_value")
    n = a.n[0]
    sc = a.code[0]
    dc = fmt.code
    if sc != T_FLOAT32 and sc != T_FLOAT64:
        raise ValueError("cast_report_into: src: expected float32 or float64")
    if not fmt.f.natural:
        raise ValueError(f"cast_report_into: fmt: expected a format stored as itself, received {fmt!r}")
    if dst is not None and (a.n[1] != n or a.code[1] != dc):
        raise ValueError(f"cast_report_into: dst: expected {n} elements of the storage type of {fmt!r}")
    if codes is not None and (a.n[4] != n or a.code[4] != T_UINT8):
        raise ValueError(f"cast_report_into: codes: expected {n} uint8 elements")
    if dec_fmt.code != sc:
        raise ValueError(f"cast_report_into: dec_fmt: expected the source's format, received {dec_fmt!r}")
    if (keys is not None and a.code[2] != sc) or (values is not None and a.code[3] != dc):
        raise ValueError("cast_report_into: keys, values: expected the source and the target storage types")
    if (dec_keys is not None and d.code[0] != dc) or (dec_values is not None and d.code[1] != sc):
        raise ValueError("cast_report_into: dec_keys, dec_values: expected the target and the source storage types")
    if fill_code is not None and (d.n[2] != 1 or d.code[2] != dc):
        raise ValueError(f"cast_report_into: fill_code: expected 1 element of the storage type of {fmt!r}")
    if fill_value is not None and (d.n[3] != 1 or d.code[3] != sc):
        raise ValueError("cast_report_into: fill_value: expected 1 element of the source's type")
    isz = fmt.f.itemsize
    # does a decode key map to a finite value (a numeric sentinel)?
    finite_keys = dec_values is not None and bool(np.isfinite(np.asarray(dec_values, dtype=np.float64)).any())
    setup_cfg(&ce, &fmt.f, rounding, out_of_range, a.ptr[2], a.n[2], a.ptr[3], a.n[3])
    try:
        setup_cfg(&cd, &dec_fmt.f, dec_rounding, dec_out_of_range, d.ptr[0], d.n[0], d.ptr[1], d.n[1])
    except BaseException:
        release_cfg(&ce)
        raise
    p.on = False
    p.hasfc = fill_code is not None
    p.hasfv = fill_value is not None
    p.fcode = p.fbits = 0
    if p.hasfc:
        u = np.asarray(fill_code)
        p.fcode = int(u.view(f"u{u.dtype.itemsize}")[0])
    if p.hasfv:
        u = np.asarray(fill_value)
        p.fbits = int(u.view(f"u{u.dtype.itemsize}")[0])
    p.hasdk = d.n[0] == 1
    p.dkey = int(np.asarray(dec_keys)[0]) if p.hasdk else 0
    p.mode = ce.rmode
    p.clamp = ce.oor == OOR_CLAMP
    p.lo = <double>ce.f.lo
    p.hi = <double>ce.f.hi
    p.od = offset if scale_offset else 0.0
    p.sd = scale if scale_offset else 1.0
    for k in range(NSLOT):
        q.cnt[k] = 0
        q.mn[k] = INFINITY
        q.mx[k] = -INFINITY
        q.first[k] = -1
    for k in range(6):
        q.outc[k] = 0
    q.first_fail_code = 0
    q.max_abs = 0.0
    q.max_rel = 0.0
    q.i_abs = q.i_rel = q.i_zero = -1
    q.nfc = q.nfv = 0
    if n:
        xp = a.ptr[0]
        if dst is not None:
            yp = a.ptr[1]
        if codes is not None:
            cp = <uint8_t*>a.ptr[4]
        with nogil:
            setup_keys(&ce, sc, dc)
            p.nank = ce.nan_key
            p.nanc = <int64_t>ce.nan_val
            # the vectorised status arithmetic in float64 is exact for natural integer
            # targets of <= 32 bits; per-element codes come from the exact path only
            fast = (cp == NULL and fmt.f.kind != 2 and fmt.f.nbits <= 32 and (ce.nkeys == 0 or ce.nan_key))
            # one pass: codes read back exactly as the source type, a decode map of at most
            # one key that reads back as NaN
            p.on = (fast and (sc == T_FLOAT64 or fmt.f.nbits <= 16) and d.n[0] == d.n[1] and d.n[0] <= 1
                    and (d.n[0] == 0 or _dec_nan(d.ptr[1], sc)))
            if sc == T_FLOAT32:
                _report(<const float*>xp, yp, dc, isz, n, scale_offset, offset, scale, &ce, &cd, fast, finite_keys, &p,
                        &q, cp)
            else:
                _report(<const double*>xp, yp, dc, isz, n, scale_offset, offset, scale, &ce, &cd, fast, finite_keys, &p,
                        &q, cp)
    release_cfg(&ce)
    release_cfg(&cd)
    return (tuple(q.cnt[k] for k in range(NSLOT)), tuple(q.mn[k] for k in range(NSLOT)),
            tuple(q.mx[k] for k in range(NSLOT)), tuple(q.first[k] for k in range(NSLOT)),
            tuple(q.outc[k] for k in range(6)), q.first_fail_code, q.max_abs, q.i_abs, q.max_rel, q.i_rel, q.i_zero,
            q.nfc, q.nfv)
