/* mica_core.c: program start, traps, memory, arguments and the clock.
 *
 * With mica_output.c, the bottom of the runtime: it calls nothing else of it
 * but the output buffer, which a trap or Halt flushes before it speaks.
 *
 * main() runs the generated mica_program() on a thread with a large stack:
 * static tensors are C values, so a program's temporaries live on the stack
 * and a GPT's activations need far more than the default 8 MiB.
 */
#define _GNU_SOURCE /* pthread_getattr_np */
#include "mica.h"

#include <pthread.h>
#include <signal.h>
#include <ucontext.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MICA_STACK_BYTES ((size_t)1 << 30)
#define MICA_STACK_MARGIN ((uintptr_t)1 << 20) /* for the runtime's own calls below a routine */

_Thread_local uintptr_t mica_stack_floor;
_Thread_local int mica_line;

static int program_argc;
static char **program_argv;

void mica_where(char *out, size_t size, int line) {
    int file = line >> MICA_FILE_LINE_BITS;
    if (mica_source_count == 1 || file >= mica_source_count) /* one file: every line is its own */
        snprintf(out, size, "%s:%d", mica_source_names[0], line);
    else
        snprintf(out, size, "%s:%d", mica_source_names[file], line & ((1 << MICA_FILE_LINE_BITS) - 1));
}

/* "prog.mica:12: what" and a newline into out (size bytes); line 0 is the
 * running statement's, and before any statement ran there is none to name. */
static size_t trap_text(char *out, size_t size, int line, const char *what) {
    char where[300];
    int n;
    if (line == 0) line = mica_line;
    if (line == 0) {
        n = snprintf(out, size, "%s: before the first statement: %s\n", mica_source_names[0], what);
    } else {
        mica_where(where, sizeof where, line);
        n = snprintf(out, size, "%s: %s\n", where, what);
    }
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

/* The first trap speaks for the program; a task trapping at the same time
 * waits here until the exit ends it. */
static pthread_mutex_t trapping = PTHREAD_MUTEX_INITIALIZER;

_Noreturn void mica_trap(int line, const char *what) {
    char text[1024];
    size_t n = trap_text(text, sizeof text, line, what);
    pthread_mutex_lock(&trapping);
    mica_flush_before_trap();
    fwrite(text, 1, n, stderr);
    exit(1);
}

_Noreturn void mica_trapf(int line, const char *format, ...) {
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    mica_trap(line, message);
}

/* Called holding no lock of the output's, since the trap flushes (and drops) what is left. */
void mica_trap_if_output_lost(void) {
    int error = mica_output_lost();
    if (error != 0) mica_trapf(0, "cannot write standard output: %s", strerror(error));
}

void mica_flush(void) {
    mica_flush_before_trap();
    mica_trap_if_output_lost();
}

static _Thread_local char last_error[1024];

bool mica_fail(const char *format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(last_error, sizeof last_error, format, args);
    va_end(args);
    return false;
}

mica_string mica_last_error(void) {
    return mica_str_lit(last_error, (int64_t)strlen(last_error));
}

_Noreturn void mica_halt(int64_t code, int line) {
    if (code < 0 || code > 255) mica_trapf(line, "Halt(%lld): an exit status is 0 to 255", (long long)code);
    mica_flush();
    exit((int)code);
}

static _Noreturn void out_of_memory(size_t bytes, int line) {
    mica_trapf(line, "out of memory allocating %zu bytes", bytes);
}

void *mica_alloc(size_t bytes, int line) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (p == NULL) out_of_memory(bytes, line);
    return p;
}

/* count * size, or a trap when no memory could hold that many: a count must
 * not wrap around to a small allocation. */
static size_t element_bytes(int64_t count, size_t size, int line) {
    size_t bytes;
    if (count < 0 || __builtin_mul_overflow((size_t)count, size, &bytes))
        mica_trapf(line, "out of memory: %lld elements of %zu bytes", (long long)count, size);
    return bytes;
}

/* count elements of size bytes each, zeroed */
void *mica_alloc_elements(int64_t count, size_t size, int line) {
    return mica_alloc(element_bytes(count, size, line), line);
}

/* The same without the zeroing: a kernel's scratch that it fills before it
 * reads costs no memset (small products allocate theirs per call). */
void *mica_scratch(int64_t count, size_t size, int line) {
    size_t bytes = element_bytes(count, size, line);
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL) out_of_memory(bytes, line);
    return p;
}

/* p's block (or none) made `bytes` long, its contents kept and the rest not
 * zeroed; where the block is long enough already, realloc keeps it in place.
 * A string grows through it (mica_str_append). */
void *mica_realloc(void *p, size_t bytes, int line) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (q == NULL) out_of_memory(bytes, line);
    return q;
}

void mica_free(void *p) {
    free(p);
}

/* Here beside the allocator, not with the tensors: strings grow through it
 * too, and a program that only prints must not link the tensor kernels. */
void *mica_resize(void *data, int64_t old_count, int64_t new_count, size_t size, int line) {
    void *fresh = mica_alloc_elements(new_count, size, line);
    int64_t keep = old_count < new_count ? old_count : new_count;
    if (data != NULL && keep > 0) memcpy(fresh, data, (size_t)keep * size);
    mica_free(data);
    return fresh;
}

