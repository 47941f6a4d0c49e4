/* mica_stream.c: streams: files opened for reading, writing or appending,
 * and the standard input and error output.
 *
 * A stream owns a 64 KiB buffer. Reading fills it with read(2) and ReadLine
 * takes lines out of it, so a file of any size is read in constant memory
 * besides the line itself, which may be of any length. Writing collects in it
 * and goes out a buffer at a time; a write error is kept, later bytes are
 * dropped, and Flush or Close reports it. OpenWrite's file goes through the
 * atomic writer of mica_file.c: it appears whole at Close, or not at all.
 * A program that ends early (a trap, Halt) with streams open abandons what
 * they would have written atomically and sends out what appending ones hold.
 * Output is not one of these: it is the program's output buffer (mica_print.c).
 */
#include "mica.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum mode { READING, WRITING, APPENDING };

typedef struct file_stream {
    mica_stream base; /* first: a mica_stream * of this file points at its file_stream */
    enum mode mode;
    int fd;
    mica_atomic atomic; /* WRITING: the temporary and the target */
    const char *name;   /* the path, as reasons and traps name it; Input and ErrOutput, never closed, a literal */
    int error;          /* the first failed read's or write's errno */
    size_t start, used; /* reading: the unread bytes are buffer[start, used); writing: buffer[0, used) */
    struct file_stream *prev, *next; /* the open ones, which an early end puts away */
    char *buffer;       /* STREAM_BUFFER bytes: after the struct for an opened file, in .bss for Input */
} file_stream;

#define STREAM_BUFFER ((size_t)1 << 16)

static file_stream *open_streams;
static pthread_mutex_t open_streams_lock = PTHREAD_MUTEX_INITIALIZER; /* tasks open and close streams at once */

static void send_bytes(file_stream *s, const char *data, size_t size) {
    if (s->error == 0) s->error = mica_write_all(s->fd, data, size);
}

static void send(file_stream *s) {
    send_bytes(s, s->buffer, s->used);
    s->used = 0;
}

static void put_buffered(mica_stream *to, const char *data, size_t size) {
    file_stream *s = (file_stream *)to;
    if (size > STREAM_BUFFER - s->used) send(s);
    if (size >= STREAM_BUFFER) {
        send_bytes(s, data, size); /* too big to collect: straight out */
        return;
    }
    memcpy(s->buffer + s->used, data, size);
    s->used += size;
}

/* ErrOutput is unbuffered, as stderr is: each piece goes out as it is written. */
static void put_unbuffered(mica_stream *to, const char *data, size_t size) {
    send_bytes((file_stream *)to, data, size);
}

/* Their buffers are apart from them: an initialized struct lives in the file's
 * .data, and with the buffer inside, 64 KiB of every program that names one. */
static char input_buffer[STREAM_BUFFER];
static file_stream standard_input = {
    .base = {put_buffered}, .mode = READING, .fd = 0, .name = "standard input", .buffer = input_buffer};
static file_stream standard_error = { /* unbuffered: no buffer */
    .base = {put_unbuffered}, .mode = APPENDING, .fd = 2, .name = "standard error"};

mica_stream *mica_input(void) {
    return &standard_input.base;
}

mica_stream *mica_error_output(void) {
    return &standard_error.base;
}

/* ---- opening and closing ---- */

/* The reason a stream cannot be kept, or 0: its bytes sent, its file closed
 * (and an atomic one renamed into place), its memory freed. */
static int finish(file_stream *s, bool abandon) {
    pthread_mutex_lock(&open_streams_lock);
    if (s->prev) s->prev->next = s->next;
    else open_streams = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&open_streams_lock);
    int error = 0;
    if (s->mode == WRITING) {
        send(s);
        error = mica_atomic_commit(&s->atomic, abandon ? ECANCELED : s->error);
    } else {
        if (s->mode == APPENDING) send(s);
        error = s->mode == APPENDING ? s->error : 0;
        if (close(s->fd) != 0 && error == 0 && s->mode == APPENDING) error = errno;
    }
    mica_free((char *)s->name);
    mica_free(s);
    return error;
}

