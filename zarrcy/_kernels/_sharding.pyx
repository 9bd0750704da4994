"""Shard index arithmetic for the ``sharding_indexed`` codec
(../shared/specs/v3-codec-sharding-indexed.rst, "Binary shard format").

The index is ``prod(chunks_per_shard)`` pairs ``(offset, nbytes)`` of uint64 in C order
of the inner-chunk grid; ``offset == nbytes == 2^64-1`` marks an empty inner chunk.

Everything here is pure index work: no zarrcy imports, no Python objects inside the
loops.  Values read from a file are only trusted after :func:`validate_index` passed.
Functions return ``-1`` (or a count) on success; the Python layer raises with context.
"""

from libc.stdint cimport int64_t, uint64_t, uint8_t
from libc.string cimport memcmp, memcpy
from libc.stdlib cimport free, malloc, qsort

import numpy as np

cdef uint64_t SENTINEL = 0xFFFFFFFFFFFFFFFFULL
SENTINEL_U64 = 0xFFFFFFFFFFFFFFFF

# dimensions handled by the odometer loops (stack arrays); Zarr has no rank limit,
# but 64 dimensions is far beyond anything a shard index could hold in memory anyway
cdef enum:
    MAX_NDIM = 64
MAX_RANK = MAX_NDIM


# ------------------------------------------------------------------------------------
# index <-> little-endian bytes
# ------------------------------------------------------------------------------------

from zarrcy._kernels._endian cimport load_le64 as _load_le64, store_le64 as _store_le64
from zarrcy._kernels._odometer cimport advance


def decode_index(const uint8_t[::1] raw, uint64_t[::1] out):
    """Little-endian bytes -> uint64 values (``len(raw) == 8 * len(out)``)."""
    cdef Py_ssize_t n = out.shape[0], i
    if raw.shape[0] != 8 * n:
        raise ValueError(f"decode_index: expected {8 * n} bytes, received {raw.shape[0]}")
    if n == 0:
        return
    cdef const uint8_t* src = &raw[0]
    cdef uint64_t* dst = &out[0]
    with nogil:
        for i in range(n):
            dst[i] = _load_le64(src + 8 * i)


def encode_index(const uint64_t[::1] index, uint8_t[::1] out):
    """uint64 values -> little-endian bytes (``len(out) == 8 * len(index)``)."""
    cdef Py_ssize_t n = index.shape[0], i
    if out.shape[0] != 8 * n:
        raise ValueError(f"encode_index: expected {8 * n} output bytes, received {out.shape[0]}")
    if n == 0:
        return
    cdef const uint64_t* src = &index[0]
    cdef uint8_t* dst = &out[0]
    with nogil:
        for i in range(n):
            _store_le64(dst + 8 * i, src[i])


# ------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------

cdef Py_ssize_t _validate(const uint64_t* idx, Py_ssize_t n, uint64_t data_start,
                          uint64_t data_stop, uint64_t shard_size, int* fault) noexcept nogil:
    cdef Py_ssize_t i
    cdef uint64_t off, nb, end
    for i in range(n):
        off = idx[2 * i]
        nb = idx[2 * i + 1]
        if off == SENTINEL and nb == SENTINEL:
            continue
        if off == SENTINEL or nb == SENTINEL:
            fault[0] = FAULT_HALF_EMPTY
            return i
        if nb > SENTINEL - off:
            fault[0] = FAULT_OVERFLOW
            return i
        end = off + nb
        if end > shard_size:
            fault[0] = FAULT_PAST_END
            return i
        if off < data_start or end > data_stop:
            fault[0] = FAULT_INTO_INDEX
            return i
    fault[0] = FAULT_NONE
    return -1


