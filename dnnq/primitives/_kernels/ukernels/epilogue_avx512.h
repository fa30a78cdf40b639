/* The fused AVX-512 epilogue of the common case (see below), shared by the AVX512-VNNI and
 * AMX GEMM kernels; included by gemm_avx512vnni.c and gemm_amx.c (AVX-512 flags). */
#ifndef DNNQ_EPILOGUE_AVX512_H
#define DNNQ_EPILOGUE_AVX512_H
#include <immintrin.h>
#include <math.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"
#include "eltwise_avx512.h"
#include "postop_avx512.h"

/* The fused epilogue of the common case, in AVX-512 on the stored tile: per-N (or common)
 * compensation, scales, bias and dst zero point, relu / linear / clip / clip_v2 / hardswish /
 * hardsigmoid / sum / gelu_erf / gelu_tanh post-ops (dnnq_kernels.h, fast_epi_sum), any dst
 * type.  Operation for operation the same f32 arithmetic as
 * dnnq_epilogue_row (gemm_impl.h), hence the same bits -- except inside the two GELUs, whose
 * erf / tanh are eltwise_avx512.h's polynomials (a few ulp from libm's, SPEC 5).  It is specialised on the dst type, the post-op chain and whether the dst
 * scale and zero point are trivial; the per-column vectors are set up once per block (one
 * column panel) by epi_prepare_avx512, and the four vectors of a row go through together.
 * Two steps are done without a branch because they are exact no-ops when absent: adding a
 * zero compensation, and adding a zero bias to f32(acc) * scale (the scales are positive,
 * so that product is never -0.0). */
typedef struct {
    __m512i cc[4];
    __m512 sc[4], bi[4], zp[4];
    __m512 inv;     /* 1 / dst scale, broadcast */
    __mmask16 km[4];
    __mmask64 km8;
    int nc;         /* columns of the block */
    int full, has_zp, flags, post, kind, has_sum;
    int nv;         /* vectors of 16 columns holding columns (the others are skipped) */
    int chain_regs; /* an EPI_CHAIN of post-ops epilogue_chain_avx512.h applies in registers */
    int chain_noclamp; /* and every value it gives an 8-bit dst needs no clamp (NOCLAMP's test) */
    int n_post;
    const dnnq_postop_t *post_ops;
    char *d0;       /* dst of (batch, row 0, column n0) */
    int64_t ldd;    /* its row stride in bytes */
    /* bit 2i: post-op i (a clip or clip_v2) never needs its lower bound, bit 2i + 1: its
     * upper bound (epi_chain_walk); chain_regs chains only */
    uint64_t clip_drop;
    /* binary post-ops' inputs (one value per column, or one for all): the block's batch and
     * first column; rep16: the 16 columns of vector 0 in every vector (ech_tile_rows16's
     * rows of 16 channels) */
    int64_t bin_b, bin_n0;
    int bin_rep16;
} epi_consts_t;

/* the four vectors of binary post-op po's input for the block's columns: an input the same
 * for every row (fused_epilogue_flags admits no other), per column (s1_n = 1) or one value */
DNNQ_ALWAYS_INLINE void epi_bin_vectors(const epi_consts_t *k, const dnnq_postop_t *po,
                                        __m512 *y) {
    const float *s = po->src1 + k->bin_b * po->s1_b + k->bin_n0 * po->s1_n;
    if (!po->s1_n) {
        y[0] = y[1] = y[2] = y[3] = _mm512_set1_ps(s[0]);
    } else if (k->bin_rep16) {
        y[0] = y[1] = y[2] = y[3] = _mm512_maskz_loadu_ps(k->km[0], s);
    } else {
        for (int j = 0; j < 4; ++j) y[j] = _mm512_maskz_loadu_ps(k->km[j], s + 16 * j);
    }
}

enum { EPI_NONE = 0, EPI_RELU0 = 1, EPI_CHAIN = 2 };
enum { EPI_RAW = 4 }; /* after the DNNQ_DT_* codes: s32 accumulators stored as they are */
/* variant flags, each dropping steps that are exact no-ops for the block: SIMPLE no dst scale
 * or zero point; NOCC all compensations zero; NOCLAMP (8-bit dsts) every value is finite and
 * below 2^30 in magnitude, where the saturating packs alone give the clamped result */
enum { EPI_F_SIMPLE = 1, EPI_F_NOCC = 2, EPI_F_NOCLAMP = 4, EPI_F_GENERAL = 0 };

/* the post-ops of the NONE / RELU0 variants (EPI_CHAIN: epi_tile_chain) */
DNNQ_ALWAYS_INLINE __m512 epi_post(const int POST, __m512 v) {
    if (POST == EPI_RELU0) return _mm512_max_ps(v, _mm512_setzero_ps()); /* -0.0, NaN -> +0 */
    return v;
}

