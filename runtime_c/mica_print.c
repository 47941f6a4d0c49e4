/* mica_print.c: Write and WriteLn.
 *
 * Floats without a format print as the shortest decimal that reads back to
 * the same bits, laid out as Python's repr lays them out (positional for
 * exponents -4..15, else d.ddde+XX), so any float prints the same on every
 * machine. musl's printf and strtod are exact, which makes the search for
 * the shortest digits deterministic.
 */
#include "mica.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
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
 * that failed keeps its errno in `lost`; later output is dropped, and the
 * thread that wrote, once it holds no lock, traps with the reason. */

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

/* Called holding no lock of the output's, since the trap flushes (and drops) what is left. */
static void stop_if_lost(void) {
    int error = atomic_load(&lost);
    if (error != 0) mica_trapf(0, "cannot write standard output: %s", strerror(error));
}

static void emit_shared(const char *s, size_t n);

/* A task's line so far into the shared buffer. */
static void hand_over_line(void) {
    emit_shared(task_line, task_used);
    task_used = 0;
}

/* Everything written so far out to stdout; a trap's flush, which must not trap again. */
void mica_flush_before_trap(void) {
    bool locking = atomic_load(&shared_output);
    if (by_lines) hand_over_line();
    if (locking) pthread_mutex_lock(&output_lock);
    write_buffer();
    if (locking) pthread_mutex_unlock(&output_lock);
}

void mica_flush(void) {
    mica_flush_before_trap();
    stop_if_lost();
}

void mica_output_by_lines(void) {
    atomic_store(&shared_output, true);
    by_lines = true;
}

