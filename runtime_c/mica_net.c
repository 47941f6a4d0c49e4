/* mica_net.c: TCP over IPv4 and IPv6 (LANGUAGE.md section 11, Networking).
 *
 * A listening socket and a connection are streams of mica_stream.c, which
 * buffers a connection's reads and writes as it does a file's; this file opens
 * the sockets and does what only sockets do: Listen, Accept, Connect,
 * LocalPort and SetTimeout. A socket's writes go through send(2) with
 * MSG_NOSIGNAL, so a peer that has gone makes a write fail (EPIPE) instead of
 * killing the program with SIGPIPE. A timeout is SO_RCVTIMEO and SO_SNDTIMEO:
 * the kernel ends a read, a write or an accept that waits longer with EAGAIN,
 * which the reason names as the timeout. Names resolve through getaddrinfo
 * (musl's reads /etc/hosts, then asks the servers of /etc/resolv.conf).
 * A stream holds all of a socket's state: nothing here is global.
 */
#define _GNU_SOURCE /* accept4 on glibc, the GPU flavour's C library */
#include "mica_stream.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

static ssize_t send_quietly(int fd, const void *bytes, size_t size) {
    return send(fd, bytes, size, MSG_NOSIGNAL);
}

static int send_all(int fd, const void *bytes, size_t size) {
    return mica_put_all(send_quietly, fd, bytes, size);
}

/* host:port as reasons name an endpoint; an IPv6 address in brackets, so its colons read apart from the port. */
static char *endpoint(const char *host, long long port) {
    bool six = strchr(host, ':') != NULL;
    size_t size = strlen(host) + 32;
    char *name = mica_alloc(size, 0);
    snprintf(name, size, six ? "[%s]:%lld" : "%s:%lld", host, port);
    return name;
}

/* false, with "cannot <doing> <name>: <why>" for LastError; frees name. */
static bool refused(const char *doing, char *name, const char *why) {
    mica_fail("cannot %s %s: %s", doing, name, why);
    mica_free(name);
    return false;
}

/* The addresses of host:port, or NULL after refused(). A listening socket's
 * empty host is every local address. */
static struct addrinfo *resolve(const char *host, int64_t port, bool passive, const char *doing) {
    if (port < 0 || port > 65535) {
        refused(doing, endpoint(host, port), "a port is 0 to 65535");
        return NULL;
    }
    size_t n = strlen(host);
    /* RFC 6761: a name under .invalid never resolves, and no server is asked. */
    if (n >= 7 && strcasecmp(host + n - 7, "invalid") == 0 && (n == 7 || host[n - 8] == '.')) {
        refused(doing, endpoint(host, port), gai_strerror(EAI_NONAME));
        return NULL;
    }
    char service[16];
    snprintf(service, sizeof service, "%lld", (long long)port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)}, *found = NULL;
    int rc = getaddrinfo(*host ? host : NULL, service, &hints, &found);
    if (rc != 0) {
        refused(doing, endpoint(host, port), rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        return NULL;
    }
    return found;
}

static int64_t port_of(int fd) {
    struct sockaddr_storage a;
    socklen_t size = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &size) != 0) return 0;
    return ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
                                         : ((struct sockaddr_in *)&a)->sin_port);
}

/* A listening socket's queue of callers not yet accepted: as long as the system
 * allows. The kernel cuts a longer request to net.core.somaxconn (4096 since
 * Linux 5.4), where musl's SOMAXCONN would ask for a fixed 128. */
#define LONGEST_QUEUE INT_MAX

/* A socket on the first of the addresses that takes one, listening or
 * connected; -1, with the last address's errno in *error, when none does. */
static int first_socket(const struct addrinfo *found, bool listening, int *error) {
    for (const struct addrinfo *a = found; a; a = a->ai_next) { /* 'localhost' may be ::1, then 127.0.0.1 */
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0) {
            *error = errno;
            continue;
        }
        if (listening) {
            /* Rebinding a port whose last connections are still in TIME_WAIT is allowed; two listeners are not. */
            int yes = 1, no = 0;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
            if (a->ai_family == AF_INET6) /* '::' takes IPv4 callers too */
                setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &no, sizeof no);
        }
        bool ready = listening ? bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, LONGEST_QUEUE) == 0
                               : connect(fd, a->ai_addr, a->ai_addrlen) == 0;
        if (ready) return fd;
        *error = errno;
        close(fd);
    }
    return -1;
}

