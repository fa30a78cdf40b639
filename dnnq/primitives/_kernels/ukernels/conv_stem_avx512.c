/* Convolution kernel "stem": the first layer of an image model (few input channels, a small
 * kernel: PP-OCR's 3 -> 16 3x3 stride 2 detector and recognizer stems, ddddocr's 1 -> 24),
 * AVX-512 VNNI.  The whole kernel window of an output pixel -- its KD * KH kernel rows of
 * KW * IC adjacent channels-last bytes each -- is one reduction of K = KD KH KW IC bytes
 * (rounded up to a multiple of 4): an im2col row built per pixel, then one GEMM pair per
 * micro-tile with the fused epilogue.
 *
 * The tiled path (conv_tiles.c) folds only the KW taps of a kernel row (fold_kw): each kernel
 * row is a pair of its own, rounded up to whole quads, so a 3 x 3 x 3 window cost 3 pairs of
 * 3 quads (36 bytes, 9 vpdpbusd per pixel and 16 channels) against 7 quads here, plus the
 * per-tile pair set-up and the gathered rows of the border pixels.
 *
 * An im2col row: kernel row t's KW * IC bytes at byte t * KW * IC, read with one masked load
 * (the mask: the taps inside the source along w; the others keep the zero-point bytes of
 * the merge source, so no border case) and stored whole (16, 32 or 64 bytes): the next
 * kernel row's store, and the next pixel's, overwrite what lies past a row's bytes, and the
 * bytes from K to the row's end meet zero weights.  A kernel row outside the source along h
 * or d is the zero-point bytes.  Taps in the padding thus read the source zero point in the
 * source type, which the compensation removes exactly (dnnq_conv.h); a zero point the type
 * cannot hold adds its per-tap correction (padcorr) to the s32 tile.
 *
 * At most 32 output channels with the hot 8-bit epilogue (no post-op chain): a loop of its
 * own, 16 accumulators in registers (16 pixels of 16 channels, or 8 of 32), the window's
 * quads broadcast straight from the im2col rows into vpdpbusd, the epilogue per pixel
 * (epi_fused_vec: the GEMM's fused steps in their order) and 16-byte stores; an s8 source is XOR-ed to u8 as the rows are built
 * (the compensation holds the -128 * colsum, as for the micro-kernel's XOR).  The others
 * (chains, wider panels, a zero point the source type cannot hold) run the micro-kernel.
 *
 * The weights: the plan's packed panel (fold_kw pairs of K4 quads each) re-laid once per
 * work item as one panel of K rows (a few KiB).  The integer sums are those of every other
 * path, and the epilogue is the GEMM's (fused into the micro-kernel where it applies), so
 * the bits are the same. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"
#include "epilogue_avx512.h"

#define ST_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/* pixels per im2col block (its rows are read back after the whole block is built: the
 * stores have left the store queue by then; rows read back at once paid for store-to-load
 * forwarding across the overlapping stores), and per s32 tile */
enum { ST_BUILD = 256, ST_TILE = DNNQ_CONV_TILE_ROWS };

/* the im2col rows of nb pixels from x0 of one output row: kernel row t read at
 * base[t] + x * step under wmask[x] (base[t] NULL: outside the source, the zero-point bytes),
 * columns [plain_lo, plain_hi) with plain loads of W bytes; W = the bytes one store writes
 * (>= the kernel row's bytes) */
