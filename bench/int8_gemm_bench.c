/* int8_gemm_bench.c: times mica_matmul_i32_{i8,u8}_i8 (bench/int8_gemm.py builds and runs it).
 * Usage: int8_gemm_bench m k n reps; prints "<isa> <kind> <best seconds> <reference seconds or 0>". */
#include "../runtime_c/mica.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void *mica_alloc(size_t bytes, int line) {
    (void)line;
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) abort();
    return p;
}
void *mica_alloc_elements(int64_t count, size_t size, int line) { return mica_alloc((size_t)count * size, line); }
void mica_free(void *p) { free(p); }

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    if (argc < 5) return 2;
    int64_t m = atoll(argv[1]), k = atoll(argv[2]), n = atoll(argv[3]);
    int reps = atoi(argv[4]);
    int8_t *a = malloc(m * k), *b = malloc(k * n);
    int32_t *out = malloc(m * n * 4);
    for (int64_t i = 0; i < m * k; i++) a[i] = (int8_t)(rand() & 0xff);
    for (int64_t i = 0; i < k * n; i++) b[i] = (int8_t)(rand() & 0xff);
    for (int kind = 0; kind < 2; kind++) {
        double best = 1e30, ref = 1e30;
        for (int r = 0; r < reps; r++) { // interleaved: kernel, then reference, against drift
            double t0 = now();
            if (kind) mica_matmul_i32_u8_i8(out, (uint8_t *)a, b, m, k, n);
            else mica_matmul_i32_i8_i8(out, a, b, m, k, n);
            double t1 = now();
            if (t1 - t0 < best) best = t1 - t0;
            if (m * k * n <= (int64_t)1 << 28) {
                if (kind) mica_matmul_i32_u8_i8_reference(out, (uint8_t *)a, b, m, k, n);
                else mica_matmul_i32_i8_i8_reference(out, a, b, m, k, n);
                double t2 = now() - t1;
                if (t2 < ref) ref = t2;
            } else ref = 0;
        }
        printf("%s %s %.6f %.6f\n", mica_integer_gemm_isa(), kind ? "u8xi8" : "i8xi8", best, ref);
    }
    return 0;
}
