/* The 3x3 depthwise column kernel on plain (nchw) planes, AVX-512 VNNI (dnnq_dw3x3_plain_avx512,
 * see dnnq_conv.h); included by conv_dw3x3_avx512.c after the 512-bit body, whose fused
 * epilogue it uses (dw9_epi_hot_512 / dw9_epi_vec_512, the same steps in the same order).
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

/* the 4 x 4 dword transpose (its own inverse) */
#define DWP_TR _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15)

typedef struct {
    const uint8_t *row[4]; /* source rows at column 0; NULL: a row in the padding */
    int64_t iw;
    __m512i zraw, zq;      /* the zero point's byte broadcast, and as the kernel reads it */
    __m512i flip, tr;
    int sgn;
    __m512i wa[3], wb[3];  /* the channel's weights per kw, for the upper / lower output row */
    __m512i init;          /* the accumulators' start: the s8 source's compensation, or 0 */
    __m512i cc;            /* the epilogue's constants, broadcast */
    __m512 sc, bi, zp, inv;
} dwp_ctx_t;

/* 64 bytes of row r at source columns col .. col + 63, the zero point outside the source,
 * dwords transposed 4 x 4 (see the top) */
static inline __attribute__((always_inline)) __m512i dwp_load(const dwp_ctx_t *x, int r,
                                                               int64_t col) {
    const uint8_t *p = x->row[r];
    if (!p) return x->zq; /* uniform: no transpose needed */
    __m512i v;
    if (col >= 0 && col + 64 <= x->iw) {
        v = _mm512_loadu_si512((const void *)(p + col));
    } else {
        const int64_t lo = col < 0 ? -col : 0, hi = x->iw - col;
        if (hi <= lo || lo >= 64) return x->zq;
        const __mmask64 m = (hi >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << hi) - 1) &
                            (~(__mmask64)0 << lo);
        /* masked-off bytes are not read: the address before or past the row is not touched */
        v = _mm512_mask_loadu_epi8(x->zraw, m, (const void *)((uintptr_t)p + (uintptr_t)col));
    }
    if (x->sgn) v = _mm512_xor_si512(v, x->flip);
    return _mm512_permutexvar_epi32(x->tr, v);
}

/* P[j] (j < 4): the four rows (three with one output row: the fourth meets zero weights) of
 * source columns col + 16 j .. + 15 interleaved, byte i of a dword = row i */
static inline __attribute__((always_inline)) void dwp_interleave(const int NRO, const dwp_ctx_t *x,
                                                                 int64_t col, __m512i P[4]) {
    const __m512i v0 = dwp_load(x, 0, col), v1 = dwp_load(x, 1, col), v2 = dwp_load(x, 2, col);
    const __m512i v3 = NRO == 2 ? dwp_load(x, 3, col) : _mm512_setzero_si512();
    const __m512i ab_lo = _mm512_unpacklo_epi8(v0, v1), ab_hi = _mm512_unpackhi_epi8(v0, v1);
    const __m512i cd_lo = _mm512_unpacklo_epi8(v2, v3), cd_hi = _mm512_unpackhi_epi8(v2, v3);
    P[0] = _mm512_unpacklo_epi16(ab_lo, cd_lo);
    P[1] = _mm512_unpackhi_epi16(ab_lo, cd_lo);
    P[2] = _mm512_unpacklo_epi16(ab_hi, cd_hi);
    P[3] = _mm512_unpackhi_epi16(ab_hi, cd_hi);
}

/* dwords 0 and 1 of the vector after a block: source columns col and col + 1 of the rows */
static inline __m512i dwp_next(const int NRO, const dwp_ctx_t *x, int64_t col) {
    const uint8_t z = (uint8_t)_mm_cvtsi128_si32(_mm512_castsi512_si128(x->zraw));
    uint64_t d = 0;
    for (int c = 0; c < 2; ++c)
        for (int r = 0; r < (NRO == 2 ? 4 : 3); ++r) {
            const int64_t xc = col + c;
            const uint8_t b = x->row[r] && xc >= 0 && xc < x->iw ? x->row[r][xc] : z;
            d |= (uint64_t)b << (32 * c + 8 * r);
        }
    const __m512i v = _mm512_set1_epi64((long long)d);
    return x->sgn ? _mm512_xor_si512(v, x->flip) : v;
}

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

/* the NV accumulator vectors of one output row through the epilogue, stored at o (n bytes;
 * all 64 when `full`: the bytes past n are rewritten later by this item) */
static inline __attribute__((always_inline)) void
dwp_finish(const int NV, const int MODE, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
           const __m512i acc[4], uint8_t *o, int64_t n, int full) {
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
    b = _mm512_permutexvar_epi32(x->tr, b);
    if (full) _mm512_storeu_si512((void *)o, b);
    else _mm512_mask_storeu_epi8(o, n >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << n) - 1, b);
}

/* output columns o .. o + 16 NV - 1 (n of them stored) of the NRO output rows */
static inline __attribute__((always_inline)) void
dwp_block(const int NRO, const int SW, const int MODE, const int NV, const dnnq_dw_epi_t *e,
          const dwp_ctx_t *x, int64_t pw, int64_t o, int64_t n, uint8_t *const dst[2],
          const uint8_t *limit) {
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
        uint8_t *out = dst[r] + o;
        dwp_finish(NV, MODE, e, x, acc, out, n, out + 64 <= limit && (n == 64 || NV * 16 >= n));
    }
}

