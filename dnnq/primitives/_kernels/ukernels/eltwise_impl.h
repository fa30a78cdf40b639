/* Scalar f32 formulas of the eltwise and binary post-ops, as oneDNN defines them.
 * Included by every per-ISA translation unit (static inline: each gets its own copy compiled
 * with its own flags).  The "exact" algorithms (relu, linear, clip, clip_v2, abs, square, sqrt,
 * round) are bit-identical to oneDNN; so are logistic, swish, tanh and gelu_tanh, computed as
 * oneDNN's JIT eltwise injector computes them (rnn_math.h, operation by operation); gelu_erf
 * takes erf from erf_table.h's polynomials (dnnq_erf below, the same operations as the AVX-512
 * epilogue's ev_erf); the others use libm (a few ulp, see SPEC 5).  None depends on the ISA
 * level: the AVX-512 epilogue's vector forms are these operations lane by lane. */
#ifndef DNNQ_ELTWISE_IMPL_H
#define DNNQ_ELTWISE_IMPL_H
#include <math.h>
#include "dnnq_kernels.h"
#include "erf_table.h"
#include "rnn_math.h"

/* oneDNN's logistic: e / (e + 1) with e = exp(-|x|), 1 - that for x >= +0 (0 for x below
 * -87.3, 1 above 16.6; a NaN gives 0 or 1, as in oneDNN's kernels) */
static inline float dnnq_logistic(float x) { return rnn_logistic(x); }

static inline float dnnq_swish(float x, float alpha) { return x * dnnq_logistic(alpha * x); }

/* oneDNN's tanh (rnn_math.h's polynomials), a NaN passed through as its eltwise kernels do
 * (the RNN cells' rnn_tanh never sees one) */
static inline float dnnq_tanh(float x) { return x != x ? x : rnn_tanh(x); }

/* erf(s) as ev_erf (eltwise_avx512.h) computes it, one lane: |s| clamped to 4 (NaN -> 4), the
 * interval's polynomial in t = |s| - k / 4, capped at 1, the sign of s put back */
static inline float dnnq_erf(float s) {
    const uint32_t sign = rnn_f2bits(s) & 0x80000000u;
    float a = fabsf(s);
    a = a < 4.0f ? a : 4.0f;                       /* vminps: a NaN gives 4 */
    int32_t k = (int32_t)(a * 4.0f);               /* vcvttps2dq (a * 4 <= 16) */
    k = k < 15 ? k : 15;
    const float t = fmaf(-(float)k, 0.25f, a);     /* vfnmadd: exact */
    float p = rnn_bits2f(dnnq_erf_pol[6][k]);
    for (int d = 5; d >= 0; --d) p = fmaf(p, t, rnn_bits2f(dnnq_erf_pol[d][k]));
    p = p < 1.0f ? p : 1.0f;
    return rnn_bits2f(rnn_f2bits(p) | sign);
}

static inline float dnnq_gelu_erf(float x) {
    return 0.5f * x * (1.0f + dnnq_erf(x * 0.70710678118654752440f));
}

/* oneDNN's JIT gelu_tanh: g = fma(x x, 0.044715, 1) x sqrt(2 / pi), then ((tanh(g) + 1) 0.5) x */
static inline float dnnq_gelu_tanh(float x) {
    float g = fmaf(x * x, 0.044715f, 1.0f);
    g = g * x;
    g = g * 0.79788456080286535587989211986876f;
    return ((rnn_tanh(g) + 1.0f) * 0.5f) * x;
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
    case DNNQ_ELT_TANH: return dnnq_tanh(x);
    case DNNQ_ELT_ELU: return x > 0.0f ? x : alpha * expm1f(x);
    case DNNQ_ELT_SQUARE: return x * x;
    case DNNQ_ELT_ABS: return fabsf(x);
    case DNNQ_ELT_SQRT: return sqrtf(x);
    case DNNQ_ELT_LINEAR: return fmaf(alpha, x, beta); /* oneDNN fuses it (vfmadd) */
    case DNNQ_ELT_SOFT_RELU: return dnnq_soft_relu(x, alpha);
    case DNNQ_ELT_LOGISTIC: return dnnq_logistic(x);
    case DNNQ_ELT_EXP: return expf(x);
    case DNNQ_ELT_GELU_TANH: return dnnq_gelu_tanh(x);
    case DNNQ_ELT_GELU_ERF: return dnnq_gelu_erf(x);
    case DNNQ_ELT_SWISH: return dnnq_swish(x, alpha);
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
