/* The depthwise kernel with AVX-512 (BW) intrinsics: taps paired, so that one vpmaddwd
 * multiplies two taps of 16 channels and adds them in s32 (exact: |x| <= 255, |w| < 2^15).
 *
 * Weights layout ("pairs", packed by dnnq/primitives/_conv_geometry.pack_depthwise_pairs):
 * per 64-channel panel, per tap pair q (taps 2q, 2q+1; a missing last tap is 0), per half h
 * (channels 32h .. 32h+31), two vectors of 32 s16: "lo" then "hi", each the vpunpck{l,h}wd
 * interleave of the two taps' weights, i.e. 128-bit lane L of lo holds
 * (w[2q][8L+j], w[2q+1][8L+j]) for j = 0..3 and of hi the same for j = 4..7.
 * The source bytes of the two taps go through the same interleave, so each s32 lane of the
 * product is one channel; the lanes are put back in channel order once per pixel.
 * `w` points at the panel: w + (q * 2 + h) * 64 s16. */
#include <immintrin.h>
#include <string.h>
#include "dnnq_conv.h"

static inline __m512i load_x16(const uint8_t *x, __mmask32 m, int src_signed) {
    const __m256i b = _mm256_maskz_loadu_epi8(m, x);
    return src_signed ? _mm512_cvtepi8_epi16(b) : _mm512_cvtepu8_epi16(b);
}

/* R pixels at once (independent accumulators hide the multiply-add latency; each weight
 * vector is loaded once for the R pixels) */
static inline __attribute__((always_inline)) void
dw_pixels(const int R, int r0, int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps,
          int halves, __mmask32 m0, __mmask32 m1, int src_signed, const int16_t *w,
          int32_t *acc) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i idx_a = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i idx_b = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29,
                                            30, 31);
    __m512i lo0[4], hi0[4], lo1[4], hi1[4];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) lo0[i] = hi0[i] = lo1[i] = hi1[i] = zero;
    const int64_t npairs = (ntaps + 1) / 2;
    for (int64_t q = 0; q < npairs; ++q) {
        const int has_b = 2 * q + 1 < ntaps;
        const int16_t *wq = w + q * 2 * 64;
        const __m512i wl0 = _mm512_loadu_si512(wq), wh0 = _mm512_loadu_si512(wq + 32);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
            const int r = r0 + i;
            const uint8_t *xa = ps ? rows[2 * q] + r * ps : rows[(2 * q) * mr + r];
            const uint8_t *xb = !has_b ? NULL : ps ? rows[2 * q + 1] + r * ps
                                                   : rows[(2 * q + 1) * mr + r];
            const __m512i a = load_x16(xa, m0, src_signed);
            const __m512i b = has_b ? load_x16(xb, m0, src_signed) : zero;
            lo0[i] = _mm512_add_epi32(lo0[i], _mm512_madd_epi16(_mm512_unpacklo_epi16(a, b), wl0));
            hi0[i] = _mm512_add_epi32(hi0[i], _mm512_madd_epi16(_mm512_unpackhi_epi16(a, b), wh0));
            if (halves == 2) {
                const __m512i a1 = load_x16(xa + 32, m1, src_signed);
                const __m512i b1 = has_b ? load_x16(xb + 32, m1, src_signed) : zero;
                lo1[i] = _mm512_add_epi32(lo1[i], _mm512_madd_epi16(
                                                      _mm512_unpacklo_epi16(a1, b1),
                                                      _mm512_loadu_si512(wq + 64)));
                hi1[i] = _mm512_add_epi32(hi1[i], _mm512_madd_epi16(
                                                      _mm512_unpackhi_epi16(a1, b1),
                                                      _mm512_loadu_si512(wq + 96)));
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
        int32_t *out = acc + (r0 + i) * DNNQ_NR;
        _mm512_storeu_si512(out, _mm512_permutex2var_epi32(lo0[i], idx_a, hi0[i]));
        _mm512_storeu_si512(out + 16, _mm512_permutex2var_epi32(lo0[i], idx_b, hi0[i]));
        if (halves == 2) { /* the epilogue reads only the nc columns */
            _mm512_storeu_si512(out + 32, _mm512_permutex2var_epi32(lo1[i], idx_a, hi1[i]));
            _mm512_storeu_si512(out + 48, _mm512_permutex2var_epi32(lo1[i], idx_b, hi1[i]));
        }
    }
}

