/* The 3x3 column kernel's loops at one vector width: a template that dw3x3_avx512.c
 * instantiates twice, after defining DW_W (512 or 256), DW_V / DW_VF (integer / float vector
 * types), DW_M (the byte mask type), DW_VL (s32 lanes), DW_SFX (the name suffix) and
 * DW9_STORE_ACC (without them: the 512-bit instance, so that the file compiles on its own).
 *
 * Accumulator k of an output pixel holds, in 128-bit lane L, dword j, channel 16 L + 4 k + j
 * (the vnni4 order); the epilogue constants are stored in that order (DW_VL per vector), and
 * the saturating packs s32 -> s16 -> 8-bit of the four accumulators leave the bytes of lane L
 * in channel order 16 L .. 16 L + 15: no permute before the store. */
#include <immintrin.h>
#include <stdint.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

#ifndef DW_W
#define DW_W 512
#define DW_V __m512i
#define DW_VF __m512
#define DW_M __mmask64
#define DW_VL 16
#define DW_SFX _512
#define DW9_STORE_ACC DNNQ_DW_STORE_ACC512
#endif

#define DWC2(a, b) a##b
#define DWC(a, b) DWC2(a, b)
#define DWF(name) DWC(name, DW_SFX)
#define DWI(op) DWC(DWC(DWC(_mm, DW_W), _), op)  /* _mm512_op / _mm256_op */

/* the call's fields as locals: stores through the 8-bit dst may alias anything, so fields
 * read through the pointer would be reloaded after every store */
typedef struct {
    const uint8_t *row[4];
    int64_t rs[4], iw, ldd, o0;
    uint8_t *dst[2];
    int32_t *acc[2];
    const int8_t *wc, *comp;
    const uint8_t *zpix;
    DW_V flip;
    DW_M m;
    float inv;
    int sgn, full;
} DWF(dw9_ctx_t);

#define DW9_LDW(p) DWC(DWI(loadu_si), DW_W)((const void *)(p))

/* the four rows (three with one output row) of source column x interleaved per channel
 * (byte i = row i): q[k]; columns outside [0, iw) read the zero-point pixel (zpix: the
 * panel's nc bytes, read under the channel mask) */
static inline __attribute__((always_inline)) void
DWF(dw9_interleave)(const int NRO, const DWF(dw9_ctx_t) *x_, int64_t x, DW_V q[4]) {
    const int inside = x >= 0 && x < x_->iw;
    DW_V v[4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
        if (r == 3 && NRO == 1) { /* meets a zero weight */
            v[r] = DWC(DWI(setzero_si), DW_W)();
            continue;
        }
        /* a pointer select, not a branch per row: outside, the zero-point pixel */
        const uint8_t *p = inside ? x_->row[r] + x * x_->rs[r] : x_->zpix;
        /* full panels: plain loads (masked ones cost stride 2 a tenth of its time on Zen
         * 4, a sixth with the source 16 bytes off a cache line, numpy's usual offset) */
        v[r] = x_->full ? DW9_LDW(p) : DWI(maskz_loadu_epi8)(x_->m, p);
        if (x_->sgn) v[r] = DWC(DWI(xor_si), DW_W)(v[r], x_->flip);
    }
    const DW_V ab_lo = DWI(unpacklo_epi8)(v[0], v[1]), ab_hi = DWI(unpackhi_epi8)(v[0], v[1]);
    const DW_V cd_lo = DWI(unpacklo_epi8)(v[2], v[3]), cd_hi = DWI(unpackhi_epi8)(v[2], v[3]);
    q[0] = DWI(unpacklo_epi16)(ab_lo, cd_lo);
    q[1] = DWI(unpackhi_epi16)(ab_lo, cd_lo);
    q[2] = DWI(unpacklo_epi16)(ab_hi, cd_hi);
    q[3] = DWI(unpackhi_epi16)(ab_hi, cd_hi);
}


/* s[r][k] += q[k] . weights (kw, variant r) for the NRO output rows; INIT: s starts at the
 * s8 source's compensation (or 0) */
static inline __attribute__((always_inline)) void
DWF(dw9_dp)(const int NRO, const int INIT, DW_V s[2][4], const DW_V q[4],
            const DWF(dw9_ctx_t) *x_, int kw) {
#pragma GCC unroll 2
    for (int r = 0; r < NRO; ++r)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            /* (INIT: s is not read, it holds nothing yet) */
            const DW_V acc = !INIT ? s[r][k]
                             : x_->sgn ? DW9_LDW(x_->comp + k * 64) : DWC(DWI(setzero_si), DW_W)();
            s[r][k] = DWI(dpbusd_epi32)(acc, q[k], DW9_LDW(x_->wc + ((kw * 2 + r) * 4 + k) * 64));
        }
}

