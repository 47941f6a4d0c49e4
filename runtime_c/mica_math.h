/* mica_math.h: Mica's own elementary functions, the same bits everywhere.
 *
 * The elementwise functions of the table (mica_element_functions.h's
 * MICA_MATH_FUNCTIONS, and the gradients the tape needs), and integer powers,
 * print the same digits on x86_64, aarch64 and the GPU, so nothing here calls
 * libm. Every function is built only from IEEE + - * /, comparisons, and
 * integer work on the bits, each operation written out in a fixed order, so a
 * PTX kernel can mirror the C one instruction for instruction (add/sub/mul/div
 * with .rn, never fma). The _f32 functions use float arithmetic only; the _f64
 * functions use double only. mica_math.inc gives each algorithm beside its
 * code, and docs/math.md every constant, every step and the measured errors
 * (tools/fit_math.py regenerates the polynomials).
 *
 * Special cases: nan in, canonical nan out (0x7ff8000000000000 /
 * 0x7fc00000, the same bits on every machine); the others are each
 * function's own (docs/math.md); powi(x, 0) = 1 for every x.
 */
#ifndef MICA_MATH_H
#define MICA_MATH_H

#include <stdint.h>

#include "mica_element_functions.h"

/* y = f(x) for each function f of the table: mica_exp_f64, mica_exp_f32, ... */
#define MICA_MATH_DECLARE(F)                                                        \
    double mica_##F##_f64(double x);                                                \
    float mica_##F##_f32(float x);
MICA_MATH_FUNCTIONS(MICA_MATH_DECLARE)
#undef MICA_MATH_DECLARE

/* x^n: r = 1, b = x; for each bit of |n| from the lowest, r = r*b if set,
 * then b = b*b (skipped after the highest bit). n < 0 answers 1/r. */
double mica_powi_f64(double x, int64_t n);
float mica_powi_f32(float x, int64_t n);

#endif /* MICA_MATH_H */
