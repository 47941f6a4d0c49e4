/* ptx_harness.c: runs the C runtime's side of every PTX kernel, for
 * tests/test_ptx.py, which runs the same arguments through the PTX (in
 * tests/ptx_interpreter.py) and compares the bits.
 *
 * stdin, one case after another:
 *     NAME COUNT            a kernel name (mica_<op>_<f32|f64>) and its argument count
 *     p BYTES HEX           a buffer (its bytes as hex, "-" when empty)
 *     n                     a NULL pointer
 *     i VALUE               an integer (extent, flag)
 *     f HEX                 a scalar of the kernel's type, as bits
 * stdout, per case: every buffer after the call, one "HEX" line each (in
 * argument order), then "end".
 *
 * Built with the whole runtime (every runtime_c .c file); mica_program is the entry.
 */
#include "mica.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const mica_source_names[] = {"ptx_harness"};
const int mica_source_count = 1;

#include "ptx_adapters.h"

static int hex_digit(int c) {
    return c <= '9' ? c - '0' : (c | 32) - 'a' + 10;
}

static void read_hex(unsigned char *out, size_t bytes) {
    int c;
    while ((c = getchar()) == ' ' || c == '\n') {
    }
    if (c == '-') return;
    for (size_t k = 0; k < bytes; k++) {
        int hi = k == 0 ? c : getchar(), lo = getchar();
        out[k] = (unsigned char)(hex_digit(hi) << 4 | hex_digit(lo));
    }
}

static void write_hex(const unsigned char *p, size_t bytes) {
    static const char digits[] = "0123456789abcdef";
    for (size_t k = 0; k < bytes; k++) {
        putchar(digits[p[k] >> 4]);
        putchar(digits[p[k] & 15]);
    }
    putchar('\n');
}

void mica_program(void) {
    char name[128];
    int count;
    while (scanf("%127s %d", name, &count) == 2) {
        const hentry *entry = ptx_adapter(name);
        if (entry == NULL) {
            fprintf(stderr, "ptx_harness: no adapter for %s\n", name);
            exit(2);
        }
        harg *A = calloc((size_t)count + 1, sizeof(harg));
        bool f32 = strstr(name, "_f32") != NULL && strstr(name, "convert") == NULL;
        for (int k = 0; k < count; k++) {
            char kind[2];
            if (scanf("%1s", kind) != 1) exit(3);
            A[k].kind = kind[0];
            if (kind[0] == 'p') {
                unsigned long long bytes;
                if (scanf("%llu", &bytes) != 1) exit(3);
                A[k].bytes = (size_t)bytes;
                A[k].p = calloc(1, bytes + 16);
                read_hex(A[k].p, A[k].bytes);
            } else if (kind[0] == 'i') {
                long long v;
                if (scanf("%lld", &v) != 1) exit(3);
                A[k].i = v;
            } else if (kind[0] == 'f') {
                unsigned long long bits;
                if (scanf("%llx", &bits) != 1) exit(3);
                if (f32) {
                    uint32_t b = (uint32_t)bits;
                    float x;
                    memcpy(&x, &b, sizeof x);
                    A[k].f = x;
                } else {
                    memcpy(&A[k].f, &bits, sizeof A[k].f);
                }
            } else if (kind[0] != 'n') {
                fprintf(stderr, "ptx_harness: bad argument kind %c\n", kind[0]);
                exit(3);
            }
        }
        entry->run(A);
        for (int k = 0; k < count; k++)
            if (A[k].kind == 'p') {
                write_hex(A[k].p, A[k].bytes);
                free(A[k].p);
            }
        puts("end");
        free(A);
    }
    fflush(stdout);
}
