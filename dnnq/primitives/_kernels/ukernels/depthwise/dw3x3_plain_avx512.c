/* Depthwise variant "dw3x3_plain": the 3x3 column kernel on plain (nchw) planes, AVX-512 VNNI
 * (the fused epilogue's cases; its steps and context from dw_avx512.h).
 *
 *
 * The channels-last kernel has 64 channels in the lanes; here one channel's planes are read as
 * they are: the lanes are 16 output columns of one channel, and as there the four bytes of a
 * vpdpbusd lane are four source rows at one column (two output rows at stride 1 along h:
 * weights A = (w[0][kw], w[1][kw], w[2][kw], 0), B = (0, w[0][kw], w[1][kw], w[2][kw]), the
 * channel's dwords of the packed "cols3" block, broadcast).  A block of 64 source columns of
 * the four rows is interleaved once: each row's dwords are first transposed 4 x 4 by one vpermd
 * so that the byte / word unpacks, which stay inside 128-bit lanes, leave P[j] = columns
 * 16 j .. 16 j + 15 in order.  kw = 1, 2 read P shifted by one / two columns (valignd with the
 * next vector).  Stride 2 along w: the even and odd columns of two blocks picked by vpermt2d
 * (kw = 0 and 2 the even ones, kw = 1 the odd ones).  The packs of four accumulator vectors to
 * bytes leave their dwords transposed 4 x 4: the same vpermd puts them back.  Columns outside
 * the source read the zero point (masked loads merging it), rows outside are all zero point.
 * Per 64 output pixels of two rows (stride 1): 4 loads, 4 vpermd, 8 unpacks, 8 valignd and
 * 24 vpdpbusd, about 1.2x the channels-last kernel's operations per pixel. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

/* where a block of 64 source columns lies: wholly inside the rows, wholly outside, or partly
 * (m: the columns inside) */
enum { DWP_PART = 0, DWP_FULL = 1, DWP_NONE = 2 };
typedef struct {
    int64_t col;
    __mmask64 m;
    int kind; /* one field: two ints written apart and read as one 64-bit word made a store-
               * forwarding stall that cost a third of the stride-2 kernel's time */
} dwp_cols_t;

static inline __attribute__((always_inline)) dwp_cols_t dwp_cols(const dwp_ctx_t *x,
                                                                  int64_t col) {
    dwp_cols_t b;
    b.col = col;
    b.m = 0;
    const int64_t lo = col < 0 ? -col : 0, hi = x->iw - col;
    if (col >= 0 && col + 64 <= x->iw) {
        b.kind = DWP_FULL;
    } else if (hi <= lo || lo >= 64) {
        b.kind = DWP_NONE;
    } else {
        b.kind = DWP_PART;
        b.m = (hi >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << hi) - 1) & (~(__mmask64)0 << lo);
    }
    return b;
}

/* 64 bytes of row r at the block's columns, the zero point outside the source, dwords
 * transposed 4 x 4 (see the top) */
static inline __attribute__((always_inline)) __m512i dwp_load(const dwp_ctx_t *x, int r,
                                                               const dwp_cols_t *b) {
    const uint8_t *p = x->row[r];
    if (!p || b->kind == DWP_NONE) return x->zq; /* uniform: no transpose needed */
    const uint8_t *a = (const uint8_t *)((uintptr_t)p + (uintptr_t)b->col);
    __m512i v;
    if (b->kind == DWP_FULL)
        v = _mm512_loadu_si512((const void *)a);
    /* a plain load and a blend where the 64 bytes lie inside the source array (masked loads
     * are slow on Zen 4); a masked load, which reads nothing outside, elsewhere */
    else if (a >= x->lo && a + 64 <= x->hi)
        v = _mm512_mask_mov_epi8(x->zraw, b->m, _mm512_loadu_si512((const void *)a));
    else
        v = _mm512_mask_loadu_epi8(x->zraw, b->m, (const void *)a);
    return _mm512_permutexvar_epi32(x->tr, _mm512_xor_si512(v, x->flip));
}

/* P[j] (j < 4): the four rows (three with one output row: the fourth meets zero weights) of
 * source columns col + 16 j .. + 15 interleaved, byte i of a dword = row i */
