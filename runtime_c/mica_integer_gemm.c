/* mica_integer_gemm.c: exact integer matrix products, int8 or uint8 times int8 into int32.
 *
 *   out (m, n) = a (m, k) * b (k, n), all row-major; a int8 or uint8, b int8.
 *
 * Every product is at most 2^15 in magnitude and k <= 65536 keeps every sum,
 * partial or whole, inside int32: the result is exact, so any summation order
 * gives the same bits and a fast kernel need only be correct. That frees the
 * kernels to split k into blocks, to sum 2 or 4 products in one instruction,
 * and to shift a's range (below), which the float GEMM's contract forbids.
 *
 * Structure (after BLIS, like mica_gemm.c but smaller): b is packed, KC deep
 * at a time, into panels nr columns wide in groups of `group` consecutive k,
 * so that one 32-bit word of a panel feeds one multiply-add instruction;
 * padding is zero in b, so whatever a holds there adds nothing. b is packed
 * once and kept (mica_integer_pack.h): an int8 model's weights are packed
 * when first multiplied by, not for every token. A tile function computes
 * one mr x nr tile in registers from a's rows and adds it into out.
 * The byte kernels read a's rows where they lie when k is a multiple of 4
 * (their shift of a's range is one xor on each word they load); otherwise,
 * and for the int16 kernels, a MC x KC block of a is first copied into rows
 * padded to whole groups (and widened to int16). A tile of fewer rows than
 * mr, or of columns that fit half the vectors, runs a kernel specialized to
 * that shape: sampling multiplies a few rows at a time.
 *
 * Kernels, picked at run time (mica_cpu.h; MICA_ISA caps the level, and
 * MICA_INTEGER_GEMM_ISA=<kernel name> caps the choice among these):
 *   sse2        plain C on int16 packs (the compiler vectorizes it)
 *   avx2        bytes widened to int16 when packed, vpmaddwd: 2 products per lane
 *   avxvnni     vpdpbusd on ymm: 4 u8 x s8 products per lane
 *   avx512vnni  vpdpbusd on zmm
 *   neon        int16 packs, vmlal (widening multiply-add)
 *   dotprod     sdot: 4 s8 x s8 products per lane
 * vpdpbusd takes u8 x s8 and sdot s8 x s8, so the other kind of a is shifted
 * into range when packed (a + 128, or a - 128) and the shift's share, the
 * offset times b's column sums (at most 2^30), is taken off at the end: exact.
 *
 * The plain reference loops stay at the bottom, as the tests' oracle.
 */
#include "mica.h"
#include "mica_cpu.h"
#include "mica_integer_pack.h"

#include <stdlib.h>
#include <string.h>

#define KC 512 /* depth of a packed block: a multiple of every group */
#define MC 96  /* rows of a copied block of a: a multiple of every mr */
#define MR_MAX 8
#define NR_MAX 32

/* Where a tile goes: its rows x cols (how many of mr x nr are real) at out,
 * rows n apart; stored on the first KC block, less take[c] (the shift's
 * share, below; NULL when a is not shifted), and added on the later ones. */
typedef struct {
    int32_t *out;
    int64_t n;
    int rows, cols, first;
    const int32_t *take;
} tile_out;

/* a: the tile's mr rows, each at the block's first depth (a row past the
 * product points at zeros); flip: xor-ed into each 32-bit word of a byte
 * kernel's a; bp: b panel, groups x nr words. */
typedef void tile_fn(const void *const *a, uint32_t flip, const void *bp, int64_t groups, const tile_out *to);

typedef struct {
    const char *name;
    int mr, nr, group;
    int wide;                 /* packs hold int16 (else bytes) */
    int offset_i8, offset_u8; /* added to a when packed, by a's kind */
    tile_fn *tile;
} int_kernel;

/* ------------------------------------------------------------ tiles */

static int32_t word_at(const void *p) {
    int32_t w;
    memcpy(&w, p, 4);
    return w;
}

