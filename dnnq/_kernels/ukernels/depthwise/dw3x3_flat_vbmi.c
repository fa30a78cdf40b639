/* Depthwise variant "dw3x3_plain_flat": the flat 3x3 kernel on plain (nchw) planes, AVX-512
 * VNNI + VBMI (the epilogue steps dw9_epi_hot_512 / dw9_epi_vec_512 of dw_avx512.h).  One
 * file for the kernel's window kinds, its function tables and its driver (the layout of an
 * item, the index vectors, dwf_run): they share every static helper.
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

/* the source offset s(q) of output pixel q of the plane (2-D) */
static inline int64_t dwf_src(const dnnq_dw_plain_t *c, int64_t q) {
    return (q / c->ow) * c->sh * c->iw + (q % c->ow) * c->sw;
}

/* the widest span r(15) + 3 of 16 consecutive pixels (any start a < n, n = min(ow, oh ow -
 * 15), at least 1).  Start a = r ow + x crosses k(x) = (x + 15) / ow row ends, so its span is
 * k (sh iw - sw ow) + 15 sw + 3: the widest at the smallest or the largest k, x = 0 or n - 1
 * (a loop over the starts, with its divisions, took a tenth of a 49-pixel plane's time) */
static int64_t dwf_span(const dnnq_dw_plain_t *c) {
    const int64_t all = c->oh * c->ow - 15;
    const int64_t n = c->ow < all ? c->ow : all > 1 ? all : 1;
    const int64_t d = c->sh * c->iw - c->sw * c->ow;
    const int64_t k0 = 15 / c->ow, k1 = (n - 1 + 15) / c->ow;
    return (k0 * d > k1 * d ? k0 * d : k1 * d) + 15 * c->sw + 3;
}

/* the window kind of a geometry (0: none) */
static int dwf_win(const dnnq_dw_plain_t *c, int64_t span) {
    if (c->sh == 1 && c->sw == 1 && c->iw == c->ow && 2 * c->iw + 18 <= 64) return DWF_WIN1;
    return span <= 32 ? DWF_WR32 : span <= 64 ? DWF_WR64 : span <= 96 ? DWF_WR96 : 0;
}

/* vector v of the table: the 16 pixels q0 .. q0 + 15 (those at or past mend: all padding) */
static DWF_TARGET void dwf_build(const int WIN, const dnnq_dw_plain_t *c, int64_t q0,
                                 int64_t mend, dwf_table_t *t, int v) {
    const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const int32_t OW = (int32_t)c->ow;
    const __m512i m = _mm512_add_epi32(_mm512_set1_epi32((int32_t)q0), lane);
    const __mmask16 inside = _mm512_cmplt_epi32_mask(m, _mm512_set1_epi32((int32_t)mend));
    /* oh = m / OW, ow = m % OW: the f32 quotient is within one of the true one for m < 2^24
     * (the caller checked), corrected both ways */
    const __m512i vow = _mm512_set1_epi32(OW);
    __m512i oh = _mm512_cvttps_epi32(
        _mm512_mul_ps(_mm512_cvtepi32_ps(m), _mm512_set1_ps(1.0f / (float)OW)));
    __m512i ow = _mm512_sub_epi32(m, _mm512_mullo_epi32(oh, vow));
    const __mmask16 neg = _mm512_cmplt_epi32_mask(ow, _mm512_setzero_si512());
    oh = _mm512_mask_sub_epi32(oh, neg, oh, _mm512_set1_epi32(1));
    ow = _mm512_mask_add_epi32(ow, neg, ow, vow);
    const __mmask16 big = _mm512_cmpge_epi32_mask(ow, vow);
    oh = _mm512_mask_add_epi32(oh, big, oh, _mm512_set1_epi32(1));
    ow = _mm512_mask_sub_epi32(ow, big, ow, vow);
    const __m512i zero = _mm512_setzero_si512(), ones = _mm512_set1_epi32(-1);
    const __m512i iw = _mm512_set1_epi32((int32_t)c->iw), ih = _mm512_set1_epi32((int32_t)c->ih);
    const __m512i row0 = _mm512_mullo_epi32(oh, _mm512_set1_epi32((int32_t)c->sh));
    const __m512i col0 = _mm512_mullo_epi32(ow, _mm512_set1_epi32((int32_t)c->sw));
    /* lane 0's source offset, and every lane's offset from it (dead lanes: anything) */
    const int64_t s0 = dwf_src(c, q0);
    const __m512i rel = _mm512_sub_epi32(_mm512_add_epi32(_mm512_mullo_epi32(row0, iw), col0),
                                         _mm512_set1_epi32((int32_t)s0));
    /* a lane's dword of taps kw = 0, 1, 2: bytes (r, r + 1, r + 2, r); the fourth meets a
     * zero weight */
    const __m512i r7 = _mm512_and_si512(rel, _mm512_set1_epi32(0x7f));
    const __m512i taps = _mm512_add_epi32(_mm512_mullo_epi32(r7, _mm512_set1_epi32(0x01010101)),
                                          _mm512_set1_epi32(0x00020100));
    __m512i colbad = zero; /* 0xff in the bytes of taps whose column is outside the source */
    for (int kw = 0; kw < 3; ++kw) {
        const __m512i x = _mm512_add_epi32(col0, _mm512_set1_epi32(kw - (int32_t)c->pw));
        const __mmask16 ok = _mm512_cmpge_epi32_mask(x, zero) & _mm512_cmplt_epi32_mask(x, iw);
        colbad = _mm512_mask_or_epi32(colbad, (__mmask16)~ok, colbad,
                                      _mm512_set1_epi32(0xff << (8 * kw)));
    }
    const __mmask64 colpad = _mm512_test_epi8_mask(colbad, colbad);
    /* the second register's zero points (WR96Z: zeros) */
    const char zpi = WIN == DWF_WIN2 ? 127 : WIN == DWF_WR96 || WIN == DWF_WR96Z ? 96 : 64;
    int uniform = 1;
    for (int kh = 0; kh < 3; ++kh) {
        const __m512i row = _mm512_add_epi32(row0, _mm512_set1_epi32(kh - (int32_t)c->ph));
        const __mmask16 rowok = inside & _mm512_cmpge_epi32_mask(row, zero) &
                                _mm512_cmplt_epi32_mask(row, ih);
        uniform &= rowok == inside;
        const __mmask64 rowpad =
            _mm512_test_epi8_mask(_mm512_maskz_mov_epi32((__mmask16)~rowok, ones), ones);
        const int base = WIN == DWF_WIN1 || WIN == DWF_WIN2 ? (int)(kh * c->iw) : 0;
        const __m512i in = _mm512_add_epi8(taps, _mm512_set1_epi8((char)base));
        t->idx[3 * v + kh] = _mm512_mask_mov_epi8(in, colpad | rowpad, _mm512_set1_epi8(zpi));
    }
    t->base[v] = s0;
    if (v % 4 == 0) t->uni[v / 4] = 1;
    t->uni[v / 4] &= (unsigned char)uniform;
}

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

