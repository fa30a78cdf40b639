/* The flat 3x3 depthwise kernel on plain (nchw) planes (variant "dw3x3_plain_flat"),
 * AVX-512 VNNI + VBMI: what its files share -- the index tables, the per-channel and
 * per-run constants, and the vector steps every window kind is written with (loads,
 * accumulators, the fused epilogue, stores).  How the kernel works: below. */
#ifndef DNNQ_DW3X3_FLAT_H
#define DNNQ_DW3X3_FLAT_H
/* Depthwise variant "dw3x3_plain_flat": the flat 3x3 kernel on plain (nchw) planes, AVX-512
 * VNNI + VBMI (the epilogue steps dw9_epi_hot_512 / dw9_epi_vec_512 of dw_avx512.h).  Its files:
 * this header, the kernel families (block, small planes, rows / stacked rows) and the driver.
 *
 * Narrow planes (7 - 28 columns) leave most lanes of the column kernel empty.  Here the lanes
 * are 16 consecutive output pixels q .. q + 15 of the flattened 2-D plane, across row ends,
 * and a vpdpbusd lane's four bytes are the three taps of one kernel row (weights (w[kh][0],
 * w[kh][1], w[kh][2], 0), the packed "rows3" block).  Lane i's taps of kernel row kh lie at
 * plane bytes s(q0 + i) + (kh - ph) iw - pw + kw, s(q) = sh oh(q) iw + sw ow(q); the lanes'
 * offsets from lane 0's, r(i) + kw, are the same for every kernel row.  So one byte permute
 * per kernel row picks every lane's taps out of a window that starts at lane 0's:
 *
 *   WIN1 (stride 1, iw == ow <= 23): one 64-byte window holds all three kernel rows (index
 *        r(i) + kw + kh iw), one load per vector;
 *   WR32 / WR64 (the lanes' span r(15) + 3 <= 32 / 64: stride 1, stride 2 runs in one
 *        output row): one 32- / 64-byte load per kernel row;
 *   WR96 (span <= 96: stride 2 rows of up to 30 output columns): 64 bytes and the next 32
 *        (WR96Z: with every zero point 0, the 32 bytes' zero extension as the zero points);
 *   WIN2 (a WR96 geometry whose three kernel rows' windows lie within 127 bytes, 2 iw +
 *        span <= 127: MobileNet's 14 -> 7): one 128-byte window for all three, its last
 *        byte replaced by the zero point (two loads and a blend per vector, not six loads).
 *
 * A tap in the padding (a column before 0 or past iw - 1 reads a neighbouring row's byte, a
 * row outside the plane another plane's) has the index of a zero-point byte: the permute's
 * second register holds them (WR96: its upper half).  Index vectors depend on the geometry
 * only: built once per block of vectors, they serve every channel of the panel, and where a
 * vector has no row in the padding its three kernel rows share one ("uniform").  (Merge or
 * zeroing masks on the permutes, loaded per vector, cost 10 - 40 % more on Zen 4.)
 *
 * Four vectors (64 pixels) go together and the next group's loads, permutes and vpdpbusd
 * come before this group's epilogue: one vector at a time, or a group's chains in order,
 * left the scheduler idle (1.2 - 1.5x the time).  Stride-2 rows of up to 64 columns whose
 * runs across a row end span more than 96 bytes take the rows mode (dwf_rows), rows of 12 -
 * 16 and 24 - 32 columns that would take 96-byte windows the stacked rows (dwf_stack).  Every
 * variant (window kind, checked loads, source sign, epilogue mode) is a function of its
 * own: all of them in one function ran the hot loops 2x slower. */

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

#define DWF_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

enum { DWF_NB = 32 }; /* vectors per block of index vectors */
/* (the order of the function tables, dwf_block_any / dwf_small_any; 0: no window kind) */
enum { DWF_WIN1 = 1, DWF_WR64 = 2, DWF_WR96 = 3, DWF_WR32 = 4, DWF_WR96Z = 5, DWF_WIN2 = 6 };

typedef struct {
    __m512i idx[3 * DWF_NB];   /* per vector and kernel row */
    int64_t base[DWF_NB];      /* per vector: s(q0), lane 0's source offset */
    unsigned char uni[DWF_NB / 4]; /* per group of four: every vector uniform */
} dwf_table_t;

/* what every channel shares (copied from the caller's context into a local: through the
 * dst stores, bytes, the caller's would be reloaded after every store) */
typedef struct {
    const uint8_t *lo, *hi; /* the source array */
    __m512i flip, tr;
    __m512i cix; /* stacked rows: the packed bytes' order undone, the dead lanes squeezed out */
    __m512 inv;
} dwf_env_t;