// A tile computed into memory (mr x nr, nr apart), into out as `to` says.
static void finish(const tile_out *to, const int32_t *tile, int nr) {
    for (int r = 0; r < to->rows; r++) {
        int32_t *o = to->out + r * to->n;
        const int32_t *t = tile + r * nr;
        if (!to->first)
            for (int c = 0; c < to->cols; c++) o[c] += t[c];
        else if (to->take)
            for (int c = 0; c < to->cols; c++) o[c] = t[c] - to->take[c];
        else memcpy(o, t, (size_t)to->cols * sizeof(int32_t));
    }
}

// Calls BODY(rows, ...) with rows a constant from 1 to the kernel's mr (6 or
// 8), so that each shape of tile keeps only the accumulators it needs and
// loops over nothing else.
#define ROWS_UP_TO_5(BODY, ...)                                                               \
    case 1: BODY(1, __VA_ARGS__); break;                                                      \
    case 2: BODY(2, __VA_ARGS__); break;                                                      \
    case 3: BODY(3, __VA_ARGS__); break;                                                      \
    case 4: BODY(4, __VA_ARGS__); break;                                                      \
    case 5: BODY(5, __VA_ARGS__); break;
#define ROWS_CASES_6(BODY, rows, ...)                                                         \
    switch (rows) {                                                                           \
        ROWS_UP_TO_5(BODY, __VA_ARGS__)                                                       \
    default: BODY(6, __VA_ARGS__); break;                                                     \
    }
#define ROWS_CASES_8(BODY, rows, ...)                                                         \
    switch (rows) {                                                                           \
        ROWS_UP_TO_5(BODY, __VA_ARGS__)                                                       \
    case 6: BODY(6, __VA_ARGS__); break;                                                      \
    case 7: BODY(7, __VA_ARGS__); break;                                                      \
    default: BODY(8, __VA_ARGS__); break;                                                     \
    }

// 4 x 8, int16 rows, one k per group
__attribute__((unused)) static void tile_base(const void *const *a, uint32_t flip, const void *bp, int64_t groups,
                                              const tile_out *to) {
    (void)flip;
    const int16_t *b = bp;
    int32_t acc[4][8] = {{0}};
    for (int64_t g = 0; g < groups; g++)
        for (int r = 0; r < 4; r++) {
            int32_t x = ((const int16_t *)a[r])[g];
            for (int c = 0; c < 8; c++) acc[r][c] += x * b[g * 8 + c];
        }
    finish(to, &acc[0][0], 8);
}

#if defined(__x86_64__)
#include <immintrin.h>

// 6 x 16: a word is two int16 of a row (k, k+1); b holds 8 columns of such
// pairs per vector. vpmaddwd sums each pair into int32 (no saturation: |sum| <= 2^15).
__attribute__((target("avx2"))) static void tile_avx2(const void *const *a, uint32_t flip, const void *bp,
                                                      int64_t groups, const tile_out *to) {
    (void)flip;
    int32_t tile[6 * 16];
    const int16_t *b = bp;
    __m256i acc[6][2];
    for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + g * 32));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + g * 32 + 16));
        for (int r = 0; r < 6; r++) {
            __m256i x = _mm256_set1_epi32(word_at((const int16_t *)a[r] + g * 2));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
        }
    }
    for (int r = 0; r < 6; r++) {
        _mm256_storeu_si256((__m256i *)(tile + r * 16), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(tile + r * 16 + 8), acc[r][1]);
    }
    finish(to, tile, 16);
}

// One row's vector of 8 columns (from column c0) into out: the lanes past
// cols are neither read nor written.
__attribute__((target("avx2"), always_inline)) static inline void out_avx(const tile_out *to, int r, int c0,
                                                                           __m256i v) {
    __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(to->cols - c0), lanes);
    int32_t *o = to->out + r * to->n + c0;
    if (!to->first) v = _mm256_add_epi32(v, _mm256_maskload_epi32(o, mask));
    else if (to->take) v = _mm256_sub_epi32(v, _mm256_maskload_epi32(to->take + c0, mask));
    _mm256_maskstore_epi32(o, mask, v);
}

