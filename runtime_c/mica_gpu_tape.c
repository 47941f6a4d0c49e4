/* mica_gpu_tape.c: the tape on the GPU.
 *
 * The same nodes as mica_tape.c, with value and gradient in device memory:
 * each operation launches the kernel that mirrors its host kernel, and its
 * backward launches the kernels that mirror the host backward (ptx/), so the
 * device reaches the host's bits. A window's device buffers return to the
 * allocation cache when the next window opens, as the host arena is reused.
 * Only GPU programs link this file; they call it through mica_gt_*.
 */
#include "mica.h"
#include "mica_kernel_signatures.h"

#include <stdio.h>
#include <string.h>

#define DP(n) ((uint64_t)(uintptr_t)(n)->value)
#define DG(n) ((uint64_t)(uintptr_t)mica_node_grad(n))
#define BYTES(n) ((int64_t)(n)->count * (int64_t)mica_dtype_size((n)->dtype))

/* ---------------------------------------------------------------- launching */

/* A kernel for an element type: "mica_add" and MICA_F32 give "mica_add_f32",
 * with the launch signature its PTX parameters give (mica_kernel_signatures.h,
 * generated from ptx/), so no launch here types one. */
struct kernel {
    const char *base;
    int dtype;
    char name[64];
    const char *signature;
};

static const char *signature_of(const char *base, int dtype, int line) {
    for (size_t i = 0; i < sizeof mica_kernel_signatures / sizeof mica_kernel_signatures[0]; i++)
        if (strcmp(mica_kernel_signatures[i].base, base) == 0) {
            const char *s = dtype == MICA_F64 ? mica_kernel_signatures[i].f64 : mica_kernel_signatures[i].f32;
            if (s != NULL) return s;
        }
    mica_trapf(line, "no PTX kernel %s_%s", base, dtype == MICA_F64 ? "f64" : "f32");
}

/* The kernel, checked against the `args` arguments a launch gives it. */
static const struct kernel *K(const char *base, int dtype, int args, int line) {
    static struct kernel kernels[160];
    static int used;
    struct kernel *k = NULL;
    for (int i = 0; i < used && k == NULL; i++)
        if (kernels[i].base == base && kernels[i].dtype == dtype) k = &kernels[i];
    if (k == NULL) {
        if (used == 160) mica_trap(line, "too many kernel names");
        k = &kernels[used];
        k->base = base;
        k->dtype = dtype;
        snprintf(k->name, sizeof k->name, "%s_%s", base, dtype == MICA_F64 ? "f64" : "f32");
        k->signature = signature_of(base, dtype, line);
        used++;
    }
    if ((int)strlen(k->signature) != args)
        mica_trapf(line, "%s takes %d arguments (%s), launched with %d", k->name, (int)strlen(k->signature),
                   k->signature, args);
    return k;
}

/* How many arguments a launch gives (at most 16, as mica_gpu.c takes). */
#define COUNT(...) COUNT_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define COUNT_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, ...) n

/* Launch base's kernel for dtype over `threads` threads (a grid grid_y blocks
 * tall) with the arguments after line: read by the kernel's own signature,
 * and as many as it has parameters, or the launch stops at its Mica line. */
#define LAUNCH_GRID(base, dtype, threads, grid_y, line, ...)                                             \
    do {                                                                                               \
        const struct kernel *k_ = K(base, dtype, COUNT(__VA_ARGS__), line);                            \
        mica_gpu_launch_grid(k_->name, threads, grid_y, line, k_->signature, __VA_ARGS__);             \
    } while (0)
#define LAUNCH(base, dtype, threads, line, ...) LAUNCH_GRID(base, dtype, threads, 1, line, __VA_ARGS__)

/* ---------------------------------------------------------------- the window's device buffers */

static struct {
    mica_dev *buffers;
    int64_t count, capacity;
} window;

static void release_window(void) {
    for (int64_t i = 0; i < window.count; i++) mica_dev_drop(&window.buffers[i]);
    window.count = 0;
}

/* Zeroed device memory that lives until the next window opens. */
static void *zeros(int64_t bytes, int line) {
    if (mica_tape_device_reset == NULL) {
        mica_tape_device_reset = release_window;
        mica_tape_device_zeros = zeros;
    }
    if (window.count == window.capacity) {
        int64_t capacity = window.capacity ? window.capacity * 2 : 256;
        window.buffers = mica_resize(window.buffers, window.count, capacity, sizeof(mica_dev), line);
        window.capacity = capacity;
    }
    mica_dev *d = &window.buffers[window.count++];
    d->ptr = 0;
    d->bytes = 0;
    mica_dev_reserve(d, bytes > 0 ? bytes : 1, line);
    return (void *)(uintptr_t)d->ptr;
}

