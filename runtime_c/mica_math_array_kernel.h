/* mica_math_array_kernel.h: the array forms for one instruction set. Not a
 * public header: mica_math_array.c includes it once per instruction set,
 * after defining
 *   VB      vector width in bytes: 16 (SSE2, NEON), 32 (AVX2), 64 (AVX-512)
 *   VNAME   the suffix of this instruction set's names, e.g. avx2
 *   VFMA    1 where the instruction set has a fused multiply-add, else 0
 * and it undefines them at the end. The functions themselves are in
 * mica_math_array.inc, written once for both float types.
 */
#define MICA_PER_FLOAT "mica_math_array.inc"
#include "mica_per_float.h"

#undef VB
#undef VNAME
#undef VFMA
