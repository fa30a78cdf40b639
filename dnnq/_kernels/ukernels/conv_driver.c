/* The convolution driver of deconvolution and depthwise convolution (the other convolutions
 * take the tiled path, conv_tiles.c): one work item = (image, group, 64-column panel, block of
 * output pixels).  For each micro-tile of output pixels it builds the tap -> source-row pointers,
 * runs the batch-reduce micro-kernel over the taps (or the depthwise kernel) and hands the
 * accumulator tile to the GEMM epilogue.  ISA-independent: the ISA code is reached through
 * the function pointers in dnnq_conv_t (see dnnq_conv.h for the layouts). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

/* A deconvolution's source coordinate of each (output coordinate, kernel index) per dim,
 * -1 where the tap reaches no source pixel ([od][kd], then [oh][kh], then [ow][kw]): built
 * once at creation, it spares the general driver two divisions per tap and pixel (a third
 * of a strided deconvolution's time).  0, or -1 when the allocation failed. */
int dnnq_conv_build_coords(dnnq_conv_t *cv) {
    cv->coords = NULL;
    if (!cv->deconv) return 0;
    const int64_t O[3] = {cv->od, cv->oh, cv->ow}, K[3] = {cv->kd, cv->kh, cv->kw};
    const int64_t S[3] = {cv->sd, cv->sh, cv->sw}, D[3] = {cv->dd, cv->dh, cv->dw};
    const int64_t P[3] = {cv->pd, cv->ph, cv->pw}, I[3] = {cv->id, cv->ih, cv->iw};
    /* absurd sizes (no tensor of them fits a machine's memory): no table, the divisions
     * instead; checked before any product can overflow, and coordinates must fit int32 */
    const int64_t lim = (int64_t)1 << 24;
    int64_t n = 0;
    for (int dim = 0; dim < 3; ++dim) {
        if (O[dim] > lim || K[dim] > lim || I[dim] > INT32_MAX || O[dim] * K[dim] > lim)
            return 0;
        n += O[dim] * K[dim];
    }
    int32_t *c = (int32_t *)malloc(sizeof(int32_t) * (size_t)n);
    if (!c) return -1;
    cv->coords = c;
    for (int dim = 0; dim < 3; ++dim)
        for (int64_t o = 0; o < O[dim]; ++o)
            for (int64_t k = 0; k < K[dim]; ++k)
                *c++ = (int32_t)src_coord(o, k, S[dim], D[dim], P[dim], I[dim], 1);
    return 0;
}

int64_t dnnq_conv_n_items(const dnnq_conv_t *cv) {
    if (cv->tiles) return cv->N * cv->G * cv->n_panels * cv->n_chunks;
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t groups = cv->depthwise ? 1 : cv->G;
    return cv->N * groups * cv->n_panels * nblk;
}

/* the epilogue description of image n, group g: per-column pointers moved to the group's
 * first output channel, per-image ones to the image */
void dnnq_conv_item_epilogue_args(const dnnq_conv_t *cv, int64_t n, int64_t g,
                                  dnnq_gemm_args_t *ge, dnnq_postop_t *post) {
    *ge = cv->epi;
    const int64_t c0 = g * cv->OCg;
    const int esz = ge->dst_dt == DNNQ_DT_S8 || ge->dst_dt == DNNQ_DT_U8 ? 1 : 4;
    ge->dst = (char *)ge->dst + (n * cv->dst_img + c0) * esz;
    ge->col_comp += c0;
    ge->scale += c0 * ge->scale_sn;
    if (ge->bias) ge->bias += c0 * ge->bias_sn;
    if (ge->dst_zp) ge->dst_zp += c0 * ge->dst_zp_sn;
    if (ge->wzp) {
        ge->wzp += c0 * ge->wzp_sn;
        ge->rowsum += (n * cv->G + g) * cv->rowsum_img;
    }
    for (int i = 0; i < ge->n_post; ++i) {
        post[i] = cv->epi.post[i];
        if (post[i].src1) post[i].src1 += n * cv->post_b[i] + c0 * post[i].s1_n;
        if (post[i].src2) post[i].src2 += n * cv->post2_b[i] + c0 * post[i].s2_n;
    }
    ge->post = post;
}

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

#ifdef DNNQ_HAVE_X86_KERNELS
/* The depthwise row driver (AVX-512, vnni4 weights, kernel rows of three taps along w, stride
 * 1 or 2 along w, no padding correction): each output row of the item's pixels is one kernel
 * call (up to a tile of pixels), the kernel reading the zero-point pixel for the columns in
 * the padding.  Kernel rows outside the source read the zero-point pixel with stride 0, or are
 * skipped when they would add nothing (u8 source, zero point 0). */
