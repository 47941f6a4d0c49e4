/* mica_threads.c: the persistent thread pool behind mica_parallel_for.
 *
 * Takes a task count and a body; gives each pool thread one contiguous chunk
 * of [0, tasks), the caller taking chunk 0. Chunks are fixed by the task
 * count and the pool size alone (no work stealing), so a run is repeatable.
 *
 * Hand-off: the caller publishes a job and bumps `generation`; workers spin
 * briefly on it (back-to-back jobs, as in a GEMM, then start without a
 * sleep) and otherwise sleep on a condition variable. Completion is counted
 * down in `pending`, with the same spin-then-sleep wait on the caller side.
 */
#define _GNU_SOURCE
#include "mica_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#define MICA_MAX_THREADS 256
#define MICA_SPIN 4000 /* polls before sleeping: some tens of microseconds */
#define MICA_STACK (4u << 20)

typedef struct {
    pthread_mutex_t lock;  /* guards sleeping and waking */
    pthread_cond_t wake;   /* workers wait here for a new generation */
    pthread_cond_t done;   /* the caller waits here for pending == 0 */
    pthread_mutex_t busy;  /* one job at a time; others run serially */
    atomic_uint_fast64_t generation;
    atomic_int pending;
    int nthreads;
    /* the current job, written before generation is bumped */
    mica_task_fn body;
    void *ctx;
    int64_t tasks;
    int nchunks;
} Pool;

static Pool pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .busy = PTHREAD_MUTEX_INITIALIZER,
    .nthreads = 1,
};
static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static _Thread_local bool in_pool_task; /* nested calls run serially */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// chunk c of nchunks over [0, tasks): [tasks*c/nchunks, tasks*(c+1)/nchunks)
static void run_chunk(int c) {
    int64_t begin = (int64_t)((__int128)pool.tasks * c / pool.nchunks);
    int64_t end = (int64_t)((__int128)pool.tasks * (c + 1) / pool.nchunks);
    if (begin < end) pool.body(pool.ctx, begin, end);
}

static uint64_t wait_generation(uint64_t seen) {
    for (int i = 0; i < MICA_SPIN; i++) {
        uint64_t g = atomic_load_explicit(&pool.generation, memory_order_acquire);
        if (g != seen) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    uint64_t g;
    while ((g = atomic_load_explicit(&pool.generation, memory_order_acquire)) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    return g;
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg;
    uint64_t seen = 0;
    in_pool_task = true;
    for (;;) {
        seen = wait_generation(seen);
        if (id < pool.nchunks) run_chunk(id);
        if (atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.done);
            pthread_mutex_unlock(&pool.lock);
        }
    }
    return NULL;
}

static int configured_threads(void) {
    const char *env = getenv("MICA_THREADS");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        if (v >= 1) return v > MICA_MAX_THREADS ? MICA_MAX_THREADS : (int)v;
    }
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n >= 1) return n > MICA_MAX_THREADS ? MICA_MAX_THREADS : n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1) return 1;
    return n > MICA_MAX_THREADS ? MICA_MAX_THREADS : (int)n;
}

static void pool_start(void) {
    int want = configured_threads();
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, MICA_STACK); /* musl's default is 128 KiB */
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int n = 1;
    for (; n < want; n++) {
        pthread_t t;
        if (pthread_create(&t, &attr, worker_main, (void *)(intptr_t)n) != 0) break;
    }
    pthread_attr_destroy(&attr);
    pool.nthreads = n; /* fewer than asked if the system refused threads */
}

int mica_thread_count(void) {
    pthread_once(&pool_once, pool_start);
    return pool.nthreads;
}

static void wait_pending(void) {
    for (int i = 0; i < MICA_SPIN; i++) {
        if (atomic_load_explicit(&pool.pending, memory_order_acquire) == 0) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    while (atomic_load_explicit(&pool.pending, memory_order_acquire) != 0)
        pthread_cond_wait(&pool.done, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

void mica_parallel_for(int64_t tasks, void (*body)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (tasks <= 0) return;
    int nthreads = mica_thread_count();
    if (nthreads == 1 || tasks == 1 || in_pool_task || pthread_mutex_trylock(&pool.busy) != 0) {
        body(ctx, 0, tasks);
        return;
    }
    pool.body = body;
    pool.ctx = ctx;
    pool.tasks = tasks;
    pool.nchunks = tasks < nthreads ? (int)tasks : nthreads;
    atomic_store_explicit(&pool.pending, nthreads - 1, memory_order_relaxed);
    pthread_mutex_lock(&pool.lock);
    atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_pool_task = true;
    run_chunk(0);
    in_pool_task = false;
    wait_pending();
    pthread_mutex_unlock(&pool.busy);
}
