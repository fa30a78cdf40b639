/* Depthwise variant "dw_rowsk": kernel rows of KW = 4 .. 16 dense taps along w (stride 1 or 2
 * along w), AVX-512 VNNI, vnni4 weights with their "rowsk" block; the row kernel (dwk_run)
 * and its driver (dnnq_dw_item_rowsk).  MobileNetV3's 5x5 layers take it.
 *
 * Four consecutive source pixels (a "block", columns 4b .. 4b + 3 of a group's columns) are
 * interleaved per channel once (DW4_INTERLEAVE: vpdpbusd's four bytes = four columns) and
 * serve every output pixel whose window meets them: output pixel i of the group starts at
 * column sw i, so the block's bytes are its taps d .. d + 3, d = 4b - sw i (-3 <= d < KW),
 * multiplied by the weights variant d: bytes (w[d], w[d + 1], w[d + 2], w[d + 3]), the taps
 * outside [0, KW) zero.  A group of four output pixels reads ceil((3 sw + KW) / 4) blocks:
 * two vpdpbusd per pixel and kernel row of five taps, 16 channels each.
 *
 * Kernel rows outside the source are not computed at all: such a row reads the zero-point
 * pixel at every tap, so its sum is zp * (the row's weights), the same for every output
 * pixel; per work item the row sums Z_i = sum_taps (zp ^ flip) w[i][tap] are computed once
 * (the zero-point pixel through the same interleave and weights), and an output row's
 * accumulators start at the sum of its skipped rows' Z_i (plus -128 sum_taps w for an s8
 * source, XOR-ed to u8): exact integer sums, the same bits as reading them.  Columns in the
 * padding read the zero-point pixel through masked loads (the groups that meet a border).
 *
 * Row weights ("rowsk", after the vnni4 taps and the s8 compensation of the panel): per kernel
 * row i, per variant d = -3 .. KW - 1, 4 vectors k of 64 bytes in the vnni4 byte order. */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"
#include "dw_avx512.h"

/* the rowsk block of a panel's packed weights (after the vnni4 taps and the compensation) */
static inline const int8_t *dwk_weights(const int8_t *w, int64_t ntaps) {
    return dnnq_dw_comp(w, ntaps) + 256;
}

/* source column c of the group (relative), or the zero-point pixel outside [lo, hi) */
#define DWK_LD(W, MT, MTM, c)                                                                  \
    (!CHECK ? _mm##W##_xor_si##W(MT(x + (int64_t)(c) * ic), flip)                              \
            : _mm##W##_xor_si##W(MTM(zpv, (c) >= lo && (c) < hi ? msk : 0, x + (int64_t)(c) * ic), \
                                 flip))

/* R (1..4, a constant after inlining) output pixels r0 .. r0 + R - 1 of a run: their
 * accumulators start at init (4 vectors, the vnni4 order) and take the nrows kernel rows */
