/* mica_threads.c: the persistent thread pool behind mica_parallel_for.
 *
 * Takes a task count and a body; cuts [0, tasks) into nchunks = min(tasks,
 * pool size) contiguous chunks, fixed by those two numbers alone. Each chunk
 * runs exactly once, on whichever pool thread claims it first; the caller
 * claims too. Since callers split work by output, who runs a chunk never
 * changes a result, and a worker that is slow to wake (a busy machine, more
 * threads than cores) costs nothing: the caller takes its chunk.
 *
 * One 64-bit word, `state`, holds the job's generation, its chunk count and
 * the next unclaimed chunk, so a claim is one compare-and-swap that also
 * checks it is still the same job. A claimed chunk keeps its job open (the
 * caller waits for `done` to reach nchunks), so the job's fields are stable
 * while the claimer reads them. Workers spin briefly on `state` (back-to-back
 * jobs, as in a GEMM, then start without a sleep) and otherwise sleep on a
 * condition variable; the caller waits for `done` the same way.
 */
#define _GNU_SOURCE
#include "mica_threads.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MICA_MAX_THREADS 256
#define MICA_SPIN 4000 /* polls before sleeping: some tens of microseconds */
#define MICA_STACK (4u << 20)

// state = generation << 32 | nchunks << 16 | next chunk
#define STATE_GEN(s) ((uint32_t)((s) >> 32))
#define STATE_CHUNKS(s) ((int)(((s) >> 16) & 0xffff))
#define STATE_NEXT(s) ((int)((s) & 0xffff))

typedef struct {
    pthread_mutex_t lock; /* guards sleeping and waking */
    pthread_cond_t wake;  /* workers wait here for a new generation */
    pthread_cond_t idle;  /* the caller waits here for done == nchunks */
    pthread_mutex_t busy; /* one job at a time; others run serially */
    _Atomic uint64_t state;
    atomic_int done;
    int nthreads;
    /* the current job, written before state announces it */
    mica_task_fn body;
    void *ctx;
    int64_t tasks;
} Pool;

static Pool pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .idle = PTHREAD_COND_INITIALIZER,
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

