/* fma_check.c: the software fused multiply-add (runtime_c/mica_fma.c)
 * against the CPU's instruction, bit for bit.
 *
 *   fma_check [cases]   ->   "f32 cases <n> mismatches <k>" and the same for f64
 *
 * Operands come from a fixed generator in five families, each aimed at a
 * place software fma goes wrong: random bit patterns (NaN, infinity and
 * subnormal included); acc near -x*y (cancellation, exact zeros and their
 * signs); products near the bottom of the range (underflow to a signed
 * zero or a subnormal); near the top (overflow); and short mantissas,
 * whose sums fall on ties. The first mismatches are printed in hex. */
#include "../../runtime_c/mica_fma.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma STDC FP_CONTRACT OFF

static uint64_t state = 0x9E3779B97F4A7C15u;

static uint64_t next(void) { /* SplitMix64 */
    uint64_t z = (state += 0x9E3779B97F4A7C15u);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

#if defined(__x86_64__)
#define HARD __attribute__((target("fma")))
#else
#define HARD
#endif
HARD static float hard_f32(float x, float y, float c) { return __builtin_fmaf(x, y, c); }
HARD static double hard_f64(double x, double y, double c) { return __builtin_fma(x, y, c); }

#define CHECK(T, U, S, EXP_BITS, FRAC_BITS)                                                        \
    static T S##_of(U u) { T x; memcpy(&x, &u, sizeof x); return x; }                             \
    static U S##_bits(T x) { U u; memcpy(&u, &x, sizeof u); return u; }                           \
    /* sign, biased exponent, fraction */                                                        \
    static T S##_make(U sign, U exp, U frac) {                                                    \
        return S##_of(sign << (EXP_BITS + FRAC_BITS) | exp << FRAC_BITS | (frac & (((U)1 << FRAC_BITS) - 1))); \
    }                                                                                            \
    static void S##_operands(int family, T *x, T *y, T *c) {                                      \
        U r[3] = {(U)next(), (U)next(), (U)next()};                                               \
        U bias = ((U)1 << (EXP_BITS - 1)) - 1, emax = ((U)1 << EXP_BITS) - 1;                    \
        switch (family) {                                                                        \
        case 0: /* any bits */                                                                   \
            *x = S##_of(r[0]), *y = S##_of(r[1]), *c = S##_of(r[2]);                              \
            return;                                                                              \
        case 1: /* acc near -x*y */                                                              \
            *x = S##_make(r[0] >> (sizeof(U) * 8 - 1), bias + r[0] % 64 - 32, r[0] >> 7);         \
            *y = S##_make(r[1] & 1, bias + r[1] % 64 - 32, r[1] >> 7);                            \
            *c = S##_of(S##_bits(-(*x * *y)) + (U)(r[2] % 9) - 4);                                \
            return;                                                                              \
        case 2: /* products near the bottom */                                                   \
            *x = S##_make(r[0] & 1, 1 + r[0] % (bias / 2), r[0] >> 9);                            \
            *y = S##_make(r[1] & 1, 1 + r[1] % (bias / 2), r[1] >> 9);                            \
            *c = r[2] % 4 == 0 ? (r[2] & 8 ? -(T)0 : (T)0) : S##_make(r[2] & 1, r[2] % 4, r[2] >> 9); \
            return;                                                                              \
        case 3: /* products near the top */                                                      \
            *x = S##_make(r[0] & 1, emax - 1 - r[0] % (bias / 2), r[0] >> 9);                     \
            *y = S##_make(r[1] & 1, bias + bias / 2 + r[1] % (bias / 2), r[1] >> 9);              \
            *c = S##_make(r[2] & 1, emax - 1 - r[2] % 4, r[2] >> 9);                              \
            return;                                                                              \
        default: /* short mantissas: ties */                                                     \
            *x = S##_make(r[0] & 1, bias + r[0] % 8, (r[0] >> 8) << (FRAC_BITS - 6));              \
            *y = S##_make(r[1] & 1, bias + r[1] % 8, (r[1] >> 8) << (FRAC_BITS - 6));              \
            *c = S##_make(r[2] & 1, bias + r[2] % 16 - 8 - FRAC_BITS, r[2] >> 8);                  \
            return;                                                                              \
        }                                                                                        \
    }                                                                                            \
    static long long S##_run(long long cases) {                                                   \
        long long bad = 0;                                                                       \
        for (long long i = 0; i < cases; i++) {                                                  \
            T x, y, c;                                                                           \
            S##_operands((int)(i % 5), &x, &y, &c);                                               \
            T want = hard_##S(x, y, c), got = mica_soft_fma_##S(x, y, c);                         \
            U w = S##_bits(want), g = S##_bits(got);                                              \
            if (want != want && got != got) continue; /* any NaN is a NaN */                     \
            if (w != g && bad++ < 5)                                                             \
                printf(#S " fma(%a, %a, %a): instruction %a, software %a\n", (double)x, (double)y, \
                       (double)c, (double)want, (double)got);                                     \
        }                                                                                        \
        printf(#S " cases %lld mismatches %lld\n", cases, bad);                                  \
        return bad;                                                                              \
    }
CHECK(float, uint32_t, f32, 8, 23)
CHECK(double, uint64_t, f64, 11, 52)

int main(int argc, char **argv) {
    long long cases = argc > 1 ? atoll(argv[1]) : 1000000;
    long long bad = f32_run(cases) + f64_run(cases);
    return bad != 0;
}