static mica_node *node(int dtype, int rank, const int64_t *dims, const char *op, mica_backward_fn backward,
                       mica_node *a, mica_node *b, mica_node *c, int line) {
    mica_node *n = mica_node_new_on_device(dtype, rank, dims, op, backward, a, b, c);
    n->line = line;
    n->value = zeros(BYTES(n), line);
    return n;
}

static mica_node *like(mica_node *a, const char *op, mica_backward_fn backward, mica_node *b, mica_node *c, int line) {
    return node(a->dtype, a->rank, a->dims, op, backward, a, b, c, line);
}

/* ---------------------------------------------------------------- places and values */

/* A device value into node storage; one never written is zeros, as the storage already is. */
static void copy_in(uint64_t dst, mica_dev src, int64_t bytes, int line) {
    if (src.ptr != 0) mica_dev_copy_raw(dst, src.ptr, bytes, line);
}

mica_node *mica_gt_read(mica_tag *tag, int dtype, const mica_dev *place, int rank, const int64_t *dims, int line) {
    mica_node *n = tag->node;
    if (!mica_tape_current(tag)) {
        n = node(dtype, rank, dims, "leaf", NULL, NULL, NULL, NULL, line);
        mica_dev_copy_raw(DP(n), mica_dev_read(place, BYTES(n), line), BYTES(n), line);
        n->needs_grad = true;
        mica_tape_enroll(tag, n);
    }
    mica_tape_note_read(tag);
    return tag->node;
}

mica_node *mica_gt_const(int dtype, mica_dev value, int rank, const int64_t *dims, int line) {
    mica_node *n = node(dtype, rank, dims, "constant", NULL, NULL, NULL, NULL, line);
    copy_in(DP(n), value, BYTES(n), line);
    return n;
}

mica_node *mica_gt_scalar(int dtype, double value, int line) {
    mica_node *n = node(dtype, 0, NULL, "constant", NULL, NULL, NULL, NULL, line);
    float single = (float)value;
    mica_dev_put(DP(n), dtype == MICA_F64 ? (const void *)&value : (const void *)&single, BYTES(n), line);
    return n;
}

void mica_gt_write(mica_tag *tag, mica_dev *place, mica_node *n, int line) {
    mica_dev_reserve(place, BYTES(n), line);
    mica_dev_copy_raw(place->ptr, DP(n), BYTES(n), line);
    mica_tape_enroll(tag, n);
}

void mica_gt_value(mica_dev *out, mica_node *n, int line) {
    mica_dev_reserve(out, BYTES(n), line);
    mica_dev_copy_raw(out->ptr, DP(n), BYTES(n), line);
}

void mica_gt_backward(mica_tag *loss, const char *name, int line) {
    mica_node *root = mica_tape_loss(loss, name, line);
    double one = 1.0;
    float single = 1.0f;
    mica_dev_put(DG(root), root->dtype == MICA_F64 ? (const void *)&one : (const void *)&single, BYTES(root), line);
    mica_tape_walk(root);
}

void mica_gt_gradient(mica_dev *out, mica_tag *tag, int dtype, int64_t count, const char *name, int line) {
    mica_node *read = mica_tape_gradient_node(tag, name, line);
    int64_t bytes = count * (int64_t)mica_dtype_size(dtype);
    mica_dev_reserve(out, bytes, line); /* zeros, when no path led back to the place */
    if (read != NULL) mica_dev_copy_raw(out->ptr, (uint64_t)(uintptr_t)read->grad, bytes, line);
}

/* ---------------------------------------------------------------- elementwise arithmetic */

/* ga += g (sign +1) or ga -= g (sign -1) for the inputs that need it. */
static void pass_back(mica_node *out, mica_node *in, int sign) {
    if (in != NULL && in->needs_grad)
        LAUNCH(sign > 0 ? "mica_accumulate" : "mica_deduct", out->dtype, out->count, out->line, DG(in), DG(out),
               (int64_t)out->count);
}

static void add_back(mica_node *out) {
    pass_back(out, out->in[0], 1);
    pass_back(out, out->in[1], 1);
}

static void sub_back(mica_node *out) {
    pass_back(out, out->in[0], 1);
    pass_back(out, out->in[1], -1);
}

