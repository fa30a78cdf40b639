/* The deconvolution kernel "deconv_ks" (a kernel of conv_kernels.c's table): kernel = stride
 * along every dim, no padding, no dilation, no groups, kw * OC <= 64 (the 2x2 stride-2
 * upsampling heads of U-Net / DBNet).  See docs/convolution.md, "Deconvolutions whose kernel
 * is the stride".  ISA-independent: the micro-kernels and epilogues through the pointers in
 * dnnq_conv_t.
 *
 * Output pixel (kd zd + a, kh y + i, kw x + j) is reached by exactly one tap (a, i, j), from
 * source pixel (zd, y, x).  For one kernel row r = (a, i) the kw * OC outputs of source pixel x
 * are the contiguous run of output row (kd zd + a, kh y + i) starting at pixel kw x, and
 * consecutive source pixels give consecutive runs: each (source row, kernel row) is one dense
 * GEMM, M = iw source pixels, K = IC, N = nk = kw * OC columns n = j OC + oc, its result the
 * output row as a dense (iw, nk) matrix.  The column-phase driver (conv_deconv.c) runs one
 * GEMM per tap of OC columns instead: with OC = 1, one useful column of a 16-wide micro-tile
 * and one value per epilogue vector.
 *
 * The per-tap panels of the packed weights are regrouped per execution into one panel per
 * kernel row (ks_prepare: a few KiB).  The epilogue is the shared one (cv->epilogue, or the
 * micro-kernel with the epilogue fused), run over rows of we = pe nk columns that hold pe
 * consecutive source pixels' outputs (pe = 64 / nk, at least 1): column c of such a row is
 * output channel c % OC, so the per-channel constants (weights scales, bias, dst zero points,
 * binary inputs) are repeated to 64 columns once per item, and one 64-column epilogue row
 * finishes up to 64 outputs.  With pe > 1 the micro-kernel's tile (a pixel per row) is first
 * gathered into such rows, its compensation added there (the same s32 wrapping sum).
 *
 * Compensation: every output has exactly one tap inside, so as in the column-phase driver it
 * is col_comp (every tap's) plus the zero-point row's product with each tap left out (zc_t):
 * comp[r][j OC + oc] = col_comp[oc] + sum_{t != (r, j)} zc_t[oc], all s32 wrapping. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"

/* regroup the per-tap panels into one panel per kernel row, and each row's compensation */
int dnnq_conv_prepare_deconv_ks(dnnq_conv_t *cv) {
    cv->ks_packed = NULL;
    cv->ks_comp = NULL;
    if (!cv->packed) return 0;
    const int64_t nrow = cv->kd * cv->kh, kw = cv->kw, OC = cv->OC, ntap = cv->npairs;
    const int64_t bstep = cv->K4 * 4 * DNNQ_NR;
    /* (+ the AMX kernels' slack past the last panel: deconv_ks_amx plans read it) */
    const int64_t pk_bytes = nrow * bstep + DNNQ_AMX_B_SLACK;
    int8_t *pk = (int8_t *)aligned_alloc(64, (size_t)pk_bytes);
    int32_t *comp = (int32_t *)aligned_alloc(64, sizeof(int32_t) * DNNQ_NR * (size_t)nrow);
    int32_t *zc = (int32_t *)aligned_alloc(64, sizeof(int32_t) * DNNQ_NR * (size_t)(ntap + 1));
    if (!pk || !comp || !zc) {
        free(pk);
        free(comp);
        free(zc);
        return -1;
    }
    memset(pk, 0, (size_t)pk_bytes);
    for (int64_t r = 0; r < nrow; ++r)
        for (int64_t j = 0; j < kw; ++j) {
            const int8_t *tp = cv->packed + (r * kw + j) * bstep; /* tap (r, j), [K4][64][4] */
            for (int64_t k4 = 0; k4 < cv->K4; ++k4)
                memcpy(pk + r * bstep + (k4 * DNNQ_NR + j * OC) * 4, tp + k4 * DNNQ_NR * 4,
                       (size_t)(OC * 4));
        }
    /* the left-out taps add something when the zero-point row does not read as zero bytes */
    int need = cv->zp_rows && cv->a_xor != DNNQ_A_U8;
    for (int64_t i = 0; cv->zp_rows && i < cv->kpair && !need; ++i) need = cv->zp_rows[i] != 0;
    const int32_t *cc = cv->epi.col_comp;
    int32_t *total = zc + ntap * DNNQ_NR; /* sum of every tap's zc */
    memset(total, 0, sizeof(int32_t) * DNNQ_NR);
    if (need)
        for (int64_t t = 0; t < ntap; ++t) {
            dnnq_br_pair_t q;
            q.a = cv->zp_rows;
            q.lda = 0;
            q.rows = NULL;
            q.b = cv->packed + t * bstep;
            q.K = cv->kpair;
            cv->brgemm(1, 1, &q, cv->a_xor, 0, zc + t * DNNQ_NR);
            for (int64_t oc = 0; oc < OC; ++oc)
                total[oc] = (int32_t)((uint32_t)total[oc] + (uint32_t)zc[t * DNNQ_NR + oc]);
        }
    if (need && cv->amx) dnnq_amx_release();
    int any = 0;
    for (int64_t r = 0; r < nrow; ++r) {
        int32_t *row = comp + r * DNNQ_NR;
        memset(row, 0, sizeof(int32_t) * DNNQ_NR);
        for (int64_t j = 0; j < kw; ++j)
            for (int64_t oc = 0; oc < OC; ++oc) {
                uint32_t v = cc ? (uint32_t)cc[oc] : 0u;
                if (need)
                    v += (uint32_t)total[oc] - (uint32_t)zc[(r * kw + j) * DNNQ_NR + oc];
                row[j * OC + oc] = (int32_t)v;
                any |= v != 0;
            }
    }
    free(zc);
    cv->ks_packed = pk;
    if (any || cc)
        cv->ks_comp = comp;
    else
        free(comp);
    return 0;
}

