/* The int8 average of small windows (at most TK_P8_FUSE_MAX taps, at least TK_P8_FUSE_MINC
 * channels), summed in registers per output: no row buffer.  Vector builds only. */
#ifndef DNNQ_TK_POOL8_FUSED_H
#define DNNQ_TK_POOL8_FUSED_H
#include "tk_pool8.h"

/* ---- fused average for small windows (x86 vector builds) ----
 * Per output, the taps p + off[t] (t < ntap, C channels each) are summed directly in registers,
 * with no row buffer.  s8 bytes are first flipped (x ^ 0x80 = x + 128 as u8), so every byte is
 * a u8 value v and the sum s' = s + 128 * ntap.  A vector is read as 16-bit lanes x: the odd
 * channels' bytes are x >> 8, and the plain 16-bit sum of the x is lo + 256 * hi (mod 2^16),
 * lo / hi the sums of the even / odd channels, so lo = tot - (hi << 8) mod 2^16 -- exact, as
 * lo <= 255 * ntap < 2^16 (ntap <= TK_P8_FUSE_MAX).  Then per count:
 *  - count = 2^k (k >= 1; ntap < count with include-padding): f32(1 / count) and
 *    f32(s) * 2^-k are exact, so oneDNN's rne(f32(s) * f32(1/count)) is the integer
 *    round-half-even of s / 2^k, computed on s' >= 0 as (t + ((t >> k) & 1)) >> k with
 *    t = s' + 2^(k-1) - 1.  Proof, s' = q 2^k + r, 0 <= r < 2^k, h = 2^(k-1):
 *      r <  h: t = q 2^k + (r + h - 1) with r + h - 1 < 2^k - 1, t >> k = q, and
 *              (q 2^k + r + h - 1 + (q & 1)) >> k = q (r + h - 1 + 1 <= 2h - 1 < 2^k);
 *      r == h: t >> k = q, (q 2^k + 2h - 1 + (q & 1)) >> k = q + (q & 1): the even neighbour;
 *      r >  h: t = (q + 1) 2^k + (r - h - 1) with 0 <= r - h - 1 <= h - 2, t >> k = q + 1,
 *              and (q + 1) + ((r - h - 1 + ((q + 1) & 1)) >> k) = q + 1.
 *    s8: s = s' - 128 ntap, so s / 2^k = s' / 2^k - m with m = 128 ntap / 2^k, an even integer
 *    (2^k <= TK_P8_FUSE_MAX < 128), and rounding half to even commutes with subtracting an
 *    even integer: the s8 result is the rounded s' / 2^k minus m (mod 256).
 *    The bias 2^(k-1) - 1 is the accumulators' start value; count 1: the sum itself;
 *  - otherwise: the separable path's f32 steps (s32 lanes, f32(s' - 128 ntap) * rcp, cvtps2dq
 *    under the default rne mode), the results (in range: an average of 8-bit values) put back
 *    in channel order with shifts and masks. */
#define TK_P8_FUSE_MAX 16
#define TK_P8_FUSE_MINC 32 /* fewer channels: the separable path (measured) */

#if TK_VEC
/* TK_VB channels from c (tail > 0: only the first `tail`, the rest read as 0) */
TK_INLINE tk_vb tk_p8f_vec(const uint8_t *p, const int64_t *off, int ntap, int64_t c,
                           int64_t tail, const int u8, const int sh, const tk_vf vr,
                           const tk_vb vo, const tk_vb vm) {
    const int b = sh > 0 ? (1 << (sh - 1)) - 1 : 0;
    const tk_vb flip = tk_vb_set1_8((int8_t)(u8 ? 0 : 0x80));
    tk_vb tot = tk_vb_set1_16((int16_t)(b * 257)), hi = tk_vb_set1_16((int16_t)b);
    for (int t = 0; t < ntap; ++t) {
        tk_vb x = tail ? tk_vb_load_n(p + off[t] + c, tail) : tk_vb_loadu(p + off[t] + c);
        if (!u8) x = tk_vb_xor(x, flip);
        tot = tk_vb_add_16(tot, x);
        hi = tk_vb_add_16(hi, tk_vb_srli_16(x, 8));
    }
    tk_vb lo = tk_vb_sub_16(tot, tk_vb_slli_16(hi, 8));
    if (sh >= 0) {
        if (sh > 0) {
            const tk_vb one = tk_vb_set1_16(1);
            lo = tk_vb_add_16(lo, tk_vb_and(tk_vb_srli_16(lo, sh), one));
            hi = tk_vb_add_16(hi, tk_vb_and(tk_vb_srli_16(hi, sh), one));
            lo = tk_vb_srli_16(lo, sh);
            hi = tk_vb_srli_16(hi, sh);
        }
        /* lo, hi in [0, 255] */
        const tk_vb r = tk_vb_or(lo, tk_vb_slli_16(hi, 8));
        return u8 ? r : tk_vb_sub_8(r, vm);
    }
    const tk_vb m16 = tk_vb_set1_32(0xFFFF);
#define TK_P8F_F(x) tk_vi_rne(tk_vf_mul(tk_vf_from_vi(u8 ? (x) : tk_vb_sub_32((x), vo)), vr))
    /* even / odd channels' s32 lanes (low / high 16 bits), averaged, put back */
    lo = tk_vb_or(tk_vb_and(TK_P8F_F(tk_vb_and(lo, m16)), m16),
                  tk_vb_slli_32(TK_P8F_F(tk_vb_srli_32(lo, 16)), 16));
    hi = tk_vb_or(tk_vb_and(TK_P8F_F(tk_vb_and(hi, m16)), m16),
                  tk_vb_slli_32(TK_P8F_F(tk_vb_srli_32(hi, 16)), 16));
#undef TK_P8F_F
    return tk_vb_or(tk_vb_and(lo, tk_vb_set1_16(0xFF)), tk_vb_slli_16(hi, 8));
}

