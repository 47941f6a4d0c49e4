/* splitmix.h: the C harnesses' seeded generator (splitmix64), so every run
 * draws the same cases. */
#include <stdint.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void) {
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int64_t rng_below(int64_t n) {
    return (int64_t)(rng_next() % (uint64_t)n);
}
