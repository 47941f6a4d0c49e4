/* mica_tensor.c: plain tensor kernels and dynamic tensor storage.
 *
 * The kernels are written once in mica_tensor_kernels.inc and instantiated
 * here per float type (mica_per_float.h); storage helpers in mica_dynamic.inc
 * per element type.
 */
#include "mica.h"

#include <stdlib.h>
#include <string.h>

/* rows * cols of a dynamic tensor, which must be a count memory could hold. */
int64_t mica_extent_product(int64_t rows, int64_t cols, int line) {
    int64_t count;
    if (rows < 0 || cols < 0) mica_trapf(line, "negative extent [%lld, %lld]", (long long)rows, (long long)cols);
    if (__builtin_mul_overflow(rows, cols, &count))
        mica_trapf(line, "out of memory: [%lld, %lld] elements", (long long)rows, (long long)cols);
    return count;
}

void mica_check_shape(int64_t got, int64_t want, int line, const char *what) {
    if (got != want) mica_trapf(line, "shape mismatch: %lld %s where %lld are needed", (long long)got, what, (long long)want);
}

/* Between the two float types only: the same type needs no conversion. */
void mica_convert_f64_f32(double *out, const float *a, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = (double)a[i];
}

void mica_convert_f32_f64(float *out, const double *a, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = (float)a[i];
}

/* float32(q), float64(q) of an integer tensor: each element as C converts it,
 * to the nearest float (exact for int8, uint8 and, into float64, int32). */
#define MICA_INTEGERS_TO(T, S)                                                                                  \
    void mica_convert_##S##_i8(T *out, const int8_t *a, int64_t n) {                                        \
        for (int64_t i = 0; i < n; i++) out[i] = (T)a[i];                                                   \
    }                                                                                                       \
    void mica_convert_##S##_u8(T *out, const uint8_t *a, int64_t n) {                                       \
        for (int64_t i = 0; i < n; i++) out[i] = (T)a[i];                                                   \
    }                                                                                                       \
    void mica_convert_##S##_i32(T *out, const int32_t *a, int64_t n) {                                      \
        for (int64_t i = 0; i < n; i++) out[i] = (T)a[i];                                                   \
    }                                                                                                       \
    void mica_convert_##S##_i64(T *out, const int64_t *a, int64_t n) {                                      \
        for (int64_t i = 0; i < n; i++) out[i] = (T)a[i];                                                   \
    }
MICA_INTEGERS_TO(double, f64)
MICA_INTEGERS_TO(float, f32)
#undef MICA_INTEGERS_TO

#define MICA_PER_FLOAT "mica_dynamic.inc"
#include "mica_per_float.h"
#define MICA_PER_FLOAT "mica_tensor_kernels.inc"
#include "mica_per_float.h"

#define T int64_t
#define S i64
#include "mica_dynamic.inc"
#undef T
#undef S

#define T int32_t
#define S i32
#include "mica_dynamic.inc"
#undef T
#undef S

#define T int8_t
#define S i8
#include "mica_dynamic.inc"
#undef T
#undef S

#define T uint8_t
#define S u8
#include "mica_dynamic.inc"
#undef T
#undef S
