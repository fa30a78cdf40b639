/* The sums of an 8-bit channels-last average window read as byte streams (stream8): with
 * adjacent taps along w (DW == 1) each window row (kd, kh) is one run of L = nw * C bytes whose
 * byte j belongs to channel j % C.  A run is cut into units of U bytes, U a multiple of C (so
 * every unit starts at channel 0); vector lanes add the bytes at one position of every unit,
 * and the positions are folded into the C channel sums at the end.  Integer sums are exact in
 * any order: these are the values of the tap-by-tap loop, whatever the split of the rows.
 *
 * Unit: U = lcm(C, TK_VB) when it fits TK_PS_NV vectors (no partial vector), else as many
 * whole pixels as fit them (C <= TK_PS_MAXU: one partial vector per unit), else one pixel,
 * its channels taken in slices of TK_PS_MAXU bytes.  A run that does not end on a unit
 * boundary ends with a partial unit (its first bytes: channels from 0).
 *
 * Lanes: each vector of bytes widened to two vectors of 16-bit lanes (zero-extended for u8,
 * sign-extended for s8), in byte order; TK_PS_FLUSH = 256 units fit them (256 * 255 < 2^16,
 * 256 * -128 = -2^15), then they are widened again and added into u32 position sums -- mod
 * 2^32, as the generic path's s32 lanes wrap.
 *
 * The f32 step and the epilogue after the sums are the generic path's (tk_ps_store); an
 * output's window rows can be split over threads (dnnq_pool_split, driven by _toolkit.pyx
 * when there are fewer outputs than threads). */
#ifndef DNNQ_TK_POOL_STREAM8_H
#define DNNQ_TK_POOL_STREAM8_H
#include "tk_pool_common.h"

/* the window of one output: row q in [0, nrows) (the (kd, kh) pairs inside the source, in
 * order) starts at p0 + (q / nh) * sd + (q % nh) * sh and holds L bytes */
typedef struct {
    const uint8_t *p0;
    int64_t nh, sd, sh, L, nrows, ntap;
} tk_ps_win_t;

static void tk_ps_window(const dnnq_pool_args_t *a, int64_t n, int64_t od, int64_t oh,
                         int64_t ow, tk_ps_win_t *w) {
    const int64_t C = a->C;
    int64_t dlo, dhi, hlo, hhi, wlo, whi;
    tk_tap_range(od, a->SD, a->PD, a->DD, a->KD, a->ID, &dlo, &dhi);
    tk_tap_range(oh, a->SH, a->PH, a->DH, a->KH, a->IH, &hlo, &hhi);
    tk_tap_range(ow, a->SW, a->PW, 1, a->KW, a->IW, &wlo, &whi);
    const int64_t id = od * a->SD - a->PD + dlo * a->DD, ih = oh * a->SH - a->PH + hlo * a->DH;
    const int64_t iw = ow * a->SW - a->PW + wlo;
    w->p0 = (const uint8_t *)a->src + (((n * a->ID + id) * a->IH + ih) * a->IW + iw) * C;
    w->nh = hhi - hlo;
    w->sd = a->DD * a->IH * a->IW * C;
    w->sh = a->DH * a->IW * C;
    w->L = (whi - wlo) * C;
    w->nrows = (dhi - dlo) * w->nh;
    w->ntap = w->nrows * (whi - wlo);
}

#if TK_VEC
#define TK_PS_NV (TK_VEC == 512 ? 8 : 4) /* vectors per unit: 2 * TK_PS_NV lane registers */
#define TK_PS_MAXU (TK_PS_NV * TK_VB)
#define TK_PS_FLUSH 256

static int64_t tk_ps_unit(int64_t C) {
    int64_t l = C; /* lcm(C, TK_VB), TK_VB a power of two */
    while (l % TK_VB) l *= 2;
    if (l <= TK_PS_MAXU) return l;
    return C <= TK_PS_MAXU ? TK_PS_MAXU / C * C : C;
}

#if TK_VEC == 512
#define tk_ps_load_part tk_vb_load_n
#else /* (out of line: GCC's overflow warning misreads the unrolled copies' bounds) */
static __attribute__((noinline)) tk_vb tk_ps_load_part(const uint8_t *p, int64_t n) {
    return tk_vb_load_n(p, n);
}
#endif

/* lanes += the n bytes at p (n <= nv * TK_VB; vectors past them untouched).  (The loops over
 * the lanes are innermost and unrolled: the lanes stay in registers.) */
