/* dnnq.gemm_* packing with AVX-512 (BW + VNNI): four rows of 64 bytes interleaved into the
 * dnnq layout by two unpack stages and a 4x4 transpose of 128-bit lanes; the column sums come
 * from one vpdpbusd of ones per 64 output bytes (each s32 lane holds the 4 k values of one
 * column).  Compiled with the avx512vnni flags, called only at levels that have them. */
#include <immintrin.h>
#include "gemm_api.h"

void dnnq_gemm_api_pack_panel_avx512(const int8_t *w, int64_t s_k, int64_t s_n, int64_t K,
                                     int64_t nc, int8_t *packed, int32_t *colsum) {
    if (s_n != 1) {  /* transposed B: the portable 4-byte k runs */
        dnnq_gemm_api_pack_panel(w, s_k, s_n, K, nc, packed, colsum);
        return;
    }
    const int64_t K4 = (K + 3) / 4;
    const __mmask64 km = nc >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << nc) - 1);
    const __m512i ones = _mm512_set1_epi8(1);
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t k4 = 0; k4 < K4; ++k4) {
        __m512i r[4];
        for (int i = 0; i < 4; ++i)
            r[i] = 4 * k4 + i < K ? _mm512_maskz_loadu_epi8(km, w + (4 * k4 + i) * s_k)
                                  : _mm512_setzero_si512();
        const __m512i a = _mm512_unpacklo_epi8(r[0], r[1]), b = _mm512_unpackhi_epi8(r[0], r[1]);
        const __m512i c = _mm512_unpacklo_epi8(r[2], r[3]), d = _mm512_unpackhi_epi8(r[2], r[3]);
        /* lane L of q0..q3: columns 16L + 0..3, 4..7, 8..11, 12..15, 4 bytes (k) each */
        const __m512i q0 = _mm512_unpacklo_epi16(a, c), q1 = _mm512_unpackhi_epi16(a, c);
        const __m512i q2 = _mm512_unpacklo_epi16(b, d), q3 = _mm512_unpackhi_epi16(b, d);
        const __m512i t0 = _mm512_shuffle_i32x4(q0, q1, 0x44), t1 = _mm512_shuffle_i32x4(q2, q3, 0x44);
        const __m512i t2 = _mm512_shuffle_i32x4(q0, q1, 0xEE), t3 = _mm512_shuffle_i32x4(q2, q3, 0xEE);
        const __m512i o0 = _mm512_shuffle_i32x4(t0, t1, 0x88), o1 = _mm512_shuffle_i32x4(t0, t1, 0xDD);
        const __m512i o2 = _mm512_shuffle_i32x4(t2, t3, 0x88), o3 = _mm512_shuffle_i32x4(t2, t3, 0xDD);
        int8_t *o = packed + k4 * 256;
        _mm512_storeu_si512((void *)o, o0);
        _mm512_storeu_si512((void *)(o + 64), o1);
        _mm512_storeu_si512((void *)(o + 128), o2);
        _mm512_storeu_si512((void *)(o + 192), o3);
        s0 = _mm512_dpbusd_epi32(s0, ones, o0);
        s1 = _mm512_dpbusd_epi32(s1, ones, o1);
        s2 = _mm512_dpbusd_epi32(s2, ones, o2);
        s3 = _mm512_dpbusd_epi32(s3, ones, o3);
    }
    int32_t sum[64];
    _mm512_storeu_si512((void *)sum, s0);
    _mm512_storeu_si512((void *)(sum + 16), s1);
    _mm512_storeu_si512((void *)(sum + 32), s2);
    _mm512_storeu_si512((void *)(sum + 48), s3);
    for (int64_t n = 0; n < nc; ++n) colsum[n] = sum[n];
}
