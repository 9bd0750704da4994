"""A small native worker pool for the per-inner-chunk kernels (issue 13: one read's
inner chunks decoded by two threads without Python thread hand-offs).

Why native threads: a Python pool worker wakes through a condition variable and then
waits for the GIL; measured 0.07-0.27 ms late, longer than decoding one 64 KiB inner
chunk.  These helpers never touch Python: they spin briefly after each job (so the next
read of a sequence finds them awake), then block on a condition variable.

Protocol (C level, ``_workers.pxd``): ``run(fn, arg, helpers)`` posts a job, calls
``fn(arg)`` on the calling thread, and waits until every helper that joined has
returned from ``fn``.  ``fn`` claims work items itself (``claim`` on a counter in
``arg``) and returns when none are left; a helper joining late finds nothing to do, so
the caller never waits for work that has not started, and a job is never blocked by
another (several callers may post jobs at once; idle helpers take the oldest job that
still accepts help).

Threads are created lazily, at most ``MAX_HELPERS``; a failed ``pthread_create`` just
means fewer helpers.  Process safety: ``pthread_atfork`` handlers hold the pool's
mutex across ``fork`` and give the child an empty pool (the parent's threads do not
exist there; the child starts its own on first use).  ``spawn`` / ``forkserver``
children import the module afresh.  On Windows (no pthreads) every job runs on the
calling thread.
"""

cdef extern from "zc_workers.h":
    ctypedef void (*zcw_fn)(void *) noexcept nogil
    void zcw_run(zcw_fn fn, void *arg, int helpers, int limit) noexcept nogil
    long zcw_claim(long *c) noexcept nogil
    long zcw_peek(long *c) noexcept nogil
    int zcw_is_helper() noexcept nogil
    int zcw_started() noexcept nogil
    void zcw_set_spin(long us) noexcept nogil
    long zcw_jobs_helped() noexcept nogil
    int zcw_init() noexcept nogil

if zcw_init() != 0:  # pragma: no cover - pthread_atfork only fails without memory
    raise MemoryError("pthread_atfork failed")

MAX_HELPERS = 63


cdef void run(work_fn fn, void *arg, int helpers, int limit) noexcept nogil:
    zcw_run(<zcw_fn>fn, arg, helpers, limit)


cdef long claim(long *counter) noexcept nogil:
    return zcw_claim(counter)


cdef long claim_as_helper(long *counter, long stop) noexcept nogil:
    if zcw_is_helper() and zcw_peek(counter) >= stop - 1:
        return stop
    return zcw_claim(counter)


def started():
    """Helper threads started so far in this process (0 in a fresh fork child)."""
    return zcw_started()


def jobs_helped():
    """How many times a helper thread joined a job (tests, benchmarks)."""
    return zcw_jobs_helped()


def set_spin(long microseconds):
    """How long an idle helper spins for the next job before blocking (default 1000)."""
    zcw_set_spin(microseconds)


# -- a trivial job, for tests of the pool itself -----------------------------------------

cdef struct _Count:
    long next
    long n
    long done
    long spin


cdef void _count_fn(void *arg) noexcept nogil:
    cdef _Count *c = <_Count *>arg
    cdef long i, k, x = 0
    while True:
        i = zcw_claim(&c.next)
        if i >= c.n:
            return
        for k in range(c.spin):  # a little work per item
            x = x * 31 + k
        if x == -1:
            c.spin = 0
        zcw_claim(&c.done)


def run_test_job(long n, int helpers, long spin=1000, int limit=64):
    """Run a job of ``n`` items on the caller plus up to ``helpers`` helpers; returns the
    number of items done (``n``) -- exercises the pool (threads, fork children)."""
    cdef _Count c
    c.next = 0
    c.n = n
    c.done = 0
    c.spin = spin
    with nogil:
        zcw_run(_count_fn, &c, helpers, limit)
    return c.done
