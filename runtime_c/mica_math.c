/* mica_math.c: Mica's elementary functions (see mica_math.h, docs/math.md).
 *
 * Rules that keep the bits the same on every machine:
 *   - only + - * / and comparisons on floating values, each written as its
 *     own rounded operation in the order a PTX port must copy;
 *   - no fma: the pragma below forbids contraction even when a build forgets
 *     -ffp-contract=off (clang honours it unless told -ffp-contract=fast);
 *   - no libm, no long double; powers of two are made in the exponent bits;
 *   - integer work is exact by nature: sin/cos's Payne-Hanek reduction
 *     multiplies 64-bit words (PTX mul.lo/mul.hi.u64), shifts and counts
 *     leading zeros, and turns integers under 2^53 (2^24) into doubles
 *     (floats) exactly;
 *   - nan results are built from bits, never from 0/0 (x86_64 makes a
 *     negative nan there, aarch64 a positive one).
 * Polynomials are Horner, innermost (highest) coefficient first; their
 * coefficients come from tools/fit_math.py.
 *
 * Each algorithm is written once, in mica_math.inc, for float64 and float32
 * alike; what differs between the two is data: the constants below and in
 * mica_math_consts.h, and the polynomials' lengths.
 */
#pragma STDC FP_CONTRACT OFF

#include <stdint.h>
#include <string.h>

#include "mica_math.h"
#include "mica_math_consts.h"

/* ------------------------------------------------------------ sin and cos's constants */

/* Cody-Waite: pi/2 = PIO2_CW[0] + PIO2_CW[1] + ..., every part but the last
 * so short (33 bits f64, 9 bits f32) that k*PIO2_CW[i] is exact for
 * |k| < CW_LIMIT; the last is rounded to full precision. pi/2 is carried to
 * 2^-160 (f64) / 2^-78 (f32), so the error of rh + rl stays below 2^-136 /
 * 2^-62 even at the largest k. */
static const double PIO2_CW_F64[4] = {
    0x1.921fb544p+0, 0x1.0b4611a6p-34, 0x1.3198a2ep-69, 0x1.b839a252049c1p-104,
};
static const float PIO2_CW_F32[6] = {
    0x1.92p+0f, 0x1.fbp-12f, 0x1.51p-22f, 0x1.0bp-34f, 0x1.18p-44f, 0x1.1a6264p-54f,
};
#define CW_LIMIT_F64 0x1p20
#define CW_LIMIT_F32 0x1p15f
#define INV_PIO2_F64 0x1.45f306dc9c883p-1
#define INV_PIO2_F32 0x1.45f306p-1f
#define PIO4_F64 0x1.921fb54442d18p-1
#define PIO4_F32 0x1.921fb6p-1f
/* pi/2 = PIO2_HI + PIO2_LO, for turning Payne-Hanek's fraction into radians. */
#define PIO2_HI_F64 0x1.921fb54442d18p+0
#define PIO2_LO_F64 0x1.1a62633145c07p-54
#define PIO2_HI_F32 0x1.921fb6p+0f
#define PIO2_LO_F32 -0x1.777a5cp-25f

/* Below TINY, sin x rounds to x and cos x to 1. */
#define SIN_TINY_F64 0x1p-26
#define COS_TINY_F64 0x1p-27
#define SIN_TINY_F32 0x1p-12f
#define COS_TINY_F32 0x1p-12f

/* sin r = r + r^3*(S1 + t*P(t)) and cos r = 1 - t/2 + t^2*Q(t), t = r^2. */
#define SIN_S1_F64 -0x1.5555555555548p-3
#define SIN_S1_F32 -0x1.555556p-3f
static const double SIN_P_F64[] = {
    0x1.111111110f73p-7, -0x1.a01a019be9217p-13, 0x1.71de35552b521p-19, -0x1.ae5e4b83e332bp-26,
    0x1.5d8b55940c94fp-33,
};
static const float SIN_P_F32[] = {
    0x1.111174p-7f, -0x1.a0590ep-13f, 0x1.7c090ep-19f,
};
static const double COS_Q_F64[] = {
    0x1.555555555554bp-5, -0x1.6c16c16c15015p-10, 0x1.a01a019c8f254p-16, -0x1.27e4f7f19148cp-22,
    0x1.1ee9dbcefbf23p-29, -0x1.8fa684874a366p-37,
};
static const float COS_Q_F32[] = {
    0x1.55554ap-5f, -0x1.6c0c1ep-10f, 0x1.99e336p-16f,
};

