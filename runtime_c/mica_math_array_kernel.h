/* mica_math_array_kernel.h: one instantiation of the array forms. Not a
 * public header: mica_math_array.c includes it once per instruction set,
 * after defining
 *   VB      vector width in bytes: 16 (SSE2, NEON), 32 (AVX2), 64 (AVX-512)
 *   VNAME   the suffix of this instantiation's names, e.g. avx2
 * and undefines them at the end. It defines the sixteen array functions
 * F_array_S_VNAME (F exp ... silu_grad, S f64 or f32) for this instruction set.
 *
 * Each function below is its scalar namesake in mica_math.c, statement for
 * statement, on a vector of lanes: the same IEEE operations in the same
 * order on the same constants (mica_math_consts.h), so each lane rounds
 * exactly as the scalar code does (vector and scalar add, sub, mul and div
 * are the same correctly rounded operations on x86_64 and aarch64, neither
 * flushes subnormals, and nothing is contracted: see mica_math_array.c).
 * The scalar code's branches become selects, by these rules:
 *   - every path some lane needs is computed for all lanes, and each lane
 *     keeps the result of the path the scalar code would have taken. A path
 *     never feeds another lane, so a path a lane did not take cannot change
 *     that lane's result: it is simply not selected;
 *   - inputs that reach integer work (the exponent k of exp_parts) are
 *     first replaced by a harmless value in the lanes that do not take that
 *     path, so every lane's integers stay in range and defined;
 *   - the scalar code's early returns (nan, saturation, underflow) are the
 *     last selects, in the reverse of the scalar order, so the first test
 *     the scalar code makes wins, and their results are made from bits
 *     exactly as the scalar code makes them (the canonical nan included).
 * Selects are bitwise (and, andnot, or) on the lanes' bits, so they copy
 * bits exactly, signs of zero and nans included. A path skipped because no
 * lane of the vector takes it changes nothing either. (Paths not selected
 * may raise IEEE status flags the scalar code would not; Mica enables no
 * floating-point traps and reads no flags.)
 */

#define VCAT2(x, y) x##_##y
#define VCAT(x, y) VCAT2(x, y)
#define V(name) VCAT(name, VNAME)
#define VL32 ((int)(VB / 4)) /* float lanes */
#define VL64 ((int)(VB / 8)) /* double lanes */

typedef float V(vf) __attribute__((vector_size(VB)));
typedef int32_t V(vi) __attribute__((vector_size(VB))); /* float lanes' masks and exponents */
typedef uint32_t V(vu) __attribute__((vector_size(VB)));
typedef double V(vd) __attribute__((vector_size(VB)));
typedef int64_t V(vl) __attribute__((vector_size(VB))); /* double lanes' masks and exponents */
typedef uint64_t V(vq) __attribute__((vector_size(VB)));

/* ------------------------------------------------------------ lanes */

static inline V(vf) V(splat_f32)(float c) {
    V(vf) v;
    for (int i = 0; i < VL32; i++) v[i] = c;
    return v;
}

static inline V(vi) V(splat_i32)(int32_t c) {
    V(vi) v;
    for (int i = 0; i < VL32; i++) v[i] = c;
    return v;
}

static inline V(vf) V(bits_splat_f32)(uint32_t u) {
    V(vu) v;
    for (int i = 0; i < VL32; i++) v[i] = u;
    return (V(vf))v;
}

static inline V(vd) V(splat_f64)(double c) {
    V(vd) v;
    for (int i = 0; i < VL64; i++) v[i] = c;
    return v;
}

static inline V(vl) V(splat_i64)(int64_t c) {
    V(vl) v;
    for (int i = 0; i < VL64; i++) v[i] = c;
    return v;
}

static inline V(vd) V(bits_splat_f64)(uint64_t u) {
    V(vq) v;
    for (int i = 0; i < VL64; i++) v[i] = u;
    return (V(vd))v;
}

// m ? a : b per lane, m all ones or all zeros (a comparison's result)
static inline V(vf) V(select_f32)(V(vi) m, V(vf) a, V(vf) b) {
    return (V(vf))(((V(vi))a & m) | ((V(vi))b & ~m));
}

static inline V(vi) V(select_i32)(V(vi) m, V(vi) a, V(vi) b) {
    return (a & m) | (b & ~m);
}

static inline V(vd) V(select_f64)(V(vl) m, V(vd) a, V(vd) b) {
    return (V(vd))(((V(vl))a & m) | ((V(vl))b & ~m));
}

static inline V(vl) V(select_i64)(V(vl) m, V(vl) a, V(vl) b) {
    return (a & m) | (b & ~m);
}

