/* mica_checkpoint.c: Save and Load in the safetensors format.
 *
 * A file is an 8-byte little-endian header length, a JSON header naming each
 * tensor (dtype, shape, data_offsets) plus "__metadata__", then the data:
 * every tensor's bytes, little-endian, in the order the program listed them.
 * Names are canonical paths (blocks[1].w). The metadata says "format":"mica"
 * and holds a CRC-32 of the data, the program's name, its const section and
 * each tensor's Mica type (the compiler writes those: docs/language.md).
 * Save writes atomically. Load checks the whole file first -- its structure as
 * safetensors defines it, with overflow-checked sizes, the checksum (which a
 * Mica-written file must carry), then every name, dtype and shape -- and only
 * then copies into the program's places, so a refused file leaves the
 * program's state as it was.
 */
#include "mica.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *DTYPE_NAMES[] = {"F32", "F64", "I64", "I32", "I8", "U8", "BOOL"};
static const size_t DTYPE_SIZES[] = {4, 8, 8, 4, 1, 1, 1};
enum { MAX_HEADER = 100000000 }; /* safetensors' own limit on the header's length */

/* ---------------------------------------------------------------- CRC-32 (IEEE) */

static uint32_t crc_table[256];
static pthread_once_t crc_table_once = PTHREAD_ONCE_INIT; /* tasks may Save at once: the table is made once */

static void make_crc_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[i] = c;
    }
}

/* The CRC-32 of crc's bytes followed by n more (zlib's chaining: start from 0). */
static uint32_t crc32(uint32_t crc, const unsigned char *data, size_t n) {
    const uint32_t *table = crc_table;
    pthread_once(&crc_table_once, make_crc_table);
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

/* ---------------------------------------------------------------- growing text */

typedef struct {
    char *data;
    size_t len, cap;
} text;

static void append(text *t, const char *s, size_t n) {
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + n + 1) cap *= 2;
        t->data = mica_resize(t->data, (int64_t)t->len, (int64_t)cap, 1, 0);
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = 0;
}

static void appendf(text *t, const char *format, long long a, long long b) {
    char piece[64];
    int n = snprintf(piece, sizeof piece, format, a, b);
    append(t, piece, (size_t)n);
}

static void append_json_string(text *t, const char *s) {
    append(t, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') append(t, "\\", 1);
        append(t, s, 1);
    }
    append(t, "\"", 1);
}

/* Up to n more bytes of f onto t, a piece at a time: a file shorter than it
 * claims costs only what it holds. The count read. */
static uint64_t read_into(text *t, FILE *f, uint64_t n) {
    char chunk[1 << 16];
    uint64_t total = 0;
    size_t got;
    while (total < n && (got = fread(chunk, 1, n - total < sizeof chunk ? (size_t)(n - total) : sizeof chunk, f)) > 0) {
        append(t, chunk, got);
        total += got;
    }
    return total;
}

static int64_t entry_bytes(const mica_entry *e) {
    int64_t n = 1;
    for (int i = 0; i < e->rank; i++) n *= e->dims[i];
    return n * (int64_t)DTYPE_SIZES[e->dtype];
}

/* A dynamic tensor's shape and storage are read when the file is written or read. */
static void refresh_dynamic_shape(mica_entry *e) {
    if (e->rows == NULL) return;
    e->data = *e->elements;
    e->dims[0] = *e->rows;
    if (e->rank == 2) e->dims[1] = *e->cols;
}

/* ---------------------------------------------------------------- Save */