// ROWS x (8 or 16): a word is four u8 of a row; b holds 8 columns of four s8 per vector.
__attribute__((target("avx2,avxvnni"), always_inline)) static inline void
avxvnni_rows(const int ROWS, const int halves, const void *const *a, uint32_t flip, const uint8_t *b, int64_t groups,
             const tile_out *to) {
    __m256i acc[6][2], f = _mm256_set1_epi32((int32_t)flip);
    for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + g * 64));
        __m256i b1 = halves > 1 ? _mm256_loadu_si256((const __m256i *)(b + g * 64 + 32)) : b0;
        for (int r = 0; r < ROWS; r++) {
            __m256i x = _mm256_xor_si256(_mm256_set1_epi32(word_at((const uint8_t *)a[r] + g * 4)), f);
            acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], x, b0);
            if (halves > 1) acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < ROWS; r++) {
        out_avx(to, r, 0, acc[r][0]);
        if (halves > 1) out_avx(to, r, 8, acc[r][1]);
    }
}

#define AVXVNNI_ROWS(ROWS, halves) avxvnni_rows(ROWS, halves, a, flip, bp, groups, dest)

__attribute__((target("avx2,avxvnni"))) static void tile_avxvnni(const void *const *a, uint32_t flip, const void *bp,
                                                                int64_t groups, const tile_out *to) {
    const tile_out here = *to, *dest = &here; /* a copy the stores into out cannot alias */
    if (here.cols > 8) ROWS_CASES_6(AVXVNNI_ROWS, here.rows, 2)
    else ROWS_CASES_6(AVXVNNI_ROWS, here.rows, 1)
}

// One row's vector of 16 columns (from column c0) into out, as out_avx.
__attribute__((target("avx512f"), always_inline)) static inline void out_avx512(const tile_out *to, int r, int c0,
                                                                                __m512i v) {
    int left = to->cols - c0;
    __mmask16 mask = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
    int32_t *o = to->out + r * to->n + c0;
    if (!to->first) v = _mm512_add_epi32(v, _mm512_maskz_loadu_epi32(mask, o));
    else if (to->take) v = _mm512_sub_epi32(v, _mm512_maskz_loadu_epi32(mask, to->take + c0));
    _mm512_mask_storeu_epi32(o, mask, v);
}

// ROWS x (16 or 32): as avxvnni, 16 columns per vector
__attribute__((target("avx512f,avx512bw,avx512vnni"), always_inline)) static inline void
avx512vnni_rows(const int ROWS, const int halves, const void *const *a, uint32_t flip, const uint8_t *b,
                int64_t groups, const tile_out *to) {
    __m512i acc[8][2], f = _mm512_set1_epi32((int32_t)flip);
    for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (int64_t g = 0; g < groups; g++) {
        __m512i b0 = _mm512_loadu_si512(b + g * 128);
        __m512i b1 = halves > 1 ? _mm512_loadu_si512(b + g * 128 + 64) : b0;
        for (int r = 0; r < ROWS; r++) {
            __m512i x = _mm512_xor_si512(_mm512_set1_epi32(word_at((const uint8_t *)a[r] + g * 4)), f);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, b0);
            if (halves > 1) acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < ROWS; r++) {
        out_avx512(to, r, 0, acc[r][0]);
        if (halves > 1) out_avx512(to, r, 16, acc[r][1]);
    }
}

#define AVX512VNNI_ROWS(ROWS, halves) avx512vnni_rows(ROWS, halves, a, flip, bp, groups, dest)

__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void tile_avx512vnni(const void *const *a, uint32_t flip,
                                                                                   const void *bp, int64_t groups,
                                                                                   const tile_out *to) {
    const tile_out here = *to, *dest = &here; /* a copy the stores into out cannot alias */
    if (here.cols > 16) ROWS_CASES_8(AVX512VNNI_ROWS, here.rows, 2)
    else ROWS_CASES_8(AVX512VNNI_ROWS, here.rows, 1)
}

static const int_kernel kernels[] = {
    {"sse2", 4, 8, 1, 1, 0, 0, tile_base},
    {"avx2", 6, 16, 2, 1, 0, 0, tile_avx2},
    {"avxvnni", 6, 16, 4, 0, 128, 0, tile_avxvnni},
    {"avx512vnni", 8, 32, 4, 0, 128, 0, tile_avx512vnni},
};

