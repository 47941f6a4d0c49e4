/* mica_gemm.c: deterministic, fast matrix products (row-major GEMM).
 *
 * THE DETERMINISM CONTRACT. For every output (i, j):
 *
 *     acc = 0
 *     for p = 0 .. k-1, in increasing order:
 *         acc = fma(A(i,p), B(p,j), acc)  -- the exact acc + A*B, rounded once
 *     c[i*ldc + j] = accumulate ? c[i*ldc + j] + acc : acc
 *
 * with A(i,p) = trans_a ? a[p*lda + i] : a[i*lda + p] and
 *      B(p,j) = trans_b ? b[j*ldb + p] : b[p*ldb + j].
 *
 * Every path below (reference, small, blocked, any instruction set, any
 * thread count) performs exactly these IEEE operations per element, so the
 * bits agree across runs, MICA_THREADS, -O0/-O2, SSE2/AVX2/AVX-512/NEON and
 * x86_64/aarch64. What makes that hold:
 *   - IEEE 754 defines fused multiply-add to one rounding: x86's FMA3
 *     (vfmadd), AArch64's fmla and PTX's fma.rn give the same bits, and so
 *     does mica_fma.c's software, which the SSE2 kernels (x86_64 CPUs
 *     without FMA) use; nothing else is fused (-ffp-contract=off, no
 *     fast-math);
 *   - vectors span j (a row of c), never p, so no sum is reassociated;
 *   - blocking over k carries the running sum through c in order; an
 *     accumulating product runs k <= GEMM_ACC_BLOCKS*GEMM_KC as one block
 *     (c + acc at the end) and longer ones sum into a temporary first;
 *   - threads split c into disjoint tiles: one sum is never split.
 * Outside the contract: which NaN bit pattern a NaN result carries (x86 and
 * ARM make different default NaNs); every NaN stays a NaN.
 *
 * Structure (after BLIS / Goto): for each (GNC columns) x (GKC depth) block,
 * B is packed into k-major panels GNR wide, shared by all threads; each
 * thread owns a set of rows (or of B panels when rows are few), packs A a
 * GMC x GKC block at a time into GMR-tall panels, and runs a GMR x GNR
 * register-blocked micro-kernel written with clang vector extensions. The
 * kernel code is in mica_gemm_kernel.h, instantiated here per element type
 * and instruction set; x86_64 picks AVX-512, AVX2 or SSE2 at run time
 * (CPUID), since the bits are the same and AVX-512 is 4x faster than SSE2.
 * Products of at most GEMM_SMALL_WORK multiply-adds (8x that when B rows
 * are contiguous) skip packing, and so do products of a few rows against a
 * row-major B (vector-matrix); threads join from GEMM_PARALLEL_WORK on.
 */
#include "mica_gemm.h"
#include "mica_cpu.h"
#include "mica_fma.h"
#include "mica_threads.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEMM_LOAD 1 /* micro-kernel: start from c (a later k block) */
#define GEMM_ADD 2  /* micro-kernel: c = c + acc at the end */

/* One step of a sum, on any scalar or vector type: fma's single rounding, the
 * instruction wherever a kernel's target has it. -DGEMM_UNFUSED builds the
 * rule this replaced, a multiply and an add, for bench/gemm.py --unfused
 * only: not Mica's bits. */
#if defined(GEMM_UNFUSED)
#define GFMA(x, y, acc) ((acc) + (x) * (y))
#else
#define GFMA(x, y, acc) __builtin_elementwise_fma(x, y, acc)
#endif
/* x in every lane of a vector of type V. x - 0 is x for every x (0 + x would
 * turn -0 into +0). */
#define GSPLAT_OF(V, x) ((x) - (V){0})

#ifndef GEMM_SMALL_WORK
#define GEMM_SMALL_WORK (8.0 * 8 * 8) /* m*n*k below which packing does not pay */
#endif
#ifndef GEMM_PARALLEL_WORK
#define GEMM_PARALLEL_WORK (64.0 * 64 * 64) /* m*n*k below which threads do not pay */
#endif