static inline __attribute__((always_inline)) void dwp_interleave(const int NRO, const dwp_ctx_t *x,
                                                                 int64_t col, __m512i P[4]) {
    const dwp_cols_t b = dwp_cols(x, col);
    const __m512i v0 = dwp_load(x, 0, &b), v1 = dwp_load(x, 1, &b), v2 = dwp_load(x, 2, &b);
    const __m512i v3 = NRO == 2 ? dwp_load(x, 3, &b) : _mm512_setzero_si512();
    const __m512i ab_lo = _mm512_unpacklo_epi8(v0, v1), ab_hi = _mm512_unpackhi_epi8(v0, v1);
    const __m512i cd_lo = _mm512_unpacklo_epi8(v2, v3), cd_hi = _mm512_unpackhi_epi8(v2, v3);
    P[0] = _mm512_unpacklo_epi16(ab_lo, cd_lo);
    P[1] = _mm512_unpackhi_epi16(ab_lo, cd_lo);
    P[2] = _mm512_unpacklo_epi16(ab_hi, cd_hi);
    P[3] = _mm512_unpackhi_epi16(ab_hi, cd_hi);
}

/* dwords 0 and 1 of the vector after a block: source columns col and col + 1 of the rows
 * (only what kw = 1, 2 of the block's last columns read) */
static inline __attribute__((always_inline)) __m512i dwp_next(const int NRO, const dwp_ctx_t *x,
                                                              int64_t col) {
    if (col >= x->iw) return x->zq; /* wholly in the padding */
    if (col >= 0 && col + 2 <= x->iw) {
        /* words (column col, col + 1) of each row, then bytes regrouped per column */
        const uint16_t z = (uint16_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(x->zraw));
        uint16_t w[4] = {z, z, z, z};
        for (int r = 0; r < (NRO == 2 ? 4 : 3); ++r)
            if (x->row[r]) memcpy(&w[r], x->row[r] + col, 2);
        __m128i v = _mm_set_epi16(0, 0, 0, 0, (short)w[3], (short)w[2], (short)w[1], (short)w[0]);
        v = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 2, 4, 6, 1, 3, 5, 7, 0, 2, 4, 6, 1, 3, 5, 7));
        return _mm512_xor_si512(_mm512_broadcastq_epi64(v), x->flip);
    }
    const uint8_t zb = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(x->zraw));
    uint64_t d = 0;
    for (int c = 0; c < 2; ++c)
        for (int r = 0; r < (NRO == 2 ? 4 : 3); ++r) {
            const int64_t xc = col + c;
            const uint8_t b = x->row[r] && xc >= 0 && xc < x->iw ? x->row[r][xc] : zb;
            d |= (uint64_t)b << (32 * c + 8 * r);
        }
    return _mm512_xor_si512(_mm512_set1_epi64((long long)d), x->flip);
}

/* output columns o .. o + 16 NV - 1 of the NRO output rows */
static inline __attribute__((always_inline)) void
dwp_block(const int NRO, const int SW, const int MODE, const int NV, const dnnq_dw_epi_t *e,
          const dwp_ctx_t *x, int64_t pw, int64_t o, uint8_t *const dst[2]) {
    __m512i t0[4], t1[4], t2[4]; /* what kw = 0, 1, 2 read */
    if (SW == 1) {
        __m512i P[5];
        dwp_interleave(NRO, x, o - pw, P);
        P[4] = NV == 4 ? dwp_next(NRO, x, o - pw + 64) : _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            t0[k] = P[k];
            t1[k] = _mm512_alignr_epi32(P[k + 1], P[k], 1);
            t2[k] = _mm512_alignr_epi32(P[k + 1], P[k], 2);
        }
    } else {
        /* source columns s .. s + 32 NV: P[j] = s + 16 j .., even ones = kw 0, 2 */
        const int64_t s = 2 * o - pw;
        __m512i P[9];
        dwp_interleave(NRO, x, s, P);
        if (NV >= 3) dwp_interleave(NRO, x, s + 64, P + 4);
        if (NV == 2) P[4] = dwp_next(NRO, x, s + 64);
        if (NV == 4) P[8] = dwp_next(NRO, x, s + 128);
        const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                             28, 30);
        const __m512i od = _mm512_add_epi32(ev, _mm512_set1_epi32(1));
        __m512i E[5];
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            E[k] = _mm512_permutex2var_epi32(P[2 * k], ev, P[2 * k + 1]);
            t1[k] = _mm512_permutex2var_epi32(P[2 * k], od, P[2 * k + 1]);
        }
        E[NV] = P[2 * NV]; /* only its dword 0 (column s + 32 NV) is read */
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            t0[k] = E[k];
            t2[k] = _mm512_alignr_epi32(E[k + 1], E[k], 1);
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < NRO; ++r) {
        const __m512i *w = r ? x->wb : x->wa;
        __m512i acc[4];
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            __m512i a = _mm512_dpbusd_epi32(x->init, t0[k], w[0]);
            a = _mm512_dpbusd_epi32(a, t1[k], w[1]);
            acc[k] = _mm512_dpbusd_epi32(a, t2[k], w[2]);
        }
        dwp_finish(NV, MODE, e, x, acc, dst[r] + o);
    }
}

