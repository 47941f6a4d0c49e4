/* mica_print.c: Write and WriteLn.
 *
 * Floats without a format print as the shortest decimal that reads back to
 * the same bits, laid out as Python's repr lays them out (positional for
 * exponents -4..15, else d.ddde+XX), so any float prints the same on every
 * machine. musl's printf and strtod are exact, which makes the search for
 * the shortest digits deterministic.
 */
#include "mica.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every Write reaches its stream through its put: Output's is the program's
 * output buffer (mica_output.c), a file stream's its own (mica_stream.c). A
 * stdout that refused a write ends the program at the Write that finds it. */
static void emit(mica_stream *to, const char *s, size_t n) {
    to->put(to, s, n);
    if (to == &mica_output) mica_trap_if_output_lost();
}

static void emit_padded(mica_stream *to, const char *s, int64_t width) {
    size_t n = strlen(s);
    for (int64_t pad = width - (int64_t)n; pad > 0; pad--) emit(to, " ", 1);
    emit(to, s, n);
}

/* Lay out significant digits `digits` with decimal exponent `exp10`
 * (value = d.ddd x 10^exp10) the way Python's repr does. */
static void layout(char *out, bool negative, const char *digits, int exp10) {
    int n = (int)strlen(digits);
    char *p = out;
    if (negative) *p++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -exp10 - 1; i++) *p++ = '0';
            memcpy(p, digits, n);
            p += n;
        } else {
            for (int i = 0; i <= exp10; i++) *p++ = i < n ? digits[i] : '0';
            *p++ = '.';
            if (n > exp10 + 1) {
                memcpy(p, digits + exp10 + 1, n - exp10 - 1);
                p += n - exp10 - 1;
            } else {
                *p++ = '0';
            }
        }
        *p = 0;
        return;
    }
    *p++ = digits[0];
    if (n > 1) {
        *p++ = '.';
        memcpy(p, digits + 1, n - 1);
        p += n - 1;
    }
    sprintf(p, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

static bool special(char *out, double x) {
    if (isnan(x)) {
        strcpy(out, "nan"); /* NaN's sign bit differs between architectures */
        return true;
    }
    if (isinf(x)) {
        strcpy(out, x < 0 ? "-inf" : "inf");
        return true;
    }
    return false;
}

/* Split "d.ddde+XX" from printf into its digits and exponent. */
static void split_exponent_form(const char *text, char *digits, int *exp10) {
    const char *p = text;
    int n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = 0;
    *exp10 = atoi(p + 1);
}

static void shortest_f64(char *out, double x) {
    if (special(out, x)) return;
    char text[40], digits[24];
    double magnitude = fabs(x);
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
        if (strtod(text, NULL) == magnitude) break;
    }
    int exp10;
    split_exponent_form(text, digits, &exp10);
    layout(out, signbit(x) != 0, digits, exp10);
}

static void shortest_f32(char *out, float x) {
    if (special(out, x)) return;
    char text[40], digits[24];
    float magnitude = fabsf(x);
    for (int precision = 1; precision <= 9; precision++) {
        snprintf(text, sizeof text, "%.*e", precision - 1, (double)magnitude);
        if (strtof(text, NULL) == magnitude) break;
    }
    int exp10;
    split_exponent_form(text, digits, &exp10);
    layout(out, signbit(x) != 0, digits, exp10);
}

/* x with `decimals` digits after the point (all of them, however many: a
 * double's exact value has at most 1074), right-aligned in `width`. */
static void write_fixed(mica_stream *to, double x, int64_t width, int64_t decimals) {
    char small[32];
    if (special(small, x)) {
        emit_padded(to, small, width);
        return;
    }
    if (decimals > INT32_MAX - 400) mica_trapf(0, "%lld decimals are more than a number can print", (long long)decimals);
    size_t size = (size_t)decimals + 400; /* sign, up to 309 integer digits, the point */
    char *text = mica_alloc(size, 0);
    snprintf(text, size, "%.*f", (int)decimals, x);
    emit_padded(to, text, width);
    mica_free(text);
}

void mica_write_str(mica_stream *to, mica_string s, int64_t width) {
    for (int64_t pad = width - s.len; pad > 0; pad--) emit(to, " ", 1);
    emit(to, s.data ? s.data : "", (size_t)s.len);
}

void mica_write_int(mica_stream *to, int64_t x, int64_t width) {
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)x);
    emit_padded(to, text, width);
}

void mica_write_bool(mica_stream *to, bool x, int64_t width) {
    emit_padded(to, x ? "true" : "false", width);
}

void mica_write_f64(mica_stream *to, double x, int64_t width, int64_t decimals) {
    char text[40];
    if (decimals >= 0) {
        write_fixed(to, x, width, decimals);
        return;
    }
    shortest_f64(text, x);
    emit_padded(to, text, width);
}

void mica_write_f32(mica_stream *to, float x, int64_t width, int64_t decimals) {
    char text[40];
    if (decimals >= 0) {
        write_fixed(to, (double)x, width, decimals);
        return;
    }
    shortest_f32(text, x);
    emit_padded(to, text, width);
}

/* Tensors print row-major, elements separated by one space. */
#define WRITE_INTS(NAME, T)                                            \
    void NAME(mica_stream *to, const T *x, int64_t n, int64_t width) { \
        for (int64_t i = 0; i < n; i++) {                              \
            if (i) emit(to, " ", 1);                                   \
            mica_write_int(to, (int64_t)x[i], width);                  \
        }                                                              \
    }
WRITE_INTS(mica_write_ints, int64_t)
WRITE_INTS(mica_write_i32s, int32_t)
WRITE_INTS(mica_write_i8s, int8_t)
WRITE_INTS(mica_write_u8s, uint8_t)

void mica_write_f64s(mica_stream *to, const double *x, int64_t n, int64_t width, int64_t decimals) {
    for (int64_t i = 0; i < n; i++) {
        if (i) emit(to, " ", 1);
        mica_write_f64(to, x[i], width, decimals);
    }
}

void mica_write_f32s(mica_stream *to, const float *x, int64_t n, int64_t width, int64_t decimals) {
    for (int64_t i = 0; i < n; i++) {
        if (i) emit(to, " ", 1);
        mica_write_f32(to, x[i], width, decimals);
    }
}

void mica_writeln(mica_stream *to) {
    emit(to, "\n", 1);
    if (to != &mica_output) return;
    mica_output_line_end();
    mica_trap_if_output_lost(); /* the line's end may have met a failing stdout */
}

mica_string mica_str_of_f64(double x) {
    char text[40];
    shortest_f64(text, x);
    return mica_str_lit(text, (int64_t)strlen(text));
}

mica_string mica_str_of_f32(float x) { /* a float32's own shortest form, as WriteLn prints it */
    char text[40];
    shortest_f32(text, x);
    return mica_str_lit(text, (int64_t)strlen(text));
}