/* every other case, one pixel per call (out of the hot loop) */
static __attribute__((noinline)) void
DWF(dw9_epi_generic)(const dnnq_dw_epi_t *e, const int32_t *acc, uint8_t *o, DW_M m) {
    DW_V q[4];
    for (int k = 0; k < 4; ++k)
        q[k] = DWF(dw9_epi_vec)(e, DWC(DWI(load_si), DW_W)((const void *)(acc + DW_VL * k)),
                                DWC(DWI(load_si), DW_W)((const void *)(e->cc + DW_VL * k)),
                                DWI(load_ps)(e->sc + DW_VL * k), DWI(load_ps)(e->bi + DW_VL * k),
                                DWI(load_ps)(e->zp + DW_VL * k));
    const DW_V w01 = DWI(packs_epi32)(q[0], q[1]), w23 = DWI(packs_epi32)(q[2], q[3]);
    const DW_V b = e->dt == DNNQ_DT_S8 ? DWI(packs_epi16)(w01, w23) : DWI(packus_epi16)(w01, w23);
    DWI(mask_storeu_epi8)(o, m, b);
}

/* output column i (of the call's n) of the NRO rows: epilogue and store, or s32 out */
static inline __attribute__((always_inline)) void
DWF(dw9_finish)(const int NRO, const int MODE, const DWF(dw9_ctx_t) *x_,
                const dnnq_dw_epi_t *e, DW_V s[2][4], int64_t i) {
#pragma GCC unroll 2
    for (int r = 0; r < NRO; ++r) {
        if (MODE == DW9_RAW) {
            DW9_STORE_ACC(s[r], x_->acc[r] + i * 64);
            continue;
        }
        uint8_t *o = x_->dst[r] + (x_->o0 + i) * x_->ldd;
        if (MODE == DW9_GENERIC) {
            int32_t buf[4 * DW_VL] __attribute__((aligned(64)));
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k)
                DWC(DWI(store_si), DW_W)((void *)(buf + DW_VL * k), s[r][k]);
            DWF(dw9_epi_generic)(e, buf, o, x_->m);
            continue;
        }
        const DW_VF inv = DWI(set1_ps)(x_->inv);
        DW_V q[4];
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            q[k] = DWF(dw9_epi_hot)(inv, s[r][k], DWI(load_ps)(e->sc + DW_VL * k),
                                    DWI(load_ps)(e->bi + DW_VL * k));
        const DW_V w01 = DWI(packs_epi32)(q[0], q[1]), w23 = DWI(packs_epi32)(q[2], q[3]);
        const DW_V b = DWI(packus_epi16)(w01, w23);
        /* masked stores are slow on some cores (Zen 4): only a narrow panel's */
        if (x_->full) DWC(DWI(storeu_si), DW_W)((void *)o, b);
        else DWI(mask_storeu_epi8)(o, x_->m, b);
    }
}

/* stride 1 along w: source column c (relative) meets outputs c (kw 0), c - 1 (kw 1) and
 * c - 2 (kw 2, which completes it); the accumulators of three outputs rotate */
#define DW9_S1_STEP(cc, SN, S1, S2)                                                            \
    do {                                                                                       \
        const int64_t c_ = (cc);                                                               \
        DW_V q[4];                                                                             \
        DWF(dw9_interleave)(NRO, &x, xb + c_, q);                                              \
        if (c_ >= 2) {                                                                         \
            DWF(dw9_dp)(NRO, 0, S2, q, &x, 2);                                                 \
            DWF(dw9_finish)(NRO, MODE, &x, e, S2, c_ - 2);                                     \
        }                                                                                      \
        if (c_ >= 1 && c_ - 1 < n) DWF(dw9_dp)(NRO, 0, S1, q, &x, 1);                          \
        if (c_ < n) DWF(dw9_dp)(NRO, 1, SN, q, &x, 0);                                         \
    } while (0)