ST_TARGET static inline __attribute__((always_inline)) void
st_build(const int W, int nkr, int64_t rowb, int64_t lda, const uint8_t *const *base,
         int64_t step, const uint64_t *wmask, int64_t plain_lo, int64_t plain_hi, int64_t x0,
         int nb, __m512i zseg, __m512i flip, uint8_t *a) {
    for (int i = 0; i < nb; ++i) {
        const int64_t x = x0 + i;
        const uint64_t m = wmask[x];
        uint8_t *row = a + i * lda;
        /* a whole kernel row inside and W bytes readable: a plain load (a masked one costs
         * several times more on AMD Zen 4) */
        const int plain = x >= plain_lo && x < plain_hi;
        for (int t = 0; t < nkr; ++t) {
            uint8_t *d = row + t * rowb;
            const uint8_t *s = base[t] ? base[t] + x * step : NULL;
            if (W == 16) {
                const __m128i z = _mm512_castsi512_si128(zseg);
                const __m128i v = !s ? z : plain ? _mm_loadu_si128((const __m128i *)s)
                                                 : _mm_mask_loadu_epi8(z, (__mmask16)m, s);
                _mm_storeu_si128((__m128i *)d, _mm_xor_si128(v, _mm512_castsi512_si128(flip)));
            } else if (W == 32) {
                const __m256i z = _mm512_castsi512_si256(zseg);
                const __m256i v = !s ? z : plain ? _mm256_loadu_si256((const __m256i *)s)
                                                 : _mm256_mask_loadu_epi8(z, (__mmask32)m, s);
                _mm256_storeu_si256((__m256i *)d, _mm256_xor_si256(v, _mm512_castsi512_si256(flip)));
            } else {
                const __m512i v = !s ? zseg : plain ? _mm512_loadu_si512((const void *)s)
                                                    : _mm512_mask_loadu_epi8(zseg, m, s);
                _mm512_storeu_si512((void *)d, _mm512_xor_si512(v, flip));
            }
        }
    }
}

/* st_build for W given at run time */
ST_TARGET static void st_build_w(int W, int nkr, int64_t rowb, int64_t lda,
                                 const uint8_t *const *base, int64_t step, const uint64_t *wmask,
                                 int64_t plain_lo, int64_t plain_hi, int64_t x0, int nb,
                                 __m512i zseg, __m512i flip, uint8_t *a) {
    if (W == 16)
        st_build(16, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, x0, nb, zseg, flip, a);
    else if (W == 32)
        st_build(32, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, x0, nb, zseg, flip, a);
    else
        st_build(64, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, x0, nb, zseg, flip, a);
}

/* With AVX512-VBMI (the plan's variant cv->plain = 1, "stem_vbmi"), windows of at most 32
 * bytes and at most 3 kernel rows: g pixels' rows (g even, their kernel rows within one
 * 64-byte load per kernel row) built by byte permutes, two 32-byte rows per vector -- each
 * byte written once, a vpermt2b (kernel rows 0, 1) and a masked vpermb (row 2) per two pixels
 * where the loads and stores above take six of each. */
#define ST_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi")))
enum { ST_VBMI_MAX_G = 16 };
typedef struct {
    int g;                                /* pixels per group of loads */
    __m512i i01[ST_VBMI_MAX_G / 2], i2[ST_VBMI_MAX_G / 2];
    __mmask64 m2[ST_VBMI_MAX_G / 2];
} st_perm_t;

static void st_perm_init(st_perm_t *pm, int64_t rowb, int64_t kall, int64_t step) {
    int g = (int)((64 - rowb) / step + 1);
    g = g > ST_VBMI_MAX_G ? ST_VBMI_MAX_G : g & ~1;
    pm->g = g;
    for (int v = 0; v < g / 2; ++v) {
        uint8_t i01[64], i2[64];
        uint64_t m2 = 0;
        for (int j = 0; j < 64; ++j) {
            const int64_t k = j % 32, t = k / rowb;
            const int64_t pos = (2 * v + j / 32) * step + k % rowb;
            i01[j] = i2[j] = 0; /* (bytes past the window: anything, they meet zero weights) */
            if (k >= kall) continue;
            if (t == 2) {
                i2[j] = (uint8_t)pos;
                m2 |= 1ull << j;
            } else {
                i01[j] = (uint8_t)(64 * t + pos);
            }
        }
        memcpy(&pm->i01[v], i01, 64);
        memcpy(&pm->i2[v], i2, 64);
        pm->m2[v] = m2;
    }
}

/* the rows (32 bytes apart) of the n pixels from x (n a multiple of pm->g; every kernel row
 * inside along w and its 64-byte loads inside the source) */