/* one vector of 16 columns up to the conversion: the f32 value, clamped for integer dsts.
 * vminps / vmaxps return their second operand when the first is NaN, and vcvtps2dq turns
 * anything below -2^31 into INT_MIN, which the saturating packs send to the bottom: so NaN
 * goes to +127 (s8) / 2147483520 (s32) / 0 (u8) -- what oneDNN's matmul stores -- with one
 * clamp for s8, no NaN test. */
/* the previous destination values of vector j of a row (columns 16j..), as f32 */
DNNQ_ALWAYS_INLINE __m512 epi_prev(const int DT, const epi_consts_t *k, const char *o, int j) {
    if (DT == DNNQ_DT_S8)
        return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k->km[j], o + 16 * j)));
    if (DT == DNNQ_DT_U8)
        return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k->km[j], o + 16 * j)));
    if (DT == DNNQ_DT_S32)
        return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k->km[j], o + 64 * j));
    return _mm512_maskz_loadu_ps(k->km[j], o + 64 * j);
}

/* the steps before the post-ops: compensation, f32(acc) * scale, bias */
DNNQ_ALWAYS_INLINE __m512 epi_pre(const int F, const epi_consts_t *k, __m512i ai, int j) {
    if (!(F & EPI_F_NOCC)) ai = _mm512_add_epi32(ai, k->cc[j]);
    __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(ai), k->sc[j]);
    return _mm512_add_ps(v, k->bi[j]);
}

/* the steps after them: dst scale and zero point, the clamp of integer dsts */
DNNQ_ALWAYS_INLINE __m512 epi_tail(const int DT, const int F, const dnnq_gemm_args_t *g,
                                   const epi_consts_t *k, __m512 v, int j) {
    (void)g;
    if (!(F & EPI_F_SIMPLE)) {
        v = _mm512_mul_ps(v, k->inv);
        if (k->has_zp) v = _mm512_add_ps(v, k->zp[j]); /* no "+ 0": -0.0 stays for f32 */
    }
    if ((DT == DNNQ_DT_S8 || DT == DNNQ_DT_U8) && (F & EPI_F_NOCLAMP)) return v;
    if (DT == DNNQ_DT_S8) return _mm512_min_ps(v, _mm512_set1_ps(127.0f));
    if (DT == DNNQ_DT_U8)
        return _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    if (DT == DNNQ_DT_S32)
        return _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(2147483520.0f)),
                             _mm512_set1_ps(-2147483648.0f));
    return v;
}

DNNQ_ALWAYS_INLINE __m512 epi_value(const int DT, const int POST, const int F,
                                    const dnnq_gemm_args_t *g, const epi_consts_t *k, __m512i ai,
                                    int j) {
    return epi_tail(DT, F, g, k, epi_post(POST, epi_pre(F, k, ai, j)), j);
}

/* the first nc (< 64) bytes of b at o in plain stores of 32 / 16 / 8 bytes and the rest one
 * by one: a masked store costs tens of cycles on AMD Zen 4 (docs/conv_kernels.md) */
DNNQ_ALWAYS_INLINE void epi_store_bytes(char *o, __m512i b, int nc) {
    __m256i y = _mm512_castsi512_si256(b);
    int at = 0;
    if (nc >= 32) {
        _mm256_storeu_si256((__m256i *)o, y);
        y = _mm512_extracti64x4_epi64(b, 1);
        at = 32;
    }
    __m128i x = _mm256_castsi256_si128(y);
    if (nc - at >= 16) {
        _mm_storeu_si128((__m128i *)(o + at), x);
        x = _mm256_extracti128_si256(y, 1);
        at += 16;
    }
    if (nc - at >= 8) {
        _mm_storel_epi64((__m128i *)(o + at), x);
        x = _mm_srli_si128(x, 8);
        at += 8;
    }
    uint64_t rest = (uint64_t)_mm_cvtsi128_si64(x);
    for (; at < nc; ++at, rest >>= 8) o[at] = (char)rest;
}

/* four s32 vectors (columns 0-15, ..., 48-63) packed s32 -> s16 -> s8 / u8 with saturation
 * (each 128-bit lane then holds 4 columns of each vector), put back in order by one vpermd,
 * stored as the panel's width allows */
DNNQ_ALWAYS_INLINE void epi_pack_store8(const int S8, const epi_consts_t *k, __m512i q0,
                                        __m512i q1, __m512i q2, __m512i q3, char *o) {
    const __m512i w01 = _mm512_packs_epi32(q0, q1), w23 = _mm512_packs_epi32(q2, q3);
    __m512i bytes = S8 ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
    bytes = _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
    if (k->full) _mm512_storeu_si512(o, bytes);
    else epi_store_bytes(o, bytes, k->nc);
}