static mica_node *binary(const char *kernel, mica_backward_fn backward, mica_node *a, mica_node *b, int line) {
    mica_node *out = like(a, kernel, backward, b, NULL, line);
    LAUNCH(kernel, a->dtype, out->count, line, DP(out), DP(a), DP(b), (int64_t)out->count);
    return out;
}

mica_node *mica_gt_add(mica_node *a, mica_node *b, int line) { return binary("mica_add", add_back, a, b, line); }
mica_node *mica_gt_sub(mica_node *a, mica_node *b, int line) { return binary("mica_sub", sub_back, a, b, line); }

/* gin += kernel(g, other), elementwise, when in needs it: the backward of a product or a quotient. */
static void pass_back_by(mica_node *out, const char *kernel, mica_node *in, mica_node *other) {
    if (in->needs_grad)
        LAUNCH(kernel, out->dtype, out->count, out->line, DG(in), DG(out), DP(other), (int64_t)out->count);
}

static void mul_back(mica_node *out) {
    pass_back_by(out, "mica_mul_back", out->in[0], out->in[1]);
    pass_back_by(out, "mica_mul_back", out->in[1], out->in[0]);
}

mica_node *mica_gt_mul(mica_node *a, mica_node *b, int line) { return binary("mica_mul", mul_back, a, b, line); }

static void div_back(mica_node *out) {
    mica_node *a = out->in[0], *b = out->in[1];
    pass_back_by(out, "mica_div_back_a", a, b);
    if (b->needs_grad)
        LAUNCH("mica_div_back_b", out->dtype, out->count, out->line, DG(b), DG(out), DP(out), DP(b),
               (int64_t)out->count);
}

mica_node *mica_gt_div(mica_node *a, mica_node *b, int line) { return binary("mica_div", div_back, a, b, line); }

/* a + row and a - row: row (cols) at every leading index of a */
static void rows_back(mica_node *out) {
    mica_node *a = out->in[0], *row = out->in[1];
    int64_t cols = row->count, rows = out->count / cols;
    pass_back(out, a, 1);
    if (row->needs_grad) {  // the column sums of g, then into row's gradient
        uint64_t sums = (uint64_t)(uintptr_t)zeros(BYTES(row), out->line);
        LAUNCH("mica_sum_rows", out->dtype, cols, out->line, sums, DG(out), rows, cols);
        LAUNCH(out->param < 0 ? "mica_deduct" : "mica_accumulate", out->dtype, cols, out->line, DG(row), sums, cols);
    }
}

static mica_node *rows_op(const char *kernel, double sign, mica_node *a, mica_node *row, int line) {
    mica_node *out = like(a, kernel, rows_back, row, NULL, line);
    out->param = sign;
    int64_t cols = row->count;
    LAUNCH(kernel, a->dtype, out->count, line, DP(out), DP(a), DP(row), out->count / cols, cols);
    return out;
}

mica_node *mica_gt_add_rows(mica_node *a, mica_node *row, int line) { return rows_op("mica_add_rows", 1, a, row, line); }
mica_node *mica_gt_sub_rows(mica_node *a, mica_node *row, int line) { return rows_op("mica_sub_rows", -1, a, row, line); }

/* out = a * s, a / s, a + s with a constant s */
static void scale_back(mica_node *out) {
    LAUNCH("mica_scale_back", out->dtype, out->count, out->line, DG(out->in[0]), DG(out), out->param,
           (int64_t)out->count);
}

static void divide_back(mica_node *out) {
    LAUNCH("mica_divide_back", out->dtype, out->count, out->line, DG(out->in[0]), DG(out), out->param,
           (int64_t)out->count);
}

static void shift_back(mica_node *out) { pass_back(out, out->in[0], 1); }

static mica_node *with_scalar(const char *kernel, mica_backward_fn backward, mica_node *a, double s, int line) {
    mica_node *out = like(a, kernel, backward, NULL, NULL, line);
    out->param = a->dtype == MICA_F64 ? s : (double)(float)s;
    LAUNCH(kernel, a->dtype, out->count, line, DP(out), DP(a), s, (int64_t)out->count);
    return out;
}

mica_node *mica_gt_scale(mica_node *a, double s, int line) { return with_scalar("mica_scale", scale_back, a, s, line); }
mica_node *mica_gt_divide(mica_node *a, double s, int line) { return with_scalar("mica_divide", divide_back, a, s, line); }
mica_node *mica_gt_shift(mica_node *a, double s, int line) { return with_scalar("mica_shift", shift_back, a, s, line); }

static void neg_back(mica_node *out) { pass_back(out, out->in[0], -1); }

