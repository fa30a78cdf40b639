/* The flat stride-1 3x3 depthwise kernel on plain (nchw) planes, AVX-512 VNNI + VBMI
 * (dnnq_dw3x3_plain_t.flat); included by conv_dw3x3_plain.h, whose epilogue it shares.
 *
 * Narrow planes (7 - 28 columns) leave most lanes of the column kernel empty.  Here the lanes
 * are 16 consecutive output pixels q .. q + 15 of the flattened plane, across row ends, and a
 * vpdpbusd lane's four bytes are the three taps of one kernel row (weights (w[kh][0],
 * w[kh][1], w[kh][2], 0), the packed "rows3" block).  With stride 1 and iw == ow the tap
 * (kh, kw) of pixel q sits at plane byte q + (kh - ph) iw + kw - pw whatever q's row, so the
 * 16 lanes of kernel row kh read 18 consecutive bytes from a0 + kh iw, a0 = q - ph iw - pw,
 * and one vpermt2b per kernel row picks every lane's taps out of two registers:
 *
 *   WIN1 (iw <= 23): the 64 bytes from a0 hold all three rows' taps: one load; the second
 *                    register holds the zero point;
 *   WIN3 (any iw):   three 32-byte loads, one per kernel row: rows 0 and 1 in the first
 *                    register, row 2 and the zero point in the second.
 *
 * A tap in the padding (a column before 0 or past iw - 1 reads the neighbouring row's byte)
 * has the index of a zero-point byte.  The index vectors depend on the geometry only: built
 * once per block of vectors, they serve every channel of the panel.  (Merge or zeroing masks
 * on the permutes, loaded per vector, cost 10 - 40 % more on Zen 4 than the indices.)
 *
 * Four vectors (64 pixels) go together: their chains of three vpdpbusd and the epilogue are
 * long, and one vector at a time filled the scheduler (1.45x the time).  Per 64 pixels, WIN1:
 * four loads, twelve vpermt2b, twelve vpdpbusd, the epilogue of four vectors and one store. */

#define DWF_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))

#define DWF_EXPI(i) (i)
#define DWF_EXPW 0
enum { DWF_NB = 32 };                       /* vectors per block of index vectors */
enum { DWF_WIN1 = 1, DWF_WIN3 = 3 };

/* the window kind of a geometry */
static int dwf_win(const dnnq_dw3x3_plain_t *c) {
    return 2 * c->iw + 18 <= 64 ? DWF_WIN1 : DWF_WIN3;
}

/* the index vectors of the 16 pixels q0 .. q0 + 15 (those at or past mend: all padding) */
static DWF_TARGET void dwf_build(const int WIN, const dnnq_dw3x3_plain_t *c, int64_t q0,
                                 int64_t mend, __m512i idx[3]) {
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
    /* a lane's dword of taps kw = 0, 1, 2 in the window: bytes (i, i + 1, i + 2, i); the
     * fourth meets a zero weight */
    const __m512i taps = _mm512_add_epi32(_mm512_mullo_epi32(lane, _mm512_set1_epi32(0x01010101)),
                                          _mm512_set1_epi32(0x00020100));
    __m512i colbad = zero; /* 0xff in the bytes of taps whose column is outside the source */
    for (int kw = 0; kw < 3; ++kw) {
        const __m512i x = _mm512_add_epi32(ow, _mm512_set1_epi32(kw - (int32_t)c->pw));
        const __mmask16 ok = _mm512_cmpge_epi32_mask(x, zero) & _mm512_cmplt_epi32_mask(x, iw);
        colbad = _mm512_mask_or_epi32(colbad, (__mmask16)~ok, colbad,
                                      _mm512_set1_epi32(0xff << (8 * kw)));
    }
    const __mmask64 colpad = _mm512_test_epi8_mask(colbad, colbad);
    for (int kh = 0; kh < 3; ++kh) {
        const __m512i row = _mm512_add_epi32(oh, _mm512_set1_epi32(kh - (int32_t)c->ph));
        const __mmask16 rowok = inside & _mm512_cmpge_epi32_mask(row, zero) &
                                _mm512_cmplt_epi32_mask(row, ih);
        const __mmask64 rowpad =
            _mm512_test_epi8_mask(_mm512_maskz_mov_epi32((__mmask16)~rowok, ones), ones);
        /* WIN1: the window's bytes 0 .. 63, the zero points from 64; WIN3: rows 0, 1 in the
         * first register, row 2 and the zero points (from 96) in the second */
        const int base = WIN == DWF_WIN3 ? 32 * kh : (int)(kh * c->iw);
        const __m512i in = _mm512_add_epi8(taps, _mm512_set1_epi8((char)base));
        idx[kh] = _mm512_mask_mov_epi8(in, colpad | rowpad,
                                       _mm512_set1_epi8(WIN == DWF_WIN3 ? 96 : 64));
    }
}

