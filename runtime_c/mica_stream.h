/* mica_stream.h: the state of a stream over a file descriptor, shared by
 * mica_stream.c, which buffers every such stream, and mica_net.c, which opens
 * sockets as ones. Programs do not include it; mica.h declares the calls. */
#ifndef MICA_STREAM_H
#define MICA_STREAM_H

#include "mica.h"

enum mica_stream_mode { READING, WRITING, APPENDING, CONNECTED, LISTENING };

/* Bytes taken out of a stream for one read, grown by doubling. */
typedef struct {
    char *data;
    int64_t len, capacity;
} mica_growing;

#define MICA_STREAM_BUFFER ((size_t)1 << 16)

typedef struct mica_fd_stream {
    mica_stream base; /* first: a mica_stream * of this stream points at its mica_fd_stream */
    enum mica_stream_mode mode;
    int fd;
    mica_atomic atomic; /* WRITING: the temporary and the target */
    const char *name;   /* as reasons and traps name it: a path, or a connection's host:port */
    /* write(2) for a file; for a socket, send(2) that fails with EPIPE instead of raising SIGPIPE */
    int (*send_all)(int fd, const void *bytes, size_t size);
    double timeout;        /* a socket's SetTimeout seconds (0: none), which a timed-out reason names */
    int read_error;        /* the failed read's errno, until its reason is given */
    int write_error;       /* the first failed write's errno; later bytes are dropped */
    mica_growing back;     /* what a failed read (a timeout) had taken, given back: later reads take it first */
    int64_t back_start;    /* back's bytes before this are taken again */
    size_t start, filled;  /* reading: the unread bytes are in[start, filled) */
    size_t pending;        /* writing: out[0, pending) */
    /* MICA_STREAM_BUFFER bytes each, after the struct (Input's in .bss): a file is read
     * or written, so both are its one buffer; a connection has one each way. */
    char *in, *out;
    struct mica_fd_stream *prev, *next; /* the open ones, which an early end puts away */
} mica_fd_stream;

/* A socket stream from mica_net.c: `name` (for mica_free) and `fd` now belong
 * to the stream in *f, which a connection both reads and writes. */
void mica_stream_of_socket(mica_stream **f, int fd, char *name, bool listening,
                           int (*send_all)(int fd, const void *bytes, size_t size));

/* Why a read, a write or an accept of s failed with errno `error`. */
void mica_stream_reason(char *why, size_t size, const mica_fd_stream *s, int error);

#endif
