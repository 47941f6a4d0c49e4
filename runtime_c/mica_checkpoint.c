/* mica_checkpoint.c: Save and Load in the safetensors format.
 *
 * A file is an 8-byte little-endian header length, a JSON header naming each
 * tensor (dtype, shape, data_offsets) plus "__metadata__" with the format and
 * a CRC-32 of the data, then the data: every tensor's bytes, little-endian,
 * in the order the program listed them. Names are canonical paths
 * (blocks[1].w). Save writes atomically. Load checks everything first --
 * header, checksum, every name, dtype and shape -- and only then copies into
 * the program's places, so a refused file leaves the program's state as it was.
 */
#include "mica.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *DTYPE_NAMES[] = {"F32", "F64", "I64", "I32", "I8", "U8", "BOOL"};
static const size_t DTYPE_SIZES[] = {4, 8, 8, 4, 1, 1, 1};

/* ---------------------------------------------------------------- CRC-32 (IEEE) */

static uint32_t crc32(const unsigned char *data, size_t n) {
    static uint32_t table[256];
    if (table[1] == 0)
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
            table[i] = c;
        }
    uint32_t crc = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    return crc ^ 0xFFFFFFFFu;
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

static int64_t entry_count(const mica_entry *e) {
    int64_t n = 1;
    for (int i = 0; i < e->rank; i++) n *= e->dims[i];
    return n;
}

/* A dynamic tensor's shape and storage are read when the file is written or read. */
static void refresh_dynamic_shape(mica_entry *e) {
    if (e->rows == NULL) return;
    e->data = *e->elements;
    e->dims[0] = *e->rows;
    if (e->rank == 2) e->dims[1] = *e->cols;
}

/* ---------------------------------------------------------------- Save */