/* the block's nv vectors (pixels q0 ..) of every channel: groups of four, then the rest as
 * one group; a group's 64-byte store runs past its pixels only at the item's end, where it
 * lands in the next channels' planes when they are the item's and come later (an item of
 * whole planes in one block), else in a staging buffer */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_block(const int WIN, const int CHECK, const int SGN, const int MODE,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int64_t q0, int nv, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw;
    const int64_t end = q0 + 16 * nv; /* > mend only for the item's last block */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->mend - c->m0 <= 16 * DWF_NB;
    const int rest = nv % 4, ng = nv / 4;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + (int64_t)(nv + 3) / 4 * 64 <=
                                          c->nc * c->dst_plane;
        if (ng) {
            /* group g + 1's accumulators before group g's epilogue and store */
            __m512i acc[4], nxt[4];
            dwf_group(WIN, CHECK, SGN, 4, x, &h, plane, t, 0, ld, acc);
            for (int g = 0; g + 1 < ng; ++g) {
                const int64_t q = q0 + 64 * g;
                dwf_group(WIN, CHECK, SGN, 4, x, &h, plane, t, g + 1, ld, nxt);
                dwf_put(dwf_finish(4, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                        q + 64 <= c->mend || spill_ok);
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) acc[k] = nxt[k];
            }
            const int64_t q = q0 + 64 * (ng - 1);
            dwf_put(dwf_finish(4, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                    q + 64 <= c->mend || spill_ok);
        }
        if (rest) {
            const int64_t q = q0 + 64 * ng;
            __m512i acc[4], v;
            if (rest == 1) dwf_group(WIN, CHECK, SGN, 1, x, &h, plane, t, ng, ld, acc);
            else if (rest == 2) dwf_group(WIN, CHECK, SGN, 2, x, &h, plane, t, ng, ld, acc);
            else dwf_group(WIN, CHECK, SGN, 3, x, &h, plane, t, ng, ld, acc);
            if (rest == 1) v = dwf_finish(1, MODE, c->epi, x, &h, acc);
            else if (rest == 2) v = dwf_finish(2, MODE, c->epi, x, &h, acc);
            else v = dwf_finish(3, MODE, c->epi, x, &h, acc);
            dwf_put(v, dplane + q, (end < c->mend ? end : c->mend) - q,
                    spill_ok || q + 64 <= c->mend);
        }
    }
}

