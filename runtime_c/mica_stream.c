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
 * A connection (mica_net.c) is a stream both read and written, with a buffer
 * each way; a listening socket is one that is neither, only accepted from.
 */
#include "mica_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

typedef mica_fd_stream file_stream;


static file_stream *open_streams;
static pthread_mutex_t open_streams_lock = PTHREAD_MUTEX_INITIALIZER; /* tasks open and close streams at once */

static void send_bytes(file_stream *s, const char *data, size_t size) {
    if (s->write_error == 0) s->write_error = s->send_all(s->fd, data, size);
}

static void send_pending(file_stream *s) {
    send_bytes(s, s->out, s->pending);
    s->pending = 0;
}

static void put_buffered(mica_stream *to, const char *data, size_t size) {
    file_stream *s = (file_stream *)to;
    if (size > MICA_STREAM_BUFFER - s->pending) send_pending(s);
    if (size >= MICA_STREAM_BUFFER) {
        send_bytes(s, data, size); /* too big to collect: straight out */
        return;
    }
    memcpy(s->out + s->pending, data, size);
    s->pending += size;
}

/* ErrOutput is unbuffered, as stderr is: each piece goes out as it is written. */
static void put_unbuffered(mica_stream *to, const char *data, size_t size) {
    send_bytes((file_stream *)to, data, size);
}

/* Their buffers are apart from them: an initialized struct lives in the file's
 * .data, and with the buffer inside, 64 KiB of every program that names one. */
static char input_buffer[MICA_STREAM_BUFFER];
static file_stream standard_input = {.base = {put_buffered}, .mode = READING, .fd = 0, .name = "standard input",
                                     .in = input_buffer};
static file_stream standard_error = { /* unbuffered: no buffer */
    .base = {put_unbuffered}, .mode = APPENDING, .fd = 2, .name = "standard error", .send_all = mica_write_all};

mica_stream *mica_input(void) {
    return &standard_input.base;
}

mica_stream *mica_error_output(void) {
    return &standard_error.base;
}

/* ---- opening and closing ---- */

/* The reason a stream cannot be kept, or 0: its bytes sent, its file closed
 * (and an atomic one renamed into place); forget frees it after. */
static int finish(file_stream *s, bool abandon) {
    pthread_mutex_lock(&open_streams_lock);
    if (s->prev) s->prev->next = s->next;
    else open_streams = s->next;
    if (s->next) s->next->prev = s->prev;
    pthread_mutex_unlock(&open_streams_lock);
    int error = 0;
    if (s->mode == WRITING) {
        send_pending(s);
        error = mica_atomic_commit(&s->atomic, abandon ? ECANCELED : s->write_error);
    } else {
        bool sends = s->mode == APPENDING || s->mode == CONNECTED;
        if (s->hold) s->hold->end(s->hold, abandon);
        if (sends) send_pending(s);
        error = sends ? s->write_error : 0;
        if (close(s->fd) != 0 && error == 0 && sends) error = errno;
    }
    return error;
}

static void forget(file_stream *s) {
    mica_free(s->back.data);
    mica_free((char *)s->name);
    mica_free(s);
}

/* At an early end, nothing half-written appears: see the header. */
static void end_early(void) {
    while (open_streams) {
        file_stream *s = open_streams;
        finish(s, true);
        forget(s);
    }
}

/* A stream with its `buffers` (0 to 2) after it: in, then out. */
static file_stream *opened_with(mica_stream **f, enum mica_stream_mode mode, int fd, const char *name, int buffers) {
    static bool watching;
    mica_stream_drop(f); /* the stream the variable held closes first */
    /* The buffers are not zeroed: they are filled before they are read, and the
     * pages a connection never uses (a held caller's, a short answer's) are never
     * touched, so an open stream costs a page or two, not 128 KiB. */
    file_stream *s = mica_scratch(1, sizeof *s + (size_t)buffers * MICA_STREAM_BUFFER, 0);
    memset(s, 0, sizeof *s);
    s->base.put = put_buffered;
    s->mode = mode;
    s->fd = fd;
    s->name = name;
    s->send_all = mica_write_all;
    if (buffers > 0) s->in = s->out = (char *)(s + 1);
    if (buffers > 1) s->out = s->in + MICA_STREAM_BUFFER;
    pthread_mutex_lock(&open_streams_lock);
    if (!watching) watching = atexit(end_early) == 0;
    s->next = open_streams;
    if (open_streams) open_streams->prev = s;
    open_streams = s;
    pthread_mutex_unlock(&open_streams_lock);
    *f = &s->base;
    return s;
}

