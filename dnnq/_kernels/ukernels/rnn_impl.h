/* The int8 RNN driver: one layer and direction, the whole time loop, compiled once per ISA by
 * rnn_<isa>.c (which defines DNNQ_RNN_ISA) so that the cell epilogue is vectorised with that
 * ISA's flags.  The GEMM tiles come from the GEMM micro-kernel of the chosen level.
 *
 *   1. layer GEMM: the s32 products x(t) . W_layer of every time step at once (rows t*N + n);
 *   2. per step: h(t-1) . W_iter per 64-channel block, all gates of the block in one pass
 *      (the packed panels of a block sit side by side), and the fused cell epilogue on those
 *      tiles: dequantize, bias, sigmoid / tanh, state update, requantize to u8.
 * GRU needs r*h (requantized) of the whole row before its third gate, so its step has two
 * phases.  Threads share each phase by (channel block, row tile), always the same share, so a
 * thread's weight panels stay in its cache from step to step. */
#include <omp.h>
#include "dnnq_kernels.h"
#include "dnnq_rnn.h"
#include "rnn_math.h"
#ifdef __AVX512F__
#include "rnn_math_avx512.h"
#endif

#define RNN_CAT2(a, b) a##_##b
#define RNN_CAT(a, b) RNN_CAT2(a, b)
#define RNN_FN(name) RNN_CAT(name, DNNQ_RNN_ISA)
#define RNN_MAXG 4

typedef struct {
    const dnnq_rnn_args_t *a;
    dnnq_gemm_ukr_fn ukr;
    int mr;
    int64_t lw;             /* columns of a layer-products row: nblk * G * 64 */
    int64_t wl_panel, wi_panel;  /* bytes per packed panel */
    int64_t nrt;            /* row tiles of a step */
    int64_t lmb;            /* layer GEMM row block */
} rnn_ctx_t;

static inline const uint8_t *rnn_h_prev(const dnnq_rnn_args_t *a, int64_t s, int64_t n,
                                        int64_t *lda) {
    if (s == 0) {
        *lda = a->h0_sn;
        return a->h0 + n * a->h0_sn;
    }
    const int64_t tp = a->reverse ? a->T - s : s - 1;
    *lda = a->out_sn;
    return a->out + tp * a->out_st + n * a->out_sn;
}

static inline int64_t rnn_time(const dnnq_rnn_args_t *a, int64_t s) {
    return a->reverse ? a->T - 1 - s : s;
}

/* the f32 dst_layer: the dequantized u8 value, as oneDNN */
static inline void rnn_store_f32(const uint8_t *h, float *hf, int nc, float sc, float sh) {
    for (int k = 0; k < nc; ++k) hf[k] = rnn_dequantize_u8(h[k], sc, sh);
}

/* v = f32(layer product + iteration product) / divisor + bias (oneDNN: vcvtdq2ps, vdivps,
 * vaddps) */
static inline void rnn_gate(float *restrict v, const int32_t *restrict l, const int32_t *restrict t,
                            const float *restrict d, const float *restrict b, int nc) {
    for (int k = 0; k < nc; ++k) v[k] = (float)(l[k] + t[k]) / d[k] + b[k];
}

/* ---- cell epilogues: one row n, the nc channels of block j ------------------------------- */

/* LSTM (gates i, f, c~, o): c = f*c_prev + i*c~ (as oneDNN: c_prev*f, then a fused i*c~ +),
 * h = o * tanh(c) */