/* an item of NV <= 4 vectors per channel (planes of at most 64 pixels): their index vectors
 * in registers (copied to locals: through the byte stores the table would be reloaded per
 * channel), and channel i + 1's accumulators computed before channel i's epilogue */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_small(const int WIN, const int CHECK, const int SGN, const int MODE, const int NV,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int i0, int i1) {
    __m512i ix[12];
    int64_t base[4];
#pragma GCC unroll 12
    for (int k = 0; k < 3 * NV; ++k) ix[k] = t->idx[k];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) base[k] = t->base[k];
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, q0 = c->m0;
    const int whole = c->m0 == 0 && c->mend == c->dst_plane;
    __m512i acc[4], nxt[4]; /* (i0 < i1: dwf_run leaves out empty runs) */
    dwf_ch_t h, hn;
    dwf_channel(c, comp, i0, &h);
    dwf_acc(WIN, CHECK, SGN, 0, NV, x, &h, c->src + i0 * c->src_plane + off, base, ld, ix, acc);
    for (int i = i0; i + 1 < i1; ++i) {
        dwf_channel(c, comp, i + 1, &hn);
        dwf_acc(WIN, CHECK, SGN, 0, NV, x, &hn, c->src + (i + 1) * c->src_plane + off, base, ld,
                ix, nxt);
        dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), c->dst + i * c->dst_plane + q0,
                c->mend - q0,
                q0 + 64 <= c->mend || (whole && i * c->dst_plane + 64 <= c->nc * c->dst_plane));
        h = hn;
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) acc[k] = nxt[k];
    }
    const int i = i1 - 1;
    dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), c->dst + i * c->dst_plane + q0,
            c->mend - q0,
            q0 + 64 <= c->mend || (whole && i * c->dst_plane + 64 <= c->nc * c->dst_plane));
}

/* the rows mode's accumulators of one row (vectors from base / idx); REUSE: kernel row 0's
 * taps are t2, the previous row's kernel row 2 taps (stride 2 along h: the same source row,
 * the same columns); t2 is set to this row's */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_rows_acc(const int CHECK, const int SGN, const int NV, const int REUSE, const dwf_env_t *x,
             const dwf_ch_t *h, const uint8_t *plane, const int64_t *base, int64_t ld,
             const __m512i *idx, __m512i t2[4], __m512i acc[4]) {
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) acc[k] = SGN ? h->init : _mm512_setzero_si512();
#pragma GCC unroll 3
    for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            __m512i tt;
            if (REUSE && kh == 0) {
                tt = t2[k];
            } else {
                tt = _mm512_permutex2var_epi8(dwf_load(CHECK, 64, x, plane + base[k] + kh * ld),
                                              idx[3 * k + kh], h->zraw);
                if (SGN) tt = _mm512_xor_si512(tt, x->flip);
            }
            if (kh == 2) t2[k] = tt;
            acc[k] = _mm512_dpbusd_epi32(acc[k], tt, h->wr[kh]);
        }
    }
}

/* rows mode (stride 2 along h, 2-D rows of at most 64 output columns whose 16-pixel runs
 * across a row end span more than 96 bytes): a group is one output row, NV = ceil(ow / 16)
 * vectors from its first pixel (16 pixels within a row at stride 2 read 33 bytes: one
 * 64-byte window per kernel row), the lanes past the row dead, and a row's kernel row 0
 * reuses the previous row's kernel row 2 taps (two windows and permutes per row, not three).
 * The group's 64-byte store runs into the next row, whose own store comes later and
 * rewrites it.  Rows q0 / ow .. + nr - 1 of the item (vectors NV r .. of the table) of
 * channels i0 .. i1 - 1. */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_rows(const int CHECK, const int SGN, const int MODE, const int NV,
         const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
         const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, OW = c->ow;
    /* (an item of one block: a spill into the next plane lands before that plane's own
     * stores) */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->oh <= DWF_NB / NV;
    const int64_t qlast = q0 + (int64_t)(nr - 1) * OW;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + qlast + 64 <= c->nc * c->dst_plane;
        __m512i acc[4], nxt[4], t2[4];
        /* row r + 1's accumulators before row r's epilogue and store (nr >= 1) */
        dwf_rows_acc(CHECK, SGN, NV, 0, x, &h, plane, t->base, ld, t->idx, t2, acc);
        for (int r = 0; r + 1 < nr; ++r) {
            const int64_t q = q0 + r * OW;
            dwf_rows_acc(CHECK, SGN, NV, 1, x, &h, plane, t->base + NV * (r + 1), ld,
                         t->idx + 3 * NV * (r + 1), t2, nxt);
            dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), dplane + q, c->mend - q,
                    q + 64 <= c->mend || spill_ok);
#pragma GCC unroll 4
            for (int k = 0; k < NV; ++k) acc[k] = nxt[k];
        }
        dwf_put(dwf_finish(NV, MODE, c->epi, x, &h, acc), dplane + qlast, c->mend - qlast,
                qlast + 64 <= c->mend || spill_ok);
    }
}

