/* mica_optim.c: the optimizer steps, writing the caller's storage in place.
 *
 * AdamStep, exactly as LANGUAGE.md gives it, element by element:
 *   m := beta1*m + (1-beta1)*g;   v := beta2*v + (1-beta2)*g*g
 *   w := w - lr * (m/(1-beta1^t)) / (sqrt(v/(1-beta2^t)) + eps)
 * SgdStep:  velocity := momentum*velocity + g;   w := w - lr*velocity
 */
#include "mica.h"

#define OPTIMIZERS(T, S)                                                                                    \
    void mica_adam_step_##S(T *w, const T *g, T *m, T *v, int64_t n, int64_t t, T lr, T beta1, T beta2, T eps) { \
        T bias1 = 1 - mica_powi_##S(beta1, t), bias2 = 1 - mica_powi_##S(beta2, t);                       \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            m[i] = beta1 * m[i] + (1 - beta1) * g[i];                                                       \
            v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];                                                \
            w[i] = w[i] - lr * (m[i] / bias1) / (mica_sqrt_##S(v[i] / bias2) + eps);                        \
        }                                                                                                   \
    }                                                                                                       \
    void mica_sgd_step_##S(T *w, const T *g, T *velocity, int64_t n, T lr, T momentum) {                    \
        for (int64_t i = 0; i < n; i++) {                                                                   \
            velocity[i] = momentum * velocity[i] + g[i];                                                    \
            w[i] = w[i] - lr * velocity[i];                                                                 \
        }                                                                                                   \
    }
OPTIMIZERS(double, f64)
OPTIMIZERS(float, f32)
