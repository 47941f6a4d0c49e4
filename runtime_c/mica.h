/* mica.h: the Mica runtime as generated programs see it.
 *
 * Generated C includes this one header. It declares the runtime's types
 * (strings, dynamic tensors, dynamic arrays, tape nodes), the traps that
 * name a Mica source line, the checked integer arithmetic of the checked
 * and debug tiers (MICA_CHECKS=1), printing, strings, and the tensor kernels.
 * Every name here begins with mica_ or MICA_, so user names never collide.
 */
#ifndef MICA_H
#define MICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* ssize_t, of mica_put_all's put */

#ifndef MICA_CHECKS
#define MICA_CHECKS 1
#endif

/* ------------------------------------------------------------ program */

/* The generated program defines these. Its files are its own, then its
 * units': a line the compiler gives holds the file's place among them above
 * MICA_FILE_LINE_BITS (micatool/diagnostics.py), so one int names a file and
 * a line. */
extern const char *const mica_source_names[];
extern const int mica_source_count;
void mica_program(void);

#define MICA_FILE_LINE_BITS 24
/* "file.mica:12" of a line the compiler gave, into out (size bytes). */
void mica_where(char *out, size_t size, int line);

/* The line of the statement running, which generated code keeps up to date
 * (each routine puts back its caller's on return). A trap given line 0 names
 * this one: runtime code deep inside an operation (an allocation, a format,
 * a checkpoint's parser) need not carry the line down to where it traps. */
extern _Thread_local int mica_line;

_Noreturn void mica_trap(int line, const char *what);
_Noreturn void mica_trapf(int line, const char *format, ...);
_Noreturn void mica_halt(int64_t code, int line);
void *mica_alloc(size_t bytes, int line); /* zeroed; traps when memory runs out */
void *mica_alloc_elements(int64_t count, size_t size, int line);
void *mica_scratch(int64_t count, size_t size, int line); /* not zeroed: for scratch a kernel writes before it reads */
void *mica_realloc(void *p, size_t bytes, int line);      /* contents kept, the rest not zeroed */
int64_t mica_extent_product(int64_t rows, int64_t cols, int line);
void mica_free(void *p);

int64_t mica_param_count(void);
double mica_clock(void);

/* A routine's first act at the checked tiers: room on the stack for its frame
 * (its variables and temporaries, frame_bytes), or a trap instead of a fault.
 * It names the line of the call that did not fit, as the fault handler does
 * at the tiers whose frames the C compiler probes first: every tier says the
 * same. mica_stack_floor is the program stack's lowest usable address (each
 * task's thread has its own stack, and its own floor). */
extern _Thread_local uintptr_t mica_stack_floor;
_Noreturn void mica_stack_overflow(void);
static inline void mica_enter(int64_t frame_bytes) {
#if MICA_CHECKS
    char here;
    if ((uintptr_t)&here < mica_stack_floor + (uintptr_t)frame_bytes) mica_stack_overflow();
#else
    (void)frame_bytes;
#endif
}

/* ------------------------------------------------------------ tasks and channels
 *
 * A `tasks ... end` block is a mica_tasks, zeroed; each spawn starts run(args)
 * on a thread of its own (args is the task's own copy of its arguments, freed
 * when it ends), and mica_tasks_end waits for them all. At most MICA_MAX_TASKS
 * tasks are alive at once in the whole program; a spawn past that traps.
 * When every thread of the program waits on a channel or on its tasks, none
 * can go on: that traps as a deadlock instead of hanging (mica_tasks.c). */
#define MICA_MAX_TASKS 64

typedef struct {
    int alive;        /* its tasks still running */
    uint64_t started; /* its tasks so far: the next one's number */
    bool joining;     /* its spawner waits in mica_tasks_end */
} mica_tasks;

typedef struct mica_channel mica_channel; /* a handle: copies share the queue */

void mica_spawn(mica_tasks *block, void (*run)(void *args), void *args, int line);
void mica_tasks_end(mica_tasks *block);
void mica_channel_new(mica_channel **channel, size_t value_bytes, int64_t capacity, int line);
void mica_channel_send(mica_channel *channel, const void *value, int line); /* the queue takes the value */
bool mica_channel_receive(mica_channel *channel, void *value, int line);  /* false: closed and empty */
void mica_channel_close(mica_channel *channel, int line);

