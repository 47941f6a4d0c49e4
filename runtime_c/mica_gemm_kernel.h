/* mica_gemm_kernel.h: one instantiation of the fast GEMM. Not a public
 * header: mica_gemm.c includes it once per (element type, instruction set),
 * after defining
 *   GT          the element type, float or double
 *   GNAME       the suffix of this instantiation's names, e.g. f32_avx512
 *   GVB         vector width in bytes: 16 (SSE2, NEON), 32 (AVX2), 64 (AVX-512)
 *   GMR, GNV    micro-tile: GMR rows by GNV vectors (GNR = GNV*lanes columns)
 *   GKC, GMC, GNC   cache blocks over k, m and n
 *   GSPLAT      1: pack each A element already broadcast to a whole vector
 *               (SSE2 has no broadcast load; a shuffle per element would
 *               compete with the multiplies for the same ports), else 0
 * and optionally
 *   GTILE_ONLY  build only the blocked product (blocked_GNAME), for a second
 *               tile shape at a width whose other paths exist already
 *   GNARROW, GNARROW_COLS   such a blocked product, taken for products at
 *               most GNARROW_COLS wide
 * and undefines them all at the end. GFMA and GSPLAT_OF (one step of a
 * sum, and a scalar in every lane) come from mica_gemm.c, once for all.
 *
 * Shape legend: a micro-tile of c is (GMR, GNR); a packed A panel is
 * (kc, GMR), k-major; a packed B panel is (kc, GNR), k-major.
 *
 * Every element's sum runs over p in increasing order, one fused multiply-add
 * at a time: vectors span j (columns of c), never p. Splitting k into GKC
 * blocks carries the running sum through c between blocks, in order.
 */

#define GCAT2(x, y) x##_##y
#define GCAT(x, y) GCAT2(x, y)
#define G(name) GCAT(name, GNAME)
#define GVL ((int)(GVB / sizeof(GT)))
#define GNR (GNV * GVL)
#define GAW (GSPLAT ? GVL : 1) /* packed width of one A element */

typedef GT G(vec) __attribute__((vector_size(GVB)));

static inline G(vec) G(loadu)(const GT *p) {
    G(vec) v;
    __builtin_memcpy(&v, p, sizeof v); // unaligned: rows of c may start anywhere
    return v;
}

static inline void G(storeu)(GT *p, G(vec) v) {
    __builtin_memcpy(p, &v, sizeof v);
}

// acc + x*y rounded once (mica_fma.h). AVX2 (with FMA), AVX-512 and NEON
// have the instruction (GFMA); x86_64's SSE2 kernels, for CPUs without it,
// take the software lane by lane.
#if GVB == 16 && defined(__x86_64__) && !defined(GEMM_UNFUSED)
#define GSOFT_FMA 1
#else
#define GSOFT_FMA 0
#endif

static inline GT G(fma1)(GT x, GT y, GT acc) {
#if GSOFT_FMA
    return _Generic(acc, float: mica_soft_fma_f32, double: mica_soft_fma_f64)(x, y, acc);
#else
    return GFMA(x, y, acc);
#endif
}

static inline G(vec) G(fma)(G(vec) x, G(vec) y, G(vec) acc) {
#if GSOFT_FMA
    for (int l = 0; l < GVL; l++) acc[l] = G(fma1)(x[l], y[l], acc[l]);
    return acc;
#else
    return GFMA(x, y, acc);
#endif
}

/* ------------------------------------------------------------ micro-kernel */

