/* Depthwise variant "dw3x3_plain_vbmi": the plain (nchw) 3x3 kernel at stride 2 along h and w
 * with AVX512-VBMI (the context, channel loop and epilogue steps of dw_avx512.h; the item
 * function runs plans of stride 2 along h and w, the others take dw3x3_plain's).
 *
 * The column kernel interleaves four source rows per column and then picks the even and odd
 * columns: at stride 2 it pays two interleaves, eight vpermt2d and four valignd per 64
 * outputs of one row, and lanes past a narrow row go to waste.  Here the four bytes of a
 * vpdpbusd lane are the three taps of one kernel row (weights (w[kh][0], w[kh][1],
 * w[kh][2], 0), the packed "rows3" block, variant A): output j of a block reads source
 * columns 2 j .. 2 j + 2 from the block's start, so one byte permute with a constant index
 * (vpermb out of one 64-byte load, or vpermt2b out of two) picks 16 outputs' taps of one
 * source row.  A source row serves two output rows (kernel row 2 of one, 0 of the next), so
 * two output rows gather five source rows.  Per 128 outputs (two rows of 64): five times
 * three loads, two vpermb and two vpermt2b, then 24 vpdpbusd and the epilogue.
 *
 * Chosen for the rows the plain kernel takes (DW_PLAIN_MIN_OW: 48 columns and more; dw2 of
 * MobileNet, 56 columns, 80 -> 63 us at 1 thread).  On narrow rows (7 - 28 columns: one or
 * two vectors a row, the epilogue and the row's set-up per row) it ran 1.2 - 4x slower than
 * the channels-last copies, which take 64 channels a vector (docs/convolution.md). */

#include <immintrin.h>
#include <stdint.h>
#include <string.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

#define DWS2_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

/* a row's blocks of NV vectors and what is the same for every row and channel */
typedef struct {
    __m512i i0, i1;        /* the gather indices of even / odd vectors (from one / two loads) */
    __mmask64 pm[4][4];    /* per block kind (first, second, second-to-last, last) and vector:
                            * the tap bytes outside the row (zero point) */
    int64_t nb;            /* blocks per row (rows of 64 columns or more), else 1 */
    int64_t pw;
    int nv;                /* vectors per block */
} dws2_plan_t;

/* the tap bytes (4 j + kw) of vector k of a block at output o outside the row */
static DWS2_TARGET __mmask64 dws2_pad_mask(int64_t iw, int64_t pw, int64_t o, int k) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i viw = _mm512_set1_epi32((int32_t)iw), zero = _mm512_setzero_si512();
    const __m512i c0 = _mm512_sub_epi32(
        _mm512_slli_epi32(_mm512_add_epi32(lane, _mm512_set1_epi32((int32_t)(o + 16 * k))), 1),
        _mm512_set1_epi32((int32_t)pw));
    __m512i p = zero;
    for (int kw = 0; kw < 3; ++kw) {
        const __m512i c = _mm512_add_epi32(c0, _mm512_set1_epi32(kw));
        const __mmask16 out = _mm512_cmplt_epi32_mask(c, zero) | _mm512_cmpge_epi32_mask(c, viw);
        p = _mm512_mask_or_epi32(p, out, p, _mm512_set1_epi32(0xff << (8 * kw)));
    }
    return _mm512_test_epi8_mask(p, p);
}

static DWS2_TARGET void dws2_make_plan(const dnnq_dw_plain_t *c, dws2_plan_t *p) {
    const int64_t ow = c->ow;
    p->nv = ow > 48 ? 4 : ow > 32 ? 3 : ow > 16 ? 2 : 1;
    p->nb = ow >= 64 ? (ow + 63) / 64 : 1;
    p->pw = c->pw;
    /* lane j: bytes 2 j, 2 j + 1, 2 j + 2 and 2 j (meets the zero weight); odd vectors + 32 */
    const __m512i b = _mm512_slli_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15), 1);
    p->i0 = _mm512_add_epi32(_mm512_mullo_epi32(b, _mm512_set1_epi32(0x01010101)),
                             _mm512_set1_epi32(0x00020100));
    p->i1 = _mm512_add_epi32(p->i0, _mm512_set1_epi32(0x20202020));
    const int64_t nb = p->nb;
    const int64_t first[4] = {0, 64, nb >= 2 ? 64 * (nb - 2) : 0, ow >= 64 ? ow - 64 : 0};
    for (int i = 0; i < 4; ++i) {
        for (int k = 0; k < 4; ++k) p->pm[i][k] = dws2_pad_mask(c->iw, c->pw, first[i], k);
    }
}

/* the taps of kernel row "r" for the NV vectors of a block starting at source column s of
 * source row row (NULL: a row in the padding) */