mica_node *mica_gt_neg(mica_node *a, int line) {
    mica_node *out = like(a, "-", neg_back, NULL, NULL, line);
    LAUNCH("mica_neg", a->dtype, out->count, line, DP(out), DP(a), (int64_t)out->count);
    return out;
}

/* ---------------------------------------------------------------- products */

static void gemm(int dtype, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, uint64_t a, int64_t lda,
                 uint64_t b, int64_t ldb, uint64_t c, int64_t ldc, int accumulate, int64_t batch, int64_t sa,
                 int64_t sb, int64_t sc, int line) {
    LAUNCH_GRID("mica_gemm", dtype, m * n, batch, line, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc, accumulate,
                sa, sb, sc);
}

// out (batch, m, n) = a (batch, m, k) * b (batch, k, n); a batch of one is a plain product (extent: m, k, n, batch)
static void matmul_back(mica_node *out) {
    mica_node *a = out->in[0], *b = out->in[1];
    int64_t m = out->extent[0], k = out->extent[1], n = out->extent[2], batch = out->extent[3];
    int64_t sa = batch > 1 ? m * k : 0, sb = batch > 1 ? k * n : 0, sc = batch > 1 ? m * n : 0;
    if (a->needs_grad)  // da += g b^T
        gemm(out->dtype, 0, 1, m, k, n, DG(out), n, DP(b), n, DG(a), k, 1, batch, sc, sb, sa, out->line);
    if (b->needs_grad)  // db += a^T g
        gemm(out->dtype, 1, 0, k, n, m, DP(a), k, DG(out), n, DG(b), n, 1, batch, sa, sc, sb, out->line);
}

mica_node *mica_gt_matmul(mica_node *a, mica_node *b, int64_t m, int64_t k, int64_t n, int rank, const int64_t *dims,
                          int line) {
    mica_node *out = node(a->dtype, rank, dims, "*", matmul_back, a, b, NULL, line);
    out->extent[0] = m;
    out->extent[1] = k;
    out->extent[2] = n;
    out->extent[3] = 1;
    gemm(a->dtype, 0, 0, m, n, k, DP(a), k, DP(b), n, DP(out), n, 0, 1, 0, 0, 0, line);
    return out;
}

mica_node *mica_gt_bmm(mica_node *a, mica_node *b, int64_t batch, int64_t m, int64_t k, int64_t n, int rank,
                       const int64_t *dims, int line) {
    mica_node *out = node(a->dtype, rank, dims, "*", matmul_back, a, b, NULL, line);
    out->extent[0] = m;
    out->extent[1] = k;
    out->extent[2] = n;
    out->extent[3] = batch;
    gemm(a->dtype, 0, 0, m, n, k, DP(a), k, DP(b), n, DP(out), n, 0, batch, m * k, k * n, m * n, line);
    return out;
}

static void transpose_back(mica_node *out) {
    mica_node *a = out->in[0];
    int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
    LAUNCH("mica_transpose_back", out->dtype, out->count, out->line, DG(a), DG(out), a->count / (rows * cols), rows,
           cols);
}

mica_node *mica_gt_transpose(mica_node *a, int line) {
    int64_t dims[MICA_MAX_RANK];
    memcpy(dims, a->dims, sizeof dims);
    int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
    dims[a->rank - 2] = cols;
    dims[a->rank - 1] = rows;
    mica_node *out = node(a->dtype, a->rank, dims, "Transpose", transpose_back, a, NULL, NULL, line);
    LAUNCH("mica_transpose", a->dtype, out->count, line, DP(out), DP(a), a->count / (rows * cols), rows, cols);
    return out;
}

/* ---------------------------------------------------------------- elementwise functions */

// saved: the backward kernel's name
static void each_back(mica_node *out) {
    mica_node *a = out->in[0];
    LAUNCH((const char *)out->saved, out->dtype, out->count, out->line, DG(a), DG(out), DP(a), DP(out),
           (int64_t)out->count);
}

/* forward: mica_each_NAME; backward: mica_NAME_back (both names are string literals) */
mica_node *mica_gt_each(const char *forward, const char *backward, mica_node *a, int line) {
    mica_node *out = like(a, forward, each_back, NULL, NULL, line);
    out->saved = (void *)backward;
    LAUNCH(forward, a->dtype, out->count, line, DP(out), DP(a), (int64_t)out->count);
    return out;
}

/* ---------------------------------------------------------------- dropout */

