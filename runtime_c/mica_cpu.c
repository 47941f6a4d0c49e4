/* mica_cpu.c: the instruction-set level for run-time dispatch (mica_cpu.h). */
#include "mica_cpu.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

// What the CPU has and the OS saves: MICA_ISA_BASE (SSE2), _AVX2 (with FMA) or _AVX512 (F).
// *avx tells whether AVX itself is usable.
static int x86_level(bool *avx) {
    unsigned eax, ebx, ecx, edx;
    *avx = false;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return MICA_ISA_BASE;
    if (!(ecx & (1u << 27)) || !(ecx & (1u << 28))) return MICA_ISA_BASE; /* OSXSAVE, AVX */
    if (!(ecx & (1u << 12))) return MICA_ISA_BASE; /* FMA: the AVX2 array forms' exact products use it */
    unsigned xcr0, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0 & 0x6) != 0x6) return MICA_ISA_BASE; /* XMM and YMM state */
    *avx = true;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return MICA_ISA_BASE;
    if (!(ebx & (1u << 5))) return MICA_ISA_BASE; /* AVX2 */
    if ((ebx & (1u << 16)) && (xcr0 & 0xE6) == 0xE6) return MICA_ISA_AVX512; /* AVX512F, opmask + ZMM state */
    return MICA_ISA_AVX2;
}

static const char *const isa_names[] = {"sse2", "avx2", "avx512"};

// level lowered to what the variable `name` asks for, if it names a level
static int capped(int level, const char *name) {
    const char *cap = name ? getenv(name) : NULL;
    if (!cap) return level;
    for (int i = 0; i < (int)(sizeof isa_names / sizeof isa_names[0]); i++)
        if (strcmp(cap, isa_names[i]) == 0 && i < level) return i;
    return level;
}

int mica_isa_level(const char *own_cap) {
    bool avx;
    return capped(capped(x86_level(&avx), "MICA_ISA"), own_cap);
}

const char *mica_isa_name(int level) {
    return isa_names[level];
}

bool mica_cpu_has_avx(void) {
    bool avx;
    x86_level(&avx);
    return avx;
}

bool mica_cpu_has(int feature) {
    bool avx;
    int level = x86_level(&avx);
    unsigned eax, ebx, ecx, edx;
    if (feature == MICA_CPU_AVX512_VNNI) {
        if (level < MICA_ISA_AVX512 || !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
        return (ebx & (1u << 30)) && (ecx & (1u << 11)); /* AVX512BW, AVX512_VNNI */
    }
    if (feature == MICA_CPU_AVX_VNNI) {
        if (level < MICA_ISA_AVX2 || !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
        return eax & (1u << 4); /* AVX-VNNI */
    }
    return false;
}

#else

int mica_isa_level(const char *own_cap) {
    (void)own_cap;
    return MICA_ISA_BASE;
}

const char *mica_isa_name(int level) {
    (void)level;
    return "neon";
}

bool mica_cpu_has_avx(void) {
    return false;
}

#if defined(__aarch64__)
#include <sys/auxv.h>
#endif

bool mica_cpu_has(int feature) {
#if defined(__aarch64__)
    if (feature == MICA_CPU_DOTPROD) return (getauxval(AT_HWCAP) >> 20) & 1; /* HWCAP_ASIMDDP */
#endif
    (void)feature;
    return false;
}

#endif

/* Release and acquire: a task that finds the choice made also sees what pick()
 * set beside it (gemm_cpu_has_avx); two tasks that both pick agree anyway. */
int mica_chosen_once(int *chosen, int (*pick)(void)) {
    int c = __atomic_load_n(chosen, __ATOMIC_ACQUIRE);
    if (c < 0) {
        c = pick();
        __atomic_store_n(chosen, c, __ATOMIC_RELEASE);
    }
    return c;
}