DNNQ_ALWAYS_INLINE void epi_tile(const int DT, const int POST, const int F,
                                 const dnnq_gemm_args_t *g, const epi_consts_t *k,
                                 const int32_t *tile, int mr, char *d0) {
    const int64_t ldd = k->ldd;
    for (int r = 0; r < mr; ++r) {
        const int32_t *t = tile + r * DNNQ_NR;
        char *o = d0 + r * ldd;
        if (DT == EPI_RAW || DT == DNNQ_DT_F32 || DT == DNNQ_DT_S32) {
            for (int j = 0; j < k->nv; ++j) {
                const __m512i ai = _mm512_load_si512((const void *)(t + 16 * j));
                __m512i q;
                if (DT == EPI_RAW) q = _mm512_add_epi32(ai, k->cc[j]);
                else if (DT == DNNQ_DT_F32)
                    q = _mm512_castps_si512(epi_value(DT, POST, F, g, k, ai, j));
                else q = _mm512_cvtps_epi32(epi_value(DT, POST, F, g, k, ai, j));
                /* masked stores are slow on some cores (AMD Zen 4): only the last vector */
                if (k->full || k->km[j] == 0xFFFF) _mm512_storeu_si512(o + 64 * j, q);
                else _mm512_mask_storeu_epi32(o + 64 * j, k->km[j], q);
            }
            continue;
        }
        /* 8-bit: the 4 vectors packed and stored in column order (epi_pack_store8) */
        __m512i q[4];
        for (int j = 0; j < 4; ++j)
            q[j] = j >= k->nv ? _mm512_setzero_si512() /* no column there (narrow panels) */
                              : _mm512_cvtps_epi32(epi_value(
                                    DT, POST, F, g, k,
                                    _mm512_load_si512((const void *)(t + 16 * j)), j));
        epi_pack_store8(DT == DNNQ_DT_S8, k, q[0], q[1], q[2], q[3], o);
    }
}

/* EPI_CHAIN: the values of up to EPI_CHAIN_ROWS rows computed first, then the chain applied
 * post-op by post-op to all of them (one decision per post-op and block rather than per
 * vector), then converted and stored.  Every value goes through the operations of
 * dnnq_epilogue_row (gemm_impl.h) in its order, hence the same bits -- except inside the two
 * GELUs, whose erf / tanh are eltwise_avx512.h's polynomials (a few ulp from libm's, SPEC 5). */
