/* The general convolution driver (deconvolutions the column-phase driver does not take,
 * depthwise problems the dedicated kernels do not, zero points the source type cannot hold;
 * the other convolutions take the tiled path, conv_tiles.c): one work item = (image, group,
 * 64-column panel, block of output pixels).  For each micro-tile of output pixels it builds
 * the tap -> source-row pointers, runs the batch-reduce micro-kernel over the taps (or the
 * depthwise tile) and hands the accumulator tile to the GEMM epilogue.  ISA-independent: the
 * ISA code is reached through the function pointers in dnnq_conv_t (see dnnq_conv.h for the
 * layouts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

/* Row pointers of one micro-tile (rows m .. m + mr - 1): rows[t * mr + r] for pair t.  With
 * `delta` holds each pair's offset from the
 * pixel's first tap, used for interior pixels (all taps inside: one add per tap). */
static void tile_rows(const dnnq_conv_t *cv, int64_t n, int64_t g, int64_t m, int mr,
                      int64_t chan0, const int64_t *delta, const int64_t *ilo,
                      const int64_t *ihi, const int32_t *const *ct, const uint8_t **rows) {
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * cv->IC + chan0;
    const uint8_t *zrow = cv->zp_rows + (cv->depthwise ? chan0 : g * cv->kpair);
    const int64_t np = cv->npairs;
    int64_t od, oh, ow;
    out_pixel(cv, m, &od, &oh, &ow);
    for (int r = 0; r < mr; ++r) {
        if (od >= ilo[0] && od < ihi[0] && oh >= ilo[1] && oh < ihi[1] && ow >= ilo[2] &&
            ow < ihi[2]) {
            const uint8_t *base = img + (((od * cv->sd - cv->pd) * cv->ih + oh * cv->sh - cv->ph) *
                                             cv->iw + ow * cv->sw - cv->pw) * cv->IC;
            for (int64_t t = 0; t < np; ++t) rows[t * mr + r] = base + delta[t];
        } else {
            int64_t t = 0;
            for (int64_t kd = 0; kd < cv->kd; ++kd) {
                const int64_t x_d =
                    ct ? ct[0][od * cv->kd + kd]
                       : src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, cv->deconv);
                for (int64_t kh = 0; kh < cv->kh; ++kh) {
                    const int64_t x_h = x_d < 0 ? -1
                                        : ct ? ct[1][oh * cv->kh + kh]
                                             : src_coord(oh, kh, cv->sh, cv->dh, cv->ph, cv->ih,
                                                         cv->deconv);
                    const uint8_t *plane =
                        x_h >= 0 ? img + (x_d * cv->ih + x_h) * cv->iw * cv->IC : NULL;
                    for (int64_t kw = 0; kw < cv->kw; ++kw, ++t) {
                        const int64_t x_w = x_h < 0 ? -1
                                            : ct ? ct[2][ow * cv->kw + kw]
                                                 : src_coord(ow, kw, cv->sw, cv->dw, cv->pw,
                                                             cv->iw, cv->deconv);
                        rows[t * mr + r] = x_w < 0 ? zrow : plane + x_w * cv->IC;
                    }
                }
            }
        }
        if (++ow == cv->ow) { /* next output pixel */
            ow = 0;
            if (++oh == cv->oh) {
                oh = 0;
                ++od;
            }
        }
    }
}

/* tile[r][:] += padcorr[tap][:] for every tap of row r that reads no source pixel */
static void add_pad_correction(const dnnq_conv_t *cv, int64_t g, int64_t m, int mr, int64_t p,
                               int nc, int32_t *tile) {
    const int64_t ntaps = cv->kd * cv->kh * cv->kw;
    const int64_t cols = cv->depthwise ? cv->OC : cv->OCg; /* [g][tap][cols] */
    const int32_t *pc = cv->padcorr + g * ntaps * cols + p * DNNQ_NR;
    for (int r = 0; r < mr; ++r) {
        int64_t od, oh, ow;
        out_pixel(cv, m + r, &od, &oh, &ow);
        int32_t *row = tile + r * DNNQ_NR;
        int64_t t = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int ok_d = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, cv->deconv) >= 0;
            for (int64_t kh = 0; kh < cv->kh; ++kh) {
                const int ok_h = ok_d &&
                    src_coord(oh, kh, cv->sh, cv->dh, cv->ph, cv->ih, cv->deconv) >= 0;
                for (int64_t kw = 0; kw < cv->kw; ++kw, ++t) {
                    if (ok_h && src_coord(ow, kw, cv->sw, cv->dw, cv->pw, cv->iw, cv->deconv) >= 0)
                        continue;
                    const int32_t *c = pc + t * cols;
                    for (int n = 0; n < nc; ++n)
                        row[n] = (int32_t)((uint32_t)row[n] + (uint32_t)c[n]);
                }
            }
        }
    }
}