TK_INLINE void tk_p8f_run(const uint8_t *p, const int64_t *off, int ntap, int64_t C,
                          uint8_t *restrict d, const int u8, const int sh, float rcp) {
    const tk_vf vr = tk_vf_set1(rcp);
    const tk_vb vo = tk_vb_set1_32(128 * ntap);
    const tk_vb vm = tk_vb_set1_8((int8_t)(sh > 0 ? (128 * ntap) >> sh : 128 * ntap));
    int64_t c = 0;
    for (; c + TK_VB <= C; c += TK_VB)
        tk_vb_storeu(d + c, tk_p8f_vec(p, off, ntap, c, 0, u8, sh, vr, vo, vm));
    if (c < C) {
        if (C >= TK_VB) /* the last TK_VB channels again (independent: the same bytes) */
            tk_vb_storeu(d + C - TK_VB, tk_p8f_vec(p, off, ntap, C - TK_VB, 0, u8, sh, vr, vo, vm));
        else
            tk_vb_store_n(d + c, tk_p8f_vec(p, off, ntap, c, C - c, u8, sh, vr, vo, vm), C - c);
    }
}
#define TK_P8F_VEC 1
#endif

#ifdef TK_P8F_VEC
/* nout outputs (output o: taps base + o * step + off[t], t < ntap, into d + o * C), the average
 * over cnt; with pf (nrow row pointers): prefetches pf[j] + o * step .. + step */
static inline __attribute__((always_inline)) void
tk_p8f_outs(const uint8_t *base, const int64_t *off, int ntap, int64_t step, int64_t nout,
            int64_t C, uint8_t *restrict d, const int u8, const int sh, float rcp,
            const uint8_t *const *pf, int nrow) {
    for (int64_t o = 0; o < nout; ++o, base += step, d += C) {
        if (pf)
            for (int j = 0; j < nrow; ++j)
                for (int64_t q = 0; q < step; q += 64) __builtin_prefetch(pf[j] + o * step + q, 0, 3);
        tk_p8f_run(base, off, ntap, C, d, u8, sh, rcp);
    }
}

static void tk_p8_favg(const uint8_t *base, const int64_t *off, int ntap, int64_t step,
                       int64_t nout, int64_t C, uint8_t *restrict d, int u8, int cnt,
                       const uint8_t *const *pf, int nrow) {
    const float rcp = 1.0f / (float)cnt;
    const int sh = (cnt & (cnt - 1)) ? -1 : __builtin_ctz((unsigned)cnt);
#define TK_P8F_CASE(U)                                                                         \
    switch (sh) {                                                                              \
    case 0: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 0, rcp, pf, nrow); break;       \
    case 1: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 1, rcp, pf, nrow); break;       \
    case 2: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 2, rcp, pf, nrow); break;       \
    case 3: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 3, rcp, pf, nrow); break;       \
    case 4: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, 4, rcp, pf, nrow); break;       \
    default: tk_p8f_outs(base, off, ntap, step, nout, C, d, U, -1, rcp, pf, nrow);            \
    }
    if (u8) { TK_P8F_CASE(1) } else { TK_P8F_CASE(0) }
#undef TK_P8F_CASE
}

/* The average for windows of at most TK_P8_FUSE_MAX taps: per output row (n, od, oh), the
 * outputs whose window lies inside the row (same taps, base advancing by SW * C) in one call,
 * the border ones one by one with their own taps; an empty window as the separable path.
 * Integer sums are exact in any order, so this equals the tap-by-tap kernel. */
