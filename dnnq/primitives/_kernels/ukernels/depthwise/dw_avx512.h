/* What the AVX-512 depthwise variants share (ukernels/depthwise/: one file per variant, each
 * compiled with the avx512vnni flags, its VBMI parts under a target attribute):
 *  - the vnni4 accumulators' store in channel order and the four-tap byte interleave;
 *  - the fused epilogue: its constants in the accumulators' order (dnnq_dw_epi_t, prepared by
 *    dnnq_dw_epi_prepare_avx512) and its per-vector steps, the operations of
 *    epilogue_avx512.h's epi_value in the same order (hence the same bits), per vector width;
 *  - the plain (nchw) 3x3 kernels' call (dnnq_dw_plain_t), per-channel context, store, and
 *    the channel loop that runs a kernel's row ranges (dnnq_dw_plain_channels).
 * The variants themselves are work items of the plan, one signature (dnnq_conv_item_fn,
 * declared in dnnq_conv.h). */
#ifndef DNNQ_DW_AVX512_H
#define DNNQ_DW_AVX512_H
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"
#include "epilogue_avx512.h"

/* ---- vnni4 accumulators ---------------------------------------------------------------- */

/* Stores of the four s32 accumulators of a vnni4 tile (accumulator k, 128-bit lane L, dword j
 * = channel 16 L + 4 k + j) back in channel order: 64 channels from zmm, 32 from ymm. */
#include <immintrin.h>

#define DNNQ_DW_STORE_ACC512(sv, out)                                                          \
    do {                                                                                       \
        const __m512i t0 = _mm512_shuffle_i32x4(sv[0], sv[1], 0x44);                          \
        const __m512i t1 = _mm512_shuffle_i32x4(sv[2], sv[3], 0x44);                          \
        const __m512i t2 = _mm512_shuffle_i32x4(sv[0], sv[1], 0xEE);                          \
        const __m512i t3 = _mm512_shuffle_i32x4(sv[2], sv[3], 0xEE);                          \
        _mm512_storeu_si512((out), _mm512_shuffle_i32x4(t0, t1, 0x88));                        \
        _mm512_storeu_si512((out) + 16, _mm512_shuffle_i32x4(t0, t1, 0xDD));                   \
        _mm512_storeu_si512((out) + 32, _mm512_shuffle_i32x4(t2, t3, 0x88));                   \
        _mm512_storeu_si512((out) + 48, _mm512_shuffle_i32x4(t2, t3, 0xDD));                   \
    } while (0)
#define DNNQ_DW_STORE_ACC256(sv, out)                                                          \
    do {                                                                                       \
        _mm256_storeu_si256((__m256i *)(out), _mm256_permute2x128_si256(sv[0], sv[1], 0x20)); \
        _mm256_storeu_si256((__m256i *)((out) + 8), _mm256_permute2x128_si256(sv[2], sv[3], 0x20)); \
        _mm256_storeu_si256((__m256i *)((out) + 16), _mm256_permute2x128_si256(sv[0], sv[1], 0x31)); \
        _mm256_storeu_si256((__m256i *)((out) + 24), _mm256_permute2x128_si256(sv[2], sv[3], 0x31)); \
    } while (0)

/* the source bytes of four taps (a, b, c, d) interleaved per channel by two rounds of unpacks
 * (bytes, then words): q[k] holds, in lane L, dword j, channel 16 L + 4 k + j's four bytes */
#define DW4_INTERLEAVE(W, a, b, c, d, q)                                                       \
    do {                                                                                       \
        const __m##W##i ab_lo = _mm##W##_unpacklo_epi8(a, b), ab_hi = _mm##W##_unpackhi_epi8(a, b); \
        const __m##W##i cd_lo = _mm##W##_unpacklo_epi8(c, d), cd_hi = _mm##W##_unpackhi_epi8(c, d); \
        q[0] = _mm##W##_unpacklo_epi16(ab_lo, cd_lo);                                          \
        q[1] = _mm##W##_unpackhi_epi16(ab_lo, cd_lo);                                          \
        q[2] = _mm##W##_unpacklo_epi16(ab_hi, cd_hi);                                          \
        q[3] = _mm##W##_unpackhi_epi16(ab_hi, cd_hi);                                          \
    } while (0)


/* ---- the fused epilogue ---------------------------------------------------------------- */