#define EPI_CHAIN_ROWS 8
DNNQ_ALWAYS_INLINE void epi_tile_chain(const int DT, const dnnq_gemm_args_t *g,
                                       const epi_consts_t *k, const int32_t *tile, int mr,
                                       char *d0) {
    const int nv = k->nv;
    const int64_t ldd = k->ldd;
    __m512 v[EPI_CHAIN_ROWS][4];
    for (int r0 = 0; r0 < mr; r0 += EPI_CHAIN_ROWS) {
        const int rr = mr - r0 < EPI_CHAIN_ROWS ? mr - r0 : EPI_CHAIN_ROWS;
        const int32_t *t0 = tile + (int64_t)r0 * DNNQ_NR;
        char *o0 = d0 + r0 * ldd;
        for (int r = 0; r < rr; ++r)
            for (int j = 0; j < nv; ++j)
                v[r][j] = epi_pre(EPI_F_GENERAL, k,
                                  _mm512_load_si512((const void *)(t0 + r * DNNQ_NR + 16 * j)), j);
        for (int i = 0; i < g->n_post; ++i) {
            const dnnq_postop_t *po = &g->post[i];
            const __m512 al = _mm512_set1_ps(po->alpha), be = _mm512_set1_ps(po->beta);
#define EPI_EACH(EXPR)                                                                          \
    for (int r = 0; r < rr; ++r)                                                                \
        for (int j = 0; j < nv; ++j) {                                                          \
            const __m512 x = v[r][j];                                                           \
            v[r][j] = (EXPR);                                                                   \
        }
            if (po->kind == DNNQ_PO_SUM) {
                for (int r = 0; r < rr; ++r)
                    for (int j = 0; j < nv; ++j)
                        v[r][j] = epo_sum(v[r][j], epi_prev(DT, k, o0 + r * ldd, j), al, be);
                continue;
            }
            if (po->kind == DNNQ_PO_BINARY) {
                __m512 y[4];
                epi_bin_vectors(k, po, y);
#define EPI_BIN(ALG, OP)                                                                        \
    case ALG:                                                                                   \
        for (int r = 0; r < rr; ++r)                                                            \
            for (int j = 0; j < nv; ++j) v[r][j] = OP(v[r][j], y[j]);                           \
        break;
                switch (po->alg) { EPO_BINARY_ALGS(EPI_BIN) }
#undef EPI_BIN
                continue;
            }
            switch (po->alg) {
            case DNNQ_ELT_RELU:
                if (po->alpha == 0.0f) { EPI_EACH(epo_relu0(x)) }
                else { EPI_EACH(epo_relu(x, al)) }
                break;
            case DNNQ_ELT_CLIP: EPI_EACH(epo_clip(x, al, be)) break;
            case DNNQ_ELT_CLIP_V2: EPI_EACH(epo_clip_v2(x, al, be)) break;
            case DNNQ_ELT_HARDSWISH: EPI_EACH(epo_hardswish(x, al, be)) break;
            case DNNQ_ELT_HARDSIGMOID: EPI_EACH(epo_hardsigmoid(x, al, be)) break;
            case DNNQ_ELT_ROUND: EPI_EACH(epo_round(x)) break;
            case DNNQ_ELT_GELU_ERF: EPI_EACH(ev_gelu_erf(x)) break;
            case DNNQ_ELT_GELU_TANH: {
                rv_tanh_tab_t tab;
                rv_tanh_load(&tab);
                EPI_EACH(ev_gelu_tanh(x, &tab))
                break;
            }
            default: EPI_EACH(epo_linear(x, al, be)) break;
            }
#undef EPI_EACH
        }
        for (int r = 0; r < rr; ++r) {
            char *o = o0 + r * ldd;
            if (DT == DNNQ_DT_F32 || DT == DNNQ_DT_S32) {
                for (int j = 0; j < nv; ++j) {
                    const __m512 y = epi_tail(DT, EPI_F_GENERAL, g, k, v[r][j], j);
                    const __m512i q = DT == DNNQ_DT_F32 ? _mm512_castps_si512(y)
                                                        : _mm512_cvtps_epi32(y);
                    if (k->full || k->km[j] == 0xFFFF) _mm512_storeu_si512(o + 64 * j, q);
                    else _mm512_mask_storeu_epi32(o + 64 * j, k->km[j], q);
                }
                continue;
            }
            __m512i q[4];
            for (int j = 0; j < 4; ++j)
                q[j] = j >= nv ? _mm512_setzero_si512()
                               : _mm512_cvtps_epi32(epi_tail(DT, EPI_F_GENERAL, g, k, v[r][j], j));
            epi_pack_store8(DT == DNNQ_DT_S8, k, q[0], q[1], q[2], q[3], o);
        }
    }
}

/* min / max of bounds that are finite wherever they are used (no libm call: the chain's
 * analysis runs at every prepare, per block and work item) */
static inline float ecd_min(float a, float b) { return a < b ? a : b; }
static inline float ecd_max(float a, float b) { return a > b ? a : b; }

/* One walk of a chain's post-ops, following the range [lo, hi] of its values: whether at the
 * end every value is finite (no NaN either) and in [*plo, *phi] (1), or may not be (0), and
 * in *drop which bounds of its clips are exact no-ops (bit 2i: the max with alpha of post-op
 * i, bit 2i + 1: the min with beta): where the post-ops before it keep every value finite
 * and strictly inside that bound, the max / min returns its other operand unchanged.  Before
 * the first bounding post-op nothing is known (the scaled accumulators may be anything, a
 * NaN included).  A clip bounds (a NaN or inf goes to a limit), a hard sigmoid too ([0, 1],
 * a NaN -> 1); hard swish stays between its input and 0, relu and round move the bounds as
 * they move values, linear maps them (a correctly rounded product, sum or fma is monotone in
 * each operand); a sum is not followed.  The quantized ONNX models' chains (clip, hardswish,
 * clip, linear, clip, linear) re-clip the hard swish to a range whose lower end (-0.38) lies
 * below the hard swish's minimum (-0.375), and then the linear map of that: two of the
 * chain's 13 f32 steps on the ports the micro-kernel's vpdpbusd leave free (the margin of the
 * hard swish's closed-form minimum covers its roundings). */
