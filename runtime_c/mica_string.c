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

/* The buffer a string appended to needs for `needed` bytes (its terminator
 * counted): the next power of two, so that a string built a piece at a time
 * is copied O(1) times per byte, and realloc finds the buffer long enough, in
 * place, for every append until the next power. A piece as long as the string
 * doubles it anyway, and gets just the bytes it needs. */
static size_t appended_size(int64_t needed, int64_t piece, int64_t len) {
    if (piece >= len) return (size_t)needed;
    size_t size = 1;
    while (size < (size_t)needed) size *= 2;
    return size;
}

/* A string's buffer is its own, from the allocator (a place never holds a
 * literal: assigning one copies it), so it may grow where it is. */
void mica_str_append(mica_string *s, mica_string b) {
    int64_t len = s->len + b.len;
    bool itself = b.data != NULL && b.data == s->data; /* s := s + s: b's bytes move with s's */
    s->data = mica_realloc(s->data, appended_size(len + 1, b.len, s->len), 0);
    memmove(s->data + s->len, itself ? s->data : bytes(b), (size_t)b.len);
    s->len = len;
    s->data[len] = 0;
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

/* Where needle next occurs in s at or after from, or -1; an empty needle never does. */
static int64_t find(mica_string s, mica_string needle, int64_t from) {
    if (needle.len == 0) return -1;
    for (int64_t i = from; i + needle.len <= s.len; i++)
        if (memcmp(s.data + i, needle.data, (size_t)needle.len) == 0) return i;
    return -1;
}

int64_t mica_str_pos(mica_string needle, mica_string haystack) {
    return find(haystack, needle, 0) + 1;
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

/* The grammar StrToInt, StrToFloat and their Try forms share: the whole text
 * is the number, with no leading space (strtoll and strtod would skip it). */
static bool parse_int(mica_string s, int64_t *n) {
    char *end;
    errno = 0;
    long long value = strtoll(bytes(s), &end, 10);
    if (s.len == 0 || end != bytes(s) + s.len || errno != 0 || isspace((unsigned char)s.data[0])) return false;
    *n = value;
    return true;
}

static bool parse_f64(mica_string s, double *x) {
    char *end;
    double value = strtod(bytes(s), &end);
    if (s.len == 0 || end != bytes(s) + s.len || isspace((unsigned char)s.data[0])) return false;
    *x = value;
    return true;
}

int64_t mica_str_to_int(mica_string s, int line) {
    int64_t n;
    if (!parse_int(s, &n)) mica_trapf(line, "'%s' is not an integer", bytes(s));
    return n;
}

double mica_str_to_f64(mica_string s, int line) {
    double x;
    if (!parse_f64(s, &x)) mica_trapf(line, "'%s' is not a number", bytes(s));
    return x;
}

bool mica_str_try_int(mica_string s, int64_t *n) {
    return parse_int(s, n) || mica_fail("'%s' is not an integer", bytes(s));
}

bool mica_str_try_f64(mica_string s, double *x) {
    return parse_f64(s, x) || mica_fail("'%s' is not a number", bytes(s));
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

bool mica_str_starts_with(mica_string s, mica_string prefix) {
    return prefix.len <= s.len && memcmp(bytes(s), bytes(prefix), (size_t)prefix.len) == 0;
}

bool mica_str_ends_with(mica_string s, mica_string suffix) {
    return suffix.len <= s.len && memcmp(bytes(s) + s.len - suffix.len, bytes(suffix), (size_t)suffix.len) == 0;
}

/* Every occurrence of old, left to right and not overlapping; an empty old
 * occurs nowhere, so s comes back as it is. */
mica_string mica_str_replace(mica_string s, mica_string old, mica_string new_text) {
    int64_t count = 0;
    for (int64_t at = find(s, old, 0); at >= 0; at = find(s, old, at + old.len)) count++;
    mica_string r = {s.len + count * (new_text.len - old.len), NULL};
    r.data = mica_alloc((size_t)r.len + 1, 0);
    int64_t from = 0, to = 0;
    for (int64_t at = find(s, old, 0); at >= 0; at = find(s, old, at + old.len)) {
        memcpy(r.data + to, s.data + from, (size_t)(at - from));
        to += at - from;
        memcpy(r.data + to, bytes(new_text), (size_t)new_text.len);
        to += new_text.len;
        from = at + old.len;
    }
    memcpy(r.data + to, bytes(s) + from, (size_t)(s.len - from));
    return r;
}

mica_string mica_str_join(const mica_string *parts, int64_t count, mica_string sep) {
    int64_t len = 0;
    for (int64_t i = 0; i < count; i++) len += parts[i].len + (i ? sep.len : 0);
    mica_string r = {len, mica_alloc((size_t)len + 1, 0)};
    char *to = r.data;
    for (int64_t i = 0; i < count; i++) {
        if (i) {
            memcpy(to, bytes(sep), (size_t)sep.len);
            to += sep.len;
        }
        memcpy(to, bytes(parts[i]), (size_t)parts[i].len);
        to += parts[i].len;
    }
    return r;
}

void mica_strings_drop(int64_t *len, mica_string **e) {
    for (int64_t i = 0; i < *len; i++) mica_str_drop(&(*e)[i]);
    mica_free(*e);
    *e = NULL;
    *len = 0;
}

/* Append s (taking it) to an array of string growing by doubling. */
void mica_strings_push(int64_t *len, mica_string **e, int64_t *capacity, mica_string s) {
    if (*len == *capacity) {
        int64_t more = *capacity ? *capacity * 2 : 8;
        *e = mica_resize(*e, *capacity, more, sizeof **e, 0);
        *capacity = more;
    }
    (*e)[(*len)++] = s;
}

/* The fields between the separators, empty ones kept: n separators make
 * n + 1 fields, so '' is one empty field. An empty separator separates
 * nothing: the one field is s. */
void mica_str_split(mica_string s, mica_string sep, int64_t *len, mica_string **e) {
    mica_strings_drop(len, e);
    int64_t capacity = 0, from = 0;
    for (int64_t at = find(s, sep, 0); at >= 0; at = find(s, sep, from)) {
        mica_strings_push(len, e, &capacity, mica_str_lit(s.data + from, at - from));
        from = at + sep.len;
    }
    mica_strings_push(len, e, &capacity, mica_str_lit(bytes(s) + from, s.len - from));
}
