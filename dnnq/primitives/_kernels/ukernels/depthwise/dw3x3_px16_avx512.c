/* The 3x3 column kernel's path for exactly 16 channels (G = IC = OC = 16, channels-last, stride
 * 1 along w, the fused epilogue): the dw3x3 driver (dw3x3_avx512.c) calls it for each output
 * row (pair) instead of the 256-bit kernel, whose vectors hold a 32-channel panel: with 16
 * channels half of each vpdpbusd and of the epilogue's lanes were empty, and the chain
 * post-ops (clip, hardswish: PP-OCR's detector) went through the driver's tile epilogue, its
 * constants prepared per 32-column chunk.
 *
 * Here the four 128-bit lanes of a vector are four consecutive pixels: a 64-byte load of a
 * source row is the 16 channels of four source columns, and the column kernel's interleave
 * (byte r of a dword = source row r, two rounds of in-lane unpacks) gives q[k]: lane L =
 * column x + L, dword j = channel 4 k + j -- the vnni4 order of the packed weights' first
 * lane, which is broadcast to all four.  Per four output columns of one or two rows (stride 1
 * along h: weights A for the upper row, B for the lower, as the column kernel): one group of
 * four source columns interleaved (the next group's; the current one is the last group's
 * next), kw = 1 and 2 by lane shifts across the two groups (valignd), 12 or 24 vpdpbusd.
 * The accumulator of row r, vector k holds four pixels' channels 4 k .. 4 k + 3; the
 * epilogue runs on all of them at once with the constants of channels 4 k .. broadcast per
 * lane (the same operations in the same order as dw9_epi_block / the tile epilogue, the
 * chain post-op by post-op, its clip bounds that never apply left out as the tile epilogue
 * does: the same bits), and the packs s32 -> s16 -> 8 bits leave each lane's 16 bytes in
 * channel order: four output pixels, one 64-byte store. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

typedef struct {
    __m512i w[3][2][4];  /* [kw][upper / lower row][k]: the cols3 weights, lane 0 broadcast */
    __m512i init[4];     /* the s8 source's compensation (or 0), per k */
    __m512i cc[4];       /* the epilogue's constants of channels 4 k .., per k */
    __m512 sc[4], bi[4], zp[4];
    __m512i zraw, z, flip; /* the zero-point pixel in every lane, as read (flipped for s8) */
    const uint8_t *row[4];
    int inr[4];          /* row r inside the source (else the zero-point pixel) */
    int64_t iw;
} px16_ctx_t;

/* source columns col .. col + 3 of the NRO + 2 rows, interleaved: q[k] */
static inline __attribute__((always_inline)) void
px16_group(const int NRO, const int SGN, const px16_ctx_t *x, int64_t col, __m512i q[4]) {
    __m512i v[4];
    if (col >= 0 && col + 4 <= x->iw) {
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            if (r == 3 && NRO == 1) { /* meets a zero weight */
                v[r] = _mm512_setzero_si512();
                continue;
            }
            v[r] = x->inr[r] ? _mm512_loadu_si512((const void *)(x->row[r] + col * 16)) : x->z;
            if (SGN && x->inr[r]) v[r] = _mm512_xor_si512(v[r], x->flip);
        }
    } else { /* lanes lo .. hi - 1 inside the row, the others the zero-point pixel */
        const int64_t lo = col < 0 ? (-col < 4 ? -col : 4) : 0;
        const int64_t hi = x->iw - col < 4 ? (x->iw - col > 0 ? x->iw - col : 0) : 4;
        const __mmask64 m = hi <= lo ? 0
                            : ((hi == 4 ? ~0ull : (1ull << (16 * hi)) - 1) &
                               ~((1ull << (16 * lo)) - 1));
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r) {
            if (r == 3 && NRO == 1) {
                v[r] = _mm512_setzero_si512();
                continue;
            }
            if (!x->inr[r] || !m) {
                v[r] = x->z;
                continue;
            }
            /* the address of column col (bytes before the row or past it are masked off) */
            const void *p = (const void *)((uintptr_t)x->row[r] + (uintptr_t)(col * 16));
            v[r] = _mm512_mask_loadu_epi8(x->zraw, m, p);
            if (SGN) v[r] = _mm512_xor_si512(v[r], x->flip);
        }
    }
    const __m512i ab_lo = _mm512_unpacklo_epi8(v[0], v[1]), ab_hi = _mm512_unpackhi_epi8(v[0], v[1]);
    const __m512i cd_lo = _mm512_unpacklo_epi8(v[2], v[3]), cd_hi = _mm512_unpackhi_epi8(v[2], v[3]);
    q[0] = _mm512_unpacklo_epi16(ab_lo, cd_lo);
    q[1] = _mm512_unpackhi_epi16(ab_lo, cd_lo);
    q[2] = _mm512_unpacklo_epi16(ab_hi, cd_hi);
    q[3] = _mm512_unpackhi_epi16(ab_hi, cd_hi);
}