/* The program's thread and each task's: the 1 GiB stack, watched for overflow. */
bool mica_start_thread(void *(*run)(void *), void *arg);
void mica_watch_the_stack(void);

/* Each thread's random generator (mica_random.c): the one a task starts with. */
typedef struct {
    uint64_t key, counter;
    bool seeded;
} mica_random_state;
mica_random_state mica_random_fork(uint64_t task);
void mica_random_adopt(mica_random_state state);

/* ------------------------------------------------------------ integers */

/* + - * of integers. The builtins' result wraps (it is the exact one modulo
 * 2^64), so r is right at every tier; only the checked tiers trap. */
static inline int64_t mica_add(int64_t a, int64_t b, int line) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r) && MICA_CHECKS) mica_trap(line, "integer overflow");
    return r;
}

static inline int64_t mica_sub(int64_t a, int64_t b, int line) {
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r) && MICA_CHECKS) mica_trap(line, "integer overflow");
    return r;
}

static inline int64_t mica_mul(int64_t a, int64_t b, int line) {
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r) && MICA_CHECKS) mica_trap(line, "integer overflow");
    return r;
}

static inline int64_t mica_neg(int64_t a, int line) {
    return mica_sub(0, a, line);
}

/* Division by zero traps at every tier: C leaves it undefined, and the two
 * architectures disagree (x86_64 faults, aarch64 answers 0). */
static inline int64_t mica_div(int64_t a, int64_t b, int line) {
    if (b == 0) mica_trap(line, "division by zero");
    if (b == -1) return mica_neg(a, line);
    return a / b;
}

static inline int64_t mica_mod(int64_t a, int64_t b, int line) {
    if (b == 0) mica_trap(line, "division by zero");
    if (b == -1) return 0;
    return a % b;
}

/* At the checked tiers, a trap unless low <= x <= high; `what` names x. */
static inline void mica_check_range(const char *what, int64_t x, int64_t low, int64_t high, int line) {
    if (MICA_CHECKS && (x < low || x > high))
        mica_trapf(line, "%s %lld out of range %lld..%lld", what, (long long)x, (long long)low, (long long)high);
}

/* An index into low..high, made zero-based. */
static inline int64_t mica_index(int64_t i, int64_t low, int64_t high, int line) {
    mica_check_range("index", i, low, high, line);
    return i - low;
}

/* A value stored into a narrower integer type. */
static inline int64_t mica_narrow(int64_t x, int64_t low, int64_t high, int line) {
    mica_check_range("value", x, low, high, line);
    return x;
}

/* Float to integer conversions are checked at every tier: out of range,
 * the two architectures' instructions answer differently. */
int64_t mica_trunc(double x, int line);
int64_t mica_round(double x, int line);
int64_t mica_floor(double x, int line);
int64_t mica_ceil(double x, int line);

/* ------------------------------------------------------------ strings */

/* A string owns its bytes (NUL-terminated for convenience); Mica indexes from 1. */
typedef struct {
    int64_t len;
    char *data;
} mica_string;

mica_string mica_str_lit(const char *bytes, int64_t len);

/* The failure channel (LANGUAGE.md section 11): an operation that fails for
 * a reason outside the program (a missing file, a malformed pattern) answers
 * false and leaves its reason for LastError, instead of trapping. mica_fail
 * sets the reason (printf-style) and answers false, so a runtime function can
 * `return mica_fail(...)`. The reason is per thread: each task has its own. */
bool mica_fail(const char *format, ...);
mica_string mica_last_error(void);

mica_string mica_str_copy(mica_string s);
void mica_str_drop(mica_string *s);
void mica_str_assign(mica_string *dst, mica_string src); /* copies src */
void mica_str_move(mica_string *dst, mica_string src);   /* takes src */
mica_string mica_str_concat(mica_string a, mica_string b);
void mica_str_append(mica_string *s, mica_string b); /* s := s + b, in place; b may be *s */
int64_t mica_str_compare(mica_string a, mica_string b);
mica_string mica_str_at(mica_string s, int64_t i, int line);
mica_string mica_str_sub(mica_string s, int64_t start, int64_t count);
int64_t mica_str_pos(mica_string needle, mica_string haystack);
int64_t mica_str_ord(mica_string s, int line);
mica_string mica_str_chr(int64_t code, int line);
mica_string mica_str_of_int(int64_t x);
mica_string mica_str_of_f64(double x);
mica_string mica_str_of_f32(float x);
int64_t mica_str_to_int(mica_string s, int line);
double mica_str_to_f64(mica_string s, int line);
mica_string mica_str_upper(mica_string s);
mica_string mica_str_lower(mica_string s);
mica_string mica_str_trim(mica_string s);
bool mica_str_try_int(mica_string s, int64_t *n);
bool mica_str_try_f64(mica_string s, double *x);
bool mica_str_starts_with(mica_string s, mica_string prefix);
bool mica_str_ends_with(mica_string s, mica_string suffix);
mica_string mica_str_replace(mica_string s, mica_string old, mica_string new_text);
mica_string mica_str_join(const mica_string *parts, int64_t count, mica_string sep);
/* An `array of string` is {len, e}: these fill one through pointers to its two
 * fields, dropping the strings it held. */
