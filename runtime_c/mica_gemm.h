/* mica_gemm.h: deterministic matrix products (row-major GEMM).
 *
 * C = op(A) op(B), or C += op(A) op(B) when `accumulate`, with
 *   A(i,p) = trans_a ? a[p*lda + i] : a[i*lda + p]     op(A) is (m,k)
 *   B(p,j) = trans_b ? b[j*ldb + p] : b[p*ldb + j]     op(B) is (k,n)
 * and every element computed exactly as
 *   acc = 0; for p = 0..k-1: acc = acc + A(i,p)*B(p,j)   (round, then round)
 *   c[i*ldc + j] = accumulate ? c[i*ldc + j] + acc : acc
 * so results are bit-identical across runs, thread counts, optimisation
 * levels, instruction sets and the two architectures (see mica_gemm.c).
 *
 * The _reference_ versions are the plain triple loop: the test oracle.
 */
#ifndef MICA_GEMM_H
#define MICA_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#define MICA_GEMM(T, S)                                                                                           \
    void mica_gemm_##S(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,      \
                       const T *b, int64_t ldb, T *c, int64_t ldc, bool accumulate);                              \
    void mica_gemm_reference_##S(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a,         \
                                 int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, bool accumulate);
MICA_GEMM(float, f32)
MICA_GEMM(double, f64)
#undef MICA_GEMM

/* The instruction set the fast path runs on: "avx512", "avx2", "sse2" or
 * "neon". On x86_64 it is chosen once from CPUID (mica_cpu.h); MICA_ISA or
 * MICA_GEMM_ISA=sse2|avx2|avx512 caps it (all give the same bits; tests use
 * this to check that). */
const char *mica_gemm_isa(void);

#endif /* MICA_GEMM_H */
