/* C helpers of zarrcy/_kernels/_workers.pyx (moved out of an inline `cdef extern from *`
   block so C tooling and reviewers see them; static: each including module gets
   its own copy, as before). */
#ifndef ZC_WORKERS_H
#define ZC_WORKERS_H

#if defined(_WIN32)
typedef void (*zcw_fn)(void *);
static void zcw_run(zcw_fn fn, void *arg, int helpers, int limit) { (void)helpers; (void)limit; fn(arg); }
static long zcw_claim(long *c) { return (*c)++; }
static long zcw_peek(long *c) { return *c; }
static int zcw_is_helper(void) { return 0; }
static int zcw_started(void) { return 0; }
static void zcw_set_spin(long us) { (void)us; }
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
    int limit;                /* helpers join only while fewer threads run kernel work */
    struct zcw_job *next;
} zcw_job;

static pthread_mutex_t zcw_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t zcw_work = PTHREAD_COND_INITIALIZER;   /* helpers wait for jobs */
static pthread_cond_t zcw_left = PTHREAD_COND_INITIALIZER;   /* callers wait for helpers */
static zcw_job *zcw_head = NULL, *zcw_tail = NULL;          /* jobs accepting helpers */
static int zcw_nthreads = 0;      /* helper threads started */
static int zcw_sleeping = 0;      /* helpers blocked in zcw_work */
static volatile int zcw_posted = 0;   /* jobs in the list (read while spinning) */
static volatile int zcw_running = 0;  /* threads inside a job's fn: callers and helpers */
static volatile int zcw_limit = 1;    /* the newest job's limit (read while spinning) */
static long zcw_spin_ns = 1000000; /* spin this long for a new job before blocking */
static long zcw_helped = 0;       /* jobs a helper joined (tests, benchmarks) */
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

static void *zcw_helper(void *unused) {
    (void)unused;
    zcw_helper_thread = 1;
    pthread_mutex_lock(&zcw_mu);
    for (;;) {
        zcw_job *j = zcw_head;
        /* join only while fewer than the job's limit of threads run kernel work: the
           callers of several jobs (Python threads of the array layer) already fill
           the cores; a helper joins when one of them leaves */
        if (j && __atomic_load_n(&zcw_running, __ATOMIC_ACQUIRE) < j->limit) {
            if (--j->want <= 0) zcw_unlink(j);
            j->active++;
            zcw_helped++;
            __atomic_add_fetch(&zcw_running, 1, __ATOMIC_ACQ_REL);
            pthread_mutex_unlock(&zcw_mu);
            j->fn(j->arg);
            __atomic_sub_fetch(&zcw_running, 1, __ATOMIC_ACQ_REL);
            pthread_mutex_lock(&zcw_mu);
            if (--j->active == 0) pthread_cond_broadcast(&zcw_left);
            continue;
        }
        /* nothing to do: spin a little (without the mutex), then block */
        pthread_mutex_unlock(&zcw_mu);
        long until = zcw_now_ns() + zcw_spin_ns;
        for (long k = 0; ; k++) {
            if (__atomic_load_n(&zcw_posted, __ATOMIC_ACQUIRE) > 0
                && __atomic_load_n(&zcw_running, __ATOMIC_ACQUIRE) < zcw_limit) break;
            zcw_pause();
            if ((k & 63) == 63 && zcw_now_ns() > until) break;
        }
        pthread_mutex_lock(&zcw_mu);
        if (!zcw_head || __atomic_load_n(&zcw_running, __ATOMIC_ACQUIRE) >= zcw_head->limit) {
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

static void zcw_leave(void) {   /* a caller's fn returned: a helper may join another job */
    __atomic_sub_fetch(&zcw_running, 1, __ATOMIC_ACQ_REL);
    if (__atomic_load_n(&zcw_posted, __ATOMIC_ACQUIRE) > 0) {
        pthread_mutex_lock(&zcw_mu);
        if (zcw_sleeping && zcw_head) pthread_cond_signal(&zcw_work);
        pthread_mutex_unlock(&zcw_mu);
    }
}

static void zcw_run(zcw_fn fn, void *arg, int helpers, int limit) {
    zcw_job j;
    __atomic_add_fetch(&zcw_running, 1, __ATOMIC_ACQ_REL);
    if (helpers <= 0) { fn(arg); zcw_leave(); return; }
    j.fn = fn; j.arg = arg; j.want = helpers; j.active = 0; j.next = NULL;
    j.limit = limit < 1 ? 1 : limit;
    pthread_mutex_lock(&zcw_mu);
    zcw_start(helpers);
    if (zcw_nthreads == 0) { pthread_mutex_unlock(&zcw_mu); fn(arg); zcw_leave(); return; }
    if (zcw_tail) zcw_tail->next = &j; else zcw_head = &j;
    zcw_tail = &j;
    zcw_limit = j.limit;
    __atomic_add_fetch(&zcw_posted, 1, __ATOMIC_RELEASE);
    if (zcw_sleeping && __atomic_load_n(&zcw_running, __ATOMIC_ACQUIRE) < j.limit) {
        if (helpers > 1) pthread_cond_broadcast(&zcw_work); else pthread_cond_signal(&zcw_work);
    }
    pthread_mutex_unlock(&zcw_mu);
    fn(arg);
    pthread_mutex_lock(&zcw_mu);
    zcw_unlink(&j);            /* no more helpers join (no-op if it already left) */
    /* leave only after the unlink: leaving first let a helper (which checks the
       running count under the mutex) join this finished job in between -- harmless
       (it found no items) but a wasted wake-up, and it made jobs_helped() count it */
    __atomic_sub_fetch(&zcw_running, 1, __ATOMIC_ACQ_REL);
    if (zcw_sleeping && zcw_head) pthread_cond_signal(&zcw_work);  /* a slot for another job */
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
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c1 = PTHREAD_COND_INITIALIZER, c2 = PTHREAD_COND_INITIALIZER;
    zcw_mu = m; zcw_work = c1; zcw_left = c2;
    zcw_head = zcw_tail = NULL;
    zcw_nthreads = 0; zcw_sleeping = 0; zcw_posted = 0; zcw_helped = 0;
    zcw_running = 0; zcw_limit = 1;
}
static int zcw_init(void) { return pthread_atfork(zcw_prepare, zcw_parent, zcw_child); }
#endif

#endif
