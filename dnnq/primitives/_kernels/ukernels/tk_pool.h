/* Pooling (see dnnq_toolkit.h): the generic kernels (channels-last tap lists with vector
 * channel blocks; plain rows tap-major, or output-major for kernels wider than a chunk) whose
 * f32 values go through the pointwise epilogue (post-ops + store), and the driver choosing
 * them, the direct int8 kernels (tk_pool8*.h) or the byte-stream sums (tk_pool_stream8.h). */
#ifndef DNNQ_TK_POOL_H
#define DNNQ_TK_POOL_H
#include "tk_pointwise.h"
#include "tk_pool_common.h"
#include "tk_pool8_fused.h"
#include "tk_pool_stream8.h"

/* channels-last: taps are rows of C elements; acc over the taps for channels [c0, c0+nc).
 * Vector blocks keep the accumulator in a register across the taps; the remaining channels go
 * element by element.  Each returns the number of channels done. */
#if TK_VEC
#define TK_CLV_MAX(NAME, T, MAXOP, INIT)                                                      \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, T *acc) {                                                  \
        const int W = (int)(TK_VB / sizeof(T)); /* channels per vector */                     \
        int b = 0;                                                                            \
        for (; b + W <= nc; b += W) {                                                         \
            tk_vb m = INIT;                                                                   \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = MAXOP(m, tk_vb_loadu((const T *)src + tap[t] + c0 + b));                  \
            tk_vb_storeu(acc + b, m);                                                         \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CLV_MAX(tk_clv_max_s8, int8_t, tk_vb_max_s8, tk_vb_set1_8(-128))
TK_CLV_MAX(tk_clv_max_u8, uint8_t, tk_vb_max_u8, tk_vb_zero())
TK_CLV_MAX(tk_clv_max_s32, int32_t, tk_vb_max_s32, tk_vb_set1_32(INT32_MIN))
static inline int tk_clv_max_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + TK_VF <= nc; b += TK_VF) {
        tk_vf m = tk_vf_set1(TK_LOWEST_F32);
        for (int t = 0; t < ntap; ++t) /* max(s, acc): a NaN tap keeps acc, as s > a ? s : a */
            m = tk_vf_max(tk_vf_loadu((const float *)src + tap[t] + c0 + b), m);
        tk_vf_storeu(acc + b, m);
    }
    return b;
}
/* sums in s32 lanes (s32 sources: wrapping, as the unsigned scalar loop) */
#define TK_CLV_SUM(NAME, T, ACC_T, LOAD)                                                      \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, ACC_T *acc) {                                              \
        int b = 0;                                                                            \
        for (; b + TK_VF <= nc; b += TK_VF) {                                                 \
            tk_vi m = tk_vb_zero();                                                           \
            for (int t = 0; t < ntap; ++t)                                                    \
                m = tk_vb_add_32(m, LOAD((const T *)src + tap[t] + c0 + b));                  \
            tk_vi_storeu(acc + b, m);                                                         \
        }                                                                                     \
        return b;                                                                             \
    }
TK_CLV_SUM(tk_clv_sum_s8, int8_t, int32_t, tk_vi_from_s8)
TK_CLV_SUM(tk_clv_sum_u8, uint8_t, int32_t, tk_vi_from_u8)
TK_CLV_SUM(tk_clv_sum_s32, int32_t, uint32_t, tk_vi_loadu)
static inline int tk_clv_sum_f32(const char *src, const int64_t *tap, int ntap, int64_t c0,
                                 int nc, float *acc) {
    int b = 0;
    for (; b + TK_VF <= nc; b += TK_VF) {
        tk_vf m = tk_vf_set1(0.0f);
        for (int t = 0; t < ntap; ++t)
            m = tk_vf_add(m, tk_vf_loadu((const float *)src + tap[t] + c0 + b));
        tk_vf_storeu(acc + b, m);
    }
    return b;
}
#else /* scalar lanes: the element loops below (tap-outer, vectorisable) do everything */
#define TK_CLV_NONE(NAME, T)                                                                  \
    static inline int NAME(const char *src, const int64_t *tap, int ntap, int64_t c0,         \
                           int nc, T *acc) {                                                  \
        (void)src; (void)tap; (void)ntap; (void)c0; (void)nc; (void)acc;                      \
        return 0;                                                                             \
    }