void dnnq_conv_finish_deconv_ks(dnnq_conv_t *cv) {
    free((void *)cv->ks_packed);
    free((void *)cv->ks_comp);
    cv->ks_packed = NULL;
    cv->ks_comp = NULL;
}

/* the per-channel constants of ge repeated over 64 columns (column c: channel c % OC) */
typedef struct {
    float scale[DNNQ_NR], bias[DNNQ_NR];
    int32_t dst_zp[DNNQ_NR];
    int32_t zeros[DNNQ_NR]; /* the epilogue's col_comp where the compensation is added before */
    float s1[DNNQ_CONV_MAX_POST][DNNQ_NR], s2[DNNQ_CONV_MAX_POST][DNNQ_NR];
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
} ks_consts_t;

static void repeat_f32(float *out, const float *in, int64_t sn, int64_t OC) {
    for (int c = 0; c < DNNQ_NR; ++c) out[c] = in[(c % OC) * sn];
}

/* ge with its constants repeated into k (rows of we columns, d_sm we); -1: a per-pixel
 * input (the implementation list excludes them) */
static int repeat_consts(const dnnq_gemm_args_t *ge, int64_t OC, int64_t we, ks_consts_t *k,
                         dnnq_gemm_args_t *gs) {
    *gs = *ge;
    gs->N = we;
    gs->n_panels = 1;
    gs->d_sm = we;
    if (ge->wzp || (ge->bias && ge->bias_sm)) return -1;
    if (ge->scale && ge->scale_sn) {
        repeat_f32(k->scale, ge->scale, ge->scale_sn, OC);
        gs->scale = k->scale;
        gs->scale_sn = 1;
    }
    if (ge->bias && ge->bias_sn) {
        repeat_f32(k->bias, ge->bias, ge->bias_sn, OC);
        gs->bias = k->bias;
        gs->bias_sn = 1;
    }
    if (ge->dst_zp && ge->dst_zp_sn) {
        for (int c = 0; c < DNNQ_NR; ++c) k->dst_zp[c] = ge->dst_zp[(c % OC) * ge->dst_zp_sn];
        gs->dst_zp = k->dst_zp;
        gs->dst_zp_sn = 1;
    }
    for (int i = 0; i < ge->n_post; ++i) {
        dnnq_postop_t *p = k->post + i;
        *p = ge->post[i];
        if ((p->src1 && p->s1_m) || (p->src2 && p->s2_m)) return -1;
        if (p->src1 && p->s1_n) {
            repeat_f32(k->s1[i], p->src1, p->s1_n, OC);
            p->src1 = k->s1[i];
            p->s1_n = 1;
        }
        if (p->src2 && p->s2_n) {
            repeat_f32(k->s2[i], p->src2, p->s2_n, OC);
            p->src2 = k->s2[i];
            p->s2_n = 1;
        }
    }
    gs->post = k->post;
    memset(k->zeros, 0, sizeof(k->zeros));
    gs->col_comp = k->zeros;
    gs->c_sb = 0;
    return 0;
}

