/* Depthwise variant "dw3x3": the 3x3 column kernel on channels-last data, AVX-512 VNNI, and its
 * driver (dnnq_dw_item_3x3); the fused epilogue's preparation for every 3x3 kernel.
 *
 * The row kernel (dw_rows3_avx512.c) groups the three taps of one kernel row per vpdpbusd and
 * so interleaves the source pixels of every kernel row for every output pixel.  Here the
 * four bytes of a vpdpbusd lane are four source rows at one column: the column is
 * interleaved once and serves every output pixel that reads it (kw = 0, 1, 2 along a row of
 * outputs; with two output rows, both: weights A = (w[0][kw], w[1][kw], w[2][kw], 0) for the
 * upper row, B = (0, w[0][kw], w[1][kw], w[2][kw]) for the lower).  Per output pixel and 64
 * channels, stride 1 and two output rows: one interleave (two source loads, four unpacks)
 * and twelve vpdpbusd, against three interleaves for the row kernel.
 *
 * The epilogue is fused: the accumulators of a finished pixel go through the fast epilogue's
 * f32 steps (the same operations in the same order as epilogue_avx512.h's epi_value, dw_avx512.h) in the
 * accumulators' own channel order (the per-channel constants are permuted once per call
 * instead), and the packs to 8 bits put the bytes back in channel order; s32 never goes to
 * memory.  Other destinations (f32, s32, post-ops beyond relu / linear) take the s32
 * accumulators, stored in channel order, to the driver's epilogue. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"
#include "dw_avx512.h"

/* 64 channels in zmm */
#define DW_W 512
#define DW_V __m512i
#define DW_VF __m512
#define DW_M __mmask64
#define DW_VL 16
#define DW_SFX _512
#define DW9_STORE_ACC DNNQ_DW_STORE_ACC512
#include "dw3x3_body.h"
#undef DW_W
#undef DW_V
#undef DW_VF
#undef DW_M
#undef DW_VL
#undef DW_SFX
#undef DW9_STORE_ACC

/* up to 32 channels in ymm (the first two lanes of the packed vectors) */
#define DW_W 256
#define DW_V __m256i
#define DW_VF __m256
#define DW_M __mmask32
#define DW_VL 8
#define DW_SFX _256
#define DW9_STORE_ACC DNNQ_DW_STORE_ACC256
#include "dw3x3_body.h"

/* the call at its width (the masks of its nc channels) */
static void dw9_call(const dnnq_dw3x3_call_t *c) {
    const int nc = c->nc;
    const int mode = dw9_mode(c->epi);
    if (nc > 32) dw9_call_512(c, nc >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << nc) - 1), mode);
    else dw9_call_256(c, nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1), mode);
}

/* v[j] (channels 16 j ..) -> out in the accumulators' order: vector k (16 lanes, or with
 * narrow 8: channels < 32) holds in 128-bit lane L channels 16 L + 4 k .. + 3 */
static void dw9_permute(const __m512i v[4], int narrow, int32_t *out) {
    if (!narrow) { /* a 4 x 4 transpose of 128-bit lanes */
        const __m512i t0 = _mm512_shuffle_i32x4(v[0], v[1], 0x44);
        const __m512i t1 = _mm512_shuffle_i32x4(v[2], v[3], 0x44);
        const __m512i t2 = _mm512_shuffle_i32x4(v[0], v[1], 0xEE);
        const __m512i t3 = _mm512_shuffle_i32x4(v[2], v[3], 0xEE);
        _mm512_storeu_si512(out, _mm512_shuffle_i32x4(t0, t1, 0x88));
        _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(t0, t1, 0xDD));
        _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(t2, t3, 0x88));
        _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(t2, t3, 0xDD));
        return;
    }
    /* vector k = (lane k of v[0], lane k of v[1]) */
    const __m512i lo = _mm512_shuffle_i32x4(v[0], v[1], 0x44); /* v0.0 v0.1 v1.0 v1.1 */
    const __m512i hi = _mm512_shuffle_i32x4(v[0], v[1], 0xEE); /* v0.2 v0.3 v1.2 v1.3 */
    const __m512i a = _mm512_shuffle_i32x4(lo, lo, 0xD8);      /* v0.0 v1.0 v0.1 v1.1 */
    const __m512i b = _mm512_shuffle_i32x4(hi, hi, 0xD8);      /* v0.2 v1.2 v0.3 v1.3 */
    _mm512_storeu_si512(out, a);
    _mm512_storeu_si512(out + 16, b);
}

/* A bound on |value| before the dst type's clamp of a fused post-op chain (as epi_prepare_avx512
 * bounds relu / none): |f32(acc) * scale + bias| <= max scale * 2^31 + max |bias|, through each
 * post-op (a clip bounds it by its limits, hard-swish keeps it, hard-sigmoid by 1), then times
 * |1 / dst scale| plus |dst zero point|; infinite when anything is not finite. */
