"""A small native worker pool for the per-inner-chunk kernels (issue 13: one read's
inner chunks decoded by two threads without Python thread hand-offs).

Why native threads: a Python pool worker wakes through a condition variable and then
waits for the GIL; measured 0.07-0.27 ms late, longer than decoding one 64 KiB inner
chunk.  These helpers never touch Python: they spin briefly after each job (so the next
read of a sequence finds them awake), then block on a condition variable.

Protocol (C level, ``_workers.pxd``): ``run_in(fn, arg, helpers, budget)`` posts a job, calls
``fn(arg)`` on the calling thread, and waits until every helper that joined has
returned from ``fn``.  ``fn`` claims work items itself (``claim`` on a counter in
``arg``) and returns when none are left; a helper joining late finds nothing to do, so
the caller never waits for work that has not started, and a job is never blocked by
another (several callers may post jobs at once; idle helpers take the oldest job that
still accepts help).

Budgets: a helper joins a job only with a slot of the job's ``Budget`` (the thread
budget of the API call that posted it, ``zarrcy.execution``), taken atomically when it
joins and given back when it leaves; the caller of a job holds a slot already.  So the
threads of one call -- its calling thread, its Python pool helpers and these native
helpers -- are never more than its budget, and a helper may join a job late, as soon
as another thread of the same call gives its slot back.

Threads are created lazily, at most ``MAX_HELPERS``; a failed ``pthread_create`` just
means fewer helpers.  Process safety: ``pthread_atfork`` handlers hold the pool's
mutex across ``fork`` and give the child an empty pool (the parent's threads do not
exist there; the child starts its own on first use).  ``spawn`` / ``forkserver``
children import the module afresh.  On Windows (no pthreads) every job runs on the
calling thread.
"""

cdef extern from "zc_workers.h":
    ctypedef struct zcw_budget:
        long busy
        long limit
        long peak
    ctypedef void (*zcw_fn)(void *) noexcept nogil
    void zcw_run(zcw_fn fn, void *arg, int helpers, zcw_budget *b) noexcept nogil
    void zcw_budget_init(zcw_budget *b, long limit, long busy) noexcept nogil
    int zcw_budget_try(zcw_budget *b) noexcept nogil
    void zcw_budget_release(zcw_budget *b) noexcept nogil
    void zcw_budget_acquire(zcw_budget *b) noexcept nogil
    void zcw_set_rendezvous(int on) noexcept nogil
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


cdef class Budget:
    """The thread budget of one API call (``zarrcy.execution.ExecContext.budget``): at most
    ``limit`` threads hold a slot at once; the thread that creates it holds the first.
    Python pool helpers take a slot with :meth:`try_acquire` before working and give it
    back with :meth:`release`; native helpers do the same in C when they join a kernel
    call made with this budget.  ``peak`` is the most slots ever held at once."""

    cdef zcw_budget b

    def __cinit__(self, long limit, long busy=1):
        zcw_budget_init(&self.b, limit, busy)

    @property
    def limit(self):
        return self.b.limit

    @property
    def busy(self):
        return self.b.busy  # (a snapshot: other threads may change it)

    @property
    def peak(self):
        return self.b.peak

    def try_acquire(self):
        """Take a slot if one is free (True) -- never waits."""
        return zcw_budget_try(&self.b) != 0

    def acquire(self):
        """Take a slot, waiting (without the GIL) until one is free."""
        if zcw_budget_try(&self.b):
            return
        with nogil:
            zcw_budget_acquire(&self.b)

    def release(self):
        """Give a slot back (wakes a waiter or a native helper of this call)."""
        zcw_budget_release(&self.b)


cdef void run(work_fn fn, void *arg, int helpers, int limit) noexcept nogil:
    cdef zcw_budget b
    zcw_budget_init(&b, limit, 1)
    zcw_run(<zcw_fn>fn, arg, helpers, &b)


cdef void run_in(work_fn fn, void *arg, int helpers, void *budget) noexcept nogil:
    zcw_run(<zcw_fn>fn, arg, helpers, <zcw_budget *>budget)


cdef void *budget_ptr(object budget) except? NULL:
    if budget is None:
        return NULL
    if type(budget) is not Budget:
        raise TypeError(f"budget: expected a zarrcy._kernels._workers.Budget or None, received {type(budget).__name__}")
    return &(<Budget>budget).b


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


def set_rendezvous(bint on):
    """Tests only: a kernel call that may get a helper waits (at most 10 s) until one
    has joined before working itself, so "two threads busy" is observed whatever the
    machine's load (the rule is pinned deterministically)."""
    zcw_set_rendezvous(on)


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
        run(<work_fn>_count_fn, &c, helpers, limit)
    return c.done
