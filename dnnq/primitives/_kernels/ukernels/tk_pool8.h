/* The direct int8 pooling kernels (fast8: channels-last s8 / u8 into the same data type and
 * layout, no post-ops, at most 256 taps), separable: a vertical pass over the window's input
 * rows into a row buffer, then a horizontal pass per output.  Written once over tk_vec.h
 * (TK_VB channels per step); the scalar loops finish the channels and serve the portable
 * build.  The small-window average fused in registers is tk_pool8_fused.h. */
#ifndef DNNQ_TK_POOL8_H
#define DNNQ_TK_POOL8_H
#include "tk_convert.h"
#include "tk_pool_common.h"

/* ---- channels-last 8-bit pooling into the same data type and layout, no post-ops (fast8) ---
 * tp[0 .. ntap) point at the C channels of each tap.  Max stays in int8 (vpmaxsb / vpmaxub:
 * exact by construction; an empty window gives the lowest value, as the generic path).  The
 * average sums in u16 lanes (s8 is offset by +128 with an xor, the offset 128 * ntap removed in
 * s32; needs ntap <= 256), then f32(sum) * rcp and one rne conversion: the generic path's
 * `(float)sum * f32(1/count)` followed by its store (no clamp needed: an average of 8-bit
 * values is in range, so cvtps2dq and the packs give the same bytes). */
#define TK_P8_MAXTAP 256
#if TK_VEC
TK_INLINE tk_vb tk_p8_vmax(tk_vb a, tk_vb b, const int u8) {
    return u8 ? tk_vb_max_u8(a, b) : tk_vb_max_s8(a, b);
}
TK_INLINE tk_vb tk_p8_lowest(const int u8) { return u8 ? tk_vb_zero() : tk_vb_set1_8(-128); }
#endif

TK_INLINE void tk_p8_max_impl(const uint8_t *const *tp, int ntap, int64_t C,
                              uint8_t *restrict d, const int u8) {
    int64_t c = 0;
#if TK_VEC
    for (; c + TK_VB <= C; c += TK_VB) {
        tk_vb m = tk_p8_lowest(u8);
        for (int k = 0; k < ntap; ++k) m = tk_p8_vmax(m, tk_vb_loadu(tp[k] + c), u8);
        tk_vb_storeu(d + c, m);
    }
    if (c < C) { /* the tail (lanes past it read as 0, not stored) */
        tk_vb m = tk_p8_lowest(u8);
        for (int k = 0; k < ntap; ++k) m = tk_p8_vmax(m, tk_vb_load_n(tp[k] + c, C - c), u8);
        tk_vb_store_n(d + c, m, C - c);
        c = C;
    }
#endif
    for (; c < C; ++c) {
        if (u8) {
            uint8_t m = 0;
            for (int k = 0; k < ntap; ++k) m = tp[k][c] > m ? tp[k][c] : m;
            d[c] = m;
        } else {
            int8_t m = -128;
            for (int k = 0; k < ntap; ++k) {
                const int8_t v = (int8_t)tp[k][c];
                m = v > m ? v : m;
            }
            d[c] = (uint8_t)m;
        }
    }
}

static void tk_p8_max(const uint8_t *const *tp, int ntap, int64_t C, uint8_t *restrict d, int u8) {
    if (u8) tk_p8_max_impl(tp, ntap, C, d, 1);
    else tk_p8_max_impl(tp, ntap, C, d, 0);
}

/* horizontal pass of the max: the max of nw columns of t (base, column stride cs) over C
 * channels (nw == 0: the lowest value) */
TK_INLINE void tk_p8_hmax_impl(const uint8_t *base, int64_t cs, int nw, int64_t C,
                               uint8_t *restrict d, const int u8) {
    int64_t c = 0;
#if TK_VEC
    if (nw > 0) {
        for (; c + TK_VB <= C; c += TK_VB) {
            tk_vb m = tk_vb_loadu(base + c);
            for (int k = 1; k < nw; ++k) m = tk_p8_vmax(m, tk_vb_loadu(base + k * cs + c), u8);
            tk_vb_storeu(d + c, m);
        }
    }
#endif
    if (c < C) { /* the rest (and nw == 0) through the pointer kernel */
        const uint8_t *hp[TK_P8_MAXTAP];
        for (int k = 0; k < nw; ++k) hp[k] = base + k * cs + c;
        tk_p8_max_impl(hp, nw, C - c, d + c, u8);
    }
}

