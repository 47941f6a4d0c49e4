/* mica_linalg.c: linear algebra on dynamic matrices (mica_linalg.inc), per float type. */
#include "mica.h"

#define T double
#define S f64
#include "mica_linalg.inc"
#undef T
#undef S

#define T float
#define S f32
#include "mica_linalg.inc"
#undef T
#undef S