// c is (GMR, GNR) with row stride ldc, ap is (kc, GMR) packed (times GAW), bp is (kc, GNR) packed.
// acc = (flags & GEMM_LOAD) ? c : 0; acc += ap[p] * bp[p] for p in order;
// c = (flags & GEMM_ADD) ? c + acc : acc.
static void G(micro)(int64_t kc, const GT *restrict ap, const GT *restrict bp,
                     GT *restrict c, int64_t ldc, int flags) {
    G(vec) acc[GMR][GNV];
    for (int r = 0; r < GMR; r++)
        for (int v = 0; v < GNV; v++)
            acc[r][v] = (flags & GEMM_LOAD) ? G(loadu)(c + r * ldc + v * GVL) : (G(vec)){0};
    for (int64_t p = 0; p < kc; p++) {
        G(vec) bv[GNV];
#pragma clang loop unroll(full) /* acc must live in registers: unroll past clang's default limits */
        for (int v = 0; v < GNV; v++) bv[v] = G(loadu)(bp + v * GVL);
#pragma clang loop unroll(full)
        for (int r = 0; r < GMR; r++) {
#if GSPLAT
            G(vec) ar = G(loadu)(ap + r * GVL);
#else
            G(vec) ar = GSPLAT_OF(G(vec), ap[r]);
#endif
#pragma clang loop unroll(full)
            for (int v = 0; v < GNV; v++) acc[r][v] = G(fma)(bv[v], ar, acc[r][v]);
        }
        ap += GMR * GAW;
        bp += GNR;
    }
    for (int r = 0; r < GMR; r++)
        for (int v = 0; v < GNV; v++) {
            G(vec) x = acc[r][v];
            if (flags & GEMM_ADD) x = G(loadu)(c + r * ldc + v * GVL) + x;
            G(storeu)(c + r * ldc + v * GVL, x);
        }
}

// c is (mr, nr) with mr <= GMR, nr <= GNR: run the full tile on a copy, keep the valid part.
static void G(micro_edge)(int64_t kc, const GT *ap, const GT *bp, GT *c, int64_t ldc,
                          int64_t mr, int64_t nr, int flags) {
    GT tile[GMR * GNR] __attribute__((aligned(64)));
    if (flags)
        for (int64_t r = 0; r < mr; r++)
            for (int64_t j = 0; j < nr; j++) tile[r * GNR + j] = c[r * ldc + j];
    G(micro)(kc, ap, bp, tile, GNR, flags);
    for (int64_t r = 0; r < mr; r++)
        for (int64_t j = 0; j < nr; j++) c[r * ldc + j] = tile[r * GNR + j];
}

/* ------------------------------------------------------------ packing */

// 16-byte vectors and an in-register transpose of GL16 of them (GL16 x GL16
// elements), for packing row-major A without a scalar load per element.
#define GL16 ((int)(16 / sizeof(GT)))
typedef GT G(vec16) __attribute__((vector_size(16)));