/* one post-op of the chain on the NV values (its clip bounds in drop left out:
 * epilogue_chain_avx512.h's ech_alg) */
static inline __attribute__((always_inline)) void
px16_post(const dnnq_postop_t *po, int alg, __m512 *v, const int NV) {
    const __m512 al = _mm512_set1_ps(po->alpha), be = _mm512_set1_ps(po->beta);
    switch (alg) {
    case DNNQ_ELT_RELU:
        if (po->alpha == 0.0f) {
            for (int i = 0; i < NV; ++i) v[i] = epo_relu0(v[i]);
        } else {
            for (int i = 0; i < NV; ++i) v[i] = epo_relu(v[i], al);
        }
        break;
    case DNNQ_ELT_CLIP:
        for (int i = 0; i < NV; ++i) v[i] = epo_clip(v[i], al, be);
        break;
    case DNNQ_ELT_CLIP_V2:
        for (int i = 0; i < NV; ++i) v[i] = epo_clip_v2(v[i], al, be);
        break;
    case ECH_ALG_CLIP_HI:
        for (int i = 0; i < NV; ++i) v[i] = _mm512_min_ps(v[i], be);
        break;
    case ECH_ALG_CLIP_LO:
        for (int i = 0; i < NV; ++i) v[i] = _mm512_max_ps(v[i], al);
        break;
    case ECH_ALG_NONE: break;
    case DNNQ_ELT_HARDSWISH:
        for (int i = 0; i < NV; ++i) v[i] = epo_hardswish(v[i], al, be);
        break;
    case DNNQ_ELT_HARDSIGMOID:
        for (int i = 0; i < NV; ++i) v[i] = epo_hardsigmoid(v[i], al, be);
        break;
    case DNNQ_ELT_ROUND:
        for (int i = 0; i < NV; ++i) v[i] = epo_round(v[i]);
        break;
    default: /* linear; with alpha 1 an add: fma(1, x, be) rounds x + be once, as the add
              * does (on the adders' ports, off the multipliers the vpdpbusd use) */
        if (po->alpha == 1.0f) {
            for (int i = 0; i < NV; ++i) v[i] = _mm512_add_ps(v[i], be);
        } else {
            for (int i = 0; i < NV; ++i) v[i] = epo_linear(v[i], al, be);
        }
        break;
    }
}

/* the accumulators of NG groups of four output columns of the NRO rows (s[group][row][k])
 * through the epilogue, together (one decision per post-op and block); group G of row r
 * stored at o[r] + 64 G, cnt pixels from o[r] kept */