/* description: the compiler's further metadata members, JSON text ("program":...). */
void mica_save(mica_string path, mica_entry *entries, int64_t count, const char *description, int line) {
    size_t data_bytes = 0;
    uint32_t crc = 0;
    for (int64_t i = 0; i < count; i++) {
        refresh_dynamic_shape(&entries[i]);
        data_bytes += (size_t)entry_bytes(&entries[i]);
        crc = crc32(crc, entries[i].data, (size_t)entry_bytes(&entries[i]));
    }
    text header = {0};
    appendf(&header, "{\"__metadata__\":{\"format\":\"mica\",\"checksum\":\"crc32:%08llx\",", crc, 0);
    append(&header, description, strlen(description));
    append(&header, "}", 1);
    size_t offset = 0;
    for (int64_t i = 0; i < count; i++) {
        mica_entry *e = &entries[i];
        size_t bytes = (size_t)entry_bytes(e);
        append(&header, ",", 1);
        append_json_string(&header, e->name);
        append(&header, ":{\"dtype\":\"", 11);
        append(&header, DTYPE_NAMES[e->dtype], strlen(DTYPE_NAMES[e->dtype]));
        append(&header, "\",\"shape\":[", 11);
        for (int d = 0; d < e->rank; d++) appendf(&header, d ? ",%lld" : "%lld", (long long)e->dims[d], 0);
        appendf(&header, "],\"data_offsets\":[%lld,%lld]}", (long long)offset, (long long)(offset + bytes));
        offset += bytes;
    }
    append(&header, "}", 1);
    while (header.len % 8 != 0) append(&header, " ", 1); /* keep the data 8-byte aligned */
    size_t total = 8 + header.len + data_bytes;
    unsigned char *file = mica_alloc(total, line);
    for (int i = 0; i < 8; i++) file[i] = (unsigned char)((uint64_t)header.len >> (8 * i));
    memcpy(file + 8, header.data, header.len);
    offset = 8 + header.len;
    for (int64_t i = 0; i < count; i++) {
        size_t bytes = (size_t)entry_bytes(&entries[i]);
        if (bytes) memcpy(file + offset, entries[i].data, bytes);
        offset += bytes;
    }
    char *name = mica_alloc((size_t)path.len + 1, line);
    memcpy(name, path.data, (size_t)path.len);
    int error = mica_write_atomically(name, file, total);
    if (error != 0) mica_trapf(line, "cannot save '%s': %s", name, strerror(error));
    mica_free(name);
    mica_free(file);
    mica_free(header.data);
}

/* ---------------------------------------------------------------- a strict reader for the header */

static const char NOT_JSON[] = "not a safetensors file: the header is not valid JSON";

typedef struct {
    const char *p, *end;
    char error[512]; /* the first reason the header is refused, whole */
} reader;

static bool fail(reader *r, const char *format, ...) {
    if (r->error[0] == 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(r->error, sizeof r->error, format, args);
        va_end(args);
    }
    return false;
}