static inline void tk_p8_hmax(const uint8_t *base, int64_t cs, int nw, int64_t C,
                              uint8_t *restrict d, int u8) {
    if (u8) tk_p8_hmax_impl(base, cs, nw, C, d, 1);
    else tk_p8_hmax_impl(base, cs, nw, C, d, 0);
}

/* vertical pass of the average: tmp[i] = sum_k (tp[k][i] ^ flip) as u16, natural order */
static void tk_p8_vsum(const uint8_t *const *tp, int ntap, int64_t L, uint16_t *restrict t,
                       int u8) {
    int64_t i = 0;
    const uint8_t fl = u8 ? 0 : 0x80;
#if TK_VEC
    const tk_vh flip = tk_vh_set1_8((int8_t)fl);
    if (u8) {
        for (; i + TK_VB / 2 <= L; i += TK_VB / 2) {
            tk_vb acc = tk_vb_zero();
            for (int k = 0; k < ntap; ++k)
                acc = tk_vb_add_16(acc, tk_vb_from_u8h(tk_vh_loadu(tp[k] + i)));
            tk_vb_storeu(t + i, acc);
        }
    }
    for (; i + TK_VB / 2 <= L; i += TK_VB / 2) {
        tk_vb acc = tk_vb_zero();
        for (int k = 0; k < ntap; ++k)
            acc = tk_vb_add_16(acc, tk_vb_from_u8h(tk_vh_xor(tk_vh_loadu(tp[k] + i), flip)));
        tk_vb_storeu(t + i, acc);
    }
#endif
    for (; i < L; ++i) {
        uint16_t acc = 0;
        for (int k = 0; k < ntap; ++k) acc = (uint16_t)(acc + (uint8_t)(tp[k][i] ^ fl));
        t[i] = acc;
    }
}

/* horizontal pass: the average of ntap_w columns of t (base, column stride cs) over C channels;
 * `off` = 128 * taps for s8 (the xor offset), rcp = f32(1 / count) */
static void tk_p8_havg(const uint16_t *base, int64_t cs, int ntap_w, int64_t C,
                       uint8_t *restrict d, int u8, int32_t off, float rcp) {
    int64_t c = 0;
#if TK_VEC
    const tk_vb vo = tk_vb_set1_32(off);
    const tk_vf vr = tk_vf_set1(rcp);
#define TK_P8_F(x) tk_vi_rne(tk_vf_mul(tk_vf_from_vi(u8 ? (x) : tk_vb_sub_32((x), vo)), vr))
    for (; c + TK_VB <= C; c += TK_VB) { /* TK_VB channels: u16 sums, unpacked, packed back */
        tk_vb a0 = tk_vb_zero(), a1 = tk_vb_zero();
        for (int k = 0; k < ntap_w; ++k) {
            a0 = tk_vb_add_16(a0, tk_vb_loadu(base + k * cs + c));
            a1 = tk_vb_add_16(a1, tk_vb_loadu(base + k * cs + c + TK_VB / 2));
        }
        const tk_vb w0 = tk_vb_packs_32(TK_P8_F(tk_vb_unpacklo_16(a0)),
                                        TK_P8_F(tk_vb_unpackhi_16(a0)));
        const tk_vb w1 = tk_vb_packs_32(TK_P8_F(tk_vb_unpacklo_16(a1)),
                                        TK_P8_F(tk_vb_unpackhi_16(a1)));
        tk_vb_storeu(d + c, tk_vb_pack16_ordered(w0, w1, u8));
    }
    for (; c + TK_VF <= C; c += TK_VF) { /* TK_VF channels in s32 lanes */
        tk_vb acc = tk_vb_zero();
        for (int k = 0; k < ntap_w; ++k)
            acc = tk_vb_add_32(acc, tk_vb_from_u16h(tk_vh_loadu(base + k * cs + c)));
        const tk_vi q = tk_vi_rne(tk_vf_mul(tk_vf_from_vi(tk_vb_sub_32(acc, vo)), vr));
        if (u8) tk_vi_store_u8(d + c, q);
        else tk_vi_store_s8(d + c, q);
    }
#undef TK_P8_F
#endif
    for (; c < C; ++c) {
        int32_t sum = 0;
        for (int k = 0; k < ntap_w; ++k) sum += base[k * cs + c];
        const float v = (float)(sum - off) * rcp;
        d[c] = u8 ? tk_cvt_u8(v) : (uint8_t)tk_cvt_s8(v);
    }
}