static int epi_chain_walk(const dnnq_postop_t *post, int n_post, uint64_t *drop, float *plo,
                          float *phi) {
    int known = 0; /* every value is finite, not NaN, and in [lo, hi] */
    float lo = 0.0f, hi = 0.0f;
    *drop = 0;
    for (int i = 0; i < n_post; ++i) {
        const dnnq_postop_t *po = &post[i];
        const float al = po->alpha, be = po->beta;
        const int fin = isfinite(al) && isfinite(be);
        if (po->kind != DNNQ_PO_ELTWISE) { known = 0; continue; }
        switch (po->alg) {
        case DNNQ_ELT_CLIP:
        case DNNQ_ELT_CLIP_V2: /* min(be, max(x, al)) */
            if (!fin || !(al <= be)) { known = 0; break; }
            if (known && lo > al && i < 32) *drop |= (uint64_t)1 << (2 * i);
            if (known && hi < be && i < 32) *drop |= (uint64_t)2 << (2 * i);
            lo = known ? ecd_max(lo, al) : al;
            hi = known ? ecd_min(hi, be) : be;
            known = 1;
            break;
        case DNNQ_ELT_HARDSWISH: {
            /* x * s with s = min(max(x al + be, 0), 1) in [0, 1]: between min(x, 0) and
             * max(x, 0); for al > 0 and 0 <= be <= 1, s = x al + be or 0 where x < 0, so
             * x s >= -be^2 / (4 al) (the parabola's vertex), up to the roundings of x al, + be
             * and the product (a few ulps: the margin is 2^-10 relative) */
            if (!known || !fin) { known = 0; break; }
            float nlo = ecd_min(lo, 0.0f);
            if (al > 0.0f && be >= 0.0f && be <= 1.0f) {
                const double v = -(double)be * be / (4.0 * al) * (1.0 + 1.0 / 1024) - 1e-30;
                if (v > (double)nlo) nlo = (float)v;
            }
            lo = nlo;
            hi = ecd_max(hi, 0.0f);
            break;
        }
        case DNNQ_ELT_LINEAR: {
            if (!known || !fin) { known = 0; break; }
            const float a = fmaf(al, lo, be), b = fmaf(al, hi, be);
            lo = ecd_min(a, b), hi = ecd_max(a, b);
            break;
        }
        case DNNQ_ELT_RELU:
            if (!known || !fin) { known = 0; break; }
            if (al == 0.0f) {
                lo = ecd_max(lo, 0.0f), hi = ecd_max(hi, 0.0f);
            } else { /* x > 0 ? x : x al */
                const float a = lo * al, b = hi * al;
                lo = ecd_min(ecd_min(lo, 0.0f), ecd_min(a, b));
                hi = ecd_max(ecd_max(hi, 0.0f), ecd_max(a, b));
            }
            break;
        case DNNQ_ELT_HARDSIGMOID: known = 1, lo = 0.0f, hi = 1.0f; break;
        case DNNQ_ELT_ROUND: lo -= 1.0f, hi += 1.0f; break;
        default: known = 0; break;
        }
        known = known && isfinite(lo) && isfinite(hi);
    }
    *plo = lo, *phi = hi;
    return known;
}