/* The node keeps its mask (mica_dropout_mask_keep); the backward draws the verdicts again. */
static void dropout_back(mica_node *out) {
    mica_node *a = out->in[0];
    mica_dropout_mask m = mica_dropout_mask_of(out);
    LAUNCH("mica_dropout_back", out->dtype, out->count, out->line, DG(a), DG(out), (int64_t)m.key, (int64_t)m.first,
           (int64_t)m.threshold, m.scale, (int64_t)out->count);
}

mica_node *mica_gt_dropout(mica_node *a, double p, int line) {
    mica_node *out = like(a, "Dropout", dropout_back, NULL, NULL, line);
    mica_dropout_mask m = mica_dropout_mask_new(out->count, p, line);
    mica_dropout_mask_keep(out, &m);
    LAUNCH("mica_dropout", a->dtype, out->count, line, DP(out), DP(a), (int64_t)m.key, (int64_t)m.first,
           (int64_t)m.threshold, m.scale, (int64_t)out->count);
    return out;
}

/* ---------------------------------------------------------------- reductions */

static void whole_back(mica_node *out) {  // Sum and Mean: every element gets g (over n, for Mean)
    mica_node *a = out->in[0];
    LAUNCH(out->param > 0 ? "mica_mean_back" : "mica_sum_back", out->dtype, a->count, out->line, DG(a), DG(out),
           (int64_t)a->count);
}

static mica_node *whole(const char *kernel, double mean, mica_node *a, int line) {
    mica_node *out = node(a->dtype, 0, NULL, kernel, whole_back, a, NULL, NULL, line);
    out->param = mean;
    LAUNCH(kernel, a->dtype, 1, line, DP(out), DP(a), (int64_t)a->count);
    return out;
}

mica_node *mica_gt_sum(mica_node *a, int line) { return whole("mica_sum", 0, a, line); }
mica_node *mica_gt_mean(mica_node *a, int line) { return whole("mica_mean", 1, a, line); }

static void max_back(mica_node *out) {
    LAUNCH("mica_max_back", out->dtype, 1, out->line, DG(out->in[0]), DG(out), (uint64_t)(uintptr_t)out->saved);
}

mica_node *mica_gt_max(mica_node *a, int line) {
    mica_node *out = node(a->dtype, 0, NULL, "Max", max_back, a, NULL, NULL, line);
    out->saved = zeros(sizeof(int64_t), line);
    LAUNCH("mica_max", a->dtype, 1, line, DP(out), (uint64_t)(uintptr_t)out->saved, DP(a), (int64_t)a->count);
    return out;
}

static void sum_rows_back(mica_node *out) {
    mica_node *a = out->in[0];
    int64_t cols = out->count;
    LAUNCH("mica_sum_rows_back", out->dtype, a->count, out->line, DG(a), DG(out), a->count / cols, cols);
}

mica_node *mica_gt_sum_rows(mica_node *a, int line) {
    int64_t cols = a->dims[a->rank - 1];
    mica_node *out = node(a->dtype, 1, &cols, "SumRows", sum_rows_back, a, NULL, NULL, line);
    LAUNCH("mica_sum_rows", a->dtype, cols, line, DP(out), DP(a), a->count / cols, cols);
    return out;
}

/* ---------------------------------------------------------------- rows */

static void softmax_back(mica_node *out) {
    int64_t cols = out->dims[out->rank - 1];
    LAUNCH("mica_softmax_back_rows", out->dtype, out->count / cols, out->line, DG(out->in[0]), DG(out), DP(out),
           out->count / cols, cols);
}

mica_node *mica_gt_softmax(mica_node *a, int line) {
    mica_node *out = like(a, "Softmax", softmax_back, NULL, NULL, line);
    int64_t cols = a->dims[a->rank - 1];
    LAUNCH("mica_softmax_rows", a->dtype, a->count / cols, line, DP(out), DP(a), a->count / cols, cols);
    return out;
}

static void causal_mask_back(mica_node *out) {
    int64_t rows = out->dims[out->rank - 2], cols = out->dims[out->rank - 1];
    LAUNCH("mica_causal_mask_back", out->dtype, out->count, out->line, DG(out->in[0]), DG(out),
           out->count / (rows * cols), rows, cols);
}

mica_node *mica_gt_causal_mask(mica_node *a, int line) {
    mica_node *out = like(a, "CausalMask", causal_mask_back, NULL, NULL, line);
    int64_t rows = a->dims[a->rank - 2], cols = a->dims[a->rank - 1];
    LAUNCH("mica_causal_mask", a->dtype, out->count, line, DP(out), DP(a), a->count / (rows * cols), rows, cols);
    return out;
}