/* ------------------------------------------------------------ reference */

// c is (m,n), op(a) is (m,k), op(b) is (k,n): the contract, literally, with
// the software fma: the test of every fast path against it is also a test of
// the instruction against the software.
#define MICA_GEMM_REFERENCE(T, S)                                                                \
    void mica_gemm_reference_##S(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,    \
                                 const T *a, int64_t lda, const T *b, int64_t ldb, T *c,         \
                                 int64_t ldc, bool accumulate) {                                 \
        for (int64_t i = 0; i < m; i++)                                                          \
            for (int64_t j = 0; j < n; j++) {                                                    \
                T acc = 0;                                                                       \
                for (int64_t p = 0; p < k; p++) {                                                \
                    T x = trans_a ? a[p * lda + i] : a[i * lda + p];                             \
                    T y = trans_b ? b[j * ldb + p] : b[p * ldb + j];                             \
                    acc = mica_soft_fma_##S(x, y, acc);                                          \
                }                                                                                \
                c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc : acc;                        \
            }                                                                                    \
    }
MICA_GEMM_REFERENCE(float, f32)
MICA_GEMM_REFERENCE(double, f64)
#undef MICA_GEMM_REFERENCE

/* ------------------------------------------------------------ shared state */

typedef struct {
    bool trans_a, trans_b, accumulate;
    int64_t m, n, k, lda, ldb, ldc;
    const void *a, *b;
    void *c;
    void *tmp;     /* (m,n) partial sums when accumulating over several k blocks */
    int64_t strip; /* columns per task of the thin path */
} gemm_args;

typedef struct { /* one (nc columns) x (kc depth) block of the product */
    const gemm_args *g;
    void *bp; /* packed B block: npanels panels of (kc, GNR) */
    int64_t j0, nc, npanels, p0, kc;
    int flags;
} gemm_block;

enum { GEMM_SCRATCH_A, GEMM_SCRATCH_B, GEMM_SCRATCH_SLOTS };

#if defined(__x86_64__)
static bool gemm_cpu_has_avx; /* set with the instruction set, before any product */
#endif

// Per-thread, grow-only buffers: packing reuses warm memory, and no call pays
// for mmap and page faults (musl maps large blocks afresh on each malloc).
// A thread's buffers are freed when it exits.
typedef struct {
    void *ptr[GEMM_SCRATCH_SLOTS];
    size_t cap[GEMM_SCRATCH_SLOTS];
} gemm_scratch_set;

static void scratch_free(void *set) {
    gemm_scratch_set *s = set;
    for (int i = 0; i < GEMM_SCRATCH_SLOTS; i++) free(s->ptr[i]);
    free(s);
}

static void *scratch_make(void) {
    return calloc(1, sizeof(gemm_scratch_set));
}

static _Noreturn void scratch_oom(size_t bytes) {
    fprintf(stderr, "mica: out of memory in matrix product (%zu bytes)\n", bytes);
    abort();
}

static void *gemm_alloc(size_t bytes) {
    size_t want = (bytes + 63) & ~(size_t)63;
    void *p = aligned_alloc(64, want);
    if (!p) scratch_oom(want);
    return p;
}

static void *gemm_scratch(int slot, size_t bytes) {
    gemm_scratch_set *s = mica_thread_local(MICA_LOCAL_GEMM, scratch_make, scratch_free);
    if (!s) scratch_oom(sizeof *s);
    if (bytes > s->cap[slot]) {
        free(s->ptr[slot]);
        size_t want = (bytes + bytes / 4 + 63) & ~(size_t)63;
        if (!(s->ptr[slot] = aligned_alloc(64, want))) scratch_oom(want);
        s->cap[slot] = want;
    }
    return s->ptr[slot];
}

/* ------------------------------------------------------------ instantiations */

/* Micro-tile shapes per instruction set (GMR rows x GNV vectors), measured
 * with bench/gemm_shapes.py; each can be overridden with -D. The GMR x GNV
 * accumulators plus GNV B vectors and temporaries must fit the register
 * file (16 on SSE2/AVX2, 32 on AVX-512 and NEON) or the kernel spills. On
 * the Zen 5 measured, every shape that fits runs within noise of the peak
 * of separate multiply and add (4x, 6x and 8x rows alike); 6x16 on AVX2
 * needs fewer loads per product than 4x16, for CPUs with fewer load ports. */
