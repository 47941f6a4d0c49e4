/* math_array_check.c: the array forms (mica_math_array.h) against the scalar
 * functions (mica_math.h), bit for bit, for tests/test_math_array.py.
 *
 * Usage: math_array_check [SHARE]   SHARE in (0, 1] (default 1) keeps that
 *        share of the random and swept inputs (specials and edges are kept).
 *
 * For each precision one input set of about 1M values (at SHARE 1): special
 * values (zeros, infinities, nans of both signs and several payloads,
 * subnormals, the extremes), the 256 neighbours of every threshold the
 * scalar code tests, random bit patterns over every exponent, a sweep over
 * the exponents, and even sweeps over the ranges where the functions turn.
 * Every function runs over the whole set three ways: into another buffer
 * from an address one element off alignment (n odd, so the padded tail
 * runs), in place, and in short pieces of every length up to four vectors
 * at every offset (guards around each piece must stay untouched). Each
 * result must equal the scalar function's bits.
 *
 * stdout: "isa NAME", then per function
 *         "fn NAME n COUNT mismatches M hash H" (H: FNV-1a of the scalar
 *         results, to compare builds), and a line per first few mismatches.
 * Exit status 1 when anything mismatched.
 */
#pragma STDC FP_CONTRACT OFF /* the inputs must not change with a build's -ffp-contract */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mica_bits.h"
#include "mica_math.h"
#include "mica_math_array.h"

#define MAX_SHOWN 5

static uint64_t rng_state = 0x6d696361u; /* splitmix64 */

static uint64_t next_u64(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double unit(void) { /* [0, 1) */
    return (double)(next_u64() >> 11) * 0x1p-53;
}

/* ------------------------------------------------------------ input sets */

typedef struct {
    uint64_t *u; /* bit patterns, 32-bit ones in the low half for float32 */
    int64_t n, cap;
} input_set;

static void push(input_set *s, uint64_t u) {
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 1 << 16;
        s->u = realloc(s->u, (size_t)s->cap * sizeof *s->u);
        if (!s->u) abort();
    }
    s->u[s->n++] = u;
}

// The 2*reach patterns around the value with bits u (same sign, both ways),
// and the same around -u.
static void push_around(input_set *s, uint64_t u, int bits, int reach) {
    uint64_t sign = bits == 64 ? 1ull << 63 : 1ull << 31;
    uint64_t mag = u & (sign - 1);
    for (int d = -reach; d < reach; d++) {
        if (d < 0 && (uint64_t)-d > mag) continue;
        push(s, mag + (uint64_t)(int64_t)d);
        push(s, (mag + (uint64_t)(int64_t)d) | sign);
    }
}

// Thresholds the scalar code tests, and places where its paths meet
// (scale's cases, the subnormal results of exp and sigmoid), per precision.
static const double EDGES64[] = {
    710.0, -746.0, 709.782712893384, -745.1332191019411, -708.3964185322641, 709.0895657128241,
    0.55, 22.0, 0x1p-27, -760.0, 10.0, -25.0, -800.0, 50.0, 0x1p-1022, 0x1.6a09e667f3bcdp+0,
    0.34657359027997264, 1.0, 2.0, 0.5, 0x1p-1074, 0x1.fffffffffffffp+1023, 37.43, 19.06,
    -0.7518, -1.2785, -21.5, -708.0, -707.0, 1.0e-300, 0x1p-300, -0x1p-300, 40.0, 0.881373587019543,
};
static const double EDGES32[] = {
    89.0, -104.0, 88.72283172607422, -103.97207641601562, -87.33654475212097, 88.02969193111305,
    0.55, 10.0, 0x1p-12, -120.0, -12.0, 25.0, -110.0, 0x1p-126, 0x1.6a09e6p+0,
    0.34657359027997264, 1.0, 2.0, 0.5, 0x1p-149, 3.4028234663852886e38, 17.33, 9.01,
    -0.7518, -1.2785, -87.0, -86.0, -100.0, 1.0e-30, 0x1p-30, -0x1p-30, 20.0, 0.881373587019543,
};

static const uint64_t SPECIALS64[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
    0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull, 0xfff8000000000123ull,
    0x7fffffffffffffffull, 0xffffffffffffffffull, 0x7ff4000000000000ull, 0x0000000000000001ull,
    0x800fffffffffffffull, 0x0010000000000000ull, 0x7fefffffffffffffull, 0xffefffffffffffffull,
};
static const uint64_t SPECIALS32[] = {
    0x00000000u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
    0xffc00123u, 0x7fffffffu, 0xffffffffu, 0x7fa00000u, 0x00000001u, 0x807fffffu, 0x00800000u,
    0x7f7fffffu, 0xff7fffffu,
};

// Even sweeps [lo, hi] (whole range: exp's overflow to underflow; then where
// the functions turn), each with its share of the sweep budget.
static const double SWEEPS64[][3] = {{-810, 720, 2}, {-30, 30, 3}, {-6, 6, 2}, {-750, -700, 1}, {700, 711, 0.5}};
static const double SWEEPS32[][3] = {{-130, 100, 2}, {-15, 15, 3}, {-6, 6, 2}, {-106, -85, 1}, {85, 90, 0.5}};

