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
 * Structure (after BLIS, like mica_gemm.c but much smaller): b is packed a
 * KC x NC block at a time into panels nr columns wide, a a MC x KC block at a
 * time into panels mr rows tall, both in groups of `group` consecutive k so
 * that one 32-bit word of a panel feeds one multiply-add instruction; padding
 * is zero in b, so whatever a holds there adds nothing. A tile function
 * computes one mr x nr tile in registers; the driver adds it into out.
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

#include <stdlib.h>
#include <string.h>

#define KC 512 /* depth of a packed block: a multiple of every group */
#define NC 512 /* columns of a packed block of b: a multiple of every nr */
#define MC 96  /* rows of a packed block of a: a multiple of every mr */
#define TILE_MAX (8 * 32)

/* ap: a panel, groups x mr words; bp: b panel, groups x nr words; tile: mr x nr out */
typedef void tile_fn(const void *ap, const void *bp, int64_t groups, int32_t *tile);

typedef struct {
    const char *name;
    int mr, nr, group;
    int wide;                 /* packs hold int16 (else bytes) */
    int offset_i8, offset_u8; /* added to a when packed, by a's kind */
    tile_fn *tile;
} int_kernel;

/* ------------------------------------------------------------ tiles */

// 4 x 8, int16 packs, one k per group
__attribute__((unused)) static void tile_base(const void *ap, const void *bp, int64_t groups, int32_t *tile) {
    const int16_t *a = ap, *b = bp;
    int32_t acc[4][8] = {{0}};
    for (int64_t g = 0; g < groups; g++)
        for (int r = 0; r < 4; r++)
            for (int c = 0; c < 8; c++) acc[r][c] += (int32_t)a[g * 4 + r] * b[g * 8 + c];
    memcpy(tile, acc, sizeof acc);
}

#if defined(__x86_64__)
#include <immintrin.h>

static int32_t word_at(const void *p) {
    int32_t w;
    memcpy(&w, p, 4);
    return w;
}

// 6 x 16: a word is two int16 of a (k, k+1); b holds 8 columns of such pairs per
// vector. vpmaddwd sums each pair into int32 (no saturation: |sum| <= 2^15).
__attribute__((target("avx2"))) static void tile_avx2(const void *ap, const void *bp, int64_t groups,
                                                      int32_t *tile) {
    const int16_t *a = ap, *b = bp;
    __m256i acc[6][2];
    for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + g * 32));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + g * 32 + 16));
        for (int r = 0; r < 6; r++) {
            __m256i x = _mm256_set1_epi32(word_at(a + (g * 6 + r) * 2));
            acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(x, b0));
            acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(x, b1));
        }
    }
    for (int r = 0; r < 6; r++) {
        _mm256_storeu_si256((__m256i *)(tile + r * 16), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(tile + r * 16 + 8), acc[r][1]);
    }
}

// 6 x 16: a word is four u8 of a; b holds 8 columns of four s8 per vector.
__attribute__((target("avx2,avxvnni"))) static void tile_avxvnni(const void *ap, const void *bp, int64_t groups,
                                                                int32_t *tile) {
    const uint8_t *a = ap, *b = bp;
    __m256i acc[6][2];
    for (int r = 0; r < 6; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    for (int64_t g = 0; g < groups; g++) {
        __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + g * 64));
        __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + g * 64 + 32));
        for (int r = 0; r < 6; r++) {
            __m256i x = _mm256_set1_epi32(word_at(a + (g * 6 + r) * 4));
            acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], x, b0);
            acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < 6; r++) {
        _mm256_storeu_si256((__m256i *)(tile + r * 16), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(tile + r * 16 + 8), acc[r][1]);
    }
}