static inline int V(any_i32)(V(vi) m) {
    return __builtin_reduce_or(m) != 0;
}

static inline int V(any_i64)(V(vl) m) {
    return __builtin_reduce_or(m) != 0;
}

// k < c and k > c for 64-bit lanes holding small integers (|k| < 2^31).
// SSE2 has no 64-bit compare (clang's emulation takes 16 instructions), but
// the low half of such a k is k: compare the halves, copy each low half's
// answer over its lane.
#if VB == 16 && defined(__x86_64__)
static inline V(vl) V(lt_i64)(V(vl) k, int32_t c) {
    V(vi) m = (V(vi))k < c;
    return (V(vl))__builtin_shufflevector(m, m, 0, 0, 2, 2);
}

static inline V(vl) V(gt_i64)(V(vl) k, int32_t c) {
    V(vi) m = (V(vi))k > c;
    return (V(vl))__builtin_shufflevector(m, m, 0, 0, 2, 2);
}
#else
static inline V(vl) V(lt_i64)(V(vl) k, int32_t c) {
    return (V(vl))(k < c);
}

static inline V(vl) V(gt_i64)(V(vl) k, int32_t c) {
    return (V(vl))(k > c);
}
#endif

// Comparisons of double lanes, as 64-bit masks.
#define LT64(a, b) ((V(vl))((a) < (b)))
#define LE64(a, b) ((V(vl))((a) <= (b)))
#define GT64(a, b) ((V(vl))((a) > (b)))
#define GE64(a, b) ((V(vl))((a) >= (b)))
#define EQ64(a, b) ((V(vl))((a) == (b)))
#define NAN64(a) ((V(vl))((a) != (a)))

/* ================================================================ float64 */

/* ------------------------------------------------------------ bits */

static inline V(vd) V(nan_f64)(void) { return V(bits_splat_f64)(0x7ff8000000000000ull); }
static inline V(vd) V(inf_f64)(void) { return V(bits_splat_f64)(0x7ff0000000000000ull); }

// 2^k for a normal exponent, from the bits (pow2_f64)
static inline V(vd) V(pow2_f64)(V(vl) k) {
    return (V(vd))(((V(vq))k + 1023u) << 52);
}

// scale_f64's three cases as one formula (y * 2^k1) * 2^k2: the case picks
// (k1, k2); in the normal case k2 = 0 and the second product, by 1, is exact.
static inline V(vd) V(scale_f64)(V(vd) y, V(vl) k) {
    V(vl) top = V(gt_i64)(k, 1023), bottom = V(lt_i64)(k, -1022);
    V(vl) k1 = V(select_i64)(top, V(splat_i64)(1023), V(select_i64)(bottom, k + SCALE_STEP_F64, k));
    V(vl) k2 = V(select_i64)(top, k - 1023, V(select_i64)(bottom, V(splat_i64)(-SCALE_STEP_F64), V(splat_i64)(0)));
    return (y * V(pow2_f64)(k1)) * V(pow2_f64)(k2);
}

// scale_f64 where every lane has k <= 1023, so its first case cannot apply:
// the sigmoids' k (exp of a <= 0) and tanh's (1 <= k <= 64). One test fewer.
static inline V(vd) V(scale_low_f64)(V(vd) y, V(vl) k) {
    V(vl) bottom = V(lt_i64)(k, -1022);
    V(vl) k1 = V(select_i64)(bottom, k + SCALE_STEP_F64, k);
    V(vl) k2 = V(select_i64)(bottom, V(splat_i64)(-SCALE_STEP_F64), V(splat_i64)(0));
    return (y * V(pow2_f64)(k1)) * V(pow2_f64)(k2);
}

/* ------------------------------------------------------------ exp */

static inline V(vd) V(exp_reduced_f64)(V(vd) hi, V(vd) lo, V(vd) *yl) {
    V(vd) r = hi - lo;
    V(vd) t = r * r;
    V(vd) p = V(splat_f64)(EXP_P4_F64);
    p = EXP_P3_F64 + t * p;
    p = EXP_P2_F64 + t * p;
    p = EXP_P1_F64 + t * p;
    p = EXP_P0_F64 + t * p;
    V(vd) c = r - t * p;
    V(vd) q = (lo - (r * c) / (2.0 - c)) - hi;
    V(vd) y = 1.0 - q;
    *yl = (1.0 - y) - q;
    return y;
}

