/* Q((x + x * s) + y) of channels-last rows (see dnnq_toolkit.h, dnnq_scale_residual_args_t):
 * a squeeze-excitation residual on an f32 map, plus another map, quantized -- what the
 * pointwise engine's stages compute for it (x * s, + x, (f32(y) - y_zp) * y_scale, +, *
 * inv_dst_scale, + dst_zp, the saturating store), each operation rounded once in that order,
 * one pass with no stage buffers.  A tail goes through zero-padded copies of the same lanes,
 * so every vector width gives the same bits. */
#ifndef DNNQ_TK_SCALE_RESIDUAL_H
#define DNNQ_TK_SCALE_RESIDUAL_H
#include "tk_convert.h"

TK_INLINE void tk_sres_vec(const float *x, const float *s, const char *y, int ydt, char *d,
                           int ddt, tk_vf yz, tk_vf ys, tk_vf inv, tk_vf dz) {
    const tk_vf xv = tk_vf_loadu(x);
    tk_vf r = tk_vf_add(tk_vf_mul(xv, tk_vf_loadu(s)), xv);
    if (ydt == DNNQ_DT_F32)
        r = tk_vf_add(r, tk_vf_loadu((const float *)y));
    else if (ydt >= 0)
        r = tk_vf_add(r, tk_vf_mul(tk_vf_sub(tk_vf_load_dt(y, ydt), yz), ys));
    tk_vf_store_dt(d, ddt, tk_vf_add(tk_vf_mul(r, inv), dz));
}

void DNNQ_TK_FN(dnnq_scale_residual_run)(const dnnq_scale_residual_args_t *a, int64_t r0,
                                         int64_t r1) {
    const int64_t n = a->len, nfull = n - n % TK_VF;
    const int ydt = a->y ? a->y_dt : -1, ddt = a->dst_dt;
    const int yes = ydt >= 0 ? tk_esize(ydt) : 0, des = tk_esize(ddt);
    const tk_vf yz = tk_vf_set1(a->y_zp), ys = tk_vf_set1(a->y_scale),
                inv = tk_vf_set1(a->inv_dst_scale), dz = tk_vf_set1(a->dst_zp);
    const float *const s = a->s;
    float tx[TK_VF], tsv[TK_VF], ty[TK_VF];
    char td[4 * TK_VF];
    for (int64_t r = r0; r < r1; ++r) {
        const float *x = a->x + r * a->x_rs;
        const char *y = ydt >= 0 ? a->y + r * a->y_rs * yes : NULL;
        char *d = a->dst + r * a->dst_rs * des;
        for (int64_t i = 0; i < nfull; i += TK_VF)
            tk_sres_vec(x + i, s + i, y ? y + i * yes : NULL, ydt, d + i * des, ddt, yz, ys,
                        inv, dz);
        if (nfull < n) {
            const int rem = (int)(n - nfull);
            memset(tx, 0, sizeof tx);
            memset(tsv, 0, sizeof tsv);
            memset(ty, 0, sizeof ty);
            memcpy(tx, x + nfull, (size_t)rem * sizeof(float));
            memcpy(tsv, s + nfull, (size_t)rem * sizeof(float));
            if (y) memcpy(ty, y + nfull * yes, (size_t)rem * yes);
            tk_sres_vec(tx, tsv, y ? (const char *)ty : NULL, ydt, td, ddt, yz, ys, inv, dz);
            memcpy(d + nfull * des, td, (size_t)rem * des);
        }
    }
}
#endif