/* stacked rows (stride 2 along h, rows of 12 - 16 or 24 - 32 output columns that would take
 * 96-byte windows): a group is four vectors, four output rows of NVR = 1 vector or two of
 * NVR = 2, each vector from its row's first pixel + 16 j (the lanes past the row dead),
 * each row's kernel row 0 the previous row's kernel row 2 taps (two windows and permutes
 * per vector); the store's byte permute (x->cix) undoes the packs' order and squeezes the
 * dead lanes out, 4 / NVR ow bytes, and the 64-byte store runs into the next group's rows,
 * whose own store comes later.  Rows q0 / ow .. + nr - 1 of the item (vector NVR r + j of
 * the table) of channels i0 .. i1 - 1. */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_stack(const int CHECK, const int SGN, const int MODE, const int NVR,
          const dnnq_dw_plain_t *c, const dwf_env_t *xc, const int8_t *comp,
          const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) {
    const dwf_env_t xl = *xc, *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, OW = c->ow;
    const int RPG = 4 / NVR; /* rows a group */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->oh * NVR <= DWF_NB;
    const int ng = (nr + RPG - 1) / RPG;
    for (int i = i0; i < i1; ++i) {
        dwf_ch_t h;
        dwf_channel(c, comp, i, &h);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const int spill_ok = whole && i * c->dst_plane + q0 + (int64_t)(ng - 1) * RPG * OW + 64 <=
                                          c->nc * c->dst_plane;
        /* kernel row 2's taps of the last row, read by the next row: set by row 0 before
         * any row reads them, through the row arithmetic below, which the compiler does not
         * follow; zeroed once per channel so that no path reads an unset register */
        __m512i t2[4];
#pragma GCC unroll 2
        for (int k = 0; k < NVR; ++k) t2[k] = _mm512_setzero_si512();
        for (int g = 0; g < ng; ++g) {
            __m512i acc[4];
#pragma GCC unroll 4
            for (int k = 0; k < 4; k += NVR) {
                const int r = RPG * g + k / NVR;
                if (r >= nr) { /* past the item's rows: garbage the store leaves out */
#pragma GCC unroll 2
                    for (int jv = 0; jv < NVR; ++jv) acc[k + jv] = _mm512_setzero_si512();
                } else if (r == 0) {
                    dwf_rows_acc(CHECK, SGN, NVR, 0, x, &h, plane, t->base, ld, t->idx, t2,
                                 acc + k);
                } else {
                    dwf_rows_acc(CHECK, SGN, NVR, 1, x, &h, plane, t->base + NVR * r, ld,
                                 t->idx + 3 * NVR * r, t2, acc + k);
                }
            }
            const int64_t qg = q0 + (int64_t)g * RPG * OW;
            dwf_put(_mm512_permutexvar_epi8(x->cix, dwf_pack(4, MODE, c->epi, x, &h, acc)),
                    dplane + qg, c->mend - qg, qg + 64 <= c->mend || spill_ok);
        }
    }
}

#define DWF_MODES(NVR, CHECK, SGN) \
    (mode == DW9_HOT ? dwf_stack(CHECK, SGN, DW9_HOT, NVR, c, x, comp, t, q0, nr, i0, i1) \
                     : dwf_stack(CHECK, SGN, DW9_GENERIC, NVR, c, x, comp, t, q0, nr, i0, i1))
#define DWF_STACK_FN(NVR, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_stack_##NVR##_##CHECK( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) { \
        if (c->src_signed) DWF_MODES(NVR, CHECK, 1); \
        else DWF_MODES(NVR, CHECK, 0); \
    }
DWF_STACK_FN(1, 0)
DWF_STACK_FN(1, 1)
DWF_STACK_FN(2, 0)
DWF_STACK_FN(2, 1)
#undef DWF_STACK_FN
#undef DWF_MODES

#define DWF_MODES(NV, CHECK, SGN) \
    (mode == DW9_HOT ? dwf_rows(CHECK, SGN, DW9_HOT, NV, c, x, comp, t, q0, nr, i0, i1) \
                     : dwf_rows(CHECK, SGN, DW9_GENERIC, NV, c, x, comp, t, q0, nr, i0, i1))
#define DWF_ROWS_FN(NV, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_rows_##NV##_##CHECK( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nr, int i0, int i1) { \
        if (c->src_signed) DWF_MODES(NV, CHECK, 1); \
        else DWF_MODES(NV, CHECK, 0); \
    }