ST_VBMI static void st_build_vbmi(const st_perm_t *pm, int nkr, const uint8_t *const *base,
                                  int64_t step, __m512i zvec, __m512i flip, int64_t x, int n,
                                  uint8_t *a) {
    const int g = pm->g;
    const int xr = _mm512_test_epi8_mask(flip, flip) != 0; /* an s8 source */
    for (int i = 0; i < n; i += g, x += g) {
        const __m512i r0 = base[0] ? _mm512_loadu_si512((const void *)(base[0] + x * step)) : zvec;
        const __m512i r1 = nkr < 2 ? zvec : base[1] ? _mm512_loadu_si512((const void *)(base[1] + x * step)) : zvec;
        const __m512i r2 = nkr < 3 ? zvec : base[2] ? _mm512_loadu_si512((const void *)(base[2] + x * step)) : zvec;
        for (int v = 0; v < g / 2; ++v) {
            __m512i o = _mm512_permutex2var_epi8(r0, pm->i01[v], r1);
            o = _mm512_mask_permutexvar_epi8(o, pm->m2[v], pm->i2[v], r2);
            if (xr) o = _mm512_xor_si512(o, flip);
            _mm512_storeu_si512((void *)(a + (i + 2 * v) * 32), o);
        }
    }
}

/* 16 / NCB pixels' rows at a (lda apart) times the nq quads of the panel bw (16 NCB columns),
 * through the fused epilogue k of kind FUSE (1 - 16: no chain; the accumulators start at the
 * compensation), the first np pixels stored at d (nc <= 16 NCB bytes each, ldd apart) */
ST_TARGET static inline __attribute__((always_inline)) void
st_px16(const int FUSE, const int LDA, const int NCB, const epi_consts_t *k, const int8_t *bw,
        int nq, const uint8_t *a, int64_t lda_rt, int np, int nc, int64_t ldd, uint8_t *d) {
    const int64_t lda = LDA ? LDA : lda_rt; /* (a constant: immediate offsets) */
    const int CC = ((FUSE - 1) & EPI_FUSE_CC) != 0;
    const __m512i c0 = CC ? k->cc[0] : _mm512_setzero_si512();
    const __m512i c1 = CC && NCB > 1 ? k->cc[1] : c0;
#define ST_C(i) ((i) % NCB ? c1 : c0)
    __m512i a0 = ST_C(0), a1 = ST_C(1), a2 = ST_C(2), a3 = ST_C(3), a4 = ST_C(4);
    __m512i a5 = ST_C(5), a6 = ST_C(6), a7 = ST_C(7), a8 = ST_C(8), a9 = ST_C(9);
    __m512i a10 = ST_C(10), a11 = ST_C(11), a12 = ST_C(12), a13 = ST_C(13);
    __m512i a14 = ST_C(14), a15 = ST_C(15);
#undef ST_C
    for (int q = 0; q < nq; ++q) {
        const int8_t *bq = bw + q * 4 * DNNQ_NR;
        const __m512i w0 = _mm512_loadu_si512((const void *)bq);
        const __m512i w1 = NCB > 1 ? _mm512_loadu_si512((const void *)(bq + 64)) : w0;
        const uint8_t *aq = a + 4 * q;
#define ST_DP(i)                                                                                  \
    a##i = _mm512_dpbusd_epi32(                                                                   \
        a##i, _mm512_set1_epi32(*(const int32_t *)(aq + ((i) / NCB) * lda)), (i) % NCB ? w1 : w0);
        ST_DP(0) ST_DP(1) ST_DP(2) ST_DP(3) ST_DP(4) ST_DP(5) ST_DP(6) ST_DP(7)
        ST_DP(8) ST_DP(9) ST_DP(10) ST_DP(11) ST_DP(12) ST_DP(13) ST_DP(14) ST_DP(15)
#undef ST_DP
    }
    const __m512i acc[16] = {a0, a1, a2, a3, a4, a5, a6, a7,
                             a8, a9, a10, a11, a12, a13, a14, a15};
    for (int r = 0; r < np; ++r) {
        __m128i b[2];
        for (int j = 0; j < NCB; ++j) {
            const __m512i v = epi_fused_vec(FUSE, 1, k, acc[r * NCB + j], j);
            b[j] = ((FUSE - 1) & EPI_FUSE_S8)
                       ? _mm512_cvtsepi32_epi8(v)
                       : _mm512_cvtusepi32_epi8(_mm512_max_epi32(v, _mm512_setzero_si512()));
        }
        uint8_t *o = d + r * ldd;
        const int last = nc - 16 * (NCB - 1); /* bytes of the last vector */
        if (NCB > 1) _mm_storeu_si128((__m128i *)o, b[0]);
        if (last == 16) {
            _mm_storeu_si128((__m128i *)(o + 16 * (NCB - 1)), b[NCB - 1]);
        } else if (last == 8) {
            _mm_storel_epi64((__m128i *)(o + 16 * (NCB - 1)), b[NCB - 1]);
        } else {
            uint8_t tmp[16];
            _mm_storeu_si128((__m128i *)tmp, b[NCB - 1]);
            memcpy(o + 16 * (NCB - 1), tmp, (size_t)last);
        }
    }
}