void mica_str_split(mica_string s, mica_string sep, int64_t *len, mica_string **e);
void mica_strings_drop(int64_t *len, mica_string **e);
void mica_strings_push(int64_t *len, mica_string **e, int64_t *capacity, mica_string s);
mica_string mica_param_str(int64_t i);
mica_string mica_read_file(mica_string path, int line);
void mica_write_file(mica_string path, mica_string text, int line);
int mica_write_atomically(const char *name, const void *data, size_t size); /* 0 or errno */
bool mica_file_exists(mica_string path);
char *mica_c_path(mica_string path); /* NUL-terminated, for mica_free */
int mica_write_all(int fd, const void *data, size_t size); /* 0 or errno */
int mica_put_all(ssize_t (*put)(int fd, const void *bytes, size_t size), int fd, const void *bytes,
                 size_t size); /* mica_write_all through another call than write(2) */

/* A file written atomically (mica_file.c): the bytes go to a temporary beside
 * the target (mica_write_all to its fd), renamed into place by the commit.
 * Each answers 0 or errno. */
typedef struct {
    int fd;
    char *target;
    char *temp; /* NULL: a device, written in place */
} mica_atomic;
int mica_atomic_begin(const char *name, mica_atomic *w);
int mica_atomic_commit(mica_atomic *w, int error); /* an earlier error abandons the write */

/* Files and folders, each answering false with the reason (LastError). */
bool mica_list_dir(mica_string path, int64_t *len, mica_string **e);
bool mica_make_dir(mica_string path);
bool mica_remove_file(mica_string path);
bool mica_rename_file(mica_string from, mica_string to);
bool mica_file_size(mica_string path, int64_t *n);

/* ------------------------------------------------------------ streams */

/* A stream: Output, or one mica_stream.c or mica_net.c opened. Write and WriteLn reach any
 * stream through its put, so a program that writes only to Output links none
 * of the file streams' code. A stream variable holds NULL until opened. */
typedef struct mica_stream mica_stream;
struct mica_stream {
    void (*put)(mica_stream *to, const char *data, size_t size);
};
extern mica_stream mica_output; /* the program's output buffer (mica_output.c) */
mica_stream *mica_input(void);
mica_stream *mica_error_output(void);
bool mica_open_read(mica_string path, mica_stream **f);
bool mica_open_write(mica_string path, mica_stream **f);
bool mica_open_append(mica_string path, mica_stream **f);
bool mica_read_line(mica_stream *f, mica_string *line, int at);
bool mica_read_bytes(mica_stream *f, int64_t n, mica_string *s, int at);
mica_stream *mica_writable(mica_stream *f, int at); /* f, or a trap when it cannot be written */
bool mica_stream_flush(mica_stream *f, bool must, int at);
bool mica_stream_close(mica_stream **f, bool must, int at);
void mica_stream_drop(mica_stream **f); /* a Close at scope end: traps when the file cannot be kept */
/* Networking (mica_net.c): sockets as streams, each answering false with the
 * reason (LastError) naming host:port. */
bool mica_listen(mica_string host, int64_t port, mica_stream **server);
bool mica_accept(mica_stream *server, mica_stream **conn, int at);
bool mica_connect(mica_string host, int64_t port, mica_stream **conn);
int64_t mica_local_port(mica_stream *f, int at);
void mica_set_timeout(mica_stream *f, double seconds, int at);
/* A server that holds its callers until their heads have come (mica_hold.c). */
void mica_hold_callers(mica_stream *server, int64_t limit, double seconds, int at);
bool mica_await_head(mica_stream *server, mica_stream **conn, int at);

