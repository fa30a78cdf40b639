/* Depthwise variant "dw_rows3": kernel rows of three taps along w (stride 1 or 2 along w, no
 * dilation along w), AVX-512 VNNI, vnni4 weights with their "rows3" block; the row kernel
 * (dw3row) and its driver (dnnq_dw_item_rows3). */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dnnq_conv.h"
#include "conv_coords.h"
#include "dw_avx512.h"

/* For a run of interior output pixels, the taps of one kernel row read source pixels
 * x[s p], x[s p + 1], x[s p + 2] (s the stride, pixel units).  Four consecutive source pixels
 * are interleaved once (as DW4_INTERLEAVE) and serve several output pixels through shifted
 * weights ("variants", 4 bytes per channel): A = (w0, w1, w2, 0), B = (0, w0, w1, w2),
 * C = (0, 0, w0, w1), D = (w2, 0, 0, 0).
 *   stride 1: I = x[p .. p+3]   gives p (A) and p + 1 (B);
 *   stride 2: I = x[2p .. 2p+3] gives p (A) and part of p + 1 (C), whose third tap is in the
 *             next block's first pixel (D).
 * About half the shuffles per output pixel of the four-tap kernel.  Source pixels past what
 * the run reads are never loaded (zeros: their weights are 0).
 *
 * Row weights ("rows3", after the vnni4 block of the panel): per kernel row i, per variant
 * v (A, B, C, D), 4 vectors k of 64 bytes in the vnni4 byte order. */

/* source column c of the block (relative), or the zero-point pixel outside [lo, hi) */
#define DW3_LD(XOR, MT, MTM, c)                                                                \
    (!CHECK ? XOR(MT(x + (int64_t)(c) * ic), flip)                                             \
            : XOR(MTM(zpv, (c) >= lo && (c) < hi ? kall : 0, x + (int64_t)(c) * ic), flip))