static void skip_space(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static bool expect(reader *r, char c) {
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    return fail(r, "%s", NOT_JSON);
}

static bool peek(reader *r, char c) {
    skip_space(r);
    return r->p < r->end && *r->p == c;
}

/* After a member: a comma, unless the container ends here. */
static bool next_member(reader *r, char close) {
    return peek(r, close) || expect(r, ',');
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return (c | 0x20) - 'a' + 10;
    return -1;
}

/* The four hex digits of a \u escape, or -1. */
static long read_hex4(reader *r) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = r->p < r->end ? hex_digit(*r->p++) : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* One escape after its backslash, as UTF-8 into piece; its length, or 0 when
 * malformed. A NUL (\u0000, which JSON allows and safetensors writes) stays as
 * written, six bytes: a C string cannot hold it, and kept so it can match no
 * name a program loads (no Mica name has a backslash), no "format" or
 * "checksum", and a message shows it as the file has it. */
static int read_escape(reader *r, char piece[6]) {
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (r->p >= r->end) return 0;
    char e = *r->p++;
    const char *at = e ? strchr(from, e) : NULL;
    if (at) return piece[0] = to[at - from], 1;
    if (e != 'u') return 0;
    long c = read_hex4(r);
    if (c >= 0xD800 && c < 0xDC00) { /* a surrogate pair */
        if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') return 0;
        r->p += 2;
        long low = read_hex4(r);
        if (low < 0xDC00 || low >= 0xE000) return 0;
        c = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
    } else if (c < 0 || (c >= 0xDC00 && c < 0xE000)) { /* malformed, or a lone low surrogate */
        return 0;
    }
    if (c == 0) return memcpy(piece, "\\u0000", 6), 6;
    if (c < 0x80) return piece[0] = (char)c, 1;
    if (c < 0x800) return piece[0] = (char)(0xC0 | c >> 6), piece[1] = (char)(0x80 | (c & 0x3F)), 2;
    int n = c < 0x10000 ? 3 : 4;
    piece[0] = (char)(n == 3 ? 0xE0 | c >> 12 : 0xF0 | c >> 18);
    for (int i = 1; i < n; i++) piece[i] = (char)(0x80 | ((c >> (6 * (n - 1 - i))) & 0x3F));
    return n;
}

/* A JSON string, decoded into out (n bytes with its NUL), or skipped when out is NULL. */
static bool read_string(reader *r, char *out, size_t n) {
    if (!expect(r, '"')) return false;
    size_t len = 0;
    while (r->p < r->end && *r->p != '"') {
        char piece[6];
        int k = 1;
        piece[0] = *r->p++;
        if ((unsigned char)piece[0] < 0x20) return fail(r, "%s", NOT_JSON);
        if (piece[0] == '\\' && (k = read_escape(r, piece)) == 0) return fail(r, "%s", NOT_JSON);
        if (out == NULL) continue;
        if (len + (size_t)k >= n) return fail(r, "not a safetensors file: the header has a name or value over %d bytes", (int)n - 1);
        memcpy(out + len, piece, (size_t)k);
        len += (size_t)k;
    }
    if (out) out[len] = 0;
    return expect(r, '"');
}

/* A non-negative JSON integer that fits in int64. */
static bool read_integer(reader *r, const char *tensor, int64_t *out) {
    skip_space(r);
    const char *start = r->p;
    int64_t v = 0;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *r->p++ - '0', &v))
            return fail(r, "tensor '%s' has a shape or offset over 2^63 - 1", tensor);
    }
    if (r->p < r->end && (*r->p == '-' || *r->p == '.' || *r->p == 'e' || *r->p == 'E'))
        return fail(r, "tensor '%s' has a shape or offset that is not a non-negative integer", tensor);
    if (r->p == start || (*start == '0' && r->p - start > 1)) return fail(r, "%s", NOT_JSON);
    *out = v;
    return true;
}

typedef struct {
    int dtype;
    int rank;
    int64_t dims[MICA_MAX_RANK];
    int64_t start, end; /* start is -1 while the file has not named the tensor */
} stored;

static int dtype_named(const char *s) {
    for (int i = 0; i < (int)(sizeof DTYPE_NAMES / sizeof *DTYPE_NAMES); i++)
        if (strcmp(s, DTYPE_NAMES[i]) == 0) return i;
    return -1;
}