/* one or two output rows of ow columns: blocks of 64 columns, the last one moved back to end
 * at the row's end (its first columns computed twice); a row narrower than 64 columns in one
 * block of 16, 32, 48 or 64, written whole into the staging buffer */
static inline __attribute__((always_inline)) void
dwp_rows(const int NRO, const int SW, const int MODE, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
         int64_t pw, int64_t ow, uint8_t *const dst[2]) {
    if (ow >= 64) {
        int64_t o = 0;
        for (; o + 64 <= ow; o += 64) dwp_block(NRO, SW, MODE, 4, e, x, pw, o, dst);
        if (o < ow) dwp_block(NRO, SW, MODE, 4, e, x, pw, ow - 64, dst);
    } else if (ow > 48) {
        dwp_block(NRO, SW, MODE, 4, e, x, pw, 0, dst);
    } else if (ow > 32) {
        dwp_block(NRO, SW, MODE, 3, e, x, pw, 0, dst);
    } else if (ow > 16) {
        dwp_block(NRO, SW, MODE, 2, e, x, pw, 0, dst);
    } else {
        dwp_block(NRO, SW, MODE, 1, e, x, pw, 0, dst);
    }
}

/* output pixels ma .. mb - 1 (whole rows) of one channel: rows paired at stride 1 along h
 * when both are in the range; output pixel m at out + m */
static inline __attribute__((always_inline)) void
dwp_range(const int SW, const int MODE, const dnnq_dw_plain_t *c, dwp_ctx_t *x,
          const uint8_t *plane, uint8_t *out, int64_t ma, int64_t mb) {
    const int64_t OW = c->ow, OH = c->oh, iw = c->iw, ih = c->ih, pw = c->pw;
    int64_t oh = (ma / OW) % OH, od = ma / OW / OH;
    for (int64_t m = ma; m < mb;) {
        const int pair = c->sh == 1 && oh + 1 < OH && m + 2 * OW <= mb;
        const int64_t xd = od * c->sd - c->pd, y0 = oh * c->sh - c->ph;
        const uint8_t *base = plane + (xd * ih + y0) * iw;
        const int din = xd >= 0 && xd < c->id;
#pragma GCC unroll 4
        for (int r = 0; r < 4; ++r)
            x->row[r] = din && y0 + r >= 0 && y0 + r < ih ? base + r * iw : NULL;
        uint8_t *const dst[2] = {out + m, out + m + OW};
        if (pair) dwp_rows(2, SW, MODE, c->epi, x, pw, OW, dst);
        else dwp_rows(1, SW, MODE, c->epi, x, pw, OW, dst);
        m += pair ? 2 * OW : OW;
        oh += pair ? 2 : 1;
        if (oh >= OH) { /* a pair never crosses a plane */
            oh = 0;
            ++od;
        }
    }
}

/* one function per (stride, epilogue mode) of the column kernel (all of them in one function
 * ran the loops slower, as the flat kernel's variants did) */
#define DWP_FN(SW, MODE)                                                                       \
    static __attribute__((noinline)) void dwp_range_##SW##_##MODE(                             \
        const dnnq_dw_plain_t *c, dwp_ctx_t *x, const uint8_t *plane, uint8_t *out,            \
        int64_t ma, int64_t mb) {                                                              \
        dwp_range(SW, MODE, c, x, plane, out, ma, mb);                                         \
    }
DWP_FN(1, DW9_HOT)
DWP_FN(1, DW9_GENERIC)
DWP_FN(2, DW9_HOT)
DWP_FN(2, DW9_GENERIC)
#undef DWP_FN

static void dwp_range_any(int mode, const dnnq_dw_plain_t *c, dwp_ctx_t *x, const void *arg,
                          const uint8_t *plane, uint8_t *out, int64_t ma, int64_t mb) {
    (void)arg;
    if (c->sw == 1) {
        if (mode == DW9_HOT) dwp_range_1_DW9_HOT(c, x, plane, out, ma, mb);
        else dwp_range_1_DW9_GENERIC(c, x, plane, out, ma, mb);
    } else {
        if (mode == DW9_HOT) dwp_range_2_DW9_HOT(c, x, plane, out, ma, mb);
        else dwp_range_2_DW9_GENERIC(c, x, plane, out, ma, mb);
    }
}

int dnnq_dw_item_plain_cols(const dnnq_conv_t *cv, int64_t item) {
    dnnq_dw_plain_t c;
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_dw_plain_item(cv, item, &c, &epi, post);
    dnnq_dw_plain_channels(&c, dwp_range_any, NULL);
    return 0;
}