/* R (1..4, a constant after inlining) output pixels r0 .. r0+R-1 of a run of mr */
#define DW3_BLOCK(NAME, W, VT, LOADV, ZERO, DP, MT, MTM, MASKT)                                     \
static inline __attribute__((always_inline)) void                                              \
NAME(const int R, const int CHECK, int r0, int nrows, const uint8_t *const *rows,             \
     const int64_t *strides, const int *widx, int64_t x0, int64_t lo, int64_t hi, VT zpv,       \
     const int sw, int src_signed, const int8_t *wrow, const int8_t *comp, int32_t *acc,        \
     MASKT msk) {                                                                              \
    (void)msk;                                                                                 \
    const VT flip = _mm##W##_set1_epi8(src_signed ? (char)0x80 : 0);                            \
    const VT zero = ZERO();                                                                    \
    /* the block's source columns [lo, hi) are read, the others are the zero-point pixel */   \
    lo -= (int64_t)sw * r0;                                                                    \
    hi -= (int64_t)sw * r0;                                                                    \
    (void)lo; (void)hi; (void)zpv;                                                             \
    /* checked loads: masked (no fault outside the source), zero-point bytes elsewhere */      \
    const MASKT kall = msk;                                                                    \
    (void)kall;                                                                                \
    VT s[4][4];                                                                                \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)                                        \
    _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k)                                        \
        s[i][k] = src_signed ? LOADV(comp + k * 64) : zero;                                    \
    for (int row = 0; row < nrows; ++row) {                                                    \
        const int64_t ic = strides[row];                                                       \
        const uint8_t *x = rows[row] + (x0 + (int64_t)sw * r0) * ic; /* inside when read */   \
        const int8_t *wr = wrow + widx[row] * 1024;                                            \
        /* each weight vector is loaded once and used for every pixel it serves (the     \
         * accumulators, the interleaved sources and two weights fit the registers) */    \
        VT qq[2][4];                                                                           \
        if (sw == 1) {                                                                         \
            /* J(c) = x[c .. c+3] serves pixels c (A) and c + 1 (B); J(0), J(2) share loads */ \
            VT v[6];                                                                           \
            _Pragma("GCC unroll 6") for (int j = 0; j < 6; ++j)                                \
                v[j] = j < R + 2 ? DW3_LD(_mm##W##_xor_si##W, MT, MTM, j) : zero;                                           \
            DW4_INTERLEAVE(W, v[0], v[1], v[2], v[3], qq[0]);                                  \
            if (R > 2) DW4_INTERLEAVE(W, v[2], v[3], v[4], v[5], qq[1]);                       \
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k) {                              \
                const VT a = LOADV(wr + k * 64);                                               \
                s[0][k] = DP(s[0][k], qq[0][k], a);                                            \
                if (R > 2) s[2][k] = DP(s[2][k], qq[1][k], a);                                 \
                if (R > 1) {                                                                   \
                    const VT b = LOADV(wr + 256 + k * 64);                                     \
                    s[1][k] = DP(s[1][k], qq[0][k], b);                                        \
                    if (R > 3) s[3][k] = DP(s[3][k], qq[1][k], b);                             \
                }                                                                              \
            }                                                                                  \
        } else {                                                                               \
            /* J(p) = x[2p .. 2p+3]: pixel p (A), pixel p + 1 (C, and D of J(p + 1)):        \
             * pixels 0..3 from J(0), J(2), J(4) (the block's source columns 0, 4, 8) */      \
            VT v[4];                                                                           \
            _Pragma("GCC unroll 4") for (int j = 0; j < 4; ++j) v[j] = DW3_LD(_mm##W##_xor_si##W, MT, MTM, j);              \
            DW4_INTERLEAVE(W, v[0], v[1], v[2], v[3], qq[0]);                                  \
            if (R > 1) {                                                                       \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; ++j) v[j] = DW3_LD(_mm##W##_xor_si##W, MT, MTM, 4 + j);      \
                DW4_INTERLEAVE(W, v[0], v[1], v[2], v[3], qq[1]);                              \
            }                                                                                  \
            _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k) {                              \
                const VT a = LOADV(wr + k * 64);                                               \
                s[0][k] = DP(s[0][k], qq[0][k], a);                                            \
                if (R > 2) s[2][k] = DP(s[2][k], qq[1][k], a);                                 \
                if (R > 1) {                                                                   \
                    const VT c = LOADV(wr + 512 + k * 64);                                     \
                    s[1][k] = DP(s[1][k], qq[0][k], c);                                        \
                    if (R > 3) s[3][k] = DP(s[3][k], qq[1][k], c);                             \
                    s[1][k] = DP(s[1][k], qq[1][k], LOADV(wr + 768 + k * 64));                 \
                }                                                                              \
            }                                                                                  \
            if (R > 3) {                                                                       \
                _Pragma("GCC unroll 4") for (int j = 0; j < 4; ++j) v[j] = DW3_LD(_mm##W##_xor_si##W, MT, MTM, 8 + j);      \
                DW4_INTERLEAVE(W, v[0], v[1], v[2], v[3], qq[0]);                              \
                _Pragma("GCC unroll 4") for (int k = 0; k < 4; ++k)                            \
                    s[3][k] = DP(s[3][k], qq[0][k], LOADV(wr + 768 + k * 64));                 \
            }                                                                                  \
        }                                                                                      \
    }                                                                                          \
    _Pragma("GCC unroll 4") for (int i = 0; i < R; ++i)                                        \
        STORE_ACC_##W(s[i], acc + (r0 + i) * DNNQ_NR);                                         \
}

#define STORE_ACC_512 DNNQ_DW_STORE_ACC512
#define STORE_ACC_256 DNNQ_DW_STORE_ACC256

#define LD512(p) _mm512_loadu_si512((const void *)(p))
#define LD256(p) _mm256_loadu_si256((const __m256i *)(p))
#define DW3_SRC512_FULL(p) _mm512_loadu_si512((const void *)(p))
#define DW3_SRC512_MASK(p) _mm512_maskz_loadu_epi8(msk, (const void *)(p))
#define DW3_SRC256_FULL(p) _mm256_loadu_si256((const __m256i *)(p))
#define DW3_SRC256_MASK(p) _mm256_maskz_loadu_epi8(msk, (const void *)(p))