/* N bytes (32 or 64) at a; CHECK: masked to the source array [lo, hi) (the blocks at its
 * ends only) */
static inline __attribute__((always_inline)) DWF_TARGET __m512i
dwf_load(const int CHECK, const int N, const dwp_ctx_t *x, const uint8_t *a) {
    if (!CHECK || (a >= x->lo && a + N <= x->hi))
        return N == 64 ? _mm512_loadu_si512((const void *)a)
                       : _mm512_castsi256_si512(_mm256_loadu_si256((const void *)a));
    const int64_t lo = x->lo > a ? x->lo - a : 0, hi = x->hi - a;
    if (hi <= lo || lo >= N) return _mm512_setzero_si512();
    const __mmask64 m = (hi >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << hi) - 1) &
                        (~(__mmask64)0 << lo) & (N == 64 ? ~(__mmask64)0 : 0xffffffffull);
    return _mm512_maskz_loadu_epi8(m, (const void *)a);
}

/* the accumulators of NV (1 .. 4) vectors of one channel, pixels q, q + 16, ... (window
 * starts a0, a0 + 16, ...) */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_acc(const int WIN, const int CHECK, const int SGN, const int NV, const dwp_ctx_t *x,
        const uint8_t *a0, int64_t ld, const __m512i *idx, __m512i acc[4]) {
    __m512i A[4], B[4];
#pragma GCC unroll 4
    for (int k = 0; k < NV; ++k) {
        const uint8_t *a = a0 + 16 * k;
        if (WIN == DWF_WIN1) {
            A[k] = dwf_load(CHECK, 64, x, a);
            B[k] = x->zraw;
        } else {
            A[k] = _mm512_inserti64x4(dwf_load(CHECK, 32, x, a),
                                      _mm512_castsi512_si256(dwf_load(CHECK, 32, x, a + ld)), 1);
            B[k] = _mm512_inserti64x4(x->zraw,
                                      _mm512_castsi512_si256(dwf_load(CHECK, 32, x, a + 2 * ld)), 0);
        }
        acc[k] = x->init;
    }
#pragma GCC unroll 3
    for (int kh = 0; kh < 3; ++kh) {
#pragma GCC unroll 4
        for (int k = 0; k < NV; ++k) {
            __m512i t = _mm512_permutex2var_epi8(A[k], idx[3 * k + kh], B[k]);
            if (SGN) t = _mm512_xor_si512(t, x->flip);
            acc[k] = _mm512_dpbusd_epi32(acc[k], t, x->wr[kh]);
        }
    }
}

/* NV vectors through the epilogue: 64 bytes stored at o (those past the NV vectors' are
 * garbage: the caller lets them land where they are rewritten, or stages them) */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_vectors(const int WIN, const int CHECK, const int SGN, const int MODE, const int NV,
            const dnnq_dw_epi_t *e, const dwp_ctx_t *x, const uint8_t *a0, int64_t ld,
            const __m512i *idx, uint8_t *o) {
    __m512i acc[4];
    dwf_acc(WIN, CHECK, SGN, NV, x, a0, ld, idx, acc);
    dwp_finish(NV, MODE, e, x, acc, o);
}

