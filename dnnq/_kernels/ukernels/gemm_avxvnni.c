/* AVX-VNNI micro-kernel (VEX-encoded vpdpbusd on ymm): 6 rows x 16 columns at a time, four
 * column strips per 64-column panel; 12 ymm accumulators fit the 16 registers.
 * Compiled with -mavx2 -mfma -mavxvnni, called only when the CPU has them. */
#include <immintrin.h>
#include "dnnq_kernels.h"
#include "ukr_common.h"

#define DNNQ_ISA avxvnni
#define DNNQ_MR 6

DNNQ_ALWAYS_INLINE void strip_avxvnni(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                      int64_t lda, const int8_t *bp, int32_t *c) {
    __m256i acc[DNNQ_MR][2];
    const __m256i vx = _mm256_set1_epi32((int)0x80808080);
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
    const int64_t K4 = (K + 3) / 4, K4f = K / 4;
    for (int64_t k4 = 0; k4 < K4; ++k4) {
        const int8_t *bk = bp + k4 * 4 * DNNQ_NR;
        const __m256i b0 = _mm256_loadu_si256((const __m256i *)bk);
        const __m256i b1 = _mm256_loadu_si256((const __m256i *)(bk + 32));
        for (int r = 0; r < MR; ++r) {
            const uint8_t *ar = a + r * lda;
            __m256i av = _mm256_set1_epi32((int)(k4 < K4f ? dnnq_load_a4(ar, k4) : dnnq_load_a_tail(ar, K)));
            if (XOR) av = _mm256_xor_si256(av, vx);
            acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
            acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
        }
    }
    for (int r = 0; r < MR; ++r) {
        _mm256_storeu_si256((__m256i *)(c + r * DNNQ_NR), acc[r][0]);
        _mm256_storeu_si256((__m256i *)(c + r * DNNQ_NR + 8), acc[r][1]);
    }
}

DNNQ_ALWAYS_INLINE void tile_avxvnni(const int MR, const int XOR, int64_t K, const uint8_t *a,
                                     int64_t lda, const int8_t *bp, int32_t *c) {
    /* strip s covers columns 16s..16s+15: bytes 64s.. of each 256-byte packed k-row */
    for (int s = 0; s < 4; ++s) strip_avxvnni(MR, XOR, K, a, lda, bp + 64 * s, c + 16 * s);
}

static void dnnq_ukr(int mr, int64_t K, const uint8_t *a, int64_t lda, uint32_t a_xor,
                     const int8_t *bp, int32_t *c) {
#define DNNQ_CASE(m)                                                                              \
    case m:                                                                                       \
        if (a_xor) tile_avxvnni(m, 1, K, a, lda, bp, c);                                          \
        else tile_avxvnni(m, 0, K, a, lda, bp, c);                                                \
        break;
    switch (mr) { DNNQ_CASE(1) DNNQ_CASE(2) DNNQ_CASE(3) DNNQ_CASE(4) DNNQ_CASE(5) DNNQ_CASE(6) }
#undef DNNQ_CASE
}

#include "gemm_impl.h"