/* Once per block (batch b, the 64 columns from n0): the per-column vectors and the variant. */
static void epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t b, int64_t n0, int nc,
                               epi_consts_t *k) {
    const float ss = g->src_scale;
    const int dt = g->dst_dt;
    for (int j = 0; j < 4; ++j) {
        const int left = nc - 16 * j;
        const __mmask16 km = left >= 16 ? (__mmask16)0xFFFF : (left <= 0 ? 0 : (__mmask16)((1u << left) - 1));
        k->km[j] = km;
        k->cc[j] = _mm512_maskz_loadu_epi32(km, g->col_comp + b * g->c_sb + n0 + 16 * j);
        k->sc[j] = g->scale_sn ? _mm512_mul_ps(_mm512_set1_ps(ss),
                                               _mm512_maskz_loadu_ps(km, g->scale + n0 + 16 * j))
                               : _mm512_set1_ps(ss * g->scale[0]);
        k->bi[j] = !g->bias ? _mm512_setzero_ps()
                   : g->bias_sn ? _mm512_maskz_loadu_ps(km, g->bias + n0 + 16 * j)
                                : _mm512_set1_ps(g->bias[0]);
        k->zp[j] = !g->dst_zp ? _mm512_setzero_ps()
                   : g->dst_zp_sn
                       ? _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(km, g->dst_zp + n0 + 16 * j))
                       : _mm512_set1_ps((float)g->dst_zp[0]);
    }
    k->inv = _mm512_set1_ps(g->inv_dst_scale);
    k->full = nc == DNNQ_NR;
    k->nv = (nc + 15) / 16;
    k->km8 = nc >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << nc) - 1);
    k->nc = nc;
    k->has_zp = g->dst_zp != NULL;
    k->post = g->n_post == 0 ? EPI_NONE
              : (g->n_post == 1 && g->post[0].kind == DNNQ_PO_ELTWISE &&
                 g->post[0].alg == DNNQ_ELT_RELU && g->post[0].alpha == 0.0f)
                  ? EPI_RELU0 : EPI_CHAIN;
    k->has_sum = 0;
    k->chain_regs = k->post == EPI_CHAIN;
    for (int i = 0; i < g->n_post; ++i) {
        const dnnq_postop_t *po = &g->post[i];
        k->has_sum |= po->kind == DNNQ_PO_SUM;
        /* not the GELUs: their polynomials need more registers than the tile leaves */
        const int a = po->alg;
        if (po->kind == DNNQ_PO_BINARY && epo_binary_fused(a)) continue;
        if (po->kind != DNNQ_PO_SUM &&
            (po->kind != DNNQ_PO_ELTWISE ||
             !(a == DNNQ_ELT_RELU || a == DNNQ_ELT_LINEAR || a == DNNQ_ELT_CLIP ||
               a == DNNQ_ELT_CLIP_V2 || a == DNNQ_ELT_HARDSWISH || a == DNNQ_ELT_HARDSIGMOID ||
               a == DNNQ_ELT_ROUND)))
            k->chain_regs = 0;
    }
    k->n_post = g->n_post;
    k->post_ops = g->post;
    k->bin_b = b, k->bin_n0 = n0, k->bin_rep16 = 0;
    float chain_lo = 0.0f, chain_hi = 0.0f;
    int chain_bounded = 0;
    k->clip_drop = 0;
    if (k->chain_regs)
        chain_bounded = epi_chain_walk(g->post, g->n_post, &k->clip_drop, &chain_lo, &chain_hi);
    k->flags = 0;
    if (!k->has_zp && g->inv_dst_scale == 1.0f) k->flags |= EPI_F_SIMPLE;
    __mmask16 ccnz = 0;
    for (int j = 0; j < 4; ++j) ccnz |= _mm512_test_epi32_mask(k->cc[j], k->cc[j]);
    if (!ccnz) k->flags |= EPI_F_NOCC;
    if (k->post != EPI_CHAIN) {
        /* |f32(acc) * scale + bias| <= max scale * 2^31 + max |bias| (relu only shrinks it),
         * then times |1 / dst scale| plus |zp|; NaN or inf anywhere fails the test (tested
         * by class: vmaxps drops a NaN of its first operand, so a NaN bias among finite ones
         * once passed, and an s8 dst stored -128 where the clamp gives oneDNN's +127) */
        __m512 ms = _mm512_setzero_ps(), mb = ms, mz = ms;
        __mmask16 nonfinite = 0;
        for (int j = 0; j < 4; ++j) {
            ms = _mm512_max_ps(ms, k->sc[j]);
            mb = _mm512_max_ps(mb, _mm512_abs_ps(k->bi[j]));
            mz = _mm512_max_ps(mz, _mm512_abs_ps(k->zp[j]));
            /* 0x99: quiet / signalling NaN, +inf, -inf */
            nonfinite |= _mm512_fpclass_ps_mask(k->sc[j], 0x99) |
                         _mm512_fpclass_ps_mask(k->bi[j], 0x99) |
                         _mm512_fpclass_ps_mask(k->zp[j], 0x99);
        }
        const float bound = (_mm512_reduce_max_ps(ms) * 2147483648.0f + _mm512_reduce_max_ps(mb))
                            * fabsf(g->inv_dst_scale) + _mm512_reduce_max_ps(mz);
        if (!nonfinite && bound < 1073741824.0f) k->flags |= EPI_F_NOCLAMP;
    }
    k->chain_noclamp = 0;
    if (k->chain_regs && (dt == DNNQ_DT_U8 || dt == DNNQ_DT_S8) && chain_bounded) {
        const float lo = chain_lo, hi = chain_hi;
        __m512 mz = _mm512_setzero_ps();
        __mmask16 nonfinite = 0;
        for (int j = 0; j < 4; ++j) {
            mz = _mm512_max_ps(mz, _mm512_abs_ps(k->zp[j]));
            nonfinite |= _mm512_fpclass_ps_mask(k->zp[j], 0x99);
        }
        /* (a NaN bound fails the test too) */
        const float bound = fmaxf(fabsf(lo), fabsf(hi)) * fabsf(g->inv_dst_scale) +
                            _mm512_reduce_max_ps(mz);
        k->chain_noclamp = !nonfinite && bound < 1073741824.0f;
    }
    k->kind = g->raw_s32 ? EPI_RAW : dt;
    const int esz = dt == DNNQ_DT_S8 || dt == DNNQ_DT_U8 ? 1 : 4;
    k->d0 = (char *)g->dst + (b * g->d_sb + n0) * esz;
    k->ldd = g->d_sm * esz;
}

