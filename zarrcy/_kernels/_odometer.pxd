# The odometer step of the kernels' loops over every position of a box (the rows of a
# chunk, the chunks of a grid, the tasks of a selection), last dimension fastest.

from libc.stdint cimport int64_t


cdef inline bint advance(int64_t *pos, const int64_t *ext, Py_ssize_t n) noexcept nogil:
    """Step ``pos[0:n]`` to the next position inside ``ext[0:n]``; False when it wrapped
    around to all zeros (every position was visited; also at once for ``n <= 0``)."""
    cdef Py_ssize_t d = n - 1
    while d >= 0:
        pos[d] += 1
        if pos[d] < ext[d]:
            return True
        pos[d] = 0
        d -= 1
    return False