def validate_index(const uint64_t[::1] index, uint64_t data_start, uint64_t data_stop,
                   uint64_t shard_size):
    """Check every ``(offset, nbytes)`` pair; return ``(entry, fault)`` of the first bad one.

    Inner chunk bytes must lie in ``[data_start, data_stop)`` (the shard minus its index)
    and end within ``shard_size``.  Pass ``2^64-1`` for ``data_stop``/``shard_size``
    when the shard size is unknown (partial reads of an end index); truncation is then
    detected when the ranges are read.  Entries that share bytes are legal (a writer
    may deduplicate identical inner chunks).  Returns ``(-1, FAULT_NONE)`` if all good.
    """
    cdef Py_ssize_t n2 = index.shape[0]
    if n2 % 2:
        raise ValueError(f"validate_index: expected an even number of values, received {n2}")
    cdef int fault = FAULT_NONE
    cdef Py_ssize_t bad = -1
    if n2 == 0:
        return -1, FAULT_NONE
    cdef const uint64_t* p = &index[0]
    with nogil:
        bad = _validate(p, n2 // 2, data_start, data_stop, shard_size, &fault)
    return bad, fault


# ------------------------------------------------------------------------------------
# writing: offsets from sizes
# ------------------------------------------------------------------------------------

def build_index(const uint64_t[::1] nbytes, uint64_t base, uint64_t[::1] index_out):
    """Lay inner chunks out back to back from ``base`` in C order.

    ``nbytes[i] == 2^64-1`` means chunk ``i`` is empty (both index values set to
    ``2^64-1``).  ``index_out`` has ``2 * len(nbytes)`` values.  Returns the end offset
    of the last chunk (``base`` if all are empty); raises OverflowError if the layout
    does not fit in uint64.
    """
    cdef Py_ssize_t n = nbytes.shape[0], i
    if index_out.shape[0] != 2 * n:
        raise ValueError(f"build_index: expected {2 * n} output values, received {index_out.shape[0]}")
    cdef uint64_t pos = base, nb
    cdef bint overflow = False
    with nogil:
        for i in range(n):
            nb = nbytes[i]
            if nb == SENTINEL:
                index_out[2 * i] = SENTINEL
                index_out[2 * i + 1] = SENTINEL
                continue
            if nb >= SENTINEL - pos:
                overflow = True
                break
            index_out[2 * i] = pos
            index_out[2 * i + 1] = nb
            pos += nb
    if overflow:
        raise OverflowError("build_index: shard larger than 2^64-1 bytes")
    return pos


# ------------------------------------------------------------------------------------
# byte-range coalescing
# ------------------------------------------------------------------------------------

cdef inline bint _joins(Py_ssize_t g, uint64_t gs, uint64_t ge, uint64_t off, uint64_t end,
                        uint64_t gap, uint64_t cap) noexcept nogil:
    """The coalescing rule (shared by :func:`coalesce` and :func:`plan_reads`): range
    ``[off, end)``, visited in offset order, joins group ``g`` (span ``[gs, ge)``) when it
    overlaps or touches it or the hole is below ``gap``, and the grown group stays within
    ``cap`` bytes (a group never grows past ``cap`` unless the range adds nothing)."""
    cdef uint64_t new_end
    if g < 0 or not (off <= ge or off - ge < gap):
        return False
    new_end = end if end > ge else ge
    return new_end - gs <= cap or new_end == ge


def coalesce(const uint64_t[::1] offsets, const uint64_t[::1] nbytes, const int64_t[::1] order,
             uint64_t gap, uint64_t cap, int64_t[::1] group_of, uint64_t[::1] group_start,
             uint64_t[::1] group_stop):
    """Merge byte ranges ``[offsets[i], offsets[i] + nbytes[i])`` into fewer requests.

    ``order`` is a permutation sorting the ranges by offset.  Walking in that order, a
    range joins the current group if it overlaps or touches it, or if the hole between
    them is smaller than ``gap``, and the grown group would be at most ``cap`` bytes
    (a single range larger than ``cap`` is a group of its own).  ``group_of[i]`` is the
    group of range ``i``; ``group_start/stop`` its byte span (outputs need room for
    ``len(offsets)`` groups).  Returns the number of groups.  Ranges must not overflow
    (validated index).
    """
    cdef Py_ssize_t n = offsets.shape[0], k, i
    if nbytes.shape[0] != n or order.shape[0] != n:
        raise ValueError("coalesce: offsets, nbytes and order must have equal length")
    if group_of.shape[0] < n or group_start.shape[0] < n or group_stop.shape[0] < n:
        raise ValueError("coalesce: outputs need room for len(offsets) groups")
    for k in range(n):
        if order[k] < 0 or order[k] >= n:
            raise ValueError("coalesce: order is not a permutation")
        if nbytes[order[k]] > SENTINEL - offsets[order[k]]:
            raise ValueError("coalesce: range overflows uint64")
    cdef Py_ssize_t g = -1
    cdef uint64_t gs = 0, ge = 0, off, end
    with nogil:
        for k in range(n):
            i = order[k]
            off = offsets[i]
            end = off + nbytes[i]
            if _joins(g, gs, ge, off, end, gap, cap):
                if end > ge:
                    ge = end
                group_stop[g] = ge
            else:
                g += 1
                gs = off
                ge = end
                group_start[g] = gs
                group_stop[g] = ge
            group_of[i] = g
    return g + 1


cdef struct _Range:
    uint64_t off
    int64_t task


cdef int _cmp_range(const void *a, const void *b) noexcept nogil:
    cdef const _Range *x = <const _Range *>a
    cdef const _Range *y = <const _Range *>b
    if x.off != y.off:
        return -1 if x.off < y.off else 1
    return -1 if x.task < y.task else (1 if x.task > y.task else 0)


def plan_reads(const uint64_t[::1] index, const int64_t[::1] linear, int64_t shard_size,
               uint64_t max_one, uint64_t per_chunk, uint64_t slack, uint64_t gap, uint64_t cap,
               int64_t[::1] task_src, int64_t[::1] task_off, int64_t[::1] task_len,
               uint64_t[::1] group_start, uint64_t[::1] group_stop):
    """The reads of the inner chunks ``linear`` (C-order indices into the validated
    ``index``), in one pass: look up each task's entry, check it, coalesce the ranges.

    Task ``k`` (inner chunk ``linear[k]``) gets ``task_src[k]`` = its coalesced group
    (-1: not stored; then ``task_len[k] = -1``), ``task_off[k]`` = its offset inside the
    group, ``task_len[k]`` = its size.  Groups (``group_start/stop``, room for
    ``len(linear)``) are formed as by :func:`coalesce` (``gap``, ``cap``).  Returns the
    number of groups, or ``-1`` when an entry is implausible -- one larger than
    ``max_one``, stored entries totalling more than ``per_chunk`` times their number
    plus ``slack``, or a range past ``shard_size`` (>= 0: known) -- so that the caller
    raises naming the entry (hostile stores: a sparse file must not make us read GiBs).
    """
    cdef Py_ssize_t m = linear.shape[0], n2 = index.shape[0], k, np_ = 0
    if task_src.shape[0] < m or task_off.shape[0] < m or task_len.shape[0] < m:
        raise ValueError("plan_reads: task outputs need len(linear) entries")
    if group_start.shape[0] < m or group_stop.shape[0] < m:
        raise ValueError("plan_reads: group outputs need room for len(linear) groups")
    for k in range(m):
        if linear[k] < 0 or 2 * linear[k] + 1 >= n2:
            raise IndexError(f"linear[{k}]: expected 0 <= index < {n2 // 2}, received {linear[k]}")
    if m == 0:
        return 0
    cdef _Range *rs = <_Range *>malloc(m * sizeof(_Range))
    if rs == NULL:
        raise MemoryError()
    cdef uint64_t off, nb, total = 0, gs = 0, ge = 0, end
    cdef Py_ssize_t g = -1, i
    cdef bint bad = False
    with nogil:
        for k in range(m):
            off = index[2 * linear[k]]
            nb = index[2 * linear[k] + 1]
            if off == SENTINEL:
                task_src[k] = -1
                task_off[k] = 0
                task_len[k] = -1
                continue
            # sizes are checked before any read; an overflowing range is refused here too
            # (the reader validates the index first: defence in depth, one compare)
            if nb > max_one or nb > SENTINEL - total or nb >= SENTINEL - off:
                bad = True
                break
            total += nb
            if shard_size >= 0 and (off > <uint64_t>shard_size or nb > <uint64_t>shard_size - off):
                bad = True
                break
            task_len[k] = <int64_t>nb
            rs[np_].off = off
            rs[np_].task = k
            np_ += 1
        if not bad and per_chunk == 0:
            bad = total > slack
        elif not bad and <uint64_t>np_ <= (SENTINEL - slack) // per_chunk:
            bad = total > <uint64_t>np_ * per_chunk + slack
        if not bad:
            if np_ > 1:
                qsort(rs, np_, sizeof(_Range), _cmp_range)
            for i in range(np_):
                k = rs[i].task
                off = rs[i].off
                end = off + <uint64_t>task_len[k]
                if _joins(g, gs, ge, off, end, gap, cap):
                    if end > ge:
                        ge = end
                    group_stop[g] = ge
                else:
                    g += 1
                    gs = off
                    ge = end
                    group_start[g] = gs
                    group_stop[g] = ge
                task_src[k] = g
                task_off[k] = <int64_t>(off - gs)
    free(rs)
    return -1 if bad else g + 1


# ------------------------------------------------------------------------------------
# empty inner chunks (all bytes equal to the fill value's bytes)
# ------------------------------------------------------------------------------------

def empty_chunks(const uint8_t[::1] data, const int64_t[::1] shape, const int64_t[::1] chunk_shape,
                 Py_ssize_t itemsize, const uint8_t[::1] fill_row, uint8_t[::1] out):
    """``out[i] = 1`` if inner chunk ``i`` (C order) holds only the fill value, else 0.

    ``data`` is the C-contiguous shard (``shape``); ``fill_row`` is one inner-chunk row
    of fill value bytes (``chunk_shape[-1] * itemsize``).  The comparison is bytewise,
    so ``-0.0`` or a NaN with another payload counts as data (written, never lost).
    """
    cdef Py_ssize_t ndim = shape.shape[0], d
    if ndim < 1 or ndim > MAX_NDIM or chunk_shape.shape[0] != ndim:
        raise ValueError("empty_chunks: rank must be 1..64 and match chunk_shape")
    cdef int64_t grid[MAX_NDIM]
    cdef int64_t bstride[MAX_NDIM]
    cdef int64_t gpos[MAX_NDIM]
    cdef int64_t rpos[MAX_NDIM]
    cdef Py_ssize_t nchunks = 1, nbytes_total = itemsize
    for d in range(ndim):
        if chunk_shape[d] <= 0 or shape[d] < 0 or shape[d] % chunk_shape[d]:
            raise ValueError("empty_chunks: chunk_shape must evenly divide shape")
        grid[d] = shape[d] // chunk_shape[d]
        nchunks *= grid[d]
        nbytes_total *= shape[d]
    if data.shape[0] != nbytes_total:
        raise ValueError(f"empty_chunks: expected {nbytes_total} bytes, received {data.shape[0]}")
    cdef Py_ssize_t rowlen = chunk_shape[ndim - 1] * itemsize
    if fill_row.shape[0] != rowlen:
        raise ValueError(f"empty_chunks: fill_row must have {rowlen} bytes")
    if out.shape[0] != nchunks:
        raise ValueError(f"empty_chunks: out must have {nchunks} entries")
    if nchunks == 0 or nbytes_total == 0:
        return
    cdef int64_t s = itemsize
    for d in range(ndim - 1, -1, -1):
        bstride[d] = s
        s *= shape[d]
    cdef const uint8_t* src = &data[0]
    cdef const uint8_t* fr = &fill_row[0]
    cdef const int64_t* cshape = &chunk_shape[0]
    cdef Py_ssize_t c, base, off
    cdef bint same
    with nogil:
        for d in range(ndim):
            gpos[d] = 0
        for c in range(nchunks):
            base = 0
            for d in range(ndim):
                base += gpos[d] * chunk_shape[d] * bstride[d]
                rpos[d] = 0
            same = True
            while True:
                off = base
                for d in range(ndim - 1):
                    off += rpos[d] * bstride[d]
                if memcmp(src + off, fr, rowlen) != 0:
                    same = False
                    break
                if not advance(rpos, cshape, ndim - 1):  # next row within the chunk
                    break
            out[c] = same
            advance(gpos, grid, ndim)


# ------------------------------------------------------------------------------------
# assembling a shard from existing bytes
# ------------------------------------------------------------------------------------

def copy_ranges(const uint8_t[::1] src, const uint64_t[::1] src_offsets, const uint64_t[::1] nbytes,
                uint8_t[::1] dst, const uint64_t[::1] dst_offsets):
    """``dst[dst_offsets[i]:+nbytes[i]] = src[src_offsets[i]:+nbytes[i]]`` for every ``i``.

    Every range is bounds-checked against both buffers before the copy loop runs;
    returns ``-1``, or the first range ``i`` that does not fit (nothing copied then).
    """
    cdef Py_ssize_t n = nbytes.shape[0], i
    if src_offsets.shape[0] != n or dst_offsets.shape[0] != n:
        raise ValueError("copy_ranges: src_offsets, nbytes and dst_offsets must have equal length")
    cdef uint64_t ns = <uint64_t>src.shape[0], nd = <uint64_t>dst.shape[0]
    cdef Py_ssize_t bad = -1
    with nogil:
        for i in range(n):
            if (nbytes[i] > ns or src_offsets[i] > ns - nbytes[i]
                    or nbytes[i] > nd or dst_offsets[i] > nd - nbytes[i]):
                bad = i
                break
        if bad == -1:
            for i in range(n):
                if nbytes[i]:
                    memcpy(&dst[dst_offsets[i]], &src[src_offsets[i]], nbytes[i])
    return bad