#define DWK_GROUP(NAME, W, VT, LOADV, DP, MT, MTM, MASKT)                                      \
static inline __attribute__((always_inline)) void                                              \
NAME(const int R, const int CHECK, const int SW, int r0, int nrows, const uint8_t *const *rows,\
     const int *widx, int64_t ic, int64_t x0, int64_t lo, int64_t hi, VT zpv, VT flip,        \
     int kw, const int8_t *wk, const int8_t *init, int32_t *acc, MASKT msk) {                 \
    (void)lo; (void)hi; (void)zpv; (void)msk;                                                  \
    /* the group's source columns [lo, hi) are read, the others are the zero-point pixel */   \
    lo -= (int64_t)SW * r0;                                                                    \
    hi -= (int64_t)SW * r0;                                                                    \
    const int64_t vstride = (int64_t)(kw + 3) * 256; /* one kernel row's variants */          \
    const int nb = (SW * (R - 1) + kw + 3) / 4;                                                \
    VT s[4][4];                                                                                \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)                                        \
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k)                                        \
        s[i][k] = LOADV(init + k * 64);                                                        \
    for (int row = 0; row < nrows; ++row) {                                                    \
        const uint8_t *x = rows[row] + (x0 + (int64_t)SW * r0) * ic; /* inside when read */   \
        const int8_t *wr = wk + widx[row] * vstride + 3 * 256; /* variant d at wr + 256 d */  \
        for (int b = 0; b < nb; ++b) {                                                         \
            VT q[4];                                                                           \
            const VT v0 = DWK_LD(W, MT, MTM, 4 * b), v1 = DWK_LD(W, MT, MTM, 4 * b + 1);       \
            const VT v2 = DWK_LD(W, MT, MTM, 4 * b + 2), v3 = DWK_LD(W, MT, MTM, 4 * b + 3);   \
            DW4_INTERLEAVE(W, v0, v1, v2, v3, q);                                              \
            _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i) {                              \
                const int d = 4 * b - SW * i;                                                  \
                if (d > -4 && d < kw) {                                                        \
                    const int8_t *wv = wr + (int64_t)d * 256;                                  \
                    _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k)                        \
                        s[i][k] = DP(s[i][k], q[k], LOADV(wv + k * 64));                       \
                }                                                                              \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    /* in the accumulators' order: vector k of pixel r at acc + 64 r + k * (W / 32) */         \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)                                        \
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k)                                        \
        _mm##W##_store_si##W((VT *)(acc + (int64_t)(r0 + i) * DNNQ_NR + k * (W / 32)), s[i][k]);\
}

#define LD512(p) _mm512_loadu_si512((const void *)(p))
#define LD256(p) _mm256_loadu_si256((const __m256i *)(p))
#define DWK_SRC512_FULL(p) _mm512_loadu_si512((const void *)(p))
#define DWK_SRC512_MASK(p) _mm512_maskz_loadu_epi8(msk, (const void *)(p))
#define DWK_SRC256_FULL(p) _mm256_loadu_si256((const __m256i *)(p))
#define DWK_SRC256_MASK(p) _mm256_maskz_loadu_epi8(msk, (const void *)(p))

DWK_GROUP(dwk_512_full, 512, __m512i, LD512, _mm512_dpbusd_epi32, DWK_SRC512_FULL,
          _mm512_mask_loadu_epi8, __mmask64)
DWK_GROUP(dwk_512_mask, 512, __m512i, LD512, _mm512_dpbusd_epi32, DWK_SRC512_MASK,
          _mm512_mask_loadu_epi8, __mmask64)
DWK_GROUP(dwk_256_full, 256, __m256i, LD256, _mm256_dpbusd_epi32, DWK_SRC256_FULL,
          _mm256_mask_loadu_epi8, __mmask32)
DWK_GROUP(dwk_256_mask, 256, __m256i, LD256, _mm256_dpbusd_epi32, DWK_SRC256_MASK,
          _mm256_mask_loadu_epi8, __mmask32)

/* a run of mr pixels: groups of 4, the tail by its size (a constant); only groups whose
 * blocks meet a border or the source row's end check their columns */
#define DWK_RUN(GROUP, SW, M)                                                                  \
    do {                                                                                       \
        const int64_t span = 4 * ((SW * 3 + kw + 3) / 4);                                      \
        int r = 0;                                                                             \
        for (; r + 4 <= mr; r += 4) {                                                          \
            const int64_t c = (int64_t)SW * r;                                                 \
            if (c >= lo && c + span <= hi)                                                     \
                GROUP(4, 0, SW, r, nrows, rows, widx, ic, x0, lo, hi, zpv, flip, kw, wk, init, \
                      acc, M);                                                                 \
            else                                                                               \
                GROUP(4, 1, SW, r, nrows, rows, widx, ic, x0, lo, hi, zpv, flip, kw, wk, init, \
                      acc, M);                                                                 \
        }                                                                                      \
        switch (mr - r) {                                                                      \
        case 3: GROUP(3, 1, SW, r, nrows, rows, widx, ic, x0, lo, hi, zpv, flip, kw, wk, init, \
                      acc, M); break;                                                          \
        case 2: GROUP(2, 1, SW, r, nrows, rows, widx, ic, x0, lo, hi, zpv, flip, kw, wk, init, \
                      acc, M); break;                                                          \
        case 1: GROUP(1, 1, SW, r, nrows, rows, widx, ic, x0, lo, hi, zpv, flip, kw, wk, init, \
                      acc, M); break;                                                          \
        default: break;                                                                        \
        }                                                                                      \
    } while (0)