// saved: the rows' mean then rstd, on the device
static void layernorm_back(mica_node *out) {
    mica_node *x = out->in[0], *gain = out->in[1], *bias = out->in[2];
    int64_t cols = gain->count, rows = out->count / cols;
    uint64_t mean = (uint64_t)(uintptr_t)out->saved, rstd = mean + (uint64_t)rows * mica_dtype_size(out->dtype);
    if (gain->needs_grad || bias->needs_grad)
        LAUNCH("mica_layernorm_params_back", out->dtype, cols, out->line, gain->needs_grad ? DG(gain) : 0,
               bias->needs_grad ? DG(bias) : 0, DG(out), DP(x), mean, rstd, rows, cols);
    if (x->needs_grad)
        LAUNCH("mica_layernorm_back_rows", out->dtype, rows, out->line, DG(x), DG(out), DP(x), DP(gain), mean, rstd,
               rows, cols);
}

mica_node *mica_gt_layernorm(mica_node *x, mica_node *gain, mica_node *bias, int line) {
    mica_node *out = like(x, "LayerNorm", layernorm_back, gain, bias, line);
    int64_t cols = gain->count, rows = x->count / cols;
    out->saved = zeros(2 * rows * (int64_t)mica_dtype_size(x->dtype), line);
    uint64_t mean = (uint64_t)(uintptr_t)out->saved, rstd = mean + (uint64_t)rows * mica_dtype_size(x->dtype);
    LAUNCH("mica_layernorm_rows", x->dtype, rows, line, DP(out), mean, rstd, DP(x), DP(gain), DP(bias), rows, cols);
    return out;
}

static void rmsnorm_back(mica_node *out) {
    mica_node *x = out->in[0], *gain = out->in[1];
    int64_t cols = gain->count, rows = out->count / cols;
    uint64_t rstd = (uint64_t)(uintptr_t)out->saved;
    if (gain->needs_grad)
        LAUNCH("mica_rmsnorm_gain_back", out->dtype, cols, out->line, DG(gain), DG(out), DP(x), rstd, rows, cols);
    if (x->needs_grad)
        LAUNCH("mica_rmsnorm_back_rows", out->dtype, rows, out->line, DG(x), DG(out), DP(x), DP(gain), rstd, rows,
               cols);
}

mica_node *mica_gt_rmsnorm(mica_node *x, mica_node *gain, int line) {
    mica_node *out = like(x, "RmsNorm", rmsnorm_back, gain, NULL, line);
    int64_t cols = gain->count, rows = x->count / cols;
    out->saved = zeros(rows * (int64_t)mica_dtype_size(x->dtype), line);
    LAUNCH("mica_rmsnorm_rows", x->dtype, rows, line, DP(out), (uint64_t)(uintptr_t)out->saved, DP(x), DP(gain), rows,
           cols);
    return out;
}

/* The device flags a bad id or target; the host finds the first, to say what the host runtime says. */
static void check_ids(uint64_t flag, uint64_t ids, int64_t n, int64_t limit, const char *who, int line) {
    int32_t bad = 0;
    mica_dev_get(&bad, flag, sizeof bad, line);
    if (bad == 0) return;
    int64_t *host = mica_alloc((size_t)n * sizeof(int64_t), line);
    mica_dev_get(host, ids, n * (int64_t)sizeof(int64_t), line);
    for (int64_t i = 0; i < n; i++)
        if (host[i] < 0 || host[i] >= limit)
            mica_trapf(line, "%s %lld out of range 0..%lld", who, (long long)host[i], (long long)(limit - 1));
}

// saved: the targets, then the rows' losses, then the probabilities
static void cross_entropy_back(mica_node *out) {
    mica_node *logits = out->in[0];
    int64_t cols = logits->dims[logits->rank - 1], rows = logits->count / cols;
    uint64_t targets = (uint64_t)(uintptr_t)out->saved;
    uint64_t probs = targets + (uint64_t)rows * 8 + (uint64_t)rows * mica_dtype_size(out->dtype);
    LAUNCH("mica_cross_entropy_back_rows", out->dtype, rows, out->line, DG(logits), DG(out), probs, targets, rows,
           cols);
}

