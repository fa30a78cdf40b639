/* Softmax / log-softmax over one axis (see dnnq_toolkit.h). */
#ifndef DNNQ_TK_SOFTMAX_H
#define DNNQ_TK_SOFTMAX_H
#include "tk_convert.h"

/* ---- the vector form (vector_exp) ---------------------------------------------------------
 * exp(x) for x <= 0 (the row minus its max) to about 2 ulp: Cephes' expf polynomial with fused
 * multiply-adds, scaled by 2^(n + 64) then 2^-64 (exact for normal results, one rounding for
 * the subnormal ones; below -104 the result is 0 or the smallest subnormal anyway).  Written
 * once over tk_vec.h's lanes: the same IEEE operations in the same order at every width (the
 * portable build's fmaf rounds once, as vfmadd does), so every level gives the same bits; a
 * NaN stays a NaN. */
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

TK_INLINE tk_vf tk_exp_le0(tk_vf x) {
    /* x > lo ? x : lo: a NaN lane is computed as lo, its result replaced by the NaN below */
    const tk_vf xl = tk_vf_max(x, tk_vf_set1(TK_EXP_LO));
    const tk_vi n = tk_vi_rne(tk_vf_mul(xl, tk_vf_set1(TK_EXP_LOG2E)));
    const tk_vf nf = tk_vf_from_vi(n);
    tk_vf r = tk_vf_fma(nf, tk_vf_set1(-TK_EXP_C1), xl);
    r = tk_vf_fma(nf, tk_vf_set1(-TK_EXP_C2), r);
    const tk_vf z = tk_vf_mul(r, r);
    tk_vf p = tk_vf_fma(tk_vf_set1(TK_EXP_P0), r, tk_vf_set1(TK_EXP_P1));
    p = tk_vf_fma(p, r, tk_vf_set1(TK_EXP_P2));
    p = tk_vf_fma(p, r, tk_vf_set1(TK_EXP_P3));
    p = tk_vf_fma(p, r, tk_vf_set1(TK_EXP_P4));
    p = tk_vf_fma(p, r, tk_vf_set1(TK_EXP_P5));
    const tk_vf y = tk_vf_add(tk_vf_fma(p, z, r), tk_vf_set1(1.0f));
    const tk_vf e = tk_vf_mul(tk_vf_mul(y, tk_vf_exp2i(n, 64)), tk_vf_set1(TK_EXP_TWO_M64));
    return tk_vf_nan_or(x, e);
}

/* w[i] = exp(x[i] - m) for i < L (x may be w), and their sum in a fixed order: 16 partial
 * sums, element i into sum (i mod 16) in order of i, then ((s_k + s_k+8) + (s_k+4 + ...)) as a
 * tree (below); the same order at every width. */
#define TK_SM_LANES 16
static float tk_softmax_exp_sum(const float *x, float *w, int64_t L, float m) {
    float part[TK_SM_LANES] __attribute__((aligned(64))) = {0};
    float tail[TK_SM_LANES] __attribute__((aligned(64)));
    tk_vf acc[TK_SM_LANES / TK_VF];
    const tk_vf vm = tk_vf_set1(m);
    for (int k = 0; k < TK_SM_LANES / TK_VF; ++k) acc[k] = tk_vf_set1(0.0f);
    int64_t i = 0;
    for (; i + TK_SM_LANES <= L; i += TK_SM_LANES)
        for (int k = 0; k < TK_SM_LANES / TK_VF; ++k) {
            const tk_vf e = tk_exp_le0(tk_vf_sub(tk_vf_loadu(x + i + k * TK_VF), vm));
            tk_vf_storeu(w + i + k * TK_VF, e);
            acc[k] = tk_vf_add(acc[k], e);
        }
    for (int k = 0; k < TK_SM_LANES / TK_VF; ++k) tk_vf_storeu(part + k * TK_VF, acc[k]);
    if (i < L) { /* the tail: lanes 0 .. L % 16 - 1, through a padded block */
        const int rem = (int)(L - i);
        for (int k = 0; k < TK_SM_LANES; ++k) tail[k] = k < rem ? x[i + k] : m;
        for (int k = 0; k < TK_SM_LANES / TK_VF; ++k)
            tk_vf_storeu(tail + k * TK_VF,
                         tk_exp_le0(tk_vf_sub(tk_vf_loadu(tail + k * TK_VF), vm)));
        for (int k = 0; k < rem; ++k) {
            w[i + k] = tail[k];
            part[k] += tail[k];
        }
    }
    for (int k = 0; k < 8; ++k) part[k] += part[k + 8];
    for (int k = 0; k < 4; ++k) part[k] += part[k + 4];
    for (int k = 0; k < 2; ++k) part[k] += part[k + 2];
    return part[0] + part[1];
}