static void RNN_FN(rnn_epi_lstm)(const dnnq_rnn_args_t *a, const int32_t *lrow,
                                 int32_t *const *tiles, int r, int64_t j, int nc, float *c,
                                 uint8_t *h, float *hf) {
    const int64_t H = a->H, o = j * 64;
    const int32_t *l0 = lrow, *l1 = lrow + 64, *l2 = lrow + 128, *l3 = lrow + 192;
    const int32_t *t0 = tiles[0] + r * 64, *t1 = tiles[1] + r * 64, *t2 = tiles[2] + r * 64,
                  *t3 = tiles[3] + r * 64;
    const float *b0 = a->bias + o, *b1 = b0 + H, *b2 = b1 + H, *b3 = b2 + H;
    const float *d0 = a->div + o, *d1 = d0 + H, *d2 = d1 + H, *d3 = d2 + H;
    /* peepholes (as oneDNN's jit cell): i, f += c_prev * p (fused), o += c * p (fused) */
    const float *pp = a->peep ? a->peep + o : NULL;
#ifdef __AVX512F__
    {
        rv_tanh_tab_t tt;
        rv_tanh_load(&tt);
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        for (int k = 0; k < nc; k += 16) {
            const __mmask16 m = rv_mask(k, nc);
            const __m512 cp = _mm512_maskz_loadu_ps(m, c + k);
            __m512 pi = rv_gate(l0 + k, t0 + k, d0 + k, b0 + k, m);
            __m512 pf = rv_gate(l1 + k, t1 + k, d1 + k, b1 + k, m);
            __m512 po = rv_gate(l3 + k, t3 + k, d3 + k, b3 + k, m);
            if (pp) {
                pi = _mm512_fmadd_ps(cp, _mm512_maskz_loadu_ps(m, pp + k), pi);
                pf = _mm512_fmadd_ps(cp, _mm512_maskz_loadu_ps(m, pp + H + k), pf);
            }
            const __m512 gi = rv_logistic(pi), gf = rv_logistic(pf);
            const __m512 gc = rv_tanh(rv_gate(l2 + k, t2 + k, d2 + k, b2 + k, m), &tt);
            const __m512 cn = _mm512_fmadd_ps(gi, gc, _mm512_mul_ps(cp, gf));
            if (pp) po = _mm512_fmadd_ps(cn, _mm512_maskz_loadu_ps(m, pp + 2 * H + k), po);
            const __m512 go = rv_logistic(po);
            _mm512_mask_storeu_ps(c + k, m, cn);
            rv_store_u8(h + k, m, _mm512_mul_ps(rv_tanh(cn, &tt), go), vsc, vsh);
        }
        if (hf) rnn_store_f32(h, hf, nc, a->scale, a->shift);
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    float gi[64], gf[64], gc[64], go[64];
    /* dequantize + bias of each gate, then the non-linearities: short loops over local
     * arrays are what gcc vectorises (one long loop with 14 streams is not) */
    rnn_gate(gi, l0, t0, d0, b0, nc);
    rnn_gate(gf, l1, t1, d1, b1, nc);
    rnn_gate(gc, l2, t2, d2, b2, nc);
    rnn_gate(go, l3, t3, d3, b3, nc);
    if (pp) {
        for (int k = 0; k < nc; ++k) {
            const float cp = c[k];
            const float i = rnn_logistic(fmaf(cp, pp[k], gi[k]));
            const float f = rnn_logistic(fmaf(cp, pp[H + k], gf[k]));
            const float cn = fmaf(i, rnn_tanh(gc[k]), cp * f);
            c[k] = cn;
            const float og = rnn_logistic(fmaf(cn, pp[2 * H + k], go[k]));
            h[k] = rnn_quantize_u8(rnn_tanh(cn) * og, sc, sh);
        }
        if (hf) rnn_store_f32(h, hf, nc, sc, sh);
        return;
    }
    for (int k = 0; k < nc; ++k) {
        gi[k] = rnn_logistic(gi[k]);
        gf[k] = rnn_logistic(gf[k]);
        gc[k] = rnn_tanh(gc[k]);
        go[k] = rnn_logistic(go[k]);
    }
    for (int k = 0; k < nc; ++k) {
        const float cn = fmaf(gi[k], gc[k], c[k] * gf[k]);
        c[k] = cn;
        h[k] = rnn_quantize_u8(rnn_tanh(cn) * go[k], sc, sh);
    }
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}

/* vanilla RNN: h = act(W x + U h + b) */
static void RNN_FN(rnn_epi_vanilla)(const dnnq_rnn_args_t *a, const int32_t *lrow,
                                    int32_t *const *tiles, int r, int64_t j, int nc, uint8_t *h,
                                    float *hf) {
    const int64_t o = j * 64;
    const int32_t *t0 = tiles[0] + r * 64;
    const float *b0 = a->bias + o, *d0 = a->div + o;
    const float sc = a->scale, sh = a->shift;
    float v[64];
    for (int k = 0; k < nc; ++k) v[k] = (float)(lrow[k] + t0[k]) / d0[k] + b0[k];
    if (a->act == DNNQ_RNN_ACT_TANH)
        for (int k = 0; k < nc; ++k) v[k] = rnn_tanh(v[k]);
    else if (a->act == DNNQ_RNN_ACT_LOGISTIC)
        for (int k = 0; k < nc; ++k) v[k] = rnn_logistic(v[k]);
    else
        for (int k = 0; k < nc; ++k) v[k] = v[k] > 0.0f ? v[k] : v[k] * 0.0f;
    for (int k = 0; k < nc; ++k) h[k] = rnn_quantize_u8(v[k], sc, sh);
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}

/* GRU phase 1 (gates u, r): u kept in f32, r * h_prev requantized to u8 for the o gate GEMM */
static void RNN_FN(rnn_epi_gru1)(const dnnq_rnn_args_t *a, const int32_t *lrow,
                                 int32_t *const *tiles, int r, int64_t j, int nc,
                                 const uint8_t *hp, float *u, uint8_t *rh) {
    const int64_t H = a->H, o = j * 64;
    const int32_t *l0 = lrow, *l1 = lrow + 64;
    const int32_t *t0 = tiles[0] + r * 64, *t1 = tiles[1] + r * 64;
    const float *b0 = a->bias + o, *b1 = b0 + H;
    const float *d0 = a->div + o, *d1 = d0 + H;
#ifdef __AVX512F__
    {
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        for (int k = 0; k < nc; k += 16) {
            const __mmask16 m = rv_mask(k, nc);
            _mm512_mask_storeu_ps(u + k, m, rv_logistic(rv_gate(l0 + k, t0 + k, d0 + k, b0 + k, m)));
            const __m512 gr = rv_logistic(rv_gate(l1 + k, t1 + k, d1 + k, b1 + k, m));
            rv_store_u8(rh + k, m, _mm512_mul_ps(gr, rv_load_u8(hp + k, m, vsc, vsh)), vsc, vsh);
        }
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    float gu[64], gr[64];
    rnn_gate(gu, l0, t0, d0, b0, nc);
    rnn_gate(gr, l1, t1, d1, b1, nc);
    for (int k = 0; k < nc; ++k) {
        u[k] = rnn_logistic(gu[k]);
        gr[k] = rnn_logistic(gr[k]);
    }
    for (int k = 0; k < nc; ++k) rh[k] = rnn_quantize_u8(gr[k] * rnn_dequantize_u8(hp[k], sc, sh), sc, sh);
}

/* GRU phase 2: o = tanh(W_o x + U_o (r*h) + b_o), h = u*h_prev + (1-u)*o (u*h_prev, then a
 * fused (1-u)*o +, as oneDNN) */
static void RNN_FN(rnn_epi_gru2)(const dnnq_rnn_args_t *a, const int32_t *lrow,
                                 const int32_t *tile, int64_t j, int nc, const uint8_t *hp,
                                 const float *u, uint8_t *h, float *hf) {
    const int64_t H = a->H, o = j * 64;
    const int32_t *l2 = lrow + 128;
    const float *b2 = a->bias + 2 * H + o, *d2 = a->div + 2 * H + o;
#ifdef __AVX512F__
    {
        rv_tanh_tab_t tt;
        rv_tanh_load(&tt);
        const __m512 vsc = _mm512_set1_ps(a->scale), vsh = _mm512_set1_ps(a->shift);
        const __m512 one = _mm512_set1_ps(1.0f);
        for (int k = 0; k < nc; k += 16) {
            const __mmask16 m = rv_mask(k, nc);
            const __m512 go = rv_tanh(rv_gate(l2 + k, tile + k, d2 + k, b2 + k, m), &tt);
            const __m512 gu = _mm512_maskz_loadu_ps(m, u + k);
            const __m512 hprev = rv_load_u8(hp + k, m, vsc, vsh);
            const __m512 hn = _mm512_fmadd_ps(_mm512_sub_ps(one, gu), go, _mm512_mul_ps(gu, hprev));
            rv_store_u8(h + k, m, hn, vsc, vsh);
        }
        if (hf) rnn_store_f32(h, hf, nc, a->scale, a->shift);
        return;
    }
#endif
    const float sc = a->scale, sh = a->shift;
    for (int k = 0; k < nc; ++k) {
        const float go = rnn_tanh((float)(l2[k] + tile[k]) / d2[k] + b2[k]);
        const float hprev = rnn_dequantize_u8(hp[k], sc, sh);
        const float hn = fmaf(1.0f - u[k], go, u[k] * hprev);
        h[k] = rnn_quantize_u8(hn, sc, sh);
    }
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}

/* LBR-GRU: u, r as GRU; o = tanh((W_o x + b_o) + r * (U_o h + b_extra)), each product
 * dequantized on its own (bias rows 2 and 3 carry their own shift compensation) */
static void RNN_FN(rnn_epi_lbr)(const dnnq_rnn_args_t *a, const int32_t *lrow,
                                int32_t *const *tiles, int r, int64_t j, int nc,
                                const uint8_t *hp, uint8_t *h, float *hf) {
    const int64_t H = a->H, o = j * 64;
    const int32_t *l0 = lrow, *l1 = lrow + 64, *l2 = lrow + 128;
    const int32_t *t0 = tiles[0] + r * 64, *t1 = tiles[1] + r * 64, *t2 = tiles[2] + r * 64;
    const float *b0 = a->bias + o, *b1 = b0 + H, *b2 = b1 + H, *b3 = b2 + H;
    const float *d0 = a->div + o, *d1 = d0 + H, *d2 = d1 + H;
    const float sc = a->scale, sh = a->shift;
    for (int k = 0; k < nc; ++k) {
        const float gu = rnn_logistic((float)(l0[k] + t0[k]) / d0[k] + b0[k]);
        const float gr = rnn_logistic((float)(l1[k] + t1[k]) / d1[k] + b1[k]);
        const float wx = (float)l2[k] / d2[k] + b2[k];
        const float uh = (float)t2[k] / d2[k] + b3[k];
        const float go = rnn_tanh(wx + gr * uh);
        const float hprev = rnn_dequantize_u8(hp[k], sc, sh);
        const float hn = fmaf(1.0f - gu, go, gu * hprev);
        h[k] = rnn_quantize_u8(hn, sc, sh);
    }
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}

/* LSTMP: the projected h of one row, channels [o, o + nc): oneDNN 3.2's u8 projection
 * post-GEMM (ref_postgemm_lstm_projection.cpp), (f32(acc) - comp * shift) / f32(pscale *
 * scale), requantized */
static void RNN_FN(rnn_epi_proj)(const dnnq_rnn_args_t *a, const int32_t *acc, int64_t o, int nc,
                                 uint8_t *h, float *hf) {
    const float sc = a->scale, sh = a->shift;
    const float *pc = a->pcomp + o, *pd = a->pdiv + o;
    for (int k = 0; k < nc; ++k) h[k] = rnn_quantize_u8(((float)acc[k] - pc[k]) / pd[k], sc, sh);
    if (hf) rnn_store_f32(h, hf, nc, sc, sh);
}

/* ---- work ---------------------------------------------------------------------------------- */

/* The layer products of row m = t*N + n, channel block j (G * 64 s32): laid out [t][j][n] so
 * that the rows of one work item of a step are one contiguous run */
static inline int32_t *rnn_lacc_row(const rnn_ctx_t *x, int64_t m, int64_t j) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t t = m / a->N, n = m % a->N;
    return a->lacc + ((t * a->nblk + j) * a->N + n) * a->G * 64;
}

/* the layer products of rows [mlo, mhi) (whole time steps), items (panel, row block) */
static void RNN_FN(rnn_layer_gemm)(const rnn_ctx_t *x, int64_t mlo, int64_t mhi, int tid,
                                   int nth) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t nlmb = (mhi - mlo + x->lmb - 1) / x->lmb;
    const int64_t npan = a->nblk * a->G, nitems = npan * nlmb;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    int32_t tile[DNNQ_MR_MAX * 64] __attribute__((aligned(64)));
    for (int64_t it = i0; it < i1; ++it) {
        const int64_t p = it / nlmb, mb = it % nlmb, M = mhi - mlo;
        /* blocks and the tiles inside them split evenly (50 rows: 25 + 25 as 5 x 5, not
         * 48 + 2): a short tile reuses each weights load for fewer rows */
        const int64_t m0 = mlo + M * mb / nlmb, m1 = mlo + M * (mb + 1) / nlmb;
        const int64_t ntl = (m1 - m0 + x->mr - 1) / x->mr;
        const int8_t *bp = a->wl + p * x->wl_panel;
        for (int64_t tl = 0; tl < ntl; ++tl) {
            const int64_t m = m0 + (m1 - m0) * tl / ntl;
            const int mr = (int)(m0 + (m1 - m0) * (tl + 1) / ntl - m);
            x->ukr(mr, a->C, a->x + m * a->x_sn, a->x_sn, 0, bp, tile);
            for (int r = 0; r < mr; ++r)
                memcpy(rnn_lacc_row(x, m + r, p / a->G) + (p % a->G) * 64, tile + r * 64,
                       64 * sizeof(int32_t));
        }
    }
}

