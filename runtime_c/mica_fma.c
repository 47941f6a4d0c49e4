/* mica_fma.c: fused multiply-add in software, and the choice between it and
 * the instruction (mica_fma.h). */
#include "mica_fma.h"
#include "mica_bits.h"
#include "mica_cpu.h"

#include <stdint.h>

#pragma STDC FP_CONTRACT OFF /* the software below must not be fused itself */

/* ------------------------------------------------------------ float */

// x*y is exact in double (24 + 24 bits), and s + e == x*y + acc exactly
// (Knuth's two-sum). Rounding that sum to odd in double, then to float,
// rounds it once: double carries 53 >= 2*24 + 2 bits (Boldo and Melquiond,
// "Emulation of FMA and correctly rounded sums: proved algorithms using
// rounding to odd", 2008).
float mica_soft_fma_f32(float x, float y, float acc) {
    double p = (double)x * (double)y, c = acc, s = p + c;
    double v = s - p, e = (p - (s - v)) + (c - v);
    if (e != 0 && __builtin_isfinite(s)) { // inexact (s is never 0 then)
        uint64_t u = mica_bits64(s);
        if ((e < 0) != (s < 0)) u -= 1; // s was rounded away from zero: truncate
        s = mica_f64_of(u | 1);         // truncated, then odd
    }
    return (float)s;
}

/* ------------------------------------------------------------ double */

typedef unsigned __int128 u128;

// |x| = *m * 2^*e with *m < 2^53, for finite nonzero x
static void unpack(double x, uint64_t *m, int *e) {
    uint64_t u = mica_bits64(x), frac = u & ((1ull << 52) - 1);
    int biased = (int)(u >> 52 & 0x7ff);
    *m = biased ? frac | 1ull << 52 : frac;
    *e = biased ? biased - 1075 : -1074;
}

static int top_bit(u128 v) { // v != 0
    uint64_t hi = (uint64_t)(v >> 64);
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((uint64_t)v);
}

// v * 2^*e, rewritten with v's top bit at bit 124 (v has at most 106 bits)
static u128 to_frame(u128 v, int *e) {
    int up = 124 - top_bit(v);
    *e -= up;
    return v << up;
}

// (-1)^sign * m * 2^e, m != 0, rounded once to the nearest double (ties to even)
static double round_pack(int sign, u128 m, int e) {
    int top = top_bit(m) + e; // the leading bit's exponent
    bool normal = top >= -1022;
    int lsb = normal ? top - 52 - e : -1074 - e; // bit of m that becomes the result's last
    uint64_t mant;
    if (lsb <= 0) {
        mant = (uint64_t)(m << -lsb); // exact: fewer than 53 significant bits
    } else if (lsb > 126) {
        mant = 0; // m < 2^126 <= half the last place: a signed zero
    } else {
        u128 rest = m & (((u128)1 << lsb) - 1), half = (u128)1 << (lsb - 1);
        mant = (uint64_t)(m >> lsb);
        if (rest > half || (rest == half && (mant & 1))) mant++;
    }
    uint64_t out = (uint64_t)sign << 63;
    if (!normal) return mica_f64_of(out | mant); // 2^52 after rounding up is the smallest normal's bits
    if (mant == 1ull << 53) mant >>= 1, top++;
    if (top > 1023) return mica_f64_of(out | 0x7ffull << 52); // overflow: infinity
    return mica_f64_of(out | (uint64_t)(top + 1023) << 52 | (mant & ((1ull << 52) - 1)));
}

// The exact product (106 bits) and acc, aligned in one 128-bit frame; a
// part shifted out below bit 0 leaves a sticky 1 there, which decides
// rounding as the lost bits would: at least 70 bits lie between the
// result's last place and bit 0 whenever anything was shifted out.
double mica_soft_fma_f64(double x, double y, double acc) {
    if (!__builtin_isfinite(x) || !__builtin_isfinite(y) || x == 0 || y == 0)
        return x * y + acc; // the product is exact (a zero, an infinity or a NaN)
    if (!__builtin_isfinite(acc)) return acc;
    if (acc == 0) return x * y; // one rounding; an underflow keeps the product's sign
    uint64_t mx, my, mc;
    int ex, ey, ec;
    unpack(x, &mx, &ex);
    unpack(y, &my, &ey);
    unpack(acc, &mc, &ec);
    int sp = (int)((mica_bits64(x) ^ mica_bits64(y)) >> 63), sc = (int)(mica_bits64(acc) >> 63);
    int ep = ex + ey, eq = ec;
    u128 p = to_frame((u128)mx * my, &ep), q = to_frame(mc, &eq);
    if (eq > ep || (eq == ep && q > p)) { // p: the larger magnitude
        u128 t = p;
        p = q, q = t;
        int te = ep, ts = sp;
        ep = eq, eq = te, sp = sc, sc = ts;
    }
    int d = ep - eq;
    u128 small = d > 126 ? 1 : (q >> d) | ((q & (((u128)1 << d) - 1)) != 0);
    u128 m = sp == sc ? p + small : p - small;
    if (m == 0) return 0.0; // exact cancellation rounds to +0
    return round_pack(sp, m, ep);
}

/* ------------------------------------------------------------ dispatch */

#if defined(__x86_64__)
__attribute__((target("fma"))) static float hard_f32(float x, float y, float acc) {
    return __builtin_fmaf(x, y, acc);
}

__attribute__((target("fma"))) static double hard_f64(double x, double y, double acc) {
    return __builtin_fma(x, y, acc);
}

static int pick_hardware(void) {
    return mica_isa_level(NULL) >= MICA_ISA_AVX2; /* that level includes FMA3 */
}

static int use_hardware = -1;

float mica_fma_f32(float x, float y, float acc) {
    return mica_chosen_once(&use_hardware, pick_hardware) ? hard_f32(x, y, acc) : mica_soft_fma_f32(x, y, acc);
}

double mica_fma_f64(double x, double y, double acc) {
    return mica_chosen_once(&use_hardware, pick_hardware) ? hard_f64(x, y, acc) : mica_soft_fma_f64(x, y, acc);
}
#else
float mica_fma_f32(float x, float y, float acc) {
    return __builtin_fmaf(x, y, acc); /* aarch64: fmadd */
}

double mica_fma_f64(double x, double y, double acc) {
    return __builtin_fma(x, y, acc);
}
#endif