/* five taps (MobileNetV3's 5x5 kernels) with the block loop unrolled, other widths as given */
#define DWK_RUN_SW(GROUP, M)                                                                   \
    do {                                                                                       \
        if (kw == 5) {                                                                         \
            const int kw = 5;                                                                  \
            if (sw == 1) DWK_RUN(GROUP, 1, M);                                                 \
            else DWK_RUN(GROUP, 2, M);                                                         \
        } else if (sw == 1) {                                                                  \
            DWK_RUN(GROUP, 1, M);                                                              \
        } else {                                                                               \
            DWK_RUN(GROUP, 2, M);                                                              \
        }                                                                                      \
    } while (0)

/* mr consecutive output pixels of one output row (acc: their s32 tile rows, the
 * accumulators' order):
 * the run reads source columns x0 + c, c = 0 .. sw (mr - 1) + kw - 1, of the nrows kernel rows
 * inside the source: kernel row i's column x at rows[i] + x * ic when 0 <= x < iw, else the
 * zero-point pixel zpix, with the weights of kernel row widx[i]; init: the accumulators'
 * start (4 vectors of 64 bytes, the vnni4 order) */
static void dwk_run(int mr, int nrows, const uint8_t *const *rows, const int *widx, int64_t ic,
                    int64_t x0, int64_t iw, const uint8_t *zpix, int sw, int kw, int nc,
                    int src_signed, const int8_t *wk, const int8_t *init, int32_t *acc) {
    /* run columns c read source column x0 + c: inside the source */
    const int64_t lo = x0 < 0 ? -x0 : 0;
    const int64_t hi = iw - x0;
    if (nc > 32) {
        const __mmask64 m = nc >= 64 ? ~0ull : (1ull << nc) - 1;
        const __m512i zpv = _mm512_maskz_loadu_epi8(m, zpix);
        const __m512i flip = _mm512_set1_epi8(src_signed ? (char)0x80 : 0);
        if (nc == 64) DWK_RUN_SW(dwk_512_full, m);
        else DWK_RUN_SW(dwk_512_mask, m);
    } else {
        const __mmask32 m = nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1);
        const __m256i zpv = _mm256_maskz_loadu_epi8(m, zpix);
        const __m256i flip = _mm256_set1_epi8(src_signed ? (char)0x80 : 0);
        if (nc == 32) DWK_RUN_SW(dwk_256_full, m);
        else DWK_RUN_SW(dwk_256_mask, m);
    }
}

/* zsum + 4 * 16 * i: kernel row i's sum over its taps of (zp ^ flip) * w, the vnni4 order:
 * what the row adds where it lies outside the source (every tap reads the zero-point pixel) */
static void dwk_row_zsums(int nkr, int kw, int nc, int src_signed, const uint8_t *zpix,
                          const int8_t *wk, int32_t *zsum) {
    const __mmask64 m = nc >= 64 ? ~0ull : (1ull << nc) - 1;
    const __m512i z = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, zpix),
                                       _mm512_set1_epi8(src_signed ? (char)0x80 : 0));
    __m512i q[4];
    DW4_INTERLEAVE(512, z, z, z, z, q);
    for (int i = 0; i < nkr; ++i) {
        const int8_t *wr = wk + (int64_t)i * (kw + 3) * 256 + 3 * 256;
        for (int k = 0; k < 4; ++k) {
            __m512i s = _mm512_setzero_si512();
            for (int d = 0; d < kw; d += 4) /* variants 0, 4, ...: every tap once */
                s = _mm512_dpbusd_epi32(s, q[k], _mm512_loadu_si512(wr + d * 256 + k * 64));
            _mm512_storeu_si512(zsum + (i * 4 + k) * 16, s);
        }
    }
}