DW3_BLOCK(dw3_512_full, 512, __m512i, LD512, _mm512_setzero_si512, _mm512_dpbusd_epi32,
          DW3_SRC512_FULL, _mm512_mask_loadu_epi8, __mmask64)
DW3_BLOCK(dw3_512_mask, 512, __m512i, LD512, _mm512_setzero_si512, _mm512_dpbusd_epi32,
          DW3_SRC512_MASK, _mm512_mask_loadu_epi8, __mmask64)
DW3_BLOCK(dw3_256_full, 256, __m256i, LD256, _mm256_setzero_si256, _mm256_dpbusd_epi32,
          DW3_SRC256_FULL, _mm256_mask_loadu_epi8, __mmask32)
DW3_BLOCK(dw3_256_mask, 256, __m256i, LD256, _mm256_setzero_si256, _mm256_dpbusd_epi32,
          DW3_SRC256_MASK, _mm256_mask_loadu_epi8, __mmask32)

/* a run of mr pixels: blocks of 4, the tail by its size (the block size a constant); only
 * blocks that meet a border or the end of the run check their source columns */
#define DW3_RUN(BLOCK, SW, M)                                                                  \
    do {                                                                                       \
        int r = 0;                                                                             \
        for (; r + 4 <= mr; r += 4) {                                                          \
            const int64_t c = (int64_t)SW * r;                                                 \
            if (c >= lo && c + (SW == 1 ? 5 : 11) < hi)                                        \
                BLOCK(4, 0, r, nrows, rows, strides, widx, x0, lo, hi, zpv, SW, src_signed,    \
                      wrow, comp, acc, M);                                                     \
            else                                                                               \
                BLOCK(4, 1, r, nrows, rows, strides, widx, x0, lo, hi, zpv, SW, src_signed,    \
                      wrow, comp, acc, M);                                                     \
        }                                                                                      \
        switch (mr - r) {                                                                      \
        case 3: BLOCK(3, 1, r, nrows, rows, strides, widx, x0, lo, hi, zpv, SW, src_signed,    \
                      wrow, comp, acc, M); break;                                              \
        case 2: BLOCK(2, 1, r, nrows, rows, strides, widx, x0, lo, hi, zpv, SW, src_signed,    \
                      wrow, comp, acc, M); break;                                              \
        case 1: BLOCK(1, 1, r, nrows, rows, strides, widx, x0, lo, hi, zpv, SW, src_signed,    \
                      wrow, comp, acc, M); break;                                              \
        default: break;                                                                        \
        }                                                                                      \
    } while (0)
#define DW3_RUN_SW(BLOCK, M)                                                                   \
    do {                                                                                       \
        if (sw == 1) DW3_RUN(BLOCK, 1, M);                                                     \
        else DW3_RUN(BLOCK, 2, M);                                                             \
    } while (0)

/* mr consecutive output pixels of one output row, for a kernel whose rows are three taps along
 * w (dilation 0 along w), stride sw (1 or 2): the run reads source columns x0 + c,
 * c = 0 .. sw * (mr - 1) + 2; kernel row i (of nrows) reads column x at rows[i] + x *
 * strides[i] when 0 <= x < iw (a stride of 0: the zero-point pixel), else the zero-point
 * pixel zpix, with the weights of kernel row widx[i]; w: the panel's vnni4 weights with their
 * "rows3" block */
static void dw3row(int mr, int nrows, const uint8_t *const *rows, const int64_t *strides,
                   const int *widx, int64_t x0, int64_t iw, const uint8_t *zpix, int sw, int nc,
                   int src_signed, const int8_t *w, int64_t ntaps, int32_t *acc) {
    const int8_t *comp = w + ((ntaps + 3) / 4) * 256;
    const int8_t *wrow = comp + 256;
    /* run columns c read source column x0 + c: inside the source and the run */
    const int64_t lo = x0 < 0 ? -x0 : 0;
    int64_t hi = iw - x0;
    const int64_t last = (int64_t)sw * (mr - 1) + 3;
    if (hi > last) hi = last;
    if (nc > 32) {
        const __mmask64 m = nc >= 64 ? ~0ull : (1ull << nc) - 1;
        const __m512i zpv = _mm512_maskz_loadu_epi8(m, zpix);
        if (nc == 64) DW3_RUN_SW(dw3_512_full, m);
        else DW3_RUN_SW(dw3_512_mask, m);
    } else {
        const __mmask32 m = nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1);
        const __m256i zpv = _mm256_maskz_loadu_epi8(m, zpix);
        if (nc == 32) DW3_RUN_SW(dw3_256_full, m);
        else DW3_RUN_SW(dw3_256_mask, m);
    }
}