/* ------------------------------------------------------------ regular expressions */

/* A compiled regex (mica_regex.c): immutable, so copies share one program
 * through an atomic reference count; the zero value is a regex not yet
 * compiled, which the matching calls refuse with a trap at their line.
 * Compile answers false for a malformed pattern, leaving the reason (with
 * its 1-based byte position) for LastError and *re as it was. A pattern
 * compiles to at most MICA_REGEX_MAX_INSTRUCTIONS instructions and holds at
 * most MICA_REGEX_MAX_GROUPS groups, so a match needs bounded memory. */
#define MICA_REGEX_MAX_INSTRUCTIONS 10000
#define MICA_REGEX_MAX_GROUPS 100
typedef struct {
    struct mica_regex_program *program;
} mica_regex;

bool mica_regex_compile(mica_string pattern, mica_regex *re);
mica_regex mica_regex_copy(mica_regex re);
void mica_regex_drop(mica_regex *re);
void mica_regex_assign(mica_regex *dst, mica_regex src); /* shares src */
void mica_regex_move(mica_regex *dst, mica_regex src);   /* takes src */
bool mica_regex_is_match(mica_regex re, mica_string s, int line);
/* Find and FindAll replace the strings of a dynamic array (its length and
 * elements, as `array of string` lays them out) with the answer. */
bool mica_regex_find(mica_regex re, mica_string s, int64_t *count, mica_string **groups, int line);
void mica_regex_find_all(mica_regex re, mica_string s, int64_t *count, mica_string **matches, int line);
mica_string mica_regex_replace_all(mica_regex re, mica_string s, mica_string template, int line);
/* The engine itself, which the calls above use and tests/c/regex_check.c
 * checks: the groups of a compiled regex; one leftmost-first search from
 * `from` (found: 2 * (groups + 1) byte offsets, -1 for a group that did not
 * take part; an empty match at no_empty_at is passed over); and every match
 * as FindAll and ReplaceAll take them, each handed to `each`. */
int32_t mica_regex_groups(mica_regex re);
bool mica_regex_search(mica_regex re, const char *text, int64_t len, int64_t from, int64_t no_empty_at,
                       int64_t *found);
void mica_regex_each_match(mica_regex re, mica_string s, void (*each)(void *, const int64_t *), void *context);

/* ------------------------------------------------------------ output */

/* Each writes to a stream (&mica_output: the program's output). Widths
 * right-align in that many columns (0: none); decimals < 0: shortest
 * form that reads back to the same bits. */
void mica_write_str(mica_stream *to, mica_string s, int64_t width);
void mica_write_int(mica_stream *to, int64_t x, int64_t width);
void mica_write_bool(mica_stream *to, bool x, int64_t width);
void mica_write_f64(mica_stream *to, double x, int64_t width, int64_t decimals);
void mica_write_f32(mica_stream *to, float x, int64_t width, int64_t decimals);
void mica_write_ints(mica_stream *to, const int64_t *x, int64_t n, int64_t width);
void mica_write_i32s(mica_stream *to, const int32_t *x, int64_t n, int64_t width);
void mica_write_i8s(mica_stream *to, const int8_t *x, int64_t n, int64_t width);
void mica_write_u8s(mica_stream *to, const uint8_t *x, int64_t n, int64_t width);
void mica_write_f64s(mica_stream *to, const double *x, int64_t n, int64_t width, int64_t decimals);
void mica_write_f32s(mica_stream *to, const float *x, int64_t n, int64_t width, int64_t decimals);
void mica_writeln(mica_stream *to); /* flushes Output too when stdout is a terminal */
/* The output buffer (mica_output.c), which calls nothing of the runtime. */
void mica_flush_before_trap(void); /* Output's bytes out (dropped once stdout has refused one); never traps */
int mica_output_lost(void);        /* the errno of the write stdout refused, or 0 */
void mica_output_line_end(void);   /* after WriteLn's newline on Output */
void mica_output_by_lines(void); /* on a task's thread: its lines join the output whole */
void mica_start_output(void); /* on the program's thread: terminal or not, and the stop signals' handler */
void mica_end_output(void);   /* on the program's thread, once it has run */
/* A stdout that refused a write ends the program, as it ends cat (mica_core.c,
 * since the trap is the core's). */
