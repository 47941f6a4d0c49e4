/* gemm_bench.c: times mica_gemm_{f32,f64} on square products (bench/gemm.py builds it).
 *
 * usage: gemm_bench SIZE... where SIZE is N (square) or MxNxK, optionally
 * followed by :tn, :nt or :tt (trans_a, trans_b); prints
 * "f32 SIZE GFLOPS" and "f64 SIZE GFLOPS" lines, the best of five timing
 * windows of at least 40 ms each. MICA_THREADS sets the pool.
 */
#include "../runtime_c/mica_gemm.h"
#include "../runtime_c/mica_threads.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

// -DBENCH_CPU_CLOCK times by the process's CPU time instead of the wall
// clock: on a machine shared with other work, a one-thread figure then leaves
// out the time the scheduler gave to others (threads' times would add up).
#ifdef BENCH_CPU_CLOCK
#define BENCH_CLOCK CLOCK_PROCESS_CPUTIME_ID
#else
#define BENCH_CLOCK CLOCK_MONOTONIC
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(BENCH_CLOCK, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define BENCH(T, S)                                                                              \
    static double bench_##S(int64_t m, int64_t n, int64_t k, bool ta, bool tb) {                                                         \
        T *a = malloc(m * k * sizeof(T)), *b = malloc(k * n * sizeof(T)), *c = malloc(m * n * sizeof(T)); \
        for (int64_t i = 0; i < m * k; i++) a[i] = (T)((i * 7 % 13) - 6) / 8;                    \
        for (int64_t i = 0; i < k * n; i++) b[i] = (T)((i * 5 % 11) - 5) / 4;                    \
        mica_gemm_##S(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n, false); /* warm up */             \
        double best = 1e30;                                                                      \
        for (int rep = 0; rep < 5; rep++) {                                                      \
            int iters = 0;                                                                       \
            double t0 = now(), t;                                                                \
            do {                                                                                 \
                mica_gemm_##S(ta, tb, m, n, k, a, ta ? m : k, b, tb ? k : n, c, n, false);                   \
                iters++;                                                                         \
            } while ((t = now() - t0) < 0.04);                                                   \
            if (t / iters < best) best = t / iters;                                              \
        }                                                                                        \
        free(a), free(b), free(c);                                                               \
        return 2.0 * m * n * k / best * 1e-9;                                                    \
    }
BENCH(float, f32)
BENCH(double, f64)

int main(int argc, char **argv) {
    printf("# isa %s threads %d\n", mica_gemm_isa(), mica_thread_count());
    for (int i = 1; i < argc; i++) {
        long long m, n, k;
        if (sscanf(argv[i], "%lldx%lldx%lld", &m, &n, &k) != 3) m = n = k = atoll(argv[i]);
        const char *t = strchr(argv[i], ':');
        bool ta = t && t[1] == 't', tb = t && t[1] && t[2] == 't';
        printf("f32 %s %.2f\n", argv[i], bench_f32(m, n, k, ta, tb));
        printf("f64 %s %.2f\n", argv[i], bench_f64(m, n, k, ta, tb));
        fflush(stdout);
    }
    return 0;
}
