/* mica_fma.h: fused multiply-add, the step of every dot product.
 *
 * fma(x, y, acc) is the exact x*y + acc rounded once to nearest-even, as
 * IEEE 754 defines it; a zero result takes the exact result's sign (a
 * product that underflows keeps its sign). x86_64 CPUs with FMA3, aarch64
 * and PTX's fma.rn compute exactly this; so does the software here, for
 * x86_64 CPUs without FMA3. (musl's fma does not: it returns +0 where an
 * exact result below the smallest subnormal should round to -0.)
 *
 * The GEMM (mica_gemm.c) calls the instruction from kernels compiled for
 * AVX2+FMA, AVX-512 or NEON, and mica_soft_fma_* from its SSE2 kernels and
 * its reference. Scalar code compiled for baseline x86_64 (a convolution's
 * loop) calls mica_fma_*, which takes the instruction where the CPU has it.
 */
#ifndef MICA_FMA_H
#define MICA_FMA_H

float mica_soft_fma_f32(float x, float y, float acc);
double mica_soft_fma_f64(double x, double y, double acc);

float mica_fma_f32(float x, float y, float acc);
double mica_fma_f64(double x, double y, double acc);

#endif /* MICA_FMA_H */