/* the first nc bytes of b at o, without a masked store (epilogue_avx512.h) */
static inline __attribute__((always_inline)) void dwk_store_bytes(uint8_t *o, __m512i b,
                                                                  int nc) {
    if (nc == 64) _mm512_storeu_si512((void *)o, b);
    else epi_store_bytes((char *)o, b, nc);
}

/* NP pixels (accumulators at acc, the vnni4 order, pixel r at acc + 64 r) through the
 * fused epilogue e to 8 bits, pixel r at o + r * ldd (nc channels), per width W */
#define DWK_EPI(W, V, VF, LDI, LDF)                                                            \
static inline __attribute__((always_inline)) void                                              \
dwk_epi_pixels_##W(const int NP, const dnnq_dw_epi_t *e, int mode, int nc, const V *cc,        \
                   const VF *sc, const VF *bi, const VF *zp, VF inv, const int32_t *acc,       \
                   uint8_t *o, int64_t ldd) {                                                  \
    V q[16];                                                                                   \
    for (int i = 0; i < 4 * NP; ++i) q[i] = LDI(acc + (i / 4) * DNNQ_NR + (i % 4) * (W / 32)); \
    if (mode == DW9_HOT) {                                                                     \
        for (int i = 0; i < 4 * NP; ++i)                                                       \
            q[i] = dw9_epi_hot_##W(inv, q[i], sc[i % 4], bi[i % 4]);                           \
    } else {                                                                                   \
        dw9_epi_block_##W(e, q, 4 * NP, 4, cc, sc, bi, zp);                                    \
    }                                                                                          \
    for (int r = 0; r < NP; ++r) {                                                             \
        const V w01 = _mm##W##_packs_epi32(q[4 * r], q[4 * r + 1]);                            \
        const V w23 = _mm##W##_packs_epi32(q[4 * r + 2], q[4 * r + 3]);                        \
        const V b = e->dt == DNNQ_DT_S8 ? _mm##W##_packs_epi16(w01, w23)                       \
                                        : _mm##W##_packus_epi16(w01, w23);                     \
        dwk_store_bytes(o + r * ldd, DWK_TO512_##W(b), nc);                                    \
    }                                                                                          \
}                                                                                              \
static void dwk_epi_fused_##W(const dnnq_dw_epi_t *e, int mode, int nc, const int32_t *acc,   \
                              int rows, uint8_t *o, int64_t ldd) {                             \
    V cc[4];                                                                                   \
    VF sc[4], bi[4], zp[4];                                                                    \
    for (int k = 0; k < 4; ++k) { /* the constants of vector k (dnnq_dw_epi_prepare_avx512) */\
        cc[k] = LDI(e->cc + k * (W / 32));                                                     \
        sc[k] = LDF(e->sc + k * (W / 32));                                                     \
        bi[k] = LDF(e->bi + k * (W / 32));                                                     \
        zp[k] = LDF(e->zp + k * (W / 32));                                                     \
    }                                                                                          \
    const VF inv = _mm##W##_set1_ps(e->inv_dst_scale);                                         \
    int r = 0;                                                                                 \
    for (; r + 4 <= rows; r += 4)                                                              \
        dwk_epi_pixels_##W(4, e, mode, nc, cc, sc, bi, zp, inv, acc + (int64_t)r * DNNQ_NR,    \
                           o + r * ldd, ldd);                                                  \
    for (; r < rows; ++r)                                                                      \
        dwk_epi_pixels_##W(1, e, mode, nc, cc, sc, bi, zp, inv, acc + (int64_t)r * DNNQ_NR,    \
                           o + r * ldd, ldd);                                                  \
}
#define DWK_TO512_512(b) (b)
#define DWK_TO512_256(b) _mm512_castsi256_si512(b)
#define DWK_LDI512(p) _mm512_load_si512((const void *)(p))
#define DWK_LDI256(p) _mm256_load_si256((const __m256i *)(p))
DWK_EPI(512, __m512i, __m512, DWK_LDI512, _mm512_load_ps)
DWK_EPI(256, __m256i, __m256, DWK_LDI256, _mm256_load_ps)

