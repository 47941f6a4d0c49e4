/* ptx_adapters.h: the C side of every PTX kernel, shared by ptx_harness.c
 * (tests/test_ptx.py) and fake_cuda.c (the fake CUDA driver,
 * tests/fake_driver.py).
 *
 * harg is one kernel argument; ptx_harness.inc, included once per float
 * type, defines an adapter per kernel taking the kernel's arguments in the
 * kernel's order (h_table_f32, h_table_f64); the conversions and the
 * integer products, which have no float type, are in UNTYPED.
 * ptx_adapter(name) finds one by kernel name, or gives NULL. Two
 * adapters read one argument past the kernel's own: gemm's A[15] is the
 * batch count (the grid's height) and adam_step's A[11] the step t (the
 * kernel takes bias1 and bias2 instead). The table also holds two entries
 * that are no kernels (cross_entropy_total, adam_bias). Include after mica.h,
 * <stdlib.h> and <string.h>.
 */

typedef struct {
    void *p;     /* a buffer, or NULL */
    size_t bytes;
    int64_t i;
    double f;
    char kind;
} harg;

typedef struct {
    const char *name;
    void (*run)(harg *A);
} hentry;

#define MICA_STRING(x) MICA_STRING_(x)
#define MICA_STRING_(x) #x

#define T float
#define S f32
#define DTYPE MICA_F32
#include "ptx_harness.inc"
#undef T
#undef S
#undef DTYPE

#define T double
#define S f64
#define DTYPE MICA_F64
#include "ptx_harness.inc"
#undef T
#undef S
#undef DTYPE

static void h_convert_f32_f64(harg *A) { mica_convert_f32_f64((float *)A[0].p, (const double *)A[1].p, A[2].i); }
static void h_convert_f64_f32(harg *A) { mica_convert_f64_f32((double *)A[0].p, (const float *)A[1].p, A[2].i); }

static void h_matmul_i32_i8_i8(harg *A) {
    mica_matmul_i32_i8_i8((int32_t *)A[0].p, (const int8_t *)A[1].p, (const int8_t *)A[2].p, A[3].i, A[4].i, A[5].i);
}
static void h_matmul_i32_u8_i8(harg *A) {
    mica_matmul_i32_u8_i8((int32_t *)A[0].p, (const uint8_t *)A[1].p, (const int8_t *)A[2].p, A[3].i, A[4].i, A[5].i);
}

/* The kernels of no float type: the conversions and the integer products. */
static const hentry UNTYPED[] = {
    {"mica_convert_f32_f64", h_convert_f32_f64},
    {"mica_convert_f64_f32", h_convert_f64_f32},
    {"mica_matmul_i32_i8_i8", h_matmul_i32_i8_i8},
    {"mica_matmul_i32_u8_i8", h_matmul_i32_u8_i8},
};

#define LENGTH(a) (sizeof(a) / sizeof((a)[0]))

static const hentry *ptx_adapter(const char *name) {
    for (size_t k = 0; k < LENGTH(h_table_f32); k++)
        if (strcmp(h_table_f32[k].name, name) == 0) return &h_table_f32[k];
    for (size_t k = 0; k < LENGTH(h_table_f64); k++)
        if (strcmp(h_table_f64[k].name, name) == 0) return &h_table_f64[k];
    for (size_t k = 0; k < LENGTH(UNTYPED); k++)
        if (strcmp(UNTYPED[k].name, name) == 0) return &UNTYPED[k];
    return NULL;
}