void mica_flush(void);               /* Output's bytes out; a stdout that refuses them traps */
void mica_trap_if_output_lost(void); /* the trap, once a write to stdout has failed */

/* ------------------------------------------------------------ Sort (mica_sort.c) */

/* keys[0..n) into ascending order, stable; with other (other_n elements of
 * other_size bytes each; a different count traps), its elements moved with
 * the keys'. */
#define MICA_SORT_DECLARE(S, T) \
    void mica_sort_##S(T *keys, int64_t n, void *other, int64_t other_n, size_t other_size, int line);
MICA_SORT_DECLARE(i64, int64_t)
MICA_SORT_DECLARE(i32, int32_t)
MICA_SORT_DECLARE(i8, int8_t)
MICA_SORT_DECLARE(u8, uint8_t)
MICA_SORT_DECLARE(f32, float)
MICA_SORT_DECLARE(f64, double)
MICA_SORT_DECLARE(str, mica_string)

/* ------------------------------------------------------------ dynamic storage */

/* A dynamic tensor owns its elements; a vector has cols == 1. */
#define MICA_DYNAMIC_TENSOR(T, NAME) \
    typedef struct {                 \
        int64_t rows, cols;          \
        T *e;                        \
    } NAME;
MICA_DYNAMIC_TENSOR(double, mica_dyn_f64)
MICA_DYNAMIC_TENSOR(float, mica_dyn_f32)
MICA_DYNAMIC_TENSOR(int64_t, mica_dyn_i64)
MICA_DYNAMIC_TENSOR(int32_t, mica_dyn_i32)
MICA_DYNAMIC_TENSOR(int8_t, mica_dyn_i8)
MICA_DYNAMIC_TENSOR(uint8_t, mica_dyn_u8)
#undef MICA_DYNAMIC_TENSOR

/* Storage helpers shared by dynamic tensors and dynamic arrays: (re)size a
 * buffer of `count` elements of `size` bytes, keeping the common prefix and
 * zeroing the rest. */
void *mica_resize(void *data, int64_t old_count, int64_t new_count, size_t size, int line);
void mica_check_shape(int64_t got, int64_t want, int line, const char *what);

/* ------------------------------------------------------------ tensor kernels */

#define MICA_GLUE(a, b) MICA_GLUE_(a, b)
#define MICA_GLUE_(a, b) a##b

#include "mica_fma.h"
#include "mica_gemm.h"
#include "mica_threads.h"

/* Plain kernels, one per operation and element type; shapes are passed
 * as ints after the pointers (outputs first, as in llm.c). */
#define MICA_KERNELS(T, S)                                                                         \
    void mica_add_##S(T *out, const T *a, const T *b, int64_t n);                                  \
    void mica_sub_##S(T *out, const T *a, const T *b, int64_t n);                                  \
    void mica_mul_##S(T *out, const T *a, const T *b, int64_t n);                                  \
    void mica_add_rows_##S(T *out, const T *a, const T *row, int64_t rows, int64_t cols);          \
    void mica_sub_rows_##S(T *out, const T *a, const T *row, int64_t rows, int64_t cols);          \
    void mica_scale_##S(T *out, const T *a, T s, int64_t n);                                       \
    void mica_divide_##S(T *out, const T *a, T s, int64_t n);                                      \
    void mica_shift_##S(T *out, const T *a, T s, int64_t n);                                       \
    void mica_rsub_##S(T *out, T s, const T *a, int64_t n);                                        \
    void mica_neg_##S(T *out, const T *a, int64_t n);                                              \
    void mica_matmul_##S(T *out, const T *a, const T *b, int64_t m, int64_t k, int64_t n);         \
    void mica_bmm_##S(T *out, const T *a, const T *b, int64_t batch, int64_t m, int64_t k, int64_t n); \
    void mica_transpose_##S(T *out, const T *a, int64_t batch, int64_t rows, int64_t cols);
MICA_KERNELS(double, f64)
MICA_KERNELS(float, f32)
#undef MICA_KERNELS

/* float64(x) and float32(x) of n elements: out[i] = a[i], rounded to float32 when narrowing. */
void mica_convert_f64_f32(double *out, const float *a, int64_t n);
void mica_convert_f32_f64(float *out, const double *a, int64_t n);
/* Quantize, Dequantize and QuantizeRows (mica_quantize.c). */
#define MICA_QUANTIZE(T, S, Q, QS)                                                               \
    void mica_quantize_##QS##_##S(Q *q, const T *x, int64_t n, T scale, int64_t zero, int line); \
    void mica_dequantize_##S##_##QS(T *out, const Q *q, int64_t n, T scale, int64_t zero);