/* rows of the layer products needed by steps [s0, s1) */
static inline void rnn_chunk_rows(const dnnq_rnn_args_t *a, int64_t s0, int64_t s1,
                                  int64_t *mlo, int64_t *mhi) {
    const int64_t tlo = a->reverse ? a->T - s1 : s0, thi = a->reverse ? a->T - s0 : s1;
    *mlo = tlo * a->N;
    *mhi = thi * a->N;
}

/* one phase of step s: items (block j, row tile) shared out in contiguous runs */
/* LSTMP, second phase of step s: the projection of the u8 h of the whole row, items (64-channel
 * block of P, row tile) */
static void RNN_FN(rnn_proj_phase)(const rnn_ctx_t *x, int64_t s, int tid, int nth) {
    const dnnq_rnn_args_t *a = x->a;
    const int64_t N = a->N, H = a->H, P = a->P, nrt = x->nrt, npb = (P + 63) / 64;
    const int64_t nitems = npb * nrt;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    const int64_t t = rnn_time(a, s);
    const int64_t wp_panel = ((H + 3) / 4) * 4 * 64;
    int32_t tile[DNNQ_MR_MAX * 64] __attribute__((aligned(64)));
    for (int64_t it = i0; it < i1; ++it) {
        const int64_t j = it / nrt, rt = it % nrt;
        const int64_t n0 = N * rt / nrt, n1 = N * (rt + 1) / nrt;
        const int mr = (int)(n1 - n0);
        const int nc = (int)(P - j * 64 < 64 ? P - j * 64 : 64);
        if (mr <= 0) continue;
        x->ukr(mr, H, a->hproj + n0 * H, H, 0, a->wp + j * wp_panel, tile);
        for (int r = 0; r < mr; ++r) {
            const int64_t n = n0 + r;
            uint8_t *h = a->out + t * a->out_st + n * a->out_sn + j * 64;
            float *hf = a->outf ? a->outf + t * a->outf_st + n * a->outf_sn + j * 64 : NULL;
            RNN_FN(rnn_epi_proj)(a, tile + r * 64, j * 64, nc, h, hf);
        }
    }
}

