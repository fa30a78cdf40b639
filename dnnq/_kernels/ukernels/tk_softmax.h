/* Softmax / log-softmax over one axis (see dnnq_toolkit.h). */
#ifndef DNNQ_TK_SOFTMAX_H
#define DNNQ_TK_SOFTMAX_H
#include "tk_convert.h"

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