/* one channel's constants (a small local: kept in registers; the column kernel's context
 * with all of them cost the small planes a third of their time) */
typedef struct {
    __m512i wr[3], init, zraw, cc;
    __m512 sc, bi, zp;
} dwf_ch_t;

/* N bytes (32 or 64) at a; CHECK: masked to the source array [lo, hi) (the blocks at its
 * ends only) */
static inline __attribute__((always_inline)) DWF_TARGET __m512i
dwf_load(const int CHECK, const int N, const dwf_env_t *x, const uint8_t *a) {
    if (!CHECK || (a >= x->lo && a + N <= x->hi))
        return N == 64 ? _mm512_loadu_si512((const void *)a)
                       : _mm512_castsi256_si512(_mm256_loadu_si256((const void *)a));
    const int64_t lo = x->lo > a ? x->lo - a : 0, hi = x->hi - a;
    if (hi <= lo || lo >= N) return _mm512_setzero_si512();
    const __mmask64 m = (hi >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << hi) - 1) &
                        (~(__mmask64)0 << lo) & (N == 64 ? ~(__mmask64)0 : 0xffffffffull);
    return _mm512_maskz_loadu_epi8(m, (const void *)a);
}

/* the accumulators of NV (1 .. 4) vectors of one channel: vector k's windows from
 * plane + base[k] (+ kh ld: the kernel rows, WR64 / WR96); UNI: one index vector per
 * vector serves its three kernel rows */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_acc(const int WIN, const int CHECK, const int SGN, const int UNI, const int NV,
        const dwf_env_t *x, const dwf_ch_t *h, const uint8_t *plane, const int64_t *base,
        int64_t ld, const __m512i *idx, __m512i acc[4]) {
    __m512i W[4], W2[4];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) {
        if (WIN == DWF_WIN1 || WIN == DWF_WIN2) W[k] = dwf_load(CHECK, 64, x, plane + base[k]);
        if (WIN == DWF_WIN2) /* the window's bytes 64 - 126, the zero point at 127 */
            W2[k] = _mm512_mask_blend_epi8((__mmask64)1 << 63,
                                           dwf_load(CHECK, 64, x, plane + base[k] + 64), h->zraw);
        acc[k] = SGN ? h->init : _mm512_setzero_si512(); /* (u8: no compensation) */
    }
    /* kernel row by kernel row: a window lives only until its permute (12 live windows,
     * with the next group's accumulators, spilled) */
#pragma GCC unroll 3
    for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            const __m512i ix = idx[3 * k + (UNI ? 0 : kh)];
            const uint8_t *a = plane + base[k] + kh * ld;
            __m512i t;
            if (WIN == DWF_WIN1)
                t = _mm512_permutex2var_epi8(W[k], ix, h->zraw);
            else if (WIN == DWF_WIN2)
                t = _mm512_permutex2var_epi8(W[k], ix, W2[k]);
            else if (WIN == DWF_WR96Z) /* zero points 0: the 32-byte load's zero extension */
                t = _mm512_permutex2var_epi8(
                    dwf_load(CHECK, 64, x, a), ix,
                    _mm512_zextsi256_si512(_mm512_castsi512_si256(dwf_load(CHECK, 32, x, a + 64))));
            else if (WIN == DWF_WR96)
                t = _mm512_permutex2var_epi8(
                    dwf_load(CHECK, 64, x, a), ix,
                    _mm512_inserti64x4(h->zraw, _mm512_castsi512_si256(dwf_load(CHECK, 32, x, a + 64)), 0));
            else
                t = _mm512_permutex2var_epi8(dwf_load(CHECK, WIN == DWF_WR32 ? 32 : 64, x, a), ix,
                                             h->zraw);
            if (SGN) t = _mm512_xor_si512(t, x->flip);
            acc[k] = _mm512_dpbusd_epi32(acc[k], t, h->wr[kh]);
        }
    }
}

