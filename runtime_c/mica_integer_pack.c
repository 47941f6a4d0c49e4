/* mica_integer_pack.c: the per-thread cache of packed right operands (mica_integer_pack.h).
 *
 * 64 sets of 4 ways, keyed by (b, k, n, layout); within a set the way used
 * least recently is replaced. The copies and packs of one thread are capped
 * (CACHE_BYTES): an operand that would pass the cap is packed into a spare
 * that is not kept, so a model larger than the cap still runs, only slower.
 * Freed when the thread exits.
 */
#include "mica.h"
#include "mica_cpu.h"
#include "mica_integer_pack.h"
#include "mica_threads.h"

#include <string.h>

#define SETS 64
#define WAYS 4
#ifndef CACHE_BYTES /* a test builds a smaller cap, to reach the spare */
#define CACHE_BYTES ((size_t)256 << 20)
#endif

typedef struct {
    const int8_t *b;
    const void *layout;
    int64_t k, n;
    uint64_t used; /* the cache's clock at the last use */
    size_t bytes;  /* of the block holding copy, pack and columns; 0 when empty */
    int8_t *copy;  /* b's bytes when packed */
    void *pack;
    int32_t *columns;
} entry;

typedef struct {
    entry way[SETS][WAYS];
    entry spare; /* for an operand over the cap: reused, never matched */
    uint64_t clock;
    size_t bytes; /* held by the ways */
} cache;

static void cache_free(void *p) {
    cache *c = p;
    for (int s = 0; s < SETS; s++)
        for (int w = 0; w < WAYS; w++) mica_free(c->way[s][w].copy);
    mica_free(c->spare.copy);
    mica_free(c);
}

static void *cache_make(void) {
    return mica_alloc(sizeof(cache), 0);
}

static cache *this_thread(void) {
    return mica_thread_local(MICA_LOCAL_INTEGER_PACK, cache_make, cache_free);
}

// Whether n bytes at x and y are the same: 256 bytes at a time, xors or-ed
// together (the compiler vectorizes it, at each instruction set's width),
// where memcmp may go byte by byte. The comparison is most of a kept pack's cost.
#define MICA_SAME_BYTES(ISA)                                                        \
    static int same_bytes_##ISA(const int8_t *x, const int8_t *y, size_t n) {       \
        size_t i = 0;                                                               \
        for (; i + 256 <= n; i += 256) {                                            \
            uint64_t diff = 0;                                                      \
            for (int w = 0; w < 32; w++) {                                          \
                uint64_t p, q;                                                      \
                memcpy(&p, x + i + 8 * w, 8);                                       \
                memcpy(&q, y + i + 8 * w, 8);                                       \
                diff |= p ^ q;                                                      \
            }                                                                       \
            if (diff) return 0;                                                     \
        }                                                                           \
        return memcmp(x + i, y + i, n - i) == 0;                                    \
    }
MICA_SAME_BYTES(base)
#if defined(__x86_64__)
#pragma clang attribute push(__attribute__((target("avx2"))), apply_to = function)
MICA_SAME_BYTES(avx2)
#pragma clang attribute pop
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw"))), apply_to = function)
MICA_SAME_BYTES(avx512)
#pragma clang attribute pop
static int (*const same_by_level[])(const int8_t *, const int8_t *, size_t) = {same_bytes_base, same_bytes_avx2,
                                                                               same_bytes_avx512};
#else
static int (*const same_by_level[])(const int8_t *, const int8_t *, size_t) = {same_bytes_base};
#endif
#undef MICA_SAME_BYTES

static int level_pick(void) {
    return mica_isa_level(NULL);
}

static int same_bytes(const int8_t *x, const int8_t *y, size_t n) {
    static int chosen = -1;
    return same_by_level[mica_chosen_once(&chosen, level_pick)](x, y, n);
}

// e's block sized for (k, n, pack_bytes): copy, then pack, then columns, at 64-byte offsets
static void shape(entry *e, size_t bytes, size_t copy_bytes, size_t pack_bytes) {
    if (e->bytes != bytes) {
        mica_free(e->copy);
        e->copy = mica_alloc(bytes, 0);
        e->bytes = bytes;
    }
    e->pack = (char *)e->copy + copy_bytes;
    e->columns = (int32_t *)((char *)e->pack + pack_bytes);
}

mica_packed_b mica_integer_packed(const void *layout, size_t pack_bytes, mica_pack_b_fn *pack, const int8_t *b,
                                  int64_t k, int64_t n) {
    cache *c = this_thread();
    size_t copy_bytes = ((size_t)(k * n) + 63) & ~(size_t)63;
    pack_bytes = (pack_bytes + 63) & ~(size_t)63;
    size_t bytes = copy_bytes + pack_bytes + (size_t)n * sizeof(int32_t);
    uint64_t key = ((uint64_t)(uintptr_t)b ^ (uint64_t)k * 0x9E3779B1u ^ (uint64_t)n << 20) * 0x9E3779B97F4A7C15ull;
    entry *set = c->way[key >> 58], *e = NULL; /* 2^6 = SETS */
    for (int w = 0; w < WAYS && !e; w++)
        if (set[w].bytes && set[w].b == b && set[w].k == k && set[w].n == n && set[w].layout == layout) e = &set[w];
    if (e && same_bytes(e->copy, b, (size_t)(k * n))) {
        e->used = ++c->clock;
        return (mica_packed_b){e->pack, e->columns};
    }
    if (!e) { /* the least recently used way, emptied, if what it frees lets b under the cap */
        e = &set[0];
        for (int w = 1; w < WAYS; w++)
            if (set[w].used < e->used) e = &set[w];
        if (c->bytes - e->bytes + bytes > CACHE_BYTES) e = &c->spare;
        else c->bytes -= e->bytes;
    } else c->bytes -= e->bytes;
    shape(e, bytes, copy_bytes, pack_bytes);
    e->b = b, e->layout = layout, e->k = k, e->n = n, e->used = ++c->clock;
    if (e != &c->spare) { /* the spare is never matched: it needs no copy */
        c->bytes += bytes;
        memcpy(e->copy, b, (size_t)(k * n));
    }
    memset(e->pack, 0, pack_bytes);
    memset(e->columns, 0, (size_t)n * sizeof(int32_t));
    pack(layout, e->pack, e->columns, b, k, n);
    return (mica_packed_b){e->pack, e->columns};
}
