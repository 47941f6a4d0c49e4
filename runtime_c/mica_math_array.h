/* mica_math_array.h: the elementary functions of mica_math.h over arrays.
 *
 *     mica_F_array_S(out, x, n):   out[i] = mica_F_S(x[i]) for 0 <= i < n
 *
 * for each F of MICA_MATH_ARRAY_FUNCTIONS (mica_element_functions.h, from the
 * table of elementwise functions), bit for bit, for every input (nan, infinities, zeros, subnormals, the
 * saturation and underflow edges included), on every instruction set, at
 * every optimisation level and on both architectures: each vector lane
 * performs exactly the scalar function's IEEE operations, in its order,
 * with its constants (mica_math.c stays the reference; mica_math_array.c
 * says how its branches become per-lane selects). They exist for speed only.
 *
 * out and x may be the same array (in place); otherwise they must not overlap.
 * n <= 0 does nothing. The instruction set is chosen once, as for the GEMM
 * (mica_cpu.h; MICA_ISA caps it).
 */
#ifndef MICA_MATH_ARRAY_H
#define MICA_MATH_ARRAY_H

#include <stdint.h>

#include "mica_element_functions.h"

#define MICA_MATH_ARRAY_DECLARE(F)                                                  \
    void mica_##F##_array_f64(double *out, const double *x, int64_t n);            \
    void mica_##F##_array_f32(float *out, const float *x, int64_t n);
MICA_MATH_ARRAY_FUNCTIONS(MICA_MATH_ARRAY_DECLARE)
#undef MICA_MATH_ARRAY_DECLARE

/* out[i] = mica_F_S(x[i]) and grad[i] = mica_F_grad_S(x[i]) in one pass (the
 * two share their work); out or grad may be x, and must not overlap each other. */
#define MICA_MATH_BOTH_DECLARE(F)                                                   \
    void mica_##F##_both_array_f64(double *out, double *grad, const double *x, int64_t n); \
    void mica_##F##_both_array_f32(float *out, float *grad, const float *x, int64_t n);
MICA_MATH_BOTH_FUNCTIONS(MICA_MATH_BOTH_DECLARE)
#undef MICA_MATH_BOTH_DECLARE

/* The instruction set the array forms run on: "sse2", "avx2", "avx512", "neon". */
const char *mica_math_array_isa(void);

#endif /* MICA_MATH_ARRAY_H */
