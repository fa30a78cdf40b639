/* The f32 convolution driver (dnnq_f32.h): the int8 driver's plan -- work items (image, group,
 * 64-column panel, chunk of tiles or block of pixels), the tiles of conv_tiles.c, the
 * deconvolution's coordinate table -- run with the f32 micro-kernels.
 *
 * Every output element is one FMA chain over the taps it reads in (kd, kh, kw) order (input
 * channels inside a tap; the KW taps of a folded kernel row in order): the tiles and pixel
 * blocks decide only which elements run side by side.  A tap that reads no source pixel of
 * the whole tile is left out; inside a tile whose pixels read different taps (a border pixel
 * merged into a run, a folded row at a border; the general driver's micro-tiles) such a tap
 * multiplies a row of zeros (cv->zp_rows), which adds +0: the same result unless a weight is
 * inf or NaN.  A deconvolution's pixels run by column phases and depthwise pixels one by one
 * at the borders, each reading only the taps that reach it.  ISA-independent: the kernels through the pointers in dnnq_conv_t. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

/* the tile epilogue of `rows` consecutive pixels from m, or one call per pixel (mstep > 1) */
static void finish_rows(const dnnq_conv_t *cv, const dnnq_gemm_args_t *ge, int64_t m, int rows,
                        int64_t mstep, int64_t p, const float *acc) {
    if (mstep <= 1) {
        cv->epilogue_f32(ge, 0, m, rows, p, acc);
        return;
    }
    for (int r = 0; r < rows; ++r) cv->epilogue_f32(ge, 0, m + r * mstep, 1, p, acc + r * DNNQ_NR);
}

/* fold_kw: kernel row (kd, kh) of a pixel at a border along w (at s), its KW * IC values with
 * zeros for the taps outside [kw0, kw1) */
static void gather_row_f32(const dnnq_conv_t *cv, const float *s, int kw0, int kw1, float *out) {
    const int64_t IC = cv->IC, w0 = kw0 * IC, w1 = kw1 * IC, rowb = cv->kw * IC;
    memset(out, 0, sizeof(float) * (size_t)w0);
    memcpy(out + w0, s + w0, sizeof(float) * (size_t)(w1 - w0));
    memset(out + w1, 0, sizeof(float) * (size_t)(rowb - w1));
}