static inline __attribute__((always_inline)) DWS2_TARGET void
dws2_gather(const int NV, const dwp_ctx_t *x, const dws2_plan_t *p, const uint8_t *row,
            int64_t s, const __mmask64 *pm, __m512i t[4]) {
    if (!row) {
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) t[k] = x->zq;
        return;
    }
    const int nl = NV == 1 ? 1 : NV == 4 ? 3 : 2;
    const uint8_t *a = (const uint8_t *)((uintptr_t)row + (uintptr_t)s);
    __m512i l[3];
    if (a >= x->lo && a + 64 * nl <= x->hi) {
#pragma GCC unroll 3
        for (int i = 0; i < nl; ++i) l[i] = _mm512_loadu_si512((const void *)(a + 64 * i));
    } else { /* at the source array's ends: loads that read nothing outside it */
#pragma GCC unroll 3
        for (int i = 0; i < nl; ++i) {
            const int64_t lo = x->lo - (a + 64 * i), hi = x->hi - (a + 64 * i);
            const __mmask64 in =
                (hi >= 64 ? ~(__mmask64)0 : hi <= 0 ? 0 : ((__mmask64)1 << hi) - 1) &
                (lo <= 0 ? ~(__mmask64)0 : lo >= 64 ? 0 : ~(__mmask64)0 << lo);
            l[i] = _mm512_maskz_loadu_epi8(in, (const void *)(a + 64 * i));
        }
    }
    /* vector k reads bytes 32 k .. 32 k + 32: k = 0 and 2 within loads 0 and 1, k = 1 and 3
     * across loads 0 / 1 and 1 / 2 */
    t[0] = _mm512_permutexvar_epi8(p->i0, l[0]);
    if (NV > 1) t[1] = _mm512_permutex2var_epi8(l[0], p->i1, l[1]);
    if (NV > 2) t[2] = _mm512_permutexvar_epi8(p->i0, l[1]);
    if (NV > 3) t[3] = _mm512_permutex2var_epi8(l[1], p->i1, l[2]);
    /* the zero point in the taps outside the row (pm 0 inside), then an s8 source's bytes
     * flipped to u8 (flip 0 for u8): one instantiation for every case keeps the code small */
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k)
        t[k] = _mm512_xor_si512(_mm512_mask_mov_epi8(t[k], pm[k], x->zraw), x->flip);
}

/* B output rows (rows[0 .. 2 B] their source rows) of one block: NV vectors per row, the
 * block's outputs at dst[r] + o (64 bytes stored: those past the row are rewritten later,
 * or land in the staging buffer's slack) */
static inline __attribute__((always_inline)) DWS2_TARGET void
dws2_block(const int B, const int NV, const int MODE, const dnnq_dw_epi_t *e,
           const dwp_ctx_t *x, const dws2_plan_t *p, const uint8_t *const *rows, int64_t o,
           const __mmask64 *pm, uint8_t *const *dst) {
    const int64_t s = 2 * o - p->pw;
    __m512i acc[2][4];
#pragma GCC unroll 2
    for (int r = 0; r < B; ++r)
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) acc[r][k] = x->init;
#pragma GCC unroll 5
    for (int sr = 0; sr < 2 * B + 1; ++sr) {
        __m512i t[4];
        dws2_gather(NV, x, p, rows[sr], s, pm, t);
        /* source row sr is kernel row sr - 2 r of output row r */
#pragma GCC unroll 2
        for (int r = 0; r < B; ++r) {
            const int kh = sr - 2 * r;
            if (kh < 0 || kh > 2) continue;
#pragma GCC unroll 4
            for (int k = 0; k < NV; ++k)
                acc[r][k] = _mm512_dpbusd_epi32(acc[r][k], t[k], x->wr[kh]);
        }
    }
#pragma GCC unroll 2
    for (int r = 0; r < B; ++r) dwp_finish(NV, MODE, e, x, acc[r], dst[r] + o);
}

/* the blocks of B output rows: one (rows narrower than 64 columns), or blocks of 64, the
 * last moved back to end at the row's end */
static inline __attribute__((always_inline)) DWS2_TARGET void
dws2_rows(const int B, const int NV, const int MODE, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
          const dws2_plan_t *p, const uint8_t *const *rows, int64_t ow, uint8_t *const *dst) {
    if (NV < 4 || ow < 64) {
        dws2_block(B, NV, MODE, e, x, p, rows, 0, p->pm[0], dst);
        return;
    }
    static const __mmask64 inside[4] = {0, 0, 0, 0};
    const int64_t nb = p->nb;
    for (int64_t i = 0; i < nb; ++i) {
        /* block kinds: 0 first, 1 second, 2 second-to-last, 3 last; the others lie inside
         * the row */
        const int d = i == nb - 1 ? 3 : i == 0 ? 0 : i == nb - 2 ? 2 : i == 1 ? 1 : -1;
        const int64_t o = i == nb - 1 ? ow - 64 : 64 * i;
        dws2_block(B, 4, MODE, e, x, p, rows, o, d < 0 ? inside : p->pm[d], dst);
    }
}