static inline void G(transpose16)(G(vec16) *r) {
#if GT_IS_FLOAT
    G(vec16) t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
    G(vec16) t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
    G(vec16) t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
    G(vec16) t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
    r[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    r[1] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    r[2] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    r[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
#else
    G(vec16) t0 = __builtin_shufflevector(r[0], r[1], 0, 2);
    r[1] = __builtin_shufflevector(r[0], r[1], 1, 3);
    r[0] = t0;
#endif
}

// ap is (kc, GMR): a full panel of row-major A (rows src + r*lda), by GL16 x GL16
// transposes; rows past the last whole GL16 (AVX2's 6-row float tile has 2) go one
// element at a time, each along its own row of src.
static void G(pack_a_rows)(GT *restrict ap, const GT *src, int64_t lda, int64_t kc) {
    enum { whole = GMR / GL16 * GL16 };
    int64_t p = 0;
    for (; p + GL16 <= kc; p += GL16)
        for (int r0 = 0; r0 < whole; r0 += GL16) {
            G(vec16) blk[GL16];
            for (int q = 0; q < GL16; q++) __builtin_memcpy(&blk[q], src + (r0 + q) * lda + p, 16);
            G(transpose16)(blk);
            for (int q = 0; q < GL16; q++) __builtin_memcpy(ap + (p + q) * GMR + r0, &blk[q], 16);
        }
    for (int r = whole; r < GMR; r++)
        for (int64_t j = 0; j < p; j++) ap[j * GMR + r] = src[r * lda + j]; // the columns the transposes covered
    for (; p < kc; p++)
        for (int r = 0; r < GMR; r++) ap[p * GMR + r] = src[r * lda + p];
}

// ap gets rows [i0, i0+mc) x cols [p0, p0+kc) of op(A) as (kc, GMR) panels, zero-padded,
// each element written GAW times.
static void G(pack_a)(GT *restrict ap, const gemm_args *g, int64_t i0, int64_t mc,
                      int64_t p0, int64_t kc) {
    const GT *a = g->a;
    for (int64_t ir = 0; ir < mc; ir += GMR, ap += kc * GMR * GAW) {
        int64_t mr = mc - ir < GMR ? mc - ir : GMR, i = i0 + ir;
        if (mr == GMR && !GSPLAT) { // the common case, fast
            if (g->trans_a) // A(i,p) = a[p*lda + i]: a panel row is contiguous
                for (int64_t p = 0; p < kc; p++)
                    __builtin_memcpy(ap + p * GMR, a + (p0 + p) * g->lda + i, GMR * sizeof(GT));
            else
                G(pack_a_rows)(ap, a + i * g->lda + p0, g->lda, kc);
            continue;
        }
        // element (r, p) of the panel is src[r*rs + p*ps]
        int64_t rs = g->trans_a ? 1 : g->lda, ps = g->trans_a ? g->lda : 1;
        const GT *src = g->trans_a ? a + p0 * g->lda + i : a + i * g->lda + p0;
        for (int64_t p = 0; p < kc; p++)
            for (int r = 0; r < GMR; r++) {
                GT x = r < mr ? src[r * rs + p * ps] : 0;
                for (int l = 0; l < GAW; l++) ap[(p * GMR + r) * GAW + l] = x;
            }
    }
}

// bp gets panels [q0, q1) (GNR columns each, from column j0) x rows [p0, p0+kc) of op(B).
static void G(pack_b)(GT *restrict bp, const gemm_args *g, int64_t j0, int64_t nc,
                      int64_t p0, int64_t kc, int64_t q0, int64_t q1) {
    const GT *b = g->b;
    for (int64_t q = q0; q < q1; q++) {
        int64_t j = j0 + q * GNR, nr = nc - q * GNR < GNR ? nc - q * GNR : GNR;
        GT *dst = bp + q * kc * GNR;
        if (g->trans_b) { // B(p,j) = b[j*ldb + p]: read each row of b along p, scatter by GNR
            for (int c = 0; c < GNR; c++) {
                const GT *src = b + (j + c) * g->ldb + p0;
                for (int64_t p = 0; p < kc; p++) dst[p * GNR + c] = c < nr ? src[p] : 0;
            }
        } else if (nr == GNR) { // B(p,j) = b[p*ldb + j]: a panel row is contiguous
            for (int64_t p = 0; p < kc; p++)
                __builtin_memcpy(dst + p * GNR, b + (p0 + p) * g->ldb + j, GNR * sizeof(GT));
        } else {
            for (int64_t p = 0; p < kc; p++) {
                const GT *src = b + (p0 + p) * g->ldb + j;
                for (int c = 0; c < GNR; c++) dst[p * GNR + c] = c < nr ? src[c] : 0;
            }
        }
    }
}

static void G(pack_b_task)(void *ctx, int64_t q0, int64_t q1) {
    gemm_block *blk = ctx;
    G(pack_b)(blk->bp, blk->g, blk->j0, blk->nc, blk->p0, blk->kc, q0, q1);
}

/* ------------------------------------------------------------ macro-kernel */

// c rows [i0, i0+mc) x B panels [q0, q1) of the current block, with A packed in ap.
static void G(macro)(const gemm_block *blk, const GT *ap, int64_t i0, int64_t mc,
                     int64_t q0, int64_t q1) {
    const gemm_args *g = blk->g;
    for (int64_t q = q0; q < q1; q++) { // one B panel stays in L1 while A streams from L2
        int64_t j = q * GNR, nr = blk->nc - j < GNR ? blk->nc - j : GNR;
        const GT *bq = (const GT *)blk->bp + q * blk->kc * GNR;
        for (int64_t ir = 0; ir < mc; ir += GMR) {
            int64_t mr = mc - ir < GMR ? mc - ir : GMR;
            GT *ct = (GT *)g->c + (i0 + ir) * g->ldc + blk->j0 + j;
            const GT *at = ap + ir * blk->kc * GAW;
            if (mr == GMR && nr == GNR) G(micro)(blk->kc, at, bq, ct, g->ldc, blk->flags);
            else G(micro_edge)(blk->kc, at, bq, ct, g->ldc, mr, nr, blk->flags);
        }
    }
}

// rows [r0, r1) x B panels [q0, q1): pack A a GMC block at a time, then multiply.
static void G(compute)(const gemm_block *blk, int64_t r0, int64_t r1, int64_t q0, int64_t q1) {
#if GVB == 16 && defined(__x86_64__)
    // Legacy SSE runs slowly on a thread whose upper vector halves are dirty:
    // pool threads here measured 1.4x slower until cleared. Only on AVX CPUs.
    if (gemm_cpu_has_avx) __asm__ volatile("vzeroupper");
#endif
    GT *ap = gemm_scratch(GEMM_SCRATCH_A, (size_t)GMC * blk->kc * GAW * sizeof(GT));
    for (int64_t i0 = r0; i0 < r1; i0 += GMC) {
        int64_t mc = r1 - i0 < GMC ? r1 - i0 : GMC;
        G(pack_a)(ap, blk->g, i0, mc, blk->p0, blk->kc);
        G(macro)(blk, ap, i0, mc, q0, q1);
    }
}

static void G(rows_task)(void *ctx, int64_t t0, int64_t t1) { // tasks are GMR-row panels
    gemm_block *blk = ctx;
    int64_t r1 = t1 * GMR < blk->g->m ? t1 * GMR : blk->g->m;
    G(compute)(blk, t0 * GMR, r1, 0, blk->npanels);
}

static void G(cols_task)(void *ctx, int64_t q0, int64_t q1) { // tasks are B panels
    gemm_block *blk = ctx;
    G(compute)(blk, 0, blk->g->m, q0, q1);
}

// Runs the blocked product. With g->accumulate, k must fit one block: an
// accumulating block is up to GEMM_ACC_BLOCKS * GKC deep, so c is read once.
static void G(blocked)(const gemm_args *g, bool parallel) {
    gemm_block blk = {.g = g};
    int64_t kcmax = g->accumulate ? GEMM_ACC_BLOCKS * GKC : GKC;
    int64_t mpanels = (g->m + GMR - 1) / GMR;
    int threads = parallel ? mica_thread_count() : 1;
    for (int64_t j0 = 0; j0 < g->n; j0 += GNC) {
        blk.j0 = j0;
        blk.nc = g->n - j0 < GNC ? g->n - j0 : GNC;
        blk.npanels = (blk.nc + GNR - 1) / GNR;
        for (int64_t p0 = 0; p0 < g->k; p0 += kcmax) {
            blk.p0 = p0;
            blk.kc = g->k - p0 < kcmax ? g->k - p0 : kcmax;
            blk.flags = (p0 > 0 ? GEMM_LOAD : 0) | (g->accumulate ? GEMM_ADD : 0);
            blk.bp = gemm_scratch(GEMM_SCRATCH_B, (size_t)blk.npanels * GNR * blk.kc * sizeof(GT));
            if (threads == 1) {
                G(pack_b_task)(&blk, 0, blk.npanels);
                G(rows_task)(&blk, 0, mpanels);
                continue;
            }
            mica_parallel_for(blk.npanels, G(pack_b_task), &blk);
            // split c by rows when there are enough row panels, else by columns
            if (mpanels >= 2 * threads || mpanels >= blk.npanels)
                mica_parallel_for(mpanels, G(rows_task), &blk);
            else
                mica_parallel_for(blk.npanels, G(cols_task), &blk);
        }
    }
}

#ifndef GTILE_ONLY /* the paths below depend on the vector width only: one copy per width */

/* ------------------------------------------------------------ small products */


// A(i,p): the one element fetch the small path needs
static inline GT G(a_at)(const gemm_args *g, int64_t i, int64_t p) {
    const GT *a = g->a;
    return g->trans_a ? a[p * g->lda + i] : a[i * g->lda + p];
}

// c is (m,n): the direct loop, no packing, vectorised over j when B rows are
// contiguous (full vectors, then 16-byte ones, then scalars).
static void G(small)(const gemm_args *g) {
    const GT *b = g->b;
    GT *c = g->c;
    const int64_t w16 = 16 / sizeof(GT);
    for (int64_t i = 0; i < g->m; i++) {
        GT *ci = c + i * g->ldc;
        int64_t j = 0;
        if (!g->trans_b) {
            for (; j + GVL <= g->n; j += GVL) {
                G(vec) acc = {0};
                for (int64_t p = 0; p < g->k; p++) acc = G(fma)(G(loadu)(b + p * g->ldb + j), GSPLAT_OF(G(vec), G(a_at)(g, i, p)), acc);
                if (g->accumulate) acc = G(loadu)(ci + j) + acc;
                G(storeu)(ci + j, acc);
            }
            for (; GVB > 16 && j + w16 <= g->n; j += w16) {
                G(vec16) acc = {0}, x;
                for (int64_t p = 0; p < g->k; p++) {
                    __builtin_memcpy(&x, b + p * g->ldb + j, sizeof x);
                    acc = GFMA(x, GSPLAT_OF(G(vec16), G(a_at)(g, i, p)), acc); // only where GVB > 16: the instruction
                }
                if (g->accumulate) __builtin_memcpy(&x, ci + j, sizeof x), acc = x + acc;
                __builtin_memcpy(ci + j, &acc, sizeof acc);
            }
        }
        for (; j < g->n; j++) {
            GT acc = 0;
            for (int64_t p = 0; p < g->k; p++)
                acc = G(fma1)(G(a_at)(g, i, p), g->trans_b ? b[j * g->ldb + p] : b[p * g->ldb + j], acc);
            ci[j] = g->accumulate ? ci[j] + acc : acc;
        }
    }
}

/* ------------------------------------------------------------ thin products */

// A few rows of c (m <= GEMM_THIN_ROWS) against row-contiguous B, as in a
// vector-matrix product. Packing B would cost more than the product, so B is
// streamed row by row, once, while the running sums of a strip of c (up to
// GEMM_THIN_COLS wide) wait in a scratch buffer. Per element the order is
// still p = 0, 1, ... Tasks are strips: c is (m, g->strip) per task.
static void G(thin_task)(void *ctx, int64_t s0, int64_t s1) {
    const gemm_args *g = ctx;
    const GT *b = g->b;
    int64_t ws = g->strip;
    GT *acc = gemm_scratch(GEMM_SCRATCH_A, (size_t)g->m * ws * sizeof(GT));
    for (int64_t s = s0; s < s1; s++) {
        int64_t j0 = s * ws, w = g->n - j0 < ws ? g->n - j0 : ws;
        int64_t wv = w - w % GVL; /* vector part of the strip */
        __builtin_memset(acc, 0, (size_t)g->m * ws * sizeof(GT));
        for (int64_t p = 0; p < g->k; p++) {
            const GT *bp = b + p * g->ldb + j0;
            for (int64_t r = 0; r < g->m; r++) {
                GT ar = G(a_at)(g, r, p), *ac = acc + r * ws;
                for (int64_t j = 0; j < wv; j += GVL)
                    G(storeu)(ac + j, G(fma)(G(loadu)(bp + j), GSPLAT_OF(G(vec), ar), G(loadu)(ac + j)));
                for (int64_t j = wv; j < w; j++) ac[j] = G(fma1)(ar, bp[j], ac[j]);
            }
        }
        for (int64_t r = 0; r < g->m; r++) {
            GT *c = (GT *)g->c + r * g->ldc + j0;
            const GT *ac = acc + r * ws;
            for (int64_t j = 0; j < w; j++) c[j] = g->accumulate ? c[j] + ac[j] : ac[j];
        }
    }
}

static void G(thin)(gemm_args *g, bool parallel) {
    int threads = parallel ? mica_thread_count() : 1;
    int64_t w = (g->n + threads - 1) / threads; // one strip per thread when it fits
    w = w < GEMM_THIN_COLS ? w : GEMM_THIN_COLS;
    g->strip = (w + 15) & ~(int64_t)15;
    int64_t strips = (g->n + g->strip - 1) / g->strip;
    if (threads > 1) mica_parallel_for(strips, G(thin_task), g);
    else G(thin_task)(g, 0, strips);
}

/* ------------------------------------------------------------ driver */

static void G(add_task)(void *ctx, int64_t i0, int64_t i1) { // c += tmp, row by row
    const gemm_args *g = ctx;
    for (int64_t i = i0; i < i1; i++) {
        GT *c = (GT *)g->c + i * g->ldc;
        const GT *t = (const GT *)g->tmp + i * g->n;
        for (int64_t j = 0; j < g->n; j++) c[j] = c[j] + t[j];
    }
}

// The blocked product, or the narrow tile's when the product is narrow enough (GNARROW).
static void G(tiles)(const gemm_args *g, bool parallel) {
#ifdef GNARROW
    if (g->n <= GNARROW_COLS) {
        GNARROW(g, parallel);
        return;
    }
#endif
    G(blocked)(g, parallel);
}

static void G(gemm)(gemm_args *g) {
    if (g->m <= 0 || g->n <= 0) return;
    double work = (double)g->m * (double)g->n * (double)g->k;
    // tiny products: the direct loop; up to 8x more when B rows are contiguous
    if (g->k == 0 || work <= GEMM_SMALL_WORK || (!g->trans_b && work <= 8 * GEMM_SMALL_WORK)) {
        G(small)(g);
        return;
    }
    bool parallel = work >= GEMM_PARALLEL_WORK;
    if (g->m <= GEMM_THIN_ROWS && g->m < GMR && !g->trans_b) {
        G(thin)(g, parallel);
        return;
    }
    if (!g->accumulate || g->k <= GEMM_ACC_BLOCKS * GKC) {
        G(tiles)(g, parallel);
        return;
    }
    // Accumulating over several k blocks: c must keep its old value until the
    // whole sum is known, so sum into a temporary (m,n) and add it at the end.
    // (k is long here, so the allocation is cheap next to the product.)
    g->tmp = gemm_alloc((size_t)g->m * g->n * sizeof(GT));
    gemm_args t = *g;
    t.c = g->tmp;
    t.ldc = g->n;
    t.accumulate = false;
    G(tiles)(&t, parallel);
    if (parallel) mica_parallel_for(g->m, G(add_task), g);
    else G(add_task)(g, 0, g->m);
    free(g->tmp);
}

#endif /* GTILE_ONLY */

#undef GCAT2
#undef GCAT
#undef G
#undef GVL
#undef GNR
#undef GAW
#undef GL16
#undef GT_IS_FLOAT
#undef GSPLAT
#undef GT
#undef GNAME
#undef GVB
#undef GMR
#undef GNV
#undef GKC
#undef GMC
#undef GNC
#undef GTILE_ONLY
#undef GSOFT_FMA
#undef GNARROW
#undef GNARROW_COLS