static bool opened(mica_stream **f, enum mica_stream_mode mode, int fd, const char *name, const mica_atomic *atomic) {
    file_stream *s = opened_with(f, mode, fd, name, 1);
    if (atomic) s->atomic = *atomic;
    return true;
}

void mica_stream_of_socket(mica_stream **f, int fd, char *name, bool listening,
                           int (*send_all)(int fd, const void *bytes, size_t size)) {
    file_stream *s = opened_with(f, listening ? LISTENING : CONNECTED, fd, name, listening ? 0 : 2);
    s->send_all = send_all;
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

/* Why a read, a write or an accept failed: a socket's EAGAIN is its SetTimeout running out. */
void mica_stream_reason(char *why, size_t size, const mica_fd_stream *s, int error) {
    if (s->timeout > 0 && (error == EAGAIN || error == EWOULDBLOCK))
        snprintf(why, size, "timed out after %g s", s->timeout);
    else
        snprintf(why, size, "%s", strerror(error));
}

/* The reason a read or a write failed, naming the file or the connection. */
static void describe(char *reason, size_t size, const file_stream *s, bool reading, int error) {
    bool socket = s->mode == CONNECTED;
    char why[128];
    mica_stream_reason(why, sizeof why, s, error);
    const char *doing = reading ? (socket ? "read from" : "read") : (socket ? "write to" : "write");
    snprintf(reason, size, socket ? "cannot %s %s: %s" : "cannot %s '%s': %s", doing, s->name, why);
}

/* A failed write's answer: false with the reason, or a trap when nobody reads the answer. */
static bool write_failed(const file_stream *s, int error, bool must, int at) {
    char reason[1024];
    describe(reason, sizeof reason, s, false, error);
    if (must) mica_trap(at, reason);
    return mica_fail("%s", reason);
}

bool mica_stream_close(mica_stream **f, bool must, int at) {
    if (*f == NULL) mica_trap(at, "Close of a stream that is not open");
    file_stream *s = (file_stream *)*f;
    *f = NULL;
    int error = finish(s, false);
    bool kept = error == 0 || write_failed(s, error, must, at);
    forget(s);
    return kept;
}

void mica_stream_drop(mica_stream **f) {
    if (*f != NULL) mica_stream_close(f, true, 0);
}

/* ---- writing: Write and WriteLn format (mica_print.c) and put ---- */

/* A listening socket is neither read nor written: Accept gives its connections. */
static _Noreturn void listening(file_stream *s, const char *doing, int at) {
    mica_trapf(at, "cannot %s %s: it is listening; Accept gives its connections", doing, s->name);
}

mica_stream *mica_writable(mica_stream *f, int at) {
    if (f == NULL) mica_trap(at, "Write to a stream that is not open");
    if (f == &mica_output) return f;
    file_stream *s = (file_stream *)f;
    if (s->mode == READING) mica_trapf(at, "cannot write to '%s': it is open for reading", s->name);
    if (s->mode == LISTENING) listening(s, "write to", at);
    return f;
}

bool mica_stream_flush(mica_stream *f, bool must, int at) {
    if (f == NULL) mica_trap(at, "Flush of a stream that is not open");
    if (f == &mica_output) {
        mica_flush();
        return true;
    }
    file_stream *s = (file_stream *)f;
    if (s->mode == READING || s->mode == LISTENING) return true;
    send_pending(s);
    return s->write_error == 0 || write_failed(s, s->write_error, must, at);
}

/* ---- reading ---- */

static file_stream *readable(mica_stream *f, int at) {
    if (f == NULL) mica_trap(at, "read from a stream that is not open");
    if (f != &mica_output && ((file_stream *)f)->mode == LISTENING) listening((file_stream *)f, "read from", at);
    if (f == &mica_output || (((file_stream *)f)->mode != READING && ((file_stream *)f)->mode != CONNECTED)) {
        const char *name = f == &mica_output ? "standard output" : ((file_stream *)f)->name;
        mica_trapf(at, "cannot read from '%s': it is open for writing", name);
    }
    return (file_stream *)f;
}

/* More bytes into an emptied buffer: false at the end, or on an error (kept in s->read_error). */
static bool fill(file_stream *s) {
    s->start = s->filled = 0;
    if (s->gathered_error != 0) { /* the connection failed while its caller was held */
        s->read_error = s->gathered_error;
        s->gathered_error = 0;
        return false;
    }
    for (;;) {
        ssize_t got = read(s->fd, s->in, MICA_STREAM_BUFFER);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) s->read_error = errno;
        if (got <= 0) return false;
        s->filled = (size_t)got;
        return true;
    }
}

