/* mica_stream.h: the state of a stream over a file descriptor, shared by
 * mica_stream.c, which buffers every such stream, and mica_net.c, which opens
 * sockets as ones. Programs do not include it; mica.h declares the calls. */
#ifndef MICA_STREAM_H
#define MICA_STREAM_H

#include "mica.h"

#include <sys/socket.h>

enum mica_stream_mode { READING, WRITING, APPENDING, CONNECTED, LISTENING };

/* Bytes taken out of a stream for one read, grown by doubling. */
typedef struct {
    char *data;
    int64_t len, capacity;
} mica_growing;

#define MICA_STREAM_BUFFER ((size_t)1 << 16)

/* A listening socket's held callers (mica_hold.c). Closing the socket lets
 * them go through `end`, so a program that holds none links none of that code;
 * `abandon` at an early end, when the open streams close the held ones. */
typedef struct mica_hold {
    void (*end)(struct mica_hold *hold, bool abandon);
} mica_hold;

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
    int gathered_error;    /* an error mica_stream_gather met, which the read that reaches it answers */
    mica_growing back;     /* what a failed read (a timeout) had taken, given back: later reads take it first */
    int64_t back_start;    /* back's bytes before this are taken again */
    size_t start, filled;  /* reading: the unread bytes are in[start, filled) */
    size_t pending;        /* writing: out[0, pending) */
    /* MICA_STREAM_BUFFER bytes each, after the struct (Input's in .bss): a file is read
     * or written, so both are its one buffer; a connection has one each way. */
    char *in, *out;
    mica_hold *hold;       /* a listening socket's held callers, after HoldCallers */
    struct mica_fd_stream *prev, *next; /* the open ones, which an early end puts away */
} mica_fd_stream;

/* A socket stream from mica_net.c: `name` (for mica_free) and `fd` now belong
 * to the stream in *f, which a connection both reads and writes. */
void mica_stream_of_socket(mica_stream **f, int fd, char *name, bool listening,
                           int (*send_all)(int fd, const void *bytes, size_t size));

/* The stream in *conn of a caller accepted as fd, named by its peer's address (mica_net.c). */
void mica_stream_of_caller(mica_stream **conn, int fd, const struct sockaddr_storage *peer, socklen_t size);

/* f as a socket, or a trap naming the call (mica_net.c). */
mica_fd_stream *mica_socket_stream(mica_stream *f, const char *call, int at);

/* Why a read, a write or an accept of s failed with errno `error`. */
void mica_stream_reason(char *why, size_t size, const mica_fd_stream *s, int error);

/* A connection's bytes that the kernel holds, moved into its read buffer
 * without waiting; false once it has ended (its caller closed it, or it failed:
 * the read that reaches the end says which). */
bool mica_stream_gather(mica_fd_stream *s);

/* The unread bytes of s from the `skip`th on, in at most two pieces (what a
 * failed read gave back, then the buffer): how many pieces. */
int mica_stream_unread(const mica_fd_stream *s, int64_t skip, const char *piece[2], int64_t size[2]);

/* The next caller of a server that holds its callers, for Accept: false with
 * the reason when none came within the server's timeout (mica_hold.c). */
bool mica_hold_next(mica_fd_stream *server, mica_stream **caller);

#endif