/* The program's last flush, on its thread; a stop after it has nothing to save. */
void mica_end_output(void) {
    mica_flush();
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

/* A task's bytes into its line. */
static void fill_line(const char *s, size_t n) {
    while (n > 0) {
        if (task_used == sizeof task_line) hand_over_line();
        size_t room = sizeof task_line - task_used, take = n < room ? n : room;
        memcpy(task_line + task_used, s, take);
        task_used += take;
        s += take;
        n -= take;
    }
}

/* Output's put: the bytes into the buffer, or a task's into its line. */
static void output_put(mica_stream *to, const char *s, size_t n) {
    (void)to;
    if (by_lines) fill_line(s, n);
    else emit_shared(s, n);
    stop_if_lost();
}

mica_stream mica_output = {output_put};

/* Every Write reaches its stream through its put: Output's is the buffer
 * above, a file stream's its own (mica_stream.c). */
static void emit(mica_stream *to, const char *s, size_t n) {
    to->put(to, s, n);
}

static void emit_padded(mica_stream *to, const char *s, int64_t width) {
    size_t n = strlen(s);
    for (int64_t pad = width - (int64_t)n; pad > 0; pad--) emit(to, " ", 1);
    emit(to, s, n);
}

/* Lay out significant digits `digits` with decimal exponent `exp10`
 * (value = d.ddd x 10^exp10) the way Python's repr does. */
static void layout(char *out, bool negative, const char *digits, int exp10) {
    int n = (int)strlen(digits);
    char *p = out;
    if (negative) *p++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        if (exp10 < 0) {
            *p++ = '0';
            *p++ = '.';
            for (int i = 0; i < -exp10 - 1; i++) *p++ = '0';
            memcpy(p, digits, n);
            p += n;
        } else {
            for (int i = 0; i <= exp10; i++) *p++ = i < n ? digits[i] : '0';
            *p++ = '.';
            if (n > exp10 + 1) {
                memcpy(p, digits + exp10 + 1, n - exp10 - 1);
                p += n - exp10 - 1;
            } else {
                *p++ = '0';
            }
        }
        *p = 0;
        return;
    }
    *p++ = digits[0];
    if (n > 1) {
        *p++ = '.';
        memcpy(p, digits + 1, n - 1);
        p += n - 1;
    }
    sprintf(p, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
}

static bool special(char *out, double x) {
    if (isnan(x)) {
        strcpy(out, "nan"); /* NaN's sign bit differs between architectures */
        return true;
    }
    if (isinf(x)) {
        strcpy(out, x < 0 ? "-inf" : "inf");
        return true;
    }
    return false;
}

/* Split "d.ddde+XX" from printf into its digits and exponent. */
static void split_exponent_form(const char *text, char *digits, int *exp10) {
    const char *p = text;
    int n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = 0;
    *exp10 = atoi(p + 1);
}

static void shortest_f64(char *out, double x) {
    if (special(out, x)) return;
    char text[40], digits[24];
    double magnitude = fabs(x);
    for (int precision = 1; precision <= 17; precision++) {
        snprintf(text, sizeof text, "%.*e", precision - 1, magnitude);
        if (strtod(text, NULL) == magnitude) break;
    }
    int exp10;
    split_exponent_form(text, digits, &exp10);
    layout(out, signbit(x) != 0, digits, exp10);
}

static void shortest_f32(char *out, float x) {
    if (special(out, x)) return;
    char text[40], digits[24];
    float magnitude = fabsf(x);
    for (int precision = 1; precision <= 9; precision++) {
        snprintf(text, sizeof text, "%.*e", precision - 1, (double)magnitude);
        if (strtof(text, NULL) == magnitude) break;
    }
    int exp10;
    split_exponent_form(text, digits, &exp10);
    layout(out, signbit(x) != 0, digits, exp10);
}

/* x with `decimals` digits after the point (all of them, however many: a
 * double's exact value has at most 1074), right-aligned in `width`. */
static void write_fixed(mica_stream *to, double x, int64_t width, int64_t decimals) {
    char small[32];
    if (special(small, x)) {
        emit_padded(to, small, width);
        return;
    }
    if (decimals > INT32_MAX - 400) mica_trapf(0, "%lld decimals are more than a number can print", (long long)decimals);
    size_t size = (size_t)decimals + 400; /* sign, up to 309 integer digits, the point */
    char *text = mica_alloc(size, 0);
    snprintf(text, size, "%.*f", (int)decimals, x);
    emit_padded(to, text, width);
    mica_free(text);
}

void mica_write_str(mica_stream *to, mica_string s, int64_t width) {
    for (int64_t pad = width - s.len; pad > 0; pad--) emit(to, " ", 1);
    emit(to, s.data ? s.data : "", (size_t)s.len);
}

void mica_write_int(mica_stream *to, int64_t x, int64_t width) {
    char text[32];
    snprintf(text, sizeof text, "%lld", (long long)x);
    emit_padded(to, text, width);
}

void mica_write_bool(mica_stream *to, bool x, int64_t width) {
    emit_padded(to, x ? "true" : "false", width);
}

void mica_write_f64(mica_stream *to, double x, int64_t width, int64_t decimals) {
    char text[40];
    if (decimals >= 0) {
        write_fixed(to, x, width, decimals);
        return;
    }
    shortest_f64(text, x);
    emit_padded(to, text, width);
}

void mica_write_f32(mica_stream *to, float x, int64_t width, int64_t decimals) {
    char text[40];
    if (decimals >= 0) {
        write_fixed(to, (double)x, width, decimals);
        return;
    }
    shortest_f32(text, x);
    emit_padded(to, text, width);
}

/* Tensors print row-major, elements separated by one space. */
#define WRITE_INTS(NAME, T)                                            \
    void NAME(mica_stream *to, const T *x, int64_t n, int64_t width) { \
        for (int64_t i = 0; i < n; i++) {                              \
            if (i) emit(to, " ", 1);                                   \
            mica_write_int(to, (int64_t)x[i], width);                  \
        }                                                              \
    }
WRITE_INTS(mica_write_ints, int64_t)
WRITE_INTS(mica_write_i32s, int32_t)
WRITE_INTS(mica_write_i8s, int8_t)
WRITE_INTS(mica_write_u8s, uint8_t)

void mica_write_f64s(mica_stream *to, const double *x, int64_t n, int64_t width, int64_t decimals) {
    for (int64_t i = 0; i < n; i++) {
        if (i) emit(to, " ", 1);
        mica_write_f64(to, x[i], width, decimals);
    }
}

void mica_write_f32s(mica_stream *to, const float *x, int64_t n, int64_t width, int64_t decimals) {
    for (int64_t i = 0; i < n; i++) {
        if (i) emit(to, " ", 1);
        mica_write_f32(to, x[i], width, decimals);
    }
}

void mica_writeln(mica_stream *to) {
    emit(to, "\n", 1);
    if (to != &mica_output) return;
    if (by_lines) hand_over_line();
    if (line_buffered) mica_flush_before_trap();
    stop_if_lost(); /* either may have met a failing stdout */
}

mica_string mica_str_of_f64(double x) {
    char text[40];
    shortest_f64(text, x);
    return mica_str_lit(text, (int64_t)strlen(text));
}

mica_string mica_str_of_f32(float x) { /* a float32's own shortest form, as WriteLn prints it */
    char text[40];
    shortest_f32(text, x);
    return mica_str_lit(text, (int64_t)strlen(text));
}
