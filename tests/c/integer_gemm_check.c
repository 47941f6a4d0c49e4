/* integer_gemm_check.c: the integer GEMM test harness (tests/test_quantize.py builds and runs it).
 *
 * Runs many int8 x int8 and uint8 x int8 products through the kernel in use
 * (MICA_ISA / MICA_INTEGER_GEMM_ISA pick it) and through the reference loops,
 * compares every element and the guard words after out (stray writes), then prints
 *   isa <name> cases <count> mismatches <count> hash <hex>
 * Shapes: every m, n, k small enough to miss every tile size, a few that cross
 * the packing blocks, and k = 65536 at the extremes (the largest sums int32 holds);
 * every tile height 1 .. 8 against widths around the half and whole vectors and
 * depths that are and are not whole words. b's packs are kept between calls
 * (mica_integer_pack.h), so the same storage is multiplied again after each
 * kind of change (one byte, another shape over it) and after enough other
 * operands to evict it.
 */
#include "../../runtime_c/mica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// the runtime's allocator, which the kernels use, without the rest of the runtime
void *mica_alloc(size_t bytes, int line) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "out of memory at %d\n", line);
        exit(2);
    }
    return p;
}

void *mica_alloc_elements(int64_t count, size_t size, int line) {
    return mica_alloc((size_t)count * size, line);
}

void mica_free(void *p) {
    free(p);
}

#include "splitmix.h"

static uint64_t hash = 0xcbf29ce484222325ull;

static void hash_word(uint32_t w) { // FNV-1a
    for (int i = 0; i < 4; i++) {
        hash ^= (w >> (8 * i)) & 0xff;
        hash *= 0x100000001b3ull;
    }
}

#define GUARD 8
static int64_t cases, mismatches;

// fill: 0 random over the whole range, 1 a at its top and b at -128 (the
// largest |product|), 2 a at its bottom and b at -128, 3 a mix of the extremes
static int byte_for(int fill, int lo, int hi) {
    switch (fill) {
    case 1: return hi;
    case 2: return lo;
    case 3: return rng_below(2) ? lo : hi;
    default: return lo + (int)rng_below(hi - lo + 1);
    }
}

// out against the reference, for both kinds of a, for a and b as given
static void compare(const int8_t *a8, const uint8_t *u8, const int8_t *b, int64_t m, int64_t k, int64_t n, int fill) {
    int32_t *out = malloc((size_t)(m * n + GUARD) * 4), *want = malloc((size_t)(m * n) * 4);
    for (int side = 0; side < 2; side++) {
        for (int64_t i = 0; i < m * n + GUARD; i++) out[i] = 0x5A5A5A5A;
        if (side == 0) {
            mica_matmul_i32_i8_i8(out, a8, b, m, k, n);
            mica_matmul_i32_i8_i8_reference(want, a8, b, m, k, n);
        } else {
            mica_matmul_i32_u8_i8(out, u8, b, m, k, n);
            mica_matmul_i32_u8_i8_reference(want, u8, b, m, k, n);
        }
        int64_t bad = 0;
        for (int64_t i = 0; i < m * n; i++) {
            bad += out[i] != want[i];
            hash_word((uint32_t)out[i]);
        }
        for (int64_t i = m * n; i < m * n + GUARD; i++) bad += out[i] != 0x5A5A5A5A;
        if (bad)
            fprintf(stderr, "%s m %lld k %lld n %lld fill %d: %lld wrong\n", side ? "u8" : "i8", (long long)m,
                    (long long)k, (long long)n, fill, (long long)bad);
        mismatches += bad != 0;
        cases++;
    }
    free(out), free(want);
}

// a's two kinds (m x k) and b (k x n), filled as `fill` says; free with release
typedef struct {
    int8_t *a8, *b;
    uint8_t *u8;
} operands;

static operands make(int64_t m, int64_t k, int64_t n, int fill) {
    operands o = {malloc((size_t)(m * k)), malloc((size_t)(k * n)), malloc((size_t)(m * k))};
    for (int64_t i = 0; i < m * k; i++) {
        o.a8[i] = (int8_t)byte_for(fill, -128, 127);
        o.u8[i] = (uint8_t)byte_for(fill, 0, 255);
    }
    for (int64_t i = 0; i < k * n; i++) o.b[i] = (int8_t)byte_for(fill == 0 ? 0 : fill == 3 ? 3 : 2, -128, 127);
    return o;
}

static void release(operands o) {
    free(o.a8), free(o.u8), free(o.b);
}

static void check(int64_t m, int64_t k, int64_t n, int fill) {
    operands o = make(m, k, n, fill);
    compare(o.a8, o.u8, o.b, m, k, n, fill);
    release(o);
}

// The same b storage again: unchanged, after one byte changes (first, last),
// read as another shape, and after more operands than the cache keeps.
static void check_kept(int64_t m, int64_t k, int64_t n) {
    operands o = make(m, k, n, 0);
    compare(o.a8, o.u8, o.b, m, k, n, 0);
    compare(o.a8, o.u8, o.b, m, k, n, 0);
    o.b[0] = (int8_t)(o.b[0] ^ 0x55);
    compare(o.a8, o.u8, o.b, m, k, n, 0);
    o.b[k * n - 1] = (int8_t)(o.b[k * n - 1] + 1);
    compare(o.a8, o.u8, o.b, m, k, n, 0);
    compare(o.a8, o.u8, o.b, m, n, k, 0); /* b's bytes as n x k */
    enum { OTHERS = 300 };                /* more than the cache's 256 ways */
    static operands others[OTHERS];
    for (int i = 0; i < OTHERS; i++) {
        others[i] = make(2, 8, 5, 0);
        compare(others[i].a8, others[i].u8, others[i].b, 2, 8, 5, 0);
    }
    compare(o.a8, o.u8, o.b, m, k, n, 0);
    for (int i = 0; i < OTHERS; i++) {
        others[i].b[i % 40] ^= 1;
        compare(others[i].a8, others[i].u8, others[i].b, 2, 8, 5, 0);
        release(others[i]);
    }
    release(o);
}

int main(void) {
    for (int t = 0; t < 400; t++)
        check(1 + rng_below(70), 1 + rng_below(70), 1 + rng_below(70), t % 8 == 7 ? 1 + (int)rng_below(3) : 0);
    for (int64_t s = 1; s <= 9; s++) check(s, s, s, 0), check(s, 1, 1, 0), check(1, s, 1, 0), check(1, 1, s, 0);
    static const int64_t big[][3] = {{257, 129, 513}, {97, 1025, 33}, {1, 1537, 1}, {200, 3, 1}, {5, 700, 530}};
    for (int i = 0; i < (int)(sizeof big / sizeof big[0]); i++) check(big[i][0], big[i][1], big[i][2], 0);
    for (int fill = 1; fill <= 3; fill++) check(3, 65536, 2, fill);
    static const int64_t widths[] = {1, 4, 5, 8, 9, 15, 16, 17, 31, 32, 33, 64, 96};
    static const int64_t depths[] = {4, 63, 64, 516};
    for (int64_t m = 1; m <= 8; m++)
        for (int w = 0; w < (int)(sizeof widths / sizeof widths[0]); w++)
            for (int d = 0; d < (int)(sizeof depths / sizeof depths[0]); d++) check(m, depths[d], widths[w], 0);
    check_kept(7, 64, 33);
    check_kept(32, 516, 16);
    printf("isa %s cases %lld mismatches %lld hash %016llx\n", mica_integer_gemm_isa(), (long long)cases,
           (long long)mismatches, (unsigned long long)hash);
    return mismatches != 0;
}