typedef struct {
    float sc[64], bi[64], zp[64];   /* in the accumulators' (k, L, j) order */
    int32_t cc[64];
    float inv_dst_scale;
    int dt, post, flags, has_zp, n_post; /* post: 0 none, 1 relu(0), 2 chain */
    const dnnq_postop_t *po;
    uint64_t clip_drop;             /* the chain's clip bounds that never apply (ech_alg) */
} dnnq_dw_epi_t;

/* e prepared for the panel's columns n0 .. n0 + nc - 1 of g, whose epilogue the creation
 * found fused (dnnq_conv_t.dw_fused: 8-bit dst, relu / linear post-ops; for fold_lanes clip /
 * clip_v2 / hardswish / hardsigmoid too); dw3x3_avx512.c */
void dnnq_dw_epi_prepare_avx512(const dnnq_gemm_args_t *g, int64_t n0, int nc,
                                dnnq_dw_epi_t *e);

/* the epilogue modes: s32 out; the hot fused case; the fused general case */
enum { DW9_RAW = 0, DW9_HOT = 1, DW9_GENERIC = 2 };

/* the epilogue mode of e (NULL: s32 out) */
static inline int dw9_mode(const dnnq_dw_epi_t *e) {
    return !e ? DW9_RAW
           : e->dt == DNNQ_DT_U8 && e->post != EPI_CHAIN && !e->has_zp &&
                     (e->flags & EPI_F_NOCC) && (e->flags & EPI_F_NOCLAMP)
               ? DW9_HOT : DW9_GENERIC;
}

/* Accumulator vectors through the fused epilogue, per width W (512, 256), up to the conversion
 * to s32.  dw9_epi_hot_W: u8 dst, no compensation, no dst zero point, no clamp needed
 * (EPI_F_NOCLAMP), relu(0) or nothing: a relu before a positive dst scale changes nothing the
 * u8 saturation of the packs does not.  dw9_epi_block_W: every other case, each step by e's
 * fields, on NV vectors at once (a[i] takes the constants cc, sc, bi, zp [i % NK] of its
 * lanes), the post-op chain applied post-op by post-op (one decision per post-op and block:
 * per vector, the chain's branches cost MobileNetV3's clip + hardswish more than the copy to
 * the tile epilogue did); dw9_epi_vec_W: one vector.  dw9_post_W: one post-op on NV values,
 * the operations of epilogue_avx512.h's epi_tile_chain, hence the same bits. */
