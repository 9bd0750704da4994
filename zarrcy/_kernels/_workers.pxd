# A small native worker pool for kernels that split one call's tasks over threads
# (``cimport zarrcy._kernels._workers``; see _workers.pyx).
#
# ``run(fn, arg, helpers, limit)`` calls ``fn(arg)`` on the calling thread and, at the
# same time, on up to ``helpers`` pool threads -- each joining only while fewer than
# ``limit`` threads (callers of any job and helpers) run kernel work, so jobs posted by
# several Python threads at once do not oversubscribe the cores; it returns when every
# call has returned.
# ``fn`` must claim its work items itself (an atomic counter in ``arg``) and return
# when none are left, so a helper that joins late simply finds nothing to do.  ``fn``
# runs without the GIL and must not touch Python objects.

ctypedef void (*work_fn)(void *arg) noexcept nogil

cdef void run(work_fn fn, void *arg, int helpers, int limit) noexcept nogil
# ``run`` with the helpers gated by a ``Budget`` (from :func:`budget_ptr`; the calling
# thread holds one of its slots already): a helper joins only with a slot of it, so the
# threads of one API call never exceed its thread budget, and may join late when a
# thread of the same call frees its slot
cdef void run_in(work_fn fn, void *arg, int helpers, void *budget) noexcept nogil
# the C budget of a ``Budget`` object (NULL for None; TypeError for anything else)
cdef void *budget_ptr(object budget) except? NULL
cdef long claim(long *counter) noexcept nogil
# ``claim``, except that a pool helper takes nothing when at most one item is left: the
# caller (already running) does it, instead of perhaps waiting for a helper that woke
# late or was preempted on a busy machine (returns ``stop`` then)
cdef long claim_as_helper(long *counter, long stop) noexcept nogil