static void tk_pool8_favg(const dnnq_pool_args_t *a, int64_t it0, int64_t it1) {
    const uint8_t *src = (const uint8_t *)a->src;
    uint8_t *dst = (uint8_t *)a->dst;
    const int64_t C = a->C, KW = a->KW, ntap_max = a->window; /* <= TK_P8_FUSE_MAX here */
    const int u8 = a->src_dt == DNNQ_DT_U8, inc = a->alg == DNNQ_POOL_AVG_INC;
    const int64_t step = a->SW * C, rowlen = a->IW * C;
    /* outputs [w_lo, w_hi) have every column of the window inside [0, IW) */
    const int64_t last = a->IW - 1 - (KW - 1) * a->DW + a->PW; /* ow * SW <= last */
    int64_t w_hi = last < 0 ? 0 : last / a->SW + 1, w_lo = (a->PW + a->SW - 1) / a->SW;
    if (w_hi > a->OW) w_hi = a->OW;
    if (w_lo > w_hi) w_hi = w_lo;
    const uint8_t *rp[TK_P8_FUSE_MAX], *pf[TK_P8_FUSE_MAX];
    int64_t off[TK_P8_FUSE_MAX], boff[TK_P8_FUSE_MAX];
    int64_t ow = it0 % a->OW, row = it0 / a->OW;
    int64_t oh = row % a->OH, od = row / a->OH % a->OD, n = row / (a->OH * a->OD);
    int64_t r = it0;
    while (r < it1) {
        const int64_t ow_b = (it1 - r < a->OW - ow) ? ow + (it1 - r) : a->OW;
        int64_t dlo, dhi, hlo, hhi;
        tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
        tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
        int nrow = 0;
        for (int64_t kd = dlo; kd < dhi; ++kd) {
            const int64_t id = od * a->SD - a->PD + kd * a->DD;
            for (int64_t kh = hlo; kh < hhi; ++kh) {
                const int64_t ih = oh * a->SH - a->PH + kh * a->DH;
                rp[nrow] = src + ((n * a->ID + id) * a->IH + ih) * rowlen; /* column 0 */
                /* the rows of the output row two ahead (see tk_pool8_fast) */
                pf[nrow] = rp[nrow] + 2 * a->SH * rowlen + (ow * a->SW - a->PW) * C;
                ++nrow;
            }
        }
        uint8_t *d = dst + r * C;
        if (nrow == 0) { /* every window empty: as the separable path (no tap) */
            for (int64_t o = ow; o < ow_b; ++o, d += C)
                tk_p8_havg((const uint16_t *)src, 0, 0, C, d, u8, 0,
                           1.0f / (inc ? (float)ntap_max : 0.0f));
        } else {
            for (int j = 0, t = 0; j < nrow; ++j)
                for (int64_t k = 0; k < KW; ++k, ++t) off[t] = (rp[j] - rp[0]) + k * a->DW * C;
            int64_t o = ow;
            while (o < ow_b) {
                const int64_t i0 = o * a->SW - a->PW; /* column of tap kw = 0 */
                if (o >= w_lo && o < w_hi) {
                    const int64_t e = ow_b < w_hi ? ow_b : w_hi;
                    tk_p8_favg(rp[0] + i0 * C, off, nrow * (int)KW, step, e - o, C, d, u8,
                               inc ? (int)ntap_max : nrow * (int)KW, pf, nrow);
                    for (int j = 0; j < nrow; ++j) pf[j] += (e - o) * step;
                    d += (e - o) * C;
                    o = e;
                    continue;
                }
                int64_t wlo, whi;
                tk_tap_range(o, a->SW, a->PW, a->DW, KW, a->IW, &wlo, &whi);
                const int nw = (int)(whi - wlo);
                if (nw == 0) {
                    tk_p8_havg((const uint16_t *)src, 0, 0, C, d, u8, 0,
                               1.0f / (inc ? (float)ntap_max : 0.0f));
                } else {
                    for (int j = 0, t = 0; j < nrow; ++j)
                        for (int k = 0; k < nw; ++k, ++t)
                            boff[t] = (rp[j] - rp[0]) + (wlo + k) * a->DW * C;
                    tk_p8_favg(rp[0] + i0 * C, boff, nrow * nw, step, 1, C, d, u8,
                               inc ? (int)ntap_max : nrow * nw, pf, nrow);
                }
                for (int j = 0; j < nrow; ++j) pf[j] += step;
                d += C;
                ++o;
            }
        }
        r += ow_b - ow;
        ow = 0; /* the next output row */
        if (++oh == a->OH) {
            oh = 0;
            if (++od == a->OD) { od = 0; ++n; }
        }
    }
}
#endif

#endif