/* The tiled path (convolutions with cv->tiles): item = (image, group, panel, chunk of tiles) */
int dnnq_conv_run_item_f32_tiles(const dnnq_conv_t *cv, int64_t item) {
    const int64_t inner = cv->rows_outer ? cv->n_panels : cv->n_chunks;
    const int64_t c = cv->rows_outer ? (item / inner) % cv->n_chunks : item % inner;
    const int64_t p = cv->rows_outer ? item % inner : (item / inner) % cv->n_panels;
    const int64_t rest = item / (cv->n_chunks * cv->n_panels);
    const int64_t g = rest % cv->G, n = rest / cv->G;
    const int nc = (int)(cv->OCg - p * DNNQ_NR < DNNQ_NR ? cv->OCg - p * DNNQ_NR : DNNQ_NR);
    const int fold = cv->fold_kw;                /* pairs are kernel rows of KW taps */
    const int64_t ntw = fold ? 1 : cv->kw, nth = cv->kh;
    const int64_t kb = cv->kpair;

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);
    const int64_t np_max = cv->npairs;
    dnnq_br_pair_f32_t *pairs = (dnnq_br_pair_f32_t *)malloc(
        (sizeof(dnnq_br_pair_f32_t) + sizeof(float *) * DNNQ_MR_MAX) * (size_t)np_max +
        (fold ? sizeof(float) * (size_t)(np_max * DNNQ_MR_MAX * kb) : 0));
    if (!pairs) return -1;
    const float **rows = (const float **)(pairs + np_max);
    float *grows = (float *)(rows + np_max * DNNQ_MR_MAX);
    int64_t off[DNNQ_MR_MAX];

    const float *img = (const float *)(const void *)cv->src +
                       n * cv->id * cv->ih * cv->iw * cv->IC + g * cv->ICg;
    const float *zrow = (const float *)(const void *)cv->zp_rows;
    const int64_t bstep = kb * DNNQ_NR;
    const float *bpanel = (const float *)(const void *)cv->packed +
                          (g * cv->n_panels + p) * np_max * bstep;
    float tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    float col[DNNQ_MR_MAX * DNNQ_NR] __attribute__((aligned(64)));
    /* the micro-kernel with the epilogue fused where it applies (no tile in memory) */
    dnnq_f32_epi_state_t fst;
    const int fuse = cv->f32_epi_prepare && cv->f32_epi_prepare(&ge, 0, p, &fst);
    int64_t tm = 0; /* first pixel of the pending run of consecutive pixels in `tile` */
    int trows = 0;
    for (int64_t t = cv->chunks[c]; t < cv->chunks[c + 1]; ++t) {
        const dnnq_conv_tile_t *q = cv->tiles + t;
        const int mr = q->mr;
        const int full_w = !fold || (q->k0[2] == 0 && q->k1[2] == cv->kw);
        if (q->mstep == 0 || q->mixed || !full_w) tile_offsets(cv, q, off);
        float *acc = NULL;
        if (fuse) {
            /* written by the fused kernel below */
        } else if (q->mstep <= 1) {
            if (trows && (q->m != tm + trows || trows + mr > DNNQ_CONV_TILE_ROWS)) {
                cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
                trows = 0;
            }
            if (!trows) tm = q->m;
            acc = tile + trows * DNNQ_NR;
        } else {
            acc = col;
        }
        /* each pixel's taps inside the source, where they may differ */
        int32_t pk0[DNNQ_MR_MAX][3], pk1[DNNQ_MR_MAX][3];
        for (int r = 0; r < mr && (!full_w || q->mixed); ++r) {
            for (int k = 0; k < 3; ++k) pk0[r][k] = q->k0[k], pk1[r][k] = q->k1[k];
            if (q->k0[2] < 0) /* fold: a run of mixed ranges (mstep 1) */
                tap_range(q->o[2] + r, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &pk0[r][2],
                          &pk1[r][2]);
            if (q->mixed) {
                const int64_t oh = q->o[1] + (q->mstep == 1 ? 0 : r);
                const int64_t ow = q->o[2] + (q->mstep == 1 ? r : 0);
                tap_range(q->o[0], cv->kd, cv->sd, cv->dd, cv->pd, cv->id, &pk0[r][0], &pk1[r][0]);
                tap_range(oh, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, &pk0[r][1], &pk1[r][1]);
                tap_range(ow, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &pk0[r][2], &pk1[r][2]);
            }
        }
        int64_t np = 0;
        for (int64_t kd = q->k0[0]; kd < q->k1[0]; ++kd) {
            for (int64_t kh = q->k0[1]; kh < q->k1[1]; ++kh) {
                for (int64_t kw = 0; kw < ntw; ++kw) {
                    if (fold ? !(q->k0[2] < 0 || q->k1[2] > q->k0[2])
                             : !(kw >= q->k0[2] && kw < q->k1[2]))
                        continue; /* no pixel of the tile reads this tap */
                    const int64_t ti = (kd * nth + kh) * ntw + kw; /* the pair */
                    dnnq_br_pair_f32_t *pr = pairs + np++;
                    pr->rows = NULL;
                    pr->b = bpanel + ti * bstep;
                    pr->K = kb;
                    const int64_t delta =
                        ((kd * cv->dd * cv->ih + kh * cv->dh) * cv->iw + kw * cv->dw) * cv->IC;
                    if (!full_w) { /* pixels at a border along w: kernel rows gathered */
                        float *gr = grows + (np - 1) * DNNQ_MR_MAX * kb;
                        for (int r = 0; r < mr; ++r)
                            gather_row_f32(cv, img + off[r] + delta, pk0[r][2], pk1[r][2],
                                           gr + r * kb);
                        pr->a = gr;
                        pr->lda = kb;
                    } else if (q->mixed || q->mstep == 0) { /* a row pointer per pixel */
                        const float **rp = rows + (np - 1) * DNNQ_MR_MAX;
                        for (int r = 0; r < mr; ++r)
                            rp[r] = !q->mixed || (kd >= pk0[r][0] && kd < pk1[r][0] &&
                                                  kh >= pk0[r][1] && kh < pk1[r][1] &&
                                                  kw >= pk0[r][2] && kw < pk1[r][2])
                                        ? img + off[r] + delta : zrow;
                        pr->a = NULL;
                        pr->lda = 0;
                        pr->rows = rp;
                    } else {
                        pr->a = img + q->src + delta;
                        pr->lda = q->lda;
                    }
                }
            }
        }
        if (fuse) {
            cv->brgemm_f32_epi(mr, np, pairs, 0, NULL, &fst, q->m, q->mstep ? q->mstep : 1);
            continue;
        }
        if (np) cv->brgemm_f32(mr, nc, np, pairs, 0, acc);
        else memset(acc, 0, sizeof(float) * DNNQ_NR * (size_t)mr);
        if (q->mstep <= 1) trows += mr;
        else finish_rows(cv, &ge, q->m, mr, q->mstep, p, col);
    }
    if (trows) cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
    free(pairs);
    return 0;
}

