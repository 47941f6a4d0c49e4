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
 */
#pragma STDC FP_CONTRACT OFF

#include <stdint.h>
#include <string.h>

#include "mica_math.h"
#include "mica_math_consts.h"

/* ------------------------------------------------------------ bits */

static uint64_t bits_f64(double x) {
    uint64_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static double from_bits_f64(uint64_t u) {
    double x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static uint32_t bits_f32(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float from_bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static double nan_f64(void) { return from_bits_f64(0x7ff8000000000000ull); }
static double inf_f64(void) { return from_bits_f64(0x7ff0000000000000ull); }
static float nan_f32(void) { return from_bits_f32(0x7fc00000u); }
static float inf_f32(void) { return from_bits_f32(0x7f800000u); }

/* 2^k for a normal exponent: -1022 <= k <= 1023 (f64), -126 <= k <= 127 (f32). */
static double pow2_f64(int k) { return from_bits_f64((uint64_t)(k + 1023) << 52); }
static float pow2_f32(int k) { return from_bits_f32((uint32_t)(k + 127) << 23); }

/* y * 2^k for y near 1 and k a little past the normal exponents. Near the
 * top two exact steps; near the bottom an exact step then one rounding into
 * the subnormals, so the result is rounded once. */
static double scale_f64(double y, int k) {
    if (k > 1023) return (y * pow2_f64(1023)) * pow2_f64(k - 1023);
    if (k < -1022) return (y * pow2_f64(k + SCALE_STEP_F64)) * pow2_f64(-SCALE_STEP_F64);
    return y * pow2_f64(k);
}

static float scale_f32(float y, int k) {
    if (k > 127) return (y * pow2_f32(127)) * pow2_f32(k - 127);
    if (k < -126) return (y * pow2_f32(k + SCALE_STEP_F32)) * pow2_f32(-SCALE_STEP_F32);
    return y * pow2_f32(k);
}

/* ------------------------------------------------------------ exp */

/* LN2_HI, LN2_LO, INV_LN2, ROUND_SHIFT and the other constants are in
 * mica_math_consts.h, shared with the array forms (mica_math_array.c). */

/* exp(r), r = hi - lo, |r| <= 0.3466:
 * R(r) = r*(e^r+1)/(e^r-1) ~ 2 + t*P(t), t = r^2, and with c = r - t*P(t),
 * exp(r) = 1 + 2r/(R - r) = 1 - q, q = (lo - r*c/(2 - c)) - hi.
 * Keeping hi and lo apart to the last step keeps the error under 1 ulp.
 * *yl gets the rounding error of 1 - q (exact: |q| < 1), so y + yl is
 * exp(r) to about 0.3 ulp for the callers that can use it. */
static double exp_reduced_f64(double hi, double lo, double *yl) {
    double r = hi - lo;
    double t = r * r;
    double p = EXP_P4_F64;
    p = EXP_P3_F64 + t * p;
    p = EXP_P2_F64 + t * p;
    p = EXP_P1_F64 + t * p;
    p = EXP_P0_F64 + t * p;
    double c = r - t * p;
    double q = (lo - (r * c) / (2.0 - c)) - hi;
    double y = 1.0 - q;
    *yl = (1.0 - y) - q;
    return y;
}

static float exp_reduced_f32(float hi, float lo, float *yl) {
    float r = hi - lo;
    float t = r * r;
    float p = EXP_P1_F32;
    p = EXP_P0_F32 + t * p;
    float c = r - t * p;
    float q = (lo - (r * c) / (2.0f - c)) - hi;
    float y = 1.0f - q;
    *yl = (1.0f - y) - q;
    return y;
}

/* exp(x + xl) = (y + yl) * 2^k, y in [0.70, 1.42], for -760 <= x <= 710
 * (-120 <= x <= 89 in f32) and xl tiny beside 1 ulp of x (0 for plain exp).
 * Callers that multiply by more factors scale last, so an answer in the
 * subnormals is rounded once. */
static double exp_parts_f64(double x, double xl, double *yl, int *k) {
    double kd = x * INV_LN2_F64 + ROUND_SHIFT_F64;
    kd = kd - ROUND_SHIFT_F64;
    double hi = x - kd * LN2_HI_F64; /* exact: k*LN2_HI is exact and close to x */
    double lo = kd * LN2_LO_F64 - xl;
    *k = (int)kd;
    return exp_reduced_f64(hi, lo, yl);
}

static float exp_parts_f32(float x, float xl, float *yl, int *k) {
    float kd = x * INV_LN2_F32 + ROUND_SHIFT_F32;
    kd = kd - ROUND_SHIFT_F32;
    float hi = x - kd * LN2_HI_F32;
    float lo = kd * LN2_LO_F32 - xl;
    *k = (int)kd;
    return exp_reduced_f32(hi, lo, yl);
}

double mica_exp_f64(double x) {
    if (x != x) return nan_f64();
    if (x > EXP_OVERFLOW_F64) return inf_f64();  /* exp(709.79) is already past DBL_MAX */
    if (x < EXP_UNDERFLOW_F64) return 0.0;       /* below half the least subnormal */
    double yl;
    int k;
    double y = exp_parts_f64(x, 0.0, &yl, &k);
    return scale_f64(y, k);
}

float mica_exp_f32(float x) {
    if (x != x) return nan_f32();
    if (x > EXP_OVERFLOW_F32) return inf_f32();
    if (x < EXP_UNDERFLOW_F32) return 0.0f;
    float yl;
    int k;
    float y = exp_parts_f32(x, 0.0f, &yl, &k);
    return scale_f32(y, k);
}

/* ------------------------------------------------------------ log */

/* log(2^k * (1+f)), 1+f in [sqrt2/2, sqrt2]:
 * s = f/(2+f), log(1+f) = 2s + s*R(z), z = s^2, R(z) = z*(L1 + z*(L2 + ...)).
 * With h = f*f/2 the identity 2s = f - s*f gives log(1+f) = f - (h - s*(h + R)),
 * and k*ln2 joins in two parts: the small one before f, the large one last. */
static double log_reduced_f64(double f, int k) {
    double s = f / (2.0 + f);
    double z = s * s;
    double p = LOG_L6_F64;
    p = LOG_L5_F64 + z * p;
    p = LOG_L4_F64 + z * p;
    p = LOG_L3_F64 + z * p;
    p = LOG_L2_F64 + z * p;
    p = LOG_L1_F64 + z * p;
    p = LOG_L0_F64 + z * p;
    double R = z * p;
    double h = (0.5 * f) * f;
    double dk = (double)k;
    return dk * LN2_HI_F64 - ((h - (s * (h + R) + dk * LN2_LO_F64)) - f);
}

static float log_reduced_f32(float f, int k) {
    float s = f / (2.0f + f);
    float z = s * s;
    float p = LOG_L3_F32;
    p = LOG_L2_F32 + z * p;
    p = LOG_L1_F32 + z * p;
    p = LOG_L0_F32 + z * p;
    float R = z * p;
    float h = (0.5f * f) * f;
    float dk = (float)k;
    return dk * LN2_HI_F32 - ((h - (s * (h + R) + dk * LN2_LO_F32)) - f);
}

double mica_log_f64(double x) {
    if (x != x || x < 0.0) return nan_f64();
    if (x == 0.0) return -inf_f64();
    if (x == inf_f64()) return x;
    int k = 0;
    if (x < 0x1p-1022) { /* subnormal: make it normal first (exact) */
        x = x * LOG_NORMALIZE_F64;
        k = -LOG_NORMALIZE_K_F64;
    }
    uint64_t u = bits_f64(x);
    k = k + (int)(u >> 52) - 1023;
    double m = from_bits_f64((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull); /* [1, 2) */
    if (m > SQRT2_F64) { /* keep m in [sqrt2/2, sqrt2] so |s| stays small */
        m = m * 0.5;
        k = k + 1;
    }
    return log_reduced_f64(m - 1.0, k); /* m - 1 is exact (Sterbenz) */
}

float mica_log_f32(float x) {
    if (x != x || x < 0.0f) return nan_f32();
    if (x == 0.0f) return -inf_f32();
    if (x == inf_f32()) return x;
    int k = 0;
    if (x < 0x1p-126f) {
        x = x * LOG_NORMALIZE_F32;
        k = -LOG_NORMALIZE_K_F32;
    }
    uint32_t u = bits_f32(x);
    k = k + (int)(u >> 23) - 127;
    float m = from_bits_f32((u & 0x007fffffu) | 0x3f800000u);
    if (m > SQRT2_F32) {
        m = m * 0.5f;
        k = k + 1;
    }
    return log_reduced_f32(m - 1.0f, k);
}

/* ------------------------------------------------------------ tanh */

/* tanh(a), 0 <= a < 0.55: a + a^3*P(a^2). */
static double tanh_small_f64(double a) {
    double t = a * a;
    double p = TANH_P10_F64;
    p = TANH_P9_F64 + t * p;
    p = TANH_P8_F64 + t * p;
    p = TANH_P7_F64 + t * p;
    p = TANH_P6_F64 + t * p;
    p = TANH_P5_F64 + t * p;
    p = TANH_P4_F64 + t * p;
    p = TANH_P3_F64 + t * p;
    p = TANH_P2_F64 + t * p;
    p = TANH_P1_F64 + t * p;
    p = TANH_P0_F64 + t * p;
    return a + (a * t) * p;
}

static float tanh_small_f32(float a) {
    float t = a * a;
    float p = TANH_P4_F32;
    p = TANH_P3_F32 + t * p;
    p = TANH_P2_F32 + t * p;
    p = TANH_P1_F32 + t * p;
    p = TANH_P0_F32 + t * p;
    return a + (a * t) * p;
}

/* 2/(E + 1), E = exp(2a) = (m + ml)*2^k, 0.55 <= a <= 22 (scaling exact).
 * d = E + 1 rounds; dl = (1 - (d - E)) + El restores 1 + E = d + dl, and
 * 2/(d + dl) ~ t - t*dl/d. */
static double tanh_tail_f64(double a) {
    double ml;
    int k;
    double m = exp_parts_f64(a + a, 0.0, &ml, &k);
    double E = scale_f64(m, k), El = scale_f64(ml, k);
    double d = E + 1.0;
    double dl = (1.0 - (d - E)) + El;
    double t = 2.0 / d;
    return t - (t * dl) / d;
}

static float tanh_tail_f32(float a) {
    float ml;
    int k;
    float m = exp_parts_f32(a + a, 0.0f, &ml, &k);
    float E = scale_f32(m, k), El = scale_f32(ml, k);
    float d = E + 1.0f;
    float dl = (1.0f - (d - E)) + El;
    float t = 2.0f / d;
    return t - (t * dl) / d;
}

/* Tiny |x| answers x itself (tanh x = x - x^3/3 rounds to x, and -0 stays -0);
 * past 22 (f64) or 10 (f32) 2/(e^2x + 1) is below half an ulp of 1. */
double mica_tanh_f64(double x) {
    if (x != x) return nan_f64();
    double a = x < 0.0 ? -x : x;
    if (a < TANH_TINY_F64) return x;
    double y;
    if (a < TANH_SMALL_F64) y = tanh_small_f64(a);
    else if (a > TANH_ONE_F64) y = 1.0;
    else y = 1.0 - tanh_tail_f64(a);
    return x < 0.0 ? -y : y;
}

float mica_tanh_f32(float x) {
    if (x != x) return nan_f32();
    float a = x < 0.0f ? -x : x;
    if (a < TANH_TINY_F32) return x;
    float y;
    if (a < TANH_SMALL_F32) y = tanh_small_f32(a);
    else if (a > TANH_ONE_F32) y = 1.0f;
    else y = 1.0f - tanh_tail_f32(a);
    return x < 0.0f ? -y : y;
}

/* ------------------------------------------------------------ sigmoid */

/* The two halves of a sigmoid, for a = ah + al <= 0 (al tiny beside one ulp
 * of ah; 0 for a plain argument) and e = exp(a) <= 1:
 *   big   = 1/(1 + e) = sigmoid(-a), in [0.5, 1], returned;
 *   small = e/(1 + e) = sigmoid(a),  as *small * 2^k: the caller scales last.
 * exp gives e = (m + ml)*2^k; d = 1 + e rounds but d + dl = 1 + e (+ ml's
 * share), and q/(d + dl) ~ q - q*dl/d puts the lost bits back:
 *   big = 1/d - (1/d)*dl/d,  small = m/d + (ml - (m/d)*dl)/d.
 * Below -760 (-120 f32) e is 0 even after a caller's factor (at most e^15). */
static double sigmoid_parts_f64(double ah, double al, double *small, int *k) {
    double m = 0.0, ml = 0.0;
    *k = 0;
    if (ah >= SIGMOID_ZERO_F64) m = exp_parts_f64(ah, al, &ml, k);
    double e = scale_f64(m, *k);
    double d = 1.0 + e;
    double dl = ((1.0 - d) + e) + scale_f64(ml, *k);
    double big = 1.0 / d;
    big = big - (big * dl) / d;
    double sm = m / d;
    *small = sm + (ml - sm * dl) / d;
    return big;
}

static float sigmoid_parts_f32(float ah, float al, float *small, int *k) {
    float m = 0.0f, ml = 0.0f;
    *k = 0;
    if (ah >= SIGMOID_ZERO_F32) m = exp_parts_f32(ah, al, &ml, k);
    float e = scale_f32(m, *k);
    float d = 1.0f + e;
    float dl = ((1.0f - d) + e) + scale_f32(ml, *k);
    float big = 1.0f / d;
    big = big - (big * dl) / d;
    float sm = m / d;
    *small = sm + (ml - sm * dl) / d;
    return big;
}

/* exp only ever sees -|x|, so nothing overflows, and both halves are
 * quotients no larger than 1, so the answer stays in [0, 1]. */
double mica_sigmoid_f64(double x) {
    if (x != x) return nan_f64();
    double small;
    int k;
    double big = sigmoid_parts_f64(x >= 0.0 ? -x : x, 0.0, &small, &k);
    return x >= 0.0 ? big : scale_f64(small, k);
}

float mica_sigmoid_f32(float x) {
    if (x != x) return nan_f32();
    float small;
    int k;
    float big = sigmoid_parts_f32(x >= 0.0f ? -x : x, 0.0f, &small, &k);
    return x >= 0.0f ? big : scale_f32(small, k);
}

/* ------------------------------------------------------------ double-length products */

/* Dekker/Veltkamp: with C = 2^27+1 (2^12+1 for float), a = hi + lo exactly,
 * each half short enough that products of halves are exact; then
 * a*b = p + e exactly (barring overflow and underflow), no fma needed. */
static double two_prod_f64(double a, double b, double *e) {
    double p = a * b;
    double ta = SPLIT_F64 * a, tb = SPLIT_F64 * b;
    double ah = ta - (ta - a), bh = tb - (tb - b);
    double al = a - ah, bl = b - bh;
    *e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return p;
}

static float two_prod_f32(float a, float b, float *e) {
    float p = a * b;
    float ta = SPLIT_F32 * a, tb = SPLIT_F32 * b;
    float ah = ta - (ta - a), bh = tb - (tb - b);
    float al = a - ah, bl = b - bh;
    *e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return p;
}

/* Knuth: a + b = s + e exactly, whatever the magnitudes. */
static double two_sum_f64(double a, double b, double *e) {
    double s = a + b;
    double bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

static float two_sum_f32(float a, float b, float *e) {
    float s = a + b;
    float bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

/* ------------------------------------------------------------ gelu */

/* gelu(x) = 0.5*x*(1 + tanh(u)) = x*sigmoid(v), v = 2u = K*(x + C*x^3),
 * K = 2*sqrt(2/pi), C = 0.044715, each constant as hi + lo. For x < 0,
 * sigmoid(v) ~ e^v, and an error of d in v is a relative error of d in
 * the answer: at x = -10, |v| = 87, so v is carried as vh + vl. */
static double gelu_arg_f64(double x, double *vl) {
    double x2l, x2 = two_prod_f64(x, x, &x2l);
    double x3l, x3 = two_prod_f64(x2, x, &x3l);
    x3l = x3l + x2l * x;
    double cl, c3 = two_prod_f64(GELU_C_HI_F64, x3, &cl);
    cl = cl + (GELU_C_HI_F64 * x3l + GELU_C_LO_F64 * x3);
    double wl, w = two_sum_f64(x, c3, &wl);
    wl = wl + cl;
    double v = two_prod_f64(GELU_K_HI_F64, w, vl);
    *vl = *vl + (GELU_K_HI_F64 * wl + GELU_K_LO_F64 * w);
    return v;
}

static float gelu_arg_f32(float x, float *vl) {
    float x2l, x2 = two_prod_f32(x, x, &x2l);
    float x3l, x3 = two_prod_f32(x2, x, &x3l);
    x3l = x3l + x2l * x;
    float cl, c3 = two_prod_f32(GELU_C_HI_F32, x3, &cl);
    cl = cl + (GELU_C_HI_F32 * x3l + GELU_C_LO_F32 * x3);
    float wl, w = two_sum_f32(x, c3, &wl);
    wl = wl + cl;
    float v = two_prod_f32(GELU_K_HI_F32, w, vl);
    *vl = *vl + (GELU_K_HI_F32 * wl + GELU_K_LO_F32 * w);
    return v;
}

/* Past x = 10 sigmoid(v) rounds to 1; below -25 (f64) / -12 (f32) it is 0.
 * Those shortcuts answer the bits the full path would, and keep inf and
 * the overflow of x^3 out of it. For v < 0, s = sigmoid(v) = small * 2^k
 * and the product is scaled last. */
double mica_gelu_f64(double x) {
    if (x != x) return nan_f64();
    if (x > GELU_ONE_F64) return x;
    if (x < GELU_ZERO_F64) return -0.0;
    double vl, v = gelu_arg_f64(x, &vl);
    double small;
    int k;
    if (v >= 0.0) return x * sigmoid_parts_f64(-v, -vl, &small, &k);
    sigmoid_parts_f64(v, vl, &small, &k);
    return scale_f64(x * small, k);
}

float mica_gelu_f32(float x) {
    if (x != x) return nan_f32();
    if (x > GELU_ONE_F32) return x;
    if (x < GELU_ZERO_F32) return -0.0f;
    float vl, v = gelu_arg_f32(x, &vl);
    float small;
    int k;
    if (v >= 0.0f) return x * sigmoid_parts_f32(-v, -vl, &small, &k);
    sigmoid_parts_f32(v, vl, &small, &k);
    return scale_f32(x * small, k);
}

/* d/dx x*sigmoid(v) = s + (x*v')*(s*sn), s = sigmoid(v), sn = sigmoid(-v) = 1 - s,
 * v' = K + 3KC*x^2. (The tanh form 0.5*(1+t) + 0.5*x*(1-t^2)*u' is the
 * same function: 1+t = 2s, 1-t^2 = 4*s*sn.) */
double mica_gelu_grad_f64(double x) {
    if (x != x) return nan_f64();
    if (x > GELU_ONE_F64) return 1.0;
    if (x < GELU_ZERO_F64) return 0.0;
    double vl, v = gelu_arg_f64(x, &vl);
    double xdv = x * (GELU_K_HI_F64 + GELU_K3_F64 * (x * x));
    double small;
    int k;
    if (v >= 0.0) {
        double s = sigmoid_parts_f64(-v, -vl, &small, &k);
        double sn = scale_f64(small, k);
        return s + xdv * (s * sn);
    }
    double sn = sigmoid_parts_f64(v, vl, &small, &k);
    return scale_f64(small + xdv * (small * sn), k);
}

float mica_gelu_grad_f32(float x) {
    if (x != x) return nan_f32();
    if (x > GELU_ONE_F32) return 1.0f;
    if (x < GELU_ZERO_F32) return 0.0f;
    float vl, v = gelu_arg_f32(x, &vl);
    float xdv = x * (GELU_K_HI_F32 + GELU_K3_F32 * (x * x));
    float small;
    int k;
    if (v >= 0.0f) {
        float s = sigmoid_parts_f32(-v, -vl, &small, &k);
        float sn = scale_f32(small, k);
        return s + xdv * (s * sn);
    }
    float sn = sigmoid_parts_f32(v, vl, &small, &k);
    return scale_f32(small + xdv * (small * sn), k);
}

/* ------------------------------------------------------------ silu */

/* silu(x) = x*sigmoid(x). Below -800 (f64) / -110 (f32) sigmoid(x) is 0 and
 * the answer -0; the shortcut also keeps -inf*0 = nan out. */
double mica_silu_f64(double x) {
    if (x != x) return nan_f64();
    if (x < SILU_ZERO_F64) return -0.0;
    double small;
    int k;
    if (x >= 0.0) return x * sigmoid_parts_f64(-x, 0.0, &small, &k);
    sigmoid_parts_f64(x, 0.0, &small, &k);
    return scale_f64(x * small, k);
}

float mica_silu_f32(float x) {
    if (x != x) return nan_f32();
    if (x < SILU_ZERO_F32) return -0.0f;
    float small;
    int k;
    if (x >= 0.0f) return x * sigmoid_parts_f32(-x, 0.0f, &small, &k);
    sigmoid_parts_f32(x, 0.0f, &small, &k);
    return scale_f32(x * small, k);
}

/* d/dx x*sigmoid(x) = s*(1 + x*sn), s = sigmoid(x), sn = sigmoid(-x). Past
 * 50 (f64) / 25 (f32) it rounds to 1 (and inf*0 would be nan). */
double mica_silu_grad_f64(double x) {
    if (x != x) return nan_f64();
    if (x > SILU_GRAD_ONE_F64) return 1.0;
    if (x < SILU_ZERO_F64) return -0.0;
    double small;
    int k;
    if (x >= 0.0) {
        double s = sigmoid_parts_f64(-x, 0.0, &small, &k);
        return s * (1.0 + x * scale_f64(small, k));
    }
    double sn = sigmoid_parts_f64(x, 0.0, &small, &k);
    return scale_f64(small * (1.0 + x * sn), k);
}

float mica_silu_grad_f32(float x) {
    if (x != x) return nan_f32();
    if (x > SILU_GRAD_ONE_F32) return 1.0f;
    if (x < SILU_ZERO_F32) return -0.0f;
    float small;
    int k;
    if (x >= 0.0f) {
        float s = sigmoid_parts_f32(-x, 0.0f, &small, &k);
        return s * (1.0f + x * scale_f32(small, k));
    }
    float sn = sigmoid_parts_f32(x, 0.0f, &small, &k);
    return scale_f32(small * (1.0f + x * sn), k);
}

/* ------------------------------------------------------------ sin, cos */

/* x = k*pi/2 + r, |r| <= pi/4 (a hair more), r carried as rh + rl;
 * sin x and cos x are then +-sin r or +-cos r by k mod 4.
 *
 * Cody-Waite, |x| < 2^20 (f64) / 2^15 (f32): pi/2 = P[0] + P[1] + ...,
 * every part but the last so short (33 bits f64, 9 bits f32) that k*P[i]
 * is exact for |k| < 2^20 / 2^15; the last is rounded to full precision.
 * x - k*P[0] is exact (Sterbenz), the middle parts are taken off with
 * two_sum and their rounding errors gathered in l, and the last, tiny
 * product joins l. pi/2 is carried to 2^-160 (f64) / 2^-78 (f32), so
 * the error of rh + rl stays below 2^-136 / 2^-62 even at the largest k. */
static const double PIO2_CW_F64[4] = {
    0x1.921fb544p+0, 0x1.0b4611a6p-34, 0x1.3198a2ep-69, 0x1.b839a252049c1p-104,
};
static const float PIO2_CW_F32[6] = {
    0x1.92p+0f, 0x1.fbp-12f, 0x1.51p-22f, 0x1.0bp-34f, 0x1.18p-44f, 0x1.1a6264p-54f,
};
#define INV_PIO2_F64 0x1.45f306dc9c883p-1
#define INV_PIO2_F32 0x1.45f306p-1f
#define PIO4_F64 0x1.921fb54442d18p-1
#define PIO4_F32 0x1.921fb6p-1f
/* pi/2 = PIO2_HI + PIO2_LO, for turning Payne-Hanek's fraction into radians. */
#define PIO2_HI_F64 0x1.921fb54442d18p+0
#define PIO2_LO_F64 0x1.1a62633145c07p-54
#define PIO2_HI_F32 0x1.921fb6p+0f
#define PIO2_LO_F32 -0x1.777a5cp-25f

/* Round x*2/pi to k (the sum and difference with SHIFT), then take k*pi/2
 * off in parts. Returns k; |k| < 2^20 (f64) / 2^15 (f32). */
static int reduce_cw_f64(double x, double *rh, double *rl) {
    double kd = x * INV_PIO2_F64 + ROUND_SHIFT_F64;
    kd = kd - ROUND_SHIFT_F64;
    double h = x - kd * PIO2_CW_F64[0]; /* exact */
    double l = 0.0, e;
    for (int i = 1; i < 3; i++) {
        h = two_sum_f64(h, -(kd * PIO2_CW_F64[i]), &e);
        l = l + e;
    }
    l = l - kd * PIO2_CW_F64[3];
    *rh = two_sum_f64(h, l, rl);
    return (int)kd;
}

static int reduce_cw_f32(float x, float *rh, float *rl) {
    float kd = x * INV_PIO2_F32 + ROUND_SHIFT_F32;
    kd = kd - ROUND_SHIFT_F32;
    float h = x - kd * PIO2_CW_F32[0];
    float l = 0.0f, e;
    for (int i = 1; i < 5; i++) {
        h = two_sum_f32(h, -(kd * PIO2_CW_F32[i]), &e);
        l = l + e;
    }
    l = l - kd * PIO2_CW_F32[5];
    *rh = two_sum_f32(h, l, rl);
    return (int)kd;
}

/* Payne-Hanek, for the larger |x|, in integers: the bits of 2/pi,
 * 0.a2f9836e..., 64 to a word, after one word of zeros (so that a window
 * may start up to 64 bits before the binary point). 1216 bits cover every
 * double: a window ends at most 1161 bits after the point. */
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

/* x = k*pi/2 + rh + rl for finite |x| >= 2^20; returns k mod 4. The top
 * 106 bits of |f| become hi + lo exactly; (hi + lo)*pi/2 in double-length
 * arithmetic. The sign of x goes on last: -x has quadrant -q, remainder -r. */
static int reduce_ph_f64(double x, double *rh, double *rl) {
    uint64_t u = bits_f64(x) & 0x7fffffffffffffffull;
    uint64_t m = (u & 0x000fffffffffffffull) | 0x0010000000000000ull;
    uint64_t f0, f1;
    int s, neg;
    int q = reduce_ph_bits(m, (int)(u >> 52) - 1075, &f0, &f1, &s, &neg);
    double hi = (double)(f0 >> 11) * pow2_f64(-53 - s);
    double lo = (double)(((f0 & 0x7ff) << 42) | (f1 >> 22)) * pow2_f64(-106 - s);
    double pl, ph = two_prod_f64(hi, PIO2_HI_F64, &pl);
    pl = pl + (hi * PIO2_LO_F64 + lo * PIO2_HI_F64);
    double r = ph + pl;
    double e = pl - (r - ph);
    if ((x < 0.0) != (neg != 0)) {
        r = -r;
        e = -e;
    }
    *rh = r;
    *rl = e;
    return x < 0.0 ? (4 - q) & 3 : q;
}

/* The same for finite |x| >= 2^15 in float: hi and lo are the top 48 bits
 * of |f|; s <= 29 for every float (checked exhaustively), so the
 * powers of two are normal. */
static int reduce_ph_f32(float x, float *rh, float *rl) {
    uint32_t u = bits_f32(x) & 0x7fffffffu;
    uint64_t m = (u & 0x007fffffu) | 0x00800000u;
    uint64_t f0, f1;
    int s, neg;
    int q = reduce_ph_bits(m, (int)(u >> 23) - 150, &f0, &f1, &s, &neg);
    (void)f1;
    float hi = (float)(uint32_t)(f0 >> 40) * pow2_f32(-24 - s);
    float lo = (float)(uint32_t)((f0 >> 16) & 0xffffffu) * pow2_f32(-48 - s);
    float pl, ph = two_prod_f32(hi, PIO2_HI_F32, &pl);
    pl = pl + (hi * PIO2_LO_F32 + lo * PIO2_HI_F32);
    float r = ph + pl;
    float e = pl - (r - ph);
    if ((x < 0.0f) != (neg != 0)) {
        r = -r;
        e = -e;
    }
    *rh = r;
    *rl = e;
    return x < 0.0f ? (4 - q) & 3 : q;
}

/* sin(r + rl), |r| <= 0.7854 (f64) / 0.79 (f32), |rl| <= ulp(r)/2:
 * sin r = r + r^3*(S1 + t*P(t)), t = r^2, and the rl*cos r term to first
 * order, in fdlibm's order: r + (rl + v*S1 + v*t*P - t*rl/2), v = r^3. */
static double sin_kernel_f64(double r, double rl) {
    double t = r * r;
    double v = t * r;
    double p = 0x1.5d8b55940c94fp-33;
    p = -0x1.ae5e4b83e332bp-26 + t * p;
    p = 0x1.71de35552b521p-19 + t * p;
    p = -0x1.a01a019be9217p-13 + t * p;
    p = 0x1.111111110f73p-7 + t * p;
    return r - ((t * (0.5 * rl - v * p) - rl) - v * -0x1.5555555555548p-3);
}

static float sin_kernel_f32(float r, float rl) {
    float t = r * r;
    float v = t * r;
    float p = 0x1.7c090ep-19f;
    p = -0x1.a0590ep-13f + t * p;
    p = 0x1.111174p-7f + t * p;
    return r - ((t * (0.5f * rl - v * p) - rl) - v * -0x1.555556p-3f);
}

/* cos(r + rl) = 1 - t/2 + t^2*Q(t) - r*rl, t = r^2: w = 1 - t/2 rounds,
 * (1 - w) - t/2 is its rounding error, exactly, added back with the rest. */
static double cos_kernel_f64(double r, double rl) {
    double t = r * r;
    double q = -0x1.8fa684874a366p-37;
    q = 0x1.1ee9dbcefbf23p-29 + t * q;
    q = -0x1.27e4f7f19148cp-22 + t * q;
    q = 0x1.a01a019c8f254p-16 + t * q;
    q = -0x1.6c16c16c15015p-10 + t * q;
    q = 0x1.555555555554bp-5 + t * q;
    double h = 0.5 * t;
    double w = 1.0 - h;
    return w + (((1.0 - w) - h) + ((t * t) * q - r * rl));
}

static float cos_kernel_f32(float r, float rl) {
    float t = r * r;
    float q = 0x1.99e336p-16f;
    q = -0x1.6c0c1ep-10f + t * q;
    q = 0x1.55554ap-5f + t * q;
    float h = 0.5f * t;
    float w = 1.0f - h;
    return w + (((1.0f - w) - h) + ((t * t) * q - r * rl));
}

/* x = k*pi/2 + r: quadrant k mod 4 and r = rh + rl, for finite x. */
static int reduce_f64(double x, double a, double *rh, double *rl) {
    if (a <= PIO4_F64) {
        *rh = x;
        *rl = 0.0;
        return 0;
    }
    if (a < 0x1p20) return reduce_cw_f64(x, rh, rl) & 3;
    return reduce_ph_f64(x, rh, rl);
}

static int reduce_f32(float x, float a, float *rh, float *rl) {
    if (a <= PIO4_F32) {
        *rh = x;
        *rl = 0.0f;
        return 0;
    }
    if (a < 0x1p15f) return reduce_cw_f32(x, rh, rl) & 3;
    return reduce_ph_f32(x, rh, rl);
}

/* Tiny |x|: sin x = x - x^3/6 rounds to x (and keeps -0), cos x to 1.
 * Quadrants: sin = S, C, -S, -C and cos = C, -S, -C, S for k mod 4 = 0..3. */
double mica_sin_f64(double x) {
    if (x != x) return nan_f64();
    double a = x < 0.0 ? -x : x;
    if (a == inf_f64()) return nan_f64();
    if (a < 0x1p-26) return x;
    double r, rl;
    int q = reduce_f64(x, a, &r, &rl);
    double y = (q & 1) ? cos_kernel_f64(r, rl) : sin_kernel_f64(r, rl);
    return (q & 2) ? -y : y;
}

double mica_cos_f64(double x) {
    if (x != x) return nan_f64();
    double a = x < 0.0 ? -x : x;
    if (a == inf_f64()) return nan_f64();
    if (a < 0x1p-27) return 1.0;
    double r, rl;
    int q = reduce_f64(x, a, &r, &rl);
    double y = (q & 1) ? sin_kernel_f64(r, rl) : cos_kernel_f64(r, rl);
    return ((q + 1) & 2) ? -y : y;
}

float mica_sin_f32(float x) {
    if (x != x) return nan_f32();
    float a = x < 0.0f ? -x : x;
    if (a == inf_f32()) return nan_f32();
    if (a < 0x1p-12f) return x;
    float r, rl;
    int q = reduce_f32(x, a, &r, &rl);
    float y = (q & 1) ? cos_kernel_f32(r, rl) : sin_kernel_f32(r, rl);
    return (q & 2) ? -y : y;
}

float mica_cos_f32(float x) {
    if (x != x) return nan_f32();
    float a = x < 0.0f ? -x : x;
    if (a == inf_f32()) return nan_f32();
    if (a < 0x1p-12f) return 1.0f;
    float r, rl;
    int q = reduce_f32(x, a, &r, &rl);
    float y = (q & 1) ? sin_kernel_f32(r, rl) : cos_kernel_f32(r, rl);
    return ((q + 1) & 2) ? -y : y;
}

/* ------------------------------------------------------------ powi */

/* Bits of |n| from the lowest: r = r*b when the bit is set, then b = b*b
 * unless no bits remain. |INT64_MIN| is taken in unsigned arithmetic.
 * A nan x answers the canonical nan (1 when n = 0). */
double mica_powi_f64(double x, int64_t n) {
    if (n == 0) return 1.0;
    if (x != x) return nan_f64();
    uint64_t m = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    double r = 1.0, b = x;
    for (;;) {
        if (m & 1) r = r * b;
        m = m >> 1;
        if (m == 0) break;
        b = b * b;
    }
    return n < 0 ? 1.0 / r : r;
}

float mica_powi_f32(float x, int64_t n) {
    if (n == 0) return 1.0f;
    if (x != x) return nan_f32();
    uint64_t m = n < 0 ? 0 - (uint64_t)n : (uint64_t)n;
    float r = 1.0f, b = x;
    for (;;) {
        if (m & 1) r = r * b;
        m = m >> 1;
        if (m == 0) break;
        b = b * b;
    }
    return n < 0 ? 1.0f / r : r;
}
