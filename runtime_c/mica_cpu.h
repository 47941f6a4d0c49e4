/* mica_cpu.h: which vector instruction set the run-time dispatched kernels use.
 *
 * The GEMM (mica_gemm.c) and the array forms of the elementary functions
 * (mica_math_array.c) are compiled for several instruction sets and each
 * picks one when first used. All of them give the same bits; the choice is
 * only about speed.
 *
 * On x86_64 the level is the best the CPU has and the OS saves state for:
 * SSE2 (every x86_64), AVX2 with FMA (every AVX2 CPU made has both),
 * AVX-512F. The environment variable MICA_ISA=sse2|avx2|avx512 caps it for
 * every kernel (tests run each set this way); a kernel may honour a cap of
 * its own as well (the GEMM reads MICA_GEMM_ISA), and the lower cap wins. A
 * cap above what the CPU offers, or any other value, changes nothing.
 * aarch64 has one level, NEON.
 */
#ifndef MICA_CPU_H
#define MICA_CPU_H

#include <stdbool.h>

enum { MICA_ISA_BASE = 0, MICA_ISA_AVX2 = 1, MICA_ISA_AVX512 = 2 };

/* The level to run at: the CPU's, capped by MICA_ISA and by the variable
 * named own_cap (NULL: none). Reads the environment; callers keep the answer. */
int mica_isa_level(const char *own_cap);

/* "sse2", "avx2", "avx512" on x86_64; "neon" on aarch64. */
const char *mica_isa_name(int level);

/* x86_64: the CPU runs AVX and the OS saves its registers (so a thread's
 * upper vector halves may be dirty). false elsewhere. */
bool mica_cpu_has_avx(void);

/* Extensions beyond the levels, for kernels that use one (the integer GEMM):
 * each is true only where the CPU has it and the OS saves the registers it
 * needs. A kernel still honours the level caps above before using one. */
enum {
    MICA_CPU_AVX512_VNNI = 0, /* x86_64: AVX512F + BW + VNNI (vpdpbusd on zmm) */
    MICA_CPU_AVX_VNNI = 1,    /* x86_64: AVX2 + AVX-VNNI (vpdpbusd on ymm) */
    MICA_CPU_DOTPROD = 2,     /* aarch64: sdot/udot (HWCAP_ASIMDDP) */
};
bool mica_cpu_has(int feature);

/* *chosen, set to pick() on the first call: a kernel table's index, chosen once
 * per process. A race between threads is benign: every thread picks the same. */
int mica_chosen_once(int *chosen, int (*pick)(void));

#endif /* MICA_CPU_H */
