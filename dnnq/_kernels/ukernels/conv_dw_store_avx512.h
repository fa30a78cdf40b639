/* Stores of the four s32 accumulators of a vnni4 depthwise tile (channel groups of 4
 * interleaved by vpdpbusd) back in channel order: 64 channels from zmm, 32 from ymm.  Shared
 * by the row kernel (conv_dw_avx512.c) and the 3x3 column kernel (conv_dw3x3_avx512.c). */
#ifndef DNNQ_CONV_DW_STORE_AVX512_H
#define DNNQ_CONV_DW_STORE_AVX512_H
#include <immintrin.h>

#define DNNQ_DW_STORE_ACC512(sv, out)                                                          \
    do {                                                                                       \
        const __m512i t0 = _mm512_shuffle_i32x4(sv[0], sv[1], 0x44);                          \
        const __m512i t1 = _mm512_shuffle_i32x4(sv[2], sv[3], 0x44);                          \
        const __m512i t2 = _mm512_shuffle_i32x4(sv[0], sv[1], 0xEE);                          \
        const __m512i t3 = _mm512_shuffle_i32x4(sv[2], sv[3], 0xEE);                          \
        _mm512_storeu_si512((out), _mm512_shuffle_i32x4(t0, t1, 0x88));                        \
        _mm512_storeu_si512((out) + 16, _mm512_shuffle_i32x4(t0, t1, 0xDD));                   \
        _mm512_storeu_si512((out) + 32, _mm512_shuffle_i32x4(t2, t3, 0x88));                   \
        _mm512_storeu_si512((out) + 48, _mm512_shuffle_i32x4(t2, t3, 0xDD));                   \
    } while (0)
#define DNNQ_DW_STORE_ACC256(sv, out)                                                          \
    do {                                                                                       \
        _mm256_storeu_si256((__m256i *)(out), _mm256_permute2x128_si256(sv[0], sv[1], 0x20)); \
        _mm256_storeu_si256((__m256i *)((out) + 8), _mm256_permute2x128_si256(sv[2], sv[3], 0x20)); \
        _mm256_storeu_si256((__m256i *)((out) + 16), _mm256_permute2x128_si256(sv[0], sv[1], 0x31)); \
        _mm256_storeu_si256((__m256i *)((out) + 24), _mm256_permute2x128_si256(sv[2], sv[3], 0x31)); \
    } while (0)

#endif