static inline __attribute__((always_inline)) void
px16_finish(const int NG, const int NRO, const int MODE, const dnnq_dw_epi_t *e,
            const px16_ctx_t *x, __m512i s[2][2][4], uint8_t *const o[2], int64_t cnt) {
    __m512i q[2][2][4];
    if (MODE == DW9_HOT) {
        const __m512 inv = _mm512_set1_ps(e->inv_dst_scale);
#pragma GCC unroll 2
        for (int G = 0; G < NG; ++G)
#pragma GCC unroll 2
            for (int r = 0; r < NRO; ++r)
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k)
                    q[G][r][k] = dw9_epi_hot_512(inv, s[G][r][k], x->sc[k], x->bi[k]);
    } else {
        /* vector i: group i / (4 NRO), row i / 4 % NRO, k = i % 4 */
        const int NV = 4 * NRO * NG;
        const int F = e->flags;
        __m512 v[16];
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) {
            __m512i a = s[i / (4 * NRO)][i / 4 % NRO][i % 4];
            if (!(F & EPI_F_NOCC)) a = _mm512_add_epi32(a, x->cc[i % 4]);
            v[i] = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(a), x->sc[i % 4]), x->bi[i % 4]);
        }
        if (e->post == EPI_RELU0) {
#pragma GCC unroll 16
            for (int i = 0; i < NV; ++i) v[i] = epo_relu0(v[i]);
        } else if (e->post == EPI_CHAIN) {
            for (int p = 0; p < e->n_post; ++p)
                px16_post(&e->po[p], ech_alg(&e->po[p], e->clip_drop, p), v, NV);
        }
        const __m512 inv = _mm512_set1_ps(e->inv_dst_scale);
#pragma GCC unroll 16
        for (int i = 0; i < NV; ++i) {
            if (!(F & EPI_F_SIMPLE)) {
                v[i] = _mm512_mul_ps(v[i], inv);
                if (e->has_zp) v[i] = _mm512_add_ps(v[i], x->zp[i % 4]);
            }
            if (!(F & EPI_F_NOCLAMP)) {
                if (e->dt == DNNQ_DT_S8) v[i] = _mm512_min_ps(v[i], _mm512_set1_ps(127.0f));
                else v[i] = _mm512_min_ps(_mm512_max_ps(v[i], _mm512_setzero_ps()),
                                          _mm512_set1_ps(255.0f));
            }
            q[i / (4 * NRO)][i / 4 % NRO][i % 4] = _mm512_cvtps_epi32(v[i]);
        }
    }
#pragma GCC unroll 2
    for (int G = 0; G < NG; ++G)
#pragma GCC unroll 2
        for (int r = 0; r < NRO; ++r) {
            const __m512i w01 = _mm512_packs_epi32(q[G][r][0], q[G][r][1]);
            const __m512i w23 = _mm512_packs_epi32(q[G][r][2], q[G][r][3]);
            const __m512i b = MODE != DW9_HOT && e->dt == DNNQ_DT_S8
                                  ? _mm512_packs_epi16(w01, w23) : _mm512_packus_epi16(w01, w23);
            /* a row's last pixels: plain stores of the bytes (a masked store costs tens of
             * cycles on Zen 4) */
            const int64_t left = cnt - 4 * G;
            if (left >= 4) _mm512_storeu_si512((void *)(o[r] + 64 * G), b);
            else epi_store_bytes((char *)(o[r] + 64 * G), b, (int)(16 * left));
        }
}

/* output columns o0 + g .. + 4 NG - 1 (the groups' accumulators s) from the interleaved
 * source groups qc (columns xb + g ..), updated to the group after them */
static inline __attribute__((always_inline)) void
px16_groups(const int NG, const int NRO, const int SGN, const px16_ctx_t *x, int64_t col,
            __m512i qc[4], __m512i s[2][2][4]) {
#pragma GCC unroll 2
    for (int G = 0; G < NG; ++G) {
        /* output column L of the group, kw, reads source column col + 4 G + L + kw */
        __m512i qn[4];
        px16_group(NRO, SGN, x, col + 4 * G + 4, qn);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            const __m512i q1 = _mm512_alignr_epi32(qn[k], qc[k], 4);
            const __m512i q2 = _mm512_alignr_epi32(qn[k], qc[k], 8);
#pragma GCC unroll 2
            for (int r = 0; r < NRO; ++r) {
                __m512i a = _mm512_dpbusd_epi32(x->init[k], qc[k], x->w[0][r][k]);
                a = _mm512_dpbusd_epi32(a, q1, x->w[1][r][k]);
                s[G][r][k] = _mm512_dpbusd_epi32(a, q2, x->w[2][r][k]);
            }
            qc[k] = qn[k];
        }
    }
}