/* A string of len bytes (NUL-terminated): here beside the allocator, as the
 * one way strings are made, so that the traps' and the arguments' strings
 * need nothing of mica_string.c. */
mica_string mica_str_lit(const char *bytes, int64_t len) {
    mica_string s = {len, mica_alloc((size_t)len + 1, 0)};
    if (len) memcpy(s.data, bytes, (size_t)len);
    return s;
}

int64_t mica_param_count(void) {
    return program_argc - 1;
}

/* Past the last argument, ParamStr is the empty string, as in Delphi. */
mica_string mica_param_str(int64_t i) {
    if (i < 0 || i >= program_argc) return mica_str_lit("", 0);
    return mica_str_lit(program_argv[i], (int64_t)strlen(program_argv[i]));
}

double mica_clock(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* A fault on the program stack's last pages is a frame too large for mica_enter
 * to see before the C compiler's own stack probe touched it: say so, keeping
 * what was printed, instead of dying of SIGSEGV. Any other fault is left alone. */
static uintptr_t stack_pointer(void *context) {
    ucontext_t *machine = context;
#if defined(__x86_64__)
    return (uintptr_t)machine->uc_mcontext.gregs[REG_RSP];
#elif defined(__aarch64__)
    return (uintptr_t)machine->uc_mcontext.sp;
#else
    (void)machine;
    return UINTPTR_MAX;
#endif
}

static const char STACK_OVERFLOW[] = "stack overflow: recursion too deep, or static tensors too large for the 1 GiB stack";

_Noreturn void mica_stack_overflow(void) {
    mica_trap(0, STACK_OVERFLOW); /* the routine has not begun: mica_line is still its caller's */
}

static void on_fault(int signal, siginfo_t *info, void *context) {
    uintptr_t at = (uintptr_t)info->si_addr, sp = stack_pointer(context);
    bool below_the_floor = at < mica_stack_floor || sp < mica_stack_floor;
    bool a_stack_access = at + 256 >= sp || sp < mica_stack_floor; /* a probe of a frame being made */
    if (mica_stack_floor != 0 && below_the_floor && a_stack_access) {
        char message[1024];
        size_t n = trap_text(message, sizeof message, 0, STACK_OVERFLOW);
        mica_flush_before_trap();
        if (write(2, message, n) < 0) _exit(1);
        _exit(1);
    }
    struct sigaction plain = {.sa_handler = SIG_DFL};
    sigaction(signal, &plain, NULL); /* returning re-runs the fault, now fatal as usual */
}

void mica_watch_the_stack(void) {
    static _Thread_local char alternate[1 << 16]; /* the handler's own stack: the thread's is spent */
    stack_t handler_stack = {.ss_sp = alternate, .ss_size = sizeof alternate};
    struct sigaction action = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
    pthread_attr_t attr;
    void *low;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    if (pthread_attr_getstack(&attr, &low, &size) == 0 && sigaltstack(&handler_stack, NULL) == 0 &&
        sigaction(SIGSEGV, &action, NULL) == 0)
        mica_stack_floor = (uintptr_t)low + MICA_STACK_MARGIN;
    pthread_attr_destroy(&attr);
}

static void *run_program(void *unused) {
    (void)unused;
    mica_watch_the_stack();
    mica_start_output();
    mica_program();
    mica_flush(); /* a stdout that refused the last of the output traps, before the end */
    mica_end_output(); /* here, where a stop signal can still find the buffer's thread */
    return NULL;
}

/* A task: run(arg) on a new detached thread with the big stack; false if none could start. */
bool mica_start_thread(void *(*run)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, MICA_STACK_BYTES);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    bool started = pthread_create(&thread, &attr, run, arg) == 0;
    pthread_attr_destroy(&attr);
    return started;
}

int main(int argc, char **argv) {
    program_argc = argc;
    program_argv = argv;
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, MICA_STACK_BYTES);
    if (pthread_create(&thread, &attr, run_program, NULL) == 0) {
        pthread_join(thread, NULL);
    } else {
        run_program(NULL); /* no room for the big stack: run on this one */
    }
    return 0;
}

/* ---- float to integer: exact operations, range-checked at every tier ---- */

static int64_t to_integer(double x, int line, const char *what) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0))
        mica_trapf(line, "%s of %g does not fit in an integer", what, x);
    return (int64_t)x;
}

int64_t mica_trunc(double x, int line) {
    return to_integer(__builtin_trunc(x), line, "Trunc");
}

/* Halves round away from zero: x - trunc(x) is exact, so the test is too. */
int64_t mica_round(double x, int line) {
    double whole = __builtin_trunc(x);
    double part = x - whole;
    if (part >= 0.5) whole += 1.0;
    if (part <= -0.5) whole -= 1.0;
    return to_integer(whole, line, "Round");
}

int64_t mica_floor(double x, int line) {
    return to_integer(__builtin_floor(x), line, "Floor");
}

int64_t mica_ceil(double x, int line) {
    return to_integer(__builtin_ceil(x), line, "Ceil");
}
