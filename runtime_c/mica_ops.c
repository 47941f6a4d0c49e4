/* mica_ops.c: the vocabulary for float64 and float32 (see mica_ops.inc),
 * and the conversions between the two on the tape. */
#include "mica.h"

#include <stdlib.h>
#include <string.h>

/* A row operation's rows run on the pool when there is enough work to share;
 * below that, starting the threads costs more than it saves. */
static void mica_for_rows(int64_t rows, int64_t cols, mica_task_fn body, void *job) {
    if (rows * cols < ((int64_t)1 << 14))
        body(job, 0, rows);
    else
        mica_parallel_for(rows, body, job);
}

/* An element-wise pass runs on the pool from a larger size: its work per
 * element is smaller than a row op's. */
static void mica_for_elements(int64_t n, mica_task_fn body, void *job) {
    if (n < ((int64_t)1 << 15))
        body(job, 0, n);
    else
        mica_parallel_for(n, body, job);
}

/* The levels below the top of a pairwise tree over n elements (mica_ops.inc's
 * columns_tree): one row of scratch each. */
static int64_t mica_tree_levels(int64_t n) {
    int64_t levels = 1;
    for (; n > 8; n = n - n / 2) levels++;
    return levels;
}

/* Attention's scores and weights, (2, m, n) per matrix: this thread's
 * grow-only buffer, valid until its next call. At 256 positions that is half
 * a megabyte, which malloc would map afresh (and fault in) on every call. */
typedef struct {
    void *data;
    size_t bytes;
} attention_scratch;

static void *attention_scratch_make(void) {
    return calloc(1, sizeof(attention_scratch));
}

static void attention_scratch_free(void *p) {
    attention_scratch *s = p;
    free(s->data);
    free(s);
}

static void *mica_attention_scratch(int64_t count, size_t size) {
    attention_scratch *s = mica_thread_local(MICA_LOCAL_ATTENTION, attention_scratch_make, attention_scratch_free);
    if (s == NULL) mica_trap(0, "out of memory for attention's scratch");
    size_t bytes = (size_t)count * size;
    if (bytes > s->bytes) {
        free(s->data);
        s->data = mica_scratch(count, size, 0);
        s->bytes = bytes;
    }
    return s->data;
}

#define MICA_PER_FLOAT "mica_ops.inc"
#include "mica_per_float.h"

/* float32(x) and float64(x) of a tracked value: the gradient converts back. */
static void convert_backward(mica_node *out) {
    mica_node *a = out->in[0];
    if (a->dtype == MICA_F64) {
        double *ga = mica_node_grad(a);
        const float *g = mica_node_grad(out);
        for (int64_t i = 0; i < out->count; i++) ga[i] += (double)g[i];
    } else {
        float *ga = mica_node_grad(a);
        const double *g = mica_node_grad(out);
        for (int64_t i = 0; i < out->count; i++) ga[i] += (float)g[i];
    }
}

mica_node *mica_t_convert(mica_node *a, int dtype) {
    if (a->dtype == dtype) return a;
    mica_node *out = mica_node_new(dtype, a->rank, a->dims, "convert", convert_backward, a, NULL, NULL);
    if (dtype == MICA_F64)
        mica_convert_f64_f32(out->value, a->value, a->count);
    else
        mica_convert_f32_f64(out->value, a->value, a->count);
    return out;
}
