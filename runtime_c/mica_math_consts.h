/* mica_math_consts.h: the constants of Mica's elementary functions.
 *
 * Internal, not a public header. The scalar functions (mica_math.inc) and
 * their array forms (mica_math_array.inc) must use the same constants to give
 * the same bits, so both take them from here; nothing else belongs here.
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

/* exp(x) is +inf above EXP_OVERFLOW (exp(709.79) is past DBL_MAX) and +0
 * below EXP_UNDERFLOW (half the least subnormal). */
#define EXP_OVERFLOW_F64 710.0
#define EXP_UNDERFLOW_F64 -746.0
#define EXP_OVERFLOW_F32 89.0f
#define EXP_UNDERFLOW_F32 -104.0f

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

/* |x| below TINY: tanh x = x; below SMALL: the polynomial; above ONE: +-1. */
#define TANH_TINY_F64 0x1p-27
#define TANH_SMALL_F64 0.55
#define TANH_ONE_F64 22.0
#define TANH_TINY_F32 0x1p-12f
#define TANH_SMALL_F32 0.55f
#define TANH_ONE_F32 10.0f

/* tanh(a) = a + a^3*P(a^2) */
static const double TANH_P_F64[] = {
    -0x1.555555555554fp-2, 0x1.111111111079fp-3, -0x1.ba1ba1b97d88dp-5, 0x1.664f485970a04p-6,
    -0x1.226e2f147a69dp-7, 0x1.d6d29b96d2174p-9, -0x1.7d8fd3ac866cp-10, 0x1.3483ae89f617ap-11,
    -0x1.e96fc5af94354p-13, 0x1.5d7459cdd09a5p-14, -0x1.47110a0ef7d05p-16,
};
static const float TANH_P_F32[] = {
    -0x1.55554ap-2f, 0x1.110d26p-3f, -0x1.b9287ap-5f, 0x1.593d06p-6f, -0x1.9b3046p-8f,
};

/* ------------------------------------------------------------ sigmoid, gelu, silu */

/* sigmoid_parts: below this, e = exp(a) is 0 even after a caller's factor. */
#define SIGMOID_ZERO_F64 -760.0
#define SIGMOID_ZERO_F32 -120.0f

/* Dekker's split: 2^27 + 1 (f64), 2^12 + 1 (f32). */
#define SPLIT_F64 134217729.0
#define SPLIT_F32 4097.0f

/* gelu(x) = x*sigmoid(v), v = K*(x + C*x^3), each constant as hi + lo. */
#define GELU_K_HI_F64 0x1.9884533d43651p+0
#define GELU_K_LO_F64 -0x1.cbc0d30ebfd15p-54
#define GELU_C_HI_F64 0x1.6e4e26d4801f7p-5
#define GELU_C_LO_F64 0x1.441355475a31ap-59
#define GELU_K3_F64 0x1.b6676bf7450fp-3 /* 3*K*C, for the derivative */
#define GELU_K_HI_F32 0x1.988454p+0f
#define GELU_K_LO_F32 -0x1.857936p-25f
#define GELU_C_HI_F32 0x1.6e4e26p-5f
#define GELU_C_LO_F32 0x1.a9003ep-30f
#define GELU_K3_F32 0x1.b6676cp-3f

/* gelu: x above ONE answers x (gelu_grad 1); below ZERO -0 (gelu_grad +0). */
#define GELU_ONE_F64 10.0
#define GELU_ZERO_F64 -25.0
#define GELU_ONE_F32 10.0f
#define GELU_ZERO_F32 -12.0f
/* Below this |x| the array forms keep gelu's exact products on Dekker's
 * path: C*x^3's exponent, -5 + 3*log2|x|, must be at least EMIN + 23
 * (float) or EMIN + 52 (double) for an fma to give Dekker's error; the
 * bound leaves a wide margin (-95 > -103 and -905 > -970). */
#define GELU_FUSED_TINY_F64 0x1p-300
#define GELU_FUSED_TINY_F32 0x1p-30f

/* silu and silu_grad: below ZERO -0; silu_grad above ONE answers 1. */
#define SILU_ZERO_F64 -800.0
#define SILU_GRAD_ONE_F64 50.0
#define SILU_ZERO_F32 -110.0f
#define SILU_GRAD_ONE_F32 25.0f

#endif /* MICA_MATH_CONSTS_H */