static int tk_pool8_fast_ok(const dnnq_pool_args_t *a) {
    return a->fast8 && a->channels_last && (a->src_dt == DNNQ_DT_S8 || a->src_dt == DNNQ_DT_U8)
           && (a->alg == DNNQ_POOL_MAX || a->avg_rcp) && a->window <= TK_P8_MAXTAP;
}

/* Separable: for each segment of one output row (n, od, oh), a vertical pass combines the input
 * rows of the window (flat, contiguous over the columns needed) into a row buffer, then each
 * output takes its KW columns from it.  Max and integer sums are exact in any order, so this
 * equals the generic tap-by-tap kernel. */
static int tk_pool8_fast(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    const uint8_t *src = (const uint8_t *)a->src;
    uint8_t *dst = (uint8_t *)a->dst;
    const int64_t C = a->C;
    const int u8 = a->src_dt == DNNQ_DT_U8, is_max = a->alg == DNNQ_POOL_MAX;
    const uint8_t *tp[TK_P8_MAXTAP];
    void *tmp = malloc((size_t)(a->IW * C) * (is_max ? 1 : 2) + 64);
    if (!tmp) return DNNQ_TK_ENOMEM;
    int64_t r = it0;
    while (r < it1) {
        const int64_t ow_a = r % a->OW, row = r / a->OW;
        const int64_t oh = row % a->OH, od = row / a->OH % a->OD, n = row / (a->OH * a->OD);
        const int64_t ow_b = (it1 - r < a->OW - ow_a) ? ow_a + (it1 - r) : a->OW;
        int64_t dlo, dhi, hlo, hhi;
        tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
        tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
        /* input columns [c_lo, c_hi) used by outputs [ow_a, ow_b) */
        int64_t c_lo = ow_a * a->SW - a->PW, c_hi = (ow_b - 1) * a->SW - a->PW + (a->KW - 1) * a->DW + 1;
        if (c_lo < 0) c_lo = 0;
        if (c_hi > a->IW) c_hi = a->IW;
        if (c_hi < c_lo) c_hi = c_lo;
        int nrow = 0;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                tp[nrow++] = src + (((n * a->ID + id) * a->IH + ih) * a->IW + c_lo) * C;
            }
        }
        const int64_t L = (c_hi - c_lo) * C;
        if (is_max) tk_p8_max(tp, nrow, L, (uint8_t *)tmp, u8);
        else tk_p8_vsum(tp, nrow, L, (uint16_t *)tmp, u8);
        /* prefetch the input rows of the output row two ahead (2 * SH rows further) while
         * the horizontal pass computes: the vertical pass then finds them in cache (without
         * it a thread alternates between waiting for memory and computing; measured: one row
         * ahead gains less, prefetcht2 loses) */
        /* (the Python side sends strides <= the source dims here: no overflow) */
        const int64_t nxt = 2 * a->SH * a->IW * C, pstep = a->SW * C;
        for (int64_t ow = ow_a; ow < ow_b; ++ow, ++r) {
            const int64_t po = nxt + (ow - ow_a) * pstep;
            for (int j = 0; j < nrow; ++j)
                for (int64_t q = 0; q < pstep; q += 64) __builtin_prefetch(tp[j] + po + q, 0, 3);
            int64_t wlo, whi;
            tk_tap_range(ow, a->SW, a->PW, a->DW, a->KW, a->IW, &wlo, &whi);
            const int64_t col0 = ow * a->SW - a->PW + wlo * a->DW - c_lo; /* first column used */
            const int nw = (int)(whi - wlo);
            if (is_max) {
                tk_p8_hmax((const uint8_t *)tmp + col0 * C, a->DW * C, nrow ? nw : 0, C,
                           dst + r * C, u8);
            } else {
                const int ntap = nrow * nw;
                const float cnt = a->alg == DNNQ_POOL_AVG_INC ? a->count_inc : (float)ntap;
                tk_p8_havg((const uint16_t *)tmp + col0 * C, a->DW * C, nrow ? nw : 0, C,
                           dst + r * C, u8, u8 ? 0 : 128 * ntap, 1.0f / cnt);
            }
        }
    }
    free(tmp);
    return 0;
}

#endif
