/* Quantized tensors (LANGUAGE.md section 10): float tensors to int8/uint8 and
 * back. Every step is one IEEE operation or exact integer arithmetic, so the
 * bits are the same on every target and tier.
 *
 *   Quantize:     q[i] = clamp(roundeven(x[i] / scale) + zero), the division in x's type
 *   Dequantize:   out[i] = (float(q[i] - zero)) * scale, in the scale's type
 *   QuantizeRows: per row, scale = max |x| / 127 and zero 0, into int8
 * and the one pass the compiler makes of an exact integer product's
 * rescaling back to float, Mul(float(p), Outer(a, b)).
 */
#include "mica.h"
#include "mica_cpu.h"

#include <string.h>

/* v to the nearest integer, halves to even; |v| below 2^62, so the cast is defined.
 * v - i is exact: i is v truncated, within one of it. */
static int64_t nearest_even(double v) {
    int64_t i = (int64_t)v;
    double rest = v - (double)i;
    if (rest > 0.5 || (rest == 0.5 && (i & 1))) i += 1;
    if (rest < -0.5 || (rest == -0.5 && (i & 1))) i -= 1;
    return i;
}

/* The quantized value of v (x / scale, already in x's type): the integer range
 * [low, high] saturates, beyond any magnitude the cast could not take. */
static int64_t quantized(double v, int64_t zero, int64_t low, int64_t high, int line) {
    if (v != v) mica_trap(line, "Quantize of a NaN");
    if (v > 0x1p61) return high;
    if (v < -0x1p61) return low;
    int64_t r = nearest_even(v) + zero;
    return r < low ? low : r > high ? high : r;
}

/* The device's Quantize checks its host scale here too (mica_gpu_tape.c). */
void mica_quantize_check_scale(double scale, int line) {
    if (scale == 0.0 || scale != scale) mica_trapf(line, "Quantize with scale %g: the scale must be a nonzero number", scale);
}

#define MICA_QUANTIZE(T, S, Q, QS, LOW, HIGH)                                                                    \
    void mica_quantize_##QS##_##S(Q *q, const T *x, int64_t n, T scale, int64_t zero, int line) {             \
        mica_quantize_check_scale(scale, line);                                                              \
        for (int64_t i = 0; i < n; i++) q[i] = (Q)quantized((double)(x[i] / scale), zero, LOW, HIGH, line); \
    }                                                                                                        \
    void mica_dequantize_##S##_##QS(T *out, const Q *q, int64_t n, T scale, int64_t zero) {                    \
        for (int64_t i = 0; i < n; i++) out[i] = (T)((int64_t)q[i] - zero) * scale;                          \
    }
MICA_QUANTIZE(double, f64, int8_t, i8, -128, 127)
MICA_QUANTIZE(float, f32, int8_t, i8, -128, 127)
MICA_QUANTIZE(double, f64, uint8_t, u8, 0, 255)
MICA_QUANTIZE(float, f32, uint8_t, u8, 0, 255)
#undef MICA_QUANTIZE

/* QuantizeRows and the rescaling, compiled for each instruction set
 * (mica_cpu.h) and chosen once: they run on every activation of an int8
 * model, a few rows of a few dozen elements at a time, so each kernel takes
 * all the rows in one call. Every set does the same IEEE operations on each
 * element, so all give the same bits.
 *
 * The largest |x| of a row, or a NaN if the row holds one. Eight running
 * maxima, combined at the end, let the loop vectorize: a maximum is the same
 * whatever the order. NaNs are kept apart (x - x is 0 for every finite x).
 *
 * A row's quotients x / scale are rounded, halves to even, by adding and
 * taking back 1.5 * 2^(mantissa bits): the sum keeps no bits below the unit
 * and the default rounding mode (which the runtime never changes) rounds it
 * to even. Exact for |v| < 2^22 in float32, which the row's maximum bounds
 * (below); no branches, so the loop vectorizes in the element's own type.
 * A row of zeros gets scale 0 and zeros: Dequantize gives it back exactly.
 * The row's maximum bounds every |row[c] / scale| near 127, or near 254 when
 * the scale is subnormal and lost bits, so the small rounding applies and a
 * clamp to +-127 is the only saturation. The kernel stops at a row holding a
 * NaN or an infinity and returns its index (-1: none), for the caller to trap.
 *
 * The rescaling makes the roundings of its three ops in their order: the
 * conversion, a[i] * b[j], the product. */