/* one or two output rows of ow columns: blocks of 64, the last of 16, 32, 48 or 64 */
static inline __attribute__((always_inline)) void
dwp_rows(const int NRO, const int SW, const int MODE, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
         int64_t pw, int64_t ow, uint8_t *const dst[2], const uint8_t *limit) {
    int64_t o = 0;
    for (; o + 64 <= ow; o += 64) dwp_block(NRO, SW, MODE, 4, e, x, pw, o, 64, dst, limit);
    const int64_t n = ow - o;
    /* a last block narrower than its row stores under a mask unless it is the only one */
    const uint8_t *lim = o ? dst[0] : limit;
    if (n > 48) dwp_block(NRO, SW, MODE, 4, e, x, pw, o, n, dst, lim);
    else if (n > 32) dwp_block(NRO, SW, MODE, 3, e, x, pw, o, n, dst, lim);
    else if (n > 16) dwp_block(NRO, SW, MODE, 2, e, x, pw, o, n, dst, lim);
    else if (n > 0) dwp_block(NRO, SW, MODE, 1, e, x, pw, o, n, dst, lim);
}

static void dwp_rows_any(int nro, int sw, int mode, const dnnq_dw_epi_t *e, const dwp_ctx_t *x,
                         int64_t pw, int64_t ow, uint8_t *const dst[2], const uint8_t *limit) {
#define DWP_CASE(NRO, SW)                                                                      \
    if (nro == NRO && sw == SW) {                                                              \
        if (mode == DW9_HOT) dwp_rows(NRO, SW, DW9_HOT, e, x, pw, ow, dst, limit);             \
        else dwp_rows(NRO, SW, DW9_GENERIC, e, x, pw, ow, dst, limit);                         \
        return;                                                                                \
    }
    DWP_CASE(2, 1)
    DWP_CASE(1, 1)
    DWP_CASE(2, 2)
    DWP_CASE(1, 2)
#undef DWP_CASE
}

void dnnq_dw3x3_plain_avx512(const dnnq_dw3x3_plain_t *c) {
    const dnnq_dw_epi_t *e = c->epi;
    const int mode = dw9_mode(e);
    const int narrow = c->nc <= 32;
    const int8_t *comp = c->w + ((c->ntaps + 3) / 4) * 256;
    const int8_t *wc = comp + 256 + (c->ntaps / 3) * 1024; /* after rows3: cols3 */
    const int64_t OW = c->ow, OH = c->oh;
    dwp_ctx_t x;
    x.iw = c->iw;
    x.flip = _mm512_set1_epi8((char)0x80);
    x.tr = DWP_TR;
    x.sgn = c->src_signed;
    x.inv = _mm512_set1_ps(e->inv_dst_scale);
    for (int i = 0; i < c->nc; ++i) {
        /* channel i's place in the packed blocks: vector k, 128-bit lane L, dword j */
        const int L = i / 16, k = (i % 16) / 4, j = i % 4;
        const int64_t wpos = (int64_t)k * 64 + (L * 4 + j) * 4;
        for (int kw = 0; kw < 3; ++kw) {
            int32_t a, b;
            memcpy(&a, wc + (kw * 2) * 256 + wpos, 4);
            memcpy(&b, wc + (kw * 2 + 1) * 256 + wpos, 4);
            x.wa[kw] = _mm512_set1_epi32(a);
            x.wb[kw] = _mm512_set1_epi32(b);
        }
        int32_t cp;
        memcpy(&cp, comp + wpos, 4);
        x.init = x.sgn ? _mm512_set1_epi32(cp) : _mm512_setzero_si512();
        const int ei = (narrow ? 8 : 16) * k + 4 * L + j;
        x.sc = _mm512_set1_ps(e->sc[ei]);
        x.bi = _mm512_set1_ps(e->bi[ei]);
        x.zp = _mm512_set1_ps(e->zp[ei]);
        x.cc = _mm512_set1_epi32(e->cc[ei]);
        x.zraw = _mm512_set1_epi8((char)c->zpix[i]);
        x.zq = x.sgn ? _mm512_xor_si512(x.zraw, x.flip) : x.zraw;
        const uint8_t *plane = c->src + i * c->src_plane;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        const uint8_t *limit = dplane + c->mend;
        for (int64_t m = c->m0; m < c->mend;) {
            const int64_t oh = (m / OW) % OH, od = m / OW / OH;
            const int pair = c->sh == 1 && oh + 1 < OH && m + 2 * OW <= c->mend;
            const int64_t xd = od * c->sd - c->pd;
            for (int r = 0; r < 4; ++r) {
                const int64_t y = oh * c->sh - c->ph + r;
                const int in = xd >= 0 && xd < c->id && y >= 0 && y < c->ih;
                x.row[r] = in ? plane + (xd * c->ih + y) * c->iw : NULL;
            }
            uint8_t *const dst[2] = {dplane + m, dplane + m + OW};
            dwp_rows_any(pair ? 2 : 1, (int)c->sw, mode, e, &x, c->pw, OW, dst, limit);
            m += pair ? 2 * OW : OW;
        }
    }
}

#undef DWP_TR