void mica_save(mica_string path, mica_entry *entries, int64_t count, int line) {
    size_t data_bytes = 0;
    for (int64_t i = 0; i < count; i++) {
        refresh_dynamic_shape(&entries[i]);
        data_bytes += (size_t)entry_count(&entries[i]) * DTYPE_SIZES[entries[i].dtype];
    }
    unsigned char *data = mica_alloc(data_bytes, line);
    size_t offset = 0;
    for (int64_t i = 0; i < count; i++) {
        size_t bytes = (size_t)entry_count(&entries[i]) * DTYPE_SIZES[entries[i].dtype];
        if (bytes) memcpy(data + offset, entries[i].data, bytes);
        offset += bytes;
    }
    text header = {0};
    char checksum[32];
    snprintf(checksum, sizeof checksum, "crc32:%08x", crc32(data, data_bytes));
    append(&header, "{\"__metadata__\":{\"format\":\"mica\",\"checksum\":\"", 45);
    append(&header, checksum, strlen(checksum));
    append(&header, "\"}", 2);
    offset = 0;
    for (int64_t i = 0; i < count; i++) {
        mica_entry *e = &entries[i];
        size_t bytes = (size_t)entry_count(e) * DTYPE_SIZES[e->dtype];
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
    if (data_bytes) memcpy(file + 8 + header.len, data, data_bytes);
    char *name = mica_alloc((size_t)path.len + 1, line);
    memcpy(name, path.data, (size_t)path.len);
    int error = mica_write_atomically(name, file, total);
    if (error != 0) mica_trapf(line, "cannot save '%s': %s", name, strerror(error));
    mica_free(name);
    mica_free(file);
    mica_free(header.data);
    mica_free(data);
}

/* ---------------------------------------------------------------- a strict reader for the header */

typedef struct {
    const char *p, *end;
    const char *error;
} reader;

static void skip_space(reader *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static bool expect(reader *r, char c) {
    skip_space(r);
    if (r->p < r->end && *r->p == c) {
        r->p++;
        return true;
    }
    if (!r->error) r->error = "the header is not valid JSON";
    return false;
}

static bool peek(reader *r, char c) {
    skip_space(r);
    return r->p < r->end && *r->p == c;
}

/* A JSON string into out (size n); escapes other than \" and \\ are kept as written. */
static bool read_string(reader *r, char *out, size_t n) {
    if (!expect(r, '"')) return false;
    size_t len = 0;
    while (r->p < r->end && *r->p != '"') {
        char c = *r->p++;
        if (c == '\\' && r->p < r->end) c = *r->p++;
        if (len + 1 < n) out[len++] = c;
    }
    out[len] = 0;
    return expect(r, '"');
}

static bool read_integer(reader *r, int64_t *out) {
    skip_space(r);
    int64_t v = 0;
    const char *start = r->p;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9' && v < (INT64_MAX / 10)) v = v * 10 + (*r->p++ - '0');
    if (r->p == start) {
        if (!r->error) r->error = "the header is not valid JSON";
        return false;
    }
    *out = v;
    return true;
}

static bool skip_value(reader *r);

static bool skip_container(reader *r, char open, char close) {
    if (!expect(r, open)) return false;
    if (peek(r, close)) return expect(r, close);
    do {
        char key[256];
        if (open == '{' && !(read_string(r, key, sizeof key) && expect(r, ':'))) return false;
        if (!skip_value(r)) return false;
    } while (peek(r, ',') && expect(r, ','));
    return expect(r, close);
}

static bool skip_value(reader *r) {
    char scratch[256];
    int64_t number;
    skip_space(r);
    if (r->p >= r->end) return expect(r, '?');
    if (*r->p == '{') return skip_container(r, '{', '}');
    if (*r->p == '[') return skip_container(r, '[', ']');
    if (*r->p == '"') return read_string(r, scratch, sizeof scratch);
    return read_integer(r, &number);
}

typedef struct {
    char name[256];
    int dtype;
    int rank;
    int64_t dims[MICA_MAX_RANK];
    int64_t start, end;
} stored;

static int dtype_named(const char *s) {
    for (int i = 0; i < (int)(sizeof DTYPE_NAMES / sizeof *DTYPE_NAMES); i++)
        if (strcmp(s, DTYPE_NAMES[i]) == 0) return i;
    return -1;
}

static bool read_tensor(reader *r, stored *t) {
    char key[64], word[32];
    t->dtype = -1;
    t->rank = -1;
    t->start = t->end = -1;
    if (!expect(r, '{')) return false;
    do {
        if (!(read_string(r, key, sizeof key) && expect(r, ':'))) return false;
        if (strcmp(key, "dtype") == 0) {
            if (!read_string(r, word, sizeof word)) return false;
            t->dtype = dtype_named(word);
            if (t->dtype < 0) r->error = "a tensor has a dtype Mica does not store";
        } else if (strcmp(key, "shape") == 0) {
            if (!expect(r, '[')) return false;
            t->rank = 0;
            while (!peek(r, ']')) {
                if (t->rank == MICA_MAX_RANK) return (r->error = "a tensor has too many dimensions"), false;
                if (!read_integer(r, &t->dims[t->rank++])) return false;
                if (peek(r, ',')) expect(r, ',');
            }
            if (!expect(r, ']')) return false;
        } else if (strcmp(key, "data_offsets") == 0) {
            if (!(expect(r, '[') && read_integer(r, &t->start) && expect(r, ',') && read_integer(r, &t->end) &&
                  expect(r, ']')))
                return false;
        } else if (!skip_value(r)) {
            return false;
        }
    } while (peek(r, ',') && expect(r, ','));
    if (!expect(r, '}')) return false;
    if (t->dtype < 0 || t->rank < 0 || t->start < 0 || t->end < t->start) {
        if (!r->error) r->error = "a tensor's entry lacks its dtype, shape or data_offsets";
        return false;
    }
    return true;
}

/* ---------------------------------------------------------------- Load */

static bool refuse(const char *name, int line, bool must, const char *format, const char *a, const char *b) {
    char why[600];
    snprintf(why, sizeof why, format, a, b);
    if (must) mica_trapf(line, "cannot load '%s': %s", name, why);
    mica_flush();
    fprintf(stderr, "%s:%d: cannot load '%s': %s\n", mica_source_name, line, name, why);
    return false;
}

static void shape_text(char *out, size_t n, int rank, const int64_t *dims) {
    size_t used = (size_t)snprintf(out, n, "[");
    for (int i = 0; i < rank && used < n; i++) used += (size_t)snprintf(out + used, n - used, i ? ", %lld" : "%lld", (long long)dims[i]);
    if (used < n) snprintf(out + used, n - used, "]");
}

bool mica_load(mica_string path, mica_entry *entries, int64_t count, bool must, int line) {
    char name[4096];
    snprintf(name, sizeof name, "%.*s", (int)path.len, path.data ? path.data : "");
    FILE *f = fopen(name, "rb");
    if (f == NULL) return refuse(name, line, must, "%s%s", strerror(errno), "");
    text file = {0};
    char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) append(&file, chunk, got);
    fclose(f);
    bool ok = false;
    stored *found = mica_alloc((size_t)(count ? count : 1) * sizeof(stored), line);
    for (int64_t i = 0; i < count; i++) found[i].start = -1; /* not in the file (yet) */
    if (file.len < 8) {
        refuse(name, line, must, "the file is truncated: %s%s", "it is shorter than the 8-byte header length", "");
        goto done;
    }
    uint64_t header_len = 0;
    for (int i = 0; i < 8; i++) header_len |= (uint64_t)(unsigned char)file.data[i] << (8 * i);
    if (header_len > file.len - 8) {
        refuse(name, line, must, "the file is truncated: %s%s", "its header runs past the end", "");
        goto done;
    }
    const unsigned char *data = (const unsigned char *)file.data + 8 + header_len;
    size_t data_len = file.len - 8 - (size_t)header_len;
    reader r = {file.data + 8, file.data + 8 + header_len, NULL};
    char key[256], checksum[64] = "";
    if (!expect(&r, '{')) goto bad_header;
    while (!peek(&r, '}') && !r.error) {
        if (!(read_string(&r, key, sizeof key) && expect(&r, ':'))) goto bad_header;
        if (strcmp(key, "__metadata__") == 0) {
            if (!expect(&r, '{')) goto bad_header;
            while (!peek(&r, '}') && !r.error) {
                char field[64], value[64];
                if (!(read_string(&r, field, sizeof field) && expect(&r, ':') && read_string(&r, value, sizeof value)))
                    goto bad_header;
                if (strcmp(field, "checksum") == 0) snprintf(checksum, sizeof checksum, "%s", value);
                if (peek(&r, ',')) expect(&r, ',');
            }
            if (!expect(&r, '}')) goto bad_header;
        } else {
            stored t;
            if (!read_tensor(&r, &t)) goto bad_header;
            snprintf(t.name, sizeof t.name, "%s", key);
            for (int64_t i = 0; i < count; i++)
                if (strcmp(entries[i].name, key) == 0) found[i] = t;
        }
        if (peek(&r, ',')) expect(&r, ',');
    }
    if (r.error || !expect(&r, '}')) goto bad_header;
    if (checksum[0]) {
        char actual[32];
        snprintf(actual, sizeof actual, "crc32:%08x", crc32(data, data_len));
        if (strcmp(actual, checksum) != 0) {
            refuse(name, line, must, "the data is corrupt: its checksum is %s, the header says %s", actual, checksum);
            goto done;
        }
    }
    for (int64_t i = 0; i < count; i++) {
        mica_entry *e = &entries[i];
        stored *t = &found[i];
        char want[128], have[128];
        if (t->start < 0) {
            refuse(name, line, must, "it has no tensor '%s'%s", e->name, "");
            goto done;
        }
        if (t->dtype != e->dtype) {
            snprintf(want, sizeof want, "%s is %s", e->name, DTYPE_NAMES[t->dtype]);
            refuse(name, line, must, "tensor %s, but the program's place is %s", want, DTYPE_NAMES[e->dtype]);
            goto done;
        }
        refresh_dynamic_shape(e);
        bool shape_ok = t->rank == e->rank;
        for (int d = 0; shape_ok && d < e->rank; d++) shape_ok = e->rows != NULL || t->dims[d] == e->dims[d];
        if (!shape_ok) {
            shape_text(have, sizeof have, t->rank, t->dims);
            shape_text(want, sizeof want, e->rank, e->dims);
            char message[300];
            snprintf(message, sizeof message, "tensor '%s' has shape %s", e->name, have);
            refuse(name, line, must, "%s, but the program's place has %s", message, want);
            goto done;
        }
        int64_t n = 1;
        for (int d = 0; d < t->rank; d++) n *= t->dims[d];
        if (t->end > (int64_t)data_len || t->end - t->start != n * (int64_t)DTYPE_SIZES[t->dtype]) {
            refuse(name, line, must, "the file is truncated or inconsistent: tensor '%s' lies outside the data%s", e->name, "");
            goto done;
        }
    }
    for (int64_t i = 0; i < count; i++) { /* every check passed: now change the program's state */
        mica_entry *e = &entries[i];
        stored *t = &found[i];
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
    ok = true;
    goto done;
bad_header:
    refuse(name, line, must, "not a safetensors file: %s%s", r.error ? r.error : "the header is not valid JSON", "");
done:
    mica_free(found);
    mica_free(file.data);
    return ok;
}