#define MICA_ROW_KERNELS(T, S, ISA, MAGIC)                                                          \
    static T row_largest_##S##_##ISA(const T *row, int64_t cols) {                                  \
        T lane[8] = {0}, probe[8] = {0};                                                            \
        int64_t c = 0;                                                                              \
        for (; c + 8 <= cols; c += 8)                                                               \
            for (int l = 0; l < 8; l++) {                                                           \
                T a = row[c + l] < 0 ? -row[c + l] : row[c + l];                                    \
                lane[l] = a > lane[l] ? a : lane[l];                                                \
                probe[l] += row[c + l] - row[c + l];                                                \
            }                                                                                       \
        for (; c < cols; c++) {                                                                     \
            T a = row[c] < 0 ? -row[c] : row[c];                                                    \
            lane[0] = a > lane[0] ? a : lane[0];                                                    \
            probe[0] += row[c] - row[c];                                                            \
        }                                                                                           \
        T largest = 0, nan = 0;                                                                     \
        for (int l = 0; l < 8; l++) {                                                               \
            largest = lane[l] > largest ? lane[l] : largest;                                        \
            nan += probe[l];                                                                        \
        }                                                                                           \
        if (nan == 0) return largest;                                                               \
        for (c = 0; c < cols; c++) /* a NaN, or an infinity: say which */                           \
            if (row[c] != row[c]) return row[c];                                                    \
        return (T)__builtin_inf();                                                                  \
    }                                                                                               \
    static int64_t quantize_rows_##S##_##ISA(int8_t *q, T *scales, const T *x, int64_t rows, int64_t cols) { \
        for (int64_t r = 0; r < rows; r++) {                                                        \
            const T *row = x + r * cols;                                                            \
            int8_t *out = q + r * cols;                                                             \
            T largest = row_largest_##S##_##ISA(row, cols);                                         \
            if (!(largest - largest == 0)) return r;                                                \
            T scale = largest / 127;                                                                \
            scales[r] = scale;                                                                      \
            if (scale == 0) memset(out, 0, (size_t)cols);                                           \
            else                                                                                    \
                for (int64_t c = 0; c < cols; c++) {                                                \
                    T v = (row[c] / scale + MAGIC) - MAGIC;                                         \
                    v = v < -127 ? -127 : v;                                                        \
                    v = v > 127 ? 127 : v;                                                          \
                    out[c] = (int8_t)(int32_t)v;                                                    \
                }                                                                                   \
        }                                                                                           \
        return -1;                                                                                  \
    }                                                                                               \
    static void rescale_##S##_##ISA(T *out, const int32_t *p, const T *a, const T *b, int64_t m, int64_t n) { \
        for (int64_t i = 0; i < m; i++)                                                             \
            for (int64_t j = 0; j < n; j++) out[i * n + j] = (T)p[i * n + j] * (a[i] * b[j]);       \
    }
#define MICA_ROW_KERNELS_BOTH(ISA)                                                    \
    MICA_ROW_KERNELS(double, f64, ISA, 0x1.8p52)                                      \
    MICA_ROW_KERNELS(float, f32, ISA, 0x1.8p23f)

MICA_ROW_KERNELS_BOTH(base)
#if defined(__x86_64__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
MICA_ROW_KERNELS_BOTH(avx2)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw"))), apply_to = function)
MICA_ROW_KERNELS_BOTH(avx512)
#pragma clang attribute pop
#define BY_LEVEL(name) {name##_base, name##_avx2, name##_avx512} /* indexed by mica_isa_level */
#else
#define BY_LEVEL(name) {name##_base}
#endif
#undef MICA_ROW_KERNELS_BOTH
#undef MICA_ROW_KERNELS

static int rows_pick(void) {
    return mica_isa_level(NULL);
}

static int rows_level(void) {
    static int chosen = -1;
    return mica_chosen_once(&chosen, rows_pick);
}

#define MICA_QUANTIZE_ROWS(T, S)                                                                                 \
    void mica_quantize_rows_i8_##S(int8_t *q, T *scales, const T *x, int64_t rows, int64_t cols, int line) {  \
        static int64_t (*const by_level[])(int8_t *, T *, const T *, int64_t, int64_t) = BY_LEVEL(quantize_rows_##S); \
        int64_t bad = by_level[rows_level()](q, scales, x, rows, cols);                                      \
        if (bad < 0) return;                                                                                 \
        T largest = row_largest_##S##_base(x + bad * cols, cols);                                            \
        if (largest != largest) mica_trap(line, "QuantizeRows of a NaN");                                    \
        mica_trap(line, "QuantizeRows of an infinity");                                                      \
    }                                                                                                        \
    void mica_rescale_i32_##S(T *out, const int32_t *p, const T *a, const T *b, int64_t m, int64_t n) {        \
        static void (*const by_level[])(T *, const int32_t *, const T *, const T *, int64_t, int64_t) =         \
            BY_LEVEL(rescale_##S);                                                                           \
        by_level[rows_level()](out, p, a, b, m, n);                                                          \
    }
MICA_QUANTIZE_ROWS(double, f64)
MICA_QUANTIZE_ROWS(float, f32)
#undef MICA_QUANTIZE_ROWS