/* The epilogue fused into a micro-kernel (the accumulators of a row never go to memory), for
 * the hot 8-bit case: no clamp needed (EPI_F_NOCLAMP), no post-op or relu(0), a dst zero point
 * or none, a compensation or none (s8 sources, source zero points).  FUSE = 1 + s8 dst + 2 relu
 * + 4 zero point + 8 compensation (0: not fusable).  The dst scale is always multiplied in: by 1 it is exact, so the SIMPLE
 * blocks take the same variant (epi_value skips it).  Same operations, same order, as
 * epi_value, hence the same bytes.
 * EPI_FUSE_CHAIN: an 8-bit dst and a chain of eltwise / sum post-ops without GELU
 * (epilogue_chain_avx512.h), always with the compensation, the dst scale and zero point (a
 * zero compensation or zero point added, a multiply by 1, are exact no-ops for an integer
 * dst), and the clamp unless EPI_FUSE_NOCLAMP.  Every chain kind has EPI_FUSE_CC, so
 * dnnq_epi_kind_xor keeps it: kinds 25 - 28. */
enum { EPI_FUSE_S8 = 1, EPI_FUSE_RELU = 2, EPI_FUSE_ZP = 4, EPI_FUSE_CC = 8, EPI_FUSE_CHAIN = 16,
       EPI_FUSE_F32 = 32 };
enum { EPI_FUSE_NOCLAMP = 2 }; /* of a chain kind: no clamp needed (k->chain_noclamp) */
/* EPI_FUSE_F32: an f32 dst with no post-op or relu(0) -- epi_value's general f32 steps
 * (compensation, scale, bias, the relu, dst scale, zero point when there is one) on the
 * accumulators, stored as they are: kinds 41 (1 + CC + F32) and 43 (+ RELU).  The s32 tile
 * and its reload cost as much as the multiply-adds where K is small (PP-OCRv4 det's 12 -> 96
 * 1x1 layers writing an f32 map: twice oneDNN's time). */
static inline int epi_fuse_kind(const epi_consts_t *k) {
    if (k->kind == DNNQ_DT_F32 && (k->post == EPI_NONE || k->post == EPI_RELU0))
        return 1 + EPI_FUSE_F32 + EPI_FUSE_CC + (k->post == EPI_RELU0 ? EPI_FUSE_RELU : 0);
    if (k->kind != DNNQ_DT_U8 && k->kind != DNNQ_DT_S8) return 0;
    if (k->post == EPI_CHAIN)
        return k->chain_regs ? 1 + EPI_FUSE_CHAIN + EPI_FUSE_CC +
                                   (k->kind == DNNQ_DT_S8 ? EPI_FUSE_S8 : 0) +
                                   (k->chain_noclamp ? EPI_FUSE_NOCLAMP : 0)
                             : 0;
    if (!(k->flags & EPI_F_NOCLAMP)) return 0;
    return 1 + (k->kind == DNNQ_DT_S8 ? EPI_FUSE_S8 : 0) + (k->post == EPI_RELU0 ? EPI_FUSE_RELU : 0) +
           (k->has_zp ? EPI_FUSE_ZP : 0) + (k->flags & EPI_F_NOCC ? 0 : EPI_FUSE_CC);
}

#include "epilogue_chain_avx512.h"

/* CCIN: the compensation is in the accumulators already (they started from it) */
DNNQ_ALWAYS_INLINE __m512i epi_fused_vec(const int FUSE, const int CCIN, const epi_consts_t *k,
                                         __m512i a, int j) {
    if (((FUSE - 1) & EPI_FUSE_CC) && !CCIN) a = _mm512_add_epi32(a, k->cc[j]);
    __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(a), k->sc[j]), k->bi[j]);
    if ((FUSE - 1) & EPI_FUSE_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
    v = _mm512_mul_ps(v, k->inv);
    if ((FUSE - 1) & EPI_FUSE_ZP) v = _mm512_add_ps(v, k->zp[j]);
    return _mm512_cvtps_epi32(v);
}

/* the f32 kinds (EPI_FUSE_F32): epi_value(DNNQ_DT_F32, NONE / RELU0, EPI_F_GENERAL) of vector
 * j, its compensation already in the accumulators when CCIN (the same integer sum) */
DNNQ_ALWAYS_INLINE void epi_fused_store_f32(const int FUSE, const int CCIN,
                                            const epi_consts_t *k, __m512i a, int j, char *o) {
    if (!CCIN) a = _mm512_add_epi32(a, k->cc[j]);
    __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(a), k->sc[j]), k->bi[j]);
    if ((FUSE - 1) & EPI_FUSE_RELU) v = _mm512_max_ps(v, _mm512_setzero_ps());
    v = _mm512_mul_ps(v, k->inv);
    if (k->has_zp) v = _mm512_add_ps(v, k->zp[j]); /* no "+ 0": -0.0 stays (epi_tail) */
    /* masked stores are slow on some cores (AMD Zen 4): only a partial last vector */
    if (k->full || k->km[j] == 0xFFFF) _mm512_storeu_ps(o + 64 * j, v);
    else _mm512_mask_storeu_ps(o + 64 * j, k->km[j], v);
}

