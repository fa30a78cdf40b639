/* Convolution kernel "fold_lanes": few output channels (OC <= 8, no groups) over folded
 * kernel rows (fold_kw: a kernel row's KW taps of IC channels are KW * IC adjacent bytes of a
 * channels-last source row), AVX-512 VNNI with AVX512-VBMI.  PP-OCR's classifier stem (3
 * channels -> 8, 3x3 stride 2) takes it.
 *
 * The GEMM tiles put the output channels in the vector lanes: with 8 of them a 64-column
 * panel (or the 16-column micro-kernel) computes 8 useful columns, and the epilogue runs on
 * vectors half empty.  Here the lanes are 16 consecutive output pixels of a row and each
 * output channel has its own accumulator vector: for each 4-byte quad q of a kernel row, one
 * vpermt2b picks the 16 pixels' quads (pixel i's kernel row starts sw * IC * i bytes after
 * pixel 0's) out of a 128-byte window, and one vpdpbusd per output channel multiplies them by
 * the channel's broadcast weights (the packed GEMM panel's dword: quads past KW * IC meet zero
 * weights).  Every lane is useful in the products and in the epilogue.
 *
 * The source row of each kernel row inside the source is copied once per output row into a
 * buffer with the zero-point bytes around it (the padding along w: no border case in the
 * loop); kernel rows outside the source are not computed, their zero-point products
 * (sum over the row of zp * w, per output channel) start the accumulators, as does the
 * compensation: integer sums, the bits of the GEMM path (a zero point the source type
 * cannot hold adds its per-tap correction for the taps in the padding, as the tiles do).  The
 * epilogue is the depthwise
 * kernels' fused one (dw_avx512.h: 8-bit dst, relu / linear / clip / hardswish /
 * hardsigmoid chains) with per-channel constants broadcast; the bytes of the channels'
 * vectors (saturated as the packs do) are put in pixel order by two byte permutes. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"
#include "depthwise/dw_avx512.h"

#define FL_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

enum { FL_PX = 16 };        /* output pixels per vector */
enum { FL_MAX_OC = DNNQ_FOLD_LANES_MAX_OC, FL_MAX_K4 = 16, FL_MAX_ROWS = 64 };

typedef struct {
    const dnnq_conv_t *cv;
    int oc, k4, nkr;
    int64_t bstep;             /* bytes per kernel row of the packed panel */
    const int8_t *w;           /* the packed panel (group 0, panel 0) */
    __m512i flip;
    __m512i idx[FL_MAX_K4];    /* per quad: the 16 pixels' quad bytes in the window */
    __m512i out_idx[2];        /* the channels' bytes -> pixel order */
    __m512i cc[FL_MAX_OC];     /* the compensation per channel, broadcast */
    __m512 sc[FL_MAX_OC], bi[FL_MAX_OC], zp[FL_MAX_OC];
    int32_t zsum[FL_MAX_ROWS][FL_MAX_OC]; /* per kernel row: its zero-point products */
} fl_ctx_t;

/* the packed weights' dword of kernel row t, quad q, output channel o (dnnq_conv.h layout:
 * per pair K4 quads of 64 columns of 4 bytes) */
static inline int32_t fl_wdword(const fl_ctx_t *x, int64_t t, int q, int o) {
    int32_t v;
    memcpy(&v, x->w + t * x->bstep + ((int64_t)q * DNNQ_NR + o) * 4, 4);
    return v;
}

/* 16 pixels: the accumulators of the OC channels over the window rows win[0 .. nr - 1]
 * (kernel rows widx[]), starting at init */
FL_TARGET static inline __attribute__((always_inline)) void
fl_block(const int OC, const fl_ctx_t *x, int nr, const uint8_t *const *win, const int *widx,
         const __m512i *init, __m512i *acc) {
    for (int o = 0; o < OC; ++o) acc[o] = init[o];
    for (int r = 0; r < nr; ++r) {
        const __m512i t0 = _mm512_loadu_si512((const void *)win[r]);
        const __m512i t1 = _mm512_loadu_si512((const void *)(win[r] + 64));
        for (int q = 0; q < x->k4; ++q) {
            const __m512i a =
                _mm512_xor_si512(_mm512_permutex2var_epi8(t0, x->idx[q], t1), x->flip);
            for (int o = 0; o < OC; ++o)
                acc[o] = _mm512_dpbusd_epi32(acc[o], a,
                                             _mm512_set1_epi32(fl_wdword(x, widx[r], q, o)));
        }
    }
}