// 8 x 32: as avxvnni, 16 columns per vector
__attribute__((target("avx512f,avx512bw,avx512vnni"))) static void tile_avx512vnni(const void *ap, const void *bp,
                                                                                   int64_t groups, int32_t *tile) {
    const uint8_t *a = ap, *b = bp;
    __m512i acc[8][2];
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
    for (int64_t g = 0; g < groups; g++) {
        __m512i b0 = _mm512_loadu_si512(b + g * 128);
        __m512i b1 = _mm512_loadu_si512(b + g * 128 + 64);
        for (int r = 0; r < 8; r++) {
            __m512i x = _mm512_set1_epi32(word_at(a + (g * 8 + r) * 4));
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], x, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], x, b1);
        }
    }
    for (int r = 0; r < 8; r++) {
        _mm512_storeu_si512(tile + r * 32, acc[r][0]);
        _mm512_storeu_si512(tile + r * 32 + 16, acc[r][1]);
    }
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

// 8 x 8: a group is one k; a holds 8 rows of int16, b 8 columns.
static void tile_neon(const void *ap, const void *bp, int64_t groups, int32_t *tile) {
    const int16_t *a = ap, *b = bp;
    int32x4_t acc[8][2];
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g++) {
        int16x8_t bv = vld1q_s16(b + g * 8);
        int16x4_t lo = vget_low_s16(bv);
        for (int r = 0; r < 8; r++) {
            acc[r][0] = vmlal_n_s16(acc[r][0], lo, a[g * 8 + r]);
            acc[r][1] = vmlal_high_n_s16(acc[r][1], bv, a[g * 8 + r]);
        }
    }
    for (int r = 0; r < 8; r++) {
        vst1q_s32(tile + r * 8, acc[r][0]);
        vst1q_s32(tile + r * 8 + 4, acc[r][1]);
    }
}

