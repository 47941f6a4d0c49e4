/* mica_output.c: the program's output buffer, Output (mica_output), and the
 * stop signals that must not lose it.
 *
 * The bottom of the runtime with mica_core.c, which flushes it before a trap
 * or Halt speaks and starts and ends it around the program: it calls nothing
 * of the runtime. Write and WriteLn (mica_print.c) reach it through Output's put.
 */
#include "mica.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* ---- the output buffer ----
 *
 * Output collects in out_buffer and goes to file descriptor 1 with write(2):
 * a line at a time when stdout is a terminal (as C's stdio does), in 64 KiB
 * blocks to a pipe or file, and always before the program ends, by exit, trap,
 * Halt, or SIGTERM, SIGINT or SIGHUP. A stopping signal is handled on the
 * program's own thread (others pass it on), so the handler sees the buffer as
 * that thread left it: out_used only grows after the bytes it covers are in
 * place, and while a flush is under way only the flush knows how far write(2)
 * got, so the handler leaves it to the flush to finish and then die.
 *
 * A stdout that refuses a write (a full disk, a pipe whose reader is gone
 * while SIGPIPE is ignored) ends the program, as it ends cat: output that
 * vanished while the status said 0 would be worse than no output. The write
 * that failed keeps its errno in `lost` and later output is dropped; the trap
 * is mica_core.c's (mica_trap_if_output_lost), called by whoever wrote once it
 * holds no lock of the output's. */

static char out_buffer[1 << 16];
static size_t out_used;
static bool line_buffered;                     /* stdout is a terminal */
static volatile sig_atomic_t flushing;         /* mica_flush is writing the buffer */
static volatile sig_atomic_t stopped_by;       /* a signal that came while it was */
static volatile sig_atomic_t finished;         /* all is out: the program thread may be gone */
static pthread_t program_thread;
static atomic_int lost;                        /* the errno of stdout's failed write, or 0 */

/* Tasks print whole lines: a task's output collects in its own line and joins
 * the buffer, under output_lock, at each line's end (or when the line is
 * longer than task_line holds), so lines of tasks never tear. Once a task has
 * started, the program thread takes the lock too. */
static pthread_mutex_t output_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool shared_output;
static _Thread_local bool by_lines;
static _Thread_local char task_line[4096];
static _Thread_local size_t task_used;

/* All of data to stdout: 0, or the errno of the write that failed. Async-signal-safe. */
static int write_out(const char *data, size_t size) {
    while (size > 0) {
        ssize_t wrote = write(1, data, size);
        if (wrote < 0 && errno == EINTR) continue;
        if (wrote < 0) return errno;
        if (wrote == 0) return EIO; /* no progress and no reason: it would never finish */
        data += wrote;
        size -= (size_t)wrote;
    }
    return 0;
}

/* Die of signal, as if it had never been caught: the exit status is 128 + signal. */
static _Noreturn void die_of(int signal) {
    struct sigaction plain = {.sa_handler = SIG_DFL};
    sigset_t just_it;
    sigaction(signal, &plain, NULL);
    sigemptyset(&just_it);
    sigaddset(&just_it, signal);
    pthread_sigmask(SIG_UNBLOCK, &just_it, NULL);
    raise(signal);
    _exit(128 + signal); /* not reached: the default action ends the process */
}

static void on_stop(int signal) {
    if (finished) die_of(signal);
    if (!pthread_equal(pthread_self(), program_thread) && pthread_kill(program_thread, signal) == 0) return;
    if (flushing) {
        if (stopped_by) die_of(signal); /* a second stop does not wait for a stuck flush */
        stopped_by = signal;
        return;
    }
    atomic_signal_fence(memory_order_seq_cst);
    (void)write_out(out_buffer, out_used); /* the signal's status says it ended early, whatever came of this */
    die_of(signal);
}

/* Called on the thread that runs the program, before it prints. A signal the
 * program was started ignoring (nohup's SIGHUP) stays ignored. */
void mica_start_output(void) {
    static const int stops[] = {SIGTERM, SIGINT, SIGHUP};
    struct sigaction before, action = {.sa_handler = on_stop, .sa_flags = SA_RESTART};
    program_thread = pthread_self();
    line_buffered = isatty(1);
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        sigaddset(&action.sa_mask, stops[i]); /* one stop at a time: the buffer is written once */
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        if (sigaction(stops[i], NULL, &before) == 0 && before.sa_handler == SIG_DFL)
            sigaction(stops[i], &action, NULL);
    }
}

/* The buffer out, or dropped once stdout has failed. */
static void write_buffer(void) {
    flushing = 1;
    atomic_signal_fence(memory_order_seq_cst);
    int error = atomic_load(&lost) ? 0 : write_out(out_buffer, out_used);
    if (error != 0) atomic_store(&lost, error);
    out_used = 0;
    atomic_signal_fence(memory_order_seq_cst);
    flushing = 0;
    if (stopped_by) die_of(stopped_by);
}

static void emit_shared(const char *s, size_t n);

/* A task's line so far into the shared buffer. */
static void hand_over_line(void) {
    emit_shared(task_line, task_used);
    task_used = 0;
}

void mica_flush_before_trap(void) {
    bool locking = atomic_load(&shared_output);
    if (by_lines) hand_over_line();
    if (locking) pthread_mutex_lock(&output_lock);
    write_buffer();
    if (locking) pthread_mutex_unlock(&output_lock);
}

int mica_output_lost(void) {
    return atomic_load(&lost);
}

void mica_output_by_lines(void) {
    atomic_store(&shared_output, true);
    by_lines = true;
}

/* The program's last flush, on its thread (mica_core.c has trapped already if
 * stdout refused); a stop after it has nothing to save. */
void mica_end_output(void) {
    mica_flush_before_trap();
    finished = 1;
}

static void fill(const char *s, size_t n) {
    while (n > 0) {
        if (out_used == sizeof out_buffer) write_buffer();
        size_t room = sizeof out_buffer - out_used, take = n < room ? n : room;
        memcpy(out_buffer + out_used, s, take);
        atomic_signal_fence(memory_order_seq_cst); /* the bytes, then the count that shows them */
        out_used += take;
        s += take;
        n -= take;
    }
}

static void emit_shared(const char *s, size_t n) {
    bool locking = atomic_load(&shared_output);
    if (locking) pthread_mutex_lock(&output_lock);
    fill(s, n);
    if (locking) pthread_mutex_unlock(&output_lock);
}

/* Output's put: the bytes into the buffer, or a task's into its line. */
static void output_put(mica_stream *to, const char *s, size_t n) {
    (void)to;
    if (!by_lines) {
        emit_shared(s, n);
        return;
    }
    while (n > 0) {
        if (task_used == sizeof task_line) hand_over_line();
        size_t room = sizeof task_line - task_used, take = n < room ? n : room;
        memcpy(task_line + task_used, s, take);
        task_used += take;
        s += take;
        n -= take;
    }
}

mica_stream mica_output = {output_put};

/* A line of Output ended: a task's line joins the buffer, and a terminal sees it now. */
void mica_output_line_end(void) {
    if (by_lines) hand_over_line();
    if (line_buffered) mica_flush_before_trap();
}