#define DW_EPI_STEPS(W, V, VF)                                                                 \
    static inline __attribute__((always_inline)) V dw9_epi_hot_##W(VF inv, V a, VF sc,        \
                                                                   VF bi) {                    \
        VF v = _mm##W##_mul_ps(_mm##W##_cvtepi32_ps(a), sc);                                   \
        v = _mm##W##_mul_ps(_mm##W##_add_ps(v, bi), inv);                                      \
        return _mm##W##_cvtps_epi32(v);                                                        \
    }                                                                                          \
    static inline __attribute__((always_inline)) void dw9_post_##W(const dnnq_postop_t *po,    \
                                                                   VF *v, const int NV) {      \
        const VF zf = _mm##W##_setzero_ps(), one = _mm##W##_set1_ps(1.0f);                     \
        const VF al = _mm##W##_set1_ps(po->alpha), be = _mm##W##_set1_ps(po->beta);            \
        switch (po->alg) {                                                                     \
        case DNNQ_ELT_RELU:                                                                    \
            if (po->alpha == 0.0f) {                                                           \
                for (int i = 0; i < NV; ++i) v[i] = _mm##W##_max_ps(v[i], zf);                 \
            } else {                                                                           \
                for (int i = 0; i < NV; ++i)                                                   \
                    v[i] = _mm##W##_mask_mov_ps(_mm##W##_mul_ps(v[i], al),                     \
                                                _mm##W##_cmp_ps_mask(v[i], zf, _CMP_GT_OQ),    \
                                                v[i]);                                         \
            }                                                                                  \
            break;                                                                             \
        case DNNQ_ELT_CLIP: /* min(be, .) keeps a NaN */                                       \
            for (int i = 0; i < NV; ++i) v[i] = _mm##W##_min_ps(be, _mm##W##_max_ps(v[i], al));\
            break;                                                                             \
        case DNNQ_ELT_CLIP_V2: /* NaN -> be */                                                 \
            for (int i = 0; i < NV; ++i) v[i] = _mm##W##_min_ps(_mm##W##_max_ps(v[i], al), be);\
            break;                                                                             \
        case DNNQ_ELT_HARDSWISH: /* t = min(x al + be, 1) then max(t, 0): NaN -> 1 */          \
            for (int i = 0; i < NV; ++i)                                                       \
                v[i] = _mm##W##_mul_ps(                                                        \
                    v[i], _mm##W##_max_ps(_mm##W##_min_ps(_mm##W##_add_ps(                     \
                                                              _mm##W##_mul_ps(v[i], al), be),  \
                                                          one),                                \
                                          zf));                                                \
            break;                                                                             \
        case DNNQ_ELT_HARDSIGMOID:                                                             \
            for (int i = 0; i < NV; ++i)                                                       \
                v[i] = _mm##W##_max_ps(                                                        \
                    _mm##W##_min_ps(_mm##W##_add_ps(_mm##W##_mul_ps(v[i], al), be), one), zf); \
            break;                                                                             \
        case DNNQ_ELT_ROUND: /* half to even: a NaN stays NaN */                               \
            for (int i = 0; i < NV; ++i)                                                       \
                v[i] = _mm##W##_roundscale_ps(v[i], _MM_FROUND_TO_NEAREST_INT |                \
                                                        _MM_FROUND_NO_EXC);                    \
            break;                                                                             \
        default: /* linear, fused as oneDNN does */                                            \
            for (int i = 0; i < NV; ++i) v[i] = _mm##W##_fmadd_ps(al, v[i], be);               \
            break;                                                                             \
        }                                                                                      \
    }                                                                                          \
    static inline __attribute__((always_inline)) void dw9_epi_block_##W(                       \
        const dnnq_dw_epi_t *e, V *a, const int NV, const int NK, const V *cc, const VF *sc,   \
        const VF *bi, const VF *zp) {                                                          \
        const VF zf = _mm##W##_setzero_ps();                                                   \
        const int F = e->flags;                                                                \
        VF v[16]; /* NV <= 16 */                                                               \
        for (int i = 0; i < NV; ++i) {                                                         \
            V x = a[i];                                                                        \
            if (!(F & EPI_F_NOCC)) x = _mm##W##_add_epi32(x, cc[i % NK]);                      \
            v[i] = _mm##W##_add_ps(_mm##W##_mul_ps(_mm##W##_cvtepi32_ps(x), sc[i % NK]),       \
                                   bi[i % NK]);                                                \
        }                                                                                      \
        if (e->post == EPI_RELU0) {                                                            \
            for (int i = 0; i < NV; ++i) v[i] = _mm##W##_max_ps(v[i], zf);                     \
        } else if (e->post == EPI_CHAIN) {                                                     \
            for (int p = 0; p < e->n_post; ++p) dw9_post_##W(&e->po[p], v, NV);                \
        }                                                                                      \
        for (int i = 0; i < NV; ++i) {                                                         \
            if (!(F & EPI_F_SIMPLE)) {                                                         \
                v[i] = _mm##W##_mul_ps(v[i], _mm##W##_set1_ps(e->inv_dst_scale));              \
                if (e->has_zp) v[i] = _mm##W##_add_ps(v[i], zp[i % NK]);                       \
            }                                                                                  \
            if (!(F & EPI_F_NOCLAMP)) {                                                        \
                if (e->dt == DNNQ_DT_S8) v[i] = _mm##W##_min_ps(v[i], _mm##W##_set1_ps(127.0f));\
                else v[i] = _mm##W##_min_ps(_mm##W##_max_ps(v[i], zf),                         \
                                            _mm##W##_set1_ps(255.0f));                         \
            }                                                                                  \
            a[i] = _mm##W##_cvtps_epi32(v[i]);                                                 \
        }                                                                                      \
    }                                                                                          \
    static inline __attribute__((always_inline)) V dw9_epi_vec_##W(                            \
        const dnnq_dw_epi_t *e, V a, V cc, VF sc, VF bi, VF zp) {                              \
        dw9_epi_block_##W(e, &a, 1, 1, &cc, &sc, &bi, &zp);                                    \
        return a;                                                                              \
    }
DW_EPI_STEPS(512, __m512i, __m512)
DW_EPI_STEPS(256, __m256i, __m256)
#undef DW_EPI_STEPS