// Every lane's x must lie in [SIGMOID_ZERO, EXP_OVERFLOW] (callers replace
// the others). (int)kd is read from the bits of kd + SHIFT, whose low bits
// hold it (bits(SHIFT) + k): SSE2 and AVX2 cannot convert doubles to int64.
static inline V(vd) V(exp_parts_f64)(V(vd) x, V(vd) xl, V(vd) *yl, V(vl) *k) {
    V(vd) kd = x * INV_LN2_F64 + ROUND_SHIFT_F64;
    *k = (V(vl))((V(vq))kd - (V(vq))V(splat_f64)(ROUND_SHIFT_F64));
    kd = kd - ROUND_SHIFT_F64;
    V(vd) hi = x - kd * LN2_HI_F64;
    V(vd) lo = kd * LN2_LO_F64 - xl;
    return V(exp_reduced_f64)(hi, lo, yl);
}

static V(vd) V(exp_f64)(V(vd) x) {
    V(vl) nan = NAN64(x), over = GT64(x, EXP_OVERFLOW_F64), under = LT64(x, EXP_UNDERFLOW_F64);
    V(vd) xs = V(select_f64)(nan | over | under, V(splat_f64)(0.0), x);
    V(vd) yl;
    V(vl) k;
    V(vd) y = V(exp_parts_f64)(xs, V(splat_f64)(0.0), &yl, &k);
    y = V(scale_f64)(y, k);
    y = V(select_f64)(under, V(splat_f64)(0.0), y);
    y = V(select_f64)(over, V(inf_f64)(), y);
    return V(select_f64)(nan, V(nan_f64)(), y);
}

/* ------------------------------------------------------------ log */

static inline V(vd) V(log_reduced_f64)(V(vd) f, V(vl) k) {
    V(vd) s = f / (2.0 + f);
    V(vd) z = s * s;
    V(vd) p = V(splat_f64)(LOG_L6_F64);
    p = LOG_L5_F64 + z * p;
    p = LOG_L4_F64 + z * p;
    p = LOG_L3_F64 + z * p;
    p = LOG_L2_F64 + z * p;
    p = LOG_L1_F64 + z * p;
    p = LOG_L0_F64 + z * p;
    V(vd) R = z * p;
    V(vd) h = (0.5 * f) * f;
    // (double)k, exactly, through the bits as in exp_parts: no int64 -> double before AVX-512DQ
    V(vd) dk = (V(vd))((V(vq))k + (V(vq))V(splat_f64)(ROUND_SHIFT_F64)) - ROUND_SHIFT_F64;
    return dk * LN2_HI_F64 - ((h - (s * (h + R) + dk * LN2_LO_F64)) - f);
}