#ifndef GEMM_BASE_F32_MR
#if defined(__aarch64__) /* 8x12 spills: the scheduler hoists all products */
#define GEMM_BASE_F32_MR 8
#define GEMM_BASE_F32_NV 2
#define GEMM_BASE_F64_MR 8
#define GEMM_BASE_F64_NV 2
#else
#define GEMM_BASE_F32_MR 6
#define GEMM_BASE_F32_NV 2
#define GEMM_BASE_F64_MR 6
#define GEMM_BASE_F64_NV 2
#endif
#endif
#ifndef GEMM_AVX2_F32_MR
#define GEMM_AVX2_F32_MR 6
#define GEMM_AVX2_F32_NV 2
#define GEMM_AVX2_F64_MR 6
#define GEMM_AVX2_F64_NV 2
#endif
#ifndef GEMM_AVX512_F32_MR
#define GEMM_AVX512_F32_MR 8
#define GEMM_AVX512_F32_NV 2
#define GEMM_AVX512_F64_MR 8
#define GEMM_AVX512_F64_NV 2
#endif
#ifndef GEMM_AVX512_F32_NARROW_MR /* products at most 16 columns wide, see below */
#define GEMM_AVX512_F32_NARROW_MR 16
#define GEMM_AVX512_F32_NARROW_NV 1
#endif
#ifndef GEMM_KC
#define GEMM_KC 256
#endif
#ifndef GEMM_THIN_ROWS
#define GEMM_THIN_ROWS 4   /* products with at most this many rows stream B unpacked */
#define GEMM_THIN_COLS 4096 /* ... a strip of at most this many columns at a time */
#endif
#ifndef GEMM_ACC_BLOCKS
#define GEMM_ACC_BLOCKS 4 /* an accumulating product runs k <= 4*GEMM_KC as one block */
#endif
#ifndef GEMM_MC_PANELS
#define GEMM_MC_PANELS 16 /* GMC = this many micro-tile rows */
#endif
#ifndef GEMM_NC
#define GEMM_NC 4096
#endif

// baseline: 16-byte vectors, SSE2 on x86_64, NEON on aarch64
#ifndef GEMM_SPLAT
#if defined(__x86_64__)
#define GEMM_SPLAT 1
#else
#define GEMM_SPLAT 0
#endif
#endif
#define GT float
#define GT_IS_FLOAT 1
#define GNAME f32_base
#define GVB 16
#define GMR GEMM_BASE_F32_MR
#define GNV GEMM_BASE_F32_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_BASE_F32_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"

#define GT double
#define GT_IS_FLOAT 0
#define GNAME f64_base
#define GVB 16
#define GMR GEMM_BASE_F64_MR
#define GNV GEMM_BASE_F64_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_BASE_F64_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"

#if defined(__x86_64__)
// The same code at 32 and 64 bytes. The AVX2 level includes FMA3
// (mica_cpu.h); the target strings enable the written fmas, and
// -ffp-contract=off still keeps the compiler from fusing anything else.
#undef GEMM_SPLAT
#define GEMM_SPLAT 0 /* AVX2 and AVX-512 broadcast straight from memory */
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#define GT float
#define GT_IS_FLOAT 1
#define GNAME f32_avx2
#define GVB 32
#define GMR GEMM_AVX2_F32_MR
#define GNV GEMM_AVX2_F32_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_AVX2_F32_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"

#define GT double
#define GT_IS_FLOAT 0
#define GNAME f64_avx2
#define GVB 32
#define GMR GEMM_AVX2_F64_MR
#define GNV GEMM_AVX2_F64_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_AVX2_F64_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"
#pragma clang attribute pop

