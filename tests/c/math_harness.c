/* math_harness.c: runs mica_math functions on inputs given as bits and
 * prints the results as bits, for tests/test_math.py.
 *
 * stdin:  blocks of "NAME COUNT" followed by COUNT lines of hex input bits
 *         (16 digits for _f64, 8 for _f32); powi lines are "HEX N".
 * stdout: one line of result bits per input line, in the same widths.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mica_bits.h"
#include "mica_math.h"

struct fn64 {
    const char *name;
    double (*f)(double);
};

struct fn32 {
    const char *name;
    float (*f)(float);
};

/* Every function of the table (mica_element_functions.h). */
#define ENTRY64(F) {#F "_f64", mica_##F##_f64},
#define ENTRY32(F) {#F "_f32", mica_##F##_f32},
static const struct fn64 FN64[] = {MICA_MATH_FUNCTIONS(ENTRY64)};
static const struct fn32 FN32[] = {MICA_MATH_FUNCTIONS(ENTRY32)};
#undef ENTRY64
#undef ENTRY32

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void fail(const char *what, const char *name) {
    fprintf(stderr, "math_harness: %s: %s\n", what, name);
    exit(2);
}

/* One block: read COUNT lines, answer each. */
static void run_block(const char *name, long count) {
    char line[128];
    for (size_t i = 0; i < COUNT(FN64); i++) {
        if (strcmp(name, FN64[i].name) != 0) continue;
        for (long j = 0; j < count && fgets(line, sizeof line, stdin); j++)
            printf("%016llx\n", (unsigned long long)mica_bits64(FN64[i].f(mica_f64_of(strtoull(line, NULL, 16)))));
        return;
    }
    for (size_t i = 0; i < COUNT(FN32); i++) {
        if (strcmp(name, FN32[i].name) != 0) continue;
        for (long j = 0; j < count && fgets(line, sizeof line, stdin); j++)
            printf("%08lx\n", (unsigned long)mica_bits32(FN32[i].f(mica_f32_of((uint32_t)strtoul(line, NULL, 16)))));
        return;
    }
    int is64 = strcmp(name, "powi_f64") == 0;
    if (!is64 && strcmp(name, "powi_f32") != 0) fail("unknown function", name);
    for (long j = 0; j < count && fgets(line, sizeof line, stdin); j++) {
        char *rest;
        uint64_t u = strtoull(line, &rest, 16);
        int64_t n = strtoll(rest, NULL, 10);
        if (is64) printf("%016llx\n", (unsigned long long)mica_bits64(mica_powi_f64(mica_f64_of(u), n)));
        else printf("%08lx\n", (unsigned long)mica_bits32(mica_powi_f32(mica_f32_of((uint32_t)u), n)));
    }
}

int main(void) {
    static char buf[1 << 16];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    char line[128], name[64];
    long count;
    while (fgets(line, sizeof line, stdin)) {
        if (sscanf(line, "%63s %ld", name, &count) != 2) fail("bad header", line);
        run_block(name, count);
    }
    return 0;
}