/* channel i's rows3 weights, s8 compensation, epilogue constants and zero point into x
 * (what dwp_channel_setup sets, less the column kernel's weights) */
static inline __attribute__((always_inline)) void
dwf_channel_setup(const dnnq_dw3x3_plain_t *c, dwp_ctx_t *x, const int8_t *comp, int i) {
    const dnnq_dw_epi_t *e = c->epi;
    const int L = i / 16, k = (i % 16) / 4, j = i % 4;
    const int64_t wpos = (int64_t)k * 64 + (L * 4 + j) * 4;
    for (int kh = 0; kh < 3; ++kh) {
        int32_t r;
        memcpy(&r, comp + 256 + kh * 1024 + wpos, 4);
        x->wr[kh] = _mm512_set1_epi32(r);
    }
    int32_t cp;
    memcpy(&cp, comp + wpos, 4);
    x->init = c->src_signed ? _mm512_set1_epi32(cp) : _mm512_setzero_si512();
    const int ei = (c->nc <= 32 ? 8 : 16) * k + 4 * L + j;
    x->sc = _mm512_set1_ps(e->sc[ei]);
    x->bi = _mm512_set1_ps(e->bi[ei]);
    x->zp = _mm512_set1_ps(e->zp[ei]);
    x->cc = _mm512_set1_epi32(e->cc[ei]);
    x->zraw = _mm512_set1_epi8((char)c->zpix[i]);
}

/* the block's vectors (nv of them from pixel q0, the item's last pixel mend - 1) of every
 * channel: groups of four, then the rest as one group; a group's 64-byte store runs past
 * its pixels only at the item's end, where it lands in the next channels' planes when they
 * are the item's and come later (an item of whole planes in one block), else in a staging
 * buffer */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_block(const int WIN, const int CHECK, const int SGN, const int MODE,
          const dnnq_dw3x3_plain_t *c, const dwp_ctx_t *xc, const int8_t *comp,
          const __m512i *idx, int64_t q0, int nv) {
    /* a local copy: the caller's context is reachable through the dst stores (bytes), so
     * its constants were reloaded after every store */
    dwp_ctx_t xl = *xc;
    dwp_ctx_t *const x = &xl;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw;
    const int64_t end = q0 + 16 * nv; /* > mend only for the item's last block */
    /* (an item of one block: a spill into the next plane lands before that plane's own
     * stores) */
    const int whole = c->m0 == 0 && c->mend == c->dst_plane && c->mend - c->m0 <= 16 * DWF_NB;
    const int rest = nv % 4, ng = nv / 4;
    for (int i = 0; i < c->nc; ++i) {
        dwf_channel_setup(c, x, comp, i);
        const uint8_t *plane = c->src + i * c->src_plane + off;
        uint8_t *dplane = c->dst + i * c->dst_plane;
        /* a 64-byte store from the item's last group lands in later planes of the item */
        const int spill_ok = whole && i * c->dst_plane + (int64_t)(nv + 3) / 4 * 64 <=
                                          c->nc * c->dst_plane;
        /* software-pipelined: group g + 1's loads, permutes and vpdpbusd come before group
         * g's epilogue (in order, one group's long chains left the scheduler idle: 1.1 -
         * 1.2x the time) */
        __m512i acc[4], nxt[4];
        if (ng) dwf_acc(WIN, CHECK, SGN, 4, x, plane + q0, ld, idx, acc);
        for (int g = 0; g < ng; ++g) {
            const int64_t q = q0 + 64 * g;
            if (g + 1 < ng)
                dwf_acc(WIN, CHECK, SGN, 4, x, plane + q + 64, ld, idx + 12 * (g + 1), nxt);
            if (q + 64 <= c->mend || spill_ok) {
                dwp_finish(4, MODE, c->epi, x, acc, dplane + q);
            } else {
                uint8_t buf[64] __attribute__((aligned(64)));
                dwp_finish(4, MODE, c->epi, x, acc, buf);
                memcpy(dplane + q, buf, (size_t)(c->mend - q));
            }
            if (g + 1 < ng) {
#pragma GCC unroll 4
                for (int k = 0; k < 4; ++k) acc[k] = nxt[k];
            }
        }
        if (rest) {
            const int64_t q = q0 + 64 * ng;
            uint8_t buf[64] __attribute__((aligned(64)));
            uint8_t *o = spill_ok || q + 64 <= c->mend ? dplane + q : buf;
            const __m512i *ix = idx + 12 * ng;
            const uint8_t *a = plane + q;
            if (rest == 1) dwf_vectors(WIN, CHECK, SGN, MODE, 1, c->epi, x, a, ld, ix, o);
            else if (rest == 2) dwf_vectors(WIN, CHECK, SGN, MODE, 2, c->epi, x, a, ld, ix, o);
            else dwf_vectors(WIN, CHECK, SGN, MODE, 3, c->epi, x, a, ld, ix, o);
            if (o == buf) memcpy(dplane + q, buf, (size_t)((end < c->mend ? end : c->mend) - q));
        }
    }
}

