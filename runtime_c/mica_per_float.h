/* mica_per_float.h: includes code written once for both float types, once per type.
 *
 *     #define MICA_PER_FLOAT "mica_linalg.inc"
 *     #include "mica_per_float.h"
 *
 * includes the named file for float64, then for float32, with the type
 * described by these macros (undefined again afterwards, MICA_PER_FLOAT too):
 *
 *     T      the C type                                  double     float
 *     S      the suffix of the names made for it         f64        f32
 *     W      its width in bits, for #if                  64         32
 *     U, I   the unsigned and signed integers that wide  uint64_t   uint32_t
 *                                                        int64_t    int32_t
 *     K(c)   its constant c: c_F64 or c_F32 (mica_math_consts.h names them so)
 *
 * Names are made with MICA_GLUE(name_, S). Not guarded: each inclusion
 * instantiates the file again.
 */
#include <stdint.h>

#ifndef MICA_GLUE /* mica.h has it too; the math library does without mica.h */
#define MICA_GLUE(a, b) MICA_GLUE_(a, b)
#define MICA_GLUE_(a, b) a##b
#endif

#define T double
#define S f64
#define W 64
#define U uint64_t
#define I int64_t
#define K(c) c##_F64
#include MICA_PER_FLOAT

#undef T
#define T float
#undef S
#define S f32
#undef W
#define W 32
#undef U
#define U uint32_t
#undef I
#define I int32_t
#undef K
#define K(c) c##_F32
#include MICA_PER_FLOAT

#undef T
#undef S
#undef W
#undef U
#undef I
#undef K
#undef MICA_PER_FLOAT