/* ---- the 3x3 column kernel (dw3x3_avx512.c, dw3x3_body.h) ------------------------------
 * Kernel 3x3 (dilation 0, stride 1 or 2 along h and w), one or two output rows of one
 * 64-channel panel, channels-last: per source column, the pixels of four source rows are
 * interleaved per channel once (vpdpbusd's four bytes = four kernel rows) and serve the output
 * columns that column meets: kw = 0, 1, 2, and with two output rows (stride 1 along h) both
 * rows (weights A = (w0, w1, w2, 0) and B = (0, w0, w1, w2) per kw, the "cols3" block).  The
 * epilogue is fused (8-bit dst, the fast epilogue's post-ops) or the s32 accumulators are
 * stored in channel order. */
typedef struct {
    const uint8_t *row[4];          /* source rows at column 0 (the panel's first channel) */
    int64_t rs[4];                  /* their pixel strides (0: the zero-point pixel) */
    int nro;                        /* output rows: 1 (rows 0..2) or 2 (rows 0..3) */
    int64_t o0, n;                  /* output columns o0 .. o0 + n - 1 */
    int sw;
    int64_t pw, iw;
    int nc, src_signed;
    const int8_t *w;                /* the panel's vnni4 weights */
    int64_t ntaps;
    const uint8_t *zpix;            /* the zero-point pixel (the panel's channels) */
    const dnnq_dw_epi_t *epi;       /* NULL: s32 to acc */
    uint8_t *dst[2];                /* fused: output column o of row r at dst[r] + o * ldd */
    int64_t ldd;
    int32_t *acc[2];                /* else: output column o0 + i of row r at acc[r] + 64 i */
} dnnq_dw3x3_call_t;

/* The call for exactly 16 channels (nc = 16, source pixels 16 bytes apart, ldd = 16, stride 1
 * along w, the fused epilogue), four pixels per vector: dw3x3_px16_avx512.c */
void dnnq_dw3x3_px16(const dnnq_dw3x3_call_t *c);

/* ---- the plain (nchw) 3x3 kernels ------------------------------------------------------ */

/* One call of a plain kernel (dw3x3_plain_avx512.c, dw3x3_plain_s2_vbmi.c,
 * dw3x3_flat_vbmi.c): kernel 3x3, 2-D or kd = 1, stride 1 or 2 along h and w, no dilation,
 * the fused epilogue only; the output rows of pixels m0 .. mend - 1 (whole rows, flattened
 * (od, oh, ow)) of the nc channels of one panel of one image. */
typedef struct {
    const uint8_t *src;             /* the panel's first channel's source plane of the image */
    const uint8_t *src_lo, *src_hi; /* the whole source array */
    uint8_t *dst;                   /* its destination plane */
    int64_t src_plane, dst_plane;   /* bytes per plane: id * ih * iw, od * oh * ow */
    int64_t id, ih, iw, od, oh, ow;
    int64_t sd, sh, sw, pd, ph, pw;
    int64_t m0, mend;
    int nc, src_signed;
    const int8_t *w;                /* the panel's vnni4 weights */
    int64_t ntaps;
    const uint8_t *zpix;            /* the source zero point of the panel's channels */
    const dnnq_dw_epi_t *epi;
    /* the flat kernel's index vectors of items of whole planes, built at creation
     * (dnnq_conv_t.flat_table); NULL: built per item */
    const void *flat_table;
} dnnq_dw_plain_t;

/* the geometry fields of a plain kernel's call */
static inline void dnnq_dw_plain_geometry(const dnnq_conv_t *cv, dnnq_dw_plain_t *c) {
    c->src_plane = cv->id * cv->ih * cv->iw;
    c->dst_plane = cv->od * cv->oh * cv->ow;
    c->id = cv->id, c->ih = cv->ih, c->iw = cv->iw;
    c->od = cv->od, c->oh = cv->oh, c->ow = cv->ow;
    c->sd = cv->sd, c->sh = cv->sh, c->sw = cv->sw;
    c->pd = cv->pd, c->ph = cv->ph, c->pw = cv->pw;
    c->ntaps = cv->npairs;
}

/* The call of the plan's work item (panels innermost: item = (image, row block, panel)):
 * the rows of each of the panel's channel planes, read and written in place; epi gets the
 * panel's fused epilogue, whose post-op chain it points at in post (the caller's: it must
 * outlive the call). */
