/* mica_integer_pack.h: the integer GEMM's right operands, packed once.
 *
 * An int8 model multiplies by the same weight matrices for every token, and
 * for its small products packing b costs as much as the product. So a packed
 * b is kept, per thread, keyed by where b lives, its shape and the kernel's
 * layout, together with a copy of b's bytes: a later product by the same
 * storage compares the bytes (a fraction of a pack's cost) and reuses the pack
 * only when they are the same. Nothing has to tell the cache that b changed,
 * the language contract is untouched, and a stale pack can never be read.
 */
#ifndef MICA_INTEGER_PACK_H
#define MICA_INTEGER_PACK_H

#include <stddef.h>
#include <stdint.h>

/* Writes b's packed form into pack (pack_bytes, zeroed) and one int32 per
 * column into columns (n, zeroed), what the layout the caller named keeps
 * beside its pack. */
typedef void mica_pack_b_fn(const void *layout, void *pack, int32_t *columns, const int8_t *b, int64_t k, int64_t n);

typedef struct {
    const void *pack;
    const int32_t *columns;
} mica_packed_b;

/* b (k x n) packed by pack for layout, from this thread's cache or afresh.
 * The result is valid until this thread's next call. */
mica_packed_b mica_integer_packed(const void *layout, size_t pack_bytes, mica_pack_b_fn *pack, const int8_t *b,
                                  int64_t k, int64_t n);

#endif /* MICA_INTEGER_PACK_H */
