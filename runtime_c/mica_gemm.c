/* mica_gemm.c: matrix products (a plain reference; the blocked kernels replace it).
 *
 * Determinism contract: for every (i, j), acc = 0; for p = 0..k-1 in order,
 * acc = acc + A(i,p) * B(p,j), each product and sum rounded on its own;
 * then C(i,j) = accumulate ? C(i,j) + acc : acc.
 */
#include "mica.h"

#define GEMM(T, S)                                                                                         \
    void mica_gemm_##S(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda, \
                       const T *b, int64_t ldb, T *c, int64_t ldc, bool accumulate) {                      \
        for (int64_t i = 0; i < m; i++)                                                                    \
            for (int64_t j = 0; j < n; j++) {                                                              \
                T acc = 0;                                                                                 \
                for (int64_t p = 0; p < k; p++)                                                            \
                    acc = acc + (trans_a ? a[p * lda + i] : a[i * lda + p]) *                              \
                                    (trans_b ? b[j * ldb + p] : b[p * ldb + j]);                           \
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc : acc;                                  \
            }                                                                                              \
    }
GEMM(float, f32)
GEMM(double, f64)