/* one row: the four accumulator vectors (columns 0-15, ..., 48-63) -> 8-bit dst at o (f32 for
 * the EPI_FUSE_F32 kinds); only the first NCB hold columns (a panel of at most 16 NCB), the
 * others are not computed */
DNNQ_ALWAYS_INLINE void epi_fused_row(const int FUSE, const int CCIN, const int NCB,
                                      const epi_consts_t *k, __m512i a0, __m512i a1, __m512i a2,
                                      __m512i a3, char *o) {
    if ((FUSE - 1) & EPI_FUSE_F32) {
        epi_fused_store_f32(FUSE, CCIN, k, a0, 0, o);
        if (NCB > 1) epi_fused_store_f32(FUSE, CCIN, k, a1, 1, o);
        if (NCB > 2) epi_fused_store_f32(FUSE, CCIN, k, a2, 2, o);
        if (NCB > 3) epi_fused_store_f32(FUSE, CCIN, k, a3, 3, o);
        return;
    }
    const __m512i z = _mm512_setzero_si512();
    epi_pack_store8((FUSE - 1) & EPI_FUSE_S8, k, epi_fused_vec(FUSE, CCIN, k, a0, 0),
                    NCB > 1 ? epi_fused_vec(FUSE, CCIN, k, a1, 1) : z,
                    NCB > 2 ? epi_fused_vec(FUSE, CCIN, k, a2, 2) : z,
                    NCB > 3 ? epi_fused_vec(FUSE, CCIN, k, a3, 3) : z, o);
}

static void fast_epilogue_avx512(const dnnq_gemm_args_t *g, const epi_consts_t *k, int64_t m,
                                 int mr, const int32_t *tile) {
    char *d0 = k->d0 + m * k->ldd;
    /* every variant of the hot 8-bit case; the general one (all steps) for the rest */
#define EPI_8BIT(D, P)                                                                            \
    switch (k->flags) {                                                                           \
    case 0: epi_tile(D, P, 0, g, k, tile, mr, d0); break;                                         \
    case 1: epi_tile(D, P, 1, g, k, tile, mr, d0); break;                                         \
    case 2: epi_tile(D, P, 2, g, k, tile, mr, d0); break;                                         \
    case 3: epi_tile(D, P, 3, g, k, tile, mr, d0); break;                                         \
    case 4: epi_tile(D, P, 4, g, k, tile, mr, d0); break;                                         \
    case 5: epi_tile(D, P, 5, g, k, tile, mr, d0); break;                                         \
    case 6: epi_tile(D, P, 6, g, k, tile, mr, d0); break;                                         \
    default: epi_tile(D, P, 7, g, k, tile, mr, d0); break;                                        \
    }
#define EPI_CASE(D)                                                                               \
    case D:                                                                                       \
        if (k->post == EPI_NONE) { EPI_8BIT(D, EPI_NONE) }                                        \
        else if (k->post == EPI_RELU0) { EPI_8BIT(D, EPI_RELU0) }                                 \
        else if (k->chain_regs) ech_tile_rows(k, tile, mr, d0);                        \
        else epi_tile_chain(D, g, k, tile, mr, d0);                                               \
        break;
#define EPI_WIDE(D)                                                                               \
    case D:                                                                                       \
        if (k->post == EPI_NONE) epi_tile(D, EPI_NONE, EPI_F_GENERAL, g, k, tile, mr, d0);        \
        else if (k->post == EPI_RELU0) epi_tile(D, EPI_RELU0, EPI_F_GENERAL, g, k, tile, mr, d0); \
        else epi_tile_chain(D, g, k, tile, mr, d0);                                               \
        break;
    switch (k->kind) {
    EPI_WIDE(DNNQ_DT_F32) EPI_WIDE(DNNQ_DT_S32) EPI_CASE(DNNQ_DT_S8) EPI_CASE(DNNQ_DT_U8)
    case EPI_RAW: epi_tile(EPI_RAW, EPI_NONE, EPI_F_GENERAL, g, k, tile, mr, d0); break;
    }
#undef EPI_WIDE
#undef EPI_CASE
#undef EPI_8BIT
}
#define DNNQ_FAST_EPILOGUE fast_epilogue_avx512
#define DNNQ_FAST_SUM 1 /* it takes the chains of g->fast_epi_sum: sum post-ops (it reads the
                         * previous dst) and the GELUs too */
#define DNNQ_EPI_PREPARE epi_prepare_avx512
typedef epi_consts_t dnnq_epi_consts_t;
#endif