DWF_ROWS_FN(1, 0)
DWF_ROWS_FN(1, 1)
DWF_ROWS_FN(2, 0)
DWF_ROWS_FN(2, 1)
DWF_ROWS_FN(3, 0)
DWF_ROWS_FN(3, 1)
DWF_ROWS_FN(4, 0)
DWF_ROWS_FN(4, 1)
static void dwf_rows_any(int nv, int check, int mode, const dnnq_dw_plain_t *c,
                         const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t,
                         int64_t q0, int nr, int i0, int i1) {
    typedef void (*fn_t)(int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int64_t, int, int, int);
    static const fn_t fns[4][2] = {{dwf_rows_1_0, dwf_rows_1_1}, {dwf_rows_2_0, dwf_rows_2_1},
                                   {dwf_rows_3_0, dwf_rows_3_1}, {dwf_rows_4_0, dwf_rows_4_1}};
    fns[nv - 1][check ? 1 : 0](mode, c, x, comp, t, q0, nr, i0, i1);
}
#undef DWF_ROWS_FN
#undef DWF_MODES

#define DWF_CASE(WIN, CHECK, SGN, MODE) \
    dwf_block(WIN, CHECK, SGN, MODE, c, x, comp, t, q0, nv, i0, i1)
#define DWF_MODES(WIN, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(WIN, CHECK, SGN, DW9_HOT) : DWF_CASE(WIN, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(WIN, CHECK) (sgn ? DWF_MODES(WIN, CHECK, 1) : DWF_MODES(WIN, CHECK, 0))
/* one function per window kind and check (one holding every variant ran the hot loops 2x
 * slower) */
#define DWF_BLOCK_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void NAME( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int64_t q0, int nv, int i0, int i1) { \
        const int sgn = c->src_signed; \
        DWF_SIGNS(WIN, CHECK); \
    }
DWF_BLOCK_FN(dwf_block_win1, DWF_WIN1, 0)
DWF_BLOCK_FN(dwf_block_win1_checked, DWF_WIN1, 1)
DWF_BLOCK_FN(dwf_block_wr32, DWF_WR32, 0)
DWF_BLOCK_FN(dwf_block_wr32_checked, DWF_WR32, 1)
DWF_BLOCK_FN(dwf_block_wr64, DWF_WR64, 0)
DWF_BLOCK_FN(dwf_block_wr64_checked, DWF_WR64, 1)
DWF_BLOCK_FN(dwf_block_wr96, DWF_WR96, 0)
DWF_BLOCK_FN(dwf_block_wr96_checked, DWF_WR96, 1)
DWF_BLOCK_FN(dwf_block_wr96z, DWF_WR96Z, 0)
DWF_BLOCK_FN(dwf_block_wr96z_checked, DWF_WR96Z, 1)
DWF_BLOCK_FN(dwf_block_win2, DWF_WIN2, 0)
DWF_BLOCK_FN(dwf_block_win2_checked, DWF_WIN2, 1)
static void dwf_block_any(int win, int check, int mode, const dnnq_dw_plain_t *c,
                          const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int64_t q0,
                          int nv, int i0, int i1) {
    typedef void (*fn_t)(int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int64_t, int, int, int);
    static const fn_t fns[6][2] = {{dwf_block_win1, dwf_block_win1_checked},  /* win - 1 */
                                   {dwf_block_wr64, dwf_block_wr64_checked},
                                   {dwf_block_wr96, dwf_block_wr96_checked},
                                   {dwf_block_wr32, dwf_block_wr32_checked},
                                   {dwf_block_wr96z, dwf_block_wr96z_checked},
                                   {dwf_block_win2, dwf_block_win2_checked}};
    fns[win - 1][check ? 1 : 0](mode, c, x, comp, t, q0, nv, i0, i1);
}
#undef DWF_BLOCK_FN
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS
/* the small-plane kernel: one function per window kind, check and vector count */
#define DWF_CASE(WIN, NV, CHECK, SGN, MODE) \
    dwf_small(WIN, CHECK, SGN, MODE, NV, c, x, comp, t, i0, i1)
#define DWF_MODES(WIN, NV, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(WIN, NV, CHECK, SGN, DW9_HOT) \
                     : DWF_CASE(WIN, NV, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(WIN, NV, CHECK) (sgn ? DWF_MODES(WIN, NV, CHECK, 1) : DWF_MODES(WIN, NV, CHECK, 0))
#define DWF_SMALL_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void NAME( \
        int nv, int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int i0, int i1) { \
        const int sgn = c->src_signed; \
        if (nv == 1) DWF_SIGNS(WIN, 1, CHECK); \
        else if (nv == 2) DWF_SIGNS(WIN, 2, CHECK); \
        else if (nv == 3) DWF_SIGNS(WIN, 3, CHECK); \
        else dwf_small4_##NAME(mode, c, x, comp, t, i0, i1); \
    }
/* (four vectors, the common case, in a function of its own: next to the others, its loop
 * ran 1.1 - 1.2x slower) */
#define DWF_SMALL4_FN(NAME, WIN, CHECK) \
    static __attribute__((noinline)) DWF_TARGET void dwf_small4_##NAME( \
        int mode, const dnnq_dw_plain_t *c, const dwf_env_t *x, const int8_t *comp, \
        const dwf_table_t *t, int i0, int i1) { \
        const int sgn = c->src_signed; \
        DWF_SIGNS(WIN, 4, CHECK); \
    }