static inline void dnnq_dw_plain_item(const dnnq_conv_t *cv, int64_t item, dnnq_dw_plain_t *c,
                                      dnnq_dw_epi_t *epi, dnnq_postop_t *post) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    const int64_t p = item % cv->n_panels;
    const int64_t blk = (item / cv->n_panels) % nblk;
    const int64_t n = item / cv->n_panels / nblk;
    const int64_t chan0 = p * DNNQ_NR, isp = cv->id * cv->ih * cv->iw;
    dnnq_gemm_args_t ge;
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    c->nc = (int)(cv->OC - chan0 < DNNQ_NR ? cv->OC - chan0 : DNNQ_NR);
    dnnq_dw_epi_prepare_avx512(&ge, chan0, c->nc, epi);
    dnnq_dw_plain_geometry(cv, c);
    c->src = cv->src + (n * cv->IC + chan0) * isp;
    c->dst = (uint8_t *)cv->epi.dst + (n * cv->OC + chan0) * osp;
    c->src_lo = cv->src;
    c->src_hi = cv->src + cv->N * cv->IC * isp;
    c->m0 = blk * cv->mc;
    c->mend = c->m0 + (osp - c->m0 < cv->mc ? osp - c->m0 : cv->mc);
    c->src_signed = cv->src_signed;
    c->w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    c->zpix = cv->zp_rows + chan0;
    c->epi = epi;
    c->flat_table = cv->flat_table;
}

/* the packed weights' blocks after the panel's vnni4 taps: the s8 source's compensation
 * (comp), then "rows3" (per kernel row), then "cols3" (per kw, upper / lower output row) */
static inline const int8_t *dnnq_dw_comp(const int8_t *w, int64_t ntaps) {
    return w + ((ntaps + 3) / 4) * 256;
}
static inline const int8_t *dnnq_dw_cols3(const int8_t *w, int64_t ntaps) {
    return dnnq_dw_comp(w, ntaps) + 256 + (ntaps / 3) * 1024;
}

/* the 4 x 4 dword transpose (its own inverse) */
#define DWP_TR _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)

typedef struct {
    const uint8_t *row[4]; /* source rows at column 0; NULL: a row in the padding */
    const uint8_t *lo, *hi; /* the source array's bytes (plain loads stay inside) */
    int64_t iw;
    __m512i zraw, zq;      /* the zero point's byte broadcast, and as the kernel reads it */
    __m512i flip, tr;      /* flip: 0x80 bytes for an s8 source (read as u8), else 0 */
    __m512i wa[3], wb[3];  /* the channel's weights per kw, for the upper / lower output row */
    __m512i wr[3];         /* and per kernel row (w[kh][0 .. 2], 0): the VBMI stride-2 rows */
    __m512i init;          /* the accumulators' start: the s8 source's compensation, or 0 */
    __m512i cc;            /* the epilogue's constants, broadcast */
    __m512 sc, bi, zp, inv;
} dwp_ctx_t;

/* out = the accumulators of NV vectors through the general fused epilogue (out of line) */
static __attribute__((noinline)) __m512i dwp_epi_generic(const dnnq_dw_epi_t *e,
                                                        const dwp_ctx_t *x, const __m512i *acc,
                                                        int nv) {
    __m512i q[4];
    for (int k = 0; k < 4; ++k)
        q[k] = k < nv ? dw9_epi_vec_512(e, acc[k], x->cc, x->sc, x->bi, x->zp)
                      : _mm512_setzero_si512();
    const __m512i w01 = _mm512_packs_epi32(q[0], q[1]), w23 = _mm512_packs_epi32(q[2], q[3]);
    return e->dt == DNNQ_DT_S8 ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
}

/* the NV accumulator vectors of one output row through the epilogue, 64 bytes stored at o
 * (those past the row's are rewritten later, or land in the staging buffer's slack) */
