/* AVX512-VNNI micro-kernel: 6 rows x 64 columns, 24 zmm accumulators, one vpdpbusd per
 * 16 columns x 4 k.  Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni,
 * called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

#define DNNQ_ISA avx512vnni
#define DNNQ_MR 6

DNNQ_ALWAYS_INLINE void tile_avx512(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                    int64_t lda, const int8_t *bp, int32_t *c) {
    __m512i acc[DNNQ_MR][4];
    const __m512i vx = _mm512_set1_epi32((int)0x80808080);
    for (int r = 0; r < MR; ++r)
        for (int j = 0; j < 4; ++j) acc[r][j] = _mm512_setzero_si512();
    const int64_t K4f = K / 4;
    for (int64_t k4 = 0; k4 < K4f; ++k4) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        const __m512i b0 = _mm512_loadu_si512((const void *)(bk));
        const __m512i b1 = _mm512_loadu_si512((const void *)(bk + 64));
        const __m512i b2 = _mm512_loadu_si512((const void *)(bk + 128));
        const __m512i b3 = _mm512_loadu_si512((const void *)(bk + 192));
        for (int r = 0; r < MR; ++r) {
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a4(a + r * lda, k4));
            if (XOR) av = _mm512_xor_si512(av, vx);
            acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
            acc[r][2] = _mm512_dpbusd_epi32(acc[r][2], av, b2);
            acc[r][3] = _mm512_dpbusd_epi32(acc[r][3], av, b3);
        }
    }
    if (K & 3) {
        const int8_t *bk = bp + K4f * 4 * DNNQ_NR;
        for (int r = 0; r < MR; ++r) {
            __m512i av = _mm512_set1_epi32((int)dnnq_load_a_tail(a + r * lda, K));
            if (XOR) av = _mm512_xor_si512(av, vx);
            for (int j = 0; j < 4; ++j)
                acc[r][j] = _mm512_dpbusd_epi32(acc[r][j], av,
                                                _mm512_loadu_si512((const void *)(bk + 64 * j)));
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int j = 0; j < 4; ++j) _mm512_storeu_si512((void *)(c + r * DNNQ_NR + 16 * j), acc[r][j]);
}

static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (a_xor) tile_avx512(m, 1, K, a, lda, bp, c);                                           \
        else tile_avx512(m, 0, K, a, lda, bp, c);                                                 \
        break;
    switch (mr) { DNNQ_CASE(1) DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6) }
#undef DNNQ_CASE
}

#include "gemm_impl.h"