static void RNN_FN(rnn_step_phase)(const rnn_ctx_t *x, int64_t s, int phase, int tid, int nth) {
    const dnnq_rnn_args_t *a = x->a;
    if (a->wp && phase == 1) {
        RNN_FN(rnn_proj_phase)(x, s, tid, nth);
        return;
    }
    const int64_t N = a->N, H = a->H, G = a->G, nrt = x->nrt, nitems = a->nblk * nrt;
    const int64_t i0 = nitems * tid / nth, i1 = nitems * (tid + 1) / nth;
    const int64_t t = rnn_time(a, s);
    int32_t tbuf[RNN_MAXG][DNNQ_MR_MAX * 64] __attribute__((aligned(64)));
    int32_t *tiles[RNN_MAXG] = {tbuf[0], tbuf[1], tbuf[2], tbuf[3]};
    /* odd steps walk the work (and the gates) backwards: the recurrent weights are about the
     * size of L2 at batch 1 (1 MiB for H = 512), and a cyclic walk would miss on every line
     * while a back-and-forth walk starts on the lines the previous step used last */
    const int back = (int)(s & 1);
    for (int64_t ii = i0; ii < i1; ++ii) {
        const int64_t it = back ? i1 - 1 - (ii - i0) : ii;
        const int64_t j = it / nrt, rt = it % nrt;
        const int64_t n0 = N * rt / nrt, n1 = N * (rt + 1) / nrt;
        const int mr = (int)(n1 - n0);
        const int nc = (int)(H - j * 64 < 64 ? H - j * 64 : 64);
        if (mr <= 0) continue;
        if (phase == 0) {
            /* the layer products of this item were written long ago (out of cache by now):
             * fetch them while the micro-kernel runs */
            const char *lp = (const char *)rnn_lacc_row(x, t * N + n0, j);
            const int64_t bytes = (int64_t)mr * G * 64 * 4;
            for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(lp + o, 0, 3);
        }
        int64_t lda;
        const uint8_t *hp = rnn_h_prev(a, s, n0, &lda);
        const int8_t *wb = a->wi + j * G * x->wi_panel;
        if (a->cell == DNNQ_RNN_GRU && phase == 1) {
            /* o gate: U_o . (r*h) */
            x->ukr(mr, H, a->rh + n0 * H, H, 0, wb + 2 * x->wi_panel, tiles[0]);
        } else {
            const int ng = a->cell == DNNQ_RNN_GRU ? 2 : (int)G;
            for (int gg = 0; gg < ng; ++gg) {
                const int g = back ? ng - 1 - gg : gg;
                x->ukr(mr, a->Ki, hp, lda, 0, wb + g * x->wi_panel, tiles[g]);
            }
        }
        for (int r = 0; r < mr; ++r) {
            const int64_t n = n0 + r;
            const int32_t *lrow = rnn_lacc_row(x, t * N + n, j);
            uint8_t *h = a->out + t * a->out_st + n * a->out_sn + j * 64;
            float *hf = a->outf ? a->outf + t * a->outf_st + n * a->outf_sn + j * 64 : NULL;
            const uint8_t *hpr = hp + r * lda + j * 64;
            switch (a->cell) {
            case DNNQ_RNN_LSTM:
                if (a->wp)   /* LSTMP: the u8 h goes to the projection phase */
                    RNN_FN(rnn_epi_lstm)(a, lrow, tiles, r, j, nc, a->c + n * H + j * 64,
                                         a->hproj + n * H + j * 64, NULL);
                else
                    RNN_FN(rnn_epi_lstm)(a, lrow, tiles, r, j, nc, a->c + n * H + j * 64, h, hf);
                break;
            case DNNQ_RNN_VANILLA:
                RNN_FN(rnn_epi_vanilla)(a, lrow, tiles, r, j, nc, h, hf);
                break;
            case DNNQ_RNN_LBR_GRU:
                RNN_FN(rnn_epi_lbr)(a, lrow, tiles, r, j, nc, hpr, h, hf);
                break;
            default:
                if (phase == 0)
                    RNN_FN(rnn_epi_gru1)(a, lrow, tiles, r, j, nc, hpr, a->gate_u + n * H + j * 64,
                                         a->rh + n * H + j * 64);
                else
                    RNN_FN(rnn_epi_gru2)(a, lrow, tiles[0] + r * 64, j, nc, hpr,
                                         a->gate_u + n * H + j * 64, h, hf);
            }
        }
    }
}

