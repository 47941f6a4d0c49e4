/* gemm_check.c: the GEMM test harness (tests/test_gemm.py builds and runs it).
 *
 * Runs many products of random shapes through mica_gemm_{f32,f64} and through
 * the reference triple loop, compares every element of c bit for bit (the
 * padding between rows included, so stray writes show), then prints
 *   isa <name> threads <n> cases <count> mismatches <count> hash <hex>
 * The hash covers every output, so equal hashes across MICA_THREADS, -O0/-O2,
 * MICA_GEMM_ISA and x86_64/aarch64 mean equal bits. NaNs hash as one value
 * (their bit patterns are outside the contract).
 */
#include "../../runtime_c/mica_gemm.h"
#include "../../runtime_c/mica_threads.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "splitmix.h"

// uniform in [-1, 1) with full mantissas, some scaled far up or down so that
// rounding and denormals get exercised; `special` mixes in zeros and infinities.
static double rng_value(int special) {
    double x = (double)(int64_t)(rng_next() >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    if (rng_below(16) == 0) x = ldexp(x, (int)rng_below(60) - 30);
    if (special) {
        switch (rng_below(12)) {
        case 0: return 0.0;
        case 1: return -0.0;
        case 2: return INFINITY;
        case 3: return -INFINITY;
        case 4: return ldexp(x, -140); /* float denormal range */
        case 5: return ldexp(x, -1060); /* double denormal range */
        }
    }
    return x;
}

static uint64_t hash = 0xcbf29ce484222325ull;

static void hash_bits(uint64_t bits) { // FNV-1a over 8 bytes
    for (int i = 0; i < 8; i++) {
        hash ^= (bits >> (8 * i)) & 0xff;
        hash *= 0x100000001b3ull;
    }
}

typedef struct {
    int64_t m, n, k;
    bool ta, tb, acc;
    int special;
} shape;

#define GEMM_CHECK(T, S, BITS_T)                                                                  \
    static int64_t check_##S(shape s) {                                                          \
        int64_t ar = s.ta ? s.k : s.m, ac = s.ta ? s.m : s.k;                                    \
        int64_t br = s.tb ? s.n : s.k, bc = s.tb ? s.k : s.n;                                    \
        int64_t lda = ac + rng_below(3), ldb = bc + rng_below(3), ldc = s.n + rng_below(3);      \
        size_t asz = (size_t)(ar * lda + 1), bsz = (size_t)(br * ldb + 1), csz = (size_t)(s.m * ldc + 1); \
        T *a = malloc(asz * sizeof(T)), *b = malloc(bsz * sizeof(T));                           \
        T *c0 = malloc(csz * sizeof(T)), *c1 = malloc(csz * sizeof(T));                          \
        for (size_t i = 0; i < asz; i++) a[i] = (T)rng_value(s.special);                         \
        for (size_t i = 0; i < bsz; i++) b[i] = (T)rng_value(s.special);                         \
        for (size_t i = 0; i < csz; i++) c0[i] = c1[i] = (T)rng_value(s.special);                \
        mica_gemm_reference_##S(s.ta, s.tb, s.m, s.n, s.k, a, lda, b, ldb, c0, ldc, s.acc);      \
        mica_gemm_##S(s.ta, s.tb, s.m, s.n, s.k, a, lda, b, ldb, c1, ldc, s.acc);                \
        int64_t bad = 0;                                                                         \
        for (size_t i = 0; i < csz; i++) {                                                       \
            BITS_T x, y;                                                                         \
            memcpy(&x, &c0[i], sizeof x);                                                        \
            memcpy(&y, &c1[i], sizeof y);                                                        \
            if (isnan(c0[i])) x = 0x7ff;                                                         \
            if (isnan(c1[i])) y = 0x7ff;                                                         \
            if (x != y) {                                                                        \
                if (bad++ < 3)                                                                   \
                    fprintf(stderr, #S " m=%lld n=%lld k=%lld ta=%d tb=%d acc=%d at %zu: %a != %a\n", \
                            (long long)s.m, (long long)s.n, (long long)s.k, s.ta, s.tb, s.acc,  \
                            i, (double)c1[i], (double)c0[i]);                                    \
            }                                                                                    \
            hash_bits(y);                                                                        \
        }                                                                                        \
        free(a), free(b), free(c0), free(c1);                                                    \
        return bad;                                                                              \
    }
GEMM_CHECK(float, f32, uint32_t)
GEMM_CHECK(double, f64, uint64_t)

// sizes around the micro-tile and block edges, plus a few big enough to be
// blocked over k (k > 256) and spread over threads.
static int64_t pick_dim(void) {
    static const int64_t dims[] = {1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 16, 17, 24, 31, 32, 33, 47, 48, 63, 64, 65, 97};
    return dims[rng_below(sizeof dims / sizeof dims[0])];
}

static shape random_shape(int i) {
    shape s = {pick_dim(), pick_dim(), pick_dim(), rng_below(2), rng_below(2), rng_below(2), 0};
    if (i % 17 == 0) s.k = 0;
    if (i % 5 == 0) s.special = 1;
    if (i % 13 == 0) { /* the blocked and threaded paths, k over several blocks (GEMM_KC = 256) */
        s.m = 20 + rng_below(100);
        s.n = 20 + rng_below(100);
        s.k = 250 + rng_below(300);
    }
    if (i % 11 == 0) { /* many rows, at most 16 columns: AVX-512's narrow float tile, blocked and threaded */
        s.m = 100 + rng_below(200);
        s.n = 1 + rng_below(16);
        s.k = 100 + rng_below(400);
    }
    if (i % 31 == 0) { /* a few rows, many columns: the thin path, threaded */
        s.m = 1 + rng_below(5);
        s.n = 300 + rng_below(300);
        s.k = 150 + rng_below(150);
    }
    if (i % 29 == 0) { /* accumulating over more than GEMM_ACC_BLOCKS blocks: the temporary */
        s.m = 20 + rng_below(30);
        s.n = 20 + rng_below(30);
        s.k = 1000 + rng_below(200);
        s.acc = 1;
    }
    return s;
}

// every task visited exactly once, whatever the pool size
static void count_task(void *ctx, int64_t begin, int64_t end) {
    int *seen = ctx;
    for (int64_t t = begin; t < end; t++) seen[t]++;
}

static int check_pool(void) {
    int bad = 0;
    for (int64_t tasks = 0; tasks < 40; tasks++) {
        int seen[40] = {0};
        mica_parallel_for(tasks, count_task, seen);
        for (int64_t t = 0; t < tasks; t++) bad += seen[t] != 1;
    }
    return bad;
}

int main(int argc, char **argv) {
    int cases = argc > 1 ? atoi(argv[1]) : 400;
    int64_t bad = check_pool();
    if (bad) fprintf(stderr, "thread pool: %lld tasks not run exactly once\n", (long long)bad);
    for (int i = 0; i < cases; i++) {
        shape s = random_shape(i);
        bad += (i & 1) ? check_f64(s) : check_f32(s);
    }
    printf("isa %s threads %d cases %d mismatches %lld hash %016llx\n", mica_gemm_isa(),
           mica_thread_count(), cases, (long long)bad, (unsigned long long)hash);
    return bad != 0;
}