/* The depthwise row driver (AVX-512, vnni4 weights, kernel rows of three taps along w, stride
 * 1 or 2 along w, no padding correction): each output row of the item's pixels is one kernel
 * call (up to a tile of pixels), the kernel reading the zero-point pixel for the columns in
 * the padding.  Kernel rows outside the source read the zero-point pixel with stride 0, or are
 * skipped when they would add nothing (u8 source, zero point 0). */
int dnnq_dw_item_rows3(const dnnq_conv_t *cv, int64_t item) {
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
    const int nkr = (int)(cv->kd * cv->kh); /* kernel rows */
    const int8_t *w = (const int8_t *)(cv->dw_weights + p * cv->dw_stride);
    const uint8_t *img = cv->src + n * cv->id * cv->ih * cv->iw * IC + chan0;
    const uint8_t *zpix = cv->zp_rows + chan0;
    int skip_zero = !cv->src_signed;
    for (int c = 0; c < nc && skip_zero; c += 8) {
        uint64_t v = 0;
        memcpy(&v, zpix + c, (size_t)(nc - c < 8 ? nc - c : 8));
        skip_zero = v == 0;
    }

    dnnq_gemm_args_t ge;
    dnnq_postop_t post[DNNQ_CONV_MAX_POST];
    dnnq_conv_item_epilogue_args(cv, n, 0, &ge, post);
    const int TR = DNNQ_DW_TILE_ROWS;
    int32_t tile[DNNQ_DW_TILE_ROWS * DNNQ_NR] __attribute__((aligned(64)));
    const uint8_t **rowp = (const uint8_t **)malloc((sizeof(uint8_t *) + sizeof(int64_t) +
                                                     sizeof(int)) * (size_t)nkr);
    if (!rowp) return -1;
    int64_t *rstride = (int64_t *)(rowp + nkr);
    int *widx = (int *)(rstride + nkr);

    int64_t tm = m0;
    int trows = 0;
    for (int64_t m = m0; m < mend;) {
        int64_t od, oh, ow;
        out_pixel(cv, m, &od, &oh, &ow);
        /* the kernel rows of this output row */
        int nr = 0, i = 0;
        for (int64_t kd = 0; kd < cv->kd; ++kd) {
            const int64_t xd = src_coord(od, kd, cv->sd, cv->dd, cv->pd, cv->id, 0);
            for (int64_t kh = 0; kh < cv->kh; ++kh, ++i) {
                const int64_t xh = xd < 0 ? -1 : src_coord(oh, kh, cv->sh, cv->dh, cv->ph,
                                                           cv->ih, 0);
                if (xh < 0 && skip_zero) continue;
                rowp[nr] = xh < 0 ? zpix : img + (xd * cv->ih + xh) * iw * IC;
                rstride[nr] = xh < 0 ? 0 : IC;
                widx[nr++] = i;
            }
        }
        const int64_t row_end = m + (cv->ow - ow) < mend ? m + (cv->ow - ow) : mend;
        while (m < row_end) {
            int64_t cnt = row_end - m < TR ? row_end - m : TR;
            if (trows + cnt > TR) {
                cv->epilogue(&ge, 0, tm, trows, p, tile);
                tm = m;
                trows = 0;
            }
            dw3row((int)cnt, nr, rowp, rstride, widx, ow * cv->sw - cv->pw, iw, zpix,
                   (int)cv->sw, nc, cv->src_signed, w, cv->npairs, tile + trows * DNNQ_NR);
            trows += (int)cnt;
            m += cnt;
            ow += cnt;
        }
    }
    if (trows) cv->epilogue(&ge, 0, tm, trows, p, tile);
    free(rowp);
    return 0;
}