/* At an early end, nothing half-written appears: see the header. */
static void end_early(void) {
    while (open_streams) finish(open_streams, true);
}

static bool opened(mica_stream **f, enum mode mode, int fd, const char *name, const mica_atomic *atomic) {
    static bool watching;
    mica_stream_drop(f); /* the stream the variable held closes first */
    file_stream *s = mica_alloc(sizeof *s + STREAM_BUFFER, 0);
    s->buffer = (char *)(s + 1);
    s->base.put = put_buffered;
    s->mode = mode;
    s->fd = fd;
    if (atomic) s->atomic = *atomic;
    s->name = name;
    pthread_mutex_lock(&open_streams_lock);
    if (!watching) watching = atexit(end_early) == 0;
    s->next = open_streams;
    if (open_streams) open_streams->prev = s;
    open_streams = s;
    pthread_mutex_unlock(&open_streams_lock);
    *f = &s->base;
    return true;
}

/* The reason (for LastError) that `name` could not be opened, having freed it. */
static bool refused(const char *doing, char *name, int error) {
    mica_fail("cannot %s '%s': %s", doing, name, strerror(error));
    mica_free(name);
    return false;
}

bool mica_open_read(mica_string path, mica_stream **f) {
    char *name = mica_c_path(path);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return refused("open", name, errno);
    struct stat info;
    if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) { /* a folder opens, then every read fails */
        close(fd);
        return refused("open", name, EISDIR);
    }
    return opened(f, READING, fd, name, NULL);
}

bool mica_open_write(mica_string path, mica_stream **f) {
    char *name = mica_c_path(path);
    mica_atomic atomic;
    int error = mica_atomic_begin(name, &atomic);
    if (error != 0) return refused("write", name, error);
    return opened(f, WRITING, atomic.fd, name, &atomic);
}

bool mica_open_append(mica_string path, mica_stream **f) {
    char *name = mica_c_path(path);
    int fd = open(name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return refused("append to", name, errno);
    return opened(f, APPENDING, fd, name, NULL);
}

/* A failed write's answer: false with the reason, or a trap when nobody reads the answer. */
static bool write_failed(const char *name, int error, bool must, int at) {
    char reason[1024];
    snprintf(reason, sizeof reason, "cannot write '%s': %s", name, strerror(error));
    if (must) mica_trap(at, reason);
    return mica_fail("%s", reason);
}

bool mica_stream_close(mica_stream **f, bool must, int at) {
    if (*f == NULL) mica_trap(at, "Close of a stream that is not open");
    file_stream *s = (file_stream *)*f;
    *f = NULL;
    char name[512];
    snprintf(name, sizeof name, "%s", s->name);
    int error = finish(s, false);
    return error == 0 || write_failed(name, error, must, at);
}

void mica_stream_drop(mica_stream **f) {
    if (*f != NULL) mica_stream_close(f, true, 0);
}

/* ---- writing: Write and WriteLn format (mica_print.c) and put ---- */

mica_stream *mica_writable(mica_stream *f, int at) {
    if (f == NULL) mica_trap(at, "Write to a stream that is not open");
    if (f != &mica_output && ((file_stream *)f)->mode == READING)
        mica_trapf(at, "cannot write to '%s': it is open for reading", ((file_stream *)f)->name);
    return f;
}

bool mica_stream_flush(mica_stream *f, bool must, int at) {
    if (f == NULL) mica_trap(at, "Flush of a stream that is not open");
    if (f == &mica_output) {
        mica_flush();
        return true;
    }
    file_stream *s = (file_stream *)f;
    if (s->mode == READING) return true;
    send(s);
    return s->error == 0 || write_failed(s->name, s->error, must, at);
}

/* ---- reading ---- */

static file_stream *readable(mica_stream *f, int at) {
    if (f == NULL) mica_trap(at, "read from a stream that is not open");
    if (f == &mica_output || ((file_stream *)f)->mode != READING) {
        const char *name = f == &mica_output ? "standard output" : ((file_stream *)f)->name;
        mica_trapf(at, "cannot read from '%s': it is open for writing", name);
    }
    return (file_stream *)f;
}

/* More bytes into an emptied buffer: false at the end, or on an error (kept in s->error). */
static bool fill(file_stream *s) {
    s->start = s->used = 0;
    for (;;) {
        ssize_t got = read(s->fd, s->buffer, STREAM_BUFFER);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) s->error = errno;
        if (got <= 0) return false;
        s->used = (size_t)got;
        return true;
    }
}