void dnnq_dw_tile_avx512(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps, int nc,
                         int src_signed, const int16_t *w, int32_t *acc) {
    const int halves = nc > 32 ? 2 : 1;
    const __mmask32 m0 = nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1);
    const __mmask32 m1 = nc >= 64 ? 0xffffffffu : nc > 32 ? (__mmask32)((1ull << (nc - 32)) - 1) : 0;
    int r = 0;
    for (; r + 4 <= mr; r += 4)
        dw_pixels(4, r, mr, ntaps, rows, ps, halves, m0, m1, src_signed, w, acc);
    for (; r < mr; ++r)
        dw_pixels(1, r, mr, ntaps, rows, ps, halves, m0, m1, src_signed, w, acc);
}

/* ---- The four-tap VNNI kernel (s8 weights) ----------------------------------------------
 *
 * vpdpbusd multiplies four u8 source bytes by four s8 weights and adds the sum to an s32 lane:
 * with the taps taken four at a time, one instruction does four taps of 16 channels.  The
 * source bytes of four taps are interleaved per channel by two rounds of unpacks (bytes, then
 * words), which leaves the channels of accumulator k, 128-bit lane L, dword j at
 * c = 16 L + 4 k + j; the weights are packed in that order, and the four accumulators are put
 * back in channel order once per pixel (a 4 x 4 transpose of 128-bit lanes).  An s8 source is
 * XOR-ed to u8 (x + 128) and the accumulators start at -128 * sum_taps w (exact: every tap,
 * padded ones included, reads a byte).
 *
 * Weights layout ("vnni4", packed by _conv_geometry.pack_depthwise), per 64-channel panel:
 * per group g of taps 4g .. 4g+3 (missing taps 0), 4 vectors k of 64 bytes, byte
 * 16 L + 4 j + i of vector k = w[4g + i][16 L + 4 k + j]; then 64 s32 of -128 * sum_t w in the
 * same (k, L, j) order.  Channels <= 32 use the first 32 bytes of every vector (two lanes). */

/* the source bytes of four taps (a, b, c, d) interleaved: q[k] per the layout above */
#define DW4_INTERLEAVE(W, a, b, c, d, q)                                                       \
    do {                                                                                       \
        const __m##W##i ab_lo = _mm##W##_unpacklo_epi8(a, b), ab_hi = _mm##W##_unpackhi_epi8(a, b); \
        const __m##W##i cd_lo = _mm##W##_unpacklo_epi8(c, d), cd_hi = _mm##W##_unpackhi_epi8(c, d); \
        q[0] = _mm##W##_unpacklo_epi16(ab_lo, cd_lo);                                          \
        q[1] = _mm##W##_unpackhi_epi16(ab_lo, cd_lo);                                          \
        q[2] = _mm##W##_unpacklo_epi16(ab_hi, cd_hi);                                          \
        q[3] = _mm##W##_unpackhi_epi16(ab_hi, cd_hi);                                          \
    } while (0)

static inline const uint8_t *dw4_row(const uint8_t *const *rows, int64_t ps, int mr, int64_t t,
                                     int r) {
    return ps ? rows[t] + r * ps : rows[t * mr + r];
}

static inline __m512i dw4_load512(const uint8_t *x, __mmask64 m, int full, __m512i flip) {
    const __m512i v = full ? _mm512_loadu_si512(x) : _mm512_maskz_loadu_epi8(m, x);
    return _mm512_xor_si512(v, flip);
}

