/* mica_ops.h: the vocabulary's kernels and tape nodes (mica_ops.inc), per float type. */
#ifndef MICA_OPS_H
#define MICA_OPS_H

#include "mica_element_functions.h"
#include "mica_tape.h"

/* Randomness: SplitMix64 of (seed, counter); see mica_random.c. Draw number c
 * after Seed(s) is mica_draw(key(s), c). */
#define MICA_GAMMA 0x9E3779B97F4A7C15ull

static inline uint64_t mica_mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline uint64_t mica_draw(uint64_t key, uint64_t counter) {
    return mica_mix(key + counter * MICA_GAMMA);
}

/* Dropout's mask: draws first .. first + n - 1 of the generator (key), which
 * mica_dropout_mask_new takes from it; element i is kept, and scaled by
 * `scale` = 1 / (1 - p), when the top 53 bits of draw first + i reach
 * `threshold` = ceil(p * 2^53) (probability 1 - p), else zeroed. Each
 * element's verdict depends on its index alone, so every thread count, the
 * GPU and the tape's backward draw the same mask. p outside [0, 1) traps. */
typedef struct {
    uint64_t key, first, threshold;
    double scale;
} mica_dropout_mask;
mica_dropout_mask mica_dropout_mask_new(int64_t n, double p, int line);

static inline bool mica_dropout_keeps(const mica_dropout_mask *m, int64_t i) {
    return mica_draw(m->key, m->first + (uint64_t)i) >> 11 >= m->threshold;
}

/* A Dropout node, on the host or the device tape, keeps its mask rather than a
 * tensor of it, and its backward draws the same verdicts again: key, first
 * and threshold in extent[0..2] (their bits), the scale in param. */
static inline void mica_dropout_mask_keep(mica_node *n, const mica_dropout_mask *m) {
    n->extent[0] = (int64_t)m->key;
    n->extent[1] = (int64_t)m->first;
    n->extent[2] = (int64_t)m->threshold;
    n->param = m->scale;
}

static inline mica_dropout_mask mica_dropout_mask_of(const mica_node *n) {
    return (mica_dropout_mask){(uint64_t)n->extent[0], (uint64_t)n->extent[1], (uint64_t)n->extent[2], n->param};
}

void mica_seed(int64_t seed);
void mica_normal_f64(double *x, int64_t n, double mean, double std);
void mica_normal_f32(float *x, int64_t n, double mean, double std);
void mica_uniform_f64(double *x, int64_t n, double low, double high);
void mica_uniform_f32(float *x, int64_t n, double low, double high);
int64_t mica_random_int(int64_t n, int line);

