/* Softmax / log-softmax over one axis (see dnnq_toolkit.h). */
#ifndef DNNQ_TK_SOFTMAX_H
#define DNNQ_TK_SOFTMAX_H
#include "tk_convert.h"

/* ---- the vector form (vector_exp) ---------------------------------------------------------
 * exp(x) for x <= 0 (the row minus its max) to about 2 ulp: Cephes' expf polynomial with fused
 * multiply-adds, scaled by 2^(n + 64) then 2^-64 (exact for normal results, one rounding for
 * the subnormal ones; below -104 the result is 0 or the smallest subnormal anyway).  The same
 * IEEE operations in the same order at every width (the portable build's fmaf rounds once,
 * as vfmadd does), so every level gives the same bits; a NaN stays a NaN. */
#define TK_EXP_LO -104.0f
#define TK_EXP_LOG2E 1.44269504088896341f
#define TK_EXP_C1 0.693359375f
#define TK_EXP_C2 -2.12194440e-4f
#define TK_EXP_P0 1.9875691500e-4f
#define TK_EXP_P1 1.3981999507e-3f
#define TK_EXP_P2 8.3334519073e-3f
#define TK_EXP_P3 4.1665795894e-2f
#define TK_EXP_P4 1.6666665459e-1f
#define TK_EXP_P5 5.0000001201e-1f
#define TK_EXP_TWO_M64 5.42101086242752217e-20f /* 2^-64 */

static inline float tk_exp_le0_1(float x) {
    if (x != x) return x;
    x = TK_EXP_LO > x ? TK_EXP_LO : x;
    const float nf = nearbyintf(x * TK_EXP_LOG2E);
    float r = fmaf(nf, -TK_EXP_C1, x);
    r = fmaf(nf, -TK_EXP_C2, r);
    const float z = r * r;
    float p = fmaf(TK_EXP_P0, r, TK_EXP_P1);
    p = fmaf(p, r, TK_EXP_P2);
    p = fmaf(p, r, TK_EXP_P3);
    p = fmaf(p, r, TK_EXP_P4);
    p = fmaf(p, r, TK_EXP_P5);
    float y = fmaf(p, z, r) + 1.0f;
    const uint32_t bits = (uint32_t)((int32_t)nf + 64 + 127) << 23;
    float s1;
    memcpy(&s1, &bits, 4);
    return (y * s1) * TK_EXP_TWO_M64;
}

#if TK_VEC == 512
static inline __m512 tk_exp_le0_v(__m512 x) {
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512 xc = _mm512_max_ps(_mm512_set1_ps(TK_EXP_LO), x); /* lo > x ? lo : x */
    const __m512 nf = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(TK_EXP_LOG2E)),
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-TK_EXP_C1), xc);
    r = _mm512_fmadd_ps(nf, _mm512_set1_ps(-TK_EXP_C2), r);
    const __m512 z = _mm512_mul_ps(r, r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(TK_EXP_P0), r, _mm512_set1_ps(TK_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TK_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TK_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TK_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(TK_EXP_P5));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, z, r), _mm512_set1_ps(1.0f));
    const __m512i n = _mm512_cvtps_epi32(nf); /* exact: nf is an integer */
    const __m512 s1 = _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(64 + 127)), 23));
    const __m512 e = _mm512_mul_ps(_mm512_mul_ps(y, s1), _mm512_set1_ps(TK_EXP_TWO_M64));
    return _mm512_mask_mov_ps(e, nan, x);
}
#elif TK_VEC == 256
static inline __m256 tk_exp_le0_v(__m256 x) {
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    const __m256 xc = _mm256_max_ps(_mm256_set1_ps(TK_EXP_LO), x);
    const __m256 nf = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(TK_EXP_LOG2E)),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fmadd_ps(nf, _mm256_set1_ps(-TK_EXP_C1), xc);
    r = _mm256_fmadd_ps(nf, _mm256_set1_ps(-TK_EXP_C2), r);
    const __m256 z = _mm256_mul_ps(r, r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(TK_EXP_P0), r, _mm256_set1_ps(TK_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(TK_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(TK_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(TK_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(TK_EXP_P5));
    const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, z, r), _mm256_set1_ps(1.0f));
    const __m256i n = _mm256_cvtps_epi32(nf);
    const __m256 s1 = _mm256_castsi256_ps(
        _mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(64 + 127)), 23));
    const __m256 e = _mm256_mul_ps(_mm256_mul_ps(y, s1), _mm256_set1_ps(TK_EXP_TWO_M64));
    return _mm256_blendv_ps(e, x, nan);
}
#endif