TK_CLV_NONE(tk_clv_max_s8, int8_t)
TK_CLV_NONE(tk_clv_max_u8, uint8_t)
TK_CLV_NONE(tk_clv_max_s32, int32_t)
TK_CLV_NONE(tk_clv_max_f32, float)
TK_CLV_NONE(tk_clv_sum_s8, int32_t)
TK_CLV_NONE(tk_clv_sum_u8, int32_t)
TK_CLV_NONE(tk_clv_sum_s32, uint32_t)
TK_CLV_NONE(tk_clv_sum_f32, float)
#endif

#define TK_POOL_CL(T, ACC_T, SUFFIX)                                                          \
    static void tk_pool_cl_max_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, T *restrict acc, T lowest) {      \
        const int nb = tk_clv_max_##SUFFIX(src, tap, ntap, c0, nc, acc);                      \
        for (int c = nb; c < nc; ++c) acc[c] = lowest;                                        \
        for (int t = 0; t < ntap && nb < nc; ++t) {                                           \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = nb; c < nc; ++c) acc[c] = s[c] > acc[c] ? s[c] : acc[c];             \
        }                                                                                     \
    }                                                                                         \
    static void tk_pool_cl_sum_##SUFFIX(const char *src, const int64_t *tap, int ntap,        \
                                        int64_t c0, int nc, ACC_T *restrict acc) {            \
        const int nb = tk_clv_sum_##SUFFIX(src, tap, ntap, c0, nc, acc);                      \
        for (int c = nb; c < nc; ++c) acc[c] = 0;                                             \
        for (int t = 0; t < ntap && nb < nc; ++t) {                                           \
            const T *restrict s = (const T *)src + tap[t] + c0;                               \
            for (int c = nb; c < nc; ++c) acc[c] = (ACC_T)(acc[c] + (ACC_T)s[c]);             \
        }                                                                                     \
    }
TK_POOL_CL(uint8_t, int32_t, u8)
TK_POOL_CL(int8_t, int32_t, s8)
TK_POOL_CL(int32_t, uint32_t, s32) /* s32 sums wrap (unsigned) */
TK_POOL_CL(float, float, f32)

/* plain: one (n, c, d, h) row: taps are rows of the input plane, strided by SW along ow */
#define TK_POOL_ROW(T, ACC_T, SUFFIX)                                                         \
    static void tk_pool_row_max_##SUFFIX(const T *restrict srow, int64_t o0, int64_t olo,     \
                                         int64_t ohi, int64_t SW, int64_t off,                \
                                         T *restrict acc) {                                   \
        for (int64_t o = olo; o < ohi; ++o) {                                                 \
            const T v = srow[o * SW + off];                                                   \
            acc[o - o0] = v > acc[o - o0] ? v : acc[o - o0];                                  \
        }                                                                                     \
    }                                                                                         \
    static void tk_pool_row_sum_##SUFFIX(const T *restrict srow, int64_t o0, int64_t olo,     \
                                         int64_t ohi, int64_t SW, int64_t off,                \
                                         ACC_T *restrict acc) {                               \
        for (int64_t o = olo; o < ohi; ++o)                                                   \
            acc[o - o0] = (ACC_T)(acc[o - o0] + (ACC_T)srow[o * SW + off]);                   \
    }
TK_POOL_ROW(uint8_t, int32_t, u8)
TK_POOL_ROW(int8_t, int32_t, s8)
TK_POOL_ROW(int32_t, uint32_t, s32)
TK_POOL_ROW(float, float, f32)

/* plain layout, one (n, c, od, oh) row, outputs [o0, o0 + no): taps in (d, h, w) order for
 * every output (the f32 sums round as oneDNN's).  KW <= TK_CH: tap-major (each kw over the
 * outputs it reaches, ranges precomputed); a larger kernel: output-major over each output's
 * valid columns (work and memory follow the taps inside the source, never KW). */