// whether kernels[i] may run: the CPU has it and the MICA_ISA level allows it
static int kernel_allowed(int i, int level) {
    switch (i) {
    case 1: return level >= MICA_ISA_AVX2;
    case 2: return level >= MICA_ISA_AVX2 && mica_cpu_has(MICA_CPU_AVX_VNNI);
    case 3: return level >= MICA_ISA_AVX512 && mica_cpu_has(MICA_CPU_AVX512_VNNI);
    default: return 1;
    }
}

#elif defined(__aarch64__)
#include <arm_neon.h>

// 8 x 8: a group is one k; a's rows hold int16, b 8 columns.
static void tile_neon(const void *const *a, uint32_t flip, const void *bp, int64_t groups, const tile_out *to) {
    (void)flip;
    int32_t tile[8 * 8];
    const int16_t *b = bp;
    int32x4_t acc[8][2];
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g++) {
        int16x8_t bv = vld1q_s16(b + g * 8);
        int16x4_t lo = vget_low_s16(bv);
        for (int r = 0; r < 8; r++) {
            int16_t x = ((const int16_t *)a[r])[g];
            acc[r][0] = vmlal_n_s16(acc[r][0], lo, x);
            acc[r][1] = vmlal_high_n_s16(acc[r][1], bv, x);
        }
    }
    for (int r = 0; r < 8; r++) {
        vst1q_s32(tile + r * 8, acc[r][0]);
        vst1q_s32(tile + r * 8 + 4, acc[r][1]);
    }
    finish(to, tile, 8);
}

// ROWS x (4 or 8): a row's word of four s8, in every lane, against b's 4
// columns of four s8 per vector.
__attribute__((target("dotprod"), always_inline)) static inline void dotprod_rows(const int ROWS, const int halves,
                                                                                  const void *const *a, uint32_t flip,
                                                                                  const int8_t *b, int64_t groups,
                                                                                  const tile_out *to) {
    int32_t tile[8 * 8];
    int32x4_t acc[8][2];
    for (int r = 0; r < ROWS; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g++) {
        int8x16_t b0 = vld1q_s8(b + g * 32), b1 = halves > 1 ? vld1q_s8(b + g * 32 + 16) : b0;
        for (int r = 0; r < ROWS; r++) {
            uint32_t word = (uint32_t)word_at((const uint8_t *)a[r] + g * 4) ^ flip;
            int8x16_t x = vreinterpretq_s8_u32(vdupq_n_u32(word));
            acc[r][0] = vdotq_s32(acc[r][0], b0, x);
            if (halves > 1) acc[r][1] = vdotq_s32(acc[r][1], b1, x);
        }
    }
    for (int r = 0; r < ROWS; r++) {
        vst1q_s32(tile + r * 8, acc[r][0]);
        if (halves > 1) vst1q_s32(tile + r * 8 + 4, acc[r][1]);
    }
    finish(to, tile, 8);
}

#define DOTPROD_ROWS(ROWS, halves) dotprod_rows(ROWS, halves, a, flip, bp, groups, to)

__attribute__((target("dotprod"))) static void tile_dotprod(const void *const *a, uint32_t flip, const void *bp,
                                                            int64_t groups, const tile_out *to) {
    if (to->cols > 4) ROWS_CASES_8(DOTPROD_ROWS, to->rows, 2)
    else ROWS_CASES_8(DOTPROD_ROWS, to->rows, 1)
}

static const int_kernel kernels[] = {
    {"neon", 8, 8, 1, 1, 0, 0, tile_neon},
    {"dotprod", 8, 8, 4, 0, 0, -128, tile_dotprod},
};

static int kernel_allowed(int i, int level) {
    (void)level;
    return i == 0 || mica_cpu_has(MICA_CPU_DOTPROD);
}

#else
static const int_kernel kernels[] = {{"base", 4, 8, 1, 1, 0, 0, tile_base}};

static int kernel_allowed(int i, int level) {
    (void)i, (void)level;
    return 1;
}
#endif