/* Listen or Connect: a socket on host:port into *into, or false with the reason. */
static bool open_socket(mica_string host_text, int64_t port, mica_stream **into, bool listening) {
    const char *doing = listening ? "listen on" : "connect to";
    char *host = mica_c_path(host_text);
    struct addrinfo *found = resolve(host, port, listening, doing);
    int error = 0, fd = found ? first_socket(found, listening, &error) : -1;
    if (found) freeaddrinfo(found);
    if (found && fd < 0) refused(doing, endpoint(host, port), strerror(error));
    if (fd >= 0) { /* a listening socket is named by the port it got, which for port 0 the system picked */
        char *name = endpoint(host, listening ? port_of(fd) : port);
        mica_stream_of_socket(into, fd, name, listening, send_all);
    }
    mica_free(host);
    return fd >= 0;
}

bool mica_listen(mica_string host, int64_t port, mica_stream **server) {
    return open_socket(host, port, server, true);
}

bool mica_connect(mica_string host, int64_t port, mica_stream **conn) {
    return open_socket(host, port, conn, false);
}

mica_fd_stream *mica_socket_stream(mica_stream *f, const char *call, int at) {
    if (f == NULL) mica_trapf(at, "%s of a stream that is not open", call);
    mica_fd_stream *s = (mica_fd_stream *)f;
    if (f == &mica_output || (s->mode != CONNECTED && s->mode != LISTENING)) {
        const char *name = f == &mica_output ? "standard output" : s->name;
        mica_trapf(at, "%s of '%s': it is a file, not a socket", call, name);
    }
    return s;
}

static void set_timeout(mica_fd_stream *s, double seconds) {
    s->timeout = seconds;
    struct timeval t = {.tv_sec = (time_t)seconds, .tv_usec = (suseconds_t)((seconds - floor(seconds)) * 1e6)};
    if (seconds > 0 && t.tv_sec == 0 && t.tv_usec == 0) t.tv_usec = 1; /* a zero timeval would mean none */
    setsockopt(s->fd, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    setsockopt(s->fd, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

void mica_set_timeout(mica_stream *f, double seconds, int at) {
    mica_fd_stream *s = mica_socket_stream(f, "SetTimeout", at);
    if (!(seconds >= 0 && seconds <= 1e9)) /* past 1e9 s (31 years) a timeval is no longer the point */
        mica_trapf(at, "SetTimeout of %g s: a timeout is 0 (none) to 1e9 seconds", seconds);
    set_timeout(s, seconds);
}

void mica_stream_of_caller(mica_stream **conn, int fd, const struct sockaddr_storage *peer, socklen_t size) {
    char host[NI_MAXHOST], port[NI_MAXSERV];
    if (getnameinfo((const struct sockaddr *)peer, size, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) { /* numeric, it fails only for an unknown family */
        snprintf(host, sizeof host, "%s", "unknown peer");
        snprintf(port, sizeof port, "%s", "0");
    }
    mica_stream_of_socket(conn, fd, endpoint(host, atoll(port)), false, send_all);
}

/* The next caller of a server that holds none, by accept(2), which waits as long as the server's timeout. */
static bool next_caller(mica_fd_stream *s, mica_stream **caller) {
    struct sockaddr_storage peer;
    socklen_t size = sizeof peer;
    int fd;
    do fd = accept4(s->fd, (struct sockaddr *)&peer, &size, SOCK_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        char why[128];
        mica_stream_reason(why, sizeof why, s, errno);
        return mica_fail("cannot accept on %s: %s", s->name, why);
    }
    mica_stream_of_caller(caller, fd, &peer, size);
    return true;
}

bool mica_accept(mica_stream *server, mica_stream **conn, int at) {
    mica_fd_stream *s = mica_socket_stream(server, "Accept", at);
    if (s->mode != LISTENING) mica_trapf(at, "Accept on %s: it is a connection, not a listening socket", s->name);
    mica_stream *caller = NULL;
    if (!(s->hold ? mica_hold_next(s, &caller) : next_caller(s, &caller))) return false;
    set_timeout((mica_fd_stream *)caller, s->timeout); /* a server's timeout bounds its connections too */
    mica_stream_drop(conn); /* what conn held closes, as opening into it would: the server, for Accept(s, address s) */
    *conn = caller;
    return true;
}

int64_t mica_local_port(mica_stream *f, int at) {
    return port_of(mica_socket_stream(f, "LocalPort", at)->fd);
}