#define TK_POOL_ROW_DISPATCH(FN_SUM, FN_MAX, ...)                                             \
    switch (dt + 4 * is_max) {                                                                \
    case DNNQ_DT_U8: FN_SUM##_u8((const uint8_t *)srow, __VA_ARGS__, acc->i); break;          \
    case DNNQ_DT_S8: FN_SUM##_s8((const int8_t *)srow, __VA_ARGS__, acc->i); break;           \
    case DNNQ_DT_S32: FN_SUM##_s32((const int32_t *)srow, __VA_ARGS__, acc->u); break;        \
    case DNNQ_DT_F32: FN_SUM##_f32((const float *)srow, __VA_ARGS__, acc->f); break;          \
    case DNNQ_DT_U8 + 4: FN_MAX##_u8((const uint8_t *)srow, __VA_ARGS__, acc->b); break;      \
    case DNNQ_DT_S8 + 4: FN_MAX##_s8((const int8_t *)srow, __VA_ARGS__, acc->c); break;       \
    case DNNQ_DT_S32 + 4: FN_MAX##_s32((const int32_t *)srow, __VA_ARGS__, acc->i); break;    \
    default: FN_MAX##_f32((const float *)srow, __VA_ARGS__, acc->f); break;                   \
    }

static void tk_pool_plain_chunk(const dnnq_pool_args_t *a, const char *pl, int64_t od,
                                int64_t oh, int64_t o0, int no, tk_acc_t *acc,
                                int32_t *restrict cntw) {
    const int is_max = a->alg == DNNQ_POOL_MAX, dt = a->src_dt, es = tk_esize(dt);
    int64_t dlo, dhi, hlo, hhi;
    tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
    tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
    if (a->KW <= TK_CH) {
        int64_t kwr[2 * TK_CH];
        for (int i = 0; i < no; ++i) cntw[i] = 0;
        /* valid outputs [olo, ohi) of each kw inside the chunk (0 <= o*SW - PW + kw*DW < IW) */
        for (int64_t kw = 0; kw < a->KW; ++kw) {
            const int64_t base = kw * a->DW - a->PW;
            int64_t olo = base >= 0 ? 0 : (-base + a->SW - 1) / a->SW;
            const int64_t lastnum = a->IW - 1 - base;
            int64_t ohi = lastnum < 0 ? 0 : lastnum / a->SW + 1;
            if (olo < o0) olo = o0;
            if (ohi > o0 + no) ohi = o0 + no;
            if (ohi < olo) ohi = olo;
            kwr[2 * kw] = olo;
            kwr[2 * kw + 1] = ohi;
            for (int64_t o = olo; o < ohi; ++o) cntw[o - o0] += 1;
        }
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                const char *srow = pl + (id * a->IH + ih) * a->IW * es;
                for (int64_t kw = 0; kw < a->KW; ++kw) {
                    const int64_t olo = kwr[2 * kw], ohi = kwr[2 * kw + 1];
                    if (olo >= ohi) continue;
                    const int64_t base = kw * a->DW - a->PW;
                    TK_POOL_ROW_DISPATCH(tk_pool_row_sum, tk_pool_row_max, o0, olo, ohi, a->SW,
                                         base)
                }
            }
        }
        return;
    }
    for (int i = 0; i < no; ++i) {
        int64_t wlo, whi;
        const int64_t o = o0 + i;
        tk_tap_range(o, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
        cntw[i] = (int32_t)(whi - wlo);
        /* column o*SW - PW + kw*DW = (o*SW - PW + wlo*DW) + t*DW: one output, "SW" = DW */
        const int64_t first = o * a->SW - a->PW + wlo * a->DW;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                const char *srow = pl + ((id * a->IH + ih) * a->IW + first) * es;
                switch (dt + 4 * is_max) { /* the taps of output o in order */
#define TK_OM(T, OP)                                                                          \
    for (int64_t t = 0; t < whi - wlo; ++t) {                                                 \
        const T v = ((const T *)srow)[t * a->DW];                                             \
        OP;                                                                                   \
    }                                                                                         \
    break;
                case DNNQ_DT_U8: TK_OM(uint8_t, acc->i[i] += v)
                case DNNQ_DT_S8: TK_OM(int8_t, acc->i[i] += v)
                case DNNQ_DT_S32: TK_OM(int32_t, acc->u[i] += (uint32_t)v)
                case DNNQ_DT_F32: TK_OM(float, acc->f[i] = acc->f[i] + v)
                case DNNQ_DT_U8 + 4: TK_OM(uint8_t, acc->b[i] = v > acc->b[i] ? v : acc->b[i])
                case DNNQ_DT_S8 + 4: TK_OM(int8_t, acc->c[i] = v > acc->c[i] ? v : acc->c[i])
                case DNNQ_DT_S32 + 4: TK_OM(int32_t, acc->i[i] = v > acc->i[i] ? v : acc->i[i])
                default: TK_OM(float, acc->f[i] = v > acc->f[i] ? v : acc->f[i])
#undef TK_OM
                }
            }
        }
    }
}

