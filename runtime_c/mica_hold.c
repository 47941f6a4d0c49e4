/* mica_hold.c: servers that hold their callers (LANGUAGE.md section 11, Networking).
 *
 * After HoldCallers(server, limit, seconds) the server holds each caller, with
 * no task, until the caller is ready: it has sent a head (its lines up to the
 * first empty one after one that is not; a line ends with LF, and a CR before
 * the LF belongs to the end), or `limit` bytes without one, or has closed its
 * end. Then a task's reads of the head do not wait. Accept gives out only
 * ready callers, first come first given, and closes unseen a caller not ready
 * within `seconds`. AwaitHead waits by the same rule on a connection a task
 * keeps (between the requests of a keep-alive conversation), and gives it up
 * when a ready caller waits that no task is accepting. So silent and slow
 * callers cost the server a buffer each, not a task each.
 *
 * One epoll instance watches the listening socket and the held connections.
 * A task that waits while no other polls polls for all (the leader); the
 * others sleep, each woken only for its own news: a task in Accept when a
 * caller is ready (`callers`, one task a caller), a task in AwaitHead when its
 * connection is released (its own condition). After each poll the leader,
 * holding the lock, accepts the new callers, moves what each connection has
 * sent into its stream's buffer, and readies, closes or gives up what it must;
 * when it stops waiting it wakes one sleeper to lead. The lock guards
 * everything here and is never held while the leader waits in epoll_wait; a
 * held connection is touched only by the leader, so an event for one can never
 * find it freed (see release).
 */
#define _GNU_SOURCE /* accept4 on glibc, the GPU flavour's C library */
#include "mica_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

typedef enum { HELD, READY, TIMED_OUT, GIVEN_UP } held_state;

/* How far a held connection's head has come, its unread bytes looked at once each. */
typedef struct {
    int64_t seen;  /* the unread bytes looked at */
    int64_t line;  /* the bytes of the line being looked at, before its LF */
    bool cr;       /* that line's first byte is a CR: one CR alone is an empty line */
    bool begun;    /* a line that is not empty has ended */
    bool whole;    /* an empty line after it has ended the head */
} head_seen;

/* A connection held: a caller not yet given out (on the heap), or one a task
 * awaits a head on (in that task's frame). */
typedef struct held {
    mica_fd_stream *conn;
    double deadline; /* the Clock at which it is given up; 0: never */
    head_seen head;
    held_state state;
    pthread_cond_t *task;     /* the condition of the task in AwaitHead that awaits it; NULL: the server's caller */
    bool watched;             /* in the epoll set */
    struct held *prev, *next; /* held: by deadline; ready: first come first */
} held;

typedef struct {
    held *first, *last;
} held_list;

typedef struct {
    mica_hold base; /* first: the server's hold points at it */
    mica_fd_stream *server;
    int64_t limit;  /* HoldCallers' terms */
    double seconds;
    pthread_mutex_t lock;
    pthread_cond_t callers; /* tasks in Accept sleep on it; on CLOCK_MONOTONIC, as Clock */
    int poll, wake;         /* the epoll instance and the eventfd that cuts its wait short; -1 before the first wait */
    bool polling;           /* a task is the leader */
    double poll_until;      /* when the leader's wait ends by itself; 0: never */
    held_list held, ready;
    int64_t ready_count, accepting;
    int64_t claimed;        /* tasks given up for a ready caller, not yet back in Accept */
    double paused_until;    /* accepting rests after the program ran out of descriptors */
    int accept_error;       /* why accepting failed, which the next Accept says */
} holding;

/* ---- the lists ---- */

static void unlink_held(held_list *list, held *c) {
    if (c->prev) c->prev->next = c->next;
    else list->first = c->next;
    if (c->next) c->next->prev = c->prev;
    else list->last = c->prev;
    c->prev = c->next = NULL;
}

