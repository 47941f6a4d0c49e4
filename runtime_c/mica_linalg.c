/* mica_linalg.c: linear algebra on dynamic matrices (mica_linalg.inc), per float type. */
#include "mica.h"

#define MICA_PER_FLOAT "mica_linalg.inc"
#include "mica_per_float.h"