/* R pixels, 64 channels (zmm) */
static inline __attribute__((always_inline)) void
dw4_pixels512(const int R, int r0, int mr, int64_t ntaps, const uint8_t *const *rows,
              int64_t ps, __mmask64 m, const int full, int src_signed, const int8_t *w,
              int32_t *acc) {
    const __m512i flip = _mm512_set1_epi8(src_signed ? (char)0x80 : 0);
    const int64_t ngroups = (ntaps + 3) / 4;
    const __m512i *comp = (const __m512i *)(w + ngroups * 256);
    __m512i s[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            s[i][k] = src_signed ? _mm512_loadu_si512(comp + k) : _mm512_setzero_si512();
    const int64_t nfull = ntaps / 4;
    for (int64_t g = 0; g < nfull; ++g) {
        const int8_t *wg = w + g * 256;
        const __m512i w0 = _mm512_loadu_si512(wg), w1 = _mm512_loadu_si512(wg + 64);
        const __m512i w2 = _mm512_loadu_si512(wg + 128), w3 = _mm512_loadu_si512(wg + 192);
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
            const int r = r0 + i;
            const __m512i a = dw4_load512(dw4_row(rows, ps, mr, 4 * g, r), m, full, flip);
            const __m512i b = dw4_load512(dw4_row(rows, ps, mr, 4 * g + 1, r), m, full, flip);
            const __m512i c = dw4_load512(dw4_row(rows, ps, mr, 4 * g + 2, r), m, full, flip);
            const __m512i d = dw4_load512(dw4_row(rows, ps, mr, 4 * g + 3, r), m, full, flip);
            __m512i q[4];
            DW4_INTERLEAVE(512, a, b, c, d, q);
            s[i][0] = _mm512_dpbusd_epi32(s[i][0], q[0], w0);
            s[i][1] = _mm512_dpbusd_epi32(s[i][1], q[1], w1);
            s[i][2] = _mm512_dpbusd_epi32(s[i][2], q[2], w2);
            s[i][3] = _mm512_dpbusd_epi32(s[i][3], q[3], w3);
        }
    }
    const int rest = (int)(ntaps - 4 * nfull);
    if (rest) { /* the last taps; the missing ones read zeros (their weights are 0 anyway) */
        const int8_t *wg = w + nfull * 256;
        const __m512i w0 = _mm512_loadu_si512(wg), w1 = _mm512_loadu_si512(wg + 64);
        const __m512i w2 = _mm512_loadu_si512(wg + 128), w3 = _mm512_loadu_si512(wg + 192);
        const __m512i z = _mm512_setzero_si512();
        const int64_t t = 4 * nfull;
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
            const int r = r0 + i;
            const __m512i a = dw4_load512(dw4_row(rows, ps, mr, t, r), m, full, flip);
            const __m512i b = rest > 1 ? dw4_load512(dw4_row(rows, ps, mr, t + 1, r), m, full, flip) : z;
            const __m512i c = rest > 2 ? dw4_load512(dw4_row(rows, ps, mr, t + 2, r), m, full, flip) : z;
            __m512i q[4];
            DW4_INTERLEAVE(512, a, b, c, z, q);
            s[i][0] = _mm512_dpbusd_epi32(s[i][0], q[0], w0);
            s[i][1] = _mm512_dpbusd_epi32(s[i][1], q[1], w1);
            s[i][2] = _mm512_dpbusd_epi32(s[i][2], q[2], w2);
            s[i][3] = _mm512_dpbusd_epi32(s[i][3], q[3], w3);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) { /* accumulator k, lane L -> channels 16 L + 4 k .. + 3 */
        const __m512i t0 = _mm512_shuffle_i32x4(s[i][0], s[i][1], 0x44);
        const __m512i t1 = _mm512_shuffle_i32x4(s[i][2], s[i][3], 0x44);
        const __m512i t2 = _mm512_shuffle_i32x4(s[i][0], s[i][1], 0xEE);
        const __m512i t3 = _mm512_shuffle_i32x4(s[i][2], s[i][3], 0xEE);
        int32_t *out = acc + (r0 + i) * DNNQ_NR;
        _mm512_storeu_si512(out, _mm512_shuffle_i32x4(t0, t1, 0x88));
        _mm512_storeu_si512(out + 16, _mm512_shuffle_i32x4(t0, t1, 0xDD));
        _mm512_storeu_si512(out + 32, _mm512_shuffle_i32x4(t2, t3, 0x88));
        _mm512_storeu_si512(out + 48, _mm512_shuffle_i32x4(t2, t3, 0xDD));
    }
}

static inline __m256i dw4_load256(const uint8_t *x, __mmask32 m, int full, __m256i flip) {
    const __m256i v = full ? _mm256_loadu_si256((const __m256i *)x) : _mm256_maskz_loadu_epi8(m, x);
    return _mm256_xor_si256(v, flip);
}

