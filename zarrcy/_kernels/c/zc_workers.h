/* C helpers of zarrcy/_kernels/_workers.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_WORKERS_H
#define ZC_WORKERS_H

/* A thread budget: the execution context's (zarrcy/execution.py), one per API call.
   ``busy`` threads hold a slot, at most ``limit``; ``peak`` is the most ever held at once
   (tests pin it).  Every thread working for the call holds a slot: the calling thread,
   the Python pool helpers (zcw_budget_try through _workers.Budget) and the native
   helpers below, which join a job only when zcw_budget_try succeeds on its budget. */
typedef struct zcw_budget {
    long busy;
    long limit;
    long peak;
    long waiters;     /* threads blocked in zcw_budget_acquire */
} zcw_budget;

static void zcw_budget_peak(zcw_budget *b, long v) {
    long p = __atomic_load_n(&b->peak, __ATOMIC_RELAXED);
    while (v > p && !__atomic_compare_exchange_n(&b->peak, &p, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}
static int zcw_budget_try(zcw_budget *b) {
    long n = __atomic_load_n(&b->busy, __ATOMIC_SEQ_CST);
    while (n < b->limit) {
        if (__atomic_compare_exchange_n(&b->busy, &n, n + 1, 1, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            zcw_budget_peak(b, n + 1);
            return 1;
        }
    }
    return 0;
}
static void zcw_budget_init(zcw_budget *b, long limit, long busy) {
    b->limit = limit < 1 ? 1 : limit; b->busy = busy; b->peak = busy; b->waiters = 0;
}

#if defined(_WIN32)
typedef void (*zcw_fn)(void *);
static void zcw_run(zcw_fn fn, void *arg, int helpers, zcw_budget *b) { (void)helpers; (void)b; fn(arg); }
static void zcw_budget_release(zcw_budget *b) { __atomic_sub_fetch(&b->busy, 1, __ATOMIC_SEQ_CST); }
static void zcw_budget_acquire(zcw_budget *b) { while (!zcw_budget_try(b)) {} }
static long zcw_claim(long *c) { return (*c)++; }
static long zcw_peek(long *c) { return *c; }
static int zcw_is_helper(void) { return 0; }
static int zcw_started(void) { return 0; }
static void zcw_set_spin(long us) { (void)us; }
static void zcw_set_rendezvous(int on) { (void)on; }
static long zcw_jobs_helped(void) { return 0; }
static int zcw_init(void) { return 0; }
#else
#include <pthread.h>
#include <time.h>
#include <sched.h>

#define ZCW_MAX_HELPERS 63
typedef void (*zcw_fn)(void *);

typedef struct zcw_job {
    zcw_fn fn;
    void *arg;
    int want;                 /* helpers that may still join */
    int active;               /* helpers inside fn */
    zcw_budget *budget;       /* a helper joins only with a slot of it */
    struct zcw_job *next;
} zcw_job;

static pthread_mutex_t zcw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t zcw_work = PTHREAD_COND_INITIALIZER;   /* helpers wait for jobs */
static pthread_cond_t zcw_left = PTHREAD_COND_INITIALIZER;   /* callers wait for helpers */
static pthread_mutex_t zcw_slot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t zcw_slot = PTHREAD_COND_INITIALIZER;   /* zcw_budget_acquire waits */
static zcw_job *zcw_head = NULL, *zcw_tail = NULL;          /* jobs accepting helpers */
static int zcw_nthreads = 0;      /* helper threads started */
static int zcw_sleeping = 0;      /* helpers blocked in zcw_work */
static volatile int zcw_posted = 0;   /* jobs in the list (read while spinning) */
static volatile long zcw_epoch = 0;   /* bumped when a job is posted or a slot given back */
static long zcw_spin_ns = 1000000; /* spin this long for a new job before blocking */
static long zcw_helped = 0;       /* jobs a helper joined (tests, benchmarks) */
static int zcw_rendezvous = 0;    /* tests: a caller waits for a helper before working */
static __thread int zcw_helper_thread = 0;   /* 1 in pool threads */

static inline void zcw_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static long zcw_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void zcw_unlink(zcw_job *j) {   /* mu held */
    zcw_job **p = &zcw_head, *prev = NULL;
    while (*p && *p != j) { prev = *p; p = &(*p)->next; }
    if (*p) {
        *p = j->next;
        if (zcw_tail == j) zcw_tail = prev;
        j->next = NULL;
        __atomic_sub_fetch(&zcw_posted, 1, __ATOMIC_RELEASE);
    }
}

/* A slot of ``b`` was given back: wake the threads blocked in zcw_budget_acquire, and a
   sleeping helper when a job is posted (``pool_locked``: zcw_mu is held). */
static void zcw_slot_freed(zcw_budget *b, int pool_locked) {
    __atomic_add_fetch(&zcw_epoch, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->waiters, __ATOMIC_SEQ_CST) > 0) {
        pthread_mutex_lock(&zcw_slot_mu);
        pthread_cond_broadcast(&zcw_slot);
        pthread_mutex_unlock(&zcw_slot_mu);
    }
    if (__atomic_load_n(&zcw_posted, __ATOMIC_ACQUIRE) > 0) {
        if (!pool_locked) pthread_mutex_lock(&zcw_mu);
        if (zcw_sleeping && zcw_head) pthread_cond_signal(&zcw_work);
        if (!pool_locked) pthread_mutex_unlock(&zcw_mu);
    }
}

static void zcw_budget_release(zcw_budget *b) {
    __atomic_sub_fetch(&b->busy, 1, __ATOMIC_SEQ_CST);
    zcw_slot_freed(b, 0);
}

/* Take a slot of ``b``, blocking (never spinning) until one is free.  The waiter count
   is raised before the last try and read by a releaser after its decrement (both
   sequentially consistent), so a release is never missed. */
static void zcw_budget_acquire(zcw_budget *b) {
    if (zcw_budget_try(b)) return;
    pthread_mutex_lock(&zcw_slot_mu);
    __atomic_add_fetch(&b->waiters, 1, __ATOMIC_SEQ_CST);
    while (!zcw_budget_try(b)) pthread_cond_wait(&zcw_slot, &zcw_slot_mu);
    __atomic_sub_fetch(&b->waiters, 1, __ATOMIC_SEQ_CST);
    pthread_mutex_unlock(&zcw_slot_mu);
}

static zcw_job *zcw_joinable(void) {   /* mu held: the oldest job a slot was taken for */
    for (zcw_job *j = zcw_head; j; j = j->next)
        if (zcw_budget_try(j->budget)) return j;
    return NULL;
}

static void *zcw_helper(void *unused) {
    (void)unused;
    zcw_helper_thread = 1;
    pthread_mutex_lock(&zcw_mu);
    for (;;) {
        /* join only with a slot of the job's budget: the threads of one call (its
           caller, Python pool helpers, native helpers) never exceed its thread budget */
        zcw_job *j = zcw_joinable();
        if (j) {
            if (--j->want <= 0) zcw_unlink(j);
            j->active++;
            zcw_helped++;
            if (zcw_rendezvous) pthread_cond_broadcast(&zcw_left);
            pthread_mutex_unlock(&zcw_mu);
            j->fn(j->arg);
            zcw_budget *b = j->budget;
            pthread_mutex_lock(&zcw_mu);
            __atomic_sub_fetch(&b->busy, 1, __ATOMIC_SEQ_CST);
            zcw_slot_freed(b, 1);
            /* the job lives on its caller's stack and may end once active is 0: last touch */
            if (--j->active == 0) pthread_cond_broadcast(&zcw_left);
            continue;
        }
        /* nothing to join: spin a little (without the mutex) for a new job or a freed
           slot, then block */
        long seen = __atomic_load_n(&zcw_epoch, __ATOMIC_SEQ_CST);
        pthread_mutex_unlock(&zcw_mu);
        long until = zcw_now_ns() + zcw_spin_ns;
        for (long k = 0; ; k++) {
            if (__atomic_load_n(&zcw_posted, __ATOMIC_ACQUIRE) > 0
                && __atomic_load_n(&zcw_epoch, __ATOMIC_SEQ_CST) != seen) break;
            zcw_pause();
            if ((k & 63) == 63 && zcw_now_ns() > until) break;
        }
        pthread_mutex_lock(&zcw_mu);
        if (!zcw_head || __atomic_load_n(&zcw_epoch, __ATOMIC_SEQ_CST) == seen) {
            zcw_sleeping++;
            pthread_cond_wait(&zcw_work, &zcw_mu);
            zcw_sleeping--;
        }
    }
    return NULL;
}

static void zcw_start(int want) {   /* mu held */
    if (want > ZCW_MAX_HELPERS) want = ZCW_MAX_HELPERS;
    while (zcw_nthreads < want) {
        pthread_t t;
        pthread_attr_t at;
        if (pthread_attr_init(&at) != 0) return;
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, 1 << 20);
        int r = pthread_create(&t, &at, zcw_helper, NULL);
        pthread_attr_destroy(&at);
        if (r != 0) return;   /* fewer helpers; the caller still does all the work */
        zcw_nthreads++;
    }
}

/* ``fn(arg)`` on the calling thread (which holds a slot of ``b`` already) and on up to
   ``helpers`` pool threads, each joining only with a slot of ``b`` (taken when it
   joins, given back when it leaves): a helper may join late, when a slot frees up
   (another thread of the same call finished its work).  Returns when every helper
   that joined has left. */
static void zcw_run(zcw_fn fn, void *arg, int helpers, zcw_budget *b) {
    zcw_job j;
    if (helpers <= 0) { fn(arg); return; }
    j.fn = fn; j.arg = arg; j.want = helpers; j.active = 0; j.next = NULL; j.budget = b;
    pthread_mutex_lock(&zcw_mu);
    zcw_start(helpers);
    if (zcw_nthreads == 0) { pthread_mutex_unlock(&zcw_mu); fn(arg); return; }
    if (zcw_tail) zcw_tail->next = &j; else zcw_head = &j;
    zcw_tail = &j;
    __atomic_add_fetch(&zcw_posted, 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&zcw_epoch, 1, __ATOMIC_SEQ_CST);
    long room = b->limit - __atomic_load_n(&b->busy, __ATOMIC_SEQ_CST);
    if (zcw_sleeping && room > 0) {
        if (helpers > 1 && room > 1) pthread_cond_broadcast(&zcw_work); else pthread_cond_signal(&zcw_work);
    }
    if (zcw_rendezvous && room > 0) {   /* tests: wait (at most 10 s) until a helper joined */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 10;
        while (j.active == 0 && j.want > 0 && b->limit - __atomic_load_n(&b->busy, __ATOMIC_SEQ_CST) > 0)
            if (pthread_cond_timedwait(&zcw_left, &zcw_mu, &ts) != 0) break;
    }
    pthread_mutex_unlock(&zcw_mu);
    fn(arg);
    pthread_mutex_lock(&zcw_mu);
    zcw_unlink(&j);            /* no more helpers join (no-op if it already left) */
    while (j.active > 0) pthread_cond_wait(&zcw_left, &zcw_mu);
    pthread_mutex_unlock(&zcw_mu);
}

static long zcw_claim(long *c) { return __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }
static long zcw_peek(long *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }
static int zcw_is_helper(void) { return zcw_helper_thread; }

static int zcw_started(void) {
    pthread_mutex_lock(&zcw_mu);
    int n = zcw_nthreads;
    pthread_mutex_unlock(&zcw_mu);
    return n;
}
static void zcw_set_spin(long us) {
    pthread_mutex_lock(&zcw_mu);
    zcw_spin_ns = us < 0 ? 0 : us * 1000L;
    pthread_mutex_unlock(&zcw_mu);
}
static void zcw_set_rendezvous(int on) {
    pthread_mutex_lock(&zcw_mu);
    zcw_rendezvous = on;
    pthread_mutex_unlock(&zcw_mu);
}
static long zcw_jobs_helped(void) {
    pthread_mutex_lock(&zcw_mu);
    long n = zcw_helped;
    pthread_mutex_unlock(&zcw_mu);
    return n;
}

/* fork: hold the mutex across fork (no helper is mid-update), give the child an
   empty pool with fresh synchronisation objects */
static void zcw_prepare(void) { pthread_mutex_lock(&zcw_mu); }
static void zcw_parent(void) { pthread_mutex_unlock(&zcw_mu); }
static void zcw_child(void) {
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER, m2 = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c1 = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER, c3 = PTHREAD_COND_INITIALIZER;
    zcw_mu = m; zcw_work = c1; zcw_left = c2; zcw_slot_mu = m2; zcw_slot = c3;
    zcw_head = zcw_tail = NULL;
    zcw_nthreads = 0; zcw_sleeping = 0; zcw_posted = 0; zcw_helped = 0; zcw_epoch = 0;
}
static int zcw_init(void) { return pthread_atfork(zcw_prepare, zcw_parent, zcw_child); }
#endif

#endif
