/* mica_string.c: Mica strings: owned byte buffers with value semantics.
 *
 * Generated code copies a string when a place is read into another place,
 * moves a fresh result into its destination, and drops what goes out of scope.
 * Positions are 1-based, as in Pascal.
 */
#include "mica.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

mica_string mica_str_lit(const char *bytes, int64_t len) {
    mica_string s = {len, mica_alloc((size_t)len + 1, 0)};
    if (len) memcpy(s.data, bytes, (size_t)len);
    return s;
}

mica_string mica_str_copy(mica_string s) {
    return mica_str_lit(s.data ? s.data : "", s.len);
}

void mica_str_drop(mica_string *s) {
    mica_free(s->data);
    s->data = NULL;
    s->len = 0;
}

void mica_str_assign(mica_string *dst, mica_string src) {
    mica_string copy = mica_str_copy(src); /* copy first: src may be dst */
    mica_str_drop(dst);
    *dst = copy;
}

void mica_str_move(mica_string *dst, mica_string src) {
    mica_str_drop(dst);
    *dst = src;
}

static const char *bytes(mica_string s) {
    return s.data ? s.data : "";
}

mica_string mica_str_concat(mica_string a, mica_string b) {
    mica_string s = {a.len + b.len, mica_alloc((size_t)(a.len + b.len) + 1, 0)};
    memcpy(s.data, bytes(a), (size_t)a.len);
    memcpy(s.data + a.len, bytes(b), (size_t)b.len);
    return s;
}

int64_t mica_str_compare(mica_string a, mica_string b) {
    int64_t n = a.len < b.len ? a.len : b.len;
    int c = memcmp(bytes(a), bytes(b), (size_t)n);
    if (c != 0) return c < 0 ? -1 : 1;
    return a.len < b.len ? -1 : a.len > b.len;
}

mica_string mica_str_at(mica_string s, int64_t i, int line) {
    if (i < 1 || i > s.len) mica_trapf(line, "string index %lld out of range 1..%lld", (long long)i, (long long)s.len);
    return mica_str_lit(s.data + i - 1, 1);
}

/* Copy(s, start, count): clamps to the string, as Delphi does. */
mica_string mica_str_sub(mica_string s, int64_t start, int64_t count) {
    if (start < 1) {
        count += start - 1;
        start = 1;
    }
    if (start > s.len || count <= 0) return mica_str_lit("", 0);
    if (count > s.len - start + 1) count = s.len - start + 1;
    return mica_str_lit(s.data + start - 1, count);
}

int64_t mica_str_pos(mica_string needle, mica_string haystack) {
    if (needle.len == 0) return 0;
    for (int64_t i = 0; i + needle.len <= haystack.len; i++)
        if (memcmp(haystack.data + i, needle.data, (size_t)needle.len) == 0) return i + 1;
    return 0;
}

int64_t mica_str_ord(mica_string s, int line) {
    if (s.len != 1) mica_trapf(line, "Ord needs a string of one character, found %lld", (long long)s.len);
    return (unsigned char)s.data[0];
}

mica_string mica_str_chr(int64_t code, int line) {
    if (code < 0 || code > 255) mica_trapf(line, "Chr(%lld): a character code is 0..255", (long long)code);
    char c = (char)code;
    return mica_str_lit(&c, 1);
}

mica_string mica_str_of_int(int64_t x) {
    char text[32];
    int n = snprintf(text, sizeof text, "%lld", (long long)x);
    return mica_str_lit(text, n);
}

int64_t mica_str_to_int(mica_string s, int line) {
    char *end;
    errno = 0;
    long long value = strtoll(bytes(s), &end, 10);
    if (s.len == 0 || *end != 0 || errno != 0 || isspace((unsigned char)s.data[0]))
        mica_trapf(line, "'%s' is not an integer", bytes(s));
    return value;
}

double mica_str_to_f64(mica_string s, int line) {
    char *end;
    double value = strtod(bytes(s), &end);
    if (s.len == 0 || *end != 0 || isspace((unsigned char)s.data[0])) mica_trapf(line, "'%s' is not a number", bytes(s));
    return value;
}

static mica_string map_bytes(mica_string s, int (*f)(int)) {
    mica_string r = mica_str_copy(s);
    for (int64_t i = 0; i < r.len; i++) r.data[i] = (char)f((unsigned char)r.data[i]);
    return r;
}

mica_string mica_str_upper(mica_string s) {
    return map_bytes(s, toupper);
}

mica_string mica_str_lower(mica_string s) {
    return map_bytes(s, tolower);
}

mica_string mica_str_trim(mica_string s) {
    int64_t start = 0, end = s.len;
    while (start < end && isspace((unsigned char)s.data[start])) start++;
    while (end > start && isspace((unsigned char)s.data[end - 1])) end--;
    return mica_str_lit(s.data + start, end - start);
}