/* the micro-kernel's tile rows (one pixel each, nk columns) into the epilogue's rows of pe
 * pixels, plus the compensation: pixel q of the run at row q / pe, column (q % pe) nk.  Each
 * pixel copies W >= nk columns, whole 4-lane vectors (GCC vector extensions: SSE2 on x86-64,
 * any target); the columns past nk are overwritten by the next pixel, or lie past we (or in
 * the margin after the last row). */
typedef int32_t ks_v4 __attribute__((vector_size(16)));

static inline ks_v4 ks_load(const int32_t *p) {
    ks_v4 v;
    memcpy(&v, p, sizeof(v));
    return v;
}

#define KS_GATHER(NV)                                                                         \
    static void gather_##NV(const int32_t *tile, int mr, int64_t q0, int64_t nk, int64_t pe,  \
                            const int32_t *comp, int32_t *flat) {                             \
        ks_v4 cv[NV];                                                                         \
        for (int v = 0; v < (NV); ++v) cv[v] = comp ? ks_load(comp + 4 * v) : (ks_v4){0};     \
        int64_t row = q0 / pe, col = (q0 % pe) * nk;                                          \
        for (int r = 0; r < mr; ++r) {                                                        \
            int32_t *d = flat + row * DNNQ_NR + col;                                          \
            for (int v = 0; v < (NV); ++v) {                                                  \
                const ks_v4 x = ks_load(tile + r * DNNQ_NR + 4 * v) + cv[v];                  \
                memcpy(d + 4 * v, &x, sizeof(x));                                             \
            }                                                                                 \
            col += nk;                                                                        \
            if (col == pe * nk) {                                                             \
                col = 0;                                                                      \
                ++row;                                                                        \
            }                                                                                 \
        }                                                                                     \
    }
KS_GATHER(1)
KS_GATHER(2)
KS_GATHER(4)
KS_GATHER(8)
#undef KS_GATHER

static void gather_rows(const int32_t *tile, int mr, int64_t q0, int64_t nk, int64_t pe,
                        const int32_t *comp, int32_t *flat) {
    if (nk <= 4)
        gather_1(tile, mr, q0, nk, pe, comp, flat);
    else if (nk <= 8)
        gather_2(tile, mr, q0, nk, pe, comp, flat);
    else if (nk <= 16)
        gather_4(tile, mr, q0, nk, pe, comp, flat);
    else
        gather_8(tile, mr, q0, nk, pe, comp, flat);
}

enum { KS_FLAT_ROWS = DNNQ_CONV_TILE_ROWS, KS_MARGIN = 32 };