static void insert_after(held_list *list, held *after, held *c) {
    c->prev = after;
    c->next = after ? after->next : list->first;
    if (c->next) c->next->prev = c;
    else list->last = c;
    if (after) after->next = c;
    else list->first = c;
}

/* Does deadline a come after b? 0 is never, after every other. */
static bool later(double a, double b) {
    return a == 0 ? b != 0 : b != 0 && a > b;
}

/* Into the held list by deadline: from its end, where a new deadline almost always goes. */
static void insert_by_deadline(held_list *list, held *c) {
    held *after = list->last;
    while (after && later(after->deadline, c->deadline)) after = after->prev;
    insert_after(list, after, c);
}

/* ---- heads ---- */

/* n more unread bytes looked at for the end of a head, up to `limit` bytes in all. */
static void look(head_seen *k, const char *bytes, int64_t n, int64_t limit) {
    for (int64_t i = 0; i < n && !k->whole && k->seen < limit; i++, k->seen++) {
        if (bytes[i] != '\n') {
            if (k->line == 0) k->cr = bytes[i] == '\r';
            k->line++;
            continue;
        }
        bool empty = k->line == 0 || (k->line == 1 && k->cr);
        k->whole = empty && k->begun;
        k->begun = k->begun || !empty;
        k->line = 0;
    }
}

/* Is c ready, after taking in what the kernel holds of it? */
static bool ready_now(const holding *h, held *c) {
    bool ended = !mica_stream_gather(c->conn);
    const char *piece[2];
    int64_t size[2];
    int pieces = mica_stream_unread(c->conn, c->head.seen, piece, size);
    for (int i = 0; i < pieces; i++) look(&c->head, piece[i], size[i], h->limit);
    return ended || c->head.whole || c->head.seen >= h->limit;
}

/* ---- the epoll set ---- */

/* c in the epoll set; false when the system refuses (no memory for it), and
 * then c is best given to its task, whose reads wait as they would unheld. */
static bool watch(holding *h, held *c) {
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
    c->watched = epoll_ctl(h->poll, EPOLL_CTL_ADD, c->conn->fd, &e) == 0;
    return c->watched;
}

static void unwatch(holding *h, held *c) {
    if (c->watched) epoll_ctl(h->poll, EPOLL_CTL_DEL, c->conn->fd, NULL);
    c->watched = false;
}

/* The listening socket in the set, marked by h itself; false when the system refuses. */
static bool watch_server(holding *h) {
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = h};
    return epoll_ctl(h->poll, EPOLL_CTL_ADD, h->server->fd, &e) == 0;
}

/* The epoll set, made at the first wait: false with the reason when the system has none to give. */
static bool started(holding *h) {
    if (h->poll >= 0) return true;
    h->poll = epoll_create1(EPOLL_CLOEXEC);
    h->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    struct epoll_event e = {.events = EPOLLIN, .data.ptr = &h->wake};
    if (h->poll >= 0 && h->wake >= 0 && epoll_ctl(h->poll, EPOLL_CTL_ADD, h->wake, &e) == 0 && watch_server(h))
        return true;
    int error = errno;
    if (h->poll >= 0) close(h->poll);
    if (h->wake >= 0) close(h->wake);
    h->poll = h->wake = -1;
    return mica_fail("cannot accept on %s: %s", h->server->name, strerror(error));
}

/* Cuts the leader's wait short, so that it sees a deadline sooner than its own. */
static void kick(holding *h) {
    uint64_t one = 1;
    ssize_t sent = write(h->wake, &one, sizeof one);
    (void)sent; /* a full counter has already woken it */
}

/* ---- what the leader decides ---- */

static void close_caller(held *c) {
    mica_stream *conn = &c->conn->base;
    mica_stream_close(&conn, false, 0); /* nothing was written to it: it cannot fail to keep anything */
    mica_free(c);
}

/* Ready callers that no task is accepting, and none is on its way to: the
 * oldest awaited connections are given up for them. */