// Claims and runs chunks of job `gen` until none is left; chunk c of n is
// [tasks*c/n, tasks*(c+1)/n).
static void run_chunks(uint32_t gen) {
    uint64_t s = atomic_load_explicit(&pool.state, memory_order_acquire);
    for (;;) {
        if (STATE_GEN(s) != gen || STATE_NEXT(s) >= STATE_CHUNKS(s)) return;
        if (!atomic_compare_exchange_weak_explicit(&pool.state, &s, s + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        int c = STATE_NEXT(s), n = STATE_CHUNKS(s);
        int64_t begin = (int64_t)((__int128)pool.tasks * c / n);
        int64_t end = (int64_t)((__int128)pool.tasks * (c + 1) / n);
        if (begin < end) pool.body(pool.ctx, begin, end);
        if (atomic_fetch_add_explicit(&pool.done, 1, memory_order_acq_rel) + 1 == n) {
            pthread_mutex_lock(&pool.lock);
            pthread_cond_signal(&pool.idle);
            pthread_mutex_unlock(&pool.lock);
        }
        s = atomic_load_explicit(&pool.state, memory_order_acquire);
    }
}

static uint32_t wait_generation(uint32_t seen) {
    for (int i = 0; i < MICA_SPIN; i++) {
        uint32_t g = STATE_GEN(atomic_load_explicit(&pool.state, memory_order_acquire));
        if (g != seen) return g;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    uint32_t g;
    while ((g = STATE_GEN(atomic_load_explicit(&pool.state, memory_order_acquire))) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
    return g;
}

static void *worker_main(void *arg) {
    (void)arg;
    uint32_t seen = 0;
    in_pool_task = true;
    for (;;) {
        seen = wait_generation(seen);
        run_chunks(seen);
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

static void wait_done(int nchunks) {
    for (int i = 0; i < MICA_SPIN; i++) {
        if (atomic_load_explicit(&pool.done, memory_order_acquire) == nchunks) return;
        cpu_relax();
    }
    pthread_mutex_lock(&pool.lock);
    while (atomic_load_explicit(&pool.done, memory_order_acquire) != nchunks)
        pthread_cond_wait(&pool.idle, &pool.lock);
    pthread_mutex_unlock(&pool.lock);
}

void mica_parallel_for(int64_t tasks, void (*body)(void *ctx, int64_t begin, int64_t end), void *ctx) {
    if (tasks <= 0) return;
    int nthreads = mica_thread_count();
    if (nthreads == 1 || tasks == 1 || in_pool_task || pthread_mutex_trylock(&pool.busy) != 0) {
        body(ctx, 0, tasks);
        return;
    }
    int nchunks = tasks < nthreads ? (int)tasks : nthreads;
    pool.body = body;
    pool.ctx = ctx;
    pool.tasks = tasks;
    atomic_store_explicit(&pool.done, 0, memory_order_relaxed);
    uint32_t gen = STATE_GEN(atomic_load_explicit(&pool.state, memory_order_relaxed)) + 1;
    pthread_mutex_lock(&pool.lock);
    atomic_store_explicit(&pool.state, (uint64_t)gen << 32 | (uint64_t)nchunks << 16, memory_order_release);
    pthread_cond_broadcast(&pool.wake);
    pthread_mutex_unlock(&pool.lock);

    in_pool_task = true;
    run_chunks(gen);
    in_pool_task = false;
    wait_done(nchunks);
    pthread_mutex_unlock(&pool.busy);
}

/* ------------------------------------------------------------ objects per thread */

typedef struct {
    void *object[MICA_LOCAL_SLOTS];
    void (*destroy[MICA_LOCAL_SLOTS])(void *);
} thread_locals;

static pthread_key_t locals_key;
static pthread_once_t locals_once = PTHREAD_ONCE_INIT;
static _Thread_local thread_locals *locals_mine; /* the key's value, without a call to read it */

static void locals_free(void *p) {
    thread_locals *l = p;
    for (int i = 0; i < MICA_LOCAL_SLOTS; i++)
        if (l->object[i]) l->destroy[i](l->object[i]);
    free(l);
}

static void locals_init(void) {
    pthread_key_create(&locals_key, locals_free);
}

void *mica_thread_local(int slot, void *(*make)(void), void (*destroy)(void *)) {
    thread_locals *l = locals_mine;
    if (!l) {
        pthread_once(&locals_once, locals_init);
        if (!(l = calloc(1, sizeof *l))) {
            fprintf(stderr, "mica: out of memory for a thread's buffers\n");
            abort();
        }
        pthread_setspecific(locals_key, l);
        locals_mine = l;
    }
    if (!l->object[slot]) {
        l->object[slot] = make();
        l->destroy[slot] = destroy;
    }
    return l->object[slot];
}

typedef struct {
    void *data;
    size_t bytes;
} scratch_buffer;

static void *scratch_buffer_make(void) {
    return calloc(1, sizeof(scratch_buffer));
}

static void scratch_buffer_free(void *p) {
    scratch_buffer *s = p;
    free(s->data);
    free(s);
}

void *mica_thread_scratch(int slot, size_t bytes) {
    scratch_buffer *s = mica_thread_local(slot, scratch_buffer_make, scratch_buffer_free);
    if (s != NULL && (s->data == NULL || bytes > s->bytes)) {
        free(s->data);
        s->data = malloc(bytes ? bytes : 1);
        s->bytes = s->data ? bytes : 0;
    }
    if (s == NULL || s->data == NULL) {
        fprintf(stderr, "mica: out of memory for a thread's scratch (%zu bytes)\n", bytes);
        abort();
    }
    return s->data;
}