#define KERNEL_COUNT ((int)(sizeof kernels / sizeof kernels[0]))

/* ------------------------------------------------------------ dispatch */

// The best allowed kernel, none above the one MICA_INTEGER_GEMM_ISA names.
static int integer_pick(void) {
    int level = mica_isa_level(NULL), top = KERNEL_COUNT - 1;
    const char *cap = getenv("MICA_INTEGER_GEMM_ISA");
    for (int i = 0; cap && i < KERNEL_COUNT; i++)
        if (strcmp(cap, kernels[i].name) == 0) top = i;
    while (top > 0 && !kernel_allowed(top, level)) top--;
    return top;
}

static const int_kernel *integer_kernel(void) {
    static int chosen = -1;
    return &kernels[mica_chosen_once(&chosen, integer_pick)];
}

const char *mica_integer_gemm_isa(void) {
    return integer_kernel()->name;
}

/* ------------------------------------------------------------ packing and driver */

// Packing. The kernel's shape is read into locals first: a byte store may
// alias *K, which would reload it.

// b's depths p0 .. p0+kc, all n columns, into nr-column int16 panels of groups
static void pack_b_wide(const int_kernel *K, int16_t *pack, const int8_t *b, int64_t n, int64_t p0, int64_t kc) {
    const int nr = K->nr, group = K->group;
    int64_t depth = (kc + group - 1) / group * group;
    for (int64_t c0 = 0; c0 < n; c0 += nr) {
        int cols = n - c0 < nr ? (int)(n - c0) : nr;
        for (int64_t p = 0; p < depth; p++) {
            int16_t *to = pack + c0 * depth + (p / group) * nr * group + p % group;
            const int8_t *from = b + (p0 + p) * n + c0;
            int c = 0;
            if (p < kc)
                for (; c < cols; c++) to[c * group] = from[c];
            for (; c < nr; c++) to[c * group] = 0;
        }
    }
}

// Four rows' bytes interleaved, 16 columns at a time: out[4c + e] = r[e][c].
// Returns how many columns it did (a multiple of 16); the caller does the rest.
#if defined(__x86_64__)
static int interleave_16s(const int8_t *const r[4], int cols, uint8_t *out) {
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(r[0] + c)), b = _mm_loadu_si128((const __m128i *)(r[1] + c));
        __m128i x = _mm_loadu_si128((const __m128i *)(r[2] + c)), y = _mm_loadu_si128((const __m128i *)(r[3] + c));
        __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
        __m128i xy_lo = _mm_unpacklo_epi8(x, y), xy_hi = _mm_unpackhi_epi8(x, y);
        _mm_storeu_si128((__m128i *)(out + c * 4), _mm_unpacklo_epi16(ab_lo, xy_lo));
        _mm_storeu_si128((__m128i *)(out + c * 4 + 16), _mm_unpackhi_epi16(ab_lo, xy_lo));
        _mm_storeu_si128((__m128i *)(out + c * 4 + 32), _mm_unpacklo_epi16(ab_hi, xy_hi));
        _mm_storeu_si128((__m128i *)(out + c * 4 + 48), _mm_unpackhi_epi16(ab_hi, xy_hi));
    }
    return c;
}
#elif defined(__aarch64__)
static int interleave_16s(const int8_t *const r[4], int cols, uint8_t *out) {
    int c = 0;
    for (; c + 16 <= cols; c += 16) {
        uint8x16x2_t ab = vzipq_u8(vld1q_u8((const uint8_t *)r[0] + c), vld1q_u8((const uint8_t *)r[1] + c));
        uint8x16x2_t xy = vzipq_u8(vld1q_u8((const uint8_t *)r[2] + c), vld1q_u8((const uint8_t *)r[3] + c));
        uint16x8x2_t lo = vzipq_u16(vreinterpretq_u16_u8(ab.val[0]), vreinterpretq_u16_u8(xy.val[0]));
        uint16x8x2_t hi = vzipq_u16(vreinterpretq_u16_u8(ab.val[1]), vreinterpretq_u16_u8(xy.val[1]));
        vst1q_u8(out + c * 4, vreinterpretq_u8_u16(lo.val[0]));
        vst1q_u8(out + c * 4 + 16, vreinterpretq_u8_u16(lo.val[1]));
        vst1q_u8(out + c * 4 + 32, vreinterpretq_u8_u16(hi.val[0]));
        vst1q_u8(out + c * 4 + 48, vreinterpretq_u8_u16(hi.val[1]));
    }
    return c;
}
#else
static int interleave_16s(const int8_t *const r[4], int cols, uint8_t *out) {
    (void)r, (void)cols, (void)out;
    return 0;
}
#endif