/* the AVX-512 kernel with pixels in the lanes takes the plan (its level under the cap) */
static int ks_lanes_fits(const dnnq_conv_t *cv) {
#ifdef DNNQ_HAVE_X86_KERNELS
    const int level = DNNQ_ISA_LEVEL(cv->isa);
    const int64_t nk = cv->kw * cv->OC;
    return (level == DNNQ_ISA_AVX512_CORE_VNNI || level == DNNQ_ISA_AVX512_CORE_AMX) &&
           nk <= 2 && cv->kd * cv->kh * nk <= KS_LANES_MAX_OUT && cv->IC % 4 == 0;
#else
    (void)cv;
    return 0;
#endif
}

/* the epilogue of cnt source pixels' outputs of one kernel row, gathered into rows of pe
 * pixels at flat (s32, or f32 for an f32 plan), to the output row at dst (gr: the item's
 * epilogue) */
static void ks_finish_run(const dnnq_conv_t *cv, dnnq_gemm_args_t *gr, char *dst, int64_t cnt,
                          int64_t nk, int64_t pe, const void *flat) {
    const int64_t full = cnt / pe, rem = cnt % pe;
    gr->dst = dst;
    for (int part = 0; part < 2; ++part) {
        const int64_t m = part ? full : 0, rows = part ? 1 : full;
        if (!(part ? rem : full)) continue;
        gr->N = (part ? rem : pe) * nk;
        if (cv->f32)
            cv->epilogue_f32(gr, 0, m, (int)rows, 0, (const float *)flat + m * DNNQ_NR);
        else
            cv->epilogue(gr, 0, m, (int)rows, 0, (const int32_t *)flat + m * DNNQ_NR);
    }
}

/* one source row by the lanes kernel: every kernel row's outputs of a run of pixels at once,
 * then each kernel row's epilogue */
static void ks_lanes_row(const dnnq_conv_t *cv, const dnnq_gemm_args_t *gs, const uint8_t *srow,
                         int64_t zd, int64_t y, char *dst_img, int esz, int32_t *flat,
                         int64_t flat_len) {
#ifdef DNNQ_HAVE_X86_KERNELS
    const int64_t nrow = cv->kd * cv->kh, nk = cv->kw * cv->OC, pe = DNNQ_NR / nk;
    const int64_t chunk = pe * KS_FLAT_ROWS;
    const int32_t *comp[KS_LANES_MAX_OUT];
    int32_t *rows[KS_LANES_MAX_OUT];
    for (int64_t r = 0; r < nrow; ++r) {
        comp[r] = cv->ks_comp ? cv->ks_comp + r * DNNQ_NR : NULL;
        rows[r] = flat + r * flat_len;
    }
    dnnq_gemm_args_t gr = *gs;
    for (int64_t x0 = 0; x0 < cv->iw; x0 += chunk) {
        const int64_t cnt = cv->iw - x0 < chunk ? cv->iw - x0 : chunk;
        dnnq_deconv_ks_lanes_avx512(cv, srow + x0 * cv->IC, cnt, comp, rows);
        for (int64_t r = 0; r < nrow; ++r) {
            const int64_t od = zd * cv->kd + r / cv->kh, oh = y * cv->kh + r % cv->kh;
            const int64_t m_row = (od * cv->oh + oh) * cv->iw;
            ks_finish_run(cv, &gr, dst_img + (m_row + x0) * nk * esz, cnt, nk, pe, rows[r]);
        }
    }
#else
    (void)cv, (void)gs, (void)srow, (void)zd, (void)y, (void)dst_img, (void)esz, (void)flat;
    (void)flat_len;
#endif
}

/* the item's image n and its source rows [sr0, sr1) (the plan's mc: whole source rows'
 * output pixels) */
static void ks_item_rows(const dnnq_conv_t *cv, int64_t item, int64_t *n, int64_t *sr0,
                         int64_t *sr1) {
    const int64_t srows = cv->id * cv->ih;
    const int64_t per = cv->mc / (cv->kd * cv->kh * cv->ow); /* source rows per item */
    const int64_t nblk = (srows + per - 1) / per;
    *n = item / nblk;
    *sr0 = (item % nblk) * per;
    *sr1 = *sr0 + per < srows ? *sr0 + per : srows;
}

