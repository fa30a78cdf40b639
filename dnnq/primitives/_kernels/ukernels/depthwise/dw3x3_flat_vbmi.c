/* The flat kernel's driver (dw3x3_flat.h): the window kind of a geometry, the index
 * vectors, the layout of an item and the run over blocks and channels (dwf_run), and the
 * variant's item function. */
#include <stdlib.h>
#include <string.h>
#include "dw3x3_flat.h"


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
            const int i0 = run[r][0], i1 = run[r][1], check = run[r][2];
            if (stack)
                dnnq_dwf_stack_any(nvr, check, mode, c, x, comp, tp, q0, nb / nvr, i0, i1);
            else if (rows)
                dnnq_dwf_rows_any(nvr, check, mode, c, x, comp, tp, q0, nb / nvr, i0, i1);
            else if (nv <= 4)
                dnnq_dwf_small_any(win, nb, check, mode, c, x, comp, tp, i0, i1);
            else
                dnnq_dwf_block_any(win, check, mode, c, x, comp, tp, q0, nb, i0, i1);
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

