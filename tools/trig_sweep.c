/* trig_sweep.c: the wide accuracy sweeps of mica_sin/mica_cos quoted in
 * docs/math.md (section 10), too slow for the test suite.
 *
 *   gcc -O2 -ffp-contract=off -I runtime_c tools/trig_sweep.c runtime_c/mica_math.c \
 *       -lquadmath -lm -o /tmp/trig_sweep
 *   /tmp/trig_sweep f32 [FIRST LAST]  every float with bits in [FIRST, LAST) (hex;
 *                                     default: all positive finite ones), against
 *                                     glibc's double sin and cos (about 3 minutes)
 *   /tmp/trig_sweep f64 N [SEED]      N random doubles in each of eight ranges,
 *                                     against libquadmath's sinq and cosq (113 bits)
 *
 * Both also check sin(-x) = -sin(x) and cos(-x) = cos(x) bit for bit. A host
 * gcc build on x86_64 computes the operations of the zig builds (SSE2, no
 * contraction), so these are the bits tests/test_math.py compares.
 * Errors are in ulps of the exact result, as in tests/test_math.py.
 */
#include <math.h>
#include <quadmath.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mica_bits.h"
#include "mica_math.h"

static double ulp_err32(float y, double v) {
    int e;
    frexp(v, &e);
    return fabs((double)y - v) / ldexp(1.0, e - 24 < -149 ? -149 : e - 24);
}

static double ulp_err64(double y, __float128 v) {
    int e;
    frexpq(v, &e);
    return (double)(fabsq((__float128)y - v) / ldexpq(1.0Q, e - 53 < -1074 ? -1074 : e - 53));
}

static const char *RANGE32[4] = {"|x| < 2^-12", "2^-12 <= |x| <= pi/4", "pi/4 < |x| < 2^15 (Cody-Waite)",
                                 "|x| >= 2^15 (Payne-Hanek)"};

static int sweep32(uint32_t first, uint32_t last) {
    double worst[2][4] = {{0}};
    uint32_t at[2][4] = {{0}};
    long count[4] = {0}, asym = 0;
    for (uint64_t u = first; u < last; u++) {
        float x = mica_f32_of((uint32_t)u), a = fabsf(x);
        if (!(a <= 0x1.fffffep127f)) continue; /* nan, inf */
        int r = a < 0x1p-12f ? 0 : a <= 0x1.921fb6p-1f ? 1 : a < 0x1p15f ? 2 : 3;
        count[r]++;
        float s = mica_sin_f32(x), c = mica_cos_f32(x);
        double es = ulp_err32(s, sin((double)x)), ec = ulp_err32(c, cos((double)x));
        if (es > worst[0][r]) worst[0][r] = es, at[0][r] = (uint32_t)u;
        if (ec > worst[1][r]) worst[1][r] = ec, at[1][r] = (uint32_t)u;
        if (mica_bits32(mica_sin_f32(-x)) != (mica_bits32(s) ^ 0x80000000u) ||
            mica_bits32(mica_cos_f32(-x)) != mica_bits32(c))
            asym++;
    }
    for (int r = 0; r < 4; r++)
        printf("%-32s %11ld floats  sin %.4f (at %a)  cos %.4f (at %a)\n", RANGE32[r], count[r], worst[0][r],
               mica_f32_of(at[0][r]), worst[1][r], mica_f32_of(at[1][r]));
    printf("asymmetric results: %ld\n", asym);
    return asym != 0;
}

/* xorshift64: the f64 inputs depend only on N and SEED. */
static uint64_t state;

static uint64_t next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static double unit(void) { return (double)(next() >> 11) * 0x1p-53; }

/* Ranges: log-uniform |x| in [lo, hi] (kind 0), uniform in [-hi, hi] (kind 1),
 * within 20 ulps of k*pi/2 (kind 2) or (k + 1/2)*pi/2 (kind 3), k
 * log-uniform in [1, hi] (k < 667544 keeps |x| below 2^20). */
struct range64 {
    const char *name;
    int kind;
    double lo, hi;
};

static const struct range64 RANGE64[] = {
    {"2^-26 <= |x| <= pi/4", 0, 0x1p-26, 0x1.921fb54442d18p-1},
    {"pi/4 < |x| < 2^20, log-uniform", 0, 0x1.921fb54442d19p-1, 0x1.fffffffffffffp19},
    {"|x| < 2^20, uniform", 1, 0, 0x1.fffffffffffffp19},
    {"next to k*pi/2, |x| < 2^20", 2, 0, 667544},
    {"next to (k+1/2)*pi/2, |x| < 2^20", 3, 0, 667544},
    {"|x| >= 2^20 (Payne-Hanek)", 0, 0x1p20, 0x1.fffffffffffffp1023},
    {"next to k*pi/2, k < 1e300", 2, 0, 1e300},
    {"next to (k+1/2)*pi/2, k < 1e300", 3, 0, 1e300},
};

static double draw(const struct range64 *g) {
    double x;
    if (g->kind == 0) x = exp(log(g->lo) + (log(g->hi) - log(g->lo)) * unit());
    else if (g->kind == 1) x = g->hi * unit();
    else {
        double k = floor(exp(log(g->hi) * unit()));
        x = (double)((g->kind == 2 ? (__float128)k : k + 0.5Q) * M_PI_2q);
        x = mica_f64_of(mica_bits64(x) + (uint64_t)((int64_t)(next() % 41) - 20));
    }
    return (next() & 1) ? -x : x;
}

static int sweep64(long n) {
    long asym = 0;
    for (size_t g = 0; g < sizeof RANGE64 / sizeof RANGE64[0]; g++) {
        double worst[2] = {0, 0}, at[2] = {0, 0};
        for (long i = 0; i < n; i++) {
            double x = draw(&RANGE64[g]);
            double s = mica_sin_f64(x), c = mica_cos_f64(x);
            double es = ulp_err64(s, sinq(x)), ec = ulp_err64(c, cosq(x));
            if (es > worst[0]) worst[0] = es, at[0] = x;
            if (ec > worst[1]) worst[1] = ec, at[1] = x;
            if (mica_bits64(mica_sin_f64(-x)) != (mica_bits64(s) ^ 0x8000000000000000ull) ||
                mica_bits64(mica_cos_f64(-x)) != mica_bits64(c))
                asym++;
        }
        printf("%-36s sin %.4f (at %a)  cos %.4f (at %a)\n", RANGE64[g].name, worst[0], at[0], worst[1], at[1]);
    }
    printf("asymmetric results: %ld\n", asym);
    return asym != 0;
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "f32") == 0) {
        uint32_t first = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 16) : 0;
        uint32_t last = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 16) : 0x7f800000u;
        return sweep32(first, last);
    }
    if (argc >= 3 && strcmp(argv[1], "f64") == 0) {
        state = 88172645463325252ull + (argc > 3 ? strtoull(argv[3], NULL, 10) : 0);
        return sweep64(atol(argv[2]));
    }
    fprintf(stderr, "usage: trig_sweep f32 [FIRST LAST] | trig_sweep f64 N [SEED]\n");
    return 2;
}
