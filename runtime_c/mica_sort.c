/* mica_sort.c: Sort (LANGUAGE.md section 11): an array of numbers or strings
 * into ascending order, stable, by a bottom-up merge sort, so n log n steps
 * whatever the input and equal keys keep their order.
 *
 * Integers compare by <; floats by < too, with every NaN after every number
 * (NaNs keep their order among themselves, and -0 stays beside +0); strings
 * by their bytes, a prefix before what it begins. Sort(a) merges the keys
 * themselves. Sort(a, b) merges a permutation of the indices instead, by the
 * keys, then applies it to both arrays, so b's elements, of any type, move
 * with a's.
 */
#include "mica.h"

#include <math.h>
#include <string.h>

#define LESS_INTEGER(x, y) ((x) < (y))
#define LESS_FLOAT(x, y) ((x) < (y) || (isnan(y) && !isnan(x)))
#define LESS_STRING(x, y) (mica_str_compare((x), (y)) < 0)

/* One pair of runs, src[lo, mid) and src[mid, hi), into dst, compared by
 * the key KEY reads from each element. The right run's element goes first
 * only when it is strictly less, which keeps the sort stable. */
#define MERGE_RUNS(src, dst, lo, mid, hi, KEY, LESS)                                      \
    do {                                                                                  \
        int64_t i = (lo), j = (mid), k = (lo);                                            \
        while (i < (mid) && j < (hi)) dst[k++] = LESS(KEY(src[j]), KEY(src[i])) ? src[j++] : src[i++]; \
        while (i < (mid)) dst[k++] = src[i++];                                            \
        while (j < (hi)) dst[k++] = src[j++];                                             \
    } while (0)

/* The n elements of data sorted by their keys: passes that merge neighbouring
 * runs of 1, 2, 4, ... elements, back and forth between data and a scratch copy. */
#define MERGE_PASSES(ELEM, data, n, line, KEY, LESS)                                      \
    do {                                                                                  \
        ELEM *src = (data), *dst = mica_scratch((n), sizeof(ELEM), (line)), *scratch = dst; \
        for (int64_t width = 1; width < (n); width *= 2) {                                \
            for (int64_t lo = 0; lo < (n); lo += 2 * width) {                             \
                int64_t mid = lo + width < (n) ? lo + width : (n);                        \
                int64_t hi = lo + 2 * width < (n) ? lo + 2 * width : (n);                 \
                MERGE_RUNS(src, dst, lo, mid, hi, KEY, LESS);                             \
            }                                                                             \
            ELEM *swap = src;                                                             \
            src = dst;                                                                    \
            dst = swap;                                                                   \
        }                                                                                 \
        if (src != (data)) memcpy((data), src, (size_t)(n) * sizeof(ELEM));               \
        mica_free(scratch);                                                               \
    } while (0)

#define ITSELF(x) (x)
#define KEY_AT(i) keys[i] /* in mica_sort_S: the key of index i */

/* Rearrange n elements of `size` bytes so that element i becomes old element order[i]. */
static void permute(void *data, int64_t n, size_t size, const int64_t *order, int line) {
    char *old = mica_scratch(n, size, line), *out = data;
    memcpy(old, data, (size_t)n * size);
    for (int64_t i = 0; i < n; i++) memcpy(out + (size_t)i * size, old + (size_t)order[i] * size, size);
    mica_free(old);
}

#define SORT(S, T, LESS)                                                                  \
    void mica_sort_##S(T *keys, int64_t n, void *other, int64_t other_n, size_t other_size, int line) { \
        if (other == (void *)keys) other = NULL; /* Sort(address a, address a) sorts a */ \
        if (n < 2 && other == NULL) return;                                               \
        if (other == NULL) {                                                              \
            MERGE_PASSES(T, keys, n, line, ITSELF, LESS);                                 \
            return;                                                                       \
        }                                                                                 \
        if (other_n != n)                                                                 \
            mica_trapf(line, "Sort's arrays differ in length: %lld and %lld", (long long)n, (long long)other_n); \
        int64_t *order = mica_scratch(n, sizeof(int64_t), line);                          \
        for (int64_t i = 0; i < n; i++) order[i] = i;                                     \
        MERGE_PASSES(int64_t, order, n, line, KEY_AT, LESS);                              \
        permute(keys, n, sizeof(T), order, line);                                         \
        permute(other, n, other_size, order, line);                                       \
        mica_free(order);                                                                 \
    }

SORT(i64, int64_t, LESS_INTEGER)
SORT(i32, int32_t, LESS_INTEGER)
SORT(i8, int8_t, LESS_INTEGER)
SORT(u8, uint8_t, LESS_INTEGER)
SORT(f32, float, LESS_FLOAT)
SORT(f64, double, LESS_FLOAT)
SORT(str, mica_string, LESS_STRING)