int DNNQ_TK_FN(dnnq_pool_run)(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    tk_acc_t acc __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    const dnnq_pw_plan_t *epi = &a->epi;
    int64_t *off = epi->n_opnds <= TK_OFF_STACK ? off_stack
                                                 : (int64_t *)malloc(sizeof(int64_t) * epi->n_opnds);
    if (!off) return DNNQ_TK_ENOMEM;
    const int is_max = a->alg == DNNQ_POOL_MAX;
    const int dt = a->src_dt;
    const int64_t C = a->C;
    int status = 0;
    if (tk_pool8_fast_ok(a)) {
#ifdef TK_P8F_VEC
        if (!is_max && a->window <= TK_P8_FUSE_MAX && C >= TK_P8_FUSE_MINC)
            tk_pool8_favg(a, it0, it1);
        else
#endif
        status = tk_pool8_fast(a, it0, it1);
    } else if (a->stream8) {
        uint32_t *sums = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)C);
        if (!sums) { if (off != off_stack) free(off); return DNNQ_TK_ENOMEM; }
        tk_out_pos_t o = tk_out_pos(a, it0);
        for (int64_t r = it0; r < it1; ++r, tk_out_next(a, &o)) {
            tk_ps_win_t w;
            tk_ps_window(a, o.n, o.od, o.oh, o.ow, &w);
            tk_ps_sums(a, &w, 0, w.nrows, sums);
            tk_ps_store(a, r, w.ntap, sums, buf, tmp, off);
        }
        free(sums);
    } else if (a->channels_last) {
        /* the taps of one window inside the source: at most max_taps (< 2^31) */
        int64_t *tap = (int64_t *)malloc(sizeof(int64_t) * (size_t)(a->max_taps > 0 ? a->max_taps : 1));
        if (!tap) { if (off != off_stack) free(off); return DNNQ_TK_ENOMEM; }
        tk_out_pos_t o = tk_out_pos(a, it0);
        for (int64_t r = it0; r < it1; ++r, tk_out_next(a, &o)) {
            const int64_t n = o.n, od = o.od, oh = o.oh, ow = o.ow;
            int64_t dlo, dhi, hlo, hhi, wlo, whi;
            tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
            tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
            tk_tap_range(ow, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
            int ntap = 0;
            for (int64_t kd = dlo; kd < dhi; ++kd) {
                const int64_t id = od * a->SD - a->PD + kd * a->DD;
                for (int64_t kh = hlo; kh < hhi; ++kh) {
                    const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                    for (int64_t kw = wlo; kw < whi; ++kw) {
                        const int64_t iw = ow * a->SW - a->PW + kw * a->DW;
                        tap[ntap++] = (((n * a->ID + id) * a->IH + ih) * a->IW + iw) * C;
                    }
                }
            }
            const float cnt = a->alg == DNNQ_POOL_AVG_INC ? a->count_inc : (float)ntap;
            for (int64_t c0 = 0; c0 < C; c0 += TK_CH) {
                const int nc = (int)(C - c0 < TK_CH ? C - c0 : TK_CH);
                if (is_max) {
                    switch (dt) {
                    case DNNQ_DT_U8: tk_pool_cl_max_u8(a->src, tap, ntap, c0, nc, acc.b, 0); break;
                    case DNNQ_DT_S8: tk_pool_cl_max_s8(a->src, tap, ntap, c0, nc, acc.c, -128); break;
                    case DNNQ_DT_S32:
                        tk_pool_cl_max_s32(a->src, tap, ntap, c0, nc, acc.i, INT32_MIN);
                        break;
                    default: tk_pool_cl_max_f32(a->src, tap, ntap, c0, nc, acc.f, TK_LOWEST_F32);
                    }
                    if (a->raw_store) {
                        tk_raw_store(dt, a->dst, r * C + c0, &acc, nc);
                        continue;
                    }
                } else {
                    switch (dt) {
                    case DNNQ_DT_U8: tk_pool_cl_sum_u8(a->src, tap, ntap, c0, nc, acc.i); break;
                    case DNNQ_DT_S8: tk_pool_cl_sum_s8(a->src, tap, ntap, c0, nc, acc.i); break;
                    case DNNQ_DT_S32: tk_pool_cl_sum_s32(a->src, tap, ntap, c0, nc, acc.u); break;
                    default: tk_pool_cl_sum_f32(a->src, tap, ntap, c0, nc, acc.f);
                    }
                }
                float *v = buf[0];
                tk_acc_to_f32(dt, is_max, &acc, v, nc);
                if (!is_max && a->avg_rcp) {
                    const float rcp = 1.0f / cnt;
                    for (int i = 0; i < nc; ++i) v[i] = v[i] * rcp;
                } else if (!is_max) {
                    for (int i = 0; i < nc; ++i) v[i] = v[i] / cnt;
                }
                tk_epilogue(epi, r, c0, nc, buf, tmp, off);
            }
        }
        free(tap);
    } else {
        const int64_t OW = a->OW;
        const int64_t plane = a->ID * a->IH * a->IW;
        const int es = tk_esize(dt);
        int32_t cntw[TK_CH];
        int64_t oh = it0 % a->OH, od = it0 / a->OH % a->OD, nc_ = it0 / (a->OH * a->OD);
        for (int64_t r = it0; r < it1; ++r) {
            if (r != it0 && ++oh == a->OH) { /* advance (n * C + c, od, oh) */
                oh = 0;
                if (++od == a->OD) { od = 0; ++nc_; }
            }
            const char *pl = a->src + nc_ * plane * es;
            int64_t dlo, dhi, hlo, hhi;
            tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
            tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
            const int64_t ndh = (dhi - dlo) * (hhi - hlo);
            for (int64_t o0 = 0; o0 < OW; o0 += TK_CH) {
                const int no = (int)(OW - o0 < TK_CH ? OW - o0 : TK_CH);
                if (is_max) {
                    switch (dt) {
                    case DNNQ_DT_U8: memset(acc.b, 0, (size_t)no); break;
                    case DNNQ_DT_S8: for (int i = 0; i < no; ++i) acc.c[i] = -128; break;
                    case DNNQ_DT_S32: for (int i = 0; i < no; ++i) acc.i[i] = INT32_MIN; break;
                    default: for (int i = 0; i < no; ++i) acc.f[i] = TK_LOWEST_F32;
                    }
                } else {
                    memset(acc.i, 0, sizeof(int32_t) * (size_t)no);
                }
                tk_pool_plain_chunk(a, pl, od, oh, o0, no, &acc, cntw);
                if (is_max && a->raw_store) {
                    tk_raw_store(dt, a->dst, r * OW + o0, &acc, no);
                    continue;
                }
                float *v = buf[0];
                tk_acc_to_f32(dt, is_max, &acc, v, no);
                if (a->alg == DNNQ_POOL_AVG_INC) {
                    const float cnt = a->count_inc;
                    if (a->avg_rcp) {
                        const float rcp = 1.0f / cnt;
                        for (int i = 0; i < no; ++i) v[i] = v[i] * rcp;
                    } else {
                        for (int i = 0; i < no; ++i) v[i] = v[i] / cnt;
                    }
                } else if (a->alg == DNNQ_POOL_AVG_EXC) {
                    if (a->avg_rcp)
                        for (int i = 0; i < no; ++i) v[i] = v[i] * (1.0f / (float)(ndh * cntw[i]));
                    else
                        for (int i = 0; i < no; ++i) v[i] = v[i] / (float)(ndh * cntw[i]);
                }
                tk_epilogue(epi, r, o0, no, buf, tmp, off);
            }
        }
    }
    if (off != off_stack) free(off);
    return status;
}

#endif