static int dw_rows3(const dnnq_conv_t *cv) {
    return cv->depthwise && cv->dw_kind == DNNQ_DW_VNNI4 && cv->kw == 3 && cv->dw == 1 &&
           (cv->sw == 1 || cv->sw == 2) && !cv->deconv && !cv->padcorr &&
           (cv->isa == DNNQ_ISA_AVX512_CORE_VNNI || cv->isa == DNNQ_ISA_AVX512_CORE_AMX);
}

static int run_item_dw_rows3(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t blk = item % nblk;
    const int64_t p = (item / nblk) % cv->n_panels;
    const int64_t n = item / nblk / cv->n_panels;
    const int64_t m0 = blk * cv->mc;
    const int64_t mend = m0 + (osp - m0 < cv->mc ? osp - m0 : cv->mc);
    const int nc = (int)(cv->OC - p * DNNQ_NR < DNNQ_NR ? cv->OC - p * DNNQ_NR : DNNQ_NR);
    const int64_t chan0 = p * DNNQ_NR;
    const int64_t IC = cv->IC, iw = cv->iw;
    const int nkr = (int)(cv->kd * cv->kh); /* kernel rows */
    const int8_t *w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * IC + chan0;
    const uint8_t *zpix = cv->zp_rows + chan0;
    int skip_zero = !cv->src_signed;
    for (int c = 0; c < nc && skip_zero; c += 8) {
        uint64_t v = 0;
        memcpy(&v, zpix + c, (size_t)(nc - c < 8 ? nc - c : 8));
        skip_zero = v == 0;
    }

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    const int TR = DNNQ_DW_TILE_ROWS;
    int32_t tile[DNNQ_DW_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const uint8_t **rowp = (const uint8_t **)malloc((sizeof(uint8_t *) + sizeof(int64_t) +
                                                     sizeof(int)) * (size_t)nkr);
    if (!rowp) return -1;
    int64_t *rstride = (int64_t *)(rowp + nkr);
    int *widx = (int *)(rstride + nkr);

    int64_t tm = m0;
    int trows = 0;
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        /* the kernel rows of this output row */
        int nr = 0, i = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
            for (int64_t kh = 0; kh < cv->kh; ++kh, ++i) {
                const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, 0);
                if (xh < 0 && skip_zero) continue;
                rowp[nr] = xh < 0 ? zpix : img + (xd * cv->ih + xh) * iw * IC;
                rstride[nr] = xh < 0 ? 0 : IC;
                widx[nr++] = i;
            }
        }
        const int64_t row_end = m + (cv->ow - ow) < mend ? m + (cv->ow - ow) : mend;
        while (m < row_end) {
            int64_t cnt = row_end - m < TR ? row_end - m : TR;
            if (trows + cnt > TR) {
                cv->epilogue(&ge, 0, tm, trows, p, tile);
                tm = m;
                trows = 0;
            }
            dnnq_dw3row_avx512((int)cnt, nr, rowp, rstride, widx, ow * cv->sw - cv->pw, iw,
                               zpix, (int)cv->sw, nc, cv->src_signed, w, cv->npairs,
                               tile + trows * DNNQ_NR);
            trows += (int)cnt;
            m += cnt;
            ow += cnt;
        }
    }
    if (trows) cv->epilogue(&ge, 0, tm, trows, p, tile);
    free(rowp);
    return 0;
}

/* The 3x3 column-kernel driver (dnnq_dw3x3_avx512: kernel 3x3, 2-D or kd = 1, stride 1 or 2,
 * no dilation): the item's output rows one at a time, or two at a time (stride 1 along h)
 * when both are whole in the item; the epilogue fused into the kernel when it can be, else
 * the s32 accumulators of up to 32 columns per call go through the tile epilogue. */
static int dw3x3(const dnnq_conv_t *cv) {
    return dw_rows3(cv) && cv->kd == 1 && cv->kh == 3 && cv->dh == 1 &&
           (cv->sh == 1 || cv->sh == 2);
}

