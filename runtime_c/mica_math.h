/* mica_math.h: Mica's own elementary functions, the same bits everywhere.
 *
 * Exp, Log, Tanh, Sigmoid, Gelu, Silu (and the gradients the tape needs),
 * sin and cos print the same digits on x86_64, aarch64 and the GPU, so nothing here
 * calls libm. Every function is built only from IEEE + - * /, comparisons,
 * and integer work on the bits, each operation written out in a fixed
 * order, so a PTX kernel can mirror the C one instruction for instruction
 * (add/sub/mul/div with .rn, never fma). The _f32 functions use float
 * arithmetic only; the _f64 functions use double only.
 *
 * Algorithms (docs/math.md has every constant, every step, and the
 * measured errors; tools/fit_math.py regenerates the polynomials):
 *   exp   x = k*ln2 + r, |r| <= ln2/2, ln2 split hi+lo so k*ln2_hi is exact;
 *         exp(r) = 1 + 2r/(R(r) - r), R(r) = r*(e^r+1)/(e^r-1) = 2 + t*P(t),
 *         t = r^2, P a minimax polynomial (5 terms f64, 2 terms f32);
 *         scale by 2^k through the exponent bits (in two steps near the ends).
 *   log   x = 2^k * m, m in (sqrt2/2, sqrt2]; f = m - 1, s = f/(2+f),
 *         log(m) = f - (f^2/2 - s*(f^2/2 + R(s^2))), R minimax (7 / 4 terms);
 *         k*ln2 added in two parts.
 *   tanh  |x| < 0.55: x + x^3*P(x^2) (11 / 5 terms); otherwise
 *         1 - 2/(exp(2|x|) + 1), with exp's rounding error and that of the
 *         sum carried into the quotient; sign restored at the end.
 *   sigmoid  e = exp(-|x|): 1/(1 + e) for x >= 0, e/(1 + e) below 0, the
 *         rounding of 1 + e put back; a subnormal answer is rounded once.
 *   gelu  0.5*x*(1 + tanh(u)) = x * sigmoid(2u), u = sqrt(2/pi)*(x + 0.044715x^3);
 *         2u is formed in double-length arithmetic (Dekker products, no fma)
 *         so the large |2u| of negative x costs no accuracy.
 *   silu  x * sigmoid(x).
 *   sin, cos  x = k*pi/2 + r, r carried as rh + rl: Cody-Waite below 2^20
 *         (f64) / 2^15 (f32), pi/2 in 4 / 6 parts with k*part exact but the
 *         last; Payne-Hanek above, in integers (64-bit products with 1216
 *         bits of 2/pi), so every finite x is reduced exactly enough; then
 *         fdlibm-style kernels r + r^3*P(r^2) and 1 - r^2/2 + r^4*Q(r^2)
 *         (6 / 4 and 6 / 3 terms) with rl's first-order term, chosen and
 *         signed by k mod 4. Measured under 0.8 ulp everywhere.
 *   powi  binary exponentiation, low bit of |n| first; 1/x^|n| for n < 0.
 *
 * Special cases: nan in, canonical nan out (0x7ff8000000000000 /
 * 0x7fc00000, the same bits on every machine); log(0) = -inf,
 * log(x < 0) = nan; exp overflows to inf and underflows through the
 * subnormals to +0; tanh is exactly +-1 for large |x|; sigmoid stays in
 * [0, 1]; sin(+-0) = +-0, cos(+-0) = 1, sin and cos of +-inf are nan;
 * powi(x, 0) = 1 for every x.
 */
#ifndef MICA_MATH_H
#define MICA_MATH_H

#include <stdint.h>

double mica_exp_f64(double x);
float mica_exp_f32(float x);
double mica_log_f64(double x);
float mica_log_f32(float x);
double mica_tanh_f64(double x);
float mica_tanh_f32(float x);
double mica_sigmoid_f64(double x);
float mica_sigmoid_f32(float x);

/* gelu(x) = 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))) (GPT-2's) and d/dx. */
double mica_gelu_f64(double x);
float mica_gelu_f32(float x);
double mica_gelu_grad_f64(double x);
float mica_gelu_grad_f32(float x);

/* silu(x) = x*sigmoid(x) and d/dx = sigmoid(x)*(1 + x*sigmoid(-x)). */
double mica_silu_f64(double x);
float mica_silu_f32(float x);
double mica_silu_grad_f64(double x);
float mica_silu_grad_f32(float x);

/* sin x and cos x, under 0.8 ulp for every finite x (past 2^20 (f64) /
 * 2^15 (f32) too); sin(-x) = -sin(x) and cos(-x) = cos(x) bit for bit. */
double mica_sin_f64(double x);
double mica_cos_f64(double x);
float mica_sin_f32(float x);
float mica_cos_f32(float x);

/* x^n: r = 1, b = x; for each bit of |n| from the lowest, r = r*b if set,
 * then b = b*b (skipped after the highest bit). n < 0 answers 1/r. */
double mica_powi_f64(double x, int64_t n);
float mica_powi_f32(float x, int64_t n);

#endif /* MICA_MATH_H */