static inline __attribute__((always_inline)) void
dwp_finish(const int NV, const int MODE, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
           const __m512i acc[4], uint8_t *o) {
    __m512i b;
    if (MODE == DW9_HOT) {
        __m512i q[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            q[k] = k < NV ? dw9_epi_hot_512(x->inv, acc[k], x->sc, x->bi) : _mm512_setzero_si512();
        b = _mm512_packus_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
    } else {
        b = dwp_epi_generic(e, x, acc, NV);
    }
    /* never a masked store: on Zen 4 one costs about 35 cycles (dw9 took 7x its time) */
    _mm512_storeu_si512((void *)o, _mm512_permutexvar_epi32(x->tr, b));
}

/* channel i's byte position in the packed weight blocks (vector k, 128-bit lane L, dword j)
 * and, in *ei, its index in the epilogue's constants (the accumulators' order) */
static inline __attribute__((always_inline)) int64_t
dwp_channel_pos(const dnnq_dw_plain_t *c, int i, int *ei) {
    const int L = i / 16, k = (i % 16) / 4, j = i % 4;
    *ei = (c->nc <= 32 ? 8 : 16) * k + 4 * L + j;
    return (int64_t)k * 64 + (L * 4 + j) * 4;
}

/* channel i of the panel into x: its weights (cols3 at wc, rows3 after comp), the s8
 * source's compensation, the epilogue's constants and the zero point */
static inline __attribute__((always_inline)) void
dwp_channel_setup(const dnnq_dw_plain_t *c, dwp_ctx_t *x, const int8_t *comp,
                  const int8_t *wc, int i) {
    const dnnq_dw_epi_t *e = c->epi;
    int ei;
    const int64_t wpos = dwp_channel_pos(c, i, &ei);
    for (int kw = 0; kw < 3; ++kw) {
        int32_t a, b, r;
        memcpy(&a, wc + (kw * 2) * 256 + wpos, 4);
        memcpy(&b, wc + (kw * 2 + 1) * 256 + wpos, 4);
        memcpy(&r, comp + 256 + kw * 1024 + wpos, 4); /* rows3: kernel row kw, variant A */
        x->wa[kw] = _mm512_set1_epi32(a);
        x->wb[kw] = _mm512_set1_epi32(b);
        x->wr[kw] = _mm512_set1_epi32(r);
    }
    int32_t cp;
    memcpy(&cp, comp + wpos, 4);
    x->init = c->src_signed ? _mm512_set1_epi32(cp) : _mm512_setzero_si512();
    x->sc = _mm512_set1_ps(e->sc[ei]);
    x->bi = _mm512_set1_ps(e->bi[ei]);
    x->zp = _mm512_set1_ps(e->zp[ei]);
    x->cc = _mm512_set1_epi32(e->cc[ei]);
    x->zraw = _mm512_set1_epi8((char)c->zpix[i]);
    x->zq = _mm512_xor_si512(x->zraw, x->flip);
}

/* a plain kernel's output pixels ma .. mb - 1 (whole rows) of one channel (x set up for it),
 * output pixel m at out + m; arg: the kernel's own plan */
typedef void (*dnnq_dw_plain_range_fn)(int mode, const dnnq_dw_plain_t *c, dwp_ctx_t *x,
                                       const void *arg, const uint8_t *plane, uint8_t *out,
                                       int64_t ma, int64_t mb);

/* The channel loop of the plain kernels: each channel's constants into the context, then its
 * rows by range(); rows narrower than 64 columns (each 64-byte store runs past its row) go
 * through a staging buffer in chunks of an even number of rows, copied out whole. */
static inline void dnnq_dw_plain_channels(const dnnq_dw_plain_t *c, dnnq_dw_plain_range_fn range,
                                          const void *arg) {
    const dnnq_dw_epi_t *e = c->epi;
    const int mode = dw9_mode(e);
    const int8_t *comp = dnnq_dw_comp(c->w, c->ntaps);
    const int8_t *wc = dnnq_dw_cols3(c->w, c->ntaps);
    const int64_t OW = c->ow;
    dwp_ctx_t x;
    x.iw = c->iw;
    x.lo = c->src_lo;
    x.hi = c->src_hi;
    x.flip = _mm512_set1_epi8(c->src_signed ? (char)0x80 : 0);
    x.tr = DWP_TR;
    x.inv = _mm512_set1_ps(e->inv_dst_scale);
    enum { BUF = 4096 };
    uint8_t buf[BUF + 64] __attribute__((aligned(64)));
    const int64_t chunk = OW < 64 ? ((BUF / OW) & ~(int64_t)1) * OW : 0; /* whole row pairs */
    for (int i = 0; i < c->nc; ++i) {
        dwp_channel_setup(c, &x, comp, wc, i);
        const uint8_t *plane = c->src + i * c->src_plane;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        if (OW >= 64) { /* every store inside its row, or rewritten later in the row */
            range(mode, c, &x, arg, plane, dplane, c->m0, c->mend);
            continue;
        }
        for (int64_t ma = c->m0; ma < c->mend; ma += chunk) {
            const int64_t mb = ma + chunk < c->mend ? ma + chunk : c->mend;
            range(mode, c, &x, arg, plane, buf - ma, ma, mb);
            memcpy(dplane + ma, buf, (size_t)(mb - ma));
        }
    }
}

#endif