/* The depthwise item (image, panel, block of pixels): per tap of each pixel inside the
 * source, one vector FMA per 16 channels (dnnq_dw_f32_fn), in tap order.  The interior of an
 * output row runs as dense runs of up to DNNQ_CONV_TILE_ROWS pixels (every tap inside, its
 * pixels sw * IC apart: a pointer per tap); its borders pixel by pixel, taps outside left
 * out (a NULL pointer).  Dense runs whose kernel rows the row kernel takes (dnnq_dw_f32_rows_fn:
 * 3, 5 or 7 taps side by side, stride 1 or 2) go through it, with the fused epilogue or into
 * the tile. */
int dnnq_conv_run_item_f32_dw(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t blk = cv->rows_outer ? (item / cv->n_panels) % nblk : item % nblk;
    const int64_t p = cv->rows_outer ? item % cv->n_panels : (item / nblk) % cv->n_panels;
    const int64_t n = item / (nblk * cv->n_panels);
    const int64_t m0 = blk * cv->mc, mend = m0 + (osp - m0 < cv->mc ? osp - m0 : cv->mc);
    const int nc = (int)(cv->OC - p * DNNQ_NR < DNNQ_NR ? cv->OC - p * DNNQ_NR : DNNQ_NR);
    const int64_t ntaps = cv->kd * cv->kh * cv->kw, IC = cv->IC;
    const int mr_max = cv->mr, TR = DNNQ_CONV_TILE_ROWS;
    const int64_t nkrows = cv->kd * cv->kh;
    const int by_rows = cv->dw_f32_rows && !cv->deconv && cv->dw == 1 &&
                        (cv->kw == 3 || cv->kw == 5 || cv->kw == 7) && (cv->sw == 1 || cv->sw == 2);
    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    const float **rows = (const float **)malloc(
        sizeof(float *) * (size_t)(ntaps * mr_max + 2 * nkrows) + sizeof(int64_t) * (size_t)ntaps);
    if (!rows) return -1;
    /* the row kernel's kernel rows inside the source: source and weights of each */
    const float **krows = rows + ntaps * mr_max, **wrows = krows + nkrows;
    int64_t *delta = (int64_t *)(void *)(wrows + nkrows);
    {
        int64_t t = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd)
            for (int64_t kh = 0; kh < cv->kh; ++kh)
                for (int64_t kw = 0; kw < cv->kw; ++kw, ++t)
                    delta[t] = ((kd * cv->dd * cv->ih + kh * cv->dh) * cv->iw + kw * cv->dw) * IC;
    }
    int64_t ilo[3], ihi[3];
    interior(cv->od, cv->kd, cv->sd, cv->dd, cv->pd, cv->id, cv->deconv, &ilo[0], &ihi[0]);
    interior(cv->oh, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, cv->deconv, &ilo[1], &ihi[1]);
    interior(cv->ow, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, cv->deconv, &ilo[2], &ihi[2]);
    const float *img = (const float *)(const void *)cv->src +
                       n * cv->id * cv->ih * cv->iw * IC + p * DNNQ_NR;
    const float *w = (const float *)(const void *)cv->dw_weights + p * cv->dw_stride;
    float tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    /* the epilogue fused into the kernel where it applies (no tile in memory) */
    dnnq_f32_epi_state_t fst;
    const int fuse = cv->dw_f32_epi && cv->f32_epi_prepare &&
                     cv->f32_epi_prepare(&ge, 0, p, &fst);
    int64_t tm = m0;
    int trows = 0;
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        /* the row kernel takes kernel rows outside the source (left out) too */
        const int row_in = by_rows || (od >= ilo[0] && od < ihi[0] && oh >= ilo[1] && oh < ihi[1]);
        const int dense = row_in && ow >= ilo[2] && ow < ihi[2];
        int64_t lim = dense ? ihi[2] : row_in && ow < ilo[2] ? ilo[2] : cv->ow;
        int64_t cnt = lim - ow;
        if (cnt > mend - m) cnt = mend - m;
        if (cnt > (dense ? TR : mr_max)) cnt = dense ? TR : mr_max;
        if (!fuse && trows + cnt > TR) {
            cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
            tm = m;
            trows = 0;
        }
        if (dense && by_rows) {
            /* the kernel rows inside the source, in order (the others read padding: left
             * out, as the pointer path leaves out their taps) */
            int64_t nk = 0;
            for (int64_t kd = 0; kd < cv->kd; ++kd) {
                const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
                for (int64_t kh = 0; kh < cv->kh && xd >= 0; ++kh) {
                    const int64_t xh = src_coord(oh, kh, cv->sh, cv->dh, cv->ph, cv->ih, 0);
                    if (xh < 0) continue;
                    krows[nk] = img + ((xd * cv->ih + xh) * cv->iw + ow * cv->sw - cv->pw) * IC;
                    wrows[nk++] = w + (kd * cv->kh + kh) * cv->kw * DNNQ_NR;
                }
            }
            cv->dw_f32_rows((int)cnt, nk, krows, wrows, IC, (int)cv->kw, (int)cv->sw, nc,
                            tile + trows * DNNQ_NR, fuse ? &fst : NULL, m);
        } else if (dense) {
            const float *base = img + (((od * cv->sd - cv->pd) * cv->ih + oh * cv->sh - cv->ph) *
                                           cv->iw + ow * cv->sw - cv->pw) * IC;
            for (int64_t t = 0; t < ntaps; ++t) rows[t] = base + delta[t];
            if (fuse) {
                cv->dw_f32_epi((int)cnt, ntaps, rows, cv->sw * IC, w, &fst, m);
            } else {
                cv->dw_f32((int)cnt, ntaps, rows, cv->sw * IC, nc, w, tile + trows * DNNQ_NR);
            }
        } else {
            for (int r = 0; r < (int)cnt; ++r) {
                int64_t t = 0;
                for (int64_t kd = 0; kd < cv->kd; ++kd) {
                    const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id,
                                                 cv->deconv);
                    for (int64_t kh = 0; kh < cv->kh; ++kh) {
                        const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh,
                                                                   cv->ph, cv->ih, cv->deconv);
                        for (int64_t kw = 0; kw < cv->kw; ++kw, ++t) {
                            const int64_t xw = xh < 0 ? -1 : src_coord(ow + r, kw, cv->sw, cv->dw,
                                                                       cv->pw, cv->iw, cv->deconv);
                            rows[t * cnt + r] =
                                xw < 0 ? NULL : img + ((xd * cv->ih + xh) * cv->iw + xw) * IC;
                        }
                    }
                }
            }
            if (fuse) cv->dw_f32_epi((int)cnt, ntaps, rows, 0, w, &fst, m);
            else cv->dw_f32((int)cnt, ntaps, rows, 0, nc, w, tile + trows * DNNQ_NR);
        }
        if (!fuse) trows += (int)cnt;
        m += cnt;
    }
    if (trows) cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
    free(rows);
    return 0;
}