static void give_up_for_the_waiting(holding *h);

/* c leaves the held list as `state`: its task is woken to see it, or a caller
 * of the server's own is readied for Accept or closed. Only the leader calls
 * this, while it holds the lock, and takes c out of the epoll set first: an
 * event for c still in the leader's array is skipped (not watched), and c's
 * task cannot return (and free c) before the leader lets go of the lock. */
static void release(holding *h, held *c, held_state state) {
    unwatch(h, c);
    unlink_held(&h->held, c);
    c->state = state;
    if (c->task) {
        pthread_cond_signal(c->task);
    } else if (state == TIMED_OUT) {
        close_caller(c);
    } else {
        insert_after(&h->ready, h->ready.last, c);
        h->ready_count++;
        pthread_cond_signal(&h->callers);
        give_up_for_the_waiting(h);
    }
}

/* The connection awaited longest (the earliest deadline), or NULL. */
static held *oldest_awaited(const holding *h) {
    held *c = h->held.first;
    while (c && !c->task) c = c->next;
    return c;
}

static void give_up_for_the_waiting(holding *h) {
    held *oldest;
    while (h->ready_count > h->accepting + h->claimed && (oldest = oldest_awaited(h)) != NULL) {
        release(h, oldest, GIVEN_UP);
        h->claimed++;
    }
}

static void hold_caller(holding *h, int fd, const struct sockaddr_storage *peer, socklen_t size) {
    mica_stream *conn = NULL;
    mica_stream_of_caller(&conn, fd, peer, size);
    held *c = mica_alloc(sizeof *c, 0);
    c->conn = (mica_fd_stream *)conn;
    c->deadline = h->seconds > 0 ? mica_clock() + h->seconds : 0;
    insert_by_deadline(&h->held, c);
    if (ready_now(h, c) || !watch(h, c)) release(h, c, READY); /* one that connects and asks at once is not polled for */
}

/* Out of descriptors (or memory), accepting rests a moment: the listening
 * socket would otherwise stay readable and keep the leader spinning. */
static void pause_accepting(holding *h, int error) {
    epoll_ctl(h->poll, EPOLL_CTL_DEL, h->server->fd, NULL);
    h->paused_until = mica_clock() + 0.1;
    h->accept_error = error;
    pthread_cond_signal(&h->callers); /* for Accept to say */
}

static void take_callers(holding *h) {
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t size = sizeof peer;
        int fd = accept4(h->server->fd, (struct sockaddr *)&peer, &size, SOCK_CLOEXEC);
        if (fd >= 0) hold_caller(h, fd, &peer, size);
        else if (errno != EINTR && errno != ECONNABORTED) break; /* a caller gone before it was taken is no one */
    }
    if (errno != EAGAIN && errno != EWOULDBLOCK) pause_accepting(h, errno);
}

static void expire(holding *h, double now) {
    while (h->held.first && h->held.first->deadline != 0 && h->held.first->deadline <= now)
        release(h, h->held.first, TIMED_OUT);
}

/* ---- waiting ---- */

static int milliseconds_until(double until) {
    if (until == 0) return -1;
    double ms = ceil((until - mica_clock()) * 1e3);
    return ms < 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms;
}

/* The earliest of two Clock readings, 0 being never. */
static double earliest(double a, double b) {
    return later(a, b) ? b : a;
}

/* One wait of the leader's, and all it brings. Called with the lock held. */
static void poll_once(holding *h, double until) {
    h->polling = true;
    if (h->paused_until != 0 && mica_clock() >= h->paused_until && watch_server(h)) h->paused_until = 0;
    h->poll_until = earliest(earliest(until, h->paused_until), h->held.first ? h->held.first->deadline : 0);
    struct epoll_event events[64];
    pthread_mutex_unlock(&h->lock);
    int n = epoll_wait(h->poll, events, 64, milliseconds_until(h->poll_until));
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < n; i++) {
        void *what = events[i].data.ptr;
        uint64_t kicks;
        if (what == &h->wake) {
            ssize_t got = read(h->wake, &kicks, sizeof kicks);
            (void)got; /* only its wakening counts */
        } else if (what == h) {
            take_callers(h);
        } else if (((held *)what)->watched && ready_now(h, what)) {
            release(h, what, READY);
        }
    }
    expire(h, mica_clock());
    h->polling = false;
}