/* the accumulators through the fused epilogue to 8 bits, stored as cnt pixels of OC channels
 * at o (pixel-major, dense) */
FL_TARGET static inline __attribute__((always_inline)) void
fl_finish(const int OC, const fl_ctx_t *x, const dnnq_dw_epi_t *e, __m512i *acc, int cnt,
          uint8_t *o) {
    dw9_epi_block_512(e, acc, OC, OC, x->cc, x->sc, x->bi, x->zp);
    /* saturated to 8 bits as the packs do (|value| < 2^31, or INT_MIN for NaN / overflow) */
    __m512i z[2] = {_mm512_setzero_si512(), _mm512_setzero_si512()};
    for (int c = 0; c < OC; ++c) {
        const __m128i b = e->dt == DNNQ_DT_S8
                              ? _mm512_cvtsepi32_epi8(acc[c])
                              : _mm512_cvtusepi32_epi8(_mm512_max_epi32(acc[c],
                                                                        _mm512_setzero_si512()));
        switch (c & 3) {
        case 0: z[c / 4] = _mm512_inserti32x4(z[c / 4], b, 0); break;
        case 1: z[c / 4] = _mm512_inserti32x4(z[c / 4], b, 1); break;
        case 2: z[c / 4] = _mm512_inserti32x4(z[c / 4], b, 2); break;
        default: z[c / 4] = _mm512_inserti32x4(z[c / 4], b, 3); break;
        }
    }
    const int nbytes = OC * FL_PX;
    const __m512i lo = _mm512_permutex2var_epi8(z[0], x->out_idx[0], z[1]);
    if (cnt == FL_PX && nbytes >= 64) {
        _mm512_storeu_si512((void *)o, lo);
        if (nbytes == 128) {
            _mm512_storeu_si512((void *)(o + 64), _mm512_permutex2var_epi8(z[0], x->out_idx[1],
                                                                           z[1]));
            return;
        }
        if (nbytes > 64) {
            uint8_t tmp[64] __attribute__((aligned(64)));
            _mm512_store_si512((void *)tmp, _mm512_permutex2var_epi8(z[0], x->out_idx[1], z[1]));
            memcpy(o + 64, tmp, (size_t)(nbytes - 64));
        }
        return;
    }
    uint8_t tmp[128] __attribute__((aligned(64)));
    _mm512_store_si512((void *)tmp, lo);
    if (nbytes > 64)
        _mm512_store_si512((void *)(tmp + 64),
                           _mm512_permutex2var_epi8(z[0], x->out_idx[1], z[1]));
    memcpy(o, tmp, (size_t)(cnt * OC));
}

/* pc (a zero point the source type cannot hold: per tap and output channel, what a tap in
 * the padding adds to the clamped zero-point bytes' product) for the 16 pixels from o0 of
 * the kernel rows widx[0 .. nr - 1]: their taps left / right of the source row */
FL_TARGET static void fl_pad_correction(const dnnq_conv_t *cv, const int32_t *pc, int nr,
                                        const int *widx, int64_t o0, __m512i *acc) {
    const int OC = (int)cv->OC;
    int32_t corr[FL_MAX_OC][FL_PX];
    memset(corr, 0, sizeof corr);
    for (int i = 0; i < FL_PX; ++i)
        for (int64_t kw = 0; kw < cv->kw; ++kw) {
            const int64_t xw = (o0 + i) * cv->sw - cv->pw + kw;
            if (xw >= 0 && xw < cv->iw) continue;
            for (int r = 0; r < nr; ++r)
                for (int o = 0; o < OC; ++o)
                    corr[o][i] = (int32_t)((uint32_t)corr[o][i] +
                                           (uint32_t)pc[(widx[r] * cv->kw + kw) * OC + o]);
        }
    for (int o = 0; o < OC; ++o)
        acc[o] = _mm512_add_epi32(acc[o], _mm512_loadu_si512((const void *)corr[o]));
}