mica_node *mica_gt_cross_entropy(mica_node *logits, mica_dev targets, int line) {
    mica_node *out = node(logits->dtype, 0, NULL, "CrossEntropy", cross_entropy_back, logits, NULL, NULL, line);
    int64_t cols = logits->dims[logits->rank - 1], rows = logits->count / cols, size = mica_dtype_size(logits->dtype);
    out->saved = zeros(rows * 8 + rows * size + rows * cols * size, line);
    uint64_t kept = (uint64_t)(uintptr_t)out->saved, losses = kept + (uint64_t)rows * 8, probs = losses + (uint64_t)(rows * size);
    copy_in(kept, targets, rows * 8, line);
    uint64_t flag = (uint64_t)(uintptr_t)zeros(sizeof(int32_t), line);
    LAUNCH("mica_cross_entropy_rows", logits->dtype, rows, line, losses, probs, flag, DP(logits), kept, rows, cols);
    check_ids(flag, kept, rows, cols, "CrossEntropy: target", line);
    LAUNCH("mica_mean", logits->dtype, 1, line, DP(out), losses, rows);
    return out;
}

// saved: the ids
static void gather_back(mica_node *out) {
    mica_node *table = out->in[0];
    int64_t cols = table->dims[1], n = out->count / cols;
    LAUNCH("mica_gather_back", out->dtype, cols, out->line, DG(table), DG(out), (uint64_t)(uintptr_t)out->saved, n,
           table->dims[0], cols);
}

mica_node *mica_gt_gather(mica_node *table, mica_dev ids, int64_t n, int rank, const int64_t *dims, int line) {
    mica_node *out = node(table->dtype, rank, dims, "Gather", gather_back, table, NULL, NULL, line);
    out->saved = zeros(n * 8, line);
    uint64_t kept = (uint64_t)(uintptr_t)out->saved, flag = (uint64_t)(uintptr_t)zeros(sizeof(int32_t), line);
    copy_in(kept, ids, n * 8, line);
    int64_t rows = table->dims[0], cols = table->dims[1];
    LAUNCH("mica_gather", table->dtype, n * cols, line, DP(out), flag, DP(table), kept, n, rows, cols);
    check_ids(flag, kept, n, rows, "Gather: id", line);
    return out;
}

/* float32(x) and float64(x): the gradient converts back */
static void convert_back(mica_node *out) {
    mica_node *a = out->in[0];
    uint64_t back = (uint64_t)(uintptr_t)zeros(BYTES(a), out->line);
    LAUNCH(a->dtype == MICA_F64 ? "mica_convert_f64" : "mica_convert_f32", out->dtype, a->count, out->line, back,
           DG(out), (int64_t)a->count);
    LAUNCH("mica_accumulate", a->dtype, a->count, out->line, DG(a), back, (int64_t)a->count);
}

mica_node *mica_gt_convert(mica_node *a, int dtype, int line) {
    if (a->dtype == dtype) return a;
    mica_node *out = node(dtype, a->rank, a->dims, "convert", convert_back, a, NULL, NULL, line);
    LAUNCH(dtype == MICA_F64 ? "mica_convert_f64" : "mica_convert_f32", a->dtype, a->count, line, DP(out), DP(a),
           (int64_t)a->count);
    return out;
}

/* ---------------------------------------------------------------- optimizer steps on device storage */

void mica_gpu_adam_step(int dtype, mica_dev *w, mica_dev g, mica_dev *m, mica_dev *v, int64_t n, int64_t t, double lr,
                        double beta1, double beta2, double eps, int line) {
    int64_t bytes = n * (int64_t)mica_dtype_size(dtype);
    double bias1, bias2;
    if (dtype == MICA_F64) {
        bias1 = 1 - mica_powi_f64(beta1, t);
        bias2 = 1 - mica_powi_f64(beta2, t);
    } else {  // in float arithmetic, as the host's float32 step computes them
        bias1 = (double)(1.0f - mica_powi_f32((float)beta1, t));
        bias2 = (double)(1.0f - mica_powi_f32((float)beta2, t));
    }
    LAUNCH("mica_adam_step", dtype, n, line, mica_dev_data(w, bytes, line), mica_dev_read(&g, bytes, line),
           mica_dev_data(m, bytes, line), mica_dev_data(v, bytes, line), n, lr, beta1, beta2, eps, bias1, bias2);
}

void mica_gpu_sgd_step(int dtype, mica_dev *w, mica_dev g, mica_dev *velocity, int64_t n, double lr, double momentum,
                       int line) {
    int64_t bytes = n * (int64_t)mica_dtype_size(dtype);
    LAUNCH("mica_sgd_step", dtype, n, line, mica_dev_data(w, bytes, line), mica_dev_read(&g, bytes, line),
           mica_dev_data(velocity, bytes, line), n, lr, momentum);
}

/* ---------------------------------------------------------------- the same, outside windows */