static void sleep_on(holding *h, pthread_cond_t *wake, double until) {
    if (until == 0) {
        pthread_cond_wait(wake, &h->lock);
        return;
    }
    struct timespec t = {.tv_sec = (time_t)until, .tv_nsec = (long)((until - floor(until)) * 1e9)};
    pthread_cond_timedwait(wake, &h->lock, &t);
}

/* Waits, holding the lock, until done(h, me), or false when `until` (0: never)
 * passes first: polling while no other task polls, else asleep on `wake`. */
static bool wait_for(holding *h, bool (*done)(const holding *h, const held *me), const held *me,
                     pthread_cond_t *wake, double until) {
    while (!done(h, me)) {
        if (until != 0 && mica_clock() >= until) return false;
        if (!h->polling) poll_once(h, until);
        else sleep_on(h, wake, until);
    }
    return true;
}

/* A task stops waiting: while none polls, one that sleeps is woken to, a task
 * in Accept first, else the one awaiting the oldest connection. */
static void hand_over(holding *h) {
    held *oldest;
    if (h->polling) return;
    if (h->accepting > 0) pthread_cond_signal(&h->callers);
    else if ((oldest = oldest_awaited(h)) != NULL) pthread_cond_signal(oldest->task);
}

static bool a_caller_is_ready(const holding *h, const held *me) {
    (void)me;
    return h->ready.first != NULL || h->accept_error != 0;
}

static bool released(const holding *h, const held *me) {
    (void)h;
    return me->state != HELD;
}

/* ---- the calls ---- */

static holding *holding_of(mica_stream *server, const char *call, int at) {
    mica_fd_stream *s = mica_socket_stream(server, call, at);
    if (s->mode != LISTENING) mica_trapf(at, "%s with %s: it is a connection, not a listening socket", call, s->name);
    if (s->hold == NULL) mica_trapf(at, "%s with %s: it holds no callers; call HoldCallers first", call, s->name);
    return (holding *)s->hold;
}

static void close_all(held_list *list) {
    while (list->first) {
        held *c = list->first;
        unlink_held(list, c);
        close_caller(c);
    }
}

/* A caller left waiting by a program that ends early is closed by the open
 * streams' own ending, and another task may hold the lock: only the epoll set
 * goes. Otherwise no task is using the server (a server shared by tasks is
 * not closed while they run), and every held caller is closed with it. */
static void end(mica_hold *hold, bool abandon) {
    holding *h = (holding *)hold;
    if (h->poll >= 0) {
        close(h->poll);
        close(h->wake);
    }
    if (abandon) return;
    close_all(&h->held);
    close_all(&h->ready);
    pthread_mutex_destroy(&h->lock);
    pthread_cond_destroy(&h->callers);
    mica_free(h);
}

/* A server that holds many callers may keep as many connections open as the
 * system lets the program: its soft limit on descriptors (often 1024) is
 * raised to the hard one, as Go does at every start. */
static void open_more_descriptors(void) {
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_NOFILE, &r);
    }
}

