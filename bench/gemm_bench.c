/* gemm_bench.c: times mica_gemm_{f32,f64} on square products (bench/gemm.py builds it).
 *
 * usage: gemm_bench SIZE... ; prints "f32 SIZE GFLOPS" and "f64 SIZE GFLOPS" lines,
 * the best of several runs of at least ~0.2 s each. MICA_THREADS sets the pool.
 */
#include "../runtime_c/mica_gemm.h"
#include "../runtime_c/mica_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#define BENCH(T, S)                                                                              \
    static double bench_##S(int64_t n) {                                                         \
        T *a = malloc(n * n * sizeof(T)), *b = malloc(n * n * sizeof(T)), *c = malloc(n * n * sizeof(T)); \
        for (int64_t i = 0; i < n * n; i++) a[i] = (T)((i * 7 % 13) - 6) / 8, b[i] = (T)((i * 5 % 11) - 5) / 4; \
        mica_gemm_##S(false, false, n, n, n, a, n, b, n, c, n, false); /* warm up */             \
        double best = 1e30;                                                                      \
        for (int rep = 0; rep < 5; rep++) {                                                      \
            int iters = 0;                                                                       \
            double t0 = now(), t;                                                                \
            do {                                                                                 \
                mica_gemm_##S(false, false, n, n, n, a, n, b, n, c, n, false);                   \
                iters++;                                                                         \
            } while ((t = now() - t0) < 0.04);                                                   \
            if (t / iters < best) best = t / iters;                                              \
        }                                                                                        \
        free(a), free(b), free(c);                                                               \
        return 2.0 * n * n * n / best * 1e-9;                                                    \
    }
BENCH(float, f32)
BENCH(double, f64)

int main(int argc, char **argv) {
    printf("# isa %s threads %d\n", mica_gemm_isa(), mica_thread_count());
    for (int i = 1; i < argc; i++) {
        int64_t n = atoll(argv[i]);
        printf("f32 %lld %.2f\n", (long long)n, bench_f32(n));
        printf("f64 %lld %.2f\n", (long long)n, bench_f64(n));
        fflush(stdout);
    }
    return 0;
}