// 8 x 8: a word is four s8 of a; b holds 4 columns of four s8 per vector. sdot's
// lane must be a constant, hence the macro rather than a loop over rows.
__attribute__((target("dotprod"))) static void tile_dotprod(const void *ap, const void *bp, int64_t groups,
                                                            int32_t *tile) {
    const int8_t *a = ap, *b = bp;
    int32x4_t acc[8][2];
    for (int r = 0; r < 8; r++) acc[r][0] = acc[r][1] = vdupq_n_s32(0);
    for (int64_t g = 0; g < groups; g++) {
        int8x16_t b0 = vld1q_s8(b + g * 32), b1 = vld1q_s8(b + g * 32 + 16);
        int8x16_t a0 = vld1q_s8(a + g * 32), a1 = vld1q_s8(a + g * 32 + 16);
#define DOT_ROW(r, av, lane)                                   \
    acc[r][0] = vdotq_laneq_s32(acc[r][0], b0, av, lane);      \
    acc[r][1] = vdotq_laneq_s32(acc[r][1], b1, av, lane);
        DOT_ROW(0, a0, 0) DOT_ROW(1, a0, 1) DOT_ROW(2, a0, 2) DOT_ROW(3, a0, 3)
        DOT_ROW(4, a1, 0) DOT_ROW(5, a1, 1) DOT_ROW(6, a1, 2) DOT_ROW(7, a1, 3)
#undef DOT_ROW
    }
    for (int r = 0; r < 8; r++) {
        vst1q_s32(tile + r * 8, acc[r][0]);
        vst1q_s32(tile + r * 8 + 4, acc[r][1]);
    }
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

// Packing. A pack is rewritten for every block, and for the small products of
// an int8 model the packing, not the tile, is most of the time, so each row of
// a (or depth of b) is walked once with no call per element. The kernel's shape
// is read into locals first: a byte store may alias *K, which would reload it.

// int16 packs (sse2, avx2, neon): a's rows i0 .. i0+mc, depths p0 .. p0+kc,
// shifted by offset, into mr-row panels of groups; rows past mc and depths
// past kc are 0 (b is 0 there).
static void pack_a_wide(const int_kernel *K, int16_t *pack, const void *a, int a_u8, int offset, int64_t k,
                        int64_t i0, int64_t mc, int64_t p0, int64_t kc) {
    const int mr = K->mr, group = K->group;
    int64_t groups = (kc + group - 1) / group, depth = groups * group;
    for (int64_t r0 = 0; r0 < mc; r0 += mr)
        for (int r = 0; r < mr; r++) {
            int16_t *to = pack + r0 * depth + r * group;
            int64_t have = r0 + r < mc ? kc : 0, src = (i0 + r0 + r) * k + p0;
            const uint8_t *u = (const uint8_t *)a + src;
            const int8_t *s = (const int8_t *)a + src;
            for (int64_t g = 0, p = 0; g < groups; g++, to += mr * group)
                for (int e = 0; e < group; e++, p++) to[e] = (int16_t)(p < have ? (a_u8 ? u[p] : s[p]) + offset : 0);
        }
}

// b's depths p0 .. p0+kc, columns j0 .. j0+nc, into nr-column int16 panels of groups
static void pack_b_wide(const int_kernel *K, int16_t *pack, const int8_t *b, int64_t n, int64_t p0, int64_t kc,
                        int64_t j0, int64_t nc) {
    const int nr = K->nr, group = K->group;
    int64_t depth = (kc + group - 1) / group * group;
    for (int64_t c0 = 0; c0 < nc; c0 += nr) {
        int cols = nc - c0 < nr ? (int)(nc - c0) : nr;
        for (int64_t p = 0; p < depth; p++) {
            int16_t *to = pack + c0 * depth + (p / group) * nr * group + p % group;
            const int8_t *from = b + (p0 + p) * n + j0 + c0;
            int c = 0;
            if (p < kc)
                for (; c < cols; c++) to[c * group] = from[c];
            for (; c < nr; c++) to[c * group] = 0;
        }
    }
}

// Byte packs (avxvnni, avx512vnni, dotprod) hold four consecutive k per word,
// and a shift by +-128 only flips each byte's top bit: a's full words are one
// 32-bit move and an xor each.
static void pack_a_bytes(const int_kernel *K, uint8_t *pack, const void *a, int offset, int64_t k, int64_t i0,
                         int64_t mc, int64_t p0, int64_t kc) {
    const int mr = K->mr;
    const uint8_t flip = offset ? 0x80 : 0;
    const uint32_t flips = flip * 0x01010101u;
    int64_t groups = (kc + 3) / 4, whole = kc / 4;
    for (int64_t r0 = 0; r0 < mc; r0 += mr)
        for (int r = 0; r < mr; r++) {
            uint8_t *to = pack + r0 * groups * 4 + r * 4;
            if (r0 + r >= mc) {
                for (int64_t g = 0; g < groups; g++, to += mr * 4) memset(to, 0, 4);
                continue;
            }
            const uint8_t *row = (const uint8_t *)a + (i0 + r0 + r) * k + p0;
            int64_t g = 0;
            for (; g < whole; g++, to += mr * 4) {
                uint32_t word;
                memcpy(&word, row + g * 4, 4);
                word ^= flips;
                memcpy(to, &word, 4);
            }
            if (g < groups)
                for (int e = 0; e < 4; e++) to[e] = g * 4 + e < kc ? row[g * 4 + e] ^ flip : 0;
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
// takes back (sums, when not NULL) are added up here, as each byte passes.
static void pack_b_bytes(const int_kernel *K, uint8_t *pack, const int8_t *b, int64_t n, int64_t p0, int64_t kc,
                         int64_t j0, int64_t nc, int32_t *sums) {
    static const int8_t zeros[TILE_MAX] = {0};
    const int nr = K->nr;
    int64_t groups = (kc + 3) / 4;
    for (int64_t c0 = 0; c0 < nc; c0 += nr) {
        int cols = nc - c0 < nr ? (int)(nc - c0) : nr;
        uint8_t *to = pack + c0 * groups * 4;
        for (int64_t g = 0; g < groups; g++, to += nr * 4) {
            const int8_t *r[4];
            for (int e = 0; e < 4; e++) r[e] = g * 4 + e < kc ? b + (p0 + g * 4 + e) * n + j0 + c0 : zeros;
            int c = interleave_16s(r, cols, to);
            for (; c < cols; c++) {
                uint32_t word = (uint32_t)(uint8_t)r[0][c] | (uint32_t)(uint8_t)r[1][c] << 8 |
                                (uint32_t)(uint8_t)r[2][c] << 16 | (uint32_t)(uint8_t)r[3][c] << 24;
                memcpy(to + c * 4, &word, 4);
            }
            memset(to + cols * 4, 0, (size_t)(nr - cols) * 4);
            if (sums)
                for (int c = 0; c < cols; c++) sums[j0 + c0 + c] += r[0][c] + r[1][c] + r[2][c] + r[3][c];
        }
    }
}

static void pack_a(const int_kernel *K, void *pack, const void *a, int a_u8, int offset, int64_t k, int64_t i0,
                   int64_t mc, int64_t p0, int64_t kc) {
    if (K->wide) pack_a_wide(K, pack, a, a_u8, offset, k, i0, mc, p0, kc);
    else pack_a_bytes(K, pack, a, offset, k, i0, mc, p0, kc);
}

// Only byte kernels shift a's range, so only they need b's column sums.
static void pack_b(const int_kernel *K, void *pack, const int8_t *b, int64_t n, int64_t p0, int64_t kc, int64_t j0,
                   int64_t nc, int32_t *sums) {
    if (K->wide) pack_b_wide(K, pack, b, n, p0, kc, j0, nc);
    else pack_b_bytes(K, pack, b, n, p0, kc, j0, nc, sums);
}

// out -= offset * (column sums of b): takes back the shift of a's range
static void unshift(int32_t *out, const int32_t *sums, int offset, int64_t m, int64_t n) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) out[i * n + j] -= offset * sums[j];
}

static void integer_gemm(const int_kernel *K, int32_t *out, const void *a, int a_u8, const int8_t *b, int64_t m,
                         int64_t k, int64_t n) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0) {
        memset(out, 0, (size_t)(m * n) * sizeof(int32_t));
        return;
    }
    int offset = a_u8 ? K->offset_u8 : K->offset_i8;
    size_t size = K->wide ? 2 : 1;
    // sized to the blocks this product has: small products stay cheap (mica_alloc zeroes)
    int64_t depth = ((k < KC ? k : KC) + K->group - 1) / K->group * K->group;
    int64_t rows = ((m < MC ? m : MC) + K->mr - 1) / K->mr * K->mr;
    int64_t cols = ((n < NC ? n : NC) + K->nr - 1) / K->nr * K->nr;
    void *ap = mica_alloc((size_t)(rows * depth) * size, 0), *bp = mica_alloc((size_t)(cols * depth) * size, 0);
    int32_t *sums = offset ? mica_alloc_elements(n, sizeof(int32_t), 0) : NULL;
    int32_t tile[TILE_MAX];
    for (int64_t p0 = 0; p0 < k; p0 += KC) {
        int64_t kc = k - p0 < KC ? k - p0 : KC, groups = (kc + K->group - 1) / K->group;
        int64_t words = groups * K->group; /* elements per panel row or column */
        for (int64_t j0 = 0; j0 < n; j0 += NC) {
            int64_t nc = n - j0 < NC ? n - j0 : NC;
            pack_b(K, bp, b, n, p0, kc, j0, nc, sums);
            for (int64_t i0 = 0; i0 < m; i0 += MC) {
                int64_t mc = m - i0 < MC ? m - i0 : MC;
                pack_a(K, ap, a, a_u8, offset, k, i0, mc, p0, kc);
                for (int64_t r0 = 0; r0 < mc; r0 += K->mr)
                    for (int64_t c0 = 0; c0 < nc; c0 += K->nr) {
                        K->tile((const char *)ap + r0 * words * size, (const char *)bp + c0 * words * size, groups,
                                tile);
                        int64_t rows = mc - r0 < K->mr ? mc - r0 : K->mr, cols = nc - c0 < K->nr ? nc - c0 : K->nr;
                        for (int64_t r = 0; r < rows; r++) {
                            int32_t *o = out + (i0 + r0 + r) * n + j0 + c0;
                            const int32_t *t = tile + r * K->nr;
                            if (p0 == 0) memcpy(o, t, (size_t)cols * sizeof(int32_t));
                            else
                                for (int64_t c = 0; c < cols; c++) o[c] += t[c];
                        }
                    }
            }
        }
    }
    mica_free(ap);
    mica_free(bp);
    if (offset) unshift(out, sums, offset, m, n);
    mica_free(sums);
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