/* The general driver (deconvolution, and convolutions without tiles): item = (image, group,
 * panel, block of pixels), micro-tiles of up to mr pixels with a row pointer per (tap, pixel),
 * the zero row for a tap that reads no source pixel of that pixel; a tap no pixel of the
 * micro-tile reads is left out. */
int dnnq_conv_run_item_f32_general(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t blk = cv->rows_outer ? (item / cv->n_panels) % nblk : item % nblk;
    const int64_t p = cv->rows_outer ? item % cv->n_panels : (item / nblk) % cv->n_panels;
    const int64_t rest = item / (nblk * cv->n_panels);
    const int64_t g = rest % cv->G, n = rest / cv->G;
    const int64_t m0 = blk * cv->mc, mcur = osp - m0 < cv->mc ? osp - m0 : cv->mc;
    const int nc = (int)(cv->OCg - p * DNNQ_NR < DNNQ_NR ? cv->OCg - p * DNNQ_NR : DNNQ_NR);
    const int64_t ntaps = cv->kd * cv->kh * cv->kw, kb = cv->kpair;
    const int mr_max = cv->mr;
    if (cv->fold_kw) return -1; /* folded rows need the tiles (the plan declines it) */
    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);
    const float **rows = (const float **)malloc(sizeof(float *) * (size_t)(ntaps * mr_max) +
                                                sizeof(dnnq_br_pair_f32_t) * (size_t)ntaps);
    if (!rows) return -1;
    dnnq_br_pair_f32_t *pairs = (dnnq_br_pair_f32_t *)(void *)(rows + ntaps * mr_max);
    const int32_t *ct[3] = {NULL, NULL, NULL};
    if (cv->coords) {
        ct[0] = cv->coords;
        ct[1] = ct[0] + cv->od * cv->kd;
        ct[2] = ct[1] + cv->oh * cv->kh;
    }
    const float *img = (const float *)(const void *)cv->src +
                       n * cv->id * cv->ih * cv->iw * cv->IC + g * cv->ICg;
    const float *zrow = (const float *)(const void *)cv->zp_rows;
    const float *bpanel = (const float *)(const void *)cv->packed +
                          (g * cv->n_panels + p) * ntaps * kb * DNNQ_NR;
    float tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t ntiles = (mcur + mr_max - 1) / mr_max;
    int64_t tm = m0;
    int trows = 0;
    for (int64_t ti = 0; ti < ntiles; ++ti) {
        const int64_t m = m0 + (mcur * ti) / ntiles;
        const int mr = (int)(m0 + (mcur * (ti + 1)) / ntiles - m);
        if (trows + mr > DNNQ_CONV_TILE_ROWS) {
            cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
            tm = m;
            trows = 0;
        }
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        for (int r = 0; r < mr; ++r) {
            int64_t t = 0;
            for (int64_t kd = 0; kd < cv->kd; ++kd) {
                const int64_t xd = ct[0] ? ct[0][od * cv->kd + kd]
                                         : src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id,
                                                     cv->deconv);
                for (int64_t kh = 0; kh < cv->kh; ++kh) {
                    const int64_t xh = xd < 0 ? -1
                                       : ct[1] ? ct[1][oh * cv->kh + kh]
                                               : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, cv->deconv);
                    for (int64_t kw = 0; kw < cv->kw; ++kw, ++t) {
                        const int64_t xw = xh < 0 ? -1
                                           : ct[2] ? ct[2][ow * cv->kw + kw]
                                                   : src_coord(ow, kw, cv->sw, cv->dw, cv->pw,
                                                               cv->iw, cv->deconv);
                        rows[t * mr + r] =
                            xw < 0 ? zrow : img + ((xd * cv->ih + xh) * cv->iw + xw) * cv->IC;
                    }
                }
            }
            if (++ow == cv->ow) {
                ow = 0;
                if (++oh == cv->oh) {
                    oh = 0;
                    ++od;
                }
            }
        }
        int64_t np = 0;
        for (int64_t t = 0; t < ntaps; ++t) {
            int any = 0;
            for (int r = 0; r < mr && !any; ++r) any = rows[t * mr + r] != zrow;
            if (!any) continue;
            pairs[np].a = NULL;
            pairs[np].lda = 0;
            pairs[np].rows = rows + t * mr;
            pairs[np].b = bpanel + t * kb * DNNQ_NR;
            pairs[np].K = kb;
            ++np;
        }
        float *acc = tile + trows * DNNQ_NR;
        if (np) cv->brgemm_f32(mr, nc, np, pairs, 0, acc);
        else memset(acc, 0, sizeof(float) * DNNQ_NR * (size_t)mr);
        trows += mr;
    }
    if (trows) cv->epilogue_f32(&ge, 0, tm, trows, p, tile);
    free(rows);
    return 0;
}