DWF_SMALL4_FN(dwf_small_win1, DWF_WIN1, 0)
DWF_SMALL4_FN(dwf_small_win1_checked, DWF_WIN1, 1)
DWF_SMALL4_FN(dwf_small_wr32, DWF_WR32, 0)
DWF_SMALL4_FN(dwf_small_wr32_checked, DWF_WR32, 1)
DWF_SMALL4_FN(dwf_small_wr64, DWF_WR64, 0)
DWF_SMALL4_FN(dwf_small_wr64_checked, DWF_WR64, 1)
DWF_SMALL4_FN(dwf_small_wr96, DWF_WR96, 0)
DWF_SMALL4_FN(dwf_small_wr96_checked, DWF_WR96, 1)
DWF_SMALL4_FN(dwf_small_wr96z, DWF_WR96Z, 0)
DWF_SMALL4_FN(dwf_small_wr96z_checked, DWF_WR96Z, 1)
DWF_SMALL4_FN(dwf_small_win2, DWF_WIN2, 0)
DWF_SMALL4_FN(dwf_small_win2_checked, DWF_WIN2, 1)
DWF_SMALL_FN(dwf_small_win1, DWF_WIN1, 0)
DWF_SMALL_FN(dwf_small_win1_checked, DWF_WIN1, 1)
DWF_SMALL_FN(dwf_small_wr32, DWF_WR32, 0)
DWF_SMALL_FN(dwf_small_wr32_checked, DWF_WR32, 1)
DWF_SMALL_FN(dwf_small_wr64, DWF_WR64, 0)
DWF_SMALL_FN(dwf_small_wr64_checked, DWF_WR64, 1)
DWF_SMALL_FN(dwf_small_wr96, DWF_WR96, 0)
DWF_SMALL_FN(dwf_small_wr96_checked, DWF_WR96, 1)
DWF_SMALL_FN(dwf_small_wr96z, DWF_WR96Z, 0)
DWF_SMALL_FN(dwf_small_wr96z_checked, DWF_WR96Z, 1)
DWF_SMALL_FN(dwf_small_win2, DWF_WIN2, 0)
DWF_SMALL_FN(dwf_small_win2_checked, DWF_WIN2, 1)
static void dwf_small_any(int win, int nv, int check, int mode, const dnnq_dw_plain_t *c,
                          const dwf_env_t *x, const int8_t *comp, const dwf_table_t *t, int i0,
                          int i1) {
    typedef void (*fn_t)(int, int, const dnnq_dw_plain_t *, const dwf_env_t *, const int8_t *,
                         const dwf_table_t *, int, int);
    static const fn_t fns[6][2] = {{dwf_small_win1, dwf_small_win1_checked},  /* win - 1 */
                                   {dwf_small_wr64, dwf_small_wr64_checked},
                                   {dwf_small_wr96, dwf_small_wr96_checked},
                                   {dwf_small_wr32, dwf_small_wr32_checked},
                                   {dwf_small_wr96z, dwf_small_wr96z_checked},
                                   {dwf_small_win2, dwf_small_win2_checked}};
    fns[win - 1][check ? 1 : 0](nv, mode, c, x, comp, t, i0, i1);
}
#undef DWF_SMALL_FN
#undef DWF_SMALL4_FN
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS

/* ---- the driver: the layout of an item (window kind, rows mode, stacked rows), its index
 * vectors per block of vectors (built per item, or once at creation for items of whole
 * planes: dwf_table_build) and the run over blocks and channels (dwf_run) ---------------- */

/* how an item goes: its window kind (before dwf_run's zero-point choice of WR96Z), and the
 * rows mode / stacked rows */
typedef struct {
    int win, rows, stack, nvr; /* nvr: rows mode, vectors per output row */
    int64_t span, nv, step;    /* nv vectors in blocks of step */
} dwf_layout_t;