static input_set make_inputs(int bits, double share) {
    input_set s = {0};
    const int64_t random_n = (int64_t)(262144 * share), exp_n = (int64_t)(262144 * share),
                  sweep_n = (int64_t)(65536 * share); /* per unit of a sweep's weight */
    const uint64_t *sp = bits == 64 ? SPECIALS64 : SPECIALS32;
    for (int i = 0; i < 16; i++) push(&s, sp[i]);
    const double *edges = bits == 64 ? EDGES64 : EDGES32;
    int nedges = bits == 64 ? (int)(sizeof EDGES64 / sizeof *EDGES64) : (int)(sizeof EDGES32 / sizeof *EDGES32);
    for (int i = 0; i < nedges; i++)
        push_around(&s, bits == 64 ? mica_bits64(edges[i]) : mica_bits32((float)edges[i]), bits, 64);
    for (int64_t i = 0; i < random_n; i++) { /* every exponent, nans and subnormals included */
        uint64_t u = next_u64();
        push(&s, bits == 64 ? u : u >> 32);
    }
    // patterns evenly spaced from 2^-40 to 2^10 (both signs): every exponent that matters, densely
    uint64_t lo = bits == 64 ? mica_bits64(0x1p-40) : mica_bits32(0x1p-40f);
    uint64_t hi = bits == 64 ? mica_bits64(0x1p10) : mica_bits32(0x1p10f);
    uint64_t sign = bits == 64 ? 1ull << 63 : 1ull << 31;
    for (int64_t i = 0; i < exp_n; i++) {
        uint64_t u = lo + (uint64_t)((double)(hi - lo) * unit());
        push(&s, (i & 1) ? u | sign : u);
    }
    const double(*sweeps)[3] = bits == 64 ? SWEEPS64 : SWEEPS32;
    for (int k = 0; k < 5; k++) {
        int64_t m = (int64_t)(sweeps[k][2] * (double)sweep_n);
        for (int64_t i = 0; i < m; i++) {
            double x = sweeps[k][0] + (sweeps[k][1] - sweeps[k][0]) * ((double)i / (double)m);
            push(&s, bits == 64 ? mica_bits64(x) : mica_bits32((float)x));
        }
    }
    if (s.n % 2 == 0) push(&s, 0); /* odd: the padded tail always runs */
    return s;
}

/* ------------------------------------------------------------ checks */

typedef struct {
    const char *name;
    double (*scalar)(double);
    void (*array)(double *, const double *, int64_t);
} fn64;

typedef struct {
    const char *name;
    float (*scalar)(float);
    void (*array)(float *, const float *, int64_t);
} fn32;

/* mica_F_both_array_S seen as two array functions, each of its outputs (the
 * other goes to scratch), held against mica_F_S and mica_F_grad_S. */
#define BOTH_FORMS(F, S, T)                                                                      \
    static void F##_both_y_##S(T *out, const T *x, int64_t n) {                                  \
        T *grad = malloc((size_t)(n > 0 ? n : 1) * sizeof(T));                                   \
        if (!grad) abort();                                                                      \
        mica_##F##_both_array_##S(out, grad, x, n);                                              \
        free(grad);                                                                              \
    }                                                                                            \
    static void F##_both_d_##S(T *grad, const T *x, int64_t n) {                                 \
        T *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(T));                                    \
        if (!out) abort();                                                                       \
        mica_##F##_both_array_##S(out, grad, x, n);                                              \
        free(out);                                                                               \
    }
#define BOTH_TYPES(F) BOTH_FORMS(F, f64, double) BOTH_FORMS(F, f32, float)
MICA_MATH_BOTH_FUNCTIONS(BOTH_TYPES)
#undef BOTH_TYPES
#undef BOTH_FORMS

/* Every array form of the table (mica_element_functions.h), then both outputs
 * of every both form; test_math_array.py expects them in this order. */