static V(vd) V(log_f64)(V(vd) x) {
    V(vl) nan = NAN64(x) | LT64(x, 0.0), zero = EQ64(x, 0.0), inf = EQ64(x, V(inf_f64)());
    V(vd) xs = V(select_f64)(nan | zero | inf, V(splat_f64)(1.0), x);
    V(vl) sub = LT64(xs, 0x1p-1022);
    xs = V(select_f64)(sub, xs * LOG_NORMALIZE_F64, xs);
    V(vl) k = sub & -LOG_NORMALIZE_K_F64;
    V(vq) u = (V(vq))xs;
    k = k + (V(vl))(u >> 52) - 1023;
    V(vd) m = (V(vd))((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
    V(vl) big = GT64(m, SQRT2_F64);
    m = V(select_f64)(big, m * 0.5, m);
    k = k - big; /* big is -1 where set: k + 1 */
    V(vd) y = V(log_reduced_f64)(m - 1.0, k);
    y = V(select_f64)(inf, x, y);
    y = V(select_f64)(zero, -V(inf_f64)(), y);
    return V(select_f64)(nan, V(nan_f64)(), y);
}

/* ------------------------------------------------------------ tanh */

static inline V(vd) V(tanh_small_f64)(V(vd) a) {
    V(vd) t = a * a;
    V(vd) p = V(splat_f64)(TANH_P10_F64);
    p = TANH_P9_F64 + t * p;
    p = TANH_P8_F64 + t * p;
    p = TANH_P7_F64 + t * p;
    p = TANH_P6_F64 + t * p;
    p = TANH_P5_F64 + t * p;
    p = TANH_P4_F64 + t * p;
    p = TANH_P3_F64 + t * p;
    p = TANH_P2_F64 + t * p;
    p = TANH_P1_F64 + t * p;
    p = TANH_P0_F64 + t * p;
    return a + (a * t) * p;
}

static inline V(vd) V(tanh_tail_f64)(V(vd) a) {
    V(vd) ml;
    V(vl) k;
    V(vd) m = V(exp_parts_f64)(a + a, V(splat_f64)(0.0), &ml, &k);
    V(vd) E = V(scale_low_f64)(m, k), El = V(scale_low_f64)(ml, k);
    V(vd) d = E + 1.0;
    V(vd) dl = (1.0 - (d - E)) + El;
    V(vd) t = 2.0 / d;
    return t - (t * dl) / d;
}

// A path no lane takes is skipped: that changes no lane's result.
static V(vd) V(tanh_f64)(V(vd) x) {
    V(vl) neg = LT64(x, 0.0);
    V(vd) a = V(select_f64)(neg, -x, x);
    V(vl) small = LT64(a, TANH_SMALL_F64);
    V(vl) tail = ~small & LE64(a, TANH_ONE_F64); /* false for nan */
    V(vd) y = V(splat_f64)(1.0);                 /* a > TANH_ONE */
    if (V(any_i64)(tail))
        y = V(select_f64)(tail, 1.0 - V(tanh_tail_f64)(V(select_f64)(tail, a, V(splat_f64)(1.0))), y);
    if (V(any_i64)(small)) y = V(select_f64)(small, V(tanh_small_f64)(a), y);
    y = V(select_f64)(neg, -y, y);
    y = V(select_f64)(LT64(a, TANH_TINY_F64), x, y);
    return V(select_f64)(NAN64(x), V(nan_f64)(), y);
}

/* ------------------------------------------------------------ sigmoid */

// Lanes with ah < SIGMOID_ZERO (or nan) take m = ml = 0, k = 0 as the scalar code does.
static inline V(vd) V(sigmoid_parts_f64)(V(vd) ah, V(vd) al, V(vd) *small, V(vl) *k) {
    V(vl) live = GE64(ah, SIGMOID_ZERO_F64);
    V(vd) zero = V(splat_f64)(0.0), ml;
    V(vd) m = V(exp_parts_f64)(V(select_f64)(live, ah, zero), V(select_f64)(live, al, zero), &ml, k);
    m = V(select_f64)(live, m, zero);
    ml = V(select_f64)(live, ml, zero);
    *k = *k & live;
    V(vd) e = V(scale_low_f64)(m, *k);
    V(vd) d = 1.0 + e;
    V(vd) dl = ((1.0 - d) + e) + V(scale_low_f64)(ml, *k);
    V(vd) big = 1.0 / d;
    big = big - (big * dl) / d;
    V(vd) sm = m / d;
    *small = sm + (ml - sm * dl) / d;
    return big;
}

static V(vd) V(sigmoid_f64)(V(vd) x) {
    V(vl) pos = GE64(x, 0.0);
    V(vd) small;
    V(vl) k;
    V(vd) big = V(sigmoid_parts_f64)(V(select_f64)(pos, -x, x), V(splat_f64)(0.0), &small, &k);
    V(vd) y = V(select_f64)(pos, big, V(scale_low_f64)(small, k));
    return V(select_f64)(NAN64(x), V(nan_f64)(), y);
}

/* ------------------------------------------------------------ gelu */

static inline V(vd) V(two_prod_f64)(V(vd) a, V(vd) b, V(vd) *e) {
    V(vd) p = a * b;
    V(vd) ta = SPLIT_F64 * a, tb = SPLIT_F64 * b;
    V(vd) ah = ta - (ta - a), bh = tb - (tb - b);
    V(vd) al = a - ah, bl = b - bh;
    *e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return p;
}

static inline V(vd) V(two_sum_f64)(V(vd) a, V(vd) b, V(vd) *e) {
    V(vd) s = a + b;
    V(vd) bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

static inline V(vd) V(gelu_arg_f64)(V(vd) x, V(vd) *vl) {
    V(vd) x2l, x2 = V(two_prod_f64)(x, x, &x2l);
    V(vd) x3l, x3 = V(two_prod_f64)(x2, x, &x3l);
    x3l = x3l + x2l * x;
    V(vd) cl, c3 = V(two_prod_f64)(V(splat_f64)(GELU_C_HI_F64), x3, &cl);
    cl = cl + (GELU_C_HI_F64 * x3l + GELU_C_LO_F64 * x3);
    V(vd) wl, w = V(two_sum_f64)(x, c3, &wl);
    wl = wl + cl;
    V(vd) v = V(two_prod_f64)(V(splat_f64)(GELU_K_HI_F64), w, vl);
    *vl = *vl + (GELU_K_HI_F64 * wl + GELU_K_LO_F64 * w);
    return v;
}

// Both gelu and its derivative: the lanes outside (GELU_ZERO, GELU_ONE) and
// nan compute on 0 and are replaced at the end. *pos: v >= 0.
static inline V(vd) V(gelu_parts_f64)(V(vd) xs, V(vd) *small, V(vl) *k, V(vl) *pos) {
    V(vd) vl, v = V(gelu_arg_f64)(xs, &vl);
    *pos = GE64(v, 0.0);
    return V(sigmoid_parts_f64)(V(select_f64)(*pos, -v, v), V(select_f64)(*pos, -vl, vl), small, k);
}

static V(vd) V(gelu_f64)(V(vd) x) {
    V(vl) nan = NAN64(x), one = GT64(x, GELU_ONE_F64), zero = LT64(x, GELU_ZERO_F64);
    V(vd) xs = V(select_f64)(nan | one | zero, V(splat_f64)(0.0), x), small;
    V(vl) k, pos;
    V(vd) big = V(gelu_parts_f64)(xs, &small, &k, &pos);
    V(vd) y = V(select_f64)(pos, xs * big, V(scale_low_f64)(xs * small, k));
    y = V(select_f64)(zero, V(splat_f64)(-0.0), y);
    y = V(select_f64)(one, x, y);
    return V(select_f64)(nan, V(nan_f64)(), y);
}

static V(vd) V(gelu_grad_f64)(V(vd) x) {
    V(vl) nan = NAN64(x), one = GT64(x, GELU_ONE_F64), zero = LT64(x, GELU_ZERO_F64);
    V(vd) xs = V(select_f64)(nan | one | zero, V(splat_f64)(0.0), x), small;
    V(vl) k, pos;
    V(vd) big = V(gelu_parts_f64)(xs, &small, &k, &pos);
    V(vd) xdv = xs * (GELU_K_HI_F64 + GELU_K3_F64 * (xs * xs));
    V(vd) y_pos = big + xdv * (big * V(scale_low_f64)(small, k));       /* s = big, sn = small*2^k */
    V(vd) y_neg = V(scale_low_f64)(small + xdv * (small * big), k);     /* sn = big */
    V(vd) y = V(select_f64)(pos, y_pos, y_neg);
    y = V(select_f64)(zero, V(splat_f64)(0.0), y);
    y = V(select_f64)(one, V(splat_f64)(1.0), y);
    return V(select_f64)(nan, V(nan_f64)(), y);
}

/* ------------------------------------------------------------ silu */

static V(vd) V(silu_f64)(V(vd) x) {
    V(vl) pos = GE64(x, 0.0);
    V(vd) small;
    V(vl) k;
    V(vd) big = V(sigmoid_parts_f64)(V(select_f64)(pos, -x, x), V(splat_f64)(0.0), &small, &k);
    V(vd) y = V(select_f64)(pos, x * big, V(scale_low_f64)(x * small, k));
    y = V(select_f64)(LT64(x, SILU_ZERO_F64), V(splat_f64)(-0.0), y);
    return V(select_f64)(NAN64(x), V(nan_f64)(), y);
}

static V(vd) V(silu_grad_f64)(V(vd) x) {
    V(vl) pos = GE64(x, 0.0);
    V(vd) small;
    V(vl) k;
    V(vd) big = V(sigmoid_parts_f64)(V(select_f64)(pos, -x, x), V(splat_f64)(0.0), &small, &k);
    V(vd) y_pos = big * (1.0 + x * V(scale_low_f64)(small, k));
    V(vd) y_neg = V(scale_low_f64)(small * (1.0 + x * big), k);
    V(vd) y = V(select_f64)(pos, y_pos, y_neg);
    y = V(select_f64)(LT64(x, SILU_ZERO_F64), V(splat_f64)(-0.0), y);
    y = V(select_f64)(GT64(x, SILU_GRAD_ONE_F64), V(splat_f64)(1.0), y);
    return V(select_f64)(NAN64(x), V(nan_f64)(), y);
}

/* ================================================================ float32 */

/* The float64 code above with float lanes; the comments there apply. */

static inline V(vf) V(nan_f32)(void) { return V(bits_splat_f32)(0x7fc00000u); }
static inline V(vf) V(inf_f32)(void) { return V(bits_splat_f32)(0x7f800000u); }

static inline V(vf) V(pow2_f32)(V(vi) k) {
    return (V(vf))(((V(vu))k + 127u) << 23);
}

static inline V(vf) V(scale_f32)(V(vf) y, V(vi) k) {
    V(vi) top = k > 127, bottom = k < -126;
    V(vi) k1 = V(select_i32)(top, V(splat_i32)(127), V(select_i32)(bottom, k + SCALE_STEP_F32, k));
    V(vi) k2 = V(select_i32)(top, k - 127, V(select_i32)(bottom, V(splat_i32)(-SCALE_STEP_F32), V(splat_i32)(0)));
    return (y * V(pow2_f32)(k1)) * V(pow2_f32)(k2);
}

static inline V(vf) V(scale_low_f32)(V(vf) y, V(vi) k) {
    V(vi) bottom = k < -126;
    V(vi) k1 = V(select_i32)(bottom, k + SCALE_STEP_F32, k);
    V(vi) k2 = V(select_i32)(bottom, V(splat_i32)(-SCALE_STEP_F32), V(splat_i32)(0));
    return (y * V(pow2_f32)(k1)) * V(pow2_f32)(k2);
}

static inline V(vf) V(exp_reduced_f32)(V(vf) hi, V(vf) lo, V(vf) *yl) {
    V(vf) r = hi - lo;
    V(vf) t = r * r;
    V(vf) p = V(splat_f32)(EXP_P1_F32);
    p = EXP_P0_F32 + t * p;
    V(vf) c = r - t * p;
    V(vf) q = (lo - (r * c) / (2.0f - c)) - hi;
    V(vf) y = 1.0f - q;
    *yl = (1.0f - y) - q;
    return y;
}

static inline V(vf) V(exp_parts_f32)(V(vf) x, V(vf) xl, V(vf) *yl, V(vi) *k) {
    V(vf) kd = x * INV_LN2_F32 + ROUND_SHIFT_F32;
    *k = (V(vi))((V(vu))kd - (V(vu))V(splat_f32)(ROUND_SHIFT_F32));
    kd = kd - ROUND_SHIFT_F32;
    V(vf) hi = x - kd * LN2_HI_F32;
    V(vf) lo = kd * LN2_LO_F32 - xl;
    return V(exp_reduced_f32)(hi, lo, yl);
}

static V(vf) V(exp_f32)(V(vf) x) {
    V(vi) nan = x != x, over = x > EXP_OVERFLOW_F32, under = x < EXP_UNDERFLOW_F32;
    V(vf) xs = V(select_f32)(nan | over | under, V(splat_f32)(0.0f), x);
    V(vf) yl;
    V(vi) k;
    V(vf) y = V(exp_parts_f32)(xs, V(splat_f32)(0.0f), &yl, &k);
    y = V(scale_f32)(y, k);
    y = V(select_f32)(under, V(splat_f32)(0.0f), y);
    y = V(select_f32)(over, V(inf_f32)(), y);
    return V(select_f32)(nan, V(nan_f32)(), y);
}

static inline V(vf) V(log_reduced_f32)(V(vf) f, V(vi) k) {
    V(vf) s = f / (2.0f + f);
    V(vf) z = s * s;
    V(vf) p = V(splat_f32)(LOG_L3_F32);
    p = LOG_L2_F32 + z * p;
    p = LOG_L1_F32 + z * p;
    p = LOG_L0_F32 + z * p;
    V(vf) R = z * p;
    V(vf) h = (0.5f * f) * f;
    V(vf) dk = __builtin_convertvector(k, V(vf)); /* exact: |k| < 2^24 */
    return dk * LN2_HI_F32 - ((h - (s * (h + R) + dk * LN2_LO_F32)) - f);
}

static V(vf) V(log_f32)(V(vf) x) {
    V(vi) nan = (x != x) | (x < 0.0f), zero = x == 0.0f, inf = x == V(inf_f32)();
    V(vf) xs = V(select_f32)(nan | zero | inf, V(splat_f32)(1.0f), x);
    V(vi) sub = xs < 0x1p-126f;
    xs = V(select_f32)(sub, xs * LOG_NORMALIZE_F32, xs);
    V(vi) k = sub & -LOG_NORMALIZE_K_F32;
    V(vu) u = (V(vu))xs;
    k = k + (V(vi))(u >> 23) - 127;
    V(vf) m = (V(vf))((u & 0x007fffffu) | 0x3f800000u);
    V(vi) big = m > SQRT2_F32;
    m = V(select_f32)(big, m * 0.5f, m);
    k = k - big;
    V(vf) y = V(log_reduced_f32)(m - 1.0f, k);
    y = V(select_f32)(inf, x, y);
    y = V(select_f32)(zero, -V(inf_f32)(), y);
    return V(select_f32)(nan, V(nan_f32)(), y);
}

static inline V(vf) V(tanh_small_f32)(V(vf) a) {
    V(vf) t = a * a;
    V(vf) p = V(splat_f32)(TANH_P4_F32);
    p = TANH_P3_F32 + t * p;
    p = TANH_P2_F32 + t * p;
    p = TANH_P1_F32 + t * p;
    p = TANH_P0_F32 + t * p;
    return a + (a * t) * p;
}

static inline V(vf) V(tanh_tail_f32)(V(vf) a) {
    V(vf) ml;
    V(vi) k;
    V(vf) m = V(exp_parts_f32)(a + a, V(splat_f32)(0.0f), &ml, &k);
    V(vf) E = V(scale_low_f32)(m, k), El = V(scale_low_f32)(ml, k);
    V(vf) d = E + 1.0f;
    V(vf) dl = (1.0f - (d - E)) + El;
    V(vf) t = 2.0f / d;
    return t - (t * dl) / d;
}

static V(vf) V(tanh_f32)(V(vf) x) {
    V(vi) neg = x < 0.0f;
    V(vf) a = V(select_f32)(neg, -x, x);
    V(vi) small = a < TANH_SMALL_F32;
    V(vi) tail = ~small & (a <= TANH_ONE_F32);
    V(vf) y = V(splat_f32)(1.0f);
    if (V(any_i32)(tail))
        y = V(select_f32)(tail, 1.0f - V(tanh_tail_f32)(V(select_f32)(tail, a, V(splat_f32)(1.0f))), y);
    if (V(any_i32)(small)) y = V(select_f32)(small, V(tanh_small_f32)(a), y);
    y = V(select_f32)(neg, -y, y);
    y = V(select_f32)(a < TANH_TINY_F32, x, y);
    return V(select_f32)(x != x, V(nan_f32)(), y);
}

static inline V(vf) V(sigmoid_parts_f32)(V(vf) ah, V(vf) al, V(vf) *small, V(vi) *k) {
    V(vi) live = ah >= SIGMOID_ZERO_F32;
    V(vf) zero = V(splat_f32)(0.0f), ml;
    V(vf) m = V(exp_parts_f32)(V(select_f32)(live, ah, zero), V(select_f32)(live, al, zero), &ml, k);
    m = V(select_f32)(live, m, zero);
    ml = V(select_f32)(live, ml, zero);
    *k = *k & live;
    V(vf) e = V(scale_low_f32)(m, *k);
    V(vf) d = 1.0f + e;
    V(vf) dl = ((1.0f - d) + e) + V(scale_low_f32)(ml, *k);
    V(vf) big = 1.0f / d;
    big = big - (big * dl) / d;
    V(vf) sm = m / d;
    *small = sm + (ml - sm * dl) / d;
    return big;
}

static V(vf) V(sigmoid_f32)(V(vf) x) {
    V(vi) pos = x >= 0.0f;
    V(vf) small;
    V(vi) k;
    V(vf) big = V(sigmoid_parts_f32)(V(select_f32)(pos, -x, x), V(splat_f32)(0.0f), &small, &k);
    V(vf) y = V(select_f32)(pos, big, V(scale_low_f32)(small, k));
    return V(select_f32)(x != x, V(nan_f32)(), y);
}

static inline V(vf) V(two_prod_f32)(V(vf) a, V(vf) b, V(vf) *e) {
    V(vf) p = a * b;
    V(vf) ta = SPLIT_F32 * a, tb = SPLIT_F32 * b;
    V(vf) ah = ta - (ta - a), bh = tb - (tb - b);
    V(vf) al = a - ah, bl = b - bh;
    *e = (((ah * bh - p) + ah * bl) + al * bh) + al * bl;
    return p;
}

static inline V(vf) V(two_sum_f32)(V(vf) a, V(vf) b, V(vf) *e) {
    V(vf) s = a + b;
    V(vf) bb = s - a;
    *e = (a - (s - bb)) + (b - bb);
    return s;
}

static inline V(vf) V(gelu_arg_f32)(V(vf) x, V(vf) *vl) {
    V(vf) x2l, x2 = V(two_prod_f32)(x, x, &x2l);
    V(vf) x3l, x3 = V(two_prod_f32)(x2, x, &x3l);
    x3l = x3l + x2l * x;
    V(vf) cl, c3 = V(two_prod_f32)(V(splat_f32)(GELU_C_HI_F32), x3, &cl);
    cl = cl + (GELU_C_HI_F32 * x3l + GELU_C_LO_F32 * x3);
    V(vf) wl, w = V(two_sum_f32)(x, c3, &wl);
    wl = wl + cl;
    V(vf) v = V(two_prod_f32)(V(splat_f32)(GELU_K_HI_F32), w, vl);
    *vl = *vl + (GELU_K_HI_F32 * wl + GELU_K_LO_F32 * w);
    return v;
}

static inline V(vf) V(gelu_parts_f32)(V(vf) xs, V(vf) *small, V(vi) *k, V(vi) *pos) {
    V(vf) vl, v = V(gelu_arg_f32)(xs, &vl);
    *pos = v >= 0.0f;
    return V(sigmoid_parts_f32)(V(select_f32)(*pos, -v, v), V(select_f32)(*pos, -vl, vl), small, k);
}

static V(vf) V(gelu_f32)(V(vf) x) {
    V(vi) nan = x != x, one = x > GELU_ONE_F32, zero = x < GELU_ZERO_F32;
    V(vf) xs = V(select_f32)(nan | one | zero, V(splat_f32)(0.0f), x), small;
    V(vi) k, pos;
    V(vf) big = V(gelu_parts_f32)(xs, &small, &k, &pos);
    V(vf) y = V(select_f32)(pos, xs * big, V(scale_low_f32)(xs * small, k));
    y = V(select_f32)(zero, V(splat_f32)(-0.0f), y);
    y = V(select_f32)(one, x, y);
    return V(select_f32)(nan, V(nan_f32)(), y);
}

static V(vf) V(gelu_grad_f32)(V(vf) x) {
    V(vi) nan = x != x, one = x > GELU_ONE_F32, zero = x < GELU_ZERO_F32;
    V(vf) xs = V(select_f32)(nan | one | zero, V(splat_f32)(0.0f), x), small;
    V(vi) k, pos;
    V(vf) big = V(gelu_parts_f32)(xs, &small, &k, &pos);
    V(vf) xdv = xs * (GELU_K_HI_F32 + GELU_K3_F32 * (xs * xs));
    V(vf) y_pos = big + xdv * (big * V(scale_low_f32)(small, k));
    V(vf) y_neg = V(scale_low_f32)(small + xdv * (small * big), k);
    V(vf) y = V(select_f32)(pos, y_pos, y_neg);
    y = V(select_f32)(zero, V(splat_f32)(0.0f), y);
    y = V(select_f32)(one, V(splat_f32)(1.0f), y);
    return V(select_f32)(nan, V(nan_f32)(), y);
}

static V(vf) V(silu_f32)(V(vf) x) {
    V(vi) pos = x >= 0.0f;
    V(vf) small;
    V(vi) k;
    V(vf) big = V(sigmoid_parts_f32)(V(select_f32)(pos, -x, x), V(splat_f32)(0.0f), &small, &k);
    V(vf) y = V(select_f32)(pos, x * big, V(scale_low_f32)(x * small, k));
    y = V(select_f32)(x < SILU_ZERO_F32, V(splat_f32)(-0.0f), y);
    return V(select_f32)(x != x, V(nan_f32)(), y);
}

static V(vf) V(silu_grad_f32)(V(vf) x) {
    V(vi) pos = x >= 0.0f;
    V(vf) small;
    V(vi) k;
    V(vf) big = V(sigmoid_parts_f32)(V(select_f32)(pos, -x, x), V(splat_f32)(0.0f), &small, &k);
    V(vf) y_pos = big * (1.0f + x * V(scale_low_f32)(small, k));
    V(vf) y_neg = V(scale_low_f32)(small * (1.0f + x * big), k);
    V(vf) y = V(select_f32)(pos, y_pos, y_neg);
    y = V(select_f32)(x < SILU_ZERO_F32, V(splat_f32)(-0.0f), y);
    y = V(select_f32)(x > SILU_GRAD_ONE_F32, V(splat_f32)(1.0f), y);
    return V(select_f32)(x != x, V(nan_f32)(), y);
}

/* ================================================================ arrays */

// out[i] = F(x[i]): whole vectors, then the scalar function for the tail.
#define V_ARRAY(F, S, T, VT)                                                        \
    static void V(F##_array_##S)(T *out, const T *x, int64_t n) {                   \
        const int64_t w = VB / sizeof(T);                                           \
        int64_t i = 0;                                                              \
        for (; i + w <= n; i += w) {                                                \
            V(VT) v;                                                                \
            memcpy(&v, x + i, sizeof v); /* unaligned; in place is fine */          \
            v = V(F##_##S)(v);                                                      \
            memcpy(out + i, &v, sizeof v);                                          \
        }                                                                           \
        for (; i < n; i++) out[i] = mica_##F##_##S(x[i]);                           \
    }
#define V_ARRAY_BOTH(F) V_ARRAY(F, f64, double, vd) V_ARRAY(F, f32, float, vf)
MICA_MATH_ARRAY_FUNCTIONS(V_ARRAY_BOTH)
#undef V_ARRAY_BOTH
#undef V_ARRAY

#undef LT64
#undef LE64
#undef GT64
#undef GE64
#undef EQ64
#undef NAN64
#undef VL32
#undef VL64
#undef V
#undef VCAT
#undef VCAT2
#undef VB
#undef VNAME
