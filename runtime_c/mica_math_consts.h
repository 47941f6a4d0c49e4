/* mica_math_consts.h: the constants of Mica's elementary functions.
 *
 * Internal, not a public header. The scalar functions (mica_math.inc) and
 * their array forms (mica_math_array.inc) must use the same constants to give
 * the same bits, so both take them from here: the constants several functions
 * share and the polynomials are below, and each function's other constants
 * come from its row of the table of elementwise functions
 * (mica_element_functions.h, included at the end); nothing else belongs here.
 * Each comes in a pair, NAME_F64 and NAME_F32, which code written once for
 * both types names K(NAME) (mica_per_float.h). docs/math.md lists them with
 * their bit patterns (for PTX literals), and tools/fit_math.py regenerates
 * the polynomials.
 *
 * Polynomials are tables: P[i] multiplies t^i. Horner starts from the
 * highest index: p = P[n-1]; p = P[i] + t*p for i = n-2 down to 0.
 */
#ifndef MICA_MATH_CONSTS_H
#define MICA_MATH_CONSTS_H

/* ------------------------------------------------------------ the formats */

/* Fraction bits, exponent bias, and the exponents of the normal numbers. */
#define FRAC_BITS_F64 52
#define BIAS_F64 1023
#define EMAX_F64 1023
#define EMIN_F64 -1022
#define FRAC_BITS_F32 23
#define BIAS_F32 127
#define EMAX_F32 127
#define EMIN_F32 -126

/* Bits: the canonical nan (the same on every machine), +inf, 1.0, the fraction. */
#define NAN_BITS_F64 0x7ff8000000000000ull
#define INF_BITS_F64 0x7ff0000000000000ull
#define ONE_BITS_F64 0x3ff0000000000000ull
#define FRAC_MASK_F64 0x000fffffffffffffull
#define NAN_BITS_F32 0x7fc00000u
#define INF_BITS_F32 0x7f800000u
#define ONE_BITS_F32 0x3f800000u
#define FRAC_MASK_F32 0x007fffffu

/* The least normal number, 2^EMIN. */
#define MIN_NORMAL_F64 0x1p-1022
#define MIN_NORMAL_F32 0x1p-126f

/* ------------------------------------------------------------ scale */

/* scale(y, k) outside the normal exponents goes in two steps, the first by
 * 2^(k + STEP) below them (exact), the second by 2^-STEP. */
#define SCALE_STEP_F64 1000
#define SCALE_STEP_F32 100

/* ------------------------------------------------------------ exp */

/* ln2 = LN2_HI + LN2_LO; LN2_HI has so few bits that k*LN2_HI is exact for
 * every k exp and log meet (|k| < 1100 f64, < 160 f32). */
#define LN2_HI_F64 0x1.62e42ffp-1
#define LN2_LO_F64 -0x1.718432a1b0e26p-35
#define INV_LN2_F64 0x1.71547652b82fep+0
#define LN2_HI_F32 0x1.62e4p-1f
#define LN2_LO_F32 0x1.7f7d1cp-20f
#define INV_LN2_F32 0x1.715476p+0f

/* Adding then subtracting 1.5*2^52 (2^23) rounds to the nearest integer. */
#define ROUND_SHIFT_F64 0x1.8p52
#define ROUND_SHIFT_F32 0x1.8p23f

/* R(r) = r*(e^r+1)/(e^r-1) ~ 2 + t*P(t), t = r^2 */
static const double EXP_P_F64[] = {
    0x1.555555555553ep-3, -0x1.6c16c16bebd5fp-9, 0x1.1566aaf25da36p-14, -0x1.bbd41c68779a6p-20,
    0x1.63769eac97872p-25,
};
static const float EXP_P_F32[] = {
    0x1.55551ep-3f, -0x1.6aa4dcp-9f,
};

/* ------------------------------------------------------------ log */

#define SQRT2_F64 0x1.6a09e667f3bcdp+0
#define SQRT2_F32 0x1.6a09e6p+0f

/* A subnormal x is made normal first: x * 2^LOG_NORMALIZE_K (exact). */
#define LOG_NORMALIZE_K_F64 54
#define LOG_NORMALIZE_F64 0x1p54
#define LOG_NORMALIZE_K_F32 25
#define LOG_NORMALIZE_F32 0x1p25f

/* R(z) = z*L(z), z = s^2 */
static const double LOG_L_F64[] = {
    0x1.5555555555592p-1, 0x1.999999997fdb8p-2, 0x1.24924941f123cp-2, 0x1.c71c52095d99ep-3,
    0x1.74663ee862d48p-3, 0x1.39a1bab75a498p-3, 0x1.2f05638d18115p-3,
};
static const float LOG_L_F32[] = {
    0x1.555554p-1f, 0x1.999a7ap-2f, 0x1.2438d8p-2f, 0x1.e2f664p-3f,
};

/* ------------------------------------------------------------ tanh */

/* tanh(a) = a + a^3*P(a^2) */
static const double TANH_P_F64[] = {
    -0x1.555555555554fp-2, 0x1.111111111079fp-3, -0x1.ba1ba1b97d88dp-5, 0x1.664f485970a04p-6,
    -0x1.226e2f147a69dp-7, 0x1.d6d29b96d2174p-9, -0x1.7d8fd3ac866cp-10, 0x1.3483ae89f617ap-11,
    -0x1.e96fc5af94354p-13, 0x1.5d7459cdd09a5p-14, -0x1.47110a0ef7d05p-16,
};
static const float TANH_P_F32[] = {
    -0x1.55554ap-2f, 0x1.110d26p-3f, -0x1.b9287ap-5f, 0x1.593d06p-6f, -0x1.9b3046p-8f,
};

/* ------------------------------------------------------------ sigmoid, double-length products */

/* sigmoid_parts: below this, e = exp(a) is 0 even after a caller's factor. */
#define SIGMOID_ZERO_F64 -760.0
#define SIGMOID_ZERO_F32 -120.0f

/* Dekker's split: 2^27 + 1 (f64), 2^12 + 1 (f32). */
#define SPLIT_F64 134217729.0
#define SPLIT_F32 4097.0f

/* Each function's own constants. */
#define MICA_MATH_CONSTANTS
#include "mica_element_functions.h"

#endif /* MICA_MATH_CONSTS_H */