/* The deconvolution's item (image, group, panel, block of pixels) by column phases: along an
 * output row the pixels ow of one residue ow % sw are reached by the same kernel columns
 * (kw dw = ow + pw mod sw), so runs of them read the same taps -- all but a row's ends, where
 * a tap leaves the source.  A micro-tile is such a run of up to mr pixels with the same taps:
 * only those taps are multiplied (none of the general driver's zero rows: a stride-2 kernel-4
 * deconvolution reads 4 of its 16 taps per pixel), its pixels sw apart in the dst (the fused
 * epilogue's row step, else one epilogue call per pixel). */

/* the kernel columns (and their source columns) that reach output column ow */
static int deconv_cols(const dnnq_conv_t *cv, const int32_t *ctw, int64_t ow, int32_t *kws,
                       int32_t *xws) {
    int n = 0;
    for (int64_t kw = 0; kw < cv->kw; ++kw) {
        const int64_t x = ctw ? ctw[ow * cv->kw + kw]
                              : src_coord(ow, kw, cv->sw, cv->dw, cv->pw, cv->iw, 1);
        if (x < 0) continue;
        kws[n] = (int32_t)kw;
        xws[n++] = (int32_t)x;
    }
    return n;
}

int dnnq_conv_run_item_f32_deconv(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t blk = cv->rows_outer ? (item / cv->n_panels) % nblk : item % nblk;
    const int64_t p = cv->rows_outer ? item % cv->n_panels : (item / nblk) % cv->n_panels;
    const int64_t rest = item / (nblk * cv->n_panels);
    const int64_t g = rest % cv->G, n = rest / cv->G;
    const int64_t m0 = blk * cv->mc, mend = m0 + (osp - m0 < cv->mc ? osp - m0 : cv->mc);
    const int nc = (int)(cv->OCg - p * DNNQ_NR < DNNQ_NR ? cv->OCg - p * DNNQ_NR : DNNQ_NR);
    const int64_t ntaps = cv->kd * cv->kh * cv->kw, kb = cv->kpair, KW = cv->kw;
    const int mr_max = cv->mr;
    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);
    const float **rows = (const float **)malloc(sizeof(float *) * (size_t)(ntaps * mr_max) +
                                                sizeof(dnnq_br_pair_f32_t) * (size_t)ntaps);
    if (!rows) return -1;
    dnnq_br_pair_f32_t *pairs = (dnnq_br_pair_f32_t *)(void *)(rows + ntaps * mr_max);
    const int32_t *ct[3] = {NULL, NULL, NULL};
    if (cv->coords) {
        ct[0] = cv->coords;
        ct[1] = ct[0] + cv->od * cv->kd;
        ct[2] = ct[1] + cv->oh * cv->kh;
    }
    const float *img = (const float *)(const void *)cv->src +
                       n * cv->id * cv->ih * cv->iw * cv->IC + g * cv->ICg;
    const float *bpanel = (const float *)(const void *)cv->packed +
                          (g * cv->n_panels + p) * ntaps * kb * DNNQ_NR;
    dnnq_f32_epi_state_t fst;
    const int fuse = cv->f32_epi_prepare && cv->f32_epi_prepare(&ge, 0, p, &fst);
    float tile[DNNQ_MR_MAX * DNNQ_NR] __attribute__((aligned(64)));
    int32_t kws[DNNQ_F32_DECONV_MAX_KW], xws[DNNQ_F32_DECONV_MAX_KW], kw2[DNNQ_F32_DECONV_MAX_KW];
    int32_t xw2[DNNQ_F32_DECONV_MAX_KW];
    /* the (kd, kh) kernel rows that reach the output row, with their source rows */
    int32_t *krow = (int32_t *)malloc(sizeof(int32_t) * 2 * (size_t)(cv->kd * cv->kh));
    if (!krow) {
        free(rows);
        return -1;
    }
    for (int64_t rs = m0; rs < mend;) {
        int64_t od, oh, ow0;
        out_pixel(cv, rs, &od, &oh, &ow0);
        const int64_t re = rs - ow0 + cv->ow < mend ? rs - ow0 + cv->ow : mend; /* row part */
        int nkr = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = ct[0] ? ct[0][od * cv->kd + kd]
                                     : src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 1);
            for (int64_t kh = 0; kh < cv->kh && xd >= 0; ++kh) {
                const int64_t xh = ct[1] ? ct[1][oh * cv->kh + kh]
                                         : src_coord(oh, kh, cv->sh, cv->dh, cv->ph, cv->ih, 1);
                if (xh < 0) continue;
                krow[2 * nkr] = (int32_t)(kd * cv->kh + kh);
                krow[2 * nkr + 1] = (int32_t)(xd * cv->ih + xh);
                ++nkr;
            }
        }
        const int64_t owe = ow0 + (re - rs);
        for (int64_t ph = 0; ph < cv->sw && ph < owe - ow0; ++ph) {
            /* the pixels ow0 + ph, ow0 + ph + sw, ... of the row part, in runs */
            for (int64_t ow = ow0 + ph; ow < owe;) {
                const int ncol = nkr ? deconv_cols(cv, ct[2], ow, kws, xws) : 0;
                int mr = 1;
                while (mr < mr_max && ow + mr * cv->sw < owe) {
                    const int n2 = deconv_cols(cv, ct[2], ow + mr * cv->sw, kw2, xw2);
                    int same = n2 == ncol;
                    for (int i = 0; i < ncol && same; ++i) same = kw2[i] == kws[i];
                    if (!same) break;
                    ++mr;
                }
                /* the pairs: taps (kernel row, kernel column) in (kd, kh, kw) order */
                int64_t np = 0;
                for (int r = 0; r < nkr; ++r) {
                    for (int i = 0; i < ncol; ++i) {
                        const int64_t t = (int64_t)krow[2 * r] * KW + kws[i];
                        const float **rp = rows + np * mr_max;
                        for (int q = 0; q < mr; ++q) /* column x + q: the next pixel of the run */
                            rp[q] = img + ((int64_t)krow[2 * r + 1] * cv->iw + xws[i] + q) *
                                              cv->IC;
                        pairs[np].a = NULL;
                        pairs[np].lda = 0;
                        pairs[np].rows = rp;
                        pairs[np].b = bpanel + t * kb * DNNQ_NR;
                        pairs[np].K = kb;
                        ++np;
                    }
                }
                const int64_t m = rs + (ow - ow0);
                if (fuse) {
                    cv->brgemm_f32_epi(mr, np, pairs, 0, NULL, &fst, m, cv->sw);
                } else {
                    if (np) cv->brgemm_f32(mr, nc, np, pairs, 0, tile);
                    else memset(tile, 0, sizeof(float) * DNNQ_NR * (size_t)mr);
                    for (int q = 0; q < mr; ++q)
                        cv->epilogue_f32(&ge, 0, m + q * cv->sw, 1, p, tile + q * DNNQ_NR);
                }
                ow += mr * cv->sw;
            }
        }
        rs = re;
    }
    free(krow);
    free(rows);
    return 0;
}