/* rows pixels of accumulators through the fused epilogue (zmm above 32 channels, else ymm:
 * the constants' narrow order) */
static void dwk_epi_fused(const dnnq_dw_epi_t *e, int mode, int nc, const int32_t *acc, int rows,
                          uint8_t *o, int64_t ldd) {
    if (nc > 32) dwk_epi_fused_512(e, mode, nc, acc, rows, o, ldd);
    else dwk_epi_fused_256(e, mode, nc, acc, rows, o, ldd);
}

/* tile rows of accumulators in their own order put in channel order, in place (the driver's
 * epilogue reads them so) */
static void dwk_channel_order(int nc, int32_t *acc, int rows) {
    for (int r = 0; r < rows; ++r) {
        int32_t *a = acc + (int64_t)r * DNNQ_NR;
        if (nc > 32) {
            __m512i v[4];
            for (int k = 0; k < 4; ++k) v[k] = _mm512_load_si512((const void *)(a + 16 * k));
            DNNQ_DW_STORE_ACC512(v, a);
        } else {
            __m256i v[4];
            for (int k = 0; k < 4; ++k) v[k] = _mm256_load_si256((const __m256i *)(a + 8 * k));
            DNNQ_DW_STORE_ACC256(v, a);
        }
    }
}

/* The depthwise row driver for kernel rows of 4 .. 16 taps (AVX-512, vnni4 weights with their
 * rowsk block, stride 1 or 2 along w, no dilation along w, no padding correction): each output
 * row of the item's pixels is one kernel call per tile of pixels over the kernel rows inside
 * the source, its accumulators starting at the skipped rows' zero-point sums; then the fused
 * epilogue (dnnq_conv_t.dw_fused) straight to the dst, or the driver's epilogue per tile. */
