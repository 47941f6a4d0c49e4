/* mica_random.c: seeded, counter-based randomness, the same bits everywhere.
 *
 * Draw number c after Seed(s) is SplitMix64's output for the state
 * key(s) + c * 0x9E3779B97F4A7C15, where key(s) is SplitMix64's output for s.
 * A program that never calls Seed runs as after Seed(0).
 *   Uniform: u = (bits >> 11) * 2^-53 in [0, 1); x = low + (high - low) * u.
 *   Normal: Box-Muller with two draws, u1 = ((bits >> 11) + 0.5) * 2^-53 in
 *     (0, 1) and u2 in [0, 1): z = sqrt(-2 log u1) * cos(2 pi u2), computed in
 *     float64 with Mica's own log and the cosine below; x = mean + std * z.
 *   RandomInt(n): Lemire's multiply-and-reject, uniform on 0..n-1.
 *   Dropout(x, p) of n elements: the next n draws, one per element in
 *     order, element i kept when (bits >> 11) >= ceil(p * 2^53) (mica_ops.h's
 *     mica_dropout_keeps), so with probability 1 - p.
 * float32 tensors take the float64 values rounded to float32.
 * Each thread has its own generator. Task number k (from 0, in spawn order) of
 * a tasks block starts with key mix(key ^ mix(counter + (k + 1) * GAMMA)) and
 * counter 0, from its spawner's key and counter at the spawn, which the spawn
 * leaves as they were: a task's draws depend on the program, not the schedule.
 */
#include "mica.h"

static _Thread_local mica_random_state rng;

void mica_seed(int64_t seed) {
    rng.key = mica_mix((uint64_t)seed + MICA_GAMMA);
    rng.counter = 0;
    rng.seeded = true;
}

mica_random_state mica_random_fork(uint64_t task) {
    if (!rng.seeded) mica_seed(0);
    mica_random_state child = {mica_mix(rng.key ^ mica_mix(rng.counter + (task + 1) * MICA_GAMMA)), 0, true};
    return child;
}

void mica_random_adopt(mica_random_state state) {
    rng = state;
}

static uint64_t draw(void) {
    if (!rng.seeded) mica_seed(0);
    return mica_draw(rng.key, rng.counter++);
}

static double uniform01(void) {
    return (double)(draw() >> 11) * 0x1.0p-53;
}

/* cos(2 pi u) for u in [0, 1): the quadrant comes from u exactly, the rest
 * from Taylor series of sin and cos on [0, pi/2] evaluated by Horner. */
static double cos_2pi(double u) {
    double quarters = u * 4;
    int quadrant = (int)quarters;
    double t = (quarters - quadrant) * 1.5707963267948966;
    double t2 = t * t;
    double s = 1, c = 1;
    for (int k = 23; k >= 3; k -= 2) s = 1 - s * t2 / ((double)k * (double)(k - 1));
    s = s * t;
    for (int k = 22; k >= 2; k -= 2) c = 1 - c * t2 / ((double)k * (double)(k - 1));
    switch (quadrant & 3) {
    case 0: return c;
    case 1: return -s;
    case 2: return -c;
    default: return s;
    }
}

static double standard_normal(void) {
    double u1 = ((double)(draw() >> 11) + 0.5) * 0x1.0p-53;
    double u2 = uniform01();
    return mica_sqrt_f64(-2 * mica_log_f64(u1)) * cos_2pi(u2);
}

void mica_normal_f64(double *x, int64_t n, double mean, double std) {
    for (int64_t i = 0; i < n; i++) x[i] = mean + std * standard_normal();
}

void mica_normal_f32(float *x, int64_t n, double mean, double std) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(mean + std * standard_normal());
}

void mica_uniform_f64(double *x, int64_t n, double low, double high) {
    for (int64_t i = 0; i < n; i++) x[i] = low + (high - low) * uniform01();
}

void mica_uniform_f32(float *x, int64_t n, double low, double high) {
    for (int64_t i = 0; i < n; i++) x[i] = (float)(low + (high - low) * uniform01());
}

int64_t mica_random_int(int64_t n, int line) {
    if (n <= 0) mica_trapf(line, "RandomInt(%lld): the bound must be positive", (long long)n);
    uint64_t bound = (uint64_t)n;
    __uint128_t m = (__uint128_t)draw() * bound;
    uint64_t low = (uint64_t)m;
    if (low < bound) {
        uint64_t threshold = -bound % bound;
        while (low < threshold) {
            m = (__uint128_t)draw() * bound;
            low = (uint64_t)m;
        }
    }
    return (int64_t)(m >> 64);
}

mica_dropout_mask mica_dropout_mask_new(int64_t n, double p, int line) {
    if (!(p >= 0 && p < 1)) mica_trapf(line, "Dropout's p must be in [0, 1), not %s", mica_str_of_f64(p).data);
    if (!rng.seeded) mica_seed(0);
    mica_dropout_mask m = {rng.key, rng.counter, 0, 1 / (1 - p)};
    double t = p * 0x1.0p53; /* exact: a power of two times p, below 2^53 */
    m.threshold = (uint64_t)t;
    if ((double)m.threshold < t) m.threshold++; /* ceil: u = bits * 2^-53 >= p exactly when bits >= t */
    rng.counter += (uint64_t)n;
    return m;
}