static float dw9_chain_bound(const dnnq_gemm_args_t *g, const epi_consts_t *k) {
    /* (in vectors: the scalar loop's libm fmaxf calls cost a 16-channel layer's work items
     * of two rows 3 %) */
    __m512 vs = _mm512_setzero_ps(), vb = vs, vz = vs;
    __mmask16 nonfinite = 0;
    for (int j = 0; j < 4; ++j) {
        vs = _mm512_max_ps(vs, _mm512_abs_ps(k->sc[j]));
        vb = _mm512_max_ps(vb, _mm512_abs_ps(k->bi[j]));
        vz = _mm512_max_ps(vz, _mm512_abs_ps(k->zp[j]));
        /* 0x99: quiet / signalling NaN, +inf, -inf */
        nonfinite |= _mm512_fpclass_ps_mask(k->sc[j], 0x99) |
                     _mm512_fpclass_ps_mask(k->bi[j], 0x99) |
                     _mm512_fpclass_ps_mask(k->zp[j], 0x99);
    }
    if (nonfinite) return INFINITY;
    const float ms = _mm512_reduce_max_ps(vs), mb = _mm512_reduce_max_ps(vb),
                mz = _mm512_reduce_max_ps(vz);
    float b = ms * 2147483648.0f + mb;
    for (int i = 0; i < g->n_post; ++i) {
        const dnnq_postop_t *po = &g->post[i];
        const float al = fabsf(po->alpha), be = fabsf(po->beta);
        if (po->kind != DNNQ_PO_ELTWISE || !isfinite(al) || !isfinite(be)) return INFINITY;
        switch (po->alg) {
        case DNNQ_ELT_RELU: b *= al > 1.0f ? al : 1.0f; break;
        case DNNQ_ELT_LINEAR: b = al * b + be; break;
        case DNNQ_ELT_CLIP:
        case DNNQ_ELT_CLIP_V2: b = al > be ? al : be; break;
        case DNNQ_ELT_HARDSWISH: break;
        case DNNQ_ELT_HARDSIGMOID: b = 1.0f; break;
        case DNNQ_ELT_ROUND: b += 1.0f; break; /* |nearbyint(x)| <= |x| + 0.5 */
        default: return INFINITY;
        }
    }
    const float r = b * fabsf(g->inv_dst_scale) + mz;
    return isfinite(r) ? r : INFINITY;
}

/* The fast epilogue's constants for the panel (epi_prepare_avx512), permuted to the
 * accumulators' order: vector k (of VL lanes), lane L, dword j <- channel 16 L + 4 k + j. */
void dnnq_dw_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t n0, int nc,
                                dnnq_dw_epi_t *e) {
    epi_consts_t k;
    epi_prepare_avx512(g, 0, n0, nc, &k);
    const int narrow = nc <= 32;
    dw9_permute(k.cc, narrow, e->cc);
    __m512i t[4];
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.sc[j]);
    dw9_permute(t, narrow, (int32_t *)e->sc);
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.bi[j]);
    dw9_permute(t, narrow, (int32_t *)e->bi);
    for (int j = 0; j < 4; ++j) t[j] = _mm512_castps_si512(k.zp[j]);
    dw9_permute(t, narrow, (int32_t *)e->zp);
    e->inv_dst_scale = g->inv_dst_scale;
    e->dt = g->dst_dt;
    e->post = k.post;
    e->flags = k.flags;
    /* a chain whose values stay below 2^30: the saturating packs alone clamp (EPI_F_NOCLAMP) */
    if (k.post == EPI_CHAIN && (g->dst_dt == DNNQ_DT_U8 || g->dst_dt == DNNQ_DT_S8) &&
        dw9_chain_bound(g, &k) < 1073741824.0f)
        e->flags |= EPI_F_NOCLAMP;
    e->has_zp = k.has_zp;
    e->n_post = g->n_post;
    e->po = g->post;
    e->clip_drop = k.post == EPI_CHAIN && k.chain_regs ? k.clip_drop : 0;
}

/* The 3x3 column-kernel driver (dnnq_dw3x3_avx512: kernel 3x3, 2-D or kd = 1, stride 1 or 2,
 * no dilation): the item's output rows one at a time, or two at a time (stride 1 along h)
 * when both are whole in the item; the epilogue fused into the kernel when it can be, else
 * the s32 accumulators of up to 32 columns per call go through the tile epilogue. */
int dnnq_dw_item_3x3(const dnnq_conv_t *cv, int64_t item) {
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
    if (fused) dnnq_dw_epi_prepare_avx512(&ge, chan0, nc, &epi);
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
    /* 16 channels: four pixels per vector (dw3x3_px16_avx512.c) */
    const int px16 = fused && nc == 16 && IC == 16 && c.sw == 1 && c.ldd == 16;
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
            if (px16) dnnq_dw3x3_px16(&c);
            else dw9_call(&c);
        } else {
            const int64_t chunk = DNNQ_DW_TILE_ROWS / 2;
            for (int64_t o = ow; o < ow + cnt; o += chunk) {
                const int64_t k = ow + cnt - o < chunk ? ow + cnt - o : chunk;
                c.o0 = o;
                c.n = k;
                c.acc[0] = tile;
                c.acc[1] = tile + k * DNNQ_NR;
                dw9_call(&c);
                cv->epilogue(&ge, 0, mrow + o, (int)k, p, tile);
                if (pair) cv->epilogue(&ge, 0, mrow + OW + o, (int)k, p, tile + k * DNNQ_NR);
            }
        }
        m += pair ? 2 * OW : cnt;
    }
    return 0;
}