TK_INLINE void tk_ps_add(tk_vb *lo, tk_vb *hi, const uint8_t *p, int64_t n, const int nv,
                         const int s8) {
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) {
        const int64_t m = n - (int64_t)v * TK_VB;
        if (m <= 0) break;
        tk_vh x0, x1;
        if (m >= TK_VB) { /* (half loads: the widening instructions read memory) */
            x0 = tk_vh_loadu(p + v * TK_VB);
            x1 = tk_vh_loadu(p + v * TK_VB + TK_VB / 2);
        } else {
            const tk_vb x = tk_ps_load_part(p + v * TK_VB, m);
            x0 = tk_vb_half(x, 0);
            x1 = tk_vb_half(x, 1);
        }
        lo[v] = tk_vb_add_16(lo[v], s8 ? tk_vb_from_s8h(x0) : tk_vb_from_u8h(x0));
        hi[v] = tk_vb_add_16(hi[v], s8 ? tk_vb_from_s8h(x1) : tk_vb_from_u8h(x1));
    }
}

/* d[0 .. TK_VF) += the 16-bit lanes h widened */
TK_INLINE void tk_ps_add32(uint32_t *d, tk_vh h, const int s8) {
    tk_vi_storeu(d, tk_vb_add_32(tk_vi_loadu(d), s8 ? tk_vb_from_s16h(h) : tk_vb_from_u16h(h)));
}

/* pos[byte position] += the lanes; the lanes restart */
TK_INLINE void tk_ps_flush(tk_vb *lo, tk_vb *hi, uint32_t *restrict pos, const int nv,
                           const int s8) {
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) {
        uint32_t *d = pos + v * TK_VB;
        tk_ps_add32(d, tk_vb_half(lo[v], 0), s8);
        tk_ps_add32(d + TK_VF, tk_vb_half(lo[v], 1), s8);
        tk_ps_add32(d + 2 * TK_VF, tk_vb_half(hi[v], 0), s8);
        tk_ps_add32(d + 3 * TK_VF, tk_vb_half(hi[v], 1), s8);
        lo[v] = hi[v] = tk_vb_zero();
    }
}

/* pos[j] += the bytes at position s0 + j (j < S) of every unit of rows [k0, k1) */
TK_INLINE void tk_ps_slice_impl(const tk_ps_win_t *w, int64_t k0, int64_t k1, int64_t U,
                                int64_t s0, int64_t S, uint32_t *restrict pos, const int nv,
                                const int s8) {
    tk_vb lo[TK_PS_NV], hi[TK_PS_NV];
#pragma GCC unroll 8
    for (int v = 0; v < nv; ++v) lo[v] = hi[v] = tk_vb_zero();
    const int64_t L = w->L;
    int64_t kd = k0 / w->nh, kh = k0 % w->nh;
    int units = 0;
    for (int64_t q = k0; q < k1; ++q) {
        const uint8_t *p = w->p0 + kd * w->sd + kh * w->sh + s0;
        if (++kh == w->nh) { kh = 0; ++kd; }
        int64_t j = 0;
        for (; j + U <= L; j += U) {
            tk_ps_add(lo, hi, p + j, S, nv, s8);
            if (++units == TK_PS_FLUSH) {
                tk_ps_flush(lo, hi, pos, nv, s8);
                units = 0;
            }
        }
        const int64_t n = L - j - s0; /* the partial unit's bytes in the slice (s0 == 0) */
        if (n > 0) {
            tk_ps_add(lo, hi, p + j, n < S ? n : S, nv, s8);
            if (++units == TK_PS_FLUSH) {
                tk_ps_flush(lo, hi, pos, nv, s8);
                units = 0;
            }
        }
    }
    if (units) tk_ps_flush(lo, hi, pos, nv, s8);
}

static void tk_ps_slice(const tk_ps_win_t *w, int64_t k0, int64_t k1, int64_t U, int64_t s0,
                        int64_t S, uint32_t *restrict pos, int nv, int s8) {
    switch (nv) { /* the lanes in registers: the vector count a constant */
#define TK_PS_CASE(k)                                                                         \
    case k:                                                                                   \
        if (s8) tk_ps_slice_impl(w, k0, k1, U, s0, S, pos, k, 1);                            \
        else tk_ps_slice_impl(w, k0, k1, U, s0, S, pos, k, 0);                               \
        break;
        TK_PS_CASE(1)
        TK_PS_CASE(2)
        TK_PS_CASE(3)
        TK_PS_CASE(4)
#if TK_PS_NV > 4
        TK_PS_CASE(5)
        TK_PS_CASE(6)
        TK_PS_CASE(7)
        TK_PS_CASE(8)
#endif
#undef TK_PS_CASE
    default: break;
    }
}