/* R pixels, up to 32 channels (ymm: the first two lanes of the packed vectors) */
static inline __attribute__((always_inline)) void
dw4_pixels256(const int R, int r0, int mr, int64_t ntaps, const uint8_t *const *rows,
              int64_t ps, __mmask32 m, const int full, int src_signed, const int8_t *w,
              int32_t *acc) {
    const __m256i flip = _mm256_set1_epi8(src_signed ? (char)0x80 : 0);
    const int64_t ngroups = (ntaps + 3) / 4;
    const int8_t *comp = w + ngroups * 256;
    __m256i s[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k)
            s[i][k] = src_signed ? _mm256_loadu_si256((const __m256i *)(comp + k * 64))
                                 : _mm256_setzero_si256();
    const int64_t ng = (ntaps + 3) / 4;
    for (int64_t g = 0; g < ng; ++g) {
        const int8_t *wg = w + g * 256;
        const __m256i w0 = _mm256_loadu_si256((const __m256i *)wg);
        const __m256i w1 = _mm256_loadu_si256((const __m256i *)(wg + 64));
        const __m256i w2 = _mm256_loadu_si256((const __m256i *)(wg + 128));
        const __m256i w3 = _mm256_loadu_si256((const __m256i *)(wg + 192));
        const int64_t t = 4 * g;
        const int n = ntaps - t >= 4 ? 4 : (int)(ntaps - t);
        const __m256i z = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
            const int r = r0 + i;
            const __m256i a = dw4_load256(dw4_row(rows, ps, mr, t, r), m, full, flip);
            const __m256i b = n > 1 ? dw4_load256(dw4_row(rows, ps, mr, t + 1, r), m, full, flip) : z;
            const __m256i c = n > 2 ? dw4_load256(dw4_row(rows, ps, mr, t + 2, r), m, full, flip) : z;
            const __m256i d = n > 3 ? dw4_load256(dw4_row(rows, ps, mr, t + 3, r), m, full, flip) : z;
            __m256i q[4];
            DW4_INTERLEAVE(256, a, b, c, d, q);
            s[i][0] = _mm256_dpbusd_epi32(s[i][0], q[0], w0);
            s[i][1] = _mm256_dpbusd_epi32(s[i][1], q[1], w1);
            s[i][2] = _mm256_dpbusd_epi32(s[i][2], q[2], w2);
            s[i][3] = _mm256_dpbusd_epi32(s[i][3], q[3], w3);
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) { /* accumulator k, lane L -> channels 16 L + 4 k .. + 3 */
        int32_t *out = acc + (r0 + i) * DNNQ_NR;
        _mm256_storeu_si256((__m256i *)out, _mm256_permute2x128_si256(s[i][0], s[i][1], 0x20));
        _mm256_storeu_si256((__m256i *)(out + 8), _mm256_permute2x128_si256(s[i][2], s[i][3], 0x20));
        _mm256_storeu_si256((__m256i *)(out + 16), _mm256_permute2x128_si256(s[i][0], s[i][1], 0x31));
        _mm256_storeu_si256((__m256i *)(out + 24), _mm256_permute2x128_si256(s[i][2], s[i][3], 0x31));
    }
}

void dnnq_dw4_tile_avx512(int mr, int64_t ntaps, const uint8_t *const *rows, int64_t ps, int nc,
                          int src_signed, const int16_t *w16, int32_t *acc) {
    const int8_t *w = (const int8_t *)w16;
    int r = 0;
    if (nc > 32) {
        const __mmask64 m = nc >= 64 ? ~0ull : (1ull << nc) - 1;
        if (nc == 64) {
            for (; r + 4 <= mr; r += 4) dw4_pixels512(4, r, mr, ntaps, rows, ps, m, 1, src_signed, w, acc);
            for (; r < mr; ++r) dw4_pixels512(1, r, mr, ntaps, rows, ps, m, 1, src_signed, w, acc);
        } else {
            for (; r + 4 <= mr; r += 4) dw4_pixels512(4, r, mr, ntaps, rows, ps, m, 0, src_signed, w, acc);
            for (; r < mr; ++r) dw4_pixels512(1, r, mr, ntaps, rows, ps, m, 0, src_signed, w, acc);
        }
    } else {
        const __mmask32 m = nc >= 32 ? 0xffffffffu : (__mmask32)((1ull << nc) - 1);
        if (nc == 32) {
            for (; r + 4 <= mr; r += 4) dw4_pixels256(4, r, mr, ntaps, rows, ps, m, 1, src_signed, w, acc);
            for (; r < mr; ++r) dw4_pixels256(1, r, mr, ntaps, rows, ps, m, 1, src_signed, w, acc);
        } else {
            for (; r + 4 <= mr; r += 4) dw4_pixels256(4, r, mr, ntaps, rows, ps, m, 0, src_signed, w, acc);
            for (; r < mr; ++r) dw4_pixels256(1, r, mr, ntaps, rows, ps, m, 0, src_signed, w, acc);
        }
    }
}

/* ---- Kernel rows of three taps along w (stride 1 or 2, dense), VNNI ------------------------
 *
 * For a run of interior output pixels, the taps of one kernel row read source pixels
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

#include "conv_dw_store_avx512.h"
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

void dnnq_dw3row_avx512(int mr, int nrows, const uint8_t *const *rows, const int64_t *strides,
                        const int *widx, int64_t x0, int64_t iw, const uint8_t *zpix, int sw,
                        int nc, int src_signed, const int8_t *w, int64_t ntaps, int32_t *acc) {
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