/* max(w[0 .. L)) as `m = w[i] > m ? w[i] : m` from m = w[0] gives it: the largest value that is
 * not a NaN, or NaN when w[0] is one.  TK_SM_LANES running maxima (maxps is that rule) then
 * combined by it: the same value (a zero's sign aside, which exp(w - m) does not see), without
 * a chain of L dependent compares (60 rows of 6625 classes: 0.6 -> 0.1 ms). */
static float tk_row_max(const float *restrict w, int64_t L) {
    const tk_vf first = tk_vf_set1(w[0]);
    tk_vf mx[TK_SM_LANES / TK_VF];
    float lanes[TK_SM_LANES] __attribute__((aligned(64)));
    for (int k = 0; k < TK_SM_LANES / TK_VF; ++k) mx[k] = first;
    int64_t i = 0;
    for (; i + TK_SM_LANES <= L; i += TK_SM_LANES)
        for (int k = 0; k < TK_SM_LANES / TK_VF; ++k)
            mx[k] = tk_vf_max(tk_vf_loadu(w + i + k * TK_VF), mx[k]);
    for (int k = 0; k < TK_SM_LANES / TK_VF; ++k) tk_vf_storeu(lanes + k * TK_VF, mx[k]);
    float m = w[0];
    for (int k = 0; k < TK_SM_LANES; ++k) m = lanes[k] > m ? lanes[k] : m;
    for (; i < L; ++i) m = w[i] > m ? w[i] : m;
    return m;
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
        char *d = a->dst + dof * des;
        /* an f32 row in place (no copy into w), and an f32 destination row written by the
         * division (no store pass): the vector path's common case, the same operations */
        const int direct = a->vector_exp && !a->logsoftmax && a->src_dt == DNNQ_DT_F32 &&
                           a->src_as == 1;
        const int direct_out = a->vector_exp && !a->logsoftmax && a->dst_dt == DNNQ_DT_F32 &&
                               a->dst_as == 1 && a->scale == 1.0f && a->inv_dst_scale == 1.0f;
        const float *x = direct ? (const float *)(const void *)s : w;
        if (!direct)
            for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
                const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
                tk_load(w + i0, s + i0 * a->src_as * ses, a->src_dt, a->src_as, n);
            }
        const float m = tk_row_max(x, L);
        float sum = 0.0f;
        if (a->logsoftmax) {
            for (int64_t i = 0; i < L; ++i) {
                w[i] = w[i] - m;
                sum += expf(w[i]);
            }
            const float ls = logf(sum);
            for (int64_t i = 0; i < L; ++i) w[i] = w[i] - ls;
        } else if (a->vector_exp) {
            sum = tk_softmax_exp_sum(x, w, L, m);
            if (direct_out) {
                float *o = (float *)(void *)d;
                for (int64_t i = 0; i < L; ++i) o[i] = w[i] / sum;
                continue;
            }
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
        for (int64_t i0 = 0; i0 < L; i0 += TK_CH) {
            const int n = (int)(L - i0 < TK_CH ? L - i0 : TK_CH);
            tk_store(d + i0 * a->dst_as * des, a->dst_dt, a->dst_as, w + i0, n);
        }
    }
    return 0;
}
#endif