#define ENTRY(F, S) {#F "_" #S, mica_##F##_##S, mica_##F##_array_##S},
#define BOTH_ENTRIES(F, S) {#F "_both_y_" #S, mica_##F##_##S, F##_both_y_##S}, \
                           {#F "_both_d_" #S, mica_##F##_grad_##S, F##_both_d_##S},
#define ENTRY64(F) ENTRY(F, f64)
#define ENTRY32(F) ENTRY(F, f32)
#define BOTH64(F) BOTH_ENTRIES(F, f64)
#define BOTH32(F) BOTH_ENTRIES(F, f32)
static const fn64 FN64[] = {MICA_MATH_ARRAY_FUNCTIONS(ENTRY64) MICA_MATH_BOTH_FUNCTIONS(BOTH64)};
static const fn32 FN32[] = {MICA_MATH_ARRAY_FUNCTIONS(ENTRY32) MICA_MATH_BOTH_FUNCTIONS(BOTH32)};

static uint64_t fnv(uint64_t h, uint64_t u, int bytes) {
    for (int i = 0; i < bytes; i++) h = (h ^ ((u >> (8 * i)) & 0xff)) * 0x100000001b3ull;
    return h;
}

static int64_t mismatches;

static void report(const char *name, const char *how, uint64_t x, uint64_t want, uint64_t got, int64_t *shown) {
    mismatches++;
    if ((*shown)++ < MAX_SHOWN)
        printf("  %s %s: x %llx scalar %llx array %llx\n", name, how, (unsigned long long)x,
               (unsigned long long)want, (unsigned long long)got);
}

// One precision's checks, written once for both: T the type, U its bits type.
#define CHECK(T, U, OF, BITS, FNS)                                                                       \
    static void check_##T(const input_set *in) {                                                         \
        int64_t n = in->n;                                                                               \
        T *x = malloc((size_t)(n + 1) * sizeof(T)), *want = malloc((size_t)n * sizeof(T));               \
        T *got = malloc((size_t)(n + 1) * sizeof(T));                                                    \
        if (!x || !want || !got) abort();                                                                \
        for (int64_t i = 0; i < n; i++) x[i + 1] = OF((U)in->u[i]);                                      \
        const T *xs = x + 1; /* one element off the allocation's alignment */                           \
        for (size_t f = 0; f < sizeof FNS / sizeof FNS[0]; f++) {                                        \
            int64_t before = mismatches, shown = 0;                                                      \
            uint64_t h = 0xcbf29ce484222325ull;                                                          \
            for (int64_t i = 0; i < n; i++) {                                                            \
                want[i] = FNS[f].scalar(xs[i]);                                                          \
                h = fnv(h, BITS(want[i]), sizeof(T));                                                    \
            }                                                                                            \
            FNS[f].array(got, xs, n); /* aligned out, misaligned in */                                   \
            for (int64_t i = 0; i < n; i++)                                                              \
                if (BITS(got[i]) != BITS(want[i]))                                                       \
                    report(FNS[f].name, "whole", BITS(xs[i]), BITS(want[i]), BITS(got[i]), &shown);      \
            memcpy(got + 1, xs, (size_t)n * sizeof(T)); /* in place */                                   \
            FNS[f].array(got + 1, got + 1, n);                                                           \
            for (int64_t i = 0; i < n; i++)                                                              \
                if (BITS(got[i + 1]) != BITS(want[i]))                                                   \
                    report(FNS[f].name, "in place", BITS(xs[i]), BITS(want[i]), BITS(got[i + 1]), &shown); \
            /* pieces: every length up to 4 vectors of 64 bytes, at every offset, guarded */             \
            const int64_t w = 64 / sizeof(T);                                                            \
            for (int64_t off = 0; off < w; off++)                                                        \
                for (int64_t len = 0; len <= 4 * w + 1; len++) {                                         \
                    int64_t start = (off * 977 + len * 131) % (n - len);                                 \
                    T piece[4 * 16 + 3 + 16];                                                            \
                    for (int64_t i = 0; i < (int64_t)(sizeof piece / sizeof *piece); i++)                \
                        piece[i] = OF((U)0x5a5a5a5a5a5a5a5aull);                                         \
                    FNS[f].array(piece + off + 1, xs + start, len);                                      \
                    for (int64_t i = 0; i < (int64_t)(sizeof piece / sizeof *piece); i++) {              \
                        int64_t j = i - off - 1;                                                         \
                        U expect = j >= 0 && j < len ? BITS(want[start + j]) : (U)0x5a5a5a5a5a5a5a5aull; \
                        if (BITS(piece[i]) != expect)                                                    \
                            report(FNS[f].name, "piece", j >= 0 && j < len ? BITS(xs[start + j]) : 0,    \
                                   expect, BITS(piece[i]), &shown);                                      \
                    }                                                                                    \
                }                                                                                        \
            printf("fn %s n %lld mismatches %lld hash %016llx\n", FNS[f].name, (long long)n,             \
                   (long long)(mismatches - before), (unsigned long long)h);                              \
        }                                                                                                \
        free(x);                                                                                         \
        free(want);                                                                                      \
        free(got);                                                                                       \
    }
CHECK(double, uint64_t, mica_f64_of, mica_bits64, FN64)
CHECK(float, uint32_t, mica_f32_of, mica_bits32, FN32)

int main(int argc, char **argv) {
    double share = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(share > 0 && share <= 1)) {
        fprintf(stderr, "usage: math_array_check [share in (0, 1]]\n");
        return 2;
    }
    printf("isa %s\n", mica_math_array_isa());
    input_set in64 = make_inputs(64, share), in32 = make_inputs(32, share);
    check_double(&in64);
    check_float(&in32);
    printf("total mismatches %lld\n", (long long)mismatches);
    free(in64.u);
    free(in32.u);
    return mismatches != 0;
}