/* The general driver: any geometry (deconvolutions the phase driver does not take, depthwise
 * kernels the dedicated ones do not, zero points the source type cannot hold). */
int dnnq_conv_run_item_general(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t groups = cv->depthwise ? 1 : cv->G;
    const int64_t blk = cv->rows_outer ? (item / cv->n_panels) % nblk : item % nblk;
    const int64_t p = cv->rows_outer ? item % cv->n_panels : (item / nblk) % cv->n_panels;
    int64_t rest = item / (nblk * cv->n_panels);
    const int64_t g = rest % groups;
    const int64_t n = rest / groups;
    const int64_t m0 = blk * cv->mc;
    const int64_t mcur = osp - m0 < cv->mc ? osp - m0 : cv->mc;
    const int64_t ncols = cv->depthwise ? cv->OC : cv->OCg;
    const int nc = (int)(ncols - p * DNNQ_NR < DNNQ_NR ? ncols - p * DNNQ_NR : DNNQ_NR);

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, g, &ge, post);

    const int mr_max = cv->mr;
    const int64_t npairs = cv->npairs;
    int32_t tile[DNNQ_CONV_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const uint8_t **rows = (const uint8_t **)malloc(sizeof(uint8_t *) * (size_t)(npairs * mr_max) +
                                                    sizeof(int64_t) * (size_t)npairs);
    int64_t *delta = rows ? (int64_t *)(rows + npairs * mr_max) : NULL;
    dnnq_br_pair_t *pairs = cv->depthwise ? NULL
                                          : (dnnq_br_pair_t *)malloc(sizeof(dnnq_br_pair_t) *
                                                                     (size_t)npairs);
    if (!rows || (!cv->depthwise && !pairs)) {
        free(rows);
        free(pairs);
        return -1; /* the caller raises MemoryError */
    }
    const int32_t *ct[3] = {NULL, NULL, NULL};
    const int ct_ok = cv->coords != NULL;
    if (ct_ok) {
        ct[0] = cv->coords;
        ct[1] = ct[0] + cv->od * cv->kd;
        ct[2] = ct[1] + cv->oh * cv->kh;
    }
    const int64_t chan0 = cv->depthwise ? p * DNNQ_NR : cv->G > 1 ? g * cv->ICg : 0;
    const int8_t *bpanel = cv->packed + (g * cv->n_panels + p) * npairs * cv->K4 * 4 * DNNQ_NR;
    const int16_t *wdw = cv->depthwise ? cv->dw_weights + p * cv->dw_stride : NULL;
    const dnnq_dw_tile_fn dw = cv->dw_tile;

    /* each pair's source offset from the pixel's first tap, and the interior ranges */
    {
        int64_t t = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd)
            for (int64_t kh = 0; kh < cv->kh; ++kh)
                for (int64_t kw = 0; kw < cv->kw; ++kw, ++t)
                    delta[t] = ((kd * cv->dd * cv->ih + kh * cv->dh) * cv->iw + kw * cv->dw) *
                               cv->IC;
    }
    int64_t ilo[3], ihi[3];
    interior(cv->od, cv->kd, cv->sd, cv->dd, cv->pd, cv->id, cv->deconv, &ilo[0], &ihi[0]);
    interior(cv->oh, cv->kh, cv->sh, cv->dh, cv->ph, cv->ih, cv->deconv, &ilo[1], &ihi[1]);
    interior(cv->ow, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, cv->deconv, &ilo[2], &ihi[2]);
    const int64_t ntiles = (mcur + mr_max - 1) / mr_max;
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * cv->IC + chan0;
    const uint8_t *src_end = cv->src + cv->N * cv->id * cv->ih * cv->iw * cv->IC;
    /* micro-tiles accumulate into one tile of up to DNNQ_CONV_TILE_ROWS consecutive rows,
     * finished by one epilogue call (its per-call setup amortised) */
    int64_t tm = m0; /* first row of the pending tile */
    int trows = 0;
    const int64_t mend = m0 + mcur;
    for (int64_t m = m0, ti = 0; m < mend; ++ti) {
        int mr;
        if (cv->depthwise) {
            /* row-aligned runs: the interior of an output row in dense runs of up to mr_max
             * pixels, its borders apart (the GEMM path instead splits evenly: its indirect
             * rows cost the micro-kernel nothing) */
            int64_t od0, oh0, ow0, lim;
            out_pixel(cv, m, &od0, &oh0, &ow0);
            if (!(od0 >= ilo[0] && od0 < ihi[0] && oh0 >= ilo[1] && oh0 < ihi[1])) lim = cv->ow;
            else if (ow0 < ilo[2]) lim = ilo[2];
            else if (ow0 < ihi[2]) lim = ihi[2];
            else lim = cv->ow;
            int64_t c = lim - ow0;
            if (c > mend - m) c = mend - m;
            if (c > mr_max) c = mr_max;
            mr = (int)c;
        } else {
            mr = (int)(m0 + (mcur * (ti + 1)) / ntiles - m);
        }
        if (trows + mr > DNNQ_CONV_TILE_ROWS) {
            cv->epilogue(&ge, 0, tm, trows, p, tile);
            tm = m;
            trows = 0;
        }
        int32_t *sub = tile + trows * DNNQ_NR;
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        /* a run of interior pixels of one output row: every tap reads rows a fixed stride
         * apart (dense A for the micro-kernel, no pointer table) */
        const int dense = ow + mr <= ihi[2] && ow >= ilo[2] && oh >= ilo[1] && oh < ihi[1] &&
                          od >= ilo[0] && od < ihi[0];
        const int64_t ps = cv->sw * cv->IC;
        if (dense) {
            const uint8_t *base = img + (((od * cv->sd - cv->pd) * cv->ih + oh * cv->sh - cv->ph) *
                                             cv->iw + ow * cv->sw - cv->pw) * cv->IC;
            for (int64_t t = 0; t < npairs; ++t) rows[t] = base + delta[t];
        } else {
            tile_rows(cv, n, g, m, mr, chan0, delta, ilo, ihi, ct_ok ? ct : NULL, rows);
        }
        if (cv->depthwise) {
            dw(mr, npairs, rows, dense ? ps : 0, nc, cv->src_signed, wdw, sub);
        } else {
            /* dense rows read K rounded up to a multiple of 4 where that stays inside the
             * source: the extra bytes meet the zero padding of the packed weights, and the
             * micro-kernel needs no K % 4 tail pass */
            int64_t K = cv->kpair;
            if (dense && (K & 3) && rows[npairs - 1] + (mr - 1) * ps + cv->K4 * 4 <= src_end)
                K = cv->K4 * 4;
            for (int64_t t = 0; t < npairs; ++t) {
                pairs[t].a = dense ? rows[t] : NULL;
                pairs[t].lda = dense ? ps : 0;
                pairs[t].rows = dense ? NULL : rows + t * mr;
                pairs[t].b = bpanel + t * cv->K4 * 4 * DNNQ_NR;
                pairs[t].K = K;
            }
            cv->brgemm(mr, npairs, pairs, cv->a_xor, 0, sub);
        }
        if (cv->padcorr && !dense) add_pad_correction(cv, g, m, mr, p, nc, sub);
        trows += mr;
        m += mr;
    }
    if (trows) cv->epilogue(&ge, 0, tm, trows, p, tile);
    free(rows);
    free(pairs);
    return 0;
}
