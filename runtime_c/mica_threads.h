/* mica_threads.h: the runtime's one thread pool.
 *
 * A persistent pool of pthreads, created on first use and sized by the
 * environment variable MICA_THREADS (default: the CPUs this process may run
 * on). mica_parallel_for splits [0, tasks) into at most mica_thread_count()
 * contiguous chunks, one per thread, and the calling thread runs the first
 * chunk itself. It returns when every chunk is done.
 *
 * Determinism: callers partition work by OUTPUT only. A chunk writes its own
 * outputs and never shares a reduction with another chunk, so the thread
 * count changes which thread computes a number, never the number.
 */
#ifndef MICA_THREADS_H
#define MICA_THREADS_H

#include <stddef.h>
#include <stdint.h>

/* body(ctx, begin, end) handles tasks begin <= t < end. */
typedef void (*mica_task_fn)(void *ctx, int64_t begin, int64_t end);

/* Runs body over [0, tasks) on the pool. Serial when the pool has one thread,
 * when tasks < 2, when called from inside a pool task, or when another thread
 * of the program is already using the pool. */
void mica_parallel_for(int64_t tasks, void (*body)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* The pool's size, caller included (>= 1). Creates the pool on first call. */
int mica_thread_count(void);

/* Objects kept per thread, one per slot: the GEMM's packing buffers, the
 * integer GEMM's packed operands and its copies of a, attention's scores.
 * mica_thread_local returns this thread's object in slot, made by make() on
 * the thread's first call (NULL only if make gives NULL); destroy(object)
 * runs when the thread exits. */
enum { MICA_LOCAL_GEMM, MICA_LOCAL_INTEGER_PACK, MICA_LOCAL_INTEGER_SCRATCH, MICA_LOCAL_ATTENTION, MICA_LOCAL_SLOTS };
void *mica_thread_local(int slot, void *(*make)(void), void (*destroy)(void *));

/* This thread's grow-only buffer in slot, of at least `bytes` (contents
 * undefined), valid until the thread's next call for that slot: scratch that
 * is reused warm instead of malloc mapping a large block afresh each call.
 * Aborts with a message when memory runs out, as mica_thread_local does. */
void *mica_thread_scratch(int slot, size_t bytes);

#endif /* MICA_THREADS_H */