MICA_QUANTIZE(double, f64, int8_t, i8)
MICA_QUANTIZE(float, f32, int8_t, i8)
MICA_QUANTIZE(double, f64, uint8_t, u8)
MICA_QUANTIZE(float, f32, uint8_t, u8)
#undef MICA_QUANTIZE
void mica_quantize_check_scale(double scale, int line);
void mica_quantize_rows_i8_f64(int8_t *q, double *scales, const double *x, int64_t rows, int64_t cols, int line);
void mica_quantize_rows_i8_f32(int8_t *q, float *scales, const float *x, int64_t rows, int64_t cols, int line);
/* Mul(float(p), Outer(a, b)) for an int32 matrix p (m, n), as the compiler fuses it */
void mica_rescale_i32_f64(double *out, const int32_t *p, const double *a, const double *b, int64_t m, int64_t n);
void mica_rescale_i32_f32(float *out, const int32_t *p, const float *a, const float *b, int64_t m, int64_t n);
void mica_matmul_i32_i8_i8(int32_t *out, const int8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n);
void mica_matmul_i32_u8_i8(int32_t *out, const uint8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n);
/* mica_integer_gemm.c: the plain loops the kernels are tested against, and the kernel in use */
void mica_matmul_i32_i8_i8_reference(int32_t *out, const int8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n);
void mica_matmul_i32_u8_i8_reference(int32_t *out, const uint8_t *a, const int8_t *b, int64_t m, int64_t k, int64_t n);
const char *mica_integer_gemm_isa(void);

/* float64(q) and float32(q) of an integer tensor's n elements (mica_tensor.c). */
#define MICA_INTEGERS_TO(T, S)                                              \
    void mica_convert_##S##_i8(T *out, const int8_t *a, int64_t n);        \
    void mica_convert_##S##_u8(T *out, const uint8_t *a, int64_t n);       \
    void mica_convert_##S##_i32(T *out, const int32_t *a, int64_t n);      \
    void mica_convert_##S##_i64(T *out, const int64_t *a, int64_t n);
MICA_INTEGERS_TO(double, f64)
MICA_INTEGERS_TO(float, f32)
#undef MICA_INTEGERS_TO

/* Dynamic tensor operations check shapes at run time and allocate their result. */
#define MICA_DYNAMIC_OPS(T, S)                                                                     \
    mica_dyn_##S mica_dyn_new_##S(int64_t rows, int64_t cols, int line);                           \
    mica_dyn_##S mica_dyn_from_##S(const T *data, int64_t rows, int64_t cols, int line);           \
    mica_dyn_##S mica_dyn_copy_##S(mica_dyn_##S a);                                                \
    void mica_dyn_drop_##S(mica_dyn_##S *a);                                                       \
    void mica_dyn_assign_##S(mica_dyn_##S *dst, mica_dyn_##S src);                                 \
    void mica_dyn_move_##S(mica_dyn_##S *dst, mica_dyn_##S src);                                   \
    void mica_dyn_set_shape_##S(mica_dyn_##S *a, int64_t rows, int64_t cols, int line);            \
    void mica_dyn_set_row_##S(mica_dyn_##S *m, int64_t i, const T *row, int64_t count, int line);  \
    void mica_dyn_to_static_##S(T *out, mica_dyn_##S a, int64_t rows, int64_t cols, int line);
MICA_DYNAMIC_OPS(double, f64)
MICA_DYNAMIC_OPS(float, f32)
MICA_DYNAMIC_OPS(int64_t, i64)
MICA_DYNAMIC_OPS(int32_t, i32)
MICA_DYNAMIC_OPS(int8_t, i8)
MICA_DYNAMIC_OPS(uint8_t, u8)
#undef MICA_DYNAMIC_OPS