int dnnq_conv_run_item_deconv_ks(const dnnq_conv_t *cv, int64_t item) {
    const int64_t srows = cv->id * cv->ih, nrow = cv->kd * cv->kh;
    int64_t n, sr0, sr1;
    ks_item_rows(cv, item, &n, &sr0, &sr1);
    const int64_t OC = cv->OC, nk = cv->kw * OC, iw = cv->iw, IC = cv->IC;
    const int64_t pe = nk <= DNNQ_NR ? DNNQ_NR / nk : 1, we = pe * nk;
    const int64_t bstep = cv->K4 * 4 * DNNQ_NR;

    dnnq_gemm_args_t ge, gs;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    ks_consts_t *k = (ks_consts_t *)aligned_alloc(64, (sizeof(ks_consts_t) + 63) / 64 * 64);
    /* (pe == 1) the fused micro-kernel's state per kernel row */
    dnnq_epi_state_t *st = (dnnq_epi_state_t *)aligned_alloc(
        64, sizeof(dnnq_epi_state_t) * (size_t)(pe == 1 ? nrow : 1));
    /* AVX-512: one or two columns per kernel row take the kernel with pixels in the lanes,
     * every kernel row's outputs of a pixel run at once (conv_deconv_ks_lanes_avx512.c) */
    const int lanes = ks_lanes_fits(cv);
    const int64_t nflat = lanes ? nrow : 1, flat_len = KS_FLAT_ROWS * DNNQ_NR + KS_MARGIN;
    int32_t *flat = (int32_t *)aligned_alloc(64, sizeof(int32_t) * (size_t)(nflat * flat_len));
    int *fuse = (int *)malloc(sizeof(int) * (size_t)nrow);
    if (!k || !st || !flat || !fuse || repeat_consts(&ge, OC, we, k, &gs) != 0) {
        const int oom = !k || !st || !flat || !fuse;
        free(k);
        free(st);
        free(flat);
        free(fuse);
        return oom ? -1 : -2;
    }
    const int esz = gs.dst_dt == DNNQ_DT_S8 || gs.dst_dt == DNNQ_DT_U8 ? 1 : 4;
    char *const dst_img = (char *)gs.dst;
    /* the fused kernel writes dst row m of the image seen as (pixels / kw, nk): per kernel row
     * its state once, with the kernel row's compensation */
    for (int64_t r = 0; r < nrow; ++r) {
        fuse[r] = 0;
        if (pe != 1) continue;
        dnnq_gemm_args_t gr = gs;
        if (cv->ks_comp) gr.col_comp = cv->ks_comp + r * DNNQ_NR;
        fuse[r] = dnnq_conv_fuse_kind(cv, &gr, 0, st + r);
    }
    /* (AMX plans: the AMX batch-reduce kernel, tiles of up to 32 source pixels, no fused
     * micro-kernel: dnnq_conv_build_tiles set the pointers) */
    const dnnq_brgemm_ukr_fn brg = dnnq_conv_brgemm_for(cv, nk);
    const int mr_max = dnnq_conv_call_rows(cv);
    const uint8_t *img = cv->src + n * srows * iw * IC;
    const uint8_t *src_end = cv->src + cv->N * srows * iw * IC;
    int32_t tile[DNNQ_AMX_BR_MR * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t chunk = pe * KS_FLAT_ROWS; /* source pixels per epilogue call */

    for (int64_t sr = sr0; sr < sr1; ++sr) {
        const int64_t zd = sr / cv->ih, y = sr % cv->ih;
        const uint8_t *srow = img + sr * iw * IC;
        if (lanes) {
            ks_lanes_row(cv, &gs, srow, zd, y, dst_img, esz, flat, flat_len);
            continue;
        }
        for (int64_t r = 0; r < nrow; ++r) {
            const int64_t od = zd * cv->kd + r / cv->kh, oh = y * cv->kh + r % cv->kh;
            const int64_t m_row = (od * cv->oh + oh) * iw; /* in rows of nk outputs */
            const int32_t *comp = cv->ks_comp ? cv->ks_comp + r * DNNQ_NR : NULL;
            dnnq_br_pair_t pair;
            pair.lda = IC;
            pair.rows = NULL;
            pair.b = cv->ks_packed + r * bstep;
            dnnq_gemm_args_t gr = gs; /* (pe > 1: comp added by gather_rows) */
            if (pe == 1 && comp) gr.col_comp = comp;
            for (int64_t x0 = 0; x0 < iw; x0 += chunk) {
                const int64_t cnt = iw - x0 < chunk ? iw - x0 : chunk;
                for (int64_t xr = 0; xr < cnt;) {
                    const int mr = (int)(cnt - xr < mr_max ? cnt - xr : mr_max);
                    pair.a = srow + (x0 + xr) * IC;
                    /* K rounded up to a multiple of 4 where that stays inside the source: the
                     * extra bytes meet the zero padding of the packed weights */
                    pair.K = cv->kpair;
                    if ((pair.K & 3) && pair.a + (mr - 1) * IC + cv->K4 * 4 <= src_end)
                        pair.K = cv->K4 * 4;
                    if (pe == 1 && fuse[r] && !(pair.K & 3)) {
                        cv->brgemm_epi(mr, 1, &pair, st + r, fuse[r], m_row + x0 + xr, 1);
                    } else if (pe == 1) {
                        brg(mr, 1, &pair, cv->a_xor, 0, tile);
                        cv->epilogue(&gr, 0, m_row + x0 + xr, mr, 0, tile);
                    } else {
                        brg(mr, 1, &pair, cv->a_xor, 0, tile);
                        gather_rows(tile, mr, xr, nk, pe, comp, flat);
                    }
                    xr += mr;
                }
                /* the epilogue rows: pe pixels each, a last one of cnt % pe pixels */
                if (pe > 1) ks_finish_run(cv, &gr, dst_img + (m_row + x0) * nk * esz, cnt, nk,
                                          pe, flat);
            }
        }
    }
    if (cv->amx) dnnq_amx_release(); /* the tile state ends with the item, on its thread */
    free(k);
    free(st);
    free(flat);
    free(fuse);
    return 0;
}

/* ---- f32 layers (kernel f32_deconv_ks) ---------------------------------------------------
 * The same decomposition on the f32 kernels (dnnq_f32.h): per (source row, kernel row) one
 * f32 GEMM of nk = kw * OC columns, its rows gathered into epilogue rows of pe pixels (the
 * gather moves 4-byte values: the f32 tile goes through it as it is, no compensation), the
 * constants repeated to 64 columns.  Every output is reached by one tap: its chain of FMAs is
 * that tap's products in k order, as the column driver computes it (the same bits). */

/* the per-tap panels (kpair rows of 64 f32) regrouped into one panel per kernel row, column
 * j * OC + oc for tap (r, j) */
int dnnq_conv_prepare_f32_deconv_ks(dnnq_conv_t *cv) {
    cv->ks_packed = NULL;
    cv->ks_comp = NULL;
    if (!cv->packed) return 0;
    const int64_t nrow = cv->kd * cv->kh, kw = cv->kw, OC = cv->OC, K = cv->kpair;
    const float *taps = (const float *)(const void *)cv->packed;
    float *pk = (float *)aligned_alloc(64, sizeof(float) * (size_t)(nrow * K * DNNQ_NR));
    if (!pk) return -1;
    memset(pk, 0, sizeof(float) * (size_t)(nrow * K * DNNQ_NR));
    for (int64_t r = 0; r < nrow; ++r)
        for (int64_t j = 0; j < kw; ++j) {
            const float *tp = taps + (r * kw + j) * K * DNNQ_NR;
            for (int64_t k = 0; k < K; ++k)
                memcpy(pk + (r * K + k) * DNNQ_NR + j * OC, tp + k * DNNQ_NR,
                       sizeof(float) * (size_t)OC);
        }
    cv->ks_packed = (const int8_t *)(const void *)pk;
    return 0;
}

int dnnq_conv_run_item_f32_deconv_ks(const dnnq_conv_t *cv, int64_t item) {
    const int64_t srows = cv->id * cv->ih, nrow = cv->kd * cv->kh;
    int64_t n, sr0, sr1;
    ks_item_rows(cv, item, &n, &sr0, &sr1);
    const int64_t OC = cv->OC, nk = cv->kw * OC, iw = cv->iw, IC = cv->IC, K = cv->kpair;
    const int64_t pe = nk <= DNNQ_NR ? DNNQ_NR / nk : 1, we = pe * nk;

    dnnq_gemm_args_t ge, gs;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    ks_consts_t *k = (ks_consts_t *)aligned_alloc(64, (sizeof(ks_consts_t) + 63) / 64 * 64);
    const int64_t flat_len = KS_FLAT_ROWS * DNNQ_NR + KS_MARGIN;
    float *flat = (float *)aligned_alloc(64, sizeof(float) * (size_t)flat_len);
    if (!k || !flat || repeat_consts(&ge, OC, we, k, &gs) != 0) {
        const int oom = !k || !flat;
        free(k);
        free(flat);
        return oom ? -1 : -2;
    }
    const int esz = gs.dst_dt == DNNQ_DT_S8 || gs.dst_dt == DNNQ_DT_U8 ? 1 : 4;
    char *const dst_img = (char *)gs.dst;
    const float *img = (const float *)(const void *)cv->src + n * srows * iw * IC;
    const float *pk = (const float *)(const void *)cv->ks_packed;
    const int mr_max = dnnq_conv_call_rows(cv);
    float tile[DNNQ_MR_MAX * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t chunk = pe * KS_FLAT_ROWS; /* source pixels per epilogue call */

    for (int64_t sr = sr0; sr < sr1; ++sr) {
        const int64_t zd = sr / cv->ih, y = sr % cv->ih;
        const float *srow = img + sr * iw * IC;
        for (int64_t r = 0; r < nrow; ++r) {
            const int64_t od = zd * cv->kd + r / cv->kh, oh = y * cv->kh + r % cv->kh;
            const int64_t m_row = (od * cv->oh + oh) * iw; /* in rows of nk outputs */
            dnnq_br_pair_f32_t pair;
            pair.lda = IC;
            pair.rows = NULL;
            pair.b = pk + r * K * DNNQ_NR;
            pair.K = K;
            dnnq_gemm_args_t gr = gs;
            for (int64_t x0 = 0; x0 < iw; x0 += chunk) {
                const int64_t cnt = iw - x0 < chunk ? iw - x0 : chunk;
                for (int64_t xr = 0; xr < cnt;) {
                    const int mr = (int)(cnt - xr < mr_max ? cnt - xr : mr_max);
                    pair.a = srow + (x0 + xr) * IC;
                    cv->brgemm_f32(mr, (int)nk, 1, &pair, 0, tile);
                    if (pe == 1) { /* (gr is gs: rows of nk outputs from the image's dst) */
                        cv->epilogue_f32(&gr, 0, m_row + x0 + xr, mr, 0, tile);
                    } else {
                        gather_rows((const int32_t *)(const void *)tile, mr, xr, nk, pe, NULL,
                                    (int32_t *)(void *)flat);
                    }
                    xr += mr;
                }
                if (pe > 1) ks_finish_run(cv, &gr, dst_img + (m_row + x0) * nk * esz, cnt, nk,
                                          pe, flat);
            }
        }
    }
    free(k);
    free(flat);
    return 0;
}