void RNN_FN(dnnq_rnn_forward)(const dnnq_rnn_args_t *a) {
    rnn_ctx_t x;
    const int gisa = a->gemm_isa == DNNQ_ISA_AVX512_CORE_AMX ? DNNQ_ISA_AVX512_CORE_VNNI
                                                             : a->gemm_isa;
    x.a = a;
    x.ukr = dnnq_gemm_ukr_for_isa(gisa);
    x.mr = dnnq_gemm_mr_for_isa(gisa);
    if (x.mr > DNNQ_MR_MAX) x.mr = DNNQ_MR_MAX;
    x.lw = a->nblk * a->G * 64;
    x.wl_panel = ((a->C + 3) / 4) * 4 * 64;
    x.wi_panel = ((a->Ki + 3) / 4) * 4 * 64;
    x.nrt = (a->N + x.mr - 1) / x.mr;
    x.lmb = (int64_t)x.mr * 8;
    const int nph = a->cell == DNNQ_RNN_GRU || a->wp ? 2 : 1;
    const int64_t T = a->T;
    /* the layer GEMM runs in chunks of tc steps, just before them, so that their products
     * (N * G * H s32 a step) are still in cache when the steps read them (2 MiB a chunk) */
    const int64_t step_bytes = a->N * x.lw * 4;
    int64_t tc = ((int64_t)2 << 20) / (step_bytes > 0 ? step_bytes : 1);
    tc = tc < 1 ? 1 : tc > T ? T : tc;
    int nt = a->nthreads < 1 ? 1 : a->nthreads;
    /* a thread per 2^17 multiply-adds of a step at most: below that a barrier (a few us, far
     * more when the machine is oversubscribed) costs more than the share it saves */
    const int64_t step_macs = a->N * a->H * a->G * a->H;
    if (nt > 1 && step_macs >> 17 < nt) nt = step_macs >> 17 < 1 ? 1 : (int)(step_macs >> 17);
    int64_t mlo, mhi;
    if (nt == 1) {
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &mlo, &mhi);
            RNN_FN(rnn_layer_gemm)(&x, mlo, mhi, 0, 1);
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) RNN_FN(rnn_step_phase)(&x, s, ph, 0, 1);
        }
        return;
    }
    if (a->fork_join) {
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &mlo, &mhi);
#pragma omp parallel num_threads(nt)
            RNN_FN(rnn_layer_gemm)(&x, mlo, mhi, omp_get_thread_num(), omp_get_num_threads());
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) {
#pragma omp parallel num_threads(nt)
                    RNN_FN(rnn_step_phase)(&x, s, ph, omp_get_thread_num(),
                                           omp_get_num_threads());
                }
        }
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        const int tid = omp_get_thread_num(), nth = omp_get_num_threads();
        int64_t lo, hi;
        for (int64_t s0 = 0; s0 < T; s0 += tc) {
            const int64_t s1 = s0 + tc < T ? s0 + tc : T;
            rnn_chunk_rows(a, s0, s1, &lo, &hi);
            RNN_FN(rnn_layer_gemm)(&x, lo, hi, tid, nth);
#pragma omp barrier
            for (int64_t s = s0; s < s1; ++s)
                for (int ph = 0; ph < nph; ++ph) {
                    RNN_FN(rnn_step_phase)(&x, s, ph, tid, nth);
#pragma omp barrier
                }
        }
    }
}

