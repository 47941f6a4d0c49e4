/* mica_bits.h: a float's bits, and the float of given bits.
 *
 * For the code that works on the representation (the software fma) and for
 * the checks that compare results bit for bit (tests/c, tools/trig_sweep.c).
 * memcpy is the one such cast C defines; compilers make it a register move.
 */
#ifndef MICA_BITS_H
#define MICA_BITS_H

#include <stdint.h>
#include <string.h>

/* mica_bitsN(x): the bits of x; mica_fN_of(u): the float whose bits are u. */
#define MICA_BITS(T, U, N)                                                                       \
    static inline U mica_bits##N(T x) {                                                          \
        U u;                                                                                     \
        memcpy(&u, &x, sizeof u);                                                                \
        return u;                                                                                \
    }                                                                                            \
    static inline T mica_f##N##_of(U u) {                                                        \
        T x;                                                                                     \
        memcpy(&x, &u, sizeof x);                                                                \
        return x;                                                                                \
    }

MICA_BITS(double, uint64_t, 64)
MICA_BITS(float, uint32_t, 32)

#undef MICA_BITS

#endif /* MICA_BITS_H */