static void dwf_layout(const dnnq_dw_plain_t *c, dwf_layout_t *l) {
    const int64_t wspan = dwf_span(c);
    l->win = dwf_win(c, wspan);
    /* the three kernel rows' 96-byte windows within 127 bytes: one 128-byte window (stride
     * 1's 32-byte windows stay: with it MobileNet's 28 columns ran 1.1x slower) */
    if (l->win == DWF_WR96 && 2 * c->iw + wspan <= 127) l->win = DWF_WIN2;
    /* rows mode where runs across row ends need more than 96 bytes (with 96-byte windows,
     * MobileNet's 14 columns ran 1.25x faster than in rows mode, one vector a row; its 28
     * columns as fast) */
    const int whole_rows = c->sh == 2 && 15 * c->sw + 3 <= 64 && c->m0 % c->ow == 0 &&
                           c->mend % c->ow == 0;
    /* stacked rows for 12 - 16 and 24 - 32 columns (three quarters of the lanes or more
     * live) that would take 96-byte windows (MobileNet's 28 -> 14: 15.5 -> 13.5 us, 56 ->
     * 28: 27.1 -> 24.8 us) */
    l->stack = l->win == DWF_WR96 && whole_rows &&
               ((c->ow >= 12 && c->ow <= 16) || (c->ow >= 24 && c->ow <= 32));
    l->rows = l->stack || (l->win == 0 && whole_rows && c->ow <= 64);
    l->span = l->rows || l->win == DWF_WR64 ? 2 * c->iw + 64
              : l->win == DWF_WIN1 ? 64 : l->win == DWF_WIN2 ? 128
              : 2 * c->iw + (l->win == DWF_WR32 ? 32 : 96);
    l->nvr = (int)((c->ow + 15) / 16);
    l->nv = l->rows ? (c->mend - c->m0) / c->ow * l->nvr : (c->mend - c->m0 + 15) / 16;
    l->step = l->rows ? DWF_NB / l->nvr * l->nvr : DWF_NB;
}

/* the first pixel of block v0's vectors */
static int64_t dwf_block_q0(const dnnq_dw_plain_t *c, const dwf_layout_t *l, int64_t v0) {
    return l->rows ? c->m0 + v0 / l->nvr * c->ow : c->m0 + 16 * v0;
}

/* the index vectors of the nb vectors of the block at q0 (win: the item's window kind) */
static DWF_TARGET void dwf_build_block(const dnnq_dw_plain_t *c, const dwf_layout_t *l,
                                       int win, int64_t q0, int nb, dwf_table_t *t) {
    for (int v = 0; v < nb; ++v) {
        if (l->rows) {
            const int64_t rs = q0 + v / l->nvr * c->ow; /* the row's first pixel */
            dwf_build(DWF_WR64, c, rs + 16 * (v % l->nvr), rs + c->ow, t, v);
        } else if (win == DWF_WIN1) dwf_build(DWF_WIN1, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR32) dwf_build(DWF_WR32, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR64) dwf_build(DWF_WR64, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WIN2) dwf_build(DWF_WIN2, c, q0 + 16 * v, c->mend, t, v);
        else if (win == DWF_WR96) dwf_build(DWF_WR96, c, q0 + 16 * v, c->mend, t, v);
        else dwf_build(DWF_WR96Z, c, q0 + 16 * v, c->mend, t, v);
    }
}

/* stacked rows: the store's byte permute (byte j: row j / ow, column j % ow, lane 16 row +
 * column, in the packs' dword order DWP_TR) */
static __m512i dwf_stack_cix(const dnnq_dw_plain_t *c, int nvr) {
    int8_t ix[64];
    for (int j = 0; j < 64; ++j) {
        const int p = j < 4 / nvr * c->ow ? (int)(j / c->ow * 16 * nvr + j % c->ow) : 0;
        ix[j] = (int8_t)(((p >> 2) % 4 * 4 + (p >> 2) / 4) * 4 + (p & 3));
    }
    return _mm512_loadu_si512((const void *)ix);
}

/* the index vectors of items of whole planes, built at creation: every block's, and the
 * stacked rows' byte permute (per item they took 7 - 11 % of MobileNet's 14 x 14 planes) */
enum { DWF_CACHE_BLOCKS = 16 }; /* at most (~100 KB) */
typedef struct {
    __m512i cix;
    int64_t nblocks;
    dwf_table_t t[]; /* per block */
} dwf_cache_t;

static void *dwf_table_build(const dnnq_dw_plain_t *c) {
    if (c->m0 != 0 || c->mend != c->dst_plane) return NULL;
    dwf_layout_t l;
    dwf_layout(c, &l);
    if (!l.win && !l.rows) return NULL;
    const int64_t nblocks = (l.nv + l.step - 1) / l.step;
    if (nblocks > DWF_CACHE_BLOCKS) return NULL; /* (large planes: built per item) */
    dwf_cache_t *k = (dwf_cache_t *)aligned_alloc(
        64, sizeof(dwf_cache_t) + sizeof(dwf_table_t) * (size_t)nblocks);
    if (!k) return NULL; /* (built per item) */
    k->nblocks = nblocks;
    k->cix = l.stack ? dwf_stack_cix(c, l.nvr) : _mm512_setzero_si512();
    /* (WR96 and WR96Z tables are the same: their zero points sit at byte 96) */
    for (int64_t b = 0; b < nblocks; ++b) {
        const int64_t v0 = b * l.step;
        dwf_build_block(c, &l, l.win, dwf_block_q0(c, &l, v0),
                        (int)(l.nv - v0 < l.step ? l.nv - v0 : l.step), &k->t[b]);
    }
    return k;
}

/* the item (pixels m0 .. mend - 1 of the panel's nc channels) in blocks of DWF_NB vectors;
 * -1: the geometry has no window kind (the caller checked it has) */
