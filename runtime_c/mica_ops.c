/* mica_ops.c: the vocabulary for float64 and float32 (see mica_ops.inc),
 * and the conversions between the two on the tape. */
#include "mica.h"

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