static int run_item_dw3x3(const dnnq_conv_t *cv, int64_t item) {
    const int64_t OW = cv->ow, OH = cv->oh, osp = cv->od * OH * OW;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    /* panels innermost: the panels of a block of rows run one after the other, while its
     * source rows are in cache; or outermost within an image (panel_outer: plain data copied
     * by channel bands, each thread's items then read and write what its own copies hold) */
    const int po = cv->panel_outer;
    const int64_t p = po ? (item / nblk) % cv->n_panels : item % cv->n_panels;
    const int64_t blk = po ? item % nblk : (item / cv->n_panels) % nblk;
    const int64_t n = item / cv->n_panels / nblk;
    const int64_t m0 = blk * cv->mc;
    const int64_t mend = m0 + (osp - m0 < cv->mc ? osp - m0 : cv->mc);
    const int nc = (int)(cv->OC - p * DNNQ_NR < DNNQ_NR ? cv->OC - p * DNNQ_NR : DNNQ_NR);
    const int64_t chan0 = p * DNNQ_NR, IC = cv->IC;
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * IC + chan0;
    const uint8_t *zpix = cv->zp_rows + chan0;

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    const int fused = dnnq_dw3x3_epi_prepare_avx512(&ge, chan0, nc, &epi);
    int32_t tile[DNNQ_DW_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const int64_t esz = ge.dst_dt == DNNQ_DT_S8 || ge.dst_dt == DNNQ_DT_U8 ? 1 : 4;

    dnnq_dw3x3_call_t c;
    c.sw = (int)cv->sw;
    c.pw = cv->pw;
    c.iw = cv->iw;
    c.nc = nc;
    c.src_signed = cv->src_signed;
    c.w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    c.ntaps = cv->npairs;
    c.zpix = zpix;
    c.epi = fused ? &epi : NULL;
    c.ldd = ge.d_sm * esz;
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        const int64_t cnt = OW - ow < mend - m ? OW - ow : mend - m;
        const int pair = cv->sh == 1 && ow == 0 && cnt == OW && oh + 1 < OH && m + 2 * OW <= mend;
        c.nro = pair ? 2 : 1;
        const int64_t xd = od * cv->sd - cv->pd;
        for (int r = 0; r < 4; ++r) {
            const int64_t y = oh * cv->sh - cv->ph + r;
            const int in = xd >= 0 && xd < cv->id && y >= 0 && y < cv->ih;
            c.row[r] = in ? img + (xd * cv->ih + y) * cv->iw * IC : zpix;
            c.rs[r] = in ? IC : 0;
        }
        const int64_t mrow = m - ow; /* output column 0 of the (upper) row */
        if (fused) {
            c.dst[0] = (uint8_t *)ge.dst + (mrow * ge.d_sm + chan0) * esz;
            c.dst[1] = c.dst[0] + OW * c.ldd;
            c.o0 = ow;
            c.n = cnt;
            dnnq_dw3x3_avx512(&c);
        } else {
            const int64_t chunk = DNNQ_DW_TILE_ROWS / 2;
            for (int64_t o = ow; o < ow + cnt; o += chunk) {
                const int64_t k = ow + cnt - o < chunk ? ow + cnt - o : chunk;
                c.o0 = o;
                c.n = k;
                c.acc[0] = tile;
                c.acc[1] = tile + k * DNNQ_NR;
                dnnq_dw3x3_avx512(&c);
                cv->epilogue(&ge, 0, mrow + o, (int)k, p, tile);
                if (pair) cv->epilogue(&ge, 0, mrow + OW + o, (int)k, p, tile + k * DNNQ_NR);
            }
        }
        m += pair ? 2 * OW : cnt;
    }
    return 0;
}

/* the geometry fields of the plain kernel's call */
static void plain_geometry(const dnnq_conv_t *cv, dnnq_dw3x3_plain_t *c) {
    c->src_plane = cv->id * cv->ih * cv->iw;
    c->dst_plane = cv->od * cv->oh * cv->ow;
    c->id = cv->id, c->ih = cv->ih, c->iw = cv->iw;
    c->od = cv->od, c->oh = cv->oh, c->ow = cv->ow;
    c->sd = cv->sd, c->sh = cv->sh, c->sw = cv->sw;
    c->pd = cv->pd, c->ph = cv->ph, c->pw = cv->pw;
    c->ntaps = cv->npairs;
}

/* The plain (nchw) column kernel: the same work items as run_item_dw3x3 (whole output rows of
 * one panel), the rows of each of the panel's channel planes read and written in place.  Its
 * caller (ConvExec) chose it at creation for the fused epilogue's cases only. */
static int run_item_dw3x3_plain(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t p = item % cv->n_panels;
    const int64_t blk = (item / cv->n_panels) % nblk;
    const int64_t n = item / cv->n_panels / nblk;
    const int64_t chan0 = p * DNNQ_NR, isp = cv->id * cv->ih * cv->iw;
    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    dnnq_dw3x3_plain_t c;
    c.nc = (int)(cv->OC - chan0 < DNNQ_NR ? cv->OC - chan0 : DNNQ_NR);
    if (!dnnq_dw3x3_epi_prepare_avx512(&ge, chan0, c.nc, &epi)) return -1; /* not chosen */
    plain_geometry(cv, &c);
    c.src = cv->src + (n * cv->IC + chan0) * isp;
    c.dst = (uint8_t *)cv->epi.dst + (n * cv->OC + chan0) * osp;
    c.src_lo = cv->src;
    c.src_hi = cv->src + cv->N * cv->IC * isp;
    c.m0 = blk * cv->mc;
    c.mend = c.m0 + (osp - c.m0 < cv->mc ? osp - c.m0 : cv->mc);
    c.src_signed = cv->src_signed;
    c.w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    c.zpix = cv->zp_rows + chan0;
    c.epi = &epi;
    c.vbmi = cv->plain >= 2;
    c.flat = cv->plain == 3;
    c.flat_table = cv->flat_table;
    dnnq_dw3x3_plain_avx512(&c);
    return 0;
}
#endif

