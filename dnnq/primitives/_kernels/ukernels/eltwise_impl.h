/* Scalar f32 formulas of the eltwise and binary post-ops, as oneDNN defines them.
 * Included by every per-ISA translation unit (static inline: each gets its own copy compiled
 * with its own flags).  The "exact" algorithms (relu, linear, clip, clip_v2, abs, square, sqrt,
 * round) are bit-identical to oneDNN; transcendental ones use libm (a few ulp, see SPEC 5). */
#ifndef DNNQ_ELTWISE_IMPL_H
#define DNNQ_ELTWISE_IMPL_H
#include <math.h>
#include "dnnq_kernels.h"

static inline float dnnq_logistic(float x) {
    /* exp(-x) overflows for x < -88.72: the limit is 0, as in oneDNN */
    if (x < -88.72283172607421875f) return 0.0f;
    return 1.0f / (1.0f + expf(-x));
}

static inline float dnnq_soft_relu(float x, float alpha) {
    float in = x * alpha;
    float v = in < 88.72283172607421875f ? log1pf(expf(in)) : in;
    return v / alpha;
}

static inline float dnnq_eltwise(int alg, float x, float alpha, float beta) {
    switch (alg) {
    /* alpha = 0 is max(x, 0) in oneDNN: +0.0f for negative x, not x * 0 = -0.0f */
    case DNNQ_ELT_RELU: return x > 0.0f ? x : (alpha == 0.0f ? 0.0f : x * alpha);
    case DNNQ_ELT_TANH: return tanhf(x);
    case DNNQ_ELT_ELU: return x > 0.0f ? x : alpha * expm1f(x);
    case DNNQ_ELT_SQUARE: return x * x;
    case DNNQ_ELT_ABS: return fabsf(x);
    case DNNQ_ELT_SQRT: return sqrtf(x);
    case DNNQ_ELT_LINEAR: return fmaf(alpha, x, beta); /* oneDNN fuses it (vfmadd) */
    case DNNQ_ELT_SOFT_RELU: return dnnq_soft_relu(x, alpha);
    case DNNQ_ELT_LOGISTIC: return dnnq_logistic(x);
    case DNNQ_ELT_EXP: return expf(x);
    case DNNQ_ELT_GELU_TANH: {
        const float sqrt_2_over_pi = 0.79788456080286535587989211986876f;
        float g = sqrt_2_over_pi * x * (1.0f + 0.044715f * x * x);
        return 0.5f * x * (1.0f + tanhf(g));
    }
    case DNNQ_ELT_GELU_ERF: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
    case DNNQ_ELT_SWISH: return x * dnnq_logistic(alpha * x);
    case DNNQ_ELT_LOG: return logf(x);
    case DNNQ_ELT_CLIP: x = x > alpha ? x : alpha; return x > beta ? beta : x;
    case DNNQ_ELT_CLIP_V2: x = x > alpha ? x : alpha; return x < beta ? x : beta;
    case DNNQ_ELT_POW: return alpha * powf(x, beta);
    case DNNQ_ELT_ROUND: return nearbyintf(x);
    case DNNQ_ELT_MISH: return x * tanhf(dnnq_soft_relu(x, 1.0f));
    case DNNQ_ELT_HARDSWISH: { /* oneDNN's JIT order: min(t, 1), then max(., 0) */
        float t = alpha * x + beta;
        t = t < 1.0f ? t : 1.0f;
        t = t > 0.0f ? t : 0.0f;
        return x * t;
    }
    case DNNQ_ELT_HARDSIGMOID: {
        float t = alpha * x + beta;
        t = t < 1.0f ? t : 1.0f;
        return t > 0.0f ? t : 0.0f;
    }
    default: return x;
    }
}

static inline float dnnq_binary(int alg, float a, float b) {
    switch (alg) {
    case DNNQ_BIN_ADD: return a + b;
    case DNNQ_BIN_SUB: return a - b;
    case DNNQ_BIN_MUL: return a * b;
    case DNNQ_BIN_DIV: return a / b;
    case DNNQ_BIN_MIN: return a < b ? a : b;
    case DNNQ_BIN_MAX: return a > b ? a : b;
    case DNNQ_BIN_GE: return a >= b ? 1.0f : 0.0f;
    case DNNQ_BIN_GT: return a > b ? 1.0f : 0.0f;
    case DNNQ_BIN_LE: return a <= b ? 1.0f : 0.0f;
    case DNNQ_BIN_LT: return a < b ? 1.0f : 0.0f;
    case DNNQ_BIN_EQ: return a == b ? 1.0f : 0.0f;
    case DNNQ_BIN_NE: return a != b ? 1.0f : 0.0f;
    default: return a;
    }
}
#endif