/* an item of NV <= 4 vectors per channel (planes of at most 64 pixels): their index vectors
 * in registers (copied to locals: through the byte stores the table would be reloaded per
 * channel), and channel i + 1's accumulators computed before channel i's epilogue */
static inline __attribute__((always_inline)) DWF_TARGET void
dwf_small(const int WIN, const int CHECK, const int SGN, const int MODE, const int NV,
          const dnnq_dw3x3_plain_t *c, const dwp_ctx_t *xc, const int8_t *comp,
          const __m512i *idx) {
    __m512i ix[12];
#pragma GCC unroll 12
    for (int k = 0; k < 3 * NV; ++k) ix[k] = idx[k];
    dwp_ctx_t cx[2] = {*xc, *xc};
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw, q0 = c->m0;
    const int whole = c->m0 == 0 && c->mend == c->dst_plane;
    __m512i acc[4], nxt[4];
    dwf_channel_setup(c, &cx[0], comp, 0);
    dwf_acc(WIN, CHECK, SGN, NV, &cx[0], c->src + off + q0, ld, ix, acc);
    for (int i = 0; i < c->nc; ++i) {
        const dwp_ctx_t *const x = &cx[i & 1];
        if (i + 1 < c->nc) {
            dwp_ctx_t *const y = &cx[(i + 1) & 1];
            dwf_channel_setup(c, y, comp, i + 1);
            dwf_acc(WIN, CHECK, SGN, NV, y, c->src + (i + 1) * c->src_plane + off + q0, ld, ix,
                    nxt);
        }
        uint8_t *o = c->dst + i * c->dst_plane + q0;
        if (q0 + 64 <= c->mend || (whole && i * c->dst_plane + 64 <= c->nc * c->dst_plane)) {
            dwp_finish(NV, MODE, c->epi, x, acc, o);
        } else {
            uint8_t buf[64] __attribute__((aligned(64)));
            dwp_finish(NV, MODE, c->epi, x, acc, buf);
            memcpy(o, buf, (size_t)(c->mend - q0));
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) acc[k] = nxt[k];
    }
}