/* Bytes of a string being read, grown by doubling. */
typedef struct {
    char *data;
    int64_t len, capacity;
} growing;

static void append(growing *g, const char *bytes, int64_t n, int at) {
    if (g->len + n + 1 > g->capacity) {
        int64_t more = g->capacity ? g->capacity : 64;
        while (more < g->len + n + 1) more *= 2;
        g->data = mica_resize(g->data, g->capacity, more, 1, at);
        g->capacity = more;
    }
    memcpy(g->data + g->len, bytes, (size_t)n);
    g->len += n;
}

/* The answer of a read that got `g`: true with it in *into, false at the end
 * (LastError empty) or on an error (LastError names the file). */
static bool read_answer(file_stream *s, growing *g, bool got_any, mica_string *into) {
    if (s->error != 0) {
        mica_free(g->data);
        int error = s->error;
        s->error = 0;
        return mica_fail("cannot read '%s': %s", s->name, strerror(error));
    }
    if (!got_any) return mica_fail("%s", "");
    mica_string r = {g->len, g->data ? g->data : mica_alloc(1, 0)};
    r.data[r.len] = 0;
    mica_str_move(into, r);
    return true;
}

/* The next line without its "\n" or "\r\n"; a last line without a newline is still one. */
static bool read_line(mica_stream *f, mica_string *line, int at) {
    file_stream *s = readable(f, at);
    growing g = {0};
    bool got_any = false, ended = false;
    while (!ended) {
        if (s->start == s->used && !fill(s)) break;
        got_any = true;
        const char *from = s->buffer + s->start;
        const char *newline = memchr(from, '\n', s->used - s->start);
        size_t take = newline ? (size_t)(newline - from) : s->used - s->start;
        append(&g, from, (int64_t)take, at);
        s->start += take + (newline != NULL);
        ended = newline != NULL;
    }
    if (ended && g.len > 0 && g.data[g.len - 1] == '\r') g.len--;
    return read_answer(s, &g, got_any, line);
}

/* Up to n bytes: n, unless the end comes first. */
static bool read_bytes(mica_stream *f, int64_t n, mica_string *bytes, int at) {
    file_stream *s = readable(f, at);
    if (n < 0) mica_trapf(at, "ReadBytes of %lld bytes: a count is 0 or more", (long long)n);
    growing g = {0};
    while (g.len < n) {
        if (s->start == s->used && !fill(s)) break;
        size_t ready = s->used - s->start, take = (uint64_t)(n - g.len) < ready ? (size_t)(n - g.len) : ready;
        append(&g, s->buffer + s->start, (int64_t)take, at);
        s->start += take;
    }
    return read_answer(s, &g, g.len > 0 || n == 0, bytes);
}

/* Every other stream is one task's (the analyzer proves it); Input is the
 * program's, so tasks reading it take turns, each read whole. */
static pthread_mutex_t input_lock = PTHREAD_MUTEX_INITIALIZER;

static void take_turn(mica_stream *f, bool starting) {
    if (f != mica_input()) return;
    if (starting) pthread_mutex_lock(&input_lock);
    else pthread_mutex_unlock(&input_lock);
}

bool mica_read_line(mica_stream *f, mica_string *line, int at) {
    take_turn(f, true);
    bool got = read_line(f, line, at);
    take_turn(f, false);
    return got;
}

bool mica_read_bytes(mica_stream *f, int64_t n, mica_string *bytes, int at) {
    take_turn(f, true);
    bool got = read_bytes(f, n, bytes, at);
    take_turn(f, false);
    return got;
}