/* channel i's rows3 weights, s8 compensation, epilogue constants and zero point */
static inline __attribute__((always_inline)) void
dwf_channel(const dnnq_dw_plain_t *c, const int8_t *comp, int i, dwf_ch_t *h) {
    const dnnq_dw_epi_t *e = c->epi;
    int ei;
    const int64_t wpos = dwp_channel_pos(c, i, &ei);
    for (int kh = 0; kh < 3; ++kh) {
        int32_t r;
        memcpy(&r, comp + 256 + kh * 1024 + wpos, 4);
        h->wr[kh] = _mm512_set1_epi32(r);
    }
    int32_t cp;
    memcpy(&cp, comp + wpos, 4);
    h->init = c->src_signed ? _mm512_set1_epi32(cp) : _mm512_setzero_si512();
    h->sc = _mm512_set1_ps(e->sc[ei]);
    h->bi = _mm512_set1_ps(e->bi[ei]);
    h->zp = _mm512_set1_ps(e->zp[ei]);
    h->cc = _mm512_set1_epi32(e->cc[ei]);
    h->zraw = _mm512_set1_epi8((char)c->zpix[i]);
}

/* NV accumulator vectors through the fused epilogue (dwp_finish's steps, in registers),
 * packed to 64 bytes in the packs' order (dwords transposed 4 x 4; those past the NV
 * vectors' are garbage) */
static inline __attribute__((always_inline)) DWF_TARGET __m512i
dwf_pack(const int NV, const int MODE, const dnnq_dw_epi_t *e, const dwf_env_t *x,
         const dwf_ch_t *h, const __m512i acc[4]) {
    __m512i q[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
        q[k] = k >= NV ? _mm512_setzero_si512()
               : MODE == DW9_HOT ? dw9_epi_hot_512(x->inv, acc[k], h->sc, h->bi)
                                 : dw9_epi_vec_512(e, acc[k], h->cc, h->sc, h->bi, h->zp);
    const __m512i w01 = _mm512_packs_epi32(q[0], q[1]), w23 = _mm512_packs_epi32(q[2], q[3]);
    return MODE == DW9_GENERIC && e->dt == DNNQ_DT_S8 ? _mm512_packs_epi16(w01, w23)
                                                      : _mm512_packus_epi16(w01, w23);
}

/* the same, the bytes put in order */
static inline __attribute__((always_inline)) DWF_TARGET __m512i
dwf_finish(const int NV, const int MODE, const dnnq_dw_epi_t *e, const dwf_env_t *x,
           const dwf_ch_t *h, const __m512i acc[4]) {
    return _mm512_permutexvar_epi32(x->tr, dwf_pack(NV, MODE, e, x, h, acc));
}

/* a group's 64 bytes at o: stored whole where that may run past the item's n bytes (into
 * pixels or planes stored later), else through a staging buffer, n of them */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_put(__m512i v, uint8_t *o, int64_t n, int whole) {
    if (whole) {
        _mm512_storeu_si512((void *)o, v);
    } else {
        uint8_t buf[64] __attribute__((aligned(64)));
        _mm512_storeu_si512((void *)buf, v);
        memcpy(o, buf, (size_t)n);
    }
}

/* the group's accumulators, the uniform variant where the group has it (not with 96-byte
 * windows: there it ran 5 % slower, measured twice) */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_group(const int WIN, const int CHECK, const int SGN, const int NV, const dwf_env_t *x,
          const dwf_ch_t *h, const uint8_t *plane, const dwf_table_t *t, int g, int64_t ld,
          __m512i acc[4]) {
    if (WIN != DWF_WIN1 && WIN != DWF_WIN2 && WIN != DWF_WR96 && WIN != DWF_WR96Z && t->uni[g])
        dwf_acc(WIN, CHECK, SGN, 1, NV, x, h, plane, t->base + 4 * g, ld, t->idx + 12 * g, acc);
    else
        dwf_acc(WIN, CHECK, SGN, 0, NV, x, h, plane, t->base + 4 * g, ld, t->idx + 12 * g, acc);
}


/* the kernel families' entry points (one file each), called by the driver
 * (dw3x3_flat_vbmi.c) per run of channels: the block kernel (dw3x3_flat_block_vbmi.c), the
 * small-plane kernel (dw3x3_flat_small_vbmi.c), the rows mode and the stacked rows
 * (dw3x3_flat_rows_vbmi.c) */
void dnnq_dwf_block_any(int win, int check, int mode, const dnnq_dw_plain_t *c,
                        const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int64_t q0,
                        int nv, int i0, int i1);
void dnnq_dwf_small_any(int win, int nv, int check, int mode, const dnnq_dw_plain_t *c,
                        const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int i0,
                        int i1);
void dnnq_dwf_rows_any(int nv, int check, int mode, const dnnq_dw_plain_t *c,
                       const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t,
                       int64_t q0, int nr, int i0, int i1);
void dnnq_dwf_stack_any(int nvr, int check, int mode, const dnnq_dw_plain_t *c,
                        const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t,
                        int64_t q0, int nr, int i0, int i1);

#endif