#define DWF_CASE(WIN, CHECK, SGN, MODE) dwf_block(WIN, CHECK, SGN, MODE, c, x, comp, idx, q0, nv)
#define DWF_MODES(WIN, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(WIN, CHECK, SGN, DW9_HOT) : DWF_CASE(WIN, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(WIN, CHECK) (sgn ? DWF_MODES(WIN, CHECK, 1) : DWF_MODES(WIN, CHECK, 0))
#define DWF_CHECKS(WIN) (check ? DWF_SIGNS(WIN, 1) : DWF_SIGNS(WIN, 0))
static DWF_TARGET void dwf_block_any(int win, int check, int mode, const dnnq_dw3x3_plain_t *c,
                                     dwp_ctx_t *x, const int8_t *comp, const __m512i *idx,
                                     int64_t q0, int nv) {
    const int sgn = c->src_signed;
    if (win == DWF_WIN1) DWF_CHECKS(DWF_WIN1);
    else DWF_CHECKS(DWF_WIN3);
}
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS
#undef DWF_CHECKS
/* the small-plane kernel: WIN1 (planes of at most 64 pixels have rows of at most 23), any
 * number of vectors, check, sign and epilogue mode */
#define DWF_CASE(NV, CHECK, SGN, MODE) dwf_small(DWF_WIN1, CHECK, SGN, MODE, NV, c, x, comp, idx)
#define DWF_MODES(NV, CHECK, SGN) \
    (mode == DW9_HOT ? DWF_CASE(NV, CHECK, SGN, DW9_HOT) : DWF_CASE(NV, CHECK, SGN, DW9_GENERIC))
#define DWF_SIGNS(NV, CHECK) (sgn ? DWF_MODES(NV, CHECK, 1) : DWF_MODES(NV, CHECK, 0))
#define DWF_CHECKS(NV) (check ? DWF_SIGNS(NV, 1) : DWF_SIGNS(NV, 0))
static DWF_TARGET void dwf_small_any(int nv, int check, int mode, const dnnq_dw3x3_plain_t *c,
                                     dwp_ctx_t *x, const int8_t *comp, const __m512i *idx) {
    const int sgn = c->src_signed;
    if (nv == 1) DWF_CHECKS(1);
    else if (nv == 2) DWF_CHECKS(2);
    else if (nv == 3) DWF_CHECKS(3);
    else DWF_CHECKS(4);
}
#undef DWF_CASE
#undef DWF_MODES
#undef DWF_SIGNS
#undef DWF_CHECKS

/* the item (pixels m0 .. mend - 1 of the panel's nc channels) in blocks of DWF_NB vectors */
static DWF_TARGET void dwf_run(int mode, const dnnq_dw3x3_plain_t *c, dwp_ctx_t *x,
                               const int8_t *comp) {
    __m512i idx[3 * DWF_NB] __attribute__((aligned(64)));
    const int win = dwf_win(c);
    const int64_t nv = (c->mend - c->m0 + 15) / 16;
    const int64_t ld = c->iw, off = -c->ph * c->iw - c->pw;
    const int64_t span = win == DWF_WIN1 ? 64 : 2 * ld + 32;
    for (int64_t v0 = 0; v0 < nv; v0 += DWF_NB) {
        const int nb = (int)(nv - v0 < DWF_NB ? nv - v0 : DWF_NB);
        const int64_t q0 = c->m0 + 16 * v0;
        for (int v = 0; v < nb; ++v) {
            if (win == DWF_WIN1) dwf_build(DWF_WIN1, c, q0 + 16 * v, c->mend, idx + 3 * v);
            else dwf_build(DWF_WIN3, c, q0 + 16 * v, c->mend, idx + 3 * v);
        }
        /* the block's loads of the first and last channels inside the source array: no
         * checks (only items at the array's start or end need them) */
        const uint8_t *first = c->src + off + q0;
        const uint8_t *last = c->src + (c->nc - 1) * c->src_plane + off + q0 + 16 * (nb - 1) + span;
        const int check = first < x->lo || last > x->hi;
        if (nv <= 4 && win == DWF_WIN1) dwf_small_any(nb, check, mode, c, x, comp, idx);
        else dwf_block_any(win, check, mode, c, x, comp, idx, q0, nb);
    }
}

#undef DWF_TARGET
