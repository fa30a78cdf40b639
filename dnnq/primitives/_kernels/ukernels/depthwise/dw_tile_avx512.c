/* Depthwise tile kernel "pairs" (dnnq_dw_tile_fn, the general driver's depthwise tile at the
 * AVX-512 levels with s16 weights), AVX-512 BW intrinsics: taps paired, so that one vpmaddwd
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
#include <stdint.h>
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