static void shape_text(char *out, size_t n, int rank, const int64_t *dims) {
    size_t used = (size_t)snprintf(out, n, "[");
    for (int i = 0; i < rank && used < n; i++) used += (size_t)snprintf(out + used, n - used, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (used < n) snprintf(out + used, n - used, "]");
}

static bool read_shape(reader *r, const char *name, stored *t) {
    if (!expect(r, '[')) return false;
    t->rank = 0;
    while (!peek(r, ']')) {
        if (t->rank == MICA_MAX_RANK) return fail(r, "tensor '%s' has more than %d dimensions", name, MICA_MAX_RANK);
        if (!(read_integer(r, name, &t->dims[t->rank++]) && next_member(r, ']'))) return false;
    }
    return expect(r, ']');
}

/* Its byte count fits int64, even counting each zero extent as one, and fills its data_offsets exactly. */
static bool check_size(reader *r, const char *name, const stored *t) {
    int64_t bytes = (int64_t)DTYPE_SIZES[t->dtype];
    bool empty = false;
    char shape[160];
    shape_text(shape, sizeof shape, t->rank, t->dims);
    for (int d = 0; d < t->rank; d++) {
        empty |= t->dims[d] == 0;
        if (__builtin_mul_overflow(bytes, t->dims[d] ? t->dims[d] : 1, &bytes))
            return fail(r, "tensor '%s' has shape %s, too large to address", name, shape);
    }
    if (empty) bytes = 0;
    if (t->end - t->start != bytes)
        return fail(r, "tensor '%s' of shape %s holds %lld bytes, but its data_offsets [%lld, %lld] span %lld", name, shape,
                    (long long)bytes, (long long)t->start, (long long)t->end, (long long)(t->end - t->start));
    return true;
}

/* One tensor's entry: dtype, shape and data_offsets, each once, nothing else. */
static bool read_tensor(reader *r, const char *name, stored *t) {
    char key[32], word[32];
    t->dtype = t->rank = -1;
    t->start = t->end = -1;
    if (!expect(r, '{')) return false;
    while (!peek(r, '}')) {
        if (!(read_string(r, key, sizeof key) && expect(r, ':'))) return false;
        if (strcmp(key, "dtype") == 0 && t->dtype < 0) {
            if (!read_string(r, word, sizeof word)) return false;
            t->dtype = dtype_named(word);
            if (t->dtype < 0) return fail(r, "tensor '%s' has dtype %s, which Mica does not store", name, word);
        } else if (strcmp(key, "shape") == 0 && t->rank < 0) {
            if (!read_shape(r, name, t)) return false;
        } else if (strcmp(key, "data_offsets") == 0 && t->start < 0) {
            if (!(expect(r, '[') && read_integer(r, name, &t->start) && expect(r, ',') &&
                  read_integer(r, name, &t->end) && expect(r, ']')))
                return false;
        } else {
            return fail(r, "tensor '%s' has a field '%s' twice or one safetensors does not define", name, key);
        }
        if (!next_member(r, '}')) return false;
    }
    if (!expect(r, '}')) return false;
    if (t->dtype < 0 || t->rank < 0 || t->start < 0)
        return fail(r, "tensor '%s' lacks its dtype, shape or data_offsets", name);
    if (t->end < t->start)
        return fail(r, "tensor '%s' has data_offsets [%lld, %lld], which run backwards", name, (long long)t->start,
                    (long long)t->end);
    return check_size(r, name, t);
}

/* The metadata: a map of strings, of which Load reads the format and the checksum. */
static bool read_metadata(reader *r, char *format, char *checksum, size_t n) {
    if (!expect(r, '{')) return false;
    while (!peek(r, '}')) {
        char field[64];
        if (!(read_string(r, field, sizeof field) && expect(r, ':'))) return false;
        char *into = strcmp(field, "format") == 0 ? format : strcmp(field, "checksum") == 0 ? checksum : NULL;
        if (!(read_string(r, into, n) && next_member(r, '}'))) return false;
    }
    return expect(r, '}');
}

/* The whole header: every tensor the file names must be one of the program's
 * entries (found[i] is entries[i]'s), each named once. */
static bool read_header(reader *r, mica_entry *entries, int64_t count, stored *found, char *format, char *checksum,
                        size_t n) {
    bool metadata = false;
    if (!expect(r, '{')) return false;
    while (!peek(r, '}')) {
        char key[256];
        if (!(read_string(r, key, sizeof key) && expect(r, ':'))) return false;
        if (strcmp(key, "__metadata__") == 0) {
            if (metadata) return fail(r, "not a safetensors file: the header has two __metadata__ entries");
            metadata = true;
            if (!read_metadata(r, format, checksum, n)) return false;
        } else {
            int64_t i = 0;
            while (i < count && strcmp(entries[i].name, key) != 0) i++;
            if (i == count) return fail(r, "it has a tensor '%s' that the program does not load", key);
            if (found[i].start >= 0) return fail(r, "not a safetensors file: the header names tensor '%s' twice", key);
            if (!read_tensor(r, key, &found[i])) return false;
        }
        if (!next_member(r, '}')) return false;
    }
    if (!expect(r, '}')) return false;
    skip_space(r);
    return r->p == r->end || fail(r, "%s", NOT_JSON);
}

/* ---------------------------------------------------------------- the data's layout */

static bool before(const stored *x, const stored *y) {
    return x->start < y->start || (x->start == y->start && x->end < y->end);
}

/* The tensors tile the data from byte 0 without gaps or overlaps, as safetensors
 * requires; *size is where the last one ends. */
static bool check_layout(reader *r, mica_entry *entries, int64_t count, const stored *found, int64_t *size) {
    int64_t *order = mica_alloc((size_t)(count ? count : 1) * sizeof *order, 0), present = 0;
    for (int64_t i = 0; i < count; i++) { /* an insertion sort by offset: the program's entries are few */
        if (found[i].start < 0) continue;
        int64_t k = present++;
        for (; k > 0 && before(&found[i], &found[order[k - 1]]); k--) order[k] = order[k - 1];
        order[k] = i;
    }
    int64_t at = 0;
    for (int64_t k = 0; k < present && r->error[0] == 0; k++) {
        const stored *t = &found[order[k]];
        if (t->start < at)
            fail(r, "tensor '%s' overlaps tensor '%s' in the data", entries[order[k]].name, entries[order[k - 1]].name);
        else if (t->start > at)
            fail(r, "tensor '%s' starts at byte %lld, leaving a gap after byte %lld", entries[order[k]].name,
                 (long long)t->start, (long long)at);
        at = t->end;
    }
    mica_free(order);
    *size = at;
    return r->error[0] == 0;
}

/* ---------------------------------------------------------------- Load */

static bool refuse(const char *name, int line, bool must, const char *format, ...) {
    char why[600];
    va_list args;
    va_start(args, format);
    vsnprintf(why, sizeof why, format, args);
    va_end(args);
    if (must) mica_trapf(line, "cannot load '%s': %s", name, why);
    char where[300];
    mica_where(where, sizeof where, line);
    mica_flush();
    fprintf(stderr, "%s: cannot load '%s': %s\n", where, name, why);
    return false;
}

/* The program's places against the file's tensors: each there, of its dtype and shape. */
static bool check_places(reader *r, mica_entry *entries, int64_t count, const stored *found) {
    for (int64_t i = 0; i < count; i++) {
        mica_entry *e = &entries[i];
        const stored *t = &found[i];
        if (t->start < 0) return fail(r, "it has no tensor '%s'", e->name);
        if (t->dtype != e->dtype)
            return fail(r, "tensor %s is %s, but the program's place is %s", e->name, DTYPE_NAMES[t->dtype],
                        DTYPE_NAMES[e->dtype]);
        refresh_dynamic_shape(e);
        bool shape_ok = t->rank == e->rank;
        for (int d = 0; shape_ok && d < e->rank; d++) shape_ok = e->rows != NULL || t->dims[d] == e->dims[d];
        if (!shape_ok) {
            char have[160], want[160];
            shape_text(have, sizeof have, t->rank, t->dims);
            if (e->rows != NULL) snprintf(want, sizeof want, "rank %d", e->rank); /* a dynamic place takes any extents */
            else shape_text(want, sizeof want, e->rank, e->dims);
            return fail(r, "tensor '%s' has shape %s, but the program's place has %s", e->name, have, want);
        }
    }
    return true;
}

/* Booleans are the bytes 0 and 1; any other would be undefined in C. */
static bool check_booleans(reader *r, mica_entry *entries, int64_t count, const stored *found, const unsigned char *data) {
    for (int64_t i = 0; i < count; i++)
        for (int64_t b = found[i].start; entries[i].dtype == MICA_BOOL && b < found[i].end; b++)
            if (data[b] > 1) return fail(r, "tensor '%s' holds a boolean byte %d, not 0 or 1", entries[i].name, data[b]);
    return true;
}

/* Every check passed: now change the program's state. */
static void copy_into_places(mica_entry *entries, int64_t count, const stored *found, const unsigned char *data, int line) {
    for (int64_t i = 0; i < count; i++) {
        mica_entry *e = &entries[i];
        const stored *t = &found[i];
        if (e->rows != NULL) {
            int64_t rows = t->dims[0], cols = t->rank == 2 ? t->dims[1] : 1;
            *e->elements = mica_resize(*e->elements, *e->rows * *e->cols, rows * cols, DTYPE_SIZES[e->dtype], line);
            *e->rows = rows;
            *e->cols = cols;
            e->data = *e->elements;
        }
        if (t->end > t->start) memcpy(e->data, data + t->start, (size_t)(t->end - t->start));
        if (e->tag != NULL) mica_tag_adopt(e->tag);
    }
}

/* The reason the file at f is refused, into r->error, or none; its data into *data. */
static void read_checkpoint(reader *r, FILE *f, mica_entry *entries, int64_t count, stored *found, text *header,
                            text *data) {
    struct stat info;
    unsigned char prefix[8];
    if (fstat(fileno(f), &info) == 0 && S_ISDIR(info.st_mode)) {
        fail(r, "it is a directory");
        return;
    }
    if (fread(prefix, 1, 8, f) < 8) {
        fail(r, "the file is truncated: it is shorter than the 8-byte header length");
        return;
    }
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)prefix[i] << (8 * i);
    if (header_len > MAX_HEADER) {
        fail(r, "not a safetensors file: its header length %llu is over safetensors' limit of %d bytes",
             (unsigned long long)header_len, MAX_HEADER);
        return;
    }
    if (read_into(header, f, header_len) < header_len) {
        fail(r, "the file is truncated: its header runs past the end");
        return;
    }
    char format[32] = "", checksum[32] = "";
    int64_t size;
    r->p = header->data ? header->data : "";
    r->end = r->p + header->len;
    if (!(read_header(r, entries, count, found, format, checksum, sizeof checksum) &&
          check_layout(r, entries, count, found, &size)))
        return;
    uint64_t got = read_into(data, f, (uint64_t)size);
    if (got < (uint64_t)size) {
        fail(r, "the file is truncated: its data ends at byte %llu of the %lld its tensors need", (unsigned long long)got,
             (long long)size);
        return;
    }
    if (fgetc(f) != EOF) {
        fail(r, "the file runs on past its last tensor's data, at byte %lld", (long long)size);
        return;
    }
    if (strcmp(format, "mica") == 0 && checksum[0] == 0) {
        fail(r, "its metadata says it was written by Mica but carries no checksum");
        return;
    }
    char actual[32];
    snprintf(actual, sizeof actual, "crc32:%08x", crc32(0, (const unsigned char *)data->data, data->len));
    if (checksum[0] && strcmp(actual, checksum) != 0) {
        fail(r, "the data is corrupt: its checksum is %s, the header says %s", actual, checksum);
        return;
    }
    if (check_places(r, entries, count, found))
        check_booleans(r, entries, count, found, (const unsigned char *)data->data);
}

bool mica_load(mica_string path, mica_entry *entries, int64_t count, bool must, int line) {
    char name[4096];
    snprintf(name, sizeof name, "%.*s", (int)path.len, path.data ? path.data : "");
    FILE *f = fopen(name, "rb");
    if (f == NULL) return refuse(name, line, must, "%s", strerror(errno));
    stored *found = mica_alloc((size_t)(count ? count : 1) * sizeof(stored), line);
    for (int64_t i = 0; i < count; i++) found[i].start = -1;
    reader r = {0};
    text header = {0}, data = {0};
    read_checkpoint(&r, f, entries, count, found, &header, &data);
    fclose(f);
    if (r.error[0] == 0) copy_into_places(entries, count, found, (const unsigned char *)data.data, line);
    mica_free(found);
    mica_free(header.data);
    mica_free(data.data);
    return r.error[0] == 0 || refuse(name, line, must, "%s", r.error);
}