void RNN_FN(dnnq_rnn_eltwise)(int alg, float *v, int64_t n) {
    if (alg == DNNQ_RNN_ACT_TANH)
        for (int64_t i = 0; i < n; ++i) v[i] = rnn_tanh(v[i]);
    else
        for (int64_t i = 0; i < n; ++i) v[i] = rnn_logistic(v[i]);
}

/* Streams n bytes (a multiple of 256) reps times with the widest loads of the ISA and
 * returns a checksum: the read bandwidth the batch-1 step is compared against (benchmarks). */
int64_t RNN_FN(dnnq_rnn_read_stream)(const uint8_t *buf, int64_t n, int64_t reps) {
#ifdef __AVX512F__
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t o = 0; o < n; o += 256) {
            s0 = _mm512_add_epi32(s0, _mm512_loadu_si512((const void *)(buf + o)));
            s1 = _mm512_add_epi32(s1, _mm512_loadu_si512((const void *)(buf + o + 64)));
            s2 = _mm512_add_epi32(s2, _mm512_loadu_si512((const void *)(buf + o + 128)));
            s3 = _mm512_add_epi32(s3, _mm512_loadu_si512((const void *)(buf + o + 192)));
        }
    return _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_add_epi32(s0, s1), _mm512_add_epi32(s2, s3)));
#else
    int64_t acc = 0;
    for (int64_t r = 0; r < reps; ++r)
        for (int64_t o = 0; o < n; o += 8) {
            int64_t v;
            memcpy(&v, buf + o, 8);
            acc += v;
        }
    return acc;
#endif
}
