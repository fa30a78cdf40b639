/* The post-op chain, written once: eltwise, binary, sum, checkpoint and select acting on a row
 * of n f32 values.  Used by the toolkit's pointwise engine (tk_pointwise.h: its ELTWISE /
 * BIN_* / SAVE / SELECT stages; a sum post-op is planned there as LOAD + BIN_* stages of the
 * same arithmetic) and by the GEMM epilogue (gemm_impl.h, dnnq_epilogue_row).  Each function is
 * a plain loop per algorithm, so each ISA's translation unit auto-vectorises it with its own
 * flags; the formulas of the remaining (transcendental) algorithms are eltwise_impl.h's. */
#ifndef DNNQ_POSTOP_CHAIN_H
#define DNNQ_POSTOP_CHAIN_H
#include <math.h>
#include <string.h>
#include "dnnq_toolkit.h"
#include "eltwise_impl.h"

/* v = alg(v; al, be) */
static inline void dnnq_po_eltwise(int alg, float *restrict v, float al, float be, int n) {
    switch (alg) {
    case DNNQ_ELT_RELU: for (int i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : v[i] * al; break;
    case DNNQ_ELT_RELU_MAX0: for (int i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : 0.0f; break;
    case DNNQ_ELT_LINEAR: /* oneDNN's JIT: one fused multiply-add */
        for (int i = 0; i < n; ++i) v[i] = fmaf(al, v[i], be);
        break;
    case DNNQ_ELT_LINEAR_UNFUSED: /* oneDNN's reference kernels: two roundings */
        for (int i = 0; i < n; ++i) v[i] = al * v[i] + be;
        break;
    case DNNQ_ELT_ABS: for (int i = 0; i < n; ++i) v[i] = fabsf(v[i]); break;
    case DNNQ_ELT_ABS_REF: for (int i = 0; i < n; ++i) v[i] = v[i] > 0.0f ? v[i] : -v[i]; break;
    case DNNQ_ELT_SQUARE: for (int i = 0; i < n; ++i) v[i] = v[i] * v[i]; break;
    case DNNQ_ELT_SQRT: for (int i = 0; i < n; ++i) v[i] = sqrtf(v[i]); break;
    case DNNQ_ELT_ROUND: for (int i = 0; i < n; ++i) v[i] = nearbyintf(v[i]); break;
    case DNNQ_ELT_CLIP:
        for (int i = 0; i < n; ++i) {
            float t = v[i] > al ? v[i] : al;
            v[i] = t > be ? be : t;
        }
        break;
    case DNNQ_ELT_CLIP_V2:
        for (int i = 0; i < n; ++i) {
            float t = v[i] > al ? v[i] : al;
            v[i] = t < be ? t : be;
        }
        break;
    /* oneDNN's JIT: min(t, 1) then max(., 0) with vminps / vmaxps, so NaN gives 1 */
    case DNNQ_ELT_HARDSIGMOID:
        for (int i = 0; i < n; ++i) {
            float t = v[i] * al + be;
            t = t < 1.0f ? t : 1.0f;
            v[i] = t > 0.0f ? t : 0.0f;
        }
        break;
    case DNNQ_ELT_HARDSWISH:
        for (int i = 0; i < n; ++i) {
            float t = v[i] * al + be;
            t = t < 1.0f ? t : 1.0f;
            t = t > 0.0f ? t : 0.0f;
            v[i] = v[i] * t;
        }
        break;
    /* its reference kernels: t <= 0 ? 0 : t >= 1 ? 1 : t, so NaN stays NaN */
    case DNNQ_ELT_HARDSIGMOID_REF:
        for (int i = 0; i < n; ++i) {
            float t = v[i] * al + be;
            v[i] = t <= 0.0f ? 0.0f : (t >= 1.0f ? 1.0f : t);
        }
        break;
    case DNNQ_ELT_HARDSWISH_REF:
        for (int i = 0; i < n; ++i) {
            float t = v[i] * al + be;
            t = t <= 0.0f ? 0.0f : (t >= 1.0f ? 1.0f : t);
            v[i] = v[i] * t;
        }
        break;
    /* eltwise_impl.h's polynomial forms, branch-free: each level vectorises them with the
     * same operations per lane (dnnq_eltwise's switch per element would not) */
    case DNNQ_ELT_LOGISTIC: for (int i = 0; i < n; ++i) v[i] = dnnq_logistic(v[i]); break;
    case DNNQ_ELT_SWISH: for (int i = 0; i < n; ++i) v[i] = dnnq_swish(v[i], al); break;
    case DNNQ_ELT_TANH: for (int i = 0; i < n; ++i) v[i] = dnnq_tanh(v[i]); break;
    case DNNQ_ELT_GELU_TANH: for (int i = 0; i < n; ++i) v[i] = dnnq_gelu_tanh(v[i]); break;
    case DNNQ_ELT_GELU_ERF: for (int i = 0; i < n; ++i) v[i] = dnnq_gelu_erf(v[i]); break;
    default:
        for (int i = 0; i < n; ++i) v[i] = dnnq_eltwise(alg, v[i], al, be);
    }
}

/* v = alg(v, B) for B an array (b[i]) or a constant */
#define DNNQ_PO_BIN_LOOPS(B)                                                                  \
    switch (alg) {                                                                            \
    case DNNQ_BIN_ADD: for (int i = 0; i < n; ++i) v[i] = v[i] + (B); break;                  \
    case DNNQ_BIN_SUB: for (int i = 0; i < n; ++i) v[i] = v[i] - (B); break;                  \
    case DNNQ_BIN_MUL: for (int i = 0; i < n; ++i) v[i] = v[i] * (B); break;                  \
    case DNNQ_BIN_DIV: for (int i = 0; i < n; ++i) v[i] = v[i] / (B); break;                  \
    case DNNQ_BIN_MIN: for (int i = 0; i < n; ++i) v[i] = v[i] < (B) ? v[i] : (B); break;     \
    case DNNQ_BIN_MAX: for (int i = 0; i < n; ++i) v[i] = v[i] > (B) ? v[i] : (B); break;     \
    case DNNQ_BIN_GE: for (int i = 0; i < n; ++i) v[i] = v[i] >= (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_GT: for (int i = 0; i < n; ++i) v[i] = v[i] > (B) ? 1.0f : 0.0f; break;     \
    case DNNQ_BIN_LE: for (int i = 0; i < n; ++i) v[i] = v[i] <= (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_LT: for (int i = 0; i < n; ++i) v[i] = v[i] < (B) ? 1.0f : 0.0f; break;     \
    case DNNQ_BIN_EQ: for (int i = 0; i < n; ++i) v[i] = v[i] == (B) ? 1.0f : 0.0f; break;    \
    case DNNQ_BIN_NE: for (int i = 0; i < n; ++i) v[i] = v[i] != (B) ? 1.0f : 0.0f; break;    \
    default: break;                                                                           \
    }

static inline void dnnq_po_binary(int alg, float *restrict v, const float *restrict b, int n) {
    DNNQ_PO_BIN_LOOPS(b[i])
}

static inline void dnnq_po_binary_scalar(int alg, float *restrict v, const float c, int n) {
    DNNQ_PO_BIN_LOOPS(c)
}

/* sum post-op: v = fma(scale, prev - zero_point, v), prev the destination's previous values:
 * oneDNN's kernels fuse the multiply and the add (vfmadd231ps), which an f32 destination shows
 * when scale * prev is inexact */
static inline void dnnq_po_sum(float *restrict v, const float *restrict prev, float scale, float zp,
                        int n) {
    for (int i = 0; i < n; ++i) v[i] = fmaf(scale, prev[i] - zp, v[i]);
}

/* the sum post-op of oneDNN's reference kernels: v += scale * (prev - zero_point), two
 * roundings */
static inline void dnnq_po_sum_unfused(float *restrict v, const float *restrict prev,
                                       float scale, float zp, int n) {
    for (int i = 0; i < n; ++i) v[i] += scale * (prev[i] - zp);
}

/* checkpoint (dnnq extension): the value select compares later */
static inline void dnnq_po_checkpoint(float *restrict saved, const float *restrict v, int n) {
    memcpy(saved, v, sizeof(float) * (size_t)n);
}

/* select (dnnq extension): v = alg(saved, cond) ? value : v, IEEE comparisons (false with a
 * NaN except ne) */
static inline void dnnq_po_select(int alg, float *restrict v, const float *restrict saved,
                           const float *restrict cond, const float *restrict value, int n) {
    switch (alg) {
    case DNNQ_BIN_LE: for (int i = 0; i < n; ++i) v[i] = saved[i] <= cond[i] ? value[i] : v[i]; break;
    case DNNQ_BIN_LT: for (int i = 0; i < n; ++i) v[i] = saved[i] < cond[i] ? value[i] : v[i]; break;
    case DNNQ_BIN_GE: for (int i = 0; i < n; ++i) v[i] = saved[i] >= cond[i] ? value[i] : v[i]; break;
    case DNNQ_BIN_GT: for (int i = 0; i < n; ++i) v[i] = saved[i] > cond[i] ? value[i] : v[i]; break;
    case DNNQ_BIN_EQ: for (int i = 0; i < n; ++i) v[i] = saved[i] == cond[i] ? value[i] : v[i]; break;
    case DNNQ_BIN_NE: for (int i = 0; i < n; ++i) v[i] = saved[i] != cond[i] ? value[i] : v[i]; break;
    default: break;
    }
}
#endif
