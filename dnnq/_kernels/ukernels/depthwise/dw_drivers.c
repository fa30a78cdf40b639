/* The drivers of the AVX-512 depthwise kernels (their work items; the kernels are in
 * conv_dw3x3_avx512.c and conv_dw_avx512.c, compiled with AVX-512 flags): the row driver
 * (dw_rows3), the 3x3 column kernel on channels-last (dw3x3) and on plain data
 * (dw3x3_plain).  Each runs the items of a plan whose kernel the implementation list chose
 * (dnnq._impls.CONV; dnnq_conv_check_kernel checked the plan once). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"

#ifdef DNNQ_HAVE_X86_KERNELS
/* The depthwise row driver (AVX-512, vnni4 weights, kernel rows of three taps along w, stride
 * 1 or 2 along w, no padding correction): each output row of the item's pixels is one kernel
 * call (up to a tile of pixels), the kernel reading the zero-point pixel for the columns in
 * the padding.  Kernel rows outside the source read the zero-point pixel with stride 0, or are
 * skipped when they would add nothing (u8 source, zero point 0). */
int dnnq_conv_run_item_dw_rows3(const dnnq_conv_t *cv, int64_t item) {
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
int dnnq_conv_run_item_dw3x3(const dnnq_conv_t *cv, int64_t item) {
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
    const int fused = cv->dw_fused; /* (chosen at creation) */
    if (fused) dnnq_dw3x3_epi_prepare_avx512(&ge, chan0, nc, &epi);
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
int dnnq_conv_run_item_dw3x3_plain(const dnnq_conv_t *cv, int64_t item) {
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
    dnnq_dw3x3_epi_prepare_avx512(&ge, chan0, c.nc, &epi);
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