/* the kinds st_px16 takes (no chain), row strides and widths as compile-time constants */
static void st_px16_kind(int fuse, int ncb, const epi_consts_t *k, const int8_t *bw, int nq,
                         const uint8_t *a, int64_t lda, int np, int nc, int64_t ldd,
                         uint8_t *d) {
#define ST_SWITCH(L, N)                                                                           \
    switch (fuse) {                                                                               \
    ST_K(L, N, 1) ST_K(L, N, 2) ST_K(L, N, 3) ST_K(L, N, 4) ST_K(L, N, 5) ST_K(L, N, 6)           \
    ST_K(L, N, 7) ST_K(L, N, 8) ST_K(L, N, 9) ST_K(L, N, 10) ST_K(L, N, 11) ST_K(L, N, 12)        \
    ST_K(L, N, 13) ST_K(L, N, 14) ST_K(L, N, 15) ST_K(L, N, 16)                                   \
    }
#define ST_K(L, N, f) case f: st_px16(f, L, N, k, bw, nq, a, lda, np, nc, ldd, d); break;
    if (lda == 32 && ncb == 1) ST_SWITCH(32, 1)
    else if (lda == 32) ST_SWITCH(32, 2)
    else if (ncb == 1) ST_SWITCH(0, 1)
    else ST_SWITCH(0, 2)
#undef ST_K
#undef ST_SWITCH
}

/* s32 tile rows (nb pixels from x0) += padcorr of their taps outside the source */
static void st_pad_correction(const dnnq_conv_t *cv, const int32_t *pc, int nkr,
                              const uint8_t *const *base, int64_t x0, int nb, int nc,
                              int32_t *tile) {
    for (int i = 0; i < nb; ++i) {
        int32_t lo, hi;
        tap_range(x0 + i, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &lo, &hi);
        int32_t *row = tile + i * DNNQ_NR;
        for (int t = 0; t < nkr; ++t)
            for (int64_t kw = 0; kw < cv->kw; ++kw) {
                if (base[t] && kw >= lo && kw < hi) continue;
                const int32_t *c = pc + (t * cv->kw + kw) * cv->OC;
                for (int j = 0; j < nc; ++j) row[j] = (int32_t)((uint32_t)row[j] + (uint32_t)c[j]);
            }
    }
}

/* The item: whole output rows of one image.  0, or -1 when the scratch could not be
 * allocated. */