int dnnq_dw_item_rowsk(const dnnq_conv_t *cv, int64_t item) {
    const int64_t osp = cv->od * cv->oh * cv->ow;
    const int64_t nblk = (osp + cv->mc - 1) / cv->mc;
    /* panels outermost within an image, or innermost (rows_outer: the threads' shares are
     * then bands of output rows of every channel, no destination line written by two) */
    const int64_t blk = cv->rows_outer ? (item / cv->n_panels) % nblk : item % nblk;
    const int64_t p = cv->rows_outer ? item % cv->n_panels : (item / nblk) % cv->n_panels;
    const int64_t n = item / nblk / cv->n_panels;
    const int64_t m0 = blk * cv->mc;
    const int64_t mend = m0 + (osp - m0 < cv->mc ? osp - m0 : cv->mc);
    const int nc = (int)(cv->OC - p * DNNQ_NR < DNNQ_NR ? cv->OC - p * DNNQ_NR : DNNQ_NR);
    const int64_t chan0 = p * DNNQ_NR;
    const int64_t IC = cv->IC, iw = cv->iw;
    const int kw = (int)cv->kw;
    const int nkr = (int)(cv->kd * cv->kh); /* kernel rows */
    const int8_t *w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    const int8_t *comp = dnnq_dw_comp(w, cv->npairs);
    const int8_t *wk = dwk_weights(w, cv->npairs);
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * IC + chan0;
    const uint8_t *zpix = cv->zp_rows + chan0;

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    dnnq_dw_epi_t epi __attribute__((aligned(64)));
    const int fused = cv->dw_fused; /* (chosen at creation: 8-bit dst) */
    __m512i cc[4]; /* the compensation, added to the accumulators' start instead */
    for (int k = 0; k < 4; ++k) cc[k] = _mm512_setzero_si512();
    if (fused) {
        dnnq_dw_epi_prepare_avx512(&ge, chan0, nc, &epi);
        if (!(epi.flags & EPI_F_NOCC)) {
            for (int k = 0; k < 4; ++k) /* vector k of 16 (8: up to 32 channels) lanes */
                cc[k] = nc > 32 ? _mm512_load_si512((const void *)(epi.cc + 16 * k))
                                : _mm512_zextsi256_si512(
                                      _mm256_load_si256((const __m256i *)(epi.cc + 8 * k)));
            epi.flags |= EPI_F_NOCC;
        }
    }
    const int mode = fused ? dw9_mode(&epi) : DW9_RAW;
    uint8_t *dst8 = (uint8_t *)ge.dst + chan0; /* fused: pixel m at dst8 + m * d_sm */
    const int TR = DNNQ_DW_TILE_ROWS;
    int32_t tile[DNNQ_DW_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    int32_t init[DNNQ_NR] __attribute__((aligned(64)));
    /* per kernel row: its zero-point sum (64 s32), row pointer and weights index (on the
     * stack up to DWK_STACK_ROWS kernel rows) */
    enum { DWK_STACK_ROWS = 16 };
    const size_t per_row = DNNQ_NR * sizeof(int32_t) + sizeof(uint8_t *) + sizeof(int);
    char stack_rows[DWK_STACK_ROWS * (DNNQ_NR * sizeof(int32_t) + sizeof(uint8_t *) +
                                      sizeof(int))] __attribute__((aligned(64)));
    char *scratch = nkr <= DWK_STACK_ROWS
                        ? stack_rows
                        : (char *)aligned_alloc(64, ((per_row * (size_t)nkr + 63) / 64) * 64);
    if (!scratch) return -1;
    int32_t *zsum = (int32_t *)scratch;
    const uint8_t **rowp = (const uint8_t **)(zsum + (size_t)nkr * DNNQ_NR);
    int *widx = (int *)(rowp + nkr);
    dwk_row_zsums(nkr, kw, nc, cv->src_signed, zpix, wk, zsum);

    int64_t tm = m0;
    int trows = 0;
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        /* the kernel rows of this output row inside the source; the others' zero-point sums
         * start the accumulators */
        __m512i z[4];
        for (int k = 0; k < 4; ++k)
            z[k] = cv->src_signed ? _mm512_add_epi32(_mm512_loadu_si512(comp + k * 64), cc[k])
                                  : cc[k];
        int nr = 0, i = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
            for (int64_t kh = 0; kh < cv->kh; ++kh, ++i) {
                const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, 0);
                if (xh < 0) {
                    for (int k = 0; k < 4; ++k)
                        z[k] = _mm512_add_epi32(z[k], _mm512_loadu_si512(zsum + (i * 4 + k) * 16));
                    continue;
                }
                rowp[nr] = img + (xd * cv->ih + xh) * iw * IC;
                widx[nr++] = i;
            }
        }
        for (int k = 0; k < 4; ++k) _mm512_store_si512(init + k * 16, z[k]);
        const int64_t row_end = m + (cv->ow - ow) < mend ? m + (cv->ow - ow) : mend;
        while (m < row_end) {
            int64_t cnt = row_end - m < TR ? row_end - m : TR;
            if (!fused && trows + cnt > TR) {
                dwk_channel_order(nc, tile, trows);
                cv->epilogue(&ge, 0, tm, trows, p, tile);
                tm = m;
                trows = 0;
            }
            dwk_run((int)cnt, nr, rowp, widx, IC, ow * cv->sw - cv->pw, iw, zpix, (int)cv->sw,
                    kw, nc, cv->src_signed, wk, (const int8_t *)init, tile + trows * DNNQ_NR);
            if (fused)
                dwk_epi_fused(&epi, mode, nc, tile, (int)cnt, dst8 + m * ge.d_sm, ge.d_sm);
            else
                trows += (int)cnt;
            m += cnt;
            ow += cnt;
        }
    }
    if (trows) {
        dwk_channel_order(nc, tile, trows);
        cv->epilogue(&ge, 0, tm, trows, p, tile);
    }
    if (scratch != stack_rows) free(scratch);
    return 0;
}