// b's four depths of a word side by side for each of a panel's nr columns; a
// depth past kc reads a row of zeros. The column sums the shift of a's range
// takes back are added up here, as each byte passes.
static void pack_b_bytes(const int_kernel *K, uint8_t *pack, const int8_t *b, int64_t n, int64_t p0, int64_t kc,
                         int32_t *sums) {
    static const int8_t zeros[NR_MAX] = {0};
    const int nr = K->nr;
    int64_t groups = (kc + 3) / 4;
    for (int64_t c0 = 0; c0 < n; c0 += nr) {
        int cols = n - c0 < nr ? (int)(n - c0) : nr;
        uint8_t *to = pack + c0 * groups * 4;
        for (int64_t g = 0; g < groups; g++, to += nr * 4) {
            const int8_t *r[4];
            for (int e = 0; e < 4; e++) r[e] = g * 4 + e < kc ? b + (p0 + g * 4 + e) * n + c0 : zeros;
            int c = interleave_16s(r, cols, to);
            for (; c < cols; c++) {
                uint32_t word = (uint32_t)(uint8_t)r[0][c] | (uint32_t)(uint8_t)r[1][c] << 8 |
                                (uint32_t)(uint8_t)r[2][c] << 16 | (uint32_t)(uint8_t)r[3][c] << 24;
                memcpy(to + c * 4, &word, 4);
            }
            memset(to + cols * 4, 0, (size_t)(nr - cols) * 4);
            for (int c = 0; c < cols; c++) sums[c0 + c] += r[0][c] + r[1][c] + r[2][c] + r[3][c];
        }
    }
}

// Elements a packed b holds per column: KC for each whole block, the last
// block's depth rounded up to whole groups.
static int64_t packed_depth(const int_kernel *K, int64_t k) {
    return k / KC * KC + (k % KC + K->group - 1) / K->group * K->group;
}

static int64_t padded_width(const int_kernel *K, int64_t n) {
    return (n + K->nr - 1) / K->nr * K->nr;
}

// All of b, block after block (each KC deep but the last), for the kernel
// `layout`, and what the shift of a's range adds to each column, offset * sum
// (at most 2^30), for the one kind of a the kernel shifts: a tile takes it back.
// The int16 kernels never shift a.
static void pack_b_all(const void *layout, void *pack, int32_t *take, const int8_t *b, int64_t k, int64_t n) {
    const int_kernel *K = layout;
    int64_t width = padded_width(K, n);
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC;
        if (K->wide) pack_b_wide(K, (int16_t *)pack + p0 * width, b, n, p0, kc);
        else pack_b_bytes(K, (uint8_t *)pack + p0 * width, b, n, p0, kc, take);
    }
    for (int64_t c = 0; c < n; c++) take[c] *= K->offset_i8 + K->offset_u8;
}

// a's rows i0 .. i0+mc, depths p0 .. p0+kc, as rows `depth` elements apart,
// zero past kc: bytes, or int16 for the int16 kernels.
static void copy_a_rows(const int_kernel *K, void *rows, const void *a, int a_u8, int64_t k, int64_t i0, int64_t mc,
                        int64_t p0, int64_t kc, int64_t depth) {
    for (int64_t r = 0; r < mc; r++) {
        const uint8_t *u = (const uint8_t *)a + (i0 + r) * k + p0;
        const int8_t *s = (const int8_t *)u;
        if (K->wide) {
            int16_t *to = (int16_t *)rows + r * depth;
            for (int64_t p = 0; p < depth; p++) to[p] = (int16_t)(p < kc ? (a_u8 ? u[p] : s[p]) : 0);
        } else {
            uint8_t *to = (uint8_t *)rows + r * depth;
            memcpy(to, u, (size_t)kc);
            memset(to + kc, 0, (size_t)(depth - kc));
        }
    }
}

