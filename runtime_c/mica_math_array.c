/* mica_math_array.c: the elementary functions over arrays, bit for bit the
 * scalar ones (mica_math_array.h).
 *
 * Why the bits agree. Each lane of mica_math_array.inc repeats the scalar
 * function's operations one by one (that file gives the rules for turning
 * branches into selects), and
 *   - vector and scalar + - * / are the same IEEE operations, correctly
 *     rounded to nearest-even: SSE2/AVX2/AVX-512 use the MXCSR the scalar
 *     SSE2 code uses, NEON the FPCR of the scalar aarch64 code; neither
 *     flushes subnormals (Mica never sets FTZ or DAZ);
 *   - nothing is fused by the compiler: the pragma below forbids
 *     contraction even if a build leaves -ffp-contract=on, and there is no
 *     fast-math. The one fma written out, gelu's exact products (VFMA: AVX2,
 *     AVX-512, NEON), computes the exact rounding error Dekker's algorithm
 *     computes, and runs only where that error is a float (two_prod);
 *   - integer steps ((int)kd, (T)k) give the same integers: the kernel
 *     reads (int)kd from the bits of kd + SHIFT (whose low bits hold it) and
 *     makes (T)k the reverse way, exactly (SSE2 and AVX2 cannot convert
 *     between double and int64; float takes the same path).
 * tests/test_math_array.py checks every function against the scalar one on
 * about a million inputs, for every instruction set, at -O0 and -O2, and on
 * aarch64.
 *
 * Instruction sets: the kernel is compiled at 16 bytes (SSE2 on x86_64, the
 * baseline; NEON on aarch64) and, on x86_64, at 32 bytes for AVX2 and 64
 * for AVX-512F; the set is chosen once through mica_cpu.h (the GEMM's
 * choice; MICA_ISA caps it).
 */
#pragma STDC FP_CONTRACT OFF

#include "mica_math_array.h"
#include "mica_cpu.h"
#include "mica_math.h"
#include "mica_math_consts.h"

#include <stdint.h>
#include <string.h>

// V(name): name in the instruction set being compiled (VNAME).
#define VCAT2(x, y) x##_##y
#define VCAT(x, y) VCAT2(x, y)
#define V(name) VCAT(name, VNAME)

#define VB 16
#define VNAME base
#if defined(__aarch64__)
#define VFMA 1 /* NEON has fma (fmla) */
#else
#define VFMA 0 /* SSE2 has none */
#endif
#include "mica_math_array_kernel.h"

#if defined(__x86_64__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define VB 32
#define VNAME avx2
#define VFMA 1
#include "mica_math_array_kernel.h"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
#define VB 64
#define VNAME avx512
#define VFMA 1 /* AVX-512F brings FMA */
#include "mica_math_array_kernel.h"
#pragma clang attribute pop

#define BY_LEVEL(name) {name##_base, name##_avx2, name##_avx512} /* indexed by mica_isa_level */
#else
#define BY_LEVEL(name) {name##_base}
#endif

static int math_array_level(void) {
    static int chosen = -1; /* a race here is benign: every thread picks the same */
    int c = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
    if (c < 0) {
        c = mica_isa_level(NULL);
        __atomic_store_n(&chosen, c, __ATOMIC_RELAXED);
    }
    return c;
}

const char *mica_math_array_isa(void) {
    return mica_isa_name(math_array_level());
}

// One table per function, so a program links the kernels of the functions it uses only.
#define MICA_MATH_ARRAY_DEFINE(F, S, T)                                             \
    void mica_##F##_array_##S(T *out, const T *x, int64_t n) {                      \
        static void (*const by_level[])(T *, const T *, int64_t) = BY_LEVEL(F##_array_##S); \
        by_level[math_array_level()](out, x, n);                                    \
    }
#define MICA_MATH_ARRAY_BOTH(F) MICA_MATH_ARRAY_DEFINE(F, f64, double) MICA_MATH_ARRAY_DEFINE(F, f32, float)
MICA_MATH_ARRAY_FUNCTIONS(MICA_MATH_ARRAY_BOTH)
#undef MICA_MATH_ARRAY_BOTH
#undef MICA_MATH_ARRAY_DEFINE

#define MICA_MATH_BOTH_DEFINE(F, S, T)                                              \
    void mica_##F##_both_array_##S(T *out, T *grad, const T *x, int64_t n) {        \
        static void (*const by_level[])(T *, T *, const T *, int64_t) = BY_LEVEL(F##_both_array_##S); \
        by_level[math_array_level()](out, grad, x, n);                              \
    }
#define MICA_MATH_BOTH_OF(F) MICA_MATH_BOTH_DEFINE(F, f64, double) MICA_MATH_BOTH_DEFINE(F, f32, float)
MICA_MATH_BOTH_FUNCTIONS(MICA_MATH_BOTH_OF)
#undef MICA_MATH_BOTH_OF
#undef MICA_MATH_BOTH_DEFINE