static inline __attribute__((always_inline)) void
DWF(dw9_run)(const int NRO, const int SW, const int MODE, const dnnq_dw3x3_call_t *c,
             DW_M m) {
    DWF(dw9_ctx_t) x;
    for (int r = 0; r < 4; ++r) {
        x.row[r] = c->row[r];
        x.rs[r] = c->rs[r];
    }
    x.iw = c->iw;
    x.ldd = c->ldd;
    x.o0 = c->o0;
    x.dst[0] = c->dst[0];
    x.dst[1] = c->dst[1];
    x.acc[0] = c->acc[0];
    x.acc[1] = c->acc[1];
    x.comp = c->w + ((c->ntaps + 3) / 4) * 256;
    x.wc = x.comp + 256 + (c->ntaps / 3) * 1024; /* after rows3: cols3 */
    x.m = m;
    x.zpix = c->zpix;
    x.flip = DWI(set1_epi8)((char)0x80);
    x.sgn = c->src_signed;
    x.full = c->nc == DW_W / 8;
    x.inv = c->epi ? c->epi->inv_dst_scale : 1.0f;
    const dnnq_dw_epi_t *e = c->epi;
    const int64_t n = c->n;
    /* the rotating accumulators: every one is set (dw9_dp's INIT) before it is read, by
     * column arithmetic the compiler does not follow; zeroed here once per call so that no
     * path reads an unset register */
    DW_V a0[2][4], a1[2][4], a2[2][4];
#pragma GCC unroll 2
    for (int r = 0; r < NRO; ++r)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            a0[r][k] = a1[r][k] = a2[r][k] = DWC(DWI(setzero_si), DW_W)();
    if (SW == 1) {
        const int64_t xb = c->o0 - c->pw, end = n + 2;
        for (int64_t cc = 0; cc < end; cc += 3) {
            DW9_S1_STEP(cc, a0, a2, a1);
            if (cc + 1 < end) DW9_S1_STEP(cc + 1, a1, a0, a2);
            if (cc + 2 < end) DW9_S1_STEP(cc + 2, a2, a1, a0);
        }
    } else {
        /* stride 2: output i reads source columns 2i (kw 0, shared with output i - 1's kw 2),
         * 2i + 1 (kw 1) and 2i + 2 (kw 2) */
        const int64_t xb = 2 * c->o0 - c->pw;
        DW_V q[4];
        DWF(dw9_interleave)(NRO, &x, xb, q);
        DWF(dw9_dp)(NRO, 1, a0, q, &x, 0);
        for (int64_t i = 0; i < n; i += 2) {
            DWF(dw9_interleave)(NRO, &x, xb + 2 * i + 1, q);
            DWF(dw9_dp)(NRO, 0, a0, q, &x, 1);
            DWF(dw9_interleave)(NRO, &x, xb + 2 * i + 2, q);
            DWF(dw9_dp)(NRO, 0, a0, q, &x, 2);
            if (i + 1 < n) DWF(dw9_dp)(NRO, 1, a1, q, &x, 0);
            DWF(dw9_finish)(NRO, MODE, &x, e, a0, i);
            if (i + 1 >= n) break;
            DWF(dw9_interleave)(NRO, &x, xb + 2 * i + 3, q);
            DWF(dw9_dp)(NRO, 0, a1, q, &x, 1);
            DWF(dw9_interleave)(NRO, &x, xb + 2 * i + 4, q);
            DWF(dw9_dp)(NRO, 0, a1, q, &x, 2);
            if (i + 2 < n) DWF(dw9_dp)(NRO, 1, a0, q, &x, 0);
            DWF(dw9_finish)(NRO, MODE, &x, e, a1, i + 1);
        }
    }
    (void)a2;
}

#define DW9_MODES(NRO, SW)                                                                     \
    do {                                                                                       \
        if (mode == DW9_HOT) DWF(dw9_run)(NRO, SW, DW9_HOT, c, m);                             \
        else if (mode == DW9_GENERIC) DWF(dw9_run)(NRO, SW, DW9_GENERIC, c, m);                \
        else DWF(dw9_run)(NRO, SW, DW9_RAW, c, m);                                             \
    } while (0)

/* (64-byte aligned: its loops then sit where they do whatever code precedes it in the
 * library; a 272-byte change elsewhere moved them and cost a stride-2 layer 4 %) */
static __attribute__((aligned(64))) void DWF(dw9_call)(const dnnq_dw3x3_call_t *c, DW_M m,
                                                      int mode) {
    if (c->nro == 2) {
        if (c->sw == 1) DW9_MODES(2, 1);
        else DW9_MODES(2, 2);
    } else {
        if (c->sw == 1) DW9_MODES(1, 1);
        else DW9_MODES(1, 2);
    }
}

#undef DW9_MODES
#undef DW9_S1_STEP
#undef DW9_LDW
#undef DWI
#undef DWF
#undef DWC
#undef DWC2
