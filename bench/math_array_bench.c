/* math_array_bench.c: ns per element of the scalar elementary functions (a
 * loop of calls, as the ELEMENTWISE kernels used to run) against their array
 * forms (bench/math_array.py builds it and runs it per instruction set).
 *
 * usage: math_array_bench [N]   (default 4096 elements: in and out stay in cache)
 * prints "# isa NAME" and per function "NAME SCALAR_NS ARRAY_NS", the best of
 * five timing windows of at least 30 ms each. Inputs are spread as the
 * functions meet them in training (see INPUTS).
 */
#include "../runtime_c/mica_math.h"
#include "../runtime_c/mica_math_array.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t state = 12345;

static double unit(void) { /* [0, 1), xorshift */
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return (double)(state >> 11) * 0x1p-53;
}

// Inputs per function: exp sees softmax-like x - max in [-20, 0] and a little
// above; log positive values over six decades; the activations about
// N(0, 2^2) (a sum of four uniforms).
static double input(const char *name) {
    if (name[0] == 'e') return -20.0 + 22.0 * unit();
    if (name[0] == 'l') {
        double e = -3.0 + 6.0 * unit(), x = 1.0;
        for (; e > 0; e -= 1) x *= 10.0;
        return x * (1.0 + 9.0 * unit()) / (e < 0 ? 10.0 : 1.0);
    }
    return 2.0 * 1.7320508 * (unit() + unit() + unit() + unit() - 2.0);
}

#define TIME(stmt)                                                                               \
    ({                                                                                           \
        double best = 1e30;                                                                      \
        for (int rep = 0; rep < 5; rep++) {                                                      \
            int64_t iters = 0;                                                                   \
            double t0 = now(), t;                                                                \
            do {                                                                                 \
                stmt;                                                                            \
                iters++;                                                                         \
            } while ((t = now() - t0) < 0.03);                                                   \
            if (t / iters < best) best = t / iters;                                              \
        }                                                                                        \
        best;                                                                                    \
    })

#define BENCH(F, S, T)                                                                           \
    static void bench_##F##_##S(int64_t n) {                                                     \
        T *x = malloc(n * sizeof(T)), *y = malloc(n * sizeof(T));                                \
        for (int64_t i = 0; i < n; i++) x[i] = (T)input(#F);                                     \
        double scalar = TIME(for (int64_t i = 0; i < n; i++) y[i] = mica_##F##_##S(x[i]));       \
        double array = TIME(mica_##F##_array_##S(y, x, n));                                      \
        printf("%s_%s %.3f %.3f\n", #F, #S, scalar / n * 1e9, array / n * 1e9);                  \
        free(x), free(y);                                                                        \
    }
#define BOTH(F) BENCH(F, f32, float) BENCH(F, f64, double)
MICA_MATH_ARRAY_FUNCTIONS(BOTH) /* every function with an array form (mica_element_functions.h) */

int main(int argc, char **argv) {
    int64_t n = argc > 1 ? atoll(argv[1]) : 4096;
    printf("# isa %s n %lld\n", mica_math_array_isa(), (long long)n);
#define RUN(F) bench_##F##_f32(n), bench_##F##_f64(n);
    MICA_MATH_ARRAY_FUNCTIONS(RUN)
    return 0;
}