#define MICA_DYNAMIC_MATH(T, S)                                                                    \
    mica_dyn_##S mica_dyn_add_##S(mica_dyn_##S a, mica_dyn_##S b, int line);                       \
    mica_dyn_##S mica_dyn_sub_##S(mica_dyn_##S a, mica_dyn_##S b, int line);                       \
    mica_dyn_##S mica_dyn_mul_##S(mica_dyn_##S a, mica_dyn_##S b, int line);                       \
    mica_dyn_##S mica_dyn_add_rows_##S(mica_dyn_##S a, mica_dyn_##S row, int line);                \
    mica_dyn_##S mica_dyn_sub_rows_##S(mica_dyn_##S a, mica_dyn_##S row, int line);                \
    mica_dyn_##S mica_dyn_scale_##S(mica_dyn_##S a, T s, int line);                                \
    mica_dyn_##S mica_dyn_divide_##S(mica_dyn_##S a, T s, int line);                               \
    mica_dyn_##S mica_dyn_shift_##S(mica_dyn_##S a, T s, int line);                                \
    mica_dyn_##S mica_dyn_rsub_##S(T s, mica_dyn_##S a, int line);                                 \
    mica_dyn_##S mica_dyn_neg_##S(mica_dyn_##S a, int line);                                       \
    mica_dyn_##S mica_dyn_matmul_##S(mica_dyn_##S a, int a_rank, mica_dyn_##S b, int b_rank, int line); \
    mica_dyn_##S mica_dyn_transpose_##S(mica_dyn_##S a, int line);
MICA_DYNAMIC_MATH(double, f64)
MICA_DYNAMIC_MATH(float, f32)
#undef MICA_DYNAMIC_MATH

#define MICA_LINALG(T, S)                                                         \
    bool mica_solve_##S(mica_dyn_##S a, mica_dyn_##S b, mica_dyn_##S *x, int b_rank, int line); \
    bool mica_invert_##S(mica_dyn_##S a, mica_dyn_##S *inverse, int line);          \
    bool mica_cholesky_##S(mica_dyn_##S a, mica_dyn_##S *l, int line);              \
    bool mica_qr_##S(mica_dyn_##S a, mica_dyn_##S *q, mica_dyn_##S *r, int line);
MICA_LINALG(double, f64)
MICA_LINALG(float, f32)
#undef MICA_LINALG

#include "mica_math.h"
#include "mica_math_array.h"
#include "mica_tape.h"
#include "mica_ops.h"

/* ------------------------------------------------------------ checkpoints */

/* Element types a checkpoint stores (the tape's MICA_F32 and MICA_F64 first). */
enum { MICA_I64 = 2, MICA_I32 = 3, MICA_I8 = 4, MICA_U8 = 5, MICA_BOOL = 6 };

/* One tensor of a checkpoint: its canonical path, element type, shape and storage. */
typedef struct {
    const char *name;
    int dtype;
    int rank;
    int64_t dims[MICA_MAX_RANK];
    void *data;           /* static storage */
    int64_t *rows, *cols; /* a dynamic tensor's extents, NULL for static storage */
    void **elements;      /* a dynamic tensor's storage */
    mica_tag *tag;        /* a tracked place, re-adopted once loaded */
} mica_entry;

/* ------------------------------------------------------------ the GPU (GPU programs only, mica_gpu.c) */

/* A device tensor: its storage on the GPU (0 until first written: zeros). */
typedef struct {
    uint64_t ptr;
    int64_t bytes;
} mica_dev;

extern const char mica_ptx[]; /* the program's kernels, rendered by the compiler */

void mica_dev_reserve(mica_dev *d, int64_t bytes, int line);
void mica_dev_drop(mica_dev *d);
void mica_dev_assign(mica_dev *dst, mica_dev src, int line);
void mica_dev_move(mica_dev *dst, mica_dev src);
mica_dev mica_dev_copy(mica_dev src);
void mica_dev_upload(mica_dev *dst, const void *host, int64_t bytes, int line);
void mica_dev_download(void *host, mica_dev src, int64_t bytes, int line);
uint64_t mica_dev_data(mica_dev *d, int64_t bytes, int line);
uint64_t mica_dev_read(const mica_dev *d, int64_t bytes, int line);
void mica_gpu_launch(const char *kernel, int64_t threads, int line, const char *signature, ...);
void mica_gpu_launch_grid(const char *kernel, int64_t threads, int64_t grid_y, int line, const char *signature, ...);
void mica_dev_copy_raw(uint64_t dst, uint64_t src, int64_t bytes, int line);
void mica_dev_put(uint64_t dst, const void *host, int64_t bytes, int line);
void mica_dev_get(void *host, uint64_t src, int64_t bytes, int line);