#pragma clang attribute push(__attribute__((target("avx512f"))), apply_to = function)
// AVX-512's float tile is 32 columns wide. A product at most 16 columns wide
// (one head's q, k or v at the example's size, and their weights' gradients)
// would leave half of every accumulator idle, and ran at half OpenBLAS's
// speed; a 16x16 tile keeps every lane busy. Only its tiles are built: the
// small and thin paths depend on the vector width alone. The bits are the
// same on either tile: only which elements share a tile changes.
#define GT float
#define GT_IS_FLOAT 1
#define GNAME f32_avx512_narrow
#define GVB 64
#define GMR GEMM_AVX512_F32_NARROW_MR
#define GNV GEMM_AVX512_F32_NARROW_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_AVX512_F32_NARROW_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#define GTILE_ONLY
#include "mica_gemm_kernel.h"

#define GT float
#define GT_IS_FLOAT 1
#define GNAME f32_avx512
#define GNARROW blocked_f32_avx512_narrow
#define GNARROW_COLS (GEMM_AVX512_F32_NARROW_NV * 16) /* 16 floats a vector */
#define GVB 64
#define GMR GEMM_AVX512_F32_MR
#define GNV GEMM_AVX512_F32_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_AVX512_F32_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"

#define GT double
#define GT_IS_FLOAT 0
#define GNAME f64_avx512
#define GVB 64
#define GMR GEMM_AVX512_F64_MR
#define GNV GEMM_AVX512_F64_NV
#define GKC GEMM_KC
#define GMC (GEMM_MC_PANELS * GEMM_AVX512_F64_MR)
#define GNC GEMM_NC
#define GSPLAT GEMM_SPLAT
#include "mica_gemm_kernel.h"
#pragma clang attribute pop
#endif

/* ------------------------------------------------------------ dispatch */

typedef struct {
    const char *name;
    void (*f32)(gemm_args *g);
    void (*f64)(gemm_args *g);
} gemm_isa_entry;

#if defined(__x86_64__)
/* Zen 4 runs each 512-bit operation as two 256-bit halves, yet its AVX-512
 * tiles run as fast as AVX2's there once the steps are fused (0.95-1.06x on
 * the GPT's wide products, best of 5 by CPU time, one thread), so every CPU
 * takes the widest set it has. Before fma, AVX2's tile was 1.04-1.24x ahead
 * on Zen 4 and products wider than 32 columns went to it. */
static const gemm_isa_entry gemm_isas[] = {
    {"sse2", gemm_f32_base, gemm_f64_base},
    {"avx2", gemm_f32_avx2, gemm_f64_avx2},
    {"avx512", gemm_f32_avx512, gemm_f64_avx512},
};

/* The table's index is the level (mica_cpu.h), which MICA_ISA and
 * MICA_GEMM_ISA cap. */
static int gemm_pick(void) {
    gemm_cpu_has_avx = mica_cpu_has_avx();
    return mica_isa_level("MICA_GEMM_ISA");
}
#else
static const gemm_isa_entry gemm_isas[] = {
    {"neon", gemm_f32_base, gemm_f64_base},
};

static int gemm_pick(void) {
    return mica_isa_level("MICA_GEMM_ISA");
}
#endif

static const gemm_isa_entry *gemm_isa_now(void) {
    static int chosen = -1;
    return &gemm_isas[mica_chosen_once(&chosen, gemm_pick)];
}

const char *mica_gemm_isa(void) {
    return gemm_isa_now()->name;
}

/* ------------------------------------------------------------ public entry points */

#define MICA_GEMM_FAST(T, S)                                                                     \
    void mica_gemm_##S(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T *a,  \
                       int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc, bool accumulate) { \
        gemm_args g = {.trans_a = trans_a, .trans_b = trans_b, .accumulate = accumulate,         \
                       .m = m, .n = n, .k = k < 0 ? 0 : k, .lda = lda, .ldb = ldb, .ldc = ldc,    \
                       .a = a, .b = b, .c = c};                                                  \
        gemm_isa_now()->S(&g);                                                                   \
    }
MICA_GEMM_FAST(float, f32)
MICA_GEMM_FAST(double, f64)
#undef MICA_GEMM_FAST