void mica_hold_callers(mica_stream *server, int64_t limit, double seconds, int at) {
    mica_fd_stream *s = mica_socket_stream(server, "HoldCallers", at);
    if (s->mode != LISTENING) mica_trapf(at, "HoldCallers of %s: it is a connection, not a listening socket", s->name);
    if (limit < 1 || limit > (int64_t)MICA_STREAM_BUFFER)
        mica_trapf(at, "HoldCallers with a limit of %lld bytes: a head is 1 to %zu bytes (a connection's buffer)",
                   (long long)limit, MICA_STREAM_BUFFER);
    if (!(seconds >= 0 && seconds <= 1e9))
        mica_trapf(at, "HoldCallers for %g s: a caller's time is 0 (no end) to 1e9 seconds", seconds);
    if (s->hold == NULL) {
        holding *h = mica_alloc(sizeof *h, at);
        h->base.end = end;
        h->server = s;
        h->poll = h->wake = -1;
        pthread_mutex_init(&h->lock, NULL);
        pthread_condattr_t monotonic;
        pthread_condattr_init(&monotonic);
        pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
        pthread_cond_init(&h->callers, &monotonic);
        pthread_condattr_destroy(&monotonic);
        fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK); /* only the leader accepts, and never waits to */
        open_more_descriptors();
        s->hold = &h->base;
    }
    holding *h = (holding *)s->hold;
    h->limit = limit;
    h->seconds = seconds;
}

bool mica_hold_next(mica_fd_stream *server, mica_stream **caller) {
    holding *h = (holding *)server->hold;
    pthread_mutex_lock(&h->lock);
    if (!started(h)) {
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    held *c = NULL;
    int error = EAGAIN; /* no caller within the server's timeout, as accept(2) says it */
    h->accepting++;
    if (h->claimed > 0) h->claimed--; /* one given up for a caller is back, or another takes its place */
    double until = server->timeout > 0 ? mica_clock() + server->timeout : 0;
    if (wait_for(h, a_caller_is_ready, NULL, &h->callers, until)) {
        c = h->ready.first;
        error = h->accept_error;
        if (c) {
            unlink_held(&h->ready, c);
            if (--h->ready_count == 0) h->claimed = 0; /* nobody waits: nobody is on the way for anyone */
        } else {
            h->accept_error = 0;
        }
    }
    h->accepting--;
    hand_over(h);
    pthread_mutex_unlock(&h->lock);
    if (c) {
        *caller = &c->conn->base;
        mica_free(c);
        return true;
    }
    char why[128];
    mica_stream_reason(why, sizeof why, server, error);
    return mica_fail("cannot accept on %s: %s", server->name, why);
}

bool mica_await_head(mica_stream *server, mica_stream **conn, int at) {
    holding *h = holding_of(server, "AwaitHead", at);
    mica_fd_stream *c = mica_socket_stream(*conn, "AwaitHead", at);
    if (c->mode != CONNECTED) mica_trapf(at, "AwaitHead on %s: it is a listening socket, not a connection", c->name);
    pthread_cond_t wake = PTHREAD_COND_INITIALIZER; /* waited on without a time, it needs no clock nor destroying */
    held me = {.conn = c, .task = &wake};
    if (ready_now(h, &me)) return true; /* its own connection: no other task touches it */
    pthread_mutex_lock(&h->lock);
    if (!started(h)) {
        pthread_mutex_unlock(&h->lock);
        return false;
    }
    if (h->ready_count > h->accepting + h->claimed) { /* a caller waits that no task will take: this one will */
        me.state = GIVEN_UP;
        h->claimed++;
    } else {
        me.deadline = h->seconds > 0 ? mica_clock() + h->seconds : 0;
        insert_by_deadline(&h->held, &me);
        if (!watch(h, &me)) {
            unlink_held(&h->held, &me);
            me.state = READY;
        }
        if (h->polling && later(h->poll_until, me.deadline)) kick(h);
        wait_for(h, released, &me, &wake, 0);
        hand_over(h);
    }
    pthread_mutex_unlock(&h->lock);
    if (me.state == READY) return true;
    if (me.state == TIMED_OUT) return mica_fail("cannot read from %s: timed out after %g s", c->name, h->seconds);
    return mica_fail("cannot read from %s: given up for a caller that waits for a task", c->name);
}