static inline __attribute__((always_inline)) void
px16_run(const int NRO, const int SGN, const int MODE, const dnnq_dw3x3_call_t *c,
         const px16_ctx_t *x) {
    const dnnq_dw_epi_t *e = c->epi;
    const int64_t n = c->n, xb = c->o0 - c->pw;
    uint8_t *d0 = c->dst[0] + c->o0 * 16, *d1 = c->dst[1] + c->o0 * 16;
    __m512i qc[4], s[2][2][4];
    px16_group(NRO, SGN, x, xb, qc);
    int64_t g = 0;
    /* eight columns per epilogue block, the last four on their own */
    for (; g + 4 < n; g += 8) {
        px16_groups(2, NRO, SGN, x, xb + g, qc, s);
        uint8_t *const o[2] = {d0 + g * 16, d1 + g * 16};
        px16_finish(2, NRO, MODE, e, x, s, o, n - g);
    }
    if (g < n) {
        px16_groups(1, NRO, SGN, x, xb + g, qc, s);
        uint8_t *const o[2] = {d0 + g * 16, d1 + g * 16};
        px16_finish(1, NRO, MODE, e, x, s, o, n - g);
    }
}

#define PX16_MODES(NRO, SGN)                                                                   \
    do {                                                                                       \
        if (mode == DW9_HOT) px16_run(NRO, SGN, DW9_HOT, c, &x);                               \
        else px16_run(NRO, SGN, DW9_GENERIC, c, &x);                                           \
    } while (0)

void dnnq_dw3x3_px16(const dnnq_dw3x3_call_t *c) {
    px16_ctx_t x __attribute__((aligned(64)));
    const dnnq_dw_epi_t *e = c->epi;
    const int8_t *comp = dnnq_dw_comp(c->w, c->ntaps);
    const int8_t *wc = dnnq_dw_cols3(c->w, c->ntaps);
    for (int kw = 0; kw < 3; ++kw)
        for (int r = 0; r < 2; ++r)
            for (int k = 0; k < 4; ++k)
                x.w[kw][r][k] = _mm512_broadcast_i32x4(
                    _mm_loadu_si128((const __m128i *)(wc + ((kw * 2 + r) * 4 + k) * 64)));
    for (int k = 0; k < 4; ++k) {
        /* the epilogue's constants of 16 channels: e's narrow order, vector k lane 0 at 8 k */
        x.init[k] = c->src_signed
                        ? _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(comp + k * 64)))
                        : _mm512_setzero_si512();
        x.cc[k] = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(e->cc + 8 * k)));
        x.sc[k] = _mm512_broadcast_f32x4(_mm_loadu_ps(e->sc + 8 * k));
        x.bi[k] = _mm512_broadcast_f32x4(_mm_loadu_ps(e->bi + 8 * k));
        x.zp[k] = _mm512_broadcast_f32x4(_mm_loadu_ps(e->zp + 8 * k));
    }
    x.zraw = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)c->zpix));
    x.flip = _mm512_set1_epi8((char)0x80);
    x.z = c->src_signed ? _mm512_xor_si512(x.zraw, x.flip) : x.zraw;
    for (int r = 0; r < 4; ++r) {
        x.row[r] = c->row[r];
        x.inr[r] = c->rs[r] != 0;
    }
    x.iw = c->iw;
    const int mode = dw9_mode(e);
    if (c->nro == 2) {
        if (c->src_signed) PX16_MODES(2, 1);
        else PX16_MODES(2, 0);
    } else {
        if (c->src_signed) PX16_MODES(1, 1);
        else PX16_MODES(1, 0);
    }
}
#undef PX16_MODES