/* ------------------------------------------------------------ Payne-Hanek's integer part */

/* Payne-Hanek, for |x| >= CW_LIMIT, in integers (the same for both types):
 * the bits of 2/pi, 0.a2f9836e..., 64 to a word, after one word of zeros (so
 * that a window may start up to 64 bits before the binary point). 1216 bits
 * cover every double: a window ends at most 1161 bits after the point. */
static const uint64_t TWO_OVER_PI[20] = {
    0x0000000000000000ull, 0xa2f9836e4e441529ull, 0xfc2757d1f534ddc0ull, 0xdb6295993c439041ull,
    0xfe5163abdebbc561ull, 0xb7246e3a424dd2e0ull, 0x06492eea09d1921cull, 0xfe1deb1cb129a73eull,
    0xe88235f52ebb4484ull, 0xe99c7026b45f7e41ull, 0x3991d639835339f4ull, 0x9c845f8bbdf9283bull,
    0x1ff897ffde05980full, 0xef2f118b5a0a6d1full, 0x6d367ecf27cb09b7ull, 0x4f463f669e5fea2dull,
    0x7527bac7ebe5f17bull, 0x3d0739f78a5292eaull, 0x6bfb5fb11f8d5d08ull, 0x56033046fc7b6babull,
};

/* a*b = hi*2^64 + lo (PTX: mul.hi.u64, mul.lo.u64). */
static uint64_t mul_64x64(uint64_t a, uint64_t b, uint64_t *lo) {
    unsigned __int128 p = (unsigned __int128)a * b;
    *lo = (uint64_t)p;
    return (uint64_t)(p >> 64);
}

/* Bits b.. of the table as one word; (w >> 1) >> (63 - s) is w >> (64 - s)
 * without shifting by 64 when s = 0. */
static uint64_t two_over_pi_word(int b) {
    int w = b >> 6, s = b & 63;
    return (TWO_OVER_PI[w] << s) | ((TWO_OVER_PI[w + 1] >> 1) >> (63 - s));
}

/* For a = m * 2^e (m < 2^53 an integer, -62 <= e <= 971):
 * a*2/pi = 4j + q + f, j an integer, q in 0..3, -1/2 <= f < 1/2; returns q,
 * *neg = (f < 0), and |f| = (f0*2^64 + f1) * 2^(-128 - *s), f0's top bit set.
 * Only the bits of 2/pi from 2^-(e-1) on matter (earlier ones add multiples
 * of 4), so m times the 192-bit window W starting there, mod 2^192, is
 * (q + f)*2^190; the bits past the window add under 2^-137 to q + f. */
static int reduce_ph_bits(uint64_t m, int e, uint64_t *f0, uint64_t *f1, int *s, int *neg) {
    int b = e + 62; /* the window's first bit, counted from the table's first */
    uint64_t w0 = two_over_pi_word(b), w1 = two_over_pi_word(b + 64), w2 = two_over_pi_word(b + 128);
    uint64_t l2, h2 = mul_64x64(m, w2, &l2);
    uint64_t l1, h1 = mul_64x64(m, w1, &l1);
    uint64_t r1 = l1 + h2;
    uint64_t r0 = m * w0 + h1 + (r1 < l1 ? 1 : 0); /* mod 2^64 */
    int q = (int)(r0 >> 62);
    uint64_t a0 = (r0 << 2) | (r1 >> 62), a1 = (r1 << 2) | (l2 >> 62); /* f in [0, 1), 128 bits */
    *neg = 0;
    if (a0 >> 63) { /* f >= 1/2: the next quadrant, f - 1 = -(2^128 - a)*2^-128 */
        q = q + 1;
        *neg = 1;
        a1 = ~a1 + 1;
        a0 = ~a0 + (a1 == 0 ? 1 : 0);
    }
    int sh = 0;
    if (a0 == 0) {
        a0 = a1;
        a1 = 0;
        sh = 64;
    }
    if (a0 != 0) { /* always, for a finite argument */
        int z = __builtin_clzll(a0); /* PTX: clz.b64 */
        a0 = (a0 << z) | ((a1 >> 1) >> (63 - z));
        a1 = a1 << z;
        sh = sh + z;
    }
    *f0 = a0;
    *f1 = a1;
    *s = sh;
    return q & 3;
}

/* ------------------------------------------------------------ the functions, per type */

#define MICA_PER_FLOAT "mica_math.inc"
#include "mica_per_float.h"