/* w[i] = exp(w[i] - m) for i < L, and their sum in a fixed order: 16 partial sums, element i
 * into sum (i mod 16) in order of i, then ((s_k + s_k+8) + (s_k+4 + ...)) as a tree (below);
 * the same order at every width. */
#define TK_SM_LANES 16
static float tk_softmax_exp_sum(float *restrict w, int64_t L, float m) {
    float part[TK_SM_LANES] __attribute__((aligned(64))) = {0};
    int64_t i = 0;
#if TK_VEC == 512
    __m512 acc = _mm512_setzero_ps();
    const __m512 vm = _mm512_set1_ps(m);
    for (; i + 16 <= L; i += 16) {
        const __m512 e = tk_exp_le0_v(_mm512_sub_ps(_mm512_loadu_ps(w + i), vm));
        _mm512_storeu_ps(w + i, e);
        acc = _mm512_add_ps(acc, e);
    }
    _mm512_store_ps(part, acc);
#elif TK_VEC == 256
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const __m256 vm = _mm256_set1_ps(m);
    for (; i + 16 <= L; i += 16) {
        const __m256 e0 = tk_exp_le0_v(_mm256_sub_ps(_mm256_loadu_ps(w + i), vm));
        const __m256 e1 = tk_exp_le0_v(_mm256_sub_ps(_mm256_loadu_ps(w + i + 8), vm));
        _mm256_storeu_ps(w + i, e0);
        _mm256_storeu_ps(w + i + 8, e1);
        acc0 = _mm256_add_ps(acc0, e0);
        acc1 = _mm256_add_ps(acc1, e1);
    }
    _mm256_store_ps(part, acc0);
    _mm256_store_ps(part + 8, acc1);
#else
    for (; i + 16 <= L; i += 16)
        for (int k = 0; k < TK_SM_LANES; ++k) {
            w[i + k] = tk_exp_le0_1(w[i + k] - m);
            part[k] += w[i + k];
        }
#endif
    for (int k = 0; i < L; ++i, ++k) { /* the tail: lanes 0 .. L % 16 - 1 */
        w[i] = tk_exp_le0_1(w[i] - m);
        part[k] += w[i];
    }
    for (int k = 0; k < 8; ++k) part[k] += part[k + 8];
    for (int k = 0; k < 4; ++k) part[k] += part[k + 4];
    for (int k = 0; k < 2; ++k) part[k] += part[k + 2];
    return part[0] + part[1];
}

int DNNQ_TK_FN(dnnq_softmax_run)(const dnnq_softmax_args_t *a, int64_t it0, int64_t it1,
                                 float *w) {
    const int64_t L = a->axis_len;
    const int ses = tk_esize(a->src_dt), des = tk_esize(a->dst_dt);
    for (int64_t r = it0; r < it1; ++r) {
        int64_t q = r, so = 0, dof = 0;
        for (int d = a->ndims - 1; d >= 0; --d) {
            const int64_t idx = q % a->dims[d];
            q /= a->dims[d];
            so += idx * a->src_st[d];
            dof += idx * a->dst_st[d];
        }
        const char *s = a->src + so * ses;
        for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
            const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
            tk_load(w + i0, s + i0 * a->src_as * ses, a->src_dt, a->src_as, n);
        }
        float m = w[0];
        for (int64_t i = 1; i < L; ++i) m = w[i] > m ? w[i] : m;
        float sum = 0.0f;
        if (a->logsoftmax) {
            for (int64_t i = 0; i < L; ++i) {
                w[i] = w[i] - m;
                sum += expf(w[i]);
            }
            const float ls = logf(sum);
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] - ls;
        } else if (a->vector_exp) {
            sum = tk_softmax_exp_sum(w, L, m);
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] / sum;
        } else {
            for (int64_t i = 0; i < L; ++i) {
                w[i] = expf(w[i] - m);
                sum += w[i];
            }
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] / sum;
        }
        const float sc = a->scale, inv = a->inv_dst_scale;
        if (sc != 1.0f) for (int64_t i = 0; i < L; ++i) w[i] = w[i] * sc;
        if (inv != 1.0f) for (int64_t i = 0; i < L; ++i) w[i] = w[i] * inv;
        char *d = a->dst + dof * des;
        for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
            const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
            tk_store(d + i0 * a->dst_as * des, a->dst_dt, a->dst_as, w + i0, n);
        }
    }
    return 0;
}
#endif