/* CrossEntropy of device logits (rows, cols) and targets (rows) into the device scalar out. */
void mica_gpu_cross_entropy(mica_dev *out, int dtype, mica_dev logits, mica_dev targets, int64_t rows, int64_t cols,
                            int line) {
    int64_t size = mica_dtype_size(dtype);
    mica_dev losses = {0}, probs = {0}, flag = {0};
    mica_dev_reserve(&losses, rows * size, line);
    mica_dev_reserve(&probs, rows * cols * size, line);
    mica_dev_reserve(&flag, sizeof(int32_t), line);
    uint64_t t = mica_dev_read(&targets, rows * 8, line);
    LAUNCH("mica_cross_entropy_rows", dtype, rows, line, losses.ptr, probs.ptr, flag.ptr,
           mica_dev_read(&logits, rows * cols * size, line), t, rows, cols);
    check_ids(flag.ptr, t, rows, cols, "CrossEntropy: target", line);
    mica_dev_reserve(out, size, line);
    LAUNCH("mica_mean", dtype, 1, line, out->ptr, losses.ptr, rows);
    mica_dev_drop(&losses);
    mica_dev_drop(&probs);
    mica_dev_drop(&flag);
}

/* Gather of device table (rows, cols) rows by n device ids into out (n, cols). */
void mica_gpu_gather(mica_dev *out, int dtype, mica_dev table, mica_dev ids, int64_t n, int64_t rows, int64_t cols,
                     int line) {
    int64_t size = mica_dtype_size(dtype);
    mica_dev flag = {0};
    mica_dev_reserve(&flag, sizeof(int32_t), line);
    mica_dev_reserve(out, n * cols * size, line);
    uint64_t i = mica_dev_read(&ids, n * 8, line);
    LAUNCH("mica_gather", dtype, n * cols, line, out->ptr, flag.ptr, mica_dev_read(&table, rows * cols * size, line),
           i, n, rows, cols);
    check_ids(flag.ptr, i, n, rows, "Gather: id", line);
    mica_dev_drop(&flag);
}

/* Whether a kernel set its error flag (one int32 on the device); the flag is dropped. */
static bool flagged(mica_dev *flag, int line) {
    int32_t bad = 0;
    mica_dev_get(&bad, flag->ptr, sizeof bad, line);
    mica_dev_drop(flag);
    return bad != 0;
}

/* Quantize of device x (n elements) into device q, int8 or uint8 as `kernel`
 * ("mica_quantize_i8" or "_u8") says: the scale is checked here, as the C
 * checks it, and a nan the kernel flags is the C's trap. */
void mica_gpu_quantize(mica_dev *q, const char *kernel, int dtype, mica_dev x, int64_t n, double scale, int64_t zero,
                       int line) {
    mica_quantize_check_scale(scale, line);
    mica_dev flag = {0};
    mica_dev_reserve(&flag, sizeof(int32_t), line);
    LAUNCH(kernel, dtype, n, line, mica_dev_data(q, n, line), flag.ptr,
           mica_dev_read(&x, n * (int64_t)mica_dtype_size(dtype), line), n, scale, zero);
    if (flagged(&flag, line)) mica_trap(line, "Quantize of a NaN");
}

/* QuantizeRows of device x (rows, cols) into device q (int8) and scales (rows).
 * A row the kernel flags (a nan or an inf) makes the C run on a host copy,
 * which traps at the first bad row with its own message. */
void mica_gpu_quantize_rows(mica_dev *q, mica_dev *scales, int dtype, mica_dev x, int64_t rows, int64_t cols, int line) {
    int64_t size = mica_dtype_size(dtype), count = rows * cols;
    mica_dev flag = {0};
    mica_dev_reserve(&flag, sizeof(int32_t), line);
    uint64_t source = mica_dev_read(&x, count * size, line);
    LAUNCH("mica_quantize_rows_i8", dtype, rows, line, mica_dev_data(q, count, line),
           mica_dev_data(scales, rows * size, line), flag.ptr, source, rows, cols);
    if (!flagged(&flag, line)) return;
    void *host = mica_alloc((size_t)(count * size), line), *host_scales = mica_alloc((size_t)(rows * size), line);
    int8_t *host_q = mica_alloc((size_t)count, line);
    mica_dev_get(host, source, count * size, line);
    if (dtype == MICA_F32) mica_quantize_rows_i8_f32(host_q, host_scales, host, rows, cols, line);
    else mica_quantize_rows_i8_f64(host_q, host_scales, host, rows, cols, line);
}