/* The next unread bytes (*ready of them, at least one), or NULL at the end or
 * on an error: first what a failed read gave back, then the buffer, refilled
 * when empty. take() says how many of them were used. */
static const char *unread(file_stream *s, size_t *ready) {
    if (s->back.data) {
        if (s->back_start < s->back.len) {
            *ready = (size_t)(s->back.len - s->back_start);
            return s->back.data + s->back_start;
        }
        mica_free(s->back.data);
        s->back = (mica_growing){0};
        s->back_start = 0;
    }
    if (s->start == s->filled && !fill(s)) return NULL;
    *ready = s->filled - s->start;
    return s->in + s->start;
}

/* For a held caller (mica_hold.c), whose head gathers in its buffer before any task reads it. */
bool mica_stream_gather(file_stream *s) {
    memmove(s->in, s->in + s->start, s->filled - s->start); /* the unread bytes first, then room after them */
    s->filled -= s->start;
    s->start = 0;
    if (s->filled == MICA_STREAM_BUFFER) return true;
    ssize_t got;
    do got = recv(s->fd, s->in + s->filled, MICA_STREAM_BUFFER - s->filled, MSG_DONTWAIT);
    while (got < 0 && errno == EINTR);
    if (got > 0) {
        s->filled += (size_t)got;
        return true;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true; /* nothing more yet */
    if (got < 0) s->gathered_error = errno;
    return false;
}

int mica_stream_unread(const file_stream *s, int64_t skip, const char *piece[2], int64_t size[2]) {
    const char *from[2] = {s->back.data ? s->back.data + s->back_start : NULL, s->in + s->start};
    int64_t len[2] = {s->back.data ? s->back.len - s->back_start : 0, (int64_t)(s->filled - s->start)};
    int pieces = 0;
    for (int i = 0; i < 2; i++) {
        int64_t skipped = skip < len[i] ? skip : len[i];
        skip -= skipped;
        if (len[i] > skipped) {
            piece[pieces] = from[i] + skipped;
            size[pieces++] = len[i] - skipped;
        }
    }
    return pieces;
}

static void take(file_stream *s, size_t n) {
    if (s->back.data) s->back_start += (int64_t)n;
    else s->start += n;
}

static void append(mica_growing *g, const char *bytes, int64_t n, int at) {
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
 * (LastError empty) or on an error (LastError names the file or connection).
 * A failed read gives its bytes back, so a connection whose read timed out
 * loses nothing and can be read again. */
static bool read_answer(file_stream *s, mica_growing *g, bool got_any, mica_string *into) {
    if (s->read_error != 0) {
        s->back = *g; /* unread() had emptied the old one before the read that failed */
        s->back_start = 0;
        char reason[1024];
        describe(reason, sizeof reason, s, true, s->read_error);
        s->read_error = 0;
        return mica_fail("%s", reason);
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
    mica_growing g = {0};
    bool got_any = false, ended = false;
    size_t ready;
    const char *from;
    while (!ended && (from = unread(s, &ready)) != NULL) {
        got_any = true;
        const char *newline = memchr(from, '\n', ready);
        size_t part = newline ? (size_t)(newline - from) : ready;
        append(&g, from, (int64_t)part, at);
        if (newline) append(&g, "\n", 1, at); /* kept until the end, so a failed read gives back every byte */
        take(s, part + (newline != NULL));
        ended = newline != NULL;
    }
    if (ended) g.len--;
    if (ended && g.len > 0 && g.data[g.len - 1] == '\r') g.len--;
    return read_answer(s, &g, got_any, line);
}

/* Up to n bytes: n, unless the end comes first. */
static bool read_bytes(mica_stream *f, int64_t n, mica_string *bytes, int at) {
    file_stream *s = readable(f, at);
    if (n < 0) mica_trapf(at, "ReadBytes of %lld bytes: a count is 0 or more", (long long)n);
    mica_growing g = {0};
    size_t ready;
    const char *from;
    while (g.len < n && (from = unread(s, &ready)) != NULL) {
        size_t part = (uint64_t)(n - g.len) < ready ? (size_t)(n - g.len) : ready;
        append(&g, from, (int64_t)part, at);
        take(s, part);
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