#define MICA_OPS(T, S)                                                                                              \
    T mica_pairwise_##S(const T *x, int64_t n, int64_t stride);                                                    \
    T mica_sum_##S(const T *x, int64_t n);                                                                          \
    T mica_mean_##S(const T *x, int64_t n);                                                                         \
    T mica_max_##S(const T *x, int64_t n);                                                                          \
    T mica_dot_##S(const T *a, const T *b, int64_t n);                                                              \
    void mica_sum_rows_##S(T *out, const T *x, int64_t rows, int64_t cols);                                         \
    void mica_outer_##S(T *out, const T *a, const T *b, int64_t m, int64_t n);                                      \
    void mica_softmax_##S(T *out, const T *x, int64_t rows, int64_t cols);                                          \
    void mica_causal_mask_##S(T *out, const T *x, int64_t batch, int64_t rows, int64_t cols);                      \
    void mica_layernorm_##S(T *out, T *mean, T *rstd, const T *x, const T *gain, const T *bias, int64_t rows,      \
                            int64_t cols);                                                                          \
    void mica_rmsnorm_##S(T *out, T *rstd, const T *x, const T *gain, int64_t rows, int64_t cols);                  \
    T mica_cross_entropy_##S(T *probs, const T *logits, const int64_t *targets, int64_t rows, int64_t cols,        \
                             int line);                                                                             \
    void mica_gather_##S(T *out, const T *table, const int64_t *ids, int64_t n, int64_t rows, int64_t cols,        \
                         int line);                                                                                 \
    void mica_conv2d_##S(T *out, const T *x, const T *k, int64_t batch, int64_t cin, int64_t h, int64_t w,         \
                         int64_t cout, int64_t kh, int64_t kw);                                                     \
    void mica_maxpool2d_##S(T *out, int64_t *where, const T *x, int64_t planes, int64_t h, int64_t w, int64_t size); \
    void mica_avgpool2d_##S(T *out, const T *x, int64_t planes, int64_t h, int64_t w, int64_t size);               \
    mica_node *mica_t_sum_##S(mica_node *a);                                                                        \
    mica_node *mica_t_mean_##S(mica_node *a);                                                                       \
    mica_node *mica_t_max_##S(mica_node *a);                                                                        \
    mica_node *mica_t_sum_rows_##S(mica_node *a);                                                                   \
    mica_node *mica_t_add_##S(mica_node *a, mica_node *b);                                                          \
    mica_node *mica_t_sub_##S(mica_node *a, mica_node *b);                                                          \
    mica_node *mica_t_mul_##S(mica_node *a, mica_node *b);                                                          \
    mica_node *mica_t_div_##S(mica_node *a, mica_node *b);                                                          \
    mica_node *mica_t_add_rows_##S(mica_node *a, mica_node *row);                                                   \
    mica_node *mica_t_sub_rows_##S(mica_node *a, mica_node *row);                                                   \
    mica_node *mica_t_scale_##S(mica_node *a, T s);                                                                 \
    mica_node *mica_t_divide_##S(mica_node *a, T s);                                                                \
    mica_node *mica_t_shift_##S(mica_node *a, T s);                                                                 \
    mica_node *mica_t_neg_##S(mica_node *a);                                                                        \
    mica_node *mica_t_scale_by_##S(mica_node *a, mica_node *s);                                                     \
    mica_node *mica_t_divide_by_##S(mica_node *a, mica_node *s);                                                    \
    mica_node *mica_t_shift_by_##S(mica_node *a, mica_node *s);                                                     \
    mica_node *mica_t_matmul_##S(mica_node *a, mica_node *b, int64_t m, int64_t k, int64_t n, int rank,            \
                                 const int64_t *dims);                                                              \
    mica_node *mica_t_bmm_##S(mica_node *a, mica_node *b, int64_t batch, int64_t m, int64_t k, int64_t n, int rank, \
                              const int64_t *dims);                                                                 \
    mica_node *mica_t_product_plus_##S(mica_node *a, mica_node *b, mica_node *r, int64_t m, int64_t k, int64_t n,  \
                                       int rank, const int64_t *dims);                                              \
    mica_node *mica_t_transpose_##S(mica_node *a);                                                                  \
    mica_node *mica_t_dot_##S(mica_node *a, mica_node *b);                                                          \
    mica_node *mica_t_outer_##S(mica_node *a, mica_node *b);                                                        \
    mica_node *mica_t_part_##S(mica_node *a, int64_t offset, int rank, const int64_t *dims);                        \
    mica_node *mica_t_softmax_##S(mica_node *a);                                                                    \
    mica_node *mica_t_causal_mask_##S(mica_node *a);                                                                \
    mica_node *mica_t_attention_##S(mica_node *q, mica_node *k, mica_node *v, bool scaled, T s, bool causal,      \
                                    int rank, const int64_t *dims);                                                 \
    mica_node *mica_t_layernorm_##S(mica_node *x, mica_node *gain, mica_node *bias);                                \
    mica_node *mica_t_rmsnorm_##S(mica_node *x, mica_node *gain);                                                   \
    mica_node *mica_t_cross_entropy_##S(mica_node *logits, const int64_t *targets, int line);                      \
    mica_node *mica_t_gather_##S(mica_node *table, const int64_t *ids, int64_t n, int rank, const int64_t *dims,   \
                                 int line);                                                                         \
    mica_node *mica_t_conv2d_##S(mica_node *x, mica_node *k, int64_t batch, int rank, const int64_t *dims);         \
    mica_node *mica_t_maxpool2d_##S(mica_node *x, int64_t size, int rank, const int64_t *dims);                     \
    mica_node *mica_t_avgpool2d_##S(mica_node *x, int64_t size, int rank, const int64_t *dims);                     \
    void mica_dropout_##S(T *out, const T *x, int64_t n, double p, int line);                                      \
    void mica_dropout_apply_##S(T *out, const T *x, int64_t n, const mica_dropout_mask *m);                       \
    mica_node *mica_t_dropout_##S(mica_node *a, double p, int line);
MICA_OPS(double, f64)
MICA_OPS(float, f32)
#undef MICA_OPS

mica_node *mica_t_convert(mica_node *a, int dtype);

/* The elementwise functions of the table (mica_element_functions.h): the
 * kernel out[i] = F(x[i]) and the tape node that records it. The scalar forms
 * that are one instruction are the header's inlines; the others mica_math.h's. */
#define MICA_EACH_DECLARE(F)                                                        \
    void mica_each_##F##_f64(double *out, const double *x, int64_t n);             \
    void mica_each_##F##_f32(float *out, const float *x, int64_t n);               \
    mica_node *mica_t_##F##_f64(mica_node *a);                                      \
    mica_node *mica_t_##F##_f32(mica_node *a);
MICA_ELEMENT_FUNCTIONS(MICA_EACH_DECLARE)
#undef MICA_EACH_DECLARE

/* Optimizer steps over n elements (the caller's storage); see mica_optim.c. */
void mica_adam_step_f64(double *w, const double *g, double *m, double *v, int64_t n, int64_t t, double lr,
                        double beta1, double beta2, double eps);
void mica_adam_step_f32(float *w, const float *g, float *m, float *v, int64_t n, int64_t t, float lr, float beta1,
                        float beta2, float eps);
void mica_sgd_step_f64(double *w, const double *g, double *velocity, int64_t n, double lr, double momentum);
void mica_sgd_step_f32(float *w, const float *g, float *velocity, int64_t n, float lr, float momentum);

#endif /* MICA_OPS_H */
