/* The generic f32 epilogue of one destination row, shared by the int8 GEMM epilogue
 * (gemm_impl.h: after the compensation and the scales) and the f32 layers' epilogue
 * (gemm_f32_impl.h: straight from the f32 accumulators): bias, the post-op chain, the dst
 * scale and zero point, round-half-even, saturation, the store.  Static functions: each
 * per-ISA translation unit compiles (and auto-vectorises) its own copy. */
#ifndef DNNQ_EPILOGUE_GENERIC_H
#define DNNQ_EPILOGUE_GENERIC_H
#include <string.h>
#include "postop_chain.h" /* (and the formulas, eltwise_impl.h) */

/* 1.5 * 2^23: adding and subtracting it rounds an f32 of magnitude < 2^22 to the nearest
 * integer, ties to even, in the current (default) rounding mode, and vectorises everywhere. */
#define DNNQ_RNE_MAGIC 12582912.0f

static void dnnq_store_row(const dnnq_gemm_args_t *g, const float *v, void *out, int64_t n0,
                           int nc) {
    const float inv = g->inv_dst_scale;
    float d[DNNQ_NR];
    if ((g->ref_numerics & DNNQ_REF_ZP) && !g->dst_zp) {
        /* oneDNN's reference kernel adds the (default 0) zero point whenever the attributes
         * are not the defaults: -0.0f becomes +0.0f */
        for (int n = 0; n < nc; ++n) d[n] = v[n] * inv + 0.0f;
    } else if (!g->dst_zp) { /* no zero point: no "+ 0.0f", which would turn -0.0f into +0.0f */
        for (int n = 0; n < nc; ++n) d[n] = v[n] * inv;
    } else if (g->dst_zp_sn == 0) {
        const float zp = (float)g->dst_zp[0];
        for (int n = 0; n < nc; ++n) d[n] = v[n] * inv + zp;
    } else {
        const int32_t *zp = g->dst_zp + n0;
        for (int n = 0; n < nc; ++n) d[n] = v[n] * inv + (float)zp[n];
    }
    switch (g->dst_dt) {
    case DNNQ_DT_F32: memcpy(out, d, sizeof(float) * nc); break;
    case DNNQ_DT_S8: {
        int8_t *o = (int8_t *)out;
        /* NaN -> +127 as oneDNN's JIT kernels; 0 in its reference kernel (the low byte of
         * the C conversion's INT_MIN) */
        const float nan_to = g->ref_numerics ? 0.0f : 127.0f;
        for (int n = 0; n < nc; ++n) {
            float x = d[n] == d[n] ? d[n] : nan_to;
            x = x < -128.0f ? -128.0f : x;
            x = x > 127.0f ? 127.0f : x;
            o[n] = (int8_t)(int32_t)((x + DNNQ_RNE_MAGIC) - DNNQ_RNE_MAGIC);
        }
        break;
    }
    case DNNQ_DT_U8: {
        uint8_t *o = (uint8_t *)out;
        const float u8_nan = g->u8_nan_top ? 255.0f : 0.0f;
        for (int n = 0; n < nc; ++n) {
            float x = d[n] == d[n] ? d[n] : u8_nan; /* NaN -> 0 as oneDNN, 255 in its
                                                       jit_deconvolution */
            x = x < 0.0f ? 0.0f : x;
            x = x > 255.0f ? 255.0f : x;
            o[n] = (uint8_t)(int32_t)((x + DNNQ_RNE_MAGIC) - DNNQ_RNE_MAGIC);
        }
        break;
    }
    default: {
        int32_t *o = (int32_t *)out;
        /* NaN -> the top as oneDNN's JIT kernels; INT_MIN in its reference kernel */
        const float nan_to = g->ref_numerics ? -2147483648.0f : 2147483520.0f;
        for (int n = 0; n < nc; ++n) {
            float x = d[n] == d[n] ? d[n] : nan_to;
            x = x < -2147483648.0f ? -2147483648.0f : x;
            x = x > 2147483520.0f ? 2147483520.0f : x; /* largest f32 below 2^31 */
            o[n] = (int32_t)nearbyintf(x);
        }
        break;
    }
    }
}

static inline float dnnq_load_dst_f32(const void *base, int dt, int n) {
    switch (dt) {
    case DNNQ_DT_F32: return ((const float *)base)[n];
    case DNNQ_DT_S8: return (float)((const int8_t *)base)[n];
    case DNNQ_DT_U8: return (float)((const uint8_t *)base)[n];
    default: return (float)((const int32_t *)base)[n];
    }
}

/* v (nc f32 values of row m of batch b, columns n0 ..) -> + bias, post-ops, dst row drow */
static void dnnq_epilogue_finish(const dnnq_gemm_args_t *g, int64_t b, int64_t m, int64_t n0,
                                 int nc, float *v, char *drow) {
    float sv[DNNQ_NR]; /* sv: the value saved by a checkpoint post-op */
    if (g->bias) {
        const float *bs = g->bias + b * g->bias_sb + m * g->bias_sm;
        if (g->bias_sn)
            for (int n = 0; n < nc; ++n) v[n] += bs[n0 + n];
        else
            for (int n = 0; n < nc; ++n) v[n] += bs[0];
    }
    /* the post-op chain (postop_chain.h, shared with the toolkit) */
    for (int i = 0; i < g->n_post; ++i) {
        const dnnq_postop_t *po = &g->post[i];
        if (po->kind == DNNQ_PO_ELTWISE) {
            /* relu with alpha = 0 is max(x, 0) here, as oneDNN's JIT injector computes it */
            const int alg = po->alg == DNNQ_ELT_RELU && po->alpha == 0.0f && !g->ref_numerics
                                ? DNNQ_ELT_RELU_MAX0 : po->alg;
            dnnq_po_eltwise(alg, v, po->alpha, po->beta, nc);
        } else if (po->kind == DNNQ_PO_BINARY) {
            const float *s1 = po->src1 + b * po->s1_b + m * po->s1_m;
            if (po->s1_n) dnnq_po_binary(po->alg, v, s1 + n0, nc);
            else dnnq_po_binary_scalar(po->alg, v, s1[0], nc);
        } else if (po->kind == DNNQ_PO_SUM) {
            float prev[DNNQ_NR];
            for (int n = 0; n < nc; ++n) prev[n] = dnnq_load_dst_f32(drow, g->dst_dt, n);
            if (g->ref_numerics) dnnq_po_sum_unfused(v, prev, po->alpha, po->beta, nc);
            else dnnq_po_sum(v, prev, po->alpha, po->beta, nc);
        } else if (po->kind == DNNQ_PO_CHECKPOINT) {
            dnnq_po_checkpoint(sv, v, nc);
        } else if (po->kind == DNNQ_PO_SELECT) {
            float c[DNNQ_NR], x[DNNQ_NR];
            const float *c1 = po->src1 + b * po->s1_b + m * po->s1_m;
            const float *x1 = po->src2 + b * po->s2_b + m * po->s2_m;
            for (int n = 0; n < nc; ++n) c[n] = c1[(n0 + n) * po->s1_n];
            for (int n = 0; n < nc; ++n) x[n] = x1[(n0 + n) * po->s2_n];
            dnnq_po_select(po->alg, v, sv, c, x, nc);
        }
    }
    dnnq_store_row(g, v, drow, n0, nc);
}

#endif