int dnnq_conv_build_flat_table(dnnq_conv_t *cv) {
    free((void *)cv->flat_table);
    cv->flat_table = NULL;
#ifdef DNNQ_HAVE_X86_KERNELS
    /* (dw3x3's conditions that the plan knows at creation; 2-D) */
    if (!cv->depthwise || cv->deconv || cv->kd != 1 || cv->kh != 3 || cv->kw != 3 ||
        cv->dh != 1 || cv->dw != 1 || cv->sh < 1 || cv->sh > 2 || cv->sw < 1 || cv->sw > 2 ||
        cv->od != 1 || cv->id != 1)
        return 0;
    dnnq_dw3x3_plain_t c;
    memset(&c, 0, sizeof c);
    plain_geometry(cv, &c);
    c.m0 = 0;
    c.mend = c.dst_plane;
    c.flat = 1;
    cv->flat_table = dnnq_dw3x3_flat_table_avx512(&c);
#endif
    return cv->flat_table != NULL;
}

int dnnq_conv_run_item(const dnnq_conv_t *cv, int64_t item) {
    if (cv->f32) return dnnq_conv_run_item_f32(cv, item);
#ifdef DNNQ_HAVE_X86_KERNELS
    if (cv->plain) return dw3x3(cv) ? run_item_dw3x3_plain(cv, item) : -1;
    if (dw3x3(cv)) return run_item_dw3x3(cv, item);
    if (dw_rows3(cv)) return run_item_dw_rows3(cv, item);
#endif
    if (cv->tiles) return dnnq_conv_run_item_tiles(cv, item);
    if (dnnq_conv_takes_phases(cv, item)) return dnnq_conv_run_item_deconv_phases(cv, item);
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
    dnnq_dw_tile_fn dw = cv->depthwise ? dnnq_dw_tile_for_isa(cv->isa, cv->dw_kind) : NULL;

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

dnnq_dw_tile_fn dnnq_dw_tile_for_isa(int isa, int kind) {
#ifdef DNNQ_HAVE_X86_KERNELS
    switch (DNNQ_ISA_LEVEL(isa)) {
    case DNNQ_ISA_AVX512_CORE_AMX:
    case DNNQ_ISA_AVX512_CORE_VNNI:
        return kind == DNNQ_DW_VNNI4 ? dnnq_dw4_tile_avx512 : dnnq_dw_tile_avx512;
    case DNNQ_ISA_AVX2_VNNI:
    case DNNQ_ISA_AVX2: return dnnq_dw_tile_avx2;
    default: break;
    }
#endif
    (void)isa;
    return dnnq_dw_tile_portable;
}

/* One unit of the fused band path (image n, panel p = unit % n_panels): the panel's channels
 * of the plain source copied to the channels-last buffer cv->src, the unit's items (panel-
 * outer order: nblk consecutive items), then the panel's channels of the channels-last dst
 * cv->epi.dst copied to the plain dst.  The copies and the items of a unit read and write
 * only its own channels, so units run on any thread without a barrier between the steps,
 * and each step finds the previous one's bytes in cache. */
int dnnq_conv_run_band_unit(const dnnq_conv_t *cv, int64_t unit, int isa,
                            const uint8_t *src_plain, int64_t p_src, void *dst_plain,
                            int64_t p_dst, int esz) {
    const int64_t C = cv->OC, n = unit / cv->n_panels, p = unit % cv->n_panels;
    const int64_t c0 = p * DNNQ_NR, c1 = c0 + DNNQ_NR < C ? c0 + DNNQ_NR : C;
    const int64_t nblk = dnnq_conv_n_items(cv) / (cv->N * cv->n_panels);
    dnnq_transpose_rows_for_isa(isa, src_plain + n * C * p_src,
                                (uint8_t *)cv->src + n * C * p_src, C, p_src, c0, c1, 1);
    int failed = 0;
    for (int64_t it = unit * nblk; it < (unit + 1) * nblk && !failed; ++it)
        failed = dnnq_conv_run_item(cv, it) != 0;
    if (failed) return -1;
    dnnq_transpose_for_isa(isa, (const char *)cv->epi.dst + n * C * p_dst * esz,
                           (char *)dst_plain + n * C * p_dst * esz, p_dst, C, c0, c1, esz, p_dst);
    return 0;
}