/* one output row's blocks: ow pixels at dst (OC bytes each) */
FL_TARGET static void fl_row(const int OC, const fl_ctx_t *x, const dnnq_dw_epi_t *e, int nr,
                             const uint8_t *const *buf, const int *widx, const __m512i *init,
                             const int32_t *pc, int64_t ow, int64_t step, uint8_t *dst) {
    const dnnq_conv_t *cv = x->cv;
    __m512i acc[FL_MAX_OC];
    const uint8_t *win[FL_MAX_ROWS];
    for (int64_t o0 = 0; o0 < ow; o0 += FL_PX) {
        for (int r = 0; r < nr; ++r) win[r] = buf[r] + o0 * step;
        fl_block(OC, x, nr, win, widx, init, acc);
        if (pc && (o0 * cv->sw - cv->pw < 0 ||
                   (o0 + FL_PX - 1) * cv->sw - cv->pw + cv->kw > cv->iw))
            fl_pad_correction(cv, pc, nr, widx, o0, acc);
        fl_finish(OC, x, e, acc, (int)(ow - o0 < FL_PX ? ow - o0 : FL_PX), dst + o0 * OC);
    }
}

/* The item: whole output rows of one image.  0, or -1 when the row buffers could not be
 * allocated. */
FL_TARGET int dnnq_conv_item_fold_lanes(const dnnq_conv_t *cv, int64_t item) {
    int64_t n, m0, mend;
    dnnq_conv_item_pixels(cv, item, &n, &m0, &mend);
    const int64_t IC = cv->IC, iw = cv->iw, ow = cv->ow, kpair = cv->kpair;
    const int OC = (int)cv->OC;
    const int nkr = (int)(cv->kd * cv->kh);
    const int64_t step = cv->sw * IC; /* window bytes between consecutive output pixels */

    fl_ctx_t ctx __attribute__((aligned(64)));
    fl_ctx_t *x = &ctx;
    /* per kernel row inside the source: its source row with the padding's zero-point bytes;
     * bytes read by the last block's window end 128 bytes after its start */
    const int64_t nblocks = (ow + FL_PX - 1) / FL_PX;
    const int64_t blen = ((step * FL_PX * (nblocks - 1) + 128 + 63) / 64) * 64;
    uint8_t *rowbuf = (uint8_t *)aligned_alloc(64, (size_t)(blen * (nkr + 1)));
    if (!rowbuf) return -1;
    x->cv = cv;
    x->oc = OC;
    x->k4 = (int)cv->K4;
    x->nkr = nkr;
    x->bstep = cv->K4 * 4 * DNNQ_NR;
    x->w = cv->packed;
    x->flip = _mm512_set1_epi8(cv->src_signed ? (char)0x80 : 0);
    for (int q = 0; q < x->k4; ++q) {
        uint8_t ix[64];
        for (int i = 0; i < FL_PX; ++i)
            for (int b = 0; b < 4; ++b) ix[4 * i + b] = (uint8_t)(step * i + 4 * q + b);
        x->idx[q] = _mm512_loadu_si512((const void *)ix);
    }
    for (int h = 0; h < 2; ++h) { /* output byte b of pixel b / OC, channel b % OC */
        uint8_t ix[64];
        for (int b = 0; b < 64; ++b) {
            const int ob = 64 * h + b;
            ix[b] = (uint8_t)(ob < OC * FL_PX ? (ob % OC) * FL_PX + ob / OC : 0);
        }
        x->out_idx[h] = _mm512_loadu_si512((const void *)ix);
    }
    const uint8_t *zrow = cv->zp_rows; /* kpair zero-point bytes (the source type) */
    const int32_t *pc = cv->padcorr;    /* [tap][OC], or NULL */
    const uint8_t flipb = cv->src_signed ? 0x80 : 0;
    for (int t = 0; t < nkr; ++t)
        for (int o = 0; o < OC; ++o) {
            int32_t s = 0;
            for (int64_t b = 0; b < kpair; ++b) {
                int32_t wd = fl_wdword(x, t, (int)(b / 4), o);
                const int8_t wb = (int8_t)(wd >> (8 * (b % 4)));
                s += (int32_t)(uint8_t)(zrow[b] ^ flipb) * wb;
            }
            x->zsum[t][o] = s;
        }

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    dnnq_dw_epi_prepare_avx512(&ge, 0, OC, &epi);
    int32_t cc[FL_MAX_OC];
    for (int o = 0; o < OC; ++o) { /* channel o's place in the constants (narrow order) */
        const int ei = 8 * (o / 4) + o % 4;
        cc[o] = (epi.flags & EPI_F_NOCC) ? 0 : epi.cc[ei];
        x->sc[o] = _mm512_set1_ps(epi.sc[ei]);
        x->bi[o] = _mm512_set1_ps(epi.bi[ei]);
        x->zp[o] = _mm512_set1_ps(epi.zp[ei]);
        x->cc[o] = _mm512_setzero_si512();
    }
    epi.flags |= EPI_F_NOCC; /* the compensation starts the accumulators */
    uint8_t *dst = (uint8_t *)ge.dst;
    const uint8_t *img = cv->src + n * cv->id * cv->ih * iw * IC;

    /* the zero-point line (rowbuf's first): byte j = the zero point of channel (j - pw IC)
     * mod IC; a row's buffer is the line with the row's bytes [body_lo, body_hi) in it */
    uint8_t *zline = rowbuf;
    const int64_t lead = cv->pw * IC;
    for (int64_t j = 0, c = ((-lead) % IC + IC) % IC; j < blen; ++j, c = c + 1 == IC ? 0 : c + 1)
        zline[j] = zrow[c];
    const int64_t body_lo = lead < 0 ? 0 : lead < blen ? lead : blen;
    const int64_t body_hi = lead + iw * IC < blen ? (lead + iw * IC > 0 ? lead + iw * IC : 0)
                                                 : blen;
    const uint8_t *buf[FL_MAX_ROWS];
    int widx[FL_MAX_ROWS];
    __m512i init[FL_MAX_OC];
    for (int64_t m = m0; m < mend; m += ow) { /* whole rows (mc a multiple of ow) */
        int64_t od, oh, ow0;
        out_pixel(cv, m, &od, &oh, &ow0);
        int32_t start[FL_MAX_OC];
        for (int o = 0; o < OC; ++o) start[o] = cc[o];
        int nr = 0, t = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
            for (int64_t kh = 0; kh < cv->kh; ++kh, ++t) {
                const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, 0);
                if (xh < 0) { /* every tap reads the zero-point bytes */
                    for (int o = 0; o < OC; ++o) {
                        uint32_t v = (uint32_t)start[o] + (uint32_t)x->zsum[t][o];
                        for (int64_t kw = 0; pc && kw < cv->kw; ++kw)
                            v += (uint32_t)pc[(t * cv->kw + kw) * OC + o];
                        start[o] = (int32_t)v;
                    }
                    continue;
                }
                /* buffer byte j holds source byte j - pw * IC of the row, zero points outside */
                uint8_t *b = rowbuf + (int64_t)(nr + 1) * blen;
                const uint8_t *srow = img + (xd * cv->ih + xh) * iw * IC;
                memcpy(b, zline, (size_t)blen);
                if (body_hi > body_lo)
                    memcpy(b + body_lo, srow + body_lo - lead, (size_t)(body_hi - body_lo));
                buf[nr] = b;
                widx[nr++] = t;
            }
        }
        for (int o = 0; o < OC; ++o) init[o] = _mm512_set1_epi32(start[o]);
        uint8_t *drow = dst + m * ge.d_sm;
        if (OC == 8) fl_row(8, x, &epi, nr, buf, widx, init, pc, ow, step, drow);
        else fl_row(OC, x, &epi, nr, buf, widx, init, pc, ow, step, drow);
    }
    free(rowbuf);
    return 0;
}