ST_TARGET int dnnq_conv_item_stem(const dnnq_conv_t *cv, int64_t item) {
    int64_t n, m0, mend;
    dnnq_conv_item_pixels(cv, item, &n, &m0, &mend);
    const int64_t IC = cv->IC, ow = cv->ow;
    const int nkr = (int)(cv->kd * cv->kh);
    const int64_t rowb = cv->kw * IC;                 /* a kernel row's bytes (kpair) */
    const int64_t kall = nkr * rowb;
    const int64_t step = cv->sw * IC;                 /* bytes between two pixels' windows */
    const int vbmi = cv->plain == 1 && kall <= 32 && nkr <= 3 && (64 - rowb) / step >= 1;
    const int64_t kq = (kall + 3) / 4;                /* quads of the reduction */
    const int64_t lda = vbmi ? 32 : kq * 4;
    const int nc = (int)cv->OC;                       /* one panel */
    const int W = rowb <= 16 ? 16 : rowb <= 32 ? 32 : 64;
    const int mr_max = cv->mr;

    /* scratch: the re-laid panel, the im2col block (a store's overrun past its last row),
     * the per-column masks */
    const size_t bbytes = (size_t)kq * 4 * DNNQ_NR;
    const size_t abytes = ((size_t)(ST_BUILD * lda + 64) + 63) / 64 * 64;
    /* (the 16-pixel loop reads whole chunks of 16 rows: ST_BUILD is a multiple of 16) */
    uint8_t *scratch = (uint8_t *)aligned_alloc(64, bbytes + abytes + sizeof(uint64_t) * (size_t)ow);
    if (!scratch) return -1;
    int8_t *bw = (int8_t *)scratch;
    uint8_t *ablk = scratch + bbytes;
    uint64_t *wmask = (uint64_t *)(scratch + bbytes + abytes);

    /* the panel: row k = t * rowb + kk of the one pair <- pair t's row kk */
    memset(bw, 0, bbytes);
    const int64_t bstep = cv->K4 * 4 * DNNQ_NR;
    for (int t = 0; t < nkr; ++t)
        for (int64_t kk = 0; kk < rowb; ++kk) {
            const int64_t k = t * rowb + kk;
            const int8_t *from = cv->packed + t * bstep + (kk / 4) * 4 * DNNQ_NR + kk % 4;
            int8_t *to = bw + (k / 4) * 4 * DNNQ_NR + k % 4;
            for (int j = 0; j < nc; ++j) to[4 * j] = from[4 * j];
        }
    /* per output column: the bytes of a kernel row inside the source along w */
    for (int64_t x = 0; x < ow; ++x) {
        int32_t lo, hi;
        tap_range(x, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &lo, &hi);
        const int64_t b0 = lo * IC, b1 = hi * IC;
        const uint64_t upto1 = b1 >= 64 ? ~0ull : (1ull << b1) - 1;
        wmask[x] = b0 >= 64 ? 0 : upto1 & ~((1ull << b0) - 1);
    }
    /* the columns whose kernel rows are inside along w, and whose W-byte loads stay inside
     * the source tensor (the loads past a row's bytes read the next row's, harmlessly) */
    int64_t plain_lo = ow, plain_hi = 0;
    {
        const int64_t src_bytes = cv->N * cv->id * cv->ih * cv->iw * IC;
        const int64_t row_end = (cv->N * cv->id * cv->ih - 1) * cv->iw * IC; /* last row */
        for (int64_t x = 0; x < ow; ++x) {
            int32_t lo, hi;
            tap_range(x, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &lo, &hi);
            /* (the last source row of the tensor: loads end by its end) */
            const int ok = lo == 0 && hi == cv->kw &&
                           row_end + (x * cv->sw - cv->pw) * IC + W <= src_bytes;
            if (ok && x < plain_lo) plain_lo = x;
            if (ok) plain_hi = x + 1;
        }
    }
    /* the VBMI builder's columns: whole groups whose 64-byte loads stay inside */
    st_perm_t pm;
    int64_t v_lo = ow, v_hi = 0;
    __m512i zvec = _mm512_setzero_si512();
    if (vbmi) {
        st_perm_init(&pm, rowb, kall, step);
        const int64_t src_bytes = cv->N * cv->id * cv->ih * cv->iw * IC;
        const int64_t row_end = (cv->N * cv->id * cv->ih - 1) * cv->iw * IC;
        for (int64_t x = 0; x < ow; ++x) {
            int32_t lo, hi;
            tap_range(x, cv->kw, cv->sw, cv->dw, cv->pw, cv->iw, &lo, &hi);
            if (lo == 0 && hi == cv->kw && row_end + (x * cv->sw - cv->pw) * IC + 64 <= src_bytes) {
                if (x < v_lo) v_lo = x;
                v_hi = x + 1;
            }
        }
        /* (a group's last pixel inside: its first one is, and the loads end before) */
        if (v_hi > v_lo) v_hi = v_lo + (v_hi - v_lo) / pm.g * pm.g;
        uint8_t zb[64]; /* window byte j holds channel j % IC (windows start at a pixel) */
        for (int j = 0; j < 64; ++j) zb[j] = cv->zp_rows[j % IC];
        zvec = _mm512_loadu_si512((const void *)zb);
    }
    const __m512i zseg = _mm512_maskz_loadu_epi8(rowb >= 64 ? ~0ull : (1ull << rowb) - 1,
                                                 cv->zp_rows);

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    const int32_t *pc = cv->padcorr;                  /* [tap][OC], or NULL */
    dnnq_epi_state_t fst;
    int fuse = pc ? 0 : dnnq_conv_fuse_kind(cv, &ge, 0, &fst);
    /* the 16-channel loop: the kinds without a chain; an s8 source XOR-ed as rows are built */
    const int own = nc <= 32 && fuse > 0 && (fuse & ~DNNQ_EPI_XOR) <= 16;
    const int ncb = nc > 16 ? 2 : 1, chunk = 16 / ncb; /* vectors and pixels per call */
    const __m512i flip = _mm512_set1_epi8(own && (fuse & DNNQ_EPI_XOR) ? (char)0x80 : 0);
    if (own) fuse &= ~DNNQ_EPI_XOR;
    const epi_consts_t *ek = (const epi_consts_t *)&fst;
    const dnnq_brgemm_ukr_fn brg = dnnq_conv_brgemm_for(cv, nc);
    int32_t tile[ST_TILE * DNNQ_NR] __attribute__((aligned(64)));
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * IC;
    const uint8_t *base[DNNQ_CONV_STEM_MAX_ROWS];

    for (int64_t m = m0; m < mend; m += ow) { /* whole rows (mc a multiple of ow) */
        int64_t od, oh, ow0;
        out_pixel(cv, m, &od, &oh, &ow0);
        int t = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
            for (int64_t kh = 0; kh < cv->kh; ++kh, ++t) {
                const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, 0);
                /* (column x's kernel row starts at x * step - pw * IC; its bytes outside the
                 * row are masked off, never read) */
                base[t] = xh < 0 ? NULL : img + ((xd * cv->ih + xh) * cv->iw - cv->pw) * IC;
            }
        }
        for (int64_t x0 = 0; x0 < ow; x0 += ST_BUILD) {
            const int nb = (int)(ow - x0 < ST_BUILD ? ow - x0 : ST_BUILD);
            /* the VBMI groups of [x0, x0 + nb): [g0, g1) */
            int64_t g0 = v_lo > x0 ? v_lo : x0, g1 = v_hi < x0 + nb ? v_hi : x0 + nb;
            if (vbmi && g1 - g0 >= pm.g) {
                g1 = g0 + (g1 - g0) / pm.g * pm.g;
                if (g0 > x0)
                    st_build_w(W, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, x0,
                               (int)(g0 - x0), zseg, flip, ablk);
                st_build_vbmi(&pm, nkr, base, step, zvec, flip, g0, (int)(g1 - g0),
                              ablk + (g0 - x0) * lda);
                if (g1 < x0 + nb)
                    st_build_w(W, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, g1,
                               (int)(x0 + nb - g1), zseg, flip, ablk + (g1 - x0) * lda);
            } else {
                st_build_w(W, nkr, rowb, lda, base, step, wmask, plain_lo, plain_hi, x0, nb,
                           zseg, flip, ablk);
            }
            if (own) {
                for (int r0 = 0; r0 < nb; r0 += chunk) {
                    int np = nb - r0 < chunk ? nb - r0 : chunk;
                    /* (scalar: gcc made this min a vector op reading back a 4-byte store,
                     * a store-forwarding stall per call: 11 % of the detector stem) */
                    __asm__("" : "+r"(np));
                    st_px16_kind(fuse, ncb, ek, bw, (int)kq, ablk + r0 * lda, lda, np, nc, ek->ldd,
                                 (uint8_t *)ek->d0 + (m + x0 + r0) * ek->ldd);
                }
                continue;
            }
            for (int b0 = 0; b0 < nb; b0 += ST_TILE) { /* tiles of up to ST_TILE pixels */
                const int tb = nb - b0 < ST_TILE ? nb - b0 : ST_TILE;
                for (int r0 = 0; r0 < tb; r0 += mr_max) {
                    const int mr = tb - r0 < mr_max ? tb - r0 : mr_max;
                    const dnnq_br_pair_t pair = {ablk + (b0 + r0) * lda, lda, NULL, bw, kq * 4};
                    if (fuse) cv->brgemm_epi(mr, 1, &pair, &fst, fuse, m + x0 + b0 + r0, 1);
                    else brg(mr, 1, &pair, cv->a_xor, 0, tile + r0 * DNNQ_NR);
                }
                if (fuse) continue;
                if (pc) st_pad_correction(cv, pc, nkr, base, x0 + b0, tb, nc, tile);
                cv->epilogue(&ge, 0, m + x0 + b0, tb, 0, tile);
            }
        }
    }
    free(scratch);
    return 0;
}