/* sums[c] (C entries) = the sums of channel c over rows [k0, k1) of the window, mod 2^32 */
static void tk_ps_sums(const dnnq_pool_args_t *a, const tk_ps_win_t *w, int64_t k0, int64_t k1,
                       uint32_t *restrict sums) {
    const int64_t C = a->C, U = tk_ps_unit(C);
    const int s8 = a->src_dt == DNNQ_DT_S8;
    uint32_t pos[TK_PS_MAXU];
    memset(sums, 0, sizeof(uint32_t) * (size_t)C);
    if (k0 >= k1) return;
    for (int64_t s0 = 0; s0 < U; s0 += TK_PS_MAXU) {
        const int64_t S = U - s0 < TK_PS_MAXU ? U - s0 : TK_PS_MAXU;
        const int nv = (int)((S + TK_VB - 1) / TK_VB);
        memset(pos, 0, sizeof(uint32_t) * (size_t)(nv * TK_VB));
        tk_ps_slice(w, k0, k1, U, s0, S, pos, nv, s8);
        /* position s0 + j is channel (s0 + j) % C: runs of channels c0 .. C - 1, 0 .. */
        for (int64_t j = 0, c0 = s0 % C; j < S; c0 = 0) {
            const int64_t m = C - c0 < S - j ? C - c0 : S - j;
            for (int64_t i = 0; i < m; ++i) sums[c0 + i] += pos[j + i];
            j += m;
        }
    }
}
#else /* scalar lanes: pixel by pixel */
static void tk_ps_sums(const dnnq_pool_args_t *a, const tk_ps_win_t *w, int64_t k0, int64_t k1,
                       uint32_t *restrict sums) {
    const int64_t C = a->C;
    const int s8 = a->src_dt == DNNQ_DT_S8;
    memset(sums, 0, sizeof(uint32_t) * (size_t)C);
    for (int64_t q = k0; q < k1; ++q) {
        const uint8_t *p = w->p0 + q / w->nh * w->sd + q % w->nh * w->sh;
        for (int64_t j = 0; j < w->L; j += C) {
            if (s8)
                for (int64_t c = 0; c < C; ++c) sums[c] += (uint32_t)(int32_t)(int8_t)p[j + c];
            else
                for (int64_t c = 0; c < C; ++c) sums[c] += p[j + c];
        }
    }
}
#endif

/* The stream8 average of output r from its window's integer sums (mod 2^32, read as s32): the
 * f32 step of the generic path (f32(sum) * f32(1 / count) or f32(sum) / count), then the
 * epilogue, chunk by chunk. */
static void tk_ps_store(const dnnq_pool_args_t *a, int64_t r, int64_t ntap, const uint32_t *sums,
                        float (*buf)[TK_CH], float *tmp, int64_t *off) {
    const float cnt = a->alg == DNNQ_POOL_AVG_INC ? a->count_inc : (float)ntap;
    for (int64_t c0 = 0; c0 < a->C; c0 += TK_CH) {
        const int nc = (int)(a->C - c0 < TK_CH ? a->C - c0 : TK_CH);
        float *v = buf[0];
        for (int i = 0; i < nc; ++i) v[i] = (float)(int32_t)sums[c0 + i];
        if (a->avg_rcp) {
            const float rcp = 1.0f / cnt;
            for (int i = 0; i < nc; ++i) v[i] = v[i] * rcp;
        } else {
            for (int i = 0; i < nc; ++i) v[i] = v[i] / cnt;
        }
        tk_epilogue(&a->epi, r, c0, nc, buf, tmp, off);
    }
}

/* One stream8 output whose window rows are split over nparts threads: part < nparts sums its
 * share of the rows into sums + part * C; part == nparts (after all of them) adds the shares
 * (integers: exact in any order, so the result does not depend on nparts) and stores. */
int DNNQ_TK_FN(dnnq_pool_split)(const dnnq_pool_args_t *a, int64_t r, int part, int nparts,
                                uint32_t *sums) {
    const int64_t C = a->C;
    tk_ps_win_t w;
    tk_ps_window(a, r / (a->OW * a->OH * a->OD), r / (a->OW * a->OH) % a->OD, r / a->OW % a->OH,
                 r % a->OW, &w);
    if (part < nparts) {
        tk_ps_sums(a, &w, w.nrows * part / nparts, w.nrows * (part + 1) / nparts, sums + part * C);
        return 0;
    }
    for (int k = 1; k < nparts; ++k)
        for (int64_t c = 0; c < C; ++c) sums[c] += sums[k * C + c];
    float buf[DNNQ_PW_NBUF][TK_CH] __attribute__((aligned(64)));
    float tmp[TK_CH] __attribute__((aligned(64)));
    int64_t off_stack[TK_OFF_STACK];
    int64_t *off = a->epi.n_opnds <= TK_OFF_STACK
                       ? off_stack : (int64_t *)malloc(sizeof(int64_t) * a->epi.n_opnds);
    if (!off) return DNNQ_TK_ENOMEM;
    tk_ps_store(a, r, w.ntap, sums, buf, tmp, off);
    if (off != off_stack) free(off);
    return 0;
}

#endif