static DWF_TARGET int dwf_run(int mode, const dnnq_dw_plain_t *c, const int8_t *comp) {
    dwf_table_t t __attribute__((aligned(64)));
    dwf_env_t env;
    env.lo = c->src_lo;
    env.hi = c->src_hi;
    env.flip = _mm512_set1_epi8(c->src_signed ? (char)0x80 : 0);
    env.tr = DWP_TR;
    env.inv = _mm512_set1_ps(c->epi->inv_dst_scale);
    const dwf_env_t *const x = &env;
    dwf_layout_t l;
    dwf_layout(c, &l);
    const int rows = l.rows, stack = l.stack, nvr = l.nvr;
    int win = l.win;
    if (win == DWF_WR96) { /* every zero point 0: no zero points to insert */
        int z = 1;
        for (int i = 0; i < c->nc; ++i) z &= c->zpix[i] == 0;
        if (z) win = DWF_WR96Z;
    }
    if (!win && !rows) return -1;
    const int64_t off = -c->ph * c->iw - c->pw, span = l.span, nv = l.nv, step = l.step;
    const dwf_cache_t *cache =
        c->flat_table && c->m0 == 0 && c->mend == c->dst_plane ? c->flat_table : NULL;
    if (stack) env.cix = cache ? cache->cix : dwf_stack_cix(c, nvr);
    for (int64_t v0 = 0; v0 < nv; v0 += step) {
        const int nb = (int)(nv - v0 < step ? nv - v0 : step);
        const int64_t q0 = dwf_block_q0(c, &l, v0);
        const dwf_table_t *tp = cache ? &cache->t[v0 / step] : &t;
        if (!cache) dwf_build_block(c, &l, win, q0, nb, &t);
        /* channels whose loads may pass the source array's ends (the first and last few of
         * the array: planes smaller than the padding reach several) take the checked loads,
         * every other one the plain ones (checked everywhere, the blocks were 5x slower) */
        int a = 0, b = c->nc;
        while (a < c->nc && c->src + a * c->src_plane + off + tp->base[0] < x->lo) ++a;
        while (b > a && c->src + (b - 1) * c->src_plane + off + tp->base[nb - 1] + span > x->hi)
            --b;
        const int run[3][3] = {{0, a, 1}, {a, b, 0}, {b, c->nc, 1}};
        for (int r = 0; r < 3; ++r) {
            if (run[r][0] >= run[r][1]) continue;
            if (stack)
                (nvr == 1 ? (run[r][2] ? dwf_stack_1_1 : dwf_stack_1_0)
                          : (run[r][2] ? dwf_stack_2_1 : dwf_stack_2_0))(
                    mode, c, x, comp, tp, q0, nb / nvr, run[r][0], run[r][1]);
            else if (rows)
                dwf_rows_any(nvr, run[r][2], mode, c, x, comp, tp, q0, nb / nvr, run[r][0],
                             run[r][1]);
            else if (nv <= 4)
                dwf_small_any(win, nb, run[r][2], mode, c, x, comp, tp, run[r][0], run[r][1]);
            else
                dwf_block_any(win, run[r][2], mode, c, x, comp, tp, q0, nb, run[r][0], run[r][1]);
        }
    }
    return 0;
}

int dnnq_dw_item_plain_flat(const dnnq_conv_t *cv, int64_t item) {
    dnnq_dw_plain_t c;
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_dw_plain_item(cv, item, &c, &epi, post);
    if (dwf_run(dw9_mode(&epi), &c, dnnq_dw_comp(c.w, c.ntaps)) == 0) return 0;
    /* an item without a window kind (its rows not whole): the column kernel, the VBMI
     * stride-2 one where it applies */
    return cv->sh == 2 && cv->sw == 2 ? dnnq_dw_item_plain_s2(cv, item)
                                      : dnnq_dw_item_plain_cols(cv, item);
}

int dnnq_conv_build_flat_table(dnnq_conv_t *cv) {
    free((void *)cv->flat_table);
    cv->flat_table = NULL;
    /* (the conditions of the plain kernels that the plan knows at creation; 2-D) */
    if (!cv->depthwise || cv->deconv || cv->kd != 1 || cv->kh != 3 || cv->kw != 3 ||
        cv->dh != 1 || cv->dw != 1 || cv->sh < 1 || cv->sh > 2 || cv->sw < 1 || cv->sw > 2 ||
        cv->od != 1 || cv->id != 1)
        return 0;
    dnnq_dw_plain_t c;
    memset(&c, 0, sizeof c);
    dnnq_dw_plain_geometry(cv, &c);
    c.m0 = 0;
    c.mend = c.dst_plane;
    cv->flat_table = dwf_table_build(&c);
    return cv->flat_table != NULL;
}

#undef DWF_TARGET