static void integer_gemm(const int_kernel *K, int32_t *out, const void *a, int a_u8, const int8_t *b, int64_t m,
                         int64_t k, int64_t n) {
    static const int16_t zeros[KC] = {0}; /* the rows of a tile past m */
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        memset(out, 0, (size_t)(m * n) * sizeof(int32_t));
        return;
    }
    const int mr = K->mr, nr = K->nr, group = K->group;
    int offset = a_u8 ? K->offset_u8 : K->offset_i8;
    uint32_t flip = offset ? 0x80808080u : 0;
    size_t size = K->wide ? 2 : 1;
    int64_t width = padded_width(K, n);
    mica_packed_b packed = mica_integer_packed(K, (size_t)(width * packed_depth(K, k)) * size, pack_b_all, b, k, n);
    int in_place = !K->wide && k % 4 == 0;
    int64_t most = ((k < KC ? k : KC) + group - 1) / group * group; /* the deepest block */
    size_t copy_bytes = (size_t)((m < MC ? m : MC) * most) * size;
    void *copy = in_place ? NULL : mica_thread_scratch(MICA_LOCAL_INTEGER_SCRATCH, copy_bytes);
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC, groups = (kc + group - 1) / group, depth = groups * group;
        const char *block = (const char *)packed.pack + (size_t)(p0 * width) * size;
        for (int64_t i0 = 0; i0 < m; i0 += MC) {
            int64_t mc = m - i0 < MC ? m - i0 : MC, stride = k;
            const char *rows = (const char *)a + i0 * k + p0;
            if (!in_place) {
                copy_a_rows(K, copy, a, a_u8, k, i0, mc, p0, kc, depth);
                rows = copy, stride = depth * (int64_t)size;
            }
            const void *row[MC + MR_MAX]; /* the block's rows, then zeros to fill its last tile */
            for (int64_t r = 0; r < mc + mr; r++) row[r] = r < mc ? rows + r * stride : (const void *)zeros;
            for (int64_t c0 = 0; c0 < n; c0 += nr) {
                const char *panel = block + (size_t)(c0 * depth) * size;
                int cols = n - c0 < nr ? (int)(n - c0) : nr;
                for (int64_t r0 = 0; r0 < mc; r0 += mr) {
                    int real = mc - r0 < mr ? (int)(mc - r0) : mr;
                    tile_out to = {out + (i0 + r0) * n + c0, n, real, cols, p0 == 0, offset ? packed.columns + c0 : NULL};
                    K->tile(row + r0, flip, panel, groups, &to);
                }
            }
        }
    }
}

void mica_matmul_i32_i8_i8(int32_t *out, const int8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n) {
    integer_gemm(integer_kernel(), out, a, 0, b, m, k, n);
}

void mica_matmul_i32_u8_i8(int32_t *out, const uint8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n) {
    integer_gemm(integer_kernel(), out, a, 1, b, m, k, n);
}

/* ------------------------------------------------------------ reference */

// The definition itself, kept as the tests' oracle.
#define MICA_INTEGER_MATMUL(A, AS)                                                                           \
    void mica_matmul_i32_##AS##_i8_reference(int32_t *out, const A *a, const int8_t *b, int64_t m, int64_t k, \
                                             int64_t n) {                                                   \
        for (int64_t i = 0; i < m; i++)                                                                      \
            for (int64_t j = 0; j < n; j++) {                                                                \
                int32_t sum = 0;                                                                             \
                for (int64_t p = 0; p < k; p++) sum += (int32_t)a[i * k + p] * (int32_t)b[p * n + j];       \
                out[i * n + j] = sum;                                                                        \
            }                                                                                                \
    }
MICA_INTEGER_MATMUL(int8_t, i8)
MICA_INTEGER_MATMUL(uint8_t, u8)
#undef MICA_INTEGER_MATMUL