/* The tape on the device (mica_gpu_tape.c): nodes whose values and gradients live there. */
mica_node *mica_gt_read(mica_tag *tag, int dtype, const mica_dev *place, int rank, const int64_t *dims, int line);
mica_node *mica_gt_const(int dtype, mica_dev value, int rank, const int64_t *dims, int line);
mica_node *mica_gt_scalar(int dtype, double value, int line);
void mica_gt_write(mica_tag *tag, mica_dev *place, mica_node *n, int line);
void mica_gt_value(mica_dev *out, mica_node *n, int line);
void mica_gt_backward(mica_tag *loss, const char *name, int line);
void mica_gt_gradient(mica_dev *out, mica_tag *tag, int dtype, int64_t count, const char *name, int line);
mica_node *mica_gt_add(mica_node *a, mica_node *b, int line);
mica_node *mica_gt_sub(mica_node *a, mica_node *b, int line);
mica_node *mica_gt_mul(mica_node *a, mica_node *b, int line);
mica_node *mica_gt_div(mica_node *a, mica_node *b, int line);
mica_node *mica_gt_add_rows(mica_node *a, mica_node *row, int line);
mica_node *mica_gt_sub_rows(mica_node *a, mica_node *row, int line);
mica_node *mica_gt_scale(mica_node *a, double s, int line);
mica_node *mica_gt_divide(mica_node *a, double s, int line);
mica_node *mica_gt_shift(mica_node *a, double s, int line);
mica_node *mica_gt_neg(mica_node *a, int line);
mica_node *mica_gt_matmul(mica_node *a, mica_node *b, int64_t m, int64_t k, int64_t n, int rank, const int64_t *dims,
                          int line);
mica_node *mica_gt_bmm(mica_node *a, mica_node *b, int64_t batch, int64_t m, int64_t k, int64_t n, int rank,
                       const int64_t *dims, int line);
mica_node *mica_gt_transpose(mica_node *a, int line);
mica_node *mica_gt_each(const char *forward, const char *backward, mica_node *a, int line);
mica_node *mica_gt_dropout(mica_node *a, double p, int line);
mica_node *mica_gt_sum(mica_node *a, int line);
mica_node *mica_gt_mean(mica_node *a, int line);
mica_node *mica_gt_max(mica_node *a, int line);
mica_node *mica_gt_sum_rows(mica_node *a, int line);
mica_node *mica_gt_softmax(mica_node *a, int line);
mica_node *mica_gt_causal_mask(mica_node *a, int line);
mica_node *mica_gt_layernorm(mica_node *x, mica_node *gain, mica_node *bias, int line);
mica_node *mica_gt_rmsnorm(mica_node *x, mica_node *gain, int line);
mica_node *mica_gt_cross_entropy(mica_node *logits, mica_dev targets, int line);
mica_node *mica_gt_gather(mica_node *table, mica_dev ids, int64_t n, int rank, const int64_t *dims, int line);
mica_node *mica_gt_convert(mica_node *a, int dtype, int line);
void mica_gpu_adam_step(int dtype, mica_dev *w, mica_dev g, mica_dev *m, mica_dev *v, int64_t n, int64_t t, double lr,
                        double beta1, double beta2, double eps, int line);
void mica_gpu_sgd_step(int dtype, mica_dev *w, mica_dev g, mica_dev *velocity, int64_t n, double lr, double momentum,
                       int line);
void mica_gpu_cross_entropy(mica_dev *out, int dtype, mica_dev logits, mica_dev targets, int64_t rows, int64_t cols,
                            int line);
void mica_gpu_gather(mica_dev *out, int dtype, mica_dev table, mica_dev ids, int64_t n, int64_t rows, int64_t cols,
                     int line);
void mica_gpu_quantize(mica_dev *q, const char *kernel, int dtype, mica_dev x, int64_t n, double scale, int64_t zero,
                       int line);
void mica_gpu_quantize_rows(mica_dev *q, mica_dev *scales, int dtype, mica_dev x, int64_t rows, int64_t cols, int line);

/* description: further metadata members, JSON text the compiler writes ("program":...) */
void mica_save(mica_string path, mica_entry *entries, int64_t count, const char *description, int line);
/* false (after saying why on stderr) when the file is refused; traps instead when must */
bool mica_load(mica_string path, mica_entry *entries, int64_t count, bool must, int line);

#endif /* MICA_H */