/* output pixels ma .. mb - 1 (whole rows) of one channel at out + m: B rows at a time (an
 * item's odd last row alone) */
static inline __attribute__((always_inline)) DWS2_TARGET void
dws2_range(const int B, const int NV, const int MODE, const dnnq_dw_plain_t *c,
           const dwp_ctx_t *x, const dws2_plan_t *p,
           const uint8_t *plane, uint8_t *out, int64_t ma, int64_t mb) {
    const int64_t OW = c->ow, OH = c->oh, iw = c->iw, ih = c->ih;
    int64_t oh = (ma / OW) % OH, od = ma / OW / OH;
    for (int64_t m = ma; m < mb;) {
        const int64_t xd = od * c->sd - c->pd, y0 = oh * 2 - c->ph;
        const uint8_t *base = plane + (xd * ih + y0) * iw;
        const int din = xd >= 0 && xd < c->id;
        /* rows taken together never cross a plane (they are in one depth slice) */
        const int full = oh + B <= OH && m + B * OW <= mb;
        const uint8_t *rows[5];
#pragma GCC unroll 5
        for (int r = 0; r < 2 * B + 1; ++r)
            rows[r] = din && y0 + r >= 0 && y0 + r < ih ? base + r * iw : NULL;
        uint8_t *dst[2];
#pragma GCC unroll 2
        for (int r = 0; r < B; ++r) dst[r] = out + m + r * OW;
        if (full) dws2_rows(B, NV, MODE, c->epi, x, p, rows, OW, dst);
        else dws2_rows(1, NV, MODE, c->epi, x, p, rows, OW, dst); /* the item's last rows */
        const int step = full ? B : 1;
        m += step * OW;
        oh += step;
        if (oh >= OH) {
            oh = 0;
            ++od;
        }
    }
}

/* one function per (vector count, epilogue mode): all of them in one function ran the loops
 * slower (as the flat kernel's variants did, conv_dw3x3_flat.h) */
#define DWS2_FN(NV, MODE)                                                                      \
    static __attribute__((noinline)) DWS2_TARGET void dws2_range_##NV##_##MODE(                 \
        const dnnq_dw_plain_t *c, const dwp_ctx_t *x, const dws2_plan_t *p,                 \
        const uint8_t *plane, uint8_t *out, int64_t ma, int64_t mb) {                          \
        dws2_range(2, NV, MODE, c, x, p, plane, out, ma, mb);                                  \
    }
DWS2_FN(1, DW9_HOT)
DWS2_FN(2, DW9_HOT)
DWS2_FN(3, DW9_HOT)
DWS2_FN(4, DW9_HOT)
DWS2_FN(1, DW9_GENERIC)
DWS2_FN(2, DW9_GENERIC)
DWS2_FN(3, DW9_GENERIC)
DWS2_FN(4, DW9_GENERIC)
#undef DWS2_FN
#define DWS2_CASE(NV)                                                                          \
    do {                                                                                       \
        if (mode == DW9_HOT) dws2_range_##NV##_DW9_HOT(c, x, p, plane, out, ma, mb);           \
        else dws2_range_##NV##_DW9_GENERIC(c, x, p, plane, out, ma, mb);                       \
    } while (0)

static DWS2_TARGET void dws2_range_any(int mode, const dnnq_dw_plain_t *c, dwp_ctx_t *x,
                                       const void *arg, const uint8_t *plane, uint8_t *out,
                                       int64_t ma, int64_t mb) {
    const dws2_plan_t *p = (const dws2_plan_t *)arg;
    switch (p->nv) {
    case 1: DWS2_CASE(1); break;
    case 2: DWS2_CASE(2); break;
    case 3: DWS2_CASE(3); break;
    default: DWS2_CASE(4); break;
    }
}
#undef DWS2_CASE

int dnnq_dw_item_plain_s2(const dnnq_conv_t *cv, int64_t item) {
    dnnq_dw_plain_t c;
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_dw_plain_item(cv, item, &c, &epi, post);
    dws2_plan_t plan __attribute__((aligned(64)));
    dws2_make_plan(&c, &plan);
    dnnq_dw_plain_channels(&c, dws2_range_any, &plan);
    return 0;
}

#undef DWS2_TARGET
