/* Depthwise tile kernel "vnni4" (dnnq_dw_tile_fn, the general driver's depthwise tile at the
 * AVX-512 levels with s8 weights taps by four), AVX-512 VNNI.
 *
 * vpdpbusd multiplies four u8 source bytes by four s8 weights and adds the sum to an s32
 * lane: with the taps taken four at a time, one instruction does four taps of 16 channels.  The
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
#include <immintrin.h>
#include <stdint.h>
#include "dnnq_conv.h"
#include "dw_avx512.h"

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

